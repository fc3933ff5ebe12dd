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

#include "hydrator.h"
#include "record.h"

/* Exit statuses of ebs-hydrated (docs/design.md). */
enum {
        REPORT_EXIT_COMPLETE = 0,
        REPORT_EXIT_FAILED = 1,
        REPORT_EXIT_USAGE = 2,
        REPORT_EXIT_UNREADABLE = 3,
        REPORT_EXIT_DETACHED = 4,
};

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

/* report_summary() - the line on stdout at the end of a run (without its newline). */
char *report_summary(char *buf, size_t size, const HydratorStatus *st);

/*
 * report_journal() - the record of how a run ended: its text in @buf, its MESSAGE_ID in
 * *@ret_message_id. Returns its syslog priority, or -ENODATA for a run that was stopped or whose
 * device went away (the lines that stopped it say so).
 */
int report_journal(char *buf, size_t size, const HydratorStatus *st, const char *devnode,
                   const char **ret_message_id);

/* report_exit_status() - REPORT_EXIT_* for a run that ended. */
int report_exit_status(const HydratorStatus *st);

/*
 * report_exit_status_errno() - the exit status of a run that could not start, from the -errno its
 * step returned: REPORT_EXIT_FAILED for what may pass by itself (an I/O error, a full or read-only
 * file system, memory or descriptors, a lock held by another run: the unit restarts it), and
 * REPORT_EXIT_USAGE for what stays wrong until someone acts (no such device, not a block device,
 * a bad configuration, a state directory that is not one or not ours, a planted link: the unit
 * does not restart on it, so that it cannot loop).
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
