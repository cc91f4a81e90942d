/* memsight public API, for programs that link or dlopen the agent (libmemsight.so)
 * instead of preloading it. All functions are safe to call from any thread; they
 * return 0 on success and a negative errno value on failure. */
#ifndef MEMSIGHT_H
#define MEMSIGHT_H

#ifdef __cplusplus
extern "C" {
#endif

/* Starts recording with the given option string (same syntax as the MEMSIGHT_OPTIONS
 * environment variable; NULL reads the variable). Idempotent. */
int memsight_start(const char *options);
/* Writes a snapshot now; its path is copied into path (if not NULL). */
int memsight_dump(char *path, unsigned long pathlen);
/* Runs a reachability leak scan now and writes a snapshot holding its result (its path
 * is copied into path, if not NULL). The calling thread's stack and registers count as
 * roots; the other threads stop only while the process forks (docs/leaks.md). Blocks
 * the caller until the scan is done. -ENOTSUP when the agent is not recording every
 * block (sampled mode, or not started), -EBUSY while another scan runs. */
int memsight_leak_check(char *path, unsigned long pathlen);

#ifdef __cplusplus
}
#endif
#endif
