/* Parser for maps/smaps/smaps_rollup text: a single pass, names kept in place, one
 * array grown by doubling. Never trusts the text: every read is bounded by the line's
 * end, numbers saturate, unknown or malformed lines are skipped. */
#include "core/proc_smaps.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const field_names[MS_SM_NFIELDS] = {
    [MS_SM_SIZE] = "Size",
    [MS_SM_KERNEL_PAGE_SIZE] = "KernelPageSize",
    [MS_SM_MMU_PAGE_SIZE] = "MMUPageSize",
    [MS_SM_RSS] = "Rss",
    [MS_SM_PSS] = "Pss",
    [MS_SM_PSS_DIRTY] = "Pss_Dirty",
    [MS_SM_PSS_ANON] = "Pss_Anon",
    [MS_SM_PSS_FILE] = "Pss_File",
    [MS_SM_PSS_SHMEM] = "Pss_Shmem",
    [MS_SM_SHARED_CLEAN] = "Shared_Clean",
    [MS_SM_SHARED_DIRTY] = "Shared_Dirty",
    [MS_SM_PRIVATE_CLEAN] = "Private_Clean",
    [MS_SM_PRIVATE_DIRTY] = "Private_Dirty",
    [MS_SM_REFERENCED] = "Referenced",
    [MS_SM_ANONYMOUS] = "Anonymous",
    [MS_SM_KSM] = "KSM",
    [MS_SM_LAZYFREE] = "LazyFree",
    [MS_SM_ANON_HUGE_PAGES] = "AnonHugePages",
    [MS_SM_SHMEM_PMD_MAPPED] = "ShmemPmdMapped",
    [MS_SM_FILE_PMD_MAPPED] = "FilePmdMapped",
    [MS_SM_SHARED_HUGETLB] = "Shared_Hugetlb",
    [MS_SM_PRIVATE_HUGETLB] = "Private_Hugetlb",
    [MS_SM_SWAP] = "Swap",
    [MS_SM_SWAP_PSS] = "SwapPss",
    [MS_SM_LOCKED] = "Locked",
};

const char *ms_smaps_field_name(enum ms_smaps_field f)
{
    return (unsigned)f < MS_SM_NFIELDS ? field_names[f] : "?";
}

/* Field lookup by name: the name's length and first letter narrow it to one or two
 * candidates, so a line costs a couple of comparisons. */
static int field_lookup(const char *s, size_t n)
{
    static signed char first[MS_SM_NFIELDS];
    static unsigned char lens[MS_SM_NFIELDS];
    static int init;
    if (!init) {
        for (int i = 0; i < MS_SM_NFIELDS; i++) {
            first[i] = field_names[i][0];
            lens[i] = (unsigned char)strlen(field_names[i]);
        }
        init = 1;
    }
    for (int i = 0; i < MS_SM_NFIELDS; i++)
        if (lens[i] == n && first[i] == s[0] && memcmp(field_names[i], s, n) == 0)
            return i;
    return -1;
}

static int grow(ms_smaps *sm)
{
    size_t ncap = sm->cap ? sm->cap * 2 : 256;
    if (ncap > SIZE_MAX / sizeof(ms_vma))
        return -1;
    ms_vma *nv = realloc(sm->v, ncap * sizeof(ms_vma));
    if (!nv)
        return -1;
    sm->v = nv;
    sm->cap = ncap;
    return 0;
}

static int is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Parses a header line "start-end perms offset maj:min inode   name" in [p, e), where
 * *e may be overwritten with NUL. Returns 1 and fills v, or 0 if it is not a header. */
static int parse_header(char *p, char *e, ms_vma *v)
{
    const char *q = p;
    uint64_t a, b, off, maj, min, ino;
    if (!ms_parse_hex(&q, e, &a, 0) || q >= e || *q != '-')
        return 0;
    q++;
    if (!ms_parse_hex(&q, e, &b, 0) || q >= e || *q != ' ')
        return 0;
    q++;
    if (e - q < 4)
        return 0;
    for (int i = 0; i < 4; i++) {
        char c = q[i];
        if (!(c == 'r' || c == 'w' || c == 'x' || c == 'p' || c == 's' || c == '-'))
            return 0;
        v->perms[i] = c;
    }
    v->perms[4] = '\0';
    q += 4;
    if (q >= e || *q != ' ')
        return 0;
    if (!ms_parse_hex(&q, e, &off, 0))
        return 0;
    if (!ms_parse_hex(&q, e, &maj, 0) || q >= e || *q != ':')
        return 0;
    q++;
    if (!ms_parse_hex(&q, e, &min, 0))
        return 0;
    if (!ms_parse_u64(&q, e, &ino))
        return 0;
    if (q < e && *q != ' ' && *q != '\t')
        return 0;
    while (q < e && (*q == ' ' || *q == '\t'))
        q++;
    v->start = a;
    v->end = b < a ? a : b;
    v->offset = off;
    v->dev_major = maj > UINT32_MAX ? UINT32_MAX : (uint32_t)maj;
    v->dev_minor = min > UINT32_MAX ? UINT32_MAX : (uint32_t)min;
    v->inode = ino;
    v->flags = 0;
    v->present = 0;
    v->vmflags = "";
    memset(v->kb, 0, sizeof v->kb);
    /* The name runs to the end of the line; it may contain spaces. */
    char *ne = e;
    static const char del[] = " (deleted)";
    if ((size_t)(ne - q) >= sizeof del - 1 && memcmp(ne - (sizeof del - 1), del, sizeof del - 1) == 0) {
        ne -= sizeof del - 1;
        v->flags |= MS_VMA_DELETED;
    }
    *ne = '\0';
    v->name = q;
    return 1;
}

int ms_smaps_parse(ms_smaps *sm, char *text, size_t len, char *err, size_t errlen)
{
    sm->n = 0;
    sm->present_any = 0;
    sm->bad_lines = 0;
    char *p = text, *end = text + len;
    ms_vma *cur = NULL;
    while (p < end) {
        char *e = memchr(p, '\n', (size_t)(end - p));
        if (!e)
            e = end; /* last line without a newline: *end is writable (see contract) */
        char *line = p;
        p = e < end ? e + 1 : end;
        if (e > line && e[-1] == '\r')
            e--;
        if (e == line)
            continue;
        if (is_hex(line[0])) {
            /* Field names start with an upper-case letter and the hex in headers is
             * lower case, but "A" to "F" would pass is_hex: try the header first. */
            if (sm->n == sm->cap) {
                if (grow(sm) != 0) {
                    snprintf(err, errlen, "smaps: out of memory at %zu mappings", sm->n);
                    return -1;
                }
                cur = sm->n ? &sm->v[sm->n - 1] : NULL; /* the array moved */
            }
            ms_vma *v = &sm->v[sm->n];
            char saved = e < end ? *e : '\0';
            if (parse_header(line, e, v)) {
                sm->n++;
                cur = v; /* valid until the next grow(), which only follows a header */
                continue;
            }
            if (e < end)
                *e = saved;
        }
        /* A counter line "Name:   value kB" or "VmFlags: rd wr ...". */
        char *colon = memchr(line, ':', (size_t)(e - line));
        if (!colon || colon == line) {
            sm->bad_lines++;
            continue;
        }
        if (!cur) {
            sm->bad_lines++;
            continue;
        }
        size_t nl = (size_t)(colon - line);
        int f = field_lookup(line, nl);
        if (f < 0) {
            if (nl == 7 && memcmp(line, "VmFlags", 7) == 0) {
                char *q = colon + 1;
                while (q < e && (*q == ' ' || *q == '\t'))
                    q++;
                *e = '\0';
                cur->vmflags = q;
            }
            continue; /* a field this parser does not know (THPeligible, newer ones) */
        }
        const char *q = colon + 1;
        uint64_t val;
        if (!ms_parse_u64(&q, e, &val)) {
            sm->bad_lines++;
            continue;
        }
        cur->kb[f] = val;
        cur->present |= 1u << f;
        cur->flags |= MS_VMA_HAS_STATS;
        sm->present_any |= 1u << f;
    }
    return 0;
}

int ms_smaps_read(ms_smaps *sm, int pid, enum ms_smaps_source src, char *err, size_t errlen)
{
    static const char *const files[] = {"maps", "smaps", "smaps_rollup"};
    char path[64];
    if (pid > 0)
        snprintf(path, sizeof path, "/proc/%d/%s", pid, files[src]);
    else
        snprintf(path, sizeof path, "/proc/self/%s", files[src]);
    int rc = ms_procbuf_read(&sm->buf, path, 0, err, errlen);
    if (rc != 0)
        return rc;
    if (ms_smaps_parse(sm, sm->buf.data, sm->buf.len, err, errlen) != 0)
        return -ENOMEM;
    return 0;
}

void ms_smaps_free(ms_smaps *sm)
{
    free(sm->v);
    ms_procbuf_free(&sm->buf);
    memset(sm, 0, sizeof *sm);
}

uint64_t ms_smaps_sum(const ms_smaps *sm, enum ms_smaps_field f)
{
    uint64_t s = 0;
    for (size_t i = 0; i < sm->n; i++)
        s = ms_sat_add(s, sm->v[i].kb[f]);
    return s;
}
