/* Queries over the compact HPROF object graph (see graph.h): lookups, names of
 * classes, edges and roots, and freeing. Read-only over the graph; never allocates per
 * call. */
#include "hprof/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t ms_hgraph_class_object_class(const ms_hgraph *g, ms_hidx obj)
{
    if (obj >= g->nobj || g->obj_kind[obj] != MS_HOBJ_CLASS)
        return MS_HCLASS_NONE;
    uint32_t lo = 0, hi = g->nclassobj;
    while (lo < hi) {
        uint32_t m = lo + (hi - lo) / 2;
        if (g->classes[g->classobj[m]].obj < obj)
            lo = m + 1;
        else
            hi = m;
    }
    return lo < g->nclassobj && g->classes[g->classobj[lo]].obj == obj ? g->classobj[lo] : MS_HCLASS_NONE;
}

const char *ms_hgraph_class_name(const ms_hgraph *g, uint32_t cls)
{
    return cls < g->nclass ? g->strs + g->classes[cls].name : "?";
}

uint32_t ms_hgraph_find_class(const ms_hgraph *g, const char *name, uint64_t loader_id, uint32_t from)
{
    for (uint32_t k = from; k < g->nclass; k++)
        if (!strcmp(g->strs + g->classes[k].name, name) &&
            (loader_id == UINT64_MAX || g->classes[k].loader_id == loader_id))
            return k;
    return MS_HCLASS_NONE;
}

int ms_hgraph_class_is_a(const ms_hgraph *g, uint32_t cls, const char *name)
{
    for (int d = 0; d < 256 && cls < g->nclass; d++, cls = g->classes[cls].super)
        if (!strcmp(g->strs + g->classes[cls].name, name))
            return 1;
    return 0;
}

const char *ms_hgraph_edge_name(const ms_hgraph *g, uint64_t e, char *buf, size_t len)
{
    if (!len)
        return buf;
    buf[0] = '\0';
    if (e >= g->nedge)
        return buf;
    uint32_t lab = g->edge_label[e], v = ms_hedge_value_of(lab);
    switch (ms_hedge_kind_of(lab)) {
    case MS_HEDGE_FIELD:
    case MS_HEDGE_REFERENT:
        snprintf(buf, len, "%s", v < g->nfield ? g->strs + g->fields[v].name : "?");
        break;
    case MS_HEDGE_ELEMENT:
        snprintf(buf, len, "[%u]", v);
        break;
    case MS_HEDGE_STATIC:
        snprintf(buf, len, "static %s", v < g->nstatic ? g->strs + g->statics[v].name : "?");
        break;
    case MS_HEDGE_SUPER:
        snprintf(buf, len, "<super>");
        break;
    case MS_HEDGE_LOADER:
        snprintf(buf, len, "<classloader>");
        break;
    case MS_HEDGE_SIGNERS:
        snprintf(buf, len, "<signers>");
        break;
    case MS_HEDGE_PROTECTION:
        snprintf(buf, len, "<protection domain>");
        break;
    default:
        snprintf(buf, len, "<edge kind %u>", ms_hedge_kind_of(lab));
    }
    return buf;
}

static const struct {
    uint8_t type;
    const char *name, *key;
} root_names[] = {
    {0xFF, "unknown", "unknown"},
    {0x01, "JNI global", "jni_global"},
    {0x02, "JNI local", "jni_local"},
    {0x03, "Java frame", "java_frame"},
    {0x04, "native stack", "native_stack"},
    {0x05, "sticky class", "sticky_class"},
    {0x06, "thread block", "thread_block"},
    {0x07, "monitor used", "monitor_used"},
    {0x08, "thread object", "thread_object"},
    {0x89, "interned string", "interned_string"},
    {0x8A, "finalizing", "finalizing"},
    {0x8B, "debugger", "debugger"},
    {0x8C, "reference cleanup", "reference_cleanup"},
    {0x8D, "VM internal", "vm_internal"},
    {0x8E, "JNI monitor", "jni_monitor"},
    {0x90, "unreachable", "unreachable"},
};

const char *ms_hroot_type_name(uint8_t type)
{
    for (size_t i = 0; i < sizeof root_names / sizeof root_names[0]; i++)
        if (root_names[i].type == type)
            return root_names[i].name;
    return "root ?";
}

const char *ms_hroot_type_key(uint8_t type)
{
    for (size_t i = 0; i < sizeof root_names / sizeof root_names[0]; i++)
        if (root_names[i].type == type)
            return root_names[i].key;
    return "other";
}

const char *ms_hobj_kind_name(uint8_t kind)
{
    switch (kind) {
    case MS_HOBJ_INSTANCE: return "instance";
    case MS_HOBJ_OBJ_ARRAY: return "object array";
    case MS_HOBJ_PRIM_ARRAY: return "primitive array";
    case MS_HOBJ_CLASS: return "class";
    default: return "?";
    }
}

void ms_hgraph_drop_edges(ms_hgraph *g)
{
    free(g->edge_off);
    free(g->edge_dst);
    free(g->edge_label);
    g->edge_off = NULL;
    g->edge_dst = NULL;
    g->edge_label = NULL;
}

void ms_hgraph_free(ms_hgraph *g)
{
    if (!g)
        return;
    free(g->obj_id64);
    free(g->obj_id32);
    free(g->obj_class);
    free(g->obj_size);
    free(g->obj_kind);
    free(g->obj_heap);
    free(g->edge_off);
    free(g->edge_dst);
    free(g->edge_label);
    free(g->id_bucket);
    free(g->classobj);
    free(g->classes);
    free(g->fields);
    free(g->statics);
    free(g->roots);
    free(g->heaps);
    free(g->strs);
    free(g);
}
