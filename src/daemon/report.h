/* SPDX-License-Identifier: MIT */
/*
 * Every phrasing of a hydration's progress and outcome: STATUS= (sd_notify), the summary line on
 * stdout, the journal record, the D-Bus State property and the exit status, so that they never
 * disagree (the same unreadable ranges, the same reason for a failure). Pure: each formats a
 * HydratorStatus.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <ebs-hydrate/exit-status.h>

#include "findings.h"
#include "hydrator.h"
#include "record.h"

/* Buffers for what report_*() words: a line of the journal, STATUS= or stdout (a key and a
 * device path included), the summary at the end (a few lines' worth), and a few words. */
#define REPORT_LINE_MAX 1024
#define REPORT_SUMMARY_MAX 2048
#define REPORT_WORDS_MAX 64

/* The exit statuses of ebs-hydrated are EBS_HYDRATE_EXIT_* (ebs-hydrate/exit-status.h). */

/*
 * report_status() - e.g. "vol-0123...: 42.1% hydrated (12.3 GiB of 29.3 GiB), 187 MiB/s, about
 * 3 min left" while hydrating, "vol-0123...: hydrated (29.3 GiB)" when complete. Returns buf.
 */
char *report_status(char *buf, size_t size, const HydratorStatus *st);

/*
 * report_status_mapping() - STATUS= while the file systems are mapped (the plan a placeholder,
 * st->plan.mapping), reading only what the mapping reads next: "...: 0.4% hydrated (of 1.0 TiB),
 * mapping the file systems", paused, or stopped there; @stalled_usec > 0 says the device holds
 * the reads (the mapping's or ours).
 */
char *report_status_mapping(char *buf, size_t size, const HydratorStatus *st,
                            uint64_t stalled_usec);

/*
 * report_started() - the journal's line when the reads start: "Hydrating /dev/nvme1n1
 * (vol-0123...) from 0.0%, queue depth auto (4 to 256), 1024 KiB reads", then ", rate limited",
 * ", Mode=used" and ", Yield=no" where they apply.
 */
char *report_started(char *buf, size_t size, const HydratorStatus *st, const char *key,
                     const char *devnode, const HydrateSettings *s);
/* report_start_failed() - the journal's line when the reader cannot start: "vol-0123...
 * (/dev/nvme1n1): hydration failed at 0.0%: cannot start: <the errno's words>; progress saved". */
char *report_start_failed(char *buf, size_t size, const HydratorStatus *st, const char *key,
                          const char *devnode, int error);
/* report_stopped_mapping() - a run stopped while the file systems were mapped, before it read:
 * STATUS= (@for_status; @stalled: the device still holds the mapping's reads), or the summary
 * line on stdout. */
char *report_stopped_mapping(char *buf, size_t size, const char *key, bool for_status,
                             bool stalled);
/* report_depth_at_end() - "vol-0123...: queue depth 29 at the end (auto, 57 changes; mean
 * latency 579.7 ms)", for QueueDepth=auto. */
char *report_depth_at_end(char *buf, size_t size, const HydratorStatus *st);

/* report_summary() - the line on stdout at the end of a run (without its newline). */
char *report_summary(char *buf, size_t size, const HydratorStatus *st);

/*
 * report_journal() - the record of how a run ended: its text in @buf, its MESSAGE_ID in
 * *@ret_message_id. Returns its syslog priority, or -ENODATA for a run that was stopped or whose
 * device went away (the lines that stopped it say so).
 */
int report_journal(char *buf, size_t size, const HydratorStatus *st, const char *devnode,
                   const char **ret_message_id);

/* report_exit_status() - EBS_HYDRATE_EXIT_* for a run that ended. */
int report_exit_status(const HydratorStatus *st);

/*
 * report_exit_status_errno() - the exit status of a run that could not start, from the -errno its
 * step returned: EBS_HYDRATE_EXIT_FAILURE for what may pass by itself (an I/O error, a full or
 * read-only file system, memory or descriptors, a lock held by another run: the unit restarts it),
 * and EBS_HYDRATE_EXIT_USAGE for what stays wrong until someone acts (no such device, not a block
 * device, a bad configuration, a state directory that is not one or not ours, a planted link: the
 * unit does not restart on it, so that it cannot loop).
 */
int report_exit_status_errno(int error);

/* report_bus_state() - the D-Bus State property: "hydrating", "paused", "completed", "failed". */
const char *report_bus_state(const HydratorStatus *st);

/* report_failure_reason() - why a run failed, in words (the errno's, or the hydrator's meaning). */
const char *report_failure_reason(int error);

/*
 * report_record() - what the volume record (record.h) says of a run in this state: STATE=,
 * PHASE= (the plan's stage; "metadata" while the file systems are mapped, "done" once complete),
 * the sizes, the unreadable ranges, and whether a completed Mode=used run left free space cold.
 * The identity fields of @r are left alone.
 */
void report_record(const HydratorStatus *st, VolumeRecord *r);

/* report_cold_free_bytes() - free space a Mode=used run leaves unread; 0 in full mode. */
uint64_t report_cold_free_bytes(const HydratorStatus *st);

/*
 * What AWS said (ebs-hydrate/findings.h). report_aws_nothing_cold(): why nothing of the volume is
 * cold, in @buf (REPORT_WORDS_MAX * 2 holds it), or NULL: "created empty: nothing to hydrate",
 * "restored with fast snapshot restore: nothing is cold", "AWS completed its initialization
 * (provisioned-rate)". report_aws_noted(): the journal's line for findings that change nothing
 * ("vol-...: AWS: restored from snap-0abc; hydrating"), or that say AWS could not be asked.
 * report_aws_completed(): "vol-...: complete without reading: <reason> (AWS)".
 */
const char *report_aws_nothing_cold(char *buf, size_t size, const AwsFindings *f);
/*
 * report_aws_initializing() - whether AWS itself initializes the volume (a provisioned rate,
 * initializing): then only metadata and hot paths are worth our reads. report_aws_following():
 * the journal's line when the run starts following AWS; report_aws_status(): STATUS= while it
 * follows ("vol-...: following AWS's initialization (provisioned rate 300 MiB/s): 42%, about
 * 30min left; metadata and hot paths read").
 */
bool report_aws_initializing(const AwsFindings *f);
char *report_aws_following(char *buf, size_t size, const char *key, const AwsFindings *f);
char *report_aws_status(char *buf, size_t size, const char *key, const AwsFindings *f);
char *report_aws_noted(char *buf, size_t size, const char *key, const AwsFindings *f);
char *report_aws_completed(char *buf, size_t size, const char *key, const char *reason);

/* report-progress.c: progress in flight. */
/* "vol-0123...: 42.1% hydrated (12.3 GiB of 29.3 GiB), 187 MiB/s, about 3 min left"; with
 * @volume_bytes (the snapshot's block list: @total_bytes is what it stores; 0: none) "(24.6 GiB
 * of 60.0 GiB stored in the snapshot; 500.0 GiB volume)". */
char *report_format_status(char *buf, size_t size, const char *key, uint64_t done_bytes,
                           uint64_t total_bytes, uint64_t volume_bytes, uint64_t rate);
/*
 * "[########............]  42.1%  12.3/29.3 GiB  187 MiB/s  ETA 3 min", never wider than @width
 * columns: the bar shrinks to 10, then the ETA, rate, amounts and bar go, the percentage stays. The
 * amounts are in the unit of the total (KiB, MiB, GiB or TiB).
 */
char *report_format_bar(char *buf, size_t size, unsigned width, uint64_t done_bytes,
                        uint64_t total_bytes, uint64_t rate);
