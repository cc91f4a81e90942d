/* Per-process facts from /proc that are not text tables: open fd count, thread count,
 * each thread's stack pointer (from task/TID/syscall, or stat's kstkesp), the
 * executable's path and the command line. Never trusts the text; a vanished process
 * or thread is an error code, never a crash. */
#ifndef MS_CORE_PROC_TASK_H
#define MS_CORE_PROC_TASK_H

#include <stddef.h>
#include <stdint.h>

/* Number of entries in /proc/PID/fd (0: self). Returns >= 0, or -errno with a message. */
long ms_proc_fd_count(int pid, char *err, size_t errlen);
/* Number of entries in /proc/PID/task. Returns >= 0, or -errno with a message. */
long ms_proc_task_count(int pid, char *err, size_t errlen);

typedef struct ms_thread_sp {
    int tid;
    uint64_t sp;  /* 0 when unknown (the thread was running, or not allowed) */
    char comm[20];
} ms_thread_sp;

/* Lists the threads of pid with their stack pointers. *out is malloc'ed (free it);
 * returns the count, or -errno with a message. */
long ms_proc_thread_sps(int pid, ms_thread_sp **out, char *err, size_t errlen);
/* Parses one task/TID/syscall line ("nr a1..a6 sp pc", "-1 sp pc" or "running").
 * Returns 1 and the sp when present. */
int ms_parse_syscall_sp(const char *text, size_t len, uint64_t *sp);
/* Parses one task/TID/stat line and returns kstkesp (field 29), or 0. The comm in
 * parentheses may hold spaces and parentheses: the last ')' ends it. */
uint64_t ms_parse_stat_kstkesp(const char *text, size_t len);

/* 32 or 64: the ELF class of /proc/PID/exe (a 32-bit process has 4 GiB of address
 * space: the VmSize tracker's case). Returns -errno when it cannot be read or is not ELF. */
int ms_proc_elf_class(int pid);

/* readlink of /proc/PID/exe into buf (NUL-terminated, " (deleted)" kept). Returns 0 or
 * -errno with a message. */
int ms_proc_exe(int pid, char *buf, size_t cap, char *err, size_t errlen);
/* The command line with NULs turned into spaces, truncated to cap-1; falls back to
 * "[comm]" for kernel threads. Returns 0 or -errno. */
int ms_proc_cmdline(int pid, char *buf, size_t cap, char *err, size_t errlen);

#endif
