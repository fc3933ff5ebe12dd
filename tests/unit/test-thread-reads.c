/* SPDX-License-Identifier: MIT */
/* The reads of the process's other threads: /proc/<pid>/io parsed, and a thread's reads of a
 * file seen from another. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>

#include "fixtures.h"
#include "thread-reads.h"
#include "util.h"

static void test_thread_reads_parse(void **state) {
        uint64_t v = 7;

        assert_int_equal(thread_reads_parse("rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\n"
                                            "read_bytes: 123456\nwrite_bytes: 5\n"
                                            "cancelled_write_bytes: 0\n",
                                            &v),
                         0);
        assert_true(v == 123456);
        assert_int_equal(thread_reads_parse("read_bytes: 18446744073709551615", &v), 0);
        assert_true(v == UINT64_MAX);
        assert_int_equal(thread_reads_parse("rchar: 1\n", &v), -EBADMSG);
        assert_int_equal(thread_reads_parse("read_bytes: \n", &v), -EBADMSG);
        assert_int_equal(thread_reads_parse("read_bytes: 12x\n", &v), -EBADMSG);
        assert_int_equal(thread_reads_parse("read_bytes: 184467440737095516150\n", &v), -EBADMSG);
        assert_int_equal(thread_reads_parse("", &v), -EBADMSG);
}

#define SPAN (UINT64_C(1) << 20)

/* Reads the file @userdata (a path) with O_DIRECT, past the page cache: the block layer reads. */
static bool read_direct(const char *path) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
        void *buf = NULL;
        bool ok;

        if (fd < 0 || posix_memalign(&buf, 4096, SPAN) != 0)
                return false;
        ok = pread(fd, buf, SPAN, 0) == (ssize_t)SPAN;
        free(buf);
        return ok;
}

static void *reader(void *userdata) {
        return read_direct(userdata) ? userdata : NULL;
}

/* What another thread reads counts, once it is read; what this thread reads does not. */
static void test_thread_reads_others(void **state) {
        _cleanup_free_ char *dir = fixture_tmpdir("test-thread-reads"), *path = NULL;
        _cleanup_free_ void *zeroes = calloc(1, SPAN);
        uint64_t before, after;
        void *ok = NULL;
        pthread_t t;
        int fd;

        assert_non_null(dir);
        assert_non_null(zeroes);
        assert_true(asprintf(&path, "%s/data", dir) > 0);
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, zeroes, SPAN), (ssize_t)SPAN);
        assert_int_equal(fsync(fd), 0);
        assert_int_equal(close(fd), 0);
        if (access("/proc/thread-self/io", R_OK) < 0 || !read_direct(path)) {
                (void)rm_rf(dir);
                skip(); /* no task I/O accounting, or a file system without direct I/O */
        }
        before = thread_reads_others();
        assert_true(read_direct(path)); /* this thread's own: not counted */
        assert_true(thread_reads_others() == before);
        assert_int_equal(pthread_create(&t, NULL, reader, path), 0);
        assert_int_equal(pthread_join(t, &ok), 0);
        assert_non_null(ok);
        after = thread_reads_others();
        assert_true(after - before >= SPAN);
        assert_true(after - before < 2 * SPAN);
        assert_int_equal(rm_rf(dir), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_thread_reads_parse),
                cmocka_unit_test(test_thread_reads_others),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
