/* Parser for /proc/PID/maps, /proc/PID/smaps and /proc/PID/smaps_rollup: one record per
 * mapping with its kB counters. Fast and allocation-light (names point into the text,
 * one growing array); fields a kernel adds are skipped, fields it lacks are marked
 * absent. Never trusts the text: malformed lines are counted and skipped, never fatal. */
#ifndef MS_CORE_PROC_SMAPS_H
#define MS_CORE_PROC_SMAPS_H

#include <stddef.h>
#include <stdint.h>

#include "core/proc_read.h"

/* The per-mapping kB fields memsight knows, in the kernel's order. */
enum ms_smaps_field {
    MS_SM_SIZE,
    MS_SM_KERNEL_PAGE_SIZE,
    MS_SM_MMU_PAGE_SIZE,
    MS_SM_RSS,
    MS_SM_PSS,
    MS_SM_PSS_DIRTY,
    MS_SM_PSS_ANON,
    MS_SM_PSS_FILE,
    MS_SM_PSS_SHMEM,
    MS_SM_SHARED_CLEAN,
    MS_SM_SHARED_DIRTY,
    MS_SM_PRIVATE_CLEAN,
    MS_SM_PRIVATE_DIRTY,
    MS_SM_REFERENCED,
    MS_SM_ANONYMOUS,
    MS_SM_KSM,
    MS_SM_LAZYFREE,
    MS_SM_ANON_HUGE_PAGES,
    MS_SM_SHMEM_PMD_MAPPED,
    MS_SM_FILE_PMD_MAPPED,
    MS_SM_SHARED_HUGETLB,
    MS_SM_PRIVATE_HUGETLB,
    MS_SM_SWAP,
    MS_SM_SWAP_PSS,
    MS_SM_LOCKED,
    MS_SM_NFIELDS
};

/* The kernel's spelling of each field ("Rss", "SwapPss"...). */
const char *ms_smaps_field_name(enum ms_smaps_field f);

#define MS_VMA_DELETED 0x1u /* the name ended in " (deleted)" (removed from the name) */
#define MS_VMA_HAS_STATS 0x2u /* at least one counter line followed the header */

typedef struct ms_vma {
    uint64_t start, end; /* [start, end) */
    uint64_t offset;     /* file offset */
    uint64_t inode;
    uint32_t dev_major, dev_minor;
    char perms[5];       /* "rw-p", NUL-terminated */
    uint8_t flags;       /* MS_VMA_* */
    uint32_t present;    /* bit (1u << field) set for each field seen */
    const char *name;    /* path, [heap], [stack], [anon:x]... or "" when anonymous */
    const char *vmflags; /* the VmFlags line's value, or "" */
    uint64_t kb[MS_SM_NFIELDS];
} ms_vma;

typedef struct ms_smaps {
    ms_vma *v;
    size_t n, cap;
    uint32_t present_any; /* union of the present bits */
    size_t bad_lines;     /* lines that were neither a header nor a counter */
    ms_procbuf buf;       /* the text names point into (ms_smaps_read only) */
} ms_smaps;

/* Which file ms_smaps_read reads. */
enum ms_smaps_source { MS_SRC_MAPS, MS_SRC_SMAPS, MS_SRC_SMAPS_ROLLUP };

/* Parses text in place (it writes NUL bytes into it, including at text[len], so the
 * buffer needs one byte past len; names point into it, so it must outlive sm). sm must be zeroed or previously used (its array is reused). Returns 0, or
 * -1 with a message (out of memory only: malformed text is skipped and counted). */
int ms_smaps_parse(ms_smaps *sm, char *text, size_t len, char *err, size_t errlen);
/* Reads /proc/PID/<source> (pid 0: self) and parses it. Returns 0 or -errno with a
 * message (-ENOENT/-ESRCH: the process is gone; -EACCES: not allowed). */
int ms_smaps_read(ms_smaps *sm, int pid, enum ms_smaps_source src, char *err, size_t errlen);
void ms_smaps_free(ms_smaps *sm);

/* Sum of one field over all mappings (saturating). */
uint64_t ms_smaps_sum(const ms_smaps *sm, enum ms_smaps_field f);

#endif
