/* SPDX-License-Identifier: MIT */
/*
 * The EBS naming rules of docs/design.md written out a second time, plainly and independently of
 * volid.c, so that the NVMe identify and identity fuzz targets can check what the parsers
 * return against what the rules say.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "identity.h"

/* "vol-" and 17 (or, legacy, 8) lowercase hex digits, NUL-terminated within the buffer. */
bool fuzz_volume_id_well_formed(const char ret[static EBS_VOLUME_ID_MAX]);

/* What @raw should normalise to: "vol", an optional '-', 17 or 8 hex digits, then only padding
 * (spaces, NULs). False if it is no volume id. */
bool fuzz_volume_id_expected(const char *raw, size_t len, char ret[static EBS_VOLUME_ID_MAX]);

/* "" or 1..32 printable ASCII characters other than space and '/'. */
bool fuzz_device_name_well_formed(const char ret[static EBS_DEVICE_NAME_MAX]);

/* What @raw should normalise to: padding and one leading "/dev/" dropped. False if unusable. */
bool fuzz_device_name_expected(const char *raw, size_t len, char ret[static EBS_DEVICE_NAME_MAX]);

/* True if @raw is EBS_MODEL followed by nothing but padding. */
bool fuzz_model_is_ebs(const char *raw, size_t len);
