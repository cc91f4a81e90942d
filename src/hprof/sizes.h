/* The shallow-size model (docs/hprof.md): MAT's for HotSpot dumps (headers, reference
 * size, 8-byte alignment; compressed oops guessed as MAT does), perflib's for Android
 * dumps (field and element bytes, no headers). Pure arithmetic; never reads the file. */
#ifndef MS_HPROF_SIZES_H
#define MS_HPROF_SIZES_H

#include <stdint.h>

#include "hprof/graph.h"

/* Fills m for a dump. flavor: MS_HSIZE_AUTO picks Android for "JAVA PROFILE 1.0.3".
 * compressed (HotSpot with 8-byte ids): 0 none (16-byte headers, 8-byte references),
 * 1 compressed references (12-byte headers, 4-byte references), 2 compressed class
 * pointers only (12-byte headers, 8-byte references). */
void ms_hsize_init(ms_hsize_model *m, int flavor, const char *version, uint32_t id_size,
                   int compressed);

/* Bytes of one value of an HPROF basic type in the heap (references: m->ref_size). */
uint32_t ms_hsize_type(const ms_hsize_model *m, int type);
/* Bytes of one value of a basic type in the HPROF file (references: id_size). 0 if the
 * type is not valid. */
uint32_t ms_hsize_type_in_file(int type, uint32_t id_size);

/* Shallow size of one instance of class cls (its superclasses' fields included); the
 * superclasses' inst_shallow need not be computed. */
uint32_t ms_hsize_instance(const ms_hsize_model *m, const ms_hgraph *g, uint32_t cls);
/* Shallow size of an object array of n elements, of a primitive array of n elements of
 * type, of a class object (its statics). All saturate at UINT32_MAX. */
uint32_t ms_hsize_obj_array(const ms_hsize_model *m, uint64_t n);
uint32_t ms_hsize_prim_array(const ms_hsize_model *m, int type, uint64_t n);
uint32_t ms_hsize_class(const ms_hsize_model *m, const ms_hgraph *g, uint32_t cls);

#endif
