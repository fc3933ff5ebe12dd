/* SPDX-License-Identifier: MIT */
/*
 * ebs-hydratectl: show and steer the hydration of volumes. Running ebs-hydrated instances are
 * asked over the system bus, volumes that are not running are read from their state files.
 * This file holds the command line, --help, the verb table and the one mapping of a verb's
 * result to the exit status; each family of verbs has its own file (ctl-verbs.h). Exit codes:
 * 0 success, 1 failure, 2 bad usage, 4 not permitted (root only, or refused); wait adds its
 * own (ctl-wait.h).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "build-config.h"
#include "config.h"
#include "ctl-verbs.h"
#include "ctl-wait.h"
#include "log.h"
#include "util.h"

typedef struct Command {
        const char *name;
        const char *synopsis; /* its arguments, for the usage error */
        unsigned min_args, max_args;
        int (*run)(const CtlArgs *a, char **args); /* ctl-verbs.h: 0, -errno or a status */
} Command;

static void help(void) {
        printf("Usage: ebs-hydratectl [OPTIONS] [COMMAND] [ARGS]\n"
               "\n"
               "Show and control the hydration of EBS volumes by ebs-hydrated.\n"
               "\n"
               "Commands:\n"
               "  status [TARGET]            show every volume, or the one TARGET names\n"
               "                             (the default command)\n"
               "  pause TARGET               stop reading until resumed (root)\n"
               "  resume TARGET              continue after pause (root)\n"
               "  set-rate-limit TARGET RATE change the rate limit of a running hydration;\n"
               "                             RATE is %s (root)\n"
               "  forget VOLUME              delete the state of VOLUME, so that it is\n"
               "                             hydrated from the start next time (root)\n"
               "  metrics                    print Prometheus metrics for node_exporter\n"
               "  wait TARGET...             block until every TARGET reached --phase\n"
               "\n"
               "TARGET is a volume id (or other state key), a kernel name such as nvme1n1,\n"
               "or a device path such as /dev/nvme1n1 or a /dev/disk/by-id/ link. For wait,\n"
               "also a mapping name (sdf) or a path on a mounted file system\n"
               "(/var/lib/postgresql: the volumes under it).\n"
               "\n"
               "Options:\n"
               "      --json            status as JSON\n"
               "      --no-legend       no table header, and nothing when there are no volumes\n"
               "      --output=FILE     metrics: replace FILE whole (temporary file, rename)\n"
               "                        instead of printing; a device or FIFO is written to\n"
               "      --state-dir=DIR   where the state files are (default %s)\n"
               "      --phase=PHASE     wait: metadata, hot, used or complete (default)\n"
               "      --timeout=TIME    wait: give up after TIME (30s, 10min, 2h; default\n"
               "                        infinity)\n"
               "      --runtime-dir=DIR wait: where the volume records are (default %s)\n"
               "  -h, --help            show this help\n"
               "      --version         show the version\n"
               "\n"
               "Exit status: 0 success, 1 failure (unknown or not running TARGET, bus error,\n"
               "volume busy), 2 bad usage, 4 not permitted (not root, or access denied).\n"
               "wait: 0 reached, 3 finished without reaching it (failed, unreadable ranges,\n"
               "disabled, Mode=used for complete), 5 timed out, 6 unknown TARGET.\n"
               "See ebs-hydratectl(1).\n",
               HYDRATE_RATE_LIMIT_SYNTAX, EBS_HYDRATE_STATE_DIR, EBS_HYDRATE_RUNTIME_DIR);
}

enum {
        ARG_JSON = 0x100,
        ARG_NO_LEGEND,
        ARG_STATE_DIR,
        ARG_VERSION,
        ARG_OUTPUT,
        ARG_PHASE,
        ARG_TIMEOUT,
        ARG_RUNTIME_DIR,
};

/* Returns 1 to run a command, 0 to exit successfully (--help, --version), -EINVAL on bad usage.
 */
static int parse_argv(int argc, char *argv[], CtlArgs *a) {
        static const struct option options[] = {
                {"json", no_argument, NULL, ARG_JSON},
                {"no-legend", no_argument, NULL, ARG_NO_LEGEND},
                {"state-dir", required_argument, NULL, ARG_STATE_DIR},
                {"output", required_argument, NULL, ARG_OUTPUT},
                {"phase", required_argument, NULL, ARG_PHASE},
                {"timeout", required_argument, NULL, ARG_TIMEOUT},
                {"runtime-dir", required_argument, NULL, ARG_RUNTIME_DIR},
                {"help", no_argument, NULL, 'h'},
                {"version", no_argument, NULL, ARG_VERSION},
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case ARG_JSON:
                        a->json = true;
                        break;
                case ARG_NO_LEGEND:
                        a->legend = false;
                        break;
                case ARG_STATE_DIR:
                        a->state_dir = optarg;
                        a->state_dir_given = true;
                        break;
                case ARG_OUTPUT:
                        a->output = optarg;
                        break;
                case ARG_PHASE:
                        if (wait_phase_from_string(optarg, &a->phase) < 0) {
                                log_error("Invalid --phase '%s': expected metadata, hot, used or "
                                          "complete",
                                          optarg);
                                return -EINVAL;
                        }
                        a->wait_options_given = true;
                        break;
                case ARG_TIMEOUT:
                        if (wait_parse_timeout(optarg, &a->timeout_usec) < 0) {
                                log_error("Invalid --timeout '%s': expected seconds, a number "
                                          "with ms, s, sec, m, min, h or d, or infinity",
                                          optarg);
                                return -EINVAL;
                        }
                        a->wait_options_given = true;
                        break;
                case ARG_RUNTIME_DIR:
                        a->runtime_dir = optarg;
                        break;
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("ebs-hydratectl %s\n", EBS_HYDRATE_VERSION);
                        return 0;
                default:
                        return -EINVAL; /* getopt printed the reason */
                }
        return 1;
}

static const Command commands[] = {
        {"status", "[TARGET]", 0, 1, verb_status},
        {"pause", "TARGET", 1, 1, verb_pause},
        {"resume", "TARGET", 1, 1, verb_resume},
        {"set-rate-limit", "TARGET RATE", 2, 2, verb_set_rate_limit},
        {"forget", "VOLUME", 1, 1, verb_forget},
        {"metrics", "", 0, 0, verb_metrics},
        {"wait", "TARGET...", 1, UINT_MAX, verb_wait},
};

/*
 * A verb's result as the program's exit status, the one place that decides it: a negative
 * errno is a failure (said where it happened: a refusal to write a file is one too, not a
 * denied permission); the documented statuses a verb decides itself are kept.
 */
static int exit_status(int r) {
        static const int documented[] = {
                EBS_HYDRATE_EXIT_SUCCESS,      EBS_HYDRATE_EXIT_FAILURE,
                EBS_HYDRATE_EXIT_USAGE,        EBS_HYDRATE_EXIT_NOPERM,
                EBS_HYDRATE_EXIT_WAIT_SHORT,   EBS_HYDRATE_EXIT_WAIT_TIMEOUT,
                EBS_HYDRATE_EXIT_WAIT_UNKNOWN,
        };

        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(documented); i++)
                if (r == documented[i])
                        return r;
        return EBS_HYDRATE_EXIT_FAILURE;
}

static int dispatch(const CtlArgs *a, int argc, char **argv) {
        static char *no_args[] = {NULL};
        const char *name = argc > 0 ? argv[0] : "status";
        unsigned n_args = argc > 0 ? (unsigned)argc - 1 : 0;

        for (size_t i = 0; i < ELEMENTSOF(commands); i++) {
                const Command *c = &commands[i];

                if (!streq_ptr(c->name, name))
                        continue;
                if (a->output && c->run != verb_metrics) {
                        log_error("--output is for metrics only (see --help)");
                        return EBS_HYDRATE_EXIT_USAGE;
                }
                if (a->output && (!a->output[0] || a->output[strlen(a->output) - 1] == '/')) {
                        log_error("--output=%s: not a file name (a directory's name ends in /)",
                                  a->output);
                        return EBS_HYDRATE_EXIT_USAGE;
                }
                if (a->wait_options_given && c->run != verb_wait) {
                        log_error("--phase and --timeout are for wait only (see --help)");
                        return EBS_HYDRATE_EXIT_USAGE;
                }
                if (n_args < c->min_args || n_args > c->max_args) {
                        log_error("Usage: ebs-hydratectl [OPTIONS] %s%s%s (see --help)", name,
                                  c->synopsis[0] ? " " : "", c->synopsis);
                        return EBS_HYDRATE_EXIT_USAGE;
                }
                return exit_status(c->run(a, argc > 0 ? argv + 1 : no_args));
        }
        log_error("Unknown command '%s' (see --help)", name);
        return EBS_HYDRATE_EXIT_USAGE;
}

int main(int argc, char *argv[]) {
        CtlArgs a = {
                .legend = true,
                .state_dir = EBS_HYDRATE_STATE_DIR,
                .runtime_dir = EBS_HYDRATE_RUNTIME_DIR,
                .phase = RECORD_PHASE_DONE,
                .timeout_usec = UINT64_MAX,
        };
        int r;

        log_setup("ebs-hydratectl");
        r = parse_argv(argc, argv, &a);
        if (r <= 0)
                return r == 0 ? EBS_HYDRATE_EXIT_SUCCESS : EBS_HYDRATE_EXIT_USAGE;
        return dispatch(&a, argc - optind, argv + optind);
}
