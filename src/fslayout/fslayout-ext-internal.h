/* SPDX-License-Identifier: MIT */
/*
 * What fslayout-ext.c (an ext2/3/4's metadata, the journal, the scan) and fslayout-ext-alloc.c
 * (its used and free blocks, from the block bitmaps) share. Not for other modules:
 * fslayout-scan.h is the interface.
 */
#pragma once

#include <ext2fs/ext2fs.h>
#include <stdbool.h>

#include "fslayout-scan.h"

typedef struct ExtScan {
        ext2_filsys fs;
        uint64_t offset; /* of the file system on the device, bytes */
        uint64_t size;   /* of its region, bytes */
        FsRangeList *out;
        const FsLayoutHints *hints;
        void *bitmap; /* one block, for an inode bitmap */
} ExtScan;

/* ext_add_blocks() - blocks [@first, @first + @count) of the file system are @kind, cut off at
 * the end of its region. 0 or -ENOMEM. */
int ext_add_blocks(ExtScan *s, blk64_t first, blk64_t count, FsRangeKind kind);

/* ext_group_readable() - whether group @g's descriptor can be read; if so, libext2fs' accessors
 * of the group may be called (fslayout-ext.c says why it must be asked first). */
bool ext_group_readable(ext2_filsys fs, dgrp_t g);

/* ext_block_bitmap_uninit() - whether group @g's block bitmap was never written, or lies outside
 * the file system: libext2fs reads it as all free then, but for the group's static metadata. */
bool ext_block_bitmap_uninit(ext2_filsys fs, dgrp_t g);

/* ext_untrusted_bitmaps() - why the on-disk block bitmaps cannot be trusted (a static string),
 * or NULL if they can. */
const char *ext_untrusted_bitmaps(const ExtScan *s);

/*
 * ext_add_allocation() - USED and FREE for every block, from the block bitmaps, one group at a
 * time. A group whose bitmap cannot be read stops it, with the libext2fs error in *@ret_error.
 * Return: 0 (*@ret_error 0 if every group was read), or -ENOMEM.
 */
int ext_add_allocation(ExtScan *s, errcode_t *ret_error);
