/* SPDX-License-Identifier: MIT */
/* What a run needs before it reads: DEVICE, its checkpoint's name, its settings, the state
 * directory (see run-inputs.h). */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build-config.h"
#include "log.h"
#include "run-inputs.h"
#include "state.h"
#include "util.h"

int inputs_device(const Args *a, const char *sysfs_root, BlockDevice *ret) {
        _cleanup_free_ char *path = NULL, *error = NULL;
        char whole[KERNEL_NAME_MAX] = "";
        int r;

        if (a->device[0] == '\0')
                return log_error_errno(-EINVAL, "DEVICE is empty: give a path or a kernel name");
        path = device_path_from_arg(a->device);
        if (!path)
                return log_error_errno(-ENOMEM, "Out of memory");
        r = block_device_open(path, sysfs_root, ret, whole, &error);
        if (error)
                return log_error_errno(r, "%s", error);
        if (r == -ENOTBLK)
                return log_error_errno(r, "%s is not a block device", path);
        if (r == -EISDIR)
                return log_error_errno(r, "%s is a partition; hydrate the whole disk /dev/%s", path,
                                       whole);
        if (r == -ENODATA)
                return log_error_errno(r, "%s has size 0, nothing to hydrate", path);
        if (r < 0)
                return log_error_errno(r, "Cannot open %s: %m", path);
        return 0;
}

int inputs_state_key(const Args *a, const DeviceIdentity *id, char *key, size_t size) {
        int r;

        if (a->state_key) {
                snprintf(key, size, "%s", a->state_key);
                return 0;
        }
        r = identity_state_key(id, key, size);
        if (r == -ENOKEY)
                return log_error_errno(
                        r,
                        "%s is not an EBS volume and udev knows no serial or WWN for "
                        "it; name its checkpoint with --state-key=KEY",
                        id->kernel_name);
        if (r < 0)
                return log_error_errno(r,
                                       "The serial of %s is too long to name a checkpoint; name it "
                                       "with --state-key=KEY",
                                       id->kernel_name);
        return 0;
}

int inputs_settings(const Args *a, const DeviceIdentity *id, HydrateSettings *ret) {
        const char *defaults[] = {EBS_HYDRATE_VENDOR_CONF_DIR, EBS_HYDRATE_ETC_CONF_DIR, NULL};
        const char *one[] = {a->config_dir, NULL};
        MatchTarget t = {id->volume_id, id->device_name, id->kernel_name};
        _cleanup_free_ char *error = NULL;
        int r;

        hydrate_settings_init(ret);
        r = config_load(a->config_dir ? one : defaults, &t, ret, &error);
        if (r < 0)
                return log_error_errno(r, "%s", error ?: "Failed to load configuration");
        args_apply(a, ret);
        return 0;
}

/*
 * The state directory must be ours alone (0700, owned by our effective uid): anyone who can write
 * to it, its owner included, can plant a state file that says "complete", and anyone who can read
 * it learns which volumes this host has. (A state file owned by another uid is set aside by the
 * hydrator for the same reason.) An existing directory that is open to group or others is
 * refused, not tightened: the unit's StateDirectoryMode=0700 makes systemd chmod its directory
 * at every start, so this only happens on runs by hand with a directory the administrator chose,
 * and chmod-ing that (--state-dir=/tmp as root) could break far more than it protects.
 */
static int check_state_dir(int fd, const char *dir) {
        struct passwd *pw;
        struct stat st;
        int r;

        if (fstat(fd, &st) < 0)
                return log_error_errno(-errno, "Cannot stat state directory %s: %m", dir);
        r = state_dir_verdict(&st, geteuid());
        switch (r) {
        case 0:
                return 0;
        case -EPERM:
                pw = getpwuid(st.st_uid);
                log_error("State directory %s belongs to %s%s(uid %u), not to uid %u that runs "
                          "this: its owner could plant a checkpoint that says \"complete\". Run "
                          "as its owner (the service does), or choose another --state-dir",
                          dir, pw ? pw->pw_name : "", pw ? " " : "", (unsigned)st.st_uid,
                          (unsigned)geteuid());
                return r;
        case -EACCES:
                log_error("State directory %s is open to group or others (mode %04o); it must be "
                          "accessible to its owner only: chmod 0700 %s, or choose another "
                          "--state-dir",
                          dir, (unsigned)(st.st_mode & 07777), dir);
                return r;
        default:
                return log_error_errno(r, "State directory %s is not a directory", dir);
        }
}

/* The first entry of the colon-separated list in $@var (systemd's StateDirectory= and the like
 * set such lists), malloc'ed; NULL if unset, or -ENOMEM. */
static int env_first_dir(const char *var, char **ret) {
        const char *v = getenv(var);

        *ret = NULL;
        if (!v)
                return 0;
        *ret = strndup(v, strcspn(v, ":"));
        return *ret ? 0 : log_error_errno(-ENOMEM, "Out of memory");
}

int inputs_runtime_dir(char **ret_path) {
        _cleanup_free_ char *dir = NULL;
        _cleanup_close_ int fd = -1;
        struct stat st;
        int r;

        r = env_first_dir("RUNTIME_DIRECTORY", &dir);
        if (r < 0)
                return r;
        if (!dir) {
                dir = strdup(EBS_HYDRATE_RUNTIME_DIR);
                if (!dir)
                        return log_error_errno(-ENOMEM, "Out of memory");
        }
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return log_warning_errno(-errno,
                                         "Cannot create runtime directory %s (%m): no volume "
                                         "record for ebs-hydratectl wait",
                                         dir);
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return log_warning_errno(-errno,
                                         "Cannot open runtime directory %s (%m): no volume record "
                                         "for ebs-hydratectl wait",
                                         dir);
        if (fstat(fd, &st) < 0)
                return log_warning_errno(-errno, "Cannot stat runtime directory %s: %m", dir);
        /* Root may write into the service user's directory (a run by hand beside the unit's):
         * nobody else can write there either. */
        if (st.st_uid != geteuid() && geteuid() != 0) {
                log_warning("Runtime directory %s belongs to uid %u, not to uid %u that runs "
                            "this: no volume record for ebs-hydratectl wait",
                            dir, (unsigned)st.st_uid, (unsigned)geteuid());
                return -EPERM;
        }
        if (st.st_mode & 0022) {
                log_warning("Runtime directory %s is writable by group or others (mode %04o): "
                            "not writing the volume record there, whose readers must be able to "
                            "trust it",
                            dir, (unsigned)(st.st_mode & 07777));
                return -EPERM;
        }
        /* Readable by all: unprivileged services wait on these records. */
        if ((st.st_mode & 0555) != 0555 && fchmod(fd, 0755) < 0)
                return log_warning_errno(-errno, "Cannot make %s readable to all: %m", dir);
        if (ret_path)
                *ret_path = TAKE_PTR(dir);
        return TAKE_FD(fd);
}

int inputs_state_dir_path(const Args *a, char **ret_path) {
        int r;

        if (a->state_dir) {
                *ret_path = strdup(a->state_dir);
                return *ret_path ? 0 : log_error_errno(-ENOMEM, "Out of memory");
        }
        r = env_first_dir("STATE_DIRECTORY", ret_path);
        if (r < 0 || *ret_path)
                return r;
        *ret_path = strdup(EBS_HYDRATE_STATE_DIR);
        return *ret_path ? 0 : log_error_errno(-ENOMEM, "Out of memory");
}

int inputs_state_dir(const Args *a, char **ret_path) {
        _cleanup_free_ char *dir = NULL;
        _cleanup_close_ int fd = -1;
        int r;

        r = inputs_state_dir_path(a, &dir);
        if (r < 0)
                return r;
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return log_error_errno(-errno, "Cannot create state directory %s: %m", dir);
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(-errno, "Cannot open state directory %s: %m", dir);
        r = check_state_dir(fd, dir);
        if (r < 0)
                return r;
        *ret_path = TAKE_PTR(dir);
        return TAKE_FD(fd);
}
