/* Guard pages: what an error in the pool is (kind, block, offset) and its report, on
 * stderr and as a `guard` snapshot whose GARD chunk holds the allocation, free and access
 * stacks (memsight report symbolizes them). Called from the fault handler or from free:
 * async-signal-safe only (the allocation-free snapshot writer, write(2)), once. */
#define _GNU_SOURCE
#include <string.h>
#include <unistd.h>

#include "agent/services/guard_fault.h"

/* ===========================================================================
 * The report
 * ========================================================================= */
typedef struct guard_stack {
    uint32_t depth, flags;
    uint64_t pcs[MS_MAX_DEPTH_LIMIT];
} guard_stack;

typedef struct guard_report {
    ms_snap_guard g;
    guard_stack alloc, free_, access;
} guard_report;
/* One report at a time (a spinlock: the fault handler may wait for another thread's
 * report, never for its own); mapped when guard pages start (no 6 KiB of bss in every
 * process the agent runs in). */
static guard_report *ms_gr_map;
static int ms_gr_lock;            /* tid of the reporting thread, 0: none */
static uint32_t ms_gr_count;      /* reports written (at most MS_GUARD_MAX_REPORTS) */
static int ms_gr_unknown;         /* an error no slot explains was reported */

void ms_guard_report_init(void)
{
    if (!ms_gr_map)
        ms_gr_map = ms_sys_mmap(sizeof *ms_gr_map);
}

static void stack_from_id(guard_stack *st, uint32_t sid)
{
    st->depth = 0;
    st->flags = 0;
    ms_stack_rec *r = sid ? ms_stack_get(sid) : NULL;
    if (!r)
        return;
    uint32_t d = r->depth < MS_MAX_DEPTH_LIMIT ? r->depth : MS_MAX_DEPTH_LIMIT;
    memcpy(st->pcs, ms_stack_pcs(r), (size_t)d * 8);
    st->depth = d;
    st->flags = r->flags;
}

static void put_stack(ms_snap_writer *w, const guard_stack *st)
{
    ms_sw_u32(w, st->depth);
    ms_sw_u32(w, st->flags);
    ms_sw_bytes(w, st->pcs, (size_t)st->depth * 8);
}

static void gard_chunk(ms_snap_writer *w, void *arg)
{
    const guard_report *r = arg;
    ms_sw_begin(w, MS_CHUNK_GARD, 0);
    ms_sw_bytes(w, &r->g, sizeof r->g);
    put_stack(w, &r->alloc);
    put_stack(w, &r->free_);
    put_stack(w, &r->access);
    ms_sw_end(w);
}

/* A line on stderr built without stdio. */
typedef struct line {
    char b[512];
    size_t n;
} line;

static void l_str(line *l, const char *s)
{
    while (*s && l->n < sizeof l->b - 1)
        l->b[l->n++] = *s++;
}

static void l_dec(line *l, uint64_t v)
{
    char d[24];
    d[ms_fmt_u64(d, v)] = 0;
    l_str(l, d);
}

static void l_hex(line *l, uint64_t v)
{
    char d[19] = "0x";
    int n = 0;
    char t[16];
    do {
        t[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    for (int i = 0; i < n; i++)
        d[2 + i] = t[n - 1 - i];
    d[2 + n] = 0;
    l_str(l, d);
}

static void l_out(line *l)
{
    l_str(l, "\n");
    if (write(2, l->b, l->n) < 0) {
        /* no stderr: the snapshot still has it */
    }
    l->n = 0;
}

static void say_stack(const char *what, uint32_t tid, const guard_stack *st)
{
    line l = {.n = 0};
    l_str(&l, "memsight: guard:   ");
    l_str(&l, what);
    l_str(&l, " by thread ");
    l_dec(&l, tid);
    l_str(&l, ":");
    l_out(&l);
    for (uint32_t i = 0; i < st->depth && i < 16; i++) {
        l_str(&l, "memsight: guard:     #");
        l_dec(&l, i);
        l_str(&l, " ");
        l_hex(&l, st->pcs[i]);
        l_out(&l);
    }
}

/* "N bytes right of the M-byte block at 0x..." (or left of, or inside; for the fill
 * around a block, "N bytes written past" or "before"). */
static void say_where(line *l, const ms_snap_guard *g, uintptr_t addr)
{
    if (!g->block_address) {
        l_str(l, "no block");
        return;
    }
    if (g->kind == MS_GUARD_KIND_SLACK_OVER || g->kind == MS_GUARD_KIND_SLACK_UNDER) {
        int over = g->kind == MS_GUARD_KIND_SLACK_OVER;
        l_dec(l, over ? addr + 1 - (g->block_address + g->block_size) : g->block_address - addr);
        l_str(l, over ? " bytes written past" : " bytes written before");
    } else if (addr < g->block_address) {
        l_dec(l, g->block_address - addr);
        l_str(l, " bytes left of");
    } else if (addr >= g->block_address + g->block_size) {
        l_dec(l, addr - (g->block_address + g->block_size));
        l_str(l, " bytes right of");
    } else {
        l_dec(l, addr - g->block_address);
        l_str(l, " bytes inside");
    }
    l_str(l, " the ");
    l_dec(l, g->block_size);
    l_str(l, "-byte block at ");
    l_hex(l, g->block_address);
}

/* how: 0 a fault (uc its context), 1 free or realloc (the caller's stack), 2 a snapshot's
 * check (no access stack). */
static void report(unsigned kind, uintptr_t addr, int slot, const void *uc, int how)
{
    MS_HEALTH_INC(guard_errors);
    if (slot >= 0 && (uint32_t)slot < ms_guard_nslots) {
        if (__atomic_fetch_or(&ms_guard_slots[slot].flags, MS_GUARD_SLOTF_REPORTED,
                              __ATOMIC_ACQ_REL) & MS_GUARD_SLOTF_REPORTED)
            return; /* the first error of a slot is the one that matters */
    } else if (__atomic_exchange_n(&ms_gr_unknown, 1, __ATOMIC_ACQ_REL)) {
        return;
    }
    guard_report *r = ms_gr_map;
    if (!r) {
        MS_HEALTH_INC(guard_failures);
        return;
    }
    int me = (int)ms_gettid(), free_ = 0;
    while (!__atomic_compare_exchange_n(&ms_gr_lock, &free_, me, 0, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED)) {
        if (free_ == me)
            return; /* an error inside this thread's own report: counted */
        free_ = 0;
        ms_arch_cpu_relax();
    }
    if (ms_gr_count >= MS_GUARD_MAX_REPORTS) {
        __atomic_store_n(&ms_gr_lock, 0, __ATOMIC_RELEASE);
        return;
    }
    ms_gr_count++;
    ms_enter();
    ms_snap_guard *g = &r->g;
    memset(g, 0, sizeof *g);
    g->kind = kind < MS_GUARD_KIND_COUNT ? kind : MS_GUARD_KIND_UNKNOWN;
    g->address = addr;
    g->access_tid = ms_gettid();
    g->slot_size = ms_guard_page;
    r->alloc.depth = r->free_.depth = 0;
    if (slot >= 0 && (uint32_t)slot < ms_guard_nslots) {
        const ms_guard_slot *s = &ms_guard_slots[slot];
        g->slot_address = ms_guard_slot_addr((uint32_t)slot);
        g->block_address = s->ptr;
        g->block_size = s->size;
        g->alloc_tid = s->alloc_tid;
        g->alloc_stack_id = s->alloc_sid;
        if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == MS_GUARD_SLOT_FREED) {
            g->free_tid = s->free_tid;
            g->free_stack_id = s->free_sid;
        }
        stack_from_id(&r->alloc, g->alloc_stack_id);
        stack_from_id(&r->free_, g->free_stack_id);
    }
    r->access.flags = 0;
    r->access.depth = 0;
    if (how == 0) {
        r->access.depth = ms_unwind_context(uc, r->access.pcs, (unsigned)ms_opt.max_depth,
                                               &r->access.flags);
        r->access.flags |= MS_STACKF_FIRST_IS_PC;
    } else if (how == 1) {
        r->access.depth = ms_unwind(r->access.pcs, (unsigned)ms_opt.max_depth,
                                       &r->access.flags);
    }
    int fill = g->kind == MS_GUARD_KIND_SLACK_OVER || g->kind == MS_GUARD_KIND_SLACK_UNDER;

    line l = {.n = 0};
    l_str(&l, "memsight: guard: ");
    l_str(&l, ms_guard_kind_name(g->kind));
    l_str(&l, how == 1 && !fill ? " of " : " at ");
    l_hex(&l, addr);
    l_str(&l, ": ");
    say_where(&l, g, addr);
    l_out(&l);
    if (how == 2) {
        l_str(&l, "memsight: guard:   found in a snapshot by thread ");
        l_dec(&l, g->access_tid);
        l_str(&l, " (the block is live)");
        l_out(&l);
    } else {
        say_stack(how == 0 ? "accessed" : "free called", g->access_tid, &r->access);
    }
    if (g->block_address)
        say_stack("allocated", g->alloc_tid, &r->alloc);
    if (g->free_tid)
        say_stack("freed", g->free_tid, &r->free_);
    char path[MS_SW_PATH_MAX];
    int rc = -1;
    if (!ms_snapshot_held_by_me())
        rc = ms_snapshot_write("guard", gard_chunk, r, path, sizeof path);
    l_str(&l, "memsight: guard: ");
    if (rc == 0) {
        l_str(&l, "report in ");
        l_str(&l, path);
        l_str(&l, " (memsight report symbolizes it)");
    } else {
        l_str(&l, "no report file could be written (the lines above are all)");
    }
    l_out(&l);
    if (ms_opt.guard_recover) {
        l_str(&l, "memsight: guard: guard_recover=1: the program runs on");
        l_out(&l);
    }
    ms_leave();
    __atomic_store_n(&ms_gr_lock, 0, __ATOMIC_RELEASE);
}

void ms_guard_report(unsigned kind, uintptr_t addr, int slot, const void *uc)
{
    report(kind, addr, slot, uc, uc ? 0 : 1);
}

void ms_guard_report_found(unsigned kind, uintptr_t addr, int slot)
{
    report(kind, addr, slot, NULL, 2);
}
