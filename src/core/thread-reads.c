/* SPDX-License-Identifier: MIT */
/*
 * The block-device reads of the process's other threads (thread-reads.h), from procfs.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "parse.h"
#include "thread-reads.h"
#include "util.h"

#define IO_FILE_MAX 1024 /* seven short lines */

int thread_reads_parse(const char *text, uint64_t *ret) {
        for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
                char digits[DECIMAL_STR_MAX(uint64_t)];
                size_t n;

                if (strncmp(p, "read_bytes: ", 12) != 0)
                        continue;
                p += 12;
                n = strspn(p, "0123456789");
                if (n == 0 || n >= sizeof(digits) || (p[n] != '\n' && p[n] != '\0'))
                        return -EBADMSG;
                memcpy(digits, p, n);
                digits[n] = '\0';
                return parse_unsigned(digits, 0, UINT64_MAX, ret) < 0 ? -EBADMSG : 0;
        }
        return -EBADMSG;
}

static int read_bytes_of(const char *path, uint64_t *ret) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = read_full_file_at(AT_FDCWD, path, IO_FILE_MAX, &text, NULL);
        if (r < 0)
                return r;
        return thread_reads_parse(text, ret);
}

uint64_t thread_reads_others(void) {
        uint64_t all, mine;

        if (read_bytes_of("/proc/self/io", &all) < 0 ||
            read_bytes_of("/proc/thread-self/io", &mine) < 0 || mine > all)
                return 0;
        return all - mine;
}
