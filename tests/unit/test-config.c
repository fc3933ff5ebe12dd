/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for config.c: hydrate.conf and its drop-ins found along the search path and applied
 * in order, /etc hiding /usr/lib by name, masking with /dev/null, and the refusal of what cannot
 * be read safely: dangling links, FIFOs, devices, directories, unreadable files and files of
 * 1 MiB or more.
 */

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
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "fixtures-config.h"
#include "test-util.h"
#include "util.h"

static void test_config_missing_directories(void **state) {
        Fixture *f = *state;
        HydrateSettings s, d;
        char *err = (char *)"garbage";

        hydrate_settings_init(&d);
        assert_loads(f, &dev_f, &d);
        s = d;
        assert_int_equal(config_load(NULL, &dev_f, &s, &err), 0); /* empty search path */
        assert_null(err);
        assert_settings_equal(&s, &d);
}

static void test_config_main_file(void **state) {
        Fixture *f = *state;
        HydrateSettings e = {.enabled = false,
                             .queue_depth = 64,
                             .block_size = 2 << 20,
                             .rate_limit = UINT64_C(200) << 20};

        write_file(f, ETC "/hydrate.conf",
                   "# comment\n; another\n\n[Hydrate]\nEnabled=no\nQueueDepth=64\n"
                   "BlockSize=2M\nRateLimit=200M\n");
        assert_loads(f, &dev_f, &e);
}

static void test_config_usr_main_file_without_etc(void **state) {
        Fixture *f = *state;

        write_file(f, USR "/hydrate.conf", "[Hydrate]\nQueueDepth=8\n");
        assert_int_equal(queue_depth_for(f, &dev_f), 8);
}

static void test_config_etc_main_file_hides_usr(void **state) {
        Fixture *f = *state;
        HydrateSettings e;

        write_file(f, USR "/hydrate.conf", "[Hydrate]\nQueueDepth=8\nBlockSize=2M\n");
        write_file(f, ETC "/hydrate.conf", "[Hydrate]\nQueueDepth=16\n");
        hydrate_settings_init(&e);
        e.queue_depth = 16; /* and BlockSize= from /usr/lib is not applied at all */
        assert_loads(f, &dev_f, &e);
}

static void test_config_dropins_lexical_order(void **state) {
        Fixture *f = *state;
        HydrateSettings e;

        write_file(f, ETC "/hydrate.conf", "[Hydrate]\nQueueDepth=99\nBlockSize=8K\n");
        write_file(f, USR "/hydrate.conf.d/10-a.conf", "[Hydrate]\nQueueDepth=1\nRateLimit=1M\n");
        write_file(f, ETC "/hydrate.conf.d/20-b.conf", "[Hydrate]\nQueueDepth=2\n");
        write_file(f, USR "/hydrate.conf.d/30-c.conf", "[Hydrate]\nQueueDepth=3\n");
        hydrate_settings_init(&e);
        e.queue_depth = 3;
        e.block_size = 8192;
        e.rate_limit = 1 << 20;
        assert_loads(f, &dev_f, &e);
}

static void test_config_dropins_strcmp_not_numeric(void **state) {
        Fixture *f = *state;

        /* "10-..." sorts before "9-...": 9-late.conf is applied last. */
        write_file(f, ETC "/hydrate.conf.d/9-late.conf", "[Hydrate]\nQueueDepth=9\n");
        write_file(f, ETC "/hydrate.conf.d/10-early.conf", "[Hydrate]\nQueueDepth=10\n");
        assert_int_equal(queue_depth_for(f, &dev_f), 9);
}

static void test_config_dropin_after_main_file(void **state) {
        Fixture *f = *state;

        /* A vendor drop-in still comes after the admin's main file. */
        write_file(f, ETC "/hydrate.conf", "[Hydrate]\nQueueDepth=16\n");
        write_file(f, USR "/hydrate.conf.d/50-vendor.conf", "[Hydrate]\nQueueDepth=4\n");
        assert_int_equal(queue_depth_for(f, &dev_f), 4);
}

static void test_config_etc_dropin_hides_usr_dropin(void **state) {
        Fixture *f = *state;
        HydrateSettings e;

        write_file(f, USR "/hydrate.conf.d/50-x.conf", "[Hydrate]\nQueueDepth=7\nRateLimit=5M\n");
        write_file(f, ETC "/hydrate.conf.d/50-x.conf", "[Hydrate]\nQueueDepth=9\n");
        write_file(f, USR "/hydrate.conf.d/40-y.conf", "[Hydrate]\nBlockSize=4M\n");
        hydrate_settings_init(&e);
        e.queue_depth = 9;
        e.block_size = 4 << 20;
        assert_loads(f, &dev_f, &e);
}

static void test_config_hidden_dropin_is_not_read(void **state) {
        Fixture *f = *state;

        write_file(f, USR "/hydrate.conf.d/50-x.conf", "this is not valid\n");
        write_file(f, ETC "/hydrate.conf.d/50-x.conf", "");
        assert_int_equal(queue_depth_for(f, &dev_f), HYDRATE_DEFAULT_QUEUE_DEPTH);
}

static void test_config_dropin_names_filtered(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf.d/.hidden.conf", "garbage\n");
        write_file(f, ETC "/hydrate.conf.d/.conf", "garbage\n");
        write_file(f, ETC "/hydrate.conf.d/60-x.conf.bak", "garbage\n");
        write_file(f, ETC "/hydrate.conf.d/60-x.conf~", "garbage\n");
        write_file(f, ETC "/hydrate.conf.d/README", "garbage\n");
        write_file(f, ETC "/hydrate.conf.d/70-real.conf", "[Hydrate]\nQueueDepth=70\n");
        assert_int_equal(queue_depth_for(f, &dev_f), 70);
}

/* "[Hydrate]\n", comment lines, then "QueueDepth=5\n": exactly @size bytes. */
static char *file_of_size(size_t size) {
        static const char head[] = "[Hydrate]\n", tail[] = "QueueDepth=5\n";
        size_t pos = strlen(head), end = size - strlen(tail);
        char *s = malloc(size + 1);

        assert_non_null(s);
        memcpy(s, head, pos);
        while (pos < end) {
                size_t len = MIN(end - pos, (size_t)100); /* with its line feed */

                memset(s + pos, '#', len - 1);
                s[pos + len - 1] = '\n';
                pos += len;
        }
        memcpy(s + end, tail, sizeof(tail));
        assert_int_equal(strlen(s), size);
        return s;
}

static void test_config_file_size_limit(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *largest = file_of_size((1 << 20) - 1);
        _cleanup_free_ char *too_large = file_of_size(1 << 20);

        /* "A file of 1 MiB or more is refused": one byte less is read to its last line. */
        write_file(f, ETC "/hydrate.conf", largest);
        assert_int_equal(queue_depth_for(f, &dev_f), 5);
        write_file(f, ETC "/hydrate.conf", too_large);
        assert_load_fails(f, -EFBIG, ETC "/hydrate.conf", ": cannot read: File too large");
}

static void test_config_error_keeps_earlier_files_out(void **state) {
        Fixture *f = *state;

        /* 10 applies, then 20 fails: the caller's settings stay as they were. */
        write_file(f, ETC "/hydrate.conf.d/10-good.conf", "[Hydrate]\nQueueDepth=5\nEnabled=no\n");
        write_file(f, ETC "/hydrate.conf.d/20-bad.conf", "[Hydrate]\nQueueDepth=x\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf.d/20-bad.conf",
                          ":2: invalid value 'x' for QueueDepth= "
                          "(expected auto or an integer from 1 to 1024)");
}

static void test_config_error_dropin_is_directory(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *dir = fixture_path(f, ETC "/hydrate.conf.d/50-dir.conf/");

        mkdir_parents(dir);
        assert_load_fails(f, -EISDIR, ETC "/hydrate.conf.d/50-dir.conf",
                          ": cannot read: not a regular file but a directory");
}

/* Removes ROOT/@relative: a file, a link or an empty directory. */
static void remove_at(const Fixture *f, const char *relative) {
        _cleanup_free_ char *path = fixture_path(f, relative);

        assert_int_equal(remove(path), 0);
}

static void mkfifo_at(const Fixture *f, const char *relative) {
        _cleanup_free_ char *path = fixture_path(f, relative);

        mkdir_parents(path);
        assert_int_equal(mkfifo(path, 0644), 0);
}

/* ROOT/@relative as a symbolic link to @target, parents made. */
static void symlink_file(const Fixture *f, const char *target, const char *relative) {
        _cleanup_free_ char *path = fixture_path(f, relative);

        mkdir_parents(path);
        (void)unlink(path);
        assert_int_equal(symlink(target, path), 0);
}

static void test_config_error_dangling_symlink(void **state) {
        Fixture *f = *state;

        /* It would hide the vendor drop-in of the same name without a word. */
        write_file(f, USR "/hydrate.conf.d/50-x.conf", "[Hydrate]\nQueueDepth=7\n");
        symlink_file(f, "/nonexistent/50-x.conf", ETC "/hydrate.conf.d/50-x.conf");
        assert_load_fails(f, -ENOLINK, ETC "/hydrate.conf.d/50-x.conf",
                          ": cannot read: symbolic link to '/nonexistent/50-x.conf', which does "
                          "not exist");
        remove_at(f, ETC "/hydrate.conf.d/50-x.conf");
        assert_int_equal(queue_depth_for(f, &dev_f), 7);

        /* A main file would fall back to the vendor's without a word. */
        write_file(f, USR "/hydrate.conf", "[Hydrate]\nQueueDepth=8\n");
        symlink_file(f, "../../missing.conf", ETC "/hydrate.conf");
        assert_load_fails(f, -ENOLINK, ETC "/hydrate.conf",
                          ": cannot read: symbolic link to '../../missing.conf', which does not "
                          "exist");
        remove_at(f, ETC "/hydrate.conf");

        /* So would a whole directory. */
        remove_at(f, ETC "/hydrate.conf.d");
        symlink_file(f, "/nonexistent", ETC "/hydrate.conf.d");
        assert_load_fails(f, -ENOLINK, ETC "/hydrate.conf.d",
                          ": cannot read: symbolic link to '/nonexistent', which does not exist");
        remove_at(f, ETC "/hydrate.conf.d");
        remove_at(f, ETC);
        symlink_file(f, "/nonexistent", ETC);
        assert_load_fails(f, -ENOLINK, ETC,
                          ": cannot read: symbolic link to '/nonexistent', which does not exist");

        /* A file that is not there at all is fine, as is a link to one that is. */
        remove_at(f, ETC);
        write_file(f, "elsewhere/60-y.conf", "[Hydrate]\nQueueDepth=60\n");
        symlink_file(f, "../../../elsewhere/60-y.conf", ETC "/hydrate.conf.d/60-y.conf");
        assert_int_equal(queue_depth_for(f, &dev_f), 60);
}

static void test_config_dev_null_masks(void **state) {
        Fixture *f = *state;
        HydrateSettings e;

        /* As systemd has it: a link to /dev/null in /etc masks the file of that name. */
        write_file(f, USR "/hydrate.conf", "[Hydrate]\nQueueDepth=8\n");
        write_file(f, USR "/hydrate.conf.d/50-x.conf", "[Hydrate]\nRateLimit=7M\n");
        write_file(f, USR "/hydrate.conf.d/60-y.conf", "[Hydrate]\nBlockSize=8K\n");
        symlink_file(f, "/dev/null", ETC "/hydrate.conf.d/50-x.conf");
        symlink_file(f, "/dev/null", ETC "/hydrate.conf");
        hydrate_settings_init(&e);
        e.block_size = 8192; /* the one file that is not masked */
        assert_loads(f, &dev_f, &e);
}

/* Dies instead of hanging if the daemon would hang: ctest reports the test as failed. */
static void fail_if_stuck(unsigned seconds) {
        (void)alarm(seconds);
}

static void test_config_error_not_a_regular_file(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *sock = fixture_path(f, ETC "/hydrate.conf.d/70-z.conf");
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int fd;

        fail_if_stuck(10);
        mkfifo_at(f, ETC "/hydrate.conf.d/50-x.conf");
        assert_load_fails(f, -EBADFD, ETC "/hydrate.conf.d/50-x.conf",
                          ": cannot read: not a regular file but a FIFO");
        remove_at(f, ETC "/hydrate.conf.d/50-x.conf");

        /* A main file too: the vendor's is hidden, not read instead. */
        write_file(f, USR "/hydrate.conf", "[Hydrate]\nQueueDepth=8\n");
        mkfifo_at(f, ETC "/hydrate.conf");
        assert_load_fails(f, -EBADFD, ETC "/hydrate.conf",
                          ": cannot read: not a regular file but a FIFO");
        remove_at(f, ETC "/hydrate.conf");
        fail_if_stuck(0);

        symlink_file(f, "/dev/zero", ETC "/hydrate.conf.d/60-y.conf");
        assert_load_fails(f, -EBADFD, ETC "/hydrate.conf.d/60-y.conf",
                          ": cannot read: not a regular file but a character device");
        remove_at(f, ETC "/hydrate.conf.d/60-y.conf");

        if (strlen(sock) >= sizeof(sa.sun_path))
                return;
        strcpy(sa.sun_path, sock);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_load_fails(f, -EBADFD, ETC "/hydrate.conf.d/70-z.conf",
                          ": cannot read: not a regular file but a socket");
        (void)close(fd);
}

static void test_config_error_huge_file_not_read(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *path = fixture_path(f, ETC "/hydrate.conf");
        int fd;

        /* 10 GiB, sparse: refused at once, never slurped into memory. */
        mkdir_parents(path);
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, (off_t)10 << 30), 0);
        assert_int_equal(close(fd), 0);
        assert_load_fails(f, -EFBIG, ETC "/hydrate.conf", ": cannot read: File too large");
}

static void test_config_error_unreadable(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *path = NULL, *dir = NULL;

        if (geteuid() == 0)
                skip(); /* root reads anything */
        path = fixture_path(f, USR "/hydrate.conf.d/60-secret.conf");
        dir = fixture_path(f, ETC "/hydrate.conf.d");
        write_file(f, USR "/hydrate.conf.d/60-secret.conf", "[Hydrate]\n");
        assert_int_equal(chmod(path, 0), 0);
        assert_load_fails(f, -EACCES, USR "/hydrate.conf.d/60-secret.conf",
                          ": cannot read: Permission denied");
        assert_int_equal(chmod(path, 0644), 0);

        write_file(f, ETC "/hydrate.conf.d/10-x.conf", "[Hydrate]\n");
        assert_int_equal(chmod(dir, 0), 0);
        assert_load_fails(f, -EACCES, ETC "/hydrate.conf.d", ": cannot read: Permission denied");
        assert_int_equal(chmod(dir, 0755), 0);
}

static void test_config_apply_file_missing(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *path = fixture_path(f, "nope.conf");
        _cleanup_free_ char *expected =
                xasprintf("%s: cannot read: No such file or directory", path);
        _cleanup_free_ char *err = NULL;
        HydrateSettings s;

        hydrate_settings_init(&s);
        assert_int_equal(config_apply_file(path, &dev_f, &s, &err), -ENOENT);
        assert_string_equal(err, expected);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                fixture_test(test_config_missing_directories),
                fixture_test(test_config_main_file),
                fixture_test(test_config_usr_main_file_without_etc),
                fixture_test(test_config_etc_main_file_hides_usr),
                fixture_test(test_config_dropins_lexical_order),
                fixture_test(test_config_dropins_strcmp_not_numeric),
                fixture_test(test_config_dropin_after_main_file),
                fixture_test(test_config_etc_dropin_hides_usr_dropin),
                fixture_test(test_config_hidden_dropin_is_not_read),
                fixture_test(test_config_dropin_names_filtered),
                fixture_test(test_config_file_size_limit),
                fixture_test(test_config_error_keeps_earlier_files_out),
                fixture_test(test_config_error_dropin_is_directory),
                fixture_test(test_config_error_dangling_symlink),
                fixture_test(test_config_dev_null_masks),
                fixture_test(test_config_error_not_a_regular_file),
                fixture_test(test_config_error_huge_file_not_read),
                fixture_test(test_config_error_unreadable),
                fixture_test(test_config_apply_file_missing),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
