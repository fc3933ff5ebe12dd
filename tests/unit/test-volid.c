/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for volid.c: volume ids from NVMe serials, the EBS model check and mapping names,
 * each fed the padded fixed-width forms that identify data and udev actually produce.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "identity.h"

#define SENTINEL "untouched"

/* A string literal and its length, embedded NULs included. */
#define LIT(s) s, sizeof(s) - 1

/* Normalise exactly @len bytes of @raw (so embedded NULs count) and return the result code. */
static int volid(const char *raw, size_t len, char out[static EBS_VOLUME_ID_MAX]) {
        strcpy(out, SENTINEL);
        return ebs_volume_id_normalize(raw, len, out);
}

static void assert_volid_ok(const char *raw, size_t len, const char *expected) {
        char out[EBS_VOLUME_ID_MAX];

        assert_int_equal(volid(raw, len, out), 0);
        assert_string_equal(out, expected);
}

static void assert_volid_bad(const char *raw, size_t len) {
        char out[EBS_VOLUME_ID_MAX];

        assert_int_equal(volid(raw, len, out), -EINVAL);
        assert_string_equal(out, SENTINEL);
}

static void test_volid_exact_serial(void **state) {
        assert_volid_ok(LIT("vol0123456789abcdef0"), "vol-0123456789abcdef0");
}

static void test_volid_space_padding(void **state) {
        assert_volid_ok(LIT("vol0123456789abcdef0    "), "vol-0123456789abcdef0");
        assert_volid_ok(LIT("vol12345678         "), "vol-12345678");
}

static void test_volid_nul_padding(void **state) {
        assert_volid_ok(LIT("vol0123456789abcdef0\0\0\0\0"), "vol-0123456789abcdef0");
        assert_volid_ok(LIT("vol-0123456789abcdef0\0 \0"), "vol-0123456789abcdef0");
}

static void test_volid_with_dash(void **state) {
        assert_volid_ok(LIT("vol-0123456789abcdef0"), "vol-0123456789abcdef0");
        assert_volid_bad(LIT("vol--0123456789abcdef0"));
        assert_volid_bad(LIT("vol_0123456789abcdef0"));
}

static void test_volid_legacy(void **state) {
        assert_volid_ok(LIT("vol1a2b3c4d"), "vol-1a2b3c4d");
        assert_volid_ok(LIT("vol-1a2b3c4d"), "vol-1a2b3c4d");
}

static void test_volid_uppercase_hex_lowercased(void **state) {
        assert_volid_ok(LIT("vol0123456789ABCDEF0"), "vol-0123456789abcdef0");
        assert_volid_ok(LIT("vol-DEADBEEF"), "vol-deadbeef");
}

static void test_volid_wrong_length(void **state) {
        assert_volid_bad(LIT("vol0123456789abcdef"));   /* 16 digits */
        assert_volid_bad(LIT("vol0123456789abcdef01")); /* 18 digits */
        assert_volid_bad(LIT("vol1a2b3c4"));            /* 7 digits */
        assert_volid_bad(LIT("vol1a2b3c4d5"));          /* 9 digits */
        assert_volid_bad(LIT("vol"));
        assert_volid_bad(LIT("vol-"));
}

static void test_volid_non_hex(void **state) {
        assert_volid_bad(LIT("vol0123456789abcdefg"));
        assert_volid_bad(LIT("vol0123456789abc def0"));
        assert_volid_bad(LIT("vol0123456\x01"
                             "89abcdef0"));
}

static void test_volid_interior_nul(void **state) {
        assert_volid_bad(LIT("vol0123456789\0bcdef0"));
        assert_volid_bad(LIT("vol0123456789abcdef0\0junk"));
}

static void test_volid_wrong_prefix(void **state) {
        assert_volid_bad(LIT("vox0123456789abcdef0"));
        assert_volid_bad(LIT("VOL0123456789abcdef0"));
        assert_volid_bad(LIT("snap-0123456789abcdef0"));
        assert_volid_bad(LIT(" vol0123456789abcdef0"));
        assert_volid_bad(LIT("0123456789abcdef0"));
}

static void test_volid_empty(void **state) {
        assert_volid_bad(LIT(""));
        assert_volid_bad(LIT("                    "));
        assert_volid_bad(NULL, 0);
}

static void test_volid_all_nul(void **state) {
        static const char zeros[20];

        assert_volid_bad(zeros, sizeof(zeros));
}

static void test_volid_model_padded(void **state) {
        assert_true(ebs_model_matches(LIT("Amazon Elastic Block Store              ")));
        assert_true(
                ebs_model_matches(LIT("Amazon Elastic Block Store\0\0\0\0\0\0\0\0\0\0\0\0\0\0")));
        assert_true(ebs_model_matches(LIT("Amazon Elastic Block Store")));
}

static void test_volid_model_other(void **state) {
        assert_false(ebs_model_matches(LIT("Amazon Elastic Block Store Foo          ")));
        assert_false(ebs_model_matches(LIT("QEMU NVMe Ctrl                          ")));
        assert_false(ebs_model_matches(LIT("Amazon EC2 NVMe Instance Storage        ")));
        assert_false(ebs_model_matches(LIT("Amazon Elastic Block Stor")));
        assert_false(ebs_model_matches(LIT("amazon elastic block store")));
        assert_false(ebs_model_matches(LIT(" Amazon Elastic Block Store")));
        assert_false(ebs_model_matches(LIT("Amazon Elastic Block Store\0junk")));
        assert_false(ebs_model_matches(LIT("")));
        assert_false(ebs_model_matches(NULL, 0));
}

static int devname(const char *raw, size_t len, char out[static EBS_DEVICE_NAME_MAX]) {
        strcpy(out, SENTINEL);
        return ebs_device_name_normalize(raw, len, out);
}

static void assert_devname_ok(const char *raw, size_t len, const char *expected) {
        char out[EBS_DEVICE_NAME_MAX];

        assert_int_equal(devname(raw, len, out), 0);
        assert_string_equal(out, expected);
}

static void assert_devname_bad(const char *raw, size_t len) {
        char out[EBS_DEVICE_NAME_MAX];

        assert_int_equal(devname(raw, len, out), -EINVAL);
        assert_string_equal(out, SENTINEL);
}

static void test_volid_device_name_dev_prefix(void **state) {
        assert_devname_ok(LIT("/dev/sdf"), "sdf");
        assert_devname_ok(LIT("/dev/xvdba                      "), "xvdba");
}

static void test_volid_device_name_padding(void **state) {
        assert_devname_ok(LIT("sdf   "), "sdf");
        assert_devname_ok(LIT("xvdf\0\0"), "xvdf");
        assert_devname_ok(LIT("sdf"), "sdf");
}

static void test_volid_device_name_length(void **state) {
        char name[40];

        memset(name, 'a', sizeof(name));
        assert_devname_ok(name, EBS_DEVICE_NAME_MAX - 1, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
        assert_devname_bad(name, EBS_DEVICE_NAME_MAX);
}

static void test_volid_device_name_empty(void **state) {
        static const char zeros[32];

        assert_devname_bad(LIT(""));
        assert_devname_bad(LIT("                                "));
        assert_devname_bad(zeros, sizeof(zeros));
        assert_devname_bad(LIT("/dev/   "));
        assert_devname_bad(NULL, 0);
}

static void test_volid_device_name_invalid(void **state) {
        assert_devname_bad(LIT("sd\x01"
                               "f"));
        assert_devname_bad(LIT("sdf\x7f"));
        assert_devname_bad(LIT("sd\xc3\xa9"));
        assert_devname_bad(LIT("sd f"));
        assert_devname_bad(LIT("sdf\0junk"));
        assert_devname_bad(LIT("/dev/mapper/x"));
        assert_devname_bad(LIT("dev/sdf"));
        assert_devname_bad(LIT("  sdf"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_volid_exact_serial),
                cmocka_unit_test(test_volid_space_padding),
                cmocka_unit_test(test_volid_nul_padding),
                cmocka_unit_test(test_volid_with_dash),
                cmocka_unit_test(test_volid_legacy),
                cmocka_unit_test(test_volid_uppercase_hex_lowercased),
                cmocka_unit_test(test_volid_wrong_length),
                cmocka_unit_test(test_volid_non_hex),
                cmocka_unit_test(test_volid_interior_nul),
                cmocka_unit_test(test_volid_wrong_prefix),
                cmocka_unit_test(test_volid_empty),
                cmocka_unit_test(test_volid_all_nul),
                cmocka_unit_test(test_volid_model_padded),
                cmocka_unit_test(test_volid_model_other),
                cmocka_unit_test(test_volid_device_name_dev_prefix),
                cmocka_unit_test(test_volid_device_name_padding),
                cmocka_unit_test(test_volid_device_name_length),
                cmocka_unit_test(test_volid_device_name_empty),
                cmocka_unit_test(test_volid_device_name_invalid),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
