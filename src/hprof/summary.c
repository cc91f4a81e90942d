/* Summary of a heap dump (see summary.h). Counts over the graph's flat arrays, then
 * formatting; never touches the file and never prints anywhere but the given FILE. */
#include "hprof/summary.h"
#include "hprof/json_out.h"

#include <string.h>
#include <time.h>

#include "hprof/reader.h"

void ms_hsummary_compute(const ms_hgraph *g, ms_hsummary *s)
{
    memset(s, 0, sizeof *s);
    for (uint32_t i = 0; i < g->nobj; i++) {
        switch (g->obj_kind[i]) {
        case MS_HOBJ_INSTANCE: s->instances++; break;
        case MS_HOBJ_OBJ_ARRAY: s->obj_arrays++; break;
        case MS_HOBJ_PRIM_ARRAY: s->prim_arrays++; break;
        default: s->classes++; break;
        }
        s->shallow += g->obj_size[i];
        s->heap_objects[g->obj_heap[i]]++;
        s->heap_shallow[g->obj_heap[i]] += g->obj_size[i];
    }
    /* root records as written (a thread-object record naming no object included, while
     * g->roots leaves it out) */
    static const uint8_t root_tags[] = {0xFF, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
                                        0x89, 0x8A, 0x8B, 0x8C, 0x8D, 0x8E, 0x90};
    for (size_t t = 0; t < sizeof root_tags; t++)
        s->roots[root_tags[t]] = g->subrecord_count[root_tags[t]];
}

static void iso_time(uint64_t ms, char *buf, size_t len)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm)) {
        snprintf(buf, len, "?");
        return;
    }
    size_t n = strlen(buf);
    snprintf(buf + n, len - n, ".%03uZ", (unsigned)(ms % 1000));
}

static const char *model_text(const ms_hsize_model *m, char *buf, size_t len)
{
    if (m->flavor == MS_HSIZE_ANDROID)
        snprintf(buf, len, "Android (perflib): field and element bytes, no headers");
    else
        snprintf(buf, len, "HotSpot (MAT): header %u, references %u%s, alignment %u", m->header,
                 m->ref_size, m->compressed_oops                         ? " (compressed oops)"
                 : m->header == 12 && m->ref_size == 8 ? " (compressed class pointers only)"
                                                       : "", m->align);
    return buf;
}

static int print_json(FILE *fp, const char *path, const ms_hgraph *g, const ms_hsummary *s)
{
    char ts[64], mb[160];
    iso_time(g->timestamp_ms, ts, sizeof ts);
    fprintf(fp, "{\n  \"file\": ");
    ms_hprof_json_str(fp, path);
    fprintf(fp, ",\n  \"version\": ");
    ms_hprof_json_str(fp, g->version);
    fprintf(fp, ",\n  \"id_size\": %u,\n  \"timestamp\": %llu,\n  \"timestamp_iso\": \"%s\",\n",
            g->id_size, (unsigned long long)g->timestamp_ms, ts);
    fprintf(fp, "  \"file_bytes\": %llu,\n", (unsigned long long)g->file_size);
    fprintf(fp, "  \"classes\": %llu,\n  \"instances\": %llu,\n  \"object_arrays\": %llu,\n"
                "  \"primitive_arrays\": %llu,\n  \"objects\": %u,\n  \"shallow_bytes\": %llu,\n"
                "  \"references\": %llu,\n  \"strings\": %llu,\n",
            (unsigned long long)s->classes, (unsigned long long)s->instances,
            (unsigned long long)s->obj_arrays, (unsigned long long)s->prim_arrays, g->nobj,
            (unsigned long long)s->shallow, (unsigned long long)g->nedge,
            (unsigned long long)g->nstrings);
    fprintf(fp, "  \"size_model\": ");
    ms_hprof_json_str(fp, model_text(&g->model, mb, sizeof mb));
    fprintf(fp, ",\n  \"roots\": {");
    int first = 1;
    for (int t = 0; t < 256; t++)
        if (s->roots[t]) {
            fprintf(fp, "%s\"%s\": %llu", first ? "" : ", ", ms_hroot_type_key((uint8_t)t),
                    (unsigned long long)s->roots[t]);
            first = 0;
        }
    fprintf(fp, "},\n  \"heaps\": {");
    first = 1;
    for (uint32_t h = 0; h < g->nheap; h++) {
        if (!s->heap_objects[h])
            continue;
        fprintf(fp, "%s", first ? "" : ", ");
        ms_hprof_json_str(fp, g->strs + g->heaps[h].name);
        fprintf(fp, ": {\"objects\": %llu, \"shallow_bytes\": %llu}",
                (unsigned long long)s->heap_objects[h], (unsigned long long)s->heap_shallow[h]);
        first = 0;
    }
    fprintf(fp, "},\n  \"records\": {");
    first = 1;
    for (int t = 0; t < 256; t++)
        if (g->record_count[t]) {
            if (strcmp(ms_hprof_record_name((uint8_t)t), "UNKNOWN"))
                fprintf(fp, "%s\"%s\": %llu", first ? "" : ", ", ms_hprof_record_name((uint8_t)t),
                        (unsigned long long)g->record_count[t]);
            else
                fprintf(fp, "%s\"UNKNOWN_0x%02x\": %llu", first ? "" : ", ", t,
                        (unsigned long long)g->record_count[t]);
            first = 0;
        }
    fprintf(fp, "},\n  \"subrecords\": {");
    first = 1;
    for (int t = 0; t < 256; t++)
        if (g->subrecord_count[t]) {
            if (strcmp(ms_hprof_subrecord_name((uint8_t)t), "UNKNOWN"))
                fprintf(fp, "%s\"%s\": %llu", first ? "" : ", ", ms_hprof_subrecord_name((uint8_t)t),
                        (unsigned long long)g->subrecord_count[t]);
            else
                fprintf(fp, "%s\"UNKNOWN_0x%02x\": %llu", first ? "" : ", ", t,
                        (unsigned long long)g->subrecord_count[t]);
            first = 0;
        }
    fprintf(fp, "},\n  \"dangling_references\": %llu,\n  \"archived_references\": %llu,\n  \"duplicate_ids\": %llu,\n",
            (unsigned long long)g->dangling_refs, (unsigned long long)g->archived_refs,
            (unsigned long long)g->duplicate_ids);
    fprintf(fp, "  \"ends_early\": %s,\n", g->ends_early ? "true" : "false");
    fprintf(fp, "  \"problem_count\": %llu,\n  \"problems\": [", (unsigned long long)g->problem_total);
    for (uint32_t i = 0; i < g->nproblem; i++) {
        const ms_hproblem *p = &g->problems[i];
        fprintf(fp, "%s\n    {\"offset\": %llu, \"record\": \"%s\", \"subrecord\": \"%s\", \"message\": ",
                i ? "," : "", (unsigned long long)p->offset, ms_hprof_record_name(p->record),
                p->subrecord ? ms_hprof_subrecord_name(p->subrecord) : "");
        ms_hprof_json_str(fp, p->msg);
        fputc('}', fp);
    }
    fprintf(fp, "%s]\n}\n", g->nproblem ? "\n  " : "");
    return 0;
}

static void human(uint64_t b, char *buf, size_t len)
{
    if (b >= (1ull << 30))
        snprintf(buf, len, "%.2f GiB", (double)b / (1ull << 30));
    else if (b >= (1ull << 20))
        snprintf(buf, len, "%.2f MiB", (double)b / (1ull << 20));
    else if (b >= 1024)
        snprintf(buf, len, "%.2f KiB", (double)b / 1024);
    else
        snprintf(buf, len, "%llu B", (unsigned long long)b);
}

static int print_text(FILE *fp, const char *path, const ms_hgraph *g, const ms_hsummary *s)
{
    char ts[64], mb[160], h1[32];
    iso_time(g->timestamp_ms, ts, sizeof ts);
    fprintf(fp, "file              %s (%llu bytes)\n", path, (unsigned long long)g->file_size);
    fprintf(fp, "format            %s, %u-byte identifiers\n", g->version, g->id_size);
    fprintf(fp, "dumped at         %s\n", ts);
    fprintf(fp, "size model        %s\n", model_text(&g->model, mb, sizeof mb));
    human(s->shallow, h1, sizeof h1);
    fprintf(fp, "classes           %llu\ninstances         %llu\nobject arrays     %llu\n"
                "primitive arrays  %llu\nobjects           %u\nshallow size      %llu bytes (%s)\n"
                "references        %llu\nstrings           %llu\n",
            (unsigned long long)s->classes, (unsigned long long)s->instances,
            (unsigned long long)s->obj_arrays, (unsigned long long)s->prim_arrays, g->nobj,
            (unsigned long long)s->shallow, h1, (unsigned long long)g->nedge,
            (unsigned long long)g->nstrings);
    uint64_t nroots = 0;
    for (int t = 0; t < 256; t++)
        nroots += s->roots[t];
    fprintf(fp, "GC roots          %llu\n", (unsigned long long)nroots);
    for (int t = 0; t < 256; t++)
        if (s->roots[t])
            fprintf(fp, "  %-18s %llu\n", ms_hroot_type_name((uint8_t)t), (unsigned long long)s->roots[t]);
    fprintf(fp, "heaps\n");
    for (uint32_t h = 0; h < g->nheap; h++) {
        if (!s->heap_objects[h])
            continue;
        human(s->heap_shallow[h], h1, sizeof h1);
        fprintf(fp, "  %-18s %llu objects, %llu bytes (%s)\n", g->strs + g->heaps[h].name,
                (unsigned long long)s->heap_objects[h], (unsigned long long)s->heap_shallow[h], h1);
    }
    fprintf(fp, "records\n");
    for (int t = 0; t < 256; t++)
        if (g->record_count[t])
            fprintf(fp, "  %-18s %llu\n", ms_hprof_record_name((uint8_t)t), (unsigned long long)g->record_count[t]);
    if (g->archived_refs)
        fprintf(fp, "archived (CDS)    %llu references to objects of the JVM's class-data sharing archive,\n"
                    "                  left out of the dump by design (not problems)\n",
                (unsigned long long)g->archived_refs);
    if (!g->problem_total) {
        fprintf(fp, "problems          none\n");
        return 0;
    }
    fprintf(fp, "problems          %llu (dangling references %llu, duplicate ids %llu)\n",
            (unsigned long long)g->problem_total, (unsigned long long)g->dangling_refs,
            (unsigned long long)g->duplicate_ids);
    for (uint32_t i = 0; i < g->nproblem; i++) {
        const ms_hproblem *p = &g->problems[i];
        if (!p->offset && !p->record) {
            fprintf(fp, "  in all: %s\n", p->msg); /* a count over the whole file */
            continue;
        }
        fprintf(fp, "  offset %llu", (unsigned long long)p->offset);
        if (p->record)
            fprintf(fp, " %s", ms_hprof_record_name(p->record));
        if (p->subrecord)
            fprintf(fp, "/%s", ms_hprof_subrecord_name(p->subrecord));
        fprintf(fp, ": %s\n", p->msg);
    }
    return 0;
}

int ms_hsummary_print(FILE *fp, const char *path, const ms_hgraph *g, const ms_hsummary *s,
                      const char *format, char *err, size_t errlen)
{
    int rc;
    if (!format || !strcmp(format, "text"))
        rc = print_text(fp, path, g, s);
    else if (!strcmp(format, "json"))
        rc = print_json(fp, path, g, s);
    else {
        snprintf(err, errlen, "summary: unknown format '%s' (text or json)", format);
        return -1;
    }
    if (rc || ferror(fp)) {
        snprintf(err, errlen, "summary: write error");
        return -1;
    }
    return 0;
}
