/* Cached DWARF CFI unwinder (x86-64 and AArch64: register numbers and frame-record
 * details come from the arch layer). The first time a pc is seen, its FDE is found
 * through the module's .eh_frame_hdr binary-search table and the CIE/FDE programs are
 * run up to that pc; the resulting rule (how to find the CFA, where the frame pointer
 * and the return address were saved) is
 * packed into 64 bits and cached in a lock-free open-addressing table, so later walks
 * cost two table probes and two stack loads per frame.
 * Runs inside the target: no malloc, no lock on the walk, every stack read is checked
 * against the thread's stack bounds; rules it does not model send the walk to libunwind. */
#define _GNU_SOURCE
#include "agent/unwind/unwind_cfi.h"

#include <link.h>
#include <sched.h>
#include <string.h>

#include "agent/unwind/unwind.h"
#include "agent/arch/arch.h"
#include "agent/unwind/unwind_fp.h"
#include "agent/unwind/unwind_libunwind.h"

/* ===========================================================================
 * Rule encoding (64 bits); "sp" and "bp" are the arch's stack and frame pointers
 * (rsp/rbp, sp/x29), offsets are in 8-byte words:
 *   bits 0..7   generation (rules of an older generation are recomputed)
 *   bits 8..9   kind: 0 unsupported, 1 normal, 2 outermost (return address undefined)
 *   bits 10..11 CFA base: 0 sp+off, 1 bp+off, 2 *(bp+off)
 *   bit  12     bp saved at CFA + bp_off
 *   bits 13..28 bp_off (int16 words)
 *   bits 29..44 ra_off (int16 words): the return address is at CFA + ra_off (-8 bytes
 *               on x86-64; where the frame record holds x30 on AArch64)
 *   bits 45..63 cfa_off (int19 words: frames up to 2 MiB)
 * ========================================================================= */
#define R_KIND_UNSUP 0u
#define R_KIND_NORMAL 1u
#define R_KIND_END 2u
#define R_CFA_SP 0u
#define R_CFA_BP 1u
#define R_CFA_DEREF_BP 2u

#define RULE_WORDS_MAX16 (32767 * 8)
#define RULE_WORDS_MAX19 (262143 * 8)
/* Offsets in bytes, multiples of 8 within range (rule_compute checks). */
static inline uint64_t rule_pack(unsigned gen, unsigned kind, unsigned base, int bp_saved, int bp_off,
                                 int ra_off, int cfa_off)
{
    return (uint64_t)(gen & 0xff) | ((uint64_t)(kind & 3) << 8) | ((uint64_t)(base & 3) << 10) |
           ((uint64_t)(bp_saved ? 1 : 0) << 12) |
           ((uint64_t)(uint16_t)(int16_t)(bp_off / 8) << 13) |
           ((uint64_t)(uint16_t)(int16_t)(ra_off / 8) << 29) |
           ((uint64_t)((uint32_t)(cfa_off / 8) & 0x7ffff) << 45);
}
#define RULE_GEN(r) ((unsigned)((r) & 0xff))
#define RULE_KIND(r) ((unsigned)(((r) >> 8) & 3))
#define RULE_BASE(r) ((unsigned)(((r) >> 10) & 3))
#define RULE_BPSAVED(r) ((unsigned)(((r) >> 12) & 1))
#define RULE_BPOFF(r) ((int)(int16_t)(uint16_t)((r) >> 13) * 8)
#define RULE_RAOFF(r) ((int)(int16_t)(uint16_t)((r) >> 29) * 8)
#define RULE_CFAOFF(r) ((int)((int64_t)(r) >> 45) * 8)
#define RULE_UNSUP(gen) rule_pack(gen, R_KIND_UNSUP, 0, 0, 0, 0, 0)

/* ===========================================================================
 * Module list: text ranges and .eh_frame_hdr of every loaded object. Rebuilt (under a
 * spinlock, into one of four rotating buffers) when a pc is in no known module or
 * after dlclose; walkers read the current buffer without a lock.
 * ========================================================================= */
#define MS_CFI_MAXMOD 1024
typedef struct cfi_mod {
    uintptr_t lo, hi;         /* executable PT_LOAD range */
    const uint8_t *hdr;       /* .eh_frame_hdr in memory, NULL if none */
    const int32_t *table;     /* (initial_loc, fde) pairs, datarel sdata4 */
    uint32_t nfde;
} cfi_mod;
typedef struct cfi_modlist {
    uint32_t n;
    cfi_mod m[MS_CFI_MAXMOD];
} cfi_modlist;

static cfi_modlist *ms_modbufs; /* 4 buffers */
static cfi_modlist *ms_mods;    /* current */
static unsigned ms_modbuf_next;
static int ms_mod_lock;
static unsigned long long ms_mod_adds, ms_mod_subs;
static uint8_t ms_gen = 1;

/* ===========================================================================
 * Rule cache: key = pc (0 empty, 1 being filled), value = rule. A key is claimed once
 * and never removed; a value is replaced when its generation is stale.
 * ========================================================================= */
typedef struct cfi_entry {
    uint64_t pc;
    uint64_t rule;
} cfi_entry;
static cfi_entry *ms_cache;
static uint64_t ms_cache_mask;
static uint64_t ms_cache_used_n;
#define MS_CFI_PROBES 16

static inline uint64_t pc_hash(uint64_t pc)
{
    uint64_t h = pc * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 31);
}

/* ---------------------------------------------------------------------------
 * Module list
 * ------------------------------------------------------------------------- */
static int mod_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    cfi_modlist *l = arg;
    if (l->n >= MS_CFI_MAXMOD)
        return 1;
    cfi_mod m;
    memset(&m, 0, sizeof m);
    m.lo = UINTPTR_MAX;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
            if (lo < m.lo)
                m.lo = lo;
            if (hi > m.hi)
                m.hi = hi;
        } else if (ph->p_type == PT_GNU_EH_FRAME) {
            m.hdr = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        }
    }
    if (m.lo == UINTPTR_MAX)
        return 0;
    if (m.hdr && m.hdr[0] == 1 && m.hdr[3] == 0x3b) { /* version 1, table datarel|sdata4 */
        /* eh_frame_ptr and fde_count encodings: accept the usual pcrel|sdata4 and udata4 */
        const uint8_t *p = m.hdr + 4;
        uint8_t enc_ptr = m.hdr[1], enc_cnt = m.hdr[2];
        if ((enc_ptr & 0x0f) == 0x0b)
            p += 4;
        else if ((enc_ptr & 0x0f) == 0x03)
            p += 4;
        else if ((enc_ptr & 0x0f) == 0x04 || (enc_ptr & 0x0f) == 0x0c || enc_ptr == 0x00)
            p += 8;
        else
            p = NULL;
        if (p && ((enc_cnt & 0x0f) == 0x03 || (enc_cnt & 0x0f) == 0x0b)) {
            uint32_t n;
            memcpy(&n, p, 4);
            m.nfde = n;
            m.table = (const int32_t *)(p + 4);
        }
    }
    l->m[l->n++] = m;
    return 0;
}

static int mod_count_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    unsigned long long *v = arg;
    v[0] = info->dlpi_adds;
    v[1] = info->dlpi_subs;
    return 1;
}

static void mods_refresh(int force)
{
    /* a fork under way, or someone else refreshes: use what is there (the lock is only
     * ever held inside a counted walk, so fork never copies it held) */
    if (!ms_dl_begin(0))
        return;
    if (__atomic_exchange_n(&ms_mod_lock, 1, __ATOMIC_ACQUIRE)) {
        ms_dl_end();
        return;
    }
    unsigned long long v[2] = {0, 0};
    dl_iterate_phdr(mod_count_cb, v);
    if (force || v[0] != ms_mod_adds || v[1] != ms_mod_subs || !ms_mods) {
        cfi_modlist *l = &ms_modbufs[ms_modbuf_next++ & 3];
        l->n = 0;
        dl_iterate_phdr(mod_cb, l);
        ms_mod_adds = v[0];
        ms_mod_subs = v[1];
        __atomic_store_n(&ms_mods, l, __ATOMIC_RELEASE);
        MS_HEALTH_INC(module_refreshes);
    }
    __atomic_store_n(&ms_mod_lock, 0, __ATOMIC_RELEASE);
    ms_dl_end();
}

static const cfi_mod *mod_find(uintptr_t pc)
{
    const cfi_modlist *l = __atomic_load_n(&ms_mods, __ATOMIC_ACQUIRE);
    if (l)
        for (uint32_t i = 0; i < l->n; i++)
            if (pc >= l->m[i].lo && pc < l->m[i].hi)
                return &l->m[i];
    return NULL;
}

/* ---------------------------------------------------------------------------
 * DWARF decoding helpers (the CFI lives in mapped, read-only module memory).
 * ------------------------------------------------------------------------- */
typedef struct rd {
    const uint8_t *p, *end;
    int bad;
} rd;

static uint64_t rd_uleb(rd *r)
{
    uint64_t v = 0;
    unsigned shift = 0;
    while (r->p < r->end) {
        uint8_t b = *r->p++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80))
            return v;
    }
    r->bad = 1;
    return 0;
}

static int64_t rd_sleb(rd *r)
{
    int64_t v = 0;
    unsigned shift = 0;
    uint8_t b = 0;
    while (r->p < r->end) {
        b = *r->p++;
        if (shift < 64)
            v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
        shift += 7;
        if (!(b & 0x80)) {
            if (shift < 64 && (b & 0x40))
                v |= -((int64_t)1 << shift);
            return v;
        }
    }
    r->bad = 1;
    return 0;
}

static uint64_t rd_fixed(rd *r, unsigned n)
{
    uint64_t v = 0;
    if (r->p + n > r->end) {
        r->bad = 1;
        return 0;
    }
    memcpy(&v, r->p, n);
    r->p += n;
    return v;
}

/* Reads a pointer in DW_EH_PE encoding `enc`. Only absolute and pc-relative bases. */
static uint64_t rd_enc(rd *r, uint8_t enc)
{
    if (enc == 0xff)
        return 0;
    const uint8_t *at = r->p;
    uint64_t v;
    switch (enc & 0x0f) {
    case 0x00: v = rd_fixed(r, 8); break;
    case 0x01: v = rd_uleb(r); break;
    case 0x02: v = rd_fixed(r, 2); break;
    case 0x03: v = rd_fixed(r, 4); break;
    case 0x04: v = rd_fixed(r, 8); break;
    case 0x09: v = (uint64_t)rd_sleb(r); break;
    case 0x0a: v = (uint64_t)(int64_t)(int16_t)rd_fixed(r, 2); break;
    case 0x0b: v = (uint64_t)(int64_t)(int32_t)rd_fixed(r, 4); break;
    case 0x0c: v = rd_fixed(r, 8); break;
    default: r->bad = 1; return 0;
    }
    switch (enc & 0x70) {
    case 0x00: break;
    case 0x10: v += (uint64_t)(uintptr_t)at; break;
    default: r->bad = 1; return 0;
    }
    return v;
}

/* ---------------------------------------------------------------------------
 * CFA program interpreter: only the columns that matter for the walk (CFA, the frame
 * pointer, the return address).
 * ------------------------------------------------------------------------- */
enum { REG_RBP = MS_ARCH_DW_FP, REG_RSP = MS_ARCH_DW_SP, REG_RA = MS_ARCH_DW_RA };
enum { COL_SAME = 0, COL_OFFSET = 1, COL_UNDEF = 2, COL_OTHER = 3 };

typedef struct cfa_state {
    int cfa_base;     /* R_CFA_*, or -1 for an unsupported CFA */
    int64_t cfa_off;
    int bp_rule;      /* COL_* */
    int64_t bp_off;
    int ra_rule;
    int64_t ra_off;
} cfa_state;

typedef struct cie_info {
    uint64_t caf;
    int64_t daf;
    uint64_t ra_reg;
    uint8_t fde_enc;
    int has_z;
    int signal_frame;
    const uint8_t *insns, *insns_end;
} cie_info;

static void col_set(cfa_state *s, uint64_t reg, int rule, int64_t off)
{
    if (reg == REG_RBP) {
        s->bp_rule = rule;
        s->bp_off = off;
    } else if (reg == REG_RA) {
        s->ra_rule = rule;
        s->ra_off = off;
    }
}

static void col_restore(cfa_state *s, const cfa_state *init, uint64_t reg)
{
    if (reg == REG_RBP) {
        s->bp_rule = init->bp_rule;
        s->bp_off = init->bp_off;
    } else if (reg == REG_RA) {
        s->ra_rule = init->ra_rule;
        s->ra_off = init->ra_off;
    }
}

/* Runs instructions [p, end) while loc <= target. Returns 0, or -1 on malformed input. */
static int cfa_run(const uint8_t *p, const uint8_t *end, const cie_info *ci, uint64_t loc,
                   uint64_t target, cfa_state *s, const cfa_state *init)
{
    cfa_state stack[8];
    int sp = 0;
    rd r = {p, end, 0};
    while (r.p < r.end && !r.bad) {
        uint8_t op = *r.p++;
        uint8_t hi = op & 0xc0, lo = op & 0x3f;
        if (hi == 0x40) {
            loc += lo * ci->caf;
            if (loc > target)
                return 0;
            continue;
        }
        if (hi == 0x80) {
            col_set(s, lo, COL_OFFSET, (int64_t)rd_uleb(&r) * ci->daf);
            continue;
        }
        if (hi == 0xc0) {
            if (init)
                col_restore(s, init, lo);
            continue;
        }
        uint64_t reg, off;
        switch (op) {
        case 0x00: break;
        case 0x01: loc = rd_enc(&r, ci->fde_enc); if (loc > target) return 0; break;
        case 0x02: loc += rd_fixed(&r, 1) * ci->caf; if (loc > target) return 0; break;
        case 0x03: loc += rd_fixed(&r, 2) * ci->caf; if (loc > target) return 0; break;
        case 0x04: loc += rd_fixed(&r, 4) * ci->caf; if (loc > target) return 0; break;
        case 0x05: reg = rd_uleb(&r); off = rd_uleb(&r); col_set(s, reg, COL_OFFSET, (int64_t)off * ci->daf); break;
        case 0x06: reg = rd_uleb(&r); if (init) col_restore(s, init, reg); break;
        case 0x07: reg = rd_uleb(&r); col_set(s, reg, COL_UNDEF, 0); break;
        case 0x08: reg = rd_uleb(&r); col_set(s, reg, COL_SAME, 0); break;
        case 0x09: reg = rd_uleb(&r); rd_uleb(&r); col_set(s, reg, COL_OTHER, 0); break;
        case 0x0a:
            if (sp == 8)
                return -1;
            stack[sp++] = *s;
            break;
        case 0x0b:
            if (sp == 0)
                return -1;
            *s = stack[--sp]; /* the whole row, CFA included (as libgcc does) */
            break;
        case 0x0c:
            reg = rd_uleb(&r);
            off = rd_uleb(&r);
            s->cfa_base = reg == REG_RSP ? (int)R_CFA_SP : reg == REG_RBP ? (int)R_CFA_BP : -1;
            s->cfa_off = (int64_t)off;
            break;
        case 0x0d:
            reg = rd_uleb(&r);
            s->cfa_base = reg == REG_RSP ? (int)R_CFA_SP : reg == REG_RBP ? (int)R_CFA_BP : -1;
            break;
        case 0x0e: s->cfa_off = (int64_t)rd_uleb(&r); break;
        case 0x0f: { /* def_cfa_expression: only DW_OP_breg<fp> N; DW_OP_deref */
            uint64_t n = rd_uleb(&r);
            const uint8_t *e = r.p;
            if (r.p + n > r.end)
                return -1;
            r.p += n;
            s->cfa_base = -1;
            if (n >= 3 && REG_RBP < 32 && e[0] == 0x70 + REG_RBP) {
                rd er = {e + 1, e + n, 0};
                int64_t o = rd_sleb(&er);
                if (!er.bad && er.p + 1 == e + n && *er.p == 0x06) {
                    s->cfa_base = R_CFA_DEREF_BP;
                    s->cfa_off = o;
                }
            }
            break;
        }
        case 0x10: { /* expression rule for a register */
            reg = rd_uleb(&r);
            uint64_t n = rd_uleb(&r);
            if (r.p + n > r.end)
                return -1;
            r.p += n;
            col_set(s, reg, COL_OTHER, 0);
            break;
        }
        case 0x11: reg = rd_uleb(&r); col_set(s, reg, COL_OFFSET, rd_sleb(&r) * ci->daf); break;
        case 0x12:
            reg = rd_uleb(&r);
            s->cfa_base = reg == REG_RSP ? (int)R_CFA_SP : reg == REG_RBP ? (int)R_CFA_BP : -1;
            s->cfa_off = rd_sleb(&r) * ci->daf;
            break;
        case 0x13: s->cfa_off = rd_sleb(&r) * ci->daf; break;
        case 0x14: reg = rd_uleb(&r); rd_uleb(&r); col_set(s, reg, COL_OTHER, 0); break;
        case 0x15: reg = rd_uleb(&r); rd_sleb(&r); col_set(s, reg, COL_OTHER, 0); break;
        case 0x16: {
            reg = rd_uleb(&r);
            uint64_t n = rd_uleb(&r);
            if (r.p + n > r.end)
                return -1;
            r.p += n;
            col_set(s, reg, COL_OTHER, 0);
            break;
        }
        case 0x2e: rd_uleb(&r); break; /* GNU_args_size */
        case 0x2f: reg = rd_uleb(&r); col_set(s, reg, COL_OFFSET, -(int64_t)rd_uleb(&r) * ci->daf); break;
        default:
            if (MS_ARCH_CFA_NEGATE_RA_STATE && op == MS_ARCH_CFA_NEGATE_RA_STATE)
                break; /* signed return addresses: stripped when read */
            return -1;
        }
    }
    return r.bad ? -1 : 0;
}

static int parse_cie(const uint8_t *cie, cie_info *ci)
{
    uint32_t len32;
    memcpy(&len32, cie, 4);
    const uint8_t *p = cie + 4, *end;
    if (len32 == 0xffffffffu) {
        uint64_t len64;
        memcpy(&len64, p, 8);
        p += 8;
        end = p + len64;
    } else {
        end = p + len32;
    }
    rd r = {p, end, 0};
    if (rd_fixed(&r, 4) != 0) /* CIE id */
        return -1;
    uint8_t version = (uint8_t)rd_fixed(&r, 1);
    const char *aug = (const char *)r.p;
    while (r.p < r.end && *r.p)
        r.p++;
    if (r.p >= r.end)
        return -1;
    r.p++;
    ci->caf = rd_uleb(&r);
    ci->daf = rd_sleb(&r);
    ci->ra_reg = version == 1 ? rd_fixed(&r, 1) : rd_uleb(&r);
    ci->fde_enc = 0;
    ci->has_z = 0;
    ci->signal_frame = 0;
    const uint8_t *aug_end = NULL;
    for (const char *a = aug; *a; a++) {
        switch (*a) {
        case 'z': {
            uint64_t n = rd_uleb(&r);
            ci->has_z = 1;
            aug_end = r.p + n;
            break;
        }
        case 'R': ci->fde_enc = (uint8_t)rd_fixed(&r, 1); break;
        case 'L': rd_fixed(&r, 1); break;
        case 'P': {
            uint8_t enc = (uint8_t)rd_fixed(&r, 1);
            rd_enc(&r, (uint8_t)(enc & 0x7f)); /* indirect bit ignored: just skip */
            break;
        }
        case 'S': ci->signal_frame = 1; break;
        case 'B': break;
        case 'G': break;
        default:
            if (!aug_end)
                return -1;
            goto done; /* unknown letter after 'z': aug_end skips the rest */
        }
    }
done:
    if (aug_end)
        r.p = aug_end;
    if (r.bad || r.p > end || ci->ra_reg != REG_RA)
        return -1;
    ci->insns = r.p;
    ci->insns_end = end;
    return 0;
}

/* Binary search in .eh_frame_hdr: the FDE whose initial location is the last <= pc. */
static const uint8_t *fde_lookup(const cfi_mod *m, uintptr_t pc)
{
    if (!m->table || !m->nfde)
        return NULL;
    const uint8_t *base = m->hdr;
    uint32_t lo = 0, hi = m->nfde;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        uintptr_t start = (uintptr_t)(base + m->table[2 * mid]);
        if (start <= pc)
            lo = mid;
        else
            hi = mid;
    }
    if ((uintptr_t)(base + m->table[2 * lo]) > pc)
        return NULL;
    return base + m->table[2 * lo + 1];
}

/* Computes the rule for pc (a return address minus one, or an exact pc). */
static uint64_t rule_compute(uintptr_t pc, unsigned gen)
{
    const cfi_mod *m = mod_find(pc);
    if (!m) {
        mods_refresh(0);
        m = mod_find(pc);
        if (!m)
            return RULE_UNSUP(gen);
    }
    const uint8_t *fde = fde_lookup(m, pc);
    if (!fde)
        return RULE_UNSUP(gen);
    uint32_t len32;
    memcpy(&len32, fde, 4);
    const uint8_t *p = fde + 4, *end;
    if (len32 == 0xffffffffu) {
        uint64_t len64;
        memcpy(&len64, p, 8);
        p += 8;
        end = p + len64;
    } else {
        end = p + len32;
    }
    int32_t cie_off;
    memcpy(&cie_off, p, 4);
    const uint8_t *cie = p - cie_off;
    p += 4;
    cie_info ci;
    if (cie_off == 0 || parse_cie(cie, &ci) != 0)
        return RULE_UNSUP(gen);
    rd r = {p, end, 0};
    uint64_t start = rd_enc(&r, ci.fde_enc);
    uint64_t range = rd_enc(&r, (uint8_t)(ci.fde_enc & 0x0f));
    if (r.bad || pc < start || pc >= start + range)
        return RULE_UNSUP(gen);
    if (ci.has_z) {
        uint64_t n = rd_uleb(&r);
        r.p += n;
    }
    if (r.bad || r.p > end || ci.signal_frame)
        return RULE_UNSUP(gen);
    cfa_state s = {-1, 0, COL_SAME, 0, COL_UNDEF, 0};
    if (cfa_run(ci.insns, ci.insns_end, &ci, start, UINT64_MAX, &s, NULL) != 0)
        return RULE_UNSUP(gen);
    cfa_state init = s;
    if (cfa_run(r.p, end, &ci, start, pc, &s, &init) != 0)
        return RULE_UNSUP(gen);
    if (s.ra_rule == COL_UNDEF)
        return rule_pack(gen, R_KIND_END, 0, 0, 0, 0, 0);
    /* a return address left in its register (COL_SAME) only happens in a leaf, and
     * every frame this walk reaches made a call */
    if (s.cfa_base < 0 || s.ra_rule != COL_OFFSET || (s.ra_off & 7) || s.ra_off < -RULE_WORDS_MAX16 ||
        s.ra_off > RULE_WORDS_MAX16 || (s.cfa_off & 7) || s.cfa_off < -RULE_WORDS_MAX19 ||
        s.cfa_off > RULE_WORDS_MAX19)
        return RULE_UNSUP(gen);
    if (s.bp_rule != COL_SAME && s.bp_rule != COL_OFFSET)
        return RULE_UNSUP(gen);
    if (s.bp_rule == COL_OFFSET &&
        ((s.bp_off & 7) || s.bp_off < -RULE_WORDS_MAX16 || s.bp_off > RULE_WORDS_MAX16))
        return RULE_UNSUP(gen);
    return rule_pack(gen, R_KIND_NORMAL, (unsigned)s.cfa_base, s.bp_rule == COL_OFFSET,
                     (int)s.bp_off, (int)s.ra_off, (int)s.cfa_off);
}

/* ---------------------------------------------------------------------------
 * Cache
 * ------------------------------------------------------------------------- */
static MS_NOINLINE uint64_t rule_miss(uintptr_t pc, cfi_entry *slot, unsigned gen)
{
    MS_HEALTH_INC(pc_cache_misses);
    uint64_t rule = rule_compute(pc, gen);
    if (slot) {
        __atomic_store_n(&slot->rule, rule, __ATOMIC_RELAXED);
        __atomic_store_n(&slot->pc, (uint64_t)pc, __ATOMIC_RELEASE);
    } else {
        MS_HEALTH_INC(pc_cache_full);
    }
    return rule;
}

static MS_NOINLINE uint64_t rule_get_global(uintptr_t pc)
{
    unsigned gen = __atomic_load_n(&ms_gen, __ATOMIC_RELAXED);
    uint64_t i = pc_hash(pc) & ms_cache_mask;
    for (unsigned probe = 0; probe < MS_CFI_PROBES; probe++, i = (i + 1) & ms_cache_mask) {
        cfi_entry *e = &ms_cache[i];
        uint64_t k = __atomic_load_n(&e->pc, __ATOMIC_ACQUIRE);
        if (MS_LIKELY(k == pc)) {
            uint64_t r = __atomic_load_n(&e->rule, __ATOMIC_RELAXED);
            if (MS_LIKELY(RULE_GEN(r) == gen))
                return r;
            MS_HEALTH_INC(pc_cache_misses);
            r = rule_compute(pc, gen);
            __atomic_store_n(&e->rule, r, __ATOMIC_RELAXED);
            return r;
        }
        if (k == 0) {
            uint64_t zero = 0;
            if (__atomic_compare_exchange_n(&e->pc, &zero, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
                __atomic_fetch_add(&ms_cache_used_n, 1, __ATOMIC_RELAXED);
                return rule_miss(pc, e, gen);
            }
            /* lost the slot to another pc (or the same one: a duplicate is harmless) */
        }
    }
    return rule_miss(pc, NULL, gen);
}

/* Per-thread direct-mapped front cache (8 KiB, stays in L1/L2): the global table is
 * large and shared, and the program's own data pushes it out of the caches. */
#define MS_CFI_L1 512
typedef struct cfi_l1 {
    uint64_t pc, rule;
} cfi_l1;
static inline uint64_t rule_get(cfi_l1 *l1, uintptr_t pc)
{
    cfi_l1 *e = &l1[(pc ^ (pc >> 9)) & (MS_CFI_L1 - 1)];
    if (MS_LIKELY(e->pc == pc) &&
        MS_LIKELY(RULE_GEN(e->rule) == __atomic_load_n(&ms_gen, __ATOMIC_RELAXED)))
        return e->rule;
    uint64_t r = rule_get_global(pc);
    e->pc = pc;
    e->rule = r;
    return r;
}

uint64_t ms_cfi_rule_for(uintptr_t pc)
{
    return rule_compute(pc, ms_gen);
}

int ms_cfi_init(uint64_t cache_entries)
{
    uint64_t n = 1024;
    while (n < cache_entries)
        n <<= 1;
    ms_cache = ms_sys_mmap(n * sizeof(cfi_entry));
    ms_modbufs = ms_sys_mmap(4 * sizeof(cfi_modlist));
    if (!ms_cache || !ms_modbufs)
        return -1;
    ms_cache_mask = n - 1;
    mods_refresh(1);
    return ms_mods ? 0 : -1;
}

void ms_cfi_invalidate(void)
{
    uint8_t g = __atomic_load_n(&ms_gen, __ATOMIC_RELAXED);
    g = (uint8_t)(g + 1);
    if (g == 0)
        g = 1;
    __atomic_store_n(&ms_gen, g, __ATOMIC_RELAXED);
    mods_refresh(1);
}

uint64_t ms_cfi_cache_used(void)
{
    return __atomic_load_n(&ms_cache_used_n, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------------------
 * The walk, with reuse of the previous walk of the same thread: every step records
 * its state (pc, sp, bp) and the stack words it read. When a new walk reaches a state
 * the previous walk also passed through, and every word the previous walk read from
 * there on still holds the same value, the rest of the walk is necessarily the same
 * (it is a function of the registers, those words and the cached rules), so its frames
 * are copied after checking one or two words per frame instead of looking rules up.
 * ------------------------------------------------------------------------- */
#define MS_CFI_SLOTS 160 /* steps a trace buffer can hold */
#define MS_CFI_HEAD 32   /* a fresh trace starts here: room to prepend a new prefix */
/* One step of a walk, in one place (a step touches one or two cache lines). */
typedef struct cfi_step {
    uintptr_t pc, sp, bp;   /* state before the step */
    uintptr_t cfa, ra;      /* what it computed: ra = *raslot (authentication bits stripped) */
    uintptr_t raslot, rawra; /* where the return address was read, and the word there */
    uintptr_t bpslot, bpval; /* bp reloaded from *bpslot (0: bp unchanged) */
    uintptr_t dslot;         /* *(dslot) gave cfa (0: none) */
    uintptr_t usebp;         /* the CFA rule of this step reads the bp register */
} cfi_step;
typedef struct cfi_trace {
    uint32_t start, n; /* steps [start, start+n) */
    uint32_t stop;     /* after the last step the walk ended: 1 at an outermost frame
                        * (its pc, ra of the last step, is the last frame), 2 on a null
                        * return address, 0 not recorded (continue from the last step) */
    unsigned gen;
    cfi_step s[MS_CFI_SLOTS];
} cfi_trace;
/* Per-thread state of the walker (about 31 KiB): mapped on the thread's first walk and
 * unmapped when it exits, not in static TLS, so that threads created with small stacks
 * (static TLS is carved out of every thread's stack) still start. */
/* ---------------------------------------------------------------------------
 * Walk cache: complete walks of this thread, found by their first state (the pc and sp
 * where the program called into the agent). An entry lists every stack word its walk
 * read and depended on, with the value read: a return address per frame, a CFA read
 * from the stack, a saved rbp where a later rule reads the bp register (code without
 * frame pointers saves rbp as an ordinary register whose value changes from call to
 * call and is not used), and the bp register at the start if the first rules read it.
 * When those words still hold those values (and the cached rules are of the same
 * generation), the walk would read the same words, apply the same rules and give the
 * same frames: the entry's stack id is the answer, with no rule look-up, no copy of
 * frames and no hashing. Set-associative by the first state, least recently used way
 * replaced; only walks whose words all lie at or above the first sp (the thread's own
 * live stack, readable from any later call at that sp) are kept.
 * ------------------------------------------------------------------------- */
#define MS_WC_SETS 64
#define MS_WC_WAYS 4
#define MS_WC_WORDS 40
#define MS_WC_GROUP 4
/* The first states of a set's ways share one cache line: a look-up reads it and then
 * only the way whose first state matches. */
typedef struct wc_tag {
    uintptr_t pc0, sp0;
} wc_tag;
typedef uint64_t wc_v2 __attribute__((vector_size(16)));
/* Four words: where they are (bytes from the first sp: every word a kept walk depends
 * on lies between it and the stack's top, but for the first bp, below) and the values
 * read, the pairs of values aligned for one vector operation. 48 bytes where (address, value) pairs took 64: a
 * hit reads fewer cache lines. */
typedef struct wc_grp {
    int32_t off[MS_WC_GROUP];
    wc_v2 val[MS_WC_GROUP / 2];
} wc_grp;
typedef struct wc_ent {
    uintptr_t bp0;
    uint32_t gen;          /* rule generation (0: empty) */
    uint32_t sid;          /* heap stack id (0: not known yet) */
    uint32_t stamp;
    uint16_t depth;        /* frames of the stack */
    uint8_t np;            /* pairs of words to check (the first word repeated if odd) */
    uint8_t needbp;        /* bp0 must match (where it is not one of the words) */
    wc_grp g[MS_WC_WORDS / MS_WC_GROUP];
} wc_ent;
_Static_assert(sizeof(wc_ent) == 512, "a way is 8 cache lines");

typedef struct cfi_thread {
    cfi_trace traces[2];
    unsigned cur;
    uint32_t wc_clock;
    cfi_l1 l1[MS_CFI_L1];
    wc_tag wct[MS_WC_SETS][MS_WC_WAYS] __attribute__((aligned(64)));
    wc_ent wc[MS_WC_SETS][MS_WC_WAYS] __attribute__((aligned(64)));
} cfi_thread;

static inline unsigned wc_setno(uintptr_t pc0, uintptr_t sp0)
{
    uint64_t h = ((uint64_t)pc0 ^ ((uint64_t)sp0 << 17)) * 0x9E3779B97F4A7C15ull;
    return (unsigned)(h >> 58);
}

/* The look-up is inlined whole into its two callers: no call, no saved registers. */
#define WC_INLINE static inline __attribute__((always_inline))

/* Pair k of the entry's words (0 ..): their xor with the values kept (zero: unchanged). */
static inline wc_v2 wc_pair(const wc_ent *e, unsigned k, uintptr_t sp0)
{
    const wc_grp *g = &e->g[k / 2];
    unsigned i = (k & 1) * 2;
    wc_v2 w = {*(const uint64_t *)(sp0 + (intptr_t)g->off[i]),
               *(const uint64_t *)(sp0 + (intptr_t)g->off[i + 1])};
    return w ^ g->val[k & 1];
}

/* Do all the entry's words still hold their values? Every pair is read (a jump into
 * straight-line code by the count, no loop, no branch per pair): the entries that are
 * looked at almost always match. */
WC_INLINE int wc_words_hold(const wc_ent *e, uintptr_t sp0)
{
    wc_v2 d = wc_pair(e, 0, sp0); /* every kept walk has a word */
#define WC_PAIR(n)                                                                        \
    case (n) + 1:                                                                          \
        d |= wc_pair(e, (n), sp0);                                                         \
        __attribute__((fallthrough))
    switch (e->np) { /* every value of the byte has a case */
    case 21 ... 255: /* never kept */
    WC_PAIR(19); WC_PAIR(18); WC_PAIR(17); WC_PAIR(16); WC_PAIR(15);
    WC_PAIR(14); WC_PAIR(13); WC_PAIR(12); WC_PAIR(11); WC_PAIR(10);
    WC_PAIR(9); WC_PAIR(8); WC_PAIR(7); WC_PAIR(6); WC_PAIR(5);
    WC_PAIR(4); WC_PAIR(3); WC_PAIR(2); WC_PAIR(1);
    case 0: case 1: break;
    }
#undef WC_PAIR
    _Static_assert(MS_WC_WORDS == 40, "one case per pair of words");
    return (d[0] | d[1]) == 0;
}

/* The entry whose words still hold their values for this first state, or NULL. */
WC_INLINE wc_ent *wc_find(cfi_thread *me, uintptr_t pc0, uintptr_t sp0, uintptr_t bp0, unsigned gen)
{
    unsigned s = wc_setno(pc0, sp0);
    const wc_tag *tag = me->wct[s];
    /* a set's tags fill one aligned cache line: its end is the next line's start */
    _Static_assert(sizeof me->wct[0] == 64, "a set's tags in one line");
    for (wc_ent *e = me->wc[s];; e++) {
        if (tag->pc0 == pc0 && tag->sp0 == sp0 && e->gen == gen &&
            (MS_ARCH_AGENT_FP_CFA || !e->needbp || e->bp0 == bp0) &&
            wc_words_hold(e, sp0)) {
            e->stamp = ++me->wc_clock;
            return e;
        }
        if (!((uintptr_t)++tag & 63))
            return NULL;
    }
}

/* Appends the word at a, which held v, to a way's list of nw words; 0 when the walk
 * cannot be kept: the list full, or the word below the first sp (not the thread's live
 * stack at a later call there) or more than 2 GiB above it. */
static inline int wc_word(int32_t *off, uint64_t *val, unsigned *nw, uintptr_t sp0, uintptr_t a,
                          uint64_t v)
{
    if (*nw == MS_WC_WORDS || a < sp0 || a - sp0 > INT32_MAX)
        return 0;
    off[*nw] = (int32_t)(a - sp0);
    val[(*nw)++] = v;
    return 1;
}

/* Keeps the complete walk in trace t (its first step is the walk's first state);
 * returns the entry, or NULL when the walk cannot be kept. */
static wc_ent *wc_keep(cfi_thread *me, const cfi_trace *t, unsigned depth)
{
    uint32_t start = t->start, end = t->start + t->n;
    /* Every step depends on its return address's word: a walk of more steps than a way
     * holds words is refused here, before the loops below (deep start-up stacks, such as
     * an interpreter's imports, would build their word lists only to be refused). */
    _Static_assert(MS_WC_WORDS <= MS_CFI_SLOTS, "the step bound covers the trace's");
    if (t->n == 0 || t->n > MS_WC_WORDS || depth > 0xffff)
        return NULL;
    uint8_t need[MS_CFI_SLOTS]; /* the bp before step m is read from step m on */
    unsigned nd = 0;
    for (uint32_t m = end; m-- > start;) {
        const cfi_step *st = &t->s[m];
        nd = st->usebp || (!st->bpslot && nd);
        need[m - start] = (uint8_t)nd;
    }
    uintptr_t sp0 = t->s[start].sp;
    int32_t off[MS_WC_WORDS];
    uint64_t val[MS_WC_WORDS];
    unsigned nw = 0, needbp = nd; /* need[0] */
    if (needbp && MS_ARCH_AGENT_FP_CFA) {
        /* Walks leave the agent by frame records: the first bp is the word the last
         * agent frame's record holds, 16 bytes below the first sp (live at every
         * look-up). Checked as one of the words: no test of its own on each hit. */
        off[nw] = -16;
        val[nw++] = t->s[start].bp;
        needbp = 0;
    }
    /* each step's words in the order the walk read them: its return address, a CFA
     * read from the stack, a saved bp that a later rule reads */
    for (uint32_t m = start; m < end; m++) {
        const cfi_step *st = &t->s[m];
        if (!wc_word(off, val, &nw, sp0, st->raslot, st->rawra) ||
            (st->dslot && !wc_word(off, val, &nw, sp0, st->dslot, st->cfa)) ||
            (st->bpslot && m + 1 < end && need[m + 1 - start] &&
             !wc_word(off, val, &nw, sp0, st->bpslot, st->bpval)))
            return NULL;
    }
    _Static_assert((MS_WC_WORDS & 1) == 0, "words are checked in pairs");
    if (nw & 1) { /* even for the look-up's pairs: the first word once more */
        off[nw] = off[0];
        val[nw] = val[0];
        nw++;
    }
    unsigned sn = wc_setno(t->s[start].pc, sp0), way = 0;
    wc_ent *set = me->wc[sn];
    for (unsigned w = 1; w < MS_WC_WAYS; w++)
        if (set[w].stamp < set[way].stamp)
            way = w;
    wc_ent *e = &set[way];
    e->gen = 0; /* not valid while it is rewritten */
    me->wct[sn][way].pc0 = t->s[start].pc;
    me->wct[sn][way].sp0 = sp0;
    e->bp0 = t->s[start].bp;
    e->needbp = (uint8_t)needbp;
    e->np = (uint8_t)(nw / 2);
    e->depth = (uint16_t)depth;
    e->sid = 0;
    for (unsigned i = 0; i < nw; i += 2) { /* a pair at a time: one vector store */
        wc_grp *g = &e->g[i / MS_WC_GROUP];
        g->off[i % MS_WC_GROUP] = off[i];
        g->off[i % MS_WC_GROUP + 1] = off[i + 1];
        g->val[i % MS_WC_GROUP / 2] = (wc_v2){val[i], val[i + 1]};
    }
    e->stamp = ++me->wc_clock;
    e->gen = t->gen;
    return e;
}

/* A complete walk (not truncated): kept, and *sid_slot names its id's place. */
static inline void wc_done(cfi_thread *me, const cfi_trace *t, unsigned depth, uint32_t **sid_slot)
{
    if (!sid_slot)
        return;
    wc_ent *e = wc_keep(me, t, depth);
    if (e)
        *sid_slot = &e->sid;
}

static MS_NOINLINE cfi_thread *cfi_thread_new(void)
{
    if (ms_self.exit_done)
        return NULL; /* the thread is going away: walk without caches */
    ms_self.cfi = ms_sys_mmap(sizeof(cfi_thread));
    return ms_self.cfi;
}

void ms_cfi_thread_exit(void)
{
    if (ms_self.cfi) {
        ms_sys_munmap(ms_self.cfi, sizeof(cfi_thread));
        ms_self.cfi = NULL;
    }
}

static inline int tr_verify(const cfi_trace *t, uint32_t from)
{
    uint32_t end = t->start + t->n;
    for (uint32_t m = from; m < end; m++) {
        const cfi_step *st = &t->s[m];
        if (*(const uintptr_t *)st->raslot != st->rawra)
            return 0;
        if (st->bpslot && *(const uintptr_t *)st->bpslot != st->bpval)
            return 0;
        if (st->dslot && *(const uintptr_t *)st->dslot != st->cfa)
            return 0;
    }
    return 1;
}

/* Copies steps [from, from+k) of s to position `to` of d. */
static inline void tr_move(cfi_trace *d, uint32_t to, const cfi_trace *s, uint32_t from, uint32_t k)
{
    memmove(&d->s[to], &s->s[from], k * sizeof(cfi_step));
}

/* Does the walk from step m on depend on the bp register's value at step m? Only if a
 * CFA rule reads bp before a step reloads it from the stack (code built without frame
 * pointers uses rbp as an ordinary register, so requiring it equal would never match). */
static inline int tr_needs_bp(const cfi_trace *t, uint32_t m, uint32_t end)
{
    for (; m < end; m++) {
        if (t->s[m].usebp)
            return 1;
        if (t->s[m].bpslot)
            return 0;
    }
    return 0;
}

static inline void tr_push(cfi_trace *t, uintptr_t pc, uintptr_t sp, uintptr_t bp, uintptr_t cfa,
                           uintptr_t ra, uintptr_t raslot, uintptr_t rawra, uintptr_t bpslot,
                           uintptr_t bpval, uintptr_t dslot, int usebp)
{
    cfi_step *st = &t->s[t->start + t->n++];
    st->pc = pc;
    st->sp = sp;
    st->bp = bp;
    st->cfa = cfa;
    st->ra = ra;
    st->raslot = raslot;
    st->rawra = rawra;
    st->bpslot = bpslot;
    st->bpval = bpval;
    st->dslot = dslot;
    st->usebp = (uintptr_t)usebp;
}

/* The CFA a rule gives from sp and bp; *dslot: where it was read from the stack (0 when
 * computed). 0 when that word is outside [lo, hi). */
static inline int rule_cfa(uint64_t rule, uintptr_t sp, uintptr_t bp, uintptr_t lo, uintptr_t hi,
                           uintptr_t *cfa, uintptr_t *dslot)
{
    *dslot = 0;
    switch (RULE_BASE(rule)) {
    case R_CFA_SP: *cfa = sp + (intptr_t)RULE_CFAOFF(rule); return 1;
    case R_CFA_BP: *cfa = bp + (intptr_t)RULE_CFAOFF(rule); return 1;
    default: {
        uintptr_t a = bp + (intptr_t)RULE_CFAOFF(rule);
        if (!ms_span_in(a, 8, lo, hi) || (a & 7))
            return 0;
        *cfa = *(const uintptr_t *)a;
        *dslot = a;
        return 1;
    }
    }
}

/* Where frame records do not give the CFA (AArch64: GCC puts the record at the bottom of
 * the frame), the agent's own frames are left with their CFI rules, from this
 * function's exact pc, sp and fp; the agent is never built without its .eh_frame.
 * Gives the first state outside the agent; 0 on a bad frame. */
static MS_NOINLINE int leave_agent_by_rules(cfi_thread *me, uintptr_t hi, uintptr_t self_lo,
                                            uintptr_t self_hi, uintptr_t *pcp, uintptr_t *spp,
                                            uintptr_t *bpp)
{
    uintptr_t pc, sp, bp;
    MS_ARCH_CURRENT_STATE(pc, sp, bp);
    if (sp < ms_self.stack_lo || sp >= hi)
        return 0;
    uintptr_t lo = sp;
    uintptr_t look = pc; /* exact first, then return addresses minus one */
    for (unsigned i = 0; i < 64; i++) {
        uint64_t rule = rule_get(me->l1, look);
        if (RULE_KIND(rule) != R_KIND_NORMAL)
            return 0;
        uintptr_t cfa;
        switch (RULE_BASE(rule)) {
        case R_CFA_SP: cfa = sp + (intptr_t)RULE_CFAOFF(rule); break;
        case R_CFA_BP: cfa = bp + (intptr_t)RULE_CFAOFF(rule); break;
        default: return 0; /* the agent's code has no such frames */
        }
        uintptr_t raslot = cfa + (intptr_t)RULE_RAOFF(rule);
        if (cfa <= sp || cfa > hi || (cfa & 7) || !ms_span_in(raslot, 8, lo, hi))
            return 0;
        uintptr_t ra = ms_arch_strip_pc(*(const uintptr_t *)raslot);
        if (RULE_BPSAVED(rule)) {
            uintptr_t a = cfa + (intptr_t)RULE_BPOFF(rule);
            if (!ms_span_in(a, 8, lo, hi))
                return 0;
            bp = *(const uintptr_t *)a;
        }
        sp = cfa;
        if (ra < self_lo || ra >= self_hi) {
            *pcp = ra;
            *spp = sp;
            *bpp = bp;
            return 1;
        }
        look = ra - 1;
    }
    return 0;
}

/* Leaves the agent's own frames by their frame records from fp (CFA = fp + 16, return
 * address at fp + 8, caller's fp at fp): the first state outside the agent, or 0. */
static inline int leave_agent_fp(uintptr_t fp, uintptr_t lo, uintptr_t hi, uintptr_t self_lo,
                                 uintptr_t self_hi, uintptr_t *pc, uintptr_t *sp, uintptr_t *bp)
{
    for (unsigned i = 0; i < 64 && ms_span_in(fp, 16, lo, hi) && !(fp & 7); i++) {
        uintptr_t ra = ms_arch_strip_pc(((const uintptr_t *)fp)[1]);
        uintptr_t next = ((const uintptr_t *)fp)[0];
        if (ra < self_lo || ra >= self_hi) {
            *pc = ra;
            *sp = fp + 16;
            *bp = next;
            return 1;
        }
        fp = next;
    }
    return 0;
}

/* ms_cfi_cached_id when the recording call's caller was called by the agent itself: its
 * frames are left as a walk leaves them, then the look-up. */
static MS_NOINLINE uint32_t cached_id_deeper(cfi_thread *me, unsigned max, uintptr_t fp)
{
    uintptr_t hi = ms_self.stack_hi, lo = (uintptr_t)__builtin_frame_address(0), pc, sp, bp;
    if (lo >= hi || lo < ms_self.stack_lo || fp <= lo ||
        !leave_agent_fp(fp, lo, hi, ms_self_lo, ms_self_hi, &pc, &sp, &bp) || pc < 4096)
        return 0;
    wc_ent *e = wc_find(me, pc, sp, bp, __atomic_load_n(&ms_gen, __ATOMIC_RELAXED));
    return e && e->depth <= max ? e->sid : 0;
}

uint32_t ms_cfi_cached_id(unsigned max, uintptr_t walk_fp)
{
    cfi_thread *me = ms_self.cfi;
    /* the frame record of the recording call's caller: the agent's own, live above this
     * frame on this stack (a caller's frame is at a higher address), so read as it is */
    const uintptr_t *fr = (const uintptr_t *)walk_fp;
    if (!MS_ARCH_AGENT_FP_CFA || !me || (uintptr_t)fr <= (uintptr_t)__builtin_frame_address(0))
        return 0;
    /* Its return address is, nearly always, the program's: the walk's first state. No
     * way's first pc is ever in the agent (walks leave its frames first), so when this
     * one is, the look-up misses and the agent's frames are left first. */
    uintptr_t pc = ms_arch_strip_pc(fr[1]), sp0 = (uintptr_t)fr + 16;
    wc_ent *e = wc_find(me, pc, sp0, fr[0], __atomic_load_n(&ms_gen, __ATOMIC_RELAXED));
    if (MS_UNLIKELY(!e)) {
        /* the record's address again from the first sp, which the look-up keeps in a
         * register anyway: one register fewer to keep (none callee-saved) */
        __asm__("" : "+r"(sp0));
        return pc >= ms_self_lo && pc < ms_self_hi ? cached_id_deeper(me, max, sp0 - 16) : 0;
    }
    return e->depth <= max ? e->sid : 0;
}

int ms_cfi_unwind(uint64_t *pcs, unsigned max, unsigned *flags, uint32_t **sid_slot)
{
    if (sid_slot)
        *sid_slot = NULL;
    if (MS_UNLIKELY(!ms_self.stack_hi))
        ms_thread_bounds();
    uintptr_t hi = ms_self.stack_hi;
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    uintptr_t lo = fp;
    uintptr_t pc = 0, sp = 0, bp = 0;
    /* in locals: stores into pcs[] would otherwise force reloads of the globals */
    const uintptr_t self_lo = ms_self_lo, self_hi = ms_self_hi;
    /* outside the thread's known stack (a makecontext stack, a green thread's): its
     * bounds are unknown here, so libunwind walks it (it checks what it reads) */
    if (MS_UNLIKELY(!hi || fp >= hi || fp < ms_self.stack_lo))
        return -1;
    cfi_thread *me = ms_self.cfi;
    if (MS_UNLIKELY(!me) && !(me = cfi_thread_new()))
        return -1; /* no memory for the caches: libunwind walks this one */
    if (MS_ARCH_AGENT_FP_CFA) {
        /* The agent is built with frame pointers: leave its own frames by following
         * the frame records (CFA = fp + 16, return address at fp + 8, caller's fp at fp)
         * until the return address is outside the agent. No rule lookups for frames
         * that are never kept. A recording call names its own frame record (above ours
         * on the same chain): fewer agent frames to leave. */
        uintptr_t hint = ms_self.walk_fp;
        if (hint > fp && hint < hi)
            fp = hint;
        if (!leave_agent_fp(fp, lo, hi, self_lo, self_hi, &pc, &sp, &bp)) {
            *flags |= MS_STACKF_UNWIND_FAIL;
            MS_HEALTH_INC(unwind_failures);
            return 0;
        }
    } else if (!leave_agent_by_rules(me, hi, self_lo, self_hi, &pc, &sp, &bp)) {
        *flags |= MS_STACKF_UNWIND_FAIL;
        MS_HEALTH_INC(unwind_failures);
        return 0;
    }
    if (pc < 4096)
        return 0;
    unsigned gen = __atomic_load_n(&ms_gen, __ATOMIC_RELAXED);
    if (sid_slot) {
        wc_ent *e = wc_find(me, pc, sp, bp, gen);
        if (e && e->sid && e->depth <= max) {
            *sid_slot = &e->sid;
            return (int)e->depth; /* pcs left unwritten: the id is known */
        }
    }
    cfi_trace *prev = &me->traces[me->cur & 1];
    cfi_trace *cur = &me->traces[(me->cur + 1) & 1]; /* new steps go here */
    int reuse = prev->n > 0 && prev->gen == gen;
    uint32_t k = prev->start; /* cursor into prev, by increasing sp */
    uint32_t pend = prev->start + prev->n;
    cur->start = MS_CFI_HEAD;
    cur->n = 0;
    cur->stop = 0;
    cur->gen = gen;
    me->cur++; /* by default cur is the trace the next walk starts from */
    unsigned n = 0;
    int overflow = 0; /* steps not kept in cur: it cannot end with stop != 0 */
    for (;;) {
        int self = pc >= self_lo && pc < self_hi;
        if (!self) {
            if (n == max) {
                *flags |= MS_STACKF_TRUNCATED;
                MS_HEALTH_INC(unwind_truncated);
                return (int)n;
            }
            pcs[n++] = pc;
        }
        if (reuse) {
            while (k < pend && prev->s[k].sp < sp)
                k++;
            if (k < pend && prev->s[k].sp == sp && prev->s[k].pc == pc &&
                (prev->s[k].bp == bp || !tr_needs_bp(prev, k, pend)) && tr_verify(prev, k)) {
                uint32_t last = pend - 1;
                for (uint32_t m = k + 1; m <= last + 1; m++) {
                    uintptr_t q;
                    if (m <= last)
                        q = prev->s[m].pc;
                    else if (prev->stop == 1)
                        q = prev->s[last].ra; /* the outermost frame */
                    else
                        break;
                    if (q >= self_lo && q < self_hi)
                        continue;
                    if (n == max) {
                        *flags |= MS_STACKF_TRUNCATED;
                        MS_HEALTH_INC(unwind_truncated);
                        break;
                    }
                    pcs[n++] = q;
                }
                uintptr_t sp_match = sp, bp_match = bp;
                /* the new trace: cur's steps, then prev's steps from k on */
                uint32_t j = cur->n;
                if (!overflow && k >= j) { /* prepend in place: prev stays current */
                    tr_move(prev, k - j, cur, cur->start, j);
                    prev->start = k - j;
                    prev->n = pend - prev->start;
                    me->cur--;
                    cur = prev;
                } else {
                    uint32_t room = MS_CFI_SLOTS - (cur->start + j);
                    uint32_t take = pend - k < room ? pend - k : room;
                    tr_move(cur, cur->start + j, prev, k, take);
                    cur->n = j + take;
                    cur->stop = take == pend - k && !overflow ? prev->stop : 0;
                    if (take < pend - k)
                        overflow = 1;
                }
                if (n == max && (*flags & MS_STACKF_TRUNCATED))
                    return (int)n;
                if (cur->stop) {
                    wc_done(me, cur, n, sid_slot);
                    return (int)n;
                }
                /* not recorded to the end (depth limit or capacity): walk on from there */
                uint32_t l = cur->start + cur->n - 1, f = l;
                pc = cur->s[l].ra;
                sp = cur->s[l].cfa;
                /* bp now: the last value reloaded from the stack, or the one at the match */
                while (f > cur->start && !cur->s[f].bpslot && cur->s[f].sp > sp_match)
                    f--;
                bp = cur->s[f].bpslot ? cur->s[f].bpval : bp_match;
                reuse = 0;
                if (pc < 4096) {
                    cur->stop = overflow ? 0 : 2;
                    if (cur->stop)
                        wc_done(me, cur, n, sid_slot);
                    return (int)n;
                }
                continue; /* pc is a return address: recorded at the top of the loop */
            }
        }
        uint64_t rule = rule_get(me->l1, pc - 1); /* pc is a return address: look up the call */
        unsigned kind = RULE_KIND(rule);
        if (kind == R_KIND_END) {
            cur->stop = overflow ? 0 : 1;
            if (cur->stop)
                wc_done(me, cur, n, sid_slot);
            return (int)n;
        }
        if (MS_UNLIKELY(kind != R_KIND_NORMAL)) {
            cur->n = 0;
            if (n > 0 && !mod_find(pc))
                return (int)n; /* ran off the known code (e.g. JIT): keep what we have */
            if (n > 0 && !ms_lu_available()) {
                /* no libunwind to finish the walk (musl's libc has almost no unwind
                 * tables): the frames found so far */
                MS_HEALTH_INC(unwind_fallbacks);
                return (int)n;
            }
            return -1;
        }
        uintptr_t cfa, dslot = 0, bpslot = 0, bpval = 0;
        if (!rule_cfa(rule, sp, bp, lo, hi, &cfa, &dslot))
            goto bad;
        if (cfa < lo || cfa - lo < 8 || cfa > hi || (cfa & 7) || cfa <= sp)
            goto bad;
        uintptr_t raslot = cfa + (intptr_t)RULE_RAOFF(rule);
        if (!ms_span_in(raslot, 8, lo, hi))
            goto bad;
        uintptr_t rawra = *(const uintptr_t *)raslot;
        uintptr_t ra = ms_arch_strip_pc(rawra);
        if (RULE_BPSAVED(rule)) {
            uintptr_t a = cfa + (intptr_t)RULE_BPOFF(rule);
            if (!ms_span_in(a, 8, lo, hi))
                goto bad;
            bpslot = a;
            bpval = *(const uintptr_t *)a;
        }
        if (cur->start + cur->n < MS_CFI_SLOTS)
            tr_push(cur, pc, sp, bp, cfa, ra, raslot, rawra, bpslot, bpval, dslot,
                    RULE_BASE(rule) != R_CFA_SP);
        else
            overflow = 1;
        if (bpslot)
            bp = bpval;
        if (ra < 4096) {
            cur->stop = overflow ? 0 : 2;
            if (cur->stop)
                wc_done(me, cur, n, sid_slot);
            return (int)n;
        }
        sp = cfa;
        pc = ra;
    }
bad:
    cur->n = 0;
    *flags |= MS_STACKF_UNWIND_FAIL;
    MS_HEALTH_INC(unwind_failures);
    return (int)n;
}


/* ---------------------------------------------------------------------------
 * A walk from a signal context (guard_report.c): pc is the interrupted instruction
 * itself, sp and bp its registers, hi the top of its stack. Cached rules only through
 * the lock-free global table; no walk cache, no per-thread state (the handler may run
 * on a thread that never walked). Every read is within [sp, hi).
 * ------------------------------------------------------------------------- */
int ms_cfi_unwind_from(uintptr_t pc, uintptr_t sp, uintptr_t bp, uintptr_t hi, uint64_t *pcs,
                       unsigned max, unsigned *flags)
{
    uintptr_t lo = sp;
    unsigned n = 0;
    if (!ms_cache || pc < 4096)
        return 0;
    for (uintptr_t look = pc;; look = pc - 1) {
        if (n == max) {
            *flags |= MS_STACKF_TRUNCATED;
            return (int)n;
        }
        pcs[n++] = pc;
        uint64_t rule = rule_get_global(look);
        if (RULE_KIND(rule) != R_KIND_NORMAL)
            return (int)n; /* outermost, or a frame these rules do not model */
        uintptr_t cfa, dslot;
        if (!rule_cfa(rule, sp, bp, lo, hi, &cfa, &dslot))
            goto bad;
        uintptr_t raslot = cfa + (intptr_t)RULE_RAOFF(rule);
        if (cfa <= sp || cfa > hi || (cfa & 7) || !ms_span_in(raslot, 8, lo, hi))
            goto bad;
        uintptr_t ra = ms_arch_strip_pc(*(const uintptr_t *)raslot);
        if (RULE_BPSAVED(rule)) {
            uintptr_t a = cfa + (intptr_t)RULE_BPOFF(rule);
            if (!ms_span_in(a, 8, lo, hi))
                goto bad;
            bp = *(const uintptr_t *)a;
        }
        if (ra < 4096)
            return (int)n;
        sp = cfa;
        pc = ra;
    }
bad:
    *flags |= MS_STACKF_UNWIND_FAIL;
    return (int)n;
}
