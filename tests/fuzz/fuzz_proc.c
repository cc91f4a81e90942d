/* libFuzzer target for the /proc parsers: the same bytes as smaps (then classified and
 * written in every format), status, statm, meminfo, a task syscall line, a task stat
 * line and a watch tracker spec. Any crash, leak or sanitizer report is a bug. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/accounting.h"
#include "analysis/watch.h"
#include "core/proc_smaps.h"
#include "core/proc_status.h"
#include "core/proc_task.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    ms_proc_status st;
    ms_status_parse(&st, text, size);
    ms_meminfo mi;
    ms_meminfo_parse(&mi, text, size);
    ms_proc_statm sm;
    ms_statm_parse(&sm, text, size);
    uint64_t sp;
    ms_parse_syscall_sp(text, size, &sp);
    (void)ms_parse_stat_kstkesp(text, size);
    if (size < 200) {
        ms_tracker t;
        char err[256];
        ms_tracker_parse(&t, text, 3, 1000, err, sizeof err);
    }

    /* Last: the smaps parser writes into the text. */
    ms_smaps s = {0};
    char err[256];
    if (ms_smaps_parse(&s, text, size, err, sizeof err) == 0) {
        ms_thread_sp thr[2] = {{.tid = 1, .sp = 0x7f0000001000ull}, {.tid = 2, .sp = 0}};
        ms_addr_range heap[1] = {{0x1000, 0x2000}};
        ms_acct_hints h = {.exe = "/bin/x", .threads = thr, .nthreads = 2, .heap = heap, .nheap = 1};
        ms_acct a;
        if (ms_acct_build(&a, &s, &h, err, sizeof err) == 0) {
            FILE *null = fopen("/dev/null", "w");
            if (null) {
                for (int f = MS_FMT_TEXT; f <= MS_FMT_CSV; f++) {
                    ms_acct_write_opts o = {.format = f, .sort = (int)(size % 6), .with_mappings = 1};
                    ms_acct_write(null, &s, &a, &o);
                }
                fclose(null);
            }
            ms_acct_free(&a);
        }
    }
    free(s.v);
    free(text);
    return 0;
}
