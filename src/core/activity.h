/* SPDX-License-Identifier: MIT */
/*
 * Other I/O on a disk: its counters (/sys/block/<disk>/stat) against the reads we know of (ours
 * on our disk, a sibling's on its disk: siblings.h), so that the reader can give way to a
 * workload in proportion to what it takes (tuner.h). Both sides count completions (md resync
 * once compared submissions with completions, and saw "other I/O" in its own reads):
 *   - hydrators never write, so what is written, discarded or flushed is someone else's, but
 *     for the writes of a checkpoint save, which the caller allows for (neighbours.h);
 *   - bytes read beyond ours are theirs, but for the parts of ours the disk counted before
 *     we could count the whole read: a read larger than one request is split into several,
 *     which complete one by one (far apart when they queue behind a cap); a sibling counts
 *     its reads only when its loop runs. The requests the disk holds in flight tell how many
 *     parts are still out: ours in flight less those it still holds is what it counted of
 *     ours already, and is not theirs.
 *   - how many requests a read becomes is known only within bounds: max_sectors_kb splits it
 *     always, max_segments only when its buffer's pages are not contiguous (a huge page is
 *     one segment). Taking the wrong one is not noise: with twice the requests it makes, half
 *     of a deep queue of ours would look counted early, and when the depth fell, 20 MiB read
 *     by no one appeared at once. So the disk's own counts tell it: in a sample where it read
 *     what we did, its requests per read of ours (activity_sample()).
 * Each figure is over the last second (ACTIVITY_RATE_SAMPLES samples): their reads in bytes,
 * their writes in bytes and in operations, which cost more than their bytes (an IOPS limit, a
 * flush): activity_cost() prices each at ACTIVITY_OP_BYTES more.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define ACTIVITY_SAMPLE_USEC (100 * USEC_PER_MSEC) /* how often the hydrator looks */
#define ACTIVITY_READ_SLACK (UINT64_C(256) << 10)  /* what counting cannot tell apart */
#define ACTIVITY_RATE_SAMPLES 10                   /* figures over one second */
#define ACTIVITY_SPLIT_SAMPLES 3 /* in a row, to change how a read is split (activity.c) */
#define ACTIVITY_SPLIT_SLACK (UINT64_C(64) << 10) /* others' bytes in a sample that tells it */
#define ACTIVITY_OP_BYTES (UINT64_C(16) << 10)    /* what a write, flush or discard costs */

/* The fields of /sys/block/<disk>/stat that matter here (Documentation/block/stat.rst). */
typedef struct DiskStat {
        uint64_t read_ios, read_sectors;
        uint64_t write_ios, write_sectors;
        uint64_t in_flight;
        uint64_t discard_ios, flush_ios;  /* 0 where the kernel does not report them */
        uint64_t read_ticks, write_ticks; /* ms the completed reads, writes took, in all */
} DiskStat;

/* A request of theirs that waits this long, in flight or done, is a stall (ActivityFigures);
 * one stall goes on while the next sample still shows one, and counts again each
 * ACTIVITY_STALL_AGAIN_USEC it lasts. */
#define ACTIVITY_STALL_USEC (200 * USEC_PER_MSEC)
#define ACTIVITY_STALL_AGAIN_USEC USEC_PER_SEC

/* One sample's counts, kept for the figures over the last second. */
typedef struct ActivityStep {
        int64_t theirs;   /* bytes read beyond ours, in all, at the end of the sample */
        uint64_t ours;    /* bytes of ours completed in it */
        uint64_t written; /* bytes others wrote in it */
        uint64_t ops;     /* their writes, flushes and discards in it */
        uint64_t span_usec;
} ActivityStep;

/* Writes on a disk in one sample that are not a workload (a hydrator's checkpoint save). */
typedef struct ActivityAllowance {
        uint64_t bytes;
        uint64_t ops;
} ActivityAllowance;

/* What others did on a disk over the last second. */
typedef struct ActivityFigures {
        double ours;           /* bytes/s of the reads we know of (ours, or the sibling's) */
        double reads;          /* bytes/s others read */
        double writes;         /* bytes/s others wrote */
        double write_ops;      /* their writes, flushes and discards, per second */
        uint64_t waited_usec;  /* a request on the disk has waited this long at least, and waits
                                * still: requests in flight at every sample since, none done
                                * (0: one completed in the last sample, or none in flight) */
        uint64_t latency_usec; /* the reads and writes completed in the last sample took this
                                * long on average (the disk's ticks; 0: none completed): a
                                * workload with several requests in flight completes some in
                                * every sample, and its wait shows here, not above */
        bool stall;            /* one of the two is ACTIVITY_STALL_USEC or more, and the stall
                                * is new (not one the samples before showed: a request done
                                * late ends the wait that showed in flight), or has gone on
                                * another ACTIVITY_STALL_AGAIN_USEC */
} ActivityFigures;

typedef struct Activity {
        bool primed;
        DiskStat last;
        uint64_t last_ours; /* the reads we know of, completed, in all, at the last sample */
        uint64_t last_usec;
        int64_t excess;                            /* bytes the disk read beyond ours so far */
        int64_t window_theirs;                     /* theirs, where the last second began */
        ActivityStep steps[ACTIVITY_RATE_SAMPLES]; /* the last second, oldest first */
        unsigned n_steps;
        unsigned requests_per_read; /* as the disk counted them; 0 not seen yet */
        unsigned seen_split;        /* another number it counted, */
        unsigned seen_other;        /* in so many samples in a row */
        uint64_t waiting_usec;      /* in flight from this sample on, none done since; 0 none */
        uint64_t stall_usec;        /* a stall goes on, counted last then (0: none) */
} Activity;

/* activity_stall() - the rule of ActivityFigures.stall for @a's disk, whose requests waited
 * @waited_usec and took @latency_usec at @now_usec (activity_sample() applies it). */
bool activity_stall(Activity *a, uint64_t waited_usec, uint64_t latency_usec, uint64_t now);

/* disk_stat_parse() - the 11, 15 or 17 numbers of a stat file. 0, or -EBADMSG. */
int disk_stat_parse(const char *text, DiskStat *ret);
/* disk_stat_read() - read and parse the stat file open as @fd (pread from 0, so it can be read
 * again). 0, -errno of the read (ESPIPE for a FIFO), or -EBADMSG for what is not a stat line. */
int disk_stat_read(int fd, DiskStat *ret);

/* The reads we know of (ours, or a sibling's) at one moment. */
typedef struct ActivityOurs {
        uint64_t bytes;        /* completed, in all */
        uint64_t reads;        /* in flight */
        uint64_t read_bytes;   /* the size of one of those */
        unsigned requests_min; /* the requests one becomes on the disk, at least (0: 1) */
        unsigned requests_max; /* and at most (0: requests_min) */
} ActivityOurs;

/*
 * activity_sample() - compare the disk's counters @st with @ours at @now_usec. @allowance:
 * writes since the last sample that are not others' (NULL: none). Returns the figures over the
 * last second in @ret (all 0 on the first call, which only primes).
 */
void activity_sample(Activity *a, const DiskStat *st, const ActivityOurs *ours,
                     const ActivityAllowance *allowance, uint64_t now_usec, ActivityFigures *ret);

/* activity_rebase() - the counters @st and @ours are where the next sample starts from: what
 * happened since the last sample is nobody's (a sibling found just now read it). */
void activity_rebase(Activity *a, const DiskStat *st, uint64_t ours);

/* activity_forget_reads() - the reads of the figures to come are of what the disk reads from now
 * on: what it read before is nobody's (its counts go on, so that nothing is counted twice). Its
 * writes stay in the window. */
void activity_forget_reads(Activity *a);

/* activity_cost() - what others' I/O costs, in bytes/s: reads and writes, each write, flush or
 * discard at ACTIVITY_OP_BYTES more. */
double activity_cost(const ActivityFigures *f);

/*
 * Other volumes behind the same cap. An EC2 instance's EBS bandwidth is shared by all its
 * volumes: a workload on another volume slows ours, and a queue of ours slows it, but none of
 * its reads shows in our disk's counters. So the disks of the same family as ours (nvme*,
 * xvd*, sd*, loop*: disk_family()) are watched too (neighbours.h), each as our own disk is.
 */

/* disk_family() - "nvme" for nvme1n1, "loop" for loop3, "xvd" for xvdf, "sd" for sdb; the
 * leading letters of anything else. Writes at most @size bytes (DISK_FAMILY_MAX holds any). */
#define DISK_FAMILY_MAX 16
void disk_family(const char *kernel_name, char *ret, size_t size);
