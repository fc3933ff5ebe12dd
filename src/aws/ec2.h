/* SPDX-License-Identifier: MIT */
/*
 * The two EC2 calls the AWS helper makes about its volume, signed, with a deadline on each
 * attempt and retries with exponential backoff and full jitter on throttling and on server
 * errors (RequestLimitExceeded, Throttling, HTTP 5xx, no answer), then giving up.
 */
#pragma once

#include "aws-config.h"
#include "ec2-xml.h"

#define AWS_ATTEMPTS_MAX 5
#define AWS_BACKOFF_BASE_USEC (200 * USEC_PER_MSEC)
#define AWS_BACKOFF_CAP_USEC (20 * USEC_PER_SEC)
#define AWS_REQUEST_TIMEOUT_USEC (10 * USEC_PER_SEC)

/*
 * ec2_describe_volume() / ec2_describe_volume_status() - the volume @volume_id as EC2 sees it.
 * 0; -EPROTO with @ret_error (AWS's code and message: UnauthorizedOperation, InvalidVolume.
 * NotFound, RequestLimitExceeded after the last retry, ...); -ENOENT when the answer holds
 * another volume or none; -EBADMSG for an answer that is not one; a transport -errno. On
 * failure @ret_why says what happened in one sentence.
 */
int ec2_describe_volume(AwsConfig *c, const char *volume_id, Ec2Volume *ret, AwsError *ret_error,
                        char **ret_why);
int ec2_describe_volume_status(AwsConfig *c, const char *volume_id, Ec2VolumeStatus *ret,
                               AwsError *ret_error, char **ret_why);

/* aws_error_retryable() - whether AWS's error @code (with HTTP @status) may pass by itself. */
bool aws_error_retryable(const char *code, long status);
