/* SPDX-License-Identifier: MIT */
/*
 * One HTTP exchange over libcurl, as the AWS helper needs it and no more: http or https only,
 * no redirects followed, a deadline on every request, the answer's body bounded. The endpoint
 * is parsed once (aws_endpoint_parse()) so that the Host the signer signs is the Host sent.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sigv4.h"

/* The body of an answer we read whole: EC2's are a few KiB; a page of 10000 blocks ~1 MiB. */
#define AWS_HTTP_BODY_MAX (4u << 20)

typedef struct AwsEndpoint {
        char *url;  /* scheme://host[:port] without a path or a trailing '/' */
        char *host; /* host[:port] as sent in Host: (the port only when not the scheme's own) */
} AwsEndpoint;

/*
 * aws_endpoint_parse() - "https://ec2.us-east-1.amazonaws.com", "http://127.0.0.1:8080/":
 * 0, -EINVAL (not http or https, user info, a query or a fragment, a path other than "/",
 * unparsable), or -ENOMEM.
 */
int aws_endpoint_parse(const char *url, AwsEndpoint *ret);
void aws_endpoint_done(AwsEndpoint *e);

typedef struct AwsHttpResponse {
        long status; /* HTTP status */
        char *body;  /* NUL-terminated */
        size_t size;
} AwsHttpResponse;

void aws_http_response_done(AwsHttpResponse *r);

typedef struct AwsHttpOptions {
        uint64_t timeout_usec;         /* the whole exchange */
        uint64_t connect_timeout_usec; /* 0: timeout_usec */
        bool no_proxy;                 /* IMDS: never through a proxy */
} AwsHttpOptions;

/*
 * aws_http_send() - send @r (its method, path, query, headers and body) to @e. 0 with the
 * status and body of any answer (a 4xx or 5xx included); -ETIMEDOUT, -ECONNREFUSED (or
 * another -errno) when no answer came; -EFBIG for a body over AWS_HTTP_BODY_MAX; -EPROTO for a
 * redirect, which is never followed. @ret_error_text (may be NULL) gets what happened, as
 * words that follow the server's name: "did not answer (curl's words)", "sent an answer over
 * 4 MiB", "answered with a redirect (HTTP 307), not followed".
 */
int aws_http_send(const AwsEndpoint *e, const AwsRequest *r, const AwsHttpOptions *o,
                  AwsHttpResponse *ret, char **ret_error_text);
