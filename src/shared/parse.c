/* SPDX-License-Identifier: MIT */
/*
 * Strict parsers for the values admins type (sizes, booleans, bounded integers) and coarse
 * formatters for the values they read (byte counts, durations). No locale, no whitespace, no
 * strtoull() leniency: what is accepted is exactly what parse.h documents.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
#include <string.h>
#include <strings.h>

#include "parse.h"
#include "util.h"

/* Parses a run of decimal digits; *ret_end points after the last digit. */
static int parse_digits(const char *s, uint64_t *ret, const char **ret_end) {
        uint64_t v = 0;

        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        for (; *s >= '0' && *s <= '9'; s++) {
                unsigned d = (unsigned)(*s - '0');

                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        *ret = v;
        *ret_end = s;
        return 0;
}

/* Returns the shift for a size suffix, or -EINVAL. Binary multiples only: "KB" is ambiguous. */
static int size_suffix_shift(const char *suffix) {
        static const struct {
                const char *short_name;
                const char *long_name;
                int shift;
        } table[] = {
                {"", "B", 0},     {"K", "KiB", 10}, {"M", "MiB", 20},
                {"G", "GiB", 30}, {"T", "TiB", 40},
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (strcasecmp(suffix, table[i].short_name) == 0 ||
                    strcasecmp(suffix, table[i].long_name) == 0)
                        return table[i].shift;
        return -EINVAL;
}

/**
 * parse_size() - parse a byte count with an optional binary suffix.
 * @s: digits, then nothing, "B", "K"/"KiB", "M"/"MiB", "G"/"GiB" or "T"/"TiB" (any case).
 * @ret: the value in bytes; written only on success.
 *
 * Return: 0, -EINVAL for bad syntax (including "" and whitespace), -ERANGE on overflow.
 */
int parse_size(const char *s, uint64_t *ret) {
        const char *end;
        uint64_t v;
        int shift, r;

        r = parse_digits(s, &v, &end);
        if (r < 0)
                return r;
        shift = size_suffix_shift(end);
        if (shift < 0)
                return shift;
        if (v > (UINT64_MAX >> shift))
                return -ERANGE;
        *ret = v << shift;
        return 0;
}

/**
 * parse_boolean() - parse "1|yes|y|true|t|on" or "0|no|n|false|f|off", case-insensitively.
 * @s: the string.
 * @ret: the value; written only on success.
 *
 * Return: 0 or -EINVAL.
 */
int parse_boolean(const char *s, bool *ret) {
        static const char *const yes[] = {"1", "yes", "y", "true", "t", "on"};
        static const char *const no[] = {"0", "no", "n", "false", "f", "off"};

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                if (strcasecmp(s, yes[i]) == 0) {
                        *ret = true;
                        return 0;
                }
                if (strcasecmp(s, no[i]) == 0) {
                        *ret = false;
                        return 0;
                }
        }
        return -EINVAL;
}

/**
 * parse_unsigned() - parse a decimal integer within [@min, @max].
 * @s: digits only: no sign, no whitespace, no base prefix.
 * @min: smallest accepted value.
 * @max: largest accepted value.
 * @ret: the value; written only on success.
 *
 * Return: 0, -EINVAL for bad syntax, -ERANGE on overflow or when out of range.
 */
int parse_unsigned(const char *s, uint64_t min, uint64_t max, uint64_t *ret) {
        const char *end;
        uint64_t v;
        int r;

        r = parse_digits(s, &v, &end);
        if (r < 0)
                return r;
        if (*end)
                return -EINVAL;
        if (v < min || v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

/**
 * format_bytes() - format a byte count for humans.
 * @buf: output buffer, FORMAT_BYTES_MAX bytes are always enough.
 * @size: size of @buf.
 * @bytes: the count.
 *
 * Below 1024: "N B". Otherwise one decimal and the largest binary unit that keeps the rounded
 * value below 1024: "12.3 KiB", "1.0 MiB", ... up to EiB.
 *
 * Return: @buf.
 */
char *format_bytes(char *buf, size_t size, uint64_t bytes) {
        static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
        size_t i = 0;
        double v;

        if (bytes < 1024) {
                (void)snprintf(buf, size, "%" PRIu64 " B", bytes);
                return buf;
        }
        /* 1023.95 and above would print as "1024.0": move up a unit instead. */
        for (v = (double)bytes / 1024; v >= 1023.95 && i + 1 < ELEMENTSOF(units); i++)
                v /= 1024;
        (void)snprintf(buf, size, "%.1f %s", v, units[i]);
        return buf;
}

/* Divides rounding half up, without the overflow of (a + b / 2) / b. */
static uint64_t div_round(uint64_t a, uint64_t b) {
        return a / b + (a % b >= b - b / 2);
}

/**
 * format_duration() - format a duration coarsely, as an ETA is read.
 * @buf: output buffer, FORMAT_DURATION_MAX bytes are always enough.
 * @size: size of @buf.
 * @seconds: the duration.
 *
 * See parse.h for the exact format.
 *
 * Return: @buf.
 */
char *format_duration(char *buf, size_t size, uint64_t seconds) {
        uint64_t minutes, hours;

        if (seconds < 60) {
                (void)snprintf(buf, size, "%" PRIu64 "s", seconds);
                return buf;
        }
        minutes = div_round(seconds, 60);
        if (minutes < 60) {
                (void)snprintf(buf, size, "%" PRIu64 " min", minutes);
        } else if (minutes < 24 * 60) {
                if (minutes % 60)
                        (void)snprintf(buf, size, "%" PRIu64 "h %" PRIu64 "min", minutes / 60,
                                       minutes % 60);
                else
                        (void)snprintf(buf, size, "%" PRIu64 "h", minutes / 60);
        } else {
                hours = div_round(seconds, 3600);
                if (hours % 24)
                        (void)snprintf(buf, size, "%" PRIu64 "d %" PRIu64 "h", hours / 24,
                                       hours % 24);
                else
                        (void)snprintf(buf, size, "%" PRIu64 "d", hours / 24);
        }
        return buf;
}

/* Writes the escape of @c to @out (NUL-terminated); returns its length, 1 to 4. */
static size_t escape_char(char out[static 5], unsigned char c) {
        static const char hex[] = "0123456789abcdef";
        static const char named[][2] = {
                {'\a', 'a'}, {'\b', 'b'}, {'\f', 'f'}, {'\n', 'n'},
                {'\r', 'r'}, {'\t', 't'}, {'\v', 'v'}, {'\\', '\\'},
        };

        if (c >= 0x20 && c < 0x7f && c != '\\') {
                out[0] = (char)c;
                out[1] = '\0';
                return 1;
        }
        for (size_t i = 0; i < ELEMENTSOF(named); i++)
                if (c == (unsigned char)named[i][0]) {
                        out[0] = '\\';
                        out[1] = named[i][1];
                        out[2] = '\0';
                        return 2;
                }
        out[0] = '\\';
        out[1] = 'x';
        out[2] = hex[c >> 4];
        out[3] = hex[c & 0xf];
        out[4] = '\0';
        return 4;
}

/**
 * cescape() - make text from a file safe to put in a message.
 * @buf: output buffer; CESCAPE_MAX(@n) bytes are always enough.
 * @size: size of @buf.
 * @s: the text.
 * @n: how many bytes of @s at most; the text also ends at a NUL.
 *
 * See parse.h for what is escaped and how a cut is marked.
 *
 * Return: @buf.
 */
char *cescape(char *buf, size_t size, const char *s, size_t n) {
        size_t len = 0, fits_dots = 0; /* the last cut after which "..." still fits */

        if (size == 0)
                return buf;
        for (size_t i = 0; i < n && s[i]; i++) {
                char e[5];
                size_t k = escape_char(e, (unsigned char)s[i]);

                if (len + k >= size) {
                        if (size >= 4) {
                                memcpy(buf + fits_dots, "...", 3);
                                len = fits_dots + 3;
                        }
                        break;
                }
                memcpy(buf + len, e, k);
                len += k;
                if (len + 3 < size)
                        fits_dots = len;
        }
        buf[len] = '\0';
        return buf;
}

const char *file_type_name(mode_t mode) {
        switch (mode & S_IFMT) {
        case S_IFREG:
                return "a regular file";
        case S_IFDIR:
                return "a directory";
        case S_IFCHR:
                return "a character device";
        case S_IFBLK:
                return "a block device";
        case S_IFIFO:
                return "a FIFO";
        case S_IFSOCK:
                return "a socket";
        case S_IFLNK:
                return "a symbolic link";
        default:
                return "of unknown type";
        }
}
