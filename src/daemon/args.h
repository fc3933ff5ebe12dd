/* SPDX-License-Identifier: MIT */
/*
 * ebs-hydrated's command line: what it asks for, parsed and checked. Nothing here touches the
 * device.
 */
#pragma once

#include <stdbool.h>

#include "config.h"

typedef enum ProgressMode { PROGRESS_AUTO, PROGRESS_ALWAYS, PROGRESS_NEVER } ProgressMode;

typedef struct Args {
        const char *device;
        const char *state_dir;
        const char *config_dir;
        const char *state_key;
        ProgressMode progress;
        bool no_bus;
        bool set_queue_depth, set_block_size, set_rate_limit, set_mode, set_yield, set_aws;
        HydrateSettings cli; /* only the fields flagged above are meaningful */
} Args;

/*
 * args_parse() - fill @a from argv (its strings are borrowed). Prints --help and --version.
 * Returns 1 to run, 0 to exit successfully (--help, --version), -EINVAL on bad usage (logged).
 */
int args_parse(int argc, char *argv[], Args *a);

/* args_apply() - the settings given on the command line override those of the configuration. */
void args_apply(const Args *a, HydrateSettings *settings);
