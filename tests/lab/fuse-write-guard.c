/* SPDX-License-Identifier: MIT */
/*
 * fuse-write-guard: preloaded into qemu-storage-daemon by `ebs-rig up --writable`.
 *
 * qemu 7.2's FUSE export receives every request into one buffer per export (libfuse's
 * struct fuse_buf) and handles it at once. A write hands the block layer a pointer into that
 * buffer and waits in a nested event loop, which may receive the next request into the same
 * buffer before the write's bytes were used: the write then stores the bytes of another
 * request. With a loop device in direct I/O mode requests overlap all the time; a mount, one
 * file and `sync` gave an ext4 that e2fsck rejected. (qemu fixed this upstream in 2025 by
 * copying the payload before waiting.)
 *
 * This library wraps the two libfuse calls the export makes: a request received while another
 * one is still being handled gets a buffer of its own (libfuse allocates one when the
 * buffer's memory is NULL), and a handler that returns frees its buffer if a later request
 * took another one. No header of libfuse is needed (Debian ships it only in libfuse3-dev):
 * struct fuse_buf is libfuse 3's fixed ABI.
 *
 * Build: cc -shared -fPIC -O2 -o fuse-write-guard.so fuse-write-guard.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

struct fuse_session;

struct fuse_buf { /* <fuse3/fuse_common.h> */
        size_t size;
        int flags; /* enum fuse_buf_flags */
        void *mem;
        int fd;
        off_t pos;
};

typedef int (*receive_fn)(struct fuse_session *se, struct fuse_buf *buf);
typedef void (*process_fn)(struct fuse_session *se, const struct fuse_buf *buf);

/* The requests being handled now, innermost first, each with the buffer it was received in. */
struct frame {
        void *mem;
        struct frame *outer;
};
static __thread struct frame *handling;

static void *next_symbol(const char *name) {
        void *f = dlvsym(RTLD_NEXT, name, "FUSE_3.0");

        if (!f)
                f = dlsym(RTLD_NEXT, name);
        if (!f) {
                fprintf(stderr, "fuse-write-guard: %s not found: %s\n", name, dlerror());
                abort();
        }
        return f;
}

static bool in_use(const void *mem) {
        for (const struct frame *f = handling; f; f = f->outer)
                if (f->mem == mem)
                        return true;
        return false;
}

int fuse_session_receive_buf(struct fuse_session *se, struct fuse_buf *buf) {
        static receive_fn next;

        if (!next)
                next = (receive_fn)next_symbol("fuse_session_receive_buf");
        if (buf->mem && in_use(buf->mem))
                buf->mem = NULL; /* a request being handled still reads it: libfuse allocates */
        return next(se, buf);
}

void fuse_session_process_buf(struct fuse_session *se, const struct fuse_buf *buf) {
        static process_fn next;
        struct frame f = {.mem = buf->mem, .outer = handling};

        if (!next)
                next = (process_fn)next_symbol("fuse_session_process_buf");
        handling = &f;
        next(se, buf);
        handling = f.outer;
        /* A request received meanwhile took a new buffer: ours is referenced no more. */
        if (f.mem && buf->mem != f.mem)
                free(f.mem);
}
