/* SPDX-License-Identifier: MIT */
/*
 * One AWS API call as the helper makes them all: signed (SigV4, the credentials refreshed
 * first), a deadline on each attempt, retries with exponential backoff and full jitter on
 * throttling, server errors and no answer, then giving up with one sentence saying why.
 */
#pragma once

#include <stdbool.h>

#include "aws-config.h"
#include "aws-http.h"
#include "ec2-xml.h"

#define AWS_ATTEMPTS_MAX 5
#define AWS_BACKOFF_BASE_USEC (200 * USEC_PER_MSEC)
#define AWS_BACKOFF_CAP_USEC (20 * USEC_PER_SEC)
#define AWS_REQUEST_TIMEOUT_USEC (10 * USEC_PER_SEC)

typedef struct AwsCall {
        const char *service;         /* the signing name: "ec2", "ebs" */
        const char *name;            /* the service in messages: "EC2", "EBS" */
        const AwsEndpoint *endpoint; /* where to */
        const char *method;          /* "POST", "GET" */
        const char *path;            /* unencoded */
        const char *query;           /* encoded (aws_uri_encode()), "" for none */
        const char *body;            /* NULL for none */
        const char *content_type;    /* NULL for none */
        /* An error answer's code and message: 0, or -EBADMSG when it is not one. */
        int (*parse_error)(const char *body, size_t size, long status, AwsError *ret);
} AwsCall;

/*
 * aws_call() - make @call. 0 with the body of a 200 in @ret; -EPROTO with @ret_error (AWS's
 * code and message) for an error answer, after the last retry for a retryable one; a transport
 * -errno (-ETIMEDOUT, -ECONNREFUSED, ...); -ENOMEM. On failure @ret_why holds one sentence.
 */
int aws_call(AwsConfig *c, const AwsCall *call, AwsHttpResponse *ret, AwsError *ret_error,
             char **ret_why);

/* aws_error_retryable() - whether AWS's error @code (with HTTP @status) may pass by itself. */
bool aws_error_retryable(const char *code, long status);
