/* SPDX-License-Identifier: MIT */
/* HotPaths=: partitions found through a fake sysfs, FIEMAP on a file of our own, bad paths. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cmocka.h>

#include "hotpaths.h"
#include "util.h"

typedef struct Fixture {
        char root[64];
} Fixture;

static void put(const Fixture *f, const char *rel, const char *content) {
        char path[256];
        FILE *fp;

        snprintf(path, sizeof(path), "%s/%s", f->root, rel);
        fp = fopen(path, "we");
        assert_non_null(fp);
        assert_true(fputs(content, fp) >= 0);
        assert_int_equal(fclose(fp), 0);
}

static void dir(const Fixture *f, const char *rel) {
        char path[256];

        snprintf(path, sizeof(path), "%s/%s", f->root, rel);
        assert_int_equal(mkdir(path, 0755), 0);
}

static void link_to(const Fixture *f, const char *target, const char *rel) {
        char path[256];

        snprintf(path, sizeof(path), "%s/%s", f->root, rel);
        assert_int_equal(symlink(target, path), 0);
}

/* sda (8:0) with sda1 (8:1) at sector 2048, sdb (8:16) with sdb1 (8:17), as sysfs has them. */
static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        snprintf(f->root, sizeof(f->root), "/tmp/test-hotpaths-XXXXXX");
        assert_non_null(mkdtemp(f->root));
        dir(f, "dev");
        dir(f, "dev/block");
        dir(f, "devices");
        dir(f, "devices/sda");
        dir(f, "devices/sda/sda1");
        dir(f, "devices/sdb");
        dir(f, "devices/sdb/sdb1");
        put(f, "devices/sda/dev", "8:0\n");
        put(f, "devices/sda/sda1/dev", "8:1\n");
        put(f, "devices/sda/sda1/start", "2048\n");
        put(f, "devices/sdb/dev", "8:16\n");
        put(f, "devices/sdb/sdb1/dev", "8:17\n");
        put(f, "devices/sdb/sdb1/start", "34\n");
        link_to(f, "../../devices/sda", "dev/block/8:0");
        link_to(f, "../../devices/sda/sda1", "dev/block/8:1");
        link_to(f, "../../devices/sdb", "dev/block/8:16");
        link_to(f, "../../devices/sdb/sdb1", "dev/block/8:17");
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->root);
        assert_int_equal(system(cmd), 0);
        free(f);
        return 0;
}

static void test_hotpaths_partition_offset(void **state) {
        Fixture *f = *state;
        uint64_t off = 7;

        assert_int_equal(hotpaths_partition_offset(f->root, makedev(8, 0), makedev(8, 0), &off), 0);
        assert_true(off == 0);
        assert_int_equal(hotpaths_partition_offset(f->root, makedev(8, 1), makedev(8, 0), &off), 0);
        assert_true(off == 2048 * 512);
        /* A partition of another disk, another disk, a device sysfs does not know. */
        assert_int_equal(hotpaths_partition_offset(f->root, makedev(8, 17), makedev(8, 0), &off),
                         -EXDEV);
        assert_int_equal(hotpaths_partition_offset(f->root, makedev(8, 16), makedev(8, 0), &off),
                         -EXDEV);
        assert_int_equal(hotpaths_partition_offset(f->root, makedev(0, 44), makedev(8, 0), &off),
                         -EXDEV);
        /* The disk itself is no partition of one of its partitions. */
        assert_int_equal(hotpaths_partition_offset(f->root, makedev(8, 0), makedev(8, 1), &off),
                         -EXDEV);
}

static void test_hotpaths_file_extents(void **state) {
        Fixture *f = *state;
        _cleanup_free_ ByteRange *ranges = NULL;
        char path[256], buf[65536];
        size_t n = 0;
        uint64_t total = 0;
        int fd, r;

        snprintf(path, sizeof(path), "%s/data", f->root);
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        memset(buf, 'x', sizeof(buf));
        for (int i = 0; i < 4; i++)
                assert_int_equal(write(fd, buf, sizeof(buf)), sizeof(buf));
        assert_int_equal(fsync(fd), 0); /* no delayed allocation left */
        r = hotpaths_file_extents(fd, UINT64_C(1) << 40, &ranges, &n);
        (void)close(fd);
        if (r == -EOPNOTSUPP || r == -ENOTTY) {
                skip(); /* tmpfs and a few others cannot map their files */
                return;
        }
        assert_int_equal(r, 0);
        assert_true(n > 0);
        for (size_t i = 0; i < n; i++) {
                assert_true(ranges[i].offset >= UINT64_C(1) << 40); /* moved by the offset */
                total += ranges[i].length;
        }
        assert_true(total >= 4 * sizeof(buf));
}

/* Nothing reachable or on the disk: no ranges, no error (each path is warned about). The disk
 * is one that does not exist, so that files in /tmp are never on it. */
static void test_hotpaths_unreachable(void **state) {
        Fixture *f = *state;
        _cleanup_free_ ByteRange *ranges = NULL;
        char paths[512];
        size_t n = 7;

        snprintf(paths, sizeof(paths), "  /nonexistent/hot %s/devices/sda/dev\t%s/dev  ", f->root,
                 f->root);
        assert_int_equal(hotpaths_resolve(paths, makedev(4095, 4095), f->root, &ranges, &n), 0);
        assert_int_equal(n, 0);
        assert_int_equal(hotpaths_resolve("", makedev(4095, 4095), f->root, &ranges, &n), 0);
        assert_int_equal(n, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_hotpaths_partition_offset, setup, teardown),
                cmocka_unit_test_setup_teardown(test_hotpaths_file_extents, setup, teardown),
                cmocka_unit_test_setup_teardown(test_hotpaths_unreachable, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
