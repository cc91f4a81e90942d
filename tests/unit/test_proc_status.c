/* Unit tests of the status, statm, meminfo, task/TID/syscall and task/TID/stat parsers:
 * captured texts, hand-made edge cases, and the live process checked against itself. */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/proc_read.h"
#include "core/proc_status.h"
#include "core/proc_task.h"

static ms_procbuf read_data(const char *name)
{
    const char *src = getenv("MS_SOURCE_DIR");
    char path[4096], err[256];
    snprintf(path, sizeof path, "%s/tests/data/proc/%s", src ? src : ".", name);
    ms_procbuf b = {0};
    if (ms_procbuf_read(&b, path, 0, err, sizeof err) != 0)
        fail_msg("%s", err);
    return b;
}

static void test_status_capture(void **state)
{
    (void)state;
    ms_procbuf b = read_data("layout.status");
    ms_proc_status st;
    ms_status_parse(&st, b.data, b.len);
    assert_string_equal(st.name, "pa_layout");
    assert_int_equal(st.state, 'T'); /* captured while stopped */
    assert_int_equal(st.v[MS_ST_THREADS], 4);
    assert_true(st.present & (1u << MS_ST_VM_RSS));
    /* VmRSS is the sum of its three parts, by the kernel's definition. */
    assert_int_equal(st.v[MS_ST_VM_RSS],
                     st.v[MS_ST_RSS_ANON] + st.v[MS_ST_RSS_FILE] + st.v[MS_ST_RSS_SHMEM]);
    assert_true(st.v[MS_ST_VM_SIZE] >= st.v[MS_ST_VM_RSS]);
    ms_procbuf_free(&b);

    b = read_data("layout.statm");
    ms_proc_statm sm;
    ms_statm_parse(&sm, b.data, b.len);
    assert_int_equal(sm.nfields, 7);
    assert_true(sm.size * 4 == st.v[MS_ST_VM_SIZE]); /* pages of 4 kB on the capture machine */
    assert_true(sm.resident * 4 == st.v[MS_ST_VM_RSS]);
    ms_procbuf_free(&b);
}

static void test_status_edges(void **state)
{
    (void)state;
    ms_proc_status st;
    const char *t = "Name:\tname with spaces and a very long tail that does not fit in sixty-four bytes\n"
                    "VmRSS: 99999999999999999999999 kB\nThreads:\nVmSize:\t12 kB\nNoColon\n"
                    "Uid:\t1000\t1001\t1002\t1003\nFutureField:\t1 kB";
    ms_status_parse(&st, t, strlen(t));
    assert_int_equal(strlen(st.name), 63);
    assert_true(st.v[MS_ST_VM_RSS] == UINT64_MAX);
    assert_false(st.present & (1u << MS_ST_THREADS)); /* no value: absent */
    assert_int_equal(st.v[MS_ST_VM_SIZE], 12);
    assert_int_equal(st.v[MS_ST_UID], 1000);
    assert_false(st.present & (1u << MS_ST_VM_SWAP));
    ms_status_parse(&st, "", 0);
    assert_int_equal(st.present, 0);
}

static void test_meminfo(void **state)
{
    (void)state;
    ms_procbuf b = read_data("meminfo");
    ms_meminfo mi;
    ms_meminfo_parse(&mi, b.data, b.len);
    assert_true(mi.present & (1u << MS_MI_MEM_AVAILABLE));
    assert_true(mi.kb[MS_MI_MEM_TOTAL] > mi.kb[MS_MI_MEM_AVAILABLE]);
    assert_true(mi.kb[MS_MI_MEM_AVAILABLE] >= mi.kb[MS_MI_MEM_FREE]);
    ms_procbuf_free(&b);
    /* "MemTotalX" must not match MemTotal. */
    const char *t = "MemTotalX: 5 kB\nMemTotal: 100 kB\n";
    ms_meminfo_parse(&mi, t, strlen(t));
    assert_int_equal(mi.kb[MS_MI_MEM_TOTAL], 100);
    char err[128];
    assert_int_equal(ms_meminfo_read(&mi, err, sizeof err), 0);
    assert_true(mi.kb[MS_MI_MEM_TOTAL] > 0);
}

static void test_syscall_and_stat(void **state)
{
    (void)state;
    uint64_t sp = 0;
    const char *t = "34 0x0 0x0 0x2 0x0 0x563367712180 0x4 0x7f7a151feea0 0x7f7a16325df2\n";
    assert_true(ms_parse_syscall_sp(t, strlen(t), &sp));
    assert_true(sp == 0x7f7a151feea0ull);
    t = "-1 0x7ffd0000 0x401000\n";
    assert_true(ms_parse_syscall_sp(t, strlen(t), &sp));
    assert_true(sp == 0x7ffd0000ull);
    t = "running\n";
    assert_false(ms_parse_syscall_sp(t, strlen(t), &sp));
    t = "34 0x0 0x0";
    assert_false(ms_parse_syscall_sp(t, strlen(t), &sp));

    /* The comm may hold ") " and spaces: the last ')' ends it. Field k holds 10*k, so
     * kstkesp (field 29) must read 290. */
    char stat[1024];
    int len = snprintf(stat, sizeof stat, "42 (a) b (c) d) S");
    for (int k = 4; k <= 52; k++)
        len += snprintf(stat + len, sizeof stat - (size_t)len, " %d", 10 * k);
    assert_true(ms_parse_stat_kstkesp(stat, (size_t)len) == 290);
    /* Truncated before field 29. */
    assert_true(ms_parse_stat_kstkesp(stat, 40) == 0);
    assert_true(ms_parse_stat_kstkesp("garbage", 7) == 0);
}

static void test_captured_threads(void **state)
{
    (void)state;
    ms_procbuf b = read_data("layout.syscall");
    int n = 0, with_sp = 0;
    for (char *line = strtok(b.data, "\n"); line; line = strtok(NULL, "\n")) {
        char *sp = strchr(line, ' ');
        assert_non_null(sp);
        uint64_t v;
        n++;
        if (ms_parse_syscall_sp(sp + 1, strlen(sp + 1), &v) && v)
            with_sp++;
    }
    assert_int_equal(n, 4);
    assert_int_equal(with_sp, 4); /* a stopped process: no thread is "running" */
    ms_procbuf_free(&b);
}

static void test_live(void **state)
{
    (void)state;
    char err[256];
    ms_proc_status st;
    assert_int_equal(ms_status_read(&st, 0, err, sizeof err), 0);
    assert_int_equal(st.v[MS_ST_PID], (uint64_t)getpid());
    assert_int_equal(st.v[MS_ST_THREADS], 1);
    assert_int_equal(ms_proc_task_count(0, err, sizeof err), 1);
    long fds = ms_proc_fd_count(0, err, sizeof err);
    assert_true(fds >= 3);
    int p[2];
    assert_int_equal(pipe(p), 0);
    assert_int_equal(ms_proc_fd_count(0, err, sizeof err), fds + 2);
    close(p[0]);
    close(p[1]);
    ms_thread_sp *t = NULL;
    assert_int_equal(ms_proc_thread_sps(0, &t, err, sizeof err), 1);
    assert_int_equal(t[0].tid, getpid());
    free(t);
    char exe[4096];
    assert_int_equal(ms_proc_exe(0, exe, sizeof exe, err, sizeof err), 0);
    char real[4096];
    assert_non_null(realpath(program_invocation_name, real));
    assert_string_equal(exe, real);
    char cmd[4096];
    assert_int_equal(ms_proc_cmdline(0, cmd, sizeof cmd, err, sizeof err), 0);
    assert_string_equal(cmd, program_invocation_name); /* no arguments */
    assert_int_equal(ms_proc_elf_class(0), (int)(sizeof(void *) * 8));
    assert_true(ms_proc_elf_class(999999999) < 0);
    assert_true(ms_status_read(&st, 999999999, err, sizeof err) < 0);
    assert_true(ms_proc_fd_count(999999999, err, sizeof err) < 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_capture), cmocka_unit_test(test_status_edges),
        cmocka_unit_test(test_meminfo),        cmocka_unit_test(test_syscall_and_stat),
        cmocka_unit_test(test_captured_threads), cmocka_unit_test(test_live),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
