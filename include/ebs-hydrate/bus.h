/* SPDX-License-Identifier: MIT */
/*
 * The D-Bus interface of ebs-hydrated: names, properties and methods, used by both ends
 * (src/daemon/bus.c, src/ctl/ctl-bus.c) and by any other client. Fixed within a major version:
 * the policy file (units/org.ebshydrate.Volume1.conf), ebs-hydrated(8) and scripts depend on
 * them.
 */
#ifndef EBS_HYDRATE_BUS_H
#define EBS_HYDRATE_BUS_H

#include <ebs-hydrate/volume.h>

/* One bus name per instance: the prefix, then the kernel name with '-' for anything a bus name
 * element cannot hold (hydrate_bus_name()). */
#define HYDRATE_BUS_NAME_PREFIX "org.ebshydrate.Volume1."
#define HYDRATE_BUS_PATH "/org/ebshydrate/Volume1"
#define HYDRATE_BUS_INTERFACE "org.ebshydrate.Volume1"
/* The D-Bus specification's limit on a bus name; a kernel name longer than what fits after the
 * prefix cannot name an instance. */
#define HYDRATE_BUS_NAME_MAX 255
#define HYDRATE_BUS_KERNEL_NAME_MAX (HYDRATE_BUS_NAME_MAX - (sizeof(HYDRATE_BUS_NAME_PREFIX) - 1))

/* Properties: name and D-Bus signature. */
#define HYDRATE_BUS_PROP_VOLUME_ID "VolumeId"           /* s, const */
#define HYDRATE_BUS_PROP_DEVICE "Device"                /* s, const */
#define HYDRATE_BUS_PROP_DEVICE_NAME "DeviceName"       /* s, const */
#define HYDRATE_BUS_PROP_STATE "State"                  /* s */
#define HYDRATE_BUS_PROP_SIZE_BYTES "SizeBytes"         /* t, const */
#define HYDRATE_BUS_PROP_HYDRATED_BYTES "HydratedBytes" /* t */
#define HYDRATE_BUS_PROP_PERCENT "Percent"              /* d */
#define HYDRATE_BUS_PROP_RATE "RateBytesPerSecond"      /* t */
#define HYDRATE_BUS_PROP_ETA_SECONDS "EtaSeconds"       /* t */
#define HYDRATE_BUS_PROP_ERROR_COUNT "ErrorCount"       /* t */
#define HYDRATE_BUS_PROP_PHASE "Phase"                  /* s */
#define HYDRATE_BUS_PROP_PHASE_PROGRESS "PhaseProgress" /* a(stt) */
#define HYDRATE_BUS_PROP_YIELDING "Yielding"            /* b */
/* What AWS said of the volume (ebs-hydrate/findings.h): an EBS_HYDRATE_AWS_* word, "" when
 * nothing is known; the snapshot; AWS's own initialization, -1 when unknown. */
#define HYDRATE_BUS_PROP_AWS "Aws"                       /* s */
#define HYDRATE_BUS_PROP_AWS_SNAPSHOT_ID "AwsSnapshotId" /* s */
#define HYDRATE_BUS_PROP_AWS_PROGRESS "AwsProgress"      /* x: percent */
#define HYDRATE_BUS_PROP_AWS_ETA_SECONDS "AwsEtaSeconds" /* x */
/* t: of SizeBytes, what the snapshot stores nothing of (never read, in HydratedBytes); Percent
 * and EtaSeconds are of the rest, what it stores */
#define HYDRATE_BUS_PROP_EMPTY_BYTES "EmptyBytes"

/* Methods (root only, the daemon checks the caller). */
#define HYDRATE_BUS_METHOD_PAUSE "Pause"
#define HYDRATE_BUS_METHOD_RESUME "Resume"
#define HYDRATE_BUS_METHOD_SET_RATE_LIMIT "SetRateLimit" /* t: bytes per second, 0 = none */

/* Values of Phase and State: volume.h's EBS_HYDRATE_PHASE_* and EBS_HYDRATE_STATE_HYDRATING,
 * _PAUSED, _COMPLETED and _FAILED. */

#endif
