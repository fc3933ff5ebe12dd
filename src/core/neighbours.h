/* SPDX-License-Identifier: MIT */
/*
 * The disks beside ours that share the instance's cap (activity.h): found in
 * <sysfs>/block by family, their counters read at each sample, the list refreshed every few
 * seconds so that volumes attached or detached later count too.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

#define NEIGHBOURS_RESCAN_USEC (5 * USEC_PER_SEC)
#define NEIGHBOURS_MAX 64 /* more disks than that are not watched (the first ones in order) */

typedef struct Neighbours Neighbours;

/* neighbours_new() - watch the disks of @self's family in @sysfs_root/block but @self. */
int neighbours_new(Neighbours **ret, const char *sysfs_root, const char *self, uint64_t now_usec);
Neighbours *neighbours_free(Neighbours *n);
DEFINE_TRIVIAL_CLEANUP_FUNC(Neighbours *, neighbours_free)

/*
 * neighbours_sample() - read every neighbour's counters at @now_usec. Returns true when one
 * of them had I/O since the last call, with the sum of their bytes per second in @ret_rate
 * and the busiest one's name in @ret_name (KERNEL_NAME_MAX bytes). A neighbour whose counters
 * cannot be read any more (detached) is dropped.
 */
bool neighbours_sample(Neighbours *n, uint64_t now_usec, double *ret_rate, char *ret_name);
unsigned neighbours_count(const Neighbours *n);
