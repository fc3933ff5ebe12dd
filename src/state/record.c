/* SPDX-License-Identifier: MIT */
/* The volume record (see record.h): its text, and its file in the runtime directory. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "kv-text.h"
#include "parse.h"
#include "record.h"
#include "string-table.h"

static const char *const record_state_table[_RECORD_STATE_MAX] = {
        [RECORD_HYDRATING] = EBS_HYDRATE_STATE_HYDRATING,
        [RECORD_PAUSED] = EBS_HYDRATE_STATE_PAUSED,
        [RECORD_COMPLETED] = EBS_HYDRATE_STATE_COMPLETED,
        [RECORD_FAILED] = EBS_HYDRATE_STATE_FAILED,
        [RECORD_STOPPED] = EBS_HYDRATE_STATE_STOPPED,
        [RECORD_DISABLED] = EBS_HYDRATE_STATE_DISABLED,
};

/* The names of plan.h's stages, which D-Bus Phase also uses. */
static const char *const record_phase_table[_RECORD_PHASE_MAX] = {
        [RECORD_PHASE_METADATA] = EBS_HYDRATE_PHASE_METADATA,
        [RECORD_PHASE_HOT] = EBS_HYDRATE_PHASE_HOT_PATHS,
        [RECORD_PHASE_USED] = EBS_HYDRATE_PHASE_USED,
        [RECORD_PHASE_FREE] = EBS_HYDRATE_PHASE_FREE,
        [RECORD_PHASE_DONE] = EBS_HYDRATE_PHASE_DONE,
};

DEFINE_STRING_TABLE_LOOKUP(record_state, RecordState)
DEFINE_STRING_TABLE_LOOKUP(record_phase, RecordPhase)

int record_format(const VolumeRecord *r, char *buf, size_t size) {
        const char *state = record_state_to_string(r->state);
        const char *phase = record_phase_to_string(r->phase);
        int n;

        if (!state || !phase)
                return -EINVAL;
        n = snprintf(buf, size,
                     "# ebs-hydrate volume record: see ebs-hydrated(8)\n"
                     "VOLUME_ID=%s\n"
                     "KERNEL_NAME=%s\n"
                     "DEVICE_NAME=%s\n"
                     "STATE=%s\n"
                     "PHASE=%s\n"
                     "SIZE_BYTES=%" PRIu64 "\n"
                     "HYDRATED_BYTES=%" PRIu64 "\n"
                     "ERRORS=%" PRIu64 "\n"
                     "FREE_SPACE_COLD=%d\n"
                     "FS_AWARE=%d\n"
                     "DISKSEQ=%" PRIu64 "\n"
                     "PID=%ld\n"
                     "START_TIME=%" PRIu64 "\n",
                     r->volume_id, r->kernel_name, r->device_name, state, phase, r->size_bytes,
                     r->hydrated_bytes, r->errors, r->free_space_cold ? 1 : 0, r->fs_aware ? 1 : 0,
                     r->diskseq, (long)r->pid, r->start_time);
        if (n < 0 || (size_t)n >= size)
                return -ENOBUFS;
        if (r->empty_bytes > 0)
                n += snprintf(buf + n, size - (size_t)n, "EMPTY_BYTES=%" PRIu64 "\n",
                              r->empty_bytes);
        if (r->aws[0] && (size_t)n < size)
                n += snprintf(buf + n, size - (size_t)n, "AWS=%s\n", r->aws);
        if (r->aws[0] && r->aws_snapshot_id[0] && (size_t)n < size)
                n += snprintf(buf + n, size - (size_t)n, "AWS_SNAPSHOT_ID=%s\n",
                              r->aws_snapshot_id);
        if (r->aws[0] && r->aws_progress >= 0 && (size_t)n < size)
                n += snprintf(buf + n, size - (size_t)n, "AWS_PROGRESS=%" PRId64 "\n",
                              r->aws_progress);
        if (r->aws[0] && r->aws_eta_seconds >= 0 && (size_t)n < size)
                n += snprintf(buf + n, size - (size_t)n, "AWS_ETA_SECONDS=%" PRId64 "\n",
                              r->aws_eta_seconds);
        if (n < 0 || (size_t)n >= size)
                return -ENOBUFS;
        return n;
}

/* kv-text.h's word and number, with their arguments in this file's order. */
static int copy_word(char *dst, size_t size, const char *value, size_t len) {
        return kv_value_word(value, len, dst, size);
}

static int copy_number(uint64_t *dst, uint64_t max, const char *value, size_t len) {
        return kv_value_number(value, len, max, dst);
}

typedef enum RecordKey {
        KEY_VOLUME_ID,
        KEY_KERNEL_NAME,
        KEY_DEVICE_NAME,
        KEY_STATE,
        KEY_PHASE,
        KEY_SIZE_BYTES,
        KEY_HYDRATED_BYTES,
        KEY_ERRORS,
        KEY_FREE_SPACE_COLD,
        KEY_FS_AWARE,
        KEY_DISKSEQ,
        KEY_PID,
        KEY_START_TIME,
        KEY_AWS,
        KEY_AWS_SNAPSHOT_ID,
        KEY_AWS_PROGRESS,
        KEY_AWS_ETA_SECONDS,
        KEY_EMPTY_BYTES,
        _KEY_MAX,
} RecordKey;

static const char *const key_names[_KEY_MAX] = {
        [KEY_VOLUME_ID] = EBS_HYDRATE_RECORD_VOLUME_ID,
        [KEY_KERNEL_NAME] = EBS_HYDRATE_RECORD_KERNEL_NAME,
        [KEY_DEVICE_NAME] = EBS_HYDRATE_RECORD_DEVICE_NAME,
        [KEY_STATE] = EBS_HYDRATE_RECORD_STATE,
        [KEY_PHASE] = EBS_HYDRATE_RECORD_PHASE,
        [KEY_SIZE_BYTES] = EBS_HYDRATE_RECORD_SIZE_BYTES,
        [KEY_HYDRATED_BYTES] = EBS_HYDRATE_RECORD_HYDRATED_BYTES,
        [KEY_ERRORS] = EBS_HYDRATE_RECORD_ERRORS,
        [KEY_FREE_SPACE_COLD] = EBS_HYDRATE_RECORD_FREE_SPACE_COLD,
        [KEY_FS_AWARE] = EBS_HYDRATE_RECORD_FS_AWARE,
        [KEY_DISKSEQ] = EBS_HYDRATE_RECORD_DISKSEQ,
        [KEY_PID] = EBS_HYDRATE_RECORD_PID,
        [KEY_START_TIME] = EBS_HYDRATE_RECORD_START_TIME,
        [KEY_AWS] = EBS_HYDRATE_RECORD_AWS,
        [KEY_AWS_SNAPSHOT_ID] = EBS_HYDRATE_RECORD_AWS_SNAPSHOT_ID,
        [KEY_AWS_PROGRESS] = EBS_HYDRATE_RECORD_AWS_PROGRESS,
        [KEY_AWS_ETA_SECONDS] = EBS_HYDRATE_RECORD_AWS_ETA_SECONDS,
        [KEY_EMPTY_BYTES] = EBS_HYDRATE_RECORD_EMPTY_BYTES,
};

static int parse_value(VolumeRecord *r, RecordKey k, const char *v, size_t len) {
        char word[RECORD_WORD_MAX];
        uint64_t n = 0;
        int e;

        switch (k) {
        case KEY_VOLUME_ID:
                e = copy_word(r->volume_id, sizeof(r->volume_id), v, len);
                return e < 0 || !state_key_valid(r->volume_id, len) ? -EBADMSG : 0;
        case KEY_KERNEL_NAME:
                return copy_word(r->kernel_name, sizeof(r->kernel_name), v, len);
        case KEY_DEVICE_NAME:
                return copy_word(r->device_name, sizeof(r->device_name), v, len);
        case KEY_STATE:
                if (copy_word(word, sizeof(word), v, len) < 0)
                        return -EBADMSG;
                r->state = record_state_from_string(word);
                return r->state == _RECORD_STATE_INVALID ? -EBADMSG : 0;
        case KEY_PHASE:
                if (copy_word(word, sizeof(word), v, len) < 0)
                        return -EBADMSG;
                r->phase = record_phase_from_string(word);
                return r->phase == _RECORD_PHASE_INVALID ? -EBADMSG : 0;
        case KEY_SIZE_BYTES:
                return copy_number(&r->size_bytes, UINT64_MAX, v, len);
        case KEY_HYDRATED_BYTES:
                return copy_number(&r->hydrated_bytes, UINT64_MAX, v, len);
        case KEY_ERRORS:
                return copy_number(&r->errors, UINT64_MAX, v, len);
        case KEY_FREE_SPACE_COLD:
                e = copy_number(&n, 1, v, len);
                r->free_space_cold = n == 1;
                return e;
        case KEY_DISKSEQ:
                return copy_number(&r->diskseq, UINT64_MAX, v, len);
        case KEY_FS_AWARE:
                e = copy_number(&n, 1, v, len);
                r->fs_aware = n == 1;
                return e;
        case KEY_PID:
                e = copy_number(&n, INT32_MAX, v, len);
                r->pid = (pid_t)n;
                return e;
        case KEY_START_TIME:
                return copy_number(&r->start_time, UINT64_MAX, v, len);
        case KEY_AWS:
                return copy_word(r->aws, sizeof(r->aws), v, len);
        case KEY_AWS_SNAPSHOT_ID:
                return copy_word(r->aws_snapshot_id, sizeof(r->aws_snapshot_id), v, len);
        case KEY_AWS_PROGRESS:
                e = copy_number(&n, 100, v, len);
                r->aws_progress = (int64_t)n;
                return e;
        case KEY_AWS_ETA_SECONDS:
                e = copy_number(&n, INT64_MAX, v, len);
                r->aws_eta_seconds = (int64_t)n;
                return e;
        case KEY_EMPTY_BYTES:
                return copy_number(&r->empty_bytes, UINT64_MAX, v, len);
        default:
                return -EBADMSG;
        }
}

typedef struct RecordParse {
        VolumeRecord r;
        bool seen[_KEY_MAX];
} RecordParse;

static int record_pair(const char *key, size_t key_len, const char *value, size_t value_len,
                       void *userdata) {
        RecordParse *p = userdata;

        for (int i = 0; i < _KEY_MAX; i++)
                if (kv_key_is(key, key_len, key_names[i])) {
                        if (p->seen[i] || parse_value(&p->r, (RecordKey)i, value, value_len) < 0)
                                return -EBADMSG;
                        p->seen[i] = true;
                }
        return 0; /* an unknown key is a newer daemon's: ignored */
}

int record_parse(const char *text, size_t size, VolumeRecord *ret) {
        RecordParse p = {.r = {.state = _RECORD_STATE_INVALID,
                               .phase = _RECORD_PHASE_INVALID,
                               .aws_progress = -1,
                               .aws_eta_seconds = -1}};

        if (kv_text_foreach(text, size, record_pair, &p) < 0)
                return -EBADMSG;
        if (!p.seen[KEY_VOLUME_ID] || !p.seen[KEY_STATE] || !p.seen[KEY_PHASE] ||
            p.r.hydrated_bytes > p.r.size_bytes || p.r.empty_bytes > p.r.hydrated_bytes)
                return -EBADMSG;
        *ret = p.r;
        return 0;
}

bool record_name_key(const char *name, char ret_key[static STATE_KEY_MAX + 1]) {
        size_t len = strlen(name), suffix = strlen(RECORD_SUFFIX);

        if (len <= suffix || strcmp(name + len - suffix, RECORD_SUFFIX) != 0 ||
            !state_key_valid(name, len - suffix))
                return false;
        memcpy(ret_key, name, len - suffix);
        ret_key[len - suffix] = '\0';
        return true;
}

/* "<volume_id>.record" into @buf, or -EINVAL for a volume id that is no key. */
static int record_file_name(const VolumeRecord *r, char *buf, size_t size) {
        if (!state_key_valid(r->volume_id, strlen(r->volume_id)))
                return -EINVAL;
        (void)snprintf(buf, size, "%s%s", r->volume_id, RECORD_SUFFIX);
        return 0;
}

int record_save(int dir_fd, const VolumeRecord *r) {
        char text[RECORD_FILE_MAX], name[STATE_KEY_MAX + sizeof(RECORD_SUFFIX)];
        int n = record_format(r, text, sizeof(text));

        if (n < 0)
                return n;
        if (record_file_name(r, name, sizeof(name)) < 0)
                return -EINVAL;
        /* Room for the last record of the run in the same blocks, should the file system be
         * full by then (record_rewrite_in_place()): a comment pads it to RECORD_PAD_BYTES. */
        if ((size_t)n + 2 <= RECORD_PAD_BYTES) {
                memset(text + n, ' ', RECORD_PAD_BYTES - (size_t)n);
                text[n] = '#';
                text[RECORD_PAD_BYTES - 1] = '\n';
                n = RECORD_PAD_BYTES;
        }
        /* Mode 0644 whatever the umask (the unit's is 0077): the waiters are other users. No
         * fsync: the runtime directory is on tmpfs, and a record does not outlive a boot. */
        return write_file_atomic_at(dir_fd, name, text, (size_t)n, 0644, 0);
}

int record_rewrite_in_place(int dir_fd, const VolumeRecord *r) {
        char text[RECORD_FILE_MAX], name[STATE_KEY_MAX + sizeof(RECORD_SUFFIX)];
        _cleanup_free_ char *old_text = NULL;
        _cleanup_close_ int fd = -1;
        VolumeRecord old;
        struct stat st;
        size_t old_size;
        ssize_t w;
        int n = record_format(r, text, sizeof(text)), e;

        if (n < 0)
                return n;
        if (record_file_name(r, name, sizeof(name)) < 0)
                return -EINVAL;
        /* One descriptor for what is checked and what is written over. */
        fd = openat(dir_fd, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return errno == ENOENT || errno == ELOOP ? -ESTALE : -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode) || st.st_size > RECORD_FILE_MAX)
                return -ESTALE;
        e = read_full_fd(fd, RECORD_FILE_MAX, &old_text, &old_size);
        if (e < 0)
                return e;
        /* Only our own record of this run: another run's (or a stranger's file) stays as is. */
        if (record_parse(old_text, old_size, &old) < 0 ||
            strcmp(old.volume_id, r->volume_id) != 0 || old.pid != r->pid ||
            old.start_time != r->start_time)
                return -ESTALE;
        /* The blocks it has: the new text, and a comment to the old length (a reader parses
         * comments away); longer than it was does not fit. */
        if ((size_t)n + 2 > old_size)
                return -ENOSPC;
        memset(text + n, ' ', old_size - (size_t)n);
        text[n] = '#';
        text[old_size - 1] = '\n';
        w = pwrite(fd, text, old_size, 0);
        if (w < 0)
                return -errno;
        return w == (ssize_t)old_size ? 0 : -EIO;
}

int record_load_at(int dir_fd, const char *name, VolumeRecord *ret) {
        char key[STATE_KEY_MAX + 1];
        _cleanup_free_ char *text = NULL;
        VolumeRecord r;
        size_t size;
        int e;

        if (!record_name_key(name, key))
                return -EBADMSG;
        e = read_regular_file_at(dir_fd, name, RECORD_FILE_MAX, &text, &size, NULL);
        if (e < 0)
                return e;
        e = record_parse(text, size, &r);
        if (e < 0)
                return e;
        if (strcmp(r.volume_id, key) != 0)
                return -EBADMSG;
        *ret = r;
        return 0;
}
