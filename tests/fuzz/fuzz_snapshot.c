/* libFuzzer target: the snapshot reader on arbitrary bytes, then the lookups and the
 * JSON and text reports (without symbol files) on whatever it accepts. Any crash,
 * overread or leak is a bug in code that reads untrusted files. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/export.h"
#include "core/snapshot.h"
#include "snapshot_crcs.h"

static FILE *sink;

static void exercise(const uint8_t *data, size_t size)
{
    char err[512];
    ms_snapshot *s = ms_snapshot_parse(data, size, "fuzz", err, sizeof err);
    if (!s)
        return;
    for (size_t i = 0; i < s->nstacks; i++) {
        const ms_stack *st = &s->stacks[i];
        if (ms_snapshot_stack(s, st->id) != st)
            abort();
        for (uint32_t j = 0; j < st->depth; j++)
            (void)ms_snapshot_module_for_pc(s, st->pcs[j]);
    }
    (void)ms_snapshot_meta(s, "pid");
    (void)ms_snapshot_health(s, "dropped_blocks", NULL);
    ms_export_opts o = {.top = 5};
    if (sink) {
        ms_export_json(s, NULL, &o, sink, err, sizeof err);
        ms_export_text(s, NULL, &o, sink, err, sizeof err);
    }
    ms_snapshot_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!sink)
        sink = fopen("/dev/null", "w");
    exercise(data, size);
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    fix_crcs(copy, size);
    exercise(copy, size);
    free(copy);
    return 0;
}
