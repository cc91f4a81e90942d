/* Object inspectors after Shark's (LeakCanary): for the Android lifecycle objects whose
 * state says whether they should be gone (Activity, Fragment, Service, Window, View,
 * ViewRootImpl, Dialog, Toast, MessageQueue, ViewModel, Lifecycle owners...) a status
 * (leaking, not leaking, unknown) and the reason printed in a leak trace. Reads the graph
 * and, for primitive fields and strings, the dump file again (values.h); changes neither;
 * never prints. */
#ifndef MS_HPROF_INSPECT_H
#define MS_HPROF_INSPECT_H

#include <stddef.h>
#include <stdint.h>

#include "hprof/graph.h"
#include "hprof/matchers.h"

/* Status of an object on a leak trace (Shark's LeakTraceObject.LeakingStatus). */
enum { MS_LEAK_UNKNOWN = 0, MS_LEAK_NOT_LEAKING = 1, MS_LEAK_LEAKING = 2 };

typedef struct ms_hinspect {
    uint8_t *status;  /* g->nobj entries, MS_LEAK_* */
    uint8_t *reason;  /* g->nobj entries: ms_hinspect_reason() index, 0 = none */
    ms_hbuild build;  /* android.os.Build of the dump (sdk -1 when absent) */
    uint32_t nthread; /* threads with a name: serial -> name, for Java-local matchers */
    uint32_t *thread_serial;
    char (*thread_name)[48];
    uint32_t *koom_classes; /* KOOM's rules only: per class, see ms_hinspect_run_koom */
} ms_hinspect;

/* Inspects every object of g (the dump at path) with Shark's rules. Returns 0, or -1
 * with a message. */
int ms_hinspect_run(const char *path, const ms_hgraph *g, ms_hinspect *out, char *err,
                    size_t errlen);

/* KOOM's rules (Kwai's HeapAnalysisService) instead of Shark's: leaking are Activities
 * with mDestroyed or mFinished, Fragments with no mFragmentManager and mCalled (at most
 * MS_HKOOM_PER_CLASS of each class, as KOOM keeps), Bitmaps of at least bitmap_pixels
 * (mWidth x mHeight, same cap), primitive and object arrays of at least array_bytes; every
 * other object is UNKNOWN except class objects (KOOM runs Shark with no inspector).
 * classes[c] (out->koom_classes, g->nclass entries) counts, per instance class, what KOOM
 * counts in its classInfos: those Activities, Fragments without a manager, large Bitmaps,
 * and every NativeAllocationRegistry, CleanerThunk and Window. */
#define MS_HKOOM_PER_CLASS 45
typedef struct ms_hkoom_opts {
    uint64_t bitmap_pixels;
    uint64_t array_bytes;
} ms_hkoom_opts;
int ms_hinspect_run_koom(const char *path, const ms_hgraph *g, const ms_hkoom_opts *o,
                         ms_hinspect *out, char *err, size_t errlen);
void ms_hinspect_free(ms_hinspect *x);

/* Byte offset, in the instance data of class cls, of the field named field declared by
 * class decl (NULL: the first from cls up); -1 if none. *type receives its basic type. */
long ms_hinspect_field_offset(const ms_hgraph *g, uint32_t cls, const char *decl, const char *field,
                              uint8_t *type);

/* Text of a reason index ("" for 0). */
const char *ms_hinspect_reason(uint8_t r);

/* Name of the thread with this serial, NULL when unknown (arg: the ms_hinspect). */
const char *ms_hinspect_thread_name(void *arg, uint32_t serial);

#endif
