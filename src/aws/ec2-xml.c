/* SPDX-License-Identifier: MIT */
/*
 * EC2's XML answers (ec2-xml.h). One walk over the document keeps the path of element names
 * (namespaces dropped) and hands each element's text, with its whole path, to the answer's
 * own handler: a field is taken only at its exact place, so an attachment's volumeId is never
 * read as the volume's.
 */
#include <errno.h>
#include <expat.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ec2-xml.h"
#include "util.h"

#define XML_DEPTH_MAX 16
#define XML_NAME_MAX 64
#define XML_PATH_MAX (XML_DEPTH_MAX * XML_NAME_MAX)
#define XML_TEXT_MAX 1024

typedef struct Walk Walk;
/* An element ends: its path from the root ("A/b/c") and its text (NULL if it was too long). */
typedef void (*ElementEnd)(Walk *w, const char *path, const char *text);
/* An element starts (for lists: a new <item>). */
typedef void (*ElementStart)(Walk *w, const char *path);

struct Walk {
        XML_Parser parser;
        char path[XML_PATH_MAX];
        size_t path_len[XML_DEPTH_MAX + 1];
        unsigned depth;
        char text[XML_TEXT_MAX];
        size_t text_len;
        bool text_overflow;
        bool bad; /* malformed for us: too deep, a name too long, a DTD, a bad value */
        ElementStart start;
        ElementEnd end;
        void *userdata;
};

static const char *local_name(const char *name) {
        const char *bar = strrchr(name, '|'); /* "uri|local" with namespace processing */

        return bar ? bar + 1 : name;
}

static void stop(Walk *w) {
        w->bad = true;
        XML_StopParser(w->parser, XML_FALSE);
}

static void on_start(void *userdata, const XML_Char *name, const XML_Char **attrs) {
        Walk *w = userdata;
        const char *l = local_name(name);
        size_t len = strlen(l), at = w->path_len[w->depth];

        (void)attrs;
        if (w->depth >= XML_DEPTH_MAX || len >= XML_NAME_MAX) {
                stop(w);
                return;
        }
        if (w->depth > 0)
                w->path[at++] = '/';
        memcpy(w->path + at, l, len + 1);
        w->path_len[++w->depth] = at + len;
        w->text_len = 0;
        w->text_overflow = false;
        if (w->start)
                w->start(w, w->path);
}

static void on_end(void *userdata, const XML_Char *name) {
        Walk *w = userdata;

        (void)name;
        if (w->depth == 0)
                return;
        w->text[w->text_len] = '\0';
        if (w->end)
                w->end(w, w->path, w->text_overflow ? NULL : w->text);
        w->text_len = 0;
        w->path[w->path_len[--w->depth]] = '\0';
}

static void on_text(void *userdata, const XML_Char *s, int len) {
        Walk *w = userdata;

        if (w->text_len + (size_t)len >= sizeof(w->text)) {
                w->text_overflow = true;
                return;
        }
        memcpy(w->text + w->text_len, s, (size_t)len);
        w->text_len += (size_t)len;
}

static void on_doctype(void *userdata, const XML_Char *name, const XML_Char *sysid,
                       const XML_Char *pubid, int has_internal_subset) {
        (void)name, (void)sysid, (void)pubid, (void)has_internal_subset;
        stop(userdata); /* EC2 sends none; a DTD is where entity tricks live */
}

/* Walks @xml: 0, or -EBADMSG. */
static int walk(const char *xml, size_t size, ElementStart start, ElementEnd end, void *userdata) {
        Walk w = {.start = start, .end = end, .userdata = userdata};
        int ok;

        if (size > INT32_MAX)
                return -EBADMSG;
        w.parser = XML_ParserCreateNS(NULL, '|');
        if (!w.parser)
                return -ENOMEM;
        XML_SetUserData(w.parser, &w);
        XML_SetElementHandler(w.parser, on_start, on_end);
        XML_SetCharacterDataHandler(w.parser, on_text);
        XML_SetStartDoctypeDeclHandler(w.parser, on_doctype);
        ok = XML_Parse(w.parser, xml, (int)size, XML_TRUE) == XML_STATUS_OK;
        XML_ParserFree(w.parser);
        return ok && !w.bad ? 0 : -EBADMSG;
}

static bool copy_text(char *dst, size_t size, const char *text) {
        if (!text || strlen(text) >= size)
                return false;
        strcpy(dst, text);
        return true;
}

/* An id or a state: printable ASCII without spaces ("" allowed: <snapshotId/>). What the
 * findings file will hold, so what the daemon's stricter reader will take. */
static bool copy_word(char *dst, size_t size, const char *text) {
        for (const char *p = text; p && *p; p++)
                if (*p <= ' ' || *p > '~')
                        return false;
        return copy_text(dst, size, text);
}

static bool parse_int(int64_t *dst, const char *text) {
        char *end;
        long long v;

        if (!text || !*text || !((*text >= '0' && *text <= '9')))
                return false;
        errno = 0;
        v = strtoll(text, &end, 10);
        if (errno != 0 || *end)
                return false;
        *dst = v;
        return true;
}

static bool parse_bool(int64_t *dst, const char *text) {
        if (streq_ptr(text, "true"))
                *dst = 1;
        else if (streq_ptr(text, "false"))
                *dst = 0;
        else
                return false;
        return true;
}

/* What every answer shares: whether it is an error, the error, the volume asked for. */
typedef struct Answer {
        const char *root; /* the answer's root element */
        const char *volume_id;
        bool is_error, root_seen, found;
        AwsError error;
} Answer;

static void answer_error(Walk *w, Answer *a, const char *path, const char *text) {
        if (streq(path, "Response/Errors/Error/Code")) {
                if (!a->error.code[0] && !copy_word(a->error.code, sizeof(a->error.code), text))
                        stop(w);
        } else if (streq(path, "Response/Errors/Error/Message") && text && !a->error.message[0])
                (void)snprintf(a->error.message, sizeof(a->error.message), "%s", text);
}

static void answer_root(Walk *w, Answer *a, const char *path) {
        if (strchr(path, '/'))
                return;
        a->root_seen = true;
        a->is_error = streq(path, "Response");
        if (!a->is_error && !streq(path, a->root))
                stop(w);
}

static int answer_result(const Answer *a, int r, AwsError *ret_error) {
        if (r < 0)
                return r;
        if (!a->root_seen)
                return -EBADMSG;
        if (a->is_error) {
                if (!a->error.code[0])
                        return -EBADMSG;
                if (ret_error)
                        *ret_error = a->error;
                return -EPROTO;
        }
        return a->found ? 0 : -ENOENT;
}

/* --- DescribeVolumes --- */

#define VOLUME_ITEM "DescribeVolumesResponse/volumeSet/item"

typedef struct VolumesWalk {
        Answer answer;
        Ec2Volume item, *ret;
        bool snapshot_seen; /* in this item */
} VolumesWalk;

static void volumes_start(Walk *w, const char *path) {
        VolumesWalk *v = w->userdata;

        answer_root(w, &v->answer, path);
        if (streq(path, VOLUME_ITEM))
                v->snapshot_seen = false;
        if (streq(path, VOLUME_ITEM))
                v->item = (Ec2Volume){.fast_restored = EC2_UNKNOWN,
                                      .initialization_rate = EC2_UNKNOWN,
                                      .size_gib = EC2_UNKNOWN};
}

static void volumes_end(Walk *w, const char *path, const char *text) {
        VolumesWalk *v = w->userdata;
        Ec2Volume *i = &v->item;
        const char *field;
        bool ok = true;

        if (v->answer.is_error) {
                answer_error(w, &v->answer, path, text);
                return;
        }
        if (streq(path, VOLUME_ITEM)) {
                if (!v->answer.found && streq(i->volume_id, v->answer.volume_id)) {
                        /* EC2 always says where a volume came from (<snapshotId/> when from
                         * nowhere): an answer that does not is not one, never "empty". */
                        if (!v->snapshot_seen)
                                stop(w);
                        *v->ret = *i;
                        v->answer.found = true;
                }
                return;
        }
        if (strncmp(path, VOLUME_ITEM "/", strlen(VOLUME_ITEM "/")) != 0)
                return;
        field = path + strlen(VOLUME_ITEM "/");
        if (streq(field, "volumeId"))
                ok = copy_word(i->volume_id, sizeof(i->volume_id), text);
        else if (streq(field, "snapshotId")) {
                ok = copy_word(i->snapshot_id, sizeof(i->snapshot_id), text);
                v->snapshot_seen = true;
        } else if (streq(field, "sourceVolumeId"))
                ok = copy_word(i->source_volume_id, sizeof(i->source_volume_id), text);
        else if (streq(field, "status"))
                ok = copy_word(i->state, sizeof(i->state), text);
        else if (streq(field, "size"))
                ok = parse_int(&i->size_gib, text);
        else if (streq(field, "fastRestored"))
                ok = parse_bool(&i->fast_restored, text);
        else if (streq(field, "volumeInitializationRate"))
                ok = parse_int(&i->initialization_rate, text);
        if (!ok)
                stop(w);
}

int ec2_parse_describe_volumes(const char *xml, size_t size, const char *volume_id, Ec2Volume *ret,
                               AwsError *ret_error) {
        VolumesWalk v = {.answer = {.root = "DescribeVolumesResponse", .volume_id = volume_id},
                         .ret = ret};

        return answer_result(&v.answer, walk(xml, size, volumes_start, volumes_end, &v), ret_error);
}

/* --- DescribeVolumeStatus --- */

#define STATUS_ITEM "DescribeVolumeStatusResponse/volumeStatusSet/item"
#define STATUS_DETAIL STATUS_ITEM "/volumeStatus/details/item"
#define STATUS_INIT STATUS_ITEM "/initializationStatusDetails"

typedef struct StatusWalk {
        Answer answer;
        Ec2VolumeStatus item, *ret;
        char detail_name[EC2_WORD_MAX], detail_status[EC2_WORD_MAX];
} StatusWalk;

static void status_start(Walk *w, const char *path) {
        StatusWalk *s = w->userdata;

        answer_root(w, &s->answer, path);
        if (streq(path, STATUS_ITEM))
                s->item = (Ec2VolumeStatus){.progress = EC2_UNKNOWN, .eta_seconds = EC2_UNKNOWN};
        else if (streq(path, STATUS_DETAIL))
                s->detail_name[0] = s->detail_status[0] = '\0';
}

static void status_end(Walk *w, const char *path, const char *text) {
        StatusWalk *s = w->userdata;
        Ec2VolumeStatus *i = &s->item;
        bool ok = true;

        if (s->answer.is_error) {
                answer_error(w, &s->answer, path, text);
                return;
        }
        if (streq(path, STATUS_ITEM)) {
                if (!s->answer.found && streq(i->volume_id, s->answer.volume_id)) {
                        *s->ret = *i;
                        s->answer.found = true;
                }
        } else if (streq(path, STATUS_ITEM "/volumeId"))
                ok = copy_word(i->volume_id, sizeof(i->volume_id), text);
        else if (streq(path, STATUS_DETAIL "/name"))
                ok = copy_word(s->detail_name, sizeof(s->detail_name), text);
        else if (streq(path, STATUS_DETAIL "/status"))
                ok = copy_word(s->detail_status, sizeof(s->detail_status), text);
        else if (streq(path, STATUS_DETAIL)) {
                if (streq(s->detail_name, "initialization-state"))
                        strcpy(i->initialization_state, s->detail_status);
        } else if (streq(path, STATUS_INIT "/initializationType"))
                ok = copy_word(i->initialization_type, sizeof(i->initialization_type), text);
        else if (streq(path, STATUS_INIT "/progress"))
                ok = parse_int(&i->progress, text) && i->progress <= 100;
        else if (streq(path, STATUS_INIT "/estimatedTimeToCompleteInSeconds"))
                ok = parse_int(&i->eta_seconds, text);
        if (!ok)
                stop(w);
}

int ec2_parse_describe_volume_status(const char *xml, size_t size, const char *volume_id,
                                     Ec2VolumeStatus *ret, AwsError *ret_error) {
        StatusWalk s = {.answer = {.root = "DescribeVolumeStatusResponse", .volume_id = volume_id},
                        .ret = ret};

        return answer_result(&s.answer, walk(xml, size, status_start, status_end, &s), ret_error);
}

/* --- errors --- */

static void error_start(Walk *w, const char *path) {
        answer_root(w, w->userdata, path);
}

static void error_end(Walk *w, const char *path, const char *text) {
        answer_error(w, w->userdata, path, text);
}

int aws_parse_error(const char *xml, size_t size, AwsError *ret) {
        Answer a = {.root = "Response"};
        int r = walk(xml, size, error_start, error_end, &a);

        if (r < 0)
                return r;
        if (!a.is_error || !a.error.code[0])
                return -EBADMSG;
        *ret = a.error;
        return 0;
}
