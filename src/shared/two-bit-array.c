/* SPDX-License-Identifier: MIT */
/*
 * Packed two-bit values; see two-bit-array.h. Whole words are changed and searched with bit
 * arithmetic on all 32 entries at once; the words at the ends of a range entry by entry.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "two-bit-array.h"
#include "util.h"

#define ENTRIES_PER_WORD 32u
#define LOW_BITS UINT64_C(0x5555555555555555) /* the low bit of every entry */

static uint64_t n_words(uint64_t n) {
        return DIV_ROUND_UP(n, ENTRIES_PER_WORD);
}

/* A word whose every entry is @value. */
static uint64_t replicate(unsigned value) {
        return LOW_BITS * value;
}

int two_bit_array_new(TwoBitArray **ret, uint64_t n, unsigned fill) {
        TwoBitArray *a;

        if (fill > 3 || n > SIZE_MAX / sizeof(uint64_t))
                return -EINVAL;
        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->n = n;
        a->words = malloc(MAX(n_words(n), UINT64_C(1)) * sizeof(uint64_t));
        if (!a->words) {
                free(a);
                return -ENOMEM;
        }
        for (uint64_t w = 0; w < n_words(n); w++)
                a->words[w] = replicate(fill);
        *ret = a;
        return 0;
}

TwoBitArray *two_bit_array_free(TwoBitArray *a) {
        if (!a)
                return NULL;
        free(a->words);
        free(a);
        return NULL;
}

unsigned two_bit_array_get(const TwoBitArray *a, uint64_t i) {
        assert(i < a->n);
        return (unsigned)(a->words[i / ENTRIES_PER_WORD] >> (2 * (i % ENTRIES_PER_WORD))) & 3u;
}

static void set(TwoBitArray *a, uint64_t i, unsigned value) {
        uint64_t *w = &a->words[i / ENTRIES_PER_WORD];
        unsigned shift = 2 * (i % ENTRIES_PER_WORD);

        *w = (*w & ~(UINT64_C(3) << shift)) | (uint64_t)value << shift;
}

/* Every entry of @word above @value, lowered to it. */
static uint64_t lower_word(uint64_t word, unsigned value) {
        uint64_t above; /* the low bit of each entry above @value */

        switch (value) {
        case 0:
                return 0;
        case 1: /* 2 and 3: the high bit is set */
                above = (word >> 1) & LOW_BITS;
                break;
        case 2: /* 3: both bits are set */
                above = word & (word >> 1) & LOW_BITS;
                break;
        default:
                return word;
        }
        above |= above << 1; /* both bits of each such entry */
        return (word & ~above) | (replicate(value) & above);
}

void two_bit_array_lower(TwoBitArray *a, uint64_t first, uint64_t count, unsigned value) {
        uint64_t end = first + MIN(count, a->n - MIN(first, a->n));

        assert(value <= 3);
        for (uint64_t i = first; i < end;) {
                if (i % ENTRIES_PER_WORD == 0 && end - i >= ENTRIES_PER_WORD) {
                        a->words[i / ENTRIES_PER_WORD] =
                                lower_word(a->words[i / ENTRIES_PER_WORD], value);
                        i += ENTRIES_PER_WORD;
                        continue;
                }
                if (two_bit_array_get(a, i) > value)
                        set(a, i, value);
                i++;
        }
}

void two_bit_array_translate(TwoBitArray *a, const uint8_t table[4]) {
        uint8_t bytes[256];

        /* A byte holds four entries: translate it whole. */
        for (unsigned b = 0; b < 256; b++)
                bytes[b] = (uint8_t)((table[b & 3] & 3u) | (table[(b >> 2) & 3] & 3u) << 2 |
                                     (table[(b >> 4) & 3] & 3u) << 4 |
                                     (table[(b >> 6) & 3] & 3u) << 6);
        for (uint64_t w = 0; w < n_words(a->n); w++) {
                uint64_t in = a->words[w], out = 0;

                for (unsigned k = 0; k < 8; k++)
                        out |= (uint64_t)bytes[(in >> (8 * k)) & 0xff] << (8 * k);
                a->words[w] = out;
        }
}

/* The low bit of each entry of @word that is @value. */
static uint64_t matches(uint64_t word, unsigned value) {
        uint64_t x = word ^ replicate(value);

        return ~(x | (x >> 1)) & LOW_BITS;
}

int two_bit_array_find(const TwoBitArray *a, uint64_t from, unsigned value, uint64_t *ret) {
        assert(value <= 3);
        for (uint64_t w = from / ENTRIES_PER_WORD; w < n_words(a->n); w++) {
                uint64_t match = matches(a->words[w], value);
                uint64_t i;

                if (w == from / ENTRIES_PER_WORD) /* entries before @from do not count */
                        match &= ~((UINT64_C(1) << (2 * (from % ENTRIES_PER_WORD))) - 1);
                if (match == 0)
                        continue;
                i = w * ENTRIES_PER_WORD + (uint64_t)__builtin_ctzll(match) / 2;
                if (i >= a->n)
                        break;
                *ret = i;
                return 0;
        }
        return -ENOENT;
}

uint64_t two_bit_array_count(const TwoBitArray *a, uint64_t first, uint64_t count, unsigned value) {
        uint64_t end = first + MIN(count, a->n - MIN(first, a->n)), n = 0;

        for (uint64_t i = first; i < end;) {
                if (i % ENTRIES_PER_WORD == 0 && end - i >= ENTRIES_PER_WORD) {
                        n += (uint64_t)__builtin_popcountll(
                                matches(a->words[i / ENTRIES_PER_WORD], value));
                        i += ENTRIES_PER_WORD;
                        continue;
                }
                n += two_bit_array_get(a, i) == value;
                i++;
        }
        return n;
}

bool two_bit_array_all(const TwoBitArray *a, unsigned value) {
        uint64_t full = a->n / ENTRIES_PER_WORD, tail = a->n % ENTRIES_PER_WORD;

        for (uint64_t w = 0; w < full; w++)
                if (a->words[w] != replicate(value))
                        return false;
        if (tail > 0) {
                uint64_t mask = (UINT64_C(1) << (2 * tail)) - 1;

                return (a->words[full] & mask) == (replicate(value) & mask);
        }
        return true;
}

size_t two_bit_array_memory(const TwoBitArray *a) {
        return sizeof(*a) + MAX(n_words(a->n), UINT64_C(1)) * sizeof(uint64_t);
}
