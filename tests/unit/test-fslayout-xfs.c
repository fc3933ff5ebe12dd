/* SPDX-License-Identifier: MIT */
/*
 * fslayout's XFS scanner: a mounted XFS on a loop device (GETFSMAP) against FIEMAP and xfs_db, as
 * root; its own reading of the metadata against xfs_db's account of every block, on images of
 * several geometries, on a partition, against GETFSMAP on a file system with the reverse-mapping
 * btree, and on corrupted images. Tests skip when a tool is missing or root is needed.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fsmap.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "fixtures-fslayout.h"
#include "fslayout-scan.h"
#include "fslayout.h"
#include "parse.h"
#include "util.h"

static uint64_t xfs_db_number(const char *p1, const char *command, const char *key) {
        _cleanup_free_ char *out = output_of("xfs_db -r -c '%s' %s 2>/dev/null", command, p1);
        const char *p = strstr(out, key);

        if (!p)
                fail_msg("no \"%s\" in the output of xfs_db -c '%s'", key, command);
        return strtoull(p + strlen(key), NULL, 10);
}

/*
 * XFS on a GPT partition, with the reverse-mapping btree so that GETFSMAP names metadata
 * owners. Mounted: the files' extents are used, metadata (log, AG headers, btrees) and free space
 * are reported, and the free space agrees with xfs_db's count of the free-space btree after
 * unmounting to within 1 MiB (xfs_db counts single free blocks that the mounted file system
 * holds on its AG free lists). Unmounted: the metadata read from the device, nothing free, and
 * the note says why.
 */
static void test_fslayout_xfs(void **state) {
        Fixture *f = *state;
        _cleanup_(fslayout_free) FsLayout mounted = {}, unmounted = {};
        _cleanup_free_ Extents *files = calloc(1, sizeof(Extents));
        uint64_t base, size, free_db, free_mapped;
        char p1[96];

        REQUIRE_ROOT();
        REQUIRE_TOOLS("sgdisk", "losetup", "partx", "mkfs.xfs", "xfs_db");
        assert_non_null(files);
        make_image(f, 640 * MiB);
        assert_int_equal(run("sgdisk -o -n1:2048:0 %s >/dev/null", f->image), 0);
        attach(f);
        (void)snprintf(p1, sizeof(p1), "%sp1", f->loop);
        base = partition_bytes(f, "start");
        size = partition_bytes(f, "size");
        assert_int_equal(run("mkfs.xfs -q -f -m rmapbt=1 %s >/dev/null 2>&1", p1), 0);
        mount_p1(f, "xfs");
        fill_and_thin(f, 50, base, files);

        discover(f->loop, &mounted, "mounted XFS, 639 MiB, filled to 50%, two thirds deleted");
        assert_true(has_note(&mounted, "partition 1 (xfs, 639.0 MiB, mounted on ",
                             "(GETFSMAP, own reading for the AG metadata)"));
        assert_extents_used(&mounted, files);
        free_mapped = fslayout_bytes_in(&mounted, base, size, FS_RANGE_FREE);
        assert_true(fslayout_bytes_in(&mounted, base, size, FS_RANGE_METADATA) > 0);
        assert_true(fslayout_bytes_in(&mounted, base, size, FS_RANGE_USED) >= files->bytes);
        print_figures("GETFSMAP", &mounted, base, size);
        unmount(f);

        free_db = xfs_db_number(p1, "freesp -s", "total free blocks ") *
                  xfs_db_number(p1, "sb 0' -c 'p blocksize", "blocksize = ");
        print_message("  free: GETFSMAP %" PRIu64 ", xfs_db freesp %" PRIu64 "\n", free_mapped,
                      free_db);
        assert_true(llabs((long long)free_mapped - (long long)free_db) <= (long long)MiB);

        discover(f->loop, &unmounted, "the same, unmounted");
        assert_true(has_note(&unmounted, "partition 1 (xfs, 639.0 MiB, unmounted)",
                             "free space unknown"));
        assert_true(has_note(&unmounted, "partition 1 (xfs", "the rest treated as used"));
        assert_true(has_note(&unmounted, "partition 1 (xfs", "(own reading of the XFS metadata)"));
        assert_int_equal(fslayout_bytes(&unmounted, FS_RANGE_FREE), 0);
        assert_true(fslayout_bytes_in(&unmounted, base, size, FS_RANGE_METADATA) > 0);
        assert_extents_used(&unmounted, files);
}

/* ---- XFS's metadata, read from the device ---- */

/* xfs_db's names (blockget, blockuse) for the blocks the scanner must find: AG headers, free
 * list, btrees, inode chunks, log. Every other type (free1, free2, data, dir, btbmapd, ...) must
 * stay used. */
static const char *const xfs_metadata_types[] = {
        "sb",     "agf",      "agi",   "agfl",   "freelist", "btbno", "btcnt",
        "btrmap", "btrefcnt", "btino", "btfino", "inode",    "log",
};
#define XFS_OTHER UINT8_MAX

typedef struct XfsFacts {
        uint64_t block_size;
        uint64_t ag_blocks;
        uint64_t ag_count;
        uint64_t data_blocks;
        uint64_t agblk_log;
        uint64_t inode_size;
        uint64_t icount;
        uint8_t *types; /* per block: an index into xfs_metadata_types, or XFS_OTHER */
} XfsFacts;

static void xfs_facts_done(XfsFacts *x) {
        free(x->types);
}

static uint64_t xfs_sb_number(const char *spec, const char *field) {
        char command[64], key[64];

        (void)snprintf(command, sizeof(command), "sb 0' -c 'p %s", field);
        (void)snprintf(key, sizeof(key), "%s = ", field);
        return xfs_db_number(spec, command, key);
}

static uint8_t xfs_type_index(const char *type) {
        for (size_t i = 0; i < ELEMENTSOF(xfs_metadata_types); i++)
                if (streq_ptr(type, xfs_metadata_types[i]))
                        return (uint8_t)i;
        return XFS_OTHER;
}

/* The geometry, and the type of every block as xfs_db's blockget finds it, AG by AG. */
static void xfs_facts(const char *spec, XfsFacts *ret) {
        _cleanup_free_ char *commands = NULL, *out = NULL;
        XfsFacts x = {};
        size_t length = 0;
        FILE *f;
        char *line, *saveptr = NULL;
        uint64_t listed = 0;

        x.block_size = xfs_sb_number(spec, "blocksize");
        x.ag_blocks = xfs_sb_number(spec, "agblocks");
        x.ag_count = xfs_sb_number(spec, "agcount");
        x.data_blocks = xfs_sb_number(spec, "dblocks");
        x.agblk_log = xfs_sb_number(spec, "agblklog");
        x.inode_size = xfs_sb_number(spec, "inodesize");
        x.icount = xfs_sb_number(spec, "icount");
        f = open_memstream(&commands, &length);
        assert_non_null(f);
        for (uint64_t ag = 0; ag < x.ag_count; ag++)
                fprintf(f, " -c 'fsblock %" PRIu64 "' -c 'blockuse -c %" PRIu64 "'",
                        ag << x.agblk_log, MIN(x.ag_blocks, x.data_blocks - ag * x.ag_blocks));
        assert_int_equal(fclose(f), 0);
        out = output_of("xfs_db -r -c 'blockget -n' %s '%s' 2>/dev/null", commands, spec);
        x.types = calloc(x.data_blocks, 1);
        assert_non_null(x.types);
        memset(x.types, XFS_OTHER, x.data_blocks);
        for (line = strtok_r(out, "\n", &saveptr); line; line = strtok_r(NULL, "\n", &saveptr)) {
                unsigned long long ag, agbno;
                char type[32];

                if (sscanf(line, "block %*u (%llu/%llu) type %31s", &ag, &agbno, type) != 3)
                        continue;
                assert_true(ag * x.ag_blocks + agbno < x.data_blocks);
                x.types[ag * x.ag_blocks + agbno] = xfs_type_index(type);
                listed++;
        }
        assert_int_equal(listed, x.data_blocks);
        *ret = x;
}

/* The metadata of the XFS at @base must be exactly what xfs_db calls metadata: runs of blocks
 * of one class are checked at once. Returns the metadata blocks; inode blocks go to
 * *ret_inode_blocks. */
static uint64_t check_with_xfs_db(const FsLayout *l, uint64_t base, const XfsFacts *x,
                                  uint64_t *ret_inode_blocks) {
        uint64_t metadata = 0, inodes = 0, run = 0;
        uint8_t inode = xfs_type_index("inode");

        for (uint64_t b = 0; b < x->data_blocks; b++) {
                bool is_metadata = x->types[b] != XFS_OTHER;

                metadata += is_metadata;
                inodes += x->types[b] == inode;
                if (b + 1 < x->data_blocks && (x->types[b + 1] != XFS_OTHER) == is_metadata)
                        continue;
                assert_kinds(l, base + run * x->block_size, (b + 1 - run) * x->block_size,
                             ONLY(is_metadata ? FS_RANGE_METADATA : FS_RANGE_USED),
                             is_metadata ? "xfs_db metadata" : "xfs_db: not metadata");
                run = b + 1;
        }
        assert_int_equal(
                fslayout_bytes_in(l, base, x->data_blocks * x->block_size, FS_RANGE_METADATA),
                metadata * x->block_size);
        *ret_inode_blocks = inodes;
        return metadata;
}

/* A prototype file for mkfs.xfs -p: @n_small files of 4 KiB in one directory (enough for a
 * two-level inode btree with 1 KiB blocks), and two files of 8 MiB at the top. No root needed. */
static void make_xfs_proto(Fixture *f, char *proto, size_t size, int n_small) {
        char small[160], big[160];
        _cleanup_(fclosep) FILE *p = NULL;

        (void)snprintf(small, sizeof(small), "%s/small", f->dir);
        (void)snprintf(big, sizeof(big), "%s/big", f->dir);
        write_file(small, 4 * KiB);
        write_file(big, FILE_SIZE);
        (void)snprintf(proto, size, "%s/proto", f->dir);
        p = fopen(proto, "we");
        assert_non_null(p);
        fprintf(p, "/dev/null\n0 0\nd--755 0 0\nbig1 ---644 0 0 %s\nbig2 ---644 0 0 %s\n", big,
                big);
        fprintf(p, "many d--755 0 0\n");
        for (int i = 0; i < n_small; i++)
                fprintf(p, "f%d ---644 0 0 %s\n", i, small);
        fprintf(p, "$\n$\n");
}

/* An XFS made from @proto with @options on @path, starting at @base (the whole file, or a file
 * to copy there). */
static void mkfs_xfs(const char *path, const char *options, const char *proto) {
        assert_int_equal(run("mkfs.xfs -q -f %s -p %s %s >/dev/null 2>&1", options, proto, path),
                         0);
}

/*
 * The file system variants mkfs.xfs can make (default: CRC, finobt, sparse inodes, reflink, no
 * rmapbt; 1 KiB blocks; 4 KiB sectors; v4 without CRC; rmapbt; none of the optional btrees),
 * each on a whole image, with 4000 small files and two large ones. Discovery reads their
 * metadata, nothing is free, and every block is what xfs_db calls it: metadata where xfs_db sees
 * headers, free list, btree blocks, inodes or log, used everywhere else. The inode blocks hold
 * the superblock's count of inodes.
 */
static void test_fslayout_xfs_variants(void **state) {
        static const char *const variants[] = {
                "",         "-b size=1024", "-s size=4096",
                "-m crc=0", "-m rmapbt=1",  "-m finobt=0,reflink=0 -i sparse=0",
        };
        Fixture *f = *state;
        char proto[160];

        REQUIRE_TOOLS("mkfs.xfs", "xfs_db");
        make_xfs_proto(f, proto, sizeof(proto), 4000);
        for (size_t i = 0; i < ELEMENTSOF(variants); i++) {
                _cleanup_(fslayout_free) FsLayout l = {};
                _cleanup_(xfs_facts_done) XfsFacts x = {};
                uint64_t metadata, inode_blocks;

                make_image(f, 320 * MiB);
                mkfs_xfs(f->image, variants[i], proto);
                discover(f->image, &l, variants[i][0] ? variants[i] : "mkfs.xfs defaults");
                assert_true(has_note(&l, "no partition table: whole device (xfs, 320.0 MiB",
                                     "(own reading of the XFS metadata)"));
                assert_true(has_note(&l, "the rest treated as used: free space unknown", NULL));
                assert_false(has_note(&l, "did not validate", NULL));
                assert_int_equal(fslayout_bytes(&l, FS_RANGE_FREE), 0);
                xfs_facts(f->image, &x);
                metadata = check_with_xfs_db(&l, 0, &x, &inode_blocks);
                print_message("  metadata: %" PRIu64 " blocks of %" PRIu64 " (xfs_db agrees), "
                              "%" PRIu64 " of them inodes for %" PRIu64 " inodes\n",
                              metadata, x.block_size, inode_blocks, x.icount);
                assert_int_equal(inode_blocks * x.block_size, x.icount * x.inode_size);
        }
}

/* The AG btree roots of AG @ag, as xfs_db reads them from the AGF and AGI, are metadata. */
static void check_xfs_roots(const FsLayout *l, const char *spec, uint64_t base, const XfsFacts *x,
                            unsigned ag) {
        static const char *const roots[][2] = {
                {"agf", "bnoroot"}, {"agf", "cntroot"},   {"agf", "refcntroot"},
                {"agi", "root"},    {"agi", "free_root"},
        };

        for (size_t i = 0; i < ELEMENTSOF(roots); i++) {
                char command[64], key[64];
                uint64_t agbno;

                (void)snprintf(command, sizeof(command), "%s %u' -c 'p %s", roots[i][0], ag,
                               roots[i][1]);
                (void)snprintf(key, sizeof(key), "%s = ", roots[i][1]);
                agbno = xfs_db_number(spec, command, key);
                assert_true(agbno > 0 && agbno < x->ag_blocks);
                assert_kinds(l, base + (ag * x->ag_blocks + agbno) * x->block_size, x->block_size,
                             ONLY(FS_RANGE_METADATA), roots[i][1]);
        }
}

/*
 * A default XFS on a GPT partition of an image, made in a file of its own and copied in (no
 * root needed), smaller than its partition. The partition's note says what was read and why
 * the rest is used; the GPT's sectors stay metadata; every block agrees with xfs_db, the btree
 * roots that xfs_db reads from each AGF and AGI included; beyond the file system's end the
 * partition is used.
 */
static void test_fslayout_xfs_partitioned(void **state) {
        Fixture *f = *state;
        _cleanup_(fslayout_free) FsLayout l = {};
        _cleanup_(xfs_facts_done) XfsFacts x = {};
        const uint64_t size = 400 * MiB, fs_size = 320 * MiB;
        char proto[160], fs[160];
        uint64_t inode_blocks;

        REQUIRE_TOOLS("sgdisk", "mkfs.xfs", "xfs_db");
        make_xfs_proto(f, proto, sizeof(proto), 500);
        (void)snprintf(fs, sizeof(fs), "%s/fs.img", f->dir);
        assert_int_equal(run("truncate -s %" PRIu64 " %s", fs_size, fs), 0);
        mkfs_xfs(fs, "", proto);
        make_image(f, size);
        assert_int_equal(run("sgdisk -o -n1:2048:0 %s >/dev/null", f->image), 0);
        assert_int_equal(
                run("dd if=%s of=%s bs=1M seek=1 conv=notrunc,sparse status=none", fs, f->image),
                0);

        discover(f->image, &l, "GPT: a default XFS (320 MiB) in a partition of 399 MiB");
        assert_true(has_note(&l, "partition 1 (xfs, 399.0 MiB, image file): ",
                             "the rest treated as used: free space unknown"));
        assert_true(has_note(&l, "partition 1 (xfs", "(own reading of the XFS metadata)"));
        assert_int_equal(fslayout_bytes(&l, FS_RANGE_FREE), 0);
        assert_kinds(&l, 0, 34 * 512, ONLY(FS_RANGE_METADATA), "primary GPT");
        xfs_facts(fs, &x);
        (void)check_with_xfs_db(&l, PART_OFFSET, &x, &inode_blocks);
        assert_int_equal(inode_blocks * x.block_size, x.icount * x.inode_size);
        for (unsigned ag = 0; ag < x.ag_count; ag++)
                check_xfs_roots(&l, fs, PART_OFFSET, &x, ag);
        assert_kinds(&l, PART_OFFSET + fs_size, size - 34 * 512 - PART_OFFSET - fs_size,
                     ONLY(FS_RANGE_USED), "beyond the file system");
}

/* Runs the scanner and holds it to what any answer must be: metadata only, inside the region;
 * nothing at all and a reason if it failed. The layout of the ranges goes to @ret if not NULL. */
static int scan_xfs(const char *path, uint64_t offset, uint64_t size, uint64_t device_size,
                    FsLayout *ret) {
        _cleanup_free_ char *detail = NULL;
        FsRangeList list = {};
        int r;

        r = fslayout_scan_xfs(path, offset, size, NULL, &list, &detail);
        assert_true(r == FS_SCAN_METADATA_ONLY || r == FS_SCAN_FAILED);
        assert_non_null(detail);
        if (r == FS_SCAN_FAILED)
                assert_int_equal(list.n, 0);
        for (size_t i = 0; i < list.n; i++) {
                assert_int_equal(list.ranges[i].kind, FS_RANGE_METADATA);
                assert_true(list.ranges[i].offset >= offset && list.ranges[i].length > 0 &&
                            list.ranges[i].length <= offset + size - list.ranges[i].offset);
        }
        if (ret)
                assert_int_equal(fs_ranges_normalize(list.ranges, list.n, device_size, &ret->ranges,
                                                     &ret->n_ranges),
                                 0);
        fs_range_list_done(&list);
        return r;
}

/* From xfs_fs.h: copy-on-write staging extents, in use but not metadata. None are expected. */
#define XFS_FMR_OWN_COW FMR_OWNER('X', 7)

typedef struct Fsmap {
        FsRange ranges[65536];
        uint64_t owner[65536]; /* FMR_OWN_* for special owners, else 0 */
        size_t n;
        uint64_t mapping_bytes; /* extent-map and attribute-fork blocks, left out */
} Fsmap;

/* GETFSMAP's records, as bytes of the whole device: METADATA for the AG headers and free lists,
 * btrees, inodes, log and reference counts; FREE for free space; USED for file data; extent-map
 * and attribute-fork blocks, which the scanner does not look for, are left out. */
static void getfsmap(const char *mount_point, uint64_t base, Fsmap *ret) {
        _cleanup_close_ int fd = open(mount_point, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_free_ struct fsmap_head *head = calloc(1, fsmap_sizeof(1024));
        bool done = false;

        assert_true(fd >= 0 && head);
        head->fmh_count = 1024;
        head->fmh_keys[1].fmr_device = UINT32_MAX;
        head->fmh_keys[1].fmr_flags = UINT32_MAX;
        head->fmh_keys[1].fmr_physical = UINT64_MAX;
        head->fmh_keys[1].fmr_owner = UINT64_MAX;
        head->fmh_keys[1].fmr_offset = UINT64_MAX;
        while (!done) {
                assert_int_equal(ioctl(fd, FS_IOC_GETFSMAP, head), 0);
                for (unsigned i = 0; i < head->fmh_entries; i++) {
                        const struct fsmap *rec = &head->fmh_recs[i];
                        bool special = rec->fmr_flags & FMR_OF_SPECIAL_OWNER;
                        FsRangeKind kind = FS_RANGE_USED;

                        if (!special && (rec->fmr_flags & (FMR_OF_EXTENT_MAP | FMR_OF_ATTR_FORK))) {
                                ret->mapping_bytes += rec->fmr_length;
                                continue;
                        }
                        if (special)
                                kind = rec->fmr_owner == FMR_OWN_FREE ? FS_RANGE_FREE
                                                                      : FS_RANGE_METADATA;
                        assert_true(ret->n < ELEMENTSOF(ret->ranges));
                        ret->owner[ret->n] = special ? rec->fmr_owner : 0;
                        ret->ranges[ret->n++] =
                                (FsRange){base + rec->fmr_physical, rec->fmr_length, kind};
                }
                done = head->fmh_entries == 0 ||
                       (head->fmh_recs[head->fmh_entries - 1].fmr_flags & FMR_OF_LAST);
                if (!done)
                        head->fmh_keys[0] = head->fmh_recs[head->fmh_entries - 1];
        }
}

/* Writes @n files of 4 KiB into @dir and removes every other one: many inodes, and holes in the
 * free space for the free-space btrees to track. */
static void make_small_files(const char *dir, int n) {
        assert_int_equal(mkdir(dir, 0755), 0);
        for (int i = 0; i < n; i++) {
                char path[256];

                (void)snprintf(path, sizeof(path), "%s/s%d", dir, i);
                write_file(path, 4 * KiB);
        }
        for (int i = 0; i < n; i += 2) {
                char path[256];

                (void)snprintf(path, sizeof(path), "%s/s%d", dir, i);
                assert_int_equal(unlink(path), 0);
        }
}

/*
 * GETFSMAP as the witness: an XFS with the reverse-mapping btree names the owner of every
 * block. 1 KiB blocks, thousands of small files (half deleted) and large ones (two thirds
 * deleted) give btrees of several levels. Remounted read-only, everything is on disk and
 * GETFSMAP's answer is final; then, unmounted, the scanner reads the partition of the loop
 * device: every byte GETFSMAP gives to the AG headers and free lists, btrees, inodes, log and
 * reference counts is metadata, no byte it calls free or file data is, and the two agree on the
 * total to the byte. GETFSMAP's extent-map and attribute-fork blocks are not looked for (no AG
 * btree leads to them): the discovery of the mounted file system has those in addition.
 */
static void test_fslayout_xfs_getfsmap(void **state) {
        Fixture *f = *state;
        _cleanup_(fslayout_free) FsLayout mounted = {}, scanned = {};
        _cleanup_free_ Extents *files = calloc(1, sizeof(Extents));
        _cleanup_free_ Fsmap *map = calloc(1, sizeof(Fsmap));
        uint64_t base, size, device_size, fsmap_metadata = 0, levels;
        char p1[96], dir[160];

        REQUIRE_ROOT();
        REQUIRE_TOOLS("sgdisk", "losetup", "partx", "mkfs.xfs", "xfs_db");
        assert_true(files && map);
        make_image(f, 640 * MiB);
        assert_int_equal(run("sgdisk -o -n1:2048:0 %s >/dev/null", f->image), 0);
        attach(f);
        (void)snprintf(p1, sizeof(p1), "%sp1", f->loop);
        base = partition_bytes(f, "start");
        size = partition_bytes(f, "size");
        device_size = 640 * MiB;
        assert_int_equal(run("mkfs.xfs -q -f -b size=1024 -m rmapbt=1 %s >/dev/null 2>&1", p1), 0);
        mount_p1(f, "xfs");
        (void)snprintf(dir, sizeof(dir), "%s/small", f->mount_point);
        make_small_files(dir, 6000);
        fill_and_thin(f, 40, base, files);
        assert_int_equal(mount(p1, f->mount_point, "xfs", MS_REMOUNT | MS_RDONLY, NULL), 0);
        getfsmap(f->mount_point, base, map);
        discover(f->loop, &mounted, "XFS with rmapbt, 1 KiB blocks, mounted read-only");
        assert_true(has_note(&mounted, "partition 1 (xfs", "(GETFSMAP, own reading for the AG"));
        unmount(f);

        levels = xfs_db_number(p1, "agf 0' -c 'p rmaplevel", "rmaplevel = ");
        print_message("  AG 0: rmap btree of %" PRIu64 " levels, inode btree of %" PRIu64
                      ", free-space btree of %" PRIu64 "\n",
                      levels, xfs_db_number(p1, "agi 0' -c 'p level", "level = "),
                      xfs_db_number(p1, "agf 0' -c 'p bnolevel", "bnolevel = "));
        assert_true(levels >= 2);
        assert_int_equal(scan_xfs(f->loop, base, size, device_size, &scanned),
                         FS_SCAN_METADATA_ONLY);
        for (size_t i = 0; i < map->n; i++) {
                const FsRange *r = &map->ranges[i];

                if (r->kind == FS_RANGE_METADATA) {
                        assert_true(map->owner[i] != XFS_FMR_OWN_COW);
                        assert_kinds(&scanned, r->offset, r->length, ONLY(FS_RANGE_METADATA),
                                     "GETFSMAP metadata");
                        fsmap_metadata += r->length;
                } else
                        assert_kinds(&scanned, r->offset, r->length, ONLY(FS_RANGE_USED),
                                     r->kind == FS_RANGE_FREE ? "GETFSMAP free" : "file data");
        }
        print_message("  metadata: GETFSMAP %" PRIu64 " bytes (and %" PRIu64
                      " of extent maps), read from the device %" PRIu64
                      " bytes; the mounted discovery had %" PRIu64 "\n",
                      fsmap_metadata, map->mapping_bytes,
                      fslayout_bytes(&scanned, FS_RANGE_METADATA),
                      fslayout_bytes_in(&mounted, base, size, FS_RANGE_METADATA));
        assert_int_equal(fslayout_bytes(&scanned, FS_RANGE_METADATA), fsmap_metadata);
        /* Mounted, GETFSMAP adds the extent-map blocks, which no AG btree leads to. */
        assert_int_equal(fslayout_bytes_in(&mounted, base, size, FS_RANGE_METADATA),
                         fsmap_metadata + map->mapping_bytes);
}

/* xorshift64: the same corruptions on every run. */
static uint64_t next_random(uint64_t *state) {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        return *state;
}

static void pwrite_all(int fd, const void *buf, size_t len, uint64_t pos) {
        assert_int_equal(pwrite(fd, buf, len, (off_t)pos), (ssize_t)len);
}

static void pread_all(int fd, void *buf, size_t len, uint64_t pos) {
        assert_int_equal(pread(fd, buf, len, (off_t)pos), (ssize_t)len);
}

typedef struct Patch {
        size_t offset; /* in the superblock, or in sector @sector of AG 0 */
        unsigned sector;
        uint8_t width; /* bytes, big-endian */
        uint64_t value;
        int result; /* expected */
        const char *what;
} Patch;

static void put_be(uint8_t *p, uint8_t width, uint64_t value) {
        for (uint8_t i = 0; i < width; i++)
                p[i] = (uint8_t)(value >> (8 * (width - 1 - i)));
}

/* Superblock fields out of reach, AG headers with absurd values: FAILED, or partial metadata. */
static void check_patches(int fd, const char *image, uint64_t size, uint64_t full) {
        static const Patch patches[] = {
                {0, 0, 4, 0x58465343, FS_SCAN_FAILED, "magic"},
                {100, 0, 2, 0xb4a3, FS_SCAN_FAILED, "version 3"},
                {216, 0, 4, 0x80000000, FS_SCAN_FAILED, "unknown incompatible feature"},
                {126, 0, 1, 1, FS_SCAN_FAILED, "mkfs in progress"},
                {4, 0, 4, 0, FS_SCAN_FAILED, "block size 0"},
                {4, 0, 4, 1u << 30, FS_SCAN_FAILED, "block size 1 GiB"},
                {120, 0, 1, 0, FS_SCAN_FAILED, "blocklog 0"},
                {120, 0, 1, 31, FS_SCAN_FAILED, "blocklog 31"},
                {120, 0, 1, 255, FS_SCAN_FAILED, "blocklog 255"},
                {102, 0, 2, 0, FS_SCAN_FAILED, "sector size 0"},
                {104, 0, 2, 0xffff, FS_SCAN_FAILED, "inode size"},
                {88, 0, 4, 0, FS_SCAN_FAILED, "agcount 0"},
                {88, 0, 4, UINT32_MAX, FS_SCAN_FAILED, "agcount 2^32-1"},
                {84, 0, 4, 0, FS_SCAN_FAILED, "agblocks 0"},
                {84, 0, 4, 1, FS_SCAN_FAILED, "agblocks 1"},
                {84, 0, 4, UINT32_MAX, FS_SCAN_FAILED, "agblocks 2^32-1"},
                {124, 0, 1, 0, FS_SCAN_FAILED, "agblklog 0"},
                {8, 0, 8, 0, FS_SCAN_FAILED, "dblocks 0"},
                {8, 0, 8, UINT64_MAX, FS_SCAN_FAILED, "dblocks 2^64-1"},
                {48, 0, 8, UINT64_MAX, FS_SCAN_METADATA_ONLY, "logstart"},
                {96, 0, 4, UINT32_MAX, FS_SCAN_METADATA_ONLY, "logblocks"},
                {28, 1, 4, 200, FS_SCAN_METADATA_ONLY, "AGF: bno btree of 200 levels"},
                {16, 1, 4, UINT32_MAX, FS_SCAN_METADATA_ONLY, "AGF: bno root"},
                {48, 1, 4, UINT32_MAX, FS_SCAN_METADATA_ONLY, "AGF: flcount"},
                {24, 2, 4, UINT32_MAX, FS_SCAN_METADATA_ONLY, "AGI: inode btree levels"},
                {20, 2, 4, 1, FS_SCAN_METADATA_ONLY, "AGI: root in the AG header"},
        };

        for (size_t i = 0; i < ELEMENTSOF(patches); i++) {
                const Patch *p = &patches[i];
                uint8_t saved[8], field[8];
                uint64_t pos = p->sector * 512 + p->offset;
                _cleanup_(fslayout_free) FsLayout l = {};

                pread_all(fd, saved, p->width, pos);
                put_be(field, p->width, p->value);
                pwrite_all(fd, field, p->width, pos);
                if (scan_xfs(image, 0, size, size, &l) != p->result)
                        fail_msg("%s: not the expected result", p->what);
                assert_true(fslayout_bytes(&l, FS_RANGE_METADATA) <= full);
                pwrite_all(fd, saved, p->width, pos);
        }
}

/* Random bytes over random places of one kind: whole blocks or sectors, a few bytes, or one
 * 32-bit field set to a telling value. */
static void scramble(int fd, uint64_t pos, size_t len, uint64_t *seed) {
        static const uint32_t values[] = {0, 1, 2, 0x7fffffff, UINT32_MAX, 64, 81920};
        uint8_t buf[4096];
        uint64_t how = next_random(seed) % 3;

        assert_true(len <= sizeof(buf));
        pread_all(fd, buf, len, pos);
        if (how == 0)
                for (size_t i = 0; i < len; i++)
                        buf[i] = (uint8_t)next_random(seed);
        else if (how == 1)
                for (uint64_t n = next_random(seed) % 8 + 1; n > 0; n--)
                        buf[next_random(seed) % len] = (uint8_t)next_random(seed);
        else
                put_be(buf + next_random(seed) % (len / 4) * 4, 4,
                       values[next_random(seed) % ELEMENTSOF(values)]);
        pwrite_all(fd, buf, len, pos);
}

static uint32_t be32_of(const uint8_t *p) {
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A btree block at @pos that claims 65535 records: it is skipped, and nothing is read beyond
 * it (ASan, valgrind). */
static void check_numrecs(int fd, const char *image, uint64_t size, uint64_t pos, uint64_t full) {
        _cleanup_(fslayout_free) FsLayout l = {};
        uint8_t saved[2], numrecs[2] = {0xff, 0xff};

        pread_all(fd, saved, sizeof(saved), pos + 6);
        pwrite_all(fd, numrecs, sizeof(numrecs), pos + 6);
        assert_int_equal(scan_xfs(image, 0, size, size, &l), FS_SCAN_METADATA_ONLY);
        assert_true(fslayout_bytes(&l, FS_RANGE_METADATA) < full);
        pwrite_all(fd, saved, sizeof(saved), pos + 6);
}

typedef struct Target {
        uint64_t pos;
        size_t len;
} Target;

/*
 * A default XFS with 1 KiB blocks and a two-level inode btree, corrupted: superblock fields out
 * of range (FAILED, nothing added) and AG header fields out of range (partial metadata); an
 * inode btree root whose pointers all lead to the same child (read once, no blow-up); a node
 * and a leaf that claim more records than fit (skipped, nothing read beyond); then 300
 * rounds of random bytes over the AGF, AGI, AGFL sectors and btree blocks xfs_db found, and 300
 * over the superblock. Every answer stays inside the file system's region; under ASan and
 * valgrind, no read strays either.
 */
static void test_fslayout_xfs_corrupt(void **state) {
        Fixture *f = *state;
        _cleanup_(fslayout_free) FsLayout whole = {};
        _cleanup_(xfs_facts_done) XfsFacts x = {};
        _cleanup_free_ Target *targets = NULL;
        _cleanup_close_ int fd = -1;
        const uint64_t size = 320 * MiB;
        uint64_t full, seed = 0x9e3779b97f4a7c15u, root_pos = 0;
        size_t n_targets = 0;
        uint8_t saved[4096], sb[512];
        char proto[160];

        REQUIRE_TOOLS("mkfs.xfs", "xfs_db");
        make_xfs_proto(f, proto, sizeof(proto), 4000);
        make_image(f, size);
        mkfs_xfs(f->image, "-b size=1024", proto);
        xfs_facts(f->image, &x);
        fd = open(f->image, O_RDWR | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(scan_xfs(f->image, 0, size, size, &whole), FS_SCAN_METADATA_ONLY);
        full = fslayout_bytes(&whole, FS_RANGE_METADATA);

        /* Out of the region: the file system does not fit, or there is no room for a superblock;
         * a path that is not there. */
        assert_int_equal(scan_xfs(f->image, 0, size - MiB, size, NULL), FS_SCAN_FAILED);
        assert_int_equal(scan_xfs(f->image, 0, 256, size, NULL), FS_SCAN_FAILED);
        assert_int_equal(scan_xfs(f->image, size - 4096, 4096, size, NULL), FS_SCAN_FAILED);
        assert_int_equal(scan_xfs("/nonexistent/xfs.img", 0, size, size, NULL), FS_SCAN_FAILED);
        check_patches(fd, f->image, size, full);

        /* The two-level inode btree's root, all pointers set to its first child. */
        for (unsigned ag = 0; ag < x.ag_count && root_pos == 0; ag++) {
                char command[32];

                (void)snprintf(command, sizeof(command), "agi %u' -c 'p level", ag);
                if (xfs_db_number(f->image, command, "level = ") < 2)
                        continue;
                (void)snprintf(command, sizeof(command), "agi %u' -c 'p root", ag);
                root_pos = (ag * x.ag_blocks + xfs_db_number(f->image, command, "root = ")) *
                           x.block_size;
        }
        assert_true(root_pos > 0);
        {
                _cleanup_(fslayout_free) FsLayout l = {};
                uint8_t block[1024];
                uint64_t child_pos;
                /* v5 short btree block: 56-byte header, then keys (4 bytes), then pointers. */
                size_t maxrecs = (1024 - 56) / 8, numrecs;

                pread_all(fd, block, sizeof(block), root_pos);
                memcpy(saved, block, sizeof(block));
                numrecs = (size_t)block[6] << 8 | block[7];
                assert_true(numrecs >= 2);
                for (size_t i = 1; i < numrecs; i++)
                        memcpy(block + 56 + maxrecs * 4 + i * 4, block + 56 + maxrecs * 4, 4);
                pwrite_all(fd, block, sizeof(block), root_pos);
                assert_int_equal(scan_xfs(f->image, 0, size, size, &l), FS_SCAN_METADATA_ONLY);
                print_message("  inode btree root whose %zu pointers lead to one child: %" PRIu64
                              " bytes of metadata, %" PRIu64 " before\n",
                              numrecs, fslayout_bytes(&l, FS_RANGE_METADATA), full);
                assert_true(fslayout_bytes(&l, FS_RANGE_METADATA) < full);
                pwrite_all(fd, saved, sizeof(block), root_pos);

                /* More records than fit, in the root (a node: pointers beyond the block) and
                 * in its first child (a leaf: records beyond the block): skipped. */
                child_pos = (root_pos / x.block_size / x.ag_blocks * x.ag_blocks +
                             (uint64_t)be32_of(block + 56 + maxrecs * 4)) *
                            x.block_size;
                check_numrecs(fd, f->image, size, root_pos, full);
                check_numrecs(fd, f->image, size, child_pos, full);
        }

        targets = calloc(x.data_blocks + 3 * x.ag_count, sizeof(Target));
        assert_non_null(targets);
        for (uint64_t ag = 0; ag < x.ag_count; ag++)
                for (unsigned sector = 1; sector <= 3; sector++)
                        targets[n_targets++] =
                                (Target){ag * x.ag_blocks * x.block_size + sector * 512, 512};
        for (uint64_t b = 0; b < x.data_blocks; b++) {
                const char *type = x.types[b] == XFS_OTHER ? "" : xfs_metadata_types[x.types[b]];

                if (strncmp(type, "bt", 2) == 0 || streq_ptr(type, "freelist"))
                        targets[n_targets++] = (Target){b * x.block_size, x.block_size};
        }
        print_message("  %zu AG header sectors and btree blocks to corrupt\n", n_targets);
        for (int round = 0; round < 300; round++) {
                Target chosen[3];
                uint8_t backup[3][4096];
                unsigned n = (unsigned)(next_random(&seed) % 3) + 1;

                for (unsigned i = 0; i < n; i++) {
                        chosen[i] = targets[next_random(&seed) % n_targets];
                        pread_all(fd, backup[i], chosen[i].len, chosen[i].pos);
                }
                for (unsigned i = 0; i < n; i++)
                        scramble(fd, chosen[i].pos, chosen[i].len, &seed);
                assert_int_equal(scan_xfs(f->image, 0, size, size, NULL), FS_SCAN_METADATA_ONLY);
                for (unsigned i = n; i-- > 0;)
                        pwrite_all(fd, backup[i], chosen[i].len, chosen[i].pos);
        }
        pread_all(fd, sb, sizeof(sb), 0);
        for (int round = 0; round < 300; round++) {
                scramble(fd, next_random(&seed) % 264 / 4 * 4, 4, &seed);
                (void)scan_xfs(f->image, 0, size, size, NULL);
                pwrite_all(fd, sb, sizeof(sb), 0);
        }
        assert_int_equal(scan_xfs(f->image, 0, size, size, NULL), FS_SCAN_METADATA_ONLY);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                FIXTURE_TEST(test_fslayout_xfs),
                FIXTURE_TEST(test_fslayout_xfs_variants),
                FIXTURE_TEST(test_fslayout_xfs_partitioned),
                FIXTURE_TEST(test_fslayout_xfs_getfsmap),
                FIXTURE_TEST(test_fslayout_xfs_corrupt),
        };

        add_sbin_to_path();
        return cmocka_run_group_tests(tests, NULL, NULL);
}
