/* SPDX-License-Identifier: MIT */
/*
 * State file codec and atomic persistence. Layout (little endian), version 1:
 *   magic[8] version:u32 flags:u32 size:u64 lbs:u32 chunk_size:u32 n_chunks:u64 n_done:u64
 *   created:u64 updated:u64 active_usec:u64 bytes_read:u64 key_len:u32 n_bad:u32
 *   key[key_len] bad[n_bad]{offset:u64 length:u64} bitmap[ceil(n_chunks/8)] crc32:u32
 * flags: 1 complete, 2 used-complete (never both). The CRC (zlib crc32) covers every byte
 * before it. Decoding trusts nothing it has not checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "alloc-util.h"
#include "fileio.h"
#include "state.h"
#include "unaligned.h"
#include "util.h"

#define STATE_HEADER_SIZE 88u
#define STATE_FLAG_COMPLETE 1u
#define STATE_FLAG_USED_COMPLETE 2u

int state_new(HydrateState **ret, const char *key, uint64_t size, uint32_t logical_block_size,
              uint32_t chunk_size) {
        _cleanup_(state_freep) HydrateState *s = NULL;
        int r;

        if (!key || !state_key_valid(key, strlen(key)))
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        r = chunkmap_new(&s->map, size, chunk_size);
        if (r < 0)
                return r;
        strcpy(s->key, key);
        s->size = size;
        s->logical_block_size = logical_block_size;
        *ret = TAKE_PTR(s);
        return 0;
}

HydrateState *state_free(HydrateState *s) {
        if (!s)
                return NULL;
        chunkmap_free(s->map);
        free(s->bad);
        free(s);
        return NULL;
}

static int bad_insert(HydrateState *s, size_t at, ByteRange range) {
        int r;

        if (s->n_bad >= STATE_BAD_RANGES_MAX)
                return -E2BIG;
        r = ARRAY_GROW(s->bad, s->n_bad_allocated, s->n_bad + 1);
        if (r < 0)
                return r;
        memmove(s->bad + at + 1, s->bad + at, (s->n_bad - at) * sizeof(*s->bad));
        s->bad[at] = range;
        s->n_bad++;
        return 0;
}

int state_add_bad(HydrateState *s, uint64_t offset, uint64_t length) {
        uint64_t end = offset + length;
        size_t i = 0, j;

        /* Ranges stay sorted and disjoint: absorb every range that touches the new one. */
        while (i < s->n_bad && s->bad[i].offset + s->bad[i].length < offset)
                i++;
        for (j = i; j < s->n_bad && s->bad[j].offset <= end; j++) {
                end = MAX(end, s->bad[j].offset + s->bad[j].length);
                offset = MIN(offset, s->bad[j].offset);
        }
        if (j == i)
                return bad_insert(s, i, (ByteRange){offset, end - offset});

        s->bad[i] = (ByteRange){offset, end - offset};
        memmove(s->bad + i + 1, s->bad + j, (s->n_bad - j) * sizeof(ByteRange));
        s->n_bad -= j - i - 1;
        return 0;
}

int state_clear_bad(HydrateState *s, uint64_t offset, uint64_t length) {
        uint64_t end = offset + length;

        for (size_t i = 0; i < s->n_bad; i++) {
                ByteRange *b = &s->bad[i];
                uint64_t b_end = b->offset + b->length;

                if (b_end <= offset || b->offset >= end)
                        continue;
                if (b->offset < offset && b_end > end) {
                        /* The cleared span is inside this range: split it. Ranges are disjoint,
                         * so no other range can overlap. */
                        int r = bad_insert(s, i + 1, (ByteRange){end, b_end - end});

                        if (r < 0)
                                return r;
                        s->bad[i].length = offset - s->bad[i].offset;
                        return 0;
                }
                if (b->offset < offset)
                        b->length = offset - b->offset; /* keep the head */
                else if (b_end > end)
                        *b = (ByteRange){end, b_end - end}; /* keep the tail */
                else {
                        memmove(b, b + 1, (s->n_bad - i - 1) * sizeof(*b)); /* all of it goes */
                        s->n_bad--;
                        i--;
                }
        }
        return 0;
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

static size_t encoded_size(size_t key_len, size_t n_bad, size_t bitmap_bytes) {
        return STATE_HEADER_SIZE + key_len + n_bad * 16 + bitmap_bytes + 4;
}

int state_encode(const HydrateState *s, uint8_t **ret_buf, size_t *ret_size) {
        size_t key_len = strlen(s->key), bitmap = chunkmap_bitmap_bytes(s->map);
        size_t size = encoded_size(key_len, s->n_bad, bitmap);
        uint8_t *buf, *p;

        buf = malloc(size);
        if (!buf)
                return -ENOMEM;
        memcpy(buf, STATE_MAGIC, 8);
        p = put_u32(buf + 8, STATE_VERSION);
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
        p = put_u32(p, (uint32_t)s->n_bad);
        memcpy(p, s->key, key_len);
        p += key_len;
        for (size_t i = 0; i < s->n_bad; i++) {
                p = put_u64(p, s->bad[i].offset);
                p = put_u64(p, s->bad[i].length);
        }
        chunkmap_bitmap_export(s->map, p);
        p += bitmap;
        put_u32(p, (uint32_t)crc32(0L, buf, (uInt)(p - buf)));

        *ret_buf = buf;
        *ret_size = size;
        return 0;
}

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

int state_decode(const uint8_t *buf, size_t size, HydrateState **ret) {
        _cleanup_(state_freep) HydrateState *s = NULL;
        uint32_t version, flags, lbs, chunk_size, key_len, n_bad, crc;
        uint64_t dev_size, n_chunks, n_done;
        const uint8_t *p = buf, *key;
        int r;

        if (size < encoded_size(0, 0, 0) || memcmp(buf, STATE_MAGIC, 8) != 0)
                return -EBADMSG;
        p = buf + size - 4;
        crc = get_u32(&p);
        if (crc != (uint32_t)crc32(0L, buf, (uInt)(size - 4)))
                return -EBADMSG;

        p = buf + 8;
        version = get_u32(&p);
        if (version != STATE_VERSION)
                return -EPROTONOSUPPORT;
        flags = get_u32(&p);
        dev_size = get_u64(&p);
        lbs = get_u32(&p);
        chunk_size = get_u32(&p);
        n_chunks = get_u64(&p);
        n_done = get_u64(&p);
        if ((flags & ~(STATE_FLAG_COMPLETE | STATE_FLAG_USED_COMPLETE)) != 0 ||
            (flags & STATE_FLAG_COMPLETE && flags & STATE_FLAG_USED_COMPLETE) || !lbs_valid(lbs))
                return -EBADMSG;

        if (!chunk_size_valid(chunk_size) || dev_size == 0 || dev_size % lbs != 0 ||
            n_chunks != DIV_ROUND_UP(dev_size, chunk_size))
                return -EBADMSG;
        if (n_chunks > (STATE_FILE_MAX * 8))
                return -EBADMSG;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->created_usec = get_u64(&p);
        s->updated_usec = get_u64(&p);
        s->active_usec = get_u64(&p);
        s->bytes_read = get_u64(&p);
        key_len = get_u32(&p);
        n_bad = get_u32(&p);
        if (key_len > STATE_KEY_MAX || n_bad > STATE_BAD_RANGES_MAX ||
            size != encoded_size(key_len, n_bad, DIV_ROUND_UP(n_chunks, 8)))
                return -EBADMSG;

        key = p;
        if (!state_key_valid((const char *)key, key_len))
                return -EBADMSG;
        memcpy(s->key, key, key_len);
        p += key_len;

        s->size = dev_size;
        s->logical_block_size = lbs;
        s->complete = flags & STATE_FLAG_COMPLETE;
        s->used_complete = flags & STATE_FLAG_USED_COMPLETE;
        if (n_bad > 0) {
                r = ARRAY_GROW(s->bad, s->n_bad_allocated, n_bad);
                if (r < 0)
                        return r;
        }
        for (s->n_bad = 0; s->n_bad < n_bad; s->n_bad++) {
                s->bad[s->n_bad].offset = get_u64(&p);
                s->bad[s->n_bad].length = get_u64(&p);
        }
        if (!bad_ranges_valid(s))
                return -EBADMSG;

        r = chunkmap_new(&s->map, dev_size, chunk_size);
        if (r < 0)
                return r;
        r = chunkmap_bitmap_import(s->map, p, DIV_ROUND_UP(n_chunks, 8));
        if (r < 0)
                return r;
        if (s->map->n_done != n_done || s->complete != chunkmap_complete(s->map))
                return -EBADMSG;

        *ret = TAKE_PTR(s);
        return 0;
}

int state_matches(const HydrateState *s, const char *key, uint64_t size,
                  uint32_t logical_block_size, const char **ret_why) {
        if (strcmp(s->key, key) != 0)
                *ret_why = "belongs to another volume";
        else if (s->size != size)
                *ret_why = "was written for another device size";
        else if (s->logical_block_size != logical_block_size)
                *ret_why = "was written for another logical block size";
        else
                return 0;
        return -ESTALE;
}

char *state_file_name(const char *key) {
        char *name;

        return asprintf(&name, "%s%s", key, STATE_SUFFIX) < 0 ? NULL : name;
}

int state_lock(int dir_fd, const char *key) {
        _cleanup_free_ char *name = NULL;
        _cleanup_close_ int fd = -1;
        struct stat st;

        if (asprintf(&name, "%s.lock", key) < 0)
                return -ENOMEM;
        /* Whatever is planted under the lock's name is looked at, not opened: a device node
         * would be opened (a tape rewinds), a directory or socket refuses open() with errors
         * that say nothing of the plant. */
        if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0 && !S_ISREG(st.st_mode))
                return -ELOOP;
        /* O_NONBLOCK: a FIFO swapped in since must not hang us in open(). */
        fd = openat(dir_fd, name,
                    O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, 0600);
        if (fd < 0)
                return errno == EISDIR || errno == ENXIO ? -ELOOP : -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -ELOOP;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                return errno == EWOULDBLOCK ? -EBUSY : -errno;
        return TAKE_FD(fd);
}

/*
 * Whatever sits under a state file's name is looked at before it is opened: a socket or a
 * device node is never opened (a tape rewinds on open), a FIFO never blocks us, and a file too
 * large to be one of ours is never read. A file owned by someone else was not written by this
 * program: whoever could plant it there could make it say "complete".
 */
int state_dir_verdict(const struct stat *st, uid_t euid) {
        if (!S_ISDIR(st->st_mode))
                return -ENOTDIR;
        if (st->st_uid != euid)
                return -EPERM;
        if ((st->st_mode & 0077) != 0)
                return -EACCES;
        return 0;
}

int state_file_verdict(const struct stat *st, uid_t owner) {
        if (S_ISLNK(st->st_mode))
                return -ELOOP;
        if (!S_ISREG(st->st_mode))
                return -EBADMSG;
        if (st->st_uid != owner)
                return -EPERM;
        if ((uint64_t)st->st_size > STATE_FILE_MAX)
                return -EFBIG;
        return 0;
}

static int read_all(int fd, uid_t owner, uint8_t **ret_buf, size_t *ret_size) {
        struct stat st;
        char *buf;
        int r;

        if (fstat(fd, &st) < 0)
                return -errno;
        /* Again: it may have been replaced since it was looked at. */
        r = state_file_verdict(&st, owner);
        if (r < 0)
                return r;
        /* A file that changed size under us is read as it now is: the decoder rejects an image
         * that is not whole. */
        r = read_full_fd(fd, STATE_FILE_MAX, &buf, ret_size);
        if (r < 0)
                return r;
        *ret_buf = (uint8_t *)buf;
        return 0;
}

int state_load(int dir_fd, const char *key, HydrateState **ret) {
        _cleanup_free_ char *name = state_file_name(key);
        _cleanup_free_ uint8_t *buf = NULL;
        _cleanup_close_ int fd = -1;
        struct stat st, dir_st;
        size_t size = 0;
        uid_t owner;
        int r;

        if (!name)
                return -ENOMEM;
        /* The owner to trust is the directory's: the daemon refuses a directory that is not its
         * own, and ebs-hydratectl (root, say) reads the files of the service's user. */
        if (fstat(dir_fd, &dir_st) < 0)
                return -errno;
        owner = dir_st.st_uid;
        if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        r = state_file_verdict(&st, owner);
        if (r < 0)
                return r;
        /* O_NONBLOCK: a FIFO swapped in since the look above must not hang us either. */
        fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return errno == ENXIO ? -EBADMSG : -errno; /* ENXIO: a socket, swapped in */
        r = read_all(fd, owner, &buf, &size);
        if (r < 0)
                return r;
        return state_decode(buf, size, ret);
}

int state_save(int dir_fd, const HydrateState *s) {
        _cleanup_free_ char *name = state_file_name(s->key), *tmp = NULL;
        _cleanup_free_ uint8_t *buf = NULL;
        _cleanup_close_ int fd = -1;
        size_t size = 0;
        int r;

        if (!name || asprintf(&tmp, ".%s.tmp", name) < 0)
                return -ENOMEM;
        r = state_encode(s, &buf, &size);
        if (r < 0)
                return r;

        /* A leftover from a crash or a failed save; O_EXCL below refuses links. One that cannot
         * be removed fails the save with its own error, not with O_EXCL's EEXIST. */
        if (unlinkat(dir_fd, tmp, 0) < 0 && errno != ENOENT)
                return -errno;
        fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        r = write_full_fd(fd, buf, size);
        /* An fsync error is final: the kernel may have dropped the dirty pages, so never retry. */
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && close(TAKE_FD(fd)) < 0)
                r = -errno;
        if (r >= 0 && renameat(dir_fd, tmp, dir_fd, name) < 0)
                r = -errno;
        if (r < 0) {
                (void)unlinkat(dir_fd, tmp, 0);
                return r;
        }
        return fsync(dir_fd) < 0 ? -errno : 0;
}

/* Set-aside files are never removed, so their names must never collide: two in the same second
 * (a device grown, then shrunk) get .1, .2 ... after the time, and rename never replaces. */
#define SET_ASIDE_TRIES 1000

int state_set_aside(int dir_fd, const char *key, const char *why, char **ret_name) {
        _cleanup_free_ char *name = state_file_name(key);
        long long now = (long long)time(NULL);

        if (!name)
                return -ENOMEM;
        for (unsigned i = 0; i < SET_ASIDE_TRIES; i++) {
                _cleanup_free_ char *aside = NULL;
                int r = i == 0 ? asprintf(&aside, "%s.%s-%lld", name, why, now)
                               : asprintf(&aside, "%s.%s-%lld.%u", name, why, now, i);

                if (r < 0)
                        return -ENOMEM;
                r = renameat2(dir_fd, name, dir_fd, aside, RENAME_NOREPLACE);
                if (r < 0 && errno == EINVAL) {
                        /* A file system without RENAME_NOREPLACE: link (which never replaces
                         * either), then unlink the old name. */
                        r = linkat(dir_fd, name, dir_fd, aside, 0);
                        if (r >= 0 && unlinkat(dir_fd, name, 0) < 0)
                                return -errno;
                }
                if (r < 0 && errno == EEXIST)
                        continue;
                if (r < 0)
                        return -errno;
                (void)fsync(dir_fd);
                *ret_name = TAKE_PTR(aside);
                return 0;
        }
        return -EEXIST;
}
