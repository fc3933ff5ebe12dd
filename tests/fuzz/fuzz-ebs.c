/* SPDX-License-Identifier: MIT */
/*
 * Reference versions of the EBS naming rules for the fuzz targets' invariants; see fuzz-ebs.h.
 * Slow and simple on purpose: byte by byte, no shared code with src/identity/volid.c.
 */
#include <ctype.h>
#include <string.h>

#include "fuzz-ebs.h"

static size_t without_padding(const char *raw, size_t len) {
        while (len > 0 && (raw[len - 1] == ' ' || raw[len - 1] == '\0'))
                len--;
        return len;
}

static bool is_hex(char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool fuzz_volume_id_well_formed(const char ret[static EBS_VOLUME_ID_MAX]) {
        size_t n = strnlen(ret, EBS_VOLUME_ID_MAX);

        if (n == EBS_VOLUME_ID_MAX || (n != 4 + 17 && n != 4 + 8) || strncmp(ret, "vol-", 4) != 0)
                return false;
        for (size_t i = 4; i < n; i++)
                if (!isdigit((unsigned char)ret[i]) && !(ret[i] >= 'a' && ret[i] <= 'f'))
                        return false;
        return true;
}

bool fuzz_volume_id_expected(const char *raw, size_t len, char ret[static EBS_VOLUME_ID_MAX]) {
        size_t n = without_padding(raw, len), i = 3, digits;

        if (n < 3 || memcmp(raw, "vol", 3) != 0)
                return false;
        if (i < n && raw[i] == '-')
                i++;
        digits = n - i;
        if (digits != 17 && digits != 8)
                return false;
        memset(ret, 0, EBS_VOLUME_ID_MAX);
        memcpy(ret, "vol-", 4);
        for (size_t k = 0; k < digits; k++) {
                if (!is_hex(raw[i + k]))
                        return false;
                ret[4 + k] = (char)tolower((unsigned char)raw[i + k]);
        }
        return true;
}

bool fuzz_device_name_well_formed(const char ret[static EBS_DEVICE_NAME_MAX]) {
        size_t n = strnlen(ret, EBS_DEVICE_NAME_MAX);

        if (n == EBS_DEVICE_NAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (ret[i] <= ' ' || ret[i] > '~' || ret[i] == '/')
                        return false;
        return true;
}

bool fuzz_device_name_expected(const char *raw, size_t len, char ret[static EBS_DEVICE_NAME_MAX]) {
        size_t n = without_padding(raw, len);

        if (n >= 5 && memcmp(raw, "/dev/", 5) == 0) {
                raw += 5;
                n -= 5;
        }
        if (n == 0 || n > EBS_DEVICE_NAME_MAX - 1)
                return false;
        memset(ret, 0, EBS_DEVICE_NAME_MAX);
        memcpy(ret, raw, n);
        return fuzz_device_name_well_formed(ret) && strlen(ret) == n;
}

bool fuzz_model_is_ebs(const char *raw, size_t len) {
        size_t n = without_padding(raw, len);

        return n == strlen(EBS_MODEL) && memcmp(raw, EBS_MODEL, n) == 0;
}
