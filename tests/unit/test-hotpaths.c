/* SPDX-License-Identifier: MIT */
/* HotPaths=: partitions found through a fake sysfs, FIEMAP on a file of our own, bad paths and
 * the warnings that name them. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "fixtures.h"
#include "hotpaths.h"
#include "util.h"

typedef struct Fixture {
        char root[64];
} Fixture;

/* sda (8:0) with sda1 (8:1) at sector 2048, sdb (8:16) with sdb1 (8:17), as sysfs has them. */
static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        snprintf(f->root, sizeof(f->root), "/tmp/test-hotpaths-XXXXXX");
        assert_non_null(mkdtemp(f->root));
        fixture_mkdirs(f->root, "dev");
        fixture_mkdirs(f->root, "dev/block");
        fixture_mkdirs(f->root, "devices");
        fixture_mkdirs(f->root, "devices/sda");
        fixture_mkdirs(f->root, "devices/sda/sda1");
        fixture_mkdirs(f->root, "devices/sdb");
        fixture_mkdirs(f->root, "devices/sdb/sdb1");
        fixture_write(f->root, "devices/sda/dev", "8:0\n");
        fixture_write(f->root, "devices/sda/sda1/dev", "8:1\n");
        fixture_write(f->root, "devices/sda/sda1/start", "2048\n");
        fixture_write(f->root, "devices/sdb/dev", "8:16\n");
        fixture_write(f->root, "devices/sdb/sdb1/dev", "8:17\n");
        fixture_write(f->root, "devices/sdb/sdb1/start", "34\n");
        fixture_symlink(f->root, "../../devices/sda", "dev/block/8:0");
        fixture_symlink(f->root, "../../devices/sda/sda1", "dev/block/8:1");
        fixture_symlink(f->root, "../../devices/sdb", "dev/block/8:16");
        fixture_symlink(f->root, "../../devices/sdb/sdb1", "dev/block/8:17");
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        assert_int_equal(rm_rf(f->root), 0);
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
        size_t n = 0, allocated = 0;
        uint64_t total = 0;
        int fd, r;

        snprintf(path, sizeof(path), "%s/data", f->root);
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        memset(buf, 'x', sizeof(buf));
        for (int i = 0; i < 4; i++)
                assert_int_equal(write(fd, buf, sizeof(buf)), sizeof(buf));
        assert_int_equal(fsync(fd), 0); /* no delayed allocation left */
        r = hotpaths_file_extents(fd, UINT64_C(1) << 40, &ranges, &n, &allocated);
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

/*
 * hotpaths_resolve() in a child process whose stderr, where warnings go, is a file from before
 * its first warning: log.c may keep a descriptor of its own for a stream it has written to, so
 * stderr is not redirected after the fact. Returns what was logged; *ret_n is 0, or 1 if any
 * range was found.
 */
static char *resolve_logged(const char *paths, dev_t disk, const char *sysfs_root, size_t *ret_n) {
        char *log = calloc(1, 65536);
        FILE *tmp = tmpfile();
        int status;
        pid_t pid;

        assert_non_null(log);
        assert_non_null(tmp);
        (void)fflush(NULL);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                ByteRange *ranges = NULL;
                size_t n = 0;
                int r;

                (void)dup2(fileno(tmp), STDERR_FILENO);
                r = hotpaths_resolve(paths, disk, sysfs_root, &ranges, &n);
                free(ranges);
                _exit(r < 0 ? 2 : n > 0);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) <= 1);
        *ret_n = (size_t)WEXITSTATUS(status);
        rewind(tmp);
        (void)fread(log, 1, 65535, tmp);
        (void)fclose(tmp);
        print_message("%s", log);
        return log;
}

static size_t count_lines(const char *s) {
        size_t n = 0;

        for (; *s; s++)
                n += *s == '\n';
        return n;
}

/* Expects a line of @log that has "HotPaths=: ROOT/@rel@what". */
static void assert_warned(const Fixture *f, const char *log, const char *rel, const char *what) {
        char expected[512];

        snprintf(expected, sizeof(expected), "HotPaths=: %s/%s%s", f->root, rel, what);
        assert_non_null(strstr(log, expected));
}

/* Nothing reachable or on the disk: no ranges, no error (each path is warned about). The disk
 * is one that does not exist, so that files in /tmp are never on it. */
static void test_hotpaths_unreachable(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *log = NULL, *none = NULL;
        char paths[512];
        size_t n = 7;

        snprintf(paths, sizeof(paths), "  /nonexistent/hot %s/devices/sda/dev\t%s/dev  ", f->root,
                 f->root);
        log = resolve_logged(paths, makedev(4095, 4095), f->root, &n);
        assert_int_equal(n, 0);
        assert_non_null(strstr(log, "HotPaths=: cannot reach /nonexistent/hot (No such file"));
        none = resolve_logged("", makedev(4095, 4095), f->root, &n);
        assert_int_equal(n, 0);
        assert_string_equal(none, "");
}

/* What contributes nothing says so, and why: never a silent no-op. */
static void test_hotpaths_warns_about_nothing_to_read(void **state) {
        Fixture *f = *state;
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        _cleanup_free_ char *log = NULL;
        char paths[1024], fifo[128];
        size_t n = 7;
        int fd;

        fixture_mkdirs(f->root, "empty");
        fixture_mkdirs(f->root, "empty/sub");
        snprintf(fifo, sizeof(fifo), "%s/fifo", f->root);
        assert_int_equal(mkfifo(fifo, 0644), 0);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock", f->root);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        fixture_symlink(f->root, "/dev/null", "null");
        fixture_symlink(f->root, "/nonexistent", "dangling");
        snprintf(paths, sizeof(paths), "%s/empty %s/fifo %s/sock %s/null %s/dangling /dev", f->root,
                 f->root, f->root, f->root, f->root);

        log = resolve_logged(paths, makedev(4095, 4095), f->root, &n);
        (void)close(fd);
        assert_int_equal(n, 0);
        assert_warned(f, log, "empty", " contains no regular files, nothing to read there");
        assert_warned(f, log, "fifo", " is a FIFO, not a file or directory, skipping it");
        assert_warned(f, log, "sock", " is a socket, not a file or directory, skipping it");
        assert_warned(f, log, "null", " is a character device, not a file or directory");
        assert_warned(f, log, "dangling", " is a symbolic link to nothing, skipping it");
        /* Device nodes only, as a rule ("contains no regular files"); said either way. */
        assert_non_null(strstr(log, "HotPaths=: /dev "));
        assert_int_equal(count_lines(log), 6); /* one warning each */
}

static void test_hotpaths_warns_about_empty_file(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *log = NULL;
        char paths[256];
        struct stat st;
        size_t n = 7;

        /* On the disk (the file system of the fixture is taken as the disk), but holds nothing:
         * "has no data", or "cannot map" where FIEMAP is not supported. */
        fixture_write(f->root, "empty-file", "");
        snprintf(paths, sizeof(paths), "%s/empty-file", f->root);
        assert_int_equal(stat(paths, &st), 0);
        log = resolve_logged(paths, st.st_dev, f->root, &n);
        assert_int_equal(n, 0);
        assert_int_equal(count_lines(log), 1);
        assert_true(strstr(log, " has no data on the disk, nothing to read there") ||
                    strstr(log, "cannot map the blocks of"));
}

static void test_hotpaths_warnings_escape_paths(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *log = NULL;
        char paths[256];
        size_t n = 7;

        /* A path from hydrate.conf, or a file name in a hot directory, can hold any byte. */
        fixture_mkdirs(f->root, "hot");
        fixture_write(f->root, "hot/\x1b]0;owned\x07", "data");
        snprintf(paths, sizeof(paths), "/nonexistent/\x1b[2J %s/hot", f->root);
        log = resolve_logged(paths, makedev(4095, 4095), f->root, &n);
        assert_null(strchr(log, '\x1b'));
        assert_null(strchr(log, '\x07'));
        assert_non_null(strstr(log, "HotPaths=: cannot reach /nonexistent/\\x1b[2J (No such file"));
        assert_warned(f, log, "hot", " has files that are not on the device being hydrated");
}

static int range_compare(const void *a, const void *b) {
        const ByteRange *x = a, *y = b;

        return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Sorted and merged, in place; returns how many are left. */
static size_t merge_ranges(ByteRange *r, size_t n) {
        size_t w = 0;

        qsort(r, n, sizeof(*r), range_compare);
        for (size_t i = 0; i < n; i++) {
                if (w > 0 && r[i].offset <= r[w - 1].offset + r[w - 1].length) {
                        uint64_t end =
                                MAX(r[w - 1].offset + r[w - 1].length, r[i].offset + r[i].length);

                        r[w - 1].length = end - r[w - 1].offset;
                } else
                        r[w++] = r[i];
        }
        return w;
}

/* Writes @rel (8 KiB that differ by file) and adds its extents, as FIEMAP has them once it is on
 * the disk, to @want. */
static int write_file(const Fixture *f, const char *rel, ByteRange **want, size_t *n,
                      size_t *allocated) {
        char path[256], data[8192];
        int fd, r;

        snprintf(path, sizeof(path), "%s/%s", f->root, rel);
        for (size_t i = 0; i < sizeof(data); i++)
                data[i] = (char)(i * 7 + strlen(rel));
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, data, sizeof(data)), (ssize_t)sizeof(data));
        assert_int_equal(fsync(fd), 0);
        (void)close(fd);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        r = hotpaths_file_extents(fd, 0, want, n, allocated);
        (void)close(fd);
        return r;
}

/*
 * A tree of directories three deep, walked by several threads: the ranges found are exactly the
 * extents of its regular files, each file once; a symbolic link in it to a file outside is not
 * followed. The disk is the file system of the fixture.
 */
static void test_hotpaths_tree(void **state) {
        Fixture *f = *state;
        _cleanup_free_ ByteRange *want = NULL, *got = NULL;
        size_t n_want = 0, allocated = 0, n_got = 0;
        char rel[128], paths[256];
        ByteRange *outside = NULL;
        size_t n_outside = 0, outside_allocated = 0;
        struct stat st;
        int r;

        fixture_mkdirs(f->root, "tree");
        r = write_file(f, "outside", &outside, &n_outside, &outside_allocated);
        if (r == -EOPNOTSUPP || r == -ENOTTY) {
                free(outside);
                skip(); /* tmpfs and a few others cannot map their files */
        }
        assert_int_equal(r, 0);
        for (int a = 0; a < 3; a++)
                for (int b = 0; b < 4; b++) {
                        snprintf(rel, sizeof(rel), "tree/a%d/b%d", a, b);
                        fixture_mkdirs(f->root, rel);
                        for (int c = 0; c < 40; c++) {
                                snprintf(rel, sizeof(rel), "tree/a%d/b%d/f%02d", a, b, c);
                                assert_int_equal(write_file(f, rel, &want, &n_want, &allocated), 0);
                        }
                }
        fixture_symlink(f->root, "../../../outside", "tree/a1/b1/link");
        snprintf(paths, sizeof(paths), "%s/tree", f->root);
        assert_int_equal(stat(paths, &st), 0);

        assert_int_equal(hotpaths_resolve(paths, st.st_dev, f->root, &got, &n_got), 0);
        n_want = merge_ranges(want, n_want);
        n_got = merge_ranges(got, n_got);
        assert_int_equal(n_got, n_want);
        for (size_t i = 0; i < n_want; i++) {
                assert_true(got[i].offset == want[i].offset);
                assert_true(got[i].length == want[i].length);
        }
        for (size_t i = 0; i < n_outside; i++) /* the link's target, outside: not there */
                for (size_t k = 0; k < n_got; k++)
                        assert_false(outside[i].offset < got[k].offset + got[k].length &&
                                     got[k].offset < outside[i].offset + outside[i].length);
        free(outside);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_hotpaths_partition_offset, setup, teardown),
                cmocka_unit_test_setup_teardown(test_hotpaths_file_extents, setup, teardown),
                cmocka_unit_test_setup_teardown(test_hotpaths_unreachable, setup, teardown),
                cmocka_unit_test_setup_teardown(test_hotpaths_warns_about_nothing_to_read, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_hotpaths_warns_about_empty_file, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_hotpaths_warnings_escape_paths, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_hotpaths_tree, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
