/* Asking the memsight agent in a running process for a snapshot, for `memsight dump` and
 * `memsight leaks`. Reads /proc and signals the process; never touches its memory. */
#ifndef MS_CLI_AGENT_REQUEST_H
#define MS_CLI_AGENT_REQUEST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Kept in step with src/agent/services/control.h (the CLI does not include agent headers). */
#define MS_REQ_DUMP 1
#define MS_REQ_LEAKS 2
#define MS_REQ_SEQ_SHIFT 8        /* MS_CTL_REQ_SEQ_SHIFT: a request number above the code */
#define MS_REQ_SEQ_MAX 0x7fffffu  /* numbers fit the signal's positive int value */
#define MS_REQ_SEQ_HEUR_FLAG 0x20u /* MS_CTL_SEQ_HEUR_FLAG: a leak scan's heuristics */

/* The low bits of the next request's number (MS_REQ_SEQ_HEUR_FLAG | set for a leak
 * request naming its heuristics; 0: none). */
void ms_cli_agent_request_tag(unsigned tag);

/* Sends `request` to the agent in process `pid` (signal `signo`, 0: the agent's own or the
 * default) and waits up to `timeout` seconds for a new memsight-<pid>-<NNNN>-<reason>.msnap,
 * a regular file of the process's uid (names planted by others are passed over); its path
 * goes to `path`, its owner to *owner (may be NULL). Returns 0, or -1 with a message. */
int ms_cli_agent_request(int pid, int signo, int request, const char *reason, double timeout,
                         char *path, size_t pathlen, uid_t *owner, char *err, size_t errlen);

/* "sample=N" or "min_size=N" for an agent in sampled mode: 1, or 0 in full mode. */
int ms_cli_sampled_text(uint64_t sample, uint64_t min_size, char *buf, size_t cap);

/* The uid whose files process `pid` creates (its file-system uid). 0 or -1 with a message. */
int ms_cli_agent_owner(int pid, uid_t *owner, char *err, size_t errlen);

/* The agent's control thread in pid (it names itself memsight-ctl), 0 if there is none. */
int ms_cli_control_tid(int pid);

#endif
