/* SPDX-License-Identifier: MIT */
/*
 * The two EC2 calls the AWS helper makes about its volume, through aws_call() (aws-call.h):
 * signed, with deadlines, retried on throttling (RequestLimitExceeded, ...), server errors and
 * no answer, then given up.
 */
#pragma once

#include "aws-config.h"
#include "ec2-xml.h"

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
