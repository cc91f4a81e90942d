/* memsight_start(): starts the agent from the program (include/memsight/memsight.h).
 * Preloaded or linked before libc, the interposers are already in effect: it only
 * starts. dlopen'ed, it initialises with the given options and installs GOT hooks.
 * Runs inside the target: no malloc of ours, never kills or blocks the program. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>

#include "agent/services/services.h"
#include "agent/platform/got_hook.h"
#include "agent/services/start.h"

const char *ms_start_options;
const char *ms_start_options_source = "memsight_start options";
int ms_start_deferred_mode;
static int ms_start_busy; /* one start at a time */
static int ms_got_mode;   /* GOT hooks are the way in */

/* HLTH names of the GOT hooks (docs/agent.md), in every snapshot once they are in place */
static void ms_start_health(ms_snap_writer *w, void *arg)
{
    (void)arg;
    ms_got_stats st;
    ms_got_get_stats(&st);
    ms_sw_named n;
    ms_sw_named_begin(w, &n, MS_CHUNK_HLTH);
    ms_sw_named_put(w, &n, "got_modules", st.modules);
    ms_sw_named_put(w, &n, "got_slots", st.slots);
    ms_sw_named_put(w, &n, "got_rejected_modules", st.rejected);
    ms_sw_named_put(w, &n, "got_dlopens", st.dlopens);
    ms_sw_named_put(w, &n, "got_symbols", st.symbols);
    ms_sw_named_end(w, &n);
}

int ms_start_deferred(void)
{
    return !ms_got_default_is_own("malloc");
}

/* The agent is ready but not interposed: GOT hooks become the way in. */
static int ms_start_hooks(void)
{
    if (ms_got_prepare() != 0)
        return -ENOENT; /* the agent's own functions cannot be found: no hooks possible */
    /* blocks the program allocated before the hooks carry no header of ours: every
     * header is confirmed through the live table (or its second mark) first */
    __atomic_store_n(&ms_hdr_confirm_needed, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&ms_got_mode, 1, __ATOMIC_RELEASE);
    ms_snapshot_add_hook(ms_start_health, NULL);
    ms_got_hook_all();
    return 0;
}

static int ms_start_locked(const char *options)
{
    int s = __atomic_load_n(&ms_state, __ATOMIC_ACQUIRE);
    if (s == MS_STATE_DISABLED)
        return -ENOTSUP;
    if (s == MS_STATE_READY) {
        if (__atomic_load_n(&ms_got_mode, __ATOMIC_ACQUIRE)) {
            /* again: modules loaded by a path the dlopen hook does not see get patched */
            ms_got_hook_all();
            return 0;
        }
        /* dlopen'ed and already initialised by another entry point (memsight_dump
         * before memsight_start): it still needs its hooks */
        return ms_start_deferred() ? ms_start_hooks() : 0;
    }
    int deferred = ms_start_deferred();
    if (deferred && ms_got_prepare() != 0)
        return -ENOENT;
    ms_start_options = options;
    ms_start_deferred_mode = deferred;
    int ok = ms_init();
    ms_start_options = NULL;
    if (!ok)
        return __atomic_load_n(&ms_state, __ATOMIC_ACQUIRE) == MS_STATE_DISABLED ? -ENOMEM
                                                                                 : -EAGAIN;
    return deferred ? ms_start_hooks() : 0;
}

__attribute__((visibility("default"))) int memsight_start(const char *options)
{
    while (__atomic_exchange_n(&ms_start_busy, 1, __ATOMIC_ACQUIRE))
        sched_yield();
    int rc = ms_start_locked(options);
    /* the program is in its own code (docs/production.md): the control thread starts
     * now if needed, else requests are served on the program's thread; -ENOTSUP with
     * control=0 is no error here */
    if (rc == 0) {
        ms_control_program_running();
        ms_attach_publish_start();
    }
    __atomic_store_n(&ms_start_busy, 0, __ATOMIC_RELEASE);
    return rc;
}
