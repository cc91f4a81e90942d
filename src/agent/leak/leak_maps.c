/* /proc/self/maps for the leak scan, read with raw system calls (the scan child may not
 * call malloc or stdio: another thread may have held their locks at fork), and the
 * checked view: a word is read only if its page is mapped readable and not a device. */
#define _GNU_SOURCE
#include "agent/leak/leak_maps.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static size_t parse_hex(const char *s, size_t len, size_t i, uint64_t *v)
{
    uint64_t x = 0;
    size_t start = i;
    while (i < len && hexval(s[i]) >= 0 && i - start < 16) {
        x = (x << 4) | (uint64_t)hexval(s[i]);
        i++;
    }
    *v = x;
    return i == start ? 0 : i;
}

static int starts(const char *s, size_t len, const char *p)
{
    size_t n = strlen(p);
    return len >= n && memcmp(s, p, n) == 0;
}

int ms_lk_maps_parse_line(const char *s, size_t len, ms_lk_map *out)
{
    uint64_t lo, hi;
    size_t i = parse_hex(s, len, 0, &lo);
    if (!i || i >= len || s[i] != '-')
        return 0;
    i = parse_hex(s, len, i + 1, &hi);
    if (!i || i + 5 > len || s[i] != ' ' || hi <= lo)
        return 0;
    i++;
    uint32_t f = 0;
    if (s[i] == 'r')
        f |= MS_LKM_R;
    if (s[i + 1] == 'w')
        f |= MS_LKM_W;
    if (s[i + 2] == 'x')
        f |= MS_LKM_X;
    i += 4;
    while (i < len && s[i] == ' ')
        i++;
    /* offset, dev, inode, then the path after spaces */
    for (int field = 0; field < 3; field++) {
        while (i < len && s[i] != ' ')
            i++;
        while (i < len && s[i] == ' ')
            i++;
    }
    const char *path = s + i;
    size_t plen = len - i;
    if (starts(path, plen, "/dev/") && !starts(path, plen, "/dev/zero"))
        f |= MS_LKM_SKIP;
    if (starts(path, plen, "[vvar") || starts(path, plen, "[vsyscall]"))
        f |= MS_LKM_SKIP;
    if (starts(path, plen, "[stack]"))
        f |= MS_LKM_STACK;
    while (plen && (path[plen - 1] == '\n' || path[plen - 1] == ' '))
        plen--;
    if (plen == 0 || starts(path, plen, "[heap]") || starts(path, plen, "[anon"))
        f |= MS_LKM_ANON;
    else if (path[0] == '/')
        f |= MS_LKM_FILE;
    out->lo = lo;
    out->hi = hi;
    out->flags = f;
    out->reserved = 0;
    return 1;
}

int ms_lk_maps_read(ms_lk_maps *maps)
{
    maps->n = 0;
    maps->truncated = 0;
    long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    char buf[8192];
    size_t have = 0;
    for (;;) {
        long r = syscall(SYS_read, (int)fd, buf + have, sizeof buf - have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            syscall(SYS_close, (int)fd);
            return -e;
        }
        have += (size_t)r;
        size_t start = 0;
        for (size_t i = 0; i < have; i++) {
            if (buf[i] != '\n')
                continue;
            ms_lk_map m;
            if (ms_lk_maps_parse_line(buf + start, i - start, &m)) {
                if (maps->n < maps->cap)
                    maps->m[maps->n++] = m;
                else
                    maps->truncated++;
            }
            start = i + 1;
        }
        if (r == 0)
            break;
        if (start == 0 && have == sizeof buf) {
            have = 0; /* an absurdly long line: drop it */
            continue;
        }
        memmove(buf, buf + start, have - start);
        have -= start;
    }
    syscall(SYS_close, (int)fd);
    return 0;
}

const ms_lk_map *ms_lk_maps_find(const ms_lk_maps *maps, uint64_t addr)
{
    size_t lo = 0, hi = maps->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (maps->m[mid].hi <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < maps->n && maps->m[lo].lo <= addr)
        return &maps->m[lo];
    return NULL;
}

int ms_lk_maps_own(ms_lk_maps *maps, uint64_t lo, uint64_t hi)
{
    if (maps->nown >= MS_LK_MAX_OWN)
        return -1;
    maps->own_lo[maps->nown] = lo;
    maps->own_hi[maps->nown] = hi;
    maps->nown++;
    return 0;
}

static const void *view(const ms_lk_maps *maps, uint64_t addr, uint64_t len, uint64_t *avail,
                        uint32_t need)
{
    for (size_t i = 0; i < maps->nown; i++) {
        if (addr >= maps->own_lo[i] && addr < maps->own_hi[i]) {
            uint64_t n = maps->own_hi[i] - addr;
            *avail = n < len ? n : len;
            return NULL;
        }
        if (maps->own_lo[i] > addr && maps->own_lo[i] - addr < len)
            len = maps->own_lo[i] - addr; /* stop before it */
    }
    if (maps->nagent) {
        /* the last agent range starting at or below addr, and the one after it */
        size_t lo = 0, hi = maps->nagent;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (maps->agent_lo[mid] <= addr)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > 0 && addr < maps->agent_hi[lo - 1]) {
            uint64_t n = maps->agent_hi[lo - 1] - addr;
            *avail = n < len ? n : len;
            return NULL;
        }
        if (lo < maps->nagent && maps->agent_lo[lo] - addr < len)
            len = maps->agent_lo[lo] - addr; /* stop before it */
    }
    const ms_lk_map *m = ms_lk_maps_find(maps, addr);
    if (m && (m->flags & need) == need && !(m->flags & MS_LKM_SKIP)) {
        uint64_t n = m->hi - addr;
        *avail = n < len ? n : len;
        return (const void *)(uintptr_t)addr;
    }
    /* skip to the next mapping (or the whole request) */
    uint64_t next = addr + len;
    if (m) {
        next = m->hi;
    } else {
        size_t lo = 0, hi = maps->n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (maps->m[mid].lo <= addr)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < maps->n)
            next = maps->m[lo].lo;
    }
    uint64_t n = next > addr ? next - addr : len;
    *avail = n < len ? n : len;
    return NULL;
}

const void *ms_lk_maps_view(void *ctx, uint64_t addr, uint64_t len, uint64_t *avail)
{
    return view(ctx, addr, len, avail, MS_LKM_R);
}

const void *ms_lk_maps_view_w(void *ctx, uint64_t addr, uint64_t len, uint64_t *avail)
{
    return view(ctx, addr, len, avail, MS_LKM_R | MS_LKM_W);
}

int ms_lk_maps_is_vtable(void *ctx, uint64_t addr)
{
    const ms_lk_maps *maps = ctx;
    const ms_lk_map *m = ms_lk_maps_find(maps, addr);
    uint32_t need = MS_LKM_R | MS_LKM_FILE;
    if (!m || (m->flags & need) != need || (m->flags & MS_LKM_SKIP) || m->hi - addr < 8)
        return 0;
    uint64_t end = m->hi - addr < 20 * 8 ? m->hi : addr + 20 * 8;
    unsigned fns = 0;
    for (uint64_t a = addr; a + 8 <= end; a += 8) {
        uint64_t avail = 0, w;
        const void *p = view(maps, a, 8, &avail, MS_LKM_R);
        if (!p || avail < 8)
            return 0;
        memcpy(&w, p, 8);
        if (w == 0)
            continue; /* an empty slot (a pure virtual may be one) */
        const ms_lk_map *f = ms_lk_maps_find(maps, w);
        if (!f || (f->flags & (MS_LKM_X | MS_LKM_FILE)) != (MS_LKM_X | MS_LKM_FILE))
            return 0; /* not a function of a loaded module */
        if (++fns == 2)
            return 1;
    }
    return 0;
}
