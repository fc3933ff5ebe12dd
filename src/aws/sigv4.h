/* SPDX-License-Identifier: MIT */
/*
 * AWS Signature Version 4 over OpenSSL's SHA-256 and HMAC: the canonical request, the string to
 * sign, the signing key and the headers a signed request carries (X-Amz-Date, the session
 * token, Authorization). Pure: the caller gives the time, and nothing is sent. Proven byte for
 * byte against botocore's signer by tests/aws/sigv4-botocore.py.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Credentials as the SDKs hold them; session_token NULL for long-term keys. */
typedef struct AwsCredentials {
        char *access_key_id;
        char *secret_access_key;
        char *session_token;
        uint64_t expiration_usec; /* CLOCK_REALTIME; 0: does not expire */
} AwsCredentials;

void aws_credentials_done(AwsCredentials *c);

typedef struct AwsHeader {
        char *name;
        char *value;
} AwsHeader;

/*
 * A request to sign: @path unencoded ("/", "/snapshots/snap-1/blocks"), @query already encoded
 * with aws_uri_encode() ("a=1&b=x%2By", or "" for none), @host as sent in Host:. The headers
 * are the request's own (Content-Type, ...); sigv4_sign() adds its three to them.
 */
typedef struct AwsRequest {
        const char *method;
        const char *host;
        const char *path;
        const char *query;
        const void *body;
        size_t body_size;
        AwsHeader *headers;
        size_t n_headers;
} AwsRequest;

/* aws_request_add_header() - append a copy of @name: @value. 0 or -ENOMEM. */
int aws_request_add_header(AwsRequest *r, const char *name, const char *value);
/* aws_request_done() - free the headers (the rest belongs to the caller). */
void aws_request_done(AwsRequest *r);

/*
 * aws_uri_encode() - RFC 3986 percent-encoding as SigV4 wants it: A-Z a-z 0-9 - _ . ~ stay, '/'
 * stays when @keep_slash, every other byte becomes %XX (upper-case hex), ' ' included. Returns
 * a new string, or NULL without memory.
 */
char *aws_uri_encode(const char *s, int keep_slash);

/* The steps, for tests and debugging; each returns a new string or NULL without memory. */
char *sigv4_canonical_request(const AwsRequest *r, char **ret_signed_headers);
char *sigv4_string_to_sign(const char *amz_date, const char *scope, const char *canonical);

/*
 * sigv4_sign() - sign @r for @service in @region at @now (UTC): adds X-Amz-Date,
 * X-Amz-Security-Token (with a session token) and Authorization to @r's headers (replacing any
 * already there). 0, -EINVAL (no credentials, an access key id that is not letters and digits, a
 * header, token, secret or region with a newline), -ENOMEM.
 */
int sigv4_sign(AwsRequest *r, const AwsCredentials *c, const char *region, const char *service,
               time_t now);
