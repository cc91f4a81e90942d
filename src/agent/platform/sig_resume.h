/* The agent's signal handlers (requests, the leak scan's stop) must not cut the
 * program's sleeps short: a sleep the kernel would have resumed had no handler run is
 * resumed by the handler itself before it returns. Per architecture; async-signal-safe. */
#ifndef MS_AGENT_SIG_RESUME_H
#define MS_AGENT_SIG_RESUME_H

/* Learns where the C library's sleep and poll functions lie (dlsym, dladdr: outside any
 * signal handler, before the handlers are installed). Without it nothing is resumed. */
void ms_sig_resume_init(void);

/* Called last in an agent signal handler with its ucontext. When the signal cut short
 * the C library's poll, nanosleep or clock_nanosleep (turned into EINTR only because a
 * handler ran), resumes it with the thread's own signal mask (a program signal that
 * comes meanwhile runs its handler and ends the call with EINTR, as it would have) and
 * puts the result into the interrupted context. Does nothing otherwise: other calls
 * (epoll_wait, select, pause, timed futex waits) return EINTR as after any handler. */
void ms_sig_resume_interrupted(void *ucontext);

/* 1 when the context (of a signal handler) stopped the thread waiting in one of the C
 * library's calls that block (read, poll, select, epoll_wait, nanosleep, pause, wait4,
 * accept, recv...), or in such a wait resumed by an agent handler: neither the C library's allocator nor its internal locks are in
 * use on that thread there. 0 too when the handler does not run on the thread's known
 * stack with room to spare (a small context stack, a signal stack). Async-signal-safe. */
int ms_sig_at_wait(const void *ucontext);

/* 1 when ms_sig_at_wait can ever say yes in this process: the C library's blocking
 * functions were found with their sizes (not on musl, whose calls share one system-call
 * stub) and the kernel reads the interrupted instruction (not under qemu-user). When 0,
 * a thread that only waits could not be served on its own thread: the control thread is
 * needed. Call after ms_sig_resume_init. */
int ms_sig_can_serve_waits(void);

#endif
