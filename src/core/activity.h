/* SPDX-License-Identifier: MIT */
/*
 * Other I/O on the device: the disk's own counters (/sys/block/<disk>/stat) against our own
 * count of completed reads, so that the reader can give way while a workload uses the volume
 * (tuner.h). Both sides count completions (md resync once compared submissions with
 * completions, and saw "other I/O" in its own reads):
 *   - we never write, so any write, discard or flush completed is someone else's;
 *   - sectors read beyond ours are theirs, but not all of the difference: the disk counts a
 *     read of ours that was split into several requests as each part completes, before the
 *     whole read is ours to count. The difference is their reads plus at most what we have in
 *     flight, so what it grew beyond that over the last ACTIVITY_HISTORY samples is theirs for
 *     sure; more than ACTIVITY_READ_SLACK of it is activity.
 * The disk's count of requests in flight is no help: a split read of ours is several requests,
 * and the kernel ends a request's accounting after its completion is posted to us.
 * The more we have in flight, the longer their reads take to show (with 16 MiB in flight, a
 * workload reading 30 MiB/s shows within about half a second); their writes show at once.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define ACTIVITY_SAMPLE_USEC (100 * USEC_PER_MSEC) /* how often the hydrator looks */
#define ACTIVITY_READ_SLACK (UINT64_C(256) << 10)
#define ACTIVITY_HISTORY 50      /* samples: five seconds */
#define ACTIVITY_RATE_SAMPLES 10 /* their rate: over one second */

/* The fields of /sys/block/<disk>/stat that matter here (Documentation/block/stat.rst). */
typedef struct DiskStat {
        uint64_t read_ios, read_sectors;
        uint64_t write_ios, write_sectors;
        uint64_t in_flight;
        uint64_t discard_ios, flush_ios; /* 0 where the kernel does not report them */
} DiskStat;

typedef struct Activity {
        bool primed;
        DiskStat last;
        uint64_t last_ours; /* our completed bytes at the last sample */
        uint64_t last_usec;
        int64_t excess;                    /* sectors read beyond ours so far, in bytes */
        int64_t history[ACTIVITY_HISTORY]; /* excess at the last samples, oldest first */
        unsigned n_history;
} Activity;

/* disk_stat_parse() - the 11, 15 or 17 numbers of a stat file. 0, or -EBADMSG. */
int disk_stat_parse(const char *text, DiskStat *ret);
/* disk_stat_read() - read and parse the stat file open as @fd (pread from 0, so it can be read
 * again). 0, -errno of the read (ESPIPE for a FIFO), or -EBADMSG for what is not a stat line. */
int disk_stat_read(int fd, DiskStat *ret);

/*
 * activity_sample() - compare the disk's counters @st with @ours (bytes of our reads that
 * completed, in all) and @ours_in_flight (bytes of ours the kernel holds) at @now_usec.
 * Returns true when someone else used the device lately (never on the first call), and their
 * bytes per second in @ret_rate.
 */
bool activity_sample(Activity *a, const DiskStat *st, uint64_t ours, uint64_t ours_in_flight,
                     uint64_t now_usec, double *ret_rate);

/*
 * Other volumes behind the same cap. An EC2 instance's EBS bandwidth is shared by all its
 * volumes: a workload on another volume slows ours, and a queue of ours slows it, but none of
 * its reads shows in our disk's counters. So the disks of the same family as ours (nvme*,
 * xvd*, sd*, loop*: disk_family()) are watched too, and any I/O on them counts as other I/O:
 * more than ACTIVITY_READ_SLACK bytes read or written in a sample, or any write. Another
 * hydrating volume counts as well, so that hydrations behind one cap give way to each other.
 */

/* disk_family() - "nvme" for nvme1n1, "loop" for loop3, "xvd" for xvdf, "sd" for sdb; the
 * leading letters of anything else. Writes at most @size bytes. */
void disk_family(const char *kernel_name, char *ret, size_t size);

/* activity_neighbour() - I/O on a neighbour between two samples @dt_usec apart: true when it
 * read or wrote more than ACTIVITY_READ_SLACK bytes, or wrote at all; its bytes/s in @ret_rate. */
bool activity_neighbour(const DiskStat *before, const DiskStat *now, uint64_t dt_usec,
                        double *ret_rate);
