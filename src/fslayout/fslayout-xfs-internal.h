/* SPDX-License-Identifier: MIT */
/*
 * What fslayout-xfs.c (the superblock, the AG headers, the free list and the log) and
 * fslayout-xfs-btree.c (the walk of the AG btrees) share: the geometry and the state of one
 * scan, and how they read and add blocks. Not for other modules: fslayout-scan.h is the
 * interface.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fslayout-scan.h"

typedef struct XfsGeometry {
        uint32_t block_size;
        uint32_t sector_size;
        uint32_t ag_blocks; /* of every AG but the last */
        uint32_t ag_count;
        uint64_t data_blocks;
        uint64_t log_start; /* an XFS block number (AG number above agblklog bits), 0: external */
        uint32_t log_blocks;
        uint8_t block_log;
        uint8_t inode_log;
        uint8_t inopb_log;
        uint8_t agblk_log;
        bool v5;
        bool sparse_inodes;
        bool finobt;
        bool rmapbt;
        bool reflink;
        uint8_t uuid[16]; /* the one v5 metadata blocks carry */
} XfsGeometry;

typedef struct XfsScan {
        int fd;
        uint64_t offset; /* of the file system on the device, bytes */
        uint64_t size;   /* of its region, bytes */
        XfsGeometry g;
        FsRangeList *out;
        const FsLayoutHints *hints;
        uint8_t *block;         /* one file system block */
        uint8_t *sector;        /* one sector, for the AG headers */
        uint32_t agno;          /* the AG being read */
        uint32_t ag_length;     /* its blocks */
        uint32_t header_blocks; /* blocks its header sectors occupy; btree blocks come after */
        uint64_t skipped;       /* blocks or records that did not validate */
} XfsScan;

/* The AG btrees, by the AG header that holds their root: AGF's, then AGI's. */
typedef enum XfsBtree {
        XFS_BTREE_BNO,      /* free space by block */
        XFS_BTREE_CNT,      /* free space by count */
        XFS_BTREE_RMAP,     /* reverse mapping */
        XFS_BTREE_REFCOUNT, /* reference counts */
        XFS_BTREE_INO,      /* inodes: its records name the inode chunks */
        XFS_BTREE_FINO,     /* free inodes */
} XfsBtree;

static inline uint64_t xfs_ag_start(const XfsScan *s, uint32_t agno) {
        return (uint64_t)agno * s->g.ag_blocks;
}

/* Where btree blocks and the free list may lie: after the headers, inside the AG. */
static inline bool xfs_agbno_valid(const XfsScan *s, uint32_t agbno) {
        return agbno >= s->header_blocks && agbno < s->ag_length;
}

/* xfs_read_at() - @len bytes at byte @pos of the file system, all inside its region. 0 or a
 * negative errno (-ERANGE if not inside). */
int xfs_read_at(XfsScan *s, uint64_t pos, void *buf, size_t len);
/* xfs_add_bytes() - bytes [@start, @start + @length) of the file system are METADATA, cut off at
 * the end of its region. 0 or -ENOMEM. */
int xfs_add_bytes(XfsScan *s, uint64_t start, uint64_t length);
/* xfs_add_ag_blocks() - blocks [@agbno, @agbno + @count) of the current AG are METADATA. */
int xfs_add_ag_blocks(XfsScan *s, uint64_t agbno, uint64_t count);

/*
 * xfs_walk_btree() - the btree @which of the current AG (s->agno), from its @root block at
 * @levels levels: every block that validates is METADATA, and so are the inode chunks an inode
 * btree's records name; a block that does not validate counts in s->skipped and is not followed.
 * No root (0 at 0 levels) is no btree. Return: 0 or -ENOMEM.
 */
int xfs_walk_btree(XfsScan *s, XfsBtree which, uint32_t root, uint32_t levels);
