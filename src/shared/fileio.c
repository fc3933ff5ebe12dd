/* SPDX-License-Identifier: MIT */
/*
 * Whole-file reads with a size cap (fileio.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
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
