/* SPDX-License-Identifier: MIT */
/*
 * Whole-file reads with a size cap, and whole-file replacement (fileio.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "util.h"

/* The first allocation: a regular file's size, else a page (sysfs, proc and pipes say 0 or 4096).
 */
static size_t first_guess(int fd, size_t max_size) {
        struct stat st;

        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0)
                return MIN((size_t)4096, max_size);
        return (uint64_t)st.st_size < max_size ? (size_t)st.st_size : max_size;
}

/* Room for at least one more byte and the NUL, up to max_size + 2 in all: max_size bytes, one
 * more to tell that there is more, and the NUL. */
static int make_room(char **buf, size_t *allocated, size_t size, size_t want, size_t max_size) {
        size_t n;
        char *p;

        if (*allocated - size >= 2)
                return 0;
        n = MIN(MAX(want, *allocated <= max_size / 2 ? *allocated * 2 : max_size + 2),
                max_size + 2);
        p = realloc(*buf, n);
        if (!p)
                return -ENOMEM;
        *buf = p;
        *allocated = n;
        return 0;
}

int read_full_fd(int fd, size_t max_size, char **ret, size_t *ret_size) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, allocated = 0, want;
        int r;

        if (max_size > SIZE_MAX - 2)
                return -EINVAL;
        want = first_guess(fd, max_size) + 2;
        for (;;) {
                ssize_t n;

                r = make_room(&buf, &allocated, size, want, max_size);
                if (r < 0)
                        return r;
                n = read(fd, buf + size, allocated - size - 1);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                size += (size_t)n;
                if (size > max_size)
                        return -EFBIG;
        }
        buf[size] = '\0';
        *ret = TAKE_PTR(buf);
        if (ret_size)
                *ret_size = size;
        return 0;
}

int read_full_file_at(int dir_fd, const char *path, size_t max_size, char **ret, size_t *ret_size) {
        _cleanup_close_ int fd = -1;

        fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        return read_full_fd(fd, max_size, ret, ret_size);
}

int write_full_fd(int fd, const void *buf, size_t size) {
        const char *p = buf;

        while (size > 0) {
                ssize_t n = write(fd, p, size);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                p += n;
                size -= (size_t)n;
        }
        return 0;
}

/* "dir/.base.XXXXXX" for mkostemp(), and "dir" into *ret_dir; both malloc'ed. */
static int temp_name_for(const char *path, char **ret_template, char **ret_dir) {
        _cleanup_free_ char *copy_dir = strdup(path), *copy_base = strdup(path);
        _cleanup_free_ char *dir = NULL, *template = NULL;
        const char *base;

        if (!copy_dir || !copy_base)
                return -ENOMEM;
        base = basename(copy_base);
        if (!base[0] || strcmp(base, "/") == 0 || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
                return -EISDIR;
        dir = strdup(dirname(copy_dir));
        if (!dir || asprintf(&template, "%s/.%s.XXXXXX", dir, base) < 0)
                return -ENOMEM;
        *ret_template = TAKE_PTR(template);
        *ret_dir = TAKE_PTR(dir);
        return 0;
}

static int fsync_dir(const char *dir) {
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (fd < 0)
                return -errno;
        return fsync(fd) < 0 ? -errno : 0;
}

int write_file_atomic(const char *path, const void *buf, size_t size, mode_t mode) {
        _cleanup_free_ char *tmp = NULL, *dir = NULL;
        _cleanup_close_ int fd = -1;
        int r;

        r = temp_name_for(path, &tmp, &dir);
        if (r < 0)
                return r;
        fd = mkostemp(tmp, O_CLOEXEC); /* O_CREAT | O_EXCL, never through a planted link */
        if (fd < 0)
                return -errno;
        r = fchmod(fd, mode) < 0 ? -errno : 0;
        if (r >= 0)
                r = write_full_fd(fd, buf, size);
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0) {
                (void)unlink(tmp);
                return r;
        }
        return fsync_dir(dir);
}
