/* Primitive values of a few objects of a heap dump, read by a second streaming pass over
 * the file: instance fields the graph does not keep (booleans, ints, longs) and the first
 * bytes of primitive arrays (the characters of a String). Every length is checked against
 * its enclosing record; the file is never trusted, never written. */
#ifndef MS_HPROF_VALUES_H
#define MS_HPROF_VALUES_H

#include <stddef.h>
#include <stdint.h>

#define MS_HVAL_BYTES 64

/* One wanted value. Several requests may name the same object. */
typedef struct ms_hvalreq {
    uint64_t id;      /* object id */
    uint32_t off;     /* instance: byte offset of the field in the instance's field data */
    uint8_t size;     /* instance: bytes of the field (1..8); 0 for a primitive array */
    uint8_t found;    /* set when the object's record was met */
    uint8_t elem;     /* array: element type (ms_htype) */
    uint8_t nbytes;   /* array: bytes kept in bytes[] (at most MS_HVAL_BYTES) */
    uint32_t length;  /* array: element count */
    uint64_t value;   /* instance: the field's big-endian bytes as an unsigned number */
    uint8_t bytes[MS_HVAL_BYTES]; /* array: the first bytes of its elements */
} ms_hvalreq;

/* Fills the requests from the dump at path (plain or gzip) whose identifiers are id_size
 * bytes; sorts r by id first. Returns 0, or -1 with a message (the file cannot be read
 * again, it differs from the one read, or it is damaged). */
int ms_hprof_read_values(const char *path, uint32_t id_size, ms_hvalreq *r, size_t n, char *err,
                         size_t errlen);

/* The request for object id at instance offset off (off UINT32_MAX: the array request),
 * or NULL; r sorted by ms_hprof_read_values. */
const ms_hvalreq *ms_hprof_value_find(const ms_hvalreq *r, size_t n, uint64_t id, uint32_t off);

#endif
