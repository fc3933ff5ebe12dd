/* SPDX-License-Identifier: MIT */
/*
 * The libaio queue-depth reader: up to N O_DIRECT reads in flight on a read-only descriptor,
 * completions delivered through an eventfd watched by sd-event. The data is never looked at,
 * so every read lands in one shared aligned buffer of at most READER_BUFFER_MAX bytes (a larger
 * read goes into it in pieces, as one vectored read): memory grows neither with queue depth nor
 * with the request size.
 * The reader handles partial io_submit, -EAGAIN, -EINTR and short reads itself; a request's
 * final outcome (all bytes read, or a negative errno) goes to the completion callback.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "util.h"

typedef struct Reader Reader;

#define READER_BUFFER_MAX (UINT64_C(1) << 20)

typedef struct ReadRequest {
        uint64_t offset;      /* aligned to the reader's alignment */
        uint64_t length;      /* multiple of the alignment, at most the reader's max request size */
        unsigned attempt;     /* caller's bookkeeping (retries); passed back untouched */
        uint64_t submit_usec; /* caller's bookkeeping (latency); passed back untouched */
} ReadRequest;

/* Called once per request with 0 or a negative errno. May submit new requests. */
typedef void (*reader_complete_t)(Reader *r, const ReadRequest *req, int error, void *userdata);

/*
 * reader_new() - set up the aio context (io_setup; -EAGAIN when fs.aio-max-nr is exhausted),
 * the eventfd and its sd-event source.
 * @fd: opened O_RDONLY|O_DIRECT; not owned. @depth: max requests in flight.
 * @max_request: largest request in bytes. @alignment: the device's logical block size.
 */
int reader_new(Reader **ret, sd_event *event, int fd, unsigned depth, uint64_t max_request,
               uint32_t alignment, reader_complete_t complete, void *userdata);
/* reader_free() - waits for reads still in flight (io_destroy), then frees. NULL-safe. */
Reader *reader_free(Reader *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(Reader *, reader_free)

/* reader_submit() - queue one read; -EBUSY when every slot is taken, -EINVAL if misaligned. */
int reader_submit(Reader *r, const ReadRequest *req);
/* reader_flush() - hand queued reads to the kernel (io_submit). Errors go to the callback. */
void reader_flush(Reader *r);
/* reader_poll() - deliver the completions the kernel has now, without waiting for the eventfd
 * (before comparing our own count of completed reads with the disk's counters). */
void reader_poll(Reader *r);

/* reader_drain() - stop: reads not yet sent, and the rest of short reads, end with -ECANCELED;
 * the completions of reads in flight go to the callback as they come, for up to @timeout_usec
 * (what a stop can still record). Nothing is sent afterwards; what is still in flight then is
 * waited for by reader_free(). */
void reader_drain(Reader *r, uint64_t timeout_usec);

/* Called after each reader_flush() (and so after the completions of each poll): what is in
 * flight and what completed have just changed. */
typedef void (*reader_flushed_t)(Reader *r, void *userdata);
/* reader_set_flushed() - call @flushed (NULL: nothing) with the reader's userdata. */
void reader_set_flushed(Reader *r, reader_flushed_t flushed);

/* reader_buffer_size() - bytes of the buffer every read lands in. */
size_t reader_buffer_size(const Reader *r);
unsigned reader_depth(const Reader *r);
unsigned reader_busy(const Reader *r);      /* queued + in flight + waiting to be resubmitted */
unsigned reader_in_flight(const Reader *r); /* accepted by io_submit, not yet completed */
bool reader_idle(const Reader *r);
/* reader_partial_bytes() - bytes already read of reads not yet complete: a device that returned
 * part of a read (its disk counted that part) before the rest. */
uint64_t reader_partial_bytes(const Reader *r);
