/* SPDX-License-Identifier: MIT */
/*
 * ebs-hydrated's command line (args.c): every option parsed into Args, the command line over
 * the configuration, and each kind of bad usage refused (-EINVAL) rather than guessed at.
 */
#include <errno.h>
#include <getopt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "args.h"
#include "config.h"
#include "util.h"

#define MiB (UINT64_C(1) << 20)

/* args_parse() on the NULL-terminated words after "ebs-hydrated". */
static int parse(Args *a, const char *const *words) {
        char *argv[32] = {(char *)"ebs-hydrated"};
        int argc = 1;

        for (; words[argc - 1]; argc++) {
                assert_true(argc < (int)ELEMENTSOF(argv) - 1);
                argv[argc] = (char *)words[argc - 1];
        }
        argv[argc] = NULL;
        *a = (Args){};
        optind = 0; /* glibc: start over, as for a new program */
        return args_parse(argc, argv, a);
}

static void test_args_every_option(void **state) {
        static const char *const words[] = {"-q",
                                            "16",
                                            "--block-size=512K",
                                            "-r",
                                            "200M",
                                            "--mode=used",
                                            "--yield=no",
                                            "--aws=no",
                                            "--state-dir=/s",
                                            "--config-dir=/c",
                                            "--state-key=vol-1",
                                            "--progress=never",
                                            "--no-bus",
                                            "/dev/nvme1n1",
                                            NULL};
        Args a;

        assert_int_equal(parse(&a, words), 1);
        assert_string_equal(a.device, "/dev/nvme1n1");
        assert_true(a.set_queue_depth && a.cli.queue_depth == 16);
        assert_true(a.set_block_size && a.cli.block_size == 512 * 1024);
        assert_true(a.set_rate_limit && a.cli.rate_limit == 200 * MiB);
        assert_true(a.set_mode && a.cli.mode == HYDRATE_MODE_USED);
        assert_true(a.set_yield && !a.cli.yield);
        assert_true(a.set_aws && !a.cli.aws);
        assert_string_equal(a.state_dir, "/s");
        assert_string_equal(a.config_dir, "/c");
        assert_string_equal(a.state_key, "vol-1");
        assert_int_equal(a.progress, PROGRESS_NEVER);
        assert_true(a.no_bus);
}

/* Only what the command line gave replaces the configuration's value. */
static void test_args_apply_only_what_was_given(void **state) {
        static const char *const words[] = {"--rate-limit=0", "nvme1n1", NULL};
        HydrateSettings s, before;
        Args a;

        assert_int_equal(parse(&a, words), 1);
        hydrate_settings_init(&s);
        s.rate_limit = 50 * MiB;
        s.queue_depth = 8;
        s.yield = false;
        s.aws = false;
        before = s;
        args_apply(&a, &s);
        assert_int_equal(s.rate_limit, 0);
        assert_int_equal(s.queue_depth, before.queue_depth);
        assert_int_equal(s.block_size, before.block_size);
        assert_int_equal(s.mode, before.mode);
        assert_false(s.yield);
        assert_false(s.aws);
}

static void test_args_bad_usage(void **state) {
        const char *const *const bad[] = {
                (const char *const[]){NULL},                      /* no DEVICE */
                (const char *const[]){"/dev/a", "/dev/b", NULL},  /* two */
                (const char *const[]){"-q", "0", "/dev/a", NULL}, /* out of range */
                (const char *const[]){"--queue-depth=lots", "/dev/a", NULL},
                (const char *const[]){"-b", "1000", "/dev/a", NULL}, /* not whole 4 KiB blocks */
                (const char *const[]){"--rate-limit=fast", "/dev/a", NULL},
                (const char *const[]){"--mode=some", "/dev/a", NULL},
                (const char *const[]){"--yield=perhaps", "/dev/a", NULL},
                (const char *const[]){"--aws=yes", "/dev/a", NULL},
                (const char *const[]){"--state-key=.hidden", "/dev/a", NULL},
                (const char *const[]){"--state-key=a/b", "/dev/a", NULL},
                (const char *const[]){"--progress=sometimes", "/dev/a", NULL},
                (const char *const[]){"--frobnicate", "/dev/a", NULL},
                (const char *const[]){"-z", "/dev/a", NULL},
                (const char *const[]){"/dev/a", "-q", NULL}, /* no value */
                (const char *const[]){"/dev/a", "--state-dir", NULL},
        };
        Args a;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(parse(&a, bad[i]), -EINVAL);
}

/* --help and --version: nothing to run, and success. */
static void test_args_help_version(void **state) {
        static const char *const help[] = {"--help", NULL}, *const version[] = {"--version", NULL};
        Args a;

        assert_int_equal(parse(&a, help), 0);
        assert_int_equal(parse(&a, version), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_args_every_option),
                cmocka_unit_test(test_args_apply_only_what_was_given),
                cmocka_unit_test(test_args_bad_usage),
                cmocka_unit_test(test_args_help_version),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
