/* Recording without a header (sample=, min_size=, and every mode when the program's
 * allocator is not the C library's): a recorded block is the allocator's block as it is,
 * its live entry found through the address table. The commit may call out: the sampled
 * modes run no leak scan, which is what the header path's store-only commit protects (no
 * copy of the address left in the agent's dead frames); in full mode over another
 * allocator a scan may find such a copy and call a lost block reachable.
 * Runs inside the target with the re-entrancy flag raised: no malloc. */
#include "agent/record/record_addr_hot.h"

void *ms_record_commit_addr(void *p, size_t size, const ms_rec_prep *rp)
{
    return ms_record_commit_addr_at(p, size, rp);
}

int ms_forget_addr(const void *p, size_t *size)
{
    return ms_forget_addr_at(p, size);
}

void ms_forget_addr_stale(uint32_t idx)
{
    MS_HEALTH_INC(foreign_frees);
    ms_forget_addr_idx(idx, NULL);
}
