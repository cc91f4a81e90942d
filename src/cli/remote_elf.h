/* A running process seen from outside, for `memsight attach` and the commands that talk
 * to an attached agent: its mappings (/proc/PID/maps), the dynamic symbols of a module it
 * has loaded (read from the file through /proc/PID/root, so another mount namespace
 * works), and its memory (/proc/PID/mem). Every byte of /proc text and of the ELF files
 * is untrusted: bounds-checked, and refused with a message naming the file and why. */
#ifndef MS_CLI_REMOTE_ELF_H
#define MS_CLI_REMOTE_ELF_H

#include <stddef.h>
#include <stdint.h>

typedef struct ms_rmap {
    uint64_t lo, hi, off;
    char perms[5];
    char *path; /* "" for anonymous; "[stack]", "[vdso]"... as the kernel writes them */
} ms_rmap;

typedef struct ms_rmaps {
    ms_rmap *m;
    size_t n;
    char *text; /* the paths point into it */
} ms_rmaps;

/* Reads /proc/PID/maps. 0, or -1 with err. */
int ms_rmaps_read(int pid, ms_rmaps *out, char *err, size_t errlen);
void ms_rmaps_free(ms_rmaps *m);
/* The mapping holding addr, or NULL. */
const ms_rmap *ms_rmaps_find(const ms_rmaps *m, uint64_t addr);
/* The first mapping of a file whose base name starts with `prefix` (libc.so.6 ...). */
const ms_rmap *ms_rmaps_module(const ms_rmaps *m, const char *prefix);
/* Path of a file of the process as this process can open it: /proc/PID/root/PATH. */
void ms_rpath(int pid, const char *path, char *out, size_t cap);

/* One loaded ELF module of the process. */
typedef struct ms_relf {
    int machine, elfclass;
    uint64_t bias;             /* load bias in the process */
    uint64_t text_end;         /* end of the executable PT_LOAD's file bytes, in the process */
    uint64_t text_page_end;    /* ... and of its last page */
    char file[4096];           /* what was opened */
} ms_relf;

/* Machine and class of an ELF file (e.g. /proc/PID/exe). 0, or -1 with err. */
int ms_relf_ident(const char *file, int *machine, int *elfclass, char *err, size_t errlen);
/* Opens the module mapped from `path` in pid (bias from its mappings). 0 or -1 with err. */
int ms_relf_open(int pid, const ms_rmaps *maps, const char *path, ms_relf *out, char *err,
                 size_t errlen);
/* Address in the process of a defined dynamic symbol; 0 if absent. -1 with err when the
 * file cannot be read or is malformed. */
int ms_relf_sym(const ms_relf *e, const char *name, uint64_t *addr, char *err, size_t errlen);

/* pread/pwrite of the process's memory. 0, or -1 with err. */
int ms_rmem_read(int pid, uint64_t addr, void *buf, size_t len, char *err, size_t errlen);
int ms_rmem_write(int pid, uint64_t addr, const void *buf, size_t len, char *err, size_t errlen);

/* The state an attached agent exports (include/memsight/attach.h), read from its memory:
 * 1 and *st when libmemsight.so is loaded and shows one, 0 when it is not loaded, -1
 * with err when it cannot be read. */
struct memsight_attach_state;
int ms_rattach_state(int pid, struct memsight_attach_state *st, char *err, size_t errlen);
/* The same, and the state's address in the process (*addr; 0 for an agent without one),
 * for reading it again cheaply with ms_rattach_read while waiting for an answer. */
int ms_rattach_state_at(int pid, struct memsight_attach_state *st, uint64_t *addr, char *err,
                        size_t errlen);
/* Reads the state at addr (either layout version); 0, or -1 with err. */
int ms_rattach_read(int pid, uint64_t addr, struct memsight_attach_state *st, char *err,
                    size_t errlen);

#endif
