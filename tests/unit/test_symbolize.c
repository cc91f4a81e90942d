/* Symbolizer tests on this very program (built -O2 -g): the pcs are return addresses
 * captured at run time from known functions, one of them through an inlined helper, so
 * the expected function, file and line are exact. Also: the symbol-table fallback on a
 * debug-stripped copy (with a C++ mangled name), and a build-id mismatch. */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "analysis/symbolize.h"
#include "self_module.h"

/* ---------------------------------------------------------------------------
 * Ground truth: functions that record the return address of a call and its line.
 * ------------------------------------------------------------------------- */
static volatile int sink;
static uint64_t captured_pc;
static int captured_line, captured_outer_line;

__attribute__((noipa)) static void capture(int line, int outer_line)
{
    captured_pc = (uint64_t)(uintptr_t)__builtin_return_address(0);
    captured_line = line;
    captured_outer_line = outer_line;
}

__attribute__((noipa)) void ms_test_direct_caller(void)
{
    capture(__LINE__, 0);
    sink++;
}

static inline __attribute__((always_inline)) void ms_test_inlined_helper(int outer_line)
{
    capture(__LINE__, outer_line);
    sink++;
}

__attribute__((noipa)) void ms_test_outer_of_inline(void)
{
    ms_test_inlined_helper(__LINE__);
    sink++;
}

/* A C function carrying a C++ mangled name: the symbol-table path must demangle it. */
__attribute__((noipa)) void cxx_named(void) __asm__("_ZN7memtest6Widget5buildEi");
__attribute__((noipa)) void cxx_named(void)
{
    capture(__LINE__, 0);
    sink++;
}

/* ---------------------------------------------------------------------------
 * A snapshot holding this program's main module, built from its program headers.
 * ------------------------------------------------------------------------- */
static ms_module self_module;
static ms_snapshot snap;

static char self_path[4096];

static int setup(void **state)
{
    (void)state;
    ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    if (n <= 0)
        return -1;
    self_path[n] = 0;
    dl_iterate_phdr(ms_test_self_module, &self_module);
    self_module.path = self_path;
    snap.modules = &self_module;
    snap.nmodules = 1;
    snap.path = "self";
    return self_module.build_id_len > 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    free(self_module.segs);
    return 0;
}

static const char *base(const char *path)
{
    const char *s = path ? strrchr(path, '/') : NULL;
    return s ? s + 1 : path;
}

/* ---------------------------------------------------------------------------
 * Tests.
 * ------------------------------------------------------------------------- */
static void test_direct_call(void **state)
{
    (void)state;
    ms_test_direct_caller();
    ms_symbolizer *sym = ms_symbolizer_new(&snap);
    assert_non_null(sym);
    ms_frame f[8];
    int n = ms_symbolize(sym, captured_pc, 1, f, 8);
    assert_int_equal(n, 1);
    assert_string_equal(f[0].function, "ms_test_direct_caller");
    assert_string_equal(base(f[0].file), "test_symbolize.c");
    assert_int_equal(f[0].line, captured_line);
    assert_int_equal(f[0].inlined, 0);
    assert_int_equal(f[0].address, captured_pc);
    assert_string_equal(f[0].module, self_path);
    assert_int_equal(f[0].module_offset, captured_pc - self_module.load_bias);
    /* Cached: the same answer again, and max_out is honoured. */
    ms_frame g[1];
    assert_int_equal(ms_symbolize(sym, captured_pc, 1, g, 1), 1);
    assert_ptr_equal(g[0].function, f[0].function);
    /* The function's own entry, as an exact pc. */
    n = ms_symbolize(sym, (uint64_t)(uintptr_t)&ms_test_direct_caller, 0, f, 8);
    assert_int_equal(n, 1);
    assert_string_equal(f[0].function, "ms_test_direct_caller");
    const char *const *w;
    assert_int_equal(ms_symbolizer_warnings(sym, &w), 0);
    ms_symbolizer_free(sym);
}

static void test_inlined_frames(void **state)
{
    (void)state;
    ms_test_outer_of_inline();
    ms_symbolizer *sym = ms_symbolizer_new(&snap);
    ms_frame f[8];
    int n = ms_symbolize(sym, captured_pc, 1, f, 8);
    assert_int_equal(n, 2);
    assert_string_equal(f[0].function, "ms_test_inlined_helper");
    assert_int_equal(f[0].inlined, 1);
    assert_int_equal(f[0].line, captured_line);
    assert_string_equal(base(f[0].file), "test_symbolize.c");
    assert_string_equal(f[1].function, "ms_test_outer_of_inline");
    assert_int_equal(f[1].inlined, 0);
    assert_int_equal(f[1].line, captured_outer_line);
    assert_string_equal(base(f[1].file), "test_symbolize.c");
    ms_symbolizer_free(sym);
}

static void test_unknown_pc(void **state)
{
    (void)state;
    ms_symbolizer *sym = ms_symbolizer_new(&snap);
    ms_frame f[4];
    assert_int_equal(ms_symbolize(sym, 0x10, 1, f, 4), 1);
    assert_null(f[0].function);
    assert_null(f[0].module);
    assert_null(f[0].file);
    assert_int_equal(f[0].line, 0);
    assert_int_equal(ms_symbolize(sym, 0, 0, f, 4), 1);
    assert_null(f[0].function);
    ms_symbolizer_free(sym);
}

static void test_symtab_fallback_and_demangling(void **state)
{
    (void)state;
    char stripped[] = "/tmp/ms-test-stripped-XXXXXX";
    int fd = mkstemp(stripped);
    assert_true(fd >= 0);
    close(fd);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "objcopy --strip-debug '%s' '%s'", self_path, stripped);
    if (system(cmd) != 0) {
        unlink(stripped);
        skip();
    }
    ms_module m = self_module;
    m.path = stripped;
    ms_snapshot s2 = snap;
    s2.modules = &m;
    ms_symbolizer *sym = ms_symbolizer_new(&s2);
    ms_frame f[8];
    cxx_named();
    int n = ms_symbolize(sym, captured_pc, 1, f, 8);
    assert_int_equal(n, 1);
    assert_string_equal(f[0].function, "memtest::Widget::build(int)");
    assert_null(f[0].file);
    assert_int_equal(f[0].line, 0);
    ms_test_direct_caller();
    n = ms_symbolize(sym, captured_pc, 1, f, 8);
    assert_string_equal(f[0].function, "ms_test_direct_caller");
    ms_symbolizer_free(sym);
    unlink(stripped);
}

static void test_build_id_mismatch(void **state)
{
    (void)state;
    ms_module m = self_module;
    m.build_id[0] ^= 0xff;
    ms_snapshot s2 = snap;
    s2.modules = &m;
    ms_symbolizer *sym = ms_symbolizer_new(&s2);
    ms_test_direct_caller();
    ms_frame f[4];
    assert_int_equal(ms_symbolize(sym, captured_pc, 1, f, 4), 1);
    assert_null(f[0].function);
    assert_string_equal(f[0].module, self_path); /* the module is still named */
    const char *const *w;
    assert_int_equal(ms_symbolizer_warnings(sym, &w), 1);
    assert_non_null(strstr(w[0], "differs from the recorded"));
    assert_non_null(strstr(w[0], self_path));
    ms_symbolizer_free(sym);

    /* A module whose file is gone. */
    m = self_module;
    m.path = "/nonexistent/libgone.so";
    sym = ms_symbolizer_new(&s2);
    assert_int_equal(ms_symbolize(sym, captured_pc, 1, f, 4), 1);
    assert_null(f[0].function);
    assert_int_equal(ms_symbolizer_warnings(sym, &w), 1);
    assert_non_null(strstr(w[0], "libgone.so: cannot open"));
    ms_symbolizer_free(sym);
}

static void test_debug_file_by_build_id(void **state)
{
    (void)state;
    /* The module's file is gone, but its debug file sits under a debug root by build-id
     * (as Debian's -dbgsym packages install them): frames resolve from it. */
    char root[] = "/tmp/ms-test-debugroot-XXXXXX";
    assert_non_null(mkdtemp(root));
    char dir[256], rest[140], dbg[512], cmd[8192];
    snprintf(dir, sizeof dir, "%s/.build-id/%02x", root, self_module.build_id[0]);
    for (uint32_t i = 1; i < self_module.build_id_len; i++)
        snprintf(rest + 2 * (i - 1), 3, "%02x", self_module.build_id[i]);
    snprintf(dbg, sizeof dbg, "%s/%s.debug", dir, rest);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && objcopy --only-keep-debug '%s' '%s'", dir,
             self_path, dbg);
    if (system(cmd) != 0) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
        skip();
    }
    setenv("MEMSIGHT_DEBUG_DIRS", root, 1);
    ms_module m = self_module;
    m.path = "/nonexistent/program-since-deleted";
    ms_snapshot s2 = snap;
    s2.modules = &m;
    ms_symbolizer *sym = ms_symbolizer_new(&s2);
    ms_test_outer_of_inline();
    ms_frame f[8];
    int n = ms_symbolize(sym, captured_pc, 1, f, 8);
    assert_int_equal(n, 2);
    assert_string_equal(f[0].function, "ms_test_inlined_helper");
    assert_string_equal(f[1].function, "ms_test_outer_of_inline");
    assert_int_equal(f[1].line, captured_outer_line);
    assert_string_equal(f[0].module, "/nonexistent/program-since-deleted");
    const char *const *w;
    assert_int_equal(ms_symbolizer_warnings(sym, &w), 1);
    assert_non_null(strstr(w[0], "found by its build-id"));
    ms_symbolizer_free(sym);
    unsetenv("MEMSIGHT_DEBUG_DIRS");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_direct_call),
        cmocka_unit_test(test_inlined_frames),
        cmocka_unit_test(test_unknown_pc),
        cmocka_unit_test(test_symtab_fallback_and_demangling),
        cmocka_unit_test(test_build_id_mismatch),
        cmocka_unit_test(test_debug_file_by_build_id),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
