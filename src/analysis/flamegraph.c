/* Flame graphs as one self-contained SVG (also embeddable in the HTML report): frames
 * laid out here, so the picture shows in any SVG viewer; a small inline script adds
 * zoom on click, search and details. Never loads anything from the network.
 * Tools only; writes only to the stream it is given. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/export.h"
#include "analysis/stack_agg.h"

/* ---- call tree -------------------------------------------------------------------- */

typedef struct fnode {
    const char *name;
    uint32_t parent, first, next, depth;
    ms_snap_counters c;  /* the (newer) profile */
    ms_snap_counters cb; /* base, for a differential graph */
    double x, w;         /* layout, as fractions of the root */
} fnode;

typedef struct ftree {
    fnode *n;
    size_t nn, cap;
    uint32_t *hash; /* (parent, name) -> node index + 1 */
    size_t hcap;
    uint32_t maxdepth;
} ftree;

static uint64_t hkey(uint32_t parent, const char *name)
{
    uint64_t h = 1469598103934665603ull ^ parent;
    for (; *name; name++) {
        h ^= (unsigned char)*name;
        h *= 1099511628211ull;
    }
    return h;
}

static int tree_rehash(ftree *t)
{
    size_t nc = t->hcap ? t->hcap * 2 : 1024;
    uint32_t *h = calloc(nc, sizeof *h);
    if (!h)
        return -1;
    for (size_t i = 1; i < t->nn; i++) {
        size_t k = hkey(t->n[i].parent, t->n[i].name) & (nc - 1);
        while (h[k])
            k = (k + 1) & (nc - 1);
        h[k] = (uint32_t)i + 1;
    }
    free(t->hash);
    t->hash = h;
    t->hcap = nc;
    return 0;
}

static long child(ftree *t, uint32_t parent, const char *name)
{
    if ((t->nn + 1) * 2 > t->hcap && tree_rehash(t) != 0)
        return -1;
    size_t k = hkey(parent, name) & (t->hcap - 1);
    while (t->hash[k]) {
        uint32_t i = t->hash[k] - 1;
        if (t->n[i].parent == parent && !strcmp(t->n[i].name, name))
            return i;
        k = (k + 1) & (t->hcap - 1);
    }
    if (t->nn == t->cap) {
        size_t nc = t->cap * 2;
        fnode *nn = realloc(t->n, nc * sizeof *nn);
        if (!nn)
            return -1;
        t->n = nn;
        t->cap = nc;
    }
    fnode *f = &t->n[t->nn];
    memset(f, 0, sizeof *f);
    f->name = name;
    f->parent = parent;
    f->depth = t->n[parent].depth + 1;
    if (f->depth > t->maxdepth)
        t->maxdepth = f->depth;
    /* prepend; children are sorted at layout time */
    f->next = t->n[parent].first;
    t->n[parent].first = (uint32_t)t->nn;
    t->hash[k] = (uint32_t)t->nn + 1;
    return (long)t->nn++;
}

static int tree_add(ftree *t, const ms_agg *a, int base)
{
    for (size_t i = 0; i < a->nstacks; i++) {
        const ms_agg_stack *st = &a->stacks[i];
        uint32_t cur = 0;
        ms_counters_add(base ? &t->n[0].cb : &t->n[0].c, &st->c);
        for (uint32_t f = 0; f < st->nframes; f++) {
            long c = child(t, cur, a->names[st->frames[f]]);
            if (c < 0)
                return -1;
            cur = (uint32_t)c;
            ms_counters_add(base ? &t->n[cur].cb : &t->n[cur].c, &st->c);
        }
    }
    return 0;
}

static ms_metric g_metric;
static const ftree *g_tree;

static int cmp_child(const void *x, const void *y)
{
    const fnode *a = &g_tree->n[*(const uint32_t *)x], *b = &g_tree->n[*(const uint32_t *)y];
    uint64_t va = ms_metric_value(&a->c, g_metric), vb = ms_metric_value(&b->c, g_metric);
    if (va != vb)
        return va > vb ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* Sorts every node's children (largest first) and assigns x/w. */
static int layout(ftree *t, ms_metric m)
{
    double total = (double)ms_metric_value(&t->n[0].c, m);
    uint32_t *kids = malloc(t->nn * sizeof *kids);
    if (!kids)
        return -1;
    g_metric = m;
    g_tree = t;
    t->n[0].x = 0;
    t->n[0].w = total > 0 ? 1.0 : 0.0;
    /* nodes are created after their parents, so index order is a valid top-down order */
    for (size_t i = 0; i < t->nn; i++) {
        size_t k = 0;
        for (uint32_t c = t->n[i].first; c; c = t->n[c].next)
            kids[k++] = c;
        qsort(kids, k, sizeof *kids, cmp_child);
        double x = t->n[i].x;
        uint32_t prev = 0;
        for (size_t j = 0; j < k; j++) {
            fnode *c = &t->n[kids[j]];
            c->x = x;
            c->w = total > 0 ? (double)ms_metric_value(&c->c, m) / total : 0;
            if (c->w > 1) /* only from saturated counters: keep inside the parent */
                c->w = 1;
            x += c->w;
            c->next = 0;
            if (j == 0)
                t->n[i].first = kids[j];
            else
                t->n[prev].next = kids[j];
            prev = kids[j];
        }
    }
    free(kids);
    return 0;
}

/* ---- colours ---------------------------------------------------------------------- */

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void colour(const fnode *f, int diff, double maxdelta, ms_metric m, char *out, size_t len)
{
    if (diff) {
        double d = (double)ms_metric_value(&f->c, m) - (double)ms_metric_value(&f->cb, m);
        double r = maxdelta > 0 ? fabs(d) / maxdelta : 0;
        if (r > 1)
            r = 1;
        int fade = (int)(210 - 190 * r);
        if (d > 0)
            snprintf(out, len, "rgb(255,%d,%d)", fade, fade);
        else if (d < 0)
            snprintf(out, len, "rgb(%d,%d,255)", fade, fade);
        else
            snprintf(out, len, "rgb(235,235,235)");
        return;
    }
    if (f->name[0] == '[') {
        snprintf(out, len, "rgb(170,180,200)");
        return;
    }
    uint32_t h = name_hash(f->name);
    /* warm palette: red to yellow, as flame graphs are usually drawn */
    int r = 205 + (int)(h % 50), g = (int)((h >> 8) % 180) + 40, b = (int)((h >> 16) % 55);
    snprintf(out, len, "rgb(%d,%d,%d)", r, g, b);
}

/* ---- output ----------------------------------------------------------------------- */

#define FRAME_H 17
#define FONT_PX 12
#define CHAR_W 7.22 /* monospace at 12px */
#define TOP 64
#define BOTTOM 30
#define PAD 10

static void value_text(uint64_t v, ms_metric m, char *buf, size_t len)
{
    if (!strcmp(ms_metric_unit(m), "bytes"))
        ms_fmt_bytes(v, buf, len);
    else
        snprintf(buf, len, "%" PRIu64, v);
}

static void fit_label(FILE *out, const char *name, double px)
{
    if (!(px < 100000)) /* wider than any screen (or NaN): no label needs more */
        px = 100000;
    int chars = (int)((px - 6) / CHAR_W);
    if (chars < 3)
        return;
    size_t n = strlen(name);
    if ((int)n <= chars) {
        ms_xml_escape(out, name);
        return;
    }
    char *cut = strndup(name, (size_t)chars - 2);
    if (!cut)
        return;
    ms_xml_escape(out, cut);
    fputs("..", out);
    free(cut);
}

static void tooltip(FILE *out, const fnode *f, const fnode *root, int diff, ms_metric m)
{
    char b1[32], b2[32], b3[32];
    uint64_t v = ms_metric_value(&f->c, m), rv = ms_metric_value(&root->c, m);
    ms_xml_escape(out, f->name);
    fprintf(out, "\nlive: %s (%" PRIu64 " bytes) in %" PRIu64 " blocks",
            ms_fmt_bytes(f->c.live_bytes, b1, sizeof b1), f->c.live_bytes, f->c.live_blocks);
    if (f->c.alloc_blocks)
        fprintf(out, "\nallocated: %s in %" PRIu64 " blocks",
                ms_fmt_bytes(f->c.alloc_bytes, b2, sizeof b2), f->c.alloc_blocks);
    fprintf(out, "\n%.2f%% of %s", rv ? 100.0 * (double)v / (double)rv : 0.0, ms_metric_name(m));
    if (diff) {
        int64_t db = (int64_t)(f->c.live_bytes - f->cb.live_bytes);
        int64_t dn = (int64_t)(f->c.live_blocks - f->cb.live_blocks);
        fprintf(out, "\nchange: %s live (%+" PRId64 " bytes), %+" PRId64 " blocks",
                ms_fmt_sbytes(db, b3, sizeof b3), db, dn);
    }
}

/* The interactive part. It finds its <svg> by id, so several graphs can share a page. */
static const char flame_js[] =
    "(function(FG_ID){\n"
    "var svg=document.getElementById(FG_ID);\n"
    "function fail(m){svg.setAttribute('data-error',String(m));"
    "var d=svg.querySelector('.fg-details');if(d)d.textContent='script error: '+m;}\n"
    "var prevErr=window.onerror;window.onerror=function(m,s,l){fail(m+' line '+l);"
    "if(prevErr)return prevErr.apply(this,arguments);return false;};\n"
    "try{\n"
    "var W=+svg.getAttribute('data-width'),PAD=+svg.getAttribute('data-pad'),CW=" "7.22" ";\n"
    "var unit=svg.getAttribute('data-unit');\n"
    "var frames=[].slice.call(svg.querySelectorAll('g.fg-f'));\n"
    "var details=svg.querySelector('.fg-details'),matched=svg.querySelector('.fg-matched');\n"
    "var reset=svg.querySelector('.fg-reset'),searchBtn=svg.querySelector('.fg-search');\n"
    "var F=frames.map(function(g){var r=g.querySelector('rect'),t=g.querySelector('text');"
    "return {g:g,r:r,t:t,x:+g.getAttribute('data-x'),w:+g.getAttribute('data-w'),"
    "d:+g.getAttribute('data-d'),n:g.getAttribute('data-n'),v:g.getAttribute('data-v'),"
    "fill:r.getAttribute('fill')};});\n"
    "function human(v){v=+v;if(unit!=='bytes')return String(v);var u=['B','KiB','MiB','GiB','TiB'],i=0;"
    "while(v>=1024&&i<4){v/=1024;i++;}return (i?v.toFixed(v<10?2:1):v)+' '+u[i];}\n"
    "function label(f,px){var c=Math.floor((px-6)/CW);if(c<3)return '';"
    "return f.n.length<=c?f.n:f.n.substring(0,c-2)+'..';}\n"
    "var zoomed=null;\n"
    "function place(f,x,w){if(w<0.3){f.g.style.display='none';return;}f.g.style.display='';"
    "f.r.setAttribute('x',(PAD+x).toFixed(2));f.r.setAttribute('width',w.toFixed(2));"
    "f.t.setAttribute('x',(PAD+x+3).toFixed(2));f.t.textContent=label(f,w);}\n"
    "function zoom(z){zoomed=z;var span=W-2*PAD;\n"
    " F.forEach(function(f){\n"
    "  if(!z){f.g.classList.remove('fg-parent');place(f,f.x*span,f.w*span);return;}\n"
    "  var eps=1e-9;\n"
    "  if(f.d<z.d&&f.x<=z.x+eps&&f.x+f.w>=z.x+z.w-eps){f.g.classList.add('fg-parent');place(f,0,span);}\n"
    "  else if(f.d>=z.d&&f.x>=z.x-eps&&f.x+f.w<=z.x+z.w+eps){f.g.classList.remove('fg-parent');"
    "place(f,(f.x-z.x)/z.w*span,f.w/z.w*span);}\n"
    "  else f.g.style.display='none';});\n"
    " reset.style.opacity=z?1:0.35;svg.setAttribute('data-zoom',z?z.n:'');}\n"
    "F.forEach(function(f){\n"
    " f.g.addEventListener('click',function(e){zoom(f.d===0?null:f);e.stopPropagation();});\n"
    " f.g.addEventListener('mouseover',function(){details.textContent=f.n+'  \\u2014  '+human(f.v)+"
    "'  ('+(100*f.w).toFixed(2)+'%)';});\n"
    " f.g.addEventListener('mouseout',function(){details.textContent=' ';});});\n"
    "reset.addEventListener('click',function(){zoom(null);});\n"
    "function search(term){var re=null;\n"
    " if(term){try{re=new RegExp(term,'i');}catch(e){re=null;}}\n"
    " var iv=[];F.forEach(function(f){var hit=term&&(re?re.test(f.n):f.n.indexOf(term)>=0);\n"
    "  f.r.setAttribute('fill',hit?'rgb(230,0,230)':f.fill);if(hit)iv.push([f.x,f.x+f.w]);});\n"
    " iv.sort(function(a,b){return a[0]-b[0];});var tot=0,e=-1;\n"
    " iv.forEach(function(p){if(p[0]>=e){tot+=p[1]-p[0];e=p[1];}else if(p[1]>e){tot+=p[1]-e;e=p[1];}});\n"
    " var pct=term?(100*tot).toFixed(2):'';matched.textContent=term?('Matched: '+pct+'%'):'';\n"
    " svg.setAttribute('data-matched',pct);searchBtn.textContent=term?'Clear search':'Search';\n"
    " svg.setAttribute('data-search',term||'');}\n"
    "searchBtn.addEventListener('click',function(){if(svg.getAttribute('data-search')){search('');return;}"
    "var t=window.prompt('Search frames (regular expression):','');if(t)search(t);});\n"
    "document.addEventListener('keydown',function(e){if((e.ctrlKey||e.metaKey)&&e.key==='f'&&"
    "document.documentElement===svg){e.preventDefault();searchBtn.dispatchEvent(new Event('click'));}"
    "if(e.key==='Escape'){zoom(null);search('');}});\n"
    "svg.msSearch=search;svg.msZoom=function(name){var i;for(i=0;i<F.length;i++)if(F[i].n===name)"
    "{zoom(F[i]);return true;}\n"
    /* a function name alone zooms on its first call site ("name file:line") */
    "for(i=0;i<F.length;i++)if(F[i].n.indexOf(name+' ')===0){zoom(F[i]);return true;}return false;};\n"
    "var q=/[?&]s=([^&]*)/.exec(window.location.search||'');if(q)search(decodeURIComponent(q[1]));\n"
    "var qz=/[?&]zoom=([^&]*)/.exec(window.location.search||'');if(qz)svg.msZoom(decodeURIComponent(qz[1]));\n"
    "svg.setAttribute('data-ready','1');\n"
    "}catch(e){fail(e&&e.message?e.message:e);}\n"
    "})";

static int g_flame_seq;

int ms_flame_write(const ms_agg *a, const ms_agg *base, const ms_flame_opts *o, FILE *out,
                   char *err, size_t errlen)
{
    ms_metric m = o->metric;
    int W = o->width > 0 ? o->width : 1200;
    int diff = base != NULL;
    ftree t;
    memset(&t, 0, sizeof t);
    t.cap = 1024;
    t.n = calloc(t.cap, sizeof *t.n);
    if (!t.n)
        goto oom;
    t.nn = 1;
    t.n[0].name = "all";
    if (tree_add(&t, a, 0) != 0 || (base && tree_add(&t, base, 1) != 0) || layout(&t, m) != 0)
        goto oom;

    double maxdelta = 0;
    if (diff)
        for (size_t i = 1; i < t.nn; i++) {
            double d = fabs((double)ms_metric_value(&t.n[i].c, m) - (double)ms_metric_value(&t.n[i].cb, m));
            if (d > maxdelta)
                maxdelta = d;
        }

    double span = W - 2 * PAD;
    const double min_frac = 0.1 / span; /* frames narrower than 0.1px are left out */
    uint32_t depth = 0; /* of the frames drawn */
    for (size_t i = 0; i < t.nn; i++)
        if (t.n[i].w >= min_frac && t.n[i].depth > depth)
            depth = t.n[i].depth;
    int H = TOP + (int)(depth + 1) * FRAME_H + BOTTOM;
    char id[32];
    snprintf(id, sizeof id, "msfg%d", ++g_flame_seq);
    char wbuf[16], hbuf[32] = "";
    snprintf(wbuf, sizeof wbuf, "%d", W);
    if (!o->embedded) /* embedded: the height follows the page width through the viewBox */
        snprintf(hbuf, sizeof hbuf, " height=\"%d\"", H);
    if (!o->embedded)
        fputs("<?xml version=\"1.0\" standalone=\"no\"?>\n", out);
    fprintf(out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" id=\"%s\" class=\"fg\" "
            "width=\"%s\"%s viewBox=\"0 0 %d %d\" data-width=\"%d\" data-pad=\"%d\" "
            "data-unit=\"%s\" data-metric=\"%s\" data-total=\"%" PRIu64 "\">\n",
            id, o->embedded ? "100%" : wbuf, hbuf, W, H, W, PAD, ms_metric_unit(m), ms_metric_name(m),
            ms_metric_value(&t.n[0].c, m));
    fputs("<style>\n"
          ".fg text{font-family:ui-monospace,'DejaVu Sans Mono',Menlo,Consolas,monospace;"
          "font-size:12px;fill:#222}\n"
          ".fg .fg-title{font-size:17px;font-weight:bold;font-family:sans-serif}\n"
          ".fg .fg-sub{font-size:12px;fill:#555;font-family:sans-serif}\n"
          ".fg .fg-btn{cursor:pointer;fill:#1a5fb4;font-family:sans-serif;font-size:13px}\n"
          ".fg .fg-btn:hover{text-decoration:underline}\n"
          ".fg g.fg-f{cursor:pointer}\n"
          ".fg g.fg-f rect{stroke:#fff;stroke-width:0.5}\n"
          ".fg g.fg-f:hover rect{stroke:#000;stroke-width:1}\n"
          ".fg g.fg-f text{pointer-events:none}\n"
          ".fg g.fg-parent rect{opacity:0.5}\n"
          "</style>\n",
          out);
    fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fbfaf7\"/>\n", W, H);
    fprintf(out, "<text class=\"fg-title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">", W / 2);
    ms_xml_escape(out, o->title ? o->title : diff ? "Differential flame graph" : "Flame graph");
    fputs("</text>\n", out);
    char vb[32];
    value_text(ms_metric_value(&t.n[0].c, m), m, vb, sizeof vb);
    fprintf(out, "<text class=\"fg-sub\" x=\"%d\" y=\"42\" text-anchor=\"middle\">", W / 2);
    if (o->subtitle) {
        ms_xml_escape(out, o->subtitle);
        fputs(" \xe2\x80\x94 ", out);
    }
    fprintf(out, "%s: %s", ms_metric_name(m), vb);
    if (diff) {
        char db[32];
        int64_t d = (int64_t)ms_metric_value(&t.n[0].c, m) - (int64_t)ms_metric_value(&t.n[0].cb, m);
        if (!strcmp(ms_metric_unit(m), "bytes"))
            ms_fmt_sbytes(d, db, sizeof db);
        else
            snprintf(db, sizeof db, "%+" PRId64, d);
        fprintf(out, ", change %s (red grew, blue shrank)", db);
    }
    fputs("</text>\n", out);
    fprintf(out, "<text class=\"fg-btn fg-reset\" x=\"%d\" y=\"24\" style=\"opacity:0.35\">Reset zoom</text>\n", PAD);
    fprintf(out, "<text class=\"fg-btn fg-search\" x=\"%d\" y=\"24\" text-anchor=\"end\">Search</text>\n", W - PAD);
    fprintf(out, "<text class=\"fg-matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"></text>\n", W - PAD, H - 10);
    fprintf(out, "<text class=\"fg-details\" x=\"%d\" y=\"%d\"> </text>\n", PAD, H - 10);

    fputs("<g class=\"fg-frames\">\n", out);
    for (size_t i = 0; i < t.nn; i++) {
        const fnode *f = &t.n[i];
        if (f->w < min_frac && !(i == 0))
            continue;
        if (i == 0 && ms_metric_value(&f->c, m) == 0 && !diff)
            continue;
        char fill[40];
        colour(f, diff && i > 0, maxdelta, m, fill, sizeof fill);
        if (i == 0)
            snprintf(fill, sizeof fill, "rgb(200,200,210)");
        double x = PAD + f->x * span, w = f->w * span;
        int y = TOP + (int)f->depth * FRAME_H;
        fprintf(out, "<g class=\"fg-f\" data-x=\"%.9f\" data-w=\"%.9f\" data-d=\"%u\" data-v=\"%" PRIu64
                "\" data-n=\"",
                f->x, f->w, f->depth, ms_metric_value(&f->c, m));
        ms_xml_escape(out, f->name);
        fputs("\"><title>", out);
        tooltip(out, f, &t.n[0], diff, m);
        fprintf(out, "</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" rx=\"2\" fill=\"%s\"/>"
                "<text x=\"%.2f\" y=\"%d\">",
                x, y, w, FRAME_H - 1, fill, x + 3, y + FRAME_H - 5);
        fit_label(out, f->name, w);
        fputs("</text></g>\n", out);
    }
    fputs("</g>\n", out);
    fputs("<script type=\"text/ecmascript\"><![CDATA[\n", out);
    fputs(flame_js, out);
    fprintf(out, "('%s');\n]]></script>\n</svg>\n", id);

    free(t.n);
    free(t.hash);
    if (ferror(out)) {
        snprintf(err, errlen, "write error");
        return -1;
    }
    return 0;
oom:
    free(t.n);
    free(t.hash);
    snprintf(err, errlen, "out of memory while building the flame graph");
    return -1;
}

int ms_export_svg(const ms_snapshot *s, ms_symbolizer *sym, const ms_export_opts *o, FILE *out,
                  char *err, size_t errlen)
{
    ms_agg *a = ms_agg_build(s, sym, MS_AGG_BY_LINES, err, errlen);
    if (!a)
        return -1;
    char sub[512];
    const char *exe = ms_agg_meta(s, "exe");
    const char *pid = ms_agg_meta(s, "pid");
    snprintf(sub, sizeof sub, "%s%s%s%s", exe ? exe : (s->path ? s->path : "snapshot"),
             pid ? " (pid " : "", pid ? pid : "", pid ? ")" : "");
    ms_flame_opts fo = {
        .metric = o ? o->metric : MS_METRIC_LIVE_BYTES,
        .title = o && o->title ? o->title : "memsight flame graph",
        .subtitle = sub,
    };
    int rc = ms_flame_write(a, NULL, &fo, out, err, errlen);
    ms_agg_free(a);
    return rc;
}
