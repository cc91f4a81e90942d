/* Labels (core/labels.h): what the agent and `--label` accept and refuse, and how the
 * joined text is walked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/labels.h"

static int one(const char *s)
{
    const char *why = NULL;
    int rc = ms_label_check(s, strlen(s), &why);
    if (rc != 0)
        assert_non_null(why);
    return rc;
}

static void test_one_label(void **state)
{
    (void)state;
    assert_int_equal(one("version=2.1.0"), 0);
    assert_int_equal(one("_page=Main Activity"), 0);
    assert_int_equal(one("url=a=b"), 0);          /* the key ends at the first '=' */
    assert_int_equal(one("city=Z\xc3\xbcrich"), 0); /* UTF-8 values */
    assert_int_equal(one("version"), -1);
    assert_int_equal(one("=1"), -1);
    assert_int_equal(one("version="), -1);
    assert_int_equal(one("1version=1"), -1);
    assert_int_equal(one("ver-sion=1"), -1);
    assert_int_equal(one("__name__=x"), -1);
    assert_int_equal(one("pid=1"), -1);
    assert_int_equal(one("instance=a"), -1);
    assert_int_equal(one("a=x;y"), -1);
    assert_int_equal(one("a=x,y"), -1);
    assert_int_equal(one("a=x\ny"), -1);
    char k[80], v[200];
    memset(k, 'k', 64);
    strcpy(k + 64, "=1");
    assert_int_equal(one(k), 0);
    memset(k, 'k', 65);
    strcpy(k + 65, "=1");
    assert_int_equal(one(k), -1);
    strcpy(v, "a=");
    memset(v + 2, 'v', 128);
    v[130] = 0;
    assert_int_equal(one(v), 0);
    strcpy(v + 130, "v");
    assert_int_equal(one(v), -1);
}

static void test_joined(void **state)
{
    (void)state;
    const char *why;
    size_t at;
    assert_int_equal(ms_labels_check("", &why, &at), 0);
    assert_int_equal(ms_labels_check("a=1", &why, &at), 1);
    assert_int_equal(ms_labels_check("a=1;b=2;c=x=y", &why, &at), 3);
    assert_int_equal(ms_labels_check("a=1;b=2;a=3", &why, &at), -1);
    assert_int_equal(at, 8);
    assert_string_equal(why, "a key is given twice");
    assert_int_equal(ms_labels_check("a=1;", &why, &at), -1);
    assert_int_equal(ms_labels_check("a=1;;b=2", &why, &at), -1);
    assert_int_equal(ms_labels_check("a=1;b", &why, &at), -1);
    assert_int_equal(at, 4);
    char many[600] = "";
    for (int i = 0; i < 33; i++)
        sprintf(many + strlen(many), "%sk%d=v", i ? ";" : "", i);
    assert_int_equal(ms_labels_check(many, &why, &at), -1); /* 33 labels */
    *strrchr(many, ';') = 0;
    assert_int_equal(ms_labels_check(many, &why, &at), 32);
    char longer[700];
    memset(longer, 0, sizeof longer);
    for (int i = 0; i < 5; i++)
        sprintf(longer + strlen(longer), "%sk%d=%0120d", i ? ";" : "", i, 0);
    assert_true(strlen(longer) >= MS_LABELS_MAX);
    assert_int_equal(ms_labels_check(longer, &why, &at), -1);
}

static void test_iterate(void **state)
{
    (void)state;
    const char *s = "version=2.1;model=p 7;url=a=b";
    size_t pos = 0;
    ms_label l;
    const char *want[][2] = {{"version", "2.1"}, {"model", "p 7"}, {"url", "a=b"}};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(ms_labels_next(s, &pos, &l), 1);
        assert_int_equal(l.key_len, strlen(want[i][0]));
        assert_memory_equal(l.key, want[i][0], l.key_len);
        assert_int_equal(l.value_len, strlen(want[i][1]));
        assert_memory_equal(l.value, want[i][1], l.value_len);
    }
    assert_int_equal(ms_labels_next(s, &pos, &l), 0);
    pos = 0; /* malformed items of a foreign file are skipped, not fatal */
    assert_int_equal(ms_labels_next(";novalue;=x;k=v", &pos, &l), 1);
    assert_memory_equal(l.key, "k", 1);
    assert_int_equal(ms_labels_next(";novalue;=x;k=v", &pos, &l), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_label),
        cmocka_unit_test(test_joined),
        cmocka_unit_test(test_iterate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
