/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for device identity: identity_from_sysfs() over a fake sysfs tree written from the
 * input, identity_from_properties() over the same values as udev properties, the volid.c
 * normalisers on the raw bytes, and identity_state_key(). The sysfs path must read exactly what
 * the files hold (never a truncated value) and then decide as the pure path does; every identity
 * must obey the EBS rules of fuzz-ebs.c, and every key it yields must be a valid state key.
 *
 * Input, parts separated by "%%" lines (an empty part is a missing file or property):
 *   0: device/model = ID_MODEL          1: device/serial = ID_SERIAL_SHORT
 *   2: <namespace>/wwid = ID_WWN        3: device/wwid (sysfs only, read when 2 is missing)
 *   4: ID_SERIAL   5: EBS_VOLUME_ID   6: EBS_DEVICE_NAME   7: kernel name for the udev path
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-ebs.h"
#include "fuzz-util.h"
#include "identity.h"
#include "state.h"
#include "util.h"

enum {
        PART_MODEL,
        PART_SERIAL_SHORT,
        PART_WWID,
        PART_DEVICE_WWID,
        PART_SERIAL,
        PART_EBS_VOLUME_ID,
        PART_EBS_DEVICE_NAME,
        PART_KERNEL_NAME,
        _PART_MAX,
};

#define KERNEL_NAME "nvme0n1"
#define DEVICE_DIR "class/block/" KERNEL_NAME

/* The parts as libudev would hand them over: up to the first NUL, without trailing newlines. */
typedef struct Strings {
        char *s[_PART_MAX];
} Strings;

static void strings_done(Strings *s) {
        for (size_t i = 0; i < _PART_MAX; i++)
                free(s->s[i]);
}

static size_t trimmed_length(const char *s) {
        size_t n = strlen(s);

        while (n > 0 && s[n - 1] == ' ')
                n--;
        return n;
}

static bool has_text(const char *s) {
        return s && *s;
}

/* The rules: the helper's volume id wins, then an EBS model with a volume-id serial; else the
 * device is not EBS and keyed by ID_SERIAL, then the WWN, trailing spaces dropped. */
static void check_identity(const char *kernel_name, const IdentityProperties *p, int r,
                           const DeviceIdentity *id) {
        char helper[EBS_VOLUME_ID_MAX] = "", from_serial[EBS_VOLUME_ID_MAX] = "";
        char name[EBS_DEVICE_NAME_MAX];
        bool by_helper =
                has_text(p->ebs_volume_id) &&
                fuzz_volume_id_expected(p->ebs_volume_id, strlen(p->ebs_volume_id), helper);
        bool by_model =
                has_text(p->model) && fuzz_model_is_ebs(p->model, strlen(p->model)) &&
                has_text(p->serial_short) &&
                fuzz_volume_id_expected(p->serial_short, strlen(p->serial_short), from_serial);
        const char *stable = has_text(p->serial) ? p->serial : p->wwn;

        if (r == -ENAMETOOLONG) {
                fuzz_assert(!by_helper && !by_model && stable);
                fuzz_assert(trimmed_length(stable) >= IDENTITY_STABLE_ID_MAX);
                return;
        }
        fuzz_assert(r == 0);
        fuzz_assert(strcmp(id->kernel_name, kernel_name) == 0);
        fuzz_assert(id->is_ebs == (by_helper || by_model));
        fuzz_assert(fuzz_device_name_well_formed(id->device_name));
        if (!id->is_ebs) {
                size_t n = stable ? trimmed_length(stable) : 0;

                fuzz_assert(id->volume_id[0] == '\0' && id->device_name[0] == '\0');
                fuzz_assert(strnlen(id->stable_id, sizeof(id->stable_id)) == n);
                fuzz_assert(n == 0 || memcmp(id->stable_id, stable, n) == 0);
                return;
        }
        fuzz_assert(fuzz_volume_id_well_formed(id->volume_id));
        fuzz_assert(strcmp(id->volume_id, by_helper ? helper : from_serial) == 0);
        fuzz_assert(id->stable_id[0] == '\0');
        if (has_text(p->ebs_device_name) &&
            fuzz_device_name_expected(p->ebs_device_name, strlen(p->ebs_device_name), name))
                fuzz_assert(strcmp(id->device_name, name) == 0);
        else
                fuzz_assert(id->device_name[0] == '\0');
}

static void check_state_key(const DeviceIdentity *id) {
        const char *src = id->is_ebs ? id->volume_id : id->stable_id;
        char key[STATE_KEY_MAX + 1];
        int r;

        r = identity_state_key(id, key, sizeof(key));
        if (src[0] == '\0') {
                fuzz_assert(r == -ENOKEY);
                return;
        }
        if (strlen(src) > STATE_KEY_MAX) {
                fuzz_assert(r == -ENOBUFS);
                return;
        }
        fuzz_assert(r == 0);
        fuzz_assert(strlen(key) == strlen(src));
        fuzz_assert(state_key_valid(key, strlen(key)));
}

static bool kernel_name_ok(const char *s) {
        return has_text(s) && !strchr(s, '/') && strlen(s) < 64 && strcmp(s, ".") != 0 &&
               strcmp(s, "..") != 0;
}

static void fuzz_properties(const Strings *s) {
        const char *kernel_name = s->s[PART_KERNEL_NAME] ?: KERNEL_NAME;
        IdentityProperties p = {
                .model = s->s[PART_MODEL],
                .serial_short = s->s[PART_SERIAL_SHORT],
                .serial = s->s[PART_SERIAL],
                .wwn = s->s[PART_WWID],
                .ebs_volume_id = s->s[PART_EBS_VOLUME_ID],
                .ebs_device_name = s->s[PART_EBS_DEVICE_NAME],
        };
        DeviceIdentity id;
        int r;

        memset(&id, 0xa5, sizeof(id));
        r = identity_from_properties(kernel_name, &p, &id);
        if (!kernel_name_ok(kernel_name)) {
                fuzz_assert(r == -EINVAL);
                return;
        }
        check_identity(kernel_name, &p, r, &id);
        if (r == 0)
                check_state_key(&id);
}

/*
 * What reading a sysfs attribute must give: its bytes less trailing newlines, refused when
 * longer than IDENTITY_SYSFS_ATTR_MAX or holding a NUL. Returns 0 with *ret set (NULL if
 * absent), or the error expected.
 */
static int expected_attr(const FuzzChunk *c, char **ret) {
        size_t n = c->size;

        *ret = NULL;
        if (c->size == 0)
                return 0;
        if (c->size > IDENTITY_SYSFS_ATTR_MAX)
                return -EFBIG;
        if (memchr(c->data, '\0', c->size))
                return -EBADMSG;
        while (n > 0 && c->data[n - 1] == '\n')
                n--;
        *ret = strndup((const char *)c->data, n);
        fuzz_assert(*ret);
        return 0;
}

static void fuzz_sysfs(const FuzzChunk *parts) {
        _cleanup_free_ char *model = NULL, *serial = NULL, *wwid = NULL;
        DeviceIdentity id, expected;
        IdentityProperties p;
        int r, want;

        fuzz_mkdirs(DEVICE_DIR "/device");
        fuzz_write_file(DEVICE_DIR "/device/model", &parts[PART_MODEL]);
        fuzz_write_file(DEVICE_DIR "/device/serial", &parts[PART_SERIAL_SHORT]);
        fuzz_write_file(DEVICE_DIR "/wwid", &parts[PART_WWID]);
        fuzz_write_file(DEVICE_DIR "/device/wwid", &parts[PART_DEVICE_WWID]);

        memset(&id, 0xa5, sizeof(id));
        r = identity_from_sysfs(fuzz_scratch_dir(), KERNEL_NAME, &id);

        want = expected_attr(&parts[PART_MODEL], &model);
        if (want == 0)
                want = expected_attr(&parts[PART_SERIAL_SHORT], &serial);
        if (want == 0)
                want = expected_attr(&parts[PART_WWID], &wwid);
        if (want == 0 && parts[PART_WWID].size == 0)
                want = expected_attr(&parts[PART_DEVICE_WWID], &wwid);
        if (want < 0) {
                fuzz_assert(r == want);
                return;
        }
        p = (IdentityProperties){.model = model, .serial_short = serial, .wwn = wwid};
        check_identity(KERNEL_NAME, &p, r, &id);
        fuzz_assert(identity_from_properties(KERNEL_NAME, &p, &expected) == r);
        if (r == 0) {
                fuzz_assert(id.is_ebs == expected.is_ebs);
                fuzz_assert(strcmp(id.volume_id, expected.volume_id) == 0);
                fuzz_assert(strcmp(id.stable_id, expected.stable_id) == 0);
                check_state_key(&id);
        }
}

/* The normalisers on raw bytes, padding and embedded NULs included. */
static void fuzz_normalisers(const FuzzChunk *parts) {
        for (size_t i = 0; i < _PART_MAX; i++) {
                const char *raw = (const char *)parts[i].data;
                size_t len = parts[i].size;
                char got[EBS_VOLUME_ID_MAX], want[EBS_VOLUME_ID_MAX], again[EBS_VOLUME_ID_MAX];
                char name[EBS_DEVICE_NAME_MAX], want_name[EBS_DEVICE_NAME_MAX];
                bool ok = fuzz_volume_id_expected(raw ?: "", len, want);

                fuzz_assert((ebs_volume_id_normalize(raw ?: "", len, got) == 0) == ok);
                if (ok) {
                        fuzz_assert(fuzz_volume_id_well_formed(got) && strcmp(got, want) == 0);
                        fuzz_assert(ebs_volume_id_normalize(got, strlen(got), again) == 0);
                        fuzz_assert(strcmp(again, got) == 0);
                }
                ok = fuzz_device_name_expected(raw ?: "", len, want_name);
                fuzz_assert((ebs_device_name_normalize(raw ?: "", len, name) == 0) == ok);
                if (ok)
                        fuzz_assert(strcmp(name, want_name) == 0);
                fuzz_assert(ebs_model_matches(raw ?: "", len) == fuzz_model_is_ebs(raw ?: "", len));
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(strings_done) Strings s = {};
        FuzzChunk parts[_PART_MAX];

        (void)fuzz_split(data, size, parts, _PART_MAX);
        for (size_t i = 0; i < _PART_MAX; i++) {
                s.s[i] = fuzz_strdup(&parts[i]);
                for (size_t n = s.s[i] ? strlen(s.s[i]) : 0; n > 0 && s.s[i][n - 1] == '\n'; n--)
                        s.s[i][n - 1] = '\0';
        }

        fuzz_normalisers(parts);
        fuzz_properties(&s);
        fuzz_sysfs(parts);
        fuzz_scratch_clear();
        return 0;
}
