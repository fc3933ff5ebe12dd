/* SPDX-License-Identifier: MIT */
/*
 * Minimal leveled logging to stderr. When stderr is connected to the journal (JOURNAL_STREAM
 * matches), lines carry the sd-daemon "<N>" priority prefix instead of the program name, so
 * journalctl shows the right priority. Helpers return errors; callers log once.
 */
#pragma once

#include <syslog.h>

#include "util.h"

void log_setup(const char *program);

/* Logs at LEVEL; "%m" expands to strerror(-error). Returns error (negative errno), or -EIO if error
 * is 0. */
int log_internal(int level, int error, const char *format, ...) _printf_(3, 4);

#define log_debug(...) (void)log_internal(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) (void)log_internal(LOG_INFO, 0, __VA_ARGS__)
#define log_warning(...) (void)log_internal(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) (void)log_internal(LOG_ERR, 0, __VA_ARGS__)

#define log_debug_errno(e, ...) log_internal(LOG_DEBUG, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_internal(LOG_WARNING, (e), __VA_ARGS__)
#define log_error_errno(e, ...) log_internal(LOG_ERR, (e), __VA_ARGS__)
