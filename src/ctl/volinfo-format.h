/* SPDX-License-Identifier: MIT */
/*
 * The three renderings of a volume list that ebs-hydratectl prints: a table for people, JSON for
 * scripts, and the Prometheus text exposition format for node_exporter's textfile collector.
 * Pure functions writing to a FILE, so tests read the output back from memory.
 */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "volinfo.h"

/*
 * volume_list_print_table() - one row per volume under a header line (unless !@legend):
 * VOLUME DEVICE MAPPING STATE HYDRATED SIZE RATE ETA ERRORS PHASE; "-" for what is unknown or
 * does not apply (HYDRATED, SIZE and ERRORS of a volume without figures too). An empty list
 * prints "No volumes." (nothing without @legend).
 * Returns 0, or -EIO if writing to @f failed.
 */
int volume_list_print_table(FILE *f, const VolumeList *l, bool legend);

/*
 * volume_list_print_json() - {"volumes":[{"volume_id":...,"running":true}, ...]} on one line,
 * keys in the order documented in ebs-hydratectl(1). Returns 0, -ENOMEM or -EIO.
 */
int volume_list_print_json(FILE *f, const VolumeList *l);

/*
 * volume_list_print_metrics() - Prometheus text format 0.0.4: each ebs_hydrate_volume_* gauge
 * family once with # HELP and # TYPE, one sample per volume labelled volume_id, device and
 * device_name; ebs_hydrate_volume_state and ebs_hydrate_volume_phase are one-hot over the
 * states and the phases (volume_info_phase()). A volume without figures (a mismatched state
 * file) has only its running, state and phase samples. Returns 0 or -EIO.
 */
int volume_list_print_metrics(FILE *f, const VolumeList *l);
