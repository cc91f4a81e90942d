/* `memsight hprof <summary|histogram|dominators|path|diff>`: parses options, reads the
 * dump(s) and hands the work to src/hprof. Thin: no analysis here, and nothing printed
 * but the results and error messages. */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_common.h"
#include "commands.h"
#include "hprof/diff.h"
#include "hprof/dominators.h"
#include "hprof/graph.h"
#include "hprof/histogram.h"
#include "hprof/large.h"
#include "hprof/koom_report.h"
#include "hprof/leaks.h"
#include "hprof/paths.h"
#include "hprof/reader.h"
#include "hprof/rewrite.h"
#include "hprof/summary.h"


enum { EXIT_USAGE = 2, EXIT_PROBLEMS = 3 };

typedef struct hopts {
    const char *format;
    const char *output;
    const char *sort;
    const char *class_name;
    size_t top;
    int top_set;
    int by_class, all, no_retained, strict, progress, app_only;
    const char *to;
    const char *rules; /* leaks: "shark" (default) or "koom" */
    ms_hprof_large_opts large;
    ms_hprof_read_opts ro;
} hopts;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: memsight hprof <command> [options] FILE...\n\n"
            "commands:\n"
            "  summary FILE              header, counts, roots by type, heaps, problems\n"
            "  histogram FILE            per class: instances, shallow and retained bytes\n"
            "  dominators FILE           top retainers (or --by-class) with retained sizes\n"
            "  path FILE OBJECT_ID       shortest path from a GC root to the object\n"
            "  path FILE --class NAME    ... to the instance of NAME retaining the most\n"
            "  diff A B                  per-class change between two dumps\n"
            "  large FILE                KOOM's questions: bitmaps and arrays over a size, thread\n"
            "                            count, with retained sizes\n"
            "  strip IN OUT              copy with primitive array contents zeroed (for upload)\n"
            "  convert IN OUT --to standard|android   Android <-> standard HPROF (hprof-conv)\n"
            "  leaks FILE                destroyed Activities, Fragments, Services, Views... and\n"
            "                            watched objects still reachable, grouped by leak\n"
            "                            signature, library leaks apart, with their paths\n\n"
            "options:\n"
            "  --format text|json|csv    output format (default text; summary: text|json;\n"
            "                            leaks: text|json|koom)\n"
            "  --rules shark|koom        leaks: Shark's lifecycle rules (default) or KOOM's\n"
            "  -o, --output FILE         write to FILE (created 0600) instead of stdout\n"
            "  --sort KEY                histogram: shallow (default), retained, instances, name\n"
            "  --top N                   rows to show (histogram/dominators/diff; 0 = all)\n"
            "  --by-class                dominators: dominated size per class\n"
            "  --all                     dominators: rank every reachable object; diff: all rows\n"
            "  --no-retained             histogram/diff/leaks: skip the dominator tree (faster)\n"
            "  --size-model auto|hotspot|android   shallow-size model (docs/hprof.md)\n"
            "  --compressed-oops auto|yes|no|class-only\n"
            "                            HotSpot 8-byte-id dumps (default: guess); class-only:\n"
            "                            8-byte references, 4-byte class pointers (JDK 15+ on\n"
            "                            heaps of 32 GB or more)\n"
            "  --strict                  exit 3 when the dump has problems (dangling\n"
            "                            references, duplicate ids, absent roots)\n"
            "  --threads 1|2             threads reading the dump (default: 2 for large dumps)\n"
            "  --no-progress             no progress on stderr (shown only on a terminal)\n");
}

/* `memsight hprof COMMAND --help`: what the command does and the options it takes. */
static const struct {
    const char *name, *text;
} command_help[] = {
    {"summary", "usage: memsight hprof summary FILE [--format text|json] [--strict]\n\n"
                "Header, counts of classes, instances and arrays, GC roots by type, heaps, record\n"
                "counts and the problems met while reading (first 64 listed, all counted).\n"},
    {"histogram", "usage: memsight hprof histogram FILE [--sort shallow|retained|instances|name]\n"
                  "                          [--top N] [--no-retained] [--format text|json|csv]\n\n"
                  "One row per class: instances, shallow bytes, and retained bytes (the dominated\n"
                  "size of the class; --no-retained skips the dominator tree). Text shows 40 rows,\n"
                  "JSON and CSV every row, unless --top N says otherwise (0: all).\n"},
    {"dominators", "usage: memsight hprof dominators FILE [--top N] [--by-class] [--all]\n"
                   "                           [--format text|json|csv]\n\n"
                   "The objects the virtual root dominates, largest retained size first (text 25\n"
                   "rows, JSON and CSV every row, unless --top N says otherwise);\n"
                   "--all ranks every reachable object instead, so nested retainers (a map held by\n"
                   "a static) appear with their own retained size; --by-class gives the dominated\n"
                   "size per class.\n"},
    {"path", "usage: memsight hprof path FILE OBJECT_ID [--format text|json|csv]\n"
             "       memsight hprof path FILE --class NAME\n\n"
             "The shortest chain of strong references from a GC root to the object (with --class:\n"
             "the reachable instance of NAME that retains the most).\n"},
    {"diff", "usage: memsight hprof diff A B [--top N] [--all] [--no-retained] [--format text|json|csv]\n\n"
             "Per class, the change from dump A to dump B of instances, shallow and retained bytes;\n"
             "--all shows unchanged rows too. Text shows 25 rows, JSON and CSV every row, unless\n"
             "--top N says otherwise.\n"},
    {"large", "usage: memsight hprof large FILE [--bitmap-pixels N] [--array-bytes N] [--thread-limit N]\n"
              "                      [--no-retained] [--format text|json]\n\n"
              "KOOM's heap questions: android.graphics.Bitmap instances of at least N pixels (mWidth x\n"
              "mHeight; default 768 x 1366 + 1), primitive and object arrays of at least N bytes\n"
              "(default 262144), each with its retained size, and the live threads against a limit\n"
              "(default 750).\n"},
    {"strip", "usage: memsight hprof strip IN OUT [--app-only]\n\n"
              "Writes OUT (0600), a valid HPROF file like IN whose primitive array contents are zeros:\n"
              "the same objects, references and sizes, without strings, pixels or other data (for\n"
              "upload). --app-only (Android dumps) also drops the zygote and image heaps' objects.\n"},
    {"convert", "usage: memsight hprof convert IN OUT --to standard|android [--app-only]\n\n"
                "standard: an Android dump (JAVA PROFILE 1.0.3) in the standard format, with hprof-conv's\n"
                "rules (Android roots become unknown roots, heap markers dropped); --app-only is\n"
                "hprof-conv -z. android: a standard dump with 4-byte ids marked as Android's.\n"},
    {"leaks", "usage: memsight hprof leaks FILE [--rules shark|koom] [--no-retained]\n"
              "                      [--format text|json|koom] [--bitmap-pixels N] [--array-bytes N]\n\n"
              "Objects whose lifecycle ended (destroyed Activities, Services, Fragments, Windows,\n"
              "Dialogs, detached Views, cleared ViewModels, objects LeakCanary watches...) but\n"
              "still strongly reachable, with the path from a GC root and the reason of every\n"
              "step, grouped by leak signature; known Android and vendor leaks (library leaks)\n"
              "reported apart with their description. --rules koom chooses the objects as Kwai's\n"
              "KOOM does (Activities destroyed or finishing, Fragments without a manager, large\n"
              "Bitmaps and arrays); --format koom (implies --rules koom) writes KOOM's HeapReport\n"
              "JSON. See docs/hprof-analysis.md.\n"},
};

static int command_usage(const char *sub)
{
    for (size_t k = 0; k < sizeof command_help / sizeof command_help[0]; k++)
        if (!strcmp(sub, command_help[k].name) || (!strcmp(sub, "histo") && !strcmp(command_help[k].name, "histogram"))) {
            fputs(command_help[k].text, stdout);
            fputs("\ncommon options: -o FILE, --size-model, --compressed-oops, --strict, --threads,\n"
                  "--no-progress (memsight hprof --help)\n", stdout);
            return 1;
        }
    return 0;
}

static void progress_cb(void *arg, uint64_t done, uint64_t total)
{
    const char *path = arg;
    if (!total)
        return;
    fprintf(stderr, "\rreading %s: %3u%%", path, (unsigned)(done * 100 / total));
    if (done >= total)
        fprintf(stderr, "\r\033[K");
    fflush(stderr);
}

static ms_hgraph *load(const char *path, hopts *o)
{
    ms_hgraph *g = NULL;
    char err[600];
    ms_hprof_read_opts ro = o->ro;
    if (o->progress && isatty(2)) {
        ro.progress = progress_cb;
        ro.progress_arg = (void *)path;
    }
    if (ms_hprof_read(path, &ro, &g, err, sizeof err)) {
        fprintf(stderr, "memsight hprof: %s\n", err);
        return NULL;
    }
    if (g->ends_early)
        fprintf(stderr, "memsight hprof: %s: the file ends early (cut at a record boundary?): "
                        "results cover what it holds\n", path);
    if (g->problem_total)
        fprintf(stderr, "memsight hprof: %s: %llu problem(s) while reading (see 'memsight hprof summary')%s\n",
                path, (unsigned long long)g->problem_total,
                o->strict ? "" : "; results cover what could be read");
    return g;
}

/* Runs the dominator tree; NULL (message printed) on failure. */
static ms_hprof_domresult *dominators(const ms_hgraph *g, const char *path)
{
    ms_hprof_domresult *r = NULL;
    char err[400];
    if (ms_hprof_dominators(g, &r, err, sizeof err)) {
        fprintf(stderr, "memsight hprof: %s: %s\n", path, err);
        return NULL;
    }
    return r;
}

/* With --strict, a successful command whose dump(s) had problems exits EXIT_PROBLEMS. */
static int strict_exit(int rc, const hopts *o, uint64_t problems)
{
    return !rc && o->strict && problems ? EXIT_PROBLEMS : rc;
}

/* Commands that read one dump: says so when given another number of files. */
static int one_file(const char *cmd, int n)
{
    if (n == 1)
        return 1;
    fprintf(stderr, "memsight hprof %s: one FILE expected\n", cmd);
    return 0;
}

static int cmd_summary(FILE *out, int n, char **files, hopts *o)
{
    if (!one_file("summary", n))
        return EXIT_USAGE;
    o->ro.counts_only = 1; /* counts only: the references are not stored */
    ms_hgraph *g = load(files[0], o);
    if (!g)
        return 1;
    ms_hsummary s;
    char err[300];
    ms_hsummary_compute(g, &s);
    int rc = ms_hsummary_print(out, files[0], g, &s, o->format, err, sizeof err) ? 1 : 0;
    if (rc)
        fprintf(stderr, "memsight hprof: %s\n", err);
    rc = strict_exit(rc, o, g->problem_total);
    ms_hgraph_free(g);
    return rc;
}

/* Rows shown without --top: text shows the first text_rows, JSON and CSV every row (a
 * script reads all of it and should not have to know the text's limit). */
static size_t rows_shown(const hopts *o, size_t text_rows)
{
    if (o->top_set)
        return o->top;
    return o->format && strcmp(o->format, "text") ? 0 : text_rows;
}

static int cmd_histogram(FILE *out, int n, char **files, hopts *o)
{
    if (!one_file("histogram", n))
        return EXIT_USAGE;
    int key = ms_hhist_sort_key(o->sort ? o->sort : "shallow");
    if (key < 0) {
        fprintf(stderr, "memsight hprof histogram: unknown --sort '%s'\n", o->sort);
        return EXIT_USAGE;
    }
    o->ro.counts_only = o->no_retained; /* no dominator tree: the references are not stored */
    ms_hgraph *g = load(files[0], o);
    if (!g)
        return 1;
    int rc = 0;
    char err[400];
    uint64_t *ret = NULL;
    ms_hprof_domresult *dr = NULL;
    if (!o->no_retained) {
        dr = dominators(g, files[0]);
        ms_hgraph_drop_edges(g); /* not needed again: less memory for the aggregation */
        ret = dr ? calloc((size_t)g->nclass + 1, sizeof *ret) : NULL;
        if (ret && ms_hprof_class_retained(g, dr, ret, NULL, err, sizeof err)) {
            fprintf(stderr, "memsight hprof: %s\n", err);
            free(ret);
            ret = NULL;
        }
    }
    if (key == MS_HHIST_SORT_RETAINED && !ret)
        fprintf(stderr, "memsight hprof: retained sizes are not available; sorting by shallow size\n");
    ms_hhist h;
    if (ms_hhist_build(g, ret, &h, err, sizeof err)) {
        fprintf(stderr, "memsight hprof: %s\n", err);
        rc = 1;
    } else {
        ms_hhist_sort(&h, g, key == MS_HHIST_SORT_RETAINED && !ret ? MS_HHIST_SORT_SHALLOW : key);
        if (ms_hhist_print(out, g, &h, rows_shown(o, 40),
                           o->format, err, sizeof err)) {
            fprintf(stderr, "memsight hprof: %s\n", err);
            rc = 1;
        }
        ms_hhist_free(&h);
    }
    rc = strict_exit(rc, o, g->problem_total);
    free(ret);
    if (dr)
        ms_hprof_domresult_free(dr);
    ms_hgraph_free(g);
    return rc;
}

static int cmd_dominators(FILE *out, int n, char **files, hopts *o)
{
    if (!one_file("dominators", n))
        return EXIT_USAGE;
    ms_hgraph *g = load(files[0], o);
    if (!g)
        return 1;
    int rc = 1;
    char err[400];
    ms_hprof_domresult *dr = dominators(g, files[0]);
    if (dr) {
        if (o->all && o->by_class)
            fprintf(stderr, "memsight hprof: --all is ignored with --by-class\n");
        rc = 0;
        /* --all: every reachable object ranked, so a retainer below the top level (a map
         * held by a static) shows its own retained size */
        if (ms_hprof_dominators_print_ex(out, g, dr, rows_shown(o, 25), o->by_class,
                                         o->all && !o->by_class, o->format ? o->format : "text", err,
                                         sizeof err)) {
            fprintf(stderr, "memsight hprof: %s\n", err);
            rc = 1;
        }
        ms_hprof_domresult_free(dr);
    }
    rc = strict_exit(rc, o, g->problem_total);
    ms_hgraph_free(g);
    return rc;
}

static int cmd_path(FILE *out, int n, char **files, hopts *o)
{
    if (n != (o->class_name ? 1 : 2)) {
        fprintf(stderr, "memsight hprof path: FILE OBJECT_ID, or FILE --class NAME expected\n");
        return EXIT_USAGE;
    }
    ms_hgraph *g = load(files[0], o);
    if (!g)
        return 1;
    int rc = 1;
    char err[400];
    ms_hidx target = MS_HIDX_NONE;
    if (o->class_name) {
        ms_hprof_domresult *dr = dominators(g, files[0]);
        if (dr) {
            if (ms_hprof_largest_instance(g, dr, o->class_name, &target, err, sizeof err))
                fprintf(stderr, "memsight hprof: %s: %s\n", files[0], err);
            ms_hprof_domresult_free(dr);
        }
    } else if (ms_hprof_parse_object_id(g, files[1], &target, err, sizeof err)) {
        fprintf(stderr, "memsight hprof: %s: %s\n", files[0], err);
    }
    if (target != MS_HIDX_NONE) {
        ms_hprof_path p;
        memset(&p, 0, sizeof p);
        if (ms_hprof_path_to(g, target, &p, err, sizeof err)) {
            fprintf(stderr, "memsight hprof: %s\n", err);
        } else {
            rc = 0;
            if (ms_hprof_path_print(out, g, &p, o->format ? o->format : "text", err, sizeof err)) {
                fprintf(stderr, "memsight hprof: %s\n", err);
                rc = 1;
            }
            ms_hprof_path_free(&p);
        }
    }
    rc = strict_exit(rc, o, g->problem_total);
    ms_hgraph_free(g);
    return rc;
}

static int cmd_diff(FILE *out, int n, char **files, hopts *o)
{
    if (n != 2) {
        fprintf(stderr, "memsight hprof diff: two FILEs expected (A B)\n");
        return EXIT_USAGE;
    }
    /* without retained sizes the references are not stored; with them, each dump's
     * are dropped once its tree is built, before the other dump is read */
    o->ro.counts_only = o->no_retained;
    ms_hprof_domresult *ra = NULL, *rb = NULL;
    ms_hgraph *a = load(files[0], o);
    if (!a)
        return 1;
    if (!o->no_retained) {
        ra = dominators(a, files[0]);
        ms_hgraph_drop_edges(a);
    }
    ms_hgraph *b = load(files[1], o);
    if (!b) {
        if (ra)
            ms_hprof_domresult_free(ra);
        ms_hgraph_free(a);
        return 1;
    }
    if (ra) {
        rb = dominators(b, files[1]);
        ms_hgraph_drop_edges(b);
        if (!rb) {
            ms_hprof_domresult_free(ra);
            ra = NULL;
        }
    }
    int rc = 0;
    char err[400];
    ms_hprof_diffresult d;
    memset(&d, 0, sizeof d);
    if (ms_hprof_diff(a, ra, b, rb, &d, err, sizeof err)) {
        fprintf(stderr, "memsight hprof: %s\n", err);
        rc = 1;
    } else {
        if (ms_hprof_diff_print(out, &d, rows_shown(o, 25), o->all, o->format ? o->format : "text",
                                err, sizeof err)) {
            fprintf(stderr, "memsight hprof: %s\n", err);
            rc = 1;
        }
        ms_hprof_diff_free(&d);
    }
    rc = strict_exit(rc, o, a->problem_total + b->problem_total);
    if (ra)
        ms_hprof_domresult_free(ra);
    if (rb)
        ms_hprof_domresult_free(rb);
    ms_hgraph_free(a);
    ms_hgraph_free(b);
    return rc;
}

/* leaks and large: one dump, dominators unless --no-retained, then find and print. */
typedef int (*find_print_fn)(FILE *out, const char *path, const ms_hgraph *g,
                             const ms_hprof_domresult *dr, const hopts *o, char *err, size_t errlen);

static int find_leaks_print(FILE *out, const char *path, const ms_hgraph *g, const ms_hprof_domresult *dr,
                            const hopts *o, char *err, size_t errlen)
{
    ms_hprof_leaks l;
    if (ms_hprof_find_leaks(path, g, dr, &l, err, errlen))
        return -1;
    int rc = ms_hprof_leaks_print(out, g, &l, o->format ? o->format : "text", err, errlen) ? -2 : 0;
    ms_hprof_leaks_free(&l);
    return rc;
}

static int find_koom_print(FILE *out, const char *path, const ms_hgraph *g, const ms_hprof_domresult *dr,
                           const hopts *o, char *err, size_t errlen)
{
    ms_hkoom_opts ko = {o->large.bitmap_pixels, o->large.array_bytes};
    ms_hprof_leaks l;
    if (ms_hprof_find_leaks_koom(path, g, dr, &ko, &l, err, errlen))
        return -1;
    int rc = 0;
    if (o->format && !strcmp(o->format, "koom")) {
        ms_hprof_large big;
        if (ms_hprof_find_large(path, g, dr, &o->large, &big, err, errlen)) {
            ms_hprof_leaks_free(&l);
            return -1;
        }
        rc = ms_hprof_koom_print(out, g, &l, &big, err, errlen) ? -2 : 0;
        ms_hprof_large_free(&big);
    } else {
        rc = ms_hprof_leaks_print(out, g, &l, o->format ? o->format : "text", err, errlen) ? -2 : 0;
    }
    ms_hprof_leaks_free(&l);
    return rc;
}

static int find_large_print(FILE *out, const char *path, const ms_hgraph *g, const ms_hprof_domresult *dr,
                            const hopts *o, char *err, size_t errlen)
{
    ms_hprof_large l;
    if (ms_hprof_find_large(path, g, dr, &o->large, &l, err, errlen))
        return -1;
    int rc = ms_hprof_large_print(out, g, &l, o->format ? o->format : "text", err, errlen) ? -2 : 0;
    ms_hprof_large_free(&l);
    return rc;
}

static int cmd_find(const char *cmd, find_print_fn fn, FILE *out, int n, char **files, hopts *o)
{
    if (!one_file(cmd, n))
        return EXIT_USAGE;
    if (o->format && !strcmp(o->format, "csv")) {
        fprintf(stderr, "memsight hprof %s: --format text or json\n", cmd);
        return EXIT_USAGE;
    }
    ms_hgraph *g = load(files[0], o);
    if (!g)
        return 1;
    ms_hprof_domresult *dr = o->no_retained ? NULL : dominators(g, files[0]);
    int rc = 1;
    char err[400];
    if (o->no_retained || dr) {
        int e = fn(out, files[0], g, dr, o, err, sizeof err);
        if (e == -1) /* finding failed: about the file */
            fprintf(stderr, "memsight hprof: %s: %s\n", files[0], err);
        else if (e == -2) /* printing failed */
            fprintf(stderr, "memsight hprof: %s\n", err);
        rc = e ? 1 : 0;
    }
    rc = strict_exit(rc, o, g->problem_total);
    if (dr)
        ms_hprof_domresult_free(dr);
    ms_hgraph_free(g);
    return rc;
}

static int cmd_leaks(FILE *out, int n, char **files, hopts *o)
{
    int koom_format = o->format && !strcmp(o->format, "koom");
    if (koom_format && o->rules && strcmp(o->rules, "koom")) {
        fprintf(stderr, "memsight hprof leaks: --format koom reports KOOM's rules, not --rules %s\n", o->rules);
        return EXIT_USAGE;
    }
    int koom = koom_format || (o->rules && !strcmp(o->rules, "koom"));
    return cmd_find("leaks", koom ? find_koom_print : find_leaks_print, out, n, files, o);
}

static int cmd_large(FILE *out, int n, char **files, hopts *o)
{
    return cmd_find("large", find_large_print, out, n, files, o);
}

/* strip and convert: IN is streamed into OUT, written 0600 under a temporary name and
 * renamed only once complete. */
static int cmd_rewrite(const char *cmd, int n, char **files, hopts *o, int mode)
{
    if (n != 2) {
        fprintf(stderr, "memsight hprof %s: IN OUT expected\n", cmd);
        return EXIT_USAGE;
    }
    if (o->output) {
        fprintf(stderr, "memsight hprof %s: the output is the second FILE, not -o\n", cmd);
        return EXIT_USAGE;
    }
    ms_outfile of;
    char err[600];
    if (ms_outfile_open(&of, files[1], err, sizeof err)) {
        fprintf(stderr, "memsight hprof %s: %s\n", cmd, err);
        return 1;
    }
    ms_hrewrite_opts ro = {.mode = mode, .app_only = o->app_only};
    if (ms_hprof_rewrite(files[0], of.fp, &ro, err, sizeof err)) {
        ms_outfile_abort(&of);
        fprintf(stderr, "memsight hprof %s: %s: %s\n", cmd, files[0], err);
        return 1;
    }
    if (ms_outfile_commit(&of, err, sizeof err)) {
        fprintf(stderr, "memsight hprof %s: %s\n", cmd, err);
        return 1;
    }
    return 0;
}

int ms_cmd_hprof(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "-h") || !strcmp(sub, "--help") || !strcmp(sub, "help")) {
        usage(stdout);
        return 0;
    }
    hopts o;
    memset(&o, 0, sizeof o);
    o.progress = 1;
    o.large = (ms_hprof_large_opts){MS_HLARGE_BITMAP_PIXELS, MS_HLARGE_ARRAY_BYTES, MS_HLARGE_THREADS};
    enum { O_FORMAT = 256, O_SORT, O_TOP, O_BYCLASS, O_ALL, O_NORET, O_MODEL, O_COMP, O_STRICT,
           O_NOPROG, O_CLASS, O_THREADS, O_TO, O_APPONLY, O_BMP, O_ARR, O_TLIM, O_RULES };
    static const struct option lo[] = {
        {"format", required_argument, 0, O_FORMAT},
        {"output", required_argument, 0, 'o'},
        {"sort", required_argument, 0, O_SORT},
        {"top", required_argument, 0, O_TOP},
        {"by-class", no_argument, 0, O_BYCLASS},
        {"all", no_argument, 0, O_ALL},
        {"no-retained", no_argument, 0, O_NORET},
        {"size-model", required_argument, 0, O_MODEL},
        {"compressed-oops", required_argument, 0, O_COMP},
        {"strict", no_argument, 0, O_STRICT},
        {"no-progress", no_argument, 0, O_NOPROG},
        {"class", required_argument, 0, O_CLASS},
        {"threads", required_argument, 0, O_THREADS},
        {"to", required_argument, 0, O_TO},
        {"app-only", no_argument, 0, O_APPONLY},
        {"bitmap-pixels", required_argument, 0, O_BMP},
        {"array-bytes", required_argument, 0, O_ARR},
        {"thread-limit", required_argument, 0, O_TLIM},
        {"rules", required_argument, 0, O_RULES},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    int subargc = argc - 1;
    char **subargv = argv + 1;
    optind = 1;
    opterr = 1;
    int c;
    while ((c = getopt_long(subargc, subargv, "o:h", lo, NULL)) != -1) {
        switch (c) {
        case O_FORMAT:
            if (strcmp(optarg, "text") && strcmp(optarg, "json") && strcmp(optarg, "csv") &&
                (strcmp(optarg, "koom") || strcmp(sub, "leaks"))) {
                fprintf(stderr, "memsight hprof: unknown --format '%s' (text, json or csv%s)\n", optarg,
                        strcmp(sub, "leaks") ? "" : "; leaks: koom too");
                return EXIT_USAGE;
            }
            o.format = optarg;
            break;
        case 'o': o.output = optarg; break;
        case O_SORT: o.sort = optarg; break;
        case O_TOP: {
            char *end;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (*optarg == '-' || *end || end == optarg) {
                fprintf(stderr, "memsight hprof: --top expects a number\n");
                return EXIT_USAGE;
            }
            o.top = (size_t)v;
            o.top_set = 1;
            break;
        }
        case O_BYCLASS: o.by_class = 1; break;
        case O_ALL: o.all = 1; break;
        case O_NORET: o.no_retained = 1; break;
        case O_MODEL:
            if (!strcmp(optarg, "auto"))
                o.ro.size_flavor = MS_HSIZE_AUTO;
            else if (!strcmp(optarg, "hotspot") || !strcmp(optarg, "mat"))
                o.ro.size_flavor = MS_HSIZE_HOTSPOT;
            else if (!strcmp(optarg, "android") || !strcmp(optarg, "perflib"))
                o.ro.size_flavor = MS_HSIZE_ANDROID;
            else {
                fprintf(stderr, "memsight hprof: unknown --size-model '%s' (auto, hotspot, android)\n", optarg);
                return EXIT_USAGE;
            }
            break;
        case O_COMP:
            if (!strcmp(optarg, "auto"))
                o.ro.compressed_oops = 0;
            else if (!strcmp(optarg, "yes"))
                o.ro.compressed_oops = 1;
            else if (!strcmp(optarg, "no"))
                o.ro.compressed_oops = 2;
            else if (!strcmp(optarg, "class-only"))
                o.ro.compressed_oops = 3;
            else {
                fprintf(stderr, "memsight hprof: --compressed-oops takes auto, yes, no or class-only\n");
                return EXIT_USAGE;
            }
            break;
        case O_STRICT: o.strict = 1; break;
        case O_NOPROG: o.progress = 0; break;
        case O_CLASS: o.class_name = optarg; break;
        case O_THREADS:
            if (strcmp(optarg, "1") && strcmp(optarg, "2")) {
                fprintf(stderr, "memsight hprof: --threads takes 1 or 2\n");
                return EXIT_USAGE;
            }
            o.ro.threads = atoi(optarg);
            break;
        case O_TO:
            if (strcmp(optarg, "standard") && strcmp(optarg, "android")) {
                fprintf(stderr, "memsight hprof: --to takes standard or android\n");
                return EXIT_USAGE;
            }
            o.to = optarg;
            break;
        case O_APPONLY: o.app_only = 1; break;
        case O_RULES:
            if (strcmp(optarg, "shark") && strcmp(optarg, "koom")) {
                fprintf(stderr, "memsight hprof: --rules takes shark or koom\n");
                return EXIT_USAGE;
            }
            o.rules = optarg;
            break;
        case O_BMP: case O_ARR: case O_TLIM: {
            char *end;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (*optarg == '-' || *end || end == optarg || (c == O_TLIM && v > UINT32_MAX)) {
                fprintf(stderr, "memsight hprof: --%s expects a number\n",
                        c == O_BMP ? "bitmap-pixels" : c == O_ARR ? "array-bytes" : "thread-limit");
                return EXIT_USAGE;
            }
            if (c == O_BMP)
                o.large.bitmap_pixels = v;
            else if (c == O_ARR)
                o.large.array_bytes = v;
            else
                o.large.threads = (uint32_t)v;
            break;
        }
        case 'h':
            if (!command_usage(sub))
                usage(stdout);
            return 0;
        default: usage(stderr); return EXIT_USAGE;
        }
    }
    int n = subargc - optind;
    char **files = subargv + optind;
    int (*fn)(FILE *, int, char **, hopts *) = NULL;
    if (!strcmp(sub, "summary"))
        fn = cmd_summary;
    else if (!strcmp(sub, "histogram") || !strcmp(sub, "histo"))
        fn = cmd_histogram;
    else if (!strcmp(sub, "dominators"))
        fn = cmd_dominators;
    else if (!strcmp(sub, "path"))
        fn = cmd_path;
    else if (!strcmp(sub, "diff"))
        fn = cmd_diff;
    else if (!strcmp(sub, "leaks"))
        fn = cmd_leaks;
    else if (!strcmp(sub, "large"))
        fn = cmd_large;
    else if (!strcmp(sub, "strip"))
        return cmd_rewrite("strip", n, files, &o, MS_HREWRITE_STRIP);
    else if (!strcmp(sub, "convert")) {
        if (!o.to) {
            fprintf(stderr, "memsight hprof convert: --to standard or --to android expected\n");
            return EXIT_USAGE;
        }
        return cmd_rewrite("convert", n, files, &o,
                           !strcmp(o.to, "standard") ? MS_HREWRITE_TO_STANDARD : MS_HREWRITE_TO_ANDROID);
    }
    if (!fn) {
        fprintf(stderr, "memsight hprof: unknown command '%s'\n", sub);
        usage(stderr);
        return EXIT_USAGE;
    }
    if (fn == cmd_summary && o.format && !strcmp(o.format, "csv")) {
        fprintf(stderr, "memsight hprof summary: --format text or json\n");
        return EXIT_USAGE;
    }
    if (!o.output)
        return fn(stdout, n, files, &o);
    ms_cli_output out;
    if (ms_cli_output_open(&out, "hprof", o.output) != 0)
        return 1;
    int rc = fn(out.fp, n, files, &o);
    if (rc == 0 || rc == EXIT_PROBLEMS) {
        if (ms_cli_output_finish(&out, "hprof") != 0)
            return 1;
    } else {
        ms_cli_output_abort(&out);
    }
    return rc;
}
