/* Unit tests of the windows the HPROF reader reads through (src/hprof/input.h). gzip:
 * one pass from the start records access points, and windows opened anywhere afterwards
 * (from those points) deliver exactly the bytes of the original data, across gzip
 * members, with data after the last member ignored; truncated and damaged files are
 * errors. A plain file: the same bytes through windows of any size, and a file cut
 * while being read is an error, not a short read taken for data. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmp_file.h"
#include <zlib.h>

#include "hprof/input.h"

enum { DATA = 9 << 20 };

static uint8_t *data;

/* Compressible but not trivial: runs of a pattern and of pseudo-random letters (deflate
 * blocks of some tens of KiB, as in a heap dump, rather than a few huge ones). */
static void make_data(void)
{
    data = malloc(DATA);
    assert_non_null(data);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < DATA;) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t run = 16 + (x & 4095);
        int pattern = (x >> 20) % 4 == 0;
        for (size_t k = 0; k < run && i < DATA; k++, i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            data[i] = pattern ? (uint8_t)(k * 7) : (uint8_t)('a' + (x & 15));
        }
    }
}

static void put_member(FILE *f, const uint8_t *p, size_t n, int level)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    assert_int_equal(deflateInit2(&z, level, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&z, n);
    uint8_t *out = malloc(cap);
    assert_non_null(out);
    z.next_in = (uint8_t *)p;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    assert_int_equal(fwrite(out, 1, z.total_out, f), z.total_out);
    deflateEnd(&z);
    free(out);
}

/* A new temporary file, unlinked, open for reading and writing. */
static int tmp_fd(void)
{
    char path[4096];
    int fd = ms_test_tmp_file("ms-input", path, sizeof path);
    assert_true(fd >= 0);
    unlink(path);
    return fd;
}

/* A temporary gzip file of data: one member, or members of 1 MiB + odd sizes; tail bytes
 * after the last member. Returns an fd open for reading (the file is unlinked). */
static int make_gz(int members, const char *tail, size_t cut)
{
    int fd = tmp_fd();
    FILE *f = fdopen(dup(fd), "wb");
    assert_non_null(f);
    if (members == 1) {
        put_member(f, data, DATA, 1);
    } else {
        for (size_t at = 0, k = 0; at < DATA; k++) {
            size_t n = (1 << 20) + (k * 77777) % 300000;
            if (n > DATA - at)
                n = DATA - at;
            put_member(f, data + at, n, k % 2 ? 6 : 1);
            at += n;
        }
    }
    if (tail)
        fwrite(tail, 1, strlen(tail), f);
    fclose(f);
    if (cut) {
        off_t end = lseek(fd, 0, SEEK_END);
        assert_int_equal(ftruncate(fd, end - (off_t)cut), 0);
    }
    return fd;
}

/* Reads the whole stream from 0 in steps of varied sizes, checking every byte; the
 * index then has its points. */
static void read_all(ms_hinput *ix)
{
    ms_hwin s;
    char err[200];
    assert_int_equal(ms_hwin_open(&s, ix, 0, ms_hinput_is_gzip(ix), err, sizeof err), 0);
    uint64_t at = 0;
    for (size_t step = 1; at < DATA; step = step * 3 % 70001 + 1) {
        uint64_t n = at + step <= DATA ? step : DATA - at;
        assert_int_equal(ms_hwin_need(&s, at, n, err, sizeof err), 0);
        assert_memory_equal(s.base + at, data + at, n);
        at += n + (step % 5 == 0 ? step * 40 : 0); /* skip some: inflated and dropped */
    }
    assert_int_equal(ms_hwin_need(&s, DATA, 1, err, sizeof err), 1);
    assert_true(s.eof);
    assert_int_equal(s.fill, DATA);
    ms_hwin_close(&s);
}

static void check_random_opens(ms_hinput *ix)
{
    uint64_t x = 12345;
    for (int i = 0; i < 16; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t at = (x >> 11) % DATA;
        uint64_t n = 1 + (x >> 3) % 200000;
        if (n > DATA - at)
            n = DATA - at;
        ms_hwin s;
        char err[200];
        assert_int_equal(ms_hwin_open(&s, ix, at, 0, err, sizeof err), 0);
        assert_int_equal(ms_hwin_need(&s, at, n, err, sizeof err), 0);
        assert_memory_equal(s.base + at, data + at, n);
        /* and on to the end, across members */
        uint64_t next = at + n + 3 * (1 << 20);
        if (next < DATA) {
            assert_int_equal(ms_hwin_need(&s, next, DATA - next, err, sizeof err), 0);
            assert_memory_equal(s.base + next, data + next, DATA - next);
        }
        ms_hwin_close(&s);
    }
}

static void test_one_member(void **state)
{
    (void)state;
    int fd = make_gz(1, NULL, 0);
    ms_hinput *ix = ms_hinput_gzip(fd);
    assert_non_null(ix);
    read_all(ix);
    /* 9 MiB, a point per MiB or so */
    assert_true(ms_hinput_points(ix) >= 6);
    assert_true(ms_hinput_bytes(ix) <= 16 * 33000u);
    check_random_opens(ix);
    ms_hinput_free(ix);
    close(fd);
}

static void test_members_and_tail(void **state)
{
    (void)state;
    int fd = make_gz(2, "trailing bytes that are not gzip", 0);
    ms_hinput *ix = ms_hinput_gzip(fd);
    read_all(ix);
    assert_true(ms_hinput_points(ix) >= 6);
    check_random_opens(ix);
    ms_hinput_free(ix);
    close(fd);
}

static void test_truncated(void **state)
{
    (void)state;
    for (int members = 1; members <= 2; members++) {
        int fd = make_gz(members, NULL, 1000);
        ms_hinput *ix = ms_hinput_gzip(fd);
        ms_hwin s;
        char err[200] = "";
        assert_int_equal(ms_hwin_open(&s, ix, 0, 1, err, sizeof err), 0);
        assert_int_equal(ms_hwin_need(&s, DATA - 1, 1, err, sizeof err), -1);
        assert_non_null(strstr(err, "gzip: unexpected end of file"));
        ms_hwin_close(&s);
        ms_hinput_free(ix);
        close(fd);
    }
}

static void test_damaged(void **state)
{
    (void)state;
    int fd = make_gz(1, NULL, 0);
    /* a flipped byte in the middle: a data error or the CRC check at the end */
    uint8_t c;
    assert_int_equal(pread(fd, &c, 1, 200000), 1);
    c ^= 0x55;
    assert_int_equal(pwrite(fd, &c, 1, 200000), 1);
    ms_hinput *ix = ms_hinput_gzip(fd);
    ms_hwin s;
    char err[200] = "";
    assert_int_equal(ms_hwin_open(&s, ix, 0, 1, err, sizeof err), 0);
    int rc = ms_hwin_need(&s, DATA - 1, 1, err, sizeof err);
    if (rc == 0) /* the damage may decode: the CRC at the member's end catches it */
        rc = ms_hwin_need(&s, DATA, 1, err, sizeof err);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, "gzip: "));
    ms_hwin_close(&s);
    ms_hinput_free(ix);
    close(fd);
}

/* The plain data in a temporary file (unlinked), open for reading and writing. */
static int make_plain(void)
{
    int fd = tmp_fd();
    assert_int_equal(pwrite(fd, data, DATA, 0), (ssize_t)DATA);
    return fd;
}

static void test_plain_file(void **state)
{
    (void)state;
    int fd = make_plain();
    /* the default window, one smaller than most steps and one of 7 bytes */
    const size_t windows[] = {0, 4093, 7};
    for (size_t w = 0; w < sizeof windows / sizeof *windows; w++) {
        ms_hinput *ix = ms_hinput_file(fd, DATA);
        assert_non_null(ix);
        assert_false(ms_hinput_is_gzip(ix));
        ms_hinput_set_window(ix, windows[w]);
        read_all(ix);
        check_random_opens(ix);
        uint8_t b[100];
        assert_int_equal(ms_hinput_peek(ix, DATA - 40, b, sizeof b), 40);
        assert_memory_equal(b, data + DATA - 40, 40);
        ms_hinput_free(ix);
    }
    /* cut while being read: the size given at the start is not reached */
    ms_hinput *ix = ms_hinput_file(fd, DATA);
    ms_hwin s;
    char err[200] = "";
    assert_int_equal(ms_hwin_open(&s, ix, 0, 0, err, sizeof err), 0);
    assert_int_equal(ms_hwin_need(&s, 0, 1000, err, sizeof err), 0);
    assert_int_equal(ftruncate(fd, DATA / 2), 0);
    assert_int_equal(ms_hwin_need(&s, DATA - 10, 10, err, sizeof err), -1);
    assert_non_null(strstr(err, "ends before the size it had"));
    ms_hwin_close(&s);
    ms_hinput_free(ix);
    close(fd);
}

static void test_memory(void **state)
{
    (void)state;
    ms_hinput *ix = ms_hinput_mem(data, DATA);
    read_all(ix);
    check_random_opens(ix);
    ms_hinput_free(ix);
}

int main(void)
{
    make_data();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_member),
        cmocka_unit_test(test_members_and_tail),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_damaged),
        cmocka_unit_test(test_plain_file),
        cmocka_unit_test(test_memory),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(data);
    return rc;
}
