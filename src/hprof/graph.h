/* The compact object graph of one HPROF heap dump: flat arrays indexed by object
 * index (0..nobj-1, classes are objects too), outgoing references in CSR form, GC roots
 * and the class table. Built once by the reader (reader.h), read-only afterwards but for
 * ms_hgraph_drop_edges().
 * Must never hold one malloc per object: every table is a flat array grown geometrically
 * or allocated once (about 21 bytes per object, the id lookup table included, and 8 per
 * reference). */
#ifndef MS_HPROF_GRAPH_H
#define MS_HPROF_GRAPH_H

#include <stddef.h>
#include <stdint.h>

/* ---- indices ----------------------------------------------------------------------
 * An object index (ms_hidx) numbers every object of the dump (instances, object arrays,
 * primitive arrays and class objects) in ascending order of their ids.
 * A class index (uint32_t) numbers entries of g->classes. */
typedef uint32_t ms_hidx;
#define MS_HIDX_NONE UINT32_MAX
#define MS_HCLASS_NONE UINT32_MAX

/* What an object is (g->obj_kind[i]). */
enum ms_hobj_kind {
    MS_HOBJ_INSTANCE = 0,   /* INSTANCE_DUMP */
    MS_HOBJ_OBJ_ARRAY = 1,  /* OBJECT_ARRAY_DUMP */
    MS_HOBJ_PRIM_ARRAY = 2, /* PRIMITIVE_ARRAY_DUMP or Android PRIMITIVE_ARRAY_NODATA */
    MS_HOBJ_CLASS = 3,      /* CLASS_DUMP: the java.lang.Class object of a class */
};

/* HPROF basic types (field, static and array element types). */
enum ms_htype {
    MS_HT_OBJECT = 2,
    MS_HT_BOOLEAN = 4,
    MS_HT_CHAR = 5,
    MS_HT_FLOAT = 6,
    MS_HT_DOUBLE = 7,
    MS_HT_BYTE = 8,
    MS_HT_SHORT = 9,
    MS_HT_INT = 10,
    MS_HT_LONG = 11,
};

/* ---- edges -----------------------------------------------------------------------
 * Object i's outgoing references are edge_dst[edge_off[i] .. edge_off[i+1]-1], each an
 * object index (references to ids absent from the dump are dropped and counted as a
 * problem; null references are not edges). edge_label[e] says how to name the edge:
 * its top 4 bits are an ms_hedge_kind, its low 28 bits a value whose meaning depends on
 * the kind. The implicit reference from every object to its class (g->obj_class) is NOT
 * an edge; a class's own references (statics, super, loader...) are.
 * Order: instance fields in record order (the object's class's fields first, then its
 * superclass's, up to java.lang.Object); array elements by index; for a class object,
 * statics in declaration order, then super, loader, signers, protection domain. */
enum ms_hedge_kind {
    MS_HEDGE_FIELD = 0,    /* instance field; value = index into g->fields */
    MS_HEDGE_REFERENT = 1, /* java.lang.ref.Reference.referent (value = index into g->fields).
                            * Does not keep the object alive: skip it for reachability,
                            * retained sizes and paths to GC roots. Which kind of reference
                            * it is: g->classes[g->obj_class[src]].ref_kind. */
    MS_HEDGE_ELEMENT = 2,     /* object array element; value = element index (saturates at
                               * MS_HEDGE_VALUE_MAX for arrays longer than that) */
    MS_HEDGE_STATIC = 3,      /* static field of a class object; value = index into g->statics */
    MS_HEDGE_SUPER = 4,       /* class object -> its superclass's class object (value 0) */
    MS_HEDGE_LOADER = 5,      /* class object -> its class loader (value 0) */
    MS_HEDGE_SIGNERS = 6,     /* class object -> signers (value 0) */
    MS_HEDGE_PROTECTION = 7,  /* class object -> protection domain (value 0) */
};
#define MS_HEDGE_VALUE_MAX 0x0FFFFFFFu
static inline unsigned ms_hedge_kind_of(uint32_t label) { return label >> 28; }
static inline uint32_t ms_hedge_value_of(uint32_t label) { return label & MS_HEDGE_VALUE_MAX; }
static inline uint32_t ms_hedge_label(unsigned kind, uint64_t value)
{
    return ((uint32_t)kind << 28) | (uint32_t)(value > MS_HEDGE_VALUE_MAX ? MS_HEDGE_VALUE_MAX : value);
}

/* ---- classes ---------------------------------------------------------------------- */
/* Which java.lang.ref kind a class is (itself or through its superclasses). */
enum ms_href_kind {
    MS_HREF_NONE = 0,    /* not a java.lang.ref.Reference */
    MS_HREF_STRONG = 1,  /* java.lang.ref.Reference itself or an unknown subclass */
    MS_HREF_SOFT = 2,    /* java.lang.ref.SoftReference */
    MS_HREF_WEAK = 3,    /* java.lang.ref.WeakReference */
    MS_HREF_PHANTOM = 4, /* java.lang.ref.PhantomReference */
    MS_HREF_FINAL = 5,   /* java.lang.ref.FinalReference / Finalizer / Android FinalizerReference */
};

/* An instance field descriptor (g->fields). A class's own fields are
 * g->fields[field_first .. field_first+field_count-1], in CLASS_DUMP order. */
typedef struct ms_hfield {
    uint32_t name;  /* offset in g->strs */
    uint32_t owner; /* class index of the declaring class */
    uint8_t type;   /* ms_htype */
} ms_hfield;

/* A static field (g->statics); value holds the raw value (an object id for MS_HT_OBJECT). */
typedef struct ms_hstatic {
    uint64_t value;
    uint32_t name;  /* offset in g->strs */
    uint32_t owner; /* class index */
    uint8_t type;
} ms_hstatic;

enum ms_hclass_flags {
    MS_HCLASS_ARRAY = 1,     /* an array class (name ends in "[]") */
    MS_HCLASS_SYNTHETIC = 2, /* made up by the reader (no CLASS_DUMP in the file): the
                              * class of primitive arrays whose class was not dumped */
    MS_HCLASS_STICKY = 4,    /* its class object is held by a ROOT_STICKY_CLASS */
};

typedef struct ms_hclass {
    uint64_t id;            /* class object id (0 for synthetic classes) */
    ms_hidx obj;            /* object index of its class object (MS_HIDX_NONE if synthetic) */
    uint32_t name;          /* offset in g->strs: source form, "java.lang.String", "byte[]", "int[][]" */
    uint32_t super;         /* class index of the superclass, MS_HCLASS_NONE for the root */
    uint64_t loader_id;     /* class loader object id, 0 = bootstrap */
    ms_hidx loader;         /* object index of the loader, MS_HIDX_NONE if bootstrap or absent */
    uint32_t instance_size; /* as written in the CLASS_DUMP */
    uint32_t field_first, field_count;   /* own instance fields in g->fields */
    uint32_t static_first, static_count; /* statics in g->statics */
    uint32_t inst_shallow;  /* shallow size of one instance in the dump's size model */
    uint8_t ref_kind;       /* ms_href_kind */
    uint8_t prim_type;      /* element ms_htype if a primitive array class, else 0 */
    uint8_t flags;          /* ms_hclass_flags */
} ms_hclass;

/* ---- GC roots ---------------------------------------------------------------------
 * One entry per root sub-record (an object may appear several times, with several
 * types). type is the HPROF sub-record tag: 0xFF unknown, 0x01 JNI global, 0x02 JNI
 * local, 0x03 Java frame, 0x04 native stack, 0x05 sticky class, 0x06 thread block,
 * 0x07 monitor used, 0x08 thread object, Android 0x89 interned string, 0x8A finalizing,
 * 0x8B debugger, 0x8C reference cleanup, 0x8D VM internal, 0x8E JNI monitor, 0x90
 * unreachable. Roots naming ids absent from the dump have obj == MS_HIDX_NONE. */
typedef struct ms_hroot {
    uint64_t id;
    ms_hidx obj;
    uint32_t thread_serial; /* 0 when the root type has none */
    int32_t frame;          /* frame number (JNI local, Java frame, JNI monitor), else -1 */
    uint8_t type;
} ms_hroot;

/* ---- heaps -------------------------------------------------------------------------
 * Android's HEAP_DUMP_INFO splits objects into heaps ("app", "zygote", "image"); other
 * dumps have one heap, "default". A heap "default" (id 0) always exists, for objects
 * before any HEAP_DUMP_INFO; it may hold no object. g->obj_heap[i] indexes g->heaps. */
typedef struct ms_hheap {
    uint32_t id;   /* HPROF heap id ('A', 'Z', 'I', 0 = default) */
    uint32_t name; /* offset in g->strs */
} ms_hheap;

/* ---- size model (see sizes.h and docs/hprof.md) ------------------------------------ */
enum ms_hsize_flavor {
    MS_HSIZE_AUTO = 0,    /* choose from the header: 1.0.3 -> Android, else HotSpot */
    MS_HSIZE_HOTSPOT = 1, /* MAT's model: object headers, reference size, alignment */
    MS_HSIZE_ANDROID = 2, /* perflib's model: field and element bytes, no headers */
};
typedef struct ms_hsize_model {
    uint8_t flavor;          /* MS_HSIZE_HOTSPOT or MS_HSIZE_ANDROID once chosen */
    uint8_t compressed_oops; /* HotSpot with 8-byte ids and 4-byte references */
    uint8_t ref_size;        /* bytes per reference in the heap */
    uint8_t header;          /* object header bytes (mark word + class pointer) */
    uint8_t array_header;    /* header + length field, before alignment */
    uint8_t align;           /* object alignment */
} ms_hsize_model;

/* ---- problems --------------------------------------------------------------------- */
/* Something wrong found while reading that did not stop it: dangling references,
 * duplicate ids, roots to absent objects, field blocks of the wrong size... */
typedef struct ms_hproblem {
    uint64_t offset;    /* file offset of the (sub-)record */
    uint8_t record;     /* top-level tag */
    uint8_t subrecord;  /* heap-dump sub-record tag, 0 if none */
    char msg[110];
} ms_hproblem;
#define MS_HPROBLEMS_KEPT 64

/* ---- the graph -------------------------------------------------------------------- */
typedef struct ms_hgraph {
    /* header */
    char version[24];       /* "JAVA PROFILE 1.0.2" */
    uint32_t id_size;       /* 4 or 8 */
    uint64_t timestamp_ms;  /* ms since the epoch */
    uint64_t file_size;     /* bytes of HPROF data (after decompression) */

    /* objects, indexed 0..nobj-1 */
    uint32_t nobj;
    /* the object's id (address): ms_hgraph_id(). Ids that are id_min plus multiples of
     * 2^id_shift spanning less than 2^32 steps (every real dump: aligned addresses) are
     * kept in 4 bytes, obj_id32[i] = (id - id_min) >> id_shift, and obj_id64 is NULL;
     * otherwise obj_id64[i] is the id and obj_id32 is NULL. */
    uint64_t *obj_id64;
    uint32_t *obj_id32;
    uint32_t id_shift;
    uint32_t *obj_class; /* class index, always valid: the instance's class, the array's
                          * class, and for class objects java.lang.Class (made up if the
                          * dump has none); ms_hgraph_class_object_class() gives the class
                          * a class object describes. Instances of classes absent from the
                          * dump get the synthetic class "(unknown class)". */
    uint32_t *obj_size;  /* shallow size in bytes, in g->model (saturates at UINT32_MAX) */
    uint8_t *obj_kind;   /* ms_hobj_kind */
    uint8_t *obj_heap;   /* index into g->heaps */

    /* outgoing references, CSR */
    uint64_t nedge;
    uint32_t *edge_off;   /* nobj + 1 entries (a dump holds fewer than 2^32 references:
                           * the reader refuses more) */
    ms_hidx *edge_dst;    /* nedge */
    uint32_t *edge_label; /* nedge, see ms_hedge_kind */

    /* id -> index: object indices are in ascending id order (ids are sorted; a repeated
     * id keeps its first record, the later ones are dropped and counted as a problem).
     * Use ms_hgraph_find(); id_bucket[b] is the first index whose
     * (id - id_min) >> id_bucket_shift >= b (nbucket + 1 entries). */
    uint32_t *id_bucket;
    uint32_t nbucket;
    uint32_t id_bucket_shift;
    uint64_t id_min;
    /* class indices whose class object is in the dump, in ascending object index */
    uint32_t nclassobj;
    uint32_t *classobj;

    /* classes, in CLASS_DUMP order, then the synthetic ones */
    uint32_t nclass;
    ms_hclass *classes;
    uint32_t nfield;
    ms_hfield *fields;
    uint32_t nstatic;
    ms_hstatic *statics;

    /* GC roots, in file order */
    uint32_t nroot;
    ms_hroot *roots;

    uint32_t nheap;
    ms_hheap *heaps;

    /* NUL-terminated names (class, field, heap); offset 0 is "" */
    char *strs;
    size_t strs_len;

    ms_hsize_model model;

    /* what the file held: top-level records by tag, heap-dump sub-records by tag */
    uint64_t record_count[256];
    uint64_t subrecord_count[256];
    uint64_t nstrings; /* STRING records */
    uint32_t class_index_java_lang_class; /* class index of java.lang.Class (maybe synthetic) */

    /* problems: the first MS_HPROBLEMS_KEPT kept, all counted */
    uint64_t problem_total;
    uint32_t nproblem;
    ms_hproblem problems[MS_HPROBLEMS_KEPT];
    uint64_t dangling_refs; /* references to ids absent from the dump (dropped) */
    uint64_t archived_refs; /* HotSpot: references from the CDS archive's roots array (an
                             * Object[] held by a JNI global) to archived objects the
                             * dumper leaves out by design; dropped, not problems */
    uint64_t duplicate_ids; /* object records whose id was already seen (dropped) */
    uint8_t ends_early;     /* no heap dump record, or segments without HEAP_DUMP_END: the
                             * file was cut at a record boundary (also a problem) */
} ms_hgraph;

/* ---- queries ---------------------------------------------------------------------- */
/* The id of object i. */
static inline uint64_t ms_hgraph_id(const ms_hgraph *g, ms_hidx i)
{
    return g->obj_id64 ? g->obj_id64[i] : g->id_min + ((uint64_t)g->obj_id32[i] << g->id_shift);
}

/* Object index of an id, or MS_HIDX_NONE. O(log n). */
ms_hidx ms_hgraph_find(const ms_hgraph *g, uint64_t id);

/* For a class object (obj_kind MS_HOBJ_CLASS): the class index it describes; else
 * MS_HCLASS_NONE. O(log classes). */
uint32_t ms_hgraph_class_object_class(const ms_hgraph *g, ms_hidx obj);

/* Name of a class index in source form; "?" for MS_HCLASS_NONE. */
const char *ms_hgraph_class_name(const ms_hgraph *g, uint32_t cls);

/* First class index whose name (source form) equals name and, when loader_id is not
 * UINT64_MAX, whose loader is loader_id; starting at class index from (0 for the first).
 * MS_HCLASS_NONE when none. */
uint32_t ms_hgraph_find_class(const ms_hgraph *g, const char *name, uint64_t loader_id, uint32_t from);

/* True if class cls is, or derives from, the class named name. */
int ms_hgraph_class_is_a(const ms_hgraph *g, uint32_t cls, const char *name);

/* Writes a readable name of edge e into buf: "fieldName", "[12]", "static NAME",
 * "<super>", "<classloader>", "<signers>", "<protection domain>". Returns buf. */
const char *ms_hgraph_edge_name(const ms_hgraph *g, uint64_t e, char *buf, size_t len);

/* Name of a root type tag ("JNI global", "sticky class", ...); "root ?" if unknown.
 * ms_hroot_type_key() gives a stable lower_snake_case key for JSON ("jni_global"). */
const char *ms_hroot_type_name(uint8_t type);
const char *ms_hroot_type_key(uint8_t type);

/* Name of an object kind ("instance", "object array", "primitive array", "class"). */
const char *ms_hobj_kind_name(uint8_t kind);

/* Heap name of object i ("app", "zygote", "default"...). */
static inline const char *ms_hgraph_heap_name(const ms_hgraph *g, ms_hidx i)
{
    return g->strs + g->heaps[g->obj_heap[i]].name;
}

/* Frees the references (edge_off, edge_dst and edge_label become NULL; nedge still
 * counts them), for a caller that needs no more of them: the histogram and diff once
 * their dominator trees are built (a third of the graph's memory). */
void ms_hgraph_drop_edges(ms_hgraph *g);

/* Frees everything the graph owns (NULL is fine). */
void ms_hgraph_free(ms_hgraph *g);

#endif
