/* Merging snapshots of one program and writing the result as a snapshot file (see
 * merge.h and include/memsight/snapshot_format.h), written with the same snapshot writer
 * the agent uses. Tools only; never prints. */
#define _GNU_SOURCE
#include "analysis/merge.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/stack_agg.h"
#include "core/snapshot_write.h"

/* ---- merging ------------------------------------------------------------------------ */

static int same_module(const ms_module *a, const ms_module *b)
{
    if (a->build_id_len && b->build_id_len)
        return a->build_id_len == b->build_id_len &&
               !memcmp(a->build_id, b->build_id, a->build_id_len);
    return a->path && b->path && !strcmp(a->path, b->path);
}

static void module_range(const ms_module *m, uint64_t bias, uint64_t *lo, uint64_t *hi)
{
    *lo = UINT64_MAX;
    *hi = 0;
    for (uint32_t j = 0; j < m->nseg; j++) {
        uint64_t a = m->segs[j].vaddr + bias, b = a + m->segs[j].memsz;
        if (a < *lo)
            *lo = a;
        if (b > *hi)
            *hi = b;
    }
    if (*lo > *hi)
        *lo = *hi = bias;
}

static const char *base(const char *p)
{
    const char *b = p ? strrchr(p, '/') : NULL;
    return b ? b + 1 : p ? p : "";
}

static int add_kv(ms_snapshot *s, const char *k, const char *v)
{
    ms_kv *m = realloc(s->meta, (s->nmeta + 1) * sizeof *m);
    if (!m)
        return -1;
    s->meta = m;
    m[s->nmeta].key = strdup(k);
    m[s->nmeta].value = strdup(v ? v : "");
    if (!m[s->nmeta].key || !m[s->nmeta].value) {
        free(m[s->nmeta].key);
        free(m[s->nmeta].value);
        return -1;
    }
    s->nmeta++;
    return 0;
}

/* Function names an importer stored for a pc ("sym.<hex>") follow the pc to its place
 * in the merged address space. */
static int carry_name(ms_snapshot *out, const ms_snapshot *s, uint64_t pc, uint64_t npc)
{
    char k[40];
    snprintf(k, sizeof k, MS_AGG_SYM_PREFIX "%" PRIx64, pc);
    const char *name = ms_agg_meta(s, k);
    if (!name)
        return 0;
    snprintf(k, sizeof k, MS_AGG_SYM_PREFIX "%" PRIx64, npc);
    if (ms_agg_meta(out, k))
        return 0;
    return add_kv(out, k, name);
}

ms_snapshot *ms_merge(ms_snapshot *const *in, size_t n, const ms_merge_opts *o, char *err,
                      size_t errlen)
{
    if (n == 0) {
        snprintf(err, errlen, "merge needs at least one snapshot");
        return NULL;
    }
    const char *exe0 = ms_agg_meta(in[0], "exe");
    for (size_t i = 1; i < n && !(o && o->allow_different_programs); i++) {
        const char *e = ms_agg_meta(in[i], "exe");
        if (exe0 && e && strcmp(base(exe0), base(e)) != 0) {
            snprintf(err, errlen, "%s: a different program (%s) than %s (%s); "
                     "merge snapshots of one program",
                     in[i]->path ? in[i]->path : "?", e, in[0]->path ? in[0]->path : "?", exe0);
            return NULL;
        }
    }
    ms_snapshot *out = calloc(1, sizeof *out);
    size_t **modmap = calloc(n, sizeof *modmap); /* per input module: output index */
    ms_agg *keys = ms_agg_new();
    if (!out || !modmap || !keys)
        goto oom;
    out->version_major = MS_SNAP_VERSION_MAJOR;
    out->version_minor = MS_SNAP_VERSION_MINOR;

    /* modules: united; the first placement wins unless it overlaps one already placed */
    size_t capm = 0;
    uint64_t top = 0;
    for (size_t i = 0; i < n; i++) {
        modmap[i] = calloc(in[i]->nmodules + 1, sizeof **modmap);
        if (!modmap[i])
            goto oom;
        for (size_t j = 0; j < in[i]->nmodules; j++) {
            const ms_module *m = &in[i]->modules[j];
            size_t k;
            for (k = 0; k < out->nmodules; k++)
                if (same_module(&out->modules[k], m))
                    break;
            if (k == out->nmodules) {
                if (out->nmodules == capm) {
                    capm = capm ? capm * 2 : 16;
                    ms_module *nm = realloc(out->modules, capm * sizeof *nm);
                    if (!nm)
                        goto oom;
                    out->modules = nm;
                }
                ms_module *d = &out->modules[out->nmodules];
                *d = *m;
                d->path = strdup(m->path ? m->path : "");
                d->segs = malloc((m->nseg ? m->nseg : 1) * sizeof *d->segs);
                if (!d->path || !d->segs) {
                    free(d->path);
                    free(d->segs);
                    goto oom;
                }
                memcpy(d->segs, m->segs, m->nseg * sizeof *d->segs);
                out->nmodules++;
                uint64_t lo, hi;
                module_range(d, d->load_bias, &lo, &hi);
                int overlap = 0;
                for (size_t q = 0; q + 1 < out->nmodules; q++) {
                    uint64_t l2, h2;
                    module_range(&out->modules[q], out->modules[q].load_bias, &l2, &h2);
                    if (lo < h2 && l2 < hi)
                        overlap = 1;
                }
                if (overlap) {
                    uint64_t nb = (top + 0xffffffull) & ~0xffffffull;
                    d->load_bias = nb - (lo - d->load_bias);
                    module_range(d, d->load_bias, &lo, &hi);
                }
                if (hi > top)
                    top = hi;
            }
            modmap[i][j] = k;
        }
    }

    /* stacks: key = kind, flags and (module, offset) of every pc */
    size_t caps = 0;
    for (size_t i = 0; i < n; i++) {
        const ms_snapshot *s = in[i];
        for (size_t j = 0; j < s->nstacks; j++) {
            const ms_stack *st = &s->stacks[j];
            uint64_t *pcs = malloc((st->depth ? st->depth : 1) * sizeof *pcs);
            char *key = malloc((size_t)st->depth * 34 + 16);
            if (!pcs || !key) {
                free(pcs);
                free(key);
                goto oom;
            }
            char *kp = key + sprintf(key, "%u/%u", st->kind, st->flags & MS_STACKF_FIRST_IS_PC);
            for (uint32_t d = 0; d < st->depth; d++) {
                const ms_module *m = ms_agg_module_for_pc(s, st->pcs[d]);
                if (m) {
                    size_t mi = modmap[i][(size_t)(m - s->modules)];
                    uint64_t off = st->pcs[d] - m->load_bias;
                    pcs[d] = out->modules[mi].load_bias + off;
                    if (carry_name(out, s, st->pcs[d], pcs[d]) != 0) {
                        free(pcs);
                        free(key);
                        goto oom;
                    }
                    kp += sprintf(kp, ";%zx+%" PRIx64, mi, off);
                } else {
                    pcs[d] = st->pcs[d];
                    kp += sprintf(kp, ";@%" PRIx64, st->pcs[d]);
                }
            }
            size_t before = keys->nnames;
            long idx = ms_agg_intern(keys, key);
            free(key);
            if (idx < 0) {
                free(pcs);
                goto oom;
            }
            if (keys->nnames == before) {
                ms_counters_add(&out->stacks[idx].c, &st->c);
                out->stacks[idx].flags |= st->flags & (MS_STACKF_TRUNCATED | MS_STACKF_UNWIND_FAIL);
                free(pcs);
                continue;
            }
            if (out->nstacks == caps) {
                caps = caps ? caps * 2 : 64;
                ms_stack *ns = realloc(out->stacks, caps * sizeof *ns);
                if (!ns) {
                    free(pcs);
                    goto oom;
                }
                out->stacks = ns;
            }
            ms_stack *d = &out->stacks[out->nstacks];
            memset(d, 0, sizeof *d);
            d->id = (uint32_t)out->nstacks + 1;
            d->kind = st->kind;
            d->flags = st->flags;
            d->depth = st->depth;
            d->pcs = pcs;
            d->c = st->c;
            out->nstacks++;
        }
    }

    /* health: summed by name */
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < in[i]->nhealth; j++) {
            const ms_health_item *h = &in[i]->health[j];
            size_t k;
            for (k = 0; k < out->nhealth; k++)
                if (!strcmp(out->health[k].name, h->name))
                    break;
            if (k == out->nhealth) {
                ms_health_item *nh = realloc(out->health, (out->nhealth + 1) * sizeof *nh);
                if (!nh)
                    goto oom;
                out->health = nh;
                nh[k].name = strdup(h->name);
                nh[k].value = 0;
                if (!nh[k].name)
                    goto oom;
                out->nhealth++;
            }
            out->health[k].value += h->value;
        }

    /* metadata */
    uint64_t last_ns = 0, interval = 0;
    int same_interval = 1, sampled = 0;
    for (size_t i = 0; i < n; i++) {
        const char *v = ms_agg_meta(in[i], "snapshot_ns");
        uint64_t t = v ? strtoull(v, NULL, 10) : 0;
        if (t > last_ns)
            last_ns = t;
        v = ms_agg_meta(in[i], "sample_interval");
        uint64_t iv = v ? strtoull(v, NULL, 10) : 0;
        if (i == 0)
            interval = iv;
        else if (iv != interval)
            same_interval = 0;
        sampled |= (in[i]->flags & MS_SNAP_F_SAMPLED) != 0;
    }
    out->flags = sampled ? MS_SNAP_F_SAMPLED : 0;
    char num[32];
    if (exe0 && add_kv(out, "exe", exe0) != 0)
        goto oom;
    snprintf(num, sizeof num, "%" PRIu64, last_ns);
    if (last_ns && add_kv(out, "snapshot_ns", num) != 0)
        goto oom;
    snprintf(num, sizeof num, "%" PRIu64, interval);
    if (same_interval && add_kv(out, "sample_interval", num) != 0)
        goto oom;
    snprintf(num, sizeof num, "%zu", n);
    if (add_kv(out, "reason", "merge") != 0 || add_kv(out, "merged_from", num) != 0)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        const char *h = ms_agg_meta(in[i], "hostname");
        if (h && !ms_agg_meta(out, "hostname") && add_kv(out, "hostname", h) != 0)
            goto oom;
    }
    out->path = strdup("merged");
    if (!out->path || ms_agg_index_names(out) != 0)
        goto oom;
    for (size_t i = 0; i < n; i++)
        free(modmap[i]);
    free(modmap);
    ms_agg_free(keys);
    return out;
oom:
    snprintf(err, errlen, "out of memory while merging");
    if (modmap)
        for (size_t i = 0; i < n; i++)
            free(modmap[i]);
    free(modmap);
    ms_agg_free(keys);
    ms_snapshot_free(out);
    return NULL;
}

/* ---- writing ------------------------------------------------------------------------ */

/* Through the snapshot writer the agent uses, so the format has one encoder: it creates
 * the file 0600 with O_EXCL|O_NOFOLLOW under a temporary name and renames it. */
int ms_merge_write(const ms_snapshot *s, const char *path, char *err, size_t errlen)
{
    ms_snap_writer *w = malloc(sizeof *w);
    if (!w) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    int rc = ms_sw_open(w, path, s->flags);
    if (rc != 0) {
        snprintf(err, errlen, "%s: cannot create: %s", path, strerror(-rc));
        free(w);
        return -1;
    }
    ms_sw_begin(w, MS_CHUNK_META, 0);
    ms_sw_u32(w, (uint32_t)s->nmeta);
    for (size_t i = 0; i < s->nmeta; i++)
        ms_sw_kv(w, s->meta[i].key, s->meta[i].value);
    ms_sw_end(w);

    ms_sw_begin(w, MS_CHUNK_MODS, 0);
    ms_sw_u32(w, (uint32_t)s->nmodules);
    for (size_t i = 0; i < s->nmodules; i++) {
        const ms_module *m = &s->modules[i];
        static const uint8_t zero[4];
        ms_sw_u64(w, m->load_bias);
        ms_sw_cstr(w, m->path);
        ms_sw_u32(w, m->build_id_len);
        ms_sw_bytes(w, m->build_id, m->build_id_len);
        ms_sw_bytes(w, zero, (4 - m->build_id_len % 4) % 4);
        ms_sw_u32(w, m->nseg);
        for (uint32_t j = 0; j < m->nseg; j++) {
            ms_sw_u64(w, m->segs[j].vaddr);
            ms_sw_u64(w, m->segs[j].memsz);
            ms_sw_u64(w, m->segs[j].offset);
            ms_sw_u32(w, m->segs[j].flags);
            ms_sw_u32(w, 0);
        }
    }
    ms_sw_end(w);

    ms_sw_begin(w, MS_CHUNK_STKS, MS_CHUNKF_REQUIRED);
    ms_sw_u32(w, (uint32_t)s->nstacks);
    for (size_t i = 0; i < s->nstacks; i++) {
        const ms_stack *st = &s->stacks[i];
        ms_sw_u32(w, st->id);
        ms_sw_u8(w, st->kind);
        ms_sw_u8(w, 0);
        ms_sw_u16(w, st->flags);
        ms_sw_u32(w, st->depth);
        ms_sw_u32(w, 0);
        ms_sw_u64(w, st->c.live_blocks);
        ms_sw_u64(w, st->c.live_bytes);
        ms_sw_u64(w, st->c.alloc_blocks);
        ms_sw_u64(w, st->c.alloc_bytes);
        ms_sw_u64(w, st->c.free_blocks);
        ms_sw_u64(w, st->c.free_bytes);
        for (uint32_t d = 0; d < st->depth; d++)
            ms_sw_u64(w, st->pcs[d]);
    }
    ms_sw_end(w);

    if (s->nhealth) {
        ms_sw_begin(w, MS_CHUNK_HLTH, 0);
        ms_sw_u32(w, (uint32_t)s->nhealth);
        for (size_t i = 0; i < s->nhealth; i++) {
            ms_sw_cstr(w, s->health[i].name);
            ms_sw_u64(w, s->health[i].value);
        }
        ms_sw_end(w);
    }
    rc = ms_sw_commit(w);
    free(w);
    if (rc != 0) {
        snprintf(err, errlen, "%s: write failed: %s", path, strerror(-rc));
        return -1;
    }
    return 0;
}
