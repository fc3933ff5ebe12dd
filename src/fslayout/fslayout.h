/* SPDX-License-Identifier: MIT */
/*
 * File-system-aware hydration, groundwork: which byte ranges of a device hold file system
 * metadata, which hold file data and which are free, so that a reader can hydrate metadata
 * first, then used blocks, and free space last or never. Unknown means used: nothing is called
 * free unless a file system said so.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "byte-range.h"
#include "two-bit-array.h"
#include "util.h"

/* In order of priority: where two sources disagree about a byte, the lower value wins. */
typedef enum FsRangeKind {
        FS_RANGE_METADATA,
        FS_RANGE_USED,
        FS_RANGE_FREE,
        _FS_RANGE_KIND_MAX,
} FsRangeKind;

typedef struct FsRange {
        uint64_t offset; /* bytes from the start of the whole device */
        uint64_t length;
        FsRangeKind kind;
} FsRange;

/*
 * The layout as a reader of chunks needs it, in memory that does not grow with what the file
 * systems hold (two bits a chunk: 4 MiB at 16 M chunks): the most urgent kind of each chunk. A
 * chunk is metadata if any byte of it is, else used if any byte is (a byte that no range covers
 * is), else free. Free means that one free range covers the whole chunk, neighbours merged as they
 * are added: a chunk whose free bytes come in pieces that were not added one after the other is
 * used (never wrongly free). A normalised layout's ranges give exactly the kinds that a byte-wise
 * sweep would.
 */
typedef struct FsChunkKinds {
        uint64_t size; /* of the device, bytes */
        uint32_t chunk_size;
        uint64_t n_chunks;
        TwoBitArray *kinds; /* an FsRangeKind per chunk, or FS_CHUNK_UNKNOWN (then used); NULL
                               while every chunk is @uniform (nothing at all known, or one
                               range over the whole device: a blank one costs nothing) */
        unsigned uniform;
        FsRange pending; /* the last range added, still growing: length 0 if none */
} FsChunkKinds;

#define FS_CHUNK_UNKNOWN 3u /* no range touched the chunk: used */

typedef struct FsLayout {
        FsRange *ranges; /* sorted, non-overlapping, adjacent ranges differ in kind, together
                            covering [0, device size) exactly */
        size_t n_ranges;
        FsChunkKinds *chunks; /* fslayout_discover_chunks(): the kinds by chunk, no ranges */
        char **notes;         /* one line per partition table, partition or region, for humans */
        size_t n_notes;
} FsLayout;

/*
 * What a discovery knows before it is done. @ahead, if set, is called (from the thread that
 * discovers) with the byte ranges of the device that it is about to read, in the order it will
 * read them, as soon as it knows where they are: the first and last MiB of the device and of each
 * partition (libblkid's probes), every bitmap of an ext2/3/4 (its group descriptors name them),
 * the headers of XFS's allocation groups and each level of their btrees. The discovery reads
 * them with single blocking reads; a reader that fetches them meanwhile, many at once, makes
 * those reads find warm blocks instead of waiting for one cold block after another. Only
 * ordering: nothing depends on it being heeded. At most FSLAYOUT_HINTS_MAX ranges a call (more
 * come in calls that follow, in order), so that telling them costs memory that does not grow
 * with the file system.
 */
#define FSLAYOUT_HINTS_MAX 4096u

typedef struct FsLayoutHints {
        void (*ahead)(const ByteRange *ranges, size_t n, void *userdata);
        void *userdata;
} FsLayoutHints;

/*
 * fslayout_discover() - map the device or image open as @fd.
 * @fd: a block device or regular file, open for reading (O_DIRECT is fine: the module reads
 *      through its own descriptor, opened again as /proc/self/fd/@fd).
 * @device_size: its size in bytes.
 * @hints: what to tell as soon as it is known, or NULL.
 * @ret: filled in on success only; release with fslayout_free().
 * @ret_error: on failure, a malloc'ed message (NULL if out of memory); untouched on success.
 *
 * Finds the partition table (GPT or MBR) with libblkid, then for each partition, or for the
 * whole device if there is no table, the file system: ext2/3/4 not mounted through libext2fs,
 * ext4 and XFS mounted through GETFSMAP on the mount point, anything else is used. Of an ext4's
 * inode tables only the blocks that hold an inode in use are metadata, mounted or not (the
 * kernel reads no other: it finds free inodes in the bitmap); the rest of each table is used, as
 * its block bitmap says. XFS's AG
 * metadata (headers, btrees, inode chunks, log) is also read from the device, which GETFSMAP
 * does not name without the reverse-mapping btree; an XFS that is not mounted gets its metadata
 * only, the rest is used (its free space is known only through GETFSMAP). One odd partition
 * never fails the discovery: it is treated as used and its note says why. Free space is only
 * what a file system said is free of bytes no other partition claims: a partition that was not
 * mapped (overlapping another, unknown, not understood, truncated, a scanner that failed) is used
 * as a whole, even where an overlapping partition's file system calls it free; so is what the
 * logical partitions leave of an extended one.
 *
 * Return: 0; -EINVAL if @device_size is 0; -ENOMEM; or the negative errno of reopening or
 * reading the device.
 */
int fslayout_discover(int fd, uint64_t device_size, const FsLayoutHints *hints, FsLayout *ret,
                      char **ret_error);

/*
 * fslayout_discover_chunks() - fslayout_discover(), by chunks of @chunk_size bytes: @ret gets
 * @ret->chunks and the notes, no ranges. What the scanners find goes straight into the chunk
 * kinds, so the memory it takes is the chunk kinds' (and the scanners' own, which does not grow
 * with the device either), whatever the file systems hold. The notes' figures are counted by
 * chunk: bytes of the chunks of each kind.
 */
int fslayout_discover_chunks(int fd, uint64_t device_size, uint32_t chunk_size,
                             const FsLayoutHints *hints, FsLayout *ret, char **ret_error);

/* fslayout_free() - release what fslayout_discover() filled in and zero @l. NULL-safe. Usable as
 * _cleanup_(fslayout_free) on an FsLayout variable. */
void fslayout_free(FsLayout *l);

/* fs_chunk_kinds_new() - every chunk unknown (no array yet). -EINVAL if @size or @chunk_size is 0,
 * -ENOMEM. */
int fs_chunk_kinds_new(FsChunkKinds **ret, uint64_t size, uint32_t chunk_size);
FsChunkKinds *fs_chunk_kinds_free(FsChunkKinds *k);
DEFINE_TRIVIAL_CLEANUP_FUNC(FsChunkKinds *, fs_chunk_kinds_free)
/* fs_chunk_kinds_add() - [@offset, @offset + @length) is of @kind (an invalid kind is used); a
 * range that goes on where the last one ended, with the same kind, extends it. 0, or -ENOMEM
 * when the array is made (at the first range that is not over the whole device). */
int fs_chunk_kinds_add(FsChunkKinds *k, uint64_t offset, uint64_t length, FsRangeKind kind);
/* fs_chunk_kinds_flush() - apply the last range added. Before any question is asked. */
int fs_chunk_kinds_flush(FsChunkKinds *k);
/* fs_chunk_kinds_from_layout() - the kinds of @l's ranges, by chunks of @chunk_size. */
int fs_chunk_kinds_from_layout(FsChunkKinds **ret, const FsLayout *l, uint64_t size,
                               uint32_t chunk_size);
/* fs_chunk_kinds_take() - the kinds as an array of its own (made now if every chunk is of one
 * kind), for the plan to translate in place; @k is left without. NULL if out of memory. */
TwoBitArray *fs_chunk_kinds_take(FsChunkKinds *k);
/* fs_chunk_kinds_uniform() - is every chunk of one kind (then in *@ret, FS_CHUNK_UNKNOWN
 * included), with no array made for it? */
bool fs_chunk_kinds_uniform(const FsChunkKinds *k, unsigned *ret);
/* fs_chunk_kind() - the kind of chunk @chunk: unknown is used. */
FsRangeKind fs_chunk_kind(const FsChunkKinds *k, uint64_t chunk);
/* fs_chunk_kinds_bytes_in() - how many bytes of [@offset, @offset + @length) lie in chunks of
 * @kind. */
uint64_t fs_chunk_kinds_bytes_in(const FsChunkKinds *k, uint64_t offset, uint64_t length,
                                 FsRangeKind kind);
/* fs_chunk_kinds_memory() - bytes @k holds on the heap. */
size_t fs_chunk_kinds_memory(const FsChunkKinds *k);

/* fs_range_kind_to_string() - "metadata", "used", "free", or NULL for an invalid value. */
const char *fs_range_kind_to_string(FsRangeKind kind);

/*
 * fslayout_check() - does @l keep its promise: ranges sorted, non-empty, adjacent, no two
 * neighbours of the same kind, valid kinds, covering [0, @device_size) exactly?
 * Return: 0, or -EBADMSG.
 */
int fslayout_check(const FsLayout *l, uint64_t device_size);

/* fslayout_find() - the range that contains byte @offset, or NULL if beyond the end. */
const FsRange *fslayout_find(const FsLayout *l, uint64_t offset);

/* fslayout_bytes_in() - how many bytes of [@offset, @offset + @length) are of @kind (of a layout
 * by chunk: lie in chunks of @kind). */
uint64_t fslayout_bytes_in(const FsLayout *l, uint64_t offset, uint64_t length, FsRangeKind kind);

/* fslayout_bytes() - how many bytes of the whole device are of @kind. */
uint64_t fslayout_bytes(const FsLayout *l, FsRangeKind kind);

/*
 * fs_ranges_normalize() - turn ranges in any order, possibly overlapping, into a layout's
 * ranges for a device of @size bytes: parts beyond @size are cut off, bytes that no range covers
 * and ranges of no valid kind become FS_RANGE_USED, overlaps take the kind of highest priority
 * (metadata, then used, then free), neighbours of the same kind merge. Pure.
 * @ret: malloc'ed array (NULL when @size is 0). Return: 0 or -ENOMEM.
 */
int fs_ranges_normalize(const FsRange *in, size_t n, uint64_t size, FsRange **ret, size_t *ret_n);
