/* SPDX-License-Identifier: MIT */
/* The snapshot's block list (blocklist.h): its encoding, its checks and its file. */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "alloc-util.h"
#include "blocklist.h"
#include "fileio.h"
#include "kv-text.h"
#include "unaligned.h"
#include "util.h"

#define ZBUF 65536u
#define LEB128_MAX 10 /* bytes of a 64-bit number */

/* A snapshot id: letters, digits and '-' (snap-0123...), nothing that could break a line. */
static bool id_valid(const char *s) {
        size_t n = strlen(s);

        if (n == 0 || n >= FINDINGS_ID_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
                        return false;
        return true;
}

/* The first block at or after @from whose bit is @value; @n if there is none. */
static uint64_t find_bit(const uint64_t *bits, uint64_t n, uint64_t from, bool value) {
        while (from < n) {
                uint64_t word = bits[from / 64] ^ (value ? 0 : UINT64_MAX);

                word &= UINT64_MAX << (from % 64);
                if (word)
                        return MIN(n, from / 64 * 64 + (uint64_t)__builtin_ctzll(word));
                from = from / 64 * 64 + 64;
        }
        return n;
}

/* --- encoding --- */

typedef struct Out {
        z_stream z;
        char *buf;
        size_t size, allocated;
        uint8_t in[ZBUF];
        size_t n_in;
} Out;

static int out_grow(Out *o, size_t want) {
        if (o->allocated - o->size >= want)
                return 0;
        return ARRAY_GROW(o->buf, o->allocated, o->size + want);
}

/* Deflates what is gathered in o->in; with @finish, to the end of the stream. */
static int out_deflate(Out *o, bool finish) {
        int z;

        o->z.next_in = o->in;
        o->z.avail_in = (uInt)o->n_in;
        do {
                if (out_grow(o, ZBUF) < 0)
                        return -ENOMEM;
                o->z.next_out = (Bytef *)o->buf + o->size;
                o->z.avail_out = (uInt)(o->allocated - o->size);
                z = deflate(&o->z, finish ? Z_FINISH : Z_NO_FLUSH);
                if (z == Z_STREAM_ERROR)
                        return -EINVAL;
                o->size = o->allocated - o->z.avail_out;
        } while (finish ? z != Z_STREAM_END : o->z.avail_in > 0);
        o->n_in = 0;
        return 0;
}

static int out_number(Out *o, uint64_t v) {
        int r;

        if (o->n_in + LEB128_MAX > sizeof(o->in)) {
                r = out_deflate(o, false);
                if (r < 0)
                        return r;
        }
        do {
                uint8_t b = v & 0x7f;

                v >>= 7;
                o->in[o->n_in++] = b | (v ? 0x80 : 0);
        } while (v);
        return 0;
}

static int encode_runs(Out *o, const BlockListInfo *info, const uint64_t *bits) {
        uint64_t end = 0; /* of the run before */
        int r;

        for (uint64_t first = find_bit(bits, info->n_blocks, 0, true); first < info->n_blocks;) {
                uint64_t last = find_bit(bits, info->n_blocks, first, false);

                r = out_number(o, first - end);
                if (r >= 0)
                        r = out_number(o, last - first - 1);
                if (r < 0)
                        return r;
                end = last;
                first = find_bit(bits, info->n_blocks, last, true);
        }
        return out_deflate(o, true);
}

int blocklist_encode(BlockListInfo *info, const uint64_t *bits, char **ret, size_t *ret_size) {
        _cleanup_free_ Out *o = NULL;
        int n, r;

        if (!state_key_valid(info->volume_id, strlen(info->volume_id)) ||
            !id_valid(info->snapshot_id) || info->n_blocks == 0 ||
            info->n_blocks > BLOCKLIST_BLOCKS_MAX)
                return -EINVAL;
        info->n_stored = info->n_runs = 0;
        for (uint64_t first = find_bit(bits, info->n_blocks, 0, true); first < info->n_blocks;) {
                uint64_t last = find_bit(bits, info->n_blocks, first, false);

                info->n_stored += last - first;
                info->n_runs++;
                first = find_bit(bits, info->n_blocks, last, true);
        }
        o = calloc(1, sizeof(*o));
        if (!o || out_grow(o, BLOCKLIST_HEADER_MAX) < 0) {
                free(o ? o->buf : NULL);
                return -ENOMEM;
        }
        n = snprintf(o->buf, BLOCKLIST_HEADER_MAX,
                     "%s=%d\n%s=%s\n%s=%s\n%s=%" PRIu64 "\n%s=%" PRIu64 "\n%s=%" PRIu64
                     "\n%s=%" PRIu64 "\n\n",
                     EBS_HYDRATE_BLOCKS_FORMAT, EBS_HYDRATE_BLOCKS_VERSION,
                     EBS_HYDRATE_FINDINGS_VOLUME_ID, info->volume_id,
                     EBS_HYDRATE_BLOCKS_SNAPSHOT_ID, info->snapshot_id,
                     EBS_HYDRATE_BLOCKS_BLOCK_SIZE, BLOCKLIST_BLOCK_SIZE, EBS_HYDRATE_BLOCKS_BLOCKS,
                     info->n_blocks, EBS_HYDRATE_BLOCKS_STORED, info->n_stored,
                     EBS_HYDRATE_BLOCKS_RUNS, info->n_runs);
        assert(n > 0 && n < BLOCKLIST_HEADER_MAX);
        o->size = (size_t)n;
        if (deflateInit(&o->z, Z_DEFAULT_COMPRESSION) != Z_OK) {
                free(o->buf);
                return -ENOMEM;
        }
        r = encode_runs(o, info, bits);
        (void)deflateEnd(&o->z);
        if (r >= 0)
                r = out_grow(o, 4);
        if (r < 0) {
                free(o->buf);
                return r;
        }
        /* zlib's own check leaves the padding of its last byte, and the header, unchecked */
        unaligned_write_le32(o->buf + o->size,
                             (uint32_t)crc32(0L, (const Bytef *)o->buf, (uInt)o->size));
        o->size += 4;
        *ret = o->buf;
        *ret_size = o->size;
        return 0;
}

/* --- decoding --- */

enum { K_FORMAT, K_VOLUME, K_SNAPSHOT, K_BLOCK_SIZE, K_BLOCKS, K_STORED, K_RUNS, _K_MAX };

static const char *const keys[_K_MAX] = {
        [K_FORMAT] = EBS_HYDRATE_BLOCKS_FORMAT,
        [K_VOLUME] = EBS_HYDRATE_FINDINGS_VOLUME_ID,
        [K_SNAPSHOT] = EBS_HYDRATE_BLOCKS_SNAPSHOT_ID,
        [K_BLOCK_SIZE] = EBS_HYDRATE_BLOCKS_BLOCK_SIZE,
        [K_BLOCKS] = EBS_HYDRATE_BLOCKS_BLOCKS,
        [K_STORED] = EBS_HYDRATE_BLOCKS_STORED,
        [K_RUNS] = EBS_HYDRATE_BLOCKS_RUNS,
};

typedef struct Header {
        BlockListInfo info;
        unsigned seen;
} Header;

static int header_field(Header *h, unsigned k, const char *v, size_t len) {
        uint64_t n = 0;

        switch (k) {
        case K_VOLUME:
                return kv_value_word(v, len, h->info.volume_id, sizeof(h->info.volume_id)) >= 0 &&
                                       state_key_valid(h->info.volume_id, len)
                               ? 0
                               : -EBADMSG;
        case K_SNAPSHOT:
                return kv_value_word(v, len, h->info.snapshot_id, sizeof(h->info.snapshot_id)) >=
                                               0 &&
                                       id_valid(h->info.snapshot_id)
                               ? 0
                               : -EBADMSG;
        default:
                if (kv_value_number(v, len, UINT64_MAX, &n) < 0)
                        return -EBADMSG;
                break;
        }
        switch (k) {
        case K_FORMAT:
                return n == EBS_HYDRATE_BLOCKS_VERSION ? 0 : -EBADMSG;
        case K_BLOCK_SIZE:
                return n == BLOCKLIST_BLOCK_SIZE ? 0 : -EBADMSG;
        case K_BLOCKS:
                h->info.n_blocks = n;
                return n > 0 && n <= BLOCKLIST_BLOCKS_MAX ? 0 : -EBADMSG;
        case K_STORED:
                h->info.n_stored = n;
                return 0;
        default: /* K_RUNS */
                h->info.n_runs = n;
                return 0;
        }
}

static int header_pair(const char *key, size_t key_len, const char *value, size_t value_len,
                       void *userdata) {
        Header *h = userdata;

        for (unsigned i = 0; i < _K_MAX; i++)
                if (kv_key_is(key, key_len, keys[i])) {
                        if (h->seen & (1u << i) || header_field(h, i, value, value_len) < 0)
                                return -EBADMSG;
                        h->seen |= 1u << i;
                }
        return 0; /* a newer helper's line: ignored */
}

typedef struct Runs {
        const BlockListInfo *info;
        blocklist_run_t f;
        void *userdata;
        uint64_t value; /* the number being read */
        unsigned shift;
        bool have_gap;
        uint64_t gap;
        uint64_t end; /* of the run before */
        uint64_t stored, runs;
} Runs;

static int run_done(Runs *s, uint64_t length_less_one) {
        uint64_t first, count;

        if (s->runs > 0 && s->gap == 0) /* touching the run before: it would be one run */
                return -EBADMSG;
        if (s->gap > s->info->n_blocks - s->end)
                return -EBADMSG;
        first = s->end + s->gap;
        if (length_less_one >= s->info->n_blocks - first)
                return -EBADMSG;
        count = length_less_one + 1;
        if (++s->runs > s->info->n_runs || count > s->info->n_stored - s->stored)
                return -EBADMSG;
        s->stored += count;
        s->end = first + count;
        return s->f ? s->f(first, count, s->userdata) : 0;
}

static int runs_feed(Runs *s, const uint8_t *p, size_t n) {
        for (size_t i = 0; i < n; i++) {
                if (s->shift >= 63 && (p[i] & 0x7f) > 1) /* past 64 bits */
                        return -EBADMSG;
                s->value |= (uint64_t)(p[i] & 0x7f) << s->shift;
                if (p[i] & 0x80) {
                        s->shift += 7;
                        if (s->shift >= 7 * LEB128_MAX)
                                return -EBADMSG;
                        continue;
                }
                if (!s->have_gap) {
                        s->gap = s->value;
                        s->have_gap = true;
                } else {
                        int r = run_done(s, s->value);

                        if (r < 0)
                                return r;
                        s->have_gap = false;
                }
                s->value = 0;
                s->shift = 0;
        }
        return 0;
}

static int decode_runs(const uint8_t *data, size_t size, Runs *s) {
        _cleanup_free_ uint8_t *buf = malloc(ZBUF);
        z_stream z = {0};
        int zr, r = 0;

        if (!buf)
                return -ENOMEM;
        if (inflateInit(&z) != Z_OK)
                return -ENOMEM;
        z.next_in = (Bytef *)data;
        z.avail_in = (uInt)MIN(size, (size_t)UINT_MAX);
        do {
                z.next_out = buf;
                z.avail_out = ZBUF;
                zr = inflate(&z, Z_NO_FLUSH);
                if (zr != Z_OK && zr != Z_STREAM_END) {
                        r = zr == Z_MEM_ERROR ? -ENOMEM : -EBADMSG; /* corrupt, or cut short */
                        break;
                }
                r = runs_feed(s, buf, ZBUF - z.avail_out);
        } while (r >= 0 && zr != Z_STREAM_END);
        if (r >= 0 && (z.avail_in > 0 || z.total_in != size)) /* bytes after the stream */
                r = -EBADMSG;
        (void)inflateEnd(&z);
        if (r >= 0 && (s->have_gap || s->shift > 0 || s->runs != s->info->n_runs ||
                       s->stored != s->info->n_stored))
                r = -EBADMSG;
        return r;
}

int blocklist_decode(const char *data, size_t size, BlockListInfo *ret, blocklist_run_t f,
                     void *userdata) {
        const char *end = NULL;
        Header h = {};
        Runs s = {};
        int r;

        if (size < 4 || unaligned_read_le32(data + size - 4) !=
                                (uint32_t)crc32(0L, (const Bytef *)data, (uInt)(size - 4)))
                return -EBADMSG;
        size -= 4;
        for (size_t i = 0; i + 1 < MIN(size, (size_t)BLOCKLIST_HEADER_MAX); i++)
                if (data[i] == '\n' && data[i + 1] == '\n') {
                        end = data + i + 1;
                        break;
                }
        if (!end || kv_text_foreach(data, (size_t)(end - data), header_pair, &h) < 0 ||
            h.seen != (1u << _K_MAX) - 1)
                return -EBADMSG;
        if (h.info.n_stored > h.info.n_blocks || h.info.n_runs > h.info.n_stored ||
            (h.info.n_runs == 0) != (h.info.n_stored == 0))
                return -EBADMSG;
        s = (Runs){.info = &h.info, .f = f, .userdata = userdata};
        end++; /* the empty line */
        r = decode_runs((const uint8_t *)end, size - (size_t)(end - data), &s);
        if (r < 0)
                return r;
        *ret = h.info;
        return 0;
}

/* --- the file --- */

int blocklist_save(int dir_fd, BlockListInfo *info, const uint64_t *bits) {
        _cleanup_free_ char *data = NULL;
        size_t size;
        int r;

        r = blocklist_encode(info, bits, &data, &size);
        if (r < 0)
                return r;
        return findings_write_file(dir_fd, info->volume_id, BLOCKLIST_SUFFIX, data, size);
}

int blocklist_remove(int dir_fd, const char *volume_id) {
        return findings_remove_file(dir_fd, volume_id, BLOCKLIST_SUFFIX);
}

int blocklist_load(int dir_fd, const char *volume_id, uid_t helper_uid, BlockListInfo *ret,
                   blocklist_run_t f, void *userdata) {
        _cleanup_free_ char *data = NULL;
        BlockListInfo info;
        size_t size;
        int r;

        r = findings_read_file(dir_fd, volume_id, BLOCKLIST_SUFFIX, BLOCKLIST_FILE_MAX, helper_uid,
                               &data, &size);
        if (r < 0)
                return r;
        /* The volume first: runs of another volume's list must not reach @f. */
        r = blocklist_decode(data, size, &info, NULL, NULL);
        if (r < 0)
                return r;
        if (!streq(info.volume_id, volume_id))
                return -EBADMSG;
        if (f) {
                r = blocklist_decode(data, size, &info, f, userdata);
                if (r < 0)
                        return r;
        }
        *ret = info;
        return 0;
}
