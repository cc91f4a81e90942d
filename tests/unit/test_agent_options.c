/* The agent's option messages (core/agent_options.c) are whole: every row of the table,
 * given each kind of bad value it can refuse (with the longest item the message quotes),
 * and the refusals that join two options, describe the fault in fewer than
 * MS_OPT_ERR_MAX bytes, so the buffers of that size (the agent's own, run's and attach's)
 * never cut a reason short. The set's message is checked word for word. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/agent_options.h"

/* The message of ms_options_parse for s: whole (a buffer far larger than any message)
 * and with MS_OPT_ERR_MAX bytes; both must be the same text, and it must not be empty. */
static void check_whole(const char *s)
{
    static ms_options o;
    char big[4096], err[MS_OPT_ERR_MAX];
    unsigned bad = ms_options_parse(&o, s, big, sizeof big);
    if (bad == 0)
        fail_msg("'%s' accepted", s);
    ms_options_parse(&o, s, err, sizeof err);
    if (strlen(big) >= sizeof err - 1 || strcmp(big, err) != 0)
        fail_msg("'%s': the message takes %zu bytes, more than MS_OPT_ERR_MAX-1 (%d): '%s'", s,
                 strlen(big), MS_OPT_ERR_MAX - 1, big);
}

/* name=value with value made of n copies of c (n > 0) or the text v */
static void check_item(const char *name, const char *v, size_t n, char c)
{
    char item[8192];
    size_t k = (size_t)snprintf(item, sizeof item, "%s=", name);
    if (v) {
        snprintf(item + k, sizeof item - k, "%s", v);
    } else {
        assert_true(k + n + 1 < sizeof item);
        memset(item + k, c, n);
        item[k + n] = 0;
    }
    check_whole(item);
    /* the parse's message is the item (cut at 64 bytes, then "...") and the whole reason
     * ms_option_check gives into a buffer of its own */
    static ms_options o;
    char reason[4096], msg[4096], want[8192];
    size_t len = strlen(item);
    assert_int_equal(ms_option_check(item, len, reason, sizeof reason), -1);
    ms_options_parse(&o, item, msg, sizeof msg);
    snprintf(want, sizeof want, "%.64s%s: %s", item, len > 64 ? "..." : "", reason);
    assert_string_equal(msg, want);
}

static void test_every_row(void **state)
{
    (void)state;
    for (size_t i = 0; i < ms_option_count; i++) {
        const ms_option_def *d = &ms_option_table[i];
        char num[32];
        switch (d->type) {
        case MS_OPT_U64:
        case MS_OPT_SIZE:
            check_item(d->name, NULL, 64, 'x');
            check_item(d->name, "99999999999999999999999", 0, 0);
            if (d->max) {
                snprintf(num, sizeof num, "%llu", (unsigned long long)d->max + 1);
                check_item(d->name, num, 0, 0);
            }
            if (d->min) {
                snprintf(num, sizeof num, "%llu", (unsigned long long)d->min - 1);
                check_item(d->name, num, 0, 0);
            }
            break;
        case MS_OPT_TENTHS:
            check_item(d->name, NULL, 64, 'x');
            check_item(d->name, "99999999999999999999999", 0, 0);
            check_item(d->name, "0.55", 0, 0);
            check_item(d->name, ".5", 0, 0);
            check_item(d->name, "5.", 0, 0);
            check_item(d->name, "-1", 0, 0);
            check_item(d->name, "", 0, 0);
            snprintf(num, sizeof num, "%llu.1", (unsigned long long)d->max / 10);
            check_item(d->name, num, 0, 0);
            break;
        case MS_OPT_SIGNAL:
            check_item(d->name, NULL, 64, 'x');
            check_item(d->name, "9", 0, 0);
            check_item(d->name, "19", 0, 0);
            check_item(d->name, "32", 0, 0);
            check_item(d->name, "65", 0, 0);
            break;
        case MS_OPT_BOOL:
        case MS_OPT_ENUM:
        case MS_OPT_SET:
            check_item(d->name, NULL, 64, 'x');
            break;
        case MS_OPT_LISTEN:
            check_item(d->name, NULL, 64, 'x');
            __attribute__((fallthrough));
        case MS_OPT_STR:
            check_item(d->name, NULL, d->size, 'x');
            if (d->min)
                check_item(d->name, "", 0, 0);
            break;
        default:
            fail_msg("row %s: a type this test does not know", d->name);
        }
    }
    char key[80];
    memset(key, 'k', 70);
    key[70] = 0;
    check_whole(key); /* unknown option, its name cut at 64 bytes */
    check_whole("max_depth");
    check_whole("dump_signal=63,leak_stop_signal=63");
    check_whole("leak_check=signal,sample=18446744073709551615");
    check_whole("leak_check=exit,min_size=18446744073709551615");
    check_whole("labels=pid=1");
}

/* The set's refusal names every accepted name and how they are joined, to the end. */
static void test_set_message(void **state)
{
    (void)state;
    static ms_options o;
    char err[MS_OPT_ERR_MAX];
    assert_int_equal(ms_options_parse(&o, "leak_heuristics=bogus", err, sizeof err), 1);
    assert_string_equal(err, "leak_heuristics=bogus: not all, none, or names among stdstring, "
                             "length64, newarray, multipleinheritance, interior (joined by '+', "
                             "or by ',' on memsight's command line)");
    assert_int_equal(ms_option_check("leak_heuristics=stdstring+nope", 30, err, sizeof err), -1);
    assert_non_null(strstr(err, "on memsight's command line)"));
}

/* A percentage with one decimal: kept in tenths, said back as given; the default of
 * guard_budget is half a percent. */
static void test_tenths(void **state)
{
    (void)state;
    static ms_options o;
    char err[MS_OPT_ERR_MAX], text[32];
    const ms_option_def *d = ms_option_find("guard_budget");
    assert_non_null(d);
    assert_int_equal(ms_options_parse(&o, "", err, sizeof err), 0);
    assert_int_equal(o.guard_budget, 5);
    ms_option_value_text(&o, d, text, sizeof text);
    assert_string_equal(text, "0.5");
    const struct { const char *in; uint64_t tenths; const char *out; } ok[] = {
        {"guard_budget=0", 0, "0"}, {"guard_budget=2", 20, "2"}, {"guard_budget=12.5", 125, "12.5"},
        {"guard_budget=100", 1000, "100"}, {"guard_budget=100.0", 1000, "100"}, {"guard_budget=007.5", 75, "7.5"}};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        assert_int_equal(ms_options_parse(&o, ok[i].in, err, sizeof err), 0);
        assert_int_equal(o.guard_budget, ok[i].tenths);
        ms_option_value_text(&o, d, text, sizeof text);
        assert_string_equal(text, ok[i].out);
    }
    assert_int_equal(ms_options_parse(&o, "guard_budget=0.55", err, sizeof err), 1);
    assert_string_equal(err, "guard_budget=0.55: not a percentage (digits, with at most one decimal: "
                             "0.5, 2, 12.5)");
    assert_int_equal(ms_options_parse(&o, "guard_budget=100.5", err, sizeof err), 1);
    assert_string_equal(err, "guard_budget=100.5: out of range (0..100)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_row),
        cmocka_unit_test(test_set_message),
        cmocka_unit_test(test_tenths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
