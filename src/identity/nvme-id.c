/* SPDX-License-Identifier: MIT */
/*
 * NVMe identify-controller: fetch the 4096-byte page with an admin passthrough ioctl, and decode
 * the few fields that tell an EBS volume apart (vendor id, serial, model, and the block-device
 * mapping name Amazon keeps in the vendor-specific area). Parsing is pure so tests feed it bytes.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/nvme_ioctl.h>

#include "identity.h"
#include "unaligned.h"

#define NVME_ADMIN_IDENTIFY 0x06
#define NVME_CNS_CTRL 0x01

#define ID_CTRL_VID_OFFSET 0
#define ID_CTRL_SN_OFFSET 4
#define ID_CTRL_SN_SIZE 20
#define ID_CTRL_MN_OFFSET 24
#define ID_CTRL_MN_SIZE 40
#define ID_CTRL_EBS_BDEV_OFFSET 3072
#define ID_CTRL_EBS_BDEV_SIZE 32

/* Copy a fixed-width identify string up to its first NUL, without trailing spaces. */
static void copy_field(char *dst, const uint8_t *src, size_t size) {
        size_t n = strnlen((const char *)src, size);

        while (n > 0 && src[n - 1] == ' ')
                n--;
        memcpy(dst, src, n);
        dst[n] = '\0';
}

/**
 * nvme_identify_parse() - decode an identify-controller page (CNS 1).
 * @page: the raw page as the controller returned it.
 * @size: bytes at @page; must be NVME_IDENTIFY_SIZE.
 * @ret: receives the decoded fields; the mapping name and volume id only when ->is_ebs.
 *
 * Return: 0 (check ->is_ebs), or -EINVAL if @size is wrong.
 */
int nvme_identify_parse(const uint8_t *page, size_t size, NvmeIdentify *ret) {
        const char *sn, *mn, *bdev;
        NvmeIdentify id = {};

        if (!page || size != NVME_IDENTIFY_SIZE)
                return -EINVAL;
        sn = (const char *)page + ID_CTRL_SN_OFFSET;
        mn = (const char *)page + ID_CTRL_MN_OFFSET;
        bdev = (const char *)page + ID_CTRL_EBS_BDEV_OFFSET;

        id.vendor_id = unaligned_read_le16(page + ID_CTRL_VID_OFFSET);
        copy_field(id.serial, page + ID_CTRL_SN_OFFSET, ID_CTRL_SN_SIZE);
        copy_field(id.model, page + ID_CTRL_MN_OFFSET, ID_CTRL_MN_SIZE);

        /* The vendor-specific area means something else on every other vendor's controller. */
        id.is_ebs = id.vendor_id == EBS_NVME_VENDOR_ID && ebs_model_matches(mn, ID_CTRL_MN_SIZE) &&
                    ebs_volume_id_normalize(sn, ID_CTRL_SN_SIZE, id.volume_id) == 0;
        if (id.is_ebs) /* an unusable mapping name stays empty; the volume is still EBS */
                (void)ebs_device_name_normalize(bdev, ID_CTRL_EBS_BDEV_SIZE, id.device_name);

        *ret = id;
        return 0;
}

/**
 * nvme_identify_read() - read identify-controller through NVME_IOCTL_ADMIN_CMD.
 * @fd: an open NVMe block or controller device; read-only is enough.
 * @page: receives the NVME_IDENTIFY_SIZE-byte page.
 *
 * Return: 0, a negative errno from the ioctl (-ENOTTY or -EINVAL on a device that is not NVMe,
 * e.g. loop answers -EINVAL; -EACCES or -EPERM without CAP_SYS_ADMIN before Linux 6.2), or -EIO
 * if the controller reports an NVMe error status.
 */
int nvme_identify_read(int fd, uint8_t page[static NVME_IDENTIFY_SIZE]) {
        struct nvme_admin_cmd cmd = {
                .opcode = NVME_ADMIN_IDENTIFY,
                .addr = (uint64_t)(uintptr_t)page,
                .data_len = NVME_IDENTIFY_SIZE,
                .cdw10 = NVME_CNS_CTRL,
        };
        int r;

        r = ioctl(fd, NVME_IOCTL_ADMIN_CMD, &cmd);
        if (r < 0)
                return -errno;
        if (r > 0)
                return -EIO; /* NVMe status code, not an errno */
        return 0;
}
