/* SPDX-License-Identifier: MIT */
/*
 * The D-Bus status object of one running hydration: bus name org.ebshydrate.Volume1.<kernel
 * name>, object /org/ebshydrate/Volume1, read-only properties that anyone may read, and
 * Pause/Resume/SetRateLimit for root. Phase and PhaseProgress show the plan's stages
 * (metadata, hot-paths, used, free; "done" at the end). Properties are snapshots refreshed once a
 * second, so PropertiesChanged is emitted at most about once a second, and at once on a state
 * change.
 */
#pragma once

#include <stdint.h>
#include <systemd/sd-event.h>

#include <ebs-hydrate/bus.h>
#include "hydrator.h"
#include "record.h"
#include "util.h"

#define HYDRATE_BUS_REFRESH_USEC USEC_PER_SEC

typedef struct HydrateBus HydrateBus;

typedef struct HydrateBusIdentity {
        const char *volume_id;   /* the state key */
        const char *kernel_name; /* nvme1n1: names the bus name and the Device property */
        const char *device_name; /* block-device mapping (sdf) or "" */
} HydrateBusIdentity;

/*
 * hydrate_bus_name() - the bus name for a kernel name. Characters a bus name cannot hold
 * become '_'. Returns -ENAMETOOLONG if it does not fit @size.
 */
int hydrate_bus_name(const char *kernel_name, char *ret, size_t size);

/*
 * hydrate_bus_new() - connect to the system bus ($DBUS_SYSTEM_BUS_ADDRESS is honoured),
 * publish the object for @h, own the bus name, and attach to @event. Logs its errors.
 * @h is borrowed and must outlive the bus object.
 */
int hydrate_bus_new(HydrateBus **ret, sd_event *event, Hydrator *h, const HydrateBusIdentity *id);
HydrateBus *hydrate_bus_free(HydrateBus *b);
DEFINE_TRIVIAL_CLEANUP_FUNC(HydrateBus *, hydrate_bus_free)

/* hydrate_bus_set_aws() - what AWS said (the record's AWS fields: "" and -1 when unknown), for
 * the properties Aws, AwsSnapshotId, AwsProgress and AwsEtaSeconds. @b may be NULL. */
void hydrate_bus_set_aws(HydrateBus *b, const VolumeRecord *r);
/* hydrate_bus_refresh() - re-read the hydrator now and emit PropertiesChanged for what changed. */
void hydrate_bus_refresh(HydrateBus *b);
