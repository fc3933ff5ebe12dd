/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for nvme-id.c: identify-controller pages built byte by byte in a fixture, as an EBS
 * volume, an instance-store disk or QEMU would return them, plus the ioctl on non-NVMe files.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "identity.h"

#define SN_OFFSET 4
#define SN_SIZE 20
#define MN_OFFSET 24
#define MN_SIZE 40
#define BDEV_OFFSET 3072
#define BDEV_SIZE 32

/* Write @s into a fixed-width field padded with @pad, as a controller would. */
static void put_field(uint8_t *page, size_t offset, size_t size, const char *s, char pad) {
        size_t n = strlen(s);

        assert_true(n <= size);
        memset(page + offset, pad, size);
        memcpy(page + offset, s, n);
}

static void put_vendor(uint8_t *page, uint16_t vid) {
        page[0] = vid & 0xff;
        page[1] = vid >> 8;
}

/* A page as an EBS volume attached as /dev/sdf returns it. */
static int setup_ebs_page(void **state) {
        uint8_t *page = calloc(1, NVME_IDENTIFY_SIZE);

        if (!page)
                return -1;
        put_vendor(page, EBS_NVME_VENDOR_ID);
        page[2] = 0x0f; /* subsystem vendor id, must not be mistaken for anything else */
        page[3] = 0x1d;
        put_field(page, SN_OFFSET, SN_SIZE, "vol0123456789abcdef0", ' ');
        put_field(page, MN_OFFSET, MN_SIZE, EBS_MODEL, ' ');
        put_field(page, 64, 8, "1.0", ' '); /* firmware revision, right after mn */
        put_field(page, BDEV_OFFSET, BDEV_SIZE, "/dev/sdf", ' ');
        page[BDEV_OFFSET + BDEV_SIZE] = 'X'; /* the byte after the name area is not part of it */
        *state = page;
        return 0;
}

static int teardown_page(void **state) {
        free(*state);
        return 0;
}

static void parse_ok(const uint8_t *page, NvmeIdentify *id) {
        memset(id, 0x5a, sizeof(*id));
        assert_int_equal(nvme_identify_parse(page, NVME_IDENTIFY_SIZE, id), 0);
}

static void test_nvme_id_ebs_page(void **state) {
        NvmeIdentify id;

        parse_ok(*state, &id);
        assert_int_equal(id.vendor_id, 0x1D0F);
        assert_string_equal(id.serial, "vol0123456789abcdef0");
        assert_string_equal(id.model, "Amazon Elastic Block Store");
        assert_true(id.is_ebs);
        assert_string_equal(id.volume_id, "vol-0123456789abcdef0");
        assert_string_equal(id.device_name, "sdf");
}

static void test_nvme_id_ebs_nul_padded(void **state) {
        uint8_t *page = *state;
        NvmeIdentify id;

        put_field(page, SN_OFFSET, SN_SIZE, "vol1a2b3c4d", '\0');
        put_field(page, MN_OFFSET, MN_SIZE, EBS_MODEL, '\0');
        put_field(page, BDEV_OFFSET, BDEV_SIZE, "xvdf", '\0');
        parse_ok(page, &id);
        assert_true(id.is_ebs);
        assert_string_equal(id.serial, "vol1a2b3c4d");
        assert_string_equal(id.model, EBS_MODEL);
        assert_string_equal(id.volume_id, "vol-1a2b3c4d");
        assert_string_equal(id.device_name, "xvdf");
}

static void test_nvme_id_vendor_little_endian(void **state) {
        uint8_t *page = *state;
        NvmeIdentify id;

        page[0] = 0x1d; /* 0x1D0F stored big endian reads as 0x0F1D */
        page[1] = 0x0f;
        parse_ok(page, &id);
        assert_int_equal(id.vendor_id, 0x0F1D);
        assert_false(id.is_ebs);
}

static void test_nvme_id_wrong_vendor(void **state) {
        uint8_t *page = *state;
        NvmeIdentify id;

        put_vendor(page, 0x1B36); /* QEMU, claiming EBS model and serial */
        parse_ok(page, &id);
        assert_int_equal(id.vendor_id, 0x1B36);
        assert_string_equal(id.model, EBS_MODEL);
        assert_false(id.is_ebs);
        assert_string_equal(id.volume_id, "");
        assert_string_equal(id.device_name, ""); /* vendor area means nothing on QEMU */
}

static void test_nvme_id_non_ebs_model(void **state) {
        uint8_t *page = *state;
        NvmeIdentify id;

        put_field(page, SN_OFFSET, SN_SIZE, "AWS1234567890ABCDEF", ' ');
        put_field(page, MN_OFFSET, MN_SIZE, "Amazon EC2 NVMe Instance Storage", ' ');
        parse_ok(page, &id);
        assert_int_equal(id.vendor_id, EBS_NVME_VENDOR_ID);
        assert_string_equal(id.model, "Amazon EC2 NVMe Instance Storage");
        assert_false(id.is_ebs);
        assert_string_equal(id.volume_id, "");
        assert_string_equal(id.device_name, "");
}

static void test_nvme_id_model_suffix(void **state) {
        uint8_t *page = *state;
        NvmeIdentify id;

        put_field(page, MN_OFFSET, MN_SIZE, "Amazon Elastic Block Store Foo", ' ');
        parse_ok(page, &id);
        assert_false(id.is_ebs);
}

static void test_nvme_id_bad_serial(void **state) {
        uint8_t *page = *state;
        NvmeIdentify id;

        put_field(page, SN_OFFSET, SN_SIZE, "vol0123456789abcdefz", ' ');
        parse_ok(page, &id);
        assert_string_equal(id.serial, "vol0123456789abcdefz");
        assert_false(id.is_ebs);
        assert_string_equal(id.volume_id, "");
        assert_string_equal(id.device_name, "");
}

static void test_nvme_id_all_zero(void **state) {
        uint8_t *page = *state;
        NvmeIdentify id;

        memset(page, 0, NVME_IDENTIFY_SIZE);
        parse_ok(page, &id);
        assert_int_equal(id.vendor_id, 0);
        assert_string_equal(id.serial, "");
        assert_string_equal(id.model, "");
        assert_false(id.is_ebs);
        assert_string_equal(id.volume_id, "");
        assert_string_equal(id.device_name, "");
}

static void test_nvme_id_wrong_size(void **state) {
        NvmeIdentify id;

        assert_int_equal(nvme_identify_parse(*state, NVME_IDENTIFY_SIZE - 1, &id), -EINVAL);
        assert_int_equal(nvme_identify_parse(*state, NVME_IDENTIFY_SIZE + 1, &id), -EINVAL);
        assert_int_equal(nvme_identify_parse(*state, 0, &id), -EINVAL);
        assert_int_equal(nvme_identify_parse(NULL, NVME_IDENTIFY_SIZE, &id), -EINVAL);
}

static void test_nvme_id_mapping_all_spaces(void **state) {
        uint8_t *page = *state;
        NvmeIdentify id;

        memset(page + BDEV_OFFSET, ' ', BDEV_SIZE);
        parse_ok(page, &id);
        assert_true(id.is_ebs);
        assert_string_equal(id.volume_id, "vol-0123456789abcdef0");
        assert_string_equal(id.device_name, "");
}

static void test_nvme_id_mapping_all_nul(void **state) {
        uint8_t *page = *state;
        NvmeIdentify id;

        memset(page + BDEV_OFFSET, 0, BDEV_SIZE);
        parse_ok(page, &id);
        assert_true(id.is_ebs);
        assert_string_equal(id.device_name, "");
}

static void test_nvme_id_mapping_garbage(void **state) {
        uint8_t *page = *state;
        NvmeIdentify id;

        put_field(page, BDEV_OFFSET, BDEV_SIZE, "sd\x01\x02", ' ');
        parse_ok(page, &id);
        assert_true(id.is_ebs); /* still the volume: only the name is unusable */
        assert_string_equal(id.device_name, "");
}

static void test_nvme_id_mapping_full_width(void **state) {
        uint8_t *page = *state;
        NvmeIdentify id;

        memset(page + BDEV_OFFSET, 'x', BDEV_SIZE);
        parse_ok(page, &id);
        assert_int_equal(strlen(id.device_name), BDEV_SIZE);
        assert_int_equal(id.device_name[0], 'x');
}

static void test_nvme_id_read_not_nvme(void **state) {
        char path[] = "/tmp/test-nvme-id-XXXXXX";
        uint8_t *page = *state;
        int fd;

        fd = mkstemp(path);
        assert_true(fd >= 0);
        (void)unlink(path);
        assert_int_equal(nvme_identify_read(fd, page), -ENOTTY);
        (void)close(fd);
}

static void test_nvme_id_read_bad_fd(void **state) {
        assert_int_equal(nvme_identify_read(-1, *state), -EBADF);
}

#define PAGE_TEST(f) cmocka_unit_test_setup_teardown(f, setup_ebs_page, teardown_page)

int main(void) {
        const struct CMUnitTest tests[] = {
                PAGE_TEST(test_nvme_id_ebs_page),
                PAGE_TEST(test_nvme_id_ebs_nul_padded),
                PAGE_TEST(test_nvme_id_vendor_little_endian),
                PAGE_TEST(test_nvme_id_wrong_vendor),
                PAGE_TEST(test_nvme_id_non_ebs_model),
                PAGE_TEST(test_nvme_id_model_suffix),
                PAGE_TEST(test_nvme_id_bad_serial),
                PAGE_TEST(test_nvme_id_all_zero),
                PAGE_TEST(test_nvme_id_wrong_size),
                PAGE_TEST(test_nvme_id_mapping_all_spaces),
                PAGE_TEST(test_nvme_id_mapping_all_nul),
                PAGE_TEST(test_nvme_id_mapping_garbage),
                PAGE_TEST(test_nvme_id_mapping_full_width),
                PAGE_TEST(test_nvme_id_read_not_nvme),
                PAGE_TEST(test_nvme_id_read_bad_fd),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
