/* libunwind backend of the unwinder (unwind_libunwind.h): unw_backtrace with a
 * per-thread cache. Runs inside the target: libunwind's local unwinding does not malloc. */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "agent/unwind_libunwind.h"

int ms_lu_available(void) { return 1; }
void ms_lu_init(void) { unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD); }
void ms_lu_flush(void) { unw_flush_cache(unw_local_addr_space, 0, 0); }
int ms_lu_backtrace(void **buf, int n) { return unw_backtrace(buf, n); }
