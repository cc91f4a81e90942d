/* Ground truth for the sampling tests: ~1.6 million allocations of 16 B to 1 MiB from six
 * known functions, a deterministic subset kept live until exit (~150 MB), the rest freed
 * in interleaved order. Prints the exact live bytes and blocks of every function as JSON.
 * Never frees a kept block; never depends on the agent. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINL __attribute__((noinline, noclone))

enum { S_SMALL, S_MEDIUM, S_LARGE, S_HUGE, S_CHURN, S_REALLOC, NSITES };
static const char *site_name[NSITES] = {"sm_site_small", "sm_site_medium", "sm_site_large",
                                        "sm_site_huge",  "sm_site_churn",  "sm_site_realloc"};
static uint64_t live_bytes[NSITES], live_blocks[NSITES], calls;

static uint64_t rng = 0x2545F4914F6CDD1DULL;
static uint64_t rnd(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1DULL;
}
static size_t between(size_t lo, size_t hi) { return lo + (size_t)(rnd() % (hi - lo + 1)); }

/* Each site allocates directly, so its frame is the innermost one of the stack; the
 * volatile sink stops the compiler from turning the call into a tail call. */
static void *volatile sink;
NOINL void *sm_site_small(size_t n) { void *p = malloc(n); sink = p; return p; }
NOINL void *sm_site_medium(size_t n) { void *p = calloc(1, n); sink = p; return p; }
NOINL void *sm_site_large(size_t n) { void *p = malloc(n); sink = p; return p; }
NOINL void *sm_site_huge(size_t n) { void *p = malloc(n); sink = p; return p; }
NOINL void *sm_site_churn(size_t n) { void *p = malloc(n); sink = p; return p; }
NOINL void *sm_site_realloc(size_t n)
{
    void *p = malloc(64);
    calls++;
    if (!p)
        return NULL;
    memset(p, 1, 64);
    void *q = realloc(p, n);
    sink = q;
    return q;
}

#define RING 4096
static void *ring[RING];
static size_t ring_pos;

static void drop_later(void *p)
{
    free(ring[ring_pos]);
    ring[ring_pos] = p;
    ring_pos = (ring_pos + 1) % RING;
}

int main(void)
{
    /* allocations per site and one-in-keep kept */
    static const uint64_t count[NSITES] = {1200000, 19500, 1100, 210, 300000, 20000};
    static const uint64_t keep[NSITES] = {4, 4, 4, 4, 0, 4};
    uint64_t left[NSITES], total_left = 0;
    for (int s = 0; s < NSITES; s++)
        total_left += left[s] = count[s];
    static void *kept[400000];
    size_t nkept = 0;
    while (total_left) {
        uint64_t r = rnd() % total_left;
        int s = 0;
        while (r >= left[s]) {
            r -= left[s];
            s++;
        }
        left[s]--;
        total_left--;
        size_t n;
        void *p;
        switch (s) {
        case S_SMALL: n = between(16, 256); p = sm_site_small(n); break;
        case S_MEDIUM: n = between(257, 16384); p = sm_site_medium(n); break;
        case S_LARGE: n = between(16385, 131072); p = sm_site_large(n); break;
        case S_HUGE: n = between(131073, 1048576); p = sm_site_huge(n); break;
        case S_CHURN: n = between(16, 1024); p = sm_site_churn(n); break;
        default: n = between(65, 8192); p = sm_site_realloc(n); break;
        }
        calls++;
        if (!p) {
            fprintf(stderr, "sm_mix: out of memory\n");
            return 1;
        }
        if (keep[s] && rnd() % keep[s] == 0 && nkept < sizeof kept / sizeof kept[0]) {
            kept[nkept++] = p;
            live_bytes[s] += n;
            live_blocks[s]++;
        } else {
            drop_later(p);
        }
    }
    for (size_t i = 0; i < RING; i++)
        free(ring[i]);
    uint64_t total = 0;
    printf("{\"allocation_calls\": %llu, \"sites\": {", (unsigned long long)calls);
    for (int s = 0; s < NSITES; s++) {
        total += live_bytes[s];
        printf("%s\"%s\": {\"live_bytes\": %llu, \"live_blocks\": %llu}", s ? ", " : "",
               site_name[s], (unsigned long long)live_bytes[s],
               (unsigned long long)live_blocks[s]);
    }
    printf("}, \"total_live_bytes\": %llu}\n", (unsigned long long)total);
    fflush(stdout);
    return 0; /* the kept blocks stay live at exit on purpose */
}
