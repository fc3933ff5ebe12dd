/* SPDX-License-Identifier: MIT */
/*
 * ebs-hydrate-id: the udev import helper. Run privileged once per device by IMPORT{program}, it
 * reads NVMe identify-controller and prints EBS_VOLUME_ID= and EBS_DEVICE_NAME= for the udev
 * database, so the unprivileged daemon never needs CAP_SYS_ADMIN. Non-EBS devices print nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ebs-hydrate/exit-status.h>

#include "build-config.h"
#include "device.h"
#include "identity.h"
#include "log.h"
#include "sysfs.h"
#include "util.h"

static void help(void) {
        printf("Usage: ebs-hydrate-id [OPTIONS] DEVICE\n\n"
               "Print EBS_VOLUME_ID= and EBS_DEVICE_NAME= for an EBS volume, for udev's\n"
               "IMPORT{program}. DEVICE is a path (/dev/nvme1n1) or a kernel name (nvme1n1).\n"
               "Prints nothing and exits 1 for any other device.\n\n"
               "  -h --help     Show this help\n"
               "     --version  Show the version\n");
}

/* Returns 1 to go on with *ret_device set, 0 to exit successfully, or -EINVAL on bad usage. */
static int parse_argv(int argc, char *argv[], const char **ret_device) {
        enum { ARG_VERSION = 0x100 };
        static const struct option options[] = {
                {"help", no_argument, NULL, 'h'},
                {"version", no_argument, NULL, ARG_VERSION},
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("ebs-hydrate-id " EBS_HYDRATE_VERSION "\n");
                        return 0;
                default:
                        return -EINVAL; /* getopt_long has explained */
                }
        }
        if (optind != argc - 1) {
                log_error("Expected exactly one DEVICE argument; see --help.");
                return -EINVAL;
        }
        *ret_device = argv[optind];
        return 1;
}

static int open_device(const char *device, char **ret_path) {
        _cleanup_free_ char *path = device_path_from_arg(device);
        int fd;

        if (!path)
                return -ENOMEM;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        *ret_path = TAKE_PTR(path);
        return fd;
}

/* The identify ioctl is impossible here (not NVMe, no privilege), but sysfs may still tell. */
static bool identify_unsupported(int r) {
        return r == -ENOTTY || r == -EACCES || r == -EPERM || r == -EINVAL;
}

/* Returns 1 once printed, or a negative errno (already logged). */
static int print_ebs(const char *volume_id, const char *device_name) {
        printf("EBS_VOLUME_ID=%s\nEBS_DEVICE_NAME=%s\n", volume_id, device_name);
        if (fflush(stdout) != 0)
                return log_error_errno(negative_errno(errno), "Failed to write to stdout: %m");
        return 1;
}

/* Returns 1 if the device is EBS and was printed, 0 if not, or a negative errno (logged). */
static int identify_by_sysfs(int fd, const char *path) {
        const char *root = sysfs_root();
        char kernel_name[KERNEL_NAME_MAX], whole[KERNEL_NAME_MAX];
        DeviceIdentity id;
        int r;

        r = device_kernel_name(root, fd, kernel_name, whole);
        if (r < 0 && r != -EISDIR) /* a partition has a name too; udev only asks for disks */
                return log_error_errno(r, "Failed to resolve kernel name of %s: %m", path);
        r = identity_from_sysfs(root, kernel_name, &id);
        if (r == -EFBIG)
                return log_error_errno(r,
                                       "A sysfs identity attribute of %s is longer than %d bytes, "
                                       "refusing to truncate it",
                                       kernel_name, SYSFS_ATTR_MAX);
        if (r == -EBADMSG)
                return log_error_errno(r, "A sysfs identity attribute of %s holds a NUL byte",
                                       kernel_name);
        if (r < 0)
                return log_error_errno(r, "Failed to read sysfs identity of %s: %m", kernel_name);
        if (!id.is_ebs)
                return 0;
        return print_ebs(id.volume_id, "");
}

/* Same contract as identify_by_sysfs(); the mapping name only comes from identify data. */
static int identify(int fd, const char *path) {
        uint8_t page[NVME_IDENTIFY_SIZE];
        NvmeIdentify nid;
        int r;

        r = nvme_identify_read(fd, page);
        if (identify_unsupported(r)) {
                (void)log_debug_errno(r, "NVMe identify not possible on %s (%m), using sysfs.",
                                      path);
                return identify_by_sysfs(fd, path);
        }
        if (r < 0)
                return log_error_errno(r, "Failed to read NVMe identify data of %s: %m", path);
        r = nvme_identify_parse(page, sizeof(page), &nid);
        if (r < 0)
                return log_error_errno(r, "Failed to parse NVMe identify data of %s: %m", path);
        if (!nid.is_ebs)
                return 0;
        return print_ebs(nid.volume_id, nid.device_name);
}

static int run(int argc, char *argv[]) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -1;
        const char *device = NULL;
        int r;

        r = parse_argv(argc, argv, &device);
        if (r <= 0)
                return r < 0 ? EBS_HYDRATE_EXIT_USAGE : EBS_HYDRATE_EXIT_SUCCESS;

        fd = open_device(device, &path);
        if (fd < 0) {
                (void)log_error_errno(fd, "Failed to open %s: %m", device);
                return EBS_HYDRATE_EXIT_USAGE;
        }

        r = identify(fd, path);
        return r > 0 ? EBS_HYDRATE_EXIT_SUCCESS
                     : EBS_HYDRATE_EXIT_FAILURE; /* not EBS and failure alike: no import */
}

int main(int argc, char *argv[]) {
        log_setup("ebs-hydrate-id");
        return run(argc, argv);
}
