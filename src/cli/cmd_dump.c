/* `memsight dump PID`: asks a running agent for a snapshot now and prints its path.
 * Checks that the process has the agent and a handler for the request signal before
 * sending anything (the default action of a real-time signal would kill it). */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_request.h"
#include "cli_common.h"
#include "commands.h"
#include "core/agent_options.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: memsight dump [--timeout SEC] [--signal N] PID\n"
            "\n"
            "Asks the memsight agent running inside process PID (started with 'memsight run',\n"
            "'memsight attach', or by the program itself)\n"
            "for a snapshot now, waits for the file and prints its path:\n"
            "  <out>/memsight-<pid>-<NNNN>-signal.msnap\n"
            "\n"
            "  --timeout SEC  how long to wait for the snapshot (default 10)\n"
            "  --signal N     request signal, if the agent was started with dump_signal=N and\n"
            "                 its environment cannot be read (default: %d)\n"
            "\n"
            "The process must be owned by you (or you are root). The signal's handler in the\n"
            "agent wakes the agent's control thread, which writes the snapshot; a program\n"
            "with one thread has none: its thread writes it where the signal finds it waiting\n"
            "(sleep, poll, read...) or at its next allocation (the request is sent again\n"
            "every 0.25 s meanwhile, and served once).\n",
            MS_DEFAULT_REQUEST_SIGNAL);
}

int ms_cmd_dump(int argc, char **argv)
{
    double timeout = 10;
    long signo = 0;
    int pid = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strncmp(a, "--timeout", 9) || !strncmp(a, "--signal", 8)) {
            const char *eq = strchr(a, '=');
            if (eq)
                val = eq + 1;
            else if (i + 1 < argc)
                val = argv[++i];
            else {
                fprintf(stderr, "memsight dump: %s needs a value\n", a);
                return 2;
            }
            if (!strncmp(a, "--timeout", 9)) {
                if (ms_cli_parse_timeout(val, &timeout) != 0) {
                    fprintf(stderr, "memsight dump: bad --timeout '%s'\n", val);
                    return 2;
                }
            } else if (ms_cli_parse_long(val, 1, SIGRTMAX, &signo) != 0) {
                fprintf(stderr, "memsight dump: bad --signal '%s'\n", val);
                return 2;
            }
            continue;
        }
        if (ms_cli_parse_pid_arg("dump", a, &pid) != 0) {
            usage(stderr);
            return 2;
        }
    }
    if (!pid) {
        usage(stderr);
        return 2;
    }
    char path[PATH_MAX * 2], err[1024];
    if (ms_cli_agent_request(pid, (int)signo, MS_REQ_DUMP, "signal", timeout, path, sizeof path,
                             NULL, err, sizeof err) != 0) {
        fprintf(stderr, "memsight dump: %s\n", err);
        return 1;
    }
    printf("%s\n", path);
    return 0;
}
