/* SPDX-License-Identifier: MIT */
/*
 * Leveled logging to stderr, journal-aware. See log.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-journal.h>

#include "log.h"

static const char *log_program = "ebs-hydrate";
static int log_max_level = LOG_INFO;
static int log_to_journal = -1;

static int stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
                return 0;
        if (fstat(STDERR_FILENO, &st) < 0)
                return 0;
        return st.st_dev == (dev_t)dev && st.st_ino == (ino_t)ino;
}

static int parse_level(const char *s) {
        static const char *const names[] = {"emerg",   "alert",  "crit", "err",
                                            "warning", "notice", "info", "debug"};

        for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++)
                if (strcmp(s, names[i]) == 0)
                        return i;
        return -1;
}

void log_setup(const char *program) {
        const char *e = getenv("EBS_HYDRATE_LOG_LEVEL");

        if (program)
                log_program = program;
        log_to_journal = stderr_is_journal();
        if (e && *e) {
                int level = parse_level(e);

                if (level >= 0)
                        log_max_level = level;
                else
                        log_warning("Ignoring EBS_HYDRATE_LOG_LEVEL=%s: expected one of emerg, "
                                    "alert, crit, err, warning, notice, info, debug",
                                    e);
        }
}

static bool journal_wanted(void) {
        if (log_to_journal < 0)
                log_to_journal = stderr_is_journal();
        return log_to_journal > 0;
}

void log_volume(int level, const char *message_id, const char *volume_id, const char *device,
                const char *format, ...) {
        char buf[1024];
        va_list ap;

        if (level > log_max_level)
                return;
        va_start(ap, format);
        (void)vsnprintf(buf, sizeof(buf), format, ap);
        va_end(ap);
        if (journal_wanted() &&
            sd_journal_send("MESSAGE=%s", buf, "PRIORITY=%d", level, "MESSAGE_ID=%s", message_id,
                            "VOLUME_ID=%s", volume_id, "DEVICE=%s", device, "SYSLOG_IDENTIFIER=%s",
                            log_program, NULL) >= 0)
                return;
        (void)log_internal(level, 0, "%s", buf);
}

int log_internal(int level, int error, const char *format, ...) {
        int saved = errno;
        char buf[1024];
        va_list ap;

        if (error < 0)
                errno = -error; /* lets vsnprintf expand %m to the right message */
        if (level <= log_max_level) {
                va_start(ap, format);
                (void)vsnprintf(buf, sizeof(buf), format, ap);
                va_end(ap);
                if (journal_wanted())
                        (void)fprintf(stderr, "<%d>%s\n", level, buf);
                else
                        (void)fprintf(stderr, "%s: %s\n", log_program, buf);
        }
        errno = saved;
        return error < 0 ? error : -EIO;
}
