/* SPDX-License-Identifier: MIT */
/*
 * fslayout's ext2/3/4 scanner on images built with mkfs.ext4 -d, checked against e2fsprogs' own
 * account of them (dumpe2fs, debugfs) without root: the placements mkfs.ext4 can choose, a file
 * system larger than what holds it, a journal to replay. As root, a mounted ext4 on a loop
 * device (GETFSMAP) against FIEMAP, the same unmounted (libext2fs), and the two against each
 * other. Tests skip when a tool is missing or root is needed.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <sched.h>
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
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "alloc-util.h"
#include "fixtures-fslayout.h"
#include "fslayout.h"
#include "util.h"

static void test_fslayout_unpartitioned_ext4(void **state) {
        static const char *const kept[] = {"f1", "f3"};
        Fixture *f = *state;
        _cleanup_(fslayout_free) FsLayout l = {};
        _cleanup_free_ char *deleted = NULL;
        char src[128];
        Ext4Facts facts;
        uint64_t file_bytes;

        REQUIRE_TOOLS("mkfs.ext4", "debugfs", "dumpe2fs");
        make_source_dir(f, src, sizeof(src), 3);
        make_image(f, 64 * MiB);
        assert_int_equal(run("mkfs.ext4 -q -F -d %s %s >/dev/null 2>&1", src, f->image), 0);
        deleted = output_of("debugfs -R 'blocks /f2' %s 2>/dev/null", f->image);
        assert_int_equal(run("debugfs -w -R 'rm /f2' %s >/dev/null 2>&1", f->image), 0);

        discover(f->image, &l, "ext4 on the whole image, 64 MiB, 3 files of 8 MiB, one deleted");
        assert_true(
                has_note(&l, "no partition table: whole device (ext4, 64.0 MiB", "(libext2fs)"));
        assert_kinds(&l, 1024, 1024, ONLY(FS_RANGE_METADATA), "superblock");
        check_with_e2fsprogs(&l, f->image, 0, &facts);
        file_bytes = check_files_ext4(&l, f->image, 0, facts.block_size, kept, ELEMENTSOF(kept));
        assert_int_equal(file_bytes, 2 * FILE_SIZE);
        assert_int_equal(expect_blocks(&(Witness){&l, 0, facts.block_size, 0}, deleted,
                                       ONLY(FS_RANGE_FREE), "block of the deleted file"),
                         FILE_SIZE / facts.block_size);
        check_ext4_totals(&l, 0, 64 * MiB, &facts, file_bytes);
}

/* The placements mkfs.ext4 can choose: no journal, a block-mapped journal, clusters, meta_bg
 * descriptors, sparse_super2 backups, no flex_bg, block sizes of 1, 2 and 4 KiB. */
static void test_fslayout_ext_variants(void **state) {
        static const char *const variants[] = {
                "-t ext2",
                "-t ext3",
                "-O bigalloc -C 16384",
                "-O meta_bg,^resize_inode",
                "-b 4096 -O sparse_super2",
                "-b 2048 -O ^flex_bg",
        };
        static const char *const files[] = {"f1", "f2"};
        Fixture *f = *state;
        char src[128];

        REQUIRE_TOOLS("mkfs.ext4", "debugfs", "dumpe2fs");
        make_source_dir(f, src, sizeof(src), 2);
        for (size_t i = 0; i < ELEMENTSOF(variants); i++) {
                _cleanup_(fslayout_free) FsLayout l = {};
                Ext4Facts facts;
                uint64_t file_bytes;

                make_image(f, 128 * MiB);
                assert_int_equal(run("mkfs.ext4 -q -F %s -d %s %s >/dev/null 2>&1", variants[i],
                                     src, f->image),
                                 0);
                discover(f->image, &l, variants[i]);
                assert_true(has_note(&l, "no partition table: whole device (ext", "(libext2fs)"));
                assert_kinds(&l, 1024, 1024, ONLY(FS_RANGE_METADATA), "superblock");
                check_with_e2fsprogs(&l, f->image, 0, &facts);
                /* debugfs lists the indirect blocks of block-mapped (ext2/3) files too. */
                file_bytes = check_files_ext4(&l, f->image, 0, facts.block_size, files, 2);
                assert_true(file_bytes >= 2 * FILE_SIZE && file_bytes <= 2 * FILE_SIZE / 100 * 101);
                check_ext4_totals(&l, 0, 128 * MiB, &facts, file_bytes);
        }
}

/* A file system larger than what holds it (an image cut short, a partition shrunk under it):
 * its bitmaps describe another device, nothing of it is called free. */
static void test_fslayout_ext_truncated(void **state) {
        Fixture *f = *state;
        const MbrEntry shrunk[] = {{0x83, 1 * MiB, 40 * MiB}, {0x83, 41 * MiB, 80 * MiB}};

        REQUIRE_TOOLS("mkfs.ext4");
        {
                _cleanup_(fslayout_free) FsLayout l = {};

                make_image(f, 64 * MiB);
                assert_int_equal(run("mkfs.ext4 -q -F %s >/dev/null 2>&1", f->image), 0);
                assert_int_equal(truncate(f->image, 48 * MiB), 0);
                discover(f->image, &l, "ext4 of 64 MiB in an image cut to 48 MiB");
                assert_int_equal(fslayout_bytes(&l, FS_RANGE_FREE), 0);
                assert_true(has_note(&l, "larger than its partition or device",
                                     "the rest treated as used"));
                assert_kinds(&l, 1024, 1024, ONLY(FS_RANGE_METADATA), "superblock");
        }
        {
                _cleanup_(fslayout_free) FsLayout l = {};

                make_image(f, 128 * MiB);
                mkfs_ext4_at(f, 1 * MiB, 100 * MiB);
                write_dos_table(f->image, 0, shrunk, ELEMENTSOF(shrunk));
                discover(f->image, &l, "MBR: ext4 of 100 MiB in a partition of 40 MiB");
                assert_int_equal(fslayout_bytes_in(&l, 1 * MiB, 40 * MiB, FS_RANGE_FREE), 0);
                assert_true(has_note(&l, "partition 1 (ext4, 40.0 MiB",
                                     "larger than its partition or device"));
        }
}

/* A journal to replay (or a file system mounted elsewhere) makes the bitmaps stale: nothing may
 * be called free, but where the metadata lies is still known. */
static void test_fslayout_needs_recovery(void **state) {
        Fixture *f = *state;
        _cleanup_(fslayout_free) FsLayout l = {};

        REQUIRE_TOOLS("mkfs.ext4", "debugfs");
        make_image(f, 64 * MiB);
        assert_int_equal(run("mkfs.ext4 -q -F %s >/dev/null 2>&1", f->image), 0);
        assert_int_equal(run("debugfs -w -R 'feature needs_recovery' %s >/dev/null 2>&1", f->image),
                         0);

        discover(f->image, &l, "ext4 whose journal needs recovery");
        assert_true(has_note(&l, "journal needs recovery", "the rest treated as used"));
        assert_int_equal(fslayout_bytes(&l, FS_RANGE_FREE), 0);
        assert_kinds(&l, 1024, 1024, ONLY(FS_RANGE_METADATA), "superblock");
        assert_true(fslayout_bytes(&l, FS_RANGE_METADATA) > 4 * MiB); /* journal, inode tables */
}

/* Bytes that one layout calls free and the other does not. */
static uint64_t free_disagreement(const FsLayout *a, const FsLayout *b) {
        uint64_t both = 0;

        for (size_t i = 0; i < a->n_ranges; i++)
                if (a->ranges[i].kind == FS_RANGE_FREE)
                        both += fslayout_bytes_in(b, a->ranges[i].offset, a->ranges[i].length,
                                                  FS_RANGE_FREE);
        return fslayout_bytes(a, FS_RANGE_FREE) + fslayout_bytes(b, FS_RANGE_FREE) - 2 * both;
}

/*
 * The mounted disk as a sandboxed service may see it: in a mount namespace of its own, where a
 * tmpfs hides the mount point. GETFSMAP cannot be reached; libext2fs finds the journal needing
 * recovery: metadata, nothing free. Runs in a child (cmocka's asserts stay in the parent), whose
 * namespace, tmpfs included, goes away with it. Returns the child's exit status.
 */
static int discover_hidden(const Fixture *f) {
        int status;
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0) {
                FsLayout l = {};
                char *error = NULL;
                uint64_t size;
                int fd;

                if (unshare(CLONE_NEWNS) < 0 ||
                    /* "none": the kernel ignores source and type for a propagation change,
                     * valgrind does not (it checks them as strings). */
                    mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0 ||
                    mount("tmpfs", f->mount_point, "tmpfs", 0, NULL) < 0)
                        _exit(2);
                fd = open(f->loop, O_RDONLY | O_CLOEXEC);
                if (fd < 0 || ioctl(fd, BLKGETSIZE64, &size) < 0 ||
                    fslayout_discover(fd, size, NULL, &l, &error) < 0)
                        _exit(3);
                print_layout("the same, from a mount namespace where the mount point is hidden",
                             &l);
                _exit(has_note(&l, "mounted on ", "hidden from here") &&
                                      has_note(&l, "journal needs recovery", NULL) &&
                                      fslayout_bytes(&l, FS_RANGE_FREE) == 0
                              ? 0
                              : 1);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/*
 * 1 GiB disk, GPT, one ext4 partition filled to 90% with 8 MiB files, two thirds deleted. While
 * mounted, GETFSMAP maps it (the image file, read behind the kernel's back, and the disk seen
 * from where the mount point is hidden, are recognised as stale: nothing free); unmounted,
 * libext2fs does, and the two agree on what is free to within 1 MiB (blocks that ext4 may still
 * hold in preallocations: none are expected after syncfs and close, so this is slack, not a known
 * difference), and on metadata to within 1 MiB.
 */
static void test_fslayout_mounted_ext4(void **state) {
        Fixture *f = *state;
        _cleanup_(fslayout_free) FsLayout mounted = {}, unmounted = {}, stale = {};
        _cleanup_free_ Extents *files = calloc(1, sizeof(Extents));
        uint64_t base, size, disagreement;
        char p1[96];
        Ext4Facts facts;

        REQUIRE_ROOT();
        REQUIRE_TOOLS("sgdisk", "losetup", "partx", "mkfs.ext4", "dumpe2fs", "debugfs");
        assert_non_null(files);
        make_image(f, GiB);
        assert_int_equal(run("sgdisk -o -n1:2048:0 %s >/dev/null", f->image), 0);
        attach(f);
        (void)snprintf(p1, sizeof(p1), "%sp1", f->loop);
        base = partition_bytes(f, "start");
        size = partition_bytes(f, "size");
        assert_int_equal(base, PART_OFFSET);
        assert_int_equal(run("mkfs.ext4 -q -F %s >/dev/null 2>&1", p1), 0);
        mount_p1(f, "ext4");
        fill_and_thin(f, 90, base, files);

        discover(f->loop, &mounted, "mounted ext4, 1 GiB, filled to 90%, two thirds deleted");
        assert_true(has_note(&mounted, "partition 1 (ext4, 1023.0 MiB, mounted on ", "GETFSMAP"));
        assert_extents_used(&mounted, files);
        discover(f->image, &stale, "its image file, read while the disk is mounted");
        assert_true(has_note(&stale, "journal needs recovery", NULL));
        assert_int_equal(fslayout_bytes(&stale, FS_RANGE_FREE), 0);
        assert_int_equal(discover_hidden(f), 0);
        unmount(f);

        discover(f->loop, &unmounted, "the same, unmounted");
        assert_true(
                has_note(&unmounted, "partition 1 (ext4, 1023.0 MiB, unmounted)", "(libext2fs)"));
        assert_extents_used(&unmounted, files);
        check_with_e2fsprogs(&unmounted, p1, base, &facts);
        check_ext4_totals(&unmounted, base, size, &facts, files->bytes);

        print_figures("GETFSMAP", &mounted, base, size);
        print_figures("libext2fs", &unmounted, base, size);
        disagreement = free_disagreement(&mounted, &unmounted);
        print_message("  free bytes the two disagree on: %" PRIu64 "\n", disagreement);
        assert_true(disagreement <= MiB);
        assert_true(llabs((long long)fslayout_bytes(&mounted, FS_RANGE_METADATA) -
                          (long long)fslayout_bytes(&unmounted, FS_RANGE_METADATA)) <=
                    (long long)MiB);
}

/*
 * The reads the scanner tells ahead (ext4 opened with EXT2_FLAG_SUPER_ONLY, a group's
 * descriptor read when it is asked for): every group descriptor block (meta_bg: spread over the
 * device, most of them beyond the first MiB that libblkid's probe covers) and every block bitmap
 * (all initialised: no uninit_bg, each in its own group without flex_bg), in calls of at most
 * FSLAYOUT_HINTS_MAX ranges; and the layout is the same told or not.
 */
static void test_fslayout_ext_hints(void **state) {
        Fixture *f = *state;
        _cleanup_(fslayout_free) FsLayout quiet = {}, l = {};
        _cleanup_free_ char *error = NULL, *bitmaps = NULL, *descriptors = NULL;
        _cleanup_close_ int fd = -1;
        Told t = {};
        FsLayoutHints hints = {.ahead = told_collect, .userdata = &t};
        size_t n_bitmaps = 0, n_descriptors = 0;
        char *p;

        REQUIRE_TOOLS("mkfs.ext4", "dumpe2fs");
        make_image(f, 6 * GiB);
        assert_int_equal(run("mkfs.ext4 -q -F -b 1024 -g 1024 -N 24576 "
                             "-O meta_bg,^flex_bg,^uninit_bg,^metadata_csum,^resize_inode %s "
                             ">/dev/null 2>&1",
                             f->image),
                         0);
        fd = open(f->image, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(fslayout_discover(fd, 6 * GiB, NULL, &quiet, &error), 0);
        assert_int_equal(fslayout_discover(fd, 6 * GiB, &hints, &l, &error), 0);
        assert_int_equal(l.n_ranges, quiet.n_ranges);
        for (size_t i = 0; i < l.n_ranges; i++) {
                assert_true(l.ranges[i].offset == quiet.ranges[i].offset);
                assert_true(l.ranges[i].length == quiet.ranges[i].length);
                assert_int_equal(l.ranges[i].kind, quiet.ranges[i].kind);
        }
        print_message("%zu ranges told in %zu calls, at most %zu in one\n", t.n, t.calls, t.most);
        assert_true(t.most <= FSLAYOUT_HINTS_MAX);
        assert_true(t.calls > 2);

        bitmaps = output_of(
                "dumpe2fs %s 2>/dev/null | sed -n 's/.*Block bitmap at \\([0-9]*\\).*/\\1/p'",
                f->image);
        for (p = bitmaps; *p; n_bitmaps++) {
                uint64_t block = strtoull(p, &p, 10);

                if (!told(&t, block * 1024, 1024))
                        fail_msg("the block bitmap at block %" PRIu64 " was not told", block);
                p += strspn(p, "\n");
        }
        assert_int_equal(n_bitmaps, 6 * GiB / MiB); /* a group of 1 MiB */
        /* meta_bg: a descriptor block at the start of every 16 groups (16 descriptors of 64 bytes
         * a block), its backups in the second and last group */
        descriptors = output_of(
                "dumpe2fs %s 2>/dev/null | sed -n 's/.*Group descriptor at \\([0-9]*\\)$/\\1/p'",
                f->image);
        for (p = descriptors; *p;) {
                uint64_t block = strtoull(p, &p, 10);

                if ((block - 1) / 1024 % 16 == 0) {
                        if (!told(&t, block * 1024, 1024))
                                fail_msg("the descriptor block %" PRIu64 " was not told", block);
                        n_descriptors++;
                }
                p += strspn(p, "\n");
        }
        assert_int_equal(n_descriptors, 6 * GiB / MiB / 16);
        free(t.v);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                FIXTURE_TEST(test_fslayout_unpartitioned_ext4),
                FIXTURE_TEST(test_fslayout_ext_variants),
                FIXTURE_TEST(test_fslayout_ext_truncated),
                FIXTURE_TEST(test_fslayout_needs_recovery),
                FIXTURE_TEST(test_fslayout_mounted_ext4),
                FIXTURE_TEST(test_fslayout_ext_hints),
        };

        add_sbin_to_path();
        return cmocka_run_group_tests(tests, NULL, NULL);
}
