/* SPDX-License-Identifier: MIT */
/*
 * Minimal leveled logging to stderr. When stderr is connected to the journal (JOURNAL_STREAM
 * matches), lines carry the sd-daemon "<N>" priority prefix instead of the program name, so
 * journalctl shows the right priority. Helpers return errors; callers log once.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <syslog.h>

#include "util.h"

/* log_setup() - name the program, detect the journal, and take the maximum level from
 * $EBS_HYDRATE_LOG_LEVEL (a syslog level name: err, warning, notice, info (default), debug). */
void log_setup(const char *program);

/* Whether a line at LEVEL is logged ($EBS_HYDRATE_LOG_LEVEL may leave it out). */
bool log_enabled(int level);

/* Logs at LEVEL; "%m" expands to strerror(-error). Returns error (negative errno), or -EIO if error
 * is 0. */
int log_internal(int level, int error, const char *format, ...) _printf_(3, 4);

/*
 * output_write() - write to stdout or stderr (@fd 1 or 2) without ever blocking for long: a pipe,
 * terminal or socket that takes nothing for half a second loses the write (-EAGAIN), and later
 * ones are not waited for until it takes one again; that one is preceded by a line saying how
 * many were lost. Never raises SIGPIPE (-EPIPE). output_printf() formats up to 4 KiB first.
 */
int output_write(int fd, const char *buf, size_t n);
int output_printf(int fd, const char *format, ...) _printf_(2, 3);
/* output_bar_drawn() - whether stderr now ends in a progress bar without a newline: the next log
 * line then clears it first ("\r\033[K"), instead of running on after it. */
void output_bar_drawn(bool shown);

#define log_debug(...) (void)log_internal(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) (void)log_internal(LOG_INFO, 0, __VA_ARGS__)
#define log_warning(...) (void)log_internal(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) (void)log_internal(LOG_ERR, 0, __VA_ARGS__)

#define log_debug_errno(e, ...) log_internal(LOG_DEBUG, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_internal(LOG_WARNING, (e), __VA_ARGS__)
#define log_error_errno(e, ...) log_internal(LOG_ERR, (e), __VA_ARGS__)

/* MESSAGE_ID= of the journal records about a volume (journalctl MESSAGE_ID=...). Fixed forever. */
#define LOG_MESSAGE_HYDRATION_STARTED "49b38269611b48e4ab0a4b2be34a7e62"
#define LOG_MESSAGE_HYDRATION_COMPLETE "fe14081e0c3c433196e76e742caf5014"
#define LOG_MESSAGE_HYDRATION_UNREADABLE "144cf07ac94842d19f9bf2b63d6367b5"
#define LOG_MESSAGE_HYDRATION_FAILED "a17ab13676d14d6bb10a1c0629ae6be8"
#define LOG_MESSAGE_HYDRATION_STALLED "a80ecb1ba5e948c6a3f76efecf968381"

/*
 * log_volume() - a structured record about a volume: with MESSAGE_ID=, VOLUME_ID= and DEVICE=
 * fields when stderr is the journal (sent with sd_journal_send), a plain line otherwise.
 */
void log_volume(int level, const char *message_id, const char *volume_id, const char *device,
                const char *format, ...) _printf_(5, 6);
