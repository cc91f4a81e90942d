/* dlclose interposer: code may be unmapped, so cached unwind rules for it are dropped.
 * dlopen is deliberately not interposed (the loader resolves RUNPATH/$ORIGIN from the
 * caller's address). Runs inside the target: no malloc, no lock. */
#define _GNU_SOURCE
#include <dlfcn.h>

#include "agent/agent.h"

__attribute__((visibility("default"))) int dlclose(void *h)
{
    ms_init();
    if (!ms_real.dlclose)
        return -1;
    int rc = ms_real.dlclose(h);
    if (ms_state == MS_STATE_READY) {
        MS_HEALTH_INC(dlclose_calls);
        ms_unwind_invalidate();
    }
    return rc;
}
