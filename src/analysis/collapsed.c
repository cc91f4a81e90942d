/* Collapsed ("folded") stacks, the input format of flamegraph.pl, speedscope and
 * inferno: one line per stack, frames root first joined by ';', a space and the value.
 * Frames are function names, as those tools expect; the allocation site keeps its
 * file:line and inlined frames carry flamegraph.pl's "_[i]" (stack_agg.h, FOLDED).
 * Tools only; writes only to the stream it is given. */
#include <inttypes.h>
#include <stdlib.h>

#include "analysis/export.h"
#include "analysis/stack_agg.h"

/* Frame names may hold ';' or newlines only if a symbol does; they would break the
 * line format, so they are replaced. */
static void put_frame(FILE *out, const char *s)
{
    for (; *s; s++)
        fputc((*s == ';' || *s == '\n' || *s == '\r') ? '_' : *s, out);
}

int ms_export_collapsed(const ms_snapshot *s, ms_symbolizer *sym, const ms_export_opts *o,
                        FILE *out, char *err, size_t errlen)
{
    ms_metric m = o ? o->metric : MS_METRIC_LIVE_BYTES;
    ms_agg *a = ms_agg_build(s, sym, MS_AGG_FOLDED, err, errlen);
    if (!a)
        return -1;
    size_t *ord = ms_agg_order(a, m);
    if (!ord) {
        ms_agg_free(a);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < a->nstacks; i++) {
        const ms_agg_stack *st = &a->stacks[ord[i]];
        uint64_t v = ms_metric_value(&st->c, m);
        if (v == 0)
            continue;
        for (uint32_t f = 0; f < st->nframes; f++) {
            if (f)
                fputc(';', out);
            put_frame(out, a->names[st->frames[f]]);
        }
        fprintf(out, " %" PRIu64 "\n", v);
    }
    free(ord);
    ms_agg_free(a);
    if (ferror(out)) {
        snprintf(err, errlen, "write error");
        return -1;
    }
    return 0;
}
