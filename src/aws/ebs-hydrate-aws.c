/* SPDX-License-Identifier: MIT */
/*
 * ebs-hydrate-aws: asks AWS what the device cannot tell about a volume (whether it came from a
 * snapshot, fast snapshot restore, AWS's own initialization) and prints the findings as
 * KEY=VALUE lines (ebs-hydrate/findings.h), with --state-dir also into the volume's .aws file. It
 * is the only program of the project that uses the network; the hydrator never links it.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebs-hydrate/exit-status.h>

#include "aws-config.h"
#include "ec2.h"
#include "findings.h"
#include "log.h"
#include "parse.h"
#include "time-util.h"
#include "util.h"

static void help(void) {
        printf("Usage: ebs-hydrate-aws [OPTIONS] VOLUME-ID\n"
               "\n"
               "Ask EC2 about an EBS volume and print the findings as KEY=VALUE lines:\n"
               "whether it was created from a snapshot or empty, fast snapshot restore, and\n"
               "AWS's initialization state, progress and ETA.\n"
               "\n"
               "  -h, --help           show this help\n"
               "      --state-dir=DIR  also write the findings to DIR/VOLUME-ID.aws, replaced\n"
               "                       whole (an error too, saying why AWS could not be asked)\n"
               "\n"
               "Credentials and region as the AWS SDKs find them: AWS_ACCESS_KEY_ID,\n"
               "AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, then the instance\n"
               "metadata service (IMDSv2). Endpoints: AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_EC2,\n"
               "AWS_EC2_METADATA_SERVICE_ENDPOINT; AWS_EC2_METADATA_DISABLED=true turns IMDS off.\n"
               "IAM: ec2:DescribeVolumes and ec2:DescribeVolumeStatus.\n");
}

static bool volume_id_valid(const char *s) {
        size_t n = strlen(s);

        return n > 4 && n < EC2_ID_MAX && strncmp(s, "vol-", 4) == 0 &&
               strspn(s + 4, "0123456789abcdef") == n - 4;
}

/* The IAM action an authorization error names, so that the admin knows what to grant. */
static const char *denied_hint(const AwsError *e, const char *action) {
        if (streq(e->code, "UnauthorizedOperation") || streq(e->code, "AccessDenied") ||
            streq(e->code, "AccessDeniedException"))
                return action;
        return NULL;
}

/* A reason into the findings: what AWS or curl said may hold any byte; the file holds lines. */
static void set_text(char *dst, size_t size, const char *why, int r) {
        const char *s = why ? why : strerror(-r);

        (void)cescape(dst, size, s, strlen(s));
}

/* What EC2 said, or why it could not be asked: @f's answer fields or its ERROR=. */
static int ask(const char *volume_id, AwsFindings *f) {
        _cleanup_free_ char *why = NULL, *status_why = NULL;
        AwsConfig c = {};
        AwsError e = {};
        Ec2Volume v;
        Ec2VolumeStatus s;
        const char *hint;
        int r;

        r = aws_config_load(&c, &why);
        if (r < 0) {
                log_error("%s: cannot ask AWS: %s", volume_id, why ? why : strerror(-r));
                set_text(f->error, sizeof(f->error), why, r);
                goto out;
        }
        r = ec2_describe_volume(&c, volume_id, &v, &e, &why);
        if (r < 0) {
                hint = denied_hint(&e, "ec2:DescribeVolumes");
                log_error("%s: %s%s%s", volume_id, why ? why : strerror(-r),
                          hint ? "; the instance role needs " : "", strempty(hint));
                set_text(f->error, sizeof(f->error), why, r);
                goto out;
        }
        f->source = v.snapshot_id[0] ? FINDINGS_SOURCE_SNAPSHOT : FINDINGS_SOURCE_EMPTY;
        (void)snprintf(f->snapshot_id, sizeof(f->snapshot_id), "%s", v.snapshot_id);
        f->fast_restored = v.fast_restored;
        f->size_gib = v.size_gib;
        f->initialization_rate = v.initialization_rate;
        r = ec2_describe_volume_status(&c, volume_id, &s, &e, &status_why);
        if (r < 0) {
                hint = denied_hint(&e, "ec2:DescribeVolumeStatus");
                log_warning("%s: %s%s%s", volume_id, status_why ? status_why : strerror(-r),
                            hint ? "; the instance role needs " : "", strempty(hint));
                set_text(f->status_error, sizeof(f->status_error), status_why, r);
        } else {
                (void)snprintf(f->initialization_state, sizeof(f->initialization_state), "%s",
                               s.initialization_state);
                (void)snprintf(f->initialization_type, sizeof(f->initialization_type), "%s",
                               s.initialization_type);
                f->initialization_progress = s.progress;
                f->initialization_eta = s.eta_seconds;
        }
        r = 0;
out:
        f->time_usec = now_usec(CLOCK_REALTIME);
        aws_config_done(&c);
        return r;
}

/* The findings on stdout and, with --state-dir, in <volume>.aws there (an error too: the
 * daemon then knows AWS could not be asked, and why). */
static int report(const AwsFindings *f, const char *state_dir) {
        char text[FINDINGS_FILE_MAX];
        _cleanup_close_ int dir_fd = -1;
        int n = findings_format(f, text, sizeof(text)), r;

        if (n < 0)
                return log_error_errno(n, "%s: the findings cannot be written: %s", f->volume_id,
                                       strerror(-n));
        if (state_dir) {
                dir_fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dir_fd < 0)
                        return log_error_errno(-errno, "Failed to open the state directory %s: %m",
                                               state_dir);
                r = findings_save(dir_fd, f);
                if (r < 0)
                        return log_error_errno(r, "Failed to write %s/%s%s: %m", state_dir,
                                               f->volume_id, FINDINGS_SUFFIX);
        }
        if (fputs(text, stdout) < 0 || fflush(stdout) != 0)
                return log_error_errno(-EIO, "Failed to write the findings to stdout");
        return 0;
}

int main(int argc, char **argv) {
        enum { ARG_STATE_DIR = 0x100 };
        static const struct option options[] = {
                {"help", no_argument, NULL, 'h'},
                {"state-dir", required_argument, NULL, ARG_STATE_DIR},
                {},
        };
        const char *state_dir = NULL;
        AwsFindings f;
        int c, r, k;

        log_setup("ebs-hydrate-aws");
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return EBS_HYDRATE_EXIT_SUCCESS;
                case ARG_STATE_DIR:
                        state_dir = optarg;
                        break;
                default:
                        return EBS_HYDRATE_EXIT_USAGE;
                }
        if (optind != argc - 1) {
                log_error("Expected one volume id (see --help)");
                return EBS_HYDRATE_EXIT_USAGE;
        }
        if (!volume_id_valid(argv[optind])) {
                log_error("Invalid volume id '%s': expected vol- and hexadecimal digits",
                          CESCAPE(argv[optind], SIZE_MAX, 64));
                return EBS_HYDRATE_EXIT_USAGE;
        }
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
                log_error("Failed to initialise libcurl");
                return EBS_HYDRATE_EXIT_FAILURE;
        }
        findings_init(&f, argv[optind]);
        r = ask(argv[optind], &f);
        curl_global_cleanup();
        k = report(&f, state_dir);
        return r < 0 || k < 0 ? EBS_HYDRATE_EXIT_FAILURE : EBS_HYDRATE_EXIT_SUCCESS;
}
