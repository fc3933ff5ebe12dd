/* SPDX-License-Identifier: MIT */
/* Helpers shared by the cmocka tests; include after <cmocka.h>. */
#pragma once

#include <stdarg.h>
#include <stdio.h>

#include "util.h"

/* xasprintf() - asprintf() that fails the test instead of returning an error. */
static inline char *xasprintf(const char *format, ...) _printf_(1, 2);
static inline char *xasprintf(const char *format, ...) {
        va_list ap;
        char *s;
        int r;

        va_start(ap, format);
        r = vasprintf(&s, format, ap);
        va_end(ap);
        assert_true(r >= 0);
        return s;
}
