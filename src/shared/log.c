/* SPDX-License-Identifier: MIT */
/*
 * Leveled logging to stderr, journal-aware. See log.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <systemd/sd-journal.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "parse.h"
#include "time-util.h"
#include "util.h"

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

/*
 * Output that never blocks for long. stdout or stderr may be a pipe that nobody reads (a
 * `| less` left paused, a wrapper that died): a blocking write there would hold the event loop,
 * and with it checkpoints, signals and the watchdog, until SIGKILL. So a pipe or a terminal is
 * written through a private non-blocking descriptor (reopened through /proc/self/fd: the
 * shared one, and whoever else writes through it, keeps its flags), a socket with MSG_DONTWAIT.
 * A write that cannot go through within OUTPUT_WAIT_MSEC is dropped, and while a stream drops
 * it is not waited for at all; once it takes writes again, one line says how many were lost.
 * Regular files and anything else are written as usual.
 */
#define OUTPUT_WAIT_MSEC 500

typedef struct OutputStream {
        bool setup;
        bool socket;
        bool dropping;
        int fd;        /* what to write to: a private non-blocking descriptor, or the stream's */
        unsigned lost; /* writes dropped since the last that went through */
} OutputStream;

/* A message, after its control bytes are escaped (longer is cut); the prefix before it ("<3>",
 * "ebs-hydrated: "); one line on stderr with both and the bar's erasure; output_printf()'s text. */
#define LOG_MESSAGE_MAX 1024
#define LOG_PREFIX_MAX 64
#define LOG_LINE_MAX (sizeof("\r\033[K") + LOG_PREFIX_MAX + LOG_MESSAGE_MAX + 1)
#define OUTPUT_PRINTF_MAX 4096

static OutputStream output_streams[3];
static bool output_bar_shown; /* a progress bar, without its newline, ends stderr */
/* File-system discovery runs in a thread of its own (discovery.c), and HotPaths= warns from it. */
static pthread_mutex_t output_lock = PTHREAD_MUTEX_INITIALIZER;

static void output_setup(OutputStream *o, int fd) {
        char path[PROC_PID_PATH_MAX];
        struct stat st;
        int private_fd;

        o->setup = true;
        o->fd = fd;
        if (fstat(fd, &st) < 0)
                return;
        if (S_ISSOCK(st.st_mode)) {
                o->socket = true;
                return;
        }
        if (!S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode))
                return;
        (void)snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        private_fd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (private_fd >= 0) {
                o->fd = private_fd;
                return;
        }
        /* No /proc: the shared descriptor, non-blocking, is the lesser evil than a hang. */
        (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static int64_t mono_msec(void) {
        return (int64_t)(now_usec(CLOCK_MONOTONIC) / USEC_PER_MSEC);
}

/* Writes it all, or returns -EAGAIN (not read in time) or the write's error, having written part.
 */
static int output_write_all(OutputStream *o, const char *buf, size_t n) {
        int64_t deadline = mono_msec() + (o->dropping ? 0 : OUTPUT_WAIT_MSEC);

        while (n > 0) {
                ssize_t w = o->socket ? send(o->fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL)
                                      : write(o->fd, buf, n);
                int64_t left;

                if (w > 0) {
                        buf += w;
                        n -= (size_t)w;
                        continue;
                }
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0 && errno != EAGAIN)
                        return -errno;
                left = deadline - mono_msec();
                if (left <= 0)
                        return -EAGAIN;
                (void)poll(&(struct pollfd){.fd = o->fd, .events = POLLOUT}, 1, (int)left);
        }
        return 0;
}

static int output_write_locked(int fd, const char *buf, size_t n) {
        OutputStream *o = &output_streams[fd];
        int r;

        if (!o->setup)
                output_setup(o, fd);
        if (o->lost > 0 && !o->dropping) {
                char note[sizeof("( lines lost here: nothing read this stream in time)\n") +
                          DECIMAL_STR_MAX(unsigned)];
                int len = snprintf(note, sizeof(note),
                                   "(%u line%s lost here: nothing read this stream in time)\n",
                                   o->lost, o->lost == 1 ? "" : "s");

                o->lost = 0;
                (void)output_write_all(o, note, (size_t)len);
        }
        r = output_write_all(o, buf, n);
        if (r < 0) {
                o->dropping = true;
                o->lost++;
                return r;
        }
        o->dropping = false; /* a note of what was lost goes out before the next line */
        return 0;
}

int output_write(int fd, const char *buf, size_t n) {
        int r;

        if (fd < 0 || fd > 2)
                return -EBADF;
        (void)pthread_mutex_lock(&output_lock);
        r = output_write_locked(fd, buf, n);
        (void)pthread_mutex_unlock(&output_lock);
        return r;
}

void output_bar_drawn(bool shown) {
        (void)pthread_mutex_lock(&output_lock);
        output_bar_shown = shown;
        (void)pthread_mutex_unlock(&output_lock);
}

/* A log line takes the bar's place on the terminal (the bar is drawn again below it). */
static void output_log_line(const char *prefix, const char *buf) {
        char line[LOG_LINE_MAX];
        int n = snprintf(line, sizeof(line), "%s%s%s\n", output_bar_shown ? "\r\033[K" : "", prefix,
                         buf);

        if (n < 0)
                return;
        output_bar_shown = false;
        (void)output_write_locked(STDERR_FILENO, line, MIN((size_t)n, sizeof(line) - 1));
}

int output_printf(int fd, const char *format, ...) {
        char buf[OUTPUT_PRINTF_MAX];
        va_list ap;
        int n;

        va_start(ap, format);
        n = vsnprintf(buf, sizeof(buf), format, ap);
        va_end(ap);
        if (n < 0)
                return -EINVAL;
        return output_write(fd, buf, MIN((size_t)n, sizeof(buf) - 1));
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
                                    CESCAPE(e, SIZE_MAX, 256));
        }
}

static bool journal_wanted(void) {
        if (log_to_journal < 0)
                log_to_journal = stderr_is_journal();
        return log_to_journal > 0;
}

/*
 * Control bytes in a message become \xNN: whatever a message quotes (an option value, a path,
 * a device's sysfs attribute) can never write escape sequences to the admin's terminal, nor
 * forge a line of its own in the journal. Other bytes (UTF-8 in paths) stay as they are.
 */
static void defang(char *buf, size_t size) {
        static const char hex[] = "0123456789abcdef";
        char out[LOG_MESSAGE_MAX];
        size_t o = 0;

        for (const char *p = buf; *p && o + 5 < sizeof(out); p++) {
                unsigned char c = (unsigned char)*p;

                if (c >= 0x20 && c != 0x7f) {
                        out[o++] = (char)c;
                        continue;
                }
                out[o++] = '\\';
                out[o++] = 'x';
                out[o++] = hex[c >> 4];
                out[o++] = hex[c & 15];
        }
        out[o] = '\0';
        (void)snprintf(buf, size, "%s", out);
}

bool log_enabled(int level) {
        return level <= log_max_level;
}

void log_volume(int level, const char *message_id, const char *volume_id, const char *device,
                const char *format, ...) {
        char buf[LOG_MESSAGE_MAX];
        va_list ap;

        if (level > log_max_level)
                return;
        va_start(ap, format);
        (void)vsnprintf(buf, sizeof(buf), format, ap);
        va_end(ap);
        defang(buf, sizeof(buf));
        if (journal_wanted() &&
            sd_journal_send("MESSAGE=%s", buf, "PRIORITY=%d", level, "MESSAGE_ID=%s", message_id,
                            "VOLUME_ID=%s", volume_id, "DEVICE=%s", device, "SYSLOG_IDENTIFIER=%s",
                            log_program, NULL) >= 0)
                return;
        (void)log_internal(level, 0, "%s", buf);
}

int log_internal(int level, int error, const char *format, ...) {
        int saved = errno;
        char buf[LOG_MESSAGE_MAX];
        va_list ap;

        if (error < 0)
                errno = -error; /* lets vsnprintf expand %m to the right message */
        if (level <= log_max_level) {
                va_start(ap, format);
                (void)vsnprintf(buf, sizeof(buf), format, ap);
                va_end(ap);
                defang(buf, sizeof(buf));
                char prefix[LOG_PREFIX_MAX];

                if (journal_wanted())
                        (void)snprintf(prefix, sizeof(prefix), "<%d>", level);
                else
                        (void)snprintf(prefix, sizeof(prefix), "%s: ", log_program);
                (void)pthread_mutex_lock(&output_lock);
                output_log_line(prefix, buf);
                (void)pthread_mutex_unlock(&output_lock);
        }
        errno = saved;
        return error < 0 ? error : -EIO;
}
