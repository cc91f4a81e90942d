/* The subcommands of `memsight`, one file each (cmd_<name>.c). Each takes the
 * arguments after its own name (argv[0] is the command name) and returns the exit
 * status. Only the CLI prints. */
#ifndef MS_CLI_COMMANDS_H
#define MS_CLI_COMMANDS_H

int ms_cmd_run(int argc, char **argv);
int ms_cmd_report(int argc, char **argv);
int ms_cmd_dump(int argc, char **argv);
int ms_cmd_leaks(int argc, char **argv);
int ms_cmd_diff(int argc, char **argv);
int ms_cmd_trend(int argc, char **argv);
int ms_cmd_merge(int argc, char **argv);
int ms_cmd_smaps(int argc, char **argv);
int ms_cmd_top(int argc, char **argv);
int ms_cmd_watch(int argc, char **argv);
int ms_cmd_hprof(int argc, char **argv);
int ms_cmd_push(int argc, char **argv);
int ms_cmd_symbolize(int argc, char **argv);
int ms_cmd_fleet(int argc, char **argv);
int ms_cmd_attach(int argc, char **argv);
int ms_cmd_detach(int argc, char **argv);

/* Shared with `memsight attach` (cmd_run.c): finding libmemsight.so, and run's options
 * that set agent options, so that both commands take them with the same checks. */
#include <stddef.h>
struct run_opt;
int ms_run_find_agent(char *out, size_t len);
/* Creates -o DIR (0700) if needed, checks that snapshots can be written there (a probe
 * file), and gives its real path; messages start "memsight CMD:". 0 or -1. */
int ms_run_prepare_out_dir(const char *cmd, const char *dir, char *out, size_t len);
const struct run_opt *ms_run_agent_row(const char *name, char short_name, int *takes_value);
int ms_run_agent_apply(const struct run_opt *o, const char *val, char *opts, size_t cap);

#endif
