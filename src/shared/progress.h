/* SPDX-License-Identifier: MIT */
/*
 * Progress arithmetic: a sliding-window rate, the ETA, the percent shown to users (never 100.0
 * before it is true), and the numbers in words (a per-mille, a rate). Pure functions over
 * numbers; the callers own clocks and output. The STATUS= line and the bar: daemon/report.h.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define PROGRESS_SAMPLES 32
#define PROGRESS_WINDOW_USEC (10 * USEC_PER_SEC)
#define PROGRESS_ETA_UNKNOWN UINT64_MAX

typedef struct ProgressSample {
        uint64_t usec;
        uint64_t bytes;
} ProgressSample;

typedef struct Progress {
        ProgressSample samples[PROGRESS_SAMPLES]; /* ring, oldest at head once full */
        unsigned n;
        unsigned head;
} Progress;

void progress_init(Progress *p, uint64_t now_usec, uint64_t done_bytes);
void progress_sample(Progress *p, uint64_t now_usec, uint64_t done_bytes);
/* progress_rate() - bytes per second over the last PROGRESS_WINDOW_USEC (or what there is). */
uint64_t progress_rate(const Progress *p);
/* progress_eta() - seconds left at @rate, or PROGRESS_ETA_UNKNOWN when the rate is 0. */
uint64_t progress_eta(uint64_t done_bytes, uint64_t total_bytes, uint64_t rate);
/* progress_permille() - done/total in tenths of a percent, rounded down: 999 until truly done. */
unsigned progress_permille(uint64_t done_bytes, uint64_t total_bytes);

/* format_permille() - a per-mille as a percentage with one decimal, without the '%': "42.1"
 * for 421, "100.0" for 1000. Returns @buf. */
#define FORMAT_PERMILLE_MAX 16
char *format_permille(char buf[static FORMAT_PERMILLE_MAX], unsigned permille);

/* "187 MiB/s", "4.2 MiB/s", "512 KiB/s" into buf. */
#define FORMAT_RATE_MAX 32
char *format_rate(char *buf, size_t size, uint64_t bytes_per_second);
