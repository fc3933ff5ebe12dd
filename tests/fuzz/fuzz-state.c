/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for state_decode(), the checkpoint codec. Each input is decoded as it is and once
 * more with its trailing CRC recomputed, so that mutations reach the checks behind the checksum.
 * Whatever decodes must be consistent and re-encode to the very same bytes; bad ranges added to
 * and cleared from it keep their invariants and survive another round trip.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "fuzz-util.h"
#include "state.h"
#include "unaligned.h"
#include "util.h"

static void check_bad_ranges(const HydrateState *s) {
        for (size_t i = 0; i < s->n_bad; i++) {
                const ByteRange *b = &s->bad[i];

                fuzz_assert(b->length > 0 && b->offset < s->size);
                fuzz_assert(b->length <= s->size - b->offset);
                /* sorted, and merged: a gap of at least one byte between neighbours */
                fuzz_assert(i == 0 || b->offset > s->bad[i - 1].offset + s->bad[i - 1].length);
        }
}

static void check_state(const HydrateState *s) {
        const ChunkMap *m = s->map;
        uint64_t done = 0;
        const char *why;

        fuzz_assert(strnlen(s->key, sizeof(s->key)) < sizeof(s->key));
        fuzz_assert(state_key_valid(s->key, strlen(s->key)));
        fuzz_assert(s->logical_block_size >= 512 && s->logical_block_size <= 65536);
        fuzz_assert((s->logical_block_size & (s->logical_block_size - 1)) == 0);
        fuzz_assert(s->size > 0 && s->size % s->logical_block_size == 0);

        fuzz_assert(m && m->size == s->size && chunk_size_valid(m->chunk_size));
        /* exactly enough chunks to cover the device: neither short nor one too many */
        fuzz_assert(m->n_chunks >= 1 && m->n_chunks <= UINT64_MAX / m->chunk_size);
        fuzz_assert((m->n_chunks - 1) * m->chunk_size < s->size);
        fuzz_assert(m->n_chunks * m->chunk_size >= s->size);
        for (uint64_t i = 0; i < m->n_chunks; i++)
                done += chunkmap_is_done(m, i);
        fuzz_assert(done == m->n_done);
        fuzz_assert(s->complete == (done == m->n_chunks));
        fuzz_assert(chunkmap_done_bytes(m) <= s->size);

        check_bad_ranges(s);
        fuzz_assert(state_matches(s, s->key, s->size, s->logical_block_size, &why) == 0);
}

/* Encodes @s and decodes the result again, which must succeed; returns the copy. */
static HydrateState *round_trip(const HydrateState *s) {
        _cleanup_free_ uint8_t *buf = NULL;
        HydrateState *copy = NULL;
        size_t size = 0;

        fuzz_assert(state_encode(s, &buf, &size) == 0);
        fuzz_assert(state_decode(buf, size, &copy) == 0);
        check_state(copy);
        fuzz_assert(copy->n_bad == s->n_bad);
        fuzz_assert(s->n_bad == 0 || memcmp(copy->bad, s->bad, s->n_bad * sizeof(ByteRange)) == 0);
        return copy;
}

static bool covered(const HydrateState *s, uint64_t offset, uint64_t length) {
        for (size_t i = 0; i < s->n_bad; i++)
                if (s->bad[i].offset <= offset &&
                    offset + length <= s->bad[i].offset + s->bad[i].length)
                        return true;
        return false;
}

static bool touched(const HydrateState *s, uint64_t offset, uint64_t length) {
        for (size_t i = 0; i < s->n_bad; i++)
                if (s->bad[i].offset < offset + length &&
                    offset < s->bad[i].offset + s->bad[i].length)
                        return true;
        return false;
}

/* Marks a range the input chose (through its time stamps) bad, then readable again. */
static void exercise_bad_ranges(HydrateState *s) {
        uint64_t offset = s->created_usec % s->size;
        uint64_t length = 1 + s->updated_usec % (s->size - offset);
        HydrateState *copy;
        int r;

        r = state_add_bad(s, offset, length);
        fuzz_assert(r == 0 || r == -E2BIG);
        if (r < 0)
                return;
        check_bad_ranges(s);
        fuzz_assert(covered(s, offset, length));
        state_free(round_trip(s));

        r = state_clear_bad(s, offset, length);
        fuzz_assert(r == 0 || r == -E2BIG);
        check_bad_ranges(s);
        fuzz_assert(!touched(s, offset, length));
        copy = round_trip(s);
        state_free(copy);
}

static void check_decode(const uint8_t *buf, size_t size) {
        _cleanup_(state_freep) HydrateState *s = NULL;
        _cleanup_free_ uint8_t *out = NULL;
        size_t out_size = 0;
        int r;

        r = state_decode(buf, size, &s);
        if (r < 0) {
                fuzz_assert(r == -EBADMSG || r == -EPROTONOSUPPORT);
                fuzz_assert(!s);
                return;
        }
        check_state(s);
        fuzz_assert(state_encode(s, &out, &out_size) == 0);
        fuzz_assert(out_size == size && memcmp(out, buf, size) == 0);
        exercise_bad_ranges(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ uint8_t *fixed = NULL;

        check_decode(data, size);
        if (size < 4)
                return 0;
        fixed = malloc(size);
        fuzz_assert(fixed);
        memcpy(fixed, data, size);
        unaligned_write_le32(fixed + size - 4, (uint32_t)crc32(0L, fixed, (uInt)(size - 4)));
        check_decode(fixed, size);
        return 0;
}
