/* The agent's own CRC-32 (src/core/crc32.c) against zlib's crc32(), which the snapshot
 * readers check chunks with: every length 0..300 at every alignment, then in pieces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <zlib.h>

#include "core/crc32.h"

static void same_as_zlib(void **state)
{
    (void)state;
    unsigned char buf[512];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof buf; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (unsigned char)(x >> 16);
    }
    for (size_t off = 0; off < 8; off++)
        for (size_t n = 0; n <= 300; n++)
            assert_int_equal(ms_crc32(0, buf + off, n), (uint32_t)crc32(0L, buf + off, (uInt)n));
    /* continued over pieces of uneven lengths */
    uint32_t c = 0;
    size_t done = 0;
    for (size_t k = 1; done + k <= sizeof buf; k += 3) {
        c = ms_crc32(c, buf + done, k);
        done += k;
    }
    assert_int_equal(c, (uint32_t)crc32(0L, buf, (uInt)done));
    assert_int_equal(ms_crc32(0, "123456789", 9), 0xCBF43926u); /* the check value */
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(same_as_zlib)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
