/* SPDX-License-Identifier: MIT */
/*
 * "ebs-hydratectl wait": block until volumes reach a stage of their hydration, following the
 * volume records ebs-hydrated writes in the runtime directory (record.h) with inotify, and the
 * state files too when they can be read (root). The verdict on one record and the parsing of
 * the options are pure, and tested; ctl_wait() does the watching.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h"

#include <ebs-hydrate/exit-status.h>

/* wait's statuses (ebs-hydrate/exit-status.h): EBS_HYDRATE_EXIT_USAGE as every ebs-hydratectl
 * command; _WAIT_SHORT: finished without reaching the phase (failed, unreadable ranges,
 * Mode=used for "complete", Enabled=no); _WAIT_TIMEOUT: --timeout passed, every target known;
 * _WAIT_UNKNOWN: a target that names no volume (at once if it never can). */

/* --phase's own names besides the stages' (ebs-hydratectl(1)). */
#define WAIT_PHASE_HOT "hot"
#define WAIT_PHASE_COMPLETE "complete"

typedef enum WaitVerdict {
        WAIT_PENDING,
        WAIT_REACHED,
        WAIT_SHORT, /* the run ended and the phase was not reached */
} WaitVerdict;

/*
 * wait_phase_from_string() - --phase: "metadata", "hot" (or "hot-paths"), "used", "complete".
 * "complete" is RECORD_PHASE_DONE. 0 or -EINVAL.
 */
int wait_phase_from_string(const char *s, RecordPhase *ret);
const char *wait_phase_to_string(RecordPhase p);

/*
 * wait_parse_timeout() - --timeout: seconds, or a number with a unit (ms, s, min, m, h, d), or
 * "infinity" (UINT64_MAX). 0 checks once. Returns 0 or -EINVAL.
 */
int wait_parse_timeout(const char *s, uint64_t *ret_usec);

/*
 * wait_verdict() - has the volume of @r reached @phase? A stage is reached when the run reads a
 * later one (the plan reads in order: metadata, hot paths, used, free) or the volume is
 * completed; "complete" needs every block read. Without a file-system-aware plan only the whole
 * device counts as "used", so metadata and hot paths are reached with it. WAIT_SHORT (and a
 * reason in *@ret_why) for a run that ended without it.
 */
WaitVerdict wait_verdict(const VolumeRecord *r, RecordPhase phase, const char **ret_why);

/* wait_name_matches() - does @name (volume id, kernel name, or mapping name such as sdf, xvdf,
 * /dev/sdf; /dev/ and a kernel name, for a disk not there yet) name the volume of @r? */
bool wait_name_matches(const VolumeRecord *r, const char *name);

typedef struct WaitOptions {
        RecordPhase phase;
        uint64_t timeout_usec; /* UINT64_MAX: none */
        const char *runtime_dir;
        const char *state_dir;
        bool progress; /* a progress line on stderr */
} WaitOptions;

/* ctl_wait() - wait for @targets; returns the exit status (0, EBS_HYDRATE_EXIT_WAIT_*, or 1 on
 * errors). */
int ctl_wait(const WaitOptions *o, char *const *targets, size_t n_targets);
