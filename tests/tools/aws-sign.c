/* SPDX-License-Identifier: MIT */
/*
 * aws-sign: signs one request described in JSON on stdin with src/aws/sigv4.c and prints the
 * headers it added, as JSON, for tests/aws/sigv4-botocore.py to compare with botocore's.
 * Input: {"method", "host", "path", "query", "body", "headers": [[name, value], ...],
 * "access_key", "secret_key", "token" (or null), "region", "service", "time" (Unix seconds)}.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sigv4.h"
#include "util.h"

static const char *field(json_object *o, const char *key) {
        json_object *v;

        return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
                       ? json_object_get_string(v)
                       : NULL;
}

int main(void) {
        char input[65536];
        size_t n = fread(input, 1, sizeof(input) - 1, stdin);
        json_object *in, *headers, *t, *out;
        AwsRequest r = {};
        AwsCredentials c = {};
        int k;

        input[n] = '\0';
        in = json_tokener_parse(input);
        if (!in) {
                fprintf(stderr, "aws-sign: stdin is not JSON\n");
                return 2;
        }
        r.method = field(in, "method");
        r.host = field(in, "host");
        r.path = field(in, "path");
        r.query = field(in, "query");
        r.body = field(in, "body");
        r.body_size = r.body ? strlen(r.body) : 0;
        if (json_object_object_get_ex(in, "headers", &headers))
                for (size_t i = 0; i < json_object_array_length(headers); i++) {
                        json_object *h = json_object_array_get_idx(headers, i);

                        if (aws_request_add_header(
                                    &r, json_object_get_string(json_object_array_get_idx(h, 0)),
                                    json_object_get_string(json_object_array_get_idx(h, 1))) < 0)
                                return 1;
                }
        c.access_key_id = strdup(strempty(field(in, "access_key")));
        c.secret_access_key = strdup(strempty(field(in, "secret_key")));
        c.session_token = field(in, "token") ? strdup(field(in, "token")) : NULL;
        json_object_object_get_ex(in, "time", &t);
        k = sigv4_sign(&r, &c, field(in, "region"), field(in, "service"),
                       (time_t)json_object_get_int64(t));
        if (k < 0) {
                fprintf(stderr, "aws-sign: %s\n", strerror(-k));
                return 1;
        }
        out = json_object_new_object();
        for (size_t i = 0; i < r.n_headers; i++)
                json_object_object_add(out, r.headers[i].name,
                                       json_object_new_string(r.headers[i].value));
        puts(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN));
        json_object_put(out);
        json_object_put(in);
        aws_request_done(&r);
        aws_credentials_done(&c);
        return 0;
}
