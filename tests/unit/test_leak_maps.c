/* Unit tests of the leak scan's /proc/self/maps parser and checked view
 * (src/agent/leak/leak_maps.c): well-formed and malformed lines, skipped mappings, holes,
 * the scanner's own regions, and the real /proc/self/maps of this process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/leak/leak_maps.h"

static int parse(const char *line, ms_lk_map *m)
{
    return ms_lk_maps_parse_line(line, strlen(line), m);
}

static void test_parse_lines(void **state)
{
    (void)state;
    ms_lk_map m;
    assert_int_equal(parse("7f00000000-7f00001000 rw-p 00000000 00:00 0 ", &m), 1);
    assert_int_equal(m.lo, 0x7f00000000ull);
    assert_int_equal(m.hi, 0x7f00001000ull);
    assert_int_equal(m.flags, MS_LKM_R | MS_LKM_W | MS_LKM_ANON); /* anonymous */
    assert_int_equal(parse("55d0c0de0000-55d0c0de1000 r-xp 00001000 fe:00 1234   /usr/bin/x", &m),
                     1);
    assert_int_equal(m.flags, MS_LKM_R | MS_LKM_X | MS_LKM_FILE);
    assert_int_equal(parse("55d0c0e00000-55d0c0e21000 rw-p 00000000 00:00 0   [heap]", &m), 1);
    assert_int_equal(m.flags, MS_LKM_R | MS_LKM_W | MS_LKM_ANON);
    assert_int_equal(parse("7f0000000000-7f0000001000 rw-p 00000000 00:00 0   [anon:arena]", &m), 1);
    assert_true(m.flags & MS_LKM_ANON);
    assert_int_equal(parse("7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0  [stack]", &m), 1);
    assert_true(m.flags & MS_LKM_STACK);
    assert_false(m.flags & MS_LKM_ANON);
    assert_int_equal(parse("7ffd00100000-7ffd00104000 r--p 00000000 00:00 0  [vvar]", &m), 1);
    assert_true(m.flags & MS_LKM_SKIP);
    assert_int_equal(parse("7f0000000000-7f0000100000 rw-s 00000000 00:05 9  /dev/dri/card0", &m),
                     1);
    assert_true(m.flags & MS_LKM_SKIP);
    assert_int_equal(parse("7f0000000000-7f0000100000 rw-p 00000000 00:05 9  /dev/zero", &m), 1);
    assert_false(m.flags & MS_LKM_SKIP);
    assert_int_equal(parse("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]",
                           &m),
                     1);
    assert_true(m.flags & MS_LKM_SKIP);
    /* malformed: never accepted, never read past the end */
    const char *bad[] = {"", "-", "zz-10 rw-p", "10-20", "10-20 ", "20-10 rw-p 0 0:0 0",
                         "10 20 rw-p", "10-x rw-p 0 0 0", "11111111111111111-2 rw-p 0 0 0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(parse(bad[i], &m), 0);
}

static void test_parse_random_bytes(void **state)
{
    (void)state;
    /* random bytes and truncations of a good line: no crash, no read past len */
    const char *good = "7f00000000-7f00001000 rw-p 00000000 00:00 0   [heap]";
    ms_lk_map m;
    for (size_t n = 0; n <= strlen(good); n++) {
        char *copy = malloc(n ? n : 1);
        memcpy(copy, good, n);
        (void)ms_lk_maps_parse_line(copy, n, &m);
        free(copy);
    }
    uint64_t seed = 7;
    for (int it = 0; it < 20000; it++) {
        size_t n = (size_t)(seed % 64);
        char *buf = malloc(n ? n : 1);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 6364136223846793005ull + 1;
            buf[i] = "0123456789abcdef- rwxp[]/\n"[(seed >> 33) % 27];
        }
        if (ms_lk_maps_parse_line(buf, n, &m))
            assert_true(m.hi > m.lo);
        free(buf);
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    }
}

static void test_view(void **state)
{
    (void)state;
    static ms_lk_map arr[3];
    static uint8_t mem[3 * 4096] __attribute__((aligned(4096)));
    uint64_t base = (uint64_t)(uintptr_t)mem;
    arr[0] = (ms_lk_map){base, base + 4096, MS_LKM_R | MS_LKM_W, 0};
    /* hole: [base+4096, base+8192) */
    arr[1] = (ms_lk_map){base + 8192, base + 12288, MS_LKM_R, 0};
    ms_lk_maps maps;
    memset(&maps, 0, sizeof maps);
    maps.m = arr;
    maps.n = 2;
    uint64_t avail;
    assert_ptr_equal(ms_lk_maps_view(&maps, base + 8, 100, &avail), mem + 8);
    assert_int_equal(avail, 100);
    assert_ptr_equal(ms_lk_maps_view(&maps, base + 4000, 1000, &avail), mem + 4000);
    assert_int_equal(avail, 96); /* stops at the mapping's end */
    assert_null(ms_lk_maps_view(&maps, base + 4096, 10000, &avail));
    assert_int_equal(avail, 4096); /* skip to the next mapping */
    assert_null(ms_lk_maps_view_w(&maps, base + 8192, 100, &avail)); /* read-only */
    assert_non_null(ms_lk_maps_view(&maps, base + 8192, 100, &avail));
    assert_null(ms_lk_maps_view(&maps, base + 20000, 50, &avail));
    assert_int_equal(avail, 50);
    /* the scanner's own memory is never read */
    assert_int_equal(ms_lk_maps_own(&maps, base + 1024, base + 2048), 0);
    assert_ptr_equal(ms_lk_maps_view(&maps, base, 4096, &avail), mem);
    assert_int_equal(avail, 1024);
    assert_null(ms_lk_maps_view(&maps, base + 1024, 4096, &avail));
    assert_int_equal(avail, 1024);
}

/* valgrind's vtable test: in a readable file mapping, two non-zero words among the first
 * 20 that point into executable file mappings, before any that does not. */
static void test_vtable(void **state)
{
    (void)state;
    static uint64_t tab[3][512] __attribute__((aligned(4096)));
    uint64_t t = (uint64_t)(uintptr_t)tab[0], code = 0x7f1234560000ull;
    static ms_lk_map arr[4];
    ms_lk_maps maps;
    memset(&maps, 0, sizeof maps);
    maps.m = arr;
    maps.n = 3;
    arr[0] = (ms_lk_map){t, t + 4096, MS_LKM_R | MS_LKM_FILE, 0};           /* .data.rel.ro */
    arr[1] = (ms_lk_map){t + 4096, t + 8192, MS_LKM_R | MS_LKM_W | MS_LKM_ANON, 0}; /* heap */
    arr[2] = (ms_lk_map){code, code + 65536, MS_LKM_R | MS_LKM_X | MS_LKM_FILE, 0}; /* .text */
    uint64_t *v = tab[0];
    v[0] = 0; /* a zero slot is skipped */
    v[1] = code + 0x100;
    v[2] = code + 0x200;
    assert_true(ms_lk_maps_is_vtable(&maps, t));
    assert_false(ms_lk_maps_is_vtable(&maps, t + 16)); /* one function, then nothing */
    v[10] = code + 0x300;
    v[11] = t + 4096 + 64; /* a pointer into the heap after one function */
    assert_false(ms_lk_maps_is_vtable(&maps, t + 80));
    v[32] = code + 0x400; /* 20 words after word 12: not looked at */
    v[33] = code + 0x500;
    assert_false(ms_lk_maps_is_vtable(&maps, t + 8 * 12));
    assert_true(ms_lk_maps_is_vtable(&maps, t + 8 * 32));
    v[511] = code; /* the mapping ends after one function */
    assert_false(ms_lk_maps_is_vtable(&maps, t + 8 * 511));
    /* the same table in anonymous memory (a heap copy): not a vtable */
    memcpy(tab[1], tab[0], 4096);
    assert_false(ms_lk_maps_is_vtable(&maps, t + 4096));
    /* in an unmapped page, or a device, or unaligned nowhere */
    assert_false(ms_lk_maps_is_vtable(&maps, t + 8192));
    arr[0].flags |= MS_LKM_SKIP;
    assert_false(ms_lk_maps_is_vtable(&maps, t));
}

static void test_read_self(void **state)
{
    (void)state;
    ms_lk_maps maps;
    memset(&maps, 0, sizeof maps);
    maps.cap = 65536;
    maps.m = calloc(maps.cap, sizeof *maps.m);
    assert_int_equal(ms_lk_maps_read(&maps), 0);
    assert_true(maps.n > 5);
    for (size_t i = 1; i < maps.n; i++)
        assert_true(maps.m[i].lo >= maps.m[i - 1].hi);
    /* our own data, stack and heap are found readable and writable */
    static int global = 1;
    int local = 2;
    int *heap = malloc(sizeof *heap);
    uintptr_t probes[] = {(uintptr_t)&global, (uintptr_t)&local, (uintptr_t)heap};
    for (size_t i = 0; i < 3; i++) {
        const ms_lk_map *m = ms_lk_maps_find(&maps, probes[i]);
        assert_non_null(m);
        assert_int_equal(m->flags & (MS_LKM_R | MS_LKM_W), MS_LKM_R | MS_LKM_W);
    }
    assert_true(ms_lk_maps_find(&maps, (uintptr_t)&local)->flags & MS_LKM_STACK);
    free(heap);
    free(maps.m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_lines),
        cmocka_unit_test(test_parse_random_bytes),
        cmocka_unit_test(test_view),
        cmocka_unit_test(test_vtable),
        cmocka_unit_test(test_read_self),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
