/* SPDX-License-Identifier: MIT */
/*
 * What ebs-hydratectl knows about a volume, whether it comes from a running daemon on the bus
 * or from a state file left behind, and the list operations its commands need: merge (a running
 * instance hides its own state file), filter by a target the user typed, sort. Pure: no I/O.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ebs-hydrate/bus.h>
#include "state.h"
#include "util.h"

/* States a running daemon reports (D-Bus State), plus "stopped" for a state file of a volume
 * that is not complete and not running, and "mismatched" for a state file that holds another
 * volume's state (KEY.state whose contents name another key): it has no figures. */
#define VOLUME_STATE_HYDRATING EBS_HYDRATE_STATE_HYDRATING
#define VOLUME_STATE_PAUSED EBS_HYDRATE_STATE_PAUSED
#define VOLUME_STATE_COMPLETED EBS_HYDRATE_STATE_COMPLETED
#define VOLUME_STATE_FAILED EBS_HYDRATE_STATE_FAILED
#define VOLUME_STATE_STOPPED EBS_HYDRATE_STATE_STOPPED
#define VOLUME_STATE_MISMATCHED EBS_HYDRATE_STATE_MISMATCHED

/* Phases as the metrics name them: a running daemon's (D-Bus Phase), and "unknown" for what
 * only a stopped run knew (a state file does not say which stage a run stopped in). */
#define VOLUME_PHASE_METADATA EBS_HYDRATE_PHASE_METADATA
#define VOLUME_PHASE_HOT_PATHS EBS_HYDRATE_PHASE_HOT_PATHS
#define VOLUME_PHASE_USED EBS_HYDRATE_PHASE_USED
#define VOLUME_PHASE_FREE EBS_HYDRATE_PHASE_FREE
#define VOLUME_PHASE_DONE EBS_HYDRATE_PHASE_DONE
#define VOLUME_PHASE_UNKNOWN EBS_HYDRATE_PHASE_UNKNOWN

/* One stage of a running daemon's plan (D-Bus PhaseProgress). */
typedef struct VolumePhase {
        char *name; /* metadata, hot-paths, used, free, or whatever a newer daemon reports */
        uint64_t done_bytes;
        uint64_t total_bytes;
} VolumePhase;

typedef struct VolumeInfo {
        char *volume_id;   /* the state key: EBS volume id or another stable key */
        char *device;      /* /dev/nvme1n1; "" when not running */
        char *device_name; /* block-device mapping such as sdf; "" when unknown */
        char *kernel_name; /* nvme1n1, from the bus name; "" when not running */
        char *state;       /* one of VOLUME_STATE_*, or whatever a newer daemon reports */
        uint64_t size_bytes;
        uint64_t hydrated_bytes;
        uint64_t rate_bytes_per_second; /* 0 when not running */
        uint64_t eta_seconds;           /* 0 when unknown or not hydrating */
        uint64_t error_count;           /* unreadable ranges recorded */
        uint64_t empty_bytes; /* of size_bytes: the snapshot stores nothing of them (D-Bus) */
        char *phase;          /* D-Bus Phase: the stage being read, "done"; "" unknown */
        VolumePhase *phases;  /* D-Bus PhaseProgress; NULL when not running */
        size_t n_phases;
        size_t n_phases_allocated;
        bool running;
        bool free_space_cold; /* completed by Mode=used: free space was left unread */
        bool yielding;        /* D-Bus Yielding: giving way to other I/O on the volume */
        /* What AWS said (the volume's findings file, ebs-hydrate/findings.h): */
        char aws[32];             /* EBS_HYDRATE_AWS_*, "" when nothing is known */
        char aws_snapshot_id[64]; /* "" unknown */
        int64_t aws_progress;     /* AWS's initialization, percent; -1 unknown */
        int64_t aws_eta_seconds;  /* -1 unknown */
} VolumeInfo;

typedef struct VolumeList {
        VolumeInfo *items;
        size_t n;
        size_t allocated;
} VolumeList;

/*
 * volume_info_init() - set the strings of @ret (copies; NULL counts as ""), numbers zero.
 * Returns 0 or -ENOMEM (with nothing to free).
 */
int volume_info_init(VolumeInfo *ret, const char *volume_id, const char *device,
                     const char *device_name, const char *kernel_name, const char *state);
/* volume_info_done() - free the strings of @v and zero it. */
void volume_info_done(VolumeInfo *v);
/* volume_info_add_phase() - append a stage to @v->phases. 0 or -ENOMEM. */
int volume_info_add_phase(VolumeInfo *v, const char *name, uint64_t done_bytes,
                          uint64_t total_bytes);

/*
 * volume_info_from_state() - describe the volume @key that only has a state file, @s read from
 * "@key.state": the file name says whose state it is, as for ebs-hydrated. "completed" if the
 * state says so (every chunk read, or a Mode=used run finished: then free_space_cold), "failed"
 * if every chunk was read or recorded unreadable, else "stopped"; hydrated bytes from the chunk
 * map, errors = unreadable ranges. If @s names another key, "mismatched" and no figures (all 0):
 * the daemon sets such a file aside, and its figures are another volume's.
 */
int volume_info_from_state(const char *key, const HydrateState *s, VolumeInfo *ret);

/*
 * volume_info_has_figures() - are the size, hydrated bytes and errors of @v worth showing? Not
 * for a mismatched state file.
 */
bool volume_info_has_figures(const VolumeInfo *v);

/*
 * volume_info_phase() - the phase of @v for the metrics: a running volume's D-Bus Phase as it is
 * (also one a newer daemon reports), "unknown" if it reports none; for a volume known from its
 * state file, "done" if it is completed (also by a Mode=used run), else "unknown".
 */
const char *volume_info_phase(const VolumeInfo *v);

/*
 * volume_info_permille() - hydrated share in tenths of a percent, rounded down: 1000 only when
 * every byte is hydrated, as everywhere else in the project; 0 without figures.
 */
unsigned volume_info_permille(const VolumeInfo *v);

/*
 * volume_info_matches() - does @target name @v? A volume is named by its volume id (state
 * key), by its kernel name (nvme1n1) or by a device path: @resolved_path is @target with
 * symbolic links resolved (realpath), or NULL when @target is not a path.
 */
bool volume_info_matches(const VolumeInfo *v, const char *target, const char *resolved_path);

int volume_list_new(VolumeList **ret);
VolumeList *volume_list_free(VolumeList *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(VolumeList *, volume_list_free)

/* volume_list_add() - move *@v into @l (leaving @v zeroed). 0 or -ENOMEM (@v untouched). */
int volume_list_add(VolumeList *l, VolumeInfo *v);
/* volume_list_find() - the first entry with this volume id, or NULL. */
VolumeInfo *volume_list_find(const VolumeList *l, const char *volume_id);

/*
 * volume_list_merge() - move the entries of @stored (volumes known from their state files) into
 * @l, except those @l already has (a running instance wins). @stored is left empty.
 */
int volume_list_merge(VolumeList *l, VolumeList *stored);
/* volume_list_sort() - by volume id, then kernel name. */
void volume_list_sort(VolumeList *l);
/* volume_list_filter() - keep the entries that @target names (see volume_info_matches()). */
size_t volume_list_filter(VolumeList *l, const char *target, const char *resolved_path);
