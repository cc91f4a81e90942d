/* Parsers for /proc/PID/status, /proc/PID/statm and /proc/meminfo. The parse functions
 * work on a caller's buffer and never allocate; fields a kernel lacks stay absent (their
 * bit clear), fields it adds are skipped. Never trusts the text. */
#ifndef MS_CORE_PROC_STATUS_H
#define MS_CORE_PROC_STATUS_H

#include <stddef.h>
#include <stdint.h>

enum ms_status_field {
    MS_ST_VM_PEAK, MS_ST_VM_SIZE, MS_ST_VM_LCK, MS_ST_VM_PIN, MS_ST_VM_HWM, MS_ST_VM_RSS,
    MS_ST_RSS_ANON, MS_ST_RSS_FILE, MS_ST_RSS_SHMEM, MS_ST_VM_DATA, MS_ST_VM_STK,
    MS_ST_VM_EXE, MS_ST_VM_LIB, MS_ST_VM_PTE, MS_ST_VM_SWAP, MS_ST_THREADS,
    MS_ST_PID, MS_ST_PPID, MS_ST_TGID, MS_ST_UID, MS_ST_NFIELDS
};

typedef struct ms_proc_status {
    char name[64]; /* the Name line (comm), escaped by the kernel */
    char state;    /* first letter of State, or 0 */
    uint64_t v[MS_ST_NFIELDS]; /* kB for the Vm and Rss fields, counts/ids otherwise */
    uint32_t present;          /* bit (1u << field) for each field seen */
} ms_proc_status;

const char *ms_status_field_name(enum ms_status_field f);
/* Parses status text of length len. Always succeeds (unknown lines are skipped). */
void ms_status_parse(ms_proc_status *st, const char *text, size_t len);
/* Reads /proc/PID/status (0: self). Returns 0 or -errno with a message. */
int ms_status_read(ms_proc_status *st, int pid, char *err, size_t errlen);

/* /proc/PID/statm, in pages. */
typedef struct ms_proc_statm {
    uint64_t size, resident, shared, text, lib, data, dt;
    int nfields; /* how many numbers the line had */
} ms_proc_statm;
void ms_statm_parse(ms_proc_statm *sm, const char *text, size_t len);
int ms_statm_read(ms_proc_statm *sm, int pid, char *err, size_t errlen);

enum ms_meminfo_field {
    MS_MI_MEM_TOTAL, MS_MI_MEM_FREE, MS_MI_MEM_AVAILABLE, MS_MI_BUFFERS, MS_MI_CACHED,
    MS_MI_SWAP_CACHED, MS_MI_SWAP_TOTAL, MS_MI_SWAP_FREE, MS_MI_SHMEM, MS_MI_SLAB,
    MS_MI_NFIELDS
};
typedef struct ms_meminfo {
    uint64_t kb[MS_MI_NFIELDS];
    uint32_t present;
} ms_meminfo;
const char *ms_meminfo_field_name(enum ms_meminfo_field f);
void ms_meminfo_parse(ms_meminfo *mi, const char *text, size_t len);
/* Reads /proc/meminfo. When MemAvailable is absent (kernels before 3.14) it is
 * estimated as MemFree + Buffers + Cached and its bit stays clear. */
int ms_meminfo_read(ms_meminfo *mi, char *err, size_t errlen);

#endif
