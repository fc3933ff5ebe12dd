/* SPDX-License-Identifier: MIT */
/*
 * The libaio reader against a real file opened O_DIRECT, on a real sd-event loop. io_submit and
 * io_getevents are wrapped (-Wl,--wrap) so tests can make the kernel accept only part of a
 * batch, refuse it with -EAGAIN, or report reads short or interrupted: the cases a real device
 * produces only under pressure.
 */
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "reader.h"
#include "util.h"

#define CHUNK 65536u
#define N_CHUNKS 64u

int __real_io_submit(io_context_t ctx, long nr, struct iocb *ios[]);
int __wrap_io_submit(io_context_t ctx, long nr, struct iocb *ios[]);
int __real_io_getevents(io_context_t ctx, long min_nr, long nr, struct io_event *events,
                        struct timespec *timeout);
int __wrap_io_getevents(io_context_t ctx, long min_nr, long nr, struct io_event *events,
                        struct timespec *timeout);

static int submit_limit;  /* > 0: accept at most this many per call */
static int eagain_budget; /* calls left that fail with -EAGAIN */
static int submit_calls;
static int short_budget;         /* completions left to report as half-done */
static int interrupt_budget;     /* completions left to report as -EINTR */
static uint64_t bytes_completed; /* as reported to the reader, after the changes above */

/* The bytes an iocb asks for: a vectored read's pieces added up. */
static unsigned long iocb_bytes(const struct iocb *io) {
        const struct iovec *iov = io->u.c.buf;
        unsigned long sum = 0;

        if (io->aio_lio_opcode != IO_CMD_PREADV)
                return io->u.c.nbytes;
        for (unsigned long i = 0; i < io->u.c.nbytes; i++)
                sum += iov[i].iov_len;
        return sum;
}

/* Reports some full reads as short (half the bytes) or interrupted, as a device may. */
int __wrap_io_getevents(io_context_t ctx, long min_nr, long nr, struct io_event *events,
                        struct timespec *timeout) {
        int n = __real_io_getevents(ctx, min_nr, nr, events, timeout);

        for (int i = 0; i < n; i++) {
                if (interrupt_budget > 0) {
                        interrupt_budget--;
                        events[i].res = (unsigned long)-EINTR;
                } else if (short_budget > 0 && events[i].res == iocb_bytes(events[i].obj) &&
                           events[i].res >= 8192) {
                        short_budget--;
                        events[i].res /= 2;
                }
                if ((long)events[i].res > 0)
                        bytes_completed += events[i].res;
        }
        return n;
}

int __wrap_io_submit(io_context_t ctx, long nr, struct iocb *ios[]) {
        submit_calls++;
        if (eagain_budget > 0) {
                eagain_budget--;
                return -EAGAIN;
        }
        if (submit_limit > 0 && nr > submit_limit)
                nr = submit_limit;
        return __real_io_submit(ctx, nr, ios);
}

typedef struct Fixture {
        char path[64];
        int fd;
        sd_event *event;
        Reader *reader;
        unsigned completions[N_CHUNKS + 1];
        int last_error;
        unsigned n_errors;
        unsigned next;  /* next chunk to submit */
        unsigned limit; /* chunks to read in total */
        bool no_feed;   /* completions submit nothing (a stop) */
        unsigned n_cancelled;
} Fixture;

static void on_complete(Reader *r, const ReadRequest *req, int error, void *userdata);

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));
        char buf[CHUNK];

        strcpy(f->path, "/var/tmp/test-reader-XXXXXX");
        f->fd = mkstemp(f->path);
        assert_true(f->fd >= 0);
        memset(buf, 0xa5, sizeof(buf));
        for (unsigned i = 0; i < N_CHUNKS; i++)
                assert_int_equal(write(f->fd, buf, sizeof(buf)), sizeof(buf));
        assert_int_equal(close(f->fd), 0);
        f->fd = open(f->path, O_RDONLY | O_DIRECT | O_CLOEXEC);
        assert_true(f->fd >= 0);
        assert_int_equal(sd_event_new(&f->event), 0);
        assert_int_equal(reader_new(&f->reader, f->event, f->fd, 8, CHUNK, 4096, on_complete, f),
                         0);
        f->limit = N_CHUNKS;
        submit_limit = 0;
        eagain_budget = 0;
        submit_calls = 0;
        short_budget = 0;
        interrupt_budget = 0;
        bytes_completed = 0;
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        reader_free(f->reader);
        sd_event_unref(f->event);
        close(f->fd);
        unlink(f->path);
        free(f);
        return 0;
}

static void feed(Fixture *f) {
        while (f->next < f->limit) {
                ReadRequest req = {(uint64_t)f->next * CHUNK, CHUNK, 0, 0};

                if (reader_submit(f->reader, &req) == -EBUSY)
                        break;
                f->next++;
        }
        reader_flush(f->reader);
        if (f->next >= f->limit && reader_idle(f->reader))
                (void)sd_event_exit(f->event, 0);
}

static void on_complete(Reader *r, const ReadRequest *req, int error, void *userdata) {
        Fixture *f = userdata;

        if (error == -ECANCELED)
                f->n_cancelled++;
        else if (error < 0) {
                f->n_errors++;
                f->last_error = error;
        } else
                f->completions[req->offset / CHUNK]++;
        if (!f->no_feed)
                feed(f);
}

static void run_all(Fixture *f) {
        feed(f);
        assert_int_equal(sd_event_loop(f->event), 0);
}

static void assert_each_read_once(Fixture *f, unsigned n) {
        for (unsigned i = 0; i < n; i++)
                assert_int_equal(f->completions[i], 1);
}

static void test_reader_reads_every_chunk_once(void **state) {
        Fixture *f = *state;

        run_all(f);
        assert_int_equal(f->n_errors, 0);
        assert_each_read_once(f, N_CHUNKS);
        assert_true(reader_idle(f->reader));
}

static void test_reader_partial_submit(void **state) {
        Fixture *f = *state;

        submit_limit = 1; /* the kernel takes one iocb per call */
        run_all(f);
        assert_int_equal(f->n_errors, 0);
        assert_each_read_once(f, N_CHUNKS);
        assert_true(submit_calls >= (int)N_CHUNKS);
}

static void test_reader_eagain_is_retried(void **state) {
        Fixture *f = *state;

        eagain_budget = 3; /* nothing in flight: the reader must come back by itself, on a timer */
        run_all(f);
        assert_int_equal(f->n_errors, 0);
        assert_each_read_once(f, N_CHUNKS);
        assert_true(submit_calls > 3);
}

static void test_reader_short_reads_are_completed(void **state) {
        Fixture *f = *state;

        short_budget = 40; /* many reads come back half done, some twice in a row */
        run_all(f);
        assert_int_equal(short_budget, 0);
        /* Only if every remainder was read again do the reported bytes add up to the file. */
        assert_int_equal(bytes_completed, (uint64_t)N_CHUNKS * CHUNK);
        assert_int_equal(f->n_errors, 0);
        assert_each_read_once(f, N_CHUNKS);
}

static void test_reader_eintr_is_resubmitted(void **state) {
        Fixture *f = *state;

        interrupt_budget = 10;
        run_all(f);
        assert_int_equal(interrupt_budget, 0);
        assert_int_equal(bytes_completed, (uint64_t)N_CHUNKS * CHUNK);
        assert_int_equal(f->n_errors, 0);
        assert_each_read_once(f, N_CHUNKS);
}

static void test_reader_rejects_misaligned_and_full(void **state) {
        Fixture *f = *state;

        assert_int_equal(reader_submit(f->reader, &(ReadRequest){512, 4096, 0, 0}), -EINVAL);
        assert_int_equal(reader_submit(f->reader, &(ReadRequest){0, 1000, 0, 0}), -EINVAL);
        assert_int_equal(reader_submit(f->reader, &(ReadRequest){0, 2 * CHUNK, 0, 0}), -EINVAL);
        for (unsigned i = 0; i < reader_depth(f->reader); i++)
                assert_int_equal(
                        reader_submit(f->reader, &(ReadRequest){(uint64_t)i * CHUNK, CHUNK, 0, 0}),
                        0);
        assert_int_equal(reader_submit(f->reader, &(ReadRequest){0, CHUNK, 0, 0}), -EBUSY);
        f->next = f->limit = reader_depth(f->reader);
        reader_flush(f->reader);
        assert_int_equal(sd_event_loop(f->event), 0);
        assert_each_read_once(f, reader_depth(f->reader));
}

static void test_reader_past_end_is_an_error(void **state) {
        Fixture *f = *state;

        /* A read that starts at the end of the file returns 0 bytes: the device shrank. */
        f->next = N_CHUNKS;
        f->limit = N_CHUNKS + 1;
        run_all(f);
        assert_int_equal(f->n_errors, 1);
        assert_int_equal(f->last_error, -ENXIO);
}

/* A request larger than READER_BUFFER_MAX (a 4 MiB chunk of a 64 TiB volume) is one vectored
 * read into the one buffer, which stays at READER_BUFFER_MAX; what comes back short is read on
 * in pieces too. */
static void test_reader_large_requests_share_one_buffer(void **state) {
        Fixture *f = *state;
        uint64_t big = 4 * READER_BUFFER_MAX;

        assert_int_equal(truncate(f->path, (off_t)(2 * big)), 0); /* the rest reads as zeroes */
        f->reader = reader_free(f->reader);
        assert_int_equal(reader_new(&f->reader, f->event, f->fd, 2, big, 4096, on_complete, f), 0);
        assert_int_equal(reader_buffer_size(f->reader), READER_BUFFER_MAX);

        short_budget = 3; /* 4 MiB back as 2, then 2 as 1, ... */
        interrupt_budget = 1;
        f->next = f->limit = 0; /* feed() submits nothing more */
        assert_int_equal(reader_submit(f->reader, &(ReadRequest){0, big, 0, 0}), 0);
        assert_int_equal(reader_submit(f->reader, &(ReadRequest){big, big / 2 + 32768, 0, 0}), 0);
        reader_flush(f->reader);
        assert_int_equal(sd_event_loop(f->event), 0);
        assert_int_equal(f->n_errors, 0);
        assert_int_equal(short_budget, 0);
        assert_int_equal(bytes_completed, big + big / 2 + 32768);
        assert_int_equal(f->completions[0], 1);
        assert_int_equal(f->completions[big / CHUNK], 1);
}

/* A stop: reads in flight complete and are delivered; what was never sent, and the rest of a
 * short read, end cancelled; nothing is sent afterwards. */
static void test_reader_drain(void **state) {
        Fixture *f = *state;
        unsigned done = 0;

        f->no_feed = true;
        f->limit = 4;
        feed(f);                           /* 4 in flight */
        for (unsigned i = 4; i < 8; i++) { /* 4 queued, never sent */
                ReadRequest req = {(uint64_t)i * CHUNK, CHUNK, 0, 0};

                assert_int_equal(reader_submit(f->reader, &req), 0);
        }
        f->limit = 8;
        short_budget = 1; /* one of those in flight comes back half done */
        reader_drain(f->reader, 5 * USEC_PER_SEC);
        for (unsigned i = 0; i < 8; i++)
                done += f->completions[i];
        assert_int_equal(done, 3);
        assert_int_equal(f->n_cancelled, 5);
        assert_int_equal(f->n_errors, 0);
        assert_int_equal(reader_in_flight(f->reader), 0);
        assert_true(reader_idle(f->reader));
        f->next = 0;
        feed(f);                           /* drained: queued, and dropped at the flush */
        assert_int_equal(submit_calls, 1); /* the first feed's; none since */
        assert_int_equal(f->n_cancelled, 13);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_reader_reads_every_chunk_once, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_reader_partial_submit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reader_eagain_is_retried, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reader_short_reads_are_completed, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_reader_eintr_is_resubmitted, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reader_rejects_misaligned_and_full, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_reader_past_end_is_an_error, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reader_large_requests_share_one_buffer, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_reader_drain, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
