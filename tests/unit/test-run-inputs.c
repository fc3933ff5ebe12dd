/* SPDX-License-Identifier: MIT */
/*
 * What a run needs before it reads (run-inputs.c): the checkpoint's name, where the state
 * directory is and that it is ours alone, and the runtime directory of the records.
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
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "build-config.h"
#include "fixtures.h"
#include "run-inputs.h"
#include "state.h"
#include "test-util.h"
#include "util.h"

typedef struct Fixture {
        char *root;
} Fixture;

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        f->root = fixture_tmpdir("test-run-inputs");
        assert_non_null(f->root);
        (void)unsetenv("STATE_DIRECTORY");
        (void)unsetenv("RUNTIME_DIRECTORY");
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        assert_int_equal(rm_rf(f->root), 0);
        free(f->root);
        free(f);
        (void)unsetenv("STATE_DIRECTORY");
        (void)unsetenv("RUNTIME_DIRECTORY");
        return 0;
}

/* --state-key wins; else the volume id; a device with no identity at all must be named. */
static void test_inputs_state_key(void **state) {
        DeviceIdentity ebs = {.kernel_name = "nvme1n1",
                              .is_ebs = true,
                              .volume_id = "vol-0123456789abcdef0"},
                       none = {.kernel_name = "loop3"};
        Args given = {.state_key = "mine"}, not_given = {};
        char key[STATE_KEY_MAX + 1];

        assert_int_equal(inputs_state_key(&given, &ebs, key, sizeof(key)), 0);
        assert_string_equal(key, "mine");
        assert_int_equal(inputs_state_key(&not_given, &ebs, key, sizeof(key)), 0);
        assert_string_equal(key, "vol-0123456789abcdef0");
        assert_int_equal(inputs_state_key(&not_given, &none, key, sizeof(key)), -ENOKEY);
}

/* --state-dir, else the first of $STATE_DIRECTORY's list, else the built-in default. */
static void test_inputs_state_dir_path(void **state) {
        Args given = {.state_dir = "/given"}, not_given = {};
        char *p = NULL;

        assert_int_equal(inputs_state_dir_path(&given, &p), 0);
        assert_string_equal(p, "/given");
        free(p);
        assert_int_equal(setenv("STATE_DIRECTORY", "/from/systemd:/second", 1), 0);
        assert_int_equal(inputs_state_dir_path(&not_given, &p), 0);
        assert_string_equal(p, "/from/systemd");
        free(p);
        assert_int_equal(unsetenv("STATE_DIRECTORY"), 0);
        assert_int_equal(inputs_state_dir_path(&not_given, &p), 0);
        assert_string_equal(p, EBS_HYDRATE_STATE_DIR);
        free(p);
}

/* What an inputs_*_dir() call returned: a descriptor of @dir, its path, and @dir in @mode. */
static void assert_dir_opened(int fd, char *path, const char *dir, mode_t mode) {
        struct stat st;

        assert_true(fd >= 0);
        assert_string_equal(path, dir);
        assert_int_equal(stat(dir, &st), 0);
        assert_int_equal(st.st_mode & 07777, mode);
        close(fd);
        free(path);
}

/* Created 0700 if missing; one open to others, or not a directory, is refused. */
static void test_inputs_state_dir(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *dir = xasprintf("%s/state", f->root),
                            *file = xasprintf("%s/file", f->root);
        Args a = {.state_dir = dir};
        char *path = NULL;
        int fd;

        fd = inputs_state_dir(&a, &path);
        assert_dir_opened(fd, path, dir, 0700);
        path = NULL;
        assert_int_equal(chmod(dir, 0755), 0);
        assert_true(inputs_state_dir(&a, &path) < 0);
        assert_null(path);
        fixture_write(f->root, "file", "x");
        a.state_dir = file;
        assert_true(inputs_state_dir(&a, &path) < 0);
}

/* $RUNTIME_DIRECTORY: made readable to all (waiters read the records), and refused if others
 * may write to it. */
static void test_inputs_runtime_dir(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *dir = xasprintf("%s/run", f->root);
        char *path = NULL;
        int fd;

        assert_int_equal(mkdir(dir, 0700), 0);
        assert_int_equal(setenv("RUNTIME_DIRECTORY", dir, 1), 0);
        fd = inputs_runtime_dir(&path);
        assert_dir_opened(fd, path, dir, 0755);
        assert_int_equal(chmod(dir, 0777), 0);
        assert_int_equal(inputs_runtime_dir(NULL), -EPERM);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_inputs_state_key, setup, teardown),
                cmocka_unit_test_setup_teardown(test_inputs_state_dir_path, setup, teardown),
                cmocka_unit_test_setup_teardown(test_inputs_state_dir, setup, teardown),
                cmocka_unit_test_setup_teardown(test_inputs_runtime_dir, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
