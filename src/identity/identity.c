/* SPDX-License-Identifier: MIT */
/*
 * Who a block device is. One pure decision (identity_from_properties) fed either from the udev
 * database, where the ebs-hydrate-id helper leaves the volume id and mapping name, or from sysfs
 * when udev has no record of the device (containers, early boot, tests with a fake tree).
 */
#include <errno.h>
#include <fcntl.h>
#include <libudev.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "identity.h"
#include "sysfs.h"
#include "util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct udev *, udev_unref)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct udev_device *, udev_device_unref)

static bool is_empty(const char *s) {
        return !s || !*s;
}

static bool kernel_name_is_valid(const char *kernel_name) {
        return !is_empty(kernel_name) && !strchr(kernel_name, '/') &&
               strlen(kernel_name) < KERNEL_NAME_MAX && strcmp(kernel_name, ".") != 0 &&
               strcmp(kernel_name, "..") != 0;
}

/* Copy @src without trailing spaces, or -ENAMETOOLONG: a truncated identity could collide. */
static int copy_trimmed(char *dst, size_t size, const char *src) {
        size_t n = strlen(src);

        while (n > 0 && src[n - 1] == ' ')
                n--;
        if (n >= size)
                return -ENAMETOOLONG;
        memcpy(dst, src, n);
        dst[n] = '\0';
        return 0;
}

static bool volume_id_from(const char *s, char ret[static EBS_VOLUME_ID_MAX]) {
        return !is_empty(s) && ebs_volume_id_normalize(s, strlen(s), ret) == 0;
}

static bool ebs_from_model(const IdentityProperties *p, DeviceIdentity *id) {
        return !is_empty(p->model) && ebs_model_matches(p->model, strlen(p->model)) &&
               volume_id_from(p->serial_short, id->volume_id);
}

static int stable_id_from(const IdentityProperties *p, DeviceIdentity *id) {
        const char *s = !is_empty(p->serial) ? p->serial : p->wwn;

        if (is_empty(s))
                return 0;
        return copy_trimmed(id->stable_id, sizeof(id->stable_id), s);
}

/**
 * identity_from_properties() - decide who a device is from its udev or sysfs properties.
 * @kernel_name: the device's kernel name (nvme1n1); recorded, never used as a key.
 * @p: the properties; any field may be NULL.
 * @ret: receives the identity.
 *
 * The helper's EBS_VOLUME_ID wins (it read identify with a vendor id check); else an EBS model
 * with a volume-id serial; else the device is not EBS and keyed by ID_SERIAL, then WWN, else
 * nothing (empty stable_id).
 *
 * Return: 0, -EINVAL for a bad kernel name, or -ENAMETOOLONG for an overlong stable id.
 */
int identity_from_properties(const char *kernel_name, const IdentityProperties *p,
                             DeviceIdentity *ret) {
        DeviceIdentity id = {};
        int r;

        if (!kernel_name_is_valid(kernel_name) || !p)
                return -EINVAL;
        strcpy(id.kernel_name, kernel_name);

        id.is_ebs = volume_id_from(p->ebs_volume_id, id.volume_id) || ebs_from_model(p, &id);
        if (id.is_ebs && !is_empty(p->ebs_device_name))
                /* An unusable mapping name stays empty; the volume itself is still known. */
                (void)ebs_device_name_normalize(p->ebs_device_name, strlen(p->ebs_device_name),
                                                id.device_name);
        if (!id.is_ebs) {
                r = stable_id_from(p, &id);
                if (r < 0)
                        return r;
        }

        *ret = id;
        return 0;
}

/* A sysfs attribute below @dir_fd (sysfs_read_attr_at(): read whole or refused, since a model or
 * serial cut short could pass for another device's), but a missing one is not an error: *ret
 * stays NULL. */
static int read_attr_optional(int dir_fd, const char *name, char **ret) {
        int r = sysfs_read_attr_at(dir_fd, name, ret);

        return r == -ENOENT ? 0 : r;
}

static int open_sysfs_device(const char *sysfs_root, const char *kernel_name) {
        char path[PATH_MAX];
        int n, fd;

        n = snprintf(path, sizeof(path), "%s/class/block/%s", sysfs_root, kernel_name);
        if (n < 0 || (size_t)n >= sizeof(path))
                return -ENAMETOOLONG;
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return fd;
}

/**
 * identity_from_sysfs() - identify a device from sysfs alone.
 * @sysfs_root: "/sys" in production, a temporary tree in tests.
 * @kernel_name: the device's kernel name.
 * @ret: receives the identity.
 *
 * Reads <root>/class/block/<kernel_name>/device/{model,serial} and the namespace's wwid (falling
 * back to device/wwid, where SCSI keeps it). Any of them may be missing (loop devices have none).
 *
 * Return: 0, -ENOENT if the device does not exist under @sysfs_root, -EFBIG if an attribute is
 * longer than SYSFS_ATTR_MAX bytes, -EBADMSG if one holds a NUL byte, or another
 * negative errno.
 */
int identity_from_sysfs(const char *sysfs_root, const char *kernel_name, DeviceIdentity *ret) {
        _cleanup_free_ char *model = NULL, *serial = NULL, *wwid = NULL;
        _cleanup_close_ int dir_fd = -1;
        IdentityProperties p;
        int r;

        if (is_empty(sysfs_root) || !kernel_name_is_valid(kernel_name))
                return -EINVAL;
        dir_fd = open_sysfs_device(sysfs_root, kernel_name);
        if (dir_fd < 0)
                return dir_fd;

        r = read_attr_optional(dir_fd, "device/model", &model);
        if (r >= 0)
                r = read_attr_optional(dir_fd, "device/serial", &serial);
        if (r >= 0)
                r = read_attr_optional(dir_fd, "wwid", &wwid);
        if (r >= 0 && !wwid)
                r = read_attr_optional(dir_fd, "device/wwid", &wwid);
        if (r < 0)
                return r;

        p = (IdentityProperties){.model = model, .serial_short = serial, .wwn = wwid};
        return identity_from_properties(kernel_name, &p, ret);
}

/**
 * identity_from_udev() - identify a device from the udev database.
 * @kernel_name: the device's kernel name.
 * @ret: receives the identity.
 *
 * Return: 0, -ENOENT if udev does not know the device or has no database entry for it (no
 * udevd, e.g. in a container) so the caller can fall back to sysfs, or another negative errno.
 */
int identity_from_udev(const char *kernel_name, DeviceIdentity *ret) {
        _cleanup_(udev_device_unrefp) struct udev_device *dev = NULL;
        _cleanup_(udev_unrefp) struct udev *udev = NULL;
        IdentityProperties p;

        if (!kernel_name_is_valid(kernel_name))
                return -EINVAL;
        udev = udev_new();
        if (!udev)
                return -ENOMEM;
        dev = udev_device_new_from_subsystem_sysname(udev, "block", kernel_name);
        if (!dev)
                return -ENOENT;
        if (udev_device_get_is_initialized(dev) <= 0 || !udev_device_get_properties_list_entry(dev))
                return -ENOENT;

        p = (IdentityProperties){
                .model = udev_device_get_property_value(dev, "ID_MODEL"),
                .serial_short = udev_device_get_property_value(dev, "ID_SERIAL_SHORT"),
                .serial = udev_device_get_property_value(dev, "ID_SERIAL"),
                .wwn = udev_device_get_property_value(dev, "ID_WWN"),
                .ebs_volume_id = udev_device_get_property_value(dev, "EBS_VOLUME_ID"),
                .ebs_device_name = udev_device_get_property_value(dev, "EBS_DEVICE_NAME"),
        };
        return identity_from_properties(kernel_name, &p, ret);
}

/**
 * identity_resolve() - identify a device: udev first, then sysfs under @sysfs_root.
 * @sysfs_root: "/sys" in production.
 * @kernel_name: the device's kernel name.
 * @ret: receives the identity.
 *
 * Return: 0, or a negative errno (-ENOENT if neither source knows the device).
 */
int identity_resolve(const char *sysfs_root, const char *kernel_name, DeviceIdentity *ret) {
        int r;

        r = identity_from_udev(kernel_name, ret);
        if (r != -ENOENT)
                return r;
        return identity_from_sysfs(sysfs_root, kernel_name, ret);
}

static char filename_safe(char c) {
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '.' || c == '_' || c == '-')
                return c;
        return '_';
}

/**
 * identity_state_key() - the name a device's state is kept under.
 * @id: the identity.
 * @ret: receives the key.
 * @size: bytes at @ret.
 *
 * The volume id for EBS, else the stable id with every character outside [A-Za-z0-9._-] turned
 * into '_' (and a leading '.' too, so the key is never ".", ".." or a hidden file).
 *
 * Return: 0, -ENOKEY if the device has no stable identity, or -ENOBUFS if @size is too small.
 */
int identity_state_key(const DeviceIdentity *id, char *ret, size_t size) {
        const char *src = id->is_ebs ? id->volume_id : id->stable_id;
        size_t n = strnlen(src, id->is_ebs ? sizeof(id->volume_id) : sizeof(id->stable_id));

        if (n == 0)
                return -ENOKEY;
        if (!ret || n >= size)
                return -ENOBUFS;
        for (size_t i = 0; i < n; i++)
                ret[i] = filename_safe(src[i]);
        if (ret[0] == '.')
                ret[0] = '_';
        ret[n] = '\0';
        return 0;
}
