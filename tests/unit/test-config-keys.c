/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for config-keys.c: the [Hydrate] keys, their defaults, the values each takes and
 * refuses (through the parsers the command line shares), "Key=" as the default again, and the
 * shipped conf/hydrate.conf, whose commented-out assignments are those defaults.
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

#include <cmocka.h>

#include "config.h"
#include "fixtures-config.h"
#include "test-util.h"
#include "util.h"

static void test_config_defaults(void **state) {
        HydrateSettings s;

        hydrate_settings_init(&s);
        assert_true(s.enabled);
        assert_int_equal(s.queue_depth, HYDRATE_DEFAULT_QUEUE_DEPTH);
        assert_true(s.block_size == HYDRATE_DEFAULT_BLOCK_SIZE);
        assert_true(s.rate_limit == 0);
}

static void test_config_empty_value_resets(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *err = NULL;
        HydrateSettings s, d;

        write_file(f, ETC "/hydrate.conf",
                   "[Hydrate]\nEnabled=no\nQueueDepth=8\nBlockSize=8K\nRateLimit=1M\n");
        write_file(f, ETC "/hydrate.conf.d/90-reset.conf",
                   "[Hydrate]\nEnabled=\nQueueDepth=\nBlockSize=  \nRateLimit=\n");
        hydrate_settings_init(&d);
        assert_loads(f, &dev_f, &d);

        /* "Key=" means the built-in default, not whatever the caller passed in. */
        s = (HydrateSettings){
                .enabled = false, .queue_depth = 100, .block_size = 4096, .rate_limit = 1};
        assert_int_equal(load(f, &dev_f, &s, &err), 0);
        assert_settings_equal(&s, &d);
}

/* Applies "[Hydrate]\n@assignment\n" and returns config_apply_file()'s result. */
static int apply_assignment(const Fixture *f, const char *assignment, HydrateSettings *s) {
        _cleanup_free_ char *content = xasprintf("[Hydrate]\n%s\n", assignment);
        _cleanup_free_ char *path = fixture_path(f, "one.conf");
        _cleanup_free_ char *err = NULL;
        int r;

        write_file(f, "one.conf", content);
        hydrate_settings_init(s);
        r = config_apply_file(path, &dev_f, s, &err);
        assert_true(r == 0 ? err == NULL : err != NULL);
        return r;
}

static void test_config_rate_limit_values(void **state) {
        static const struct {
                const char *assignment;
                uint64_t rate;
        } cases[] = {
                {"RateLimit=0", 0},        {"RateLimit=off", 0},
                {"RateLimit=none", 0},     {"RateLimit=100M", UINT64_C(100) << 20},
                {"RateLimit=1G", 1 << 30}, {"RateLimit=123456", 123456},
        };
        Fixture *f = *state;
        HydrateSettings s;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                assert_int_equal(apply_assignment(f, "RateLimit=5M", &s), 0);
                assert_int_equal(apply_assignment(f, cases[i].assignment, &s), 0);
                assert_true(s.rate_limit == cases[i].rate);
        }
        assert_int_equal(apply_assignment(f, "RateLimit=fast", &s), -EINVAL);
        assert_int_equal(apply_assignment(f, "RateLimit=-1", &s), -EINVAL);
        assert_int_equal(apply_assignment(f, "RateLimit=1.5M", &s), -EINVAL);
}

static void test_config_block_size_bounds(void **state) {
        static const char *const good[] = {"BlockSize=4096", "BlockSize=4K", "BlockSize=12K",
                                           "BlockSize=64M", "BlockSize=1MiB"};
        static const char *const bad[] = {"BlockSize=0",    "BlockSize=2K",
                                          "BlockSize=4095", "BlockSize=6000",
                                          "BlockSize=65M",  "BlockSize=1G",
                                          "BlockSize=big",  "BlockSize=99999999999999999999"};
        Fixture *f = *state;
        HydrateSettings s;

        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                assert_int_equal(apply_assignment(f, good[i], &s), 0);
        assert_int_equal(apply_assignment(f, "BlockSize=12K", &s), 0);
        assert_true(s.block_size == 12288);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(apply_assignment(f, bad[i], &s), -EINVAL);
}

static void test_config_queue_depth_bounds(void **state) {
        Fixture *f = *state;
        HydrateSettings s;

        assert_int_equal(apply_assignment(f, "QueueDepth=1", &s), 0);
        assert_int_equal(s.queue_depth, 1);
        assert_int_equal(apply_assignment(f, "QueueDepth=1024", &s), 0);
        assert_int_equal(s.queue_depth, 1024);
        assert_int_equal(apply_assignment(f, "QueueDepth=0", &s), -EINVAL);
        assert_int_equal(apply_assignment(f, "QueueDepth=1025", &s), -EINVAL);
        assert_int_equal(apply_assignment(f, "QueueDepth=4K", &s), -EINVAL);
        assert_int_equal(apply_assignment(f, "Enabled=maybe", &s), -EINVAL);
        assert_int_equal(apply_assignment(f, "Enabled=off", &s), 0);
        assert_false(s.enabled);
}

static void test_config_mode_values(void **state) {
        Fixture *f = *state;
        HydrateSettings s;
        HydrateMode m = HYDRATE_MODE_USED;

        hydrate_settings_init(&s);
        assert_int_equal(s.mode, HYDRATE_MODE_FULL);
        assert_int_equal(apply_assignment(f, "Mode=used", &s), 0);
        assert_int_equal(s.mode, HYDRATE_MODE_USED);
        assert_int_equal(apply_assignment(f, "Mode=full", &s), 0);
        assert_int_equal(s.mode, HYDRATE_MODE_FULL);
        assert_int_equal(apply_assignment(f, "Mode=", &s), 0);
        assert_int_equal(s.mode, HYDRATE_MODE_FULL);
        assert_int_equal(apply_assignment(f, "Mode=Used", &s), -EINVAL);
        assert_int_equal(apply_assignment(f, "Mode=free", &s), -EINVAL);
        assert_int_equal(hydrate_parse_mode("sparse", &m), -EINVAL);
        assert_int_equal(m, HYDRATE_MODE_USED); /* untouched */
        assert_string_equal(hydrate_mode_to_string(HYDRATE_MODE_USED), "used");
        assert_null(hydrate_mode_to_string(_HYDRATE_MODE_MAX));
}

static void test_config_aws_values(void **state) {
        Fixture *f = *state;
        HydrateSettings s;
        bool b = true;

        hydrate_settings_init(&s);
        assert_true(s.aws); /* auto */
        assert_int_equal(apply_assignment(f, "Aws=no", &s), 0);
        assert_false(s.aws);
        assert_int_equal(apply_assignment(f, "Aws=auto", &s), 0);
        assert_true(s.aws);
        s.aws = false;
        assert_int_equal(apply_assignment(f, "Aws=", &s), 0); /* the default again */
        assert_true(s.aws);
        assert_int_equal(apply_assignment(f, "Aws=yes", &s), -EINVAL);
        assert_int_equal(apply_assignment(f, "Aws=Auto", &s), -EINVAL);
        assert_int_equal(hydrate_parse_aws("off", &b), -EINVAL);
        assert_true(b); /* untouched */
        assert_int_equal(hydrate_parse_aws("no", &b), 0);
        assert_false(b);
}

static void test_config_hot_paths(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *err = NULL;
        HydrateSettings s;

        assert_int_equal(apply_assignment(f, "HotPaths=/usr/lib  /var/lib/mysql", &s), 0);
        assert_string_equal(s.hot_paths, "/usr/lib  /var/lib/mysql");
        assert_int_equal(apply_assignment(f, "HotPaths=", &s), 0);
        assert_string_equal(s.hot_paths, "");
        assert_int_equal(apply_assignment(f, "HotPaths=/srv relative/path", &s), -EINVAL);

        /* A later assignment replaces an earlier one. */
        write_file(f, ETC "/hydrate.conf", "[Hydrate]\nHotPaths=/a /b\nHotPaths=/c\n");
        hydrate_settings_init(&s);
        assert_int_equal(load(f, &dev_f, &s, &err), 0);
        assert_string_equal(s.hot_paths, "/c");

        write_file(f, ETC "/hydrate.conf.d/20-hot.conf", "[Hydrate]\nHotPaths=/ok ~/home\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf.d/20-hot.conf",
                          ":2: invalid path '~/home' in HotPaths= (expected absolute paths "
                          "separated by spaces)");
}

static void test_config_error_unknown_key(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf", "[Hydrate]\nQueueDepth=8\n");
        write_file(f, ETC "/hydrate.conf.d/10-x.conf", "[Hydrate]\n# typo below\nQueueDeph=4\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf.d/10-x.conf",
                          ":3: unknown key 'QueueDeph' in section [Hydrate]");
}

static void test_config_error_keys_are_case_sensitive(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf", "[Hydrate]\nqueuedepth=4\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf",
                          ":2: unknown key 'queuedepth' in section [Hydrate]");
}

static void test_config_error_bad_value(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf.d/20-bs.conf", "[Hydrate]\nBlockSize=3000\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf.d/20-bs.conf",
                          ":2: invalid value '3000' for BlockSize= "
                          "(expected a multiple of 4096 from 4K to 64M)");
        write_file(f, ETC "/hydrate.conf.d/20-bs.conf", "[Hydrate]\nQueueDepth=2000\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf.d/20-bs.conf",
                          ":2: invalid value '2000' for QueueDepth= "
                          "(expected auto or an integer from 1 to 1024)");
}

/* conf/hydrate.conf in the source tree that ctest names. Not found from __FILE__: package
 * builds map source paths away (-ffile-prefix-map). */
static char *shipped_conf_path(void) {
        const char *src = getenv("EBS_HYDRATE_SOURCE_DIR");

        assert_non_null(src);
        return xasprintf("%s/conf/hydrate.conf", src);
}

static void test_config_shipped_file(void **state) {
        static const char *const keys[] = {
                "#Enabled=", "#QueueDepth=", "#BlockSize=", "#RateLimit=", "#Mode=", "#HotPaths="};
        Fixture *f = *state;
        _cleanup_free_ char *shipped = shipped_conf_path(), *copy = fixture_path(f, "copy.conf");
        _cleanup_free_ char *line = NULL, *err = NULL;
        HydrateSettings s, d;
        size_t size = 0, found = 0;
        FILE *in, *out;

        /* As shipped, it parses and sets nothing. */
        s = (HydrateSettings){.queue_depth = 3, .block_size = 8192, .rate_limit = 5};
        d = s;
        assert_int_equal(config_apply_file(shipped, &dev_f, &s, &err), 0);
        assert_settings_equal(&s, &d);

        /* With every "#Key=default" line uncommented, it sets exactly the built-in defaults. */
        in = fopen(shipped, "re");
        out = fopen(copy, "we");
        assert_non_null(in);
        assert_non_null(out);
        while (getline(&line, &size, in) >= 0) {
                bool uncomment = false;

                for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                        if (strncmp(line, keys[i], strlen(keys[i])) == 0)
                                uncomment = true;
                found += uncomment;
                assert_true(fputs(line + uncomment, out) >= 0);
        }
        assert_int_equal(fclose(in), 0);
        assert_int_equal(fclose(out), 0);
        assert_int_equal(found, ELEMENTSOF(keys));

        assert_int_equal(config_apply_file(copy, &dev_f, &s, &err), 0);
        hydrate_settings_init(&d);
        assert_settings_equal(&s, &d);
}

static void test_config_value_parsers_shared_with_cli(void **state) {
        unsigned qd = 7;
        uint64_t v = 7;

        assert_int_equal(hydrate_parse_queue_depth("64", &qd), 0);
        assert_int_equal(qd, 64);
        assert_int_equal(hydrate_parse_queue_depth("0", &qd), -EINVAL);
        assert_int_equal(hydrate_parse_queue_depth("1025", &qd), -EINVAL);
        assert_int_equal(qd, 64); /* untouched on error */
        assert_int_equal(hydrate_parse_queue_depth("auto", &qd), 0);
        assert_int_equal(qd, HYDRATE_QUEUE_DEPTH_AUTO);
        assert_int_equal(HYDRATE_DEFAULT_QUEUE_DEPTH, HYDRATE_QUEUE_DEPTH_AUTO);
        assert_int_equal(hydrate_parse_queue_depth("Auto", &qd), -EINVAL); /* values are exact */
        assert_int_equal(hydrate_parse_queue_depth("auto ", &qd), -EINVAL);

        assert_int_equal(hydrate_parse_block_size("512K", &v), 0);
        assert_int_equal(v, 512 * 1024);
        assert_int_equal(hydrate_parse_block_size("6000", &v), -EINVAL);
        assert_int_equal(hydrate_parse_block_size("128M", &v), -EINVAL);
        assert_int_equal(v, 512 * 1024);

        assert_int_equal(hydrate_parse_rate_limit("OFF", &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(hydrate_parse_rate_limit("200M", &v), 0);
        assert_int_equal(v, UINT64_C(200) << 20);
        assert_int_equal(hydrate_parse_rate_limit("none", &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(hydrate_parse_rate_limit("fast", &v), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_config_value_parsers_shared_with_cli),
                cmocka_unit_test(test_config_defaults),
                fixture_test(test_config_empty_value_resets),
                fixture_test(test_config_rate_limit_values),
                fixture_test(test_config_block_size_bounds),
                fixture_test(test_config_queue_depth_bounds),
                fixture_test(test_config_mode_values),
                fixture_test(test_config_aws_values),
                fixture_test(test_config_hot_paths),
                fixture_test(test_config_error_unknown_key),
                fixture_test(test_config_error_keys_are_case_sensitive),
                fixture_test(test_config_error_bad_value),
                fixture_test(test_config_shipped_file),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
