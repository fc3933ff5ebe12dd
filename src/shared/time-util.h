/* SPDX-License-Identifier: MIT */
/*
 * The clock, in microseconds. The units (USEC_PER_SEC and friends) are in util.h, so that headers
 * can name their intervals without declaring now_usec().
 */
#pragma once

#include <stdint.h>
#include <time.h>

/* now_usec() - @clock (CLOCK_MONOTONIC, CLOCK_REALTIME ...) in microseconds; 0 if it cannot be read
 * (an invalid @clock). */
uint64_t now_usec(clockid_t clock);
