/* SPDX-License-Identifier: MIT */
/*
 * ebs-hydratectl pause, resume, set-rate-limit (a running instance, over the bus) and forget
 * (a volume's state file, under its lock).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "config.h"
#include "ctl-bus.h"
#include "ctl-verbs.h"
#include "log.h"
#include "state.h"
#include "util.h"

static int open_bus(sd_bus **ret) {
        int r = sd_bus_open_system(ret);

        if (r < 0)
                return log_error_errno(r, "Cannot connect to the system bus: %m");
        return 0;
}

/* The one running instance @target names, into *@ret. Logs why not. */
static int find_running(sd_bus *bus, const char *target, VolumeInfo *ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(volume_list_freep) VolumeList *l = NULL;
        int r;

        if (volume_list_new(&l) < 0)
                return log_error_errno(-ENOMEM, "Out of memory");
        r = ctl_bus_list_volumes(bus, l, &error);
        if (r < 0)
                return log_error_errno(r, "Cannot list running instances on the system bus: %s",
                                       sd_bus_error_is_set(&error) ? error.message : strerror(-r));
        r = ctl_select_volumes(l, target, false);
        if (r < 0)
                return log_error_errno(r, "Out of memory");
        if (r == 0)
                return log_error_errno(-ENOENT,
                                       "'%s' is not being hydrated right now: no running "
                                       "ebs-hydrated has this volume id, kernel name or device",
                                       target);
        if (r > 1)
                return log_error_errno(-ENOTUNIQ,
                                       "'%s' names %d running instances; name one by "
                                       "its kernel name",
                                       target, r);
        *ret = l->items[0];
        l->n = 0; /* moved out */
        return 0;
}

/* A method call that failed with @r: the daemon refusing the caller is EBS_HYDRATE_EXIT_NOPERM. */
static int bus_call_result(int r, const sd_bus_error *error) {
        return sd_bus_error_has_name(error, SD_BUS_ERROR_ACCESS_DENIED) ? EBS_HYDRATE_EXIT_NOPERM
                                                                        : r;
}

/* Calls @method on the instance @target names; the rate is used by SetRateLimit only. */
static int call_on_target(const char *command, const char *target, const char *method,
                          uint64_t rate) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        VolumeInfo v;
        int r;

        r = open_bus(&bus);
        if (r >= 0)
                r = find_running(bus, target, &v);
        if (r < 0)
                return r;
        if (streq_ptr(method, HYDRATE_BUS_METHOD_SET_RATE_LIMIT))
                r = ctl_bus_call(bus, v.kernel_name, method, &error, "t", rate);
        else
                r = ctl_bus_call(bus, v.kernel_name, method, &error, NULL);
        if (r < 0 && sd_bus_error_is_set(&error))
                log_error("%s %s (%s): %s: %s", command, v.volume_id, v.kernel_name, error.name,
                          strempty(error.message));
        else if (r < 0)
                log_error_errno(r, "%s %s (%s): %m", command, v.volume_id, v.kernel_name);
        volume_info_done(&v);
        return r < 0 ? bus_call_result(r, &error) : 0;
}

int verb_pause(const CtlArgs *a, char **args) {
        int r = ctl_require_root("pause");

        return r != 0 ? r : call_on_target("pause", args[0], HYDRATE_BUS_METHOD_PAUSE, 0);
}

int verb_resume(const CtlArgs *a, char **args) {
        int r = ctl_require_root("resume");

        return r != 0 ? r : call_on_target("resume", args[0], HYDRATE_BUS_METHOD_RESUME, 0);
}

int verb_set_rate_limit(const CtlArgs *a, char **args) {
        uint64_t rate;
        int r;

        if (hydrate_parse_rate_limit(args[1], &rate) < 0) {
                log_error("Invalid RATE '%s': expected %s", args[1], HYDRATE_RATE_LIMIT_SYNTAX);
                return EBS_HYDRATE_EXIT_USAGE;
        }
        r = ctl_require_root("set-rate-limit");
        return r != 0 ? r
                      : call_on_target("set-rate-limit", args[0], HYDRATE_BUS_METHOD_SET_RATE_LIMIT,
                                       rate);
}

/* The kernel name of the running instance hydrating @key, for a better message; quiet. */
static char *running_kernel_name(const char *key) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(volume_list_freep) VolumeList *l = NULL;
        const VolumeInfo *v;

        if (sd_bus_open_system(&bus) < 0 || volume_list_new(&l) < 0 ||
            ctl_bus_list_volumes(bus, l, NULL) < 0)
                return NULL;
        v = volume_list_find(l, key);
        return v ? strdup(v->kernel_name) : NULL;
}

static int log_volume_busy(const CtlArgs *a, const char *key) {
        _cleanup_free_ char *kernel_name = running_kernel_name(key);

        if (kernel_name)
                log_error("%s is being hydrated right now (ebs-hydrate@%s.service running); "
                          "stop it first",
                          key, kernel_name);
        else
                log_error("%s is being hydrated right now (an ebs-hydrated process holds "
                          "%s/%s.lock); stop it first",
                          key, a->state_dir, key);
        return -EBUSY;
}

static int forget_state(const CtlArgs *a, int dir_fd, const char *key) {
        _cleanup_free_ char *name = state_file_name(key);
        _cleanup_close_ int lock_fd = -1;

        if (!name)
                return log_error_errno(-ENOMEM, "Out of memory");
        /* Look before locking: state_lock() creates the lock file, even for a key with no state. */
        if (faccessat(dir_fd, name, F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno == ENOENT) {
                        log_error("No volume '%s': %s has no state for it", key, a->state_dir);
                        return -ENOENT;
                }
                return log_error_errno(-errno, "Cannot access %s/%s: %m", a->state_dir, name);
        }
        lock_fd = state_lock(dir_fd, key);
        if (lock_fd == -EBUSY)
                return log_volume_busy(a, key);
        if (lock_fd == -ELOOP) {
                log_error("Refusing to lock the state of %s: %s/%s.lock is a symbolic link "
                          "or not a regular file; remove it",
                          key, a->state_dir, key);
                return -ELOOP;
        }
        if (lock_fd < 0)
                return log_error_errno(lock_fd, "Cannot lock the state of %s: %m", key);
        if (unlinkat(dir_fd, name, 0) < 0)
                return log_error_errno(-errno, "Cannot remove %s/%s: %m", a->state_dir, name);
        (void)fsync(dir_fd);
        printf("Forgot %s: it will be hydrated from the start next time.\n", key);
        return ctl_flush_stdout();
}

int verb_forget(const CtlArgs *a, char **args) {
        const char *key = args[0];
        _cleanup_close_ int dir_fd = -1;
        int r;

        r = ctl_require_root("forget");
        if (r != 0)
                return r;
        if (!state_key_valid(key, strlen(key))) {
                log_error("No volume '%s': not a volume id or state key", key);
                return -ENOENT;
        }
        dir_fd = open(a->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0 && errno == ENOENT) {
                log_error("No volume '%s': %s does not exist", key, a->state_dir);
                return -ENOENT;
        }
        if (dir_fd < 0)
                return log_error_errno(-errno, "Cannot open %s: %m", a->state_dir);
        return forget_state(a, dir_fd, key);
}
