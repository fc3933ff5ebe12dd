/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for config.c. Each test builds a throwaway tree with usr/lib/ebs-hydrate and
 * etc/ebs-hydrate under a mkdtemp() directory and checks the merge order, [Match] handling and
 * the exact "FILE:LINE: ..." text of every kind of error.
 */

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "fixtures.h"
#include "test-util.h"
#include "util.h"

#define USR "usr/lib/ebs-hydrate"
#define ETC "etc/ebs-hydrate"

typedef struct Fixture {
        char *root;
        char *usr;
        char *etc;
        const char *dirs[3];
} Fixture;

static const MatchTarget dev_f = {
        .volume_id = "vol-0123456789abcdef0",
        .device_name = "/dev/sdf",
        .kernel_name = "nvme1n1",
};

static const MatchTarget dev_g = {
        .volume_id = "vol-0fedcba9876543210",
        .device_name = "xvdg",
        .kernel_name = "nvme2n1",
};

static int setup(void **state) {
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

static int teardown(void **state) {
        Fixture *f = *state;

        (void)rm_rf(f->root);
        free(f->root);
        free(f->usr);
        free(f->etc);
        free(f);
        return 0;
}

static char *fixture_path(const Fixture *f, const char *relative) {
        return xasprintf("%s/%s", f->root, relative);
}

static void mkdir_parents(char *path) {
        for (char *slash = strchr(path + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
                *slash = '\0';
                assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
                *slash = '/';
        }
}

/* Writes @content to ROOT/@relative, creating the directories on the way. */
static void write_file(const Fixture *f, const char *relative, const char *content) {
        fixture_write(f->root, relative, content);
}

static void assert_settings_equal(const HydrateSettings *a, const HydrateSettings *b) {
        assert_int_equal(a->enabled, b->enabled);
        assert_int_equal(a->queue_depth, b->queue_depth);
        assert_true(a->block_size == b->block_size);
        assert_true(a->rate_limit == b->rate_limit);
        assert_int_equal(a->mode, b->mode);
        assert_string_equal(a->hot_paths, b->hot_paths);
}

static int load(const Fixture *f, const MatchTarget *target, HydrateSettings *s, char **err) {
        return config_load(f->dirs, target, s, err);
}

/* Loads for @target and expects exactly the settings @expected, with no error. */
static void assert_loads(const Fixture *f, const MatchTarget *target,
                         const HydrateSettings *expected) {
        _cleanup_free_ char *err = NULL;
        HydrateSettings s;

        hydrate_settings_init(&s);
        assert_int_equal(load(f, target, &s, &err), 0);
        assert_null(err);
        assert_settings_equal(&s, expected);
}

static unsigned queue_depth_for(const Fixture *f, const MatchTarget *target) {
        _cleanup_free_ char *err = NULL;
        HydrateSettings s;

        hydrate_settings_init(&s);
        assert_int_equal(load(f, target, &s, &err), 0);
        assert_null(err);
        return s.queue_depth;
}

/* Expects config_load() to fail with @error and the message "ROOT/@relative@suffix". */
static void assert_load_fails(const Fixture *f, int error, const char *relative,
                              const char *suffix) {
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

static void test_config_defaults(void **state) {
        HydrateSettings s;

        hydrate_settings_init(&s);
        assert_true(s.enabled);
        assert_int_equal(s.queue_depth, HYDRATE_DEFAULT_QUEUE_DEPTH);
        assert_true(s.block_size == HYDRATE_DEFAULT_BLOCK_SIZE);
        assert_true(s.rate_limit == 0);
}

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

static void test_config_later_wins_within_file(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf",
                   "[Hydrate]\nQueueDepth=4\nQueueDepth=6\n[Match]\n[Hydrate]\nQueueDepth=12\n");
        assert_int_equal(queue_depth_for(f, &dev_f), 12);
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

static void test_config_indented_and_crlf_lines(void **state) {
        Fixture *f = *state;
        HydrateSettings e;

        /* Indentation is not an inih continuation line; CRLF files and a BOM work. */
        write_file(
                f, ETC "/hydrate.conf",
                "\xef\xbb\xbf[Hydrate]\r\n  QueueDepth=4\r\n\tRateLimit = 1M\r\n   Enabled=no\r\n");
        hydrate_settings_init(&e);
        e.queue_depth = 4;
        e.rate_limit = 1 << 20;
        e.enabled = false;
        assert_loads(f, &dev_f, &e);
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

static void test_config_match_skips_other_device(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf.d/50-g.conf",
                   "[Match]\nVolumeId=vol-0fedcba9876543210\n[Hydrate]\nQueueDepth=5\n");
        assert_int_equal(queue_depth_for(f, &dev_f), HYDRATE_DEFAULT_QUEUE_DEPTH);
        assert_int_equal(queue_depth_for(f, &dev_g), 5);
}

static void test_config_match_volume_id_glob(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf.d/50-f.conf",
                   "[Match]\nVolumeId=vol-0123*\n[Hydrate]\nQueueDepth=5\n");
        assert_int_equal(queue_depth_for(f, &dev_f), 5);
        assert_int_equal(queue_depth_for(f, &dev_g), HYDRATE_DEFAULT_QUEUE_DEPTH);
}

static void test_config_match_kernel_name(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf.d/50-k.conf",
                   "[Match]\nKernelName=nvme2n?\n[Hydrate]\nQueueDepth=5\n");
        assert_int_equal(queue_depth_for(f, &dev_f), HYDRATE_DEFAULT_QUEUE_DEPTH);
        assert_int_equal(queue_depth_for(f, &dev_g), 5);
}

static void test_config_match_device_name_spellings(void **state) {
        static const char *const spellings[] = {"sdf", "/dev/sdf", "xvdf", "/dev/xvdf"};
        Fixture *f = *state;

        for (size_t i = 0; i < ELEMENTSOF(spellings); i++) {
                _cleanup_free_ char *content = xasprintf(
                        "[Match]\nDeviceName=%s\n[Hydrate]\nQueueDepth=5\n", spellings[i]);

                write_file(f, ETC "/hydrate.conf", content);
                for (size_t j = 0; j < ELEMENTSOF(spellings); j++) {
                        MatchTarget t = dev_f;

                        t.device_name = spellings[j];
                        assert_int_equal(queue_depth_for(f, &t), 5);
                }
                assert_int_equal(queue_depth_for(f, &dev_g), HYDRATE_DEFAULT_QUEUE_DEPTH);
        }
}

static void test_config_device_name_matches(void **state) {
        static const struct {
                const char *pattern;
                const char *name;
                bool match;
        } cases[] = {
                {"sdf", "sdf", true},       {"sdf", "/dev/sdf", true}, {"/dev/sdf", "xvdf", true},
                {"xvdf", "/dev/sdf", true}, {"xvd*", "sdf", true},     {"sd*", "/dev/xvdf", true},
                {"/dev/xvd?", "sdg", true}, {"sd[f-h]", "xvdg", true}, {"*f", "xvdf", true},
                {"/dev/*", "sdb", true},    {"sdg", "sdf", false},     {"sdf", "sdf1", false},
                {"nvme*", "sdf", false},    {"xvd*", "hdf", false},    {"sdf", NULL, false},
                {"sdf", "", false},         {"*", "/dev/", false},     {"", "sdf", false},
                {NULL, "sdf", false},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                print_message("%s vs %s\n", strempty(cases[i].pattern), strempty(cases[i].name));
                assert_int_equal(device_name_matches(cases[i].pattern, cases[i].name),
                                 cases[i].match);
        }
}

static void test_config_match_list_is_or(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf",
                   "[Match]\nVolumeId=vol-0aaa  \t vol-0123456789abcdef0 vol-0bbb\n"
                   "[Hydrate]\nQueueDepth=5\n");
        assert_int_equal(queue_depth_for(f, &dev_f), 5);
        assert_int_equal(queue_depth_for(f, &dev_g), HYDRATE_DEFAULT_QUEUE_DEPTH);
}

static void test_config_match_keys_are_and(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf",
                   "[Match]\nVolumeId=vol-0*\nKernelName=nvme9n1\n[Hydrate]\nQueueDepth=5\n");
        assert_int_equal(queue_depth_for(f, &dev_f), HYDRATE_DEFAULT_QUEUE_DEPTH);
        write_file(f, ETC "/hydrate.conf",
                   "[Match]\nVolumeId=vol-0*\nKernelName=nvme1n1\nDeviceName=sdf\n"
                   "[Hydrate]\nQueueDepth=5\n");
        assert_int_equal(queue_depth_for(f, &dev_f), 5);
        assert_int_equal(queue_depth_for(f, &dev_g), HYDRATE_DEFAULT_QUEUE_DEPTH);
}

static void test_config_match_repeated_lines_append(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf",
                   "[Match]\nKernelName=nvme9n1\nKernelName=nvme1n1\n[Hydrate]\nQueueDepth=5\n");
        assert_int_equal(queue_depth_for(f, &dev_f), 5);
        assert_int_equal(queue_depth_for(f, &dev_g), HYDRATE_DEFAULT_QUEUE_DEPTH);
}

static void test_config_match_empty_value_clears(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf",
                   "[Match]\nKernelName=nvme9n1\nKernelName=\n[Hydrate]\nQueueDepth=5\n");
        assert_int_equal(queue_depth_for(f, &dev_f), 5);
        assert_int_equal(queue_depth_for(f, &dev_g), 5);
}

static void test_config_match_after_hydrate(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf", "[Hydrate]\nQueueDepth=5\n[Match]\nDeviceName=xvdg\n");
        assert_int_equal(queue_depth_for(f, &dev_f), HYDRATE_DEFAULT_QUEUE_DEPTH);
        assert_int_equal(queue_depth_for(f, &dev_g), 5);
}

static void test_config_match_empty_section_applies(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf", "[Match]\n[Hydrate]\nQueueDepth=5\n");
        assert_int_equal(queue_depth_for(f, &dev_f), 5);
        assert_int_equal(queue_depth_for(f, &dev_g), 5);
}

static void test_config_match_unknown_target_fields(void **state) {
        const MatchTarget unknown = {.volume_id = "vol-0123456789abcdef0", .kernel_name = ""};
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf", "[Match]\nDeviceName=*\n[Hydrate]\nQueueDepth=5\n");
        assert_int_equal(queue_depth_for(f, &unknown), HYDRATE_DEFAULT_QUEUE_DEPTH);
        assert_int_equal(queue_depth_for(f, NULL), HYDRATE_DEFAULT_QUEUE_DEPTH);
        write_file(f, ETC "/hydrate.conf", "[Match]\nKernelName=*\n[Hydrate]\nQueueDepth=5\n");
        assert_int_equal(queue_depth_for(f, &unknown), HYDRATE_DEFAULT_QUEUE_DEPTH);
        write_file(f, ETC "/hydrate.conf", "[Hydrate]\nQueueDepth=5\n");
        assert_int_equal(queue_depth_for(f, NULL), 5); /* no [Match]: every device */
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

static void test_config_error_unknown_match_key(void **state) {
        Fixture *f = *state;

        write_file(f, USR "/hydrate.conf", "[Match]\nVolumeID=vol-*\n");
        assert_load_fails(f, -EINVAL, USR "/hydrate.conf",
                          ":2: unknown key 'VolumeID' in section [Match]");
}

static void test_config_error_unknown_section(void **state) {
        Fixture *f = *state;

        /* An empty section never reaches inih's handler: still an error, at its header. */
        write_file(f, ETC "/hydrate.conf", "[Hydrate]\nQueueDepth=4\n\n[Hydrat]\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf", ":4: unknown section [Hydrat]");
        write_file(f, ETC "/hydrate.conf", "[Network]\nQueueDepth=4\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf", ":1: unknown section [Network]");
}

static void test_config_error_malformed_section(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf", "[Hydrate\nQueueDepth=4\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf",
                          ":1: malformed section header '[Hydrate'");
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

static void test_config_error_missing_equals(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf", "[Hydrate]\nQueueDepth 4\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf",
                          ":2: expected 'Key=Value', '[Section]' or a comment, got 'QueueDepth 4'");
}

static void test_config_error_colon_separator(void **state) {
        Fixture *f = *state;

        /* inih would take "Key: value" silently; systemd does not. */
        write_file(f, ETC "/hydrate.conf", "[Hydrate]\nEnabled=yes\nQueueDepth: 4\n");
        assert_load_fails(
                f, -EINVAL, ETC "/hydrate.conf",
                ":3: expected 'Key=Value', '[Section]' or a comment, got 'QueueDepth: 4'");
}

static void test_config_error_key_before_section(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf", "QueueDepth=4\n[Hydrate]\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf",
                          ":1: key 'QueueDepth' before any section header");
}

static char *line_of(size_t length, char c) {
        char *s = malloc(length + 1);

        assert_non_null(s);
        memset(s, c, length);
        s[length] = '\0';
        return s;
}

static void test_config_error_line_too_long(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *pad = line_of(200 - strlen("VolumeId="), '*');
        _cleanup_free_ char *content = xasprintf("[Match]\n# long\nVolumeId=%s\n", pad);

        write_file(f, ETC "/hydrate.conf.d/30-long.conf", content);
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf.d/30-long.conf",
                          ":3: line too long (200 characters, at most 199)");
}

static void test_config_longest_line_keeps_line_numbers(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *comment = line_of(CONFIG_LINE_MAX, '#');
        _cleanup_free_ char *content = xasprintf("[Hydrate]\n%s\nQueueDepth=5\nOops\n", comment);

        /* inih's own string reader would count a 199-character line as two. */
        write_file(f, ETC "/hydrate.conf", content);
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf",
                          ":4: expected 'Key=Value', '[Section]' or a comment, got 'Oops'");
}

static void test_config_error_nul_byte(void **state) {
        static const char content[] = "[Hydrate]\nQueueDepth=4\0garbage\n";
        Fixture *f = *state;
        _cleanup_free_ char *path = fixture_path(f, ETC "/hydrate.conf");
        FILE *fp;

        mkdir_parents(path);
        fp = fopen(path, "we");
        assert_non_null(fp);
        assert_int_equal(fwrite(content, 1, sizeof(content) - 1, fp), sizeof(content) - 1);
        assert_int_equal(fclose(fp), 0);
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf", ":2: line contains a NUL byte");
}

#define COMMENT_ERROR \
        ": comments must be on a line of their own ('#' or ';' at the start of the line)"

static void test_config_error_inline_comment_after_hydrate_value(void **state) {
        static const char *const lines[] = {
                "RateLimit=100M ; note", "RateLimit=100M\t;note", "RateLimit=100M ;",
                "QueueDepth=4 # four",   "Enabled=no ;",          "BlockSize= ; default",
        };
        Fixture *f = *state;

        /* inih would strip " ; note" silently, and hand over "100M" as if nothing followed. */
        for (size_t i = 0; i < ELEMENTSOF(lines); i++) {
                _cleanup_free_ char *content = xasprintf("[Hydrate]\n%s\n", lines[i]);

                print_message("%s\n", lines[i]);
                write_file(f, ETC "/hydrate.conf.d/60-data.conf", content);
                assert_load_fails(f, -EINVAL, ETC "/hydrate.conf.d/60-data.conf",
                                  ":2" COMMENT_ERROR);
        }
        write_file(f, ETC "/hydrate.conf.d/60-data.conf", "[Hydrate] ; main\nQueueDepth=4\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf.d/60-data.conf", ":1" COMMENT_ERROR);
}

static void test_config_error_inline_comment_after_match_pattern(void **state) {
        Fixture *f = *state;

        /* Not the three patterns "sdf", "#" and "data". */
        write_file(f, ETC "/hydrate.conf.d/60-data.conf",
                   "# data volume\n[Match]\nDeviceName=sdf # data\n[Hydrate]\nQueueDepth=5\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf.d/60-data.conf", ":3" COMMENT_ERROR);
        write_file(f, ETC "/hydrate.conf.d/60-data.conf",
                   "[Match]\nVolumeId=vol-0123456789abcdef0 ; data\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf.d/60-data.conf", ":2" COMMENT_ERROR);
        write_file(f, ETC "/hydrate.conf.d/60-data.conf", "[Match]\nKernelName=nvme1n1\t#x\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf.d/60-data.conf", ":2" COMMENT_ERROR);
}

static void test_config_error_comment_character_in_value(void **state) {
        static const struct {
                const char *line;
                char c;
        } cases[] = {
                {"RateLimit=100M#x", '#'}, {"QueueDepth=4;x", ';'}, {"Enabled=yes#", '#'},
                {"BlockSize=#4K", '#'},    {"Queue#Depth=4", '#'},  {"[Hydr;ate]", ';'},
        };
        Fixture *f = *state;

        /* No key or value can hold '#' or ';', so one glued to a value is a mistake too. */
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *content = xasprintf("[Hydrate]\n%s\n", cases[i].line);
                _cleanup_free_ char *expected =
                        xasprintf(":2: invalid character '%c' in '%s' "
                                  "('#' and ';' may only start a comment line)",
                                  cases[i].c, cases[i].line);

                print_message("%s\n", cases[i].line);
                write_file(f, ETC "/hydrate.conf", content);
                assert_load_fails(f, -EINVAL, ETC "/hydrate.conf", expected);
        }
        write_file(f, ETC "/hydrate.conf", "[Match]\nDeviceName=sdf;sdg\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf",
                          ":2: invalid character ';' in 'DeviceName=sdf;sdg' "
                          "('#' and ';' may only start a comment line)");
}

static void test_config_indented_comment_lines(void **state) {
        Fixture *f = *state;
        HydrateSettings e;

        write_file(f, ETC "/hydrate.conf",
                   "   # leading spaces\n\t; a tab\n[Match]\n  #DeviceName=sdg\n"
                   "DeviceName=sdf\n[Hydrate]\n    ;QueueDepth=9\r\n  \t # RateLimit=1M ; x\n"
                   "QueueDepth=5\n  #\n  ;\n");
        hydrate_settings_init(&e);
        e.queue_depth = 5;
        assert_loads(f, &dev_f, &e);
}

static void test_config_error_comment_names_first_line(void **state) {
        Fixture *f = *state;

        /* The first mistake wins, whichever kind: line 2 here, then line 3. */
        write_file(f, ETC "/hydrate.conf", "[Hydrate]\nQueueDepth=4 ; x\nBlockSize=3\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf", ":2" COMMENT_ERROR);
        write_file(f, ETC "/hydrate.conf", "[Hydrate]\nNope=1\nQueueDepth=4 ; x\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf",
                          ":2: unknown key 'Nope' in section [Hydrate]");
        write_file(f, ETC "/hydrate.conf", "[Hydrate]\r\nQueueDepth=4\r\n\r\nRateLimit=1M ;x\r\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf", ":4" COMMENT_ERROR);
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

static void test_config_error_first_one_wins(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf", "[Hydrate]\nRateLimit=lots\nNope=1\n[Bad]\n");
        assert_load_fails(f, -EINVAL, ETC "/hydrate.conf",
                          ":2: invalid value 'lots' for RateLimit= "
                          "(expected bytes per second such as 200M, or 0, off or none)");
}

static void test_config_error_in_file_that_does_not_match(void **state) {
        Fixture *f = *state;

        write_file(f, ETC "/hydrate.conf.d/40-other.conf",
                   "[Match]\nVolumeId=vol-nothing-matches-this\n[Hydrate]\nEnabled=perhaps\n");
        assert_load_fails(
                f, -EINVAL, ETC "/hydrate.conf.d/40-other.conf",
                ":4: invalid value 'perhaps' for Enabled= (expected a boolean: yes or no)");
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

#define UNCLOSED "'[' without a closing ']' (a literal '[' is written \\[)"

static void test_config_error_invalid_pattern(void **state) {
        static const struct {
                const char *line;
                const char *why;
        } cases[] = {
                {"KernelName=[", UNCLOSED},
                {"KernelName=nvme[0-9n1", UNCLOSED},
                {"KernelName=[]", UNCLOSED},
                {"KernelName=[!]", UNCLOSED},
                {"KernelName=nvme\\", "a '\\' at the end escapes nothing"}, /* echoed as \\ */
                {"KernelName=[[:digits:]]", "unknown character class"},
                {"KernelName=[[:alpha:]", UNCLOSED},
                {"KernelName=[[:alpha]", "'[:' without its ':]'"},
                {"KernelName=nvme[9-0]n1", "a reversed range matches nothing"},
                {"KernelName=[[:digit:]-9]", "a character class cannot bound a range"},
                {"KernelName=[[.ab.]]", "a collating element must be a single character"},
                {"VolumeId=vol-[0-9", UNCLOSED},
                {"DeviceName=/dev/sd[f", UNCLOSED},
                {"KernelName=/dev/nvme1n1",
                 "kernel names contain no '/': nvme1n1, not /dev/nvme1n1"},
                {"VolumeId=*/vol-0123", "volume ids contain no '/'"},
                {"DeviceName=/dev/disk/by-id/x",
                 "mapping names contain no '/' after a leading /dev/"},
        };
        Fixture *f = *state;

        /* fnmatch() would take each silently, and never match what was meant. */
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *content =
                        xasprintf("[Match]\nKernelName=nvme*\n%s nvme1n1\n", cases[i].line);
                const char *eq = strchr(cases[i].line, '=');
                const char *shown = streq_ptr(eq + 1, "nvme\\") ? "nvme\\\\" : eq + 1;
                _cleanup_free_ char *expected =
                        xasprintf(":3: invalid pattern '%s' in %.*s (%s)", shown,
                                  (int)(eq + 1 - cases[i].line), cases[i].line, cases[i].why);

                print_message("%s\n", cases[i].line);
                write_file(f, ETC "/hydrate.conf.d/10-m.conf", content);
                assert_load_fails(f, -EINVAL, ETC "/hydrate.conf.d/10-m.conf", expected);
        }
}

static void test_config_valid_patterns(void **state) {
        static const char *const patterns[] = {
                "nvme[0-9]n1",
                "nvme?n*",
                "[]n]vme1n1",
                "[!a-m]vme1n1",
                "nvme[[:digit:]]n1",
                "\\nvme1n1",
                "nvme1n[1-]",
                "[[.n.]]vme1n1",
                "[[=n=]]vme1n1",
                "nvme1n[\\]1]",
                "*[[:alpha:][:digit:]]",
        };
        Fixture *f = *state;

        for (size_t i = 0; i < ELEMENTSOF(patterns); i++) {
                _cleanup_free_ char *content =
                        xasprintf("[Match]\nKernelName=%s\n[Hydrate]\nQueueDepth=5\n", patterns[i]);

                print_message("%s\n", patterns[i]);
                write_file(f, ETC "/hydrate.conf", content);
                assert_int_equal(queue_depth_for(f, &dev_f), 5);
        }
}

static void test_config_error_control_bytes_escaped(void **state) {
        static const struct {
                const char *content;
                const char *expected;
        } cases[] = {
                {"[Hydrate]\nQueueDepth=\x1b[2J\n",
                 ":2: invalid value '\\x1b[2J' for QueueDepth= (expected auto or an integer from "
                 "1 to 1024)"},
                {"[Hydrate]\nQueue\x1b]0;x\x07"
                 "Depth=1\n",
                 ":2: invalid character ';' in 'Queue\\x1b]0;x\\aDepth=1' ('#' and ';' may only "
                 "start a comment line)"},
                {"[Hydrate]\n\x1b[31mQueueDepth=1\n",
                 ":2: unknown key '\\x1b[31mQueueDepth' in section [Hydrate]"},
                {"[Match]\nVolume\rId=x\n", ":2: unknown key 'Volume\\rId' in section [Match]"},
                {"\x1b[1m=1\n", ":1: key '\\x1b[1m' before any section header"},
                {"[Hydrate\x08\x08]\n", ":1: unknown section [Hydrate\\b\\b]"},
                {"[\x1b\n", ":1: malformed section header '[\\x1b'"},
                {"[Hydrate]\n\x9b"
                 "2J\n",
                 ":2: expected 'Key=Value', '[Section]' or a comment, got '\\x9b2J'"},
                {"[Hydrate]\nHotPaths=/a \x1b[2J\n",
                 ":2: invalid path '\\x1b[2J' in HotPaths= (expected absolute paths separated "
                 "by spaces)"},
                {"[Match]\nKernelName=\x1b[\n",
                 ":2: invalid pattern '\\x1b[' in KernelName= ('[' without a closing ']' (a "
                 "literal '[' is written \\[))"},
        };
        Fixture *f = *state;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                print_message("case %zu\n", i);
                write_file(f, ETC "/hydrate.conf", cases[i].content);
                assert_load_fails(f, -EINVAL, ETC "/hydrate.conf", cases[i].expected);
        }
}

static void test_config_error_file_name_escaped(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *err = NULL, *expected = NULL;
        HydrateSettings s;

        write_file(f, ETC "/hydrate.conf.d/\x1b[2J.conf", "[Hydrate]\nQueueDepth=0\n");
        hydrate_settings_init(&s);
        assert_int_equal(load(f, &dev_f, &s, &err), -EINVAL);
        expected = xasprintf("%s/" ETC "/hydrate.conf.d/\\x1b[2J.conf:2: invalid value '0' for "
                             "QueueDepth= (expected auto or an integer from 1 to 1024)",
                             f->root);
        assert_string_equal(err, expected);
}

static void test_config_parse_buffer(void **state) {
        static const char data[] = "[Hydrate]\nQueueDepth=5\nRateLimit=1M-and-more";
        _cleanup_free_ char *err = NULL;
        HydrateSettings s;

        /* Not NUL-terminated, and named as the caller likes. */
        hydrate_settings_init(&s);
        assert_int_equal(config_parse_buffer("mem.conf", data, strlen("[Hydrate]\nQueueDepth=5"),
                                             &dev_f, &s, &err),
                         0);
        assert_null(err);
        assert_int_equal(s.queue_depth, 5);
        assert_int_equal(config_parse_buffer("mem.conf", data, strlen(data), &dev_f, &s, &err),
                         -EINVAL);
        assert_string_equal(err, "mem.conf:3: invalid value '1M-and-more' for RateLimit= "
                                 "(expected bytes per second such as 200M, or 0, off or none)");
        assert_int_equal(s.queue_depth, 5); /* untouched */
        free(err);
        err = NULL;
        assert_int_equal(config_parse_buffer("empty", NULL, 0, NULL, &s, &err), 0);
        assert_null(err);
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

#define fixture_test(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

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
                fixture_test(test_config_later_wins_within_file),
                fixture_test(test_config_empty_value_resets),
                fixture_test(test_config_indented_and_crlf_lines),
                fixture_test(test_config_rate_limit_values),
                fixture_test(test_config_block_size_bounds),
                fixture_test(test_config_queue_depth_bounds),
                fixture_test(test_config_mode_values),
                fixture_test(test_config_hot_paths),
                fixture_test(test_config_match_skips_other_device),
                fixture_test(test_config_match_volume_id_glob),
                fixture_test(test_config_match_kernel_name),
                fixture_test(test_config_match_device_name_spellings),
                cmocka_unit_test(test_config_device_name_matches),
                fixture_test(test_config_match_list_is_or),
                fixture_test(test_config_match_keys_are_and),
                fixture_test(test_config_match_repeated_lines_append),
                fixture_test(test_config_match_empty_value_clears),
                fixture_test(test_config_match_after_hydrate),
                fixture_test(test_config_match_empty_section_applies),
                fixture_test(test_config_match_unknown_target_fields),
                fixture_test(test_config_error_unknown_key),
                fixture_test(test_config_error_keys_are_case_sensitive),
                fixture_test(test_config_error_unknown_match_key),
                fixture_test(test_config_error_unknown_section),
                fixture_test(test_config_error_malformed_section),
                fixture_test(test_config_error_bad_value),
                fixture_test(test_config_error_missing_equals),
                fixture_test(test_config_error_colon_separator),
                fixture_test(test_config_error_key_before_section),
                fixture_test(test_config_error_line_too_long),
                fixture_test(test_config_longest_line_keeps_line_numbers),
                fixture_test(test_config_error_nul_byte),
                fixture_test(test_config_error_inline_comment_after_hydrate_value),
                fixture_test(test_config_error_inline_comment_after_match_pattern),
                fixture_test(test_config_error_comment_character_in_value),
                fixture_test(test_config_indented_comment_lines),
                fixture_test(test_config_error_comment_names_first_line),
                fixture_test(test_config_file_size_limit),
                fixture_test(test_config_error_first_one_wins),
                fixture_test(test_config_error_in_file_that_does_not_match),
                fixture_test(test_config_error_keeps_earlier_files_out),
                fixture_test(test_config_error_dropin_is_directory),
                fixture_test(test_config_error_dangling_symlink),
                fixture_test(test_config_dev_null_masks),
                fixture_test(test_config_error_not_a_regular_file),
                fixture_test(test_config_error_huge_file_not_read),
                fixture_test(test_config_error_invalid_pattern),
                fixture_test(test_config_valid_patterns),
                fixture_test(test_config_error_control_bytes_escaped),
                fixture_test(test_config_error_file_name_escaped),
                fixture_test(test_config_parse_buffer),
                fixture_test(test_config_error_unreadable),
                fixture_test(test_config_apply_file_missing),
                fixture_test(test_config_shipped_file),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
