/* Fuzz helper: rewrites every chunk CRC of a memsight snapshot so that mutations reach the
 * payload parsers instead of stopping at the checksum. Test-only; changes only its buffer. */
#ifndef MS_FUZZ_SNAPSHOT_CRCS_H
#define MS_FUZZ_SNAPSHOT_CRCS_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

static void fix_crcs(uint8_t *d, size_t n)
{
    size_t off = 32;
    while (off + 24 <= n) {
        uint64_t len = 0;
        for (int i = 7; i >= 0; i--)
            len = len << 8 | d[off + 8 + i];
        if (len > n - off - 24)
            return;
        uint32_t crc = (uint32_t)crc32(0, d + off + 24, (uInt)len);
        for (int i = 0; i < 4; i++)
            d[off + 16 + i] = (uint8_t)(crc >> (8 * i));
        off += 24 + (size_t)((len + 7) & ~7ull);
    }
}

#endif
