/* SPDX-License-Identifier: MIT */
/* A range of a device's bytes: what the state records as unreadable, what the mapping of the
 * file systems and HotPaths= find, what the reader is asked to read ahead. */
#pragma once

#include <stdint.h>

typedef struct ByteRange {
        uint64_t offset;
        uint64_t length;
} ByteRange;
