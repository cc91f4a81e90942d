/* The shallow-size model (see sizes.h, docs/hprof.md for the reasons). Pure
 * arithmetic over the class table; never touches the file. */
#include "hprof/sizes.h"

#include <string.h>

static uint64_t align_up(uint64_t n, uint64_t a) { return a ? (n + a - 1) / a * a : n; }
static uint32_t sat32(uint64_t v) { return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v; }

void ms_hsize_init(ms_hsize_model *m, int flavor, const char *version, uint32_t id_size,
                   int compressed)
{
    memset(m, 0, sizeof *m);
    if (flavor == MS_HSIZE_AUTO)
        flavor = version && strstr(version, "1.0.3") ? MS_HSIZE_ANDROID : MS_HSIZE_HOTSPOT;
    m->flavor = (uint8_t)flavor;
    if (flavor == MS_HSIZE_ANDROID) {
        /* perflib: references count as one id, no header, no alignment */
        m->ref_size = (uint8_t)id_size;
        m->header = 0;
        m->array_header = 0;
        m->align = 1;
        return;
    }
    m->compressed_oops = compressed == 1 && id_size == 8;
    m->ref_size = m->compressed_oops ? 4 : (uint8_t)id_size;
    /* mark word (pointer size) + class pointer, as MAT: the class pointer is 4 bytes with
     * compressed references, and without them when only class pointers are compressed
     * (JDK 15 and later on heaps of 32 GB or more, or -XX:-UseCompressedOops) */
    int klass = compressed == 2 && id_size == 8 ? 4 : m->ref_size;
    m->header = (uint8_t)(id_size + klass);
    m->array_header = (uint8_t)(m->header + 4);
    m->align = 8;
}

uint32_t ms_hsize_type_in_file(int type, uint32_t id_size)
{
    switch (type) {
    case MS_HT_OBJECT: return id_size;
    case MS_HT_BOOLEAN: case MS_HT_BYTE: return 1;
    case MS_HT_CHAR: case MS_HT_SHORT: return 2;
    case MS_HT_FLOAT: case MS_HT_INT: return 4;
    case MS_HT_DOUBLE: case MS_HT_LONG: return 8;
    default: return 0;
    }
}

uint32_t ms_hsize_type(const ms_hsize_model *m, int type)
{
    return type == MS_HT_OBJECT ? m->ref_size : ms_hsize_type_in_file(type, 4);
}

uint32_t ms_hsize_instance(const ms_hsize_model *m, const ms_hgraph *g, uint32_t cls)
{
    if (cls >= g->nclass)
        return 0;
    if (m->flavor == MS_HSIZE_ANDROID)
        return g->classes[cls].instance_size;
    /* MAT: size(C) = align(own fields + size(super), ref); size(root) = header; then
     * align to the object alignment. Iterative from the root down; the depth is bounded
     * by the class count so a cyclic super chain in a corrupt file cannot loop. */
    uint32_t chain[256];
    uint32_t depth = 0;
    for (uint32_t c = cls; c != MS_HCLASS_NONE && c < g->nclass && depth < 256;
         c = g->classes[c].super)
        chain[depth++] = c;
    uint64_t size = m->header;
    if (m->header == 12 && m->ref_size == 8) {
        /* class pointers compressed, references not: a layout of JDK 15 and later only,
         * whose field layout packs every class's fields into the gaps the header and the
         * superclasses leave, so the fields add up without per-class rounding */
        for (uint32_t d = depth - 1; d-- > 0;) {
            const ms_hclass *k = &g->classes[chain[d]];
            for (uint32_t f = 0; f < k->field_count; f++)
                size += ms_hsize_type(m, g->fields[k->field_first + f].type);
        }
        return sat32(align_up(size, m->align));
    }
    /* the root of the chain (java.lang.Object) contributes the header only */
    for (uint32_t d = depth - 1; d-- > 0;) {
        const ms_hclass *k = &g->classes[chain[d]];
        uint64_t own = 0;
        for (uint32_t f = 0; f < k->field_count; f++)
            own += ms_hsize_type(m, g->fields[k->field_first + f].type);
        size = align_up(size + own, m->ref_size);
    }
    return sat32(align_up(size, m->align));
}

uint32_t ms_hsize_obj_array(const ms_hsize_model *m, uint64_t n)
{
    return sat32(align_up(m->array_header + n * m->ref_size, m->align));
}

uint32_t ms_hsize_prim_array(const ms_hsize_model *m, int type, uint64_t n)
{
    uint64_t hdr = m->flavor == MS_HSIZE_ANDROID ? 0 : align_up(m->array_header, m->ref_size);
    return sat32(align_up(hdr + n * ms_hsize_type(m, type), m->align));
}

uint32_t ms_hsize_class(const ms_hsize_model *m, const ms_hgraph *g, uint32_t cls)
{
    if (cls >= g->nclass || m->flavor == MS_HSIZE_ANDROID)
        return 0; /* perflib gives class objects no size of their own */
    const ms_hclass *k = &g->classes[cls];
    uint64_t s = 0;
    for (uint32_t i = 0; i < k->static_count; i++)
        s += ms_hsize_type(m, g->statics[k->static_first + i].type);
    return sat32(align_up(s, m->align));
}
