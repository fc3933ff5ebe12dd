/* SPDX-License-Identifier: MIT */
/*
 * libaio reader. Each slot owns one iocb; a request may need several iocbs in a row when the
 * device returns short reads. A request larger than the shared buffer is one vectored read
 * whose pieces all point at the buffer. io_submit may take only part of the queue or fail with
 * -EAGAIN (no kernel resources): what it does not take stays queued, and is retried on the next
 * completion or, when nothing is in flight, from a short timer.
 */
#include <assert.h>
#include <errno.h>
#include <libaio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "reader.h"
#include "time-util.h"
#include "util.h"

#define READER_EAGAIN_RETRY_USEC (10 * USEC_PER_MSEC)
#define READER_IOV_MAX 16u /* pieces of one read, at most */

typedef struct Slot {
        struct iocb iocb;
        struct iovec *iov; /* r->n_iov of them: a read larger than the buffer, in pieces */
        ReadRequest req;
        uint64_t done; /* bytes of req already read (short reads) */
} Slot;

struct Reader {
        sd_event *event;
        sd_event_source *io_source;
        sd_event_source *retry_source;
        io_context_t ctx;
        int fd;
        int efd;
        uint32_t alignment;
        uint64_t max_request;
        void *buffer;
        size_t buffer_size; /* up to READER_BUFFER_MAX, less than max_request on large chunks */
        unsigned n_iov;     /* pieces of buffer_size the largest request needs */
        struct iovec *iovs; /* n_iov per slot */

        Slot *slots;
        unsigned depth;
        unsigned *free_slots; /* stack of free slot indexes */
        unsigned n_free;
        struct iocb **queue; /* prepared, not yet accepted by io_submit */
        unsigned n_queued;
        unsigned n_inflight;
        uint64_t partial; /* bytes read of reads not yet complete (short reads) */
        bool flushing;
        bool draining; /* reader_drain(): nothing more is sent */

        reader_complete_t complete;
        reader_flushed_t flushed;
        void *userdata;
};

/* A read of what is left of the slot's request, into the one buffer: larger than the buffer, a
 * vectored read whose pieces all land in it, so that memory does not grow with the chunk size
 * either (a 4 MiB chunk is one read of 4 MiB, and still costs 1 MiB). */
static void slot_finish(Reader *r, Slot *s, int error);

static void slot_prepare(Reader *r, Slot *s) {
        uint64_t left = s->req.length - s->done, offset = s->req.offset + s->done;

        if (r->draining) { /* the rest of a short read is not asked for */
                slot_finish(r, s, -ECANCELED);
                return;
        }

        if (left <= r->buffer_size)
                io_prep_pread(&s->iocb, r->fd, r->buffer, left, (long long)offset);
        else {
                unsigned n = (unsigned)DIV_ROUND_UP(left, r->buffer_size);

                assert(n <= r->n_iov);
                for (unsigned i = 0; i < n; i++)
                        s->iov[i] = (struct iovec){
                                .iov_base = r->buffer,
                                .iov_len = MIN(r->buffer_size, left - i * r->buffer_size)};
                io_prep_preadv(&s->iocb, r->fd, s->iov, (int)n, (long long)offset);
        }
        io_set_eventfd(&s->iocb, r->efd);
        r->queue[r->n_queued++] = &s->iocb;
}

static void slot_finish(Reader *r, Slot *s, int error) {
        ReadRequest req = s->req;

        assert(r->partial >= s->done);
        r->partial -= s->done;
        s->done = 0;
        /* Free the slot first: the callback may want to submit the next read into it. */
        r->free_slots[r->n_free++] = (unsigned)(s - r->slots);
        r->complete(r, &req, error, r->userdata);
}

static void queue_drop_first(Reader *r, unsigned n) {
        memmove(r->queue, r->queue + n, (r->n_queued - n) * sizeof(*r->queue));
        r->n_queued -= n;
}

static int on_retry_timer(sd_event_source *source, uint64_t usec, void *userdata) {
        reader_flush(userdata);
        return 0;
}

static void schedule_retry(Reader *r) {
        int r2;

        /* Completions will flush again; a timer is only needed when nothing is in flight. */
        if (r->n_inflight > 0)
                return;
        r2 = sd_event_source_set_time_relative(r->retry_source, READER_EAGAIN_RETRY_USEC);
        if (r2 >= 0)
                r2 = sd_event_source_set_enabled(r->retry_source, SD_EVENT_ONESHOT);
        if (r2 < 0) /* cannot arm a timer: fail the reads rather than stall forever */
                while (r->n_queued > 0) {
                        Slot *s = container_of(r->queue[0], Slot, iocb);

                        queue_drop_first(r, 1);
                        slot_finish(r, s, -EAGAIN);
                }
}

void reader_flush(Reader *r) {
        if (r->draining) {
                while (r->n_queued > 0) {
                        Slot *s = container_of(r->queue[0], Slot, iocb);

                        queue_drop_first(r, 1);
                        slot_finish(r, s, -ECANCELED);
                }
                return;
        }
        if (r->flushing) /* re-entered from a completion callback: the outer loop continues */
                return;
        r->flushing = true;
        while (r->n_queued > 0) {
                int n = io_submit(r->ctx, (long)r->n_queued, r->queue);

                if (n == -EINTR)
                        continue;
                if (n == -EAGAIN) {
                        schedule_retry(r);
                        break;
                }
                if (n < 0) {
                        /* The first iocb was refused (e.g. -EINVAL, -EBADF); the rest may be fine.
                         */
                        Slot *s = container_of(r->queue[0], Slot, iocb);

                        queue_drop_first(r, 1);
                        slot_finish(r, s, n);
                        continue;
                }
                r->n_inflight += (unsigned)n;
                queue_drop_first(r, (unsigned)n);
        }
        r->flushing = false;
        if (r->flushed)
                r->flushed(r, r->userdata);
}

void reader_set_flushed(Reader *r, reader_flushed_t flushed) {
        r->flushed = flushed;
}

static void handle_event(Reader *r, struct io_event *ev) {
        Slot *s = container_of(ev->obj, Slot, iocb);
        long res = (long)ev->res; /* libaio reports -errno here, it does not set errno */
        uint64_t left = s->req.length - s->done;

        r->n_inflight--;
        if (res == -EINTR || res == -EAGAIN) {
                slot_prepare(r, s);
                return;
        }
        if (res < 0) {
                slot_finish(r, s, (int)res);
                return;
        }
        if (res == 0) { /* end of device before the end of the request: it shrank */
                slot_finish(r, s, -ENXIO);
                return;
        }
        if ((uint64_t)res < left) {
                if (res % r->alignment != 0) {
                        slot_finish(r, s, -EIO);
                        return;
                }
                s->done += (uint64_t)res;
                r->partial += (uint64_t)res;
                slot_prepare(r, s); /* short read: ask for the rest */
                return;
        }
        slot_finish(r, s, 0);
}

/* Hands every completion the kernel has to the callback, without waiting for more. */
static void reap(Reader *r) {
        struct io_event events[64];
        struct timespec zero = {0, 0};
        int n;

        do {
                n = io_getevents(r->ctx, 0, (long)ELEMENTSOF(events), events, &zero);
                for (int i = 0; i < n; i++)
                        handle_event(r, &events[i]);
        } while (n == (int)ELEMENTSOF(events) || n == -EINTR);
        reader_flush(r);
}

static int on_eventfd(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        Reader *r = userdata;
        uint64_t count;

        (void)read(r->efd, &count, sizeof(count)); /* just clears the counter; EAGAIN is fine */
        reap(r);
        return 0;
}

void reader_poll(Reader *r) {
        reap(r);
}

void reader_drain(Reader *r, uint64_t timeout_usec) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + timeout_usec;

        r->draining = true;
        reader_flush(r); /* drops what was never sent */
        while (r->n_inflight > 0) {
                struct io_event events[64];
                uint64_t now = now_usec(CLOCK_MONOTONIC), left;
                struct timespec ts;
                int n;

                if (now >= deadline)
                        break;
                left = deadline - now;
                ts = (struct timespec){.tv_sec = (time_t)(left / USEC_PER_SEC),
                                       .tv_nsec = (long)(left % USEC_PER_SEC) * 1000};
                n = io_getevents(r->ctx, 1, (long)ELEMENTSOF(events), events, &ts);
                if (n == -EINTR)
                        continue;
                if (n <= 0) /* the time is up, or the context is broken: stop waiting */
                        break;
                for (int i = 0; i < n; i++)
                        handle_event(r, &events[i]);
        }
}

/* The buffer: the largest request, up to READER_BUFFER_MAX; a larger request is read in at most
 * READER_IOV_MAX pieces, so the buffer grows past READER_BUFFER_MAX only for requests larger than
 * that many of it (chunks of more than 16 MiB: devices over 128 TiB). */
static size_t buffer_size_for(uint64_t max_request, size_t align) {
        uint64_t size = MIN(max_request, (uint64_t)READER_BUFFER_MAX);

        if (DIV_ROUND_UP(max_request, size) > READER_IOV_MAX)
                size = DIV_ROUND_UP(DIV_ROUND_UP(max_request, READER_IOV_MAX), align) * align;
        return (size_t)size;
}

static int reader_alloc(Reader *r, unsigned depth, uint64_t max_request, uint32_t alignment) {
        size_t buffer_align = MAX(alignment, (uint32_t)sysconf(_SC_PAGESIZE));

        r->buffer_size = buffer_size_for(max_request, buffer_align);
        r->n_iov = (unsigned)DIV_ROUND_UP(max_request, r->buffer_size);
        r->slots = calloc(depth, sizeof(*r->slots));
        r->free_slots = calloc(depth, sizeof(*r->free_slots));
        r->queue = calloc(depth, sizeof(*r->queue));
        r->iovs = calloc((size_t)depth * r->n_iov, sizeof(*r->iovs));
        if (!r->slots || !r->free_slots || !r->queue || !r->iovs)
                return -ENOMEM;
        if (posix_memalign(&r->buffer, buffer_align, r->buffer_size) != 0)
                return -ENOMEM;
        for (unsigned i = 0; i < depth; i++) {
                r->slots[i].iov = r->iovs + (size_t)i * r->n_iov;
                r->free_slots[r->n_free++] = depth - 1 - i;
        }
        return 0;
}

int reader_new(Reader **ret, sd_event *event, int fd, unsigned depth, uint64_t max_request,
               uint32_t alignment, reader_complete_t complete, void *userdata) {
        _cleanup_(reader_freep) Reader *r = NULL;
        int k;

        if (depth == 0 || alignment == 0 || max_request == 0 || max_request % alignment != 0)
                return -EINVAL;
        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->fd = fd;
        r->efd = -1;
        r->depth = depth;
        r->alignment = alignment;
        r->max_request = max_request;
        r->complete = complete;
        r->userdata = userdata;
        r->event = sd_event_ref(event);

        k = reader_alloc(r, depth, max_request, alignment);
        if (k < 0)
                return k;
        k = io_setup((int)depth, &r->ctx);
        if (k < 0)
                return k;
        r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (r->efd < 0)
                return -errno;
        k = sd_event_add_io(event, &r->io_source, r->efd, EPOLLIN, on_eventfd, r);
        if (k < 0)
                return k;
        k = sd_event_add_time_relative(event, &r->retry_source, CLOCK_MONOTONIC,
                                       READER_EAGAIN_RETRY_USEC, 0, on_retry_timer, r);
        if (k < 0)
                return k;
        k = sd_event_source_set_enabled(r->retry_source, SD_EVENT_OFF);
        if (k < 0)
                return k;

        *ret = TAKE_PTR(r);
        return 0;
}

Reader *reader_free(Reader *r) {
        if (!r)
                return NULL;
        if (r->ctx)
                (void)io_destroy(r->ctx); /* waits for reads still in flight */
        sd_event_source_disable_unref(r->io_source);
        sd_event_source_disable_unref(r->retry_source);
        if (r->efd >= 0)
                (void)close(r->efd);
        sd_event_unref(r->event);
        free(r->buffer);
        free(r->iovs);
        free(r->queue);
        free(r->free_slots);
        free(r->slots);
        free(r);
        return NULL;
}

int reader_submit(Reader *r, const ReadRequest *req) {
        Slot *s;

        if (req->length == 0 || req->length > r->max_request || req->offset % r->alignment != 0 ||
            req->length % r->alignment != 0)
                return -EINVAL;
        if (r->n_free == 0)
                return -EBUSY;

        s = &r->slots[r->free_slots[--r->n_free]];
        assert(r->n_inflight <= r->depth - r->n_free); /* a slot is claimed before it is sent */
        s->req = *req;
        s->done = 0;
        slot_prepare(r, s);
        return 0;
}

size_t reader_buffer_size(const Reader *r) {
        return r->buffer_size;
}

unsigned reader_depth(const Reader *r) {
        return r->depth;
}

unsigned reader_busy(const Reader *r) {
        return r->depth - r->n_free;
}

unsigned reader_in_flight(const Reader *r) {
        return r->n_inflight;
}

uint64_t reader_partial_bytes(const Reader *r) {
        return r->partial;
}

bool reader_idle(const Reader *r) {
        return r->n_free == r->depth;
}
