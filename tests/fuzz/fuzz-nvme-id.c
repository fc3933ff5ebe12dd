/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for nvme_identify_parse(). An input of any other size than a page must be refused;
 * then it is zero-padded (or cut) to a 4096-byte identify-controller page and parsed, and every
 * field is checked against the EBS rules of fuzz-ebs.c: strings NUL-terminated within their
 * arrays and unpadded, an EBS verdict only for the EBS vendor, model and a volume-id serial, and
 * a mapping name only for EBS, exactly as the vendor area spells it.
 */
#include <errno.h>
#include <string.h>

#include "fuzz-ebs.h"
#include "fuzz-util.h"
#include "identity.h"
#include "util.h"

#define SN_OFFSET 4
#define SN_SIZE 20
#define MN_OFFSET 24
#define MN_SIZE 40
#define VS_BDEV_OFFSET 3072
#define VS_BDEV_SIZE 32

/* A fixed-width identify string as the parser must show it: up to the first NUL, unpadded. */
static void check_field(const char *got, size_t got_size, const uint8_t *field, size_t size) {
        size_t n = strnlen((const char *)field, size);

        while (n > 0 && field[n - 1] == ' ')
                n--;
        fuzz_assert(strnlen(got, got_size) == n);
        fuzz_assert(memcmp(got, field, n) == 0);
}

static void check_ebs(const uint8_t *page, const NvmeIdentify *id) {
        char volume_id[EBS_VOLUME_ID_MAX], device_name[EBS_DEVICE_NAME_MAX];
        const char *sn = (const char *)page + SN_OFFSET,
                   *bdev = (const char *)page + VS_BDEV_OFFSET;
        bool volume = fuzz_volume_id_expected(sn, SN_SIZE, volume_id);

        fuzz_assert(id->is_ebs ==
                    (id->vendor_id == EBS_NVME_VENDOR_ID &&
                     fuzz_model_is_ebs((const char *)page + MN_OFFSET, MN_SIZE) && volume));
        if (!id->is_ebs) {
                fuzz_assert(id->volume_id[0] == '\0' && id->device_name[0] == '\0');
                return;
        }
        fuzz_assert(strcmp(id->model, EBS_MODEL) == 0);
        fuzz_assert(fuzz_volume_id_well_formed(id->volume_id));
        fuzz_assert(strcmp(id->volume_id, volume_id) == 0);
        fuzz_assert(fuzz_device_name_well_formed(id->device_name));
        if (fuzz_device_name_expected(bdev, VS_BDEV_SIZE, device_name))
                fuzz_assert(strcmp(id->device_name, device_name) == 0);
        else
                fuzz_assert(id->device_name[0] == '\0');
}

static bool identify_equal(const NvmeIdentify *a, const NvmeIdentify *b) {
        return a->vendor_id == b->vendor_id && a->is_ebs == b->is_ebs &&
               strcmp(a->serial, b->serial) == 0 && strcmp(a->model, b->model) == 0 &&
               strcmp(a->device_name, b->device_name) == 0 &&
               strcmp(a->volume_id, b->volume_id) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint8_t page[NVME_IDENTIFY_SIZE] = {};
        NvmeIdentify id, again;

        if (size != NVME_IDENTIFY_SIZE)
                fuzz_assert(nvme_identify_parse(data, size, &id) == -EINVAL);
        memcpy(page, data, MIN(size, sizeof(page)));

        memset(&id, 0xa5, sizeof(id)); /* nothing of the old contents may show through */
        fuzz_assert(nvme_identify_parse(page, sizeof(page), &id) == 0);
        fuzz_assert(id.vendor_id == (page[0] | page[1] << 8));
        check_field(id.serial, sizeof(id.serial), page + SN_OFFSET, SN_SIZE);
        check_field(id.model, sizeof(id.model), page + MN_OFFSET, MN_SIZE);
        check_ebs(page, &id);

        fuzz_assert(nvme_identify_parse(page, sizeof(page), &again) == 0);
        fuzz_assert(identify_equal(&id, &again));
        return 0;
}
