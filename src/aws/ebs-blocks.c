/* SPDX-License-Identifier: MIT */
/* ListSnapshotBlocks' answers and the EBS direct APIs' errors, with json-c (ebs-blocks.h). */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ebs-blocks.h"
#include "util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct json_object *, json_object_put)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct json_tokener *, json_tokener_free)

/* The whole of @json as one JSON object (trailing white space allowed), or NULL. */
static struct json_object *parse_object(const char *json, size_t size) {
        _cleanup_(json_tokener_freep) struct json_tokener *tok =
                json_tokener_new_ex(EBS_JSON_DEPTH_MAX);
        struct json_object *o;
        size_t end;

        if (!tok || size > INT32_MAX || memchr(json, '\0', size))
                return NULL;
        o = json_tokener_parse_ex(tok, json, (int)size);
        if (!o || json_tokener_get_error(tok) != json_tokener_success ||
            !json_object_is_type(o, json_type_object)) {
                json_object_put(o);
                return NULL;
        }
        end = json_tokener_get_parse_end(tok);
        while (end < size && strchr(" \t\r\n", json[end]))
                end++;
        if (end != size) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

/* A number in [@min, @max]: a JSON integer, or (@digits_ok) a string of decimal digits. */
static int get_integer(struct json_object *v, int64_t min, int64_t max, bool digits_ok,
                       int64_t *ret) {
        int64_t n;

        if (json_object_is_type(v, json_type_int)) {
                n = json_object_get_int64(v); /* saturates: out of range either way */
                if (n < min || n > max)
                        return -EBADMSG;
        } else if (digits_ok && json_object_is_type(v, json_type_string)) {
                const char *s = json_object_get_string(v);
                size_t len = (size_t)json_object_get_string_len(v);

                if (len == 0 || len > 18 || strspn(s, "0123456789") != len)
                        return -EBADMSG;
                n = (int64_t)strtoll(s, NULL, 10);
                if (n < min || n > max)
                        return -EBADMSG;
        } else
                return -EBADMSG;
        *ret = n;
        return 0;
}

static int get_blocks(struct json_object *a, EbsBlocksPage *p) {
        size_t n;

        if (!json_object_is_type(a, json_type_array))
                return -EBADMSG;
        n = json_object_array_length(a);
        if (n > EBS_PAGE_BLOCKS_MAX)
                return -EBADMSG;
        p->blocks = n > 0 ? calloc(n, sizeof(*p->blocks)) : NULL;
        if (n > 0 && !p->blocks)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                struct json_object *b = json_object_array_get_idx(a, i), *index;
                int64_t v;

                /* BlockToken is for GetSnapshotBlock, which we never call: not kept. */
                if (!json_object_is_type(b, json_type_object) ||
                    !json_object_object_get_ex(b, "BlockIndex", &index) ||
                    get_integer(index, 0, EBS_BLOCK_INDEX_MAX, true, &v) < 0)
                        return -EBADMSG;
                p->blocks[p->n++] = (uint32_t)v;
        }
        return 0;
}

static bool token_valid(const char *s, size_t len) {
        return len < EBS_TOKEN_MAX &&
               strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") ==
                       len;
}

int ebs_parse_blocks_page(const char *json, size_t size, EbsBlocksPage *ret) {
        _cleanup_(json_object_putp) struct json_object *o = parse_object(json, size);
        EbsBlocksPage p = {.block_size = EC2_UNKNOWN, .volume_size_gib = EC2_UNKNOWN};
        struct json_object *v;
        int r = 0;

        if (!o)
                return -EBADMSG;
        if (json_object_object_get_ex(o, "Blocks", &v) && !json_object_is_type(v, json_type_null))
                r = get_blocks(v, &p);
        if (r >= 0 && json_object_object_get_ex(o, "BlockSize", &v))
                r = get_integer(v, 1, INT32_MAX, false, &p.block_size);
        if (r >= 0 && json_object_object_get_ex(o, "VolumeSize", &v))
                r = get_integer(v, 1, INT64_C(1) << 40, false, &p.volume_size_gib);
        if (r >= 0 && json_object_object_get_ex(o, "ExpiryTime", &v) &&
            (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double))) {
                double t = json_object_get_double(v);

                /* epoch seconds (REST-JSON's timestamps); anything else: unknown */
                if (t > 0 && t < 1e11)
                        p.expiry_usec = (uint64_t)(t * 1e6);
        }
        if (r >= 0 && json_object_object_get_ex(o, "NextToken", &v) &&
            !json_object_is_type(v, json_type_null)) {
                if (!json_object_is_type(v, json_type_string) ||
                    !token_valid(json_object_get_string(v), (size_t)json_object_get_string_len(v)))
                        r = -EBADMSG;
                else
                        (void)snprintf(p.next_token, sizeof(p.next_token), "%s",
                                       json_object_get_string(v));
        }
        if (r < 0) {
                ebs_blocks_page_done(&p);
                return r;
        }
        *ret = p;
        return 0;
}

void ebs_blocks_page_done(EbsBlocksPage *p) {
        free(p->blocks);
        *p = (EbsBlocksPage){};
}

/* The Reasons (ebs's service model) that say the caller was throttled. */
static bool reason_throttled(const char *r) {
        return streq(r, "ACCOUNT_THROTTLED") || streq(r, "DEPENDENCY_REQUEST_THROTTLED") ||
               streq(r, "RESOURCE_LEVEL_THROTTLE");
}

static const char *implied_code(long status, const char *reason) {
        if (reason_throttled(reason))
                return "RequestThrottledException";
        switch (status) {
        case 400:
                return "ValidationException";
        case 402:
                return "ServiceQuotaExceededException";
        case 403:
                return "AccessDeniedException";
        case 404:
                return "ResourceNotFoundException";
        case 429:
                return "ThrottlingException";
        default:
                return status >= 500 ? "InternalServerException" : "";
        }
}

/* A printable word of @v (or ""), at most @size - 1 bytes. */
static void copy_text(char *dst, size_t size, struct json_object *v, bool word) {
        const char *s;

        dst[0] = '\0';
        if (!v || !json_object_is_type(v, json_type_string))
                return;
        s = json_object_get_string(v);
        for (size_t i = 0; s[i] && i + 1 < size; i++) {
                if ((unsigned char)s[i] < ' ' || s[i] == 0x7f || (word && s[i] == ' ')) {
                        dst[i] = '\0';
                        return;
                }
                dst[i] = s[i];
                dst[i + 1] = '\0';
        }
}

int ebs_parse_error(const char *json, size_t size, long status, AwsError *ret) {
        _cleanup_(json_object_putp) struct json_object *o = parse_object(json, size);
        struct json_object *v = NULL;
        /* "REASON: Message" fits AwsError.message whole: the message is cut to what is left */
        char reason[EC2_WORD_MAX] = "", message[AWS_ERROR_MESSAGE_MAX - EC2_WORD_MAX - 2] = "";
        char type[EC2_WORD_MAX];
        const char *hash, *name;

        *ret = (AwsError){};
        (void)snprintf(ret->code, sizeof(ret->code), "%s", implied_code(status, ""));
        if (!o)
                return -EBADMSG;
        if (json_object_object_get_ex(o, "Reason", &v))
                copy_text(reason, sizeof(reason), v, true);
        if (json_object_object_get_ex(o, "Message", &v) ||
            json_object_object_get_ex(o, "message", &v))
                copy_text(message, sizeof(message), v, false);
        v = NULL;
        if (json_object_object_get_ex(o, "__type", &v))
                copy_text(type, sizeof(type), v, true);
        else
                type[0] = '\0';
        hash = strrchr(type, '#'); /* "com.amazon.coral#AccessDeniedException" */
        name = hash ? hash + 1 : type;
        (void)snprintf(ret->code, sizeof(ret->code), "%s",
                       name[0] ? name : implied_code(status, reason));
        (void)snprintf(ret->message, sizeof(ret->message), "%s%s%s", reason,
                       reason[0] && message[0] ? ": " : "", message);
        return 0;
}
