/* SPDX-License-Identifier: MIT */
/*
 * ebs-hydratectl's verbs, one file per family, and what they share: the parsed command line,
 * the exit statuses and the collecting of volumes (from the bus and the state directory).
 * ebs-hydratectl.c owns argv, --help and the verb table. A verb returns 0; a negative errno
 * after saying why (a failure); or a documented exit status it decided itself:
 * EBS_HYDRATE_EXIT_USAGE, EBS_HYDRATE_EXIT_NOPERM, or wait's (ctl-wait.h). ebs-hydratectl.c maps
 * that to the exit status, once.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <ebs-hydrate/exit-status.h>

#include "record.h"
#include "volinfo.h"

/* The exit statuses are EBS_HYDRATE_EXIT_* (ebs-hydrate/exit-status.h). */

typedef struct CtlArgs {
        bool json;
        bool legend;
        const char *state_dir;
        bool state_dir_given;
        const char *output; /* metrics --output=FILE */
        const char *runtime_dir;
        RecordPhase phase; /* wait */
        uint64_t timeout_usec;
        bool wait_options_given; /* --phase or --timeout: for wait only */
} CtlArgs;

/* ctl-volumes.c */
/* Every volume: running instances (if the bus can be asked) and the state directory's, sorted.
 * 0, or -errno after saying why. */
int ctl_collect_volumes(const CtlArgs *a, VolumeList **ret);
/* Keeps the volumes @target names (by id, kernel name or device path; with
 * @by_device_identity, also a device whose volume is not running). Returns how many, or
 * -ENOMEM. */
int ctl_select_volumes(VolumeList *l, const char *target, bool by_device_identity);
/* 0 as root; otherwise says @command needs root and returns EBS_HYDRATE_EXIT_NOPERM. */
int ctl_require_root(const char *command);
/* Flushes stdout: 0, or -errno after saying why (a full disk, a closed pipe). */
int ctl_flush_stdout(void);

/* verb-status.c */
int verb_status(const CtlArgs *a, char **args);
/* verb-metrics.c */
int verb_metrics(const CtlArgs *a, char **args);
/* verb-control.c */
int verb_pause(const CtlArgs *a, char **args);
int verb_resume(const CtlArgs *a, char **args);
int verb_set_rate_limit(const CtlArgs *a, char **args);
int verb_forget(const CtlArgs *a, char **args);
/* verb-wait.c */
int verb_wait(const CtlArgs *a, char **args);
