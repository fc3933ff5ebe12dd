/* SPDX-License-Identifier: MIT */
/*
 * fslayout's partition tables: GPT (sgdisk) and MBR (sfdisk) images with ext4 partitions, and
 * DOS tables written by hand that are at odds with the file systems (a partition over another's
 * end, an extended partition in another's free space): free only if no one else claims it.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "fixtures-fslayout.h"
#include "fslayout.h"
#include "util.h"

static void test_fslayout_gpt_two_partitions(void **state) {
        static const char *const files[] = {"f1", "f2"};
        Fixture *f = *state;
        _cleanup_(fslayout_free) FsLayout l = {};
        const uint64_t size = 256 * MiB, p1_size = 160 * MiB;
        const uint64_t p2_start = PART_OFFSET + p1_size, p2_end = size - 33 * 512;
        char src[128], spec[256];
        Ext4Facts facts;
        uint64_t file_bytes;

        REQUIRE_TOOLS("sgdisk", "mkfs.ext4", "debugfs", "dumpe2fs");
        make_source_dir(f, src, sizeof(src), 2);
        make_image(f, size);
        assert_int_equal(run("sgdisk -o -n1:2048:+160M -n2:0:0 %s >/dev/null", f->image), 0);
        assert_int_equal(run("mkfs.ext4 -q -F -d %s -E offset=%" PRIu64 " %s %" PRIu64
                             " >/dev/null 2>&1",
                             src, PART_OFFSET, f->image, p1_size / KiB),
                         0);
        (void)snprintf(spec, sizeof(spec), "%s?offset=%" PRIu64, f->image, PART_OFFSET);

        discover(f->image, &l, "GPT: ext4 (160 MiB, 2 files of 8 MiB), then zeroes (95 MiB)");
        assert_true(has_note(&l, "GPT partition table, 2 partitions", NULL));
        assert_true(has_note(&l, "partition 1 (ext4, 160.0 MiB", "(libext2fs)"));
        assert_true(has_note(&l, "partition 2 (95.0 MiB)", "unknown content, treated as used"));
        /* Protective MBR, GPT header (LBA 1) and entries (LBA 2-33); the backup entries and
         * header in the last 33 sectors. Between them and the partitions: used. */
        assert_kinds(&l, 0, 34 * 512, ONLY(FS_RANGE_METADATA), "primary GPT");
        assert_kinds(&l, p2_end, 33 * 512, ONLY(FS_RANGE_METADATA), "backup GPT");
        assert_kinds(&l, 34 * 512, PART_OFFSET - 34 * 512, ONLY(FS_RANGE_USED), "gap");
        assert_kinds(&l, p2_start, p2_end - p2_start, ONLY(FS_RANGE_USED), "partition 2");
        assert_kinds(&l, PART_OFFSET + 1024, 1024, ONLY(FS_RANGE_METADATA), "superblock");
        check_with_e2fsprogs(&l, spec, PART_OFFSET, &facts);
        file_bytes = check_files_ext4(&l, spec, PART_OFFSET, facts.block_size, files, 2);
        assert_int_equal(file_bytes, 2 * FILE_SIZE);
        check_ext4_totals(&l, PART_OFFSET, p1_size, &facts, file_bytes);
}

static void test_fslayout_mbr(void **state) {
        Fixture *f = *state;
        _cleanup_(fslayout_free) FsLayout l = {};
        const uint64_t p1_size = 100 * MiB;

        REQUIRE_TOOLS("sfdisk", "mkfs.ext4");
        make_image(f, 128 * MiB);
        assert_int_equal(run("echo '2048,204800,83' | sfdisk -q %s >/dev/null", f->image), 0);
        assert_int_equal(run("mkfs.ext4 -q -F -E offset=%" PRIu64 " %s %" PRIu64 " >/dev/null 2>&1",
                             PART_OFFSET, f->image, p1_size / KiB),
                         0);

        discover(f->image, &l, "MBR: ext4 (100 MiB), then nothing (27 MiB)");
        assert_true(has_note(&l, "MBR partition table, 1 partition:", NULL));
        assert_true(has_note(&l, "partition 1 (ext4, 100.0 MiB", "(libext2fs)"));
        assert_kinds(&l, 0, 512, ONLY(FS_RANGE_METADATA), "MBR");
        assert_kinds(&l, 512, PART_OFFSET - 512, ONLY(FS_RANGE_USED), "gap");
        assert_kinds(&l, PART_OFFSET + 1024, 1024, ONLY(FS_RANGE_METADATA), "superblock");
        assert_kinds(&l, PART_OFFSET + p1_size, 27 * MiB, ONLY(FS_RANGE_USED), "after");
        assert_true(fslayout_bytes_in(&l, PART_OFFSET, p1_size, FS_RANGE_FREE) > 80 * MiB);
}

/* Issue 15: partition 2 overlaps partition 1 (a clean, nearly empty ext4) and runs on into
 * partition 3 (another), which is kept: it starts after partition 1 ends. Partition 2's bytes
 * are used, even where the file systems on either side call them free; the rest of their free
 * space stays free. */
static void test_fslayout_mbr_overlap(void **state) {
        Fixture *f = *state;
        _cleanup_(fslayout_free) FsLayout l = {};
        const MbrEntry table[] = {
                {0x83, 1 * MiB, 50 * MiB},  /* [1, 51) MiB */
                {0x83, 31 * MiB, 40 * MiB}, /* [31, 71) MiB: over the end of 1, start of 3 */
                {0x83, 61 * MiB, 66 * MiB}, /* [61, 127) MiB */
        };

        REQUIRE_TOOLS("mkfs.ext4");
        make_image(f, 128 * MiB);
        mkfs_ext4_at(f, table[0].start, table[0].size);
        mkfs_ext4_at(f, table[2].start, table[2].size);
        write_dos_table(f->image, 0, table, ELEMENTSOF(table));

        discover(f->image, &l, "MBR: ext4, a partition over both ends, ext4");
        assert_kinds(&l, 31 * MiB, 20 * MiB, ONLY(FS_RANGE_USED) | ONLY(FS_RANGE_METADATA),
                     "partition 2, in partition 1");
        assert_kinds(&l, 61 * MiB, 10 * MiB, ONLY(FS_RANGE_USED) | ONLY(FS_RANGE_METADATA),
                     "partition 2, in partition 3");
        assert_true(has_note(&l, "MBR partition table, 3 partitions", NULL));
        assert_true(has_note(&l, "partition 1 (ext4, 50.0 MiB", "(libext2fs)"));
        assert_true(has_note(&l, "partition 2: overlaps partition 1, treated as used", NULL));
        assert_true(has_note(&l, "partition 3 (ext4, 66.0 MiB", "(libext2fs)"));
        assert_true(fslayout_bytes_in(&l, 1 * MiB, 30 * MiB, FS_RANGE_FREE) > 20 * MiB);
        assert_true(fslayout_bytes_in(&l, 71 * MiB, 56 * MiB, FS_RANGE_FREE) > 50 * MiB);
}

/* An extended partition whose start lies in partition 1's free space: its boot record and the
 * slack before its logical partition are the table's, not free. A well-formed extended
 * partition keeps its logical file system's free space. */
static void test_fslayout_mbr_extended(void **state) {
        Fixture *f = *state;
        const MbrEntry broken[] = {{0x83, 1 * MiB, 100 * MiB}, {0x05, 81 * MiB, 46 * MiB}};
        const MbrEntry fine[] = {{0x83, 1 * MiB, 40 * MiB}, {0x05, 41 * MiB, 86 * MiB}};
        const MbrEntry logical[] = {{0x83, 1 * MiB, 80 * MiB}}; /* from its EBR */

        REQUIRE_TOOLS("mkfs.ext4");
        {
                _cleanup_(fslayout_free) FsLayout l = {};

                make_image(f, 128 * MiB);
                mkfs_ext4_at(f, broken[0].start, broken[0].size);
                write_dos_table(f->image, 0, broken, ELEMENTSOF(broken));
                write_dos_table(f->image, 81 * MiB, (MbrEntry[]){{0x83, 21 * MiB, 24 * MiB}}, 1);
                discover(f->image, &l, "MBR: ext4 (100 MiB), an extended partition over its end");
                assert_true(has_note(&l, "partition 1 (ext4, 100.0 MiB", "(libext2fs)"));
                assert_true(has_note(&l, "partition 5 (24.0 MiB)", "treated as used"));
                assert_kinds(&l, 81 * MiB, 20 * MiB, ONLY(FS_RANGE_USED) | ONLY(FS_RANGE_METADATA),
                             "extended partition's boot record and slack, in partition 1");
                assert_true(fslayout_bytes_in(&l, 1 * MiB, 80 * MiB, FS_RANGE_FREE) > 60 * MiB);
        }
        {
                _cleanup_(fslayout_free) FsLayout l = {};

                make_image(f, 128 * MiB);
                mkfs_ext4_at(f, fine[0].start, fine[0].size);
                mkfs_ext4_at(f, 42 * MiB, logical[0].size);
                write_dos_table(f->image, 0, fine, ELEMENTSOF(fine));
                write_dos_table(f->image, 41 * MiB, logical, ELEMENTSOF(logical));
                discover(f->image, &l, "MBR: ext4 (40 MiB), extended: logical ext4 (80 MiB)");
                assert_true(has_note(&l, "partition 5 (ext4, 80.0 MiB", "(libext2fs)"));
                assert_kinds(&l, 41 * MiB, 1 * MiB, ONLY(FS_RANGE_USED), "boot record, slack");
                assert_kinds(&l, 122 * MiB, 5 * MiB, ONLY(FS_RANGE_USED), "extended's tail");
                assert_true(fslayout_bytes_in(&l, 42 * MiB, 80 * MiB, FS_RANGE_FREE) > 60 * MiB);
        }
}

/* The pages of @fd's first @size bytes in the page cache, counted; when @t is given, the first
 * page of each run of cached pages is checked against it: that one a read asked for, the kernel's
 * readahead only adds pages after it (how many is its own business). */
static size_t pages_cached(int fd, uint64_t size, const Told *t) {
        const size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (size_t)((size + page - 1) / page);
        _cleanup_free_ unsigned char *vec = malloc(n);
        void *p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
        size_t cached = 0;

        assert_non_null(vec);
        assert_true(p != MAP_FAILED);
        assert_int_equal(mincore(p, size, vec), 0);
        for (size_t i = 0; i < n; i++) {
                if (!(vec[i] & 1))
                        continue;
                cached++;
                if (t && (i == 0 || !(vec[i - 1] & 1)) && !told(t, (uint64_t)i * page, page))
                        fail_msg("libblkid read the page at %zu KiB (%zu KiB before the end), "
                                 "which was not told ahead",
                                 i * page / KiB, (size_t)(size - (uint64_t)i * page) / KiB);
        }
        assert_int_equal(munmap(p, size), 0);
        return cached;
}

/* Whether the page cache shows what was read of @fd: a page read is then cached, and dropped
 * when asked. Not on tmpfs, say, which caches no page for a hole it reads. */
static bool page_cache_tells(int fd, uint64_t size) {
        const size_t page = (size_t)sysconf(_SC_PAGESIZE);
        char buf[65536];

        assert_true(page <= sizeof(buf));
        if (pread(fd, buf, page, (off_t)(size / 2)) != (ssize_t)page)
                return false;
        if (pages_cached(fd, size, NULL) != 1)
                return false;
        assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
        return pages_cached(fd, size, NULL) == 0;
}

/*
 * Every block that the discovery's own probes read (libblkid's, through the page cache) was
 * told ahead, so that the hydrator reads it at queue depth first: on a 120 ms rig volume the
 * probe's reads at 1, 2 and 4 MiB and 1.5 MiB before the end, not told, were four cold reads
 * one after another before the plan could start. A whole device of zeros (every prober runs),
 * and one MBR partition of zeros in it. What the probes read is what they left in the page
 * cache; where that does not show (tmpfs), skipped.
 */
static void test_fslayout_probes_told_ahead(void **state) {
        const MbrEntry table[] = {{0x83, 64 * MiB, 512 * MiB}};
        Fixture *f = *state;

        for (unsigned partitioned = 0; partitioned < 2; partitioned++) {
                _cleanup_(fslayout_free) FsLayout l = {};
                _cleanup_free_ char *error = NULL;
                _cleanup_close_ int fd = -1;
                Told t = {};
                FsLayoutHints hints = {.ahead = told_collect, .userdata = &t};
                const uint64_t size = 1024 * MiB;

                make_image(f, size);
                if (partitioned)
                        write_dos_table(f->image, 0, table, ELEMENTSOF(table));
                fd = open(f->image, O_RDONLY | O_CLOEXEC);
                assert_true(fd >= 0);
                assert_int_equal(fsync(fd), 0); /* the table's page, written: clean to drop */
                assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
                if (pages_cached(fd, size, NULL) > 0 || !page_cache_tells(fd, size)) {
                        print_message("the page cache does not show what is read of %s\n",
                                      f->image);
                        close(fd); /* skip() leaves by longjmp: no cleanup runs */
                        skip();
                }
                assert_int_equal(fslayout_discover(fd, size, &hints, &l, &error), 0);
                print_message("%s: %zu pages read by the probes, %zu ranges told\n",
                              partitioned ? "one partition" : "whole device",
                              pages_cached(fd, size, NULL), t.n);
                assert_true(pages_cached(fd, size, NULL) > 0);
                (void)pages_cached(fd, size, &t);
                free(t.v);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                FIXTURE_TEST(test_fslayout_gpt_two_partitions),
                FIXTURE_TEST(test_fslayout_mbr),
                FIXTURE_TEST(test_fslayout_mbr_overlap),
                FIXTURE_TEST(test_fslayout_mbr_extended),
                FIXTURE_TEST(test_fslayout_probes_told_ahead),
        };

        add_sbin_to_path();
        return cmocka_run_group_tests(tests, NULL, NULL);
}
