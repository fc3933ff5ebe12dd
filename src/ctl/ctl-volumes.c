/* SPDX-License-Identifier: MIT */
/*
 * The volumes ebs-hydratectl shows and steers: running instances, asked over the system bus,
 * and the volumes of the state directory, read from their state files; and which of them a
 * TARGET names.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#include "ctl-bus.h"
#include "ctl-verbs.h"
#include "device.h"
#include "findings.h"
#include "identity.h"
#include "log.h"
#include "state.h"
#include "sysfs.h"
#include "time-util.h"
#include "util.h"

int ctl_require_root(const char *command) {
        if (geteuid() == 0)
                return 0;
        log_error("%s: must be run as root", command);
        return EBS_HYDRATE_EXIT_NOPERM;
}

/* "/dev/disk/by-id/x" -> "/dev/nvme1n1"; NULL for a target that is not a path. */
static char *resolve_target_path(const char *target) {
        char *resolved;

        if (!strchr(target, '/'))
                return NULL;
        resolved = realpath(target, NULL);
        return resolved ?: strdup(target);
}

/* Running instances, if the bus can be asked; otherwise a note, and none. */
static int collect_running(VolumeList *l) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        r = sd_bus_open_system(&bus);
        if (r < 0) {
                log_warning_errno(r, "Cannot query running instances on the system bus: %m; "
                                     "showing volumes from state files only");
                return 0;
        }
        r = ctl_bus_list_volumes(bus, l, &error);
        if (r == -ENOMEM)
                return log_error_errno(r, "Out of memory");
        if (r < 0)
                log_warning("Cannot list running instances on the system bus: %s; showing "
                            "volumes from state files only",
                            sd_bus_error_is_set(&error) ? error.message : strerror(-r));
        return 0;
}

static int collect_one_stored(const char *dir, int dir_fd, const char *key, VolumeList *l) {
        _cleanup_(state_freep) HydrateState *s = NULL;
        VolumeInfo v = {};
        int r;

        r = state_load(dir_fd, key, &s);
        if (r == -ENOENT)
                return 0; /* removed since readdir() */
        if (r == -EACCES)
                return r;  /* said once for the whole directory */
        if (r == -EPERM) { /* the daemon sets such a file aside and never trusts it: nor do we */
                log_warning("Skipping %s/%s%s: owned by another user than the directory's, not "
                            "a state file ebs-hydrated wrote",
                            dir, key, STATE_SUFFIX);
                return 0;
        }
        if (r == -ENOMEM)
                return log_error_errno(r, "Out of memory");
        if (r < 0) {
                log_warning_errno(r, "Skipping %s/%s%s: not a usable state file (%m)", dir, key,
                                  STATE_SUFFIX);
                return 0;
        }
        if (!streq_ptr(s->key, key))
                log_warning("%s/%s%s holds the state of '%s', not of '%s': shown as %s; "
                            "ebs-hydrated sets it aside",
                            dir, key, STATE_SUFFIX, s->key, key, VOLUME_STATE_MISMATCHED);
        r = volume_info_from_state(key, s, &v);
        if (r >= 0)
                r = volume_list_add(l, &v);
        if (r < 0) {
                volume_info_done(&v);
                return log_error_errno(r, "Out of memory");
        }
        return 0;
}

static void warn_unreadable(const CtlArgs *a, const char *what, int error) {
        if (error == -ENOENT && !a->state_dir_given)
                return; /* nothing was ever hydrated here */
        if ((error == -EACCES || error == -EPERM) && geteuid() != 0)
                log_warning_errno(error,
                                  "Cannot read %s%s: %m; volumes not running are not shown "
                                  "(run as root)",
                                  what, a->state_dir);
        else
                log_warning_errno(error, "Cannot read %s%s: %m; volumes not running are not shown",
                                  what, a->state_dir);
}

/* Volumes known from their state files. An unreadable directory is a note, not an error. */
static int collect_stored(const CtlArgs *a, VolumeList *l) {
        _cleanup_(closedirp) DIR *d = opendir(a->state_dir);
        char key[STATE_KEY_MAX + 1];
        int r, denied = 0;

        if (!d) {
                warn_unreadable(a, "", -errno);
                return 0;
        }
        while ((r = state_dir_next(d, key)) > 0) {
                r = collect_one_stored(a->state_dir, dirfd(d), key, l);
                if (r == -EACCES)
                        denied = r;
                else if (r < 0)
                        return r;
        }
        if (r < 0)
                log_warning_errno(r, "Cannot read %s: %m; the list may be incomplete",
                                  a->state_dir);
        if (denied < 0)
                warn_unreadable(a, "the state files in ", denied);
        return 0;
}

/* What AWS said of each volume that is not running, from ebs-hydrate-aws's findings (believed
 * as the daemon believes them; a running one says it on the bus, as it acts on it: following
 * or not, Aws=no); a volume without findings, or with findings not to be believed, shows none. */
static void add_aws(VolumeList *l) {
        _cleanup_close_ int dir_fd = open(findings_dir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        uid_t uid = findings_helper_uid();
        AwsFindings f;

        if (dir_fd < 0)
                return;
        for (size_t i = 0; i < l->n; i++) {
                VolumeInfo *v = &l->items[i];

                if (v->running || !state_key_valid(v->volume_id, strlen(v->volume_id)) ||
                    findings_load(dir_fd, v->volume_id, uid, &f) < 0)
                        continue;
                (void)snprintf(v->aws, sizeof(v->aws), "%s", findings_verdict(&f));
                (void)snprintf(v->aws_snapshot_id, sizeof(v->aws_snapshot_id), "%s", f.snapshot_id);
                v->aws_progress = f.initialization_progress >= 0 && f.initialization_progress <= 100
                                          ? f.initialization_progress
                                          : -1;
                v->aws_eta_seconds = findings_eta_at(&f, now_usec(CLOCK_REALTIME));
        }
}

int ctl_collect_volumes(const CtlArgs *a, VolumeList **ret) {
        _cleanup_(volume_list_freep) VolumeList *l = NULL, *stored = NULL;
        int r;

        if (volume_list_new(&l) < 0 || volume_list_new(&stored) < 0)
                return log_error_errno(-ENOMEM, "Out of memory");
        r = collect_running(l);
        if (r >= 0)
                r = collect_stored(a, stored);
        if (r < 0)
                return r;
        if (volume_list_merge(l, stored) < 0)
                return log_error_errno(-ENOMEM, "Out of memory");
        add_aws(l);
        volume_list_sort(l);
        *ret = TAKE_PTR(l);
        return 0;
}

/*
 * The state key of the volume on block device @target (path or kernel name), found as the
 * daemon finds it: so that a volume that is not running can still be named by its device.
 */
static int key_of_device(const char *target, char *ret_key, size_t size) {
        const char *root = sysfs_root();
        _cleanup_free_ char *path = device_path_from_arg(target);
        _cleanup_close_ int fd = -1;
        char name[KERNEL_NAME_MAX] = "", whole[KERNEL_NAME_MAX] = "";
        DeviceIdentity id;
        int r;

        if (!path)
                return -ENOMEM;
        fd = open(path, O_PATH | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = device_kernel_name(root, fd, name, whole);
        if (r == -EISDIR) /* a partition: its disk is the volume */
                memcpy(name, whole, sizeof(name));
        else if (r < 0)
                return r;
        r = identity_resolve(root, name, &id);
        if (r < 0)
                return r;
        return identity_state_key(&id, ret_key, size);
}

int ctl_select_volumes(VolumeList *l, const char *target, bool by_device_identity) {
        _cleanup_free_ char *resolved = resolve_target_path(target);
        char key[STATE_KEY_MAX + 1];
        size_t n = 0;

        if (strchr(target, '/') && !resolved)
                return -ENOMEM;
        for (size_t i = 0; i < l->n; i++)
                n += volume_info_matches(&l->items[i], target, resolved);
        if (n == 0 && by_device_identity && key_of_device(target, key, sizeof(key)) >= 0)
                return (int)volume_list_filter(l, key, NULL);
        return (int)volume_list_filter(l, target, resolved);
}

int ctl_flush_stdout(void) {
        errno = 0;
        if (fflush(stdout) != 0 || ferror(stdout))
                return log_error_errno(errno > 0 ? -errno : -EIO, "Failed to write output: %m");
        return 0;
}
