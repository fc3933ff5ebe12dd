/* SPDX-License-Identifier: MIT */
/* ebs-hydrated's command line: --help, the options and their values, DEVICE. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "build-config.h"
#include "log.h"
#include "parse.h"
#include "state.h"
#include "util.h"

static void help(void) {
        printf("Usage: ebs-hydrated [OPTIONS] DEVICE\n"
               "\n"
               "Read every block of DEVICE once, so that a volume restored from an EBS snapshot\n"
               "stops paying first-touch latency. Progress is checkpointed; a new run resumes.\n"
               "\n"
               "DEVICE is a path (/dev/nvme1n1, /dev/disk/by-id/...) or a kernel name (nvme1n1).\n"
               "\n"
               "Options:\n"
               "  -q, --queue-depth=N      reads in flight: 1-%u, or auto (the default): found\n"
               "                           by measuring the device as it goes\n"
               "  -b, --block-size=SIZE    bytes per read, e.g. 512K, 1M (default 1M); reads\n"
               "                           cover whole 512K chunks (larger on volumes over\n"
               "                           8 TiB), so SIZE is rounded down to whole chunks\n"
               "  -r, --rate-limit=RATE    bytes per second, e.g. 200M; 0, off or none =\n"
               "                           unlimited (default)\n"
               "      --mode=MODE          full (default): every block, free space last; used:\n"
               "                           only what the file systems use, free space stays\n"
               "                           cold\n"
               "      --yield=BOOL         yes (default): give way to other I/O on DEVICE while\n"
               "                           it lasts; no: full speed whatever else is going on\n"
               "                           (a machine being prepared, with no workload yet)\n"
               "      --aws=auto|no        auto (default): act on what ebs-hydrate-aws learnt\n"
               "                           of the volume from AWS (created empty, restored\n"
               "                           fast); no: ignore it\n"
               "      --state-dir=DIR      where checkpoints live (default $STATE_DIRECTORY,\n"
               "                           else %s)\n"
               "      --config-dir=DIR     read DIR/hydrate.conf and DIR/hydrate.conf.d/*.conf\n"
               "                           instead of %s and %s\n"
               "      --state-key=KEY      name the checkpoint KEY instead of the volume id or\n"
               "                           udev serial (needed for devices without either)\n"
               "      --progress=WHEN      progress bar on stderr: auto (on a terminal), always,\n"
               "                           never\n"
               "      --no-bus             do not publish the D-Bus status object (no system bus\n"
               "                           needed)\n"
               "  -h, --help               show this help\n"
               "      --version            show the version\n"
               "\n"
               "Exit status: 0 hydrated (or already hydrated, or disabled by configuration),\n"
               "1 failed, 2 bad usage or configuration, 3 finished with unreadable ranges,\n"
               "4 the device went away (progress saved; the next run resumes).\n"
               "See ebs-hydrated(8) and ebs-hydrate.conf(5).\n",
               HYDRATE_QUEUE_DEPTH_MAX, EBS_HYDRATE_STATE_DIR, EBS_HYDRATE_VENDOR_CONF_DIR,
               EBS_HYDRATE_ETC_CONF_DIR);
}

enum {
        ARG_STATE_DIR = 0x100,
        ARG_CONFIG_DIR,
        ARG_STATE_KEY,
        ARG_PROGRESS,
        ARG_NO_BUS,
        ARG_VERSION,
        ARG_MODE,
        ARG_YIELD,
        ARG_AWS,
};

static int parse_option_value(int opt, const char *value, Args *a) {
        switch (opt) {
        case 'q':
                if (hydrate_parse_queue_depth(value, &a->cli.queue_depth) < 0)
                        return log_error_errno(-EINVAL, "Invalid --queue-depth '%s': expected %s",
                                               value, HYDRATE_QUEUE_DEPTH_SYNTAX);
                a->set_queue_depth = true;
                return 0;
        case 'b':
                if (hydrate_parse_block_size(value, &a->cli.block_size) < 0)
                        return log_error_errno(-EINVAL, "Invalid --block-size '%s': expected %s",
                                               value, HYDRATE_BLOCK_SIZE_SYNTAX);
                a->set_block_size = true;
                return 0;
        case 'r':
                if (hydrate_parse_rate_limit(value, &a->cli.rate_limit) < 0)
                        return log_error_errno(-EINVAL, "Invalid --rate-limit '%s': expected %s",
                                               value, HYDRATE_RATE_LIMIT_SYNTAX);
                a->set_rate_limit = true;
                return 0;
        case ARG_MODE:
                if (hydrate_parse_mode(value, &a->cli.mode) < 0)
                        return log_error_errno(-EINVAL, "Invalid --mode '%s': expected %s", value,
                                               HYDRATE_MODE_SYNTAX);
                a->set_mode = true;
                return 0;
        case ARG_YIELD:
                if (parse_boolean(value, &a->cli.yield) < 0)
                        return log_error_errno(-EINVAL, "Invalid --yield '%s': expected yes or no",
                                               value);
                a->set_yield = true;
                return 0;
        case ARG_AWS:
                if (hydrate_parse_aws(value, &a->cli.aws) < 0)
                        return log_error_errno(-EINVAL, "Invalid --aws '%s': expected %s", value,
                                               HYDRATE_AWS_SYNTAX);
                a->set_aws = true;
                return 0;
        }
        return -EINVAL;
}

int args_parse(int argc, char *argv[], Args *a) {
        static const struct option options[] = {
                {"queue-depth", required_argument, NULL, 'q'},
                {"block-size", required_argument, NULL, 'b'},
                {"rate-limit", required_argument, NULL, 'r'},
                {"mode", required_argument, NULL, ARG_MODE},
                {"yield", required_argument, NULL, ARG_YIELD},
                {"aws", required_argument, NULL, ARG_AWS},
                {"state-dir", required_argument, NULL, ARG_STATE_DIR},
                {"config-dir", required_argument, NULL, ARG_CONFIG_DIR},
                {"state-key", required_argument, NULL, ARG_STATE_KEY},
                {"progress", required_argument, NULL, ARG_PROGRESS},
                {"no-bus", no_argument, NULL, ARG_NO_BUS},
                {"help", no_argument, NULL, 'h'},
                {"version", no_argument, NULL, ARG_VERSION},
                {},
        };
        int c, r;

        opterr = 0; /* its messages echo the argument raw: ours go through the log, quoted */
        while ((c = getopt_long(argc, argv, ":q:b:r:h", options, NULL)) >= 0)
                switch (c) {
                case 'q':
                case 'b':
                case 'r':
                case ARG_MODE:
                case ARG_YIELD:
                case ARG_AWS:
                        r = parse_option_value(c, optarg, a);
                        if (r < 0)
                                return r;
                        break;
                case ARG_STATE_DIR:
                        a->state_dir = optarg;
                        break;
                case ARG_CONFIG_DIR:
                        a->config_dir = optarg;
                        break;
                case ARG_STATE_KEY:
                        if (!state_key_valid(optarg, strlen(optarg)))
                                return log_error_errno(-EINVAL,
                                                       "Invalid --state-key '%s': use 1-%d "
                                                       "printable ASCII characters without spaces "
                                                       "or '/', not starting with '.'",
                                                       optarg, STATE_KEY_MAX);
                        a->state_key = optarg;
                        break;
                case ARG_PROGRESS:
                        if (streq_ptr(optarg, "auto"))
                                a->progress = PROGRESS_AUTO;
                        else if (streq_ptr(optarg, "always"))
                                a->progress = PROGRESS_ALWAYS;
                        else if (streq_ptr(optarg, "never"))
                                a->progress = PROGRESS_NEVER;
                        else
                                return log_error_errno(-EINVAL,
                                                       "Invalid --progress '%s': expected "
                                                       "auto, always or never",
                                                       optarg);
                        break;
                case ARG_NO_BUS:
                        a->no_bus = true;
                        break;
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("ebs-hydrated %s\n", EBS_HYDRATE_VERSION);
                        return 0;
                case ':':
                        if (optopt > 0 && optopt < 0x100 && argv[optind - 1][1] != '-')
                                return log_error_errno(-EINVAL,
                                                       "Option -%c needs a value (see "
                                                       "--help)",
                                                       optopt);
                        return log_error_errno(-EINVAL, "Option '%s' needs a value (see --help)",
                                               argv[optind - 1]);
                default:
                        if (optopt > 0 && optopt < 0x100 && argv[optind - 1][1] != '-')
                                return log_error_errno(-EINVAL, "Unknown option -%c (see --help)",
                                                       optopt);
                        return log_error_errno(-EINVAL, "Unknown option '%s' (see --help)",
                                               argv[optind - 1]);
                }

        if (optind != argc - 1)
                return log_error_errno(-EINVAL, optind == argc ? "No DEVICE given (see --help)"
                                                               : "Only one DEVICE may be given");
        a->device = argv[optind];
        return 1;
}

void args_apply(const Args *a, HydrateSettings *settings) {
        if (a->set_queue_depth)
                settings->queue_depth = a->cli.queue_depth;
        if (a->set_block_size)
                settings->block_size = a->cli.block_size;
        if (a->set_rate_limit)
                settings->rate_limit = a->cli.rate_limit;
        if (a->set_mode)
                settings->mode = a->cli.mode;
        if (a->set_yield)
                settings->yield = a->cli.yield;
        if (a->set_aws)
                settings->aws = a->cli.aws;
}
