/* Unit tests of the snapshot reader on files built here byte by byte from the layouts
 * documented in snapshot_format.h: good, corrupted, truncated, newer versions.
 * Never relies on the agent's writer, so a bug in one cannot hide a bug in the other. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "core/snapshot.h"

/* ---------------------------------------------------------------------------
 * A little-endian byte builder.
 * ------------------------------------------------------------------------- */
typedef struct buf {
    uint8_t *p;
    size_t len, cap;
} buf;

static void put(buf *b, const void *d, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->len, d, n);
    b->len += n;
}
static void put_le(buf *b, uint64_t v, int n)
{
    uint8_t t[8];
    for (int i = 0; i < n; i++)
        t[i] = (uint8_t)(v >> (8 * i));
    put(b, t, (size_t)n);
}
static void u8(buf *b, uint64_t v) { put_le(b, v, 1); }
static void u16(buf *b, uint64_t v) { put_le(b, v, 2); }
static void u32(buf *b, uint64_t v) { put_le(b, v, 4); }
static void u64(buf *b, uint64_t v) { put_le(b, v, 8); }
static void str(buf *b, const char *s)
{
    u32(b, strlen(s));
    put(b, s, strlen(s));
}

static void header(buf *b, unsigned major, unsigned minor)
{
    put(b, "MSIGSNAP", 8);
    u16(b, major);
    u16(b, minor);
    u32(b, 32);
    u64(b, 0);
    u64(b, 0);
}

static void chunk(buf *b, uint32_t type, uint32_t flags, const buf *payload)
{
    u32(b, type);
    u32(b, flags);
    u64(b, payload->len);
    u32(b, (uint32_t)crc32(0, payload->p, (uInt)payload->len));
    u32(b, 0);
    put(b, payload->p, payload->len);
    static const uint8_t zero[8];
    put(b, zero, (8 - payload->len % 8) % 8);
}

static void end_chunk(buf *b, uint32_t nbefore)
{
    buf p = {0};
    u32(&p, nbefore);
    chunk(b, MS_CHUNK_END, 0, &p);
    free(p.p);
}

static void stack_rec(buf *p, uint32_t id, int kind, uint32_t depth, const uint64_t *pcs,
                      uint64_t live_blocks, uint64_t live_bytes)
{
    u32(p, id);
    u8(p, (uint64_t)kind);
    u8(p, 0);
    u16(p, 0);
    u32(p, depth);
    u32(p, 0);
    u64(p, live_blocks);
    u64(p, live_bytes);
    u64(p, live_blocks + 2);
    u64(p, live_bytes + 200);
    u64(p, 2);
    u64(p, 200);
    for (uint32_t i = 0; i < depth; i++)
        u64(p, pcs[i]);
}

/* A complete, valid snapshot using every chunk type. Returns the number of chunks. */
static int good_snapshot(buf *b, unsigned minor, int extra_unknown, uint32_t unknown_flags)
{
    int n = 0;
    header(b, MS_SNAP_VERSION_MAJOR, minor);
    buf p = {0};

    u32(&p, 3);
    str(&p, "pid"), str(&p, "4242");
    str(&p, "exe"), str(&p, "/usr/bin/demo");
    str(&p, "cmdline");
    u32(&p, 11), put(&p, "demo\0-x\0foo", 11);
    chunk(b, MS_CHUNK_META, 0, &p), n++;

    p.len = 0;
    u32(&p, 2);
    u64(&p, 0x555500000000ull);
    str(&p, "/usr/bin/demo");
    u32(&p, 5), put(&p, "\x01\x02\x03\x04\x05\0\0\0", 8); /* build-id padded to 4 */
    u32(&p, 2);
    u64(&p, 0), u64(&p, 0x1000), u64(&p, 0), u32(&p, 4), u32(&p, 0);
    u64(&p, 0x1000), u64(&p, 0x2000), u64(&p, 0x1000), u32(&p, 5), u32(&p, 0);
    u64(&p, 0x7f0000000000ull);
    str(&p, "/lib/libc.so.6");
    u32(&p, 0);
    u32(&p, 1);
    u64(&p, 0x20000), u64(&p, 0x10000), u64(&p, 0x20000), u32(&p, 5), u32(&p, 0);
    chunk(b, MS_CHUNK_MODS, 0, &p), n++;

    p.len = 0;
    uint64_t pcs7[3] = {0x555500001010ull, 0x555500001500ull, 0x7f0000020010ull};
    uint64_t pcs3[1] = {0x555500001234ull};
    u32(&p, 3);
    stack_rec(&p, 7, MS_KIND_HEAP, 3, pcs7, 10, 1000); /* out of id order on purpose */
    stack_rec(&p, 3, MS_KIND_MMAP, 1, pcs3, 1, 8192);
    stack_rec(&p, 5, MS_KIND_STACK, 0, NULL, 2, 16384);
    chunk(b, MS_CHUNK_STKS, 0, &p), n++;

    p.len = 0;
    u64(&p, 99999), u64(&p, 1234567);
    u32(&p, 1);
    u32(&p, 7), u32(&p, 0), u64(&p, 12), u64(&p, 1200);
    chunk(b, MS_CHUNK_PEAK, 0, &p), n++;

    p.len = 0;
    u64(&p, 2);
    for (int i = 0; i < 2; i++) {
        u64(&p, 0x10000 + (uint64_t)i * 0x100), u64(&p, 100), u64(&p, 5);
        u32(&p, 7), u32(&p, 4242), u8(&p, 0);
        put(&p, "\0\0\0\0\0\0\0", 7);
    }
    chunk(b, MS_CHUNK_BLKS, 0, &p), n++;

    p.len = 0;
    u32(&p, 1);
    u32(&p, 4242), u32(&p, 0), u64(&p, 0x7ffd0000), u64(&p, 0x7ffe0000);
    str(&p, "main");
    chunk(b, MS_CHUNK_THRD, 0, &p), n++;

    p.len = 0;
    u32(&p, 2);
    str(&p, "dropped_blocks"), u64(&p, 0);
    str(&p, "unwind_failures"), u64(&p, 3);
    chunk(b, MS_CHUNK_HLTH, 0, &p), n++;

    p.len = 0;
    for (int i = 0; i < 4; i++)
        u64(&p, (uint64_t)i + 1);
    for (int i = 0; i < 4; i++)
        u64(&p, ((uint64_t)i + 1) * 100);
    u64(&p, 11), u64(&p, 22), u64(&p, 0);
    u32(&p, 1);
    u32(&p, 7), u8(&p, MS_LEAK_DEFINITE), u8(&p, 4), u16(&p, 0);
    u64(&p, 1), u64(&p, 100), u64(&p, 0x10000), u64(&p, 100);
    put(&p, "leak", 4);
    for (int i = 4; i < 32; i++)
        u8(&p, 0);
    chunk(b, MS_CHUNK_LEAK, 0, &p), n++;

    p.len = 0;
    u32(&p, 1);
    str(&p, "VmRSS"), u64(&p, 2048);
    chunk(b, MS_CHUNK_ACCT, 0, &p), n++;

    if (extra_unknown) {
        p.len = 0;
        u32(&p, 0xdeadbeef);
        chunk(b, MS_FOURCC('N', 'E', 'W', '1'), unknown_flags, &p), n++;
    }
    end_chunk(b, (uint32_t)n);
    free(p.p);
    return n;
}

static char err[512];

static ms_snapshot *parse(const buf *b)
{
    err[0] = 0;
    return ms_snapshot_parse(b->p, b->len, "t.msnap", err, sizeof err);
}

/* ---------------------------------------------------------------------------
 * Tests.
 * ------------------------------------------------------------------------- */
static void test_good_file_every_field(void **state)
{
    (void)state;
    buf b = {0};
    good_snapshot(&b, MS_SNAP_VERSION_MINOR, 0, 0);
    ms_snapshot *s = parse(&b);
    assert_non_null(s);
    assert_string_equal(err, "");
    assert_int_equal(s->version_major, MS_SNAP_VERSION_MAJOR);
    assert_string_equal(ms_snapshot_meta(s, "pid"), "4242");
    assert_string_equal(ms_snapshot_meta(s, "cmdline"), "demo -x foo");
    assert_null(ms_snapshot_meta(s, "nope"));

    assert_int_equal(s->nmodules, 2);
    assert_string_equal(s->modules[0].path, "/usr/bin/demo");
    assert_int_equal(s->modules[0].build_id_len, 5);
    assert_memory_equal(s->modules[0].build_id, "\x01\x02\x03\x04\x05", 5);
    assert_int_equal(s->modules[0].nseg, 2);
    assert_int_equal(s->modules[0].segs[1].memsz, 0x2000);
    assert_int_equal(s->modules[1].load_bias, 0x7f0000000000ull);
    assert_ptr_equal(ms_snapshot_module_for_pc(s, 0x555500001500ull), &s->modules[0]);
    assert_ptr_equal(ms_snapshot_module_for_pc(s, 0x7f0000020010ull), &s->modules[1]);
    assert_null(ms_snapshot_module_for_pc(s, 0x555500003000ull)); /* just past seg 2 */
    assert_null(ms_snapshot_module_for_pc(s, 0x1));

    assert_int_equal(s->nstacks, 3);
    assert_int_equal(s->stacks[0].id, 3); /* sorted */
    const ms_stack *st = ms_snapshot_stack(s, 7);
    assert_non_null(st);
    assert_int_equal(st->kind, MS_KIND_HEAP);
    assert_int_equal(st->depth, 3);
    assert_int_equal(st->pcs[2], 0x7f0000020010ull);
    assert_int_equal(st->c.live_bytes, 1000);
    assert_int_equal(st->c.alloc_bytes, 1200);
    assert_int_equal(st->c.free_blocks, 2);
    assert_int_equal(st->peak_live_bytes, 1200);
    assert_int_equal(ms_snapshot_stack(s, 5)->kind, MS_KIND_STACK);
    assert_null(ms_snapshot_stack(s, 4));
    assert_true(s->has_peak);
    assert_int_equal(s->peak_live_bytes_total, 99999);

    assert_true(s->has_blocks);
    assert_int_equal(s->nblocks, 2);
    assert_int_equal(s->blocks[1].address, 0x10100);
    assert_int_equal(s->blocks[1].tid, 4242);
    assert_int_equal(s->nthreads, 1);
    assert_string_equal(s->threads[0].name, "main");

    uint64_t v = 0;
    assert_int_equal(ms_snapshot_health(s, "unwind_failures", &v), 0);
    assert_int_equal(v, 3);
    assert_int_equal(ms_snapshot_health(s, "nothing", &v), -1);

    assert_true(s->has_leaks);
    assert_int_equal(s->leak_summary.bytes[MS_LEAK_REACHABLE], 400);
    assert_int_equal(s->leak_summary.scan_ns, 22);
    assert_int_equal(s->nleaks, 1);
    assert_int_equal(s->leaks[0].sample_len, 4);
    assert_memory_equal(s->leaks[0].sample, "leak", 4);
    assert_int_equal(s->nacct, 1);
    assert_int_equal(s->acct[0].value, 2048);
    assert_int_equal(s->unknown_chunks, 0);
    ms_snapshot_free(s);
    free(b.p);
}

static void test_every_truncation_is_refused(void **state)
{
    (void)state;
    buf b = {0};
    good_snapshot(&b, MS_SNAP_VERSION_MINOR, 0, 0);
    /* The END chunk is the last 32 bytes (24 header + 4 payload + 4 padding); every
     * shorter file must be refused with a message naming the file. Cutting only the
     * final padding still leaves a complete END payload. */
    for (size_t cut = 0; cut < b.len - 4; cut++) {
        buf t = {b.p, cut, cut};
        ms_snapshot *s = parse(&t);
        if (s)
            fail_msg("a file cut to %zu of %zu bytes was accepted", cut, b.len);
        assert_non_null(strstr(err, "t.msnap"));
    }
    buf t = {b.p, b.len - 200, 0};
    assert_null(parse(&t));
    assert_non_null(strstr(err, "truncated"));
    free(b.p);
}

static void test_every_byte_flip_is_detected(void **state)
{
    (void)state;
    buf b = {0};
    good_snapshot(&b, MS_SNAP_VERSION_MINOR, 0, 0);
    /* The bytes no reader checks: the minor version, header flags and reserved words,
     * each chunk's flags and reserved word (a flip of 0x40 never sets REQUIRED) and the
     * padding after each payload. Everything else must be caught. */
    uint8_t *unchecked = calloc(b.len, 1);
    memset(unchecked + 10, 1, 2);
    memset(unchecked + 16, 1, 16);
    for (size_t off = 32; off < b.len;) {
        size_t len = b.p[off + 8] | (size_t)b.p[off + 9] << 8 | (size_t)b.p[off + 10] << 16;
        memset(unchecked + off + 4, 1, 4);
        memset(unchecked + off + 20, 1, 4);
        size_t padded = (len + 7) & ~(size_t)7;
        memset(unchecked + off + 24 + len, 1, padded - len);
        off += 24 + padded;
    }
    for (size_t i = 0; i < b.len; i++) {
        b.p[i] ^= 0x40;
        ms_snapshot *s = parse(&b);
        if ((s != NULL) != (unchecked[i] != 0))
            fail_msg("flipping byte %zu: %s (%s)", i, s ? "accepted" : "refused", err);
        ms_snapshot_free(s);
        b.p[i] ^= 0x40;
    }
    free(unchecked);
    /* A flipped payload byte is named as a checksum mismatch in its chunk. */
    b.p[32 + 24 + 2] ^= 1;
    assert_null(parse(&b));
    assert_non_null(strstr(err, "t.msnap: offset 32: chunk 'META': checksum mismatch"));
    free(b.p);
}

static void test_newer_major_is_refused(void **state)
{
    (void)state;
    buf b = {0};
    header(&b, MS_SNAP_VERSION_MAJOR + 1, 0);
    end_chunk(&b, 0);
    assert_null(parse(&b));
    assert_non_null(strstr(err, "newer than this memsight reads"));
    free(b.p);
}

static void test_newer_minor_skips_unknown_chunk(void **state)
{
    (void)state;
    buf b = {0};
    good_snapshot(&b, MS_SNAP_VERSION_MINOR + 1, 1, 0);
    ms_snapshot *s = parse(&b);
    assert_non_null(s);
    assert_int_equal(s->unknown_chunks, 1);
    assert_int_equal(s->nstacks, 3);
    ms_snapshot_free(s);
    free(b.p);

    buf r = {0};
    good_snapshot(&r, MS_SNAP_VERSION_MINOR + 1, 1, MS_CHUNKF_REQUIRED);
    assert_null(parse(&r));
    assert_non_null(strstr(err, "chunk 'NEW1': required chunk type unknown"));
    free(r.p);
}

static void test_lying_counts_are_refused(void **state)
{
    (void)state;
    /* Valid checksums, absurd counts: must fail cleanly, not allocate or overread. */
    static const struct {
        uint32_t type;
        uint64_t count;
        int width;
        const char *msg;
    } cases[] = {
        {MS_CHUNK_STKS, 0xffffffffu, 4, "stack count"},
        {MS_CHUNK_BLKS, 0xffffffffffffffffull, 8, "block count"},
        {MS_CHUNK_MODS, 1000, 4, "module count"},
        {MS_CHUNK_META, 7, 4, "entry count"},
        {MS_CHUNK_THRD, 2, 4, "thread count"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        buf b = {0}, p = {0};
        header(&b, 1, 0);
        put_le(&p, cases[i].count, cases[i].width);
        u64(&p, 0);
        chunk(&b, cases[i].type, 0, &p);
        end_chunk(&b, 1);
        assert_null(parse(&b));
        assert_non_null(strstr(err, cases[i].msg));
        free(b.p);
        free(p.p);
    }
    /* A stack whose depth runs past the payload. */
    buf b = {0}, p = {0};
    header(&b, 1, 0);
    u32(&p, 1);
    uint64_t pc = 1;
    stack_rec(&p, 1, 0, 1, &pc, 1, 1);
    p.p[12] = 200; /* depth field: after count, id, kind, reserved, flags */
    chunk(&b, MS_CHUNK_STKS, 0, &p);
    end_chunk(&b, 1);
    assert_null(parse(&b));
    assert_non_null(strstr(err, "depth 200 exceeds"));
    free(b.p);
    free(p.p);
}

static void test_structural_errors(void **state)
{
    (void)state;
    buf b = {0};
    int n = good_snapshot(&b, MS_SNAP_VERSION_MINOR, 0, 0);
    /* END with the wrong chunk count. */
    b.p[b.len - 8] = (uint8_t)(n + 1);
    b.p[b.len - 16] = 0; /* CRC no longer matches: fix it */
    uint32_t crc = (uint32_t)crc32(0, b.p + b.len - 8, 4);
    for (int i = 0; i < 4; i++)
        b.p[b.len - 16 + i] = (uint8_t)(crc >> (8 * i));
    assert_null(parse(&b));
    assert_non_null(strstr(err, "END says"));
    free(b.p);

    /* Trailing garbage after END. */
    buf t = {0};
    good_snapshot(&t, MS_SNAP_VERSION_MINOR, 0, 0);
    u64(&t, 0);
    assert_null(parse(&t));
    assert_non_null(strstr(err, "after the END chunk"));
    free(t.p);

    /* Duplicate stack ids. */
    buf d = {0}, p = {0};
    header(&d, 1, 0);
    u32(&p, 2);
    stack_rec(&p, 9, 0, 0, NULL, 1, 1);
    stack_rec(&p, 9, 0, 0, NULL, 1, 1);
    chunk(&d, MS_CHUNK_STKS, 0, &p);
    end_chunk(&d, 1);
    assert_null(parse(&d));
    assert_non_null(strstr(err, "appears twice"));
    free(d.p);
    free(p.p);

    /* Not a snapshot at all, and an empty one. */
    buf z = {(uint8_t *)"hello world, this is no snapshot at all", 39, 0};
    assert_null(parse(&z));
    assert_non_null(strstr(err, "bad magic"));
    buf e = {(uint8_t *)"", 0, 0};
    assert_null(parse(&e));
    assert_non_null(strstr(err, "empty"));
}

static void test_read_from_file(void **state)
{
    (void)state;
    buf b = {0};
    good_snapshot(&b, MS_SNAP_VERSION_MINOR, 0, 0);
    char path[] = "/tmp/ms-test-snapshot-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, b.p, b.len), (ssize_t)b.len);
    close(fd);
    ms_snapshot *s = ms_snapshot_read(path, err, sizeof err);
    assert_non_null(s);
    assert_string_equal(s->path, path);
    assert_int_equal(s->nstacks, 3);
    ms_snapshot_free(s);
    /* The same file truncated: the message names the file. */
    assert_int_equal(truncate(path, (off_t)b.len - 32), 0);
    assert_null(ms_snapshot_read(path, err, sizeof err));
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "truncated"));
    unlink(path);
    assert_null(ms_snapshot_read(path, err, sizeof err));
    assert_non_null(strstr(err, "cannot open"));
    assert_null(ms_snapshot_read("/", err, sizeof err));
    assert_non_null(strstr(err, "directory"));
    free(b.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_file_every_field),
        cmocka_unit_test(test_every_truncation_is_refused),
        cmocka_unit_test(test_every_byte_flip_is_detected),
        cmocka_unit_test(test_newer_major_is_refused),
        cmocka_unit_test(test_newer_minor_skips_unknown_chunk),
        cmocka_unit_test(test_lying_counts_are_refused),
        cmocka_unit_test(test_structural_errors),
        cmocka_unit_test(test_read_from_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
