/* The agent's newest snapshot of a watched process (watch_agent.h). Never prints. */
#include "analysis/watch_agent.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/snapshot.h"

ms_snapshot *ms_watch_agent_newer(ms_watch_agent *a, const char *dir, int pid, char *err,
                                  size_t errlen)
{
    err[0] = 0;
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    char prefix[32], best[256] = "";
    long best_seq = -1;
    int pl = snprintf(prefix, sizeof prefix, "memsight-%d-", pid);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        char *end;
        if (strncmp(e->d_name, prefix, (size_t)pl) || l < 6 || strcmp(e->d_name + l - 6, ".msnap") ||
            l >= sizeof best)
            continue;
        long seq = strtol(e->d_name + pl, &end, 10);
        if (end == e->d_name + pl || *end != '-' || seq <= best_seq)
            continue;
        best_seq = seq;
        memcpy(best, e->d_name, l + 1);
    }
    closedir(d);
    if (best_seq < 0)
        return NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, best);
    struct stat st;
    if (stat(path, &st) != 0 || (!strcmp(best, a->name) && st.st_mtim.tv_sec == a->mtime.tv_sec &&
                                 st.st_mtim.tv_nsec == a->mtime.tv_nsec))
        return NULL;
    memcpy(a->name, best, strlen(best) + 1); /* a bad file is said once, not every sample */
    a->mtime = st.st_mtim;
    return ms_snapshot_read(path, err, errlen);
}
