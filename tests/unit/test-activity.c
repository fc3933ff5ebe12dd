/* SPDX-License-Identifier: MIT */
/*
 * Telling other I/O on the device from ours: the disk's counters against our completed reads.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "activity.h"

#define MiB (UINT64_C(1) << 20)
#define MSEC UINT64_C(1000)

static void test_activity_parse(void **state) {
        DiskStat st;

        /* Linux 5.5+: 17 fields. */
        assert_int_equal(disk_stat_parse("   25251        0 27848219  3299453    14107     2170 "
                                         " 3162831    15456        3   110092  3318594        4 "
                                         "       0  4712348        0    12399     3684\n",
                                         &st),
                         0);
        assert_int_equal(st.read_ios, 25251);
        assert_int_equal(st.read_sectors, 27848219);
        assert_int_equal(st.read_ticks, 3299453);
        assert_int_equal(st.write_ios, 14107);
        assert_int_equal(st.write_ticks, 15456);
        assert_int_equal(st.write_sectors, 3162831);
        assert_int_equal(st.in_flight, 3);
        assert_int_equal(st.discard_ios, 4);
        assert_int_equal(st.flush_ios, 12399);
        /* Before 4.18: 11 fields, no discards or flushes. */
        assert_int_equal(disk_stat_parse("1 2 3 4 5 6 7 8 9 10 11", &st), 0);
        assert_int_equal(st.read_sectors, 3);
        assert_int_equal(st.discard_ios, 0);
        assert_int_equal(st.flush_ios, 0);
        assert_int_equal(disk_stat_parse("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15", &st), 0);
        assert_int_equal(st.flush_ios, 0);
        assert_int_equal(disk_stat_parse("", &st), -EBADMSG);
        assert_int_equal(disk_stat_parse("1 2 3", &st), -EBADMSG);
        assert_int_equal(disk_stat_parse("1 2 3 4 5 6 7 8 9 10 x", &st), -EBADMSG);
        assert_int_equal(disk_stat_parse("1 2 3 4 5 6 7 8 9 10 11 12", &st), -EBADMSG);
}

typedef struct Disk {
        DiskStat st;       /* in_flight: the requests it holds, ours and theirs */
        ActivityOurs ours; /* reads: ours in flight, of 1 MiB, each 1 or 2 requests */
        unsigned split;    /* how many it makes of one of ours, in fact (0: 2) */
        uint64_t now;
        Activity a;
} Disk;

/* One 100 ms sample: @ours_read and @theirs_read bytes read (theirs in 16 KiB requests),
 * @their_writes 4 KiB writes; the figures over the last second in @f. */
static void step(Disk *d, uint64_t ours_read, uint64_t theirs_read, uint64_t their_writes,
                 ActivityFigures *f) {
        unsigned split = d->split ? d->split : 2;

        d->st.read_sectors += (ours_read + theirs_read) / 512;
        d->st.read_ios += ours_read / (MiB / split) + theirs_read / 16384;
        d->st.write_ios += their_writes;
        d->st.write_sectors += their_writes * 8;
        d->ours.bytes += ours_read;
        d->now += ACTIVITY_SAMPLE_USEC;
        activity_sample(&d->a, &d->st, &d->ours, NULL, d->now, f);
}

/* @n requests of ours in flight, halves of 1 MiB reads (a buffer of pages that are not
 * contiguous, on a device of 128 segments), all held by the disk; a read could be one request
 * (its buffer in a huge page): the disk's counts tell. */
static Disk with_reads_in_flight(uint64_t n) {
        return (Disk){
                .st = {.in_flight = n},
                .ours = {.reads = n / 2, .read_bytes = MiB, .requests_min = 1, .requests_max = 2}};
}

static bool close_to(double x, double want) {
        return x >= 0.99 * want && x <= 1.01 * want;
}

static void test_activity_ours_alone_is_quiet(void **state) {
        Disk d = with_reads_in_flight(24);
        ActivityFigures f;

        step(&d, 0, 0, 0, &f); /* the first sample only primes */
        assert_true(f.ours == 0 && f.reads == 0);
        for (int i = 0; i < 100; i++) {
                step(&d, 12 * MiB, 0, 0, &f);
                assert_true(f.reads == 0 && f.writes == 0 && f.write_ops == 0);
                assert_true(activity_cost(&f) == 0);
        }
        assert_true(close_to(f.ours, 120.0 * MiB));
}

static void test_activity_sees_their_reads(void **state) {
        Disk d = with_reads_in_flight(24);
        ActivityFigures f;

        step(&d, 0, 0, 0, &f);
        for (int i = 0; i < 20; i++)
                step(&d, 12 * MiB, 0, 0, &f);
        /* 2000 reads of 16 KiB a second: 3.2 MB in each 100 ms. A sample later (one sample's
         * level alone may be ours counted early: activity.c)... */
        step(&d, 12 * MiB, 200 * 16384, 0, &f);
        step(&d, 12 * MiB, 200 * 16384, 0, &f);
        assert_true(f.reads > 0.2 * MiB);
        /* ... and in full once they have read for a second. */
        for (int i = 0; i < ACTIVITY_RATE_SAMPLES; i++)
                step(&d, 6 * MiB, 200 * 16384, 0, &f);
        assert_true(f.reads > 0.98 * 2000 * 16384 - ACTIVITY_READ_SLACK &&
                    f.reads < 1.01 * 2000 * 16384);
        assert_true(close_to(f.ours, 60.0 * MiB));
        /* They stop: gone from the figures a second later. */
        for (int i = 0; i < ACTIVITY_RATE_SAMPLES; i++)
                step(&d, 6 * MiB, 0, 0, &f);
        assert_true(f.reads == 0);
}

static void test_activity_one_sample_is_no_reader(void **state) {
        /* A slow reaper (valgrind, a loaded machine): in one sample the disk counted 9 MiB of
         * ours that we reap only in the next, and the requests it holds cannot tell (they are
         * new reads of ours by then). The level spikes for one sample: no reader. Nor does the
         * opposite, ours counted before the disk's, once the dip starts the window. */
        Disk d = with_reads_in_flight(24);
        ActivityFigures f;

        step(&d, 0, 0, 0, &f);
        for (int i = 0; i < 40; i++) {
                if (i % 13 == 5) { /* counted by the disk first */
                        d.st.read_sectors += 9 * MiB / 512;
                        d.st.read_ios += 18;
                        step(&d, 12 * MiB, 0, 0, &f);
                        assert_true(f.reads == 0);
                        d.ours.bytes += 9 * MiB; /* reaped at last */
                        step(&d, 12 * MiB, 0, 0, &f);
                } else if (i % 13 == 9) { /* by us first */
                        d.ours.bytes += 9 * MiB;
                        step(&d, 12 * MiB, 0, 0, &f);
                        assert_true(f.reads == 0);
                        d.st.read_sectors += 9 * MiB / 512; /* the disk's count at last */
                        d.st.read_ios += 18;
                        step(&d, 12 * MiB, 0, 0, &f);
                } else
                        step(&d, 12 * MiB, 0, 0, &f);
                assert_true(f.reads == 0);
        }
}

static void test_activity_split_reads_are_noise(void **state) {
        /* Our reads of 1 MiB are two requests each: the disk counts each half as it
         * completes, and the halves of one read may complete far apart behind a cap. What it
         * no longer holds of ours it counted: not someone else's. */
        Disk d = with_reads_in_flight(32);
        ActivityFigures f;

        step(&d, 0, 0, 0, &f);
        for (int i = 0; i < 200; i++) {
                uint64_t halves = (uint64_t)(i * 7 % 17); /* 0 to 16 halves done early */

                d.st.read_sectors += halves * 512 * 1024 / 512;
                d.st.in_flight -= halves;
                step(&d, 12 * MiB, 0, 0, &f);
                assert_true(f.reads == 0);
                d.st.read_sectors -= halves * 512 * 1024 / 512;
                d.st.in_flight += halves;
        }
}

static void test_activity_whole_reads(void **state) {
        /* The same device, but the reads' buffer is in a huge page: one request each. A deep
         * queue of them (the slow start), a bunch completing, then a shallow one: taking each
         * for two requests, half the deep queue would look counted early, and 20 MiB nobody
         * read would show when the depth fell. */
        Disk d = with_reads_in_flight(96);
        ActivityFigures f;

        d.split = 1;
        d.st.in_flight = 48;
        step(&d, 0, 0, 0, &f);
        for (int i = 0; i < 9; i++) {
                step(&d, 0, 0, 0, &f);
                assert_true(f.reads == 0);
        }
        step(&d, 32 * MiB, 0, 0, &f); /* a bunch, read again at once */
        assert_true(f.reads == 0);
        for (int i = 0; i < 30; i++) {
                d.ours.reads = 5;
                d.st.in_flight = 5;
                step(&d, 5 * MiB, 0, 0, &f);
                assert_true(f.reads == 0);
        }
        /* The split it learnt, for the parts of a workload. */
        d.st.in_flight++;
        for (int i = 0; i < ACTIVITY_RATE_SAMPLES; i++)
                step(&d, 5 * MiB, 2 * MiB, 0, &f);
        assert_true(f.reads > 20.0 * MiB - 2 * ACTIVITY_READ_SLACK && f.reads <= 20.0 * MiB);
}

static void test_activity_split_not_misled(void **state) {
        /* Whole reads, and someone's 4 KiB reads beside them, as many as ours: the disk counts
         * twice the requests of our reads, in hardly more bytes. Not a split of two (which
         * would make half the deep queue look counted early, and someone's reads appear when
         * the depth falls): the requests held are one per read. */
        Disk d = with_reads_in_flight(64);
        ActivityFigures f;

        d.split = 1;
        d.st.in_flight = 32;
        step(&d, 0, 0, 0, &f);
        for (int i = 0; i < 30; i++) {
                d.st.read_ios += 8; /* theirs: 8 x 4 KiB */
                d.st.read_sectors += 8 * 4096 / 512;
                step(&d, 8 * MiB, 0, 0, &f);
                assert_true(f.reads < 0.4 * MiB);
        }
        d.ours.reads = 4;
        d.st.in_flight = 4;
        for (int i = 0; i < 20; i++) {
                step(&d, 4 * MiB, 0, 0, &f);
                assert_true(f.reads < 0.4 * MiB);
        }
}

static void test_activity_split_changes(void **state) {
        /* The buffer moves into a huge page halfway (khugepaged): two requests a read, then
         * one. A few samples tell, and the change is no one's reads. */
        Disk d = with_reads_in_flight(32);
        ActivityFigures f;

        step(&d, 0, 0, 0, &f);
        for (int i = 0; i < 20; i++) {
                step(&d, 8 * MiB, 0, 0, &f);
                assert_true(f.reads == 0);
        }
        d.split = 1;
        d.st.in_flight = 16;
        for (int i = 0; i < 20; i++) {
                if (i == 10) { /* and the depth falls */
                        d.ours.reads = 4;
                        d.st.in_flight = 4;
                }
                step(&d, 8 * MiB, 0, 0, &f);
                assert_true(f.reads == 0);
        }
}

static void test_activity_sibling_in_flight(void **state) {
        /* A sibling counts its reads when its loop runs, a moment after the disk: what it
         * says it has in flight and the disk no longer holds, it read. A workload on its disk
         * still shows, whatever the sibling does. */
        Disk d = with_reads_in_flight(16);
        ActivityFigures f;

        step(&d, 0, 0, 0, &f);
        for (int i = 0; i <= 102; i++) { /* the last one with nothing done early */
                uint64_t done = (uint64_t)(i * 5 % 17);

                d.st.read_sectors += done * 512 * 1024 / 512;
                d.st.in_flight -= done;
                step(&d, 20 * MiB, 0, 0, &f);
                assert_true(f.reads == 0);
                d.st.read_sectors -= done * 512 * 1024 / 512;
                d.st.in_flight += done;
        }
        d.st.in_flight++; /* the workload's one read in flight */
        for (int i = 0; i < ACTIVITY_RATE_SAMPLES; i++)
                step(&d, 20 * MiB, 4 * MiB, 0, &f);
        assert_true(f.reads > 40.0 * MiB - 2 * ACTIVITY_READ_SLACK && f.reads <= 40.0 * MiB);
}

static void test_activity_sees_any_write(void **state) {
        Disk d = {0};
        ActivityFigures f;

        step(&d, 0, 0, 0, &f);
        step(&d, MiB, 0, 0, &f);
        step(&d, MiB, 0, 1, &f); /* one journal commit */
        assert_true(f.writes > 0 && f.write_ops > 0);
        assert_true(activity_cost(&f) > 0);
        d.st.flush_ios++;
        step(&d, MiB, 0, 0, &f);
        d.st.discard_ios++;
        step(&d, MiB, 0, 0, &f);
        /* over the last second: a write, a flush and a discard in 0.4 s, counted over a whole
         * second (the window is not full yet: a burst in it is not a rate) */
        assert_true(close_to(f.write_ops, 3));
        assert_true(close_to(f.writes, 4096));
        for (int i = 0; i < ACTIVITY_RATE_SAMPLES; i++)
                step(&d, MiB, 0, 0, &f);
        assert_true(f.writes == 0 && f.write_ops == 0);
}

/* Reads forgotten (a mapping's): gone from the figures at once and after, as if never read;
 * writes of the same second stay; reads after it count. */
static void test_activity_forget_reads(void **state) {
        Disk d = with_reads_in_flight(24);
        ActivityFigures f;

        step(&d, 0, 0, 0, &f);
        for (int i = 0; i < 20; i++)
                step(&d, 12 * MiB, 0, 0, &f);
        for (int i = 0; i < 5; i++)
                step(&d, 12 * MiB, 200 * 16384, 10, &f);
        assert_true(f.reads > MiB);
        activity_forget_reads(&d.a);
        for (int i = 0; i < ACTIVITY_RATE_SAMPLES - 5; i++) {
                step(&d, 12 * MiB, 0, 0, &f);
                assert_true(f.reads == 0);
                assert_true(close_to(f.write_ops, 50) && close_to(f.writes, 50.0 * 4096));
        }
        /* the same reads again count as before */
        for (int i = 0; i < 2 * ACTIVITY_RATE_SAMPLES; i++)
                step(&d, 12 * MiB, 200 * 16384, 0, &f);
        assert_true(f.reads > 0.98 * 2000 * 16384 - ACTIVITY_READ_SLACK &&
                    f.reads < 1.01 * 2000 * 16384);
}

/* How long a request has waited at least: from the first sample that saw it in flight with
 * none done since; any completion, or none in flight, starts it again. */
static void test_activity_waited(void **state) {
        Disk d = {0};
        ActivityFigures f;

        step(&d, 0, 0, 0, &f);
        assert_true(f.waited_usec == 0);
        /* a workload reading 16 KiB requests, one in flight at each look, all done fast */
        d.st.in_flight = 1;
        for (int i = 0; i < 5; i++) {
                step(&d, 0, 200 * 16384, 0, &f);
                assert_true(f.waited_usec == 0);
        }
        /* one that stops coming back: the sample that sees it is where it began, at the
         * latest (it may be new: nothing was in flight... here a completion came with it) */
        step(&d, 0, 0, 0, &f);
        assert_int_equal(f.waited_usec, ACTIVITY_SAMPLE_USEC);
        step(&d, 0, 0, 0, &f);
        assert_int_equal(f.waited_usec, 2 * ACTIVITY_SAMPLE_USEC);
        step(&d, 0, 0, 0, &f);
        assert_int_equal(f.waited_usec, 3 * ACTIVITY_SAMPLE_USEC);
        /* it completes, and the next one is in flight: from now */
        step(&d, 0, 16384, 0, &f);
        assert_true(f.waited_usec == 0);
        step(&d, 0, 0, 0, &f);
        assert_int_equal(f.waited_usec, ACTIVITY_SAMPLE_USEC);
        /* a write done counts as much as a read */
        step(&d, 0, 0, 1, &f);
        assert_true(f.waited_usec == 0);
        /* nothing in flight: nothing waits, and one that comes after is new */
        d.st.in_flight = 0;
        step(&d, 0, 16384, 0, &f);
        assert_true(f.waited_usec == 0);
        step(&d, 0, 0, 0, &f);
        d.st.in_flight = 1;
        step(&d, 0, 0, 0, &f);
        assert_true(f.waited_usec == 0);
        step(&d, 0, 0, 0, &f);
        assert_int_equal(f.waited_usec, ACTIVITY_SAMPLE_USEC);
        /* a flush done, or a discard, too */
        d.st.flush_ios++;
        step(&d, 0, 0, 0, &f);
        assert_true(f.waited_usec == 0);
        step(&d, 0, 0, 0, &f);
        d.st.discard_ios++;
        step(&d, 0, 0, 0, &f);
        assert_true(f.waited_usec == 0);
        /* another device under the name, its counters from 0: its request in flight is new */
        step(&d, 0, 0, 0, &f);
        step(&d, 0, 0, 0, &f);
        assert_int_equal(f.waited_usec, 2 * ACTIVITY_SAMPLE_USEC);
        d.st = (DiskStat){.in_flight = 1};
        step(&d, 0, 0, 0, &f);
        assert_true(f.waited_usec == 0);
        step(&d, 0, 0, 0, &f);
        assert_int_equal(f.waited_usec, ACTIVITY_SAMPLE_USEC);
}

/* What the requests done in a sample took on average, from the disk's ticks: a workload with
 * eight reads in flight, each 300 ms, completes some in every sample and shows no wait. */
static void test_activity_latency(void **state) {
        Disk d = {0};
        ActivityFigures f;

        step(&d, 0, 0, 0, &f);
        assert_true(f.latency_usec == 0);
        d.st.in_flight = 8;
        for (int i = 0; i < 10; i++) {
                d.st.read_ticks += 3 * 300;
                step(&d, 0, 3 * 16384, 0, &f);
                assert_true(f.waited_usec == 0);
                assert_int_equal(f.latency_usec, 300 * USEC_PER_MSEC);
        }
        /* writes count too: three reads of 10 ms and a write of 50, 20 ms each */
        d.st.read_ticks += 30;
        d.st.write_ticks += 50;
        step(&d, 0, 3 * 16384, 1, &f);
        assert_int_equal(f.latency_usec, 20 * USEC_PER_MSEC);
        /* none done: none measured */
        step(&d, 0, 0, 0, &f);
        assert_true(f.latency_usec == 0);
        /* the kernel's 32-bit count of ms wraps: two reads of 30 ms across it */
        d.st.read_ticks = UINT32_MAX - 9;
        step(&d, 0, 16384, 0, &f);
        d.st.read_ticks = 50;
        step(&d, 0, 2 * 16384, 0, &f);
        assert_int_equal(f.latency_usec, 30 * USEC_PER_MSEC);
        /* counts gone back (another device under the name): nothing, not a huge figure */
        d.st.read_ios = 1;
        d.st.read_ticks = 5;
        step(&d, 0, 16384, 0, &f);
        assert_true(f.latency_usec == 0);
}

/* A stall (ActivityFigures.stall) is counted where it begins and each second it goes on: a
 * request that waits 300 ms across the turn of a sample, then completes, is one; eight in
 * flight that take 300 ms each, some done in every sample, one each second. */
static void test_activity_stall(void **state) {
        Disk d = {0};
        ActivityFigures f;
        unsigned n = 0;

        step(&d, 0, 0, 0, &f);
        d.st.in_flight = 1;
        step(&d, 0, 16384, 0, &f); /* one done, the next in flight */
        assert_false(f.stall);
        step(&d, 0, 0, 0, &f);
        step(&d, 0, 0, 0, &f);
        assert_int_equal(f.waited_usec, 2 * ACTIVITY_SAMPLE_USEC);
        assert_true(f.stall);
        /* it completes after 300 ms: its time shows, the same stall */
        d.st.read_ticks += 300;
        step(&d, 0, 16384, 0, &f);
        assert_int_equal(f.latency_usec, 300 * USEC_PER_MSEC);
        assert_false(f.stall);
        /* the next is done within a sample: over */
        d.st.read_ticks += 5;
        step(&d, 0, 16384, 0, &f);
        assert_false(f.stall);
        /* two in flight from one sample, none done for 300 ms, then one, then the other: one
         * stall */
        d.st.in_flight = 2;
        step(&d, 0, 0, 0, &f);
        step(&d, 0, 0, 0, &f);
        assert_true(f.stall);
        step(&d, 0, 0, 0, &f);
        assert_false(f.stall);
        d.st.read_ticks += 310;
        step(&d, 0, 16384, 0, &f);
        assert_false(f.stall);
        d.st.read_ticks += 410;
        d.st.in_flight = 0;
        step(&d, 0, 16384, 0, &f);
        assert_int_equal(f.latency_usec, 410 * USEC_PER_MSEC);
        assert_false(f.stall);
        step(&d, 0, 0, 0, &f);
        assert_false(f.stall);
        /* a deep workload stalled for 3 s */
        d.st.in_flight = 8;
        for (int i = 0; i < 30; i++) {
                d.st.read_ticks += 3 * 300;
                step(&d, 0, 3 * 16384, 0, &f);
                n += f.stall;
        }
        assert_int_equal(n, 3);
}

static void test_activity_first_samples_are_no_burst(void **state) {
        /* A journal's commit a second (a write and a flush) seen in the first 100 ms after the
         * start: two operations a second, not twenty. */
        Disk d = {0};
        ActivityFigures f;

        step(&d, 0, 0, 0, &f);
        d.st.flush_ios++;
        step(&d, MiB, 0, 1, &f);
        assert_true(close_to(f.write_ops, 2));
        assert_true(activity_cost(&f) < 3 * ACTIVITY_OP_BYTES + 8192);
}

static void test_activity_allowance(void **state) {
        /* A checkpoint save's writes are allowed for; a workload writing more shows. */
        ActivityAllowance save = {.bytes = 64 * 1024, .ops = 8};
        Disk d = {0};
        ActivityFigures f;

        step(&d, 0, 0, 0, &f);
        d.st.write_ios += 6;
        d.st.flush_ios += 2;
        d.st.write_sectors += 48 * 1024 / 512;
        d.now += ACTIVITY_SAMPLE_USEC;
        activity_sample(&d.a, &d.st, &d.ours, &save, d.now, &f);
        assert_true(f.writes == 0 && f.write_ops == 0);
        d.st.write_ios += 100;
        d.st.write_sectors += 100 * 8;
        d.now += ACTIVITY_SAMPLE_USEC;
        activity_sample(&d.a, &d.st, &d.ours, &save, d.now, &f);
        assert_true(f.write_ops > 0 && f.writes > 0);
}

static void test_activity_counters_going_back(void **state) {
        /* The counters reset (a device replaced under the same name): no false alarm, no
         * wrap-around. */
        Disk d = with_reads_in_flight(0);
        ActivityFigures f;

        d.st.read_sectors = 1000000;
        d.st.write_ios = 50;
        step(&d, 0, 0, 0, &f);
        d.st = (DiskStat){0};
        step(&d, MiB, 0, 0, &f);
        assert_true(f.reads == 0 && f.writes == 0 && f.write_ops == 0);
}

static void test_activity_cost(void **state) {
        ActivityFigures f = {.ours = 100.0 * MiB, .reads = 1000, .writes = 4096, .write_ops = 2};

        /* Ours is no cost; each write, flush or discard counts for more than its bytes. */
        assert_true(activity_cost(&f) == 1000 + 4096 + 2.0 * ACTIVITY_OP_BYTES);
}

static void test_activity_read(void **state) {
        char dir[] = "/tmp/test-activity-XXXXXX", path[64], fifo[64];
        DiskStat st;
        FILE *f;
        int fd;

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/stat", dir);
        snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
        f = fopen(path, "w");
        assert_non_null(f);
        fputs("1 2 3 4 5 6 7 8 9 10 11\n", f);
        fclose(f);
        fd = open(path, O_RDONLY);
        assert_int_equal(disk_stat_read(fd, &st), 0); /* and again: pread from 0 */
        assert_int_equal(disk_stat_read(fd, &st), 0);
        assert_int_equal(st.read_sectors, 3);
        close(fd);
        f = fopen(path, "w"); /* longer than any stat line: not one */
        for (int i = 0; i < 100; i++)
                fputs("1234567890", f);
        fclose(f);
        fd = open(path, O_RDONLY);
        assert_int_equal(disk_stat_read(fd, &st), -EBADMSG);
        close(fd);
        assert_int_equal(mkfifo(fifo, 0600), 0); /* a FIFO in its place: an error, no hang */
        fd = open(fifo, O_RDONLY | O_NONBLOCK);
        assert_true(fd >= 0);
        assert_int_equal(disk_stat_read(fd, &st), -ESPIPE);
        close(fd);
        unlink(fifo);
        unlink(path);
        rmdir(dir);
}

static void test_activity_family(void **state) {
        char f[16];

        disk_family("nvme1n1", f, sizeof(f));
        assert_string_equal(f, "nvme");
        disk_family("nvme12n3", f, sizeof(f));
        assert_string_equal(f, "nvme");
        disk_family("loop7", f, sizeof(f));
        assert_string_equal(f, "loop");
        disk_family("xvdf", f, sizeof(f));
        assert_string_equal(f, "xvd");
        disk_family("xvdaa", f, sizeof(f));
        assert_string_equal(f, "xvd");
        disk_family("sdb", f, sizeof(f));
        assert_string_equal(f, "sd");
        disk_family("vda", f, sizeof(f));
        assert_string_equal(f, "vd");
        disk_family("dm-0", f, sizeof(f));
        assert_string_equal(f, "dm");
        disk_family("", f, sizeof(f));
        assert_string_equal(f, "");
        disk_family("nvme1n1", f, 3); /* truncated, terminated */
        assert_string_equal(f, "nv");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_activity_parse),
                cmocka_unit_test(test_activity_ours_alone_is_quiet),
                cmocka_unit_test(test_activity_sees_their_reads),
                cmocka_unit_test(test_activity_one_sample_is_no_reader),
                cmocka_unit_test(test_activity_split_reads_are_noise),
                cmocka_unit_test(test_activity_whole_reads),
                cmocka_unit_test(test_activity_split_not_misled),
                cmocka_unit_test(test_activity_split_changes),
                cmocka_unit_test(test_activity_sibling_in_flight),
                cmocka_unit_test(test_activity_sees_any_write),
                cmocka_unit_test(test_activity_forget_reads),
                cmocka_unit_test(test_activity_waited),
                cmocka_unit_test(test_activity_latency),
                cmocka_unit_test(test_activity_stall),
                cmocka_unit_test(test_activity_first_samples_are_no_burst),
                cmocka_unit_test(test_activity_allowance),
                cmocka_unit_test(test_activity_counters_going_back),
                cmocka_unit_test(test_activity_read),
                cmocka_unit_test(test_activity_family),
                cmocka_unit_test(test_activity_cost),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
