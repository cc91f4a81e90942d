/* Unit tests of class-name normalisation: HotSpot internal names and descriptors, and
 * names already in source form, all end in source form. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "hprof/graph.h"
#include "hprof/names.h"

static void check(const char *in, const char *want)
{
    char out[256];
    size_t n = ms_hprof_class_name_normalize(in, strlen(in), out, sizeof out);
    assert_string_equal(out, want);
    assert_int_equal(n, strlen(want));
}

static void test_internal_forms(void **state)
{
    (void)state;
    check("java/util/ArrayList", "java.util.ArrayList");
    check("java/util/HashMap$Node", "java.util.HashMap$Node");
    check("[B", "byte[]");
    check("[[I", "int[][]");
    check("[Z", "boolean[]");
    check("[J", "long[]");
    check("[Ljava/lang/Object;", "java.lang.Object[]");
    check("[[Ljava/lang/String;", "java.lang.String[][]");
    check("[Ljava.lang.Object;", "java.lang.Object[]");
}

static void test_source_forms_unchanged(void **state)
{
    (void)state;
    check("java.lang.String", "java.lang.String");
    check("byte[]", "byte[]");
    check("int[][]", "int[][]");
    check("android.view.DisplayList[]", "android.view.DisplayList[]");
}

static void test_odd_input(void **state)
{
    (void)state;
    check("", "");
    check("[", "[");
    check("[Q", "[Q");         /* not a descriptor: kept */
    check("[Lfoo", "[Lfoo");   /* no ';' */
    check("a\nb", "a?b");      /* control bytes never reach a terminal */
    char small[6];
    size_t n = ms_hprof_class_name_normalize("java/lang/String", 16, small, sizeof small);
    assert_int_equal(n, 5);
    assert_string_equal(small, "java.");
    assert_int_equal(ms_hprof_class_name_normalize("x", 1, small, 0), 0);
}

static void test_utf8(void **state)
{
    (void)state;
    check("caf\xc3\xa9", "caf\xc3\xa9");                 /* valid 2-byte sequence kept */
    check("\xe4\xb8\xad\xe6\x96\x87", "\xe4\xb8\xad\xe6\x96\x87"); /* valid 3-byte */
    check("a\xff" "b", "a?b");                            /* never valid */
    check("a\xc3", "a?");                                 /* cut sequence */
    check("\xc0\x80", "??");                              /* modified UTF-8 NUL */
    check("\xed\xa0\x80", "???");                         /* a lone surrogate */
    check("\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80");       /* 4-byte */
    char cut[5];
    ms_hprof_class_name_normalize("\xe4\xb8\xad\xe4\xb8\xad", 6, cut, sizeof cut);
    assert_string_equal(cut, "\xe4\xb8\xad?");               /* truncation never splits */
}

static void test_prim_names(void **state)
{
    (void)state;
    assert_string_equal(ms_hprof_prim_array_name(MS_HT_CHAR), "char[]");
    assert_null(ms_hprof_prim_array_name(MS_HT_OBJECT));
    assert_int_equal(ms_hprof_prim_array_type("double[]"), MS_HT_DOUBLE);
    assert_int_equal(ms_hprof_prim_array_type("int[][]"), 0);
    assert_int_equal(ms_hprof_prim_array_type("java.lang.String"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_internal_forms),
        cmocka_unit_test(test_source_forms_unchanged),
        cmocka_unit_test(test_odd_input),
        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_prim_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
