/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for identity.c: the pure property decision, sysfs identity over a fake tree built
 * in a mkdtemp fixture (EBS NVMe, QEMU NVMe, SCSI, loop), the udev-then-sysfs fallback for a
 * device udev cannot know, and filename-safe state keys.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "device.h"
#include "fixtures.h"
#include "identity.h"

typedef struct Fixture {
        char *root;
} Fixture;

static int setup_sysfs(void **state) {
        Fixture *f = calloc(1, sizeof(*f));

        if (!f)
                return -1;
        f->root = fixture_tmpdir("test-identity");
        if (!f->root) {
                free(f);
                return -1;
        }
        fake_sysfs_tree(f->root);
        *state = f;
        return 0;
}

static int teardown_sysfs(void **state) {
        Fixture *f = *state;
        int r;

        r = rm_rf(f->root);
        free(f->root);
        free(f);
        return r;
}

static void from_properties(const IdentityProperties *p, DeviceIdentity *id) {
        memset(id, 0x5a, sizeof(*id));
        assert_int_equal(identity_from_properties("nvme1n1", p, id), 0);
        assert_string_equal(id->kernel_name, "nvme1n1");
}

static void test_identity_properties_helper_preferred(void **state) {
        IdentityProperties p = {
                .model = "Amazon Elastic Block Store",
                .serial_short = "vol0fedcba9876543210",
                .serial = "Amazon Elastic Block Store_vol0fedcba9876543210",
                .ebs_volume_id = "vol-0123456789abcdef0",
                .ebs_device_name = "sdf",
        };
        DeviceIdentity id;

        from_properties(&p, &id);
        assert_true(id.is_ebs);
        assert_string_equal(id.volume_id, "vol-0123456789abcdef0");
        assert_string_equal(id.device_name, "sdf");
        assert_string_equal(id.stable_id, "");
}

static void test_identity_properties_helper_only(void **state) {
        /* The helper checked the vendor id; udev's model need not be there at all. */
        IdentityProperties p = {.ebs_volume_id = "vol-0123456789abcdef0",
                                .ebs_device_name = "/dev/xvdf"};
        DeviceIdentity id;

        from_properties(&p, &id);
        assert_true(id.is_ebs);
        assert_string_equal(id.volume_id, "vol-0123456789abcdef0");
        assert_string_equal(id.device_name, "xvdf");
}

static void test_identity_properties_helper_invalid(void **state) {
        IdentityProperties p = {
                .model = "Amazon Elastic Block Store",
                .serial_short = "vol0fedcba9876543210",
                .ebs_volume_id = "garbage",
                .ebs_device_name = "sd f",
        };
        DeviceIdentity id;

        from_properties(&p, &id);
        assert_true(id.is_ebs);
        assert_string_equal(id.volume_id, "vol-0fedcba9876543210");
        assert_string_equal(id.device_name, "");
}

static void test_identity_properties_model_serial(void **state) {
        IdentityProperties p = {
                .model = FAKE_EBS_MODEL,
                .serial_short = "vol0123456789abcdef0",
                .serial = "Amazon Elastic Block Store_vol0123456789abcdef0",
                .ebs_device_name = "",
        };
        DeviceIdentity id;

        from_properties(&p, &id);
        assert_true(id.is_ebs);
        assert_string_equal(id.volume_id, "vol-0123456789abcdef0");
        assert_string_equal(id.device_name, "");
        assert_string_equal(id.stable_id, "");
}

static void test_identity_properties_ebs_model_bad_serial(void **state) {
        IdentityProperties p = {
                .model = "Amazon Elastic Block Store",
                .serial_short = "AWS1234",
                .serial = "Amazon Elastic Block Store_AWS1234",
                .ebs_device_name = "sdf",
        };
        DeviceIdentity id;

        from_properties(&p, &id);
        assert_false(id.is_ebs);
        assert_string_equal(id.volume_id, "");
        assert_string_equal(id.device_name, "");
        assert_string_equal(id.stable_id, "Amazon Elastic Block Store_AWS1234");
}

static void test_identity_properties_non_ebs_serial(void **state) {
        IdentityProperties p = {
                .model = "QEMU NVMe Ctrl",
                .serial_short = "vol0123456789abcdef0", /* a volume-id serial alone is not EBS */
                .serial = "QEMU NVMe Ctrl_vol0123456789abcdef0",
                .wwn = "eui.0123456789abcdef",
        };
        DeviceIdentity id;

        from_properties(&p, &id);
        assert_false(id.is_ebs);
        assert_string_equal(id.volume_id, "");
        assert_string_equal(id.stable_id, "QEMU NVMe Ctrl_vol0123456789abcdef0");
}

static void test_identity_properties_non_ebs_wwn(void **state) {
        IdentityProperties p = {
                .model = "QEMU HARDDISK", .serial = "", .wwn = "0x5000c500a1b2c3d4  "};
        DeviceIdentity id;

        from_properties(&p, &id);
        assert_false(id.is_ebs);
        assert_string_equal(id.stable_id, "0x5000c500a1b2c3d4");
}

static void test_identity_properties_nothing(void **state) {
        IdentityProperties p = {};
        DeviceIdentity id;

        from_properties(&p, &id);
        assert_false(id.is_ebs);
        assert_string_equal(id.volume_id, "");
        assert_string_equal(id.device_name, "");
        assert_string_equal(id.stable_id, "");
}

static void test_identity_properties_bad_input(void **state) {
        IdentityProperties p = {};
        char serial[IDENTITY_STABLE_ID_MAX + 1];
        DeviceIdentity id;

        assert_int_equal(identity_from_properties(NULL, &p, &id), -EINVAL);
        assert_int_equal(identity_from_properties("", &p, &id), -EINVAL);
        assert_int_equal(identity_from_properties("../sda", &p, &id), -EINVAL);
        assert_int_equal(identity_from_properties("..", &p, &id), -EINVAL);
        assert_int_equal(identity_from_properties("sda", NULL, &id), -EINVAL);

        memset(serial, 'a', sizeof(serial) - 1);
        serial[sizeof(serial) - 1] = '\0';
        p.serial = serial;
        assert_int_equal(identity_from_properties("sda", &p, &id), -ENAMETOOLONG);
        serial[sizeof(serial) - 2] = '\0'; /* exactly IDENTITY_STABLE_ID_MAX - 1 fits */
        assert_int_equal(identity_from_properties("sda", &p, &id), 0);
        assert_int_equal(strlen(id.stable_id), IDENTITY_STABLE_ID_MAX - 1);
}

static void test_identity_sysfs_ebs_nvme(void **state) {
        Fixture *f = *state;
        DeviceIdentity id;

        assert_int_equal(identity_from_sysfs(f->root, "nvme91n1", &id), 0);
        assert_string_equal(id.kernel_name, "nvme91n1");
        assert_true(id.is_ebs);
        assert_string_equal(id.volume_id, "vol-0123456789abcdef0");
        assert_string_equal(id.device_name, ""); /* only identify data has the mapping */
        assert_string_equal(id.stable_id, "");
}

static void test_identity_sysfs_non_ebs_nvme(void **state) {
        Fixture *f = *state;
        DeviceIdentity id;

        assert_int_equal(identity_from_sysfs(f->root, "nvme92n1", &id), 0);
        assert_false(id.is_ebs);
        assert_string_equal(id.volume_id, "");
        assert_string_equal(id.stable_id, "nvme.1b36-6465616462656566-00000001");
}

static void test_identity_sysfs_scsi_wwid(void **state) {
        Fixture *f = *state;
        DeviceIdentity id;

        assert_int_equal(identity_from_sysfs(f->root, "sdzz", &id), 0);
        assert_false(id.is_ebs);
        assert_string_equal(id.stable_id, "t10.ATA     QEMU HARDDISK  QM00001");
}

static void test_identity_sysfs_loop(void **state) {
        Fixture *f = *state;
        DeviceIdentity id;

        assert_int_equal(identity_from_sysfs(f->root, "loop991", &id), 0);
        assert_string_equal(id.kernel_name, "loop991");
        assert_false(id.is_ebs);
        assert_string_equal(id.stable_id, "");
}

static void test_identity_sysfs_missing(void **state) {
        Fixture *f = *state;
        DeviceIdentity id;

        assert_int_equal(identity_from_sysfs(f->root, "nvme93n1", &id), -ENOENT);
        assert_int_equal(identity_from_sysfs("/nonexistent-sysfs", "nvme91n1", &id), -ENOENT);
        assert_int_equal(identity_from_sysfs(f->root, "../block/nvme91n1", &id), -EINVAL);
        assert_int_equal(identity_from_sysfs("", "nvme91n1", &id), -EINVAL);
}

/* The EBS model padded with spaces to @size bytes, then @tail. */
static char *padded_model(size_t size, const char *tail) {
        char *model = malloc(size + strlen(tail) + 1);

        assert_non_null(model);
        memset(model, ' ', size);
        memcpy(model, EBS_MODEL, strlen(EBS_MODEL));
        strcpy(model + size, tail);
        return model;
}

static void test_identity_sysfs_attr_too_long(void **state) {
        Fixture *f = *state;
        DeviceIdentity id;
        char *model;

        fixture_mkdirs(f->root, "class/block/nvme94n1/device");
        fixture_write(f->root, "class/block/nvme94n1/device/serial", "vol0123456789abcdef0\n");

        /* The longest attribute sysfs can show is read whole. */
        model = padded_model(IDENTITY_SYSFS_ATTR_MAX - 1, "\n");
        fixture_write(f->root, "class/block/nvme94n1/device/model", model);
        free(model);
        assert_int_equal(identity_from_sysfs(f->root, "nvme94n1", &id), 0);
        assert_true(id.is_ebs);

        /* One byte more: cut at the limit it would read as the EBS model; it is an error. */
        model = padded_model(IDENTITY_SYSFS_ATTR_MAX, "X\n");
        fixture_write(f->root, "class/block/nvme94n1/device/model", model);
        free(model);
        assert_int_equal(identity_from_sysfs(f->root, "nvme94n1", &id), -EFBIG);
}

static void test_identity_sysfs_attr_nul(void **state) {
        static const char model[] = EBS_MODEL "\0QEMU NVMe Ctrl\n";
        static const char serial[] = "vol0123456789abcdef0\0\n";
        Fixture *f = *state;
        DeviceIdentity id;

        fixture_mkdirs(f->root, "class/block/nvme95n1/device");
        fixture_write(f->root, "class/block/nvme95n1/device/serial", "vol0123456789abcdef0\n");
        fixture_write_bytes(f->root, "class/block/nvme95n1/device/model", model, sizeof(model) - 1);
        assert_int_equal(identity_from_sysfs(f->root, "nvme95n1", &id), -EBADMSG);

        fixture_write(f->root, "class/block/nvme95n1/device/model", FAKE_EBS_MODEL "\n");
        fixture_write_bytes(f->root, "class/block/nvme95n1/device/serial", serial,
                            sizeof(serial) - 1);
        assert_int_equal(identity_from_sysfs(f->root, "nvme95n1", &id), -EBADMSG);
}

static void test_identity_udev_unknown(void **state) {
        DeviceIdentity id;

        assert_int_equal(identity_from_udev("nvme91n1", &id), -ENOENT);
        assert_int_equal(identity_from_udev("a/b", &id), -EINVAL);
}

static void test_identity_resolve_falls_back(void **state) {
        Fixture *f = *state;
        DeviceIdentity id;

        assert_int_equal(identity_resolve(f->root, "nvme91n1", &id), 0);
        assert_true(id.is_ebs);
        assert_string_equal(id.volume_id, "vol-0123456789abcdef0");
        assert_int_equal(identity_resolve(f->root, "nvme93n1", &id), -ENOENT);
}

static void test_identity_state_key_volume_id(void **state) {
        DeviceIdentity id = {
                .is_ebs = true, .volume_id = "vol-0123456789abcdef0", .stable_id = "ignored"};
        char key[64];

        assert_int_equal(identity_state_key(&id, key, sizeof(key)), 0);
        assert_string_equal(key, "vol-0123456789abcdef0");
}

static void test_identity_state_key_sanitised(void **state) {
        DeviceIdentity id = {.stable_id = "QEMU NVMe Ctrl_dead/beef:1\xc3\xa9"};
        char key[64];

        assert_int_equal(identity_state_key(&id, key, sizeof(key)), 0);
        assert_string_equal(key, "QEMU_NVMe_Ctrl_dead_beef_1__");

        strcpy(id.stable_id, "..");
        assert_int_equal(identity_state_key(&id, key, sizeof(key)), 0);
        assert_string_equal(key, "_.");

        strcpy(id.stable_id, "nvme.1b36-ab_CD");
        assert_int_equal(identity_state_key(&id, key, sizeof(key)), 0);
        assert_string_equal(key, "nvme.1b36-ab_CD");
}

static void test_identity_state_key_nokey(void **state) {
        DeviceIdentity id = {.kernel_name = "loop0"};
        char key[64];

        assert_int_equal(identity_state_key(&id, key, sizeof(key)), -ENOKEY);
        id.is_ebs = true; /* an EBS flag without a volume id is still no key */
        assert_int_equal(identity_state_key(&id, key, sizeof(key)), -ENOKEY);
}

static void test_identity_state_key_small_buffer(void **state) {
        DeviceIdentity id = {.is_ebs = true, .volume_id = "vol-0123456789abcdef0"};
        char key[22];

        assert_int_equal(identity_state_key(&id, key, 21), -ENOBUFS);
        assert_int_equal(identity_state_key(&id, key, 22), 0);
        assert_string_equal(key, "vol-0123456789abcdef0");
}

/* How many reads a device's request queue takes: a read over a request's limit is several
 * requests, and a quarter of the queue stays free for everyone else. */
static void test_identity_device_queue(void **state) {
        BlockDevice loop = {.queue_requests = 128,
                            .max_request_bytes = 512 << 10,
                            .max_sectors_bytes = 1280 << 10};
        BlockDevice nvme = {.queue_requests = 1023,
                            .max_request_bytes = 128 << 10,
                            .max_sectors_bytes = 128 << 10};
        BlockDevice unknown = {0};

        assert_int_equal(block_device_requests_per_read(&loop, 1 << 20), 2);
        assert_int_equal(block_device_max_reads(&loop, 1 << 20), 48);
        assert_int_equal(block_device_requests_per_read(&loop, 512 << 10), 1);
        assert_int_equal(block_device_max_reads(&loop, 512 << 10), 96);
        assert_int_equal(block_device_requests_per_read(&nvme, 1 << 20), 8);
        assert_int_equal(block_device_max_reads(&nvme, 1 << 20), 95);
        assert_int_equal(block_device_requests_per_read(&nvme, 3 << 20), 24);
        assert_int_equal(block_device_max_reads(&nvme, UINT64_C(1) << 40), 1); /* never none */
        assert_int_equal(block_device_requests_per_read(&unknown, 1 << 20), 1);
        /* With a buffer in one huge page, only max_sectors_kb splits a read. */
        assert_int_equal(block_device_requests_per_read_min(&loop, 1 << 20), 1);
        assert_int_equal(block_device_requests_per_read_min(&loop, 2 << 20), 2);
        assert_int_equal(block_device_requests_per_read_min(&nvme, 1 << 20), 8);
        assert_int_equal(block_device_requests_per_read_min(&unknown, 1 << 20), 1);
        assert_int_equal(block_device_max_reads(&unknown, 1 << 20), 0);
}

#define SYSFS_TEST(f) cmocka_unit_test_setup_teardown(f, setup_sysfs, teardown_sysfs)

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_identity_properties_helper_preferred),
                cmocka_unit_test(test_identity_properties_helper_only),
                cmocka_unit_test(test_identity_properties_helper_invalid),
                cmocka_unit_test(test_identity_properties_model_serial),
                cmocka_unit_test(test_identity_properties_ebs_model_bad_serial),
                cmocka_unit_test(test_identity_properties_non_ebs_serial),
                cmocka_unit_test(test_identity_properties_non_ebs_wwn),
                cmocka_unit_test(test_identity_properties_nothing),
                cmocka_unit_test(test_identity_properties_bad_input),
                SYSFS_TEST(test_identity_sysfs_ebs_nvme),
                SYSFS_TEST(test_identity_sysfs_non_ebs_nvme),
                SYSFS_TEST(test_identity_sysfs_scsi_wwid),
                SYSFS_TEST(test_identity_sysfs_loop),
                SYSFS_TEST(test_identity_sysfs_missing),
                SYSFS_TEST(test_identity_sysfs_attr_too_long),
                SYSFS_TEST(test_identity_sysfs_attr_nul),
                cmocka_unit_test(test_identity_udev_unknown),
                SYSFS_TEST(test_identity_resolve_falls_back),
                cmocka_unit_test(test_identity_state_key_volume_id),
                cmocka_unit_test(test_identity_state_key_sanitised),
                cmocka_unit_test(test_identity_state_key_nokey),
                cmocka_unit_test(test_identity_state_key_small_buffer),
                cmocka_unit_test(test_identity_device_queue),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
