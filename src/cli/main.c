/* memsight: the command-line entry point. Parses the subcommand name and hands over;
 * everything else lives in cmd_<name>.c and the libraries. */
#include <stdio.h>
#include <string.h>

#include "commands.h"

/* Weak so that a subcommand still being written does not break the build of the rest;
 * a missing one is reported plainly instead of crashing. */
#pragma weak ms_cmd_run
#pragma weak ms_cmd_report
#pragma weak ms_cmd_dump
#pragma weak ms_cmd_leaks
#pragma weak ms_cmd_diff
#pragma weak ms_cmd_trend
#pragma weak ms_cmd_merge
#pragma weak ms_cmd_smaps
#pragma weak ms_cmd_top
#pragma weak ms_cmd_watch
#pragma weak ms_cmd_hprof
#pragma weak ms_cmd_push
#pragma weak ms_cmd_symbolize
#pragma weak ms_cmd_fleet
#pragma weak ms_cmd_attach
#pragma weak ms_cmd_detach

struct command {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
};

static const struct command commands[] = {
    {"run", ms_cmd_run, "run a program with the agent and summarise its memory at exit"},
    {"report", ms_cmd_report, "read a snapshot: totals, top stacks, leaks (text, json, pprof...)"},
    {"attach", ms_cmd_attach, "start recording in a running process (ptrace), leave it as it was"},
    {"detach", ms_cmd_detach, "stop recording in an attached process: last snapshot, hooks off"},
    {"dump", ms_cmd_dump, "ask a running agent for a snapshot now"},
    {"leaks", ms_cmd_leaks, "ask a running agent for a reachability leak scan"},
    {"diff", ms_cmd_diff, "compare two snapshots, per stack"},
    {"trend", ms_cmd_trend, "growth of every stack across a series of snapshots"},
    {"merge", ms_cmd_merge, "merge snapshots of the same program into one"},
    {"smaps", ms_cmd_smaps, "a process's memory by mapping and by kind, from /proc"},
    {"top", ms_cmd_top, "processes ranked by PSS, USS, RSS or swap"},
    {"watch", ms_cmd_watch, "sample a process's memory and fire actions on thresholds"},
    {"hprof", ms_cmd_hprof, "analyse a Java/Android heap dump (HPROF)"},
    {"push", ms_cmd_push, "send snapshots to ClickHouse, for fleet-wide queries"},
    {"symbolize", ms_cmd_symbolize, "load symbols of pushed frames into ClickHouse, per build id"},
    {"fleet", ms_cmd_fleet, "top stacks, trends and leaks across a fleet, in ClickHouse"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: memsight <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (commands[i].fn)
            fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'memsight <command> --help' describes each command.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("memsight %s\n", MEMSIGHT_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(argv[1], commands[i].name) != 0)
            continue;
        if (!commands[i].fn) {
            fprintf(stderr, "memsight: '%s' is not available in this build\n", argv[1]);
            return 2;
        }
        return commands[i].fn(argc - 1, argv + 1);
    }
    fprintf(stderr, "memsight: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
