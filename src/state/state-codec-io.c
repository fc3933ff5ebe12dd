/* SPDX-License-Identifier: MIT */
/*
 * The state codec (state-codec.c) bound to where the bytes are: a whole image in memory, or a
 * file descriptor read or written in pieces of STATE_IO_BUFFER. The codec itself does no I/O.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "state.h"
#include "util.h"

/* ---- a whole image in memory ---- */

typedef struct MemoryImage {
        uint8_t *buf;
        size_t n, size;
} MemoryImage;

static int write_memory(void *userdata, const void *data, size_t n) {
        MemoryImage *m = userdata;

        if (n > m->size - m->n)
                return -EIO; /* cannot happen: sized by state_encoded_size() */
        memcpy(m->buf + m->n, data, n);
        m->n += n;
        return 0;
}

int state_encode(const HydrateState *s, uint8_t **ret_buf, size_t *ret_size) {
        MemoryImage m = {.size = state_encoded_size(s)};
        int r;

        m.buf = malloc(m.size);
        if (!m.buf)
                return -ENOMEM;
        r = state_encode_to(s, write_memory, &m);
        if (r < 0) {
                free(m.buf);
                return r;
        }
        *ret_buf = m.buf;
        *ret_size = m.n;
        return 0;
}

static ssize_t read_memory(void *userdata, void *buf, size_t n) {
        MemoryImage *m = userdata;

        n = MIN(n, m->size - m->n);
        memcpy(buf, m->buf + m->n, n);
        m->n += n;
        return (ssize_t)n;
}

int state_decode(const uint8_t *buf, size_t size, HydrateState **ret) {
        MemoryImage m = {.buf = (uint8_t *)buf, .size = size};

        return state_decode_from(read_memory, &m, size, ret);
}

int state_summary(const uint8_t *buf, size_t size, StateSummary *ret) {
        MemoryImage m = {.buf = (uint8_t *)buf, .size = size};

        return state_summary_from(read_memory, &m, size, ret);
}

/* ---- a file descriptor ---- */

static int write_fd(void *userdata, const void *data, size_t n) {
        return write_full_fd(*(int *)userdata, data, n);
}

int state_encode_fd(const HydrateState *s, int fd) {
        return state_encode_to(s, write_fd, &fd);
}

static ssize_t read_fd(void *userdata, void *buf, size_t n) {
        for (;;) {
                ssize_t k = read(*(int *)userdata, buf, n);

                if (k >= 0)
                        return k;
                if (errno != EINTR)
                        return -errno;
        }
}

int state_decode_fd(int fd, uint64_t size, HydrateState **ret) {
        return state_decode_from(read_fd, &fd, size, ret);
}

int state_summary_fd(int fd, uint64_t size, StateSummary *ret) {
        return state_summary_from(read_fd, &fd, size, ret);
}
