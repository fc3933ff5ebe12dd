/* SPDX-License-Identifier: MIT */
/*
 * The volume record (src/state/record.c): its text both ways, what the parser refuses, and its
 * file: written whole and world-readable whatever the umask, never read through a link, a FIFO
 * or a file too large, nor under another volume's name.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "fixtures.h"
#include "record.h"

static VolumeRecord sample(void) {
        VolumeRecord r = {
                .state = RECORD_HYDRATING,
                .phase = RECORD_PHASE_HOT,
                .size_bytes = UINT64_C(8) << 30,
                .hydrated_bytes = UINT64_C(3) << 30,
                .errors = 2,
                .fs_aware = true,
                .diskseq = 17,
                .pid = 4242,
                .start_time = 123456789,
        };

        strcpy(r.volume_id, "vol-0123456789abcdef0");
        strcpy(r.kernel_name, "nvme1n1");
        strcpy(r.device_name, "sdf");
        return r;
}

static void test_round_trip(void **state) {
        VolumeRecord r = sample(), back;
        char text[RECORD_FILE_MAX];
        int n;

        (void)state;
        for (RecordState s = 0; s < _RECORD_STATE_MAX; s++)
                for (RecordPhase p = 0; p < _RECORD_PHASE_MAX; p++) {
                        r.state = s;
                        r.phase = p;
                        r.free_space_cold = s == RECORD_COMPLETED;
                        n = record_format(&r, text, sizeof(text));
                        assert_true(n > 0);
                        assert_int_equal(record_parse(text, (size_t)n, &back), 0);
                        assert_string_equal(back.volume_id, r.volume_id);
                        assert_string_equal(back.kernel_name, "nvme1n1");
                        assert_string_equal(back.device_name, "sdf");
                        assert_int_equal(back.state, s);
                        assert_int_equal(back.phase, p);
                        assert_int_equal(back.size_bytes, r.size_bytes);
                        assert_int_equal(back.hydrated_bytes, r.hydrated_bytes);
                        assert_int_equal(back.errors, 2);
                        assert_int_equal(back.free_space_cold, r.free_space_cold);
                        assert_true(back.fs_aware);
                        assert_int_equal(back.pid, 4242);
                        assert_int_equal(back.start_time, 123456789);
                        assert_int_equal(back.diskseq, 17);
                }
        assert_string_equal(record_phase_to_string(RECORD_PHASE_HOT), "hot-paths");
        assert_int_equal(record_phase_from_string("hot-paths"), RECORD_PHASE_HOT);
        assert_int_equal(record_state_from_string("disabled"), RECORD_DISABLED);
        assert_int_equal(record_format(&r, text, 40), -ENOBUFS);
}

/* What AWS said: written only when known, read back; absent, it reads as unknown. */
static void test_aws_keys(void **state) {
        VolumeRecord r = sample(), back;
        char text[RECORD_FILE_MAX];
        int n;

        (void)state;
        n = record_format(&r, text, sizeof(text));
        assert_null(strstr(text, "AWS"));
        assert_int_equal(record_parse(text, (size_t)n, &back), 0);
        assert_string_equal(back.aws, "");
        assert_int_equal(back.aws_progress, -1);
        assert_int_equal(back.aws_eta_seconds, -1);

        strcpy(r.aws, "initializing");
        strcpy(r.aws_snapshot_id, "snap-0abc");
        r.aws_progress = 42;
        r.aws_eta_seconds = 1800;
        n = record_format(&r, text, sizeof(text));
        assert_non_null(strstr(text, "\nAWS=initializing\nAWS_SNAPSHOT_ID=snap-0abc\n"
                                     "AWS_PROGRESS=42\nAWS_ETA_SECONDS=1800\n"));
        assert_int_equal(record_parse(text, (size_t)n, &back), 0);
        assert_string_equal(back.aws, "initializing");
        assert_string_equal(back.aws_snapshot_id, "snap-0abc");
        assert_int_equal(back.aws_progress, 42);
        assert_int_equal(back.aws_eta_seconds, 1800);

        r.aws_progress = r.aws_eta_seconds = -1; /* unknown: not written */
        n = record_format(&r, text, sizeof(text));
        assert_null(strstr(text, "AWS_PROGRESS"));
        assert_int_equal(record_parse(text, (size_t)n, &back), 0);
        assert_int_equal(back.aws_progress, -1);
        /* a percent over 100 is no percent; a word with a space no word */
        strcpy(text, "VOLUME_ID=v\nSTATE=hydrating\nPHASE=used\nAWS_PROGRESS=101\n");
        assert_int_equal(record_parse(text, strlen(text), &back), -EBADMSG);
        strcpy(text, "VOLUME_ID=v\nSTATE=hydrating\nPHASE=used\nAWS=a b\n");
        assert_int_equal(record_parse(text, strlen(text), &back), -EBADMSG);

        /* the snapshot's block list: the empty part, within what is hydrated */
        assert_null(strstr(text, "EMPTY_BYTES"));
        r.empty_bytes = UINT64_C(1) << 30;
        n = record_format(&r, text, sizeof(text));
        assert_non_null(strstr(text, "\nEMPTY_BYTES=1073741824\n"));
        assert_int_equal(record_parse(text, (size_t)n, &back), 0);
        assert_int_equal(back.empty_bytes, UINT64_C(1) << 30);
        strcpy(text, "VOLUME_ID=v\nSTATE=hydrating\nPHASE=used\nSIZE_BYTES=10\n"
                     "HYDRATED_BYTES=4\nEMPTY_BYTES=5\n");
        assert_int_equal(record_parse(text, strlen(text), &back), -EBADMSG);
}

static int parse(const char *text) {
        VolumeRecord r;

        return record_parse(text, strlen(text), &r);
}

static void test_parse_refuses(void **state) {
        (void)state;
        /* the minimum: a volume, a state, a phase */
        assert_int_equal(parse("VOLUME_ID=v\nSTATE=paused\nPHASE=used\n"), 0);
        /* comments, blank lines, a last line without newline, and a newer daemon's keys */
        assert_int_equal(parse("# x\n\nVOLUME_ID=v\nNEW_KEY=what ever\nSTATE=paused\nPHASE=used"),
                         0);
        assert_int_equal(parse("STATE=paused\nPHASE=used\n"), -EBADMSG);
        assert_int_equal(parse("VOLUME_ID=v\nPHASE=used\n"), -EBADMSG);
        assert_int_equal(parse("VOLUME_ID=v\nSTATE=paused\n"), -EBADMSG);
        assert_int_equal(parse("VOLUME_ID=v\nSTATE=asleep\nPHASE=used\n"), -EBADMSG);
        assert_int_equal(parse("VOLUME_ID=v\nSTATE=paused\nPHASE=later\n"), -EBADMSG);
        /* twice the same key: which one would be meant? */
        assert_int_equal(parse("VOLUME_ID=v\nSTATE=paused\nSTATE=completed\nPHASE=used\n"),
                         -EBADMSG);
        assert_int_equal(parse("VOLUME_ID=v\nSTATE=paused\nPHASE=used\ngarbage\n"), -EBADMSG);
        assert_int_equal(parse("VOLUME_ID=.hidden\nSTATE=paused\nPHASE=used\n"), -EBADMSG);
        assert_int_equal(parse("VOLUME_ID=v w\nSTATE=paused\nPHASE=used\n"), -EBADMSG);
        assert_int_equal(parse("VOLUME_ID=v\nKERNEL_NAME=a\tb\nSTATE=paused\nPHASE=used\n"),
                         -EBADMSG);
        assert_int_equal(parse("VOLUME_ID=v\nKERNEL_NAME="
                               "0123456789012345678901234567890123456789012345678901234567890123"
                               "\nSTATE=paused\nPHASE=used\n"),
                         -EBADMSG);
        assert_int_equal(parse("VOLUME_ID=v\nSTATE=paused\nPHASE=used\nSIZE_BYTES=-1\n"), -EBADMSG);
        assert_int_equal(parse("VOLUME_ID=v\nSTATE=paused\nPHASE=used\nFS_AWARE=2\n"), -EBADMSG);
        /* more hydrated than there is */
        assert_int_equal(
                parse("VOLUME_ID=v\nSTATE=paused\nPHASE=used\nSIZE_BYTES=1\nHYDRATED_BYTES=2\n"),
                -EBADMSG);
        /* a NUL inside */
        assert_int_equal(
                record_parse("VOLUME_ID=v\0\nSTATE=paused\nPHASE=used\n", 37, &(VolumeRecord){}),
                -EBADMSG);
}

static void test_save_and_load(void **state) {
        _cleanup_free_ char *dir = fixture_tmpdir("test-record");
        _cleanup_close_ int fd = -1;
        VolumeRecord r = sample(), back;
        char path[512];
        struct stat st;
        mode_t old;

        (void)state;
        assert_non_null(dir);
        fd = open(dir, O_RDONLY | O_DIRECTORY);
        assert_true(fd >= 0);
        old = umask(0077); /* the unit's */
        assert_int_equal(record_save(fd, &r), 0);
        umask(old);
        snprintf(path, sizeof(path), "%s/vol-0123456789abcdef0.record", dir);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0644);
        assert_int_equal(record_load_at(fd, "vol-0123456789abcdef0.record", &back), 0);
        assert_int_equal(back.phase, RECORD_PHASE_HOT);
        /* replaced whole */
        r.phase = RECORD_PHASE_USED;
        assert_int_equal(record_save(fd, &r), 0);
        assert_int_equal(record_load_at(fd, "vol-0123456789abcdef0.record", &back), 0);
        assert_int_equal(back.phase, RECORD_PHASE_USED);
        /* a link planted under its name is replaced, never written through */
        assert_int_equal(stat("/etc/passwd", &st), 0);
        {
                struct stat target = st, link;

                assert_int_equal(unlinkat(fd, "vol-0123456789abcdef0.record", 0), 0);
                assert_int_equal(symlinkat("/etc/passwd", fd, "vol-0123456789abcdef0.record"), 0);
                assert_int_equal(record_save(fd, &r), 0);
                assert_int_equal(
                        fstatat(fd, "vol-0123456789abcdef0.record", &link, AT_SYMLINK_NOFOLLOW), 0);
                assert_true(S_ISREG(link.st_mode));
                assert_int_equal(stat("/etc/passwd", &st), 0);
                assert_int_equal(st.st_size, target.st_size);
                assert_int_equal(st.st_mtim.tv_nsec, target.st_mtim.tv_nsec);
        }
        /* and no temporary file is left behind */
        {
                DIR *d = opendir(dir);
                struct dirent *de;
                int n = 0;

                assert_non_null(d);
                while ((de = readdir(d)))
                        n += de->d_name[0] == '.' && strcmp(de->d_name, ".") != 0 &&
                             strcmp(de->d_name, "..") != 0;
                closedir(d);
                assert_int_equal(n, 0);
        }
        /* under another volume's name */
        assert_int_equal(renameat(fd, "vol-0123456789abcdef0.record", fd, "vol-other.record"), 0);
        assert_int_equal(record_load_at(fd, "vol-other.record", &back), -EBADMSG);
        /* not records */
        assert_int_equal(symlinkat("vol-other.record", fd, "link.record"), 0);
        assert_int_equal(record_load_at(fd, "link.record", &back), -EBADFD);
        assert_int_equal(mkfifoat(fd, "fifo.record", 0644), 0);
        assert_int_equal(record_load_at(fd, "fifo.record", &back), -EBADFD);
        assert_int_equal(mkdirat(fd, "dir.record", 0755), 0);
        assert_int_equal(record_load_at(fd, "dir.record", &back), -EBADFD);
        assert_int_equal(record_load_at(fd, "vol-other.state", &back), -EBADMSG);
        assert_int_equal(record_load_at(fd, "missing.record", &back), -ENOENT);
        {
                char big[RECORD_FILE_MAX + 2];

                memset(big, '#', sizeof(big));
                snprintf(path, sizeof(path), "%s/big.record", dir);
                fixture_write_bytes(dir, "big.record", big, sizeof(big));
                assert_int_equal(record_load_at(fd, "big.record", &back), -EFBIG);
        }
        assert_int_equal(rm_rf(dir), 0);
}

/* Issue 23: the last record of a run on a full file system goes over the old one, in its
 * blocks, when it fits; never over another run's record. */
static void test_rewrite_in_place(void **state) {
        _cleanup_free_ char *dir = fixture_tmpdir("test-record");
        _cleanup_close_ int fd = -1;
        VolumeRecord r = sample(), back;
        struct stat before, after;

        (void)state;
        assert_non_null(dir);
        fd = open(dir, O_RDONLY | O_DIRECTORY);
        assert_true(fd >= 0);
        assert_int_equal(record_rewrite_in_place(fd, &r), -ESTALE); /* none yet */
        assert_int_equal(record_save(fd, &r), 0);
        assert_int_equal(fstatat(fd, "vol-0123456789abcdef0.record", &before, 0), 0);
        assert_int_equal(before.st_size, RECORD_PAD_BYTES); /* room for the last one */
        r.state = RECORD_COMPLETED;
        r.phase = RECORD_PHASE_DONE;
        r.hydrated_bytes = r.size_bytes;
        assert_int_equal(record_rewrite_in_place(fd, &r), 0);
        assert_int_equal(fstatat(fd, "vol-0123456789abcdef0.record", &after, 0), 0);
        assert_int_equal(after.st_ino, before.st_ino); /* the same file */
        assert_int_equal(after.st_size, before.st_size);
        assert_int_equal(record_load_at(fd, "vol-0123456789abcdef0.record", &back), 0);
        assert_int_equal(back.state, RECORD_COMPLETED);
        assert_int_equal(back.phase, RECORD_PHASE_DONE);
        assert_int_equal(back.hydrated_bytes, r.size_bytes);
        /* every number at its longest still fits in the padding ... */
        r.errors = UINT64_MAX;
        r.diskseq = UINT64_MAX;
        r.size_bytes = r.hydrated_bytes = UINT64_MAX;
        assert_int_equal(record_rewrite_in_place(fd, &r), 0);
        /* ... but not in a record as short as its text (an older daemon's) */
        {
                char text[RECORD_FILE_MAX];
                int n = record_format(&r, text, sizeof(text));

                assert_true(n > 0);
                fixture_write_bytes(dir, "vol-0123456789abcdef0.record", text, (size_t)n);
        }
        strcpy(r.device_name, "xvdf-and-more");
        assert_int_equal(record_rewrite_in_place(fd, &r), -ENOSPC);
        /* another run's (another start time, or another PID): left alone */
        r = sample();
        r.start_time++;
        assert_int_equal(record_rewrite_in_place(fd, &r), -ESTALE);
        r = sample();
        r.pid++;
        assert_int_equal(record_rewrite_in_place(fd, &r), -ESTALE);
        assert_int_equal(record_load_at(fd, "vol-0123456789abcdef0.record", &back), 0);
        assert_int_equal(back.state, RECORD_COMPLETED);
        assert_int_equal(rm_rf(dir), 0);
}

static void test_name_key(void **state) {
        char key[STATE_KEY_MAX + 1];

        (void)state;
        assert_true(record_name_key("vol-1.record", key));
        assert_string_equal(key, "vol-1");
        assert_false(record_name_key(".record", key));
        assert_false(record_name_key(".vol-1.record.tmp", key));
        assert_false(record_name_key("vol-1.state", key));
        assert_false(record_name_key(".hidden.record", key));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_round_trip),    cmocka_unit_test(test_parse_refuses),
                cmocka_unit_test(test_save_and_load), cmocka_unit_test(test_rewrite_in_place),
                cmocka_unit_test(test_name_key),      cmocka_unit_test(test_aws_keys),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
