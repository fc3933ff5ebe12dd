/* SPDX-License-Identifier: MIT */
/* TwoBitArray: entries packed 32 to a word, lowered and searched a word at a time, checked
 * entry by entry against a plain array of bytes. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "two-bit-array.h"
#include "util.h"

#define N 200u /* six words and a part of a seventh */

static void assert_same(const TwoBitArray *a, const uint8_t *want) {
        for (uint64_t i = 0; i < a->n; i++)
                if (two_bit_array_get(a, i) != want[i])
                        fail_msg("entry %llu: %u, want %u", (unsigned long long)i,
                                 two_bit_array_get(a, i), want[i]);
}

static void lower(uint8_t *want, uint64_t first, uint64_t count, unsigned value) {
        for (uint64_t i = first; i < first + count && i < N; i++)
                want[i] = (uint8_t)MIN(want[i], value);
}

static void test_two_bit_array_lower(void **state) {
        /* Within a word, across word boundaries, whole words, past the end. */
        static const uint64_t ranges[][3] = {
                {3, 5, 2}, {30, 70, 2}, {64, 64, 1}, {100, 1, 0}, {150, 500, 1}, {31, 2, 3},
        };
        _cleanup_(two_bit_array_freep) TwoBitArray *a = NULL;
        uint8_t want[N];

        assert_int_equal(two_bit_array_new(&a, N, 3), 0);
        memset(want, 3, sizeof(want));
        assert_same(a, want);
        for (size_t i = 0; i < ELEMENTSOF(ranges); i++) {
                two_bit_array_lower(a, ranges[i][0], ranges[i][1], (unsigned)ranges[i][2]);
                lower(want, ranges[i][0], ranges[i][1], (unsigned)ranges[i][2]);
                assert_same(a, want);
        }
        /* Lowering never raises. */
        two_bit_array_lower(a, 0, N, 3);
        assert_same(a, want);
        assert_int_equal(two_bit_array_new(&a, 1, 4), -EINVAL);
}

static void test_two_bit_array_find(void **state) {
        _cleanup_(two_bit_array_freep) TwoBitArray *a = NULL;
        uint64_t at;

        assert_int_equal(two_bit_array_new(&a, N, 2), 0);
        two_bit_array_lower(a, 5, 1, 0);
        two_bit_array_lower(a, 130, 3, 1);
        two_bit_array_lower(a, N - 1, 1, 0);
        assert_int_equal(two_bit_array_find(a, 0, 0, &at), 0);
        assert_int_equal(at, 5);
        assert_int_equal(two_bit_array_find(a, 6, 0, &at), 0); /* across five words */
        assert_int_equal(at, N - 1);
        assert_int_equal(two_bit_array_find(a, 131, 1, &at), 0);
        assert_int_equal(at, 131);
        assert_int_equal(two_bit_array_find(a, 133, 1, &at), -ENOENT);
        assert_int_equal(two_bit_array_find(a, 0, 3, &at), -ENOENT);
        assert_int_equal(two_bit_array_find(a, N, 2, &at), -ENOENT);
        assert_int_equal(two_bit_array_find(a, 132, 2, &at), 0);
        assert_int_equal(at, 133);
}

static void test_two_bit_array_tail_not_an_entry(void **state) {
        _cleanup_(two_bit_array_freep) TwoBitArray *a = NULL;
        uint64_t at;

        /* The last word holds 8 entries; the 24 after them are no entries. */
        assert_int_equal(two_bit_array_new(&a, N, 3), 0);
        two_bit_array_lower(a, 0, N, 1);
        assert_true(two_bit_array_all(a, 1));
        assert_int_equal(two_bit_array_find(a, 0, 3, &at), -ENOENT);
        two_bit_array_lower(a, N - 1, 1, 0);
        assert_false(two_bit_array_all(a, 1));
        assert_int_equal(two_bit_array_memory(a), sizeof(*a) + DIV_ROUND_UP(N, 32) * 8);
}

static void test_two_bit_array_count(void **state) {
        _cleanup_(two_bit_array_freep) TwoBitArray *a = NULL;
        uint8_t want[N];

        assert_int_equal(two_bit_array_new(&a, N, 3), 0);
        for (uint64_t i = 0; i < N; i++) {
                want[i] = (uint8_t)(i * i % 5 % 4);
                two_bit_array_lower(a, i, 1, want[i]);
        }
        for (uint64_t first = 0; first < N; first += 13)
                for (uint64_t count = 0; count < N + 40; count += 29)
                        for (unsigned v = 0; v < 4; v++) {
                                uint64_t n = 0;

                                for (uint64_t i = first; i < first + count && i < N; i++)
                                        n += want[i] == v;
                                assert_int_equal(two_bit_array_count(a, first, count, v), n);
                        }
}

static void test_two_bit_array_translate(void **state) {
        static const uint8_t table[4] = {0, 2, 3, 2};
        _cleanup_(two_bit_array_freep) TwoBitArray *a = NULL;
        uint8_t want[N];

        assert_int_equal(two_bit_array_new(&a, N, 3), 0);
        for (uint64_t i = 0; i < N; i++) {
                two_bit_array_lower(a, i, 1, (unsigned)(i * 7 % 4));
                want[i] = table[i * 7 % 4];
        }
        two_bit_array_translate(a, table);
        assert_same(a, want);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_two_bit_array_lower),
                cmocka_unit_test(test_two_bit_array_find),
                cmocka_unit_test(test_two_bit_array_tail_not_an_entry),
                cmocka_unit_test(test_two_bit_array_count),
                cmocka_unit_test(test_two_bit_array_translate),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
