/* Offline symbolization of a snapshot's program counters with elfutils (libdw), by
 * build-id and path: function, file, line and inlined frames, C++ names demangled.
 * Tools only. */
#ifndef MS_ANALYSIS_SYMBOLIZE_H
#define MS_ANALYSIS_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "core/snapshot.h"

/* One source-level frame. Strings are owned by the symbolizer and live until it is
 * freed; NULL (and line 0) where unknown. */
typedef struct ms_frame {
    uint64_t address;     /* the pc as recorded */
    const char *module;   /* path of the module holding it */
    uint64_t module_offset; /* address relative to the module's load bias */
    const char *function; /* demangled */
    const char *file;
    int line;
    int inlined;          /* 1 when this frame was inlined into the next one */
} ms_frame;

typedef struct ms_symbolizer ms_symbolizer;

/* Builds a symbolizer for the modules of `s` (which must outlive it). Never fails for
 * missing files: such frames just stay unresolved. */
ms_symbolizer *ms_symbolizer_new(const ms_snapshot *s);
/* Resolves one pc (a return address when is_return_address, so pc-1 is looked up) to
 * its source frames, innermost (inlined) first. Returns how many were written to out
 * (at least 1 when max_out >= 1: an unresolved pc gives one frame with NULL names).
 * Results are cached per pc. */
int ms_symbolize(ms_symbolizer *sym, uint64_t pc, int is_return_address, ms_frame *out,
                 int max_out);
void ms_symbolizer_free(ms_symbolizer *sym);
/* Problems met while loading modules so far (a file missing, or whose build-id differs
 * from the recorded one: its frames stay unresolved), one line each, for reports. */
size_t ms_symbolizer_warnings(const ms_symbolizer *sym, const char *const **lines);

#endif
