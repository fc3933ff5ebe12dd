/* SPDX-License-Identifier: MIT */
/*
 * XFS's AG btrees (free space by block and by count, reverse mapping, reference counts, inodes
 * and free inodes), walked level by level from the root an AG header names: every block is
 * checked (magic number, level, record count; v5: its own address, AG and UUID) before it is
 * believed or followed, and the inode btree's records place the inode chunks. Read-only, plain
 * pread(), through fslayout-xfs.c.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "alloc-util.h"
#include "fslayout-xfs-internal.h"
#include "unaligned.h"
#include "util.h"

#define BTREE_LEVELS_MAX 16u /* deeper than any real AG btree: a corrupt root */
#define INODES_PER_CHUNK 64u
#define INODES_PER_HOLEMASK_BIT 4u /* sparse chunks: 16 bits, each for 4 inodes */

/* Short-form (AG) btree block header: v4's 16 bytes, v5 adds blkno, lsn, uuid, owner, crc. */
#define BTREE_V4_HEADER 16u
#define BTREE_V5_HEADER 56u

/* Byte offsets of the on-disk fields read here; all big-endian. */
enum {
        BT_LEVEL = 4,
        BT_NUMRECS = 6,
        BT_BLKNO = 16,
        BT_UUID = 32,
        BT_OWNER = 48,

        INOBT_HOLEMASK = 4,
};

/* The kinds of AG btree: magic numbers, and the sizes that place records, keys and pointers. */
typedef struct BtreeType {
        uint32_t magic_v4; /* 0: only on v5 */
        uint32_t magic_v5;
        uint32_t rec_len;
        uint32_t key_len;  /* a node entry's keys: low and high key for the overlapping rmapbt */
        bool inode_chunks; /* its leaf records name the inode chunks */
} BtreeType;

static const BtreeType btree_types[] = {
        [XFS_BTREE_BNO] = {0x41425442u, 0x41423342u, 8, 8, false},
        [XFS_BTREE_CNT] = {0x41425443u, 0x41423343u, 8, 8, false},
        [XFS_BTREE_RMAP] = {0, 0x524d4233u, 24, 40, false},
        [XFS_BTREE_REFCOUNT] = {0, 0x52334643u, 12, 4, false},
        [XFS_BTREE_INO] = {0x49414254u, 0x49414233u, 16, 4, true},
        [XFS_BTREE_FINO] = {0x46494254u, 0x46494233u, 16, 4, false},
};

#define BTREE_PTR_LEN 4u

/* AG block numbers of one btree level, gathered from the level above. */
typedef struct BlockList {
        uint32_t *v;
        size_t n;
        size_t allocated;
} BlockList;
static int block_list_add(BlockList *l, uint32_t agbno) {
        int r = ARRAY_GROW(l->v, l->allocated, l->n + 1);

        if (r < 0)
                return r;
        l->v[l->n++] = agbno;
        return 0;
}

static void block_list_done(BlockList *l) {
        free(l->v);
        *l = (BlockList){};
}

static int uint32_compare(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

        return x < y ? -1 : x > y;
}

/* Sorted, so that a level is read in offset order; without duplicates, so that a corrupt
 * btree whose nodes all point at the same children costs no more than a sound one. */
static void block_list_sort_unique(BlockList *l) {
        size_t w = 0;

        if (l->n == 0)
                return;
        qsort(l->v, l->n, sizeof(uint32_t), uint32_compare);
        for (size_t i = 1; i < l->n; i++)
                if (l->v[i] != l->v[w])
                        l->v[++w] = l->v[i];
        l->n = w + 1;
}

static uint32_t btree_header_len(const XfsScan *s) {
        return s->g.v5 ? BTREE_V5_HEADER : BTREE_V4_HEADER;
}

static uint32_t btree_maxrecs(const XfsScan *s, const BtreeType *type, unsigned level) {
        uint32_t room = s->g.block_size - btree_header_len(s);

        return level == 0 ? room / type->rec_len : room / (type->key_len + BTREE_PTR_LEN);
}

/* A v5 block names its own disk address (512-byte units), its AG and its file system. */
static bool btree_v5_header_valid(const XfsScan *s, const uint8_t *b, uint32_t agbno) {
        uint64_t daddr = (xfs_ag_start(s, s->agno) + agbno) << (s->g.block_log - 9);

        return unaligned_read_be64(b + BT_BLKNO) == daddr &&
               unaligned_read_be32(b + BT_OWNER) == s->agno &&
               memcmp(b + BT_UUID, s->g.uuid, sizeof(s->g.uuid)) == 0;
}

/* Reads block @agbno of the current AG into s->block; true if it is a block of @type at
 * @level, whose record count fits in it. */
static bool read_btree_block(XfsScan *s, const BtreeType *type, uint32_t agbno, unsigned level) {
        const uint8_t *b = s->block;
        uint32_t magic = s->g.v5 ? type->magic_v5 : type->magic_v4;

        if (!xfs_agbno_valid(s, agbno) ||
            xfs_read_at(s, (xfs_ag_start(s, s->agno) + agbno) << s->g.block_log, s->block,
                        s->g.block_size) < 0)
                return false;
        return magic != 0 && unaligned_read_be32(b) == magic &&
               unaligned_read_be16(b + BT_LEVEL) == level &&
               unaligned_read_be16(b + BT_NUMRECS) <= btree_maxrecs(s, type, level) &&
               (!s->g.v5 || btree_v5_header_valid(s, b, agbno));
}

/* The blocks of one inode chunk that hold inodes: all 64 inodes, or, in a sparse chunk, the
 * groups of 4 that the hole mask does not call holes. Whole blocks: an inode cluster starts
 * and ends on one. */
static int add_inode_chunk(XfsScan *s, const uint8_t *rec) {
        uint32_t agino = unaligned_read_be32(rec);
        uint16_t holes = s->g.sparse_inodes ? unaligned_read_be16(rec + INOBT_HOLEMASK) : 0;
        uint64_t first = (uint64_t)agino << s->g.inode_log; /* bytes into the AG */
        uint64_t group = (uint64_t)INODES_PER_HOLEMASK_BIT << s->g.inode_log;
        uint64_t ag_bytes = (uint64_t)s->ag_length << s->g.block_log;
        uint64_t mask = s->g.block_size - 1;
        int r = 0;

        if (first < (uint64_t)s->header_blocks << s->g.block_log ||
            first + INODES_PER_CHUNK * ((uint64_t)1 << s->g.inode_log) > ag_bytes) {
                s->skipped++;
                return 0;
        }
        for (unsigned bit = 0; r >= 0 && bit < 16;) {
                unsigned end = bit;
                uint64_t start, stop;

                if (holes & (1u << bit)) {
                        bit++;
                        continue;
                }
                while (end < 16 && !(holes & (1u << end)))
                        end++;
                start = (first + bit * group) & ~mask;
                stop = (first + end * group + mask) & ~mask;
                r = xfs_add_bytes(s, (xfs_ag_start(s, s->agno) << s->g.block_log) + start,
                                  stop - start);
                bit = end;
        }
        return r;
}

/* Marks the block in s->block, @agbno, and passes on what it points to: its children to
 * @next, or the inode chunks its records name. */
static int take_btree_block(XfsScan *s, const BtreeType *type, uint32_t agbno, unsigned level,
                            BlockList *next) {
        const uint8_t *b = s->block;
        uint32_t numrecs = unaligned_read_be16(b + BT_NUMRECS), header = btree_header_len(s);
        const uint8_t *ptr;
        int r;

        r = xfs_add_ag_blocks(s, agbno, 1);
        if (r < 0 || (level == 0 && !type->inode_chunks))
                return r;
        for (uint32_t i = 0; r >= 0 && i < numrecs; i++) {
                if (level == 0) {
                        r = add_inode_chunk(s, b + header + i * type->rec_len);
                        continue;
                }
                /* A sound level has no more pointers than the AG has blocks. */
                if (next->n >= s->ag_length) {
                        s->skipped++;
                        return 0;
                }
                ptr = b + header + btree_maxrecs(s, type, level) * type->key_len +
                      i * BTREE_PTR_LEN;
                r = block_list_add(next, unaligned_read_be32(ptr));
        }
        return r;
}

/* Tells the hints the blocks of a btree level (sorted) before they are read one by one. A single
 * block is not worth it: a root usually shares the AG headers' snapshot block. */
static void hint_level(XfsScan *s, const BlockList *level) {
        _cleanup_(fs_range_list_done) FsRangeList l = {};
        int r = 0;

        if (!s->hints || level->n < 2)
                return;
        for (size_t i = 0; r >= 0 && i < level->n; i++)
                if (xfs_agbno_valid(s, level->v[i]))
                        r = fs_range_list_add(&l,
                                              s->offset + ((xfs_ag_start(s, s->agno) + level->v[i])
                                                           << s->g.block_log),
                                              s->g.block_size, FS_RANGE_METADATA);
        if (r >= 0)
                fs_hint_ahead(s->hints, &l);
}

/* Level by level from the root, as the levels are numbered: each block must carry the level
 * its parent's level implies, so that no walk can come back to a block it has been through. */
int xfs_walk_btree(XfsScan *s, XfsBtree which, uint32_t root, uint32_t levels) {
        const BtreeType *type = &btree_types[which];
        _cleanup_(block_list_done) BlockList level = {}, next = {};
        int r;

        if (root == 0 && levels == 0)
                return 0; /* not there */
        if (levels == 0 || levels > BTREE_LEVELS_MAX) {
                s->skipped++;
                return 0;
        }
        r = block_list_add(&level, root);
        for (unsigned l = levels; r >= 0 && l-- > 0;) {
                BlockList swap;

                block_list_sort_unique(&level);
                hint_level(s, &level);
                for (size_t i = 0; r >= 0 && i < level.n; i++) {
                        if (!read_btree_block(s, type, level.v[i], l)) {
                                s->skipped++;
                                continue;
                        }
                        r = take_btree_block(s, type, level.v[i], l, &next);
                }
                swap = level;
                level = next;
                next = swap;
                next.n = 0;
        }
        return r;
}
