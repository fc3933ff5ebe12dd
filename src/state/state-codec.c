/* SPDX-License-Identifier: MIT */
/*
 * The state file codec. Layout (little endian), version 1:
 *   magic[8] version:u32 flags:u32 size:u64 lbs:u32 chunk_size:u32 n_chunks:u64 n_done:u64
 *   created:u64 updated:u64 active_usec:u64 bytes_read:u64 key_len:u32 n_bad:u32
 *   key[key_len] bad[n_bad]{offset:u64 length:u64} bitmap[ceil(n_chunks/8)] crc32:u32
 * flags: 1 complete, 2 used-complete (never both). The CRC (zlib crc32) covers every byte
 * before it. Decoding trusts nothing it has not checked.
 * Both directions stream through one buffer of STATE_IO_BUFFER bytes: the bitmap goes straight
 * between the chunk map and the file, so a save or a load never holds a second copy of it
 * (2 MiB at 16 M chunks), whatever the size of the volume. Where the bytes come from or go
 * (memory, a file descriptor) is state-codec-io.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "alloc-util.h"
#include "state.h"
#include "unaligned.h"
#include "util.h"

#define STATE_HEADER_SIZE 88u
#define STATE_BAD_RANGE_SIZE 16u
#define STATE_FLAG_COMPLETE 1u
#define STATE_FLAG_USED_COMPLETE 2u

static size_t encoded_size(size_t key_len, size_t n_bad, size_t bitmap_bytes) {
        return STATE_HEADER_SIZE + key_len + n_bad * STATE_BAD_RANGE_SIZE + bitmap_bytes + 4;
}

/* The codec's cursor: each writes or reads one little-endian field and moves past it. */
static uint8_t *put_u32(uint8_t *p, uint32_t v) {
        unaligned_write_le32(p, v);
        return p + sizeof(v);
}

static uint8_t *put_u64(uint8_t *p, uint64_t v) {
        unaligned_write_le64(p, v);
        return p + sizeof(v);
}

static uint32_t get_u32(const uint8_t **p) {
        uint32_t v = unaligned_read_le32(*p);

        *p += sizeof(v);
        return v;
}

static uint64_t get_u64(const uint8_t **p) {
        uint64_t v = unaligned_read_le64(*p);

        *p += sizeof(v);
        return v;
}

/* ---- encoding ---- */

/* Bytes on their way out: gathered in @buf, counted into the CRC, handed to @write when full. */
typedef struct Emitter {
        state_write_t write;
        void *userdata;
        uint8_t *buf; /* STATE_IO_BUFFER bytes */
        size_t n;
        uLong crc;
        int error;
} Emitter;

static void emit_flush(Emitter *e) {
        if (e->n > 0 && e->error >= 0) {
                e->crc = crc32(e->crc, e->buf, (uInt)e->n);
                e->error = e->write(e->userdata, e->buf, e->n);
        }
        e->n = 0;
}

/* Room for @n (at most STATE_IO_BUFFER) more bytes; the caller fills them. */
static uint8_t *emit_room(Emitter *e, size_t n) {
        uint8_t *p;

        if (e->n + n > STATE_IO_BUFFER)
                emit_flush(e);
        p = e->buf + e->n;
        e->n += n;
        return p;
}

static void emit_header(Emitter *e, const HydrateState *s, size_t key_len) {
        uint8_t *p = emit_room(e, STATE_HEADER_SIZE);

        memcpy(p, STATE_MAGIC, 8);
        p = put_u32(p + 8, STATE_VERSION);
        p = put_u32(p, (s->complete ? STATE_FLAG_COMPLETE : 0) |
                               (s->used_complete ? STATE_FLAG_USED_COMPLETE : 0));
        p = put_u64(p, s->size);
        p = put_u32(p, s->logical_block_size);
        p = put_u32(p, s->map->chunk_size);
        p = put_u64(p, s->map->n_chunks);
        p = put_u64(p, s->map->n_done);
        p = put_u64(p, s->created_usec);
        p = put_u64(p, s->updated_usec);
        p = put_u64(p, s->active_usec);
        p = put_u64(p, s->bytes_read);
        p = put_u32(p, (uint32_t)key_len);
        (void)put_u32(p, (uint32_t)s->n_bad);
}

static void emit_bitmap(Emitter *e, const ChunkMap *m) {
        size_t size = chunkmap_bitmap_bytes(m);

        for (size_t offset = 0; offset < size;) {
                size_t n = MIN(size - offset, STATE_IO_BUFFER - e->n);

                if (n == 0) {
                        emit_flush(e);
                        continue;
                }
                chunkmap_bitmap_export_part(m, offset, emit_room(e, n), n);
                offset += n;
        }
}

int state_encode_to(const HydrateState *s, state_write_t write, void *userdata) {
        _cleanup_free_ uint8_t *buf = malloc(STATE_IO_BUFFER);
        size_t key_len = strlen(s->key);
        Emitter e = {.write = write, .userdata = userdata, .buf = buf, .crc = crc32(0L, NULL, 0)};
        uint8_t crc[4];

        if (!buf)
                return -ENOMEM;
        emit_header(&e, s, key_len);
        memcpy(emit_room(&e, key_len), s->key, key_len);
        for (size_t i = 0; i < s->n_bad; i++) {
                uint8_t *p = emit_room(&e, STATE_BAD_RANGE_SIZE);

                p = put_u64(p, s->bad[i].offset);
                (void)put_u64(p, s->bad[i].length);
        }
        emit_bitmap(&e, s->map);
        emit_flush(&e);
        if (e.error < 0)
                return e.error;
        unaligned_write_le32(crc, (uint32_t)e.crc);
        return write(userdata, crc, sizeof(crc));
}

size_t state_encoded_size(const HydrateState *s) {
        return encoded_size(strlen(s->key), s->n_bad, chunkmap_bitmap_bytes(s->map));
}

/* ---- decoding ---- */

bool state_key_valid(const char *key, size_t len) {
        if (len == 0 || len > STATE_KEY_MAX || key[0] == '.')
                return false;
        for (size_t i = 0; i < len; i++)
                if ((unsigned char)key[i] <= ' ' || (unsigned char)key[i] >= 0x7f || key[i] == '/')
                        return false;
        return true;
}

static bool bad_ranges_valid(const HydrateState *s) {
        for (size_t i = 0; i < s->n_bad; i++) {
                const ByteRange *b = &s->bad[i];

                if (b->length == 0 || b->offset >= s->size || b->length > s->size - b->offset)
                        return false;
                if (i > 0 && b->offset <= s->bad[i - 1].offset + s->bad[i - 1].length)
                        return false;
        }
        return true;
}

static bool lbs_valid(uint32_t lbs) {
        return lbs >= 512 && lbs <= 65536 && (lbs & (lbs - 1)) == 0;
}

/* Bytes on their way in, counted into the CRC as they are taken. */
typedef struct Source {
        state_read_t read;
        void *userdata;
        uint8_t *buf; /* STATE_IO_BUFFER bytes */
        uLong crc;
} Source;

/* Exactly @n bytes into @dst. -EBADMSG if the source ends first. */
static int take_raw(Source *src, void *dst, size_t n) {
        for (size_t got = 0; got < n;) {
                ssize_t k = src->read(src->userdata, (uint8_t *)dst + got, n - got);

                if (k < 0)
                        return (int)k;
                if (k == 0)
                        return -EBADMSG;
                got += (size_t)k;
        }
        return 0;
}

static int take(Source *src, void *dst, size_t n) {
        int r = take_raw(src, dst, n);

        if (r >= 0)
                src->crc = crc32(src->crc, dst, (uInt)n);
        return r;
}

/* 0 if the source has nothing after what was taken, -EBADMSG if it has. */
static int expect_end(Source *src) {
        uint8_t extra;
        ssize_t k = src->read(src->userdata, &extra, 1);

        return k < 0 ? (int)k : k == 0 ? 0 : -EBADMSG;
}

/*
 * A file of an unknown version is not understood, but is it whole? Its last four bytes must be
 * the CRC of all before them (all versions keep that), as a whole image was checked before the
 * codec streamed: -EPROTONOSUPPORT if so, -EBADMSG if not.
 */
static int unknown_version(Source *src) {
        uint8_t tail[4];
        size_t n_tail = 0;

        for (;;) {
                ssize_t k = src->read(src->userdata, src->buf, STATE_IO_BUFFER);
                size_t n, keep;

                if (k < 0)
                        return (int)k;
                if (k == 0)
                        break;
                n = (size_t)k;
                /* The last four bytes seen are held back: they may be the CRC. */
                if (n >= sizeof(tail)) {
                        src->crc = crc32(src->crc, tail, (uInt)n_tail);
                        src->crc = crc32(src->crc, src->buf, (uInt)(n - sizeof(tail)));
                        memcpy(tail, src->buf + n - sizeof(tail), sizeof(tail));
                        n_tail = sizeof(tail);
                        continue;
                }
                keep = MIN(n_tail, sizeof(tail) - n);
                src->crc = crc32(src->crc, tail, (uInt)(n_tail - keep));
                memmove(tail, tail + n_tail - keep, keep);
                memcpy(tail + keep, src->buf, n);
                n_tail = keep + n;
        }
        if (n_tail < sizeof(tail))
                return -EBADMSG;
        return unaligned_read_le32(tail) == (uint32_t)src->crc ? -EPROTONOSUPPORT : -EBADMSG;
}

typedef struct Header {
        uint32_t flags, lbs, chunk_size, key_len, n_bad;
        uint64_t dev_size, n_chunks, n_done;
} Header;

/* The fixed fields after magic and version; the timestamps and counters go to @s. */
static int parse_header(const uint8_t *buf, Header *h, HydrateState *s) {
        const uint8_t *p = buf + 12;

        h->flags = get_u32(&p);
        h->dev_size = get_u64(&p);
        h->lbs = get_u32(&p);
        h->chunk_size = get_u32(&p);
        h->n_chunks = get_u64(&p);
        h->n_done = get_u64(&p);
        s->created_usec = get_u64(&p);
        s->updated_usec = get_u64(&p);
        s->active_usec = get_u64(&p);
        s->bytes_read = get_u64(&p);
        h->key_len = get_u32(&p);
        h->n_bad = get_u32(&p);
        if ((h->flags & ~(STATE_FLAG_COMPLETE | STATE_FLAG_USED_COMPLETE)) != 0 ||
            (h->flags & STATE_FLAG_COMPLETE && h->flags & STATE_FLAG_USED_COMPLETE) ||
            !lbs_valid(h->lbs))
                return -EBADMSG;
        if (!chunk_size_valid(h->chunk_size) || h->dev_size == 0 || h->dev_size % h->lbs != 0 ||
            h->n_chunks != DIV_ROUND_UP(h->dev_size, h->chunk_size))
                return -EBADMSG;
        if (h->n_chunks > (STATE_FILE_MAX * 8))
                return -EBADMSG;
        if (h->key_len > STATE_KEY_MAX || h->n_bad > STATE_BAD_RANGES_MAX)
                return -EBADMSG;
        s->size = h->dev_size;
        s->logical_block_size = h->lbs;
        s->complete = h->flags & STATE_FLAG_COMPLETE;
        s->used_complete = h->flags & STATE_FLAG_USED_COMPLETE;
        return 0;
}

static int take_key(Source *src, HydrateState *s, uint32_t key_len) {
        int r = take(src, s->key, key_len);

        if (r < 0)
                return r;
        return state_key_valid(s->key, key_len) ? 0 : -EBADMSG;
}

static int take_bad_ranges(Source *src, HydrateState *s, uint32_t n_bad) {
        int r;

        if (n_bad == 0)
                return 0;
        r = ARRAY_GROW(s->bad, s->n_bad_allocated, n_bad);
        if (r < 0)
                return r;
        while (s->n_bad < n_bad) {
                size_t n = MIN(n_bad - s->n_bad, STATE_IO_BUFFER / STATE_BAD_RANGE_SIZE);
                const uint8_t *p = src->buf;

                r = take(src, src->buf, n * STATE_BAD_RANGE_SIZE);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < n; i++, s->n_bad++) {
                        s->bad[s->n_bad].offset = get_u64(&p);
                        s->bad[s->n_bad].length = get_u64(&p);
                }
        }
        return bad_ranges_valid(s) ? 0 : -EBADMSG;
}

static int take_bitmap(Source *src, ChunkMap *m) {
        size_t size = chunkmap_bitmap_bytes(m);

        for (size_t offset = 0; offset < size;) {
                size_t n = MIN(size - offset, (size_t)STATE_IO_BUFFER);
                int r = take(src, src->buf, n);

                if (r < 0)
                        return r;
                r = chunkmap_bitmap_import_part(m, offset, src->buf, n);
                if (r < 0)
                        return r;
                offset += n;
        }
        return 0;
}

/* The bitmap counted, not kept: its chunks done, and whether the last one is. */
static int count_bitmap(Source *src, uint64_t n_chunks, uint64_t *ret_done, bool *ret_last) {
        size_t size = DIV_ROUND_UP(n_chunks, 8);
        uint64_t done = 0;

        for (size_t offset = 0; offset < size;) {
                size_t n = MIN(size - offset, (size_t)STATE_IO_BUFFER);
                int r = take(src, src->buf, n);

                if (r < 0)
                        return r;
                for (size_t i = 0; i < n; i++)
                        done += (uint64_t)__builtin_popcount(src->buf[i]);
                offset += n;
                if (offset == size) {
                        unsigned tail = n_chunks % 8;

                        if (tail != 0 && src->buf[n - 1] >> tail != 0)
                                return -EBADMSG; /* a bit past the last chunk */
                        *ret_last = src->buf[n - 1] >> ((n_chunks - 1) % 8) & 1u;
                }
        }
        *ret_done = done;
        return 0;
}

/* The bytes of @done chunks of @chunk_size, the last one (@last_done) possibly short. */
static uint64_t done_bytes(uint64_t size, uint32_t chunk_size, uint64_t n_chunks, uint64_t done,
                           bool last_done) {
        uint64_t bytes = done * chunk_size;

        if (last_done)
                bytes -= n_chunks * chunk_size - size;
        return bytes;
}

/* The CRC of all that was taken, and nothing after it. */
static int take_crc(Source *src) {
        uint8_t crc[4];
        int r = take_raw(src, crc, sizeof(crc));

        if (r < 0)
                return r;
        if (unaligned_read_le32(crc) != (uint32_t)src->crc)
                return -EBADMSG;
        return expect_end(src);
}

/* The chunk map into s->map, or, with @summary, only counted into it (no map). */
static int decode_body(Source *src, uint64_t size, HydrateState *s, StateSummary *summary) {
        uint64_t n_done = 0;
        bool last_done = false;
        Header h;
        int r;

        r = parse_header(src->buf, &h, s);
        if (r < 0)
                return r;
        if (size != encoded_size(h.key_len, h.n_bad, DIV_ROUND_UP(h.n_chunks, 8)))
                return -EBADMSG; /* before anything is allocated for what it claims */
        r = take_key(src, s, h.key_len);
        if (r >= 0)
                r = take_bad_ranges(src, s, h.n_bad);
        if (r >= 0 && !summary)
                r = chunkmap_new(&s->map, h.dev_size, h.chunk_size);
        if (r >= 0)
                r = summary ? count_bitmap(src, h.n_chunks, &n_done, &last_done)
                            : take_bitmap(src, s->map);
        if (r >= 0)
                r = take_crc(src);
        if (r < 0)
                return r;
        if (!summary)
                n_done = s->map->n_done;
        if (n_done != h.n_done || s->complete != (n_done == h.n_chunks))
                return -EBADMSG;
        if (summary)
                *summary = (StateSummary){
                        .size = s->size,
                        .complete = s->complete,
                        .used_complete = s->used_complete,
                        .done_bytes =
                                done_bytes(h.dev_size, h.chunk_size, h.n_chunks, n_done, last_done),
                        .n_bad = s->n_bad,
                };
        return 0;
}

static int decode(state_read_t read, void *userdata, uint64_t size, HydrateState **ret,
                  StateSummary *summary) {
        _cleanup_(state_freep) HydrateState *s = NULL;
        _cleanup_free_ uint8_t *buf = NULL;
        Source src = {.read = read, .userdata = userdata};
        int r;

        if (size < encoded_size(0, 0, 0))
                return -EBADMSG;
        buf = malloc(STATE_IO_BUFFER);
        s = calloc(1, sizeof(*s));
        if (!buf || !s)
                return -ENOMEM;
        src.buf = buf;
        src.crc = crc32(0L, NULL, 0);
        r = take(&src, buf, STATE_HEADER_SIZE);
        if (r < 0)
                return r;
        if (memcmp(buf, STATE_MAGIC, 8) != 0)
                return -EBADMSG;
        if (unaligned_read_le32(buf + 8) != STATE_VERSION)
                return unknown_version(&src);
        r = decode_body(&src, size, s, summary);
        if (r < 0)
                return r;
        if (summary)
                memcpy(summary->key, s->key, sizeof(summary->key));
        else
                *ret = TAKE_PTR(s);
        return 0;
}

int state_decode_from(state_read_t read, void *userdata, uint64_t size, HydrateState **ret) {
        return decode(read, userdata, size, ret, NULL);
}

int state_summary_from(state_read_t read, void *userdata, uint64_t size, StateSummary *ret) {
        return decode(read, userdata, size, NULL, ret);
}
