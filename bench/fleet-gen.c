/* Makes a fleet out of one real snapshot for bench/fleet.sh: HOSTS hosts x N snapshots
 * each, with the hostname, pid, time, sequence and labels of each (version, model and
 * page vary by host), and the live counters of every 7th stack growing with the
 * snapshot's sequence on hosts of the newest version (a leak for the fleet queries to
 * find). Not a test: it writes files and prints how many.
 * usage: fleet-gen BASE.msnap HOSTS N OUTDIR */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/export.h"
#include "analysis/merge.h"
#include "core/snapshot.h"

static void set_meta(ms_snapshot *s, const char *k, const char *v)
{
    for (size_t i = 0; i < s->nmeta; i++)
        if (!strcmp(s->meta[i].key, k)) {
            free(s->meta[i].value);
            s->meta[i].value = strdup(v);
            return;
        }
    s->meta = realloc(s->meta, (s->nmeta + 1) * sizeof *s->meta);
    s->meta[s->nmeta].key = strdup(k);
    s->meta[s->nmeta].value = strdup(v);
    s->nmeta++;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: fleet-gen BASE.msnap HOSTS N OUTDIR\n");
        return 2;
    }
    char err[512];
    ms_snapshot *s = ms_snapshot_load(argv[1], err, sizeof err);
    if (!s) {
        fprintf(stderr, "fleet-gen: %s\n", err);
        return 1;
    }
    int hosts = atoi(argv[2]), n = atoi(argv[3]);
    static const char *const versions[] = {"3.1.0", "3.2.0", "3.3.0"};
    static const char *const pages[] = {"home", "search", "cart", "checkout", "settings"};
    ms_snap_counters *orig = malloc(s->nstacks * sizeof *orig);
    for (size_t i = 0; i < s->nstacks; i++)
        orig[i] = s->stacks[i].c;
    mkdir(argv[4], 0700);
    uint64_t t0 = 1764547200ull * 1000000000ull; /* a fixed day: repeatable files */
    size_t files = 0;
    for (int h = 0; h < hosts; h++) {
        char dir[4096], v[256];
        snprintf(dir, sizeof dir, "%s/host-%04d", argv[4], h);
        mkdir(dir, 0700);
        snprintf(v, sizeof v, "host-%04d", h);
        set_meta(s, "hostname", v);
        snprintf(v, sizeof v, "%d", 10000 + h);
        set_meta(s, "pid", v);
        snprintf(v, sizeof v, "version=%s;model=model-%02d;page=%s", versions[h % 3], h % 20,
                 pages[h % 5]);
        set_meta(s, "labels", v);
        set_meta(s, "reason", "interval");
        for (int k = 0; k < n; k++) {
            for (size_t i = 0; i < s->nstacks; i++) {
                s->stacks[i].c = orig[i];
                if (h % 3 == 2 && i % 7 == 0) { /* the newest version leaks here */
                    s->stacks[i].c.live_bytes += (uint64_t)k * 4096;
                    s->stacks[i].c.live_blocks += (uint64_t)k;
                    s->stacks[i].c.alloc_bytes += (uint64_t)k * 4096;
                    s->stacks[i].c.alloc_blocks += (uint64_t)k;
                }
            }
            snprintf(v, sizeof v, "%d", k);
            set_meta(s, "seq", v);
            snprintf(v, sizeof v, "%llu", (unsigned long long)(t0 + (uint64_t)k * 60000000000ull + (uint64_t)h));
            set_meta(s, "snapshot_ns", v);
            char path[4200];
            snprintf(path, sizeof path, "%s/memsight-%d-%04d-interval.msnap", dir, 10000 + h, k);
            if (ms_merge_write(s, path, err, sizeof err) != 0) {
                fprintf(stderr, "fleet-gen: %s\n", err);
                return 1;
            }
            files++;
        }
    }
    printf("%zu snapshots of %zu stacks\n", files, s->nstacks);
    free(orig);
    ms_snapshot_free(s);
    return 0;
}
