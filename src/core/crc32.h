/* CRC-32 as zlib's crc32() computes it (see crc32.c). */
#ifndef MS_CORE_CRC32_H
#define MS_CORE_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* Continues crc (0 to start) over len bytes of data. */
uint32_t ms_crc32(uint32_t crc, const void *data, size_t len);

#endif
