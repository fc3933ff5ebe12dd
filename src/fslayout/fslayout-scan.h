/* SPDX-License-Identifier: MIT */
/*
 * Inside fslayout: the list the scanners add ranges to, and the scanners: libext2fs for
 * ext2/3/4 that is not mounted, GETFSMAP for a mounted ext4 or XFS, and XFS's own metadata read
 * from the device, mounted or not. Not for other modules: fslayout.h is the interface.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fslayout.h"

/* Ranges in any order, overlaps allowed; fs_ranges_normalize() makes a layout out of them. With
 * @chunks set, the ranges go there as they come instead, and the list stays empty. */
typedef struct FsRangeList {
        FsRange *ranges;
        size_t n;
        size_t allocated;
        FsChunkKinds *chunks; /* not owned */
} FsRangeList;

/* fs_range_list_add() - append, or extend the last range if it ends at @offset with the same
 * kind (or hand it to l->chunks, which does the same). An empty range is ignored. 0 or -ENOMEM. */
int fs_range_list_add(FsRangeList *l, uint64_t offset, uint64_t length, FsRangeKind kind);
/* fs_range_list_append() - every range of @from, in order, at the end of @to. 0 or -ENOMEM. */
int fs_range_list_append(FsRangeList *to, const FsRangeList *from);
void fs_range_list_done(FsRangeList *l);

/* fs_hint_ahead() - tell @hints (NULL: nobody) the ranges of @l (their kind does not matter)
 * as reads to come (FsLayoutHints), FSLAYOUT_HINTS_MAX at most a call. Out of memory, the hint
 * is dropped: it only orders reads. */
void fs_hint_ahead(const FsLayoutHints *hints, const FsRangeList *l);

/* What a scanner found out. Negative errno values (out of memory only) are fatal. */
typedef enum FsScanResult {
        FS_SCAN_MAPPED,        /* metadata, used and free are known */
        FS_SCAN_METADATA_ONLY, /* metadata is known; free space is not, it stays used */
        FS_SCAN_FAILED,        /* nothing added: the region stays used */
} FsScanResult;

/*
 * fslayout_scan_ext() - the ext2/3/4 file system at [@offset, @offset + @size) of the file or
 * device at @path, through libext2fs, read-only. Adds METADATA for superblocks and group
 * descriptors (and their backups), reserved GDT blocks, bitmaps, the blocks of the inode tables
 * that hold an inode in use (the group's count of unused inodes where the descriptors keep one,
 * else its inode bitmap; a group with no inode in use has none), the MMP block and the journal
 * inode's blocks; USED for the other blocks the block bitmap marks (the rest of the inode tables
 * among them); FREE for the rest. The block bitmaps are trusted only if the file system was
 * cleanly unmounted (a mounted file system has "needs_recovery" or lacks "clean" on disk) and
 * fits in @size (a truncated one does not); otherwise, or if @metadata_only, only metadata is
 * added (static while mounted: a mounted file system's GETFSMAP lacks the journal, this fills it
 * in). The inode bitmaps only order the reading (a table block the kernel may need is read
 * either way), so they are believed in any case.
 * Once the group descriptors are read, @hints (may be NULL) hears where the bitmaps this reads
 * next lie.
 * @ret_detail: why free space is unknown or why the scan failed (malloc'ed), else NULL.
 * Return: an FsScanResult, or -ENOMEM.
 */
int fslayout_scan_ext(const char *path, uint64_t offset, uint64_t size, bool metadata_only,
                      const FsLayoutHints *hints, FsRangeList *out, char **ret_detail);

/*
 * fslayout_scan_xfs() - the metadata of the XFS at [@offset, @offset + @size) of the file or
 * device at @path, read from it directly, read-only. Adds METADATA for each AG's header sectors
 * (superblock, AGF, AGI, AGFL; whole blocks), the internal log, every block of the AG btrees
 * (free space by block and by count, reverse mapping and reference count if present, inodes and
 * free inodes), the AGFL's blocks and the inode chunks the inode btree names (only the clusters
 * that exist, in sparse chunks). Each btree block must carry the magic number and level its
 * parent implies (v5: its own disk address, AG and UUID too); one that does not is skipped, not
 * followed. Never adds FREE or USED: the free-space btrees on disk may be stale (a mounted file
 * system, or a dirty log), so free space is for GETFSMAP to tell.
 * @hints (may be NULL) hears where each AG's headers lie once the superblock is read, and the
 * blocks of each btree level before they are read.
 * @ret_detail: why free space is unknown, with a count of what did not validate, or why the
 * scan failed (malloc'ed; NULL if out of memory).
 * Return: FS_SCAN_METADATA_ONLY; FS_SCAN_FAILED (nothing added) if there is no XFS superblock or
 * it is not understood (v4 and v5 are; an unknown incompatible feature or inconsistent geometry
 * is not), or the file system is larger than @size; or -ENOMEM.
 */
int fslayout_scan_xfs(const char *path, uint64_t offset, uint64_t size, const FsLayoutHints *hints,
                      FsRangeList *out, char **ret_detail);

/*
 * fslayout_find_mount() - where the file system on block device @dev is mounted, from
 * /proc/self/mountinfo: the mount point and a descriptor of it that is on @dev.
 * Return: 0; -ENOENT if not mounted; -EXDEV if mounted, but no mount point leads to it from
 * here (over-mounted, or hidden or missing in this mount namespace); another negative errno if
 * no mount point could be opened. The path of the first one is returned with errors too.
 */
int fslayout_find_mount(dev_t dev, char **ret_path, int *ret_fd);

/*
 * fslayout_scan_fsmap() - the file system mounted on @mount_fd, through FS_IOC_GETFSMAP, its
 * device @dev (the records of other devices, such as an XFS external log or realtime device,
 * are ignored) being at [@offset, @offset + @size) of the whole device. Free space is FREE,
 * special owners other than "unknown" and extent-map or attribute-fork blocks are METADATA,
 * everything else reported is USED; what is not reported stays used. With @inodes_used, the
 * records of the inode owner are USED too (ext4's whole inode tables, when the blocks that hold
 * inodes in use are known otherwise).
 * @ret_detail: a remark (records of other devices ignored) or why the scan failed, else NULL.
 * Return: FS_SCAN_MAPPED, FS_SCAN_FAILED (nothing added), or -ENOMEM.
 */
int fslayout_scan_fsmap(int mount_fd, dev_t dev, uint64_t offset, uint64_t size, bool inodes_used,
                        FsRangeList *out, char **ret_detail);
