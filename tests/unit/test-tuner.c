/* SPDX-License-Identifier: MIT */
/*
 * The reader control law against an in-process device model, deterministically: a first-touch
 * latency, a throughput cap on every read (processor sharing: whoever has more reads queued
 * gets more of it), an optional workload (a fixed rate of small reads on the same cap, seen on
 * the tuner's own device or not), several tuners behind one cap, and the rig's measured curve
 * (a device that gets faster the deeper it is driven, with its latency rising as it does). The
 * model is the simple one the rules were written for; the rig benchmark (tests/lab/ebs-bench)
 * measures the real thing.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tuner-internal.h"
#include "tuner.h"
#include "util.h"

#define MSEC UINT64_C(1000)
#define SEC UINT64_C(1000000)
#define MiB (UINT64_C(1) << 20)
#define STEP (10 * MSEC)
#define SAMPLE (100 * MSEC) /* the hydrator's look at the disk's counters */
#define MAX_TUNERS 16
#define FOREGROUND (2000.0 * 16384) /* 2000 random 16 KiB reads a second */
/* Yielding, the capacity is probed after a minute, then less and less often; a probe that
 * finds it where it was makes a short queue, found within a few samples: at most this. */
#define PROBE_QUEUE_MAX (15 * MSEC)

/* fio --bs=1M on a fresh 1 GiB rig volume (90 ms, no cap), 2026-11-25: depth -> MiB/s. */
static const double rig_curve[][2] = {
        {1, 10.6}, {8, 80.4}, {16, 152.9}, {32, 264.3}, {64, 450.1}, {128, 556.5}, {256, 600.0},
};

typedef struct Device {
        double latency_usec;        /* first-touch latency */
        double cap;                 /* bytes/s on every read, 0 = none */
        bool curve;                 /* the rig's measured curve instead of latency and cap */
        double jitter;              /* each read's latency is up to this fraction longer */
        double wobble;              /* ... and every read of each 300 ms up to this much longer
                                     * (the rig's cap answers in bursts: no pace is free of it) */
        double foreground;          /* bytes/s of a workload behind the same cap */
        bool visible[MAX_TUNERS];   /* the workload is on tuner i's disk: its counters show it */
        bool neighbours;            /* each tuner sees the workload's I/O on a volume beside it */
        bool strangers;             /* the tuners do not know each other (no siblings.h): each
                                     * sees the others' reads as other I/O on the volumes beside */
        bool separate;              /* each tuner has a cap of its own (the workload shares
                                     * tuner 0's) */
        double other_cost;          /* what a small load beside them costs (a journal), bytes/s */
        bool stalls;                /* the tuners hear how long the workload's requests wait
                                     * beside them (tuner_stalls()): the queue's wait ... */
        double their_wait;          /* ... and this much more of their own, usec */
        uint64_t wait_at, wait_len; /* ... or one wait of theirs alone, then */
        bool deep;                  /* ... the workload keeps many requests in flight */
        Activity disk[MAX_TUNERS];  /* ... its disk as each tuner reads it (activity_stall()) */
        double queue_now;           /* the queue's wait now, usec (device_step()) */
        double own_cost;            /* ... and on their own disk */
        double backlog[MAX_TUNERS]; /* bytes waiting at the cap (one per cap) */
        unsigned own_cap_siblings;  /* siblings reading volumes with caps of their own, ... */
        double own_cap_rate;        /* ... this many bytes/s in all, never queueing with us */
} Device;

typedef struct Run {
        double rate[MAX_TUNERS];   /* bytes/s over the run, per tuner */
        double total;              /* of all tuners */
        double depth;              /* mean depth of tuner 0 (it moves while probing) */
        double queue_mean;         /* queueing delay every read saw, usec: mean over the run */
        double queue_max;          /* and the largest */
        double queue_p999;         /* 99.9th percentile over the steps, weighted by time */
        unsigned yielding_samples; /* samples in which tuner 0 yielded */
        unsigned samples;
        unsigned relearns;      /* relearn epochs of tuner 0 that ended in the run */
        uint64_t relearn_usec;  /* ... the longest of them */
        double relearn_latency; /* ... tuner 0's mean latency when the longest began, usec */
} Run;

static double curve_rate(unsigned depth) {
        size_t n = sizeof(rig_curve) / sizeof(rig_curve[0]);

        if (depth >= rig_curve[n - 1][0])
                return rig_curve[n - 1][1] * MiB;
        for (size_t i = 1; i < n; i++)
                if (depth <= rig_curve[i][0]) {
                        double f = (depth - rig_curve[i - 1][0]) /
                                   (rig_curve[i][0] - rig_curve[i - 1][0]);

                        return (rig_curve[i - 1][1] + f * (rig_curve[i][1] - rig_curve[i - 1][1])) *
                               MiB;
                }
        return 0;
}

/* What tuner @t asks of a device that answers after @latency: its reads in flight over the
 * latency, or its pace while it yields, whichever is less. */
static double demand(const DepthTuner *t, double latency) {
        double d = (double)t->depth * MiB * 1e6 / latency, pace = tuner_pace(t);

        return pace > 0 ? fmin(d, pace) : d;
}

/*
 * A cap as a queue (a fluid model of a token bucket): what arrives beyond the cap waits, and
 * the backlog drains at the cap. Everyone's reads, ours and the workload's, see the first-touch
 * latency plus the backlog's wait. The tuners ask for their reads in flight over that latency,
 * or their pace while they yield.
 */
static double backlog_step(double *backlog, DepthTuner **t, unsigned n, double lat0, double cap,
                           double fg, double *rate) {
        double latency = lat0 + *backlog * 1e6 / cap, arriving = fg;

        for (unsigned i = 0; i < n; i++) {
                rate[i] = demand(t[i], latency);
                arriving += rate[i];
        }
        *backlog = fmax(0.0, *backlog + (arriving - cap) * (double)STEP / 1e6);
        if (*backlog > 0 && arriving > cap) /* served in proportion, within the cap */
                for (unsigned i = 0; i < n; i++)
                        rate[i] *= fmax(0.0, cap - fg) / fmax(arriving - fg, 1.0);
        return latency;
}

/* Each tuner's throughput and the latency its reads see now; the queueing delay the workload
 * sees in @ret_queue (behind the same cap as tuner 0). */
static void device_step(Device *v, DepthTuner **t, unsigned n, double *rate, double *latency,
                        double *ret_queue) {
        *ret_queue = 0;
        if (v->curve) {
                double inflight = (double)t[0]->depth * MiB;

                rate[0] = fmin(curve_rate(t[0]->depth),
                               tuner_pace(t[0]) > 0 ? tuner_pace(t[0]) : INFINITY);
                latency[0] = inflight * 1e6 / curve_rate(t[0]->depth);
                return; /* the curve's latency is the device's own: nobody waits behind it */
        }
        if (v->cap <= 0) {
                for (unsigned i = 0; i < n; i++) {
                        latency[i] = v->latency_usec;
                        rate[i] = demand(t[i], latency[i]);
                }
                return;
        }
        if (v->separate) {
                for (unsigned i = 0; i < n; i++)
                        latency[i] = backlog_step(&v->backlog[i], &t[i], 1, v->latency_usec, v->cap,
                                                  i == 0 ? v->foreground : 0, &rate[i]);
                *ret_queue = latency[0] - v->latency_usec;
                return;
        }
        latency[0] =
                backlog_step(&v->backlog[0], t, n, v->latency_usec, v->cap, v->foreground, rate);
        for (unsigned i = 1; i < n; i++)
                latency[i] = latency[0];
        *ret_queue = latency[0] - v->latency_usec;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

/* What the workload's disk tells (activity.c), in @ret_latency what the requests done in the
 * last sample took: it reads one request at a time, each waiting the queue's wait and its own;
 * at a sample after one completed, 0, else the time since the first sample of the one in
 * flight. A deep workload completes some in every sample: 0, and their wait in the mean. */
static uint64_t their_wait(const Device *v, uint64_t now, uint64_t *ret_latency) {
        double w = v->queue_now + v->their_wait;
        uint64_t began, end;

        *ret_latency = 0;
        if (v->wait_len > 0) {
                end = v->wait_at + v->wait_len;
                if (end <= now && end > now - SAMPLE)
                        *ret_latency = v->wait_len;
                began = (v->wait_at + SAMPLE - 1) / SAMPLE * SAMPLE;
                return now > began && now < end ? now - began : 0;
        }
        if (v->deep) {
                *ret_latency = (uint64_t)w;
                return 0;
        }
        if (w < 1)
                return 0;
        if (floor((double)now / w) > floor((double)(now - SAMPLE) / w))
                *ret_latency = (uint64_t)w;
        if (w < SAMPLE)
                return 0;
        began = (uint64_t)(floor((double)now / w) * w);
        began = (began + SAMPLE - 1) / SAMPLE * SAMPLE;
        return now > began ? now - began : 0;
}

/* The look at the counters every 100 ms: what tuner @i hears of the others. */
static void sample(Device *v, DepthTuner **t, unsigned n, unsigned i, const double *rate,
                   uint64_t now) {
        double siblings = 0, others = v->other_cost, own = v->own_cost;
        unsigned readers = 0, queued = 0;

        for (unsigned j = 0; j < n; j++)
                if (j != i && v->strangers)
                        others += rate[j];
                else if (j != i) {
                        siblings += rate[j];
                        readers += rate[j] >= (double)MiB;
                        queued += rate[j] >= (double)MiB && tuner_queueing(t[j]);
                }
        readers += v->own_cap_siblings;
        siblings += v->own_cap_rate;
        tuner_siblings(t[i], readers, queued, siblings * (double)SAMPLE / 1e6, now);
        if (v->stalls && v->foreground > 0 && v->neighbours) {
                uint64_t latency, waited = their_wait(v, now, &latency);

                tuner_stalls(t[i], MAX(waited, latency),
                             activity_stall(&v->disk[i], waited, latency, now));
        } else
                tuner_stalls(t[i], 0, false);
        if (v->foreground > 0 && v->visible[i])
                own += v->foreground;
        else if (v->foreground > 0 && v->neighbours)
                others += v->foreground;
        if (tuner_sample(t[i], siblings, own, others, now) && getenv("TUNER_TRACE"))
                fprintf(stderr,
                        "%7.2f s: tuner %u depth %3u (%s), pace %.1f MiB/s, capacity %.1f/%.1f "
                        "MiB/s, queue test %d, stall test %d%s, their wait %.0f ms, queue "
                        "%.1f ms\n",
                        (double)now / 1e6, i, t[i]->depth, tuner_mode_to_string(t[i]->mode),
                        tuner_pace(t[i]) / MiB, t[i]->cap_own / MiB, t[i]->cap_all / MiB,
                        t[i]->queue_test, t[i]->stall_test, t[i]->stall_ours ? " (ours)" : "",
                        t[i]->their_wait_usec / 1e3, v->queue_now / 1e3);
}

/* Under TUNER_TRACE: tuner @i changed its depth at an epoch's end; @in_flight, or -1 unknown. */
static void trace_update(const DepthTuner *t, unsigned i, uint64_t now, int in_flight) {
        if (!getenv("TUNER_TRACE"))
                return;
        fprintf(stderr,
                "%7.2f s: tuner %u depth %3u (%s), base %.1f ms, queue %.1f ms, pace %.1f MiB/s",
                (double)now / 1e6, i, t->depth, tuner_mode_to_string(t->mode),
                tuner_base_latency(t) / 1000.0, t->queue_delay_usec / 1000.0, tuner_pace(t) / MiB);
        if (in_flight >= 0)
                fprintf(stderr, ", %d in flight", in_flight);
        fputc('\n', stderr);
}

/* Runs @n tuners on @v for @usec in 10 ms steps. */
static Run drive_all(DepthTuner **t, unsigned n, Device *v, uint64_t *now, uint64_t usec) {
        double carry[MAX_TUNERS] = {0}, bytes[MAX_TUNERS] = {0}, depth_sum = 0, queue_sum = 0;
        double wob = 0, latency_then = 0;
        size_t steps = usec / STEP, k = 0;
        uint64_t relearn_began = 0;
        double *queue = calloc(steps + 1, sizeof(double));
        Run run = {0};

        assert_non_null(queue);
        for (uint64_t end = *now + usec; *now < end; *now += STEP, k++) {
                double rate[MAX_TUNERS], latency[MAX_TUNERS];

                /* Drawn only for a wobbling device: the other tests' seeds give what they gave. */
                if (v->wobble > 0 && *now % (300 * MSEC) == 0)
                        wob = v->wobble * (double)rand() / RAND_MAX;
                device_step(v, t, n, rate, latency, &queue[k]);
                v->queue_now = queue[k];
                queue_sum += queue[k];
                run.queue_max = MAX(run.queue_max, queue[k]);
                depth_sum += t[0]->depth;
                if (*now % SAMPLE == 0) {
                        run.samples++;
                        run.yielding_samples += t[0]->yielding;
                }
                for (unsigned i = 0; i < n; i++) {
                        if (*now % SAMPLE == 0)
                                sample(v, t, n, i, rate, *now);
                        carry[i] += rate[i] * (double)STEP / 1e6;
                        for (; carry[i] >= (double)MiB; carry[i] -= (double)MiB) {
                                double extra = v->jitter * (double)rand() / RAND_MAX + wob;

                                tuner_complete(t[i], MiB, (uint64_t)(latency[i] * (1 + extra)),
                                               *now);
                                bytes[i] += (double)MiB;
                        }
                        if (i == 0 && t[0]->mode != TUNER_RELEARN)
                                latency_then = t[0]->latency_usec;
                        if (tuner_update(t[i], *now))
                                trace_update(t[i], i, *now, -1);
                }
                if (t[0]->mode == TUNER_RELEARN && relearn_began == 0) {
                        relearn_began = *now;
                        run.relearn_latency = MAX(run.relearn_latency, latency_then);
                } else if (t[0]->mode != TUNER_RELEARN && relearn_began > 0) {
                        run.relearn_usec = MAX(run.relearn_usec, *now - relearn_began);
                        run.relearns++;
                        relearn_began = 0;
                }
        }
        for (unsigned i = 0; i < n; i++) {
                run.rate[i] = bytes[i] * 1e6 / (double)usec;
                run.total += run.rate[i];
        }
        run.depth = depth_sum / (double)k;
        run.queue_mean = queue_sum / (double)k;
        qsort(queue, k, sizeof(double), cmp_double);
        run.queue_p999 = queue[(size_t)((double)(k - 1) * 0.999)];
        free(queue);
        if (getenv("TUNER_TRACE"))
                fprintf(stderr,
                        "run: %.1f MiB/s in all (tuner 0: %.1f), depth %.1f, queue mean %.1f "
                        "p99.9 %.1f max %.1f ms, yielding in %u of %u samples\n",
                        run.total / MiB, run.rate[0] / MiB, run.depth, run.queue_mean / 1000,
                        run.queue_p999 / 1000, run.queue_max / 1000, run.yielding_samples,
                        run.samples);
        for (unsigned i = 0; n > 1 && i < n && getenv("TUNER_TRACE"); i++)
                fprintf(stderr, "  tuner %u: %.1f MiB/s, depth %u (%s)\n", i, run.rate[i] / MiB,
                        t[i]->depth, tuner_mode_to_string(t[i]->mode));
        return run;
}

static Run drive(DepthTuner *t, Device *v, uint64_t *now, uint64_t usec) {
        return drive_all(&t, 1, v, now, usec);
}

/*
 * ---- a model served read by read ----
 *
 * The fluid model above has no time between a read's send and its completion: the first reads
 * of a start already see the queue the start makes. This one serves reads one by one, as the
 * rig's shared cap does (a QEMU throttle group, LAB.md section 3): each member volume has a
 * queue of reads waiting for the cap, the cap passes one read a turn, member by member among
 * those with one waiting, while its bucket (a tenth of a second of the cap) has room, and a
 * read that passed completes after the first-touch latency. Member @n (after the tuners) is a
 * database reading 16 KiB of warm blocks, one at a time, 2000 a second (one each 0.5 ms; when
 * behind, as soon as the last is done, as fio --rate_iops does). The tuners send reads up to
 * their depth; paced, in batches at multiples of TUNER_PACE_BATCH_USEC (hydrator-rate.c). What
 * the tuners hear of the database: its bytes over the last second, and its requests' time as
 * the daemon reads it from the disk's counters (served_sample()).
 */
#define SERVED_STEP (100 * UINT64_C(1))       /* usec */
#define SERVED_READS 64                       /* reads a member holds at most */
#define SERVED_DB_READ (16.0 * 1024)          /* the database's reads ... */
#define SERVED_DB_EVERY (500 * UINT64_C(1))   /* ... one each 0.5 ms: 2000 a second */
#define SERVED_DB_LATENCY (100 * UINT64_C(1)) /* warm blocks */
#define SERVED_PIECES 8                       /* 128 KiB pieces of a 1 MiB read */

typedef struct ServedMember {
        uint64_t waiting[SERVED_READS]; /* sent, not passed by the cap yet: when sent (FIFO) */
        unsigned left[SERVED_READS];    /* ... of each, pieces still to pass (Served.pieces) */
        unsigned wait_n;
        unsigned turn; /* Served.pieces: the waiting read the next piece is for */
        uint64_t sent[SERVED_READS], done[SERVED_READS]; /* passed: when sent, when done */
        unsigned flight_n;
        double tokens;                   /* paced: bytes it may send */
        bool batch_open;                 /* ... a batch not all sent yet */
        double sample_bytes;             /* completed since the last sample */
        double last[TUNER_RATE_SAMPLES]; /* bytes of each of the last samples, a ring */
        unsigned last_next;
        double second; /* bytes/s over the last second (what the counters tell) */
        double bytes;  /* completed in all */
} ServedMember;

typedef struct Served {
        double latency_usec; /* first touch */
        bool pieces;         /* a member's turn is SERVED_PIECES pieces of 1 MiB / SERVED_PIECES,
                              * one for each of its waiting reads in turn, as the rig's FUSE
                              * export passes them: reads sent together come back together */
        double cap;          /* bytes/s the group passes */
        double level;        /* the bucket, bytes (passes while at most cap / 10) */
        unsigned next;       /* whose turn */
        bool db;             /* the database reads */
        uint64_t db_next;    /* its next read */
        double *waits;       /* what its reads waited at the cap, usec, since served_waits() */
        size_t n_waits, cap_waits;
        double db_took;            /* what its reads done in the last sample took, in all, usec */
        unsigned db_done;          /* ... how many */
        uint64_t db_waiting;       /* in flight since this sample, none done since (activity.c) */
        uint64_t db_behind;        /* the most it fell behind its 2000 a second */
        Activity disk[MAX_TUNERS]; /* its disk as each tuner reads it (activity_stall()) */
        ServedMember m[MAX_TUNERS + 1];
} Served;

static unsigned served_in_flight(const ServedMember *m) {
        return m->wait_n + m->flight_n;
}

/* What @m completed in the last sample, bytes. */
static double served_last(const ServedMember *m) {
        return m->last[(m->last_next + TUNER_RATE_SAMPLES - 1) % TUNER_RATE_SAMPLES];
}

/* @m's waiting read @r has passed the cap: it completes a first-touch latency from @now. */
static void served_passed(ServedMember *m, unsigned r, uint64_t latency, uint64_t now) {
        m->sent[m->flight_n] = m->waiting[r];
        m->done[m->flight_n++] = now + latency;
        m->wait_n--;
        memmove(m->waiting + r, m->waiting + r + 1, (m->wait_n - r) * sizeof(m->waiting[0]));
        memmove(m->left + r, m->left + r + 1, (m->wait_n - r) * sizeof(m->left[0]));
}

/* Member @k's turn at the cap: one read (or, with pieces, 1 MiB of its waiting reads'). */
static void served_pass(Served *v, unsigned n, unsigned k, uint64_t now) {
        ServedMember *m = &v->m[k];

        if (k == n) {
                if (v->n_waits == v->cap_waits) {
                        v->cap_waits = MAX(v->cap_waits * 2, (size_t)4096);
                        v->waits = realloc(v->waits, v->cap_waits * sizeof(double));
                        assert_non_null(v->waits);
                }
                v->waits[v->n_waits++] = (double)(now - m->waiting[0]);
                v->level += SERVED_DB_READ;
                m->sample_bytes += SERVED_DB_READ;
                served_passed(m, 0, SERVED_DB_LATENCY, now);
                return;
        }
        if (!v->pieces) {
                v->level += (double)MiB;
                served_passed(m, 0, (uint64_t)v->latency_usec, now);
                return;
        }
        for (unsigned p = 0; p < SERVED_PIECES && m->wait_n > 0; p++) {
                unsigned r = m->turn % m->wait_n;

                v->level += (double)MiB / SERVED_PIECES;
                if (--m->left[r] == 0)
                        served_passed(m, r, (uint64_t)v->latency_usec, now);
                else
                        r++;
                m->turn = r;
        }
}

/* The tuners' look at the counters every TUNER_SAMPLE_USEC (as sample() above). What they
 * hear of the database's disk is what activity.c makes of its counters: the mean time its
 * requests done in the sample took, and, with none done, how long one has been in flight at
 * least (since the first sample that saw it so). */
static void served_sample(Served *v, DepthTuner **t, unsigned n, uint64_t now) {
        ServedMember *db = &v->m[n];
        uint64_t took = v->db_done > 0 ? (uint64_t)(v->db_took / v->db_done) : 0, waited;

        if (served_in_flight(db) == 0)
                v->db_waiting = 0;
        else if (v->db_done > 0 || v->db_waiting == 0)
                v->db_waiting = now;
        waited = v->db_waiting > 0 ? now - v->db_waiting : 0;
        v->db_took = 0;
        v->db_done = 0;

        for (unsigned i = 0; i <= n; i++) {
                ServedMember *m = &v->m[i];

                m->last[m->last_next++ % TUNER_RATE_SAMPLES] = m->sample_bytes;
                m->second = 0;
                for (unsigned k = 0; k < TUNER_RATE_SAMPLES; k++)
                        m->second += m->last[k];
                m->sample_bytes = 0;
        }
        for (unsigned i = 0; i < n; i++) {
                double siblings = 0, bytes = 0;
                unsigned readers = 0, queued = 0;

                for (unsigned j = 0; j < n; j++)
                        if (j != i) {
                                /* read in the last sample: at 1 MiB/s or more, reading */
                                double last = served_last(&v->m[j]);
                                bool reading =
                                        last * (double)USEC_PER_SEC / (double)SAMPLE >= (double)MiB;

                                bytes += last;
                                siblings += v->m[j].second;
                                readers += reading;
                                queued += reading && tuner_queueing(t[j]);
                        }
                tuner_siblings(t[i], readers, queued, bytes, now);
                tuner_stalls(t[i], MAX(waited, took),
                             activity_stall(&v->disk[i], waited, took, now));
                if (tuner_sample(t[i], siblings, 0, db->second, now) && getenv("TUNER_TRACE"))
                        fprintf(stderr,
                                "%7.2f s: tuner %u depth %3u (%s), pace %.1f MiB/s, capacity "
                                "%.1f/%.1f MiB/s, their wait %.1f ms\n",
                                (double)now / 1e6, i, t[i]->depth, tuner_mode_to_string(t[i]->mode),
                                tuner_pace(t[i]) / MiB, t[i]->cap_own / MiB, t[i]->cap_all / MiB,
                                t[i]->their_wait_usec / 1e3);
        }
}

/* Runs @n tuners on @v for @usec. */
static void served_run(Served *v, DepthTuner **t, unsigned n, uint64_t *now, uint64_t usec) {
        for (uint64_t end = *now + usec; *now < end; *now += SERVED_STEP) {
                ServedMember *db = &v->m[n];

                /* one read at a time, on time or, behind, as soon as the last is done (fio's
                 * --rate_iops at --iodepth=1) */
                if (v->db && *now >= v->db_next && served_in_flight(db) == 0) {
                        v->db_behind = MAX(v->db_behind, *now - v->db_next);
                        db->waiting[db->wait_n++] = *now;
                        v->db_next += SERVED_DB_EVERY;
                }
                /* the tuners send */
                for (unsigned i = 0; i < n; i++) {
                        ServedMember *m = &v->m[i];
                        double pace = tuner_pace(t[i]);

                        if (pace > 0) {
                                double batch = pace * (double)TUNER_PACE_BATCH_USEC / 1e6;

                                m->tokens = MIN(m->tokens + pace * (double)SERVED_STEP / 1e6,
                                                MAX(batch, (double)MiB) + batch);
                                if (*now % TUNER_PACE_BATCH_USEC == 0)
                                        m->batch_open = true;
                        } else
                                m->batch_open = true, m->tokens = (double)MiB;
                        while (m->batch_open && served_in_flight(m) < t[i]->depth &&
                               served_in_flight(m) < SERVED_READS && m->tokens >= (double)MiB) {
                                m->left[m->wait_n] = SERVED_PIECES;
                                m->waiting[m->wait_n++] = *now;
                                if (pace > 0)
                                        m->tokens -= (double)MiB;
                        }
                        if (pace > 0 && m->tokens < (double)MiB)
                                m->batch_open = false;
                }
                /* the cap */
                v->level = MAX(v->level - v->cap * (double)SERVED_STEP / 1e6, 0.0);
                while (v->level <= v->cap / 10) {
                        unsigned k = v->next, tried;

                        for (tried = 0; tried <= n && v->m[k].wait_n == 0; tried++)
                                k = (k + 1) % (n + 1);
                        if (tried > n)
                                break;
                        served_pass(v, n, k, *now);
                        v->next = (k + 1) % (n + 1);
                }
                /* completions */
                for (unsigned i = 0; i <= n; i++) {
                        ServedMember *m = &v->m[i];

                        for (unsigned r = 0; r < m->flight_n;)
                                if (m->done[r] <= *now) {
                                        if (i == n) {
                                                v->db_took += (double)(*now - m->sent[r]);
                                                v->db_done++;
                                        } else {
                                                tuner_complete(t[i], MiB, *now - m->sent[r], *now);
                                                m->sample_bytes += (double)MiB;
                                                m->bytes += (double)MiB;
                                        }
                                        m->sent[r] = m->sent[m->flight_n - 1];
                                        m->done[r] = m->done[--m->flight_n];
                                } else
                                        r++;
                        if (i < n && tuner_update(t[i], *now))
                                trace_update(t[i], i, *now, (int)served_in_flight(m));
                }
                if (*now % SAMPLE == 0 && *now > 0)
                        served_sample(v, t, n, *now);
        }
}

/* The database's reads since the last call: their waits at the cap, sorted; how many. */
static size_t served_waits(Served *v, double **ret) {
        size_t n = v->n_waits;

        qsort(v->waits, n, sizeof(double), cmp_double);
        *ret = v->waits;
        v->n_waits = 0;
        return n;
}

/* ---- an idle volume: as fast as it goes, with a short queue ---- */

static void test_tuner_rig_curve_beats_fio(void **state) {
        /* The rig without a cap gets faster the deeper it is driven: 264 MiB/s at 32 reads
         * (the AWS fio command), 450 at 64, 556 at 128, while every read waits longer. */
        Device v = {.curve = true};
        DepthTuner t, fio;
        uint64_t now = 0, now_fio = 0;
        Run a, f;

        tuner_init(&t, 4, 32, 256, now);
        tuner_fixed(&fio, 32, now_fio);
        (void)drive(&t, &v, &now, 10 * SEC);
        a = drive(&t, &v, &now, 60 * SEC);
        f = drive(&fio, &v, &now_fio, 60 * SEC);
        assert_true(a.rate[0] >= 1.5 * f.rate[0]);
        /* It stops where a step buys less than half of what it costs: not at 256. */
        assert_in_range((unsigned)a.depth, 60, 110);
}

static void test_tuner_fast_beats_fixed_32(void **state) {
        /* 400 MiB/s at 90 ms needs 36 MiB in flight: 32 leaves throughput on the table. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 400.0 * MiB};
        DepthTuner t, fixed;
        uint64_t now = 0, now_fixed = 0;
        Run a, f;

        tuner_init(&t, 4, 32, 256, now);
        tuner_fixed(&fixed, 32, now_fixed);
        a = drive(&t, &v, &now, 30 * SEC);
        f = drive(&fixed, &v, &now_fixed, 30 * SEC);
        assert_int_equal(fixed.depth, 32);
        assert_true(a.rate[0] > 1.08 * f.rate[0]);
        assert_true(a.rate[0] >= 0.95 * 400.0 * MiB);
}

static void test_tuner_gp3_holds_the_queue_short(void **state) {
        /* 125 MiB/s at 90 ms: 11.25 reads suffice; anything more only queues, in front of
         * everyone else's reads. Started at 32 (28 reads of queue), it comes down at once. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB};
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        tuner_init(&t, 4, 32, 256, now);
        (void)drive(&t, &v, &now, 10 * SEC);
        run = drive(&t, &v, &now, 10 * SEC); /* within ten seconds, alone: no relearn yet */
        assert_in_range((unsigned)run.depth, 10, 15);
        run = drive(&t, &v, &now, 60 * SEC);
        assert_in_range((unsigned)run.depth, 10, 14);
        assert_true(run.rate[0] >= 0.95 * 125.0 * MiB);
        /* Drained when over twice the target (90 ms / 8), to the target: the depth is a whole
         * number, and one read is 8 ms at 125 MiB/s. The old tuner held 45 ms. */
        assert_true(run.queue_mean <= 20.0 * MSEC);
        assert_in_range(tuner_base_latency(&t), 89 * MSEC, 91 * MSEC);
}

static void test_tuner_small_cap_no_long_queue(void **state) {
        /* 6 MiB/s (a throttled volume, a sc1 at its baseline): a read takes 170 ms of the cap,
         * and the 32 reads of the start are five seconds of queue, which the climb, whose
         * epochs last a few mean latencies, would take minutes to drain (it held 40 reads,
         * 3.1 s of queue, over these 23 s). The start sees its first reads queue behind each
         * other and stops at once. The climb after it only ever sees the device through the
         * 4 reads of its minimum depth (680 ms of queue here) and settles near 10. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 6.0 * MiB};
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        tuner_init(&t, 4, 32, 255, now);
        run = drive(&t, &v, &now, 3 * SEC);
        assert_true(run.queue_max <= 2.0 * SEC);
        run = drive(&t, &v, &now, 20 * SEC);
        assert_true(run.depth <= 12.0);
        assert_true(run.queue_mean <= 2.0 * SEC);
        assert_true(run.rate[0] >= 0.95 * 6.0 * MiB);
}

static void test_tuner_first_round_in_a_burst(void **state) {
        /* The rig's cap answers in bursts: the 32 reads of the start came back together at
         * 232-245 ms, and the first read sent after them took 371 ms. It waited: the first
         * round is cut. What the device served is the whole burst and the gap after it (31
         * MiB in 384 ms), not the last 8 reads over the gap (21 MiB/s, a depth of 6 where a
         * 125 MiB/s cap at 90 ms needs 13: the climb took 2 s to get back). */
        DepthTuner t;
        uint64_t t0 = 330 * MSEC, now = t0;

        tuner_init(&t, 4, 32, 48, 0);
        for (unsigned i = 0; i < 31; i++) {
                now = t0 + 232 * MSEC + i * 420;
                tuner_complete(&t, MiB, now - t0, now);
        }
        assert_int_equal(t.mode, TUNER_SLOW_START);
        tuner_complete(&t, MiB, 371 * MSEC, now + 371 * MSEC);
        assert_int_equal(t.mode, TUNER_STARTUP);
        assert_true(t.depth >= 13 && t.depth <= 24);

        /* A device that serves 4 reads at a time, steadily: the first round's queue is cut at
         * once to the depth that carries what it served, from the whole round as before. */
        tuner_init(&t, 4, 32, 48, 0);
        now = 0;
        for (unsigned i = 0; i < 8 && t.mode == TUNER_SLOW_START; i++) {
                now = (90 * MSEC) * (i / 4 + 1) + (i % 4) * 100;
                tuner_complete(&t, MiB, now, now);
        }
        assert_int_equal(t.mode, TUNER_STARTUP);
        assert_true(t.depth >= 4 && t.depth <= 6);
}

static void test_tuner_restarted_climb_forgets_the_old_round(void **state) {
        /* After a yield the climb starts again (tuner_restart_climb()); the completions from
         * before it, seconds old, are no measure of what the device serves now: a first round
         * that queues is cut to what it served since the restart, not over the old gap. */
        DepthTuner t;
        uint64_t now = 0;

        tuner_init(&t, 4, 32, 255, 0);
        for (unsigned i = 0; i < 8; i++) /* 8 reads served together at 90 ms */
                tuner_complete(&t, MiB, 90 * MSEC, 90 * MSEC + i);
        now = 30 * SEC;
        t.depth = 32;
        tuner_restart_climb(&t, now);
        /* 32 MiB in 80 ms (400 MiB/s) now: at 90 ms that needs about 40 reads, no cut (the
         * depth grows to 63 over the round: 2 x 40 stays above it). */
        for (unsigned i = 0; i < 32; i++)
                tuner_complete(&t, MiB, 90 * MSEC + i * 2500, now + 90 * MSEC + i * 2500);
        assert_int_equal(t.mode, TUNER_SLOW_START);
}

static void test_tuner_relearns_an_inflated_base(void **state) {
        /* The first reads all queued (a cap with no burst), so the first base is 256 ms; the
         * relearn epoch and the probes find the real 90 ms. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB};
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        tuner_init(&t, 4, 32, 256, now);
        (void)drive(&t, &v, &now, 30 * SEC);
        assert_in_range(tuner_base_latency(&t), 89 * MSEC, 91 * MSEC);
        /* The volume's latency rises for good (a slower region): the old minimum ages out
         * within the history (one minute) and the depth follows. */
        v.latency_usec = 150 * MSEC;
        (void)drive(&t, &v, &now, 90 * SEC);
        assert_in_range(tuner_base_latency(&t), 149 * MSEC, 151 * MSEC);
        run = drive(&t, &v, &now, 30 * SEC);
        assert_true(run.rate[0] >= 0.95 * 125.0 * MiB);
        assert_in_range((unsigned)run.depth, 18, 23); /* 125 MiB/s x 150 ms = 18.75 */
}

static void test_tuner_short_relearn_of_our_own_queue(void **state) {
        /* A relearn of a queue that was ours alone lasts a mean latency (the reads of the depth
         * before drain) and the four reads sent after it, not twice the base on top of that, at
         * a fraction of the rate: on a 1 GiB rig volume whose start had learned its base behind
         * its own queue (180 ms on a 120 ms volume), that kept four reads in flight for about
         * 0.6 s of a 6 s run. */
        Device v = {.latency_usec = 300 * MSEC, .cap = 125.0 * MiB};
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        tuner_init(&t, 4, 32, 256, now);
        run = drive(&t, &v, &now, 70 * SEC);
        assert_in_range(tuner_base_latency(&t), 299 * MSEC, 301 * MSEC);
        assert_int_equal(run.relearns, 1); /* alone: at the minute only */
        /* The window of before alone was 2 x 300 ms after the mean latency. */
        if (getenv("TUNER_TRACE"))
                fprintf(stderr, "relearn %.0f ms, mean latency %.0f ms\n", run.relearn_usec / 1e3,
                        run.relearn_latency / 1e3);
        assert_true(run.relearn_usec <= (uint64_t)run.relearn_latency + 400 * MSEC);
}

static void test_tuner_shared_relearn_sees_through_a_wrong_base(void **state) {
        /* A relearn that began with the queue shared lately keeps a window, for the siblings'
         * part of the queue to drain; but twice its own smallest latency once that is under a
         * base learned behind a queue (400 ms on a 90 ms volume, as four rig volumes with caps
         * of their own learned at their joint start), not twice that base: 0.8 s at one read. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 50.0 * MiB};
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        tuner_init(&t, 4, 32, 256, now);
        (void)drive(&t, &v, &now, 59800 * MSEC);
        for (unsigned b = 0; b < TUNER_BASE_BUCKETS; b++)
                t.base_hist[b] = 400 * MSEC;
        t.shared_usec = now;                /* a sibling's reads queued with ours just now */
        run = drive(&t, &v, &now, 3 * SEC); /* the relearn at 60 s */
        assert_int_equal(run.relearns, 1);
        assert_true(run.relearn_usec <= (uint64_t)run.relearn_latency + 400 * MSEC);
        assert_in_range(tuner_base_latency(&t), 89 * MSEC, 95 * MSEC);
}

static void test_tuner_relearn_among_warm_blocks_ends(void **state) {
        /* The minute's relearn falls where the blocks are warm already (a resumed run's read
         * part): an epoch of warm reads decides no depth, but the relearn's must still end, not
         * hold the minimum depth through the whole warm stretch. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB};
        DepthTuner t;
        uint64_t now = 0;
        unsigned before;

        tuner_init(&t, 4, 32, 256, now);
        (void)drive(&t, &v, &now, 50 * SEC);
        before = t.depth;
        assert_true(before > 4);
        v.latency_usec = 1 * MSEC;
        v.cap = 0;
        (void)drive(&t, &v, &now, 20 * SEC); /* the relearn at 60 s, and 10 s after */
        assert_int_not_equal(t.mode, TUNER_RELEARN);
        assert_int_equal(t.depth, before);
}

static void test_tuner_warm_blocks_do_not_set_the_base(void **state) {
        /* A resumed run starts on blocks that are warm already: 1 ms reads are left out of
         * the base, and 25 ms ones (warm, but behind a queue) are replaced as soon as cold
         * reads show that they were something else. */
        Device v = {.latency_usec = 1 * MSEC};
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        tuner_init(&t, 4, 32, 256, now);
        (void)drive(&t, &v, &now, 5 * SEC);
        assert_int_equal(tuner_base_latency(&t), 0);
        v.latency_usec = 25 * MSEC;
        (void)drive(&t, &v, &now, 5 * SEC);
        assert_in_range(tuner_base_latency(&t), 24 * MSEC, 26 * MSEC);
        v.latency_usec = 90 * MSEC; /* the cold part */
        v.cap = 125.0 * MiB;
        (void)drive(&t, &v, &now, 20 * SEC);
        assert_in_range(tuner_base_latency(&t), 89 * MSEC, 91 * MSEC);
        (void)drive(&t, &v, &now, 40 * SEC); /* 256 reads had 2 s of queue to drain */
        run = drive(&t, &v, &now, 30 * SEC);
        assert_true(run.rate[0] >= 0.95 * 125.0 * MiB);
        assert_in_range((unsigned)run.depth, 10, 15);
}

static void test_tuner_follows_a_changing_volume(void **state) {
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB};
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        tuner_init(&t, 4, 16, 256, now);
        run = drive(&t, &v, &now, 20 * SEC);
        assert_in_range((unsigned)run.depth, 10, 17);
        v.cap = 400.0 * MiB; /* e.g. a neighbour finished: more throughput to be had */
        (void)drive(&t, &v, &now, 20 * SEC);
        run = drive(&t, &v, &now, 20 * SEC);
        assert_in_range((unsigned)run.depth, 34, 56);
        assert_true(run.rate[0] >= 0.9 * 400.0 * MiB);
        v.cap = 125.0 * MiB; /* and back */
        (void)drive(&t, &v, &now, 10 * SEC);
        run = drive(&t, &v, &now, 20 * SEC);
        assert_in_range((unsigned)run.depth, 10, 15);
        assert_true(run.queue_mean <= 20.0 * MSEC);
}

static void test_tuner_tolerates_jitter(void **state) {
        /* Each first-touch read up to 50% slower than the fastest: the smallest latency of an
         * epoch still tells queueing from jitter. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 400.0 * MiB, .jitter = 0.5};
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        srand(7);
        tuner_init(&t, 4, 32, 256, now);
        (void)drive(&t, &v, &now, 10 * SEC);
        run = drive(&t, &v, &now, 60 * SEC);
        assert_true(run.rate[0] >= 0.9 * 400.0 * MiB);
        assert_in_range((unsigned)run.depth, 34, 80);
}

/* ---- other I/O ---- */

/* Alone on gp3 (125 MiB/s on every read, 90 ms first touch), for a reference. */
static double alone_on_gp3(void) {
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB};
        DepthTuner t;
        uint64_t now = 0;

        tuner_init(&t, 4, 32, 256, now);
        (void)drive(&t, &v, &now, 20 * SEC);
        return drive(&t, &v, &now, 60 * SEC).rate[0];
}

static void test_tuner_yields_at_once_and_comes_back(void **state) {
        /* gp3 with its cap on every read; a database starts 2000 x 16 KiB reads/s on it. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB, .visible = {true}};
        const double spare = 125.0 * MiB - FOREGROUND;
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        tuner_init(&t, 4, 32, 256, now);
        (void)drive(&t, &v, &now, 20 * SEC);
        assert_false(t.yielding);
        v.foreground = FOREGROUND;
        (void)drive(&t, &v, &now, SAMPLE + STEP); /* the next look at the counters */
        assert_true(t.yielding);
        assert_true(t.yield_own);
        assert_int_equal(t.mode, TUNER_YIELD);
        /* Cut at once: to half the pace while the queue we held alone (the climb's target,
         * 11 ms) drains, within a second; then to the pace that leaves the workload what it
         * takes and half as much again: the cap is never reached, so its reads never wait
         * behind ours. */
        assert_true(tuner_pace(&t) <= 0.51 * (125.0 * MiB - 1.5 * FOREGROUND));
        run = drive(&t, &v, &now, SEC);
        assert_true(run.queue_max <= 2 * tuner_target(90 * MSEC) + 8 * MSEC);
        assert_true(tuner_pace(&t) <= 1.01 * (125.0 * MiB - 1.5 * FOREGROUND));
        assert_true(tuner_pace(&t) >= 0.95 * (125.0 * MiB - 1.5 * FOREGROUND));
        run = drive(&t, &v, &now, 20 * SEC);
        assert_true(run.queue_max <= 1.0 * MSEC);
        assert_true(run.rate[0] >= 0.8 * spare);
        /* Longer: the capacity is probed after a minute (it may have grown), at the cost of a
         * short queue when it has not; then less and less often. */
        run = drive(&t, &v, &now, 60 * SEC);
        assert_true(run.queue_mean <= 1.0 * MSEC);
        assert_true(run.queue_max <= PROBE_QUEUE_MAX);
        assert_true(run.rate[0] >= 0.8 * spare);
        run = drive(&t, &v, &now, 10 * 60 * SEC);
        assert_true(run.queue_mean <= 0.1 * MSEC);
        assert_true(run.queue_max <= PROBE_QUEUE_MAX);
        assert_true(run.queue_p999 <= 10.0 * MSEC);
        assert_true(run.rate[0] >= 0.8 * spare);
        assert_int_equal(t.yields, 1);

        v.foreground = 0; /* the workload stops */
        (void)drive(&t, &v, &now, TUNER_YIELD_QUIET_USEC - SAMPLE);
        assert_true(t.yielding); /* not before a quiet spell */
        (void)drive(&t, &v, &now, 10 * SEC);
        assert_false(t.yielding);
        run = drive(&t, &v, &now, 20 * SEC);
        assert_true(run.rate[0] >= 0.95 * 125.0 * MiB);
}

static void test_tuner_small_loads_cost_nothing(void **state) {
        /* A real host: journald's one 4 KiB write and flush a second on the root volume
         * beside ours (each operation priced at 16 KiB: 36 KiB/s), a log reader's 512 KiB a
         * second, our own checkpoints on our disk. None is worth a yield. */
        static const double small[][2] = {
                {36.0 * 1024, 0}, {512.0 * 1024, 0}, {0, 96.0 * 1024}, {512.0 * 1024, 96.0 * 1024}};
        double alone = alone_on_gp3();

        for (size_t i = 0; i < ELEMENTSOF(small); i++) {
                Device v = {.latency_usec = 90 * MSEC,
                            .cap = 125.0 * MiB,
                            .other_cost = small[i][0],
                            .own_cost = small[i][1]};
                DepthTuner t;
                uint64_t now = 0;
                Run run;

                tuner_init(&t, 4, 32, 256, now);
                (void)drive(&t, &v, &now, 20 * SEC);
                run = drive(&t, &v, &now, 60 * SEC);
                assert_int_equal(t.yields, 0);
                assert_int_equal(run.yielding_samples, 0);
                assert_true(run.rate[0] >= 0.98 * alone);
        }
}

static void test_tuner_no_yield_under_a_mib(void **state) {
        /* A slow volume (4 MiB/s): 0.3 MiB/s of others' cost is 11% of it, past the 3% a cut
         * needs, but within what the counters cannot tell apart on the disk (a request of ours
         * counted at other moments): no yield. 1.5 MiB/s is a workload. */
        Device v = {.latency_usec = 90 * MSEC,
                    .cap = 4.0 * MiB,
                    .other_cost = 0.3 * MiB,
                    .neighbours = true};
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        tuner_init(&t, 4, 32, 255, now);
        run = drive(&t, &v, &now, 20 * SEC);
        assert_int_equal(run.yielding_samples, 0);
        v.other_cost = 1.5 * MiB;
        run = drive(&t, &v, &now, 10 * SEC);
        assert_true(run.yielding_samples > 0);
}

static void test_tuner_small_neighbour_from_the_start(void **state) {
        /* A reader of 20 MiB/s on the disk beside ours from the start: a cut of 7.5% of a
         * 400 MiB/s volume at 200 ms at most (3% here, under TUNER_YIELD_MIN_CUT: the climb
         * leaves 25 MiB/s of the cap unused, which is what the reader takes). In the first seconds
         * the capacities are what our ramp-up delivered, which makes the cut look several times
         * larger, and a yield with no capacity known started again from TUNER_YIELD_START reads (on
         * the rig: 3 s of it, 0.87x the rate alone). None before TUNER_KNOWN_SECONDS. Nor does what
         * the disks beside ours did in our first second count: it held us to the yield's tighter
         * target while we ramped up (216 MiB/s over these 10 s, against 356 alone), and it may be
         * siblings starting with us. Over the 10 s: at least 90% of the rate alone. */
        Device v = {.latency_usec = 200 * MSEC, .cap = 400.0 * MiB, .other_cost = 20.0 * MiB};
        Device quiet = {.latency_usec = 200 * MSEC, .cap = 400.0 * MiB};
        DepthTuner t, alone;
        uint64_t now = 0, now_alone = 0;
        Run a, b, q;

        tuner_init(&t, 4, 32, 256, now);
        tuner_init(&alone, 4, 32, 256, now_alone);
        a = drive(&t, &v, &now, TUNER_KNOWN_SECONDS * SEC - SAMPLE);
        assert_int_equal(t.yields, 0);
        b = drive(&t, &v, &now, 7 * SEC);
        q = drive(&alone, &quiet, &now_alone, now);
        assert_true(a.rate[0] * (double)(TUNER_KNOWN_SECONDS * SEC - SAMPLE) +
                            b.rate[0] * (double)(7 * SEC) >=
                    0.9 * q.rate[0] * (double)now);
}

static void test_tuner_queue_test_wants_the_queue_gone(void **state) {
        /* Latency that wobbles by more than the yield's target at any pace (the rig's cap
         * answers in bursts): a queue test that judged by its last sample alone said "ours"
         * about every other test, and each lowered the capacities by a tenth more (on the
         * rig: 91 down to 31 MiB/s in 20 s for a 4 MiB/s reader beside, a cut of 3%). The
         * pace stays near what the cut leaves. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB, .wobble = 0.15};
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        srand(1);
        tuner_init(&t, 4, 32, 256, now);
        (void)drive(&t, &v, &now, 20 * SEC);
        v.other_cost = 12.0 * MiB; /* a cut of about 15% */
        (void)drive(&t, &v, &now, 10 * SEC);
        assert_true(t.yielding);
        run = drive(&t, &v, &now, 60 * SEC);
        /* 106 MiB/s here (86-106 over seeds 1, 2, 3, 7 and 11), against 49-73 when the
         * verdict came from the test's last sample (69 with this seed). */
        assert_true(run.rate[0] >= 0.75 * 125.0 * MiB);
}

static void test_tuner_yields_in_proportion(void **state) {
        /* A workload on our disk that takes a share of its cap costs the hydration that
         * share and half as much again (the margin), not half of everything: 1% costs about
         * 1%, 25% about 37%. */
        static const double share[] = {0.01, 0.05, 0.10, 0.25, 0.50};
        double alone = alone_on_gp3();

        for (size_t i = 0; i < ELEMENTSOF(share); i++) {
                Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB, .visible = {true}};
                double cost;
                DepthTuner t;
                uint64_t now = 0;
                Run run;

                tuner_init(&t, 4, 32, 256, now);
                (void)drive(&t, &v, &now, 20 * SEC);
                v.foreground = share[i] * 125.0 * MiB;
                (void)drive(&t, &v, &now, 10 * SEC);
                run = drive(&t, &v, &now, 20 * SEC);
                cost = 1.0 - run.rate[0] / alone;
                if (getenv("TUNER_TRACE"))
                        fprintf(stderr,
                                "share %.2f: cost %.3f, queue p99.9 %.1f ms; pace %.1f, caps "
                                "%.1f %.1f, ref %.1f, costs %.2f %.2f%s\n",
                                share[i], cost, run.queue_p999 / 1000, tuner_pace(&t) / MiB,
                                t.cap_own / MiB, t.cap_all / MiB, t.fair / MiB, t.own_cost / MiB,
                                t.other_cost / MiB, t.cap_known ? "" : " (not known)");
                assert_true(cost >= share[i] - 0.01);
                assert_true(cost <= (1.0 + TUNER_YIELD_MARGIN) * share[i] + 0.02);
                /* Yielding, the workload never waits; too small for a yield, it waits behind
                 * a queue held to the tighter target (and a read at the cap: 8 ms). */
                if (t.yielding)
                        assert_true(run.queue_p999 <= 1.0 * MSEC);
                else
                        assert_true(run.queue_p999 <= 2 * tuner_yield_target(90 * MSEC) + 8 * MSEC);
        }
}

static void test_tuner_capacity_learned_low_recovers(void **state) {
        /* The capacities were taken too low (a slow spell, a sibling's queue): yielding to
         * that would starve the hydration for as long as the workload runs. Not seen at
         * saturation for TUNER_CAPACITY_TRUST_USEC, they grow while no queue shows. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB, .visible = {true}};
        const double spare = 125.0 * MiB - FOREGROUND;
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        tuner_init(&t, 4, 32, 256, now);
        (void)drive(&t, &v, &now, 20 * SEC);
        v.foreground = FOREGROUND;
        (void)drive(&t, &v, &now, SAMPLE + STEP);
        assert_true(t.yielding);
        t.cap_own = t.cap_all = 40.0 * MiB;
        (void)drive(&t, &v, &now, TUNER_CAPACITY_TRUST_USEC + 60 * SEC);
        run = drive(&t, &v, &now, 30 * SEC);
        assert_true(t.yielding);
        assert_true(run.rate[0] >= 0.75 * spare);
        assert_true(run.queue_max <= PROBE_QUEUE_MAX);
}

static void test_tuner_yields_from_the_start(void **state) {
        /* Started on a busy volume: a second of reads to learn our rate, then no capacity
         * known for the yield: it starts from the depth the pace needs, grows one read a
         * sample until reads queue, and holds its share from there. */
        Device v = {.latency_usec = 90 * MSEC,
                    .cap = 125.0 * MiB,
                    .foreground = FOREGROUND,
                    .visible = {true}};
        const double spare = 125.0 * MiB - FOREGROUND;
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        tuner_init(&t, 4, 32, 256, now);
        (void)drive(&t, &v, &now, 2 * SEC);
        assert_true(t.yielding);
        for (int i = 0; i < 18; i++) {
                (void)drive(&t, &v, &now, SEC);
                if (getenv("TUNER_TRACE"))
                        fprintf(stderr, "pace %.1f caps %.1f %.1f ref %.1f known %d depth %u\n",
                                tuner_pace(&t) / MiB, t.cap_own / MiB, t.cap_all / MiB,
                                t.fair / MiB, t.cap_known, t.depth);
        }
        run = drive(&t, &v, &now, 60 * SEC);
        assert_true(run.rate[0] >= 0.75 * spare);
        assert_true(run.queue_max <= PROBE_QUEUE_MAX);
        assert_true(run.queue_mean <= 1.0 * MSEC);
}

static void test_tuner_first_relearn_waits_while_alone(void **state) {
        /* Alone on the device, the base the start-up epochs learned behind our own queue hurts
         * nobody: the first relearn is the minute's (one soon after the start cost a 1 GiB
         * rig run 3-5% of its rate). */
        Device v = {.latency_usec = 120 * MSEC, .cap = 300.0 * MiB};
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        tuner_init(&t, 4, 4, 256, now);
        run = drive(&t, &v, &now, 55 * SEC);
        assert_int_equal(run.relearns, 0);
        assert_true(run.rate[0] >= 0.95 * 300.0 * MiB);
        run = drive(&t, &v, &now, 10 * SEC);
        assert_int_equal(run.relearns, 1);
        assert_in_range(tuner_base_latency(&t), 119 * MSEC, 121 * MSEC);
}

static void test_tuner_first_relearn_soon_with_others(void **state) {
        /* Someone else's I/O on our disk from the start, too little to yield to (2 MiB/s
         * beside 300, and 64 KiB/s): their reads wait behind our queue, and the base must be
         * right for the drain: the first relearn comes at the next 5 s boundary. On the disks
         * beside ours, a load under TUNER_YIELD_MIN_COST (a journal's commits) is not worth
         * one; one over it is. */
        static const struct {
                double own, other;
                uint64_t due;
        } cases[] = {
                {2.0 * MiB, 0, 5 * SEC},
                {64.0 * 1024, 0, 5 * SEC},
                {0, 64.0 * 1024, 60 * SEC},
                {0, 2.0 * MiB, 5 * SEC},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Device v = {.latency_usec = 120 * MSEC,
                            .cap = 300.0 * MiB,
                            .own_cost = cases[i].own,
                            .other_cost = cases[i].other};
                DepthTuner t;
                uint64_t now = 0;
                Run run;

                tuner_init(&t, 4, 4, 256, now);
                (void)drive(&t, &v, &now, 3 * SEC); /* the disks beside count from 2 s on */
                assert_int_equal(t.relearn_due_usec, cases[i].due);
                run = drive(&t, &v, &now, 7 * SEC);
                assert_int_equal(t.yields, 0);
                assert_int_equal(run.relearns, cases[i].due == 5 * SEC ? 1 : 0);
        }
}

static void test_tuner_sibling_after_a_lone_start(void **state) {
        /* A volume alone for its start learns its base behind its own queue and keeps it (no
         * relearn before the minute): on the rig's curve, where latency grows with the depth.
         * A sibling that comes later reads behind that queue: the base is then at once the
         * slow start's smallest latency, taken when none of ours queued yet, and no relearn
         * comes out of step with the sibling's. One that is there during our slow start
         * makes the first relearn come at the next 5 s boundary instead. */
        Device v = {.curve = true};
        DepthTuner t;
        uint64_t now = 0, start_min, base;
        Run run;

        tuner_init(&t, 4, 4, 256, now);
        run = drive(&t, &v, &now, 20 * SEC);
        assert_int_equal(run.relearns, 0);
        start_min = t.start_min_usec;
        if (getenv("TUNER_TRACE"))
                fprintf(stderr, "alone: base %.1f ms, slow start's smallest %.1f ms\n",
                        tuner_base_latency(&t) / 1e3, start_min / 1e3);
        assert_true(tuner_base_latency(&t) > start_min + 5 * MSEC);
        tuner_siblings(&t, 1, 0, 0, now);
        assert_int_equal(tuner_base_latency(&t), start_min);
        assert_int_equal(t.relearn_due_usec, 60 * SEC);

        now = 0;
        tuner_init(&t, 4, 4, 256, now);
        (void)drive(&t, &v, &now, 2 * STEP);
        assert_int_equal(t.mode, TUNER_SLOW_START);
        tuner_siblings(&t, 1, 0, 0, now);
        assert_int_equal(t.relearn_due_usec, 5 * SEC);

        /* A slow start whose smallest latency is under half the base (a warm read that waited
         * behind the others, say) gives nothing: a relearn at the next 5 s boundary instead.
         * Nor does a start with no slow start (its depth was the largest already). */
        now = 0;
        tuner_init(&t, 4, 4, 256, now);
        (void)drive(&t, &v, &now, 20 * SEC);
        base = tuner_base_latency(&t);
        t.start_min_usec = base / 3;
        tuner_siblings(&t, 1, 0, 0, now);
        assert_int_equal(tuner_base_latency(&t), base);
        assert_int_equal(t.relearn_due_usec, 25 * SEC);
        now = 0;
        tuner_init(&t, 4, 48, 48, now);
        assert_int_equal(t.mode, TUNER_STARTUP);
        (void)drive(&t, &v, &now, 20 * SEC);
        tuner_siblings(&t, 1, 0, 0, now);
        assert_int_equal(t.relearn_due_usec, 25 * SEC);

        /* Others' I/O that comes late gives the base and a relearn: they do not relearn in
         * step with us, and their queue is what the yield must see. */
        now = 0;
        tuner_init(&t, 4, 4, 256, now);
        (void)drive(&t, &v, &now, 20 * SEC);
        start_min = t.start_min_usec;
        (void)tuner_sample(&t, 0, 2.0 * MiB, 0, now);
        assert_int_equal(tuner_base_latency(&t), start_min);
        assert_int_equal(t.relearn_due_usec, 25 * SEC);

        /* One that comes after our slow start but before the first 5 s boundary may have
         * started about when we did, and seen us late: the first relearn comes there, in
         * step with its own. */
        now = 0;
        tuner_init(&t, 4, 4, 256, now);
        (void)drive(&t, &v, &now, 4 * SEC);
        assert_true(t.mode != TUNER_SLOW_START);
        start_min = t.start_min_usec;
        tuner_siblings(&t, 1, 0, 0, now);
        assert_int_equal(tuner_base_latency(&t), start_min);
        assert_int_equal(t.relearn_due_usec, 5 * SEC);
}

static void test_tuner_yield_grows_on_completions(void **state) {
        /* Yielding with no capacity known, the depth grows one read a sample until reads
         * queue. A device that answers nothing for two seconds (the rig held every read of
         * four volumes for 4 s while three hydrators added a read a sample each) gives no
         * latency to see a queue in: the depth holds there. In the model it grows again once
         * reads come back (no read is carried over the stall; on a device, the first ones back
         * would carry its 2 s and show the queue). */
        Device v = {.latency_usec = 90 * MSEC,
                    .cap = 125.0 * MiB,
                    .foreground = FOREGROUND,
                    .visible = {true}};
        DepthTuner t;
        uint64_t now = 0;
        unsigned depth = 0;

        tuner_init(&t, 4, 32, 256, now);
        (void)drive(&t, &v, &now, 6 * SAMPLE); /* a yield from the third sample on */
        assert_true(t.yielding);
        assert_false(t.cap_known);
        assert_true(t.depth > TUNER_YIELD_START); /* the depth the pace needs */
        for (int i = 0; i < 20; i++) {
                (void)tuner_sample(&t, 0, FOREGROUND, 0, now);
                (void)tuner_update(&t, now);
                if (i == 0) /* that sample still had the reads since the model's last */
                        depth = t.depth;
                now += SAMPLE;
        }
        assert_true(t.yielding);
        assert_int_equal(t.depth, depth);
        (void)drive(&t, &v, &now, 3 * SAMPLE);
        assert_true(t.depth > depth);
}

static void test_tuner_slow_second_is_not_the_capacity(void **state) {
        /* Yielding before any capacity is known (here from 1.5 s of reads alone, not saturated
         * for TUNER_KNOWN_SECONDS), the depth grows until reads queue, and the second after is
         * taken as the capacity. The rig's cap stops and goes: in one run that second
         * delivered 70.6 MiB/s of a 125 MiB/s cap, and the sibling read 6-7 MiB/s from then
         * on. What was delivered over the seconds before is at most the capacity too: the
         * larger of the two holds. */
        /* our reads alone for a moment: the rates say what the cap gives */
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB, .visible = {true}};
        const double spare = 125.0 * MiB - FOREGROUND;
        DepthTuner t;
        uint64_t now = 0;
        Run run;

        tuner_init(&t, 4, 32, 256, now);
        (void)drive(&t, &v, &now, 1500 * MSEC);
        v.foreground = FOREGROUND;
        for (int i = 0; i < 100 && !t.yielding; i++)
                (void)drive(&t, &v, &now, SAMPLE);
        assert_true(t.yielding);
        assert_false(t.cap_known);
        for (int i = 0; i < 300 && t.probe_hold_usec == 0; i++)
                (void)drive(&t, &v, &now, SAMPLE);
        assert_true(t.probe_hold_usec > 0);
        assert_false(t.cap_known);
        v.cap = 60.0 * MiB; /* the second that says what the capacity is: a slow one */
        (void)drive(&t, &v, &now, SEC + SAMPLE);
        assert_true(t.cap_known);
        v.cap = 125.0 * MiB;
        (void)drive(&t, &v, &now, 5 * SEC);
        run = drive(&t, &v, &now, 20 * SEC);
        if (getenv("TUNER_TRACE"))
                fprintf(stderr, "caps %.1f %.1f, pace %.1f, rate %.1f of a spare %.1f\n",
                        t.cap_own / MiB, t.cap_all / MiB, tuner_pace(&t) / MiB, run.rate[0] / MiB,
                        spare / MiB);
        assert_true(t.cap_all >= 0.9 * 125.0 * MiB);
        assert_true(run.rate[0] >= 0.75 * spare);
        assert_true(run.queue_p999 <= PROBE_QUEUE_MAX);
}

static void test_tuner_first_second_is_not_a_window(void **state) {
        /* The capacities are the most delivered over TUNER_CAPACITY_SECONDS seconds in a row,
         * not over the one or two oldest of the window: a cap that passes a burst in the
         * run's first second (the rig's gives 134 MiB/s of 125 in it), a database 4 s later. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 170.0 * MiB, .visible = {true}};
        DepthTuner t;
        uint64_t now = 0;
        double second = 0, steady = 0;

        tuner_init(&t, 4, 32, 256, now);
        (void)drive(&t, &v, &now, SEC);
        v.cap = 125.0 * MiB;
        (void)drive(&t, &v, &now, 3 * SEC + 500 * MSEC);
        v.foreground = FOREGROUND;
        for (int i = 0; i < 100 && !t.yielding; i++)
                (void)drive(&t, &v, &now, SAMPLE);
        assert_true(t.yielding);
        for (unsigned k = 0; k < TUNER_WINDOW_SECONDS; k++) {
                const TunerSecond *s = &t.seconds[(t.second_next + TUNER_WINDOW_SECONDS - k) %
                                                  TUNER_WINDOW_SECONDS];

                if (!s->used)
                        break;
                second = s->all_total; /* the oldest */
                if (k >= 1 && k <= 3)
                        steady += s->all_total / 3;
        }
        if (getenv("TUNER_TRACE"))
                fprintf(stderr, "first second %.1f MiB/s, seconds 1-3 back %.1f, capacity %.1f\n",
                        second / MiB, steady / MiB, t.cap_all / MiB);
        /* the burst was there to take, and it counts as a third of a window, not as one */
        assert_true(second >= 150.0 * MiB);
        assert_true(t.cap_all <= (second + 2 * 125.0 * MiB) / 3 + 2.0 * MiB);
}

static void test_tuner_fixed_depth_yields_too(void **state) {
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB, .visible = {true}};
        DepthTuner t;
        uint64_t now = 0;

        tuner_fixed(&t, 32, now);
        (void)drive(&t, &v, &now, 10 * SEC);
        assert_int_equal(t.depth, 32);
        v.foreground = FOREGROUND;
        (void)drive(&t, &v, &now, 20 * SEC);
        assert_true(t.yielding);
        assert_true(t.depth < 12);
        v.foreground = 0;
        (void)drive(&t, &v, &now, TUNER_YIELD_QUIET_USEC + 2 * SEC);
        assert_false(t.yielding);
        assert_int_equal(t.depth, 32);
}

static void assert_fair(const Run *run, unsigned n) {
        for (unsigned i = 0; i < n; i++) {
                assert_true(run->rate[i] >= 0.75 * run->total / n);
                assert_true(run->rate[i] <= 1.25 * run->total / n);
        }
}

/* @n tuners behind one @cap filled it, each its share, and none yielded to the others. */
static void assert_cap_shared(const Run *run, DepthTuner *t, unsigned n, double cap) {
        assert_true(run->total >= 0.95 * cap);
        assert_fair(run, n);
        for (unsigned i = 0; i < n; i++)
                assert_int_equal(t[i].yields, 0);
}

static void test_tuner_shared_cap_siblings_share(void **state) {
        /* An instance's EBS bandwidth (125 MiB/s) behind three hydrating volumes. Each
         * hears the others' reads as a sibling's (siblings.h), not as a workload: they do not
         * yield to each other, they share the cap by the common delay target. Then a
         * database starts on a fourth volume: they yield to it, together. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB, .neighbours = true};
        const double spare = 125.0 * MiB - FOREGROUND;
        DepthTuner a, b, c, *all[] = {&a, &b, &c};
        uint64_t now = 0;
        Run run;

        tuner_init(&a, 4, 32, 256, now);
        tuner_init(&b, 4, 32, 256, now);
        tuner_init(&c, 4, 32, 256, now);
        (void)drive_all(all, 3, &v, &now, 30 * SEC);
        run = drive_all(all, 3, &v, &now, 60 * SEC);
        assert_true(run.total >= 0.95 * 125.0 * MiB);
        assert_int_equal(run.yielding_samples, 0);
        assert_fair(&run, 3);

        v.foreground = FOREGROUND; /* the database on the fourth volume */
        (void)drive_all(all, 3, &v, &now, 20 * SEC);
        run = drive_all(all, 3, &v, &now, 60 * SEC);
        assert_true(a.yielding && b.yielding && c.yielding);
        assert_true(run.queue_mean <= 1.0 * MSEC);
        assert_true(run.queue_max <= PROBE_QUEUE_MAX);
        assert_true(run.total >= 0.75 * spare);
        assert_fair(&run, 3);
}

/* Three siblings behind one cap, capacities learned while it gave more, then a database on a
 * fourth volume (test_tuner_siblings_stop_their_stalls()); @deep: it keeps many reads in
 * flight. */
static void stalls_of_the_database(bool deep) {
        Device v = {.latency_usec = 90 * MSEC,
                    .cap = 175.0 * MiB,
                    .neighbours = true,
                    .jitter = 0.3,
                    .deep = deep};
        DepthTuner a, b, c, *all[] = {&a, &b, &c};
        const double spare = 125.0 * MiB - FOREGROUND;
        uint64_t now = 0;
        Run run;

        srand(1);
        tuner_init(&a, 4, 32, 256, now);
        tuner_init(&b, 4, 32, 256, now);
        tuner_init(&c, 4, 32, 256, now);
        (void)drive_all(all, 3, &v, &now, 10 * SEC);
        v.cap = 125.0 * MiB;
        v.foreground = FOREGROUND;
        v.stalls = getenv("TUNER_NO_STALLS") == NULL;
        (void)drive_all(all, 3, &v, &now, 20 * SEC);
        run = drive_all(all, 3, &v, &now, 60 * SEC);
        if (getenv("TUNER_TRACE"))
                fprintf(stderr, "stall tests: %u, %u, %u\n", a.stall_tests, b.stall_tests,
                        c.stall_tests);
        assert_true(a.yielding && b.yielding && c.yielding);
        if (getenv("TUNER_TRACE"))
                fprintf(stderr, "queue mean %.1f ms, p99.9 %.1f ms, %.0f%% of the spare\n",
                        run.queue_mean / MSEC, run.queue_p999 / MSEC, 100 * run.total / spare);
        assert_true(run.queue_p999 < TUNER_STALL_USEC);
        assert_true(run.queue_mean <= 50.0 * MSEC);
        assert_true(run.total >= 0.6 * spare);
        assert_true(a.stall_tests >= 1 && b.stall_tests >= 1 && c.stall_tests >= 1);
}

static void test_tuner_siblings_stop_their_stalls(void **state) {
        /* Three siblings behind one cap yield to a database on a fourth volume, with
         * capacities learned at a cap that then gives less (on the rig, bursts at the start
         * read 137-148 MiB/s of a 125 MiB/s cap): their paces keep a queue the database's
         * reads wait in, and none of them sees it as one (it stands in its latencies from the
         * start of the yield), nor could one drain it alone (a quarter less of one pace leaves
         * the others'). On the rig, about one run in four, the database got 1400 of its 2000
         * reads a second, its slowest waiting 320-360 ms. The database's disk tells how long
         * its requests wait: all three cut together until they do not. */
        stalls_of_the_database(false);
}

static void test_tuner_stalls_of_a_deep_workload(void **state) {
        /* The same with a database that keeps many reads in flight: some complete in every
         * sample, so none is seen waiting; the time they took is. */
        stalls_of_the_database(true);
}

static void test_tuner_stalls_not_ours(void **state) {
        /* The database beside us waits behind a cap of its own (its own volume's): its
         * requests wait 250 ms whatever we read. The siblings cut for a while, find the stalls
         * not theirs, and read as before. */
        Device v = {.latency_usec = 90 * MSEC,
                    .cap = 125.0 * MiB,
                    .neighbours = true,
                    .their_wait = 250 * MSEC};
        DepthTuner a, b, *all[] = {&a, &b};
        uint64_t now = 0;
        double before;
        Run run;

        tuner_init(&a, 4, 32, 256, now);
        tuner_init(&b, 4, 32, 256, now);
        (void)drive_all(all, 2, &v, &now, 30 * SEC);
        v.foreground = FOREGROUND;
        (void)drive_all(all, 2, &v, &now, 15 * SEC);
        assert_true(a.yielding && a.stall_test == TUNER_QUEUE_NONE);
        before = tuner_pace(&a);
        assert_true(before > 0);
        v.stalls = true;
        run = drive_all(all, 2, &v, &now, 8 * SEC);
        assert_int_equal(a.stall_tests, 1);
        assert_int_equal(a.stall_test, TUNER_QUEUE_IGNORED);
        /* the pace it had, give or take what the capacities learned meanwhile */
        assert_true(tuner_pace(&a) >= 0.95 * before);
        /* and no test again while they are left alone */
        run = drive_all(all, 2, &v, &now, 20 * SEC);
        assert_int_equal(a.stall_tests, 1);
        assert_true(run.rate[0] >= 0.9 * before);
}

static void test_tuner_stalls_ours_in_part(void **state) {
        /* Stalls beside us that fall by half when we read less, but never go (a workload
         * waiting behind us and behind something else too): the cut made stays, and no more
         * cuts follow for a while, however long they last. */
        Device v = {.latency_usec = 90 * MSEC,
                    .cap = 125.0 * MiB,
                    .neighbours = true,
                    .their_wait = 600 * MSEC};
        DepthTuner a, b, *all[] = {&a, &b};
        uint64_t now = 0;
        double before, cut;

        tuner_init(&a, 4, 32, 256, now);
        tuner_init(&b, 4, 32, 256, now);
        (void)drive_all(all, 2, &v, &now, 30 * SEC);
        v.foreground = FOREGROUND;
        (void)drive_all(all, 2, &v, &now, 15 * SEC);
        before = tuner_pace(&a);
        assert_true(a.yielding && before > 0);
        v.stalls = true;
        (void)drive_all(all, 2, &v, &now, 3 * SEC);
        assert_int_equal(a.stall_test, TUNER_QUEUE_TESTING);
        assert_true(a.stall_short);
        v.their_wait = 250 * MSEC; /* half, but still a stall */
        (void)drive_all(all, 2, &v, &now, 2 * TUNER_STALL_TEST_USEC);
        assert_int_equal(a.stall_test, TUNER_QUEUE_IGNORED);
        assert_true(a.stall_ours);
        cut = tuner_pace(&a);
        assert_true(cut < 0.95 * before);
        /* five cuts at most: three at 600 ms, two until two seconds show half */
        assert_true(cut >= 0.55 * before);
        (void)drive_all(all, 2, &v, &now, 20 * SEC);
        assert_int_equal(a.stall_tests, 1);
        assert_true(tuner_pace(&a) >= 0.99 * cut);
}

/* Two siblings yielding to a workload beside them, with capacities known; their pace. */
static double stall_setup(DepthTuner **all, Device *v, uint64_t *now) {
        tuner_init(all[0], 4, 32, 256, *now);
        tuner_init(all[1], 4, 32, 256, *now);
        (void)drive_all(all, 2, v, now, 30 * SEC);
        v->foreground = FOREGROUND;
        (void)drive_all(all, 2, v, now, 15 * SEC);
        assert_true(all[0]->yielding && all[0]->stall_test == TUNER_QUEUE_NONE);
        assert_true(tuner_pace(all[0]) > 0);
        v->stalls = true;
        return tuner_pace(all[0]);
}

static void test_tuner_one_stall_is_not_two(void **state) {
        /* Single waits of 900 ms beside us, five seconds apart, each begun at another point of
         * the second: most span the turn of a second, none is stalls in two seconds of three.
         * One of 1.5 s is; so are two of 300 ms a second apart. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB, .neighbours = true};
        DepthTuner a, b, *all[] = {&a, &b};
        uint64_t now = 0;

        (void)stall_setup(all, &v, &now);
        for (unsigned k = 0; k < 10; k++) {
                v.wait_at = now + SEC + k * SAMPLE + 3 * MSEC;
                v.wait_len = 900 * MSEC;
                (void)drive_all(all, 2, &v, &now, 5 * SEC);
        }
        assert_int_equal(a.stall_tests, 0);
        assert_int_equal(b.stall_tests, 0);

        v.wait_at = now + SEC;
        v.wait_len = 1500 * MSEC;
        (void)drive_all(all, 2, &v, &now, 3 * SEC);
        assert_int_equal(a.stall_tests, 1);
        assert_int_equal(b.stall_tests, 1);
        v.wait_len = 0;
        (void)drive_all(all, 2, &v, &now, 40 * SEC); /* found ours (gone), left alone 30 s */
        assert_int_equal(a.stall_test, TUNER_QUEUE_NONE);

        v.wait_at = now + SEC;
        v.wait_len = 300 * MSEC;
        (void)drive_all(all, 2, &v, &now, SEC + 500 * MSEC);
        v.wait_at = now + 500 * MSEC;
        (void)drive_all(all, 2, &v, &now, SEC);
        assert_int_equal(a.stall_tests, 2);
}

static void test_tuner_stalls_halved_once(void **state) {
        /* Waits of 600 ms of the neighbour's own that fall for a second and a half during a
         * test, then come back: one quiet second is no trend; not ours, the pace comes back. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB, .neighbours = true};
        DepthTuner a, b, *all[] = {&a, &b};
        uint64_t now = 0;
        double before;

        before = stall_setup(all, &v, &now);
        v.their_wait = 600 * MSEC;
        while (a.stall_test != TUNER_QUEUE_TESTING && now < 60 * SEC + 5 * SEC * 10)
                (void)drive_all(all, 2, &v, &now, SAMPLE);
        assert_int_equal(a.stall_test, TUNER_QUEUE_TESTING);
        (void)drive_all(all, 2, &v, &now, 2 * SEC);
        v.their_wait = 100 * MSEC;
        (void)drive_all(all, 2, &v, &now, 1500 * MSEC);
        v.their_wait = 600 * MSEC;
        (void)drive_all(all, 2, &v, &now, TUNER_STALL_TEST_USEC);
        assert_false(a.stall_ours);
        assert_int_equal(a.stall_test, TUNER_QUEUE_IGNORED);
        assert_true(tuner_pace(&a) >= 0.95 * before);
}

static void test_tuner_stalls_gone_then_left_alone(void **state) {
        /* Waits that stop after the cut are ours; if they come back at once, they are left
         * alone for TUNER_QUEUE_IGNORE_USEC (a neighbour's waits that come and go of their own
         * cannot cut again and again). A yield that ends ends a test under way. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB, .neighbours = true};
        DepthTuner a, b, *all[] = {&a, &b};
        uint64_t now = 0, gone;
        double cut;

        (void)stall_setup(all, &v, &now);
        v.their_wait = 400 * MSEC;
        (void)drive_all(all, 2, &v, &now, 3 * SEC);
        assert_int_equal(a.stall_tests, 1);
        v.their_wait = 0;
        (void)drive_all(all, 2, &v, &now, 4 * SEC);
        assert_int_equal(a.stall_test, TUNER_QUEUE_IGNORED);
        assert_true(a.stall_gone && a.stall_short);
        gone = now;
        cut = tuner_pace(&a);
        v.their_wait = 400 * MSEC;
        while (now - gone < TUNER_QUEUE_IGNORE_USEC - SEC) {
                (void)drive_all(all, 2, &v, &now, SEC);
                assert_int_equal(a.stall_tests, 1);
        }
        assert_true(tuner_pace(&a) >= 0.99 * cut);
        (void)drive_all(all, 2, &v, &now, 4 * SEC);
        assert_int_equal(a.stall_tests, 2);
        assert_int_equal(a.stall_test, TUNER_QUEUE_TESTING);
        /* the workload stops: no yield, no test, nothing left alone */
        v.foreground = 0;
        v.their_wait = 0;
        (void)drive_all(all, 2, &v, &now, 20 * SEC);
        assert_false(a.yielding);
        assert_int_equal(a.stall_test, TUNER_QUEUE_NONE);
        assert_false(a.stall_short);
}

static void test_tuner_stalls_that_come_and_go(void **state) {
        /* A neighbour whose requests wait 250 ms for three seconds in every fifteen, whatever
         * we read: each test sees them go soon after it cut, and would call them ours. Five
         * minutes of it take no more than half of the pace, the floor of the yield's tests. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB, .neighbours = true};
        DepthTuner a, b, *all[] = {&a, &b};
        uint64_t now = 0;
        double before, least;

        before = least = stall_setup(all, &v, &now);
        for (unsigned k = 0; k < 20; k++) {
                v.their_wait = 250 * MSEC;
                (void)drive_all(all, 2, &v, &now, 3 * SEC);
                v.their_wait = 0;
                (void)drive_all(all, 2, &v, &now, 12 * SEC);
                least = MIN(least, tuner_pace(&a));
        }
        if (getenv("TUNER_TRACE"))
                fprintf(stderr, "stall tests %u, pace %.1f MiB/s before, %.1f least\n",
                        a.stall_tests, before / MiB, least / MiB);
        assert_true(a.stall_tests >= 2);
        assert_true(least >= 0.45 * before);
}

static void test_tuner_late_siblings_get_their_share(void **state) {
        /* Four volumes behind one 150 MiB/s cap, attached (or done mapping) a few seconds
         * apart: the first has the cap to itself and a deep queue; each newcomer climbs into
         * that queue. A climb that sizes its depth for its own rate keeps whatever split the
         * start made (on the rig: 18.8 to 68.2 MiB/s); they must keep the cap full, never yield
         * to each other, and end up within a quarter of the mean. The model is chaotic (where
         * each relearn falls against the others' queues decides much), so one draw says little:
         * 80 starts, five gaps between arrivals (none a multiple of the relearn's 5 s grid,
         * which only the model's clock would hit) by sixteen draws of the jitter. Measured on
         * this model (2026-11-28), outside a quarter and the mean of the largest deviation: 8
         * of 80 and 14.3% with the first relearn 0-5 s after every start; 15 of 80 and 15.2%
         * with it held to the minute while alone (tuner_base_doubted()). Over 150 draws (30
         * seeds) the two gave 18 and 22, 15.1% and 14.6%: the same within the draw. */
        static const uint64_t gaps[] = {4200 * MSEC, 5700 * MSEC, 6300 * MSEC, 7500 * MSEC,
                                        8900 * MSEC};
        Device v = {.latency_usec = 90 * MSEC, .cap = 150.0 * MiB, .jitter = 0.3};
        unsigned fair = 0, runs = 0;
        double dev_sum = 0;

        for (size_t g = 0; g < ELEMENTSOF(gaps); g++)
                for (unsigned seed = 1; seed <= 16; seed++) {
                        DepthTuner t[4], *all[] = {&t[0], &t[1], &t[2], &t[3]};
                        uint64_t now = 0;
                        double dev = 0;
                        Run run;

                        srand(seed); /* its own draws, not what the tests before it left */
                        memset(v.backlog, 0, sizeof(v.backlog));
                        for (unsigned i = 0; i < 4; i++) {
                                tuner_init(&t[i], 4, 32, 256, now);
                                (void)drive_all(all, i + 1, &v, &now, gaps[g]);
                        }
                        (void)drive_all(all, 4, &v, &now, 30 * SEC);
                        run = drive_all(all, 4, &v, &now, 60 * SEC);
                        assert_true(run.total >= 0.95 * 150.0 * MiB);
                        for (unsigned i = 0; i < 4; i++) {
                                assert_int_equal(t[i].yields, 0);
                                dev = fmax(dev, fabs(run.rate[i] * 4 / run.total - 1));
                        }
                        /* None left far behind, in any draw. */
                        assert_true(dev <= 0.6);
                        fair += dev <= 0.25;
                        dev_sum += dev;
                        runs++;
                }
        if (getenv("TUNER_TRACE"))
                fprintf(stderr, "late siblings: %u of %u within a quarter, mean deviation %.3f\n",
                        fair, runs, dev_sum / runs);
        assert_true(fair * 4 >= runs * 3);
        assert_true(dev_sum / runs <= 0.2);
}

static void test_tuner_siblings_with_caps_of_their_own(void **state) {
        /* Four volumes, each with its own cap (a volume-limited instance): the others'
         * reads cost nobody anything, and nobody slows down for them. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 50.0 * MiB, .separate = true};
        DepthTuner t[4], *all[] = {&t[0], &t[1], &t[2], &t[3]};
        uint64_t now = 0;
        Run run;

        for (unsigned i = 0; i < 4; i++)
                tuner_init(&t[i], 4, 32, 256, now);
        (void)drive_all(all, 4, &v, &now, 20 * SEC);
        run = drive_all(all, 4, &v, &now, 60 * SEC);
        for (unsigned i = 0; i < 4; i++) {
                assert_int_equal(t[i].yields, 0);
                assert_true(run.rate[i] >= 0.95 * 50.0 * MiB);
        }
}

static void test_tuner_sixteen_siblings_fill_the_cap(void **state) {
        /* Sixteen volumes behind one 125 MiB/s cap: the cap full, each its share. They cycle
         * through drains and relearns, and where a window of the cycle ends decides a percent:
         * measured on this model (2026-11-28) after the same 30 s, windows of 40, 50, 60, 70,
         * 80, 100, 120 and 180 s gave 93.4-96.2% of the cap with all starting at 32 reads, and
         * 94.9-97.0% with the slow start cut to a share at the first sample; 120 s: 96.2% and
         * 96.9%. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB};
        DepthTuner t[16], *all[16];
        uint64_t now = 0;
        Run run;

        for (unsigned i = 0; i < 16; i++) {
                tuner_init(&t[i], 4, 32, 256, now);
                all[i] = &t[i];
        }
        (void)drive_all(all, 16, &v, &now, 30 * SEC);
        run = drive_all(all, 16, &v, &now, 120 * SEC);
        assert_cap_shared(&run, t, 16, 125.0 * MiB);
}

static void test_tuner_start_share_of_the_siblings(void **state) {
        /* Siblings running as we start: the slow start begins at an equal share of its 32
         * reads, within the bounds; once a read completed, nothing changes any more. */
        DepthTuner t;
        uint64_t now = 0;

        tuner_init(&t, 4, 32, 256, now);
        tuner_start_share(&t, 3);
        assert_int_equal(t.depth, 8);
        assert_int_equal(t.mode, TUNER_SLOW_START);
        tuner_init(&t, 4, 32, 256, now);
        tuner_start_share(&t, 15);
        assert_int_equal(t.depth, 4);
        tuner_init(&t, 4, 32, 256, now);
        tuner_start_share(&t, 0);
        assert_int_equal(t.depth, 32);
        tuner_init(&t, 4, 32, 256, now);
        tuner_complete(&t, MiB, 90 * MSEC, now + 90 * MSEC);
        tuner_start_share(&t, 3);
        assert_int_equal(t.depth, 33);
        /* A device that holds fewer than 32 starts at its maximum, with no slow start; beside
         * siblings, it starts slowly from a share of that. */
        tuner_init(&t, 4, 32, 24, now);
        assert_int_equal(t.mode, TUNER_STARTUP);
        tuner_start_share(&t, 3);
        assert_int_equal(t.depth, 6);
        assert_int_equal(t.mode, TUNER_SLOW_START);
        tuner_fixed(&t, 32, now);
        tuner_start_share(&t, 3);
        assert_int_equal(t.depth, 32);

        /* Siblings seen reading at a sample, in the slow start: a new round from the share of
         * the reads sent from then on (those sent before, at 32, complete without a word),
         * once; it doubles from there while that pays, and back to the share if it does not. */
        tuner_init(&t, 4, 32, 256, now);
        tuner_complete(&t, MiB, 90 * MSEC, now += 90 * MSEC);
        tuner_siblings(&t, 3, 0, 0, now);
        assert_int_equal(t.depth, 8);
        assert_int_equal(t.round_prev_depth, 8);
        assert_int_equal(t.mode, TUNER_SLOW_START);
        for (unsigned i = 0; i < 31; i++)
                tuner_complete(&t, MiB, 90 * MSEC + i * MSEC, now + i * MSEC);
        assert_int_equal(t.depth, 8);
        now += 90 * MSEC;
        for (unsigned i = 0; i < 8; i++)
                tuner_complete(&t, MiB, 90 * MSEC, now += MSEC);
        assert_int_equal(t.depth, 16);
        assert_int_equal(t.mode, TUNER_SLOW_START);
        tuner_siblings(&t, 7, 0, 0, now);
        assert_int_equal(t.depth, 16);

        /* After the cut, the first round's rule judges the reads sent since alone: one that
         * waited behind the old queue does not end the slow start on what was counted before
         * (one read in 4 s, "served" at 0.25 MiB/s). */
        tuner_init(&t, 4, 32, 256, now = 0);
        tuner_complete(&t, MiB, 90 * MSEC, now += 90 * MSEC);
        tuner_siblings(&t, 3, 0, 0, now += 10 * MSEC);
        for (unsigned i = 0; i < 31; i++)
                tuner_complete(&t, MiB, 3950 * MSEC, now + 3900 * MSEC);
        now += 4100 * MSEC;
        tuner_complete(&t, MiB, 200 * MSEC, now);
        assert_int_equal(t.mode, TUNER_SLOW_START);
        assert_int_equal(t.depth, 9);

        /* Seen first outside the slow start: a climb that starts again after a yield is not
         * cut later. */
        tuner_init(&t, 4, 32, 32, now);
        assert_int_equal(t.mode, TUNER_STARTUP);
        tuner_siblings(&t, 3, 0, 0, now);
        assert_int_equal(t.depth, 32);
        (void)tuner_restart_climb(&t, now);
        assert_int_equal(t.mode, TUNER_SLOW_START);
        tuner_siblings(&t, 3, 0, 0, now);
        assert_int_equal(t.depth, 32);
}

static void test_tuner_sixteen_start_with_a_short_queue(void **state) {
        /* Sixteen volumes behind one 125 MiB/s cap, started together: at 32 reads each they
         * queued 4 s of reads in front of every first one (a daemon's mapping waited behind
         * them on the rig). Each started after the ones before it published (tuner i knows i
         * siblings), or all at once (each learns of the others at its first sample): over
         * the first 30 s, measured on this model (2026-11-28), the mean queueing delay was
         * 909 ms before the start shared, 324 and 437 ms after. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB};

        for (unsigned known = 0; known < 2; known++) {
                DepthTuner t[16], *all[16];
                uint64_t now = 0;
                Run run;

                memset(v.backlog, 0, sizeof(v.backlog));
                for (unsigned i = 0; i < 16; i++) {
                        tuner_init(&t[i], 4, 32, 48, now);
                        if (known)
                                tuner_start_share(&t[i], i);
                        all[i] = &t[i];
                }
                run = drive_all(all, 16, &v, &now, 30 * SEC);
                if (getenv("TUNER_TRACE"))
                        fprintf(stderr, "sixteen, %s: queue mean %.0f ms\n",
                                known ? "each knowing the ones before" : "none knowing",
                                run.queue_mean / MSEC);
                assert_true(run.queue_mean <= (known ? 400 : 600) * MSEC);
                assert_true(run.total >= 0.85 * 125.0 * MiB);
                for (unsigned i = 0; i < 16; i++)
                        assert_int_equal(t[i].yields, 0);
        }
}

/* What the database of the served model got beside three siblings. */
typedef struct ServedDb {
        uint64_t behind;    /* the most it fell behind its 2000 reads a second */
        size_t reads, slow; /* its reads in its first 10 s, and those that waited over 5 ms */
        double longest;     /* ... the longest wait, usec */
        double spare;       /* the share of the spare the siblings read in the 10 s after */
        unsigned held;      /* the siblings' reads in flight when it began */
        size_t first;       /* its reads in its first second that waited over 5 ms */
} ServedDb;

/* Three siblings behind one cap of @cap MiB/s, @latency ms, started together at @start on the
 * model's clock (where the relearns' 5 s grid falls), each knowing of the ones before it if
 * @share, as the bench starts them (else each at 32 reads), the cap passing pieces if @pieces
 * (Served.pieces); then a database on a fourth volume from 5 s later on, for 20 s. */
static ServedDb served_database(unsigned latency, double cap, bool share, bool pieces,
                                uint64_t start) {
        Served v = {.latency_usec = (double)(latency * MSEC), .cap = cap * MiB, .pieces = pieces};
        DepthTuner t[3], *all[] = {&t[0], &t[1], &t[2]};
        const double spare = v.cap - 2000 * SERVED_DB_READ;
        uint64_t now = start;
        double before = 0, *w;
        ServedDb r = {0};

        for (unsigned i = 0; i < 3; i++) {
                tuner_init(&t[i], 4, 32, 48, now);
                if (share)
                        tuner_start_share(&t[i], i);
        }
        served_run(&v, all, 3, &now, 5 * SEC);
        for (unsigned i = 0; i < 3; i++)
                before += v.m[i].bytes;
        /* alone, they fill the cap (less the first round trip) */
        assert_true(before >= 0.85 * 5 * v.cap);
        for (unsigned i = 0; i < 3; i++)
                r.held += served_in_flight(&v.m[i]);
        v.db = true;
        v.db_next = now;
        for (unsigned k = 0; k < 2; k++) { /* its first second, then the 9 s after */
                size_t n, slow = 0;

                served_run(&v, all, 3, &now, (k == 0 ? 1 : 9) * SEC);
                n = served_waits(&v, &w);
                while (slow < n && w[n - 1 - slow] > 5 * MSEC)
                        slow++;
                if (k == 0)
                        r.first = slow;
                r.reads += n;
                r.slow += slow;
                r.longest = MAX(r.longest, n > 0 ? w[n - 1] : 0);
        }
        before = v.m[0].bytes + v.m[1].bytes + v.m[2].bytes;
        served_run(&v, all, 3, &now, 10 * SEC);
        r.behind = v.db_behind;
        r.spare = (v.m[0].bytes + v.m[1].bytes + v.m[2].bytes - before) / 10 / spare;
        if (getenv("TUNER_TRACE"))
                fprintf(stderr,
                        "database at %u ms, %.0f MiB/s%s%s, from %.1f s: %u reads of the siblings' "
                        "in flight "
                        "as it began; %zu reads, %zu waited over 5 ms (%zu in its first second), "
                        "the longest %.1f ms, at most %.0f ms behind; then %.0f%% of the spare "
                        "read\n",
                        latency, cap, share ? "" : ", no start share", pieces ? ", pieces" : "",
                        (double)start / 1e6, r.held, r.reads, r.slow, r.first, r.longest / 1e3,
                        (double)r.behind / 1e3, 100 * r.spare);
        free(v.waits);
        return r;
}

static void test_tuner_served_siblings_leave_the_database_its_turns(void **state) {
        /* Three siblings started together behind one 125 MiB/s cap, 90 ms (as ebs-bench
         * --shared-cap starts them), then a database on a fourth volume 5 s later, on the model
         * served read by read. Their reads filled the cap while alone, but not so that theirs
         * queued much: two learned no capacity as known, and their yields grew, a read a
         * sample, until their own reads queued. On a cap that passes a read of each member in
         * turn, the database's waits a turn of every sibling from the moment the cap is full:
         * before, it got about 50 of its 2000 reads a second for 1.5 s (1614 ms behind, 102 of
         * 20000 reads over 5 ms), then caught up at 5000 a second, which the siblings took as
         * a load of 78 MiB/s. Now the growth stops when the database's requests take long
         * (grow_or_hold()): 162 ms behind, 26 reads over 5 ms. (Stopped at the first such
         * sample but only two samples back, 646 ms and 114.) */
        ServedDb r = served_database(90, 125, true, false, 0);

        assert_true(r.behind <= 250 * MSEC);
        assert_true(r.slow <= r.reads / 200);
        assert_true(r.spare >= 0.75);
}

/* The first-touch latencies (ms) of the served model's starts in a burst, and how many start
 * times (0, 0.5 ... 4.5 s): where a start falls against the relearns' 5 s grid decides much. */
static const unsigned burst_latencies[] = {60, 90, 120};
#define BURST_STARTS 10

static void test_tuner_served_start_in_a_burst(void **state) {
        /* Three siblings started together behind one 125 MiB/s cap, on the served model with
         * pieces: a member's reads sent together come back together, as the rig's FUSE export
         * answers them. The slow start's smallest latency is then the whole burst's (360-440
         * ms at 90 ms; on the rig 250-690 ms), no queue shows against it, and the climb went
         * on to 24 reads each; the first relearn waited for a cruise and went back to the
         * depth it found. 10 s after the start, as a mean over the starts, they held 4.0, 2.8
         * and 2.9 times the reads that fill the cap (its knee, cap x latency) at 60, 90 and
         * 120 ms. Now the relearn comes in the climb (one read beside siblings that read),
         * and where the climb's reads took twice the base it finds, a depth beyond what the
         * rate needs at that base is drained at once, and a queue ends the climb after it:
         * 1.2, 1.5 and 1.4 times. The cap stays full: 123.8 MiB/s or more over the 10 s after
         * in each start (before, 124-126). */
        for (size_t l = 0; l < ELEMENTSOF(burst_latencies); l++) {
                double knee = 125.0 * burst_latencies[l] / 1000, held = 0, rates = 0;

                for (unsigned k = 0; k < BURST_STARTS; k++) {
                        Served v = {.latency_usec = (double)(burst_latencies[l] * MSEC),
                                    .cap = 125.0 * MiB,
                                    .pieces = true};
                        DepthTuner t[3], *all[] = {&t[0], &t[1], &t[2]};
                        uint64_t now = k * 500 * MSEC, begin;
                        double bytes = 0, rate;

                        for (unsigned i = 0; i < 3; i++) {
                                tuner_init(&t[i], 4, 32, 48, now);
                                tuner_start_share(&t[i], i);
                        }
                        served_run(&v, all, 3, &now, 10 * SEC);
                        for (unsigned i = 0; i < 3; i++) {
                                held += served_in_flight(&v.m[i]);
                                bytes -= v.m[i].bytes;
                        }
                        begin = now;
                        served_run(&v, all, 3, &now, 10 * SEC);
                        for (unsigned i = 0; i < 3; i++) {
                                bytes += v.m[i].bytes;
                                assert_int_equal(t[i].yields, 0);
                        }
                        /* the cap full in the 10 s after */
                        rate = bytes / ((double)(now - begin) / 1e6);
                        assert_true(rate >= 0.93 * 125.0 * MiB);
                        rates += rate;
                        free(v.waits);
                }
                held /= BURST_STARTS;
                rates /= BURST_STARTS;
                if (getenv("TUNER_TRACE"))
                        fprintf(stderr,
                                "start in a burst, %u ms: %.1f reads held, %.2f x the knee; "
                                "then %.1f MiB/s\n",
                                burst_latencies[l], held, held / knee, rates / MiB);
                assert_true(held <= 2.2 * knee);
                assert_true(rates >= 0.98 * 125.0 * MiB);
        }
}

static void test_tuner_served_burst_then_a_database(void **state) {
        /* The same, and a database on a fourth volume 5 s after the start. Behind the start's
         * base the siblings hid its demand: at 60 ms, in nine of the ten starts, it got 2100
         * of its 20000 reads in the 10 s after it began, and the siblings read 20% of the
         * spare; over all 30 starts 246 of its reads a start waited over 5 ms, and 64% of the
         * spare was read. Now all its reads, 77 of them over 5 ms, 90% of the spare. */
        double slow = 0, spare = 0;

        for (size_t l = 0; l < ELEMENTSOF(burst_latencies); l++)
                for (unsigned k = 0; k < BURST_STARTS; k++) {
                        ServedDb r = served_database(burst_latencies[l], 125, true, true,
                                                     k * 500 * MSEC);

                        assert_int_equal(r.reads, 20000);
                        slow += (double)r.slow;
                        spare += r.spare;
                }
        slow /= ELEMENTSOF(burst_latencies) * BURST_STARTS;
        spare /= ELEMENTSOF(burst_latencies) * BURST_STARTS;
        if (getenv("TUNER_TRACE"))
                fprintf(stderr,
                        "a burst, then a database: %.1f reads over 5 ms, %.0f%% of the spare\n",
                        slow, 100 * spare);
        assert_true(slow <= 100);
        assert_true(spare >= 0.85);
}

/* A tuner in its climb at 24 reads with a relearn due now: someone else there if @doubted,
 * siblings seen reading as it started if @siblings, a relearn measured already if @checked. */
static DepthTuner climb_with_relearn_due(bool doubted, bool siblings, bool checked) {
        DepthTuner t;

        tuner_init(&t, 4, 32, 256, 0);
        t.mode = TUNER_STARTUP;
        t.depth = 24;
        t.base_doubted = doubted;
        t.start_shared = siblings;
        t.base_checked_usec = checked ? 1 : 0;
        t.relearn_due_usec = 0;
        return t;
}

static void test_tuner_relearn_in_the_climb_once(void **state) {
        /* With someone else there, the first relearn due interrupts the climb, and goes back
         * to it after; before the climb's first epoch, at one read where siblings were seen
         * reading as it started (at the minimum otherwise). Not alone, where it waits for the
         * cruise as before, nor after a relearn measured the base once: a later climb (after a
         * probe up that paid) is left to run. */
        DepthTuner t = climb_with_relearn_due(true, true, false);

        assert_true(tuner_update(&t, 0));
        assert_int_equal(t.mode, TUNER_RELEARN);
        assert_int_equal(t.depth, 1);
        assert_int_equal(t.relearn_mode, TUNER_STARTUP);
        assert_int_equal(t.relearn_depth, 24);

        t = climb_with_relearn_due(true, false, false);
        assert_true(tuner_update(&t, 0));
        assert_int_equal(t.mode, TUNER_RELEARN);
        assert_int_equal(t.depth, 4);

        t = climb_with_relearn_due(false, true, false);
        assert_false(tuner_update(&t, 0));
        assert_int_equal(t.mode, TUNER_STARTUP);

        t = climb_with_relearn_due(true, true, true);
        assert_false(tuner_update(&t, 0));
        assert_int_equal(t.mode, TUNER_STARTUP);
        assert_int_equal(t.depth, 24);
}

static void test_tuner_curve_beside_siblings_of_their_own(void **state) {
        /* The rig's curve (faster the deeper it is driven), beside two siblings reading 125
         * MiB/s each on volumes with caps of their own (their reads never queue with ours),
         * started at 0-4.5 s against the relearns' 5 s grid. A first form of end_relearn()
         * drained after every relearn and kept the drain beside any sibling: from the start at
         * 0 s, 278 MiB/s over 30-330 s at 35 reads, a step less at each minute's relearn;
         * relearns in a cruise now leave the depth to the epochs (477 MiB/s at 81 reads, as
         * before). Nor may the relearn in the climb end the climb: drained after it whatever
         * the queue, a start at 2.0-2.5 s got 392-396 MiB/s (fdcf894); its latency at 32
         * reads is 121 ms against 94 at one, far from the twice the base a start's burst
         * shows. */
        for (unsigned k = 0; k < BURST_STARTS; k++) {
                Device v = {.curve = true, .own_cap_siblings = 2, .own_cap_rate = 250.0 * MiB};
                DepthTuner t;
                uint64_t now = k * 500 * MSEC;
                Run run;

                tuner_init(&t, 4, 32, 256, now);
                (void)drive(&t, &v, &now, 30 * SEC);
                run = drive(&t, &v, &now, 300 * SEC);
                if (getenv("TUNER_TRACE"))
                        fprintf(stderr,
                                "curve beside siblings of their own, from %.1f s: %.1f MiB/s, "
                                "depth %.1f\n",
                                k * 0.5, run.rate[0] / MiB, run.depth);
                assert_true(run.rate[0] >= 430.0 * MiB);
        }
}

static void test_tuner_climb_after_a_yield_forgets_the_epochs_before(void **state) {
        /* Three siblings behind one cap; tuner 0 yields to a load on its disk from 30 s to
         * 55 s, and the siblings are gone when it ends. Its climb starts again alone, and the
         * minute's relearn at 60 s falls in it before an epoch of the new climb: a first form
         * of end_relearn() sized a drain by the last epoch before the yield (44 MiB/s, beside
         * siblings reading 83) and kept it: 58 MiB/s over 55-80 s alone on a 125 MiB/s volume.
         * Now 98. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB, .visible = {true}};
        DepthTuner t[3], *all[] = {&t[0], &t[1], &t[2]};
        uint64_t now = 0;
        Run run;

        for (unsigned i = 0; i < 3; i++) {
                tuner_init(&t[i], 4, 32, 256, now);
                tuner_start_share(&t[i], i);
        }
        (void)drive_all(all, 3, &v, &now, 30 * SEC);
        v.foreground = 80.0 * MiB;
        (void)drive_all(all, 3, &v, &now, 25 * SEC);
        assert_true(t[0].yielding);
        v.foreground = 0;
        run = drive_all(all, 1, &v, &now, 25 * SEC);
        assert_true(run.rate[0] >= 85.0 * MiB);
}

static void test_tuner_served_database_starved_shows(void **state) {
        /* The same where the database starves from its first read: at three siblings' turns
         * to its one it reads 25-40 times a second, under 1 MiB/s, too little to yield to, and
         * none did, ever (19.5 s behind after 20 s in each case below). Its requests took long
         * in every sample: our depth halved, and what it wants shows (hidden_demand()). */
        static const struct {
                unsigned latency;
                double cap;
                bool share;
        } cases[] = {{90, 125, false}, {120, 150, true}, {50, 100, true}};

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                ServedDb r =
                        served_database(cases[i].latency, cases[i].cap, cases[i].share, false, 0);

                assert_true(r.behind <= 1500 * MSEC);
                assert_true(r.slow <= r.reads / 100);
                assert_true(r.spare >= 0.75);
        }
}

/* A 125 MiB/s volume at 90 ms, and a disk beside it whose few requests (64 KiB/s) take 10 ms
 * each, on their own. */
static Device slow_neighbour(void) {
        return (Device){.latency_usec = 90 * MSEC,
                        .cap = 125.0 * MiB,
                        .neighbours = true,
                        .stalls = true,
                        .foreground = 64.0 * 1024,
                        .their_wait = 10 * MSEC};
}

static void test_tuner_slow_neighbour_costs_little(void **state) {
        /* A disk beside ours whose few requests take 10 ms each, on its own (a cold HDD-class
         * volume, say): they look like a load our reads hide, once, then less and less often.
         * Over two minutes: at least 95% of what we read without it, three tries at most. */
        Device v = slow_neighbour();
        Device quiet = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB};
        DepthTuner t, alone;
        uint64_t now = 0, now_alone = 0;
        Run run, ref;

        tuner_init(&t, 4, 32, 256, now);
        tuner_init(&alone, 4, 32, 256, now_alone);
        run = drive(&t, &v, &now, 120 * SEC);
        ref = drive(&alone, &quiet, &now_alone, 120 * SEC);
        if (getenv("TUNER_TRACE"))
                fprintf(stderr, "slow neighbour: %.1f of %.1f MiB/s, %u tries\n", run.rate[0] / MiB,
                        ref.rate[0] / MiB, t.hidden_probes);
        assert_true(t.hidden_probes >= 1);
        assert_true(t.hidden_probes <= 3);
        assert_int_equal(t.yields, 0);
        assert_true(run.rate[0] >= 0.95 * ref.rate[0]);
}

static void test_tuner_hidden_probe_keeps_out_of_the_way(void **state) {
        /* A probe for a hidden load and the rest of the climb: a relearn that falls due while
         * the probe holds the depth down waits for it (begun at the halved depth, it went back
         * to that depth after, and cruised there); and the waits seen while we yielded start
         * no probe once the yield is over (the slow start after it was cut at once). */
        Device v = slow_neighbour();
        DepthTuner t;
        uint64_t now = 0;
        unsigned before, probes;

        tuner_init(&t, 4, 32, 256, now);
        while (t.hidden_usec == 0 && now < 10 * SEC)
                (void)drive(&t, &v, &now, SAMPLE);
        assert_true(t.hidden_usec > 0);
        before = t.hidden_depth;
        t.relearn_due_usec = now; /* due now, in the middle of the probe */
        (void)drive(&t, &v, &now, TUNER_HIDDEN_USEC / 2);
        assert_true(t.mode != TUNER_RELEARN);
        while (t.mode != TUNER_RELEARN && now < 15 * SEC)
                (void)drive(&t, &v, &now, STEP);
        assert_int_equal(t.mode, TUNER_RELEARN);
        assert_true(t.relearn_depth >= before);

        /* a load that costs enough, long enough for a probe to be allowed again */
        v.foreground = 40.0 * MiB;
        while ((!t.yielding || now < t.hidden_next_usec + SEC) && now < 120 * SEC)
                (void)drive(&t, &v, &now, SAMPLE);
        assert_true(t.yielding);
        v.foreground = 64.0 * 1024;
        while (t.yielding && now < 150 * SEC)
                (void)drive(&t, &v, &now, SAMPLE);
        assert_false(t.yielding);
        probes = t.hidden_probes;
        (void)drive(&t, &v, &now, (TUNER_HIDDEN_SAMPLES - 1) * SAMPLE);
        assert_int_equal(t.hidden_probes, probes);
}

static void test_tuner_siblings_with_fast_caps_start_fast(void **state) {
        /* Four volumes with caps of their own, 1000 MiB/s each (a knee of 90 reads): the
         * share they start from is theirs alone, and each climbs from it as it would alone.
         * Over the first 10 s on this model: 94% of the caps before the start shared, 93%
         * after. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 1000.0 * MiB, .separate = true};
        DepthTuner t[4], *all[] = {&t[0], &t[1], &t[2], &t[3]};
        uint64_t now = 0;
        Run run;

        for (unsigned i = 0; i < 4; i++) {
                tuner_init(&t[i], 4, 32, 256, now);
                tuner_start_share(&t[i], i);
        }
        run = drive_all(all, 4, &v, &now, 10 * SEC);
        for (unsigned i = 0; i < 4; i++)
                assert_true(run.rate[i] >= 0.9 * 1000.0 * MiB);
}

static void test_tuner_small_cut_none_known(void **state) {
        /* A yield with no capacity known (our reads never queued: here the depth is held
         * under the knee; on the rig, sixteen hydrators whose bases were learned behind their
         * shared queue), for a cut of about 7%: a reader of 4 MiB/s beside ours. It starts from
         * the depth the pace needs, not again from TUNER_YIELD_START reads (on the rig, cuts
         * of 3-5% took sixteen daemons down to two reads each). The cut is a few percent here,
         * within one read of the depth: what is checked is the depth it starts from and the
         * rate kept, not the cut (the paced yield's tests check that). */
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB};
        DepthTuner t;
        uint64_t now = 0;
        unsigned before, yield_depth;
        double cut;
        Run alone, run;

        tuner_init(&t, 4, 8, 8, now);
        alone = drive(&t, &v, &now, 20 * SEC);
        before = t.depth;
        v.other_cost = 4.0 * MiB;
        for (int i = 0; i < 100 && !t.yielding; i++)
                (void)drive(&t, &v, &now, SAMPLE);
        assert_true(t.yielding);
        assert_false(t.cap_known);
        assert_true(t.cut > TUNER_YIELD_MIN_CUT && t.cut < 0.1);
        assert_true(t.depth * 4 >= before * 3);
        cut = t.cut;
        yield_depth = t.depth;
        run = drive(&t, &v, &now, 10 * SEC);
        if (getenv("TUNER_TRACE"))
                fprintf(stderr, "none known, a cut of %.0f%%: depth %u of %u, %.1f of %.1f MiB/s\n",
                        100 * cut, yield_depth, before, run.rate[0] / MiB, alone.rate[0] / MiB);
        assert_true(run.rate[0] >= (1.0 - 1.5 * cut) * alone.rate[0]);
}

static void test_tuner_gives_way_to_a_greedy_reader(void **state) {
        /* Behind the same cap as a reader that starts keeping 32 reads in flight whatever
         * happens (the AWS fio command on another volume). Its queue alone cannot tell us: a
         * queue that never drains looks like the volume's own latency to any delay-based
         * scavenger (LEDBAT's latecomer problem). Its volume's counters can (neighbours.h):
         * it takes nearly all of the cap, so we give way down to the floor. */
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB};
        DepthTuner t, fio, *both[] = {&t, &fio};
        uint64_t now = 0;
        double ours = 0, total = 0;
        Run run;

        tuner_init(&t, 4, 32, 256, now);
        (void)drive(&t, &v, &now, 20 * SEC);
        tuner_fixed(&fio, 32, now);
        for (unsigned i = 0; i < 600; i++) { /* 60 s in samples of 100 ms; the last 10 count */
                double rate[2], latency[2], queue;

                device_step(&v, both, 2, rate, latency, &queue);
                (void)tuner_sample(&t, 0, 0, rate[1], now);
                run = drive_all(&both[0], 1, &v, &now, SAMPLE);
                if (i >= 500) {
                        ours += run.rate[0];
                        total += rate[1] + run.rate[0];
                }
        }
        assert_true(t.yielding);
        assert_true(ours <= 0.25 * total);
}

/* ---- mechanics ---- */

static void test_tuner_stays_within_bounds(void **state) {
        Device v = {.latency_usec = 90 * MSEC}; /* no cap at all: every extra read pays */
        DepthTuner t;
        uint64_t now = 0;

        tuner_init(&t, 4, 16, 40, now);
        (void)drive(&t, &v, &now, 20 * SEC);
        assert_int_equal(t.depth, 40);

        v.latency_usec = 1 * MSEC; /* warm and capped: one read in flight would do */
        v.cap = 100.0 * MiB;
        (void)drive(&t, &v, &now, 90 * SEC);
        assert_in_range(t.depth, 4, 5); /* the floor holds */

        tuner_init(&t, 4, 1000, 40, now);
        assert_int_equal(t.depth, 40);
        tuner_init(&t, 4, 1, 40, now);
        assert_int_equal(t.depth, 4);
}

static void test_tuner_tainted_epochs_decide_nothing(void **state) {
        Device v = {.latency_usec = 90 * MSEC};
        DepthTuner t;
        uint64_t now = 0;

        tuner_init(&t, 4, 16, 256, now);
        /* Rate-limited all along: the owner taints every epoch, nothing is learned. */
        for (int i = 0; i < 1000; i++) {
                uint64_t end = now + 20 * MSEC;

                tuner_taint(&t, now);
                (void)drive(&t, &v, &now, end - now);
                assert_true(t.tainted);
        }
        assert_int_equal(t.depth, 16);
        assert_int_equal(t.changes, 0);
        assert_int_equal(tuner_base_latency(&t), 0);
}

static void test_tuner_fixed_never_changes(void **state) {
        Device v = {.latency_usec = 90 * MSEC, .cap = 125.0 * MiB};
        DepthTuner t;
        uint64_t now = 0;

        tuner_fixed(&t, 32, now);
        (void)drive(&t, &v, &now, 90 * SEC);
        assert_int_equal(t.depth, 32);
        assert_int_equal(t.changes, 0);
}

static void test_tuner_waits_for_a_full_window(void **state) {
        DepthTuner t;
        uint64_t now = 0;

        tuner_init(&t, 4, 16, 256, now);
        t.mode = TUNER_STARTUP; /* the epochs' climb, without the slow start before it */
        /* Completions inside the first mean latency belong to the previous depth: not counted. */
        tuner_complete(&t, MiB, 50 * MSEC, 10 * MSEC);
        assert_int_equal(t.completions, 0);
        /* A window needs its time and a queue's worth of completions. */
        for (unsigned i = 0; i < 15; i++)
                tuner_complete(&t, MiB, 50 * MSEC, 100 * MSEC);
        assert_false(tuner_update(&t, 10 * SEC));
        assert_int_equal(t.depth, 16);
        tuner_complete(&t, MiB, 50 * MSEC, 100 * MSEC);
        assert_false(tuner_update(&t, 100 * MSEC)); /* enough reads, too soon */
        assert_true(tuner_update(&t, 10 * SEC));
        assert_int_equal(t.depth, 24); /* the first epoch only sets the base, then x 1.5 */
        assert_int_equal(tuner_base_latency(&t), 50 * MSEC);
}

static void test_tuner_steps_at_least_one(void **state) {
        Device v = {.latency_usec = 90 * MSEC};
        DepthTuner t;
        uint64_t now = 0;

        tuner_init(&t, 1, 1, 8, now);
        (void)drive(&t, &v, &now, 10 * SEC);
        assert_int_equal(t.depth, 8); /* 1 x 3/2 rounds to 1: it must still grow */
}

static void test_tuner_base_history_ages_out(void **state) {
        DepthTuner t;
        uint64_t now = 0;

        tuner_init(&t, 4, 4, 4, now);
        /* One epoch at 50 ms, then only 80 ms: the 50 ms minimum counts for one minute. */
        for (unsigned e = 0; e < 200; e++) {
                uint64_t lat = e == 0 ? 50 * MSEC : 80 * MSEC;

                now += 200 * MSEC;
                for (unsigned i = 0; i < 8; i++)
                        tuner_complete(&t, MiB, lat, now);
                now += 400 * MSEC;
                (void)tuner_update(&t, now);
                if (now < TUNER_BASE_BUCKETS * TUNER_BASE_BUCKET_USEC - TUNER_BASE_BUCKET_USEC)
                        assert_int_equal(tuner_base_latency(&t), 50 * MSEC);
        }
        assert_int_equal(tuner_base_latency(&t), 80 * MSEC);
        assert_int_equal(tuner_target(90 * MSEC), 11250);
        assert_int_equal(tuner_target(400 * MSEC), 25 * MSEC);
        assert_int_equal(tuner_target(1 * MSEC), 1 * MSEC);
        assert_int_equal(tuner_yield_target(90 * MSEC), 5 * MSEC);
        assert_int_equal(tuner_yield_target(48 * MSEC), 3 * MSEC);
        assert_int_equal(tuner_yield_target(1 * MSEC), 1 * MSEC);
        assert_string_equal(tuner_mode_to_string(TUNER_YIELD), "yield");
        assert_string_equal(tuner_mode_to_string((TunerMode)42), "?");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_tuner_rig_curve_beats_fio),
                cmocka_unit_test(test_tuner_fast_beats_fixed_32),
                cmocka_unit_test(test_tuner_gp3_holds_the_queue_short),
                cmocka_unit_test(test_tuner_small_cap_no_long_queue),
                cmocka_unit_test(test_tuner_no_yield_under_a_mib),
                cmocka_unit_test(test_tuner_first_round_in_a_burst),
                cmocka_unit_test(test_tuner_restarted_climb_forgets_the_old_round),
                cmocka_unit_test(test_tuner_relearns_an_inflated_base),
                cmocka_unit_test(test_tuner_short_relearn_of_our_own_queue),
                cmocka_unit_test(test_tuner_shared_relearn_sees_through_a_wrong_base),
                cmocka_unit_test(test_tuner_relearn_among_warm_blocks_ends),
                cmocka_unit_test(test_tuner_warm_blocks_do_not_set_the_base),
                cmocka_unit_test(test_tuner_follows_a_changing_volume),
                cmocka_unit_test(test_tuner_tolerates_jitter),
                cmocka_unit_test(test_tuner_yields_at_once_and_comes_back),
                cmocka_unit_test(test_tuner_small_loads_cost_nothing),
                cmocka_unit_test(test_tuner_small_neighbour_from_the_start),
                cmocka_unit_test(test_tuner_queue_test_wants_the_queue_gone),
                cmocka_unit_test(test_tuner_yields_in_proportion),
                cmocka_unit_test(test_tuner_capacity_learned_low_recovers),
                cmocka_unit_test(test_tuner_yields_from_the_start),
                cmocka_unit_test(test_tuner_yield_grows_on_completions),
                cmocka_unit_test(test_tuner_slow_second_is_not_the_capacity),
                cmocka_unit_test(test_tuner_first_second_is_not_a_window),
                cmocka_unit_test(test_tuner_fixed_depth_yields_too),
                cmocka_unit_test(test_tuner_shared_cap_siblings_share),
                cmocka_unit_test(test_tuner_siblings_stop_their_stalls),
                cmocka_unit_test(test_tuner_stalls_of_a_deep_workload),
                cmocka_unit_test(test_tuner_stalls_not_ours),
                cmocka_unit_test(test_tuner_stalls_ours_in_part),
                cmocka_unit_test(test_tuner_one_stall_is_not_two),
                cmocka_unit_test(test_tuner_stalls_halved_once),
                cmocka_unit_test(test_tuner_stalls_gone_then_left_alone),
                cmocka_unit_test(test_tuner_stalls_that_come_and_go),
                cmocka_unit_test(test_tuner_late_siblings_get_their_share),
                cmocka_unit_test(test_tuner_first_relearn_waits_while_alone),
                cmocka_unit_test(test_tuner_first_relearn_soon_with_others),
                cmocka_unit_test(test_tuner_sibling_after_a_lone_start),
                cmocka_unit_test(test_tuner_siblings_with_caps_of_their_own),
                cmocka_unit_test(test_tuner_sixteen_siblings_fill_the_cap),
                cmocka_unit_test(test_tuner_start_share_of_the_siblings),
                cmocka_unit_test(test_tuner_sixteen_start_with_a_short_queue),
                cmocka_unit_test(test_tuner_siblings_with_fast_caps_start_fast),
                cmocka_unit_test(test_tuner_served_siblings_leave_the_database_its_turns),
                cmocka_unit_test(test_tuner_served_database_starved_shows),
                cmocka_unit_test(test_tuner_served_start_in_a_burst),
                cmocka_unit_test(test_tuner_served_burst_then_a_database),
                cmocka_unit_test(test_tuner_relearn_in_the_climb_once),
                cmocka_unit_test(test_tuner_curve_beside_siblings_of_their_own),
                cmocka_unit_test(test_tuner_climb_after_a_yield_forgets_the_epochs_before),
                cmocka_unit_test(test_tuner_slow_neighbour_costs_little),
                cmocka_unit_test(test_tuner_hidden_probe_keeps_out_of_the_way),
                cmocka_unit_test(test_tuner_small_cut_none_known),
                cmocka_unit_test(test_tuner_gives_way_to_a_greedy_reader),
                cmocka_unit_test(test_tuner_stays_within_bounds),
                cmocka_unit_test(test_tuner_tainted_epochs_decide_nothing),
                cmocka_unit_test(test_tuner_fixed_never_changes),
                cmocka_unit_test(test_tuner_waits_for_a_full_window),
                cmocka_unit_test(test_tuner_steps_at_least_one),
                cmocka_unit_test(test_tuner_base_history_ages_out),
        };

        /* TUNER_ONLY=pattern (cmocka's: * and ?) runs those alone, for TUNER_TRACE */
        if (getenv("TUNER_ONLY"))
                cmocka_set_test_filter(getenv("TUNER_ONLY"));
        return cmocka_run_group_tests(tests, NULL, NULL);
}
