/* SPDX-License-Identifier: MIT */
/*
 * ebs-hydrate-aws: asks AWS what the device cannot tell about a volume (whether it came from a
 * snapshot, fast snapshot restore, AWS's own initialization) and prints the findings as
 * KEY=VALUE lines. It is the only program of the project that uses the network; the hydrator
 * never links it.
 */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebs-hydrate/exit-status.h>

#include "aws-config.h"
#include "ec2.h"
#include "log.h"
#include "parse.h"
#include "util.h"

static void help(void) {
        printf("Usage: ebs-hydrate-aws [OPTIONS] VOLUME-ID\n"
               "\n"
               "Ask EC2 about an EBS volume and print the findings as KEY=VALUE lines:\n"
               "whether it was created from a snapshot or empty, fast snapshot restore, and\n"
               "AWS's initialization state, progress and ETA.\n"
               "\n"
               "  -h, --help    show this help\n"
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

static void print_findings(const Ec2Volume *v, const Ec2VolumeStatus *s, const char *status_why) {
        printf("VOLUME_ID=%s\n", v->volume_id);
        printf("SOURCE=%s\n", v->snapshot_id[0] ? "snapshot" : "empty");
        if (v->snapshot_id[0])
                printf("SNAPSHOT_ID=%s\n", v->snapshot_id);
        printf("FAST_RESTORED=%s\n", v->fast_restored == EC2_UNKNOWN ? "unknown"
                                     : v->fast_restored              ? "yes"
                                                                     : "no");
        if (v->initialization_rate != EC2_UNKNOWN)
                printf("INITIALIZATION_RATE_MIBPS=%" PRId64 "\n", v->initialization_rate);
        if (v->size_gib != EC2_UNKNOWN)
                printf("SIZE_GIB=%" PRId64 "\n", v->size_gib);
        if (status_why) {
                printf("STATUS_ERROR=%s\n", status_why);
                return;
        }
        if (s->initialization_state[0])
                printf("INITIALIZATION_STATE=%s\n", s->initialization_state);
        if (s->initialization_type[0])
                printf("INITIALIZATION_TYPE=%s\n", s->initialization_type);
        if (s->progress != EC2_UNKNOWN)
                printf("INITIALIZATION_PROGRESS=%" PRId64 "\n", s->progress);
        if (s->eta_seconds != EC2_UNKNOWN)
                printf("INITIALIZATION_ETA_SECONDS=%" PRId64 "\n", s->eta_seconds);
}

static int run(const char *volume_id) {
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
                goto out;
        }
        r = ec2_describe_volume(&c, volume_id, &v, &e, &why);
        if (r < 0) {
                hint = denied_hint(&e, "ec2:DescribeVolumes");
                log_error("%s: %s%s%s", volume_id, why ? why : strerror(-r),
                          hint ? "; the instance role needs " : "", strempty(hint));
                goto out;
        }
        r = ec2_describe_volume_status(&c, volume_id, &s, &e, &status_why);
        if (r < 0) {
                hint = denied_hint(&e, "ec2:DescribeVolumeStatus");
                log_warning("%s: %s%s%s", volume_id, status_why ? status_why : strerror(-r),
                            hint ? "; the instance role needs " : "", strempty(hint));
                if (!status_why)
                        status_why = strdup(strerror(-r));
        }
        print_findings(&v, &s, r < 0 ? strempty(status_why) : NULL);
        r = fflush(stdout) == 0 ? 0 : log_error_errno(-errno, "Failed to write the findings: %m");
out:
        aws_config_done(&c);
        return r;
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                {"help", no_argument, NULL, 'h'},
                {},
        };
        int c, r;

        log_setup("ebs-hydrate-aws");
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return EBS_HYDRATE_EXIT_SUCCESS;
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
        r = run(argv[optind]);
        curl_global_cleanup();
        return r < 0 ? EBS_HYDRATE_EXIT_FAILURE : EBS_HYDRATE_EXIT_SUCCESS;
}
