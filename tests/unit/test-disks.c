/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for disks.c: which whole disks a target names, over the fake sysfs tree with a
 * partition and a device-mapper device added: kernel names, names left to the caller, files
 * whose st_dev the tree knows, and the failures told for paths no disk holds.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "disks.h"
#include "fixtures.h"
#include "test-util.h"

typedef struct Fixture {
        char *root;
        char *scratch; /* files whose st_dev the tree is told of */
        DiskSet set;
        DisksError told[8]; /* what explain() was told, strings not kept */
        size_t n_told;
} Fixture;

/* The fake tree, with nvme91n1p1 (a partition of nvme91n1) and dm-0 over nvme91n1p1 and
 * nvme92n1, as sysfs links them. */
static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));

        assert_non_null(f);
        f->root = fixture_tmpdir("test-disks");
        f->scratch = fixture_tmpdir("test-disks-scratch");
        assert_non_null(f->root);
        assert_non_null(f->scratch);
        fake_sysfs_tree(f->root);
        fixture_write(f->root, "devices/nvme91/nvme91n1/nvme91n1p1/partition", "1\n");
        fixture_symlink(f->root, "../../devices/nvme91/nvme91n1/nvme91n1p1",
                        "class/block/nvme91n1p1");
        fixture_mkdirs(f->root, "devices/virtual/block/dm-0/slaves");
        fixture_symlink(f->root, "../../../../nvme91/nvme91n1/nvme91n1p1",
                        "devices/virtual/block/dm-0/slaves/nvme91n1p1");
        fixture_symlink(f->root, "../../../../nvme92/nvme92n1",
                        "devices/virtual/block/dm-0/slaves/nvme92n1");
        fixture_symlink(f->root, "../../devices/virtual/block/dm-0", "class/block/dm-0");
        fixture_mkdirs(f->root, "dev/block");
        fixture_write(f->scratch, "file", "");
        assert_int_equal(setenv("EBS_HYDRATE_SYSFS_ROOT", f->root, 1), 0);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;

        assert_int_equal(unsetenv("EBS_HYDRATE_SYSFS_ROOT"), 0);
        disk_set_done(&f->set);
        assert_int_equal(rm_rf(f->root), 0);
        assert_int_equal(rm_rf(f->scratch), 0);
        free(f->root);
        free(f->scratch);
        free(f);
        return 0;
}

static void tell(const DisksError *e, void *userdata) {
        Fixture *f = userdata;

        assert_true(f->n_told < ELEMENTSOF(f->told));
        f->told[f->n_told] = *e;
        f->told[f->n_told].path = f->told[f->n_told].layer = NULL;
        f->n_told++;
}

static int disks_of(Fixture *f, const char *target) {
        disk_set_done(&f->set);
        f->n_told = 0;
        return disks_of_target(target, &f->set, tell, f);
}

static bool has(const DiskSet *s, const char *name) {
        for (size_t i = 0; i < s->n; i++)
                if (strcmp(s->names[i], name) == 0)
                        return true;
        return false;
}

/* The sysfs device number of the file system that holds @path, linked to @target. */
static void link_st_dev(Fixture *f, const char *path, const char *target) {
        _cleanup_free_ char *rel = NULL;
        struct stat st;

        assert_int_equal(stat(path, &st), 0);
        rel = xasprintf("dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
        fixture_symlink(f->root, target, rel);
}

static void test_disks_kernel_name(void **state) {
        Fixture *f = *state;

        assert_int_equal(disks_of(f, "nvme91n1"), 0);
        assert_int_equal(f->set.n, 1);
        assert_string_equal(f->set.names[0], "nvme91n1");
        assert_int_equal(disks_of(f, "sdzz"), 0);
        assert_int_equal(f->set.n, 1);
        assert_string_equal(f->set.names[0], "sdzz");
        /* a partition is held by its disk */
        assert_int_equal(disks_of(f, "nvme91n1p1"), 0);
        assert_int_equal(f->set.n, 1);
        assert_string_equal(f->set.names[0], "nvme91n1");
        assert_int_equal(f->n_told, 0);
}

static void test_disks_mapper(void **state) {
        Fixture *f = *state;

        assert_int_equal(disks_of(f, "dm-0"), 0);
        assert_int_equal(f->set.n, 2);
        assert_true(has(&f->set, "nvme91n1"));
        assert_true(has(&f->set, "nvme92n1"));
        /* added to what the set holds, each disk once */
        f->n_told = 0;
        assert_int_equal(disks_of_target("nvme91n1", &f->set, tell, f), 0);
        assert_int_equal(f->set.n, 2);
}

static void test_disks_names(void **state) {
        Fixture *f = *state;
        const char *names[] = {
                "vol-0123456789abcdef0", "sdf", "xvdf", "nvme5n1", ".", "..", "/dev/xvdzz",
                "/dev/nvme99n1"};

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                assert_int_equal(disks_of(f, names[i]), 1);
                assert_int_equal(f->set.n, 0);
                assert_int_equal(f->n_told, 0);
        }
}

static void test_disks_path(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *file = xasprintf("%s/file", f->scratch);

        link_st_dev(f, file, "../../devices/nvme91/nvme91n1/nvme91n1p1");
        assert_int_equal(disks_of(f, file), 0);
        assert_int_equal(f->set.n, 1);
        assert_string_equal(f->set.names[0], "nvme91n1");
        assert_int_equal(disks_of(f, f->scratch), 0); /* its directory, on the same device */
        assert_true(has(&f->set, "nvme91n1"));
        assert_int_equal(f->n_told, 0);
}

static void test_disks_path_mapper(void **state) {
        Fixture *f = *state;

        link_st_dev(f, f->scratch, "../../devices/virtual/block/dm-0");
        assert_int_equal(disks_of(f, f->scratch), 0);
        assert_int_equal(f->set.n, 2);
        assert_true(has(&f->set, "nvme91n1"));
        assert_true(has(&f->set, "nvme92n1"));
}

static void test_disks_path_missing(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *under_file = xasprintf("%s/file/x", f->scratch);

        assert_int_equal(disks_of(f, "/no/such/path"), -ENOENT);
        assert_int_equal(f->n_told, 1);
        assert_int_equal(f->told[0].failure, DISKS_STAT);
        assert_int_equal(f->told[0].error, -ENOENT);
        /* under /dev/ but deeper: a path, not a mapping name */
        assert_int_equal(disks_of(f, "/dev/nosuch/sdf"), -ENOENT);
        assert_int_equal(f->n_told, 1);
        assert_int_equal(disks_of(f, under_file), -ENOTDIR);
        assert_int_equal(f->n_told, 1);
        assert_int_equal(f->told[0].failure, DISKS_STAT);
        assert_int_equal(f->set.n, 0);
}

/* /proc is no block device's, and proc is mounted from none: no disk holds it. */
static void test_disks_path_not_block(void **state) {
        Fixture *f = *state;
        struct stat st;

        assert_int_equal(stat("/proc/self", &st), 0);
        assert_int_equal(disks_of(f, "/proc/self"), -ENODEV);
        assert_int_equal(f->n_told, 1);
        assert_int_equal(f->told[0].failure, DISKS_NOT_BLOCK);
        assert_int_equal(f->told[0].error, -ENODEV);
        assert_true(f->told[0].dev == st.st_dev);
        assert_int_equal(f->set.n, 0);
        /* and without anyone to tell */
        assert_int_equal(disks_of_target("/proc/self", &f->set, NULL, NULL), -ENODEV);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_disks_kernel_name, setup, teardown),
                cmocka_unit_test_setup_teardown(test_disks_mapper, setup, teardown),
                cmocka_unit_test_setup_teardown(test_disks_names, setup, teardown),
                cmocka_unit_test_setup_teardown(test_disks_path, setup, teardown),
                cmocka_unit_test_setup_teardown(test_disks_path_mapper, setup, teardown),
                cmocka_unit_test_setup_teardown(test_disks_path_missing, setup, teardown),
                cmocka_unit_test_setup_teardown(test_disks_path_not_block, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
