/* SPDX-License-Identifier: MIT */
/*
 * Parsing and formatting of the values admins type and read: sizes with binary suffixes,
 * booleans, bounded integers, human-readable byte counts and durations, and text from files made
 * safe to print. Pure functions.
 */
#pragma once

#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * parse_size() - parse "4096", "128K", "1M", "1MiB", "2G", "1T" (powers of 1024).
 * Suffixes: none, B, K/KiB, M/MiB, G/GiB, T/TiB, in any case ("KB" is ambiguous: rejected).
 * Leading/trailing whitespace is an error; so are negative numbers, fractions, overflow and
 * unknown suffixes. Returns 0, -EINVAL (syntax) or -ERANGE (overflow).
 */
int parse_size(const char *s, uint64_t *ret);

/* parse_boolean() - "1|yes|y|true|t|on" / "0|no|n|false|f|off", case-insensitive. 0 or -EINVAL. */
int parse_boolean(const char *s, bool *ret);

/* parse_unsigned() - decimal integer within [min, max]. 0, -EINVAL or -ERANGE. */
int parse_unsigned(const char *s, uint64_t min, uint64_t max, uint64_t *ret);

/* format_bytes() - "512 B", "12.3 KiB", "187.0 MiB", "29.3 GiB" into buf; returns buf. */
char *format_bytes(char *buf, size_t size, uint64_t bytes);

/*
 * format_duration() - coarse on purpose; returns buf. Below 60 s: "0s", "42s". Then rounded to the
 * minute: "3 min" (up to 59 min), "1h 12min" or "2h" (below 24 h); then rounded to the hour:
 * "2d 3h" or "5d".
 */
char *format_duration(char *buf, size_t size, uint64_t seconds);

/*
 * cescape() - @s (its first @n bytes, or up to its NUL) as text safe to put in a message: every
 * byte that is not printable ASCII is written as a C escape (\n, \t, \x1b, \xc3 ...), and a
 * backslash as \\, so that what a file holds can never drive the terminal or fake a log line.
 * Writes at most @size bytes, NUL included: an escape that does not fit is left out, and the
 * text then ends in "..." (if @size is at least 4). CESCAPE_MAX(@n) bytes are always enough.
 * Returns buf.
 */
char *cescape(char *buf, size_t size, const char *s, size_t n);

#define CESCAPE_MAX(n) (4 * (size_t)(n) + 1)
/* CESCAPE() - cescape() into an anonymous buffer of @size bytes (a constant) that lives until the
 * end of the enclosing block: for the argument of a message. */
#define CESCAPE(s, n, size) cescape((char[size]){0}, (size), (s), (n))
#define FORMAT_BYTES_MAX 32
#define FORMAT_DURATION_MAX 32

/* file_type_name() - what a file of @mode is, for messages: "a regular file", "a FIFO" ... */
const char *file_type_name(mode_t mode);
