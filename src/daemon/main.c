/* SPDX-License-Identifier: MIT */
/*
 * ebs-hydrated: hydrate one block device in the foreground. Parses the command line, resolves
 * the device's identity and configuration, and runs the hydrator on an sd-event loop with a
 * progress bar on a terminal. Exit codes: 0 complete, 1 failed, 2 bad usage or configuration,
 * 3 finished with unreadable ranges, 4 the device went away.
 */
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <time.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "build-config.h"
#include "bus.h"
#include "config.h"
#include "device.h"
#include "discovery.h"
#include "fslayout.h"
#include "hotpaths.h"
#include "hydrator.h"
#include "identity.h"
#include "log.h"
#include "parse.h"
#include "progress.h"
#include "report.h"

enum {
        EXIT_COMPLETE = REPORT_EXIT_COMPLETE,
        EXIT_FAILED = REPORT_EXIT_FAILED,
        EXIT_USAGE = REPORT_EXIT_USAGE,
        EXIT_UNREADABLE = REPORT_EXIT_UNREADABLE,
        EXIT_DETACHED = REPORT_EXIT_DETACHED,
};

typedef enum ProgressMode { PROGRESS_AUTO, PROGRESS_ALWAYS, PROGRESS_NEVER } ProgressMode;

typedef struct Args {
        const char *device;
        const char *state_dir;
        const char *config_dir;
        const char *state_key;
        ProgressMode progress;
        bool no_bus;
        bool set_queue_depth, set_block_size, set_rate_limit, set_mode, set_yield;
        HydrateSettings cli; /* only the fields flagged above are meaningful */
} Args;

typedef struct Run {
        sd_event *event;
        Hydrator *hydrator;
        HydrateBus *bus;
        char devnode[80]; /* /dev/<kernel name>, for the journal */
        char *state_dir;  /* the state directory's path, for messages */
        const char *sysfs_root;
        sd_event_source *bar_timer;
        sd_event_source *status_timer;
        bool bar;
        bool bar_drawn;
        int signal; /* the signal that stopped us, or 0 */
        /* While the file systems are mapped (before the first read), and what it needs after: */
        Discovery *discovery;
        const BlockDevice *dev;
        const HydrateSettings *settings;
        const char *key;
        bool started; /* the hydrator reads */
        int code;     /* the exit status decided before the hydrator started, or -1 */
} Run;

static void help(void) {
        printf("Usage: ebs-hydrated [OPTIONS] DEVICE\n"
               "\n"
               "Read every block of DEVICE once, so that a volume restored from an EBS snapshot\n"
               "stops paying first-touch latency. Progress is checkpointed; a new run resumes.\n"
               "\n"
               "DEVICE is a path (/dev/nvme1n1, /dev/disk/by-id/...) or a kernel name (nvme1n1).\n"
               "\n"
               "Options:\n"
               "  -q, --queue-depth=N      reads in flight: 1-%u, or auto (the default): found\n"
               "                           by measuring the device as it goes\n"
               "  -b, --block-size=SIZE    bytes per read, e.g. 512K, 1M (default 1M); reads\n"
               "                           cover whole 512K chunks (larger on volumes over\n"
               "                           8 TiB), so SIZE is rounded down to whole chunks\n"
               "  -r, --rate-limit=RATE    bytes per second, e.g. 200M; 0, off or none =\n"
               "                           unlimited (default)\n"
               "      --mode=MODE          full (default): every block, free space last; used:\n"
               "                           only what the file systems use, free space stays\n"
               "                           cold\n"
               "      --yield=BOOL         yes (default): give way to other I/O on DEVICE while\n"
               "                           it lasts; no: full speed whatever else is going on\n"
               "                           (a machine being prepared, with no workload yet)\n"
               "      --state-dir=DIR      where checkpoints live (default $STATE_DIRECTORY,\n"
               "                           else %s)\n"
               "      --config-dir=DIR     read DIR/hydrate.conf and DIR/hydrate.conf.d/*.conf\n"
               "                           instead of %s and %s\n"
               "      --state-key=KEY      name the checkpoint KEY instead of the volume id or\n"
               "                           udev serial (needed for devices without either)\n"
               "      --progress=WHEN      progress bar on stderr: auto (on a terminal), always,\n"
               "                           never\n"
               "      --no-bus             do not publish the D-Bus status object (no system bus\n"
               "                           needed)\n"
               "  -h, --help               show this help\n"
               "      --version            show the version\n"
               "\n"
               "Exit status: 0 hydrated (or already hydrated, or disabled by configuration),\n"
               "1 failed, 2 bad usage or configuration, 3 finished with unreadable ranges,\n"
               "4 the device went away (progress saved; the next run resumes).\n"
               "See ebs-hydrated(8) and ebs-hydrate.conf(5).\n",
               HYDRATE_QUEUE_DEPTH_MAX, EBS_HYDRATE_STATE_DIR, EBS_HYDRATE_VENDOR_CONF_DIR,
               EBS_HYDRATE_ETC_CONF_DIR);
}

enum {
        ARG_STATE_DIR = 0x100,
        ARG_CONFIG_DIR,
        ARG_STATE_KEY,
        ARG_PROGRESS,
        ARG_NO_BUS,
        ARG_VERSION,
        ARG_MODE,
        ARG_YIELD,
};

static int parse_option_value(int opt, const char *value, Args *a) {
        switch (opt) {
        case 'q':
                if (hydrate_parse_queue_depth(value, &a->cli.queue_depth) < 0)
                        return log_error_errno(-EINVAL, "Invalid --queue-depth '%s': expected %s",
                                               value, HYDRATE_QUEUE_DEPTH_SYNTAX);
                a->set_queue_depth = true;
                return 0;
        case 'b':
                if (hydrate_parse_block_size(value, &a->cli.block_size) < 0)
                        return log_error_errno(-EINVAL, "Invalid --block-size '%s': expected %s",
                                               value, HYDRATE_BLOCK_SIZE_SYNTAX);
                a->set_block_size = true;
                return 0;
        case 'r':
                if (hydrate_parse_rate_limit(value, &a->cli.rate_limit) < 0)
                        return log_error_errno(-EINVAL, "Invalid --rate-limit '%s': expected %s",
                                               value, HYDRATE_RATE_LIMIT_SYNTAX);
                a->set_rate_limit = true;
                return 0;
        case ARG_MODE:
                if (hydrate_parse_mode(value, &a->cli.mode) < 0)
                        return log_error_errno(-EINVAL, "Invalid --mode '%s': expected %s", value,
                                               HYDRATE_MODE_SYNTAX);
                a->set_mode = true;
                return 0;
        case ARG_YIELD:
                if (parse_boolean(value, &a->cli.yield) < 0)
                        return log_error_errno(-EINVAL, "Invalid --yield '%s': expected yes or no",
                                               value);
                a->set_yield = true;
                return 0;
        }
        return -EINVAL;
}

/* Returns 1 to run, 0 to exit successfully (--help), negative errno on bad usage. */
static int parse_argv(int argc, char *argv[], Args *a) {
        static const struct option options[] = {
                {"queue-depth", required_argument, NULL, 'q'},
                {"block-size", required_argument, NULL, 'b'},
                {"rate-limit", required_argument, NULL, 'r'},
                {"mode", required_argument, NULL, ARG_MODE},
                {"yield", required_argument, NULL, ARG_YIELD},
                {"state-dir", required_argument, NULL, ARG_STATE_DIR},
                {"config-dir", required_argument, NULL, ARG_CONFIG_DIR},
                {"state-key", required_argument, NULL, ARG_STATE_KEY},
                {"progress", required_argument, NULL, ARG_PROGRESS},
                {"no-bus", no_argument, NULL, ARG_NO_BUS},
                {"help", no_argument, NULL, 'h'},
                {"version", no_argument, NULL, ARG_VERSION},
                {},
        };
        int c, r;

        opterr = 0; /* its messages echo the argument raw: ours go through the log, quoted */
        while ((c = getopt_long(argc, argv, ":q:b:r:h", options, NULL)) >= 0)
                switch (c) {
                case 'q':
                case 'b':
                case 'r':
                case ARG_MODE:
                case ARG_YIELD:
                        r = parse_option_value(c, optarg, a);
                        if (r < 0)
                                return r;
                        break;
                case ARG_STATE_DIR:
                        a->state_dir = optarg;
                        break;
                case ARG_CONFIG_DIR:
                        a->config_dir = optarg;
                        break;
                case ARG_STATE_KEY:
                        if (!state_key_valid(optarg, strlen(optarg)))
                                return log_error_errno(-EINVAL,
                                                       "Invalid --state-key '%s': use 1-%d "
                                                       "printable ASCII characters without spaces "
                                                       "or '/', not starting with '.'",
                                                       optarg, STATE_KEY_MAX);
                        a->state_key = optarg;
                        break;
                case ARG_PROGRESS:
                        if (streq_ptr(optarg, "auto"))
                                a->progress = PROGRESS_AUTO;
                        else if (streq_ptr(optarg, "always"))
                                a->progress = PROGRESS_ALWAYS;
                        else if (streq_ptr(optarg, "never"))
                                a->progress = PROGRESS_NEVER;
                        else
                                return log_error_errno(-EINVAL,
                                                       "Invalid --progress '%s': expected "
                                                       "auto, always or never",
                                                       optarg);
                        break;
                case ARG_NO_BUS:
                        a->no_bus = true;
                        break;
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("ebs-hydrated %s\n", EBS_HYDRATE_VERSION);
                        return 0;
                case ':':
                        if (optopt > 0 && optopt < 0x100 && argv[optind - 1][1] != '-')
                                return log_error_errno(-EINVAL,
                                                       "Option -%c needs a value (see "
                                                       "--help)",
                                                       optopt);
                        return log_error_errno(-EINVAL, "Option '%s' needs a value (see --help)",
                                               argv[optind - 1]);
                default:
                        if (optopt > 0 && optopt < 0x100 && argv[optind - 1][1] != '-')
                                return log_error_errno(-EINVAL, "Unknown option -%c (see --help)",
                                                       optopt);
                        return log_error_errno(-EINVAL, "Unknown option '%s' (see --help)",
                                               argv[optind - 1]);
                }

        if (optind != argc - 1)
                return log_error_errno(-EINVAL, optind == argc ? "No DEVICE given (see --help)"
                                                               : "Only one DEVICE may be given");
        a->device = argv[optind];
        return 1;
}

static int open_device(const Args *a, const char *sysfs_root, BlockDevice *ret) {
        _cleanup_free_ char *path = NULL, *error = NULL;
        char whole[64] = "";
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

static int state_key_for(const Args *a, const DeviceIdentity *id, char *key, size_t size) {
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

static int load_settings(const Args *a, const DeviceIdentity *id, HydrateSettings *ret) {
        const char *defaults[] = {EBS_HYDRATE_VENDOR_CONF_DIR, EBS_HYDRATE_ETC_CONF_DIR, NULL};
        const char *one[] = {a->config_dir, NULL};
        MatchTarget t = {id->volume_id, id->device_name, id->kernel_name};
        _cleanup_free_ char *error = NULL;
        int r;

        hydrate_settings_init(ret);
        r = config_load(a->config_dir ? one : defaults, &t, ret, &error);
        if (r < 0)
                return log_error_errno(r, "%s", error ?: "Failed to load configuration");
        if (a->set_queue_depth)
                ret->queue_depth = a->cli.queue_depth;
        if (a->set_block_size)
                ret->block_size = a->cli.block_size;
        if (a->set_rate_limit)
                ret->rate_limit = a->cli.rate_limit;
        if (a->set_mode)
                ret->mode = a->cli.mode;
        if (a->set_yield)
                ret->yield = a->cli.yield;
        return 0;
}

/*
 * The state directory must be ours alone (0700, owned by our effective uid): anyone who can write
 * to it, its owner included, can plant a state file that says "complete", and anyone who can read
 * it learns which volumes this host has. (A state file owned by another uid is set aside by the
 * hydrator for the same reason.) An
 * existing directory that is open to group or others is refused, not tightened: the unit's
 * StateDirectoryMode=0700 makes systemd chmod its directory at every start, so this only happens
 * on runs by hand with a directory the administrator chose, and chmod-ing that (--state-dir=/tmp
 * as root) could break far more than it protects.
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

static int open_state_dir(const Args *a, char **ret_path) {
        _cleanup_free_ char *env = NULL;
        _cleanup_close_ int fd = -1;
        const char *dir = a->state_dir;

        if (!dir && getenv("STATE_DIRECTORY")) {
                env = strndup(getenv("STATE_DIRECTORY"), strcspn(getenv("STATE_DIRECTORY"), ":"));
                dir = env;
        }
        if (!dir)
                dir = EBS_HYDRATE_STATE_DIR;
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return log_error_errno(-errno, "Cannot create state directory %s: %m", dir);
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(-errno, "Cannot open state directory %s: %m", dir);
        *ret_path = strdup(dir);
        if (!*ret_path)
                return log_error_errno(-ENOMEM, "Out of memory");
        return TAKE_FD(fd);
}

static unsigned terminal_width(void) {
        struct winsize ws;

        if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
                return ws.ws_col; /* however narrow: progress_format_bar() fits itself to it */
        return 80;
}

static void draw_bar(Run *run) {
        HydratorStatus st;
        char line[256];

        if (!run->bar)
                return;
        hydrator_get_status(run->hydrator, &st);
        if (st.phase != HYDRATOR_HYDRATING && st.run_usec > 0) /* the last frame: the average */
                st.rate = (uint64_t)((double)st.run_bytes * 1e6 / (double)st.run_usec);
        progress_format_bar(line, sizeof(line), terminal_width() - 1, st.done_bytes, st.size,
                            st.rate);
        (void)output_printf(STDERR_FILENO, "\r\033[K%s", line);
        output_bar_drawn(true);
        run->bar_drawn = true;
}

static void clear_bar(Run *run) {
        if (run->bar_drawn)
                (void)output_write(STDERR_FILENO, "\r\033[K", 4);
        output_bar_drawn(false);
        run->bar_drawn = false;
}

static int on_bar_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        draw_bar(userdata);
        (void)sd_event_source_set_time(s, usec + 500 * 1000);
        return 0;
}

#define STATUS_INTERVAL_USEC (2 * UINT64_C(1000000))

/* STATUS= for systemctl status; a no-op outside systemd (no $NOTIFY_SOCKET). */
static void notify_status(Run *run) {
        HydratorStatus st;
        char line[512];

        hydrator_get_status(run->hydrator, &st);
        if (run->discovery && !run->started)
                report_status_mapping(line, sizeof(line), &st,
                                      discovery_stalled_usec(run->discovery));
        else
                report_status(line, sizeof(line), &st);
        (void)sd_notifyf(false, "STATUS=%s", line);
}

static int on_status_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        notify_status(userdata);
        (void)sd_event_source_set_time(s, usec + STATUS_INTERVAL_USEC);
        return 0;
}

/* The signals whose default action terminates without a core dump (signal(7)), real-time ones
 * aside; all of them stop a run the way SIGTERM does. */
static const int stop_signals[] = {
        SIGHUP,    SIGINT,  SIGTERM, SIGUSR1, SIGUSR2,   SIGALRM,
        SIGVTALRM, SIGPROF, SIGIO,   SIGPWR,  SIGSTKFLT,
};

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Run *run = userdata;

        run->signal = (int)si->ssi_signo;
        log_info("Received %s, saving progress and stopping", strsignal((int)si->ssi_signo));
        (void)sd_notify(false, "STOPPING=1");
        if (!run->started) { /* mapping the file systems: nothing read, nothing to save */
                (void)sd_event_exit(run->event, 0);
                return 0;
        }
        hydrator_stop(run->hydrator);
        return 0;
}

/* No STOPPING=1 here: systemd would take the exit for a stop and drop the unit to "inactive"
 * despite RemainAfterExit=yes. Only a stop that was asked for (on_signal) says STOPPING. */
static void on_finished(Hydrator *h, void *userdata) {
        Run *run = userdata;

        notify_status(run);
        if (run->bus)
                hydrate_bus_refresh(run->bus);
        (void)sd_event_exit(run->event, 0);
}

/* The line on stdout that says how the run ended, for whoever ran it by hand. */
static void print_summary(Run *run) {
        char line[2048];
        HydratorStatus st;

        hydrator_get_status(run->hydrator, &st);
        (void)output_printf(STDOUT_FILENO, "%s\n", report_summary(line, sizeof(line), &st));
}

/* The journal record that says how the run ended; journalctl MESSAGE_ID=... finds them all. */
static void log_outcome(const Run *run, const HydratorStatus *st) {
        const char *message_id;
        char line[1024];
        int level = report_journal(line, sizeof(line), st, run->devnode, &message_id);

        if (level >= 0)
                log_volume(level, message_id, st->key, run->devnode, "%s", line);
}

static void log_plan(const Run *run, const char *key, const HydrateSettings *s) {
        char b[_PLAN_STAGE_MAX][FORMAT_BYTES_MAX];
        HydratorStatus st;

        hydrator_get_status(run->hydrator, &st);
        for (PlanStage i = 0; i < _PLAN_STAGE_MAX; i++)
                format_bytes(b[i], sizeof(b[i]), st.plan.total_bytes[i]);
        log_info("%s: plan: metadata %s, hot paths %s, used %s, free %s%s", key,
                 b[PLAN_STAGE_METADATA], b[PLAN_STAGE_HOT], b[PLAN_STAGE_USED], b[PLAN_STAGE_FREE],
                 !st.plan.fs_aware              ? " (whole device, in offset order)"
                 : s->mode == HYDRATE_MODE_USED ? "; Mode=used: free space is not read"
                                                : "");
}

static int publish(Run *run, const Args *a, const DeviceIdentity *id, const char *key) {
        HydrateBusIdentity bid = {key, id->kernel_name, id->device_name};

        if (a->no_bus)
                return 0;
        return hydrate_bus_new(&run->bus, run->event, run->hydrator, &bid);
}

/*
 * Yield=: the disk's counters tell the hydrator when someone else uses the device. A device
 * without them (a sandbox that hides /sys, an odd driver) is still hydrated, at full speed,
 * and the journal says why it will not give way.
 */
static void watch_activity(Run *run, const BlockDevice *dev, const HydrateSettings *settings) {
        _cleanup_free_ char *path = NULL;
        int r;

        if (!settings->yield)
                return;
        if (asprintf(&path, "%s/block/%s/stat", run->sysfs_root, dev->kernel_name) < 0) {
                log_error_errno(-ENOMEM, "Cannot watch %s for other I/O: %m", dev->path);
                return;
        }
        r = hydrator_watch_activity(run->hydrator, path);
        if (r < 0) {
                log_warning_errno(r,
                                  "Cannot read %s (%m): hydrating %s without yielding to other "
                                  "I/O on it (Yield=no says so without this warning)",
                                  path, dev->path);
                return;
        }
        r = hydrator_watch_neighbours(run->hydrator, run->sysfs_root);
        if (r < 0)
                log_warning_errno(r,
                                  "Cannot watch the volumes beside %s (%m): yielding only "
                                  "to I/O on it",
                                  dev->path);
}

/* The state, or the plan of a Mode=used run, says there is nothing to read. */
static int already_hydrated(Run *run) {
        char cold[FORMAT_BYTES_MAX];
        HydratorStatus st;
        uint64_t n;

        if (hydrator_record_complete(run->hydrator) < 0)
                return EXIT_FAILED;
        hydrator_get_status(run->hydrator, &st);
        n = st.size - st.done_bytes;
        if (n == 0) {
                (void)sd_notifyf(false, "READY=1\nSTATUS=%s: already hydrated", run->key);
                (void)output_printf(STDOUT_FILENO, "%s: already hydrated, nothing to read\n",
                                    run->key);
        } else {
                format_bytes(cold, sizeof(cold), n);
                (void)sd_notifyf(false,
                                 "READY=1\nSTATUS=%s: already hydrated (Mode=used: %s free space "
                                 "left cold)",
                                 run->key, cold);
                (void)output_printf(STDOUT_FILENO,
                                    "%s: already hydrated (Mode=used: %s free space left cold), "
                                    "nothing to read\n",
                                    run->key, cold);
        }
        return EXIT_COMPLETE;
}

/* Ends the event loop with @code before the hydrator started. */
static void end_early(Run *run, int code) {
        run->code = code;
        (void)sd_event_exit(run->event, 0);
}

/* The "started" record, then the reads. */
static int start_reading(Run *run) {
        const HydrateSettings *settings = run->settings;
        HydratorStatus st;
        char depth[64];
        unsigned pm;
        int r;

        hydrator_get_status(run->hydrator, &st);
        pm = progress_permille(st.done_bytes, st.size);
        if (settings->queue_depth == HYDRATE_QUEUE_DEPTH_AUTO)
                (void)snprintf(depth, sizeof(depth), "auto (%u to %u)", st.depth_min, st.depth_max);
        else
                (void)snprintf(depth, sizeof(depth), "%u", settings->queue_depth);
        log_volume(LOG_INFO, LOG_MESSAGE_HYDRATION_STARTED, run->key, run->devnode,
                   "Hydrating %s (%s) from %u.%u%%, queue depth %s, %" PRIu64 " KiB reads%s%s%s",
                   run->devnode, run->key, pm / 10, pm % 10, depth, st.request_bytes / 1024,
                   settings->rate_limit ? ", rate limited" : "",
                   settings->mode == HYDRATE_MODE_USED ? ", Mode=used" : "",
                   settings->yield ? "" : ", Yield=no");
        watch_activity(run, run->dev, settings);
        r = hydrator_start(run->hydrator, on_finished, run);
        if (r < 0) {
                log_volume(LOG_ERR, LOG_MESSAGE_HYDRATION_FAILED, run->key, run->devnode,
                           "%s (%s): hydration failed at %u.%u%%: cannot start: %s; progress "
                           "saved",
                           run->key, run->devnode, pm / 10, pm % 10, strerror(-r));
                return r;
        }
        run->started = true;
        notify_status(run);
        return 0;
}

/*
 * The file systems are mapped (or found unmappable: then the device is read whole, in offset
 * order, as it always was; only running out of memory is an error): plan by them, and read.
 */
static void on_discovered(Discovery *d, void *userdata) {
        Run *run = userdata;
        DiscoveryResult *res = discovery_result(d);
        int r;

        if (res->mapped < 0)
                log_warning("%s: cannot map the file systems of %s (%s); reading the whole "
                            "device, in offset order",
                            run->key, run->devnode, res->error ?: strerror(-res->mapped));
        for (size_t i = 0; res->mapped >= 0 && i < res->layout.n_notes; i++)
                log_info("%s: %s", run->devnode, res->layout.notes[i]);
        if (res->hot_error < 0) {
                log_error_errno(res->hot_error, "Failed to resolve HotPaths=: %m");
                end_early(run, EXIT_FAILED);
                return;
        }
        r = hydrator_set_layout(run->hydrator, res->mapped >= 0 ? &res->layout : NULL, res->hot,
                                res->n_hot);
        if (r < 0) {
                log_error_errno(r, "Failed to plan the hydration of %s: %m", run->key);
                end_early(run, EXIT_FAILED);
                return;
        }
        log_plan(run, run->key, run->settings);
        if (hydrator_already_complete(run->hydrator))
                end_early(run, already_hydrated(run));
        else if (start_reading(run) < 0)
                end_early(run, EXIT_FAILED);
}

static void on_discovery_stalled(void *userdata) {
        notify_status(userdata); /* at once, not at the next status period */
}

static int start_discovery(Run *run) {
        _cleanup_free_ char *stat_path = NULL;
        DiscoveryRequest req = {
                .fd = run->dev->fd,
                .size = run->dev->size,
                .hot_paths = run->settings->hot_paths,
                .sysfs_root = run->sysfs_root,
                .key = run->key,
                .devnode = run->devnode,
                .stalled = on_discovery_stalled,
        };
        struct stat st;
        int r;

        if (fstat(run->dev->fd, &st) < 0)
                return log_error_errno(-errno, "Cannot stat %s: %m", run->dev->path);
        req.rdev = st.st_rdev;
        if (asprintf(&stat_path, "%s/block/%s/stat", run->sysfs_root, run->dev->kernel_name) < 0)
                return log_error_errno(-ENOMEM, "Out of memory");
        req.stat_path = stat_path;
        r = discovery_start(&run->discovery, run->event, &req, on_discovered, run);
        if (r < 0)
                return log_error_errno(r, "Cannot start mapping the file systems of %s: %m",
                                       run->dev->path);
        return 0;
}

/* Everything that can fail before the first read is set up before the "started" record, so
 * that every such record is followed by one that says how the run ended. */
static int set_up_reporting(Run *run, const Args *a, const DeviceIdentity *id) {
        int r;

        if (publish(run, a, id, run->key) < 0)
                return -EIO;
        run->bar = a->progress == PROGRESS_ALWAYS ||
                   (a->progress == PROGRESS_AUTO && isatty(STDERR_FILENO));
        if (run->bar) {
                r = sd_event_add_time_relative(run->event, &run->bar_timer, CLOCK_MONOTONIC, 0, 0,
                                               on_bar_timer, run);
                if (r >= 0)
                        r = sd_event_source_set_enabled(run->bar_timer, SD_EVENT_ON);
                if (r < 0)
                        return log_error_errno(r, "Failed to set up the progress bar: %m");
        }
        /* The watchdog is fed from the event loop itself: a stuck loop stops feeding it. */
        r = sd_event_set_watchdog(run->event, true);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the watchdog (WATCHDOG_USEC=%s): %m",
                                       getenv("WATCHDOG_USEC") ?: "");
        r = sd_event_add_time_relative(run->event, &run->status_timer, CLOCK_MONOTONIC,
                                       STATUS_INTERVAL_USEC, 0, on_status_timer, run);
        if (r >= 0)
                r = sd_event_source_set_enabled(run->status_timer, SD_EVENT_ON);
        if (r < 0)
                return log_error_errno(r, "Failed to set up status reporting: %m");
        return 0;
}

static int hydrate(Run *run, const Args *a, const BlockDevice *dev, const DeviceIdentity *id,
                   const char *key, int dir_fd, const HydrateSettings *settings) {
        _cleanup_close_ int lock_fd = -1;
        HydratorStatus st;
        uint64_t stalled;
        int r;

        run->dev = dev;
        run->settings = settings;
        run->key = key;
        run->code = -1;
        lock_fd = state_lock(dir_fd, key);
        if (lock_fd == -EBUSY) {
                log_error_errno(lock_fd, "%s (%s) is being hydrated by another process already",
                                key, dev->path);
                return EXIT_FAILED;
        }
        if (lock_fd == -ELOOP) { /* planted: a restart cannot help, exit 2 stops the unit's */
                log_error("Refusing to lock the state of %s: %s/%s.lock is a symbolic link "
                          "or not a regular file; remove it",
                          key, run->state_dir, key);
                return EXIT_USAGE;
        }
        if (lock_fd < 0) {
                log_error_errno(lock_fd, "Failed to lock state of %s: %m", key);
                return EXIT_FAILED;
        }
        r = hydrator_new(&run->hydrator, run->event, dev, key, dir_fd, settings);
        if (r < 0)
                return EXIT_FAILED;
        /* A volume read in full needs no plan: mapping it would read its metadata again on
         * every start (libblkid's and libext2fs's reads go through the page cache, which the
         * kernel drops when the device is closed), and "already hydrated" reads nothing. */
        if (hydrator_state_complete(run->hydrator))
                return already_hydrated(run);
        r = hydrator_save_loaded(run->hydrator);
        if (r < 0) {
                log_error_errno(r,
                                "Cannot save progress in %s (%m, saving %s.state): not reading "
                                "%s, whose progress could not be kept",
                                run->state_dir, key, dev->path);
                /* A full or read-only file system, or an I/O error, may pass; anything else in
                 * the way (a directory under the temporary file's name) waits for a person. */
                return r == -ENOSPC || r == -EDQUOT || r == -EROFS || r == -EIO ? EXIT_FAILED
                                                                                : EXIT_USAGE;
        }
        if (set_up_reporting(run, a, id) < 0)
                return EXIT_FAILED;
        /* State loaded, bus name owned: ready. Mapping the file systems reads the device, and a
         * cold volume takes its time over it (or a broken one forever): the event loop runs
         * meanwhile, for STATUS=, the watchdog, the bus and signals. */
        (void)sd_notify(false, "READY=1");
        if (start_discovery(run) < 0)
                return EXIT_FAILED;
        notify_status(run);
        r = sd_event_loop(run->event);
        stalled = discovery_stalled_usec(run->discovery);
        run->discovery = discovery_free(run->discovery); /* one stuck in the device is let go */
        if (r < 0) {
                log_error_errno(r, "Event loop failed: %m");
                return EXIT_FAILED;
        }
        if (run->code >= 0)
                return run->code;
        if (!run->started) { /* stopped while mapping the file systems */
                (void)sd_notifyf(false,
                                 "STATUS=%s: stopped while mapping the file systems, "
                                 "nothing read%s",
                                 key, stalled > 0 ? "; waiting for the stalled device" : "");
                if (stalled > 0)
                        log_warning("%s: %s holds the reads of the file-system discovery, and "
                                    "the kernel lets this process exit only when they return",
                                    key, run->devnode);
                (void)output_printf(STDOUT_FILENO,
                                    "%s: stopped while mapping the file systems, before reading; "
                                    "nothing to save\n",
                                    key);
                return EXIT_FAILED;
        }
        draw_bar(run);
        clear_bar(run);
        hydrator_get_status(run->hydrator, &st);
        /* The journal first: the terminal may be gone (a closed pipe, a full one), the record
         * of how the run ended must not go with it. */
        if (st.depth_auto && st.run_bytes > 0)
                log_info("%s: queue depth %u at the end (auto, %u changes; mean latency %.1f ms)",
                         key, st.depth, st.depth_changes, (double)st.latency_usec / 1000.0);
        log_outcome(run, &st);
        if (st.stalled_usec > 0 && st.in_flight > 0)
                log_warning("%s: progress saved; %s still holds %u read%s, and the kernel lets "
                            "this process exit only when they return",
                            key, run->devnode, st.in_flight, st.in_flight == 1 ? "" : "s");
        print_summary(run);
        return report_exit_status(&st);
}

static int run_main(const Args *a) {
        _cleanup_close_ int dir_fd = -1;
        const char *sysfs_root = getenv("EBS_HYDRATE_SYSFS_ROOT") ?: "/sys";
        BlockDevice dev = {.fd = -1};
        DeviceIdentity id;
        HydrateSettings settings;
        char key[STATE_KEY_MAX + 1];
        Run run = {};
        int r, code;

        if (open_device(a, sysfs_root, &dev) < 0)
                return EXIT_USAGE;
        r = identity_resolve(sysfs_root, dev.kernel_name, &id);
        if (r < 0) {
                /* e.g. -EFBIG or -EBADMSG: a sysfs attribute too long or with a NUL in it */
                (void)log_warning_errno(r, "Cannot identify %s from udev or sysfs, ignoring: %m",
                                        dev.kernel_name);
                memset(&id, 0, sizeof(id));
                snprintf(id.kernel_name, sizeof(id.kernel_name), "%s", dev.kernel_name);
        }
        snprintf(run.devnode, sizeof(run.devnode), "/dev/%s", dev.kernel_name);
        run.sysfs_root = sysfs_root;
        code = EXIT_USAGE;
        if (state_key_for(a, &id, key, sizeof(key)) < 0 || load_settings(a, &id, &settings) < 0)
                goto out;
        code = EXIT_COMPLETE;
        if (!settings.enabled) {
                (void)output_printf(STDOUT_FILENO,
                                    "%s: hydration disabled by configuration (Enabled=no), "
                                    "nothing to do\n",
                                    key);
                (void)sd_notifyf(false, "READY=1\nSTATUS=%s: hydration disabled by configuration",
                                 key);
                goto out;
        }
        code = EXIT_FAILED;
        dir_fd = open_state_dir(a, &run.state_dir);
        if (dir_fd < 0) {
                /* A path that is no directory, or one we may not enter, stays so until someone
                 * acts: exit 2, which the unit does not restart on. I/O errors may pass. */
                if (dir_fd == -ENOTDIR || dir_fd == -ENOENT || dir_fd == -EACCES ||
                    dir_fd == -EPERM || dir_fd == -ELOOP || dir_fd == -ENAMETOOLONG)
                        code = EXIT_USAGE;
                goto out;
        }
        if (check_state_dir(dir_fd, run.state_dir) < 0) {
                code = EXIT_USAGE; /* open to others: bad configuration, a restart cannot help */
                goto out;
        }
        r = sd_event_default(&run.event);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(stop_signals); i++)
                r = sd_event_add_signal(run.event, NULL, stop_signals[i], on_signal, &run);
        for (int sig = SIGRTMIN; r >= 0 && sig <= SIGRTMAX; sig++)
                r = sd_event_add_signal(run.event, NULL, sig, on_signal, &run);
        if (r < 0) {
                log_error_errno(r, "Failed to set up the event loop: %m");
                goto out;
        }
        code = hydrate(&run, a, &dev, &id, key, dir_fd, &settings);
out:
        discovery_free(run.discovery);
        hydrate_bus_free(run.bus);   /* borrows the hydrator */
        hydrator_free(run.hydrator); /* waits for reads in flight; the state is already saved */
        sd_event_source_disable_unref(run.bar_timer);
        sd_event_source_disable_unref(run.status_timer);
        sd_event_unref(run.event);
        block_device_close(&dev);
        free(run.state_dir);
        if (run.signal > 0) {
                /* Die by the signal, as a well-behaved program does, now that progress is saved. */
                sigset_t ss;

                sigemptyset(&ss);
                sigaddset(&ss, run.signal);
                signal(run.signal, SIG_DFL);
                sigprocmask(SIG_UNBLOCK, &ss, NULL);
                raise(run.signal);
        }
        return code;
}

int main(int argc, char *argv[]) {
        Args a = {.progress = PROGRESS_AUTO};
        sigset_t ss;
        int r;

        log_setup("ebs-hydrated");
        r = parse_argv(argc, argv, &a);
        if (r <= 0)
                return r == 0 ? EXIT_COMPLETE : EXIT_USAGE;

        /* sd-event takes signals through a signalfd: they must be blocked first. Every signal
         * whose default action ends the process without a core is taken as a stop: a closed SSH
         * session (SIGHUP) or a stray kill -USR1 saves the checkpoint and prints the summary
         * before the process dies of it. A closed or full stdout is not a reason to stop
         * (SIGPIPE), and a file size limit must fail a save, not kill us (SIGXFSZ). */
        sigemptyset(&ss);
        for (size_t i = 0; i < ELEMENTSOF(stop_signals); i++)
                sigaddset(&ss, stop_signals[i]);
        for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
                sigaddset(&ss, sig);
        sigprocmask(SIG_BLOCK, &ss, NULL);
        signal(SIGPIPE, SIG_IGN);
        signal(SIGXFSZ, SIG_IGN);
        return run_main(&a);
}
