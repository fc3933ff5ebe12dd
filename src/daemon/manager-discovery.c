/* SPDX-License-Identifier: MIT */
/*
 * How one run maps the file systems of its device while the hydrator reads (discovery.h): the
 * reads the mapping needs go first, and what it finds becomes the plan, its HotPaths= after the
 * metadata. A failure to plan ends the run.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bus.h"
#include "discovery.h"
#include "hydrator.h"
#include "log.h"
#include "manager-internal.h"
#include "parse.h"
#include "report.h"
#include "util.h"

static void log_plan(const Manager *run, const char *key, const HydrateSettings *s) {
        char b[_PLAN_STAGE_MAX][FORMAT_BYTES_MAX];
        HydratorStatus st;

        hydrator_get_status(run->hydrator, &st);
        for (PlanStage i = 0; i < _PLAN_STAGE_MAX; i++)
                format_bytes(b[i], sizeof(b[i]), st.plan.total_bytes[i]);
        if (st.plan.hot_pending)
                (void)snprintf(b[PLAN_STAGE_HOT], sizeof(b[PLAN_STAGE_HOT]), "pending");
        log_info("%s: plan: metadata %s, hot paths %s, used %s, free %s%s", key,
                 b[PLAN_STAGE_METADATA], b[PLAN_STAGE_HOT], b[PLAN_STAGE_USED], b[PLAN_STAGE_FREE],
                 !st.plan.fs_aware              ? " (whole device, in offset order)"
                 : s->mode == HYDRATE_MODE_USED ? "; Mode=used: free space is not read"
                                                : "");
}

/* Ends the event loop with @code, the hydrator stopped (its progress saved) if it reads. */
static void end_early(Manager *run, int code) {
        run->code = code;
        if (run->started)
                hydrator_stop(run->hydrator);
        (void)sd_event_exit(run->event, 0);
}

static bool has_hot_paths(const HydrateSettings *s) {
        const char *p = strempty(s->hot_paths);

        return p[strspn(p, " \t")] != '\0';
}

static bool reading(const Manager *run) {
        HydratorStatus st;

        hydrator_get_status(run->hydrator, &st);
        return run->code < 0 && !run->already && st.phase == HYDRATOR_HYDRATING;
}

/* Blocks the mapping reads next: read them now, many at once, so that it finds them warm. */
static void on_ahead(Discovery *d, const ByteRange *ranges, size_t n, void *userdata) {
        Manager *run = userdata;
        int r;

        if (!reading(run))
                return;
        r = hydrator_read_ahead(run->hydrator, ranges, n);
        if (r < 0)
                log_warning_errno(r, "%s: cannot queue the reads the mapping needs (%m), ignoring",
                                  run->key);
}

/* The new plan leaves nothing to read (Mode=used, a volume whose used blocks are all read): the
 * run ends as "already hydrated", the hydrator stopped with its progress saved. */
static void check_already(Manager *run) {
        if (!hydrator_already_complete(run->hydrator))
                return;
        run->already = true;
        hydrator_stop(run->hydrator);
}

/* Plans by @res's layout, or with @with_hot adds its HotPaths= to that plan; ends the run if
 * that fails. */
static bool replan(Manager *run, DiscoveryResult *res, bool with_hot) {
        bool hot = has_hot_paths(run->settings);
        int r;

        /* The plan takes the layout's chunk kinds over (no second copy of two bits a chunk): the
         * hot paths join that plan, they do not make another from the layout. */
        if (with_hot)
                r = hydrator_add_hot_paths(run->hydrator, res->hot, res->n_hot);
        else
                r = hydrator_set_layout(run->hydrator, res->mapped >= 0 ? &res->layout : NULL, NULL,
                                        0, hot ? PLAN_STAGE_HOT : _PLAN_STAGE_MAX);
        if (r < 0) {
                log_error_errno(r, "Failed to plan the hydration of %s: %m", run->key);
                end_early(run, EBS_HYDRATE_EXIT_FAILURE);
                return false;
        }
        log_plan(run, run->key, run->settings);
        if (!hot || with_hot)
                check_already(run);
        manager_notify_status(run); /* at once: the phase changed */
        if (run->bus)
                hydrate_bus_refresh(run->bus);
        return true;
}

/*
 * The file systems are mapped (or found unmappable: then the device is read whole, in offset
 * order, as it always was; only running out of memory is an error): the plan takes them. With
 * HotPaths=, the metadata is read while they are found, and the stages after wait for them.
 */
static void on_mapped(Discovery *d, void *userdata) {
        Manager *run = userdata;
        DiscoveryResult *res = discovery_result(d);

        if (run->planned || !reading(run))
                return;
        run->planned = true;
        if (res->mapped < 0)
                log_warning("%s: cannot map the file systems of %s (%s); reading the whole "
                            "device, in offset order",
                            run->key, run->devnode, res->error ?: strerror(-res->mapped));
        for (size_t i = 0; res->mapped >= 0 && i < res->layout.n_notes; i++)
                log_info("%s: %s", run->devnode, res->layout.notes[i]);
        (void)replan(run, res, false);
}

/* HotPaths= resolved too: the hot paths join the plan, after the metadata. */
static void on_discovered(Discovery *d, void *userdata) {
        Manager *run = userdata;
        DiscoveryResult *res = discovery_result(d);

        on_mapped(d, userdata); /* if its message was lost to a lack of memory */
        if (!reading(run))
                return;
        if (res->hot_error < 0) {
                log_error_errno(res->hot_error, "Failed to resolve HotPaths=: %m");
                end_early(run, EBS_HYDRATE_EXIT_FAILURE);
                return;
        }
        if (has_hot_paths(run->settings))
                (void)replan(run, res, true);
}

static void on_discovery_stalled(void *userdata) {
        manager_notify_status(userdata); /* at once, not at the next status period */
}

int manager_start_discovery(Manager *run) {
        _cleanup_free_ char *stat_path = NULL;
        DiscoveryRequest req = {
                .fd = run->dev->fd,
                .size = run->dev->size,
                .chunk_size = hydrator_chunk_size(run->hydrator),
                .hot_paths = run->settings->hot_paths,
                .sysfs_root = run->sysfs_root,
                .key = run->key,
                .devnode = run->devnode,
                .stalled = on_discovery_stalled,
                .ahead = on_ahead,
                .mapped = on_mapped,
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
