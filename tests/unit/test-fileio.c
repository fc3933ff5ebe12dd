/* SPDX-License-Identifier: MIT */
/* Whole-file reads (fileio.h): to the end or not at all, under a cap, from files and pipes;
 * whole-file replacement through a temporary file that never outlives the call; and
 * sysfs attributes (sysfs.h), read on them: one root ($EBS_HYDRATE_SYSFS_ROOT), values whole or
 * refused, numbers and device numbers. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cmocka.h>

#include "fileio.h"
#include "fixtures.h"
#include "sysfs.h"
#include "test-util.h"
#include "util.h"

typedef struct Fixture {
        char *root;
        int dir_fd;
} Fixture;

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        f->root = fixture_tmpdir("test-fileio");
        assert_non_null(f->root);
        f->dir_fd = open(f->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(f->dir_fd >= 0);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        (void)close(f->dir_fd);
        assert_int_equal(rm_rf(f->root), 0);
        free(f->root);
        free(f);
        (void)unsetenv("EBS_HYDRATE_SYSFS_ROOT");
        return 0;
}

/* @size bytes of a pattern that a short or shifted read would not reproduce. */
static char *pattern(size_t size) {
        char *p = malloc(size + 1);

        assert_non_null(p);
        for (size_t i = 0; i < size; i++)
                p[i] = (char)('a' + (i * 7 + i / 251) % 26);
        p[size] = '\0';
        return p;
}

/* The names in @dir, sorted, one a line. */
static char *dir_listing(const char *dir) {
        struct dirent **names = NULL;
        char *out = calloc(1, 4096);
        int n = scandir(dir, &names, NULL, alphasort);

        assert_non_null(out);
        assert_true(n >= 0);
        for (int i = 0; i < n; i++) {
                if (strcmp(names[i]->d_name, ".") != 0 && strcmp(names[i]->d_name, "..") != 0) {
                        strncat(out, names[i]->d_name, 4095 - strlen(out));
                        strncat(out, "\n", 4095 - strlen(out));
                }
                free(names[i]);
        }
        free(names);
        return out;
}

/* A new file, then a replacement: mode as asked under any umask, content whole, no temporary
 * left behind, and a reader of the old file keeps the old content (a rename, not a rewrite). */
static void test_fileio_write_atomic(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *path = NULL, *content = pattern(70000), *buf = NULL, *list = NULL;
        _cleanup_close_ int old_fd = -1;
        mode_t old_umask = umask(0077);
        struct stat st;
        char head[4] = "";

        assert_true(asprintf(&path, "%s/out.prom", f->root) > 0);
        assert_int_equal(write_file_atomic(path, "old\n", 4, 0644), 0);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0644);
        old_fd = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(old_fd >= 0);

        assert_int_equal(write_file_atomic(path, content, 70000, 0644), 0);
        (void)umask(old_umask);
        assert_int_equal(read_full_file_at(f->dir_fd, "out.prom", 100000, &buf, NULL), 0);
        assert_memory_equal(buf, content, 70000);
        assert_int_equal(read(old_fd, head, 3), 3);
        assert_memory_equal(head, "old", 3);
        list = dir_listing(f->root);
        assert_string_equal(list, "out.prom\n");
}

/* Failures: an error, the target as it was, and no temporary file left. */
static void test_fileio_write_atomic_fails_clean(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *missing = NULL, *onto_dir = NULL, *list = NULL;

        assert_true(asprintf(&missing, "%s/nodir/out.prom", f->root) > 0);
        assert_int_equal(write_file_atomic(missing, "x\n", 2, 0644), -ENOENT);
        assert_int_equal(mkdirat(f->dir_fd, "sub", 0755), 0);
        fixture_write(f->root, "sub/keep", "");
        assert_true(asprintf(&onto_dir, "%s/sub", f->root) > 0);
        assert_true(write_file_atomic(onto_dir, "x\n", 2, 0644) < 0); /* a file over a directory */
        list = dir_listing(f->root);
        assert_string_equal(list, "sub\n");
        free(list);
        list = dir_listing(onto_dir);
        assert_string_equal(list, "keep\n");
        assert_int_equal(write_file_atomic("/", "x\n", 2, 0644), -EISDIR);
        assert_int_equal(unlinkat(f->dir_fd, "sub/keep", 0), 0);
        assert_int_equal(unlinkat(f->dir_fd, "sub", AT_REMOVEDIR), 0);
}

static void test_fileio_empty_file(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *buf = NULL;
        size_t size = 1;

        fixture_write(f->root, "empty", "");
        assert_int_equal(read_full_file_at(f->dir_fd, "empty", 16, &buf, &size), 0);
        assert_non_null(buf);
        assert_int_equal(size, 0);
        assert_string_equal(buf, "");
}

static void test_fileio_whole_file(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *content = pattern(100000), *buf = NULL;
        size_t size = 0;

        fixture_write(f->root, "big", content);
        assert_int_equal(read_full_file_at(f->dir_fd, "big", 100000, &buf, &size), 0);
        assert_int_equal(size, 100000);
        assert_memory_equal(buf, content, 100000);
        assert_int_equal(buf[size], '\0');
}

static void test_fileio_cap_exceeded(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *content = pattern(4097);
        char *buf = NULL;
        size_t size = 7;

        fixture_write(f->root, "over", content);
        assert_int_equal(read_full_file_at(f->dir_fd, "over", 4096, &buf, &size), -EFBIG);
        assert_null(buf); /* nothing handed out on failure */
        assert_int_equal(size, 7);
        assert_int_equal(read_full_file_at(f->dir_fd, "over", 4097, &buf, NULL), 0);
        assert_memory_equal(buf, content, 4097);
        free(buf);
}

static void test_fileio_cap_zero(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *buf = NULL;

        fixture_write(f->root, "one", "x");
        fixture_write(f->root, "none", "");
        assert_int_equal(read_full_file_at(f->dir_fd, "one", 0, &buf, NULL), -EFBIG);
        assert_int_equal(read_full_file_at(f->dir_fd, "none", 0, &buf, NULL), 0);
        assert_string_equal(buf, "");
}

static void test_fileio_nul_bytes_kept(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;

        fixture_write_bytes(f->root, "nul", "a\0b", 3);
        assert_int_equal(read_full_file_at(f->dir_fd, "nul", 3, &buf, &size), 0);
        assert_int_equal(size, 3);
        assert_memory_equal(buf, "a\0b", 4);
}

static void test_fileio_missing(void **state) {
        Fixture *f = *state;
        char *buf = NULL;

        assert_int_equal(read_full_file_at(f->dir_fd, "absent", 16, &buf, NULL), -ENOENT);
        assert_int_equal(read_full_file_at(f->dir_fd, ".", 16, &buf, NULL), -EISDIR);
        assert_null(buf);
}

static void test_fileio_from_position(void **state) {
        Fixture *f = *state;
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;

        fixture_write(f->root, "pos", "header:body");
        fd = openat(f->dir_fd, "pos", O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(lseek(fd, 7, SEEK_SET), 7);
        assert_int_equal(read_full_fd(fd, 4, &buf, &size), 0);
        assert_int_equal(size, 4);
        assert_string_equal(buf, "body");
}

/* A pipe has no size to go by: the buffer grows as the bytes come, and the cap still holds. */
static void test_fileio_pipe(void **state) {
        _cleanup_free_ char *content = pattern(50000), *buf = NULL;
        size_t size = 0;
        int p[2];

        (void)state;
        for (int cap = 0; cap < 2; cap++) {
                assert_int_equal(pipe2(p, O_CLOEXEC), 0);
                assert_int_equal(write(p[1], content, 50000), 50000); /* fits a pipe's buffer */
                (void)close(p[1]);
                if (cap) {
                        assert_int_equal(read_full_fd(p[0], 49999, &buf, &size), -EFBIG);
                } else {
                        assert_int_equal(read_full_fd(p[0], 50000, &buf, &size), 0);
                        assert_int_equal(size, 50000);
                        assert_memory_equal(buf, content, 50000);
                        free(TAKE_PTR(buf));
                }
                (void)close(p[0]);
        }
}

static void test_fileio_bad_fd(void **state) {
        char *buf = NULL;

        (void)state;
        assert_int_equal(read_full_fd(-1, 16, &buf, NULL), -EBADF);
        assert_int_equal(read_full_fd(0, SIZE_MAX, &buf, NULL), -EINVAL);
        assert_null(buf);
}

/* @n bytes of 'x' and then @tail. */
static char *value_of(size_t n, const char *tail) {
        char *s = malloc(n + strlen(tail) + 1);

        assert_non_null(s);
        memset(s, 'x', n);
        strcpy(s + n, tail);
        return s;
}

static void test_fileio_sysfs_root_honours_environment(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *path = NULL, *model = NULL;

        (void)unsetenv("EBS_HYDRATE_SYSFS_ROOT");
        assert_string_equal(sysfs_root(), "/sys");
        assert_int_equal(setenv("EBS_HYDRATE_SYSFS_ROOT", f->root, 1), 0);
        assert_string_equal(sysfs_root(), f->root);

        /* What is read under the root is the fake tree's. */
        fake_sysfs_tree(f->root);
        path = xasprintf("%s/class/block/nvme91n1/device/model", sysfs_root());
        assert_int_equal(sysfs_read_attr_at(AT_FDCWD, path, &model), 0);
        assert_string_equal(model, FAKE_EBS_MODEL);
}

static void test_fileio_sysfs_attr_trailing_newlines(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;

        fixture_write(f->root, "a", "value\n");
        fixture_write(f->root, "b", "two lines\nend\n\n");
        fixture_write(f->root, "c", "");
        assert_int_equal(sysfs_read_attr_at(f->dir_fd, "a", &a), 0);
        assert_string_equal(a, "value");
        assert_int_equal(sysfs_read_attr_at(f->dir_fd, "b", &b), 0);
        assert_string_equal(b, "two lines\nend");
        assert_int_equal(sysfs_read_attr_at(f->dir_fd, "c", &c), 0);
        assert_string_equal(c, "");
}

/* The longest value is read whole; one byte more is refused, never cut. */
static void test_fileio_sysfs_attr_truncation_refused(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *longest = value_of(SYSFS_ATTR_MAX - 1, "\n");
        _cleanup_free_ char *over = value_of(SYSFS_ATTR_MAX, "\n");
        _cleanup_free_ char *value = NULL;
        char *none = NULL;

        fixture_write(f->root, "longest", longest);
        fixture_write(f->root, "over", over);
        assert_int_equal(sysfs_read_attr_at(f->dir_fd, "longest", &value), 0);
        assert_int_equal(strlen(value), SYSFS_ATTR_MAX - 1);
        assert_int_equal(sysfs_read_attr_at(f->dir_fd, "over", &none), -EFBIG);
        assert_null(none);
}

static void test_fileio_sysfs_attr_nul_refused(void **state) {
        Fixture *f = *state;
        char *value = NULL;

        fixture_write_bytes(f->root, "nul", "Amazon\0Elastic\n", 15);
        assert_int_equal(sysfs_read_attr_at(f->dir_fd, "nul", &value), -EBADMSG);
        assert_null(value);
}

static void test_fileio_sysfs_attr_missing(void **state) {
        Fixture *f = *state;
        char *value = NULL;

        assert_int_equal(sysfs_read_attr_at(f->dir_fd, "absent", &value), -ENOENT);
        assert_null(value);
}

static void test_fileio_sysfs_u64(void **state) {
        Fixture *f = *state;
        uint64_t v = 0;

        fixture_write(f->root, "start", "2048\n");
        fixture_write(f->root, "max", "18446744073709551615\n");
        fixture_write(f->root, "huge", "18446744073709551616\n");
        fixture_write(f->root, "word", "none\n");
        fixture_write(f->root, "spaced", " 12\n");
        fixture_write(f->root, "empty", "\n");
        assert_int_equal(sysfs_read_u64_at(f->dir_fd, "start", &v), 0);
        assert_int_equal(v, 2048);
        assert_int_equal(sysfs_read_u64_at(f->dir_fd, "max", &v), 0);
        assert_true(v == UINT64_MAX);
        v = 7;
        assert_int_equal(sysfs_read_u64_at(f->dir_fd, "huge", &v), -EBADMSG);
        assert_int_equal(sysfs_read_u64_at(f->dir_fd, "word", &v), -EBADMSG);
        assert_int_equal(sysfs_read_u64_at(f->dir_fd, "spaced", &v), -EBADMSG);
        assert_int_equal(sysfs_read_u64_at(f->dir_fd, "empty", &v), -EBADMSG);
        assert_int_equal(sysfs_read_u64_at(f->dir_fd, "absent", &v), -ENOENT);
        assert_int_equal(v, 7);
}

static void test_fileio_sysfs_devnum(void **state) {
        Fixture *f = *state;
        dev_t dev = 0;

        fixture_write(f->root, "dev", "259:1\n");
        fixture_write(f->root, "no-colon", "259\n");
        fixture_write(f->root, "no-minor", "259:\n");
        fixture_write(f->root, "too-big", "4294967296:0\n");
        assert_int_equal(sysfs_read_devnum_at(f->dir_fd, "dev", &dev), 0);
        assert_int_equal(major(dev), 259);
        assert_int_equal(minor(dev), 1);
        assert_int_equal(sysfs_read_devnum_at(f->dir_fd, "no-colon", &dev), -EBADMSG);
        assert_int_equal(sysfs_read_devnum_at(f->dir_fd, "no-minor", &dev), -EBADMSG);
        assert_int_equal(sysfs_read_devnum_at(f->dir_fd, "too-big", &dev), -EBADMSG);
        assert_int_equal(sysfs_read_devnum_at(f->dir_fd, "absent", &dev), -ENOENT);
}

/* A pipe nobody reads: write_full_fd_stall() gives up after its stall time, with -ETIMEDOUT;
 * one that is read gets every byte. */
static void test_fileio_write_stall(void **state) {
        static char big[256 * 1024];
        int p[2];
        char got[8];

        assert_int_equal(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
        assert_int_equal(write_full_fd_stall(p[1], big, sizeof(big), 50 * USEC_PER_MSEC),
                         -ETIMEDOUT);
        assert_int_equal(write_full_fd(p[1], "x", 1), -EAGAIN); /* 0: no waiting at all */
        (void)close(p[0]);
        (void)close(p[1]);
        assert_int_equal(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
        assert_int_equal(write_full_fd_stall(p[1], "abc", 3, USEC_PER_SEC), 0);
        assert_int_equal(read(p[0], got, sizeof(got)), 3);
        (void)close(p[0]);
        (void)close(p[1]);
}

/* rename_into_place(): the temporary file replaces the name, or goes on any error. */
static void test_fileio_rename_into_place(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *data = NULL;
        size_t size;

        fixture_write(f->root, ".t1", "new");
        fixture_write(f->root, "name", "old");
        assert_int_equal(rename_into_place(f->dir_fd, ".t1", "name", 0), 0);
        assert_int_equal(read_full_file_at(f->dir_fd, "name", 16, &data, &size), 0);
        assert_memory_equal(data, "new", 3);
        assert_int_equal(faccessat(f->dir_fd, ".t1", F_OK, 0), -1);
        fixture_write(f->root, ".t2", "half");
        assert_int_equal(rename_into_place(f->dir_fd, ".t2", "name", -EIO), -EIO);
        assert_int_equal(faccessat(f->dir_fd, ".t2", F_OK, 0), -1);
        free(data);
        data = NULL;
        assert_int_equal(read_full_file_at(f->dir_fd, "name", 16, &data, &size), 0);
        assert_memory_equal(data, "new", 3);
}

static void test_fileio_sysfs_dev_block(void **state) {
        _cleanup_free_ char *a = sysfs_dev_block("/r", makedev(259, 3), NULL);
        _cleanup_free_ char *b = sysfs_dev_block("/r", makedev(7, 1), "../dev");

        assert_string_equal(a, "/r/dev/block/259:3");
        assert_string_equal(b, "/r/dev/block/7:1/../dev");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_fileio_empty_file, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fileio_write_atomic, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fileio_write_atomic_fails_clean, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_fileio_whole_file, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fileio_cap_exceeded, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fileio_cap_zero, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fileio_nul_bytes_kept, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fileio_missing, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fileio_from_position, setup, teardown),
                cmocka_unit_test(test_fileio_pipe),
                cmocka_unit_test(test_fileio_bad_fd),
                cmocka_unit_test_setup_teardown(test_fileio_sysfs_root_honours_environment, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_fileio_sysfs_attr_trailing_newlines, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_fileio_sysfs_attr_truncation_refused, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_fileio_sysfs_attr_nul_refused, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_fileio_sysfs_attr_missing, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fileio_sysfs_u64, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fileio_sysfs_devnum, setup, teardown),
                cmocka_unit_test(test_fileio_write_stall),
                cmocka_unit_test_setup_teardown(test_fileio_rename_into_place, setup, teardown),
                cmocka_unit_test(test_fileio_sysfs_dev_block),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
