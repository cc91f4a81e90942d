/* Protocol buffers' wire encoding, written by hand (a message is a growing byte buffer),
 * and gzip to a stream: the pieces of a pprof profile (pprof.c, and the fleet's
 * profiles in src/fleet/). Tools only. */
#ifndef MS_ANALYSIS_PROTOBUF_H
#define MS_ANALYSIS_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct ms_pb {
    uint8_t *p;
    size_t n, cap;
    int oom; /* a growth failed: the message is incomplete */
} ms_pb;

void ms_pb_put(ms_pb *b, const void *d, size_t n);
void ms_pb_varint(ms_pb *b, uint64_t v);
void ms_pb_key(ms_pb *b, unsigned field, unsigned wt);
/* Fields equal to zero are omitted, as proto3 does. */
void ms_pb_int(ms_pb *b, unsigned field, uint64_t v);
void ms_pb_bytes(ms_pb *b, unsigned field, const void *d, size_t n);
/* sub as a field of b; sub is emptied for reuse. */
void ms_pb_msg(ms_pb *b, unsigned field, ms_pb *sub);
void ms_pb_packed(ms_pb *b, unsigned field, const uint64_t *v, size_t n);

/* d[0..n) gzip'd to out. Returns 0, or -1 with err. */
int ms_gzip_write(FILE *out, const uint8_t *d, size_t n, char *err, size_t errlen);

#endif
