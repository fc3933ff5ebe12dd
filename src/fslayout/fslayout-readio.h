/* SPDX-License-Identifier: MIT */
/*
 * Inside fslayout: a libext2fs I/O manager that can only read, with plain pread() and nothing
 * else. e2fsprogs' unix_io fsync()s every block device it opens, to clear errors left by others;
 * on a device with a write cache that is a flush, which the disk's counters show as a write,
 * and the hydrator would give way to its own discovery as to a workload. This one never writes,
 * flushes or discards, and takes the "offset=" option as unix_io does.
 */
#pragma once

#include <ext2fs/ext2fs.h>

extern io_manager fslayout_read_io_manager;
