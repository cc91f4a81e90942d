/* What an attached agent (memsight attach PID) shows of itself: a plain structure exported
 * by libmemsight.so as `memsight_attach_info`, read by the memsight command from the
 * process's memory (/proc/PID/mem at the symbol's address) to find the snapshot directory
 * and the request signal, and to see whether it is recording. Little-endian, fixed layout;
 * a reader checks magic and version first. */
#ifndef MEMSIGHT_ATTACH_H
#define MEMSIGHT_ATTACH_H

#include <stdint.h>

#define MEMSIGHT_ATTACH_MAGIC 0x4843415454414d53ull /* "SMATTACH" */
#define MEMSIGHT_ATTACH_VERSION 2
#define MEMSIGHT_ATTACH_SYMBOL "memsight_attach_info"
#define MEMSIGHT_ATTACH_ENTRY "memsight_attach"

enum memsight_attach_states {
    MEMSIGHT_ATTACH_NEVER = 0,     /* loaded, never attached */
    MEMSIGHT_ATTACH_RECORDING = 1, /* attached: recording */
    MEMSIGHT_ATTACH_DETACHED = 2,  /* detached: recording stopped, hooks given back */
};

typedef struct memsight_attach_state {
    uint64_t magic;          /* MEMSIGHT_ATTACH_MAGIC once the agent is loaded */
    uint32_t version;        /* MEMSIGHT_ATTACH_VERSION */
    int32_t state;           /* enum memsight_attach_states */
    int32_t last_rc;         /* result of the last memsight_attach(): 0 or a negative errno */
    int32_t signo;           /* request signal (0: control=0, no requests) */
    uint32_t sessions;       /* attaches that started recording */
    uint32_t reserved;
    uint64_t attach_ns;      /* CLOCK_REALTIME at which the current (or last) session began */
    uint64_t first_attach_ns;
    uint64_t detach_ns;      /* end of the last session (0 while recording) */
    uint64_t restored_slots; /* GOT slots given back by the last detach */
    uint64_t live_at_detach; /* recorded heap blocks still live at the last detach */
    char out[512];           /* snapshot directory, as the process sees it */
    char last_snapshot[512]; /* the snapshot written by the last detach */
    /* version 2: the agent's mode, and its answer to the last request it could not serve
     * (so that the command that asked learns why at once, rather than waiting its timeout) */
    uint64_t sample_interval; /* sample= of the running agent (0: full mode) */
    uint64_t min_size;        /* min_size= of the running agent */
    uint32_t reply_seq;       /* the request's number (its signal's value above the code) */
    uint32_t reply_request;   /* the request's code (1 dump, 2 leaks, 3 detach) */
    int32_t reply_errno;      /* 0: served; else why not (ENOSPC, ENOTSUP: sampled mode...) */
    uint32_t reply_count;     /* bumped at every reply */
    char options[1024];       /* the options the recording runs with (a later attach must
                                 not ask for another mode: attach.c) */
    char note[256];           /* the agent's own words on the last refusal ("" if none) */
} memsight_attach_state;

#endif
