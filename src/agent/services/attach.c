/* memsight attach / detach, the agent's half: memsight_attach() is what the injector calls
 * in a running program (GOT hooks, as memsight_start from a dlopen'ed agent), the detach
 * request gives back the hooks of every name that hands out memory, and
 * memsight_attach_info tells the memsight command where things are.
 * Runs inside the target: no malloc of ours, nothing held across fork, never blocks. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "agent/services/services.h"
#include "agent/platform/got_hook.h"
#include "agent/record/sampler.h"
#include "agent/services/start.h"
#include "memsight/attach.h"
#include "memsight/memsight.h"

__attribute__((visibility("default"))) memsight_attach_state memsight_attach_info = {
    .magic = MEMSIGHT_ATTACH_MAGIC,
    .version = MEMSIGHT_ATTACH_VERSION,
};
#define ST memsight_attach_info

static int ms_attach_busy;
static ms_sampler_config ms_attach_sampler; /* the mode of the first session */

static void ms_attach_copy(char *dst, size_t cap, const char *src)
{
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = 0;
}

/* The agent's mode and options, for the memsight command (its requests and a later
 * attach read them): at every start, and at an attach. */
void ms_attach_publish_mode(void)
{
    ST.sample_interval = ms_opt.sample_interval;
    ST.min_size = ms_opt.min_size;
    ms_attach_copy(ST.options, sizeof ST.options, ms_opt.raw);
}

void ms_attach_reply(unsigned request, unsigned seq, int err)
{
    ST.reply_request = request;
    ST.reply_seq = seq;
    ST.reply_errno = err;
    __atomic_fetch_add(&ST.reply_count, 1, __ATOMIC_RELEASE);
}

/* A note on the last refusal, for the command (ST.note): the parts joined. */
static void ms_attach_note(const char *const *parts, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++)
        for (const char *s = parts[i]; *s && o + 1 < sizeof ST.note; s++)
            ST.note[o++] = *s;
    ST.note[o] = 0;
}

/* The detach request, on the control thread: the last snapshot, recording off, the
 * allocating names' hooks given back, the thread ends. The names that take memory back
 * stay hooked: a block recorded while attached carries a header and must come back
 * through the agent whenever the program frees it (every other pointer is handed to the
 * real function as it is, after one compare). */
static void ms_attach_on_detach(unsigned request, void *arg)
{
    (void)request;
    (void)arg;
    if (__atomic_load_n(&ST.state, __ATOMIC_ACQUIRE) != MEMSIGHT_ATTACH_RECORDING)
        return;
    char path[sizeof ST.last_snapshot];
    path[0] = 0;
    int rc = ms_snapshot_write("detach", NULL, NULL, path, sizeof path);
    if (rc != 0)
        path[0] = 0;
    ms_attach_copy(ST.last_snapshot, sizeof ST.last_snapshot, path);
    /* why there is no final snapshot (a full disk...), for `memsight detach` */
    ms_attach_reply(MS_CTL_REQ_DETACH, ms_control_request_seq(MS_CTL_REQ_DETACH), -rc);
    ms_opt.exit_snapshot = 0;
    /* calls that still reach the agent (function pointers the program took while hooked)
     * allocate plain blocks from now on, as in a child with follow_fork=0 */
    ms_attach_sampler = ms_sampler_cfg;
    ms_sampler_configure(0, UINT64_MAX, 0, 0);
    ST.restored_slots = ms_got_unhook_gives();
    ST.live_at_detach = ms_live_count();
    ST.detach_ns = ms_now_ns();
    ms_control_end();
    __atomic_store_n(&ST.state, MEMSIGHT_ATTACH_DETACHED, __ATOMIC_RELEASE);
}

/* Attach again after a detach: tables, mode and call stacks stay (blocks recorded before
 * and still live are still known: their frees kept coming through the agent); out=,
 * interval=, detach_after=, exit_snapshot=, labels= and metrics_listen= are taken from the
 * new options. */
static int ms_attach_again(const char *options)
{
    ms_options o;
    char oerr[sizeof ms_opt_errors];
    /* the same table as every start (core/agent_options.c): bad items are skipped and
     * said in the snapshots, as for the first attach */
    unsigned bad = ms_options_parse(&o, options, oerr, sizeof oerr);
    /* the mode and the tables are the first session's: a session that asks for another
     * is refused, rather than run in the old mode with the new options in its snapshots */
    const ms_option_def *d = ms_options_fixed_diff(&o, &ms_opt);
    if (d) {
        char want[128], have[128];
        ms_option_value_text(&o, d, want, sizeof want);
        ms_option_value_text(&ms_opt, d, have, sizeof have);
        const char *parts[] = {d->name, "=", want, " asked, but this agent runs with ",
                               d->name, "=", have, " since its first attach: the mode "
                               "and tables of an agent do not change in a running process"};
        ms_attach_note(parts, sizeof parts / sizeof parts[0]);
        return -EINVAL;
    }
    if (bad) {
        memcpy(ms_opt_errors, oerr, sizeof ms_opt_errors);
        __atomic_store_n(&ms_health.bad_options, bad, __ATOMIC_RELAXED);
    }
    ms_attach_copy(ms_opt.out, sizeof ms_opt.out, o.out);
    ms_attach_copy(ms_opt.raw, sizeof ms_opt.raw, o.raw);
    ms_attach_copy(ms_opt.labels, sizeof ms_opt.labels, o.labels);
    ms_attach_copy(ms_opt.metrics_listen, sizeof ms_opt.metrics_listen, o.metrics_listen);
    ms_opt.exit_snapshot = o.exit_snapshot;
    ms_opt.detach_after_ms = o.detach_after_ms;
    ms_opt.interval_ms = o.interval_ms;
    ms_attach_publish_mode();
    ms_sampler_configure(ms_attach_sampler.interval, ms_attach_sampler.min_size,
                         ms_attach_sampler.has_seed, ms_attach_sampler.seed);
    ms_got_hook_all();
    int rc = ms_control_again(o.interval_ms);
    if (rc == 0)
        rc = ms_control_start_now();
    return rc == -ENOTSUP ? 0 : rc;
}

static int ms_attach_locked(const char *options)
{
    ST.note[0] = 0;
    int s = __atomic_load_n(&ST.state, __ATOMIC_ACQUIRE);
    if (s == MEMSIGHT_ATTACH_RECORDING)
        return -EALREADY;
    if (s == MEMSIGHT_ATTACH_DETACHED)
        return ms_attach_again(options);
    /* started another way (preloaded by memsight run, or by the program's own
     * memsight_start): that recording is not ours to detach */
    if (__atomic_load_n(&ms_state, __ATOMIC_ACQUIRE) != MS_STATE_NONE || !ms_start_deferred())
        return -EEXIST;
    ms_start_options_source = "memsight_attach options";
    int rc = memsight_start(options ? options : "");
    ms_start_options_source = "memsight_start options";
    if (rc != 0)
        return rc;
    ms_control_set_handler(MS_CTL_REQ_DETACH, ms_attach_on_detach, NULL);
    if (ms_opt.control)
        ST.signo = ms_control_signal();
    return 0;
}

__attribute__((visibility("default"))) int memsight_attach(const char *options)
{
    while (__atomic_exchange_n(&ms_attach_busy, 1, __ATOMIC_ACQUIRE))
        sched_yield();
    int rc = ms_attach_locked(options);
    if (rc == 0) {
        ST.attach_ns = ms_now_ns();
        if (!ST.first_attach_ns)
            ST.first_attach_ns = ST.attach_ns;
        ST.detach_ns = 0;
        ST.sessions++;
        ms_attach_copy(ST.out, sizeof ST.out, ms_opt.out);
        ms_control_set_deadline(ms_opt.detach_after_ms, MS_CTL_REQ_DETACH);
        __atomic_store_n(&ST.state, MEMSIGHT_ATTACH_RECORDING, __ATOMIC_RELEASE);
    }
    ST.last_rc = rc;
    __atomic_store_n(&ms_attach_busy, 0, __ATOMIC_RELEASE);
    return rc;
}

void ms_attach_publish_start(void)
{
    /* memsight_start's options need not be in the environment, where the command would
     * look: the snapshot directory and request signal it uses, for `memsight dump` */
    if (__atomic_load_n(&ST.state, __ATOMIC_ACQUIRE) != MEMSIGHT_ATTACH_NEVER)
        return;
    ST.signo = ms_opt.control ? ms_control_signal() : 0;
    ms_attach_copy(ST.out, sizeof ST.out, ms_opt.out);
}

uint32_t ms_attach_sessions(void)
{
    return __atomic_load_n(&ST.sessions, __ATOMIC_ACQUIRE);
}

uint32_t ms_attach_meta(ms_snap_writer *w)
{
    if (!ST.sessions)
        return 0;
    ms_sw_kv_u64(w, "attached_ns", ST.attach_ns);
    ms_sw_kv_u64(w, "first_attached_ns", ST.first_attach_ns);
    ms_sw_kv_u64(w, "attach_sessions", ST.sessions);
    return 3;
}
