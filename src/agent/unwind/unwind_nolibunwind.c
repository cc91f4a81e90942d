/* Built where the target has no libunwind (unwind_libunwind.h): unwind=libunwind is not
 * available and walks the cached CFI unwinder cannot finish fall back to frame pointers
 * (META unwinder says which unwinder ran). Runs inside the target. */
#include "agent/unwind/unwind_libunwind.h"

int ms_lu_available(void) { return 0; }
void ms_lu_init(void) {}
void ms_lu_flush(void) {}
void ms_lu_no_fds(void) {}
int ms_lu_backtrace(void **buf, int n)
{
    (void)buf;
    (void)n;
    return -1;
}
