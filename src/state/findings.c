/* SPDX-License-Identifier: MIT */
/* What AWS said about a volume (findings.h): its text and its file. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pwd.h>

#include "build-config.h"
#include "fileio.h"
#include "findings.h"
#include "kv-text.h"
#include "parse.h"
#include "string-table.h"
#include "util.h"

static const char *const findings_source_table[_FINDINGS_SOURCE_MAX] = {
        [FINDINGS_SOURCE_SNAPSHOT] = EBS_HYDRATE_SOURCE_SNAPSHOT,
        [FINDINGS_SOURCE_EMPTY] = EBS_HYDRATE_SOURCE_EMPTY,
        [FINDINGS_SOURCE_COPY] = EBS_HYDRATE_SOURCE_COPY,
};

DEFINE_STRING_TABLE_LOOKUP(findings_source, FindingsSource)

void findings_init(AwsFindings *f, const char *volume_id) {
        *f = (AwsFindings){
                .source = _FINDINGS_SOURCE_INVALID,
                .fast_restored = FINDINGS_UNKNOWN,
                .size_gib = FINDINGS_UNKNOWN,
                .initialization_rate = FINDINGS_UNKNOWN,
                .initialization_progress = FINDINGS_UNKNOWN,
                .initialization_eta = FINDINGS_UNKNOWN,
                .blocks_stored = FINDINGS_UNKNOWN,
        };
        (void)snprintf(f->volume_id, sizeof(f->volume_id), "%s", volume_id);
}

/* Text that stays on its line: no control bytes. */
static bool line_safe(const char *s) {
        for (; *s; s++)
                if ((unsigned char)*s < ' ' || *s == 0x7f)
                        return false;
        return true;
}

typedef struct Out {
        char *buf;
        size_t size, n;
        bool overflow;
} Out;

static void put(Out *o, const char *key, const char *format, ...) _printf_(3, 4);
static void put(Out *o, const char *key, const char *format, ...) {
        va_list ap;
        int k;

        if (o->overflow)
                return;
        k = snprintf(o->buf + o->n, o->size - o->n, "%s=", key);
        if (k < 0 || (size_t)k >= o->size - o->n) {
                o->overflow = true;
                return;
        }
        o->n += (size_t)k;
        va_start(ap, format);
        k = vsnprintf(o->buf + o->n, o->size - o->n, format, ap);
        va_end(ap);
        if (k < 0 || (size_t)k + 1 >= o->size - o->n) {
                o->overflow = true;
                return;
        }
        o->n += (size_t)k;
        o->buf[o->n++] = '\n';
        o->buf[o->n] = '\0';
}

static void put_number(Out *o, const char *key, int64_t v) {
        if (v != FINDINGS_UNKNOWN)
                put(o, key, "%" PRId64, v);
}

static void put_word(Out *o, const char *key, const char *v) {
        if (v[0])
                put(o, key, "%s", v);
}

const char *findings_dir(void) {
        const char *e = getenv("EBS_HYDRATE_AWS_DIR");

        return e && *e ? e : EBS_HYDRATE_AWS_DIR;
}

uid_t findings_helper_uid(void) {
        struct passwd *pw = getpwnam(EBS_HYDRATE_AWS_USER);

        return pw ? pw->pw_uid : 0;
}

/* AWS's own initialization types, which fetch every block without our reads. */
static bool aws_initializes(const char *type) {
        return streq(type, "provisioned-rate") || streq(type, "volume-copy");
}

int64_t findings_eta_at(const AwsFindings *f, uint64_t realtime_usec) {
        uint64_t gone;

        if (f->initialization_eta < 0)
                return -1;
        gone = realtime_usec > f->time_usec ? (realtime_usec - f->time_usec) / USEC_PER_SEC : 0;
        return gone >= (uint64_t)f->initialization_eta ? 0 : f->initialization_eta - (int64_t)gone;
}

const char *findings_verdict(const AwsFindings *f) {
        bool initializing = streq(f->initialization_state, "initializing");

        if (f->error[0])
                return EBS_HYDRATE_AWS_UNAVAILABLE;
        /* "empty" only when nothing says otherwise: a volume AWS is initializing is not */
        if (f->source == FINDINGS_SOURCE_EMPTY && !initializing && !f->source_volume_id[0])
                return EBS_HYDRATE_AWS_EMPTY;
        if (f->fast_restored == 1)
                return EBS_HYDRATE_AWS_FAST_RESTORED;
        if (streq(f->initialization_state, "completed"))
                return EBS_HYDRATE_AWS_INITIALIZED;
        if (!f->status_error[0] && initializing && aws_initializes(f->initialization_type))
                return EBS_HYDRATE_AWS_INITIALIZING;
        return EBS_HYDRATE_AWS_SNAPSHOT;
}

int findings_format(const AwsFindings *f, char *buf, size_t size) {
        Out o = {.buf = buf, .size = size};
        const char *fields[] = {f->volume_id,
                                f->error,
                                f->snapshot_id,
                                f->status_error,
                                f->initialization_state,
                                f->initialization_type,
                                f->blocks_error};

        for (size_t i = 0; i < ELEMENTSOF(fields); i++)
                if (!line_safe(fields[i]))
                        return -EINVAL;
        if (size == 0)
                return -ENOBUFS;
        buf[0] = '\0';
        put(&o, EBS_HYDRATE_FINDINGS_FORMAT, "%d", EBS_HYDRATE_FINDINGS_VERSION);
        put(&o, EBS_HYDRATE_FINDINGS_VOLUME_ID, "%s", f->volume_id);
        put(&o, EBS_HYDRATE_FINDINGS_TIME, "%" PRIu64, f->time_usec);
        if (f->error[0]) {
                put(&o, EBS_HYDRATE_FINDINGS_ERROR, "%s", f->error);
                return o.overflow ? -ENOBUFS : (int)o.n;
        }
        if (!findings_source_to_string(f->source))
                return -EINVAL;
        put(&o, EBS_HYDRATE_FINDINGS_SOURCE, "%s", findings_source_to_string(f->source));
        put_word(&o, EBS_HYDRATE_FINDINGS_SNAPSHOT_ID, f->snapshot_id);
        put_word(&o, EBS_HYDRATE_FINDINGS_SOURCE_VOLUME_ID, f->source_volume_id);
        put(&o, EBS_HYDRATE_FINDINGS_FAST_RESTORED, "%s",
            f->fast_restored == FINDINGS_UNKNOWN ? "unknown"
            : f->fast_restored                   ? "yes"
                                                 : "no");
        put_number(&o, EBS_HYDRATE_FINDINGS_SIZE_GIB, f->size_gib);
        put_number(&o, EBS_HYDRATE_FINDINGS_INITIALIZATION_RATE, f->initialization_rate);
        if (f->status_error[0])
                put(&o, EBS_HYDRATE_FINDINGS_STATUS_ERROR, "%s", f->status_error);
        put_word(&o, EBS_HYDRATE_FINDINGS_INITIALIZATION_STATE, f->initialization_state);
        put_word(&o, EBS_HYDRATE_FINDINGS_INITIALIZATION_TYPE, f->initialization_type);
        put_number(&o, EBS_HYDRATE_FINDINGS_INITIALIZATION_PROGRESS, f->initialization_progress);
        put_number(&o, EBS_HYDRATE_FINDINGS_INITIALIZATION_ETA, f->initialization_eta);
        put_number(&o, EBS_HYDRATE_FINDINGS_BLOCKS_STORED, f->blocks_stored);
        if (f->blocks_error[0])
                put(&o, EBS_HYDRATE_FINDINGS_BLOCKS_ERROR, "%s", f->blocks_error);
        return o.overflow ? -ENOBUFS : (int)o.n;
}

/* --- parsing --- */

typedef struct Parse {
        AwsFindings f;
        unsigned seen; /* a bit per key, in the order of keys[] */
        bool version_ok;
} Parse;

/* A value written is never empty (an absent field has no line). */
static bool copy_word(char *dst, size_t size, const char *v, size_t len) {
        return len > 0 && kv_value_word(v, len, dst, size) >= 0;
}

static bool copy_text(char *dst, size_t size, const char *v, size_t len) {
        if (len == 0 || len >= size)
                return false;
        memcpy(dst, v, len);
        dst[len] = '\0';
        return line_safe(dst);
}

static bool copy_number(int64_t *dst, int64_t max, const char *v, size_t len) {
        uint64_t n;

        if (kv_value_number(v, len, (uint64_t)max, &n) < 0)
                return false;
        *dst = (int64_t)n;
        return true;
}

static bool parse_field(Parse *p, unsigned k, const char *v, size_t len) {
        AwsFindings *f = &p->f;
        char word[FINDINGS_WORD_MAX];
        int64_t n;

        switch (k) {
        case 0:
                return copy_number(&n, INT64_MAX, v, len) && (p->version_ok = n == 1);
        case 1:
                return copy_word(f->volume_id, sizeof(f->volume_id), v, len) &&
                       state_key_valid(f->volume_id, len);
        case 2:
                return copy_number(&n, INT64_MAX, v, len) && ((f->time_usec = (uint64_t)n), true);
        case 3:
                return copy_text(f->error, sizeof(f->error), v, len);
        case 4:
                return copy_word(word, sizeof(word), v, len) &&
                       (f->source = findings_source_from_string(word)) >= 0;
        case 5:
                return copy_word(f->snapshot_id, sizeof(f->snapshot_id), v, len);
        case 6:
                if (!copy_word(word, sizeof(word), v, len))
                        return false;
                f->fast_restored = streq(word, "yes")  ? 1
                                   : streq(word, "no") ? 0
                                                       : FINDINGS_UNKNOWN;
                return f->fast_restored != FINDINGS_UNKNOWN || streq(word, "unknown");
        case 7:
                return copy_number(&f->size_gib, INT64_MAX, v, len);
        case 8:
                return copy_number(&f->initialization_rate, INT64_MAX, v, len);
        case 9:
                return copy_text(f->status_error, sizeof(f->status_error), v, len);
        case 10:
                return copy_word(f->initialization_state, sizeof(f->initialization_state), v, len);
        case 11:
                return copy_word(f->initialization_type, sizeof(f->initialization_type), v, len);
        case 12:
                return copy_number(&f->initialization_progress, 100, v, len);
        case 13:
                return copy_number(&f->initialization_eta, INT64_MAX, v, len);
        case 14:
                return copy_word(f->source_volume_id, sizeof(f->source_volume_id), v, len);
        case 15:
                return copy_number(&f->blocks_stored, INT64_MAX, v, len);
        case 16:
                return copy_text(f->blocks_error, sizeof(f->blocks_error), v, len);
        default:
                return false;
        }
}

/* In the order of parse_field()'s cases. */
static const char *const keys[] = {
        EBS_HYDRATE_FINDINGS_FORMAT,
        EBS_HYDRATE_FINDINGS_VOLUME_ID,
        EBS_HYDRATE_FINDINGS_TIME,
        EBS_HYDRATE_FINDINGS_ERROR,
        EBS_HYDRATE_FINDINGS_SOURCE,
        EBS_HYDRATE_FINDINGS_SNAPSHOT_ID,
        EBS_HYDRATE_FINDINGS_FAST_RESTORED,
        EBS_HYDRATE_FINDINGS_SIZE_GIB,
        EBS_HYDRATE_FINDINGS_INITIALIZATION_RATE,
        EBS_HYDRATE_FINDINGS_STATUS_ERROR,
        EBS_HYDRATE_FINDINGS_INITIALIZATION_STATE,
        EBS_HYDRATE_FINDINGS_INITIALIZATION_TYPE,
        EBS_HYDRATE_FINDINGS_INITIALIZATION_PROGRESS,
        EBS_HYDRATE_FINDINGS_INITIALIZATION_ETA,
        EBS_HYDRATE_FINDINGS_SOURCE_VOLUME_ID,
        EBS_HYDRATE_FINDINGS_BLOCKS_STORED,
        EBS_HYDRATE_FINDINGS_BLOCKS_ERROR,
};

static int findings_pair(const char *key, size_t key_len, const char *value, size_t value_len,
                         void *userdata) {
        Parse *p = userdata;

        for (unsigned i = 0; i < ELEMENTSOF(keys); i++)
                if (kv_key_is(key, key_len, keys[i])) {
                        if ((p->seen & (1u << i)) || !parse_field(p, i, value, value_len))
                                return -EBADMSG;
                        p->seen |= 1u << i;
                }
        return 0; /* a newer helper's key: ignored */
}

int findings_parse(const char *text, size_t size, AwsFindings *ret) {
        Parse p;

        findings_init(&p.f, "");
        p.seen = 0;
        p.version_ok = false;
        if (kv_text_foreach(text, size, findings_pair, &p) < 0)
                return -EBADMSG;
        /* the version, wherever its line: another version's keys may mean other things */
        if (!p.version_ok || !(p.seen & 1u << 1) || !(p.seen & 1u << 2))
                return -EBADMSG;
        if (!p.f.error[0] && !(p.seen & 1u << 4)) /* an answer says where the volume came from */
                return -EBADMSG;
        if (p.f.source == FINDINGS_SOURCE_SNAPSHOT && !p.f.snapshot_id[0])
                return -EBADMSG;
        if (p.f.source == FINDINGS_SOURCE_COPY && !p.f.source_volume_id[0])
                return -EBADMSG;
        /* a block list is a snapshot's, and it was had or it was not */
        if ((p.f.blocks_stored != FINDINGS_UNKNOWN || p.f.blocks_error[0]) &&
            (p.f.source != FINDINGS_SOURCE_SNAPSHOT ||
             (p.f.blocks_stored != FINDINGS_UNKNOWN && p.f.blocks_error[0])))
                return -EBADMSG;
        *ret = p.f;
        return 0;
}

/* --- the file --- */

/* <volume_id><suffix>: a valid state key only (never a path elsewhere). */
static int file_name(const char *volume_id, const char *suffix, char *buf, size_t size) {
        int n;

        if (!state_key_valid(volume_id, strlen(volume_id)))
                return -EINVAL;
        n = snprintf(buf, size, "%s%s", volume_id, suffix);
        return n > 0 && (size_t)n < size ? 0 : -EINVAL;
}

int findings_write_file(int dir_fd, const char *volume_id, const char *suffix, const void *data,
                        size_t size) {
        char name[NAME_MAX + 1];

        if (file_name(volume_id, suffix, name, sizeof(name)) < 0)
                return -EINVAL;
        return write_file_atomic_at(dir_fd, name, data, size, 0644, WRITE_ATOMIC_SYNC);
}

int findings_remove_file(int dir_fd, const char *volume_id, const char *suffix) {
        char name[NAME_MAX + 1];

        if (file_name(volume_id, suffix, name, sizeof(name)) < 0)
                return -EINVAL;
        if (unlinkat(dir_fd, name, 0) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

int findings_read_file(int dir_fd, const char *volume_id, const char *suffix, size_t max_size,
                       uid_t helper_uid, char **ret, size_t *ret_size) {
        char name[NAME_MAX + 1];
        uid_t owner;
        int r;

        if (file_name(volume_id, suffix, name, sizeof(name)) < 0)
                return -EINVAL;
        r = read_regular_file_at(dir_fd, name, max_size, ret, ret_size, &owner);
        if (r == -EBADFD || r == -EFBIG)
                return -EBADMSG;
        if (r < 0)
                return r;
        if (owner != 0 && owner != helper_uid) {
                free(*ret);
                *ret = NULL;
                return -EPERM;
        }
        return 0;
}

int findings_save(int dir_fd, const AwsFindings *f) {
        char text[FINDINGS_FILE_MAX];
        int n = findings_format(f, text, sizeof(text));

        if (n < 0)
                return n;
        return findings_write_file(dir_fd, f->volume_id, FINDINGS_SUFFIX, text, (size_t)n);
}

int findings_load(int dir_fd, const char *volume_id, uid_t helper_uid, AwsFindings *ret) {
        _cleanup_free_ char *text = NULL;
        AwsFindings f;
        size_t size;
        int r;

        r = findings_read_file(dir_fd, volume_id, FINDINGS_SUFFIX, FINDINGS_FILE_MAX, helper_uid,
                               &text, &size);
        if (r < 0)
                return r;
        r = findings_parse(text, size, &f);
        if (r < 0)
                return r;
        if (!streq(f.volume_id, volume_id))
                return -EBADMSG;
        *ret = f;
        return 0;
}
