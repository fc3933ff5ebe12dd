/* SPDX-License-Identifier: MIT */
/*
 * The Prometheus metrics of `ebs-hydratectl metrics` (for node_exporter's textfile collector):
 * every one a gauge, one sample per volume, labelled EBS_HYDRATE_METRIC_LABEL_VOLUME_ID,
 * _DEVICE and _DEVICE_NAME; the two state sets add their own label, one sample per value
 * (volume.h), 1 for the current one. Alert rules and dashboards use these names.
 */
#ifndef EBS_HYDRATE_METRICS_H
#define EBS_HYDRATE_METRICS_H

#include <ebs-hydrate/volume.h>

#define EBS_HYDRATE_METRIC_SIZE_BYTES "ebs_hydrate_volume_size_bytes"
#define EBS_HYDRATE_METRIC_HYDRATED_BYTES "ebs_hydrate_volume_hydrated_bytes"
#define EBS_HYDRATE_METRIC_EMPTY_BYTES "ebs_hydrate_volume_empty_bytes"
#define EBS_HYDRATE_METRIC_RATE "ebs_hydrate_volume_rate_bytes_per_second"
#define EBS_HYDRATE_METRIC_ETA_SECONDS "ebs_hydrate_volume_eta_seconds"
#define EBS_HYDRATE_METRIC_ERRORS "ebs_hydrate_volume_errors"
#define EBS_HYDRATE_METRIC_RUNNING "ebs_hydrate_volume_running"
#define EBS_HYDRATE_METRIC_STATE                                         \
        "ebs_hydrate_volume_state" /* label "state": EBS_HYDRATE_STATE_* \
                                    */
#define EBS_HYDRATE_METRIC_PHASE                                         \
        "ebs_hydrate_volume_phase" /* label "phase": EBS_HYDRATE_PHASE_* \
                                    */

/* What AWS said (ebs-hydrate/findings.h), only for volumes AWS said something of: a state set
 * over the EBS_HYDRATE_AWS_* words, and AWS's own initialization in percent where it gives one. */
#define EBS_HYDRATE_METRIC_AWS "ebs_hydrate_volume_aws"
#define EBS_HYDRATE_METRIC_AWS_PROGRESS "ebs_hydrate_volume_aws_initialization_percent"
#define EBS_HYDRATE_METRIC_LABEL_AWS "aws"
#define EBS_HYDRATE_METRIC_LABEL_VOLUME_ID "volume_id"
#define EBS_HYDRATE_METRIC_LABEL_DEVICE "device"
#define EBS_HYDRATE_METRIC_LABEL_DEVICE_NAME "device_name"
#define EBS_HYDRATE_METRIC_LABEL_STATE "state"
#define EBS_HYDRATE_METRIC_LABEL_PHASE "phase"

#endif
