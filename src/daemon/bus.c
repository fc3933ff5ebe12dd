/* SPDX-License-Identifier: MIT */
/*
 * The org.ebshydrate.Volume1 object on the system bus. Properties are fields of a snapshot
 * that a one-second timer refreshes from the hydrator; sd-bus reads them by offset, and only
 * the fields that changed since the last refresh are announced. Methods are for root only:
 * the shipped policy says so, and so does the daemon, in case the policy is missing.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "bus.h"
#include "report.h"
#include "parse.h"
#include "log.h"
#include "progress.h"
#include "util.h"

typedef struct BusProperties {
        char *volume_id;
        char *device;
        char *device_name;
        const char *state; /* static string */
        uint64_t size_bytes;
        uint64_t hydrated_bytes;
        double percent;
        uint64_t rate_bytes_per_second;
        uint64_t eta_seconds;
        uint64_t error_count;
        uint64_t empty_bytes; /* of size_bytes: the snapshot stores nothing of them */
        const char *phase;    /* static string: the plan stage being read, or "done" */
        PlanProgress stages;  /* PhaseProgress */
        int yielding;         /* Yielding (sd-bus reads a "b" as int) */
        char *aws;            /* HydrateBus.aws: EBS_HYDRATE_AWS_*, "" without findings */
        char *aws_snapshot_id;
        int64_t aws_progress; /* percent, -1 unknown */
        int64_t aws_eta_seconds;
} BusProperties;

struct HydrateBus {
        sd_bus *bus;
        sd_bus_slot *object_slot;
        sd_event_source *refresh_timer;
        Hydrator *hydrator;
        BusProperties props;
        char aws[RECORD_WORD_MAX];
        char name[HYDRATE_BUS_NAME_MAX + 1];
};

int hydrate_bus_name(const char *kernel_name, char *ret, size_t size) {
        size_t prefix = strlen(HYDRATE_BUS_NAME_PREFIX), n = strlen(kernel_name);
        bool digit_first = kernel_name[0] >= '0' && kernel_name[0] <= '9';

        /* An element of a bus name may not start with a digit; a leading '_' fixes that. */
        if (n == 0 || prefix + digit_first + n + 1 > MIN(size, (size_t)HYDRATE_BUS_NAME_MAX + 1))
                return -ENAMETOOLONG;
        memcpy(ret, HYDRATE_BUS_NAME_PREFIX, prefix);
        if (digit_first)
                ret[prefix++] = '_';
        for (size_t i = 0; i < n; i++) {
                char c = kernel_name[i];
                bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                          (c >= '0' && c <= '9') || c == '_' || c == '-';

                ret[prefix + i] = ok ? c : '_';
        }
        ret[prefix + n] = '\0';
        return 0;
}

/* The snapshot of what changes; identity fields are set once. */
static void snapshot(const Hydrator *h, BusProperties *p) {
        HydratorStatus st;
        uint64_t eta;

        hydrator_get_status(h, &st);
        eta = progress_eta(st.done_bytes, st.size, st.rate);
        p->state = report_bus_state(&st);
        /* The whole volume, the empty part of it counted as hydrated; the percentage and the
         * ETA are of what is to be read (with the snapshot's block list: what it stores). */
        p->size_bytes = st.device_size;
        p->empty_bytes = st.plan.empty_bytes;
        p->hydrated_bytes = MIN(st.done_bytes + st.plan.empty_bytes, st.device_size);
        p->percent = (double)progress_permille(st.done_bytes, st.size) / 10.0;
        p->rate_bytes_per_second = st.rate;
        p->eta_seconds = eta == PROGRESS_ETA_UNKNOWN ? 0 : eta;
        p->error_count = st.n_bad;
        p->phase = plan_stage_to_string(st.plan.current);
        p->stages = st.plan;
        p->yielding = st.phase == HYDRATOR_HYDRATING && !st.paused && st.yielding;
}

/* PhaseProgress a(stt): (name, done bytes, total bytes) of each stage that has bytes. */
static int property_get_phase_progress(sd_bus *bus, const char *path, const char *interface,
                                       const char *property, sd_bus_message *reply, void *userdata,
                                       sd_bus_error *error) {
        const PlanProgress *pp = &((HydrateBus *)userdata)->props.stages;
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(stt)");
        for (PlanStage s = 0; r >= 0 && s < _PLAN_STAGE_MAX; s++)
                if (pp->total_bytes[s] > 0)
                        r = sd_bus_message_append(reply, "(stt)", plan_stage_to_string(s),
                                                  pp->done_bytes[s], pp->total_bytes[s]);
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

static int check_root(sd_bus_message *m, sd_bus_error *error) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        uid_t uid;
        int r;

        /* From the bus daemon (UnixUserID: the peer's kernel credentials), not from /proc, which
         * ProtectProc=invisible hides from us, and not from anything the caller claims. */
        r = sd_bus_get_name_creds(sd_bus_message_get_bus(m), sd_bus_message_get_sender(m),
                                  SD_BUS_CREDS_EUID, &creds);
        if (r >= 0)
                r = sd_bus_creds_get_euid(creds, &uid);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Cannot identify the caller: %m");
        if (uid != 0) {
                log_warning("Refused %s() from uid %u: only root may control hydration",
                            sd_bus_message_get_member(m), (unsigned)uid);
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                         "Only root may control hydration (caller uid %u)",
                                         (unsigned)uid);
        }
        return 0;
}

/* Pause() and Resume(): root only, and only while hydrating. */
static int control(sd_bus_message *m, HydrateBus *b, sd_bus_error *error, int (*action)(Hydrator *),
                   const char *verb) {
        int r = check_root(m, error);

        if (r < 0)
                return r;
        r = action(b->hydrator);
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED,
                                         "%s is not hydrating, nothing to %s", b->props.volume_id,
                                         verb);
        hydrate_bus_refresh(b);
        return sd_bus_reply_method_return(m, NULL);
}

static int method_pause(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        return control(m, userdata, error, hydrator_pause, "pause");
}

static int method_resume(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        return control(m, userdata, error, hydrator_resume, "resume");
}

static int method_set_rate_limit(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        HydrateBus *b = userdata;
        uint64_t rate;
        int r = check_root(m, error);

        if (r < 0)
                return r;
        r = sd_bus_message_read(m, "t", &rate);
        if (r < 0)
                return r;
        hydrator_set_rate_limit(b->hydrator, rate);
        if (rate == 0)
                log_info("%s: rate limit removed over D-Bus", b->props.volume_id);
        else {
                char human[FORMAT_BYTES_MAX];

                log_info("%s: rate limit set to %s/s (%" PRIu64 " byte%s per second) over D-Bus",
                         b->props.volume_id, format_bytes(human, sizeof(human), rate), rate,
                         rate == 1 ? "" : "s");
        }
        return sd_bus_reply_method_return(m, NULL);
}

#define PROP_CONST(name, sig, field)                                        \
        SD_BUS_PROPERTY(name, sig, NULL, offsetof(HydrateBus, props.field), \
                        SD_BUS_VTABLE_PROPERTY_CONST)
#define PROP_CHANGING(name, sig, field)                                     \
        SD_BUS_PROPERTY(name, sig, NULL, offsetof(HydrateBus, props.field), \
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE)

static const sd_bus_vtable volume_vtable[] = {
        SD_BUS_VTABLE_START(0),
        PROP_CONST(HYDRATE_BUS_PROP_VOLUME_ID, "s", volume_id),
        PROP_CONST(HYDRATE_BUS_PROP_DEVICE, "s", device),
        PROP_CONST(HYDRATE_BUS_PROP_DEVICE_NAME, "s", device_name),
        PROP_CHANGING(HYDRATE_BUS_PROP_STATE, "s", state),
        PROP_CONST(HYDRATE_BUS_PROP_SIZE_BYTES, "t", size_bytes),
        PROP_CHANGING(HYDRATE_BUS_PROP_HYDRATED_BYTES, "t", hydrated_bytes),
        PROP_CHANGING(HYDRATE_BUS_PROP_PERCENT, "d", percent),
        PROP_CHANGING(HYDRATE_BUS_PROP_RATE, "t", rate_bytes_per_second),
        PROP_CHANGING(HYDRATE_BUS_PROP_ETA_SECONDS, "t", eta_seconds),
        PROP_CHANGING(HYDRATE_BUS_PROP_ERROR_COUNT, "t", error_count),
        PROP_CHANGING(HYDRATE_BUS_PROP_EMPTY_BYTES, "t", empty_bytes),
        PROP_CHANGING(HYDRATE_BUS_PROP_PHASE, "s", phase),
        SD_BUS_PROPERTY(HYDRATE_BUS_PROP_PHASE_PROGRESS, "a(stt)", property_get_phase_progress, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        PROP_CHANGING(HYDRATE_BUS_PROP_YIELDING, "b", yielding),
        PROP_CHANGING(HYDRATE_BUS_PROP_AWS, "s", aws),
        PROP_CHANGING(HYDRATE_BUS_PROP_AWS_SNAPSHOT_ID, "s", aws_snapshot_id),
        PROP_CHANGING(HYDRATE_BUS_PROP_AWS_PROGRESS, "x", aws_progress),
        PROP_CHANGING(HYDRATE_BUS_PROP_AWS_ETA_SECONDS, "x", aws_eta_seconds),
        SD_BUS_METHOD(HYDRATE_BUS_METHOD_PAUSE, "", "", method_pause, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD(HYDRATE_BUS_METHOD_RESUME, "", "", method_resume, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD(HYDRATE_BUS_METHOD_SET_RATE_LIMIT, "t", "", method_set_rate_limit,
                      SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END,
};

void hydrate_bus_refresh(HydrateBus *b) {
        BusProperties old = b->props;
        const char *changed[11];
        size_t n = 0;
        int r;

        snapshot(b->hydrator, &b->props);
        if (old.state != b->props.state)
                changed[n++] = HYDRATE_BUS_PROP_STATE;
        if (old.hydrated_bytes != b->props.hydrated_bytes)
                changed[n++] = HYDRATE_BUS_PROP_HYDRATED_BYTES;
        if (old.percent != b->props.percent)
                changed[n++] = HYDRATE_BUS_PROP_PERCENT;
        if (old.rate_bytes_per_second != b->props.rate_bytes_per_second)
                changed[n++] = HYDRATE_BUS_PROP_RATE;
        if (old.eta_seconds != b->props.eta_seconds)
                changed[n++] = HYDRATE_BUS_PROP_ETA_SECONDS;
        if (old.error_count != b->props.error_count)
                changed[n++] = HYDRATE_BUS_PROP_ERROR_COUNT;
        if (old.empty_bytes != b->props.empty_bytes)
                changed[n++] = HYDRATE_BUS_PROP_EMPTY_BYTES;
        if (old.phase != b->props.phase)
                changed[n++] = HYDRATE_BUS_PROP_PHASE;
        if (memcmp(old.stages.done_bytes, b->props.stages.done_bytes,
                   sizeof(old.stages.done_bytes)) != 0 ||
            memcmp(old.stages.total_bytes, b->props.stages.total_bytes,
                   sizeof(old.stages.total_bytes)) != 0)
                changed[n++] = HYDRATE_BUS_PROP_PHASE_PROGRESS;
        if (old.yielding != b->props.yielding)
                changed[n++] = HYDRATE_BUS_PROP_YIELDING;
        if (n == 0)
                return;
        changed[n] = NULL;
        r = sd_bus_emit_properties_changed_strv(b->bus, HYDRATE_BUS_PATH, HYDRATE_BUS_INTERFACE,
                                                (char **)changed);
        if (r < 0)
                log_debug_errno(r, "Failed to emit PropertiesChanged, ignoring: %m");
}

void hydrate_bus_set_aws(HydrateBus *b, const VolumeRecord *r) {
        const char *changed[5];
        size_t n = 0;
        char *id;
        int e;

        if (!b)
                return;
        if (!streq(b->props.aws, r->aws)) {
                (void)snprintf(b->aws, sizeof(b->aws), "%s", r->aws);
                changed[n++] = HYDRATE_BUS_PROP_AWS;
        }
        if (!streq(b->props.aws_snapshot_id, r->aws_snapshot_id)) {
                id = strdup(r->aws_snapshot_id);
                if (id) {
                        free(b->props.aws_snapshot_id);
                        b->props.aws_snapshot_id = id;
                        changed[n++] = HYDRATE_BUS_PROP_AWS_SNAPSHOT_ID;
                }
        }
        if (b->props.aws_progress != r->aws_progress) {
                b->props.aws_progress = r->aws_progress;
                changed[n++] = HYDRATE_BUS_PROP_AWS_PROGRESS;
        }
        if (b->props.aws_eta_seconds != r->aws_eta_seconds) {
                b->props.aws_eta_seconds = r->aws_eta_seconds;
                changed[n++] = HYDRATE_BUS_PROP_AWS_ETA_SECONDS;
        }
        if (n == 0 || !b->bus)
                return;
        changed[n] = NULL;
        e = sd_bus_emit_properties_changed_strv(b->bus, HYDRATE_BUS_PATH, HYDRATE_BUS_INTERFACE,
                                                (char **)changed);
        if (e < 0)
                log_debug_errno(e, "Failed to emit PropertiesChanged, ignoring: %m");
}

static int on_refresh(sd_event_source *s, uint64_t usec, void *userdata) {
        hydrate_bus_refresh(userdata);
        (void)sd_event_source_set_time(s, usec + HYDRATE_BUS_REFRESH_USEC);
        return 0;
}

static int set_identity(HydrateBus *b, const HydrateBusIdentity *id) {
        if (asprintf(&b->props.device, "/dev/%s", id->kernel_name) < 0)
                return -ENOMEM;
        b->props.volume_id = strdup(id->volume_id);
        b->props.device_name = strdup(id->device_name ?: "");
        if (!b->props.volume_id || !b->props.device_name)
                return -ENOMEM;
        return 0;
}

static int connect_and_publish(HydrateBus *b, sd_event *event) {
        int r;

        r = sd_bus_open_system(&b->bus);
        if (r < 0)
                return log_error_errno(r,
                                       "Cannot connect to the D-Bus system bus: %m (use --no-bus "
                                       "to run without the status object)");
        (void)sd_bus_set_description(b->bus, "ebs-hydrated");
        r = sd_bus_attach_event(b->bus, event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "Failed to attach to the event loop: %m");
        r = sd_bus_add_object_vtable(b->bus, &b->object_slot, HYDRATE_BUS_PATH,
                                     HYDRATE_BUS_INTERFACE, volume_vtable, b);
        if (r < 0)
                return log_error_errno(r, "Failed to publish %s: %m", HYDRATE_BUS_PATH);
        r = sd_bus_request_name(b->bus, b->name, 0);
        if (r == -EEXIST)
                return log_error_errno(r,
                                       "D-Bus name %s is owned by another process: is "
                                       "%s being hydrated already?",
                                       b->name, b->props.device);
        if (r < 0)
                return log_error_errno(r,
                                       "Cannot own D-Bus name %s: %m (is the D-Bus policy "
                                       "org.ebshydrate.Volume1.conf installed?)",
                                       b->name);
        return 0;
}

int hydrate_bus_new(HydrateBus **ret, sd_event *event, Hydrator *h, const HydrateBusIdentity *id) {
        _cleanup_(hydrate_bus_freep) HydrateBus *b = NULL;
        int r;

        b = calloc(1, sizeof(*b));
        if (!b)
                return log_error_errno(-ENOMEM, "Out of memory");
        b->hydrator = h;
        r = hydrate_bus_name(id->kernel_name, b->name, sizeof(b->name));
        if (r < 0)
                return log_error_errno(r, "No D-Bus name fits device %s", id->kernel_name);
        b->props.aws = b->aws;
        b->props.aws_snapshot_id = strdup("");
        b->props.aws_progress = b->props.aws_eta_seconds = -1;
        if (set_identity(b, id) < 0 || !b->props.aws_snapshot_id)
                return log_error_errno(-ENOMEM, "Out of memory");
        snapshot(h, &b->props);
        r = connect_and_publish(b, event);
        if (r < 0)
                return r;
        r = sd_event_add_time_relative(event, &b->refresh_timer, CLOCK_MONOTONIC,
                                       HYDRATE_BUS_REFRESH_USEC, 0, on_refresh, b);
        if (r >= 0)
                r = sd_event_source_set_enabled(b->refresh_timer, SD_EVENT_ON);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the D-Bus refresh timer: %m");
        *ret = TAKE_PTR(b);
        return 0;
}

HydrateBus *hydrate_bus_free(HydrateBus *b) {
        if (!b)
                return NULL;
        sd_event_source_disable_unref(b->refresh_timer);
        sd_bus_slot_unref(b->object_slot);
        if (b->bus) {
                (void)sd_bus_flush(b->bus);
                sd_bus_flush_close_unref(b->bus);
        }
        free(b->props.volume_id);
        free(b->props.device);
        free(b->props.device_name);
        free(b->props.aws_snapshot_id);
        free(b);
        return NULL;
}
