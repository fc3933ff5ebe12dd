/* SPDX-License-Identifier: MIT */
/*
 * Whole-file reads with a size cap, and whole-file replacement (fileio.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
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

int read_regular_file_at(int dir_fd, const char *name, size_t max_size, char **ret,
                         size_t *ret_size, uid_t *ret_uid) {
        _cleanup_close_ int fd = -1;
        struct stat st;
        int r;

        /* O_NONBLOCK: a FIFO under the name must not hang the reader; fstat() then refuses it. */
        fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return errno == ELOOP ? -EBADFD : -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        if ((uint64_t)st.st_size > max_size)
                return -EFBIG;
        r = read_full_fd(fd, max_size, ret, ret_size);
        if (r >= 0 && ret_uid)
                *ret_uid = st.st_uid;
        return r;
}

int write_full_fd_stall(int fd, const void *buf, size_t size, uint64_t stall_usec) {
        const char *p = buf;

        while (size > 0) {
                ssize_t n = write(fd, p, size);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN && stall_usec > 0) {
                        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
                        int k = poll(&pfd, 1,
                                     (int)MIN(stall_usec / USEC_PER_MSEC, (uint64_t)INT_MAX));

                        if (k == 0)
                                return -ETIMEDOUT;
                        if (k < 0 && errno != EINTR)
                                return -errno;
                        continue;
                }
                if (n < 0)
                        return -errno;
                p += n;
                size -= (size_t)n;
        }
        return 0;
}

int write_full_fd(int fd, const void *buf, size_t size) {
        return write_full_fd_stall(fd, buf, size, 0);
}

/* A name for a temporary file beside @name in its directory: "." + @name + "." + 6 random
 * letters (node_exporter and the like skip dot files). */
static int temp_name(const char *name, char *buf, size_t size) {
        static const char letters[] = "abcdefghijklmnopqrstuvwxyz0123456789";
        uint8_t rnd[6];
        int n;

        if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
                return -errno ?: -EIO;
        n = snprintf(buf, size, ".%s.", name);
        if (n < 0 || (size_t)n + sizeof(rnd) >= size)
                return -ENAMETOOLONG;
        for (size_t i = 0; i < sizeof(rnd); i++)
                buf[n + i] = letters[rnd[i] % (sizeof(letters) - 1)];
        buf[n + sizeof(rnd)] = '\0';
        return 0;
}

int rename_into_place(int dir_fd, const char *tmp, const char *name, int r) {
        if (r >= 0 && renameat(dir_fd, tmp, dir_fd, name) < 0)
                r = -errno;
        if (r < 0)
                (void)unlinkat(dir_fd, tmp, 0);
        return r < 0 ? r : 0;
}

int write_file_atomic_at(int dir_fd, const char *name, const void *buf, size_t size, mode_t mode,
                         WriteAtomicFlags flags) {
        char tmp[NAME_MAX + 1];
        _cleanup_close_ int fd = -1;
        int r;

        if (!name[0] || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                return -EISDIR;
        for (unsigned tries = 0; fd < 0; tries++) {
                r = temp_name(name, tmp, sizeof(tmp));
                if (r < 0)
                        return r;
                /* O_EXCL: never through a planted link, never over someone else's file */
                fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                            mode);
                if (fd < 0 && (errno != EEXIST || tries >= 100))
                        return -errno;
        }
        r = fchmod(fd, mode) < 0 ? -errno : 0; /* whatever the umask */
        if (r >= 0)
                r = write_full_fd(fd, buf, size);
        if (r >= 0 && (flags & WRITE_ATOMIC_SYNC) && fsync(fd) < 0)
                r = -errno;
        r = rename_into_place(dir_fd, tmp, name, r);
        if (r < 0)
                return r;
        if ((flags & WRITE_ATOMIC_SYNC) && fsync(dir_fd) < 0)
                return -errno;
        return 0;
}

int write_file_atomic(const char *path, const void *buf, size_t size, mode_t mode) {
        _cleanup_free_ char *copy_dir = strdup(path), *copy_base = strdup(path);
        _cleanup_close_ int dir_fd = -1;
        const char *base;

        if (!copy_dir || !copy_base)
                return -ENOMEM;
        base = basename(copy_base);
        dir_fd = open(dirname(copy_dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0)
                return -errno;
        return write_file_atomic_at(dir_fd, base, buf, size, mode, WRITE_ATOMIC_SYNC);
}
