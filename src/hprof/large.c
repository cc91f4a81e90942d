/* KOOM's large-object questions: bitmaps over a pixel count, arrays over a byte size,
 * the number of live threads. Bitmap sizes are the mWidth and mHeight fields, read by the
 * bounded second pass of values.c. Never trusts the file; never prints except into the
 * FILE given to the print function. */
#include "hprof/large.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hprof/errmsg.h"
#include "hprof/inspect.h"
#include "hprof/json_out.h"
#include "hprof/values.h"

void ms_hprof_large_free(ms_hprof_large *l)
{
    if (!l)
        return;
    free(l->objs);
    memset(l, 0, sizeof *l);
}

static int cmp_large(const void *a, const void *b)
{
    const ms_hprof_large_obj *x = a, *y = b;
    if (x->what != y->what)
        return x->what == MS_HLARGE_BITMAP ? -1 : y->what == MS_HLARGE_BITMAP ? 1 : 0;
    if (x->retained != y->retained)
        return x->retained > y->retained ? -1 : 1;
    return x->obj < y->obj ? -1 : x->obj > y->obj;
}

static int push(ms_hprof_large *l, size_t *cap, ms_hprof_large_obj o)
{
    if (l->n == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        ms_hprof_large_obj *n = realloc(l->objs, c * sizeof *n);
        if (!n)
            return -1;
        l->objs = n;
        *cap = c;
    }
    l->objs[l->n++] = o;
    return 0;
}

int ms_hprof_find_large(const char *path, const ms_hgraph *g, const ms_hprof_domresult *r,
                        const ms_hprof_large_opts *o, ms_hprof_large *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->opts = *o;
    out->retained_known = r != NULL;
    uint8_t *bitmap = calloc((size_t)g->nclass + 1, 1);
    ms_hvalreq *req = NULL;
    size_t nreq = 0, cap = 0;
    int rc = -1;
    if (!bitmap)
        goto oom;
    /* field offsets of mWidth and mHeight, per Bitmap class (Bitmap is final on Android,
     * but vendors have subclassed it) */
    long *woff = calloc((size_t)g->nclass + 1, sizeof *woff), *hoff = calloc((size_t)g->nclass + 1, sizeof *hoff);
    if (!woff || !hoff) {
        free(woff);
        free(hoff);
        goto oom;
    }
    for (uint32_t c = 0; c < g->nclass; c++) {
        if (!ms_hgraph_class_is_a(g, c, "android.graphics.Bitmap"))
            continue;
        uint8_t tw = 0, th = 0;
        woff[c] = ms_hinspect_field_offset(g, c, "android.graphics.Bitmap", "mWidth", &tw);
        hoff[c] = ms_hinspect_field_offset(g, c, "android.graphics.Bitmap", "mHeight", &th);
        bitmap[c] = woff[c] >= 0 && hoff[c] >= 0 && tw == MS_HT_INT && th == MS_HT_INT;
    }
    for (uint32_t i = 0; i < g->nobj; i++) {
        uint32_t c = g->obj_class[i];
        if (g->obj_kind[i] != MS_HOBJ_INSTANCE || c >= g->nclass || !bitmap[c])
            continue;
        out->bitmaps++;
        if (nreq + 2 > cap) {
            size_t nc = cap ? cap * 2 : 128;
            ms_hvalreq *n = realloc(req, nc * sizeof *n);
            if (!n) {
                free(woff);
                free(hoff);
                goto oom;
            }
            req = n;
            cap = nc;
        }
        for (int k = 0; k < 2; k++) {
            memset(&req[nreq], 0, sizeof req[nreq]);
            req[nreq].id = ms_hgraph_id(g, i);
            req[nreq].off = (uint32_t)(k ? hoff[c] : woff[c]);
            req[nreq].size = 4;
            nreq++;
        }
    }
    if (nreq && ms_hprof_read_values(path, g->id_size, req, nreq, err, errlen) < 0) {
        free(woff);
        free(hoff);
        goto out;
    }
    size_t ocap = 0;
    for (uint32_t i = 0; i < g->nobj; i++) {
        uint32_t c = g->obj_class[i];
        uint8_t kind = g->obj_kind[i];
        ms_hprof_large_obj x = {.obj = i, .retained = r && r->idom[i] != MS_HIDX_NONE ? r->retained[i] : 0};
        if (kind == MS_HOBJ_INSTANCE && c < g->nclass && bitmap[c]) {
            uint64_t id = ms_hgraph_id(g, i);
            const ms_hvalreq *w = ms_hprof_value_find(req, nreq, id, (uint32_t)woff[c]);
            const ms_hvalreq *h = ms_hprof_value_find(req, nreq, id, (uint32_t)hoff[c]);
            if (!w || !h || !w->found || !h->found)
                continue;
            x.width = (int32_t)(uint32_t)w->value;
            x.height = (int32_t)(uint32_t)h->value;
            if (x.width <= 0 || x.height <= 0 || (uint64_t)x.width * (uint64_t)x.height < o->bitmap_pixels)
                continue;
            x.what = MS_HLARGE_BITMAP;
        } else if ((kind == MS_HOBJ_PRIM_ARRAY || kind == MS_HOBJ_OBJ_ARRAY) && g->obj_size[i] >= o->array_bytes) {
            x.what = kind == MS_HOBJ_PRIM_ARRAY ? MS_HLARGE_PRIM_ARRAY : MS_HLARGE_OBJ_ARRAY;
        } else {
            continue;
        }
        if (push(out, &ocap, x) < 0) {
            free(woff);
            free(hoff);
            goto oom;
        }
    }
    free(woff);
    free(hoff);
    if (out->n)
        qsort(out->objs, out->n, sizeof *out->objs, cmp_large);
    /* live threads: Thread objects a thread root holds, each once */
    uint8_t *seen = calloc((size_t)g->nobj / 8 + 1, 1);
    if (!seen)
        goto oom;
    for (uint32_t k = 0; k < g->nroot; k++) {
        ms_hidx t = g->roots[k].obj;
        if (g->roots[k].type != 0x08 || t >= g->nobj || (seen[t >> 3] >> (t & 7)) & 1)
            continue;
        seen[t >> 3] |= (uint8_t)(1u << (t & 7));
        if (g->obj_kind[t] == MS_HOBJ_INSTANCE && ms_hgraph_class_is_a(g, g->obj_class[t], "java.lang.Thread"))
            out->threads++;
    }
    free(seen);
    rc = 0;
    goto out;
oom:
    ms_hprof_set_err(err, errlen, "large: out of memory");
out:
    if (rc < 0)
        ms_hprof_large_free(out);
    free(bitmap);
    free(req);
    return rc;
}

/* "retained N bytes", or that it was not computed (--no-retained), for text; the
 * number or null for JSON. */
static const char *retained_text(const ms_hprof_large *l, const ms_hprof_large_obj *x, char *buf, size_t len)
{
    if (!l->retained_known)
        return "retained size not computed (--no-retained)";
    snprintf(buf, len, "retained %" PRIu64 " bytes", x->retained);
    return buf;
}

static const char *retained_json(const ms_hprof_large *l, const ms_hprof_large_obj *x, char *buf, size_t len)
{
    if (!l->retained_known)
        return "null";
    snprintf(buf, len, "%" PRIu64, x->retained);
    return buf;
}

int ms_hprof_large_print(FILE *fp, const ms_hgraph *g, const ms_hprof_large *l, const char *format,
                         char *err, size_t errlen)
{
    int fmt = ms_hpan_format(format);
    if (fmt != MS_HPAN_TEXT && fmt != MS_HPAN_JSON) {
        ms_hprof_set_err(err, errlen, "unknown format '%s' for large (text or json)", format);
        return -1;
    }
    char buf[512], ret[64];
    int toomany = l->threads > l->opts.threads;
    if (fmt == MS_HPAN_TEXT) {
        fprintf(fp, "bitmaps of %" PRIu64 " pixels or more (%zu bitmaps in the dump):\n", l->opts.bitmap_pixels,
                l->bitmaps);
        size_t k = 0;
        for (; k < l->n && l->objs[k].what == MS_HLARGE_BITMAP; k++) {
            const ms_hprof_large_obj *x = &l->objs[k];
            fprintf(fp, "  %s 0x%" PRIx64 "  %dx%d (%" PRIu64 " pixels), %s\n",
                    ms_hpan_obj_class(g, x->obj, 0, buf, sizeof buf), ms_hgraph_id(g, x->obj), x->width,
                    x->height, (uint64_t)x->width * (uint64_t)x->height, retained_text(l, x, ret, sizeof ret));
        }
        if (!k)
            fputs("  none\n", fp);
        fprintf(fp, "arrays of %" PRIu64 " bytes or more:\n", l->opts.array_bytes);
        if (k == l->n)
            fputs("  none\n", fp);
        for (; k < l->n; k++) {
            const ms_hprof_large_obj *x = &l->objs[k];
            fprintf(fp, "  %s 0x%" PRIx64 "  %" PRIu32 " bytes, %s\n",
                    ms_hpan_obj_class(g, x->obj, 0, buf, sizeof buf), ms_hgraph_id(g, x->obj),
                    g->obj_size[x->obj], retained_text(l, x, ret, sizeof ret));
        }
        fprintf(fp, "threads: %" PRIu32 " live%s (limit %" PRIu32 ")\n", l->threads,
                toomany ? ", too many" : "", l->opts.threads);
    } else {
        fputs("{\"bitmaps\": [", fp);
        size_t k = 0;
        for (; k < l->n && l->objs[k].what == MS_HLARGE_BITMAP; k++) {
            const ms_hprof_large_obj *x = &l->objs[k];
            fprintf(fp, "%s\n  {\"object_id\": \"0x%" PRIx64 "\", \"class\": ", k ? "," : "", ms_hgraph_id(g, x->obj));
            ms_hprof_json_str(fp, ms_hpan_obj_class(g, x->obj, 1, buf, sizeof buf));
            fprintf(fp, ", \"width\": %d, \"height\": %d, \"pixels\": %" PRIu64 ", \"shallow_bytes\": %" PRIu32
                        ", \"retained_bytes\": %s}",
                    x->width, x->height, (uint64_t)x->width * (uint64_t)x->height, g->obj_size[x->obj],
                    retained_json(l, x, ret, sizeof ret));
        }
        fputs("],\n \"arrays\": [", fp);
        for (size_t j = k; j < l->n; j++) {
            const ms_hprof_large_obj *x = &l->objs[j];
            fprintf(fp, "%s\n  {\"object_id\": \"0x%" PRIx64 "\", \"class\": ", j > k ? "," : "", ms_hgraph_id(g, x->obj));
            ms_hprof_json_str(fp, ms_hpan_obj_class(g, x->obj, 1, buf, sizeof buf));
            fprintf(fp, ", \"shallow_bytes\": %" PRIu32 ", \"retained_bytes\": %s}", g->obj_size[x->obj],
                    retained_json(l, x, ret, sizeof ret));
        }
        fprintf(fp, "],\n \"bitmap_count\": %zu, \"threads\": %" PRIu32 ", \"thread_limit\": %" PRIu32
                    ", \"too_many_threads\": %s,\n \"bitmap_pixels\": %" PRIu64 ", \"array_bytes\": %" PRIu64 "}\n",
                l->bitmaps, l->threads, l->opts.threads, toomany ? "true" : "false", l->opts.bitmap_pixels,
                l->opts.array_bytes);
    }
    if (ferror(fp)) {
        ms_hprof_set_err(err, errlen, "write error");
        return -1;
    }
    return 0;
}
