/* SPDX-License-Identifier: MIT */
/*
 * EBS names from raw device strings: the volume id hidden in an NVMe serial, the exact model
 * check, and the block-device mapping name from the vendor-specific identify area. All pure,
 * all tolerant of the space or NUL padding that fixed-width identify fields carry.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "identity.h"

#define VOLID_PREFIX "vol"
#define VOLID_HEX_DIGITS 17
#define VOLID_LEGACY_HEX_DIGITS 8

static bool is_padding(char c) {
        return c == ' ' || c == '\0';
}

/* Length of @raw once trailing padding is dropped; interior NULs are left for callers to reject. */
static size_t unpadded_length(const char *raw, size_t len) {
        while (len > 0 && is_padding(raw[len - 1]))
                len--;
        return len;
}

static int hex_lower(char c) {
        if (c >= '0' && c <= '9')
                return c;
        if (c >= 'a' && c <= 'f')
                return c;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 'a';
        return -1;
}

/**
 * ebs_volume_id_normalize() - turn an NVMe serial into a volume id.
 * @raw: the serial as stored; may be padded with spaces or NULs and may lack the dash.
 * @len: number of bytes at @raw.
 * @ret: receives "vol-" + lowercase hex on success; untouched on failure.
 *
 * Return: 0, or -EINVAL if @raw is not "vol" [ "-" ] followed by 17 or 8 hex digits.
 */
int ebs_volume_id_normalize(const char *raw, size_t len, char ret[static EBS_VOLUME_ID_MAX]) {
        char out[EBS_VOLUME_ID_MAX] = VOLID_PREFIX "-";
        size_t n, i, prefix = strlen(VOLID_PREFIX), digits;

        if (!raw)
                return -EINVAL;
        n = unpadded_length(raw, len);
        if (n < prefix || memcmp(raw, VOLID_PREFIX, prefix) != 0)
                return -EINVAL;
        i = prefix;
        if (i < n && raw[i] == '-')
                i++;

        digits = n - i;
        if (digits != VOLID_HEX_DIGITS && digits != VOLID_LEGACY_HEX_DIGITS)
                return -EINVAL;
        for (size_t k = 0; k < digits; k++) {
                int c = hex_lower(raw[i + k]);

                if (c < 0)
                        return -EINVAL;
                out[prefix + 1 + k] = (char)c;
        }
        out[prefix + 1 + digits] = '\0';

        memcpy(ret, out, EBS_VOLUME_ID_MAX);
        return 0;
}

/**
 * ebs_model_matches() - check an NVMe model string against EBS_MODEL.
 * @model: the model as stored, padded with trailing spaces or NULs; may be NULL.
 * @len: number of bytes at @model.
 *
 * Return: true only if the unpadded model is exactly EBS_MODEL.
 */
bool ebs_model_matches(const char *model, size_t len) {
        size_t n;

        if (!model)
                return false;
        n = unpadded_length(model, len);
        return n == strlen(EBS_MODEL) && memcmp(model, EBS_MODEL, n) == 0;
}

/**
 * ebs_device_name_normalize() - block-device mapping name without padding or "/dev/".
 * @raw: the name as stored ("/dev/sdf", "sdf   ", "xvdf\0\0").
 * @len: number of bytes at @raw.
 * @ret: receives the bare name ("sdf") on success; untouched on failure.
 *
 * Return: 0, or -EINVAL if nothing is left, the name is too long, or it holds anything but
 * printable non-space ASCII other than '/'.
 */
int ebs_device_name_normalize(const char *raw, size_t len, char ret[static EBS_DEVICE_NAME_MAX]) {
        static const char dev_prefix[] = "/dev/";
        size_t n, skip = 0;

        if (!raw)
                return -EINVAL;
        n = unpadded_length(raw, len);
        if (n >= strlen(dev_prefix) && memcmp(raw, dev_prefix, strlen(dev_prefix)) == 0)
                skip = strlen(dev_prefix);
        n -= skip;
        if (n == 0 || n >= EBS_DEVICE_NAME_MAX)
                return -EINVAL;
        for (size_t k = 0; k < n; k++) {
                char c = raw[skip + k];

                if (c <= ' ' || c > '~' || c == '/')
                        return -EINVAL;
        }

        memcpy(ret, raw + skip, n);
        ret[n] = '\0';
        return 0;
}
