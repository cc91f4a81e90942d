/* The ClickHouse client's text handling (fleet/clickhouse.h): string literals that
 * cannot break out of their quotes, TabSeparated answers split and unescaped, and URLs
 * refused before anything is sent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fleet/clickhouse.h"

static void test_quote(void **state)
{
    (void)state;
    char *b = NULL;
    size_t n = 0, cap = 0;
    assert_int_equal(ms_ch_quote(&b, &n, &cap, "it's a \\ test\n"), 0);
    assert_string_equal(b, "'it\\'s a \\\\ test\\x0a'");
    assert_int_equal(n, strlen(b));
    assert_int_equal(ms_ch_quote(&b, &n, &cap, ""), 0);
    assert_string_equal(b, "'it\\'s a \\\\ test\\x0a'''");
    free(b);
}

typedef struct seen {
    char rows[8][4][32];
    size_t nf[8], n;
} seen;

static int on_row(void *ctx, char **f, size_t n)
{
    seen *s = ctx;
    for (size_t i = 0; i < n && i < 4; i++)
        snprintf(s->rows[s->n][i], sizeof s->rows[s->n][i], "%s", f[i]);
    s->nf[s->n++] = n;
    return s->n == 3 ? 7 : 0; /* a callback's non-zero stops the walk and is returned */
}

static void test_tsv(void **state)
{
    (void)state;
    char text[] = "a\tb\\tc\td\\\\e\n\\'x\\'\t\\n\n1\t2\t3\t4\n5\n";
    seen s = {0};
    assert_int_equal(ms_ch_tsv(text, on_row, &s), 7);
    assert_int_equal(s.n, 3);
    assert_int_equal(s.nf[0], 3);
    assert_string_equal(s.rows[0][0], "a");
    assert_string_equal(s.rows[0][1], "b\tc");
    assert_string_equal(s.rows[0][2], "d\\e");
    assert_int_equal(s.nf[1], 2);
    assert_string_equal(s.rows[1][0], "'x'");
    assert_string_equal(s.rows[1][1], "\n");
    assert_int_equal(s.nf[2], 4);
    char empty[] = "";
    seen e = {0};
    assert_int_equal(ms_ch_tsv(empty, on_row, &e), 0);
    assert_int_equal(e.n, 0);
}

static void test_urls(void **state)
{
    (void)state;
    char err[256];
    ms_ch *ch = ms_ch_open("http://127.0.0.1:8123/?database=fleet", err, sizeof err);
    assert_non_null(ch);
    ms_ch_close(ch);
    assert_null(ms_ch_open("ftp://127.0.0.1/", err, sizeof err));
    assert_non_null(strstr(err, "not a ClickHouse HTTP URL"));
    assert_null(ms_ch_open("http://127.0.0.1:8123/ x", err, sizeof err));
    assert_null(ms_ch_open("http://[::1", err, sizeof err));
    assert_null(ms_ch_open("file:///etc/passwd", err, sizeof err));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quote),
        cmocka_unit_test(test_tsv),
        cmocka_unit_test(test_urls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
