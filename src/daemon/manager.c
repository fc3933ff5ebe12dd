/* SPDX-License-Identifier: MIT */
/*
 * One run of ebs-hydrated (see manager.h). The hydrator reads; this file sets up what it needs,
 * reports what it does (the bar, STATUS=, the D-Bus object, the journal records and the summary,
 * all phrased by report.c) and says how it ended. The mapping of the file systems into the plan
 * is manager-discovery.c's; the bar, STATUS= and the volume record manager-status.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "bus.h"
#include "discovery.h"
#include "hydrator.h"
#include "log.h"
#include "manager-internal.h"
#include "manager.h"
#include "parse.h"
#include "run-inputs.h"
#include "process-util.h"
#include "progress.h"
#include "report.h"
#include "siblings.h"
#include "sysfs.h"

/* The signals whose default action terminates without a core dump (signal(7)), real-time ones
 * aside; all of them stop a run the way SIGTERM does. */
static const int stop_signals[] = {
        SIGHUP,    SIGINT,  SIGTERM, SIGUSR1, SIGUSR2,   SIGALRM,
        SIGVTALRM, SIGPROF, SIGIO,   SIGPWR,  SIGSTKFLT,
};

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *run = userdata;

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
        Manager *run = userdata;

        if (!run->already) /* already_hydrated() says it */
                manager_notify_status(run);
        if (run->bus)
                hydrate_bus_refresh(run->bus);
        (void)sd_event_exit(run->event, 0);
}

/* The line on stdout that says how the run ended, for whoever ran it by hand. */
static void print_summary(Manager *run) {
        char line[REPORT_SUMMARY_MAX];
        HydratorStatus st;

        hydrator_get_status(run->hydrator, &st);
        (void)output_printf(STDOUT_FILENO, "%s\n", report_summary(line, sizeof(line), &st));
}

/* The journal record that says how the run ended; journalctl MESSAGE_ID=... finds them all. */
static void log_outcome(const Manager *run, const HydratorStatus *st) {
        const char *message_id;
        char line[REPORT_LINE_MAX];
        int level = report_journal(line, sizeof(line), st, run->devnode, &message_id);

        if (level >= 0)
                log_volume(level, message_id, st->key, run->devnode, "%s", line);
}

static int publish(Manager *run, const Args *a, const DeviceIdentity *id, const char *key) {
        HydrateBusIdentity bid = {key, id->kernel_name, id->device_name};

        if (a->no_bus)
                return 0;
        return hydrate_bus_new(&run->bus, run->event, run->hydrator, &bid);
}

/*
 * The hydrators of the volumes beside ours hear what we read and when we save (siblings.h), so
 * that they do not yield to us; without the runtime directory they would, and the run goes on.
 */
static void share(Manager *run) {
        int r = hydrator_share(run->hydrator, run->sysfs_root, run->runtime_fd);

        if (r < 0)
                log_warning_errno(r,
                                  "Cannot publish what %s reads in %s/%s (%m): the hydrators of "
                                  "the volumes beside it will yield to it",
                                  run->devnode, strempty(run->runtime_dir), SIBLINGS_DIR);
}

/*
 * Yield=: the disk's counters tell the hydrator when someone else uses the device. A device
 * without them (a sandbox that hides /sys, an odd driver) is still hydrated, at full speed,
 * and the journal says why it will not give way.
 */
static void watch_activity(Manager *run, const BlockDevice *dev, const HydrateSettings *settings) {
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
        r = hydrator_watch_neighbours(run->hydrator, run->sysfs_root, run->runtime_fd);
        if (r < 0)
                log_warning_errno(r,
                                  "Cannot watch the volumes beside %s (%m): yielding only "
                                  "to I/O on it",
                                  dev->path);
}

/* The state, or the plan of a Mode=used run, says there is nothing to read. */
static int already_hydrated(Manager *run) {
        char cold[FORMAT_BYTES_MAX];
        HydratorStatus st;
        uint64_t n;

        if (hydrator_record_complete(run->hydrator) < 0)
                return EBS_HYDRATE_EXIT_FAILURE;
        manager_publish_record(run, RECORD_COMPLETED);
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
        return EBS_HYDRATE_EXIT_SUCCESS;
}

/* The "started" record, then the reads: at once, what the mapping of the file systems reads
 * next (hydrator_read_ahead()); the plan follows the mapping. */
static int start_reading(Manager *run) {
        HydratorStatus st;
        char line[REPORT_LINE_MAX];
        int r;

        hydrator_get_status(run->hydrator, &st);
        log_volume(LOG_INFO, LOG_MESSAGE_HYDRATION_STARTED, run->key, run->devnode, "%s",
                   report_started(line, sizeof(line), &st, run->key, run->devnode, run->settings));
        watch_activity(run, run->dev, run->settings);
        r = hydrator_start(run->hydrator, on_finished, run);
        if (r < 0) {
                log_volume(LOG_ERR, LOG_MESSAGE_HYDRATION_FAILED, run->key, run->devnode, "%s",
                           report_start_failed(line, sizeof(line), &st, run->key, run->devnode, r));
                return r;
        }
        run->started = true;
        return 0;
}

/* Everything that can fail before the first read is set up before the "started" record, so
 * that every such record is followed by one that says how the run ended. */
static int set_up_reporting(Manager *run, const Args *a, const DeviceIdentity *id) {
        int r;

        if (publish(run, a, id, run->key) < 0)
                return -EIO;
        run->bar = a->progress == PROGRESS_ALWAYS ||
                   (a->progress == PROGRESS_AUTO && isatty(STDERR_FILENO));
        if (run->bar) {
                r = sd_event_add_time_relative(run->event, &run->bar_timer, CLOCK_MONOTONIC, 0, 0,
                                               manager_on_bar_timer, run);
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
                                       STATUS_INTERVAL_USEC, 0, manager_on_status_timer, run);
        if (r >= 0)
                r = sd_event_source_set_enabled(run->status_timer, SD_EVENT_ON);
        if (r >= 0)
                r = sd_event_add_time_relative(run->event, &run->phase_timer, CLOCK_MONOTONIC,
                                               PHASE_WATCH_USEC, 0, manager_on_phase_timer, run);
        if (r >= 0)
                r = sd_event_source_set_enabled(run->phase_timer, SD_EVENT_ON);
        if (r < 0)
                return log_error_errno(r, "Failed to set up status reporting: %m");
        return 0;
}

static int hydrate(Manager *run, const Args *a, const BlockDevice *dev, const DeviceIdentity *id,
                   const char *key, int dir_fd, const HydrateSettings *settings) {
        _cleanup_close_ int lock_fd = -1;
        char line[REPORT_LINE_MAX];
        HydratorStatus st;
        uint64_t stalled;
        int r;

        run->dev = dev;
        run->settings = settings;
        run->key = key;
        run->code = -1;
        lock_fd = state_lock(dir_fd, key);
        if (lock_fd == -EBUSY)
                return log_error_errno(lock_fd,
                                       "%s (%s) is being hydrated by another process already", key,
                                       dev->path);
        if (lock_fd == -ELOOP) /* planted: a restart cannot help */
                return log_error_errno(lock_fd,
                                       "Refusing to lock the state of %s: %s/%s.lock is a "
                                       "symbolic link or not a regular file; remove it",
                                       key, run->state_dir, key);
        if (lock_fd < 0)
                return log_error_errno(lock_fd, "Failed to lock state of %s: %m", key);
        r = hydrator_new(&run->hydrator, run->event, dev, key, dir_fd, settings);
        if (r < 0)
                return EBS_HYDRATE_EXIT_FAILURE;
        /* A volume read in full needs no plan: mapping it would read its metadata again on
         * every start (libblkid's and libext2fs's reads go through the page cache, which the
         * kernel drops when the device is closed), and "already hydrated" reads nothing. */
        if (hydrator_state_complete(run->hydrator))
                return already_hydrated(run);
        /* AWS may have said already that nothing is cold: then nothing is read. */
        manager_aws_init(run);
        if (manager_aws_check(run) > 0)
                return manager_completed_by_aws(run);
        /* Before the file systems are mapped: the volumes beside ours hear of us at once. */
        share(run);
        r = hydrator_save_loaded(run->hydrator);
        if (r < 0)
                /* A full or read-only file system, or an I/O error, may pass; anything else in
                 * the way (a directory under the temporary file's name) waits for a person:
                 * report_exit_status_errno() tells them apart. */
                return log_error_errno(r,
                                       "Cannot save progress in %s (%m, saving %s.state): not "
                                       "reading %s, whose progress could not be kept",
                                       run->state_dir, key, dev->path);
        if (set_up_reporting(run, a, id) < 0)
                return EBS_HYDRATE_EXIT_FAILURE;
        /* Until the file systems are mapped, the plan is a placeholder: it reads only what the
         * mapping asks for ahead, and reports no phase done. */
        r = hydrator_set_layout(run->hydrator, NULL, NULL, 0, PLAN_STAGE_METADATA);
        if (r < 0)
                return log_error_errno(r, "Failed to plan the hydration of %s: %m", key);
        /* Before READY=1: once "systemctl start" returns, waiters see this run, not the last. */
        manager_publish_record(run, _RECORD_STATE_INVALID);
        /* State loaded, bus name owned: ready. Mapping the file systems reads the device, and a
         * cold volume takes its time over it (or a broken one forever): it runs in a thread of
         * its own, and the event loop, for the reads, STATUS=, the watchdog, the bus and
         * signals, goes on meanwhile. */
        (void)sd_notify(false, "READY=1");
        if (manager_start_discovery(run) < 0)
                return EBS_HYDRATE_EXIT_FAILURE;
        /* Before the first read: what waits for the AWS helper's word is held from the start. */
        if (manager_aws_watch(run) < 0)
                return EBS_HYDRATE_EXIT_FAILURE;
        if (start_reading(run) < 0)
                return EBS_HYDRATE_EXIT_FAILURE;
        manager_notify_status(run);
        r = sd_event_loop(run->event);
        stalled = discovery_stalled_usec(run->discovery);
        run->discovery = discovery_free(run->discovery); /* one stuck in the device is let go */
        if (r < 0) {
                log_error_errno(r, "Event loop failed: %m");
                manager_publish_record(run, RECORD_FAILED);
                return EBS_HYDRATE_EXIT_FAILURE;
        }
        if (run->code >= 0) {
                if (run->code != EBS_HYDRATE_EXIT_SUCCESS)
                        manager_publish_record(run, RECORD_FAILED);
                return run->code;
        }
        if (run->aws_reason)
                return manager_completed_by_aws(run);
        if (run->already)
                return already_hydrated(run);
        if (!run->started) { /* stopped before the hydrator could start */
                manager_publish_record(run, RECORD_STOPPED);
                (void)sd_notifyf(
                        false, "STATUS=%s",
                        report_stopped_mapping(line, sizeof(line), key, true, stalled > 0));
                if (stalled > 0)
                        log_warning("%s: %s holds the reads of the file-system discovery, and "
                                    "the kernel lets this process exit only when they return",
                                    key, run->devnode);
                (void)output_printf(STDOUT_FILENO, "%s\n",
                                    report_stopped_mapping(line, sizeof(line), key, false, false));
                return EBS_HYDRATE_EXIT_FAILURE;
        }
        manager_draw_bar(run);
        manager_clear_bar(run);
        manager_publish_record(run, _RECORD_STATE_INVALID);
        hydrator_get_status(run->hydrator, &st);
        /* The journal first: the terminal may be gone (a closed pipe, a full one), the record
         * of how the run ended must not go with it. */
        if (st.depth_auto && st.run_bytes > 0)
                log_info("%s", report_depth_at_end(line, sizeof(line), &st));
        log_outcome(run, &st);
        if (st.stalled_usec > 0 && st.in_flight > 0)
                log_warning("%s: progress saved; %s still holds %u read%s, and the kernel lets "
                            "this process exit only when they return",
                            key, run->devnode, st.in_flight, st.in_flight == 1 ? "" : "s");
        else if (stalled > 0)
                log_warning("%s: %s holds the reads of the file-system discovery, and the kernel "
                            "lets this process exit only when they return",
                            key, run->devnode);
        print_summary(run);
        return report_exit_status(&st);
}

void manager_block_signals(void) {
        sigset_t ss;

        sigemptyset(&ss);
        for (size_t i = 0; i < ELEMENTSOF(stop_signals); i++)
                sigaddset(&ss, stop_signals[i]);
        for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
                sigaddset(&ss, sig);
        sigprocmask(SIG_BLOCK, &ss, NULL);
}

static void manager_done(Manager *run) {
        discovery_free(run->discovery);
        hydrate_bus_free(run->bus);   /* borrows the hydrator */
        hydrator_free(run->hydrator); /* waits for reads in flight; the state is already saved */
        sd_event_source_disable_unref(run->bar_timer);
        sd_event_source_disable_unref(run->status_timer);
        sd_event_source_disable_unref(run->phase_timer);
        sd_event_source_disable_unref(run->aws_timer);
        sd_event_source_disable_unref(run->aws_inotify);
        sd_event_unref(run->event);
        free(run->state_dir);
        free(run->runtime_dir);
        if (run->runtime_fd >= 0)
                (void)close(run->runtime_fd);
}

/*
 * The record's last word when the run ends before the hydrator could say it, or says it wrongly
 * for a waiter: @otherwise, unless the state says the volume is hydrated already (then
 * "completed": a service waiting for it may start); nothing while another run holds the volume
 * (the record is that run's). The state directory is only looked at, if it may be trusted: its
 * troubles are not this record's. @otherwise _RECORD_STATE_INVALID: the run said its last word
 * itself. Then a record that could not be written is settled (manager_settle_record()).
 */
static void last_record(Manager *run, const Args *a, const char *key, RecordState otherwise) {
        _cleanup_free_ char *path = NULL;
        StateSummary s;
        _cleanup_close_ int fd = -1, lock_fd = -1;
        struct stat st;

        if (run->runtime_fd < 0)
                return;
        if (inputs_state_dir_path(a, &path) >= 0)
                fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0 && fstat(fd, &st) >= 0 && state_dir_verdict(&st, geteuid()) == 0) {
                lock_fd = state_lock(fd, key);
                if (lock_fd == -EBUSY)
                        return;
                /* A summary: the hydrator still holds its own chunk map, which a second one
                 * would double. */
                if (otherwise != _RECORD_STATE_INVALID && state_load_summary(fd, key, &s) >= 0 &&
                    streq_ptr(s.key, key) && (s.complete || s.used_complete)) {
                        run->record.hydrated_bytes = MIN(s.done_bytes, run->record.size_bytes);
                        otherwise = RECORD_COMPLETED;
                }
        }
        if (otherwise != _RECORD_STATE_INVALID)
                manager_publish_record(run, otherwise);
        /* Still holding the volume (or with no state directory to lock it in): no other run
         * writes its record meanwhile. */
        manager_settle_record(run);
}

/*
 * How the run ended, for the record, so that no waiter is left with "hydrating": 0 keeps what
 * the run wrote (completed); 2 and 3 are final ("failed"); 1 and 4 are not: the unit restarts a
 * run that failed (Restart=on-failure) and udev one whose volume comes back, and the next run
 * resumes ("stopped"). Nothing when another run holds the volume.
 */
static void end_record(Manager *run, const Args *a, const char *key, int r) {
        int code = r >= 0 ? r : report_exit_status_errno(r);

        if (r == -EBUSY) /* another run's volume, and its record */
                return;
        last_record(run, a, key,
                    code == EBS_HYDRATE_EXIT_SUCCESS
                            ? _RECORD_STATE_INVALID /* the run's own word */
                    : code == EBS_HYDRATE_EXIT_USAGE || code == EBS_HYDRATE_EXIT_UNREADABLE
                            ? RECORD_FAILED
                            : RECORD_STOPPED);
}

static int set_up_event_loop(Manager *run) {
        int r;

        r = sd_event_default(&run->event);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(stop_signals); i++)
                r = sd_event_add_signal(run->event, NULL, stop_signals[i], on_signal, run);
        for (int sig = SIGRTMIN; r >= 0 && sig <= SIGRTMAX; sig++)
                r = sd_event_add_signal(run->event, NULL, sig, on_signal, run);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the event loop: %m");
        return 0;
}

int manager_run(const Args *a, int *ret_signal) {
        /* Freed in this order, the reverse of their declarations: the run (its hydrator waits
         * for its reads), then the device and the state directory it used. */
        _cleanup_(block_device_close) BlockDevice dev = {.fd = -1};
        _cleanup_close_ int dir_fd = -1;
        _cleanup_(manager_done) Manager run = {.sysfs_root = sysfs_root(), .runtime_fd = -1};
        DeviceIdentity id;
        HydrateSettings settings;
        char key[STATE_KEY_MAX + 1];
        int r;

        *ret_signal = 0;
        r = inputs_device(a, run.sysfs_root, &dev);
        if (r < 0)
                return r;
        r = identity_resolve(run.sysfs_root, dev.kernel_name, &id);
        if (r < 0) {
                /* e.g. -EFBIG or -EBADMSG: a sysfs attribute too long or with a NUL in it */
                (void)log_warning_errno(r, "Cannot identify %s from udev or sysfs, ignoring: %m",
                                        dev.kernel_name);
                memset(&id, 0, sizeof(id));
                snprintf(id.kernel_name, sizeof(id.kernel_name), "%s", dev.kernel_name);
        }
        snprintf(run.devnode, sizeof(run.devnode), "/dev/%s", dev.kernel_name);
        r = inputs_state_key(a, &id, key, sizeof(key));
        if (r < 0)
                return r;
        /* From here on a waiter hears how the run ended, whatever stops it (end_record()). */
        run.runtime_fd = inputs_runtime_dir(&run.runtime_dir);
        run.record = (VolumeRecord){.size_bytes = dev.size, .pid = getpid()};
        /* with the PID, it tells this process from a later one of the same PID */
        (void)process_start_time(0, &run.record.start_time);
        manager_set_record_word(run.record.volume_id, sizeof(run.record.volume_id), key);
        manager_set_record_word(run.record.kernel_name, sizeof(run.record.kernel_name),
                                id.kernel_name);
        manager_set_record_word(run.record.device_name, sizeof(run.record.device_name),
                                id.device_name);
        /* Which attachment of the disk this is: a record of another volume once attached under
         * the same kernel name must not answer for this one (0 on kernels without it). */
        (void)sysfs_disk_seq(dev.kernel_name, &run.record.diskseq);
        r = inputs_settings(a, &id, &settings);
        if (r >= 0 && !settings.enabled) {
                last_record(&run, a, key, RECORD_DISABLED);
                (void)output_printf(STDOUT_FILENO,
                                    "%s: hydration disabled by configuration (Enabled=no), "
                                    "nothing to do\n",
                                    key);
                (void)sd_notifyf(false, "READY=1\nSTATUS=%s: hydration disabled by configuration",
                                 key);
                return EBS_HYDRATE_EXIT_SUCCESS;
        }
        if (r >= 0)
                r = dir_fd = inputs_state_dir(a, &run.state_dir);
        if (r >= 0)
                r = set_up_event_loop(&run) < 0
                            ? EBS_HYDRATE_EXIT_FAILURE
                            : hydrate(&run, a, &dev, &id, key, dir_fd, &settings);
        end_record(&run, a, key, r);
        *ret_signal = run.signal;
        return r;
}
