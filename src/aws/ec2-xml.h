/* SPDX-License-Identifier: MIT */
/*
 * The EC2 Query API's answers the AWS helper reads (API version 2016-11-15, shapes and
 * locationNames from the service model botocore ships): DescribeVolumes' volume, DescribeVolume-
 * Status' initialization, and the <Response><Errors> an error comes as. Parsed with expat, with
 * no DTD, no entities and bounded text: an answer is input, never trusted.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define EC2_API_VERSION "2016-11-15"
#define EC2_ID_MAX 64   /* vol-0123456789abcdef0, snap-...; longer is malformed */
#define EC2_WORD_MAX 64 /* a state, a type, an error code */
#define AWS_ERROR_MESSAGE_MAX 256

/* A field EC2 may leave out. */
#define EC2_UNKNOWN INT64_C(-1)

typedef struct Ec2Volume {
        char volume_id[EC2_ID_MAX];
        char snapshot_id[EC2_ID_MAX];      /* "": created empty, or a copy */
        char source_volume_id[EC2_ID_MAX]; /* a copy (CopyVolumes) of this volume, or "" */
        char state[EC2_WORD_MAX];          /* "in-use", "available", ... */
        int64_t size_gib;
        int64_t fast_restored;       /* 1, 0, or EC2_UNKNOWN */
        int64_t initialization_rate; /* MiB/s of a provisioned rate, or EC2_UNKNOWN */
} Ec2Volume;

typedef struct Ec2VolumeStatus {
        char volume_id[EC2_ID_MAX];
        char initialization_state[EC2_WORD_MAX]; /* volumeStatus detail "initialization-state" */
        char initialization_type[EC2_WORD_MAX];  /* "default", "provisioned-rate", ... */
        int64_t progress;                        /* percent, or EC2_UNKNOWN */
        int64_t eta_seconds;                     /* or EC2_UNKNOWN */
} Ec2VolumeStatus;

typedef struct AwsError {
        char code[EC2_WORD_MAX]; /* "UnauthorizedOperation", "RequestLimitExceeded", ... */
        char message[AWS_ERROR_MESSAGE_MAX];
} AwsError;

/*
 * ec2_parse_describe_volumes() - the volume @volume_id in a DescribeVolumes answer. 0; -ENOENT
 * when the answer does not hold that volume (another volume's answer is not this one's);
 * -EBADMSG when it is not a well-formed answer (a value too long, a number that is not one, a
 * DTD); -EPROTO for an error answer, with @ret_error filled (may be NULL).
 */
int ec2_parse_describe_volumes(const char *xml, size_t size, const char *volume_id, Ec2Volume *ret,
                               AwsError *ret_error);
/* ec2_parse_describe_volume_status() - the same for DescribeVolumeStatus. */
int ec2_parse_describe_volume_status(const char *xml, size_t size, const char *volume_id,
                                     Ec2VolumeStatus *ret, AwsError *ret_error);
/* aws_parse_error() - the first <Error> of an error answer: 0, or -EBADMSG. */
int aws_parse_error(const char *xml, size_t size, AwsError *ret);
