/* The reachability leak scan of a running process: stop the other threads, fork, let
 * the parent go on at once, mark and classify in the copy-on-write child, fold, and
 * bring the result back through a pipe. Runs inside the target: no malloc, no stdio;
 * the scan child uses raw system calls only. */
#ifndef MS_AGENT_LEAK_SCAN_H
#define MS_AGENT_LEAK_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "agent/arch/arch.h"
#include "memsight/snapshot_format.h"

/* Statistics carried in the LEAK chunk's tail (name, value); see docs/snapshot-format.md. */
enum {
    MS_LKS_THREADS,         /* threads listed besides the caller */
    MS_LKS_STOPPED,         /* ...stopped with their registers */
    MS_LKS_GONE,            /* ...exited before they stopped */
    MS_LKS_UNSTOPPED,       /* ...that did not answer (scanned without registers) */
    MS_LKS_BLOCKS,          /* heap blocks in the scan */
    MS_LKS_ROOT_BYTES,      /* bytes of roots read */
    MS_LKS_WORDS,           /* words examined (roots and blocks) */
    MS_LKS_SKIPPED_BYTES,   /* unreadable bytes skipped */
    MS_LKS_FAULTS,          /* pages that faulted in the child and were zero-mapped */
    MS_LKS_MODULES,         /* writable module segments scanned */
    MS_LKS_REGIONS,         /* program mmap regions scanned */
    MS_LKS_STOP_NS,         /* part of the pause spent stopping threads */
    MS_LKS_FORK_NS,         /* part of the pause spent in fork */
    MS_LKS_RECORDS_DROPPED, /* records beyond the limit */
    MS_LKS_LOADER_BLOCKS,   /* blocks the dynamic linker allocated: roots */
    MS_LKS_COLLECT_NS,      /* child: copying the live table */
    MS_LKS_SORT_NS,         /* child: sorting blocks by address */
    MS_LKS_ROOTS_NS,        /* child: scanning the roots */
    MS_LKS_MARK_NS,         /* child: marking through the blocks */
    MS_LKS_CLASSIFY_NS,     /* child: cliques, folding and records */
    MS_LKS_UNTRACKED_MAPS,  /* after memsight attach: mappings rooted as memory from before */
    MS_LKS_HEURISTICS,      /* the interior-pointer heuristics in force (MS_LEAK_H_*) */
    MS_LKS_HEUR_BLOCKS,     /* still reachable only through a heuristic: blocks, per */
    MS_LKS_HEUR_BYTES = MS_LKS_HEUR_BLOCKS + MS_LEAK_H_COUNT, /* ...and bytes, per heuristic */
    MS_LKS_COUNT = MS_LKS_HEUR_BYTES + MS_LEAK_H_COUNT
};
extern const char *const ms_leak_stat_names[MS_LKS_COUNT];

typedef struct ms_leak_result {
    ms_snap_leak_summary sum;
    uint64_t stat[MS_LKS_COUNT];
    uint32_t nrec;
    uint32_t cap;
    ms_snap_leak_rec *rec; /* agent memory (mmap) */
} ms_leak_result;

/* Who asks: a program thread (its stack above `sp` and its callee-saved registers are
 * roots) or an agent thread (its stack and registers are the agent's, never roots). */
typedef struct ms_leak_caller {
    int program_thread;
    uint64_t sp;
    uint64_t regs[MS_ARCH_NCALLEE];
} ms_leak_caller;

/* Captures the caller's stack pointer and callee-saved registers (arch layer). */
#define MS_LEAK_CAPTURE(c)                                                              \
    do {                                                                                \
        (c)->program_thread = 1;                                                        \
        MS_ARCH_CAPTURE(&(c)->sp, (c)->regs);                                           \
    } while (0)

/* The context a signal interrupted as the scan's caller: its stack from the interrupted
 * stack pointer (the handler's frames below are the agent's) and its callee-saved
 * registers (the rest of them is in the signal frame, below that stack pointer). */
void ms_leak_caller_from(ms_leak_caller *who, const void *ucontext);

/* Where exit began on the thread that will run the exit scan (the exit interposer, the
 * return from main, _exit): that thread's stack is scanned from there, because the
 * frames of the exit path below hold dead values of earlier calls in their slots. */
void ms_leak_note_exit(const ms_leak_caller *who);
/* Notes the calling function's caller as the frame where exit began. */
#define MS_LEAK_NOTE_EXIT()                                                             \
    do {                                                                                \
        ms_leak_caller exit_from_;                                                      \
        memset(&exit_from_, 0, sizeof exit_from_);                                      \
        MS_LEAK_CAPTURE(&exit_from_);                                                   \
        exit_from_.sp = MS_ARCH_CALLER_SP();                                                 \
        ms_leak_note_exit(&exit_from_);                                                 \
    } while (0)

/* The newest scan's bytes and blocks per class: 1, or 0 when no scan has run. */
int ms_leak_last(uint64_t bytes[MS_LEAK_CLASS_COUNT], uint64_t blocks[MS_LEAK_CLASS_COUNT]);

/* The interior-pointer heuristics of the next scan (MS_LEAK_H_*), in place of the
 * option leak_heuristics: a request that names its own (memsight leaks
 * --leak-check-heuristics). Taken by that scan; -1 forgets it. */
void ms_leak_next_heuristics(int set);

/* The interior-pointer heuristics of a scan (option leak_heuristics, MS_LEAK_H_*). */
unsigned ms_leak_heuristics(void);

/* The signal that stops threads for a scan (option leak_stop_signal). */
int ms_leak_stop_signal(void);

/* Runs one scan. Returns 0 with *res filled (res->rec points into agent memory valid
 * until the next scan), or a negative errno: -ENOTSUP when the agent is not recording
 * every block, -EBUSY when a scan is already running. One scan at a time. */
int ms_leak_scan(const ms_leak_caller *who, ms_leak_result **res);

/* Appends a LEAK chunk for `res` to an open snapshot (an ms_snapshot_extra_fn). */
struct ms_snap_writer;
void ms_leak_write_chunk(struct ms_snap_writer *w, void *res);

/* Scans and writes a snapshot with reason `reason` holding the result. */
int ms_leak_check_and_write(const ms_leak_caller *who, const char *reason, char *path,
                            size_t pathlen);

/* Called by the agent before its exit snapshot: with leak_check=exit, scans and makes
 * the exit snapshot carry the result. */
void ms_leak_at_exit(void);

#endif
