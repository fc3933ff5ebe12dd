/* SPDX-License-Identifier: MIT */
/*
 * What a run needs before it reads, each found from the command line and the system and checked:
 * DEVICE, opened; the name of its checkpoint; its settings; the state directory. Each step logs
 * why it failed and returns -errno, which report_exit_status_errno() turns into the exit status.
 */
#pragma once

#include <stddef.h>

#include "args.h"
#include "config.h"
#include "device.h"
#include "identity.h"

int inputs_device(const Args *a, const char *sysfs_root, BlockDevice *ret);
int inputs_state_key(const Args *a, const DeviceIdentity *id, char *key, size_t size);
int inputs_settings(const Args *a, const DeviceIdentity *id, HydrateSettings *ret);

/*
 * inputs_runtime_dir() - create (0755) and open the directory of the volume records that
 * "ebs-hydratectl wait" follows: $RUNTIME_DIRECTORY (the unit's RuntimeDirectory=), else
 * EBS_HYDRATE_RUNTIME_DIR. It must be ours (or we root) and writable by its owner alone: whoever
 * else could write there could tell a waiting service that a volume is hydrated. Returns its
 * descriptor (and its path in *@ret_path, unless NULL), or -errno after a warning: a run
 * without records still hydrates.
 */
int inputs_runtime_dir(char **ret_path);

/* inputs_state_dir_path() - --state-dir, else $STATE_DIRECTORY, else the default. */
int inputs_state_dir_path(const Args *a, char **ret_path);

/* inputs_state_dir() - create (0700) and open the state directory, checked to be ours alone.
 * Returns its descriptor and its path in *@ret_path. */
int inputs_state_dir(const Args *a, char **ret_path);
