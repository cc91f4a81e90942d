/* Robustness: a tracked block whose memory the program unmapped behind the allocator's
 * back, a tracked mmap region made unreadable (PROT_NONE), and a file mapping whose file
 * was truncated under it (reading it raises SIGBUS) must not break a scan: unreadable
 * bytes are skipped, faulting pages are replaced by zeros in the scan's child, the
 * block still counts (reachable from a global), a block held only from the PROT_NONE
 * region is definitely lost, and one held from the file mapping's written page is not. */
#include <fcntl.h>
#include <sys/mman.h>

#include "lk_common.h"

void *g_big;
static uintptr_t region_inv, file_inv;

__attribute__((noinline)) static void run(void)
{
    /* 1 MiB: the allocator serves it with its own mapping; the pages under it are
     * unmapped last (below), so that the program's other mappings cannot be placed in
     * the hole and make part of it readable */
    char *p = lk_alloc(1 << 20, 'u');
    g_big = p;
    void **r = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED)
        _exit(2);
    r[5] = lk_alloc(40, 'h');
    mprotect(r, 8192, PROT_NONE);
    region_inv = ~(uintptr_t)r;

    char path[] = "/tmp/lk_unmapped.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || ftruncate(fd, 3 * 4096) != 0)
        _exit(4);
    void **f = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (f == MAP_FAILED)
        _exit(5);
    f[1] = lk_alloc(56, 'f'); /* page 0 becomes the program's private copy */
    if (ftruncate(fd, 4096) != 0) /* pages 1 and 2 now lie past the end of the file */
        _exit(6);
    close(fd);
    unlink(path);
    file_inv = ~(uintptr_t)f;
    uintptr_t page = (uintptr_t)p & ~(uintptr_t)4095;
    if (munmap((void *)page, (1 << 20) + 4096) != 0)
        _exit(3);
}

int main(void)
{
    run();
    lk_clear_stack();
    lk_check();
    lk_say("EXPECT definite=1/40 indirect=0/0 possible=0/0 reachable=2/1048632\n");
    /* MS_LEAK_F_READ_ERRORS: unreadable memory was skipped */
    lk_say("FLAGS 2\n");
    /* the unmapped block; the PROT_NONE region is kind reserved, not a root: never read */
    lk_say("STAT skipped_bytes>=%d\n", 1 << 20);
    lk_say("STAT faults>=2\n");
    (void)file_inv;
    return 0;
}
