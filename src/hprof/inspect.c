/* Object inspectors: the rules that say whether an Android lifecycle object should be
 * gone, after Shark's AndroidObjectInspectors. The rules run twice over the objects with
 * the same code: first to collect the primitive values they need (fields, strings), which
 * one streaming pass reads from the dump, then to decide. Never trusts the file; never
 * prints. */
#include "hprof/inspect.h"

#include <stdlib.h>
#include <string.h>

#include "hprof/errmsg.h"
#include "hprof/sizes.h"
#include "hprof/values.h"

/* ---- reasons ---- */

enum {
    R_NONE,
    R_CLASS,
    R_ACT_DESTROYED,
    R_ACT_ALIVE,
    R_FRAG_NOFM,
    R_FRAG_FM,
    R_FRAGX_INIT_GONE,
    R_SVC_GONE,
    R_SVC_ALIVE,
    R_WIN_GONE,
    R_WIN_ALIVE,
    R_VIEW_DETACHED,
    R_VIEW_ATTACHED,
    R_VIEW_CTX_GONE,
    R_VRI_NOVIEW,
    R_VRI_VIEW,
    R_DIALOG_NODECOR,
    R_DIALOG_DECOR,
    R_TOAST_DONE,
    R_TOAST_SHOWING,
    R_APP,
    R_CTXW_GONE,
    R_MQ_QUIT,
    R_MQ_ALIVE,
    R_MAIN_THREAD,
    R_VM_CLEARED,
    R_VM_ALIVE,
    R_VM_IMPL_CLEARED,
    R_VM_IMPL_ALIVE,
    R_KWR,
    R_ATHREAD,
    R_IMM,
    R_LOADER,
    R_KOOM_ACTIVITY,
    R_KOOM_FRAGMENT,
    R_KOOM_BITMAP,
    R_KOOM_PRIM_ARRAY,
    R_KOOM_OBJ_ARRAY,
    R_FRAGX_STATE,      /* + lifecycle state (5 entries) */
    R_OWNER_STATE = R_FRAGX_STATE + 5,
    R_COUNT = R_OWNER_STATE + 5,
};

static const char *const state_names[5] = {"DESTROYED", "INITIALIZED", "CREATED", "STARTED", "RESUMED"};

static const char *const reasons[R_FRAGX_STATE] = {
    [R_NONE] = "",
    [R_CLASS] = "a class is never leaking",
    [R_ACT_DESTROYED] = "Activity#mDestroyed is true",
    [R_ACT_ALIVE] = "Activity#mDestroyed is false",
    [R_FRAG_NOFM] = "Fragment#mFragmentManager is null",
    [R_FRAG_FM] = "Fragment#mFragmentManager is not null",
    [R_FRAGX_INIT_GONE] = "Fragment#mLifecycleRegistry.state is INITIALIZED, mFragmentManager is null and "
                          "mCalled is true: destroyed",
    [R_SVC_GONE] = "Service not in ActivityThread.mServices: destroyed",
    [R_SVC_ALIVE] = "Service held by ActivityThread.mServices",
    [R_WIN_GONE] = "Window#mDestroyed is true",
    [R_WIN_ALIVE] = "Window#mDestroyed is false",
    [R_VIEW_DETACHED] = "View detached: View.mAttachInfo is null, no parent View, yet it was attached "
                        "(mWindowAttachCount > 0)",
    [R_VIEW_ATTACHED] = "View.mAttachInfo is not null (view attached)",
    [R_VIEW_CTX_GONE] = "View.mContext references a destroyed activity",
    [R_VRI_NOVIEW] = "ViewRootImpl#mView is null",
    [R_VRI_VIEW] = "ViewRootImpl#mView is not null",
    [R_DIALOG_NODECOR] = "Dialog#mDecor is null: dismissed",
    [R_DIALOG_DECOR] = "Dialog#mDecor is not null: showing",
    [R_TOAST_DONE] = "Toast done showing (Toast.mTN.mView is null)",
    [R_TOAST_SHOWING] = "Toast showing (Toast.mTN.mView is not null)",
    [R_APP] = "Application is a singleton",
    [R_CTXW_GONE] = "ContextWrapper wraps an Activity with Activity#mDestroyed true",
    [R_MQ_QUIT] = "MessageQueue#mQuitting is true",
    [R_MQ_ALIVE] = "MessageQueue#mQuitting is false",
    [R_MAIN_THREAD] = "the main thread always runs",
    [R_VM_CLEARED] = "ViewModel#mCleared is true: cleared",
    [R_VM_ALIVE] = "ViewModel#mCleared is false",
    [R_VM_IMPL_CLEARED] = "ViewModel#impl.isCleared is true: cleared",
    [R_VM_IMPL_ALIVE] = "ViewModel#impl.isCleared is false",
    [R_KWR] = "retained by a LeakCanary KeyedWeakReference",
    [R_ATHREAD] = "ActivityThread is a singleton that never dies",
    [R_IMM] = "InputMethodManager is a singleton that never dies",
    [R_LOADER] = "a class loader is never leaking",
    /* KOOM's own words (HeapAnalysisService's leak reasons) */
    [R_KOOM_ACTIVITY] = "Activity Leak",
    [R_KOOM_FRAGMENT] = "Fragment Leak",
    [R_KOOM_BITMAP] = "Bitmap Size Over Threshold",
    [R_KOOM_PRIM_ARRAY] = "Primitive Array Size Over Threshold",
    [R_KOOM_OBJ_ARRAY] = "Object Array Size Over Threshold",
};

const char *ms_hinspect_reason(uint8_t r)
{
    static const char *const fragx[5] = {
        "Fragment#mLifecycleRegistry.state is DESTROYED", "Fragment#mLifecycleRegistry.state is INITIALIZED",
        "Fragment#mLifecycleRegistry.state is CREATED", "Fragment#mLifecycleRegistry.state is STARTED",
        "Fragment#mLifecycleRegistry.state is RESUMED"};
    static const char *const owner[5] = {
        "Lifecycle state is DESTROYED", "Lifecycle state is INITIALIZED", "Lifecycle state is CREATED",
        "Lifecycle state is STARTED", "Lifecycle state is RESUMED"};
    if (r < R_FRAGX_STATE)
        return reasons[r] ? reasons[r] : "";
    if (r < R_OWNER_STATE)
        return fragx[r - R_FRAGX_STATE];
    if (r < R_COUNT)
        return owner[r - R_OWNER_STATE];
    return "";
}

/* ---- families: which rules a class is subject to ---- */

enum {
    F_ACTIVITY = 1u << 0,
    F_FRAG = 1u << 1,   /* platform or support Fragment */
    F_FRAGX = 1u << 2,  /* androidx Fragment */
    F_SERVICE = 1u << 3,
    F_WINDOW = 1u << 4,
    F_VIEW = 1u << 5,
    F_VRI = 1u << 6,
    F_DIALOG = 1u << 7,
    F_TOAST = 1u << 8,
    F_APP = 1u << 9,
    F_CTXW = 1u << 10,
    F_MQ = 1u << 11,
    F_THREAD = 1u << 12,
    F_VM = 1u << 13,
    F_OWNER = 1u << 14, /* has a mLifecycleRegistry (androidx lifecycle owner) */
    F_KWR = 1u << 15,
    F_ATHREAD = 1u << 16,
    F_IMM = 1u << 17,
    F_LOADER = 1u << 18,
    F_BITMAP = 1u << 19,     /* KOOM's rules only */
    F_NATIVE_REG = 1u << 20, /* KOOM counts these */
};

static const struct {
    const char *name;
    uint32_t flag;
} family_names[] = {
    {"android.app.Activity", F_ACTIVITY},
    {"android.app.Fragment", F_FRAG},
    {"android.support.v4.app.Fragment", F_FRAG},
    {"androidx.fragment.app.Fragment", F_FRAGX},
    {"android.app.Service", F_SERVICE},
    {"android.view.Window", F_WINDOW},
    {"android.view.View", F_VIEW},
    {"android.view.ViewRootImpl", F_VRI},
    {"android.app.Dialog", F_DIALOG},
    {"android.widget.Toast", F_TOAST},
    {"android.app.Application", F_APP},
    {"android.content.ContextWrapper", F_CTXW},
    {"android.os.MessageQueue", F_MQ},
    {"java.lang.Thread", F_THREAD},
    {"androidx.lifecycle.ViewModel", F_VM},
    {"leakcanary.KeyedWeakReference", F_KWR},
    {"com.squareup.leakcanary.KeyedWeakReference", F_KWR},
    {"android.app.ActivityThread", F_ATHREAD},
    {"android.view.inputmethod.InputMethodManager", F_IMM},
    {"java.lang.ClassLoader", F_LOADER},
    {"android.graphics.Bitmap", F_BITMAP},
    {"libcore.util.NativeAllocationRegistry", F_NATIVE_REG},
    {"libcore.util.NativeAllocationRegistry$CleanerThunk", F_NATIVE_REG},
};

/* ---- the two-round context ---- */

typedef struct insp {
    const ms_hgraph *g;
    const ms_hkoom_opts *koom; /* KOOM's rules instead of Shark's */
    int collect;
    ms_hvalreq *req;
    size_t nreq, cap;
    int oom;
    uint32_t *fam;        /* per class */
    uint8_t *svc_alive;   /* bitset over objects: values of ActivityThread.mServices */
    int have_services;
} insp;

/* Byte offset in the instance data of class cls of the field named field, declared by
 * decl (NULL: the first such field from the object's class up); -1 if none. */
static long field_offset(const ms_hgraph *g, uint32_t cls, const char *decl, const char *field,
                         uint8_t *type)
{
    uint64_t off = 0;
    for (uint32_t c = cls, depth = 0; c < g->nclass && depth < 1000; c = g->classes[c].super, depth++) {
        const ms_hclass *k = &g->classes[c];
        int here = !decl || !strcmp(ms_hgraph_class_name(g, c), decl);
        for (uint32_t f = k->field_first; f < k->field_first + k->field_count && f < g->nfield; f++) {
            if (here && !strcmp(g->strs + g->fields[f].name, field)) {
                *type = g->fields[f].type;
                return off > INT32_MAX ? -1 : (long)off;
            }
            off += ms_hsize_type_in_file(g->fields[f].type, g->id_size);
        }
        if (decl && here)
            return -1;
    }
    return -1;
}

long ms_hinspect_field_offset(const ms_hgraph *g, uint32_t cls, const char *decl, const char *field,
                              uint8_t *type)
{
    return field_offset(g, cls, decl, field, type);
}

static int has_field(const ms_hgraph *g, uint32_t cls, const char *field)
{
    uint8_t t;
    return field_offset(g, cls, NULL, field, &t) >= 0;
}

/* Target of object i's reference through a field named field, MS_HIDX_NONE when null or
 * absent. */
static ms_hidx ref_field(const ms_hgraph *g, ms_hidx i, const char *field)
{
    if (i >= g->nobj || !g->edge_off)
        return MS_HIDX_NONE;
    for (uint64_t e = g->edge_off[i]; e < g->edge_off[i + 1]; e++) {
        uint32_t l = g->edge_label[e];
        unsigned kind = ms_hedge_kind_of(l);
        uint32_t v = ms_hedge_value_of(l);
        if ((kind == MS_HEDGE_FIELD || kind == MS_HEDGE_REFERENT) && v < g->nfield &&
            !strcmp(g->strs + g->fields[v].name, field))
            return g->edge_dst[e];
    }
    return MS_HIDX_NONE;
}

static int is_a(const insp *x, ms_hidx o, uint32_t flag)
{
    const ms_hgraph *g = x->g;
    return o < g->nobj && g->obj_kind[o] == MS_HOBJ_INSTANCE && g->obj_class[o] < g->nclass &&
           (x->fam[g->obj_class[o]] & flag);
}

static void want(insp *x, uint64_t id, uint32_t off, uint8_t size)
{
    if (x->nreq == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 256;
        ms_hvalreq *n = realloc(x->req, cap * sizeof *n);
        if (!n) {
            x->oom = 1;
            return;
        }
        x->req = n;
        x->cap = cap;
    }
    ms_hvalreq *r = &x->req[x->nreq++];
    memset(r, 0, sizeof *r);
    r->id = id;
    r->off = off;
    r->size = size;
}

/* A primitive field of instance o (declared by decl, or NULL: any class). Returns 1 with
 * *out (sign-extended), 0 when unknown (collecting, no such field, record not found). */
static int prim(insp *x, ms_hidx o, const char *decl, const char *field, int64_t *out)
{
    const ms_hgraph *g = x->g;
    if (o >= g->nobj || g->obj_kind[o] != MS_HOBJ_INSTANCE)
        return 0;
    uint8_t type = 0;
    long off = field_offset(g, g->obj_class[o], decl, field, &type);
    uint32_t size = off < 0 ? 0 : ms_hsize_type_in_file(type, g->id_size);
    if (off < 0 || type == MS_HT_OBJECT || !size || size > 8)
        return 0;
    uint64_t id = ms_hgraph_id(g, o);
    if (x->collect) {
        want(x, id, (uint32_t)off, (uint8_t)size);
        return 0;
    }
    const ms_hvalreq *r = ms_hprof_value_find(x->req, x->nreq, id, (uint32_t)off);
    if (!r || !r->found)
        return 0;
    uint64_t v = r->value;
    if (size < 8 && type != MS_HT_BOOLEAN && type != MS_HT_CHAR && (v >> (8 * size - 1)) & 1)
        v |= ~0ull << (8 * size);
    *out = (int64_t)v;
    return 1;
}

/* The text of java.lang.String s (ASCII kept, other characters as '?'). Returns 1 with
 * buf filled, 0 when unknown. */
static int string_of(insp *x, ms_hidx s, char *buf, size_t len)
{
    const ms_hgraph *g = x->g;
    ms_hidx a = ref_field(g, s, "value");
    if (a >= g->nobj || g->obj_kind[a] != MS_HOBJ_PRIM_ARRAY || len == 0)
        return 0;
    uint64_t id = ms_hgraph_id(g, a);
    if (x->collect) {
        want(x, id, 0, 0);
        return 0;
    }
    const ms_hvalreq *r = ms_hprof_value_find(x->req, x->nreq, id, UINT32_MAX);
    if (!r || !r->found)
        return 0;
    size_t w = r->elem == MS_HT_CHAR ? 2 : r->elem == MS_HT_BYTE ? 1 : 0;
    if (!w)
        return 0;
    size_t n = 0;
    for (size_t k = 0; k + w <= r->nbytes && n + 1 < len && k / w < r->length; k += w) {
        unsigned c = w == 2 ? (unsigned)r->bytes[k] << 8 | r->bytes[k + 1] : r->bytes[k];
        buf[n++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    buf[n] = 0;
    return 1;
}

/* Name of the enum constant e: the static field of its class that holds it. */
static const char *enum_name(const ms_hgraph *g, ms_hidx e)
{
    if (e >= g->nobj || g->obj_kind[e] != MS_HOBJ_INSTANCE)
        return NULL;
    uint64_t id = ms_hgraph_id(g, e);
    for (uint32_t c = g->obj_class[e], depth = 0; c < g->nclass && depth < 4; c = g->classes[c].super, depth++) {
        const ms_hclass *k = &g->classes[c];
        for (uint32_t s = k->static_first; s < k->static_first + k->static_count && s < g->nstatic; s++)
            if (g->statics[s].type == MS_HT_OBJECT && g->statics[s].value == id)
                return g->strs + g->statics[s].name;
    }
    return NULL;
}

/* Lifecycle state of an androidx LifecycleRegistry: 0..4 as state_names, -1 unknown. */
static int lifecycle_state(const ms_hgraph *g, ms_hidx registry)
{
    ms_hidx st = ref_field(g, registry, "state");
    if (st == MS_HIDX_NONE)
        st = ref_field(g, registry, "mState");
    const char *name = enum_name(g, st);
    for (int k = 0; name && k < 5; k++)
        if (!strcmp(name, state_names[k]))
            return k;
    return -1;
}

static ms_hidx static_ref(const ms_hgraph *g, const char *cls, const char *field)
{
    for (uint32_t c = ms_hgraph_find_class(g, cls, UINT64_MAX, 0); c != MS_HCLASS_NONE;
         c = ms_hgraph_find_class(g, cls, UINT64_MAX, c + 1)) {
        const ms_hclass *k = &g->classes[c];
        for (uint32_t s = k->static_first; s < k->static_first + k->static_count && s < g->nstatic; s++)
            if (g->statics[s].type == MS_HT_OBJECT && !strcmp(g->strs + g->statics[s].name, field)) {
                ms_hidx o = ms_hgraph_find(g, g->statics[s].value);
                if (o != MS_HIDX_NONE)
                    return o;
            }
    }
    return MS_HIDX_NONE;
}

static void mark(uint8_t *set, ms_hidx o) { set[o >> 3] |= (uint8_t)(1u << (o & 7)); }
static int marked(const uint8_t *set, ms_hidx o) { return (set[o >> 3] >> (o & 7)) & 1; }

/* The services ActivityThread.sCurrentActivityThread.mServices holds (Shark: values of
 * the ArrayMap; a HashMap's nodes in older releases). */
static void find_services(insp *x)
{
    const ms_hgraph *g = x->g;
    ms_hidx at = static_ref(g, "android.app.ActivityThread", "sCurrentActivityThread");
    ms_hidx map = ref_field(g, at, "mServices");
    if (map == MS_HIDX_NONE)
        return;
    x->have_services = 1;
    ms_hidx arr = ref_field(g, map, "mArray");
    if (arr < g->nobj && g->obj_kind[arr] == MS_HOBJ_OBJ_ARRAY) {
        for (uint64_t e = g->edge_off[arr]; e < g->edge_off[arr + 1]; e++)
            if (ms_hedge_value_of(g->edge_label[e]) & 1) /* values at odd indices */
                mark(x->svc_alive, g->edge_dst[e]);
        return;
    }
    ms_hidx table = ref_field(g, map, "table");
    if (table < g->nobj && g->obj_kind[table] == MS_HOBJ_OBJ_ARRAY)
        for (uint64_t e = g->edge_off[table]; e < g->edge_off[table + 1]; e++)
            for (ms_hidx node = g->edge_dst[e], n = 0; node != MS_HIDX_NONE && n < 10000;
                 node = ref_field(g, node, "next"), n++) {
                ms_hidx v = ref_field(g, node, "value");
                if (v != MS_HIDX_NONE)
                    mark(x->svc_alive, v);
            }
}

/* The Activity a context wraps (ContextWrapper.mBase, up to 20 levels), or NONE. */
static ms_hidx unwrap_activity(const insp *x, ms_hidx c)
{
    for (int k = 0; k < 20 && c != MS_HIDX_NONE; k++) {
        if (is_a(x, c, F_ACTIVITY))
            return c;
        if (!is_a(x, c, F_CTXW))
            return MS_HIDX_NONE;
        c = ref_field(x->g, c, "mBase");
    }
    return MS_HIDX_NONE;
}

static int activity_destroyed(insp *x, ms_hidx a)
{
    int64_t v;
    return a != MS_HIDX_NONE && prim(x, a, "android.app.Activity", "mDestroyed", &v) && v;
}

#define SET(st, r)                                                                        \
    do {                                                                                  \
        *status = (st);                                                                   \
        *reason = (r);                                                                    \
        return;                                                                           \
    } while (0)

/* The rules, in the order they are tried; the first that decides wins. */
static void inspect_one(insp *x, ms_hidx o, uint8_t *status, uint8_t *reason)
{
    const ms_hgraph *g = x->g;
    uint32_t f = x->fam[g->obj_class[o]];
    int64_t v;
    if (f & F_ACTIVITY) {
        if (prim(x, o, "android.app.Activity", "mDestroyed", &v))
            SET(v ? MS_LEAK_LEAKING : MS_LEAK_NOT_LEAKING, v ? R_ACT_DESTROYED : R_ACT_ALIVE);
    }
    if (f & F_FRAGX) {
        ms_hidx reg = ref_field(g, o, "mLifecycleRegistry");
        int s = reg == MS_HIDX_NONE ? -1 : lifecycle_state(g, reg);
        if (s == 0)
            SET(MS_LEAK_LEAKING, R_FRAGX_STATE + 0);
        if (s == 1) {
            /* INITIALIZED: destroyed on androidx.fragment 1.1+ (it has mMaxState) once
             * detached from its manager after onDestroy() ran (mCalled) */
            int64_t called = 0;
            int has_called = prim(x, o, NULL, "mCalled", &called);
            if (has_field(g, g->obj_class[o], "mMaxState") && has_called) {
                if (ref_field(g, o, "mFragmentManager") == MS_HIDX_NONE && called)
                    SET(MS_LEAK_LEAKING, R_FRAGX_INIT_GONE);
                SET(MS_LEAK_NOT_LEAKING, R_FRAGX_STATE + 1);
            }
        }
        if (s >= 1 && !x->collect)
            SET(MS_LEAK_NOT_LEAKING, (uint8_t)(R_FRAGX_STATE + s));
    }
    if ((f & (F_FRAG | F_FRAGX)) && has_field(g, g->obj_class[o], "mFragmentManager")) {
        if (ref_field(g, o, "mFragmentManager") == MS_HIDX_NONE)
            SET(MS_LEAK_LEAKING, R_FRAG_NOFM);
        SET(MS_LEAK_NOT_LEAKING, R_FRAG_FM);
    }
    if ((f & F_SERVICE) && x->have_services) {
        if (marked(x->svc_alive, o))
            SET(MS_LEAK_NOT_LEAKING, R_SVC_ALIVE);
        SET(MS_LEAK_LEAKING, R_SVC_GONE);
    }
    if (f & F_WINDOW) {
        if (prim(x, o, "android.view.Window", "mDestroyed", &v))
            SET(v ? MS_LEAK_LEAKING : MS_LEAK_NOT_LEAKING, v ? R_WIN_GONE : R_WIN_ALIVE);
    }
    if (f & F_VIEW) {
        if (activity_destroyed(x, unwrap_activity(x, ref_field(g, o, "mContext"))))
            SET(MS_LEAK_LEAKING, R_VIEW_CTX_GONE);
        if (has_field(g, g->obj_class[o], "mAttachInfo")) {
            if (ref_field(g, o, "mAttachInfo") != MS_HIDX_NONE)
                SET(MS_LEAK_NOT_LEAKING, R_VIEW_ATTACHED);
            ms_hidx parent = ref_field(g, o, "mParent");
            int64_t count = 1;
            int known = prim(x, o, "android.view.View", "mWindowAttachCount", &count) ||
                        !has_field(g, g->obj_class[o], "mWindowAttachCount");
            if (!is_a(x, parent, F_VIEW) && known && count > 0)
                SET(MS_LEAK_LEAKING, R_VIEW_DETACHED);
        }
    }
    if ((f & F_VRI) && has_field(g, g->obj_class[o], "mView")) {
        if (ref_field(g, o, "mView") == MS_HIDX_NONE)
            SET(MS_LEAK_LEAKING, R_VRI_NOVIEW);
        SET(MS_LEAK_NOT_LEAKING, R_VRI_VIEW);
    }
    if ((f & F_DIALOG) && has_field(g, g->obj_class[o], "mDecor")) {
        if (ref_field(g, o, "mDecor") == MS_HIDX_NONE)
            SET(MS_LEAK_LEAKING, R_DIALOG_NODECOR);
        SET(MS_LEAK_NOT_LEAKING, R_DIALOG_DECOR);
    }
    if (f & F_TOAST) {
        ms_hidx tn = ref_field(g, o, "mTN");
        if (tn != MS_HIDX_NONE && ref_field(g, tn, "mWM") != MS_HIDX_NONE) {
            if (ref_field(g, tn, "mView") == MS_HIDX_NONE)
                SET(MS_LEAK_LEAKING, R_TOAST_DONE);
            SET(MS_LEAK_NOT_LEAKING, R_TOAST_SHOWING);
        }
    }
    if (f & F_APP)
        SET(MS_LEAK_NOT_LEAKING, R_APP);
    if ((f & F_CTXW) && !(f & (F_ACTIVITY | F_SERVICE | F_APP))) {
        if (activity_destroyed(x, unwrap_activity(x, ref_field(g, o, "mBase"))))
            SET(MS_LEAK_LEAKING, R_CTXW_GONE);
    }
    if (f & F_MQ) {
        if (prim(x, o, "android.os.MessageQueue", "mQuitting", &v) ||
            prim(x, o, "android.os.MessageQueue", "mQuiting", &v))
            SET(v ? MS_LEAK_LEAKING : MS_LEAK_NOT_LEAKING, v ? R_MQ_QUIT : R_MQ_ALIVE);
    }
    if (f & F_THREAD) {
        char name[48];
        if (string_of(x, ref_field(g, o, "name"), name, sizeof name) && !strcmp(name, "main"))
            SET(MS_LEAK_NOT_LEAKING, R_MAIN_THREAD);
    }
    if (f & F_VM) {
        if (prim(x, o, "androidx.lifecycle.ViewModel", "mCleared", &v))
            SET(v ? MS_LEAK_LEAKING : MS_LEAK_NOT_LEAKING, v ? R_VM_CLEARED : R_VM_ALIVE);
        /* lifecycle 2.8+: the state moved into the multiplatform ViewModelImpl */
        ms_hidx impl = ref_field(g, o, "impl");
        if (impl != MS_HIDX_NONE && prim(x, impl, "androidx.lifecycle.viewmodel.internal.ViewModelImpl",
                                         "isCleared", &v))
            SET(v ? MS_LEAK_LEAKING : MS_LEAK_NOT_LEAKING, v ? R_VM_IMPL_CLEARED : R_VM_IMPL_ALIVE);
    }
    if (f & F_OWNER) {
        int s = lifecycle_state(g, ref_field(g, o, "mLifecycleRegistry"));
        if (s >= 0)
            SET(s == 0 ? MS_LEAK_LEAKING : MS_LEAK_NOT_LEAKING, (uint8_t)(R_OWNER_STATE + s));
    }
    if (f & F_ATHREAD)
        SET(MS_LEAK_NOT_LEAKING, R_ATHREAD);
    if (f & F_IMM)
        SET(MS_LEAK_NOT_LEAKING, R_IMM);
    if (f & F_LOADER)
        SET(MS_LEAK_NOT_LEAKING, R_LOADER);
}

/* LeakCanary's watch: the referent of a KeyedWeakReference is leaking unless it is only
 * being watched (retainedUptimeMillis == -1). */
static void inspect_watch(insp *x, ms_hidx o, uint8_t *status, uint8_t *reason)
{
    const ms_hgraph *g = x->g;
    ms_hidx ref = ref_field(g, o, "referent");
    if (ref == MS_HIDX_NONE)
        return;
    int64_t retained = 0;
    int known = prim(x, o, NULL, "retainedUptimeMillis", &retained);
    if (x->collect)
        return;
    if (!known && has_field(g, g->obj_class[o], "retainedUptimeMillis"))
        return; /* the record was not found: say nothing */
    if (known && retained == -1)
        return;
    status[ref] = MS_LEAK_LEAKING;
    reason[ref] = R_KWR;
}

static void inspect_all(insp *x, uint8_t *status, uint8_t *reason)
{
    const ms_hgraph *g = x->g;
    uint8_t st, rs;
    for (uint32_t i = 0; i < g->nobj; i++) {
        if (g->obj_kind[i] == MS_HOBJ_CLASS) {
            status[i] = MS_LEAK_NOT_LEAKING;
            reason[i] = R_CLASS;
            continue;
        }
        uint32_t c = g->obj_class[i];
        if (g->obj_kind[i] != MS_HOBJ_INSTANCE || c >= g->nclass || !x->fam[c])
            continue;
        st = MS_LEAK_UNKNOWN;
        rs = R_NONE;
        inspect_one(x, i, &st, &rs);
        if (!x->collect && rs) {
            status[i] = st;
            reason[i] = rs;
        }
    }
    /* watched references last: their referents are leaking whatever else they say */
    for (uint32_t i = 0; i < g->nobj; i++) {
        uint32_t c = g->obj_class[i];
        if (g->obj_kind[i] == MS_HOBJ_INSTANCE && c < g->nclass && (x->fam[c] & F_KWR))
            inspect_watch(x, i, status, reason);
    }
}

/* KOOM's selection (HeapAnalysisService.filterLeakingObjects): one instance, *counted
 * set when KOOM counts it in its classInfos. Returns the reason when it is leaking. */
static uint8_t koom_one(insp *x, ms_hidx o, int *counted)
{
    const ms_hgraph *g = x->g;
    uint32_t f = x->fam[g->obj_class[o]];
    int64_t a = 0, b = 0;
    *counted = 0;
    if (f & F_ACTIVITY) {
        int known = prim(x, o, "android.app.Activity", "mDestroyed", &a);
        known |= prim(x, o, "android.app.Activity", "mFinished", &b);
        *counted = known && (a || b);
        return *counted ? R_KOOM_ACTIVITY : R_NONE;
    }
    if (f & (F_FRAG | F_FRAGX)) {
        if (!has_field(g, g->obj_class[o], "mFragmentManager") ||
            ref_field(g, o, "mFragmentManager") != MS_HIDX_NONE)
            return R_NONE;
        *counted = 1;
        return prim(x, o, NULL, "mCalled", &a) && a ? R_KOOM_FRAGMENT : R_NONE;
    }
    if (f & F_BITMAP) {
        /* both asked for while collecting: prim() says "unknown" until the values are read */
        int known = prim(x, o, "android.graphics.Bitmap", "mWidth", &a);
        known &= prim(x, o, "android.graphics.Bitmap", "mHeight", &b);
        if (!known || a <= 0 || b <= 0)
            return R_NONE;
        *counted = (uint64_t)a * (uint64_t)b >= x->koom->bitmap_pixels;
        return *counted ? R_KOOM_BITMAP : R_NONE;
    }
    *counted = (f & (F_WINDOW | F_NATIVE_REG)) != 0;
    return R_NONE;
}

static void koom_all(insp *x, uint8_t *status, uint8_t *reason, uint32_t *classes)
{
    const ms_hgraph *g = x->g;
    uint32_t *leaked = x->collect ? NULL : calloc((size_t)g->nclass + 1, sizeof *leaked);
    if (!x->collect && !leaked) {
        x->oom = 1;
        return;
    }
    for (uint32_t i = 0; i < g->nobj; i++) {
        uint32_t c = g->obj_class[i];
        uint8_t r = R_NONE;
        int counted = 0;
        switch (g->obj_kind[i]) {
        case MS_HOBJ_CLASS:
            if (!x->collect) {
                status[i] = MS_LEAK_NOT_LEAKING;
                reason[i] = R_CLASS;
            }
            continue;
        case MS_HOBJ_INSTANCE:
            if (c >= g->nclass || !x->fam[c])
                continue;
            r = koom_one(x, i, &counted);
            if (x->collect)
                continue;
            classes[c] += (uint32_t)counted;
            if (r && ++leaked[c] > MS_HKOOM_PER_CLASS)
                r = R_NONE; /* KOOM finds paths for the first 45 of a class only */
            break;
        case MS_HOBJ_PRIM_ARRAY:
        case MS_HOBJ_OBJ_ARRAY:
            if (g->obj_size[i] >= x->koom->array_bytes)
                r = g->obj_kind[i] == MS_HOBJ_PRIM_ARRAY ? R_KOOM_PRIM_ARRAY : R_KOOM_OBJ_ARRAY;
            break;
        default:
            continue;
        }
        if (r && !x->collect) {
            status[i] = MS_LEAK_LEAKING;
            reason[i] = r;
        }
    }
    free(leaked);
}

/* android.os.Build: API level, manufacturer and build id (Shark's AndroidBuildMirror). */
static void build_mirror(insp *x, ms_hbuild *b)
{
    const ms_hgraph *g = x->g;
    static const char *const strs[2] = {"MANUFACTURER", "ID"};
    char *dst[2] = {b->manufacturer, b->id};
    for (int k = 0; k < 2; k++)
        string_of(x, static_ref(g, "android.os.Build", strs[k]), dst[k], 64);
    if (x->collect)
        return;
    uint32_t c = ms_hgraph_find_class(g, "android.os.Build$VERSION", UINT64_MAX, 0);
    if (c == MS_HCLASS_NONE)
        return;
    const ms_hclass *k = &g->classes[c];
    for (uint32_t s = k->static_first; s < k->static_first + k->static_count && s < g->nstatic; s++)
        if (g->statics[s].type == MS_HT_INT && !strcmp(g->strs + g->statics[s].name, "SDK_INT"))
            b->sdk = (int)(int32_t)(uint32_t)g->statics[s].value;
}

/* Thread names by serial, from ROOT_THREAD_OBJECT records, for Java-local matchers. */
static int thread_names(insp *x, ms_hinspect *out)
{
    const ms_hgraph *g = x->g;
    uint32_t n = 0;
    for (uint32_t r = 0; r < g->nroot; r++)
        n += g->roots[r].type == 0x08 && g->roots[r].obj < g->nobj;
    if (!x->collect && n) {
        out->thread_serial = calloc(n, sizeof *out->thread_serial);
        out->thread_name = calloc(n, sizeof *out->thread_name);
        if (!out->thread_serial || !out->thread_name)
            return -1;
    }
    for (uint32_t r = 0; r < g->nroot; r++) {
        if (g->roots[r].type != 0x08 || g->roots[r].obj >= g->nobj)
            continue;
        char name[48];
        if (string_of(x, ref_field(g, g->roots[r].obj, "name"), name, sizeof name) && !x->collect) {
            out->thread_serial[out->nthread] = g->roots[r].thread_serial;
            memcpy(out->thread_name[out->nthread++], name, sizeof name);
        }
    }
    return 0;
}

const char *ms_hinspect_thread_name(void *arg, uint32_t serial)
{
    const ms_hinspect *x = arg;
    for (uint32_t k = 0; k < x->nthread; k++)
        if (x->thread_serial[k] == serial)
            return x->thread_name[k];
    return NULL;
}

void ms_hinspect_free(ms_hinspect *x)
{
    if (!x)
        return;
    free(x->status);
    free(x->reason);
    free(x->thread_serial);
    free(x->thread_name);
    free(x->koom_classes);
    memset(x, 0, sizeof *x);
}

static int run(const char *path, const ms_hgraph *g, const ms_hkoom_opts *koom, ms_hinspect *out,
               char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->build.sdk = -1;
    insp x;
    memset(&x, 0, sizeof x);
    x.g = g;
    x.koom = koom;
    x.fam = calloc((size_t)g->nclass + 1, sizeof *x.fam);
    x.svc_alive = calloc((size_t)g->nobj / 8 + 1, 1);
    out->status = calloc((size_t)g->nobj + 1, 1);
    out->reason = calloc((size_t)g->nobj + 1, 1);
    if (koom)
        out->koom_classes = calloc((size_t)g->nclass + 1, sizeof *out->koom_classes);
    int rc = -1;
    if (!x.fam || !x.svc_alive || !out->status || !out->reason || (koom && !out->koom_classes))
        goto oom;
    for (uint32_t c = 0; c < g->nclass; c++) {
        for (size_t k = 0; k < sizeof family_names / sizeof family_names[0]; k++)
            if (ms_hgraph_class_is_a(g, c, family_names[k].name))
                x.fam[c] |= family_names[k].flag;
        if (has_field(g, c, "mLifecycleRegistry"))
            x.fam[c] |= F_OWNER;
    }
    find_services(&x);
    for (x.collect = 1; x.collect >= 0; x.collect--) {
        if (koom)
            koom_all(&x, out->status, out->reason, out->koom_classes);
        else
            inspect_all(&x, out->status, out->reason);
        build_mirror(&x, &out->build);
        if (thread_names(&x, out) < 0 || x.oom)
            goto oom;
        if (x.collect && x.nreq && ms_hprof_read_values(path, g->id_size, x.req, x.nreq, err, errlen) < 0)
            goto out;
    }
    rc = 0;
    goto out;
oom:
    ms_hprof_set_err(err, errlen, "leaks: out of memory");
out:
    if (rc < 0)
        ms_hinspect_free(out);
    free(x.req);
    free(x.fam);
    free(x.svc_alive);
    return rc;
}

int ms_hinspect_run(const char *path, const ms_hgraph *g, ms_hinspect *out, char *err,
                    size_t errlen)
{
    return run(path, g, NULL, out, err, errlen);
}

int ms_hinspect_run_koom(const char *path, const ms_hgraph *g, const ms_hkoom_opts *o,
                         ms_hinspect *out, char *err, size_t errlen)
{
    return run(path, g, o, out, err, errlen);
}
