/* SPDX-License-Identifier: MIT */
/*
 * What tuner.c (the climb, the base latency), tuner-slow-start.c (the slow start before the
 * climb) and tuner-yield.c (the yield) share; not for other modules.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "tuner.h"

/* The depth within the climb's minimum and maximum. */
unsigned tuner_clamp_depth(const DepthTuner *t, uint64_t depth);
/* Yielding to others, the depth may go below the minimum of the climb, down to one read. */
unsigned tuner_clamp_yield(const DepthTuner *t, uint64_t depth);
/* Sets the depth and the mode; true when the depth changed. */
bool tuner_set_depth(DepthTuner *t, unsigned depth, TunerMode mode);
/* A new epoch of the climb begins at @now. */
void tuner_new_epoch(DepthTuner *t, uint64_t now);
/* A read's latency, for the base latency's history. */
void tuner_base_note(DepthTuner *t, uint64_t latency, uint64_t now);
/* Someone else came (a @sibling, or others' I/O) before any relearn measured the base: see
 * tuner.c. */
void tuner_base_doubted(DepthTuner *t, bool sibling, uint64_t now);
/* A cold read of @bytes completed after @latency, in SLOW_START: one read more, and at the end
 * of a round the verdict on it. */
void tuner_slow_start(DepthTuner *t, uint64_t bytes, uint64_t latency, uint64_t now);
/* Other hydrators on the host read (@readers of them), seen for the first time: a slow start
 * deeper than an equal share of the depth it started at begins a new round there (once). */
void tuner_slow_start_siblings(DepthTuner *t, unsigned readers, uint64_t now);
/* A slow start's round begins afresh at @depth, as its first: nothing counted before it. */
void tuner_new_round(DepthTuner *t, unsigned depth);
/* Ends the slow start: back to the depth of the last round that paid, in STARTUP. */
void tuner_end_slow_start(DepthTuner *t, uint64_t now);
/* No probe is under way any more: its flags are cleared (a relearn, a restart). */
void tuner_forget_probe(DepthTuner *t);
/* The climb starts again from the current depth (after yielding): a new slow start. */
bool tuner_restart_climb(DepthTuner *t, uint64_t now);
