/* SPDX-License-Identifier: MIT */
/*
 * The one-line status of a hydration, as systemd shows it (sd_notify STATUS=): progress while
 * hydrating, and a final word for every way a run can end. Pure: formats a HydratorStatus.
 */
#pragma once

#include <stddef.h>

#include "hydrator.h"

/*
 * status_format() - e.g. "vol-0123...: 42.1% hydrated (12.3 GiB of 29.3 GiB), 187 MiB/s, about
 * 3 min left" while hydrating, "vol-0123...: hydrated (29.3 GiB)" when complete. Returns buf.
 */
char *status_format(char *buf, size_t size, const HydratorStatus *st);
