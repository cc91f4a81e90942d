/* Unit tests of the agent's allocation-free snapshot writer: what it writes must read
 * back through the tools' reader (CRCs, END, patched counts, chunks larger than the
 * buffer), it must create files 0600 under a temporary name and never follow a link,
 * and a failed or abandoned write must leave nothing behind. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/safe_file.h"
#include "core/snapshot.h"
#include "core/snapshot_write.h"

static char dir[256];
static ms_snap_writer *w; /* large: not on the stack */

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/ms-sw-test-%d", (int)getpid());
    mkdir(dir, 0700);
    w = malloc(sizeof *w);
    return w ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        return -1;
    free(w);
    return 0;
}

static void path_of(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", dir, name);
}

static void test_fmt_u64(void **state)
{
    (void)state;
    char b[24];
    assert_int_equal(ms_fmt_u64(b, 0), 1);
    assert_string_equal(b, "0");
    assert_int_equal(ms_fmt_u64(b, 18446744073709551615ull), 20);
    assert_string_equal(b, "18446744073709551615");
}

static void test_roundtrip(void **state)
{
    (void)state;
    char path[300], err[256];
    path_of(path, sizeof path, "memsight-1-0000-api.msnap");
    assert_int_equal(ms_sw_open(w, path, 0), 0);
    /* the final name does not exist before commit */
    assert_int_equal(access(path, F_OK), -1);

    ms_sw_begin(w, MS_CHUNK_META, 0);
    uint64_t at = ms_sw_chunk_pos(w);
    ms_sw_u32(w, 0);
    ms_sw_kv(w, "reason", "api");
    ms_sw_kv_u64(w, "pid", 4242);
    ms_sw_kv_i64(w, "neg", -17);
    ms_sw_patch_u32(w, at, 3);
    ms_sw_end(w);

    /* two stacks, the second one deep enough to cross the 64 KiB buffer */
    ms_sw_begin(w, MS_CHUNK_STKS, MS_CHUNKF_REQUIRED);
    ms_sw_u32(w, 2);
    ms_snap_stack_rec r;
    memset(&r, 0, sizeof r);
    r.id = 7;
    r.depth = 2;
    r.c.alloc_blocks = 5;
    r.c.alloc_bytes = 500;
    r.c.free_blocks = 2;
    r.c.free_bytes = 200;
    r.c.live_blocks = 3;
    r.c.live_bytes = 300;
    ms_sw_bytes(w, &r, sizeof r);
    uint64_t pcs[2] = {0x401000, 0x402000};
    ms_sw_bytes(w, pcs, sizeof pcs);
    r.id = 9;
    r.depth = 10000;
    ms_sw_bytes(w, &r, sizeof r);
    for (uint64_t i = 0; i < 10000; i++)
        ms_sw_u64(w, 0x500000 + i);
    ms_sw_end(w);

    ms_sw_begin(w, MS_CHUNK_BLKS, 0);
    at = ms_sw_chunk_pos(w);
    ms_sw_u64(w, 0);
    for (int i = 0; i < 3000; i++) { /* 120 KB: the count is patched in the file */
        ms_snap_block b;
        memset(&b, 0, sizeof b);
        b.address = 0x10000 + (uint64_t)i * 64;
        b.size = 64;
        b.stack_id = 7;
        ms_sw_bytes(w, &b, sizeof b);
    }
    ms_sw_patch_u64(w, at, 3000);
    ms_sw_end(w);
    assert_int_equal(ms_sw_commit(w), 0);

    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);

    ms_snapshot *s = ms_snapshot_read(path, err, sizeof err);
    if (!s)
        fail_msg("%s", err);
    assert_string_equal(ms_snapshot_meta(s, "reason"), "api");
    assert_string_equal(ms_snapshot_meta(s, "pid"), "4242");
    assert_string_equal(ms_snapshot_meta(s, "neg"), "-17");
    assert_int_equal(s->nstacks, 2);
    const ms_stack *a = ms_snapshot_stack(s, 7), *b = ms_snapshot_stack(s, 9);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(a->depth, 2);
    assert_int_equal(a->pcs[1], 0x402000);
    assert_int_equal(a->c.live_bytes, 300);
    assert_int_equal(b->depth, 10000);
    assert_int_equal(b->pcs[9999], 0x500000 + 9999);
    assert_int_equal(s->nblocks, 3000);
    assert_int_equal(s->blocks[2999].address, 0x10000 + 2999 * 64);
    ms_snapshot_free(s);
}

static void test_truncated_file_is_refused(void **state)
{
    (void)state;
    char path[300], err[256];
    path_of(path, sizeof path, "memsight-1-0001-api.msnap");
    assert_int_equal(ms_sw_open(w, path, 0), 0);
    ms_sw_begin(w, MS_CHUNK_META, 0);
    ms_sw_u32(w, 1);
    ms_sw_kv(w, "reason", "api");
    ms_sw_end(w);
    assert_int_equal(ms_sw_commit(w), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    /* cut the END chunk off: the reader must say the file is truncated */
    assert_int_equal(truncate(path, st.st_size - 8), 0);
    ms_snapshot *s = ms_snapshot_read(path, err, sizeof err);
    assert_null(s);
    assert_non_null(strstr(err, path));
}

/* Entries of the test directory whose name starts with `prefix`. */
static int count_named(const char *prefix)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += !strncmp(e->d_name, prefix, strlen(prefix));
    if (d)
        closedir(d);
    return n;
}

static void test_refuses_symlink_and_existing_tmp(void **state)
{
    (void)state;
    char path[300], tmp[320], target[300];
    path_of(path, sizeof path, "memsight-1-0002-api.msnap");
    path_of(target, sizeof target, "target");
    /* A neighbour plants links at every temporary name the writer used to try (.tmp0 to
     * .tmp99) and at the final name: the temporary is unnamed or random, so it still
     * writes, and the link at the final name is replaced, not followed. */
    for (int k = 0; k < 100; k++) {
        snprintf(tmp, sizeof tmp, "%s/.memsight-1-0002-api.msnap.tmp%d", dir, k);
        assert_int_equal(symlink(target, tmp), 0);
    }
    assert_int_equal(symlink(target, path), 0);
    assert_int_equal(ms_sw_open(w, path, 0), 0);
    assert_int_equal(ms_sw_commit(w), 0);
    assert_int_equal(access(target, F_OK), -1);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(count_named(".memsight-1-0002-api.msnap.tmp"), 100);
}

static void test_abort_leaves_nothing(void **state)
{
    (void)state;
    char path[300];
    path_of(path, sizeof path, "memsight-1-0003-api.msnap");
    assert_int_equal(ms_sw_open(w, path, 0), 0);
    ms_sw_begin(w, MS_CHUNK_META, 0);
    ms_sw_u32(w, 0);
    ms_sw_abort(w);
    assert_int_equal(count_named(".memsight-1-0003"), 0);
    assert_int_equal(access(path, F_OK), -1);
}

/* While it is written, the file has no name at all where the file system has O_TMPFILE
 * (tmpfs has): an agent killed mid-write leaves nothing behind. */
static void test_unnamed_while_written(void **state)
{
    (void)state;
    char shm[64], path[128];
    snprintf(shm, sizeof shm, "/dev/shm/ms-sw-test-%d", (int)getpid());
    if (mkdir(shm, 0700) != 0) {
        skip();
        return;
    }
    snprintf(path, sizeof path, "%s/memsight-1-0006-api.msnap", shm);
    assert_int_equal(ms_sw_open(w, path, 0), 0);
    ms_sw_begin(w, MS_CHUNK_META, 0);
    ms_sw_u32(w, 1);
    ms_sw_kv(w, "reason", "api");
    ms_sw_end(w);
    assert_int_equal(w->tmp_name[0], 0);
    DIR *dd = opendir(shm);
    int entries = 0;
    struct dirent *e;
    while (dd && (e = readdir(dd)))
        entries += e->d_name[0] != '.' || strstr(e->d_name, "memsight") != NULL;
    if (dd)
        closedir(dd);
    assert_int_equal(entries, 0);
    assert_int_equal(ms_sw_commit(w), 0);
    assert_int_equal(access(path, F_OK), 0);
    unlink(path);
    rmdir(shm);
}

/* A finished file can be named again under another name in the same directory when the
 * first is taken (the agent's answer to a name it may not replace). */
static void test_place_under_another_name(void **state)
{
    (void)state;
    char path[300], other[300];
    path_of(path, sizeof path, "memsight-1-0004-api.msnap");
    path_of(other, sizeof other, "memsight-1-0005-api.msnap");
    assert_int_equal(mkdir(path, 0700), 0);
    char inside[320];
    snprintf(inside, sizeof inside, "%s/x", path);
    assert_int_equal(mkdir(inside, 0700), 0); /* a non-empty directory: rename must fail */
    assert_int_equal(ms_sw_open(w, path, 0), 0);
    assert_int_equal(ms_sw_finish(w), 0);
    int rc = ms_sw_place(w, NULL);
    assert_true(rc < 0);
    assert_true(ms_sf_name_taken(-rc));
    assert_int_equal(ms_sw_place(w, other), 0);
    ms_sw_close(w);
    char err[256];
    ms_snapshot *s = ms_snapshot_read(other, err, sizeof err);
    assert_non_null(s);
    ms_snapshot_free(s);
    assert_int_equal(count_named(".memsight-1-0004"), 0);
    assert_int_equal(count_named(".memsight-1-0005"), 0);
}

static void test_bad_directory(void **state)
{
    (void)state;
    assert_int_equal(ms_sw_open(w, "/nonexistent-dir-ms/x.msnap", 0), -ENOENT);
    char longp[700];
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = 0;
    assert_int_equal(ms_sw_open(w, longp, 0), -ENAMETOOLONG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fmt_u64),
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_truncated_file_is_refused),
        cmocka_unit_test(test_refuses_symlink_and_existing_tmp),
        cmocka_unit_test(test_abort_leaves_nothing),
        cmocka_unit_test(test_place_under_another_name),
        cmocka_unit_test(test_unnamed_while_written),
        cmocka_unit_test(test_bad_directory),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
