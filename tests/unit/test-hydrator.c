/* SPDX-License-Identifier: MIT */
/*
 * The hydrator's state machine on a fake clock with a fake reader. The clock
 * (hydrator_now_usec), sd-event's timer calls, the reader and state_save are wrapped at link
 * time (-Wl,--wrap, tests/CMakeLists.txt): time moves only when a test says so, timers fire in
 * order as it moves, and each test decides how every read ends. The checkpoint is saved for real
 * in a temporary directory; the wrapper counts the saves.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cmocka.h>

#include "config.h"
#include "fixtures.h"
#include "hydrator-internal.h" /* the tuner's pace */
#include "hydrator.h"
#include "reader.h"
#include "siblings.h"
#include "tuner.h"
#include "util.h" /* USEC_PER_SEC, USEC_PER_MSEC */

#define KIB UINT64_C(1024)
#define MIB (KIB * KIB)
#define CHUNK (512 * KIB) /* chunk_size_for() of any device here */
#define T0 (1000 * USEC_PER_SEC)
#define MAX_IN_FLIGHT 64u
#define MAX_SUBMITTED 1024u

uint64_t __wrap_hydrator_now_usec(void);
int __wrap_sd_event_add_time(sd_event *e, sd_event_source **ret, clockid_t clock, uint64_t usec,
                             uint64_t accuracy, sd_event_time_handler_t callback, void *userdata);
int __real_sd_event_source_set_time(sd_event_source *s, uint64_t usec);
int __wrap_sd_event_source_set_time(sd_event_source *s, uint64_t usec);
int __real_sd_event_source_set_enabled(sd_event_source *s, int enabled);
int __wrap_sd_event_source_set_enabled(sd_event_source *s, int enabled);
sd_event_source *__real_sd_event_source_disable_unref(sd_event_source *s);
sd_event_source *__wrap_sd_event_source_disable_unref(sd_event_source *s);
int __wrap_reader_new(Reader **ret, sd_event *event, int fd, unsigned depth, uint64_t max_request,
                      uint32_t alignment, reader_complete_t complete, void *userdata);
Reader *__wrap_reader_free(Reader *r);
int __wrap_reader_submit(Reader *r, const ReadRequest *req);
void __wrap_reader_flush(Reader *r);
void __wrap_reader_poll(Reader *r);
void __wrap_reader_drain(Reader *r, uint64_t timeout_usec);
unsigned __wrap_reader_busy(const Reader *r);
unsigned __wrap_reader_in_flight(const Reader *r);
bool __wrap_reader_idle(const Reader *r);
uint64_t __wrap_reader_partial_bytes(const Reader *r);
int __real_state_save(int dir_fd, const HydrateState *s);
int __wrap_state_save(int dir_fd, const HydrateState *s);

/* The clock: moves only in advance_to(). */
static uint64_t fake_now;

uint64_t __wrap_hydrator_now_usec(void) {
        return fake_now;
}

/* Timers: what the hydrator asked sd-event for, fired by advance_to(). */
struct sd_event_source {
        sd_event_time_handler_t callback;
        void *userdata;
        uint64_t usec;
        int enabled; /* SD_EVENT_OFF or SD_EVENT_ONESHOT: all the hydrator uses */
        sd_event_source *next;
};
static sd_event_source *timers;
/* How late every timer fires, as sd-event may within its accuracy and a busy loop does. */
static uint64_t timer_late;
/* yield_paces()' device serves at these microseconds past a multiple of 10 ms ... */
static uint64_t device_phase;
/* ... one read each this many steps of 10 ms (1: 100 MiB/s), and someone else reads this many
 * bytes a second from it from 4 s on; and the tuner's pace summed over its last 3 s (bytes). */
static unsigned device_every = 1;
static uint64_t their_rate = 25 * MIB;
static double paced_bytes;

static bool fake_timer(const sd_event_source *s) {
        for (const sd_event_source *t = timers; t; t = t->next)
                if (t == s)
                        return true;
        return false;
}

int __wrap_sd_event_add_time(sd_event *e, sd_event_source **ret, clockid_t clock, uint64_t usec,
                             uint64_t accuracy, sd_event_time_handler_t callback, void *userdata) {
        sd_event_source *s = calloc(1, sizeof(*s));

        assert_non_null(s);
        assert_int_equal(clock, CLOCK_MONOTONIC);
        *s = (sd_event_source){callback, userdata, usec, SD_EVENT_ONESHOT, timers};
        timers = s;
        *ret = s;
        return 0;
}

int __wrap_sd_event_source_set_time(sd_event_source *s, uint64_t usec) {
        if (!fake_timer(s))
                return __real_sd_event_source_set_time(s, usec);
        s->usec = usec;
        return 0;
}

int __wrap_sd_event_source_set_enabled(sd_event_source *s, int enabled) {
        if (!s || !fake_timer(s))
                return __real_sd_event_source_set_enabled(s, enabled);
        assert_true(enabled == SD_EVENT_OFF || enabled == SD_EVENT_ONESHOT);
        s->enabled = enabled;
        return 0;
}

sd_event_source *__wrap_sd_event_source_disable_unref(sd_event_source *s) {
        if (!s || !fake_timer(s))
                return __real_sd_event_source_disable_unref(s);
        for (sd_event_source **p = &timers; *p; p = &(*p)->next)
                if (*p == s) {
                        *p = s->next;
                        break;
                }
        free(s);
        return NULL;
}

/* Fires the timers due up to @t, earliest first, each at its own time (timer_late after it);
 * then the clock is @t. */
static void advance_to(uint64_t t) {
        assert_true(t >= fake_now);
        for (;;) {
                sd_event_source *due = NULL;

                for (sd_event_source *s = timers; s; s = s->next)
                        if (s->enabled != SD_EVENT_OFF && s->usec + timer_late <= t &&
                            (!due || s->usec < due->usec))
                                due = s;
                if (!due)
                        break;
                fake_now = MAX(fake_now, due->usec + timer_late);
                due->enabled = SD_EVENT_OFF;
                (void)due->callback(due, due->usec, due->userdata);
        }
        fake_now = t;
}

static void advance(uint64_t usec) {
        advance_to(fake_now + usec);
}

/* The reader: reads go in flight at reader_flush() and stay there until a test ends them. */
struct Reader {
        reader_complete_t complete;
        void *userdata;
        unsigned depth;
        ReadRequest queued[MAX_IN_FLIGHT], in_flight[MAX_IN_FLIGHT];
        unsigned n_queued, n_in_flight;
};
static Reader *reader;

/* Every request handed to the reader, in order, with the time it was. */
typedef struct Submitted {
        ReadRequest req;
        uint64_t usec;
} Submitted;
static Submitted submitted[MAX_SUBMITTED];
static unsigned n_submitted;

int __wrap_reader_new(Reader **ret, sd_event *event, int fd, unsigned depth, uint64_t max_request,
                      uint32_t alignment, reader_complete_t complete, void *userdata) {
        Reader *r = calloc(1, sizeof(*r));

        assert_non_null(r);
        assert_null(reader);
        assert_true(depth <= MAX_IN_FLIGHT);
        *r = (Reader){.complete = complete, .userdata = userdata, .depth = depth};
        *ret = reader = r;
        return 0;
}

Reader *__wrap_reader_free(Reader *r) {
        if (r == reader)
                reader = NULL;
        free(r);
        return NULL;
}

int __wrap_reader_submit(Reader *r, const ReadRequest *req) {
        if (r->n_queued + r->n_in_flight >= r->depth)
                return -EBUSY;
        assert_true(n_submitted < MAX_SUBMITTED);
        assert_int_equal(req->offset % CHUNK, 0);
        r->queued[r->n_queued++] = *req;
        submitted[n_submitted++] = (Submitted){*req, fake_now};
        return 0;
}

void __wrap_reader_flush(Reader *r) {
        for (unsigned i = 0; i < r->n_queued; i++)
                r->in_flight[r->n_in_flight++] = r->queued[i];
        r->n_queued = 0;
}

void __wrap_reader_poll(Reader *r) {
}

/* A stop's wait: the first drain_complete reads in flight end with drain_error, the rest stay in
 * flight (the device is slower than the wait); what was queued and not sent ends cancelled. */
static unsigned drain_complete, n_drains;
static int drain_error;
static uint64_t drain_timeout;

static void complete_first(int error);

void __wrap_reader_drain(Reader *r, uint64_t timeout_usec) {
        n_drains++;
        drain_timeout = timeout_usec;
        while (r->n_queued > 0) {
                ReadRequest req = r->queued[--r->n_queued];

                r->complete(r, &req, -ECANCELED, r->userdata);
        }
        for (unsigned i = 0; i < drain_complete && r->n_in_flight > 0; i++)
                complete_first(drain_error);
}

unsigned __wrap_reader_busy(const Reader *r) {
        return r->n_queued + r->n_in_flight;
}

unsigned __wrap_reader_in_flight(const Reader *r) {
        return r->n_in_flight;
}

bool __wrap_reader_idle(const Reader *r) {
        return r->n_queued + r->n_in_flight == 0;
}

uint64_t __wrap_reader_partial_bytes(const Reader *r) {
        return 0; /* the fake reader completes reads whole */
}

/* Ends the read at @offset with @error (0: read in full), as the real reader's callback does. */
static void complete_at(uint64_t offset, int error) {
        for (unsigned i = 0; i < reader->n_in_flight; i++) {
                ReadRequest req = reader->in_flight[i];

                if (req.offset != offset)
                        continue;
                memmove(&reader->in_flight[i], &reader->in_flight[i + 1],
                        (reader->n_in_flight - i - 1) * sizeof(req));
                reader->n_in_flight--;
                reader->complete(reader, &req, error, reader->userdata);
                return;
        }
        fail_msg("no read in flight at byte %" PRIu64, offset);
}

/* Ends the oldest read in flight. */
static void complete_first(int error) {
        assert_true(reader->n_in_flight > 0);
        complete_at(reader->in_flight[0].offset, error);
}

/* Ends every read in flight now (not those the completions submit). */
static void complete_all(int error) {
        for (unsigned n = reader->n_in_flight; n > 0; n--)
                complete_first(error);
}

static unsigned saves;
static uint64_t saved_done_bytes; /* what the last save said was read */

int __wrap_state_save(int dir_fd, const HydrateState *s) {
        saves++;
        saved_done_bytes = chunkmap_done_bytes(s->map);
        return __real_state_save(dir_fd, s);
}

typedef struct Fixture {
        char *dir;
        int dir_fd;
        sd_event *event;
        BlockDevice dev;
        HydrateSettings settings;
        Hydrator *h;
        unsigned finished;
} Fixture;

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        f->dir = fixture_tmpdir("test-hydrator");
        assert_non_null(f->dir);
        f->dir_fd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(f->dir_fd >= 0);
        assert_int_equal(sd_event_new(&f->event), 0);
        f->dev = (BlockDevice){.fd = -1, .path = (char *)"/dev/fake0", .kernel_name = "fake0"};
        hydrate_settings_init(&f->settings);
        fake_now = T0;
        timer_late = device_phase = 0; /* a test that failed left its own */
        device_every = 1;
        their_rate = 25 * MIB;
        n_submitted = 0;
        saves = 0;
        drain_complete = n_drains = 0;
        drain_error = 0;
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        hydrator_free(f->h);
        assert_null(reader);
        assert_null(timers);
        sd_event_unref(f->event);
        close(f->dir_fd);
        assert_int_equal(rm_rf(f->dir), 0);
        free(f->dir);
        free(f);
        return 0;
}

static void on_finished(Hydrator *h, void *userdata) {
        Fixture *f = userdata;

        f->finished++;
}

/* Starts hydrating a fresh device of @size bytes, @block bytes a read, @depth reads at most. */
static void start(Fixture *f, uint64_t size, uint64_t block, unsigned depth, uint64_t rate) {
        f->dev.size = size;
        f->dev.logical_block_size = 4096;
        f->settings.block_size = block;
        f->settings.queue_depth = depth;
        f->settings.rate_limit = rate;
        assert_int_equal(hydrator_new(&f->h, f->event, &f->dev, "vol-0123456789abcdef0", f->dir_fd,
                                      &f->settings),
                         0);
        assert_int_equal(hydrator_start(f->h, on_finished, f), 0);
}

static HydratorStatus status(const Fixture *f) {
        HydratorStatus st;

        hydrator_get_status(f->h, &st);
        return st;
}

static HydratorPhase phase(const Fixture *f) {
        return status(f).phase;
}

static bool was_submitted(unsigned from, uint64_t offset, uint64_t length, unsigned attempt) {
        for (unsigned i = from; i < n_submitted; i++)
                if (submitted[i].req.offset == offset && submitted[i].req.length == length &&
                    submitted[i].req.attempt == attempt)
                        return true;
        return false;
}

/* A failed read of two chunks is retried as two reads of one, after the backoff and not before. */
static void test_hydrator_retry_split(void **state) {
        Fixture *f = *state;
        uint64_t failed_usec;

        start(f, 4 * MIB, MIB, 4, 0);
        assert_int_equal(n_submitted, 4); /* the whole device: 4 reads of 1 MiB */
        assert_true(was_submitted(0, 0, MIB, 0));

        advance(USEC_PER_MSEC);
        failed_usec = fake_now;
        complete_at(0, -EIO);
        complete_all(0);
        assert_int_equal(n_submitted, 4);
        assert_int_equal(phase(f), HYDRATOR_HYDRATING); /* the retries are outstanding */

        advance_to(failed_usec + HYDRATOR_RETRY_BASE_USEC - 1);
        assert_int_equal(n_submitted, 4);
        advance_to(failed_usec + HYDRATOR_RETRY_BASE_USEC);
        assert_int_equal(n_submitted, 6);
        assert_true(was_submitted(4, 0, CHUNK, 1));
        assert_true(was_submitted(4, CHUNK, CHUNK, 1));

        complete_all(0);
        assert_int_equal(phase(f), HYDRATOR_COMPLETE);
        assert_int_equal(status(f).done_bytes, 4 * MIB);
        assert_int_equal(status(f).n_bad, 0);
        assert_int_equal(f->finished, 1);
}

/* A chunk that keeps failing is tried again after 0.1 s, 0.4 s and 1.6 s, each time not before,
 * then recorded unreadable; the run ends UNREADABLE with the rest of the device read. */
static void test_hydrator_retry_backoff(void **state) {
        Fixture *f = *state;
        uint64_t backoff = HYDRATOR_RETRY_BASE_USEC;
        HydratorStatus st;

        start(f, MIB, CHUNK, 1, 0);
        assert_int_equal(n_submitted, 1);
        for (unsigned attempt = 1; attempt <= HYDRATOR_RETRIES; attempt++) {
                uint64_t failed_usec = fake_now;
                unsigned n;

                complete_at(0, -EIO);
                if (attempt == 1) /* the second chunk took the free slot */
                        complete_at(CHUNK, 0);
                n = n_submitted;
                advance_to(failed_usec + backoff - 1);
                assert_int_equal(n_submitted, n);
                advance_to(failed_usec + backoff);
                assert_int_equal(n_submitted, n + 1);
                assert_true(was_submitted(n, 0, CHUNK, attempt));
                backoff *= 4;
        }
        complete_at(0, -EIO);

        st = status(f);
        assert_int_equal(st.phase, HYDRATOR_UNREADABLE);
        assert_int_equal(st.n_bad, 1);
        assert_int_equal(st.bad[0].offset, 0);
        assert_int_equal(st.bad[0].length, CHUNK);
        assert_int_equal(st.done_bytes, CHUNK);
        assert_int_equal(f->finished, 1);
}

/* HYDRATOR_FAILURE_STORM reads failing in a row end the run (the device is gone, not bad); one
 * read that succeeds starts the count again. */
static void test_hydrator_failure_storm(void **state) {
        Fixture *f = *state;

        start(f, 128 * MIB, CHUNK, 8, 0);
        for (unsigned i = 1; i < HYDRATOR_FAILURE_STORM; i++)
                complete_first(-EIO);
        assert_int_equal(phase(f), HYDRATOR_HYDRATING);
        complete_first(0);
        for (unsigned i = 1; i < HYDRATOR_FAILURE_STORM; i++)
                complete_first(-EIO);
        assert_int_equal(phase(f), HYDRATOR_HYDRATING);
        assert_int_equal(f->finished, 0);

        complete_first(-EIO);
        assert_int_equal(phase(f), HYDRATOR_FAILED);
        assert_int_equal(status(f).error, -EIO);
        assert_int_equal(f->finished, 1);
}

/* RateLimit=: no more bytes requested than the limit allows (plus one read of burst), however
 * fast the device completes them; a limit of 0 lifts it at once. */
static void test_hydrator_rate_limit(void **state) {
        Fixture *f = *state;
        const uint64_t rate = 4 * MIB, span = 2 * USEC_PER_SEC;
        uint64_t bytes = 0;

        start(f, 64 * MIB, MIB, 8, rate);
        assert_int_equal(n_submitted, 0); /* the bucket starts empty */
        for (uint64_t t = T0; t <= T0 + span; t += 10 * USEC_PER_MSEC) {
                advance_to(t);
                complete_all(0);
        }
        for (unsigned i = 0; i < n_submitted; i++)
                bytes += submitted[i].req.length;
        assert_true(submitted[0].usec >= T0 + MIB * USEC_PER_SEC / rate);
        assert_true(bytes <= rate * span / USEC_PER_SEC);
        assert_true(bytes >= rate * span / USEC_PER_SEC - MIB); /* and it does read */

        hydrator_set_rate_limit(f->h, 0);
        assert_int_equal(status(f).in_flight, 8);
}

/* The bucket fills while the reader has no free slot, but holds no more than one read (or a tenth
 * of a second of the limit): two slots freed at once after a long wait get one read now, and the
 * next when the limit allows it. */
static void test_hydrator_rate_burst(void **state) {
        Fixture *f = *state;
        const uint64_t rate = 4 * MIB, per_read = MIB * USEC_PER_SEC / rate;
        unsigned n;

        start(f, 64 * MIB, MIB, 2, rate);
        advance_to(T0 + 2 * per_read + USEC_PER_MSEC);
        assert_int_equal(n_submitted, 2);
        assert_int_equal(status(f).in_flight, 2);

        advance(4 * USEC_PER_SEC);
        n = n_submitted;
        complete_all(0);
        assert_int_equal(n_submitted, n + 1);
        advance(per_read - USEC_PER_MSEC);
        assert_int_equal(n_submitted, n + 1);
        advance(2 * USEC_PER_MSEC);
        assert_int_equal(n_submitted, n + 2);
}

/* Reads in flight and none completed for HYDRATOR_STALL_USEC: stalled (and said so), not a tick
 * before; a completion ends it, and the stall clock starts again from there. */
static void test_hydrator_stall(void **state) {
        Fixture *f = *state;
        uint64_t last;

        start(f, 64 * MIB, MIB, 4, 0);
        advance_to(T0 + HYDRATOR_STALL_USEC - 1);
        assert_int_equal(status(f).stalled_usec, 0);
        advance_to(T0 + HYDRATOR_STALL_USEC);
        assert_int_equal(status(f).stalled_usec, HYDRATOR_STALL_USEC);
        assert_int_equal(status(f).rate, 0);
        assert_int_equal(phase(f), HYDRATOR_HYDRATING); /* said, nothing else */

        advance(USEC_PER_SEC);
        complete_first(0);
        assert_int_equal(status(f).stalled_usec, 0);
        last = fake_now;
        advance_to(last + HYDRATOR_STALL_USEC - 1);
        assert_int_equal(status(f).stalled_usec, 0);
        advance_to(last + HYDRATOR_STALL_USEC);
        assert_true(status(f).stalled_usec > 0);
}

/* A stop waits for the reads in flight and saves what they read, so that it is not read again;
 * nothing new goes out meanwhile, and a read still out when the wait ends is not counted. */
static void test_hydrator_stop_drains(void **state) {
        Fixture *f = *state;
        unsigned submitted_before;

        start(f, 64 * MIB, MIB, 4, 0);
        complete_first(0);
        assert_int_equal(status(f).in_flight, 4);
        submitted_before = n_submitted;
        drain_complete = 3;
        hydrator_stop(f->h);
        assert_int_equal(n_drains, 1);
        assert_int_equal(drain_timeout, HYDRATOR_STOP_DRAIN_USEC);
        assert_int_equal(n_submitted, submitted_before); /* completions sent nothing new */
        assert_int_equal(phase(f), HYDRATOR_STOPPED);
        assert_int_equal(status(f).done_bytes, 4 * MIB);
        assert_int_equal(f->finished, 1);
        assert_int_equal(saved_done_bytes, 4 * MIB);
}

/* A read that fails while a stop waits is not a failure to handle (no retry, no error): it is
 * read again next time. */
static void test_hydrator_stop_drain_failure(void **state) {
        Fixture *f = *state;

        start(f, 64 * MIB, MIB, 4, 0);
        drain_complete = 4;
        drain_error = -EIO;
        hydrator_stop(f->h);
        assert_int_equal(phase(f), HYDRATOR_STOPPED);
        assert_int_equal(status(f).error, 0);
        assert_int_equal(status(f).done_bytes, 0);
        assert_int_equal(status(f).in_flight, 0);
}

/* A stalled device is not waited for: the stop saves at once. */
static void test_hydrator_stop_stalled(void **state) {
        Fixture *f = *state;

        start(f, 64 * MIB, MIB, 4, 0);
        advance_to(T0 + HYDRATOR_STALL_USEC);
        assert_true(status(f).stalled_usec > 0);
        hydrator_stop(f->h);
        assert_int_equal(n_drains, 0);
        assert_int_equal(phase(f), HYDRATOR_STOPPED);
}

/* The snapshot's block list mid-run: what it says is empty is never read, reads in flight end
 * as they would, and the run completes when what is stored is read; it says so. */
static void test_hydrator_empty_mid_run(void **state) {
        Fixture *f = *state;
        uint64_t *empty = NULL;
        unsigned before;
        HydratorStatus st;

        start(f, 64 * MIB, MIB, 4, 0);
        complete_first(0); /* chunks 0-1 read; 2-9 in flight */
        assert_int_equal(status(f).in_flight, 4);
        assert_int_equal(hydrator_empty_new(f->h, &empty), 0);
        hydrator_empty_stored(f->h, empty, 40, 2); /* 20 MiB: the one stored MiB left */
        before = n_submitted;
        hydrator_set_empty(f->h, empty);
        assert_int_equal(n_submitted, before); /* every slot is taken */
        complete_all(0);
        assert_int_equal(n_submitted, before + 1);
        assert_true(was_submitted(before, 20 * MIB, MIB, 0));
        assert_int_equal(phase(f), HYDRATOR_HYDRATING);
        complete_all(0);
        assert_int_equal(n_submitted, before + 1);
        assert_int_equal(phase(f), HYDRATOR_COMPLETE);
        st = status(f);
        assert_true(st.plan.listed);
        assert_int_equal(st.plan.empty_bytes, 63 * MIB);
        assert_int_equal(st.plan.empty_done, 63 * MIB);
        assert_int_equal(st.done_bytes, MIB); /* of what is stored */
        assert_int_equal(st.size, MIB);
        assert_int_equal(st.device_size, 64 * MIB);
        assert_int_equal(saved_done_bytes, 64 * MIB); /* the checkpoint: every chunk */
}

/* A list that stores nothing but what was read already: complete at once. */
static void test_hydrator_empty_completes(void **state) {
        Fixture *f = *state;
        uint64_t *empty = NULL;

        start(f, 64 * MIB, MIB, 4, 0);
        assert_int_equal(hydrator_empty_new(f->h, &empty), 0);
        hydrator_empty_stored(f->h, empty, 0, 2); /* chunks 0-1, in flight */
        hydrator_set_empty(f->h, empty);
        assert_int_equal(phase(f), HYDRATOR_HYDRATING);
        complete_all(0);
        assert_int_equal(phase(f), HYDRATOR_COMPLETE);
        assert_int_equal(f->finished, 1);
        assert_int_equal(status(f).plan.empty_bytes, 63 * MIB);
}

/* While paused nothing is submitted, retries included, and the checkpoint is saved; resuming
 * submits what waited. Pausing a stopped run is refused. */
static void test_hydrator_pause_resume(void **state) {
        Fixture *f = *state;
        unsigned saved;

        start(f, 64 * MIB, MIB, 4, 0);
        assert_int_equal(n_submitted, 4);
        saved = saves;
        assert_int_equal(hydrator_pause(f->h), 0);
        assert_true(status(f).paused);
        assert_int_equal(saves, saved + 1);

        complete_at(0, -EIO);
        complete_all(0);
        advance(10 * USEC_PER_SEC);
        assert_int_equal(n_submitted, 4);
        assert_int_equal(status(f).in_flight, 0);

        assert_int_equal(hydrator_resume(f->h), 0);
        assert_false(status(f).paused);
        assert_int_equal(n_submitted, 8);
        assert_true(was_submitted(4, 0, CHUNK, 1));
        assert_true(was_submitted(4, CHUNK, CHUNK, 1));
        assert_int_equal(status(f).in_flight, 4);

        hydrator_stop(f->h);
        assert_int_equal(phase(f), HYDRATOR_STOPPED);
        assert_int_equal(hydrator_pause(f->h), -ESTALE);
        assert_int_equal(hydrator_resume(f->h), -ESTALE);
}

/* Without progress, the checkpoint is saved every HYDRATOR_CHECKPOINT_INTERVAL_USEC. */
static void test_hydrator_checkpoint_interval(void **state) {
        Fixture *f = *state;

        start(f, 64 * MIB, MIB, 4, 0);
        assert_int_equal(saves, 0);
        advance_to(T0 + HYDRATOR_CHECKPOINT_INTERVAL_USEC - 1);
        assert_int_equal(saves, 0);
        advance_to(T0 + HYDRATOR_CHECKPOINT_INTERVAL_USEC);
        assert_int_equal(saves, 1);
        advance_to(T0 + 2 * HYDRATOR_CHECKPOINT_INTERVAL_USEC - 1);
        assert_int_equal(saves, 1);
        advance_to(T0 + 2 * HYDRATOR_CHECKPOINT_INTERVAL_USEC);
        assert_int_equal(saves, 2);
}

/* Between timer saves, one after each HYDRATOR_CHECKPOINT_PERMILLE of the device read. */
static void test_hydrator_checkpoint_progress(void **state) {
        Fixture *f = *state;
        const uint64_t size = 1024 * MIB;
        const uint64_t per_save = DIV_ROUND_UP(size / 1000 * HYDRATOR_CHECKPOINT_PERMILLE, CHUNK);

        start(f, size, CHUNK, 1, 0);
        for (unsigned k = 1; k <= 3 * per_save; k++) {
                advance(30 * USEC_PER_MSEC);
                complete_first(0);
                assert_int_equal(saves, k / per_save);
        }
        assert_true(fake_now < T0 + HYDRATOR_CHECKPOINT_INTERVAL_USEC);
}

/* Progress saves are HYDRATOR_CHECKPOINT_MIN_GAP_USEC apart at least, however many reads end. */
static void test_hydrator_checkpoint_min_gap(void **state) {
        Fixture *f = *state;

        start(f, 64 * MIB, CHUNK, 8, 0); /* each read is more than a checkpoint step */
        advance(HYDRATOR_CHECKPOINT_MIN_GAP_USEC);
        complete_all(0);
        assert_int_equal(saves, 1);
        advance(HYDRATOR_CHECKPOINT_MIN_GAP_USEC - 1);
        complete_first(0);
        assert_int_equal(saves, 1);
        advance(1);
        complete_first(0);
        assert_int_equal(saves, 2);
}

/* The disk's counters, as the test writes them for hydrator_watch_activity(). */
static void write_disk_stat(const Fixture *f, uint64_t read_bytes, unsigned in_flight) {
        char line[256];

        snprintf(line, sizeof(line), "1 0 %" PRIu64 " 1 0 0 0 0 %u 1 1\n", read_bytes / 512,
                 in_flight);
        fixture_write(f->dir, "stat", line);
}

/* A 2 GiB device read in 1 MiB reads at a fixed depth of 16, its counters watched. */
static void new_watched(Fixture *f) {
        char path[512];

        f->dev.size = 2048 * MIB;
        f->dev.logical_block_size = 4096;
        f->settings.block_size = MIB;
        f->settings.queue_depth = 16;
        assert_int_equal(hydrator_new(&f->h, f->event, &f->dev, "vol-0123456789abcdef0", f->dir_fd,
                                      &f->settings),
                         0);
        write_disk_stat(f, 0, 0);
        snprintf(path, sizeof(path), "%s/stat", f->dir);
        assert_int_equal(hydrator_watch_activity(f->h, path), 0);
}

/* The device at @t: the oldest read completes if it has had its 90 ms. Returns its bytes. */
static uint64_t serve_oldest(uint64_t t) {
        uint64_t length;

        if (reader->n_in_flight == 0 ||
            submitted[n_submitted - reader->n_in_flight - reader->n_queued].usec +
                            90 * USEC_PER_MSEC >
                    t)
                return 0;
        length = reader->in_flight[0].length;
        complete_first(0);
        return length;
}

/* The times at which the reads handed over from the @from'th on, and at @since or later, went
 * out. */
static unsigned submit_times(unsigned from, uint64_t since) {
        unsigned n = 0;
        uint64_t last = UINT64_MAX;

        for (unsigned i = from; i < n_submitted; i++)
                if (submitted[i].usec >= since && submitted[i].usec != last) {
                        last = submitted[i].usec;
                        n++;
                }
        return n;
}

/*
 * Yield=, through the hydrator: a device that serves 100 MiB/s (a read completes 90 ms after it
 * went out, one every 10 ms at most), alone for 4 s; then someone else reads 25 MiB/s from it,
 * as its counters say. The hydrator yields, and its token bucket holds the tuner's pace. Returns
 * the bytes it asked for in the last 3 s (the pace settled: it is halved for a moment while the
 * queue we held alone drains).
 */
static uint64_t yield_paces(Fixture *f, unsigned *ret_reads, unsigned *ret_times) {
        uint64_t disk = 0, theirs = 0, asked = 0, ours = 0;
        unsigned from = 0;

        fake_now = T0 + device_phase;
        paced_bytes = 0;
        new_watched(f);
        assert_int_equal(hydrator_start(f->h, on_finished, f), 0);
        write_disk_stat(f, 0, reader->n_in_flight); /* it counts ours in flight at once */
        for (uint64_t t = fake_now + 10 * USEC_PER_MSEC; t <= T0 + 8 * USEC_PER_SEC;
             t += 10 * USEC_PER_MSEC) {
                advance_to(t);
                if ((t - T0 - device_phase) / (10 * USEC_PER_MSEC) % device_every == 0)
                        disk += serve_oldest(t);
                if (t > T0 + 5 * USEC_PER_SEC)
                        paced_bytes += tuner_pace(&f->h->tuner) * 0.01;
                if (t >= T0 + 4 * USEC_PER_SEC &&
                    (t - T0 - device_phase) % (100 * USEC_PER_MSEC) == 0) {
                        theirs += their_rate / 10;
                        if (from == 0)
                                from = n_submitted;
                }
                write_disk_stat(f, disk + theirs, reader->n_in_flight);
        }
        assert_false(status(f).phase != HYDRATOR_HYDRATING);
        assert_true(status(f).yielding);
        assert_false(status(f).yield_neighbours);
        for (unsigned i = from; i < n_submitted; i++)
                if (submitted[i].usec >= T0 + 5 * USEC_PER_SEC) {
                        asked += submitted[i].req.length;
                        ours++;
                }
        if (getenv("TUNER_TRACE"))
                fprintf(stderr,
                        "asked %" PRIu64 " MiB in %" PRIu64 " reads at %u times, yield %u%%, "
                        "depth %u\n",
                        asked / MIB, ours, submit_times(from, T0 + 5 * USEC_PER_SEC),
                        status(f).yield_percent, status(f).depth);
        assert_true(ours > 0);
        *ret_reads = (unsigned)ours;
        *ret_times = submit_times(from, T0 + 5 * USEC_PER_SEC);
        return asked;
}

static void test_hydrator_yield_paces(void **state) {
        unsigned reads, times;
        uint64_t asked = yield_paces(*state, &reads, &times);

        /* 100 MiB/s - 1.5 x 25: 62.5 MiB/s, 187.5 MiB in 3 s (a read of slack) */
        assert_true(asked <= 188 * MIB + MIB);
        assert_true(asked >= 100 * MIB); /* and it does read */
        /* In batches (TUNER_PACE_BATCH_USEC), not one read at a time: one at a time, there
         * are as many times as reads (test_hydrator_yield_batches_in_step() says which
         * times). */
        assert_true(times <= reads / 2);
}

/*
 * Paced batches go out at multiples of TUNER_PACE_BATCH_USEC on the monotonic clock, and
 * nothing between them, so that siblings paced at once send at once. The device here completes
 * reads 3 ms past each 10 ms: a hydrator that sent whenever a completion found tokens, or
 * whose timer counted from its last batch, sent at those times.
 */
static void test_hydrator_yield_batches_in_step(void **state) {
        unsigned reads, times, off_step = 0;
        uint64_t asked;

        device_phase = 3 * USEC_PER_MSEC;
        asked = yield_paces(*state, &reads, &times);
        device_phase = 0;
        for (unsigned i = 0; i < n_submitted; i++)
                if (submitted[i].usec >= T0 + 5 * USEC_PER_SEC &&
                    submitted[i].usec % TUNER_PACE_BATCH_USEC != 0)
                        off_step++;
        if (getenv("TUNER_TRACE"))
                fprintf(stderr, "%u of %u reads out of step\n", off_step, reads);
        assert_int_equal(off_step, 0);
        assert_true(times <= 31); /* one batch a period: 3 s, and the first at 5 s */
        /* and the pace is what it was */
        assert_true(asked <= 188 * MIB + MIB);
        assert_true(asked >= 188 * MIB * 9 / 10);
}

/*
 * The same with every timer 9 ms late (sd-event's accuracy, a busy loop): the pace is still
 * what is asked. A bucket that forgot the time its timer lost read 1 MiB every 16 + 9 ms, two
 * thirds of the pace, which is how the busy-volume benchmark read 40 of its 75 MiB/s.
 */
static void test_hydrator_yield_pace_late_timers(void **state) {
        unsigned reads, times;
        uint64_t asked;

        timer_late = 9 * USEC_PER_MSEC;
        asked = yield_paces(*state, &reads, &times);
        timer_late = 0;
        assert_true(asked <= 188 * MIB + MIB);
        assert_true(asked >= 188 * MIB * 9 / 10);
}

/*
 * A pace that is not a whole number of reads a period: the fraction each batch leaves is the
 * next one's. A device of 33 MiB/s with someone reading 10.5 MiB/s from it: a pace of about 17
 * MiB/s, 1.7 reads of 1 MiB a batch. A bucket that held a period's tokens and the catch-up,
 * not the fraction carried on top, asked for 43.0 MiB in 3 s of a 51.5 MiB pace (83%).
 */
static void test_hydrator_yield_pace_fractions(void **state) {
        unsigned reads, times;
        uint64_t asked;

        device_every = 3;
        their_rate = 21 * MIB / 2;
        (void)yield_paces(*state, &reads, &times);
        /* the batches after 5 s, whose tokens are the pace's from 5 s on */
        asked = 0;
        for (unsigned i = 0; i < n_submitted; i++)
                if (submitted[i].usec > T0 + 5 * USEC_PER_SEC)
                        asked += submitted[i].req.length;
        if (getenv("TUNER_TRACE"))
                fprintf(stderr, "asked %.1f MiB, the pace %.1f MiB\n", (double)asked / MIB,
                        paced_bytes / MIB);
        assert_true(paced_bytes > 0);
        /* the pace is not a whole number of reads a batch, nor near one */
        assert_true(fmod(paced_bytes / (3 * 10 * MIB), 1.0) > 0.1 &&
                    fmod(paced_bytes / (3 * 10 * MIB), 1.0) < 0.9);
        assert_true((double)asked >= 0.97 * paced_bytes);
        /* and the fraction carried, and the pace changing while tokens wait for a batch */
        assert_true((double)asked <= paced_bytes + 2 * MIB);
}

/*
 * While the file systems are mapped (the plan has a stage pending), reads on the device that
 * are not ours are the mapping's: no yield to them. Once the plan is final, and the mapping's
 * last reads had time to land, the same reads are a workload.
 */
static void mapping_reads(Fixture *f, bool after) {
        uint64_t disk = 0, theirs = 0;
        bool mapped = false, yielded = false;
        _cleanup_free_ char *run = fixture_tmpdir("test-hydrator-run");
        _cleanup_close_ int run_fd = -1, null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        Sibling *sibling = NULL;
        SiblingView view = {0};

        /* published for the hydrators beside it (siblings.h): a device node, a runtime dir */
        assert_non_null(run);
        assert_int_equal(chmod(run, 0755), 0);
        run_fd = open(run, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(run_fd >= 0 && null_fd >= 0);
        new_watched(f);
        f->dev.fd = null_fd;
        assert_int_equal(hydrator_share(f->h, f->dir, run_fd), 0);
        f->dev.fd = -1;
        assert_int_equal(sibling_open(&sibling, run_fd, "fake0", makedev(1, 3)), 0);
        assert_int_equal(hydrator_set_layout(f->h, NULL, NULL, 0, PLAN_STAGE_METADATA), 0);
        assert_int_equal(hydrator_start(f->h, on_finished, f), 0);
        write_disk_stat(f, 0, reader->n_in_flight);
        for (uint64_t t = T0 + 10 * USEC_PER_MSEC; t <= T0 + 9 * USEC_PER_SEC;
             t += 10 * USEC_PER_MSEC) {
                advance_to(t);
                disk += serve_oldest(t);
                /* the mapping's: 25 MiB/s nobody counts, its last ones in the settling time;
                 * with @after, the same goes on after it */
                if ((t - T0) % (100 * USEC_PER_MSEC) == 0 &&
                    (after || t < T0 + 4 * USEC_PER_SEC + HYDRATOR_MAPPING_SETTLE_USEC -
                                              100 * USEC_PER_MSEC))
                        theirs += 25 * MIB / 10;
                write_disk_stat(f, disk + theirs, reader->n_in_flight);
                if (t == T0 + 4 * USEC_PER_SEC) {
                        assert_false(status(f).yielding);
                        assert_int_equal(hydrator_set_layout(f->h, NULL, NULL, 0, _PLAN_STAGE_MAX),
                                         0);
                        mapped = true;
                }
                if (mapped && t < T0 + 4 * USEC_PER_SEC + HYDRATOR_MAPPING_SETTLE_USEC)
                        assert_false(status(f).yielding);
                yielded = yielded || status(f).yielding;
                /* and says so to its siblings, until the settling time is over */
                if ((t - T0) % (100 * USEC_PER_MSEC) == 0) {
                        assert_true(sibling_read(sibling, t, &view));
                        assert_true(view.mapping ==
                                    (t < T0 + 4 * USEC_PER_SEC + HYDRATOR_MAPPING_SETTLE_USEC));
                }
        }
        assert_true(mapped);
        sibling_free(sibling);
        hydrator_free(f->h); /* unpublished */
        f->h = NULL;
        assert_int_equal(faccessat(run_fd, "io/fake0.io", F_OK, 0), -1);
        rm_rf(run);
        /* the same reads after the mapping are a workload; those before it never were */
        assert_true(yielded == after);
}

static void test_hydrator_mapping_reads_are_ours(void **state) {
        mapping_reads(*state, true);
}

static void test_hydrator_mapping_reads_stay_the_mappings(void **state) {
        mapping_reads(*state, false);
}

/* Was any chunk planned (a first attempt, not a retry) more than once? */
static bool read_twice(void) {
        for (unsigned i = 0; i < n_submitted; i++)
                for (unsigned j = i + 1; j < n_submitted; j++) {
                        const ReadRequest *a = &submitted[i].req, *b = &submitted[j].req;

                        if (a->attempt == 0 && b->attempt == 0 &&
                            a->offset < b->offset + b->length && b->offset < a->offset + a->length)
                                return true;
                }
        return false;
}

/* 16 MiB: metadata at 10-11 MiB, used 4-6 MiB, the rest free. */
static FsLayout layout_16m(FsRange ranges[static 5]) {
        ranges[0] = (FsRange){0, 4 * MIB, FS_RANGE_FREE};
        ranges[1] = (FsRange){4 * MIB, 2 * MIB, FS_RANGE_USED};
        ranges[2] = (FsRange){6 * MIB, 4 * MIB, FS_RANGE_FREE};
        ranges[3] = (FsRange){10 * MIB, MIB, FS_RANGE_METADATA};
        ranges[4] = (FsRange){11 * MIB, 5 * MIB, FS_RANGE_FREE};
        return (FsLayout){.ranges = ranges, .n_ranges = 5};
}

/* A new plan mid-run: what is done is not read again, what is in flight stays so and counts
 * when it completes, and the new plan's order is followed from its first stage. */
static void test_hydrator_replan(void **state) {
        Fixture *f = *state;
        FsRange ranges[5];
        FsLayout l = layout_16m(ranges);
        unsigned n;

        start(f, 16 * MIB, MIB, 2, 0); /* no layout: offset order */
        assert_int_equal(n_submitted, 2);
        assert_true(was_submitted(0, 0, MIB, 0));
        assert_true(was_submitted(0, MIB, MIB, 0));
        complete_at(0, 0); /* 0-1 MiB done; 2-3 MiB goes out */
        assert_true(was_submitted(2, 2 * MIB, MIB, 0));
        n = n_submitted;

        assert_int_equal(hydrator_set_layout(f->h, &l, NULL, 0, _PLAN_STAGE_MAX), 0);
        assert_int_equal(n_submitted, n); /* both slots still taken */
        complete_at(MIB, 0);
        /* The metadata first, from the new plan's first stage. */
        assert_int_equal(submitted[n].req.offset, 10 * MIB);
        complete_at(2 * MIB, 0);
        assert_int_equal(submitted[n + 1].req.offset, 4 * MIB); /* then the used blocks */
        complete_all(0);
        assert_int_equal(submitted[n + 2].req.offset, 5 * MIB);
        assert_int_equal(status(f).plan.current, PLAN_STAGE_USED); /* 5 MiB in flight */
        for (unsigned i = 0; i < 16 && phase(f) == HYDRATOR_HYDRATING; i++)
                complete_all(0);
        assert_int_equal(phase(f), HYDRATOR_COMPLETE);
        assert_int_equal(status(f).done_bytes, 16 * MIB);
        assert_false(read_twice());
        /* Free space last, in offset order: 3 MiB (after what was read before the new plan). */
        assert_int_equal(submitted[n + 3].req.offset, 3 * MIB);
}

/* While the file systems are mapped, only what the mapping reads next is read, in the order it
 * was asked for, and the run does not end for want of a plan; the layout then takes over. */
static void test_hydrator_read_ahead(void **state) {
        Fixture *f = *state;
        FsRange ranges[5];
        FsLayout l = layout_16m(ranges);
        ByteRange ahead[] = {{12 * MIB + 4096, 4096}, {CHUNK, CHUNK}, {12 * MIB, 8192}};
        HydratorStatus st;

        f->dev.size = 16 * MIB;
        f->dev.logical_block_size = 4096;
        f->settings.block_size = MIB;
        f->settings.queue_depth = 4;
        assert_int_equal(hydrator_new(&f->h, f->event, &f->dev, "vol-0123456789abcdef0", f->dir_fd,
                                      &f->settings),
                         0);
        assert_int_equal(hydrator_set_layout(f->h, NULL, NULL, 0, PLAN_STAGE_METADATA), 0);
        assert_int_equal(hydrator_read_ahead(f->h, ahead, 1), 0); /* before the start: kept */
        assert_int_equal(hydrator_start(f->h, on_finished, f), 0);
        assert_int_equal(n_submitted, 1);
        assert_true(was_submitted(0, 12 * MIB, CHUNK, 0));
        assert_int_equal(hydrator_read_ahead(f->h, ahead + 1, 2), 0);
        assert_int_equal(n_submitted, 2); /* the third names a chunk already claimed */
        assert_true(was_submitted(1, CHUNK, CHUNK, 0));
        complete_all(0);
        advance(10 * USEC_PER_SEC);
        assert_int_equal(n_submitted, 2);
        assert_int_equal(phase(f), HYDRATOR_HYDRATING);
        hydrator_get_status(f->h, &st);
        assert_true(st.plan.mapping);
        assert_int_equal(st.plan.current, PLAN_STAGE_METADATA);
        assert_int_equal(st.done_bytes, 2 * CHUNK);

        assert_int_equal(hydrator_set_layout(f->h, &l, NULL, 0, _PLAN_STAGE_MAX), 0);
        assert_int_equal(submitted[2].req.offset, 10 * MIB);
        for (unsigned i = 0; i < 16 && phase(f) == HYDRATOR_HYDRATING; i++)
                complete_all(0);
        assert_int_equal(phase(f), HYDRATOR_COMPLETE);
        assert_false(read_twice());
        assert_int_equal(f->finished, 1);
}

/* HotPaths= still being resolved: the metadata is read, then nothing until the hot paths join
 * the plan; they are read next, then the rest. */
static void test_hydrator_hot_pending(void **state) {
        Fixture *f = *state;
        FsRange ranges[5];
        FsLayout l = layout_16m(ranges);
        ByteRange hot[] = {{14 * MIB, MIB}};

        start(f, 16 * MIB, MIB, 4, 0);
        assert_int_equal(hydrator_set_layout(f->h, &l, NULL, 0, PLAN_STAGE_HOT), 0);
        complete_all(0); /* the four reads of the placeholder plan (0-4 MiB) */
        assert_true(was_submitted(4, 10 * MIB, MIB, 0));
        complete_all(0);
        advance(10 * USEC_PER_SEC);
        assert_int_equal(n_submitted, 5);
        assert_int_equal(status(f).plan.current, PLAN_STAGE_HOT);
        assert_true(status(f).plan.hot_pending);
        assert_int_equal(phase(f), HYDRATOR_HYDRATING);

        assert_int_equal(hydrator_set_layout(f->h, &l, hot, 1, _PLAN_STAGE_MAX), 0);
        assert_int_equal(submitted[5].req.offset, 14 * MIB);
        for (unsigned i = 0; i < 16 && phase(f) == HYDRATOR_HYDRATING; i++)
                complete_all(0);
        assert_int_equal(phase(f), HYDRATOR_COMPLETE);
        assert_false(read_twice());
}

/* AWS initializes the volume: the metadata and the hot paths are read, then nothing, and the run
 * does not end; released, the rest is read, nothing twice. */
static void test_hydrator_hold_after(void **state) {
        Fixture *f = *state;
        FsRange ranges[5];
        FsLayout l = layout_16m(ranges);
        ByteRange hot[] = {{14 * MIB, MIB}};

        start(f, 16 * MIB, MIB, 4, 0); /* no layout yet: 0-4 MiB in flight */
        assert_int_equal(status(f).hold_after, _PLAN_STAGE_MAX);
        hydrator_hold_after(f->h, PLAN_STAGE_HOT);
        assert_int_equal(status(f).hold_after, PLAN_STAGE_HOT);
        assert_int_equal(hydrator_set_layout(f->h, &l, hot, 1, _PLAN_STAGE_MAX), 0);
        complete_all(0);
        assert_int_equal(n_submitted, 6);
        assert_true(was_submitted(4, 10 * MIB, MIB, 0)); /* the metadata */
        assert_true(was_submitted(4, 14 * MIB, MIB, 0)); /* the hot path */
        complete_all(0);
        advance(10 * USEC_PER_SEC);
        assert_int_equal(n_submitted, 6);
        assert_int_equal(status(f).in_flight, 0);
        assert_int_equal(status(f).plan.current, PLAN_STAGE_USED);
        assert_int_equal(phase(f), HYDRATOR_HYDRATING);

        hydrator_hold_after(f->h, _PLAN_STAGE_MAX);
        assert_true(n_submitted > 6);
        for (unsigned i = 0; i < 16 && phase(f) == HYDRATOR_HYDRATING; i++)
                complete_all(0);
        assert_int_equal(phase(f), HYDRATOR_COMPLETE);
        assert_int_equal(status(f).done_bytes, 16 * MIB);
        assert_false(read_twice());
}

/* The daemon's way: the layout comes by chunk, and the plan takes its chunk kinds over, so the
 * hot paths join that plan (hydrator_add_hot_paths()) instead of a new plan from the layout,
 * which has none left. The metadata and free space it knew stay known. */
static void test_hydrator_hot_paths_join_by_chunk(void **state) {
        Fixture *f = *state;
        FsRange ranges[5];
        FsLayout byte_exact = layout_16m(ranges), l = {};
        ByteRange hot[] = {{14 * MIB, MIB}};
        HydratorStatus st;

        start(f, 16 * MIB, MIB, 4, 0);
        assert_int_equal(fs_chunk_kinds_from_layout(&l.chunks, &byte_exact, 16 * MIB,
                                                    hydrator_chunk_size(f->h)),
                         0);
        assert_int_equal(hydrator_set_layout(f->h, &l, NULL, 0, PLAN_STAGE_HOT), 0);
        assert_null(l.chunks); /* taken over */
        complete_all(0);       /* the four reads of the first plan (0-4 MiB) */
        assert_true(was_submitted(4, 10 * MIB, MIB, 0));
        complete_all(0);
        advance(10 * USEC_PER_SEC);
        assert_int_equal(n_submitted, 5);
        assert_true(status(f).plan.hot_pending);

        assert_int_equal(hydrator_add_hot_paths(f->h, hot, ELEMENTSOF(hot)), 0);
        assert_int_equal(submitted[5].req.offset, 14 * MIB);
        hydrator_get_status(f->h, &st);
        assert_false(st.plan.hot_pending);
        assert_true(st.plan.fs_aware);
        assert_int_equal(st.plan.total_bytes[PLAN_STAGE_METADATA], MIB);
        assert_int_equal(st.plan.total_bytes[PLAN_STAGE_HOT], MIB);
        assert_int_equal(st.plan.total_bytes[PLAN_STAGE_USED], 2 * MIB);
        assert_int_equal(st.plan.total_bytes[PLAN_STAGE_FREE], 12 * MIB);
        assert_int_equal(st.plan.done_bytes[PLAN_STAGE_METADATA], MIB);
        assert_int_equal(st.plan.current, PLAN_STAGE_HOT);
        /* then the used blocks, before any free space */
        assert_int_equal(submitted[6].req.offset, 4 * MIB);
        assert_int_equal(submitted[7].req.offset, 5 * MIB);
        for (unsigned i = 0; i < 16 && phase(f) == HYDRATOR_HYDRATING; i++)
                complete_all(0);
        assert_int_equal(phase(f), HYDRATOR_COMPLETE);
        assert_int_equal(status(f).done_bytes, 16 * MIB);
        assert_false(read_twice());
}

/* A chunk waiting for a retry, then given up, stays so through a new plan: it is tried again
 * only as a retry, never planned anew, and the run ends with it unreadable. */
static void test_hydrator_replan_keeps_failures(void **state) {
        Fixture *f = *state;
        FsRange ranges[] = {{0, CHUNK, FS_RANGE_METADATA},
                            {CHUNK, 6 * CHUNK, FS_RANGE_USED},
                            {7 * CHUNK, CHUNK, FS_RANGE_METADATA}};
        FsLayout l = {.ranges = ranges, .n_ranges = ELEMENTSOF(ranges)};
        unsigned tries = 0;

        start(f, 8 * CHUNK, CHUNK, 4, 0);
        complete_at(0, -EIO); /* a retry waits for it */
        assert_true(was_submitted(4, 4 * CHUNK, CHUNK, 0));
        assert_int_equal(hydrator_set_layout(f->h, &l, NULL, 0, _PLAN_STAGE_MAX), 0);
        complete_at(CHUNK, 0);
        assert_true(was_submitted(5, 7 * CHUNK, CHUNK, 0)); /* the metadata that is not waiting */
        for (unsigned i = 0; i < 64 && phase(f) == HYDRATOR_HYDRATING; i++) {
                advance(USEC_PER_SEC);
                for (unsigned k = reader->n_in_flight; k > 0; k--)
                        complete_first(reader->in_flight[0].offset == 0 ? -EIO : 0);
        }
        for (unsigned i = 0; i < n_submitted; i++)
                if (submitted[i].req.offset == 0)
                        assert_int_equal(submitted[i].req.attempt, tries++);
        assert_int_equal(tries, HYDRATOR_RETRIES + 1);
        assert_int_equal(phase(f), HYDRATOR_UNREADABLE);
        assert_int_equal(status(f).n_bad, 1);
        assert_int_equal(status(f).done_bytes, 7 * CHUNK);
        assert_false(read_twice());
}

static const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hydrator_empty_mid_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_empty_completes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_stop_drains, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_stop_drain_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_stop_stalled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_retry_split, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_retry_backoff, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_failure_storm, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_rate_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_rate_burst, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_stall, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_pause_resume, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_hold_after, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_checkpoint_interval, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_checkpoint_progress, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_checkpoint_min_gap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_yield_paces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_yield_batches_in_step, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_yield_pace_late_timers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_yield_pace_fractions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_mapping_reads_are_ours, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_mapping_reads_stay_the_mappings, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_replan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_replan_keeps_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_read_ahead, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_hot_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hydrator_hot_paths_join_by_chunk, setup, teardown),
};

int main(void) {
        return cmocka_run_group_tests(tests, NULL, NULL);
}
