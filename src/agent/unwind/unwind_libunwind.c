/* libunwind backend of the unwinder (unwind_libunwind.h): unw_backtrace with a
 * per-thread cache, and libunwind's memory validation without descriptors.
 * Runs inside the target: libunwind's local unwinding does not malloc. */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <errno.h>
#include <libunwind.h>
#include <stdarg.h>
#include <stdint.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent/platform/got_hook.h"
#include "agent/unwind/unwind_libunwind.h"

int ms_lu_available(void) { return 1; }
void ms_lu_init(void) { unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD); }
void ms_lu_flush(void) { unw_flush_cache(unw_local_addr_space, 0, 0); }
int ms_lu_backtrace(void **buf, int n) { return unw_backtrace(buf, n); }

/* ===========================================================================
 * No descriptors. libunwind checks an address it is unsure of (a guessed frame, a
 * signal frame) with mincore or msync, then by writing one byte from it into a pipe it
 * opens at its first initialisation and keeps: two descriptors the program would see,
 * pass to its children and could close. In libunwind's own GOT, pipe2 hands out two
 * numbers above any descriptor the kernel can give (no pipe is made), and read, write,
 * close and syscall(SYS_write) on them are answered here: the byte is read by the
 * kernel as the write would read it (lu_check), which fails with EFAULT where the write
 * would.
 * Every other call goes to the C library as before.
 * ========================================================================= */
#define LU_FD_R 0x7ffffff0 /* beyond fs.nr_open's ceiling: never a real descriptor */
#define LU_FD_W 0x7ffffff1

static int lu_fake(long fd) { return fd == LU_FD_R || fd == LU_FD_W; }

/* 1 if the byte at addr can be read (the pipe write's answer), else -1 with EFAULT. A
 * futex wait reads the aligned word holding the byte (the same page) as the kernel's copy
 * for the write would, and with a zero timeout never waits: EAGAIN (another value) or
 * ETIMEDOUT (this one) when it could read, EFAULT when not. No descriptor, nothing
 * changed, allowed under any seccomp filter a threaded program runs with, emulated by
 * qemu-user (which has no process_vm_readv). */
static long lu_check(uintptr_t addr)
{
    struct timespec zero = {0, 0};
    long r = syscall(SYS_futex, (void *)(addr & ~(uintptr_t)3), FUTEX_WAIT_PRIVATE, 0, &zero,
                     NULL, 0);
    if (r == 0 || errno == EAGAIN || errno == ETIMEDOUT || errno == EINTR)
        return 1;
    errno = EFAULT;
    return -1;
}

static int lu_pipe2(int fds[2], int flags)
{
    (void)flags;
    fds[0] = LU_FD_R;
    fds[1] = LU_FD_W;
    return 0;
}

static ssize_t lu_read(int fd, void *buf, size_t n)
{
    if (fd == LU_FD_R) { /* the empty pipe of a non-blocking read */
        errno = EAGAIN;
        return -1;
    }
    return read(fd, buf, n);
}

static ssize_t lu_write(int fd, const void *buf, size_t n)
{
    if (fd == LU_FD_W)
        return n ? lu_check((uintptr_t)buf) : 0;
    return write(fd, buf, n);
}

static int lu_close(int fd)
{
    return lu_fake(fd) ? 0 : close(fd);
}

static long lu_syscall(long nr, ...)
{
    va_list ap;
    long a[6];
    va_start(ap, nr);
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    if (nr == SYS_write && a[0] == LU_FD_W)
        return a[2] ? lu_check((uintptr_t)a[1]) : 0;
    return syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

void ms_lu_no_fds(void)
{
    static const char *const names[] = {"pipe2", "read", "write", "close", "syscall"};
    static void *const fns[] = {(void *)lu_pipe2, (void *)lu_read, (void *)lu_write,
                                (void *)lu_close, (void *)lu_syscall};
    ms_got_patch_module((const void *)unw_backtrace, names, fns, sizeof names / sizeof names[0]);
}
