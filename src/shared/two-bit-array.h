/* SPDX-License-Identifier: MIT */
/*
 * An array of two-bit values (0-3), packed 32 to a 64-bit word: one entry per chunk of a device
 * costs a quarter of a byte (4 MiB for 16 M chunks), and the questions asked of it (lower a
 * range to at most a value, find the next entry of a value) go a word at a time.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

typedef struct TwoBitArray {
        uint64_t n;      /* entries */
        uint64_t *words; /* entry i: bits 2 * (i % 32) and up of word i / 32 */
} TwoBitArray;

/* two_bit_array_new() - @n entries, each @fill (0-3). -EINVAL if @fill > 3, or -ENOMEM. */
int two_bit_array_new(TwoBitArray **ret, uint64_t n, unsigned fill);
TwoBitArray *two_bit_array_free(TwoBitArray *a);
DEFINE_TRIVIAL_CLEANUP_FUNC(TwoBitArray *, two_bit_array_free)

unsigned two_bit_array_get(const TwoBitArray *a, uint64_t i);

/* two_bit_array_lower() - every entry of [@first, @first + @count) that is above @value becomes
 * @value; entries past the end are ignored. */
void two_bit_array_lower(TwoBitArray *a, uint64_t first, uint64_t count, unsigned value);

/* two_bit_array_translate() - every entry e becomes @table[e]. */
void two_bit_array_translate(TwoBitArray *a, const uint8_t table[4]);

/* two_bit_array_find() - the first entry at or after @from that is @value: 0 with *@ret set, or
 * -ENOENT if there is none up to the end. */
int two_bit_array_find(const TwoBitArray *a, uint64_t from, unsigned value, uint64_t *ret);

/* two_bit_array_count() - how many entries of [@first, @first + @count) are @value; entries
 * past the end are not counted. */
uint64_t two_bit_array_count(const TwoBitArray *a, uint64_t first, uint64_t count, unsigned value);

/* two_bit_array_all() - is every entry @value? */
bool two_bit_array_all(const TwoBitArray *a, unsigned value);

/* two_bit_array_memory() - bytes it holds on the heap. */
size_t two_bit_array_memory(const TwoBitArray *a);
