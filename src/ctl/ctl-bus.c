/* SPDX-License-Identifier: MIT */
/*
 * The client half of org.ebshydrate.Volume1 over sd-bus: ListNames filtered by the instance
 * prefix, Properties.GetAll decoded by a table of known properties, and method calls. Anyone may
 * read; the methods are root-only, and their AccessDenied is passed back untouched.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl-bus.h"
#include "log.h"
#include "progress.h"
#include "util.h"

typedef struct PropertySlot {
        const char *name;
        char type; /* 's' (char * in VolumeInfo, replaced), 'S' (char[size]: a printable word, or
                    * "" for anything else), 't' (uint64_t), 'x' (int64_t) or 'b' (bool) */
        size_t offset;
        size_t size;
} PropertySlot;

static const PropertySlot property_slots[] = {
        {HYDRATE_BUS_PROP_VOLUME_ID, 's', offsetof(VolumeInfo, volume_id), 0},
        {HYDRATE_BUS_PROP_DEVICE, 's', offsetof(VolumeInfo, device), 0},
        {HYDRATE_BUS_PROP_DEVICE_NAME, 's', offsetof(VolumeInfo, device_name), 0},
        {HYDRATE_BUS_PROP_STATE, 's', offsetof(VolumeInfo, state), 0},
        {HYDRATE_BUS_PROP_SIZE_BYTES, 't', offsetof(VolumeInfo, size_bytes), 0},
        {HYDRATE_BUS_PROP_HYDRATED_BYTES, 't', offsetof(VolumeInfo, hydrated_bytes), 0},
        {HYDRATE_BUS_PROP_RATE, 't', offsetof(VolumeInfo, rate_bytes_per_second), 0},
        {HYDRATE_BUS_PROP_ETA_SECONDS, 't', offsetof(VolumeInfo, eta_seconds), 0},
        {HYDRATE_BUS_PROP_ERROR_COUNT, 't', offsetof(VolumeInfo, error_count), 0},
        {HYDRATE_BUS_PROP_EMPTY_BYTES, 't', offsetof(VolumeInfo, empty_bytes), 0},
        {HYDRATE_BUS_PROP_PHASE, 's', offsetof(VolumeInfo, phase), 0},
        {HYDRATE_BUS_PROP_YIELDING, 'b', offsetof(VolumeInfo, yielding), 0},
        {HYDRATE_BUS_PROP_AWS, 'S', offsetof(VolumeInfo, aws), sizeof(((VolumeInfo *)0)->aws)},
        {HYDRATE_BUS_PROP_AWS_SNAPSHOT_ID, 'S', offsetof(VolumeInfo, aws_snapshot_id),
         sizeof(((VolumeInfo *)0)->aws_snapshot_id)},
        {HYDRATE_BUS_PROP_AWS_PROGRESS, 'x', offsetof(VolumeInfo, aws_progress), 0},
        {HYDRATE_BUS_PROP_AWS_ETA_SECONDS, 'x', offsetof(VolumeInfo, aws_eta_seconds), 0},
};

const char *ctl_bus_kernel_name(const char *bus_name) {
        size_t n = strlen(HYDRATE_BUS_NAME_PREFIX);

        if (!bus_name || strncmp(bus_name, HYDRATE_BUS_NAME_PREFIX, n) != 0)
                return NULL;
        bus_name += n;
        /* One more element, no deeper name such as ...Volume1.nvme1n1.extra. */
        if (bus_name[0] == '\0' || strchr(bus_name, '.'))
                return NULL;
        return bus_name;
}

/* A bus name element: [A-Za-z0-9_-], not empty, not starting with a digit. */
static bool bus_name_element_valid(const char *s) {
        if (!s || s[0] == '\0' || (s[0] >= '0' && s[0] <= '9'))
                return false;
        return s[strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")] ==
               '\0';
}

int ctl_bus_name(const char *kernel_name, char **ret) {
        if (!bus_name_element_valid(kernel_name) ||
            strlen(kernel_name) > HYDRATE_BUS_KERNEL_NAME_MAX)
                return -EINVAL;
        return asprintf(ret, "%s%s", HYDRATE_BUS_NAME_PREFIX, kernel_name) < 0 ? -ENOMEM : 0;
}

static const PropertySlot *property_slot(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(property_slots); i++)
                if (streq_ptr(property_slots[i].name, name))
                        return &property_slots[i];
        return NULL;
}

static int read_string_into(sd_bus_message *m, char **field) {
        const char *s;
        char *copy;
        int r;

        r = sd_bus_message_read_basic(m, 's', &s);
        if (r < 0)
                return r;
        copy = strdup(s);
        if (!copy)
                return -ENOMEM;
        free(*field);
        *field = copy;
        return 0;
}

/* PhaseProgress a(stt), the message at its variant. */
static int read_phase_progress(sd_bus_message *m, VolumeInfo *v) {
        const char *name;
        uint64_t done, total;
        int r;

        r = sd_bus_message_enter_container(m, 'v', "a(stt)");
        if (r == -ENXIO)
                return -EBADMSG;
        if (r >= 0)
                r = sd_bus_message_enter_container(m, 'a', "(stt)");
        while (r >= 0 && (r = sd_bus_message_read(m, "(stt)", &name, &done, &total)) > 0)
                r = volume_info_add_phase(v, name, done, total);
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        return r < 0 ? r : sd_bus_message_exit_container(m);
}

/* The message is at the variant of one dict entry "{sv}" whose key was @name. */
static int read_property(sd_bus_message *m, const char *name, VolumeInfo *v) {
        const PropertySlot *slot = property_slot(name);
        char signature[2];
        void *field;
        int r;

        if (streq_ptr(name, HYDRATE_BUS_PROP_PHASE_PROGRESS))
                return read_phase_progress(m, v);
        if (!slot)
                return sd_bus_message_skip(m, "v");
        signature[0] = slot->type == 'S' ? 's' : slot->type;
        signature[1] = '\0';
        field = (char *)v + slot->offset;
        r = sd_bus_message_enter_container(m, 'v', signature);
        if (r == -ENXIO)
                return -EBADMSG; /* the variant holds another type */
        if (r < 0)
                return r;
        if (slot->type == 's')
                r = read_string_into(m, field);
        else if (slot->type == 'S') { /* a word shown in a table: printable, no space */
                const char *s;

                r = sd_bus_message_read_basic(m, 's', &s);
                if (r >= 0 && strlen(s) < slot->size && !s[strcspn(s, " \t\n\r\x7f")] &&
                    strspn(s,
                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") ==
                            strlen(s))
                        memcpy(field, s, strlen(s) + 1);
                else if (r >= 0)
                        *(char *)field = '\0';
        } else if (slot->type == 'b') { /* sd-bus reads a boolean as int */
                int b;

                r = sd_bus_message_read_basic(m, 'b', &b);
                *(bool *)field = b;
        } else
                r = sd_bus_message_read_basic(m, slot->type, field);
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static int read_properties(sd_bus_message *m, VolumeInfo *v) {
        const char *name;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                r = sd_bus_message_read_basic(m, 's', &name);
                if (r >= 0)
                        r = read_property(m, name, v);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

int ctl_bus_get_volume(sd_bus *bus, const char *kernel_name, VolumeInfo *ret,
                       sd_bus_error *ret_error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *name = NULL;
        VolumeInfo v;
        int r;

        r = ctl_bus_name(kernel_name, &name);
        if (r < 0)
                return r;
        r = sd_bus_call_method(bus, name, HYDRATE_BUS_PATH, "org.freedesktop.DBus.Properties",
                               "GetAll", ret_error, &reply, "s", HYDRATE_BUS_INTERFACE);
        if (r < 0)
                return r;
        r = volume_info_init(&v, NULL, NULL, NULL, kernel_name, NULL);
        if (r < 0)
                return r;
        r = read_properties(reply, &v);
        if (r >= 0 && v.volume_id[0] == '\0')
                r = -EBADMSG;
        if (r < 0) {
                volume_info_done(&v);
                return r == -ENXIO ? -EBADMSG : r;
        }
        v.running = true;
        if (v.eta_seconds == PROGRESS_ETA_UNKNOWN)
                v.eta_seconds = 0;
        *ret = v;
        return 0;
}

/* The instance is gone (or not yet serving): not an error when listing. */
static bool error_is_vanished(const sd_bus_error *e) {
        return sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN,
                                      SD_BUS_ERROR_NAME_HAS_NO_OWNER, SD_BUS_ERROR_NO_REPLY,
                                      SD_BUS_ERROR_UNKNOWN_OBJECT);
}

static int list_one(sd_bus *bus, const char *kernel_name, VolumeList *l) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        VolumeInfo v;
        int r;

        r = ctl_bus_get_volume(bus, kernel_name, &v, &error);
        if (r < 0 && error_is_vanished(&error))
                return 0;
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                log_warning("Cannot read the properties of %s%s: %s, ignoring",
                            HYDRATE_BUS_NAME_PREFIX, kernel_name,
                            sd_bus_error_is_set(&error) ? error.message : strerror(-r));
                return 0;
        }
        r = volume_list_add(l, &v);
        if (r < 0)
                volume_info_done(&v);
        return r;
}

int ctl_bus_list_volumes(sd_bus *bus, VolumeList *l, sd_bus_error *ret_error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *name;
        int r;

        r = sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                               "org.freedesktop.DBus", "ListNames", ret_error, &reply, NULL);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'a', "s");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read_basic(reply, 's', &name)) > 0) {
                const char *kernel_name = ctl_bus_kernel_name(name);

                if (!kernel_name)
                        continue;
                r = list_one(bus, kernel_name, l);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(reply);
}

int ctl_bus_call(sd_bus *bus, const char *kernel_name, const char *method, sd_bus_error *ret_error,
                 const char *types, ...) {
        _cleanup_free_ char *name = NULL;
        va_list ap;
        int r;

        r = ctl_bus_name(kernel_name, &name);
        if (r < 0)
                return r;
        va_start(ap, types);
        r = sd_bus_call_methodv(bus, name, HYDRATE_BUS_PATH, HYDRATE_BUS_INTERFACE, method,
                                ret_error, NULL, types, ap);
        va_end(ap);
        return r;
}
