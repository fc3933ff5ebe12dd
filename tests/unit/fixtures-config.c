/* SPDX-License-Identifier: MIT */
/*
 * The fixture of the config tests (fixtures-config.h): the scratch tree and its removal, the two
 * devices, and config_load() held to what a test expects of it.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "config.h"
#include "fixtures-config.h"
#include "fixtures.h"
#include "test-util.h"
#include "util.h"

const MatchTarget dev_f = {
        .volume_id = "vol-0123456789abcdef0",
        .device_name = "/dev/sdf",
        .kernel_name = "nvme1n1",
};

const MatchTarget dev_g = {
        .volume_id = "vol-0fedcba9876543210",
        .device_name = "xvdg",
        .kernel_name = "nvme2n1",
};

int config_fixture_setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));

        if (!f)
                return -1;
        f->root = fixture_tmpdir("test-config");
        if (!f->root)
                return -1;
        f->usr = xasprintf("%s/" USR, f->root);
        f->etc = xasprintf("%s/" ETC, f->root);
        f->dirs[0] = f->usr;
        f->dirs[1] = f->etc;
        f->dirs[2] = NULL;
        *state = f;
        return 0;
}

int config_fixture_teardown(void **state) {
        Fixture *f = *state;

        (void)rm_rf(f->root);
        free(f->root);
        free(f->usr);
        free(f->etc);
        free(f);
        return 0;
}

char *fixture_path(const Fixture *f, const char *relative) {
        return xasprintf("%s/%s", f->root, relative);
}

void mkdir_parents(char *path) {
        for (char *slash = strchr(path + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
                *slash = '\0';
                assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
                *slash = '/';
        }
}

void assert_settings_equal(const HydrateSettings *a, const HydrateSettings *b) {
        assert_int_equal(a->enabled, b->enabled);
        assert_int_equal(a->queue_depth, b->queue_depth);
        assert_true(a->block_size == b->block_size);
        assert_true(a->rate_limit == b->rate_limit);
        assert_int_equal(a->mode, b->mode);
        assert_string_equal(a->hot_paths, b->hot_paths);
}

int load(const Fixture *f, const MatchTarget *target, HydrateSettings *s, char **err) {
        return config_load(f->dirs, target, s, err);
}

void assert_loads(const Fixture *f, const MatchTarget *target, const HydrateSettings *expected) {
        _cleanup_free_ char *err = NULL;
        HydrateSettings s;

        hydrate_settings_init(&s);
        assert_int_equal(load(f, target, &s, &err), 0);
        assert_null(err);
        assert_settings_equal(&s, expected);
}

unsigned queue_depth_for(const Fixture *f, const MatchTarget *target) {
        _cleanup_free_ char *err = NULL;
        HydrateSettings s;

        hydrate_settings_init(&s);
        assert_int_equal(load(f, target, &s, &err), 0);
        assert_null(err);
        return s.queue_depth;
}

void assert_load_fails(const Fixture *f, int error, const char *relative, const char *suffix) {
        _cleanup_free_ char *err = NULL, *path = fixture_path(f, relative);
        _cleanup_free_ char *expected = xasprintf("%s%s", path, suffix);
        HydrateSettings s, before;

        hydrate_settings_init(&s);
        s.queue_depth = 77;
        before = s;
        assert_int_equal(load(f, &dev_f, &s, &err), error);
        assert_non_null(err);
        assert_string_equal(err, expected);
        assert_settings_equal(&s, &before); /* untouched on failure */
}
