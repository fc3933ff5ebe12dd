/* SPDX-License-Identifier: MIT */
/* Fixed-endian integers at odd addresses (unaligned.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "unaligned.h"

/* Bytes 01 02 ... 0f, one byte past an 8-byte boundary: every read below is misaligned. */
static const uint8_t *odd_bytes(uint8_t buf[static 24]) {
        memset(buf, 0, 24);
        for (unsigned i = 0; i < 15; i++)
                buf[1 + i] = (uint8_t)(i + 1);
        return buf + 1;
}

static void test_unaligned_little_endian(void **state) {
        _Alignas(8) uint8_t buf[24];
        const uint8_t *p = odd_bytes(buf);

        (void)state;
        assert_int_equal(unaligned_read_le16(p), 0x0201);
        assert_int_equal(unaligned_read_le32(p), 0x04030201);
        assert_true(unaligned_read_le64(p) == UINT64_C(0x0807060504030201));
        assert_true(unaligned_read_le64(p + 7) == UINT64_C(0x0f0e0d0c0b0a0908));
}

static void test_unaligned_big_endian(void **state) {
        _Alignas(8) uint8_t buf[24];
        const uint8_t *p = odd_bytes(buf);

        (void)state;
        assert_int_equal(unaligned_read_be16(p), 0x0102);
        assert_int_equal(unaligned_read_be32(p), 0x01020304);
        assert_true(unaligned_read_be64(p) == UINT64_C(0x0102030405060708));
        assert_int_equal(unaligned_read_be16(p + 13), 0x0e0f);
}

static void test_unaligned_write_little_endian(void **state) {
        _Alignas(8) uint8_t buf[16] = {0};
        static const uint8_t expected[] = {0xaa, 0x44, 0x33, 0x22, 0x11, 0x88, 0x77,
                                           0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0xbb};

        (void)state;
        buf[0] = 0xaa;
        buf[13] = 0xbb;
        unaligned_write_le32(buf + 1, 0x11223344);
        unaligned_write_le64(buf + 5, UINT64_C(0x1122334455667788));
        assert_memory_equal(buf, expected, sizeof(expected)); /* neighbours untouched */
        assert_int_equal(unaligned_read_le32(buf + 1), 0x11223344);
        assert_true(unaligned_read_le64(buf + 5) == UINT64_C(0x1122334455667788));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_unaligned_little_endian),
                cmocka_unit_test(test_unaligned_big_endian),
                cmocka_unit_test(test_unaligned_write_little_endian),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
