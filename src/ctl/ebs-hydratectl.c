/* SPDX-License-Identifier: MIT */
/*
 * ebs-hydratectl: show and steer the hydration of volumes. Running ebs-hydrated instances are
 * asked over the system bus, volumes that are not running are read from their state files.
 * Exit codes: 0 success, 1 failure, 2 bad usage, 4 not permitted (root only, or refused).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "build-config.h"
#include "config.h"
#include "ctl-bus.h"
#include "ctl-wait.h"
#include "device.h"
#include "fileio.h"
#include "identity.h"
#include "log.h"
#include "state.h"
#include "sysfs.h"
#include "util.h"
#include "volinfo-format.h"
#include "volinfo.h"

enum {
        EXIT_OK = 0,
        EXIT_FAILED = 1,
        EXIT_USAGE = 2,
        EXIT_NOPERM = 4, /* as LSB's "user had insufficient privilege" */
};

typedef struct Args {
        bool json;
        bool legend;
        const char *state_dir;
        bool state_dir_given;
        const char *output; /* metrics --output=FILE */
        const char *runtime_dir;
        RecordPhase phase; /* wait */
        uint64_t timeout_usec;
        bool wait_options_given; /* --phase or --timeout: for wait only */
} Args;

typedef struct Command {
        const char *name;
        const char *synopsis; /* its arguments, for the usage error */
        unsigned min_args, max_args;
        int (*run)(const Args *a, char **args); /* returns an exit code */
} Command;

static void help(void) {
        printf("Usage: ebs-hydratectl [OPTIONS] [COMMAND] [ARGS]\n"
               "\n"
               "Show and control the hydration of EBS volumes by ebs-hydrated.\n"
               "\n"
               "Commands:\n"
               "  status [TARGET]            show every volume, or the one TARGET names\n"
               "                             (the default command)\n"
               "  pause TARGET               stop reading until resumed (root)\n"
               "  resume TARGET              continue after pause (root)\n"
               "  set-rate-limit TARGET RATE change the rate limit of a running hydration;\n"
               "                             RATE is %s (root)\n"
               "  forget VOLUME              delete the state of VOLUME, so that it is\n"
               "                             hydrated from the start next time (root)\n"
               "  metrics                    print Prometheus metrics for node_exporter\n"
               "  wait TARGET...             block until every TARGET reached --phase\n"
               "\n"
               "TARGET is a volume id (or other state key), a kernel name such as nvme1n1,\n"
               "or a device path such as /dev/nvme1n1 or a /dev/disk/by-id/ link. For wait,\n"
               "also a mapping name (sdf) or a path on a mounted file system\n"
               "(/var/lib/postgresql: the volumes under it).\n"
               "\n"
               "Options:\n"
               "      --json            status as JSON\n"
               "      --no-legend       no table header, and nothing when there are no volumes\n"
               "      --output=FILE     metrics: replace FILE whole (temporary file, rename)\n"
               "                        instead of printing; a device or FIFO is written to\n"
               "      --state-dir=DIR   where the state files are (default %s)\n"
               "      --phase=PHASE     wait: metadata, hot, used or complete (default)\n"
               "      --timeout=TIME    wait: give up after TIME (30s, 10min, 2h; default\n"
               "                        infinity)\n"
               "      --runtime-dir=DIR wait: where the volume records are (default %s)\n"
               "  -h, --help            show this help\n"
               "      --version         show the version\n"
               "\n"
               "Exit status: 0 success, 1 failure (unknown or not running TARGET, bus error,\n"
               "volume busy), 2 bad usage, 4 not permitted (not root, or access denied).\n"
               "wait: 0 reached, 3 finished without reaching it (failed, unreadable ranges,\n"
               "disabled, Mode=used for complete), 5 timed out, 6 unknown TARGET.\n"
               "See ebs-hydratectl(1).\n",
               HYDRATE_RATE_LIMIT_SYNTAX, EBS_HYDRATE_STATE_DIR, EBS_HYDRATE_RUNTIME_DIR);
}

enum {
        ARG_JSON = 0x100,
        ARG_NO_LEGEND,
        ARG_STATE_DIR,
        ARG_VERSION,
        ARG_OUTPUT,
        ARG_PHASE,
        ARG_TIMEOUT,
        ARG_RUNTIME_DIR,
};

/* Returns 1 to run a command, 0 to exit successfully (--help, --version), -EINVAL on bad usage.
 */
static int parse_argv(int argc, char *argv[], Args *a) {
        static const struct option options[] = {
                {"json", no_argument, NULL, ARG_JSON},
                {"no-legend", no_argument, NULL, ARG_NO_LEGEND},
                {"state-dir", required_argument, NULL, ARG_STATE_DIR},
                {"output", required_argument, NULL, ARG_OUTPUT},
                {"phase", required_argument, NULL, ARG_PHASE},
                {"timeout", required_argument, NULL, ARG_TIMEOUT},
                {"runtime-dir", required_argument, NULL, ARG_RUNTIME_DIR},
                {"help", no_argument, NULL, 'h'},
                {"version", no_argument, NULL, ARG_VERSION},
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case ARG_JSON:
                        a->json = true;
                        break;
                case ARG_NO_LEGEND:
                        a->legend = false;
                        break;
                case ARG_STATE_DIR:
                        a->state_dir = optarg;
                        a->state_dir_given = true;
                        break;
                case ARG_OUTPUT:
                        a->output = optarg;
                        break;
                case ARG_PHASE:
                        if (wait_phase_from_string(optarg, &a->phase) < 0) {
                                log_error("Invalid --phase '%s': expected metadata, hot, used or "
                                          "complete",
                                          optarg);
                                return -EINVAL;
                        }
                        a->wait_options_given = true;
                        break;
                case ARG_TIMEOUT:
                        if (wait_parse_timeout(optarg, &a->timeout_usec) < 0) {
                                log_error("Invalid --timeout '%s': expected seconds, a number "
                                          "with ms, s, sec, m, min, h or d, or infinity",
                                          optarg);
                                return -EINVAL;
                        }
                        a->wait_options_given = true;
                        break;
                case ARG_RUNTIME_DIR:
                        a->runtime_dir = optarg;
                        break;
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("ebs-hydratectl %s\n", EBS_HYDRATE_VERSION);
                        return 0;
                default:
                        return -EINVAL; /* getopt printed the reason */
                }
        return 1;
}

static int require_root(const char *command) {
        if (geteuid() == 0)
                return EXIT_OK;
        log_error("%s: must be run as root", command);
        return EXIT_NOPERM;
}

/* "/dev/disk/by-id/x" -> "/dev/nvme1n1"; NULL for a target that is not a path. */
static char *resolve_target_path(const char *target) {
        char *resolved;

        if (!strchr(target, '/'))
                return NULL;
        resolved = realpath(target, NULL);
        return resolved ?: strdup(target);
}

/* --- collecting volumes --- */

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

/* "<key>.state" with a valid key; everything else in the directory (locks, temporary files,
 * files set aside as <key>.state.<why>-<time>) is not a state file. */
static bool state_file_key(const char *name, char *ret_key) {
        size_t n = strlen(name), s = strlen(STATE_SUFFIX);

        if (n <= s || n - s > STATE_KEY_MAX || strcmp(name + n - s, STATE_SUFFIX) != 0)
                return false;
        if (!state_key_valid(name, n - s))
                return false;
        memcpy(ret_key, name, n - s);
        ret_key[n - s] = '\0';
        return true;
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

static void warn_unreadable(const Args *a, const char *what, int error) {
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
static int collect_stored(const Args *a, VolumeList *l) {
        _cleanup_(closedirp) DIR *d = opendir(a->state_dir);
        char key[STATE_KEY_MAX + 1];
        struct dirent *de;
        int r, denied = 0;

        if (!d) {
                warn_unreadable(a, "", -errno);
                return 0;
        }
        while ((errno = 0, de = readdir(d))) {
                if (!state_file_key(de->d_name, key))
                        continue;
                r = collect_one_stored(a->state_dir, dirfd(d), key, l);
                if (r == -EACCES)
                        denied = r;
                else if (r < 0)
                        return r;
        }
        if (errno != 0)
                log_warning_errno(-errno, "Cannot read %s: %m; the list may be incomplete",
                                  a->state_dir);
        if (denied < 0)
                warn_unreadable(a, "the state files in ", denied);
        return 0;
}

static int collect_volumes(const Args *a, VolumeList **ret) {
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

/* Keep the volumes @target names. Returns how many, or -ENOMEM. */
static int select_volumes(VolumeList *l, const char *target, bool by_device_identity) {
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

static int flush_stdout(void) {
        errno = 0;
        if (fflush(stdout) != 0 || ferror(stdout)) {
                log_error_errno(errno > 0 ? -errno : -EIO, "Failed to write output: %m");
                return EXIT_FAILED;
        }
        return EXIT_OK;
}

/* --- commands --- */

static int cmd_status(const Args *a, char **args) {
        _cleanup_(volume_list_freep) VolumeList *l = NULL;
        int r;

        if (collect_volumes(a, &l) < 0)
                return EXIT_FAILED;
        if (args[0]) {
                r = select_volumes(l, args[0], true);
                if (r < 0) {
                        log_error_errno(r, "Out of memory");
                        return EXIT_FAILED;
                }
                if (r == 0) {
                        log_error("No volume '%s': no running instance has this volume "
                                  "id, kernel name or device, and %s has no state for it",
                                  args[0], a->state_dir);
                        return EXIT_FAILED;
                }
        }
        r = a->json ? volume_list_print_json(stdout, l)
                    : volume_list_print_table(stdout, l, a->legend);
        if (r == -ENOMEM) {
                log_error_errno(r, "Out of memory");
                return EXIT_FAILED;
        }
        return flush_stdout();
}

#define OUTPUT_STALL_USEC (10 * USEC_PER_SEC) /* a FIFO or device that takes nothing longer */

/* @size bytes of @buf into @fd (O_NONBLOCK): a reader that stops reading is an error after
 * OUTPUT_STALL_USEC, not a wait for ever. */
static int write_nonblocking(int fd, const char *buf, size_t size) {
        while (size > 0) {
                ssize_t n = write(fd, buf, size);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN) {
                        struct pollfd p = {.fd = fd, .events = POLLOUT};
                        int r = poll(&p, 1, (int)(OUTPUT_STALL_USEC / USEC_PER_MSEC));

                        if (r == 0)
                                return -ETIMEDOUT;
                        if (r < 0 && errno != EINTR)
                                return -errno;
                        continue;
                }
                if (n < 0)
                        return -errno;
                buf += n;
                size -= (size_t)n;
        }
        return 0;
}

/* May a symbolic link at @path be followed? Only one that nobody but the caller and root could
 * have made or could swap: owned by one of them, in a directory owned by one of them that
 * others may not write to (or whose sticky bit keeps them from replacing it). */
static bool link_trusted(const char *path, const struct stat *link, const char **ret_why) {
        _cleanup_free_ char *copy = strdup(path);
        struct stat dir;

        if (link->st_uid != geteuid() && link->st_uid != 0) {
                *ret_why = "it belongs to another user";
                return false;
        }
        if (!copy || stat(dirname(copy), &dir) < 0) {
                *ret_why = "its directory cannot be looked at";
                return false;
        }
        if ((dir.st_uid != geteuid() && dir.st_uid != 0) ||
            ((dir.st_mode & 0022) && !(dir.st_mode & S_ISVTX))) {
                *ret_why = "others may replace it in its directory";
                return false;
        }
        return true;
}

/*
 * @text into what @path is: a regular file is replaced whole; a character device or a FIFO
 * (/dev/null, /dev/stdout) is written to, never replaced by a file; a symbolic link is followed
 * only if nobody else could have planted it (link_trusted()): to a regular file, that file is
 * replaced and the link stays; anything else is refused, named.
 */
static int write_metrics_to(const char *path, const char *text, size_t size) {
        _cleanup_free_ char *real = NULL;
        _cleanup_close_ int fd = -1;
        const char *why = NULL;
        struct stat st, lst;
        int r;

        if (lstat(path, &lst) < 0) { /* not there yet (or not reachable: the write says why) */
                r = write_file_atomic(path, text, size, 0644);
                return r < 0 ? log_error_errno(r, "Failed to write %s: %m", path) : 0;
        }
        if (S_ISLNK(lst.st_mode)) {
                if (!link_trusted(path, &lst, &why))
                        return log_error_errno(-EPERM,
                                               "Failed to write %s: a symbolic link, not followed "
                                               "(%s); not replacing it with a file either",
                                               path, why);
                if (stat(path, &st) < 0)
                        return log_error_errno(-errno,
                                               "Failed to write %s: a symbolic link to nothing "
                                               "(%m); not replacing the link with a file",
                                               path);
        } else
                st = lst;
        if (S_ISREG(st.st_mode)) {
                if (S_ISLNK(lst.st_mode)) {
                        real = realpath(path, NULL); /* the file the link names is replaced */
                        if (!real)
                                return log_error_errno(-errno, "Failed to write %s: %m", path);
                }
                r = write_file_atomic(real ?: path, text, size, 0644);
                return r < 0 ? log_error_errno(r, "Failed to write %s: %m", path) : 0;
        }
        if (S_ISBLK(st.st_mode) || S_ISSOCK(st.st_mode))
                return log_error_errno(-EINVAL,
                                       "Failed to write %s: a %s, not a file: not writing metrics "
                                       "over it",
                                       path, S_ISBLK(st.st_mode) ? "block device" : "socket");
        if (!S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode)) { /* a directory: the rename says so */
                r = write_file_atomic(path, text, size, 0644);
                return r < 0 ? log_error_errno(r, "Failed to write %s: %m", path) : 0;
        }
        /* O_NONBLOCK: a FIFO nobody reads fails (ENXIO) instead of waiting for ever. Followed
         * only if it was a trusted link above; then what is open must be what was judged. */
        fd = open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC |
                                (S_ISLNK(lst.st_mode) ? 0 : O_NOFOLLOW));
        if (fd < 0 && errno == ENXIO && S_ISFIFO(st.st_mode))
                return log_error_errno(-ENXIO, "Failed to write %s: a FIFO nobody reads", path);
        if (fd < 0)
                return log_error_errno(-errno, "Failed to write %s: %m", path);
        if (fstat(fd, &lst) < 0)
                return log_error_errno(-errno, "Failed to write %s: %m", path);
        if (lst.st_dev != st.st_dev || lst.st_ino != st.st_ino)
                return log_error_errno(-ESTALE, "Failed to write %s: it changed while opened",
                                       path);
        r = write_nonblocking(fd, text, size);
        if (r == -ETIMEDOUT)
                return log_error_errno(
                        r, "Failed to write %s: its reader took nothing for %" PRIu64 " s", path,
                        OUTPUT_STALL_USEC / USEC_PER_SEC);
        if (r < 0)
                return log_error_errno(r, "Failed to write %s: %m", path);
        return 0;
}

/* The metrics into @path, replaced whole: node_exporter's textfile collector may read it at any
 * moment, and must never see half of it. */
static int write_metrics_file(const VolumeList *l, const char *path) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        int r;

        if (!f)
                return log_error_errno(-ENOMEM, "Out of memory");
        r = volume_list_print_metrics(f, l);
        if (fclose(f) != 0 || r < 0)
                return log_error_errno(-ENOMEM, "Out of memory");
        return write_metrics_to(path, text, size);
}

static int cmd_metrics(const Args *a, char **args) {
        _cleanup_(volume_list_freep) VolumeList *l = NULL;

        if (collect_volumes(a, &l) < 0)
                return EXIT_FAILED;
        if (a->output)
                return write_metrics_file(l, a->output) < 0 ? EXIT_FAILED : EXIT_OK;
        (void)volume_list_print_metrics(stdout, l); /* write errors: see flush_stdout() */
        return flush_stdout();
}

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
        r = select_volumes(l, target, false);
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

static int exit_code_for_bus_error(const sd_bus_error *error) {
        return sd_bus_error_has_name(error, SD_BUS_ERROR_ACCESS_DENIED) ? EXIT_NOPERM : EXIT_FAILED;
}

/* Calls @method on the instance @target names; the rate is used by SetRateLimit only. */
static int call_on_target(const char *command, const char *target, const char *method,
                          uint64_t rate) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        VolumeInfo v;
        int r;

        if (open_bus(&bus) < 0 || find_running(bus, target, &v) < 0)
                return EXIT_FAILED;
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
        return r < 0 ? exit_code_for_bus_error(&error) : EXIT_OK;
}

static int cmd_pause(const Args *a, char **args) {
        int r = require_root("pause");

        return r != EXIT_OK ? r : call_on_target("pause", args[0], HYDRATE_BUS_METHOD_PAUSE, 0);
}

static int cmd_resume(const Args *a, char **args) {
        int r = require_root("resume");

        return r != EXIT_OK ? r : call_on_target("resume", args[0], HYDRATE_BUS_METHOD_RESUME, 0);
}

static int cmd_set_rate_limit(const Args *a, char **args) {
        uint64_t rate;
        int r;

        if (hydrate_parse_rate_limit(args[1], &rate) < 0) {
                log_error("Invalid RATE '%s': expected %s", args[1], HYDRATE_RATE_LIMIT_SYNTAX);
                return EXIT_USAGE;
        }
        r = require_root("set-rate-limit");
        return r != EXIT_OK ? r
                            : call_on_target("set-rate-limit", args[0],
                                             HYDRATE_BUS_METHOD_SET_RATE_LIMIT, rate);
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

static int log_volume_busy(const Args *a, const char *key) {
        _cleanup_free_ char *kernel_name = running_kernel_name(key);

        if (kernel_name)
                log_error("%s is being hydrated right now (ebs-hydrate@%s.service running); "
                          "stop it first",
                          key, kernel_name);
        else
                log_error("%s is being hydrated right now (an ebs-hydrated process holds "
                          "%s/%s.lock); stop it first",
                          key, a->state_dir, key);
        return EXIT_FAILED;
}

static int forget_state(const Args *a, int dir_fd, const char *key) {
        _cleanup_free_ char *name = state_file_name(key);
        _cleanup_close_ int lock_fd = -1;

        if (!name) {
                log_error_errno(-ENOMEM, "Out of memory");
                return EXIT_FAILED;
        }
        /* Look before locking: state_lock() creates the lock file, even for a key with no state. */
        if (faccessat(dir_fd, name, F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno == ENOENT) {
                        log_error("No volume '%s': %s has no state for it", key, a->state_dir);
                        return EXIT_FAILED;
                }
                log_error_errno(-errno, "Cannot access %s/%s: %m", a->state_dir, name);
                return EXIT_FAILED;
        }
        lock_fd = state_lock(dir_fd, key);
        if (lock_fd == -EBUSY)
                return log_volume_busy(a, key);
        if (lock_fd == -ELOOP) {
                log_error("Refusing to lock the state of %s: %s/%s.lock is a symbolic link "
                          "or not a regular file; remove it",
                          key, a->state_dir, key);
                return EXIT_FAILED;
        }
        if (lock_fd < 0) {
                log_error_errno(lock_fd, "Cannot lock the state of %s: %m", key);
                return EXIT_FAILED;
        }
        if (unlinkat(dir_fd, name, 0) < 0) {
                log_error_errno(-errno, "Cannot remove %s/%s: %m", a->state_dir, name);
                return EXIT_FAILED;
        }
        (void)fsync(dir_fd);
        printf("Forgot %s: it will be hydrated from the start next time.\n", key);
        return flush_stdout();
}

static int cmd_forget(const Args *a, char **args) {
        const char *key = args[0];
        _cleanup_close_ int dir_fd = -1;
        int r;

        r = require_root("forget");
        if (r != EXIT_OK)
                return r;
        if (!state_key_valid(key, strlen(key))) {
                log_error("No volume '%s': not a volume id or state key", key);
                return EXIT_FAILED;
        }
        dir_fd = open(a->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0 && errno == ENOENT) {
                log_error("No volume '%s': %s does not exist", key, a->state_dir);
                return EXIT_FAILED;
        }
        if (dir_fd < 0) {
                log_error_errno(-errno, "Cannot open %s: %m", a->state_dir);
                return EXIT_FAILED;
        }
        return forget_state(a, dir_fd, key);
}

static int cmd_wait(const Args *a, char **args) {
        WaitOptions o = {
                .phase = a->phase,
                .timeout_usec = a->timeout_usec,
                .runtime_dir = a->runtime_dir,
                .state_dir = a->state_dir,
                .progress = isatty(STDERR_FILENO),
        };
        size_t n = 0;

        while (args[n])
                n++;
        return ctl_wait(&o, args, n);
}

static const Command commands[] = {
        {"status", "[TARGET]", 0, 1, cmd_status},
        {"pause", "TARGET", 1, 1, cmd_pause},
        {"resume", "TARGET", 1, 1, cmd_resume},
        {"set-rate-limit", "TARGET RATE", 2, 2, cmd_set_rate_limit},
        {"forget", "VOLUME", 1, 1, cmd_forget},
        {"metrics", "", 0, 0, cmd_metrics},
        {"wait", "TARGET...", 1, UINT_MAX, cmd_wait},
};

static int dispatch(const Args *a, int argc, char **argv) {
        static char *no_args[] = {NULL};
        const char *name = argc > 0 ? argv[0] : "status";
        unsigned n_args = argc > 0 ? (unsigned)argc - 1 : 0;

        for (size_t i = 0; i < ELEMENTSOF(commands); i++) {
                const Command *c = &commands[i];

                if (!streq_ptr(c->name, name))
                        continue;
                if (a->output && c->run != cmd_metrics) {
                        log_error("--output is for metrics only (see --help)");
                        return EXIT_USAGE;
                }
                if (a->output && (!a->output[0] || a->output[strlen(a->output) - 1] == '/')) {
                        log_error("--output=%s: not a file name (a directory's name ends in /)",
                                  a->output);
                        return EXIT_USAGE;
                }
                if (a->wait_options_given && c->run != cmd_wait) {
                        log_error("--phase and --timeout are for wait only (see --help)");
                        return EXIT_USAGE;
                }
                if (n_args < c->min_args || n_args > c->max_args) {
                        log_error("Usage: ebs-hydratectl [OPTIONS] %s%s%s (see --help)", name,
                                  c->synopsis[0] ? " " : "", c->synopsis);
                        return EXIT_USAGE;
                }
                return c->run(a, argc > 0 ? argv + 1 : no_args);
        }
        log_error("Unknown command '%s' (see --help)", name);
        return EXIT_USAGE;
}

int main(int argc, char *argv[]) {
        Args a = {
                .legend = true,
                .state_dir = EBS_HYDRATE_STATE_DIR,
                .runtime_dir = EBS_HYDRATE_RUNTIME_DIR,
                .phase = RECORD_PHASE_DONE,
                .timeout_usec = UINT64_MAX,
        };
        int r;

        log_setup("ebs-hydratectl");
        r = parse_argv(argc, argv, &a);
        if (r <= 0)
                return r == 0 ? EXIT_OK : EXIT_USAGE;
        return dispatch(&a, argc - optind, argv + optind);
}
