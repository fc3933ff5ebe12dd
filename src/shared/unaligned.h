/* SPDX-License-Identifier: MIT */
/*
 * Fixed-endian integers at any address in a byte buffer: on-disk formats (the state file, GPT,
 * XFS) and device pages (NVMe identify) are read and written through these, never through a
 * cast pointer, which would assume an alignment the buffer need not have.
 */
#pragma once

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t unaligned_read_le16(const void *p) {
        uint16_t v;

        memcpy(&v, p, sizeof(v));
        return le16toh(v);
}

static inline uint32_t unaligned_read_le32(const void *p) {
        uint32_t v;

        memcpy(&v, p, sizeof(v));
        return le32toh(v);
}

static inline uint64_t unaligned_read_le64(const void *p) {
        uint64_t v;

        memcpy(&v, p, sizeof(v));
        return le64toh(v);
}

static inline uint16_t unaligned_read_be16(const void *p) {
        uint16_t v;

        memcpy(&v, p, sizeof(v));
        return be16toh(v);
}

static inline uint32_t unaligned_read_be32(const void *p) {
        uint32_t v;

        memcpy(&v, p, sizeof(v));
        return be32toh(v);
}

static inline uint64_t unaligned_read_be64(const void *p) {
        uint64_t v;

        memcpy(&v, p, sizeof(v));
        return be64toh(v);
}

static inline void unaligned_write_le32(void *p, uint32_t v) {
        v = htole32(v);
        memcpy(p, &v, sizeof(v));
}

static inline void unaligned_write_le64(void *p, uint64_t v) {
        v = htole64(v);
        memcpy(p, &v, sizeof(v));
}
