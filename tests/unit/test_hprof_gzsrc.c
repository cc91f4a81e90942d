/* Unit tests of the gzip window of the HPROF reader (src/hprof/gzsrc.h): one pass from
 * the start records access points, and streams opened anywhere afterwards (from those
 * points) deliver exactly the bytes of the original data, across gzip members, with
 * data after the last member ignored; truncated and damaged files are errors. */
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
#include <zlib.h>

#include "hprof/gzsrc.h"

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

/* A temporary gzip file of data: one member, or members of 1 MiB + odd sizes; tail bytes
 * after the last member. Returns an fd open for reading (the file is unlinked). */
static int make_gz(int members, const char *tail, size_t cut)
{
    char path[] = "/tmp/ms-gzsrc-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
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
static void read_all(ms_gzindex *ix)
{
    ms_gzsrc s;
    char err[200];
    assert_int_equal(ms_gzsrc_open(&s, ix, 0, 1, err, sizeof err), 0);
    uint64_t at = 0;
    for (size_t step = 1; at < DATA; step = step * 3 % 70001 + 1) {
        uint64_t n = at + step <= DATA ? step : DATA - at;
        assert_int_equal(ms_gzsrc_need(&s, at, n, err, sizeof err), 0);
        assert_memory_equal(s.base + at, data + at, n);
        at += n + (step % 5 == 0 ? step * 40 : 0); /* skip some: inflated and dropped */
    }
    assert_int_equal(ms_gzsrc_need(&s, DATA, 1, err, sizeof err), 1);
    assert_true(s.eof);
    assert_int_equal(s.fill, DATA);
    ms_gzsrc_close(&s);
}

static void check_random_opens(ms_gzindex *ix)
{
    uint64_t x = 12345;
    for (int i = 0; i < 16; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t at = (x >> 11) % DATA;
        uint64_t n = 1 + (x >> 3) % 200000;
        if (n > DATA - at)
            n = DATA - at;
        ms_gzsrc s;
        char err[200];
        assert_int_equal(ms_gzsrc_open(&s, ix, at, 0, err, sizeof err), 0);
        assert_int_equal(ms_gzsrc_need(&s, at, n, err, sizeof err), 0);
        assert_memory_equal(s.base + at, data + at, n);
        /* and on to the end, across members */
        uint64_t next = at + n + 3 * (1 << 20);
        if (next < DATA) {
            assert_int_equal(ms_gzsrc_need(&s, next, DATA - next, err, sizeof err), 0);
            assert_memory_equal(s.base + next, data + next, DATA - next);
        }
        ms_gzsrc_close(&s);
    }
}

static void test_one_member(void **state)
{
    (void)state;
    int fd = make_gz(1, NULL, 0);
    ms_gzindex *ix = ms_gzindex_new(fd);
    assert_non_null(ix);
    read_all(ix);
    /* 9 MiB, a point per MiB or so */
    assert_true(ms_gzindex_points(ix) >= 6);
    assert_true(ms_gzindex_bytes(ix) <= 16 * 33000u);
    check_random_opens(ix);
    ms_gzindex_free(ix);
    close(fd);
}

static void test_members_and_tail(void **state)
{
    (void)state;
    int fd = make_gz(2, "trailing bytes that are not gzip", 0);
    ms_gzindex *ix = ms_gzindex_new(fd);
    read_all(ix);
    assert_true(ms_gzindex_points(ix) >= 6);
    check_random_opens(ix);
    ms_gzindex_free(ix);
    close(fd);
}

static void test_truncated(void **state)
{
    (void)state;
    for (int members = 1; members <= 2; members++) {
        int fd = make_gz(members, NULL, 1000);
        ms_gzindex *ix = ms_gzindex_new(fd);
        ms_gzsrc s;
        char err[200] = "";
        assert_int_equal(ms_gzsrc_open(&s, ix, 0, 1, err, sizeof err), 0);
        assert_int_equal(ms_gzsrc_need(&s, DATA - 1, 1, err, sizeof err), -1);
        assert_non_null(strstr(err, "gzip: unexpected end of file"));
        ms_gzsrc_close(&s);
        ms_gzindex_free(ix);
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
    ms_gzindex *ix = ms_gzindex_new(fd);
    ms_gzsrc s;
    char err[200] = "";
    assert_int_equal(ms_gzsrc_open(&s, ix, 0, 1, err, sizeof err), 0);
    int rc = ms_gzsrc_need(&s, DATA - 1, 1, err, sizeof err);
    if (rc == 0) /* the damage may decode: the CRC at the member's end catches it */
        rc = ms_gzsrc_need(&s, DATA, 1, err, sizeof err);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, "gzip: "));
    ms_gzsrc_close(&s);
    ms_gzindex_free(ix);
    close(fd);
}

int main(void)
{
    make_data();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_member),
        cmocka_unit_test(test_members_and_tail),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_damaged),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(data);
    return rc;
}
