/* The bundled demo for `make demo`: a tiny word-frequency indexer. It parses a
 * generated text into a hash table (kept until exit on purpose), keeps an LRU cache of
 * recent lookups, and leaks a little: a forgotten copy of every 100th line and the
 * cache's evicted entries' keys. memsight should point at each of these. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---------------------------------------------------------------------------
 * The index: word -> count, chained hash table. Kept alive until exit.
 * ------------------------------------------------------------------------- */
typedef struct entry {
    struct entry *next;
    unsigned count;
    char word[];
} entry;

typedef struct index {
    entry **buckets;
    size_t nbuckets;
    size_t nwords;
} index_t;

static uint64_t hash_word(const char *w, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)w[i]) * 1099511628211ull;
    return h;
}

static entry *new_entry(const char *w, size_t n)
{
    entry *e = malloc(sizeof *e + n + 1);
    if (!e)
        abort();
    memcpy(e->word, w, n);
    e->word[n] = 0;
    e->count = 0;
    e->next = NULL;
    return e;
}

static inline void bump(index_t *ix, const char *w, size_t n)
{
    entry **b = &ix->buckets[hash_word(w, n) % ix->nbuckets];
    for (entry *e = *b; e; e = e->next)
        if (strlen(e->word) == n && !memcmp(e->word, w, n)) {
            e->count++;
            return;
        }
    entry *e = new_entry(w, n);
    e->count = 1;
    e->next = *b;
    *b = e;
    ix->nwords++;
}

/* ---------------------------------------------------------------------------
 * An LRU cache of recent lookups (a small ring). Evicted keys are never freed: the
 * deliberate leak the demo report should show as definitely lost / growing.
 * ------------------------------------------------------------------------- */
#define CACHE_SLOTS 64
static char *cache[CACHE_SLOTS];
static unsigned cache_next;

__attribute__((noinline)) static void cache_remember(const char *w)
{
    char *copy = strdup(w);
    if (!copy)
        abort();
    cache[cache_next++ % CACHE_SLOTS] = copy; /* the old pointer is simply overwritten */
}

static unsigned cache_count_prefix(const char *prefix)
{
    unsigned n = 0;
    for (unsigned i = 0; i < CACHE_SLOTS; i++)
        if (cache[i] && !strncmp(cache[i], prefix, strlen(prefix)))
            n++;
    return n;
}

/* ---------------------------------------------------------------------------
 * The parser: splits lines into words, indexes them; every 100th line is copied into
 * history pointer that forgets the previous copy each time (another leak).
 * ------------------------------------------------------------------------- */
static char *volatile last_history;

__attribute__((noinline)) static void parse_line(index_t *ix, const char *line, unsigned lineno)
{
    if (lineno % 100 == 0) {
        char *history = malloc(strlen(line) + 1);
        if (!history)
            abort();
        strcpy(history, line);
        last_history = history; /* the previous copy is lost: leaked */
    }
    /* A scratch copy for tokenizing, freed at once: cumulative counts show it. */
    char *volatile scratch = malloc(strlen(line) + 1);
    if (!scratch)
        abort();
    strcpy(scratch, line);
    free(scratch);
    const char *p = line;
    while (*p) {
        while (*p == ' ')
            p++;
        const char *start = p;
        while (*p && *p != ' ')
            p++;
        if (p > start)
            bump(ix, start, (size_t)(p - start));
    }
}

static const char *const vocabulary[] = {
    "memory", "leak", "stack", "heap", "arena", "page", "cache", "block", "pointer",
    "free", "malloc", "mmap", "thread", "snapshot", "report", "symbol", "frame", "inline",
};
#define NVOCAB (sizeof vocabulary / sizeof vocabulary[0])

static void make_line(char *buf, size_t len, unsigned seed)
{
    size_t o = 0;
    unsigned x = seed * 2654435761u + 1;
    for (int w = 0; w < 8; w++) {
        x = x * 1103515245u + 12345u;
        const char *v = vocabulary[(x >> 8) % NVOCAB];
        int n = snprintf(buf + o, len - o, "%s%s%u", w ? " " : "", v, (x >> 20) % 50);
        if (n < 0 || (size_t)n >= len - o)
            break;
        o += (size_t)n;
    }
}

/* Global, so that the index stays reachable until exit (kept on purpose, not leaked). */
static index_t the_index;

int main(int argc, char **argv)
{
    unsigned lines = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 20000;
    index_t *ix = &the_index;
    ix->nbuckets = 4096;
    ix->buckets = calloc(ix->nbuckets, sizeof *ix->buckets);
    /* A scratch arena mapped directly, kept for the program's life. */
    size_t arena_size = 1 << 20;
    char *arena = mmap(NULL, arena_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
    if (!ix->buckets || arena == MAP_FAILED)
        return 1;
    char line[256];
    for (unsigned i = 1; i <= lines; i++) {
        make_line(line, sizeof line, i);
        parse_line(ix, line, i);
        if (i % 50 == 0)
            cache_remember(line);
        memcpy(arena + (i % 4096) * 256, line, sizeof line);
    }
    printf("indexed %u lines, %zu distinct words, %u cached lines start with 'memory'\n",
           lines, ix->nwords, cache_count_prefix("memory"));
    return 0;
}
