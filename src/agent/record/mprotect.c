/* mprotect interposer: a runtime that reserves address space with PROT_NONE commits and
 * releases pieces of it with mprotect; the region table (mmap.c) follows, moving pieces
 * between kind mmap and kind reserved. Runs inside the target: no malloc, no lock here. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/record/record.h"

#define MS_EXPORT __attribute__((visibility("default")))

static int ms_sys_mprotect(void *a, size_t len, int prot)
{
    /* glibc's mprotect is this system call alone; syscall() sets errno on failure */
    return (int)syscall(SYS_mprotect, a, len, prot);
}

MS_EXPORT int mprotect(void *a, size_t len, int prot)
{
    /* Same rule as mmap: only the program's own calls are followed; the agent's and the
     * real allocator's (busy) are not, nor calls before the agent is ready. */
    if (!ms_init() || ms_self.busy != 0)
        return ms_sys_mprotect(a, len, prot);
    ms_enter();
    int rc = ms_sys_mprotect(a, len, prot);
    if (rc == 0 && len) {
        int saved = errno;
        uint64_t plen = ((uint64_t)len + 4095) & ~4095ull;
        ms_region_protect((uint64_t)(uintptr_t)a, plen,
                          (prot & (PROT_READ | PROT_WRITE | PROT_EXEC)) != 0);
        errno = saved;
    }
    ms_leave();
    return rc;
}
