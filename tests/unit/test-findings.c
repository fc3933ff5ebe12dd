/* SPDX-License-Identifier: MIT */
/*
 * What AWS said about a volume (src/state/findings.c): the text both ways, and the file as the
 * daemon will read it: planted by another user, for another volume, a FIFO, a link, too big.
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

#include "findings.h"
#include "fixtures.h"
#include "util.h"

#define VOL "vol-0123456789abcdef0"
#define HELPER_UID 4242
#define STR_AND_LEN(s) s, sizeof(s) - 1

static AwsFindings answered(void) {
        AwsFindings f;

        findings_init(&f, VOL);
        f.time_usec = UINT64_C(1795000000000000);
        f.source = FINDINGS_SOURCE_SNAPSHOT;
        strcpy(f.snapshot_id, "snap-0abc");
        f.fast_restored = 0;
        f.size_gib = 500;
        f.initialization_rate = 300;
        strcpy(f.initialization_state, "initializing");
        strcpy(f.initialization_type, "provisioned-rate");
        f.initialization_progress = 42;
        f.initialization_eta = 1800;
        return f;
}

static void test_findings_round_trip(void **state) {
        AwsFindings f = answered(), g;
        char text[FINDINGS_FILE_MAX];
        int n = findings_format(&f, text, sizeof(text));

        assert_true(n > 0);
        assert_true(strncmp(text, "EBS_HYDRATE_AWS_FINDINGS=1\nVOLUME_ID=" VOL "\n", 48) == 0);
        assert_non_null(strstr(text, "\nSOURCE=snapshot\nSNAPSHOT_ID=snap-0abc\n"
                                     "FAST_RESTORED=no\n"));
        assert_int_equal(findings_parse(text, (size_t)n, &g), 0);
        assert_memory_equal(&f, &g, sizeof(f));

        f = answered();
        f.source = FINDINGS_SOURCE_EMPTY;
        memset(f.snapshot_id, 0, sizeof(f.snapshot_id)); /* compared whole below */
        f.fast_restored = FINDINGS_UNKNOWN;
        f.initialization_progress = FINDINGS_UNKNOWN;
        strcpy(f.status_error, "EC2 answered HTTP 403: UnauthorizedOperation");
        n = findings_format(&f, text, sizeof(text));
        assert_true(n > 0);
        assert_null(strstr(text, "SNAPSHOT_ID"));
        assert_non_null(strstr(text, "FAST_RESTORED=unknown\n"));
        assert_int_equal(findings_parse(text, (size_t)n, &g), 0);
        assert_memory_equal(&f, &g, sizeof(f));
}

/* The block list's outcome: how many blocks are stored, or why the list could not be had;
 * never both, and only for a volume from a snapshot. */
static void test_findings_blocks(void **state) {
        AwsFindings f = answered(), g;
        char text[FINDINGS_FILE_MAX];
        int n;

        f.blocks_stored = 122880;
        n = findings_format(&f, text, sizeof(text));
        assert_true(n > 0);
        assert_non_null(strstr(text, "\nBLOCKS_STORED=122880\n"));
        assert_int_equal(findings_parse(text, (size_t)n, &g), 0);
        assert_memory_equal(&f, &g, sizeof(f));
        f.blocks_stored = FINDINGS_UNKNOWN;
        strcpy(f.blocks_error, "EBS answered HTTP 403: AccessDeniedException");
        n = findings_format(&f, text, sizeof(text));
        assert_non_null(strstr(text, "\nBLOCKS_ERROR=EBS answered HTTP 403: "));
        assert_int_equal(findings_parse(text, (size_t)n, &g), 0);
        assert_memory_equal(&f, &g, sizeof(f));
        strcpy(f.blocks_error, "a\nBLOCKS_STORED=1");
        assert_int_equal(findings_format(&f, text, sizeof(text)), -EINVAL);

        assert_int_equal(findings_parse(STR_AND_LEN("EBS_HYDRATE_AWS_FINDINGS=1\n"
                                                    "VOLUME_ID=" VOL "\nTIME_USEC=1\n"
                                                    "SOURCE=snapshot\nSNAPSHOT_ID=snap-1\n"
                                                    "BLOCKS_STORED=5\nBLOCKS_ERROR=denied\n"),
                                        &g),
                         -EBADMSG);
        assert_int_equal(findings_parse(STR_AND_LEN("EBS_HYDRATE_AWS_FINDINGS=1\n"
                                                    "VOLUME_ID=" VOL "\nTIME_USEC=1\n"
                                                    "SOURCE=empty\nBLOCKS_STORED=5\n"),
                                        &g),
                         -EBADMSG);
        assert_int_equal(findings_parse(STR_AND_LEN("EBS_HYDRATE_AWS_FINDINGS=1\n"
                                                    "VOLUME_ID=" VOL "\nTIME_USEC=1\n"
                                                    "SOURCE=snapshot\nSNAPSHOT_ID=snap-1\n"
                                                    "BLOCKS_STORED=-1\n"),
                                        &g),
                         -EBADMSG);
}

/* One word for what the findings mean: the same for the daemon, ctl, the bus and the record. */
static void test_findings_verdict(void **state) {
        AwsFindings f = answered();

        assert_string_equal(findings_verdict(&f), EBS_HYDRATE_AWS_INITIALIZING);
        strcpy(f.status_error, "throttled"); /* AWS's progress cannot be followed blind */
        assert_string_equal(findings_verdict(&f), EBS_HYDRATE_AWS_SNAPSHOT);
        f = answered();
        strcpy(f.initialization_type, "default"); /* ours to hydrate */
        assert_string_equal(findings_verdict(&f), EBS_HYDRATE_AWS_SNAPSHOT);
        strcpy(f.initialization_state, "completed");
        assert_string_equal(findings_verdict(&f), EBS_HYDRATE_AWS_INITIALIZED);
        f.fast_restored = 1;
        assert_string_equal(findings_verdict(&f), EBS_HYDRATE_AWS_FAST_RESTORED);
        f.source = FINDINGS_SOURCE_EMPTY;
        assert_string_equal(findings_verdict(&f), EBS_HYDRATE_AWS_EMPTY);
        strcpy(f.error, "no instance role");
        assert_string_equal(findings_verdict(&f), EBS_HYDRATE_AWS_UNAVAILABLE);

        /* No snapshot is not "empty" while AWS initializes the volume, nor for a copy. */
        f = answered();
        f.source = FINDINGS_SOURCE_EMPTY;
        strcpy(f.initialization_type, "default");
        assert_string_equal(findings_verdict(&f), EBS_HYDRATE_AWS_SNAPSHOT);
        f = answered();
        f.source = FINDINGS_SOURCE_COPY;
        strcpy(f.source_volume_id, "vol-0aaaaaaaaaaaaaaaa");
        strcpy(f.initialization_type, "volume-copy");
        assert_string_equal(findings_verdict(&f), EBS_HYDRATE_AWS_INITIALIZING);
        strcpy(f.initialization_state, "");
        assert_string_equal(findings_verdict(&f), EBS_HYDRATE_AWS_SNAPSHOT);
}

static void test_findings_error_only(void **state) {
        AwsFindings f, g;
        char text[FINDINGS_FILE_MAX];
        int n;

        findings_init(&f, VOL);
        strcpy(f.error, "the instance has no IAM role (no instance profile)");
        n = findings_format(&f, text, sizeof(text));
        assert_true(n > 0);
        assert_null(strstr(text, "SOURCE="));
        assert_int_equal(findings_parse(text, (size_t)n, &g), 0);
        assert_string_equal(g.error, f.error);
        assert_int_equal(g.source, _FINDINGS_SOURCE_INVALID);
}

static void test_findings_format_refuses(void **state) {
        AwsFindings f = answered();
        char text[FINDINGS_FILE_MAX];

        /* an AWS message that would forge a line of its own */
        strcpy(f.status_error, "denied\nSOURCE=empty");
        assert_int_equal(findings_format(&f, text, sizeof(text)), -EINVAL);
        f = answered();
        assert_int_equal(findings_format(&f, text, 40), -ENOBUFS);
        f.source = _FINDINGS_SOURCE_INVALID; /* neither answered nor an error */
        assert_int_equal(findings_format(&f, text, sizeof(text)), -EINVAL);
}

static void test_findings_parse_refuses(void **state) {
        static const char *const bad[] = {
                "",                                               /* nothing */
                "VOLUME_ID=" VOL "\nTIME_USEC=1\nSOURCE=empty\n", /* no version */
                "EBS_HYDRATE_AWS_FINDINGS=2\nVOLUME_ID=" VOL "\nTIME_USEC=1\nSOURCE=empty\n",
                "EBS_HYDRATE_AWS_FINDINGS=1\nTIME_USEC=1\nSOURCE=empty\n",
                "EBS_HYDRATE_AWS_FINDINGS=1\nVOLUME_ID=" VOL "\nTIME_USEC=1\n", /* no answer */
                "EBS_HYDRATE_AWS_FINDINGS=1\nVOLUME_ID=" VOL "\nTIME_USEC=1\nSOURCE=snapshot\n",
                "EBS_HYDRATE_AWS_FINDINGS=1\nVOLUME_ID=" VOL "\nTIME_USEC=1\nSOURCE=empty\n"
                "SOURCE=snapshot\nSNAPSHOT_ID=snap-1\n", /* twice */
                "EBS_HYDRATE_AWS_FINDINGS=1\nVOLUME_ID=" VOL "\nTIME_USEC=1\nSOURCE=lunar\n",
                "EBS_HYDRATE_AWS_FINDINGS=1\nVOLUME_ID=" VOL "\nTIME_USEC=-1\nSOURCE=empty\n",
                "EBS_HYDRATE_AWS_FINDINGS=1\nVOLUME_ID=" VOL "\nTIME_USEC=1\nSOURCE=empty\n"
                "INITIALIZATION_PROGRESS=101\n",
                "EBS_HYDRATE_AWS_FINDINGS=1\nVOLUME_ID=" VOL "\nTIME_USEC=1\nSOURCE=empty\n"
                "FAST_RESTORED=maybe\n",
                "EBS_HYDRATE_AWS_FINDINGS=1\nVOLUME_ID=" VOL "\nTIME_USEC=1\nSOURCE=empty\n"
                "no equals sign\n",
                "EBS_HYDRATE_AWS_FINDINGS=1\nVOLUME_ID=../x\nTIME_USEC=1\nSOURCE=empty\n",
                "EBS_HYDRATE_AWS_FINDINGS=1\nVOLUME_ID=" VOL
                "\nTIME_USEC=1\nSOURCE=copy\n", /* of? */
        };
        AwsFindings g;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(findings_parse(bad[i], strlen(bad[i]), &g), -EBADMSG);
        /* a newer helper's key, and comments: ignored */
        const char *ok = "EBS_HYDRATE_AWS_FINDINGS=1\n# comment\nVOLUME_ID=" VOL
                         "\nTIME_USEC=1\nSOURCE=empty\nNEW_KEY=whatever\n";
        assert_int_equal(findings_parse(ok, strlen(ok), &g), 0);
        assert_int_equal(g.source, FINDINGS_SOURCE_EMPTY);
        ok = "EBS_HYDRATE_AWS_FINDINGS=1\nVOLUME_ID=" VOL "\nTIME_USEC=1\nSOURCE=copy\n"
             "SOURCE_VOLUME_ID=vol-0aaaaaaaaaaaaaaaa\n";
        assert_int_equal(findings_parse(ok, strlen(ok), &g), 0);
        assert_int_equal(g.source, FINDINGS_SOURCE_COPY);
        assert_string_equal(g.source_volume_id, "vol-0aaaaaaaaaaaaaaaa");
}

static void test_findings_eta_at(void **state) {
        /* AWS's ETA as of TIME_USEC, counted down to the time asked for, never under 0; a
         * clock behind the findings' counts nothing off; unknown stays unknown. */
        AwsFindings f = answered();
        const uint64_t t = UINT64_C(1795000000000000);

        f.time_usec = t;
        f.initialization_eta = 1800;
        assert_int_equal(findings_eta_at(&f, t), 1800);
        assert_int_equal(findings_eta_at(&f, t + 600 * USEC_PER_SEC + 999999), 1200);
        assert_int_equal(findings_eta_at(&f, t + 1800 * USEC_PER_SEC), 0);
        assert_int_equal(findings_eta_at(&f, t + 86400 * USEC_PER_SEC), 0);
        assert_int_equal(findings_eta_at(&f, t - 60 * USEC_PER_SEC), 1800);
        assert_int_equal(findings_eta_at(&f, 0), 1800);
        f.initialization_eta = FINDINGS_UNKNOWN;
        assert_int_equal(findings_eta_at(&f, t + USEC_PER_SEC), -1);
}

static void test_findings_file(void **state) {
        _cleanup_free_ char *dir = fixture_tmpdir("findings");
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        AwsFindings f = answered(), g;
        char path[512];

        assert_true(fd >= 0);
        assert_int_equal(findings_load(fd, VOL, HELPER_UID, &g), -ENOENT);
        assert_int_equal(findings_save(fd, &f), 0);
        snprintf(path, sizeof(path), "%s/" VOL ".aws", dir);
        assert_int_equal(findings_load(fd, VOL, HELPER_UID, &g), 0); /* root's */
        assert_memory_equal(&f, &g, sizeof(f));
        if (geteuid() == 0) { /* files of other users: root can make them */
                assert_int_equal(chown(path, HELPER_UID, HELPER_UID), 0);
                assert_int_equal(findings_load(fd, VOL, HELPER_UID, &g), 0); /* the helper's */
                assert_int_equal(chown(path, HELPER_UID + 1, HELPER_UID + 1), 0);
                assert_int_equal(findings_load(fd, VOL, HELPER_UID, &g), -EPERM); /* planted */
        }

        /* another volume's answer under this volume's name */
        findings_init(&f, "vol-0ffffffffffffffff");
        f.source = FINDINGS_SOURCE_EMPTY;
        assert_int_equal(findings_save(fd, &f), 0);
        {
                char other[512];

                snprintf(other, sizeof(other), "%s/vol-0ffffffffffffffff.aws", dir);
                assert_int_equal(rename(other, path), 0);
        }
        assert_int_equal(findings_load(fd, VOL, HELPER_UID, &g), -EBADMSG);

        /* not a regular file, a link, too big: never read as findings, never a hang */
        assert_int_equal(unlink(path), 0);
        assert_int_equal(mkfifo(path, 0644), 0);
        assert_int_equal(findings_load(fd, VOL, HELPER_UID, &g), -EBADMSG);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(symlink("/etc/passwd", path), 0);
        assert_int_equal(findings_load(fd, VOL, HELPER_UID, &g), -EBADMSG);
        assert_int_equal(unlink(path), 0);
        {
                char *big = calloc(1, FINDINGS_FILE_MAX + 2);

                memset(big, '#', FINDINGS_FILE_MAX + 1);
                fixture_write(dir, VOL ".aws", big);
                free(big);
        }
        assert_int_equal(findings_load(fd, VOL, HELPER_UID, &g), -EBADMSG);
        assert_int_equal(findings_load(fd, "../etc", HELPER_UID, &g), -EINVAL);
        rm_rf(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_findings_round_trip),
                cmocka_unit_test(test_findings_blocks),
                cmocka_unit_test(test_findings_verdict),
                cmocka_unit_test(test_findings_error_only),
                cmocka_unit_test(test_findings_format_refuses),
                cmocka_unit_test(test_findings_parse_refuses),
                cmocka_unit_test(test_findings_eta_at),
                cmocka_unit_test(test_findings_file),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
