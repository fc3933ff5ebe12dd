/* SPDX-License-Identifier: MIT */
/*
 * The per-volume state and its atomic persistence: unreadable ranges, the state directory's
 * and file's verdicts, the lock, load, save and set-aside. The file format is state-codec.c's;
 * load and save stream through it, so neither holds a copy of the chunk map's bitmap.
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

#include "alloc-util.h"
#include "fileio.h"
#include "state.h"
#include "util.h"

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

bool state_key_from_file_name(const char *name, size_t len, char ret_key[STATE_KEY_MAX + 1]) {
        size_t s = strlen(STATE_SUFFIX);

        if (len <= s || len - s > STATE_KEY_MAX || memcmp(name + len - s, STATE_SUFFIX, s) != 0)
                return false;
        if (!state_key_valid(name, len - s))
                return false;
        memcpy(ret_key, name, len - s);
        ret_key[len - s] = '\0';
        return true;
}

int state_dir_next(DIR *d, char ret_key[STATE_KEY_MAX + 1]) {
        struct dirent *de;

        while ((errno = 0, de = readdir(d)))
                if (state_key_from_file_name(de->d_name, strlen(de->d_name), ret_key))
                        return 1;
        return errno != 0 ? -errno : 0;
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

/* Opens <dir>/<key>.state for reading, after a look at what it is (see state_load()); its size
 * as it is now, looked at again, goes to *@ret_size: one that changed size since is not whole,
 * and the decoder says so. */
static int open_state_file(int dir_fd, const char *key, int *ret_fd, uint64_t *ret_size) {
        _cleanup_free_ char *name = state_file_name(key);
        _cleanup_close_ int fd = -1;
        struct stat st, dir_st;
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
        if (fstat(fd, &st) < 0)
                return -errno;
        /* Again: it may have been replaced since it was looked at. */
        r = state_file_verdict(&st, owner);
        if (r < 0)
                return r;
        *ret_fd = TAKE_FD(fd);
        *ret_size = (uint64_t)st.st_size;
        return 0;
}

int state_load(int dir_fd, const char *key, HydrateState **ret) {
        _cleanup_close_ int fd = -1;
        uint64_t size;
        int r;

        r = open_state_file(dir_fd, key, &fd, &size);
        if (r < 0)
                return r;
        return state_decode_fd(fd, size, ret);
}

int state_load_summary(int dir_fd, const char *key, StateSummary *ret) {
        _cleanup_close_ int fd = -1;
        uint64_t size;
        int r;

        r = open_state_file(dir_fd, key, &fd, &size);
        if (r < 0)
                return r;
        return state_summary_fd(fd, size, ret);
}

int state_save(int dir_fd, const HydrateState *s) {
        _cleanup_free_ char *name = state_file_name(s->key), *tmp = NULL;
        _cleanup_close_ int fd = -1;
        int r;

        if (!name || asprintf(&tmp, ".%s.tmp", name) < 0)
                return -ENOMEM;

        /* A leftover from a crash or a failed save; O_EXCL below refuses links. One that cannot
         * be removed fails the save with its own error, not with O_EXCL's EEXIST. */
        if (unlinkat(dir_fd, tmp, 0) < 0 && errno != ENOENT)
                return -errno;
        fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        r = state_encode_fd(s, fd);
        /* An fsync error is final: the kernel may have dropped the dirty pages, so never retry. */
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && close(TAKE_FD(fd)) < 0)
                r = -errno;
        r = rename_into_place(dir_fd, tmp, name, r);
        if (r < 0)
                return r;
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
