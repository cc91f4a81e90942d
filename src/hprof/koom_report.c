/* KOOM's HeapReport JSON from memsight's leak traces and large objects. Field names,
 * string-typed numbers and texts follow KOOM's HeapReport and HeapAnalysisService (which
 * print Shark's GC root descriptions and reference types), so that its readers need no
 * change. */
#include "hprof/koom_report.h"

#include <inttypes.h>
#include <string.h>

#include "hprof/dominators.h"
#include "hprof/errmsg.h"
#include "hprof/json_out.h"
#include "hprof/paths.h"

/* Shark's LeakTrace.GcRootType descriptions, which KOOM prints as gcRoot. */
static const char *root_description(uint8_t type)
{
    switch (type) {
    case 0x01: return "Global variable in native code";
    case 0x02: return "Local variable in native code";
    case 0x03: return "Java local variable";
    case 0x04: return "Input or output parameters in native code";
    case 0x05: return "System class";
    case 0x06: return "Thread block";
    case 0x07: return "Monitor (anything that called the wait() or notify() methods, or that is synchronized.)";
    case 0x08: return "Thread object";
    case 0x8E: return "Root JNI monitor";
    default: return ms_hroot_type_name(type);
    }
}

/* Class name as Shark's LeakTraceObject.className: a class object is named by its class. */
static const char *class_name(const ms_hgraph *g, ms_hidx v, char *buf, size_t len)
{
    if (g->obj_kind[v] == MS_HOBJ_CLASS)
        return ms_hgraph_class_name(g, ms_hgraph_class_object_class(g, v));
    return ms_hpan_obj_class(g, v, 1, buf, len);
}

/* The class whose own fields (statics when is_static) include index v, or NULL. */
static const char *declaring_class(const ms_hgraph *g, uint32_t v, int is_static)
{
    for (uint32_t c = 0; c < g->nclass; c++) {
        const ms_hclass *k = &g->classes[c];
        uint32_t first = is_static ? k->static_first : k->field_first;
        uint32_t count = is_static ? k->static_count : k->field_count;
        if (v >= first && v - first < count)
            return ms_hgraph_class_name(g, c);
    }
    return NULL;
}

static void path_item(FILE *fp, const char *reference, const char *type, const char *declared)
{
    fputs("{\"reference\": ", fp);
    ms_hprof_json_str(fp, reference);
    fputs(", \"referenceType\": ", fp);
    ms_hprof_json_str(fp, type);
    if (declared) {
        fputs(", \"declaredClass\": ", fp);
        ms_hprof_json_str(fp, declared);
    }
    fputs("}", fp);
}

/* One step of a trace as KOOM's PathItem: "Class.field" (the class alone for an array
 * entry), Shark's reference type and the class that declares the reference. */
static void reference_item(FILE *fp, const ms_hgraph *g, const ms_hprof_path *p, size_t k)
{
    char buf[512], ref[1024];
    ms_hidx from = p->obj[k - 1];
    const char *cls = class_name(g, from, buf, sizeof buf);
    uint64_t e = p->edge[k];
    ms_hprof_edge_ref r = ms_hprof_edge_describe(g, e);
    const char *type, *declared = cls;
    if (e == MS_HPATH_LOCAL_EDGE) {
        type = "LOCAL";
    } else if (!r.field) {
        type = "ARRAY_ENTRY";
    } else if (e != MS_HPATH_CLASS_EDGE && r.is_static) {
        type = "STATIC_FIELD";
        declared = declaring_class(g, ms_hedge_value_of(g->edge_label[e]), 1);
    } else {
        type = "INSTANCE_FIELD"; /* class links ("<class>", "<super>"...) too: Shark has none */
        if (e != MS_HPATH_CLASS_EDGE && (ms_hedge_kind_of(g->edge_label[e]) == MS_HEDGE_FIELD ||
                                         ms_hedge_kind_of(g->edge_label[e]) == MS_HEDGE_REFERENT))
            declared = declaring_class(g, ms_hedge_value_of(g->edge_label[e]), 0);
    }
    if (r.field)
        snprintf(ref, sizeof ref, "%s.%s", cls, r.field);
    else
        snprintf(ref, sizeof ref, "%s", cls);
    path_item(fp, ref, type, declared ? declared : cls);
}

/* KOOM's reason: its words, with the size of a large bitmap or array as KOOM adds it. */
static void leak_reason(FILE *fp, const ms_hgraph *g, const ms_hprof_leakgroup *grp,
                        const ms_hprof_large *big)
{
    char text[300];
    snprintf(text, sizeof text, "%s", grp->reason);
    for (size_t k = 0; big && k < big->n; k++) {
        const ms_hprof_large_obj *o = &big->objs[k];
        if (o->obj != grp->objs[0])
            continue;
        if (o->what == MS_HLARGE_BITMAP)
            snprintf(text, sizeof text, "%s, %" PRId32 "x%" PRId32, grp->reason, o->width, o->height);
        else
            snprintf(text, sizeof text, "%s, %" PRIu32, grp->reason, g->obj_size[o->obj]);
        break;
    }
    ms_hprof_json_str(fp, text);
}

static void gc_path(FILE *fp, const ms_hgraph *g, const ms_hprof_leakgroup *grp, const ms_hprof_large *big)
{
    char buf[512];
    fprintf(fp, "{\"instanceCount\": %zu, \"leakReason\": ", grp->count);
    leak_reason(fp, g, grp, big);
    fputs(", \"gcRoot\": ", fp);
    ms_hprof_json_str(fp, root_description(grp->trace.root_type));
    fputs(", \"signature\": ", fp);
    ms_hprof_json_str(fp, grp->signature);
    fputs(", \"path\": [", fp);
    for (size_t k = 1; k < grp->trace.len; k++) {
        fputs(k > 1 ? ", " : "", fp);
        reference_item(fp, g, &grp->trace, k);
    }
    ms_hidx leak = grp->trace.obj[grp->trace.len - 1];
    uint8_t kind = g->obj_kind[leak];
    fputs(grp->trace.len > 1 ? ", " : "", fp);
    path_item(fp, class_name(g, leak, buf, sizeof buf),
              kind == MS_HOBJ_CLASS ? "class" : kind == MS_HOBJ_INSTANCE ? "instance" : "array", NULL);
    fputs("]}", fp);
}

/* KOOM prints object ids as the decimal value of their low 32 bits. */
static void koom_object_id(FILE *fp, const ms_hgraph *g, ms_hidx v)
{
    fprintf(fp, "\"%" PRIu64 "\"", ms_hgraph_id(g, v) & 0xffffffffu);
}

int ms_hprof_koom_print(FILE *fp, const ms_hgraph *g, const ms_hprof_leaks *l,
                        const ms_hprof_large *big, char *err, size_t errlen)
{
    char buf[512];
    fputs("{\"runningInfo\": {", fp);
    if (l->build.sdk >= 0)
        fprintf(fp, "\"sdkInt\": \"%d\"", l->build.sdk);
    if (*l->build.manufacturer) {
        fputs(l->build.sdk >= 0 ? ", \"manufacture\": " : "\"manufacture\": ", fp);
        ms_hprof_json_str(fp, l->build.manufacturer);
    }
    fputs("},\n \"gcPaths\": [", fp);
    for (size_t k = 0; k < l->ngroups; k++) {
        fputs(k ? ",\n  " : "\n  ", fp);
        gc_path(fp, g, &l->groups[k], big);
    }
    fputs(l->ngroups ? "\n ],\n \"classInfos\": [" : "],\n \"classInfos\": [", fp);
    size_t n = 0;
    for (uint32_t c = 0; l->koom_classes && c < g->nclass; c++) {
        if (!l->koom_classes[c])
            continue;
        fputs(n++ ? ",\n  {\"className\": " : "\n  {\"className\": ", fp);
        ms_hprof_json_str(fp, ms_hgraph_class_name(g, c));
        fprintf(fp, ", \"instanceCount\": \"%" PRIu32 "\"}", l->koom_classes[c]);
    }
    fputs(n ? "\n ],\n \"leakObjects\": [" : "],\n \"leakObjects\": [", fp);
    for (size_t k = 0; big && k < big->n; k++) {
        const ms_hprof_large_obj *o = &big->objs[k];
        fputs(k ? ",\n  {\"className\": " : "\n  {\"className\": ", fp);
        ms_hprof_json_str(fp, ms_hpan_obj_class(g, o->obj, 1, buf, sizeof buf));
        if (o->what == MS_HLARGE_BITMAP)
            fprintf(fp, ", \"size\": \"%" PRId64 "\", \"extDetail\": \"%" PRId32 " x %" PRId32 "\"",
                    (int64_t)o->width * o->height, o->width, o->height);
        else
            fprintf(fp, ", \"size\": \"%" PRIu32 "\"", g->obj_size[o->obj]);
        fputs(", \"objectId\": ", fp);
        koom_object_id(fp, g, o->obj);
        fputs("}", fp);
    }
    fputs(big && big->n ? "\n ],\n \"analysisDone\": true}\n" : "],\n \"analysisDone\": true}\n", fp);
    if (ferror(fp)) {
        ms_hprof_set_err(err, errlen, "write error");
        return -1;
    }
    return 0;
}
