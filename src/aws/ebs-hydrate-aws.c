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
#include "blocklist.h"
#include "build-config.h"
#include "config.h"
#include "ebs.h"
#include "ec2.h"
#include "findings.h"
#include "identity.h"
#include "log.h"
#include "parse.h"
#include "sysfs.h"
#include "time-util.h"
#include "util.h"

#define FOLLOW_INTERVAL_SEC 60        /* DescribeVolumeStatus lags up to 5 minutes anyway */
#define FOLLOW_INTERVAL_MAX_SEC 300   /* after failed asks */
#define FOLLOW_GIVE_UP_SEC (14 * 60)  /* under the daemon's 15 minutes of patience */
#define FOLLOW_LAG_SEC (10 * 60)      /* a provisioned rate the status does not show yet */
#define FOLLOW_INTERVAL_LIMIT_SEC 600 /* --interval: well under the daemon's patience */

static void help(void) {
        printf("Usage: ebs-hydrate-aws [OPTIONS] VOLUME-ID|DEVICE\n"
               "\n"
               "Ask EC2 about an EBS volume and print the findings as KEY=VALUE lines:\n"
               "whether it was created from a snapshot or empty, fast snapshot restore, and\n"
               "AWS's initialization state, progress and ETA; then, for a volume restored from\n"
               "a snapshot that is still to be read, how many blocks the snapshot stores\n"
               "(BLOCKS_STORED=). A DEVICE (nvme1n1, /dev/nvme1n1) is looked up in udev for its\n"
               "volume id, and its configuration is honoured: with Aws=no nothing is asked.\n"
               "\n"
               "  -h, --help           show this help\n"
               "      --state-dir=DIR  also write the findings to DIR/VOLUME-ID.aws, replaced\n"
               "                       whole (an error too, saying why AWS could not be asked),\n"
               "                       and the snapshot's blocks to DIR/VOLUME-ID.blocks\n"
               "      --config-dir=DIR read the configuration of DEVICE from DIR only\n"
               "      --follow         while AWS initializes the volume at a provisioned rate,\n"
               "                       ask again every minute and replace the findings, until\n"
               "                       it is done\n"
               "      --interval=SEC   with --follow: ask every SEC seconds (default 60)\n"
               "\n"
               "Credentials and region as the AWS SDKs find them: AWS_ACCESS_KEY_ID,\n"
               "AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, then the instance\n"
               "metadata service (IMDSv2). Endpoints: AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_EC2,\n"
               "AWS_ENDPOINT_URL_EBS, AWS_EC2_METADATA_SERVICE_ENDPOINT;\n"
               "AWS_EC2_METADATA_DISABLED=true turns IMDS off.\n"
               "IAM: ec2:DescribeVolumes, ec2:DescribeVolumeStatus and ebs:ListSnapshotBlocks\n"
               "(for an encrypted snapshot also the use of its KMS key).\n");
}

static int parse_interval(const char *s, unsigned *ret) {
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v < 1 ||
            v > FOLLOW_INTERVAL_LIMIT_SEC)
                return -EINVAL;
        *ret = (unsigned)v;
        return 0;
}

static bool volume_id_valid(const char *s) {
        size_t n = strlen(s);

        return n > 4 && n < EC2_ID_MAX && strncmp(s, "vol-", 4) == 0 &&
               strspn(s + 4, "0123456789abcdef") == n - 4;
}

/* nvme1n1 or /dev/nvme1n1: a kernel name, never a path elsewhere (the sandbox has no /dev). */
static const char *kernel_name_of(const char *arg) {
        const char *k = startswith(arg, "/dev/") ?: arg;
        size_t n = strlen(k);

        if (n == 0 || n >= KERNEL_NAME_MAX || k[0] == '.' || strchr(k, '/') ||
            strspn(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!_.-") != n)
                return NULL;
        return k;
}

/*
 * DEVICE's volume id, as the daemon finds it (udev, else sysfs), and whether its configuration
 * lets AWS be asked. Returns 1 to ask, 0 when Aws=no, or an exit status below 0 (negated).
 */
static int device_volume(const char *kernel_name, const char *config_dir,
                         char volume_id[static EC2_ID_MAX]) {
        const char *defaults[] = {EBS_HYDRATE_VENDOR_CONF_DIR, EBS_HYDRATE_ETC_CONF_DIR, NULL};
        const char *one[] = {config_dir, NULL};
        _cleanup_free_ char *error = NULL;
        HydrateSettings settings;
        DeviceIdentity id;
        MatchTarget t;
        int r;

        r = identity_resolve(sysfs_root(), kernel_name, &id);
        if (r < 0) {
                log_error("Cannot look up %s in udev or sysfs: %s", kernel_name, strerror(-r));
                return -EBS_HYDRATE_EXIT_FAILURE;
        }
        if (!id.is_ebs) {
                log_error("%s is not an EBS volume: its NVMe model and serial name none",
                          kernel_name);
                return -EBS_HYDRATE_EXIT_USAGE;
        }
        t = (MatchTarget){id.volume_id, id.device_name, id.kernel_name};
        hydrate_settings_init(&settings);
        r = config_load(config_dir ? one : defaults, &t, &settings, &error);
        if (r < 0) {
                log_error("%s", error ?: "Failed to load the configuration");
                return -EBS_HYDRATE_EXIT_USAGE;
        }
        (void)snprintf(volume_id, EC2_ID_MAX, "%s", id.volume_id);
        if (!settings.aws) {
                log_info("%s (%s): Aws=no in the configuration: not asking AWS", id.volume_id,
                         kernel_name);
                return 0;
        }
        return 1;
}

/* What the instance role lacks when AWS denied a call: @action; for the EBS direct APIs denied
 * by a service they depend on (an encrypted snapshot's KMS key), that key. NULL otherwise. */
static const char *denied_hint(const AwsError *e, const char *action) {
        if (streq(e->code, "AccessDeniedException") &&
            startswith(e->message, "DEPENDENCY_ACCESS_DENIED"))
                return "the use of the snapshot's KMS key (it is encrypted: kms:Decrypt and the "
                       "others ebs-hydrate-aws(8) lists)";
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

/* A call that failed: one journal line and why into the findings' @dst, both naming what the
 * instance role lacks when AWS denied it (the daemon shows the findings' words). */
static void said_failed(int level, const char *volume_id, const AwsError *e, const char *action,
                        const char *why, int r, char *dst, size_t size) {
        const char *hint = denied_hint(e, action);
        char said[FINDINGS_TEXT_MAX + 256];

        (void)snprintf(said, sizeof(said), "%s%s%s", why ? why : strerror(-r),
                       hint ? "; the instance role needs " : "", strempty(hint));
        (void)log_internal(level, 0, "%s: %s", volume_id, said);
        set_text(dst, size, said, r);
}

/* DescribeVolumeStatus into @f: its fields, or STATUS_ERROR= saying why it could not be had. */
static int ask_status(AwsConfig *c, const char *volume_id, AwsFindings *f) {
        _cleanup_free_ char *why = NULL;
        AwsError e = {};
        Ec2VolumeStatus s;
        int r;

        r = ec2_describe_volume_status(c, volume_id, &s, &e, &why);
        f->time_usec = now_usec(CLOCK_REALTIME);
        if (r < 0) {
                said_failed(LOG_WARNING, volume_id, &e, "ec2:DescribeVolumeStatus", why, r,
                            f->status_error, sizeof(f->status_error));
                /* what an older answer said is not AWS's word now */
                f->initialization_state[0] = f->initialization_type[0] = '\0';
                f->initialization_progress = f->initialization_eta = FINDINGS_UNKNOWN;
                return r;
        }
        f->status_error[0] = '\0';
        (void)snprintf(f->initialization_state, sizeof(f->initialization_state), "%s",
                       s.initialization_state);
        (void)snprintf(f->initialization_type, sizeof(f->initialization_type), "%s",
                       s.initialization_type);
        f->initialization_progress = s.progress;
        f->initialization_eta = s.eta_seconds;
        return 0;
}

/* What EC2 said, or why it could not be asked: @f's answer fields or its ERROR=. */
static int ask(AwsConfig *c, const char *volume_id, AwsFindings *f) {
        _cleanup_free_ char *why = NULL;
        AwsError e = {};
        Ec2Volume v;
        int r;

        r = aws_config_load(c, &why);
        if (r < 0) {
                log_error("%s: cannot ask AWS: %s", volume_id, why ? why : strerror(-r));
                set_text(f->error, sizeof(f->error), why, r);
                goto out;
        }
        r = ec2_describe_volume(c, volume_id, &v, &e, &why);
        if (r < 0) {
                said_failed(LOG_ERR, volume_id, &e, "ec2:DescribeVolumes", why, r, f->error,
                            sizeof(f->error));
                goto out;
        }
        f->source = v.snapshot_id[0]        ? FINDINGS_SOURCE_SNAPSHOT
                    : v.source_volume_id[0] ? FINDINGS_SOURCE_COPY
                                            : FINDINGS_SOURCE_EMPTY;
        (void)snprintf(f->snapshot_id, sizeof(f->snapshot_id), "%s", v.snapshot_id);
        (void)snprintf(f->source_volume_id, sizeof(f->source_volume_id), "%s", v.source_volume_id);
        f->fast_restored = v.fast_restored;
        f->size_gib = v.size_gib;
        f->initialization_rate = v.initialization_rate;
        (void)ask_status(c, volume_id, f); /* the origin is known without it */
        return 0;
out:
        f->time_usec = now_usec(CLOCK_REALTIME);
        return r;
}

/* Whether AWS initializes the volume at a provisioned rate, which the daemon then follows. */
static bool aws_initializing(const AwsFindings *f) {
        return streq(findings_verdict(f), EBS_HYDRATE_AWS_INITIALIZING);
}

static int report(const AwsFindings *f, const char *state_dir, bool print);

/* Worth asking again: AWS initializes the volume; or DescribeVolumes says a provisioned rate
 * and the status does not show it yet (it lags by minutes), within FOLLOW_LAG_SEC. */
static bool worth_following(const AwsFindings *f, uint64_t started) {
        if (aws_initializing(f))
                return true;
        return f->initialization_rate > 0 && !f->initialization_state[0] &&
               streq(findings_verdict(f), EBS_HYDRATE_AWS_SNAPSHOT) &&
               now_usec(CLOCK_MONOTONIC) - started < FOLLOW_LAG_SEC * USEC_PER_SEC;
}

/*
 * --follow: while AWS initializes the volume, ask DescribeVolumeStatus again every @interval
 * seconds and replace the findings with each answer (the daemon takes findings it has not
 * seen renewed for 15 minutes as the helper's silence). A failed ask is tried again later, the
 * wait doubling up to FOLLOW_INTERVAL_MAX_SEC but never past FOLLOW_GIVE_UP_SEC after the last
 * answer (on the monotonic clock); then the findings say why and the helper gives up. Only
 * answers that change the state, type or progress are printed (the journal keeps the rest
 * out). @asked: when EC2 answered first (CLOCK_MONOTONIC); each ask comes its wait after the one
 * before, whatever came between (the snapshot's block list). Returns the exit status: success
 * when AWS's initialization ended (or never ran), "unanswered" when AWS fell silent, failure
 * when the findings could not be written.
 */
static int follow(AwsConfig *c, AwsFindings *f, const char *state_dir, unsigned interval,
                  uint64_t asked) {
        uint64_t started = asked, answered = asked, last = asked;
        uint64_t give_up = FOLLOW_GIVE_UP_SEC * USEC_PER_SEC;
        unsigned wait = interval;
        bool followed = false;

        while (worth_following(f, started)) {
                AwsFindings next = *f;
                uint64_t silent = now_usec(CLOCK_MONOTONIC) - answered;
                uint64_t since = (now_usec(CLOCK_MONOTONIC) - last) / USEC_PER_SEC;
                bool changed;

                followed = true;
                /* the last ask is made at the deadline, not a doubled wait after it */
                if (silent + (uint64_t)wait * USEC_PER_SEC > give_up)
                        wait = (unsigned)((give_up - MIN(silent, give_up)) / USEC_PER_SEC);
                (void)sleep(wait - (unsigned)MIN(since, (uint64_t)wait));
                last = now_usec(CLOCK_MONOTONIC);
                if (ask_status(c, f->volume_id, &next) >= 0) {
                        changed = !streq(next.initialization_state, f->initialization_state) ||
                                  !streq(next.initialization_type, f->initialization_type) ||
                                  next.initialization_progress != f->initialization_progress;
                        *f = next;
                        answered = now_usec(CLOCK_MONOTONIC);
                        wait = interval;
                        if (report(f, state_dir, changed) < 0)
                                return EBS_HYDRATE_EXIT_FAILURE;
                        continue;
                }
                if (now_usec(CLOCK_MONOTONIC) - answered >= give_up) {
                        log_error("%s: no answer from AWS for %u minutes: no longer following "
                                  "its initialization",
                                  f->volume_id, FOLLOW_GIVE_UP_SEC / 60);
                        *f = next;
                        return report(f, state_dir, true) < 0 ? EBS_HYDRATE_EXIT_FAILURE
                                                              : EBS_HYDRATE_EXIT_UNANSWERED;
                }
                wait = MAX(1u, MIN(wait * 2, MAX(interval, FOLLOW_INTERVAL_MAX_SEC)));
        }
        if (followed)
                log_info("%s: AWS's initialization %s", f->volume_id,
                         streq(f->initialization_state, "completed") ? "completed"
                         : f->initialization_state[0]                ? "is no longer followed"
                                                                     : "was never reported");
        return EBS_HYDRATE_EXIT_SUCCESS;
}

/* The findings on stdout and, with --state-dir, in <volume>.aws there (an error too: the
 * daemon then knows AWS could not be asked, and why). */
static int report(const AwsFindings *f, const char *state_dir, bool print) {
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
        if (print && (fputs(text, stdout) < 0 || fflush(stdout) != 0))
                return log_error_errno(-EIO, "Failed to write the findings to stdout");
        return 0;
}

/* Whether the daemon reads the volume, and so would pass over what its snapshot does not store:
 * a restore it hydrates, or one AWS initializes (it reads the metadata and hot paths first). */
static bool worth_listing(const AwsFindings *f) {
        const char *v = findings_verdict(f);

        return f->source == FINDINGS_SOURCE_SNAPSHOT &&
               (streq(v, EBS_HYDRATE_AWS_SNAPSHOT) || streq(v, EBS_HYDRATE_AWS_INITIALIZING));
}

/* @l into <volume>.blocks in @state_dir: 0, or -errno after saying why (BLOCKS_ERROR=). */
static int save_blocks(const char *state_dir, AwsFindings *f, const EbsBlockList *l) {
        BlockListInfo info = {.n_blocks = l->n_blocks};
        _cleanup_close_ int dir_fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char why[FINDINGS_TEXT_MAX];
        int r;

        (void)snprintf(info.volume_id, sizeof(info.volume_id), "%s", f->volume_id);
        (void)snprintf(info.snapshot_id, sizeof(info.snapshot_id), "%s", f->snapshot_id);
        r = dir_fd < 0 ? -errno : blocklist_save(dir_fd, &info, l->bits);
        if (r >= 0)
                return 0;
        (void)snprintf(why, sizeof(why), "Failed to write %s/%s%s: %s", state_dir, f->volume_id,
                       BLOCKLIST_SUFFIX, strerror(-r));
        log_error("%s", why);
        set_text(f->blocks_error, sizeof(f->blocks_error), why, r);
        return r;
}

/* No <volume>.blocks in @state_dir: an older list is not left beside findings that do not
 * vouch for it. */
static void forget_blocks(const char *state_dir, const char *volume_id) {
        _cleanup_close_ int dir_fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int r = dir_fd < 0 ? -errno : blocklist_remove(dir_fd, volume_id);

        if (r < 0)
                (void)log_warning_errno(r, "Failed to remove %s/%s%s, ignoring: %m", state_dir,
                                        volume_id, BLOCKLIST_SUFFIX);
}

/*
 * ListSnapshotBlocks, every page, for @f's snapshot: BLOCKS_STORED= (with @state_dir only once
 * <volume>.blocks is written: the daemon takes that file only when the findings vouch for it),
 * or BLOCKS_ERROR= saying why. Nothing else in @f changes: a list that cannot be had costs the
 * daemon only the reads of what the snapshot does not store.
 */
static void list_blocks(AwsConfig *c, AwsFindings *f, const char *state_dir) {
        _cleanup_(ebs_block_list_done) EbsBlockList l = {};
        _cleanup_free_ char *why = NULL;
        AwsError e = {};
        int r;

        r = ebs_list_snapshot_blocks(c, f->snapshot_id, &l, &e, &why);
        if (r < 0)
                said_failed(LOG_WARNING, f->volume_id, &e, "ebs:ListSnapshotBlocks", why, r,
                            f->blocks_error, sizeof(f->blocks_error));
        else if (state_dir)
                r = save_blocks(state_dir, f, &l);
        if (r < 0) {
                if (state_dir)
                        forget_blocks(state_dir, f->volume_id);
                return;
        }
        f->blocks_stored = (int64_t)l.n_stored;
        log_info("%s: %s stores %" PRIu64 " of its %" PRIu64 " blocks of 512 KiB (%u pages)",
                 f->volume_id, f->snapshot_id, l.n_stored, l.n_blocks, l.pages);
}

/*
 * What the program does once it knows the volume: ask EC2, report, list the snapshot's blocks
 * and report again, follow AWS's initialization. Returns the exit status: the block list's fate
 * is not in it (BLOCKS_ERROR= says it), AWS having answered about the volume.
 */
static int run(AwsConfig *c, AwsFindings *f, const char *state_dir, bool follow_on,
               unsigned interval) {
        uint64_t asked;
        bool listing;
        int r;

        r = ask(c, f->volume_id, f);
        asked = now_usec(CLOCK_MONOTONIC);
        listing = r >= 0 && worth_listing(f);
        /* EC2's answer into the file first, for the daemon to act on while the list is had (a
         * large snapshot's takes minutes); on stdout once, whole */
        if (report(f, state_dir, !listing) < 0)
                return EBS_HYDRATE_EXIT_FAILURE;
        if (r < 0)
                return EBS_HYDRATE_EXIT_UNANSWERED;
        if (listing) {
                list_blocks(c, f, state_dir);
                if (report(f, state_dir, true) < 0)
                        return EBS_HYDRATE_EXIT_FAILURE;
        }
        return follow_on ? follow(c, f, state_dir, interval, asked) : EBS_HYDRATE_EXIT_SUCCESS;
}

int main(int argc, char **argv) {
        enum { ARG_STATE_DIR = 0x100, ARG_CONFIG_DIR, ARG_FOLLOW, ARG_INTERVAL };
        static const struct option options[] = {
                {"help", no_argument, NULL, 'h'},
                {"state-dir", required_argument, NULL, ARG_STATE_DIR},
                {"config-dir", required_argument, NULL, ARG_CONFIG_DIR},
                {"follow", no_argument, NULL, ARG_FOLLOW},
                {"interval", required_argument, NULL, ARG_INTERVAL},
                {},
        };
        bool follow_on = false;
        unsigned interval = FOLLOW_INTERVAL_SEC;
        AwsConfig config = {};
        const char *state_dir = NULL, *config_dir = NULL, *kernel_name;
        char volume_id[EC2_ID_MAX];
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
                case ARG_CONFIG_DIR:
                        config_dir = optarg;
                        break;
                case ARG_FOLLOW:
                        follow_on = true;
                        break;
                case ARG_INTERVAL:
                        if (parse_interval(optarg, &interval) < 0) {
                                log_error("Invalid --interval '%s': expected whole seconds, "
                                          "1 to 600",
                                          CESCAPE(optarg, SIZE_MAX, 64));
                                return EBS_HYDRATE_EXIT_USAGE;
                        }
                        break;
                default:
                        return EBS_HYDRATE_EXIT_USAGE;
                }
        if (optind != argc - 1) {
                log_error("Expected one volume id or device (see --help)");
                return EBS_HYDRATE_EXIT_USAGE;
        }
        if (startswith(argv[optind], "vol-")) {
                if (!volume_id_valid(argv[optind])) {
                        log_error("Invalid volume id '%s': expected vol- and hexadecimal digits",
                                  CESCAPE(argv[optind], SIZE_MAX, 64));
                        return EBS_HYDRATE_EXIT_USAGE;
                }
                (void)snprintf(volume_id, sizeof(volume_id), "%s", argv[optind]);
        } else {
                kernel_name = kernel_name_of(argv[optind]);
                if (!kernel_name) {
                        log_error("Invalid argument '%s': expected a volume id (vol-...) or a "
                                  "device (nvme1n1, /dev/nvme1n1)",
                                  CESCAPE(argv[optind], SIZE_MAX, 64));
                        return EBS_HYDRATE_EXIT_USAGE;
                }
                r = device_volume(kernel_name, config_dir, volume_id);
                if (r <= 0)
                        return -r;
        }
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
                log_error("Failed to initialise libcurl");
                return EBS_HYDRATE_EXIT_FAILURE;
        }
        findings_init(&f, volume_id);
        k = run(&config, &f, state_dir, follow_on, interval);
        aws_config_done(&config);
        curl_global_cleanup();
        return k;
}
