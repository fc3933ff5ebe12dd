/* SPDX-License-Identifier: MIT */
/*
 * Reads of this process that are not the hydrator's own: the file-system discovery's and its
 * walkers' (libblkid, libext2fs, GETFSMAP and FIEMAP make the kernel read the device in their
 * threads while the hydrator reads in the event loop's). The disk's counters show them, and
 * they are ours, not a workload to give way to. The kernel counts the bytes each thread made a
 * block device read (/proc/<pid>/io "read_bytes", CONFIG_TASK_IO_ACCOUNTING), the process's
 * total including threads that have ended.
 */
#pragma once

#include <stdint.h>

/* thread_reads_parse() - the read_bytes field of an io file's @text. 0 or -EBADMSG. Pure. */
int thread_reads_parse(const char *text, uint64_t *ret);

/*
 * thread_reads_others() - bytes read from block devices by the process's threads other than the
 * calling one (alive or ended): /proc/self/io less /proc/thread-self/io. Call it from the thread
 * that does the hydrator's reads. 0 when either cannot be read (no task I/O accounting, no
 * /proc): then such reads look like someone else's, as they did before.
 */
uint64_t thread_reads_others(void);
