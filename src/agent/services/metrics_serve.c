/* The agent's own /metrics (metrics_serve.h). Its thread is the agent's: nothing it does
 * is recorded (ms_self.busy), it blocks every signal, the leak scan neither stops it nor
 * reads it as a root, and the program's last thread does not wait on it. The HTTP library
 * and the exposition code are in the plugin, loaded only here: a process without the
 * option never maps them. What cannot be done (address in use or not allowed, plugin
 * missing) is counted in HLTH metrics_errors and said once on stderr; the program runs on. */
#define _GNU_SOURCE
#include "agent/services/metrics_serve.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "agent/services/services.h"
#include "agent/leak/leak_scan.h"
#include "core/listen_addr.h"
#include "fleet/metrics_agent.h"

static struct {
    int started;       /* this session's thread was started (or tried) */
    int have_thread;   /* th is ours to join */
    pthread_t th;
    uint32_t tid;
    int done;          /* the thread has finished its work */
    /* descriptors a forked child must close, published only while owned (-1 otherwise):
     * the listening socket until the plugin takes it, then the plugin's own two */
    int listen_fd, wake_fd;
    int plugin_fds[2];
    int atexit_done;
} sv = {.listen_fd = -1, .wake_fd = -1, .plugin_fds = {-1, -1}};

int ms_metrics_wanted(void)
{
    return ms_opt.metrics_listen[0] != 0;
}

uint32_t ms_metrics_tid(void)
{
    return __atomic_load_n(&sv.tid, __ATOMIC_ACQUIRE);
}

/* Said once per process: why /metrics is not served. */
static void fail(const char *what, const char *why)
{
    MS_HEALTH_INC(metrics_errors);
    static int said;
    if (__atomic_exchange_n(&said, 1, __ATOMIC_ACQ_REL))
        return;
    const char *parts[] = {"metrics_listen=", ms_opt.metrics_listen, ": ", what, why ? ": " : "",
                           why ? why : "", "; not serving /metrics"};
    ms_say(parts, sizeof parts / sizeof parts[0]);
}

/* What the agent tracks now, for every scrape (on this thread). */
static void numbers(ms_metrics_agent *a)
{
    uint64_t bytes[MS_KIND_COUNT], blocks[MS_KIND_COUNT];
    ms_stack_live_totals(bytes, blocks);
    a->live_bytes = bytes[MS_KIND_HEAP];
    a->live_blocks = blocks[MS_KIND_HEAP];
    a->mmap_live_bytes = bytes[MS_KIND_MMAP];
    a->snapshot_unix_s = ms_now_ns() / 1000000000ull;
    a->has_leaks = ms_leak_last(a->leak_bytes, a->leak_blocks);
    a->dropped = __atomic_load_n(&ms_health.dropped_blocks, __ATOMIC_RELAXED) +
                 __atomic_load_n(&ms_health.dropped_stacks, __ATOMIC_RELAXED) +
                 __atomic_load_n(&ms_health.dropped_regions, __ATOMIC_RELAXED);
    size_t n = strnlen(ms_opt.labels, sizeof a->labels - 1);
    memcpy(a->labels, ms_opt.labels, n);
    a->labels[n] = 0;
    /* the host label: the process's own UTS name, as its snapshots record it */
    struct utsname u;
    if (uname(&u) == 0) {
        n = strnlen(u.nodename, sizeof a->host - 1);
        memcpy(a->host, u.nodename, n);
        a->host[n] = 0;
    }
}

/* The plugin's path: beside the agent's own file. */
static int plugin_path(char *buf, size_t cap)
{
    Dl_info info;
    if (!dladdr((void *)&ms_metrics_start, &info) || !info.dli_fname)
        return -1;
    const char *slash = strrchr(info.dli_fname, '/');
    size_t dir = slash ? (size_t)(slash - info.dli_fname) + 1 : 0;
    size_t name = sizeof MS_METRICS_PLUGIN_NAME;
    if (dir + name > cap)
        return -1;
    memcpy(buf, info.dli_fname, dir);
    memcpy(buf + dir, MS_METRICS_PLUGIN_NAME, name);
    return 0;
}

static void serve(void)
{
    struct sockaddr_storage ss;
    socklen_t len;
    const char *a = ms_opt.metrics_listen;
    if (ms_listen_addr_parse(a, strlen(a), &ss, &len) != 0) { /* checked with the options */
        fail("not ADDR:PORT", NULL);
        return;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 64) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        fail("cannot listen", strerror(e));
        return;
    }
    __atomic_store_n(&sv.listen_fd, fd, __ATOMIC_RELEASE);
    char path[4096];
    void *h = NULL;
    if (plugin_path(path, sizeof path) != 0)
        fail("cannot find " MS_METRICS_PLUGIN_NAME " beside the agent", NULL);
    else if (!(h = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
        fail("cannot load the metrics plugin", dlerror());
    ms_metrics_plugin_fn fn = h ? (ms_metrics_plugin_fn)dlsym(h, MS_METRICS_PLUGIN_ENTRY) : NULL;
    if (h && !fn)
        fail(path, "not memsight's metrics plugin");
    fd = __atomic_exchange_n(&sv.listen_fd, -1, __ATOMIC_ACQ_REL); /* the plugin's from here */
    if (!fn) {
        close(fd);
        return;
    }
    char err[256] = "";
    ms_metrics_plugin_args pa = {.abi = MS_METRICS_PLUGIN_ABI, .listen_fd = fd,
                                 .wake_fd = sv.wake_fd, .fds = sv.plugin_fds,
                                 .agent_numbers = numbers, .err = err, .errlen = sizeof err};
    if (fn(&pa) != 0)
        fail("cannot serve", err);
    /* the plugin stays loaded: a later attach serves again without loading it twice */
}

static void *sv_main(void *arg)
{
    (void)arg;
    ms_self.busy = 1; /* nothing this thread does is recorded */
    __atomic_store_n(&sv.tid, (uint32_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
    prctl(PR_SET_NAME, "memsight-metric", 0, 0, 0);
    serve(); /* until woken */
    __atomic_store_n(&sv.tid, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&sv.done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void at_exit(void)
{
    ms_metrics_stop(2000); /* before the plugin's libraries are finalized under it */
}

void ms_metrics_start(void)
{
    if (!ms_metrics_wanted() || __atomic_exchange_n(&sv.started, 1, __ATOMIC_ACQ_REL))
        return;
    ms_enter();
    int wfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wfd < 0) {
        fail("no descriptor to stop it with", strerror(errno));
        ms_leave();
        return;
    }
    __atomic_store_n(&sv.wake_fd, wfd, __ATOMIC_RELEASE);
    sv.done = 0;
    if (!__atomic_exchange_n(&sv.atexit_done, 1, __ATOMIC_ACQ_REL))
        atexit(at_exit);
    /* every signal stays blocked on it: the program's signals never land there */
    int rc = ms_agent_thread_create(&sv.th, sv_main);
    if (rc == 0) {
        __atomic_store_n(&sv.have_thread, 1, __ATOMIC_RELEASE);
    } else {
        fail("cannot start its thread", strerror(rc));
        close(__atomic_exchange_n(&sv.wake_fd, -1, __ATOMIC_ACQ_REL));
    }
    ms_leave();
}

void ms_metrics_stop(unsigned wait_ms)
{
    if (!__atomic_exchange_n(&sv.have_thread, 0, __ATOMIC_ACQ_REL))
        return;
    uint64_t one = 1;
    (void)!write(sv.wake_fd, &one, sizeof one);
    /* a scrape being answered takes milliseconds; never wait without a bound */
    for (unsigned i = 0; i < wait_ms && !__atomic_load_n(&sv.done, __ATOMIC_ACQUIRE); i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    if (__atomic_load_n(&sv.done, __ATOMIC_ACQUIRE)) {
        int (*join)(pthread_t, void **) =
            ms_real.pthread_join ? ms_real.pthread_join : pthread_join;
        join(sv.th, NULL);
        int fd = __atomic_exchange_n(&sv.wake_fd, -1, __ATOMIC_ACQ_REL);
        if (fd >= 0)
            close(fd);
    } else {
        int (*detach)(pthread_t) = ms_real.pthread_detach ? ms_real.pthread_detach : pthread_detach;
        detach(sv.th); /* it ends by itself when it can */
    }
    __atomic_store_n(&sv.started, 0, __ATOMIC_RELEASE);
}

void ms_metrics_fork_child(void)
{
    /* Only the forking thread exists here: the parent's server thread does not. Its
     * descriptors that were open at the fork are closed, so that the child holds no copy
     * of the parent's listening socket; the child serves nothing (and a later
     * ms_metrics_start does nothing: started stays set). */
    int *fds[] = {&sv.listen_fd, &sv.wake_fd, &sv.plugin_fds[0], &sv.plugin_fds[1]};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) {
        if (*fds[i] >= 0)
            close(*fds[i]);
        *fds[i] = -1;
    }
    sv.have_thread = 0;
    sv.tid = 0;
    sv.done = 1;
    sv.started = 1;
}
