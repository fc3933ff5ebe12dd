/* SPDX-License-Identifier: MIT */
/*
 * The values that say where a volume's hydration is, the same on every interface: the D-Bus
 * properties State and Phase (bus.h), the volume record's STATE= and PHASE= (record.h),
 * `ebs-hydratectl status --json` and the metrics' state and phase labels (metrics.h).
 * Scripts compare against these strings: they do not change within a major version.
 */
#ifndef EBS_HYDRATE_VOLUME_H
#define EBS_HYDRATE_VOLUME_H

/* State: what the instance is doing. The bus knows the first four (an instance that is on
 * the bus is running); a record also says how a run ended without completing. */
#define EBS_HYDRATE_STATE_HYDRATING "hydrating"
#define EBS_HYDRATE_STATE_PAUSED "paused"
#define EBS_HYDRATE_STATE_COMPLETED "completed"
#define EBS_HYDRATE_STATE_FAILED "failed"
#define EBS_HYDRATE_STATE_STOPPED "stopped"   /* records only: stopped before the end */
#define EBS_HYDRATE_STATE_DISABLED "disabled" /* records only: Enabled=no for the volume */
/* status and metrics only: the state file holds another volume's state */
#define EBS_HYDRATE_STATE_MISMATCHED "mismatched"

/* Phase: the stage of the plan being read, in the order they are read, then "done". */
#define EBS_HYDRATE_PHASE_METADATA "metadata"   /* file-system metadata (and while mapping) */
#define EBS_HYDRATE_PHASE_HOT_PATHS "hot-paths" /* the blocks under HotPaths= */
#define EBS_HYDRATE_PHASE_USED "used"           /* the rest of the used blocks */
#define EBS_HYDRATE_PHASE_FREE "free"           /* free space (Mode=full) */
#define EBS_HYDRATE_PHASE_DONE "done"           /* nothing left to read */
/* status and metrics only: not running and not completed */
#define EBS_HYDRATE_PHASE_UNKNOWN "unknown"

#endif
