/* SPDX-License-Identifier: MIT */
/*
 * The disks beside ours that share the instance's cap (activity.h): found in <sysfs>/block by
 * family, their counters read at each sample, the list refreshed every few seconds so that
 * volumes attached or detached later count too. A neighbour hydrated by a sibling (siblings.h)
 * is read as our own disk is: its reads are the sibling's, not a workload; and the writes of
 * any hydrator's checkpoint save (ours or a sibling's) are nobody's workload on the disks that
 * hold its state directory.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "activity.h"
#include "util.h"

#define NEIGHBOURS_RESCAN_USEC (5 * USEC_PER_SEC)
/* A sibling's first seconds, as we find it: the reads of its start-up (the mapping of its file
 * systems, in threads it tells of later) show on its disk before its publication counts them;
 * they are not a workload. */
#define NEIGHBOURS_SIBLING_START_USEC (3 * USEC_PER_SEC)
#define NEIGHBOURS_MAX 64 /* more disks than that are not watched (the first ones in order) */

typedef struct Neighbours Neighbours;

/*
 * A hydrator's checkpoint saves since the last sample, and the disks they land on. Each save
 * writes the state file, its directory and the file system's journal: its writes there are
 * allowed for (SAVE_ALLOWANCE_*), not counted as a workload; a workload writing more shows.
 */
typedef struct SaveNews {
        unsigned saves;      /* begun since the last sample (one under way counts) */
        uint64_t file_bytes; /* the state file's size */
        const dev_t *disks;  /* n == 0: not known, so every disk */
        unsigned n;
} SaveNews;

/* ext4, measured: 5 writes and 4 flushes, 21-69 KiB a save of 1-20 KB (file and directory
 * fsync'ed, each a journal commit); twice that, for other file systems and bad luck. */
#define SAVE_ALLOWANCE_FS_BYTES (UINT64_C(128) << 10) /* journal blocks, inode, directory */
#define SAVE_ALLOWANCE_OPS 16 /* data, journal, commit with flush and FUA, for file and dir */

#define NEIGHBOURS_READING (1024.0 * 1024.0) /* a sibling reading: 1 MiB/s or more */

/* What the neighbours did over the last second. */
typedef struct NeighbourFigures {
        double siblings;               /* bytes/s their hydrators read */
        double sibling_bytes;          /* ... completed since the last sample */
        unsigned readers;              /* ... of which so many at NEIGHBOURS_READING or more */
        unsigned queued;               /* ... and of those, so many whose reads queue */
        double cost;                   /* bytes/s what others' I/O on them costs */
        char busiest[KERNEL_NAME_MAX]; /* the one whose I/O costs most, "" none */
        uint64_t waited_usec;          /* the longest a disk no sibling reads has held requests,
                                        * none completed (ActivityFigures.waited_usec), 0 none */
        uint64_t latency_usec;         /* the longest mean time their completed requests took on
                                        * one such disk (ActivityFigures.latency_usec) */
        char waiting[KERNEL_NAME_MAX]; /* the disk of the longer of the two, "" none */
        bool stall; /* one such disk shows a stall, new or gone on (ActivityFigures.stall) */
} NeighbourFigures;

/*
 * neighbours_new() - watch the disks of @self's family in @sysfs_root/block but @self; their
 * siblings' publications in @runtime_fd's io/ (-1: none: every neighbour's reads are a
 * workload).
 */
int neighbours_new(Neighbours **ret, const char *sysfs_root, const char *self, int runtime_fd,
                   uint64_t now_usec);
Neighbours *neighbours_free(Neighbours *n);
DEFINE_TRIVIAL_CLEANUP_FUNC(Neighbours *, neighbours_free)

/*
 * neighbours_sample() - read every neighbour's counters and sibling at @now_usec, with the
 * news of our own saves (@own). A neighbour whose counters cannot be read any more
 * (detached) is dropped.
 */
void neighbours_sample(Neighbours *n, uint64_t now_usec, const SaveNews *own,
                       NeighbourFigures *ret);
/* neighbours_save_allowance() - what the siblings' saves since the previous
 * neighbours_sample() may have written on the disk @dev: added to @allowance. */
void neighbours_save_allowance(const Neighbours *n, dev_t dev, ActivityAllowance *allowance);
/* save_allowance() - what the saves of @news may have written on @dev: added to @allowance. */
void save_allowance(const SaveNews *news, dev_t dev, ActivityAllowance *allowance);
unsigned neighbours_count(const Neighbours *n);
unsigned neighbours_siblings(const Neighbours *n);
/* neighbours_live_siblings() - the siblings that beat lately, as of @now_usec: before the first
 * neighbours_sample() too (neighbours_siblings() counts those the last sample read). */
unsigned neighbours_live_siblings(const Neighbours *n, uint64_t now_usec);
