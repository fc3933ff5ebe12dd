/* SPDX-License-Identifier: MIT */
/*
 * Who a block device is: EBS volume id and block-device mapping name when it is an EBS volume,
 * else a stable udev identity, from the udev database with a sysfs fallback. Also the pure
 * pieces: volume-id normalisation and the NVMe identify-controller page parser.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sysfs.h"
#include "util.h"

#define EBS_MODEL "Amazon Elastic Block Store"
#define EBS_NVME_VENDOR_ID 0x1D0Fu
#define EBS_VOLUME_ID_MAX 24   /* "vol-" + 17 hex + NUL, rounded up */
#define EBS_DEVICE_NAME_MAX 33 /* vendor area bytes 3072..3103, + NUL */
#define NVME_IDENTIFY_SIZE 4096
#define IDENTITY_STABLE_ID_MAX 256

/* Identify Controller's serial number (20 bytes) and model number (40), with a NUL. */
#define NVME_SERIAL_MAX (20 + 1)
#define NVME_MODEL_MAX (40 + 1)

typedef struct DeviceIdentity {
        char kernel_name[KERNEL_NAME_MAX];      /* nvme1n1, loop3 */
        bool is_ebs;                            /* model is EBS and serial is a volume id */
        char volume_id[EBS_VOLUME_ID_MAX];      /* vol-0123456789abcdef0, or "" */
        char device_name[EBS_DEVICE_NAME_MAX];  /* mapping name without /dev/ (sdf, xvdf), or "" */
        char stable_id[IDENTITY_STABLE_ID_MAX]; /* non-EBS: ID_SERIAL, else ID_WWN, else "" */
} DeviceIdentity;

/*
 * ebs_volume_id_normalize() - turn an NVMe serial into a volume id.
 * @raw/@len: the serial as stored (may be padded with spaces or NULs, may lack the dash).
 * Accepts "vol" + optional "-" + 17 or (legacy) 8 hex digits; hex is lowercased on output.
 * Returns 0 and writes "vol-..." to @ret, or -EINVAL if it is not an EBS volume id.
 */
int ebs_volume_id_normalize(const char *raw, size_t len, char ret[static EBS_VOLUME_ID_MAX]);

/* ebs_model_matches() - true if @model (padded with spaces or NULs) is exactly EBS_MODEL. */
bool ebs_model_matches(const char *model, size_t len);

/*
 * ebs_device_name_normalize() - mapping name from the vendor area or a udev property:
 * strip padding (spaces, NULs) and a leading "/dev/". Returns 0, or -EINVAL if empty or not
 * printable ASCII without '/' after stripping.
 */
int ebs_device_name_normalize(const char *raw, size_t len, char ret[static EBS_DEVICE_NAME_MAX]);

typedef struct NvmeIdentify {
        uint16_t vendor_id;                    /* PCI vendor id, bytes 0..1 */
        char serial[NVME_SERIAL_MAX];          /* sn, bytes 4..23, padding stripped */
        char model[NVME_MODEL_MAX];            /* mn, bytes 24..63, padding stripped */
        char device_name[EBS_DEVICE_NAME_MAX]; /* vendor area 3072..3103 normalised, or "" */
        bool is_ebs;                           /* vendor 0x1D0F, EBS model, valid volume id */
        char volume_id[EBS_VOLUME_ID_MAX];     /* set when is_ebs */
} NvmeIdentify;

/*
 * nvme_identify_parse() - decode an identify-controller page (CNS 1).
 * Returns 0 (check ->is_ebs), or -EINVAL if @size is not NVME_IDENTIFY_SIZE.
 */
int nvme_identify_parse(const uint8_t *page, size_t size, NvmeIdentify *ret);

/* nvme_identify_read() - issue identify-controller through NVME_IOCTL_ADMIN_CMD on @fd. */
int nvme_identify_read(int fd, uint8_t page[static NVME_IDENTIFY_SIZE]);

/*
 * The properties an identity is made from, as udev or sysfs report them; any may be NULL.
 * identity_from_properties() is the pure decision shared by the udev and sysfs paths.
 */
typedef struct IdentityProperties {
        const char *model;           /* ID_MODEL, or sysfs device/model (raw, padded) */
        const char *serial_short;    /* ID_SERIAL_SHORT, or sysfs device/serial (raw, padded) */
        const char *serial;          /* ID_SERIAL */
        const char *wwn;             /* ID_WWN, or sysfs wwid */
        const char *ebs_volume_id;   /* EBS_VOLUME_ID stored by ebs-hydrate-id */
        const char *ebs_device_name; /* EBS_DEVICE_NAME stored by ebs-hydrate-id */
} IdentityProperties;

int identity_from_properties(const char *kernel_name, const IdentityProperties *p,
                             DeviceIdentity *ret);

/* Longest sysfs attribute read (sysfs.h); longer is an error, never cut. */
#define IDENTITY_SYSFS_ATTR_MAX SYSFS_ATTR_MAX

/*
 * identity_from_sysfs() - read <sysfs_root>/class/block/<kernel_name>/device/{model,serial}
 * (and wwid). @sysfs_root is "/sys" in production, a temporary tree in tests.
 * Returns 0; -ENOENT if the device does not exist there; -EFBIG if an attribute is longer than
 * IDENTITY_SYSFS_ATTR_MAX bytes and -EBADMSG if one holds a NUL byte (a cut or NUL-ended value
 * could pass for another device's).
 */
int identity_from_sysfs(const char *sysfs_root, const char *kernel_name, DeviceIdentity *ret);

/*
 * identity_from_udev() - look the device up in the udev database (libudev); returns -ENOENT if
 * udev does not know it (no udevd, e.g. in a container), so the caller can fall back to sysfs.
 */
int identity_from_udev(const char *kernel_name, DeviceIdentity *ret);

/*
 * identity_resolve() - udev first, then sysfs under @sysfs_root. This is what the daemon calls.
 */
int identity_resolve(const char *sysfs_root, const char *kernel_name, DeviceIdentity *ret);

/*
 * identity_state_key() - the name state is kept under: volume id, else stable id made
 * filename-safe ([A-Za-z0-9._-], anything else becomes '_'), else -ENOKEY.
 */
int identity_state_key(const DeviceIdentity *id, char *ret, size_t size);
