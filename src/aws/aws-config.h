/* SPDX-License-Identifier: MIT */
/*
 * Where the AWS helper's region, endpoints and credentials come from, the way the AWS SDKs find
 * them on an instance: the AWS_* environment variables first, then the instance metadata
 * service (IMDSv2: a session token, the instance role's credentials, the region of the instance
 * identity document). Every endpoint can be overridden (AWS_ENDPOINT_URL, _EC2, _EBS,
 * AWS_EC2_METADATA_SERVICE_ENDPOINT): VPC endpoints, FIPS, tests.
 */
#pragma once

#include <stdbool.h>

#include "aws-http.h"
#include "sigv4.h"
#include "util.h"

#define IMDS_DEFAULT_ENDPOINT "http://169.254.169.254"
/* IMDS answers in milliseconds on an instance; off EC2 nothing answers at all. */
#define IMDS_TIMEOUT_USEC (1 * USEC_PER_SEC)
/* The session token's lifetime asked for, in seconds (IMDS allows up to 6 h). */
#define IMDS_TOKEN_TTL_SEC 21600
/* Credentials are refreshed this long before they expire, as the SDKs do. */
#define AWS_CREDENTIALS_REFRESH_USEC (5 * 60 * USEC_PER_SEC)

typedef struct AwsConfig {
        char *region;
        AwsEndpoint ec2;
        AwsEndpoint ebs;
        AwsEndpoint imds;
        bool imds_disabled;     /* AWS_EC2_METADATA_DISABLED=true */
        bool credentials_fixed; /* from the environment: never refreshed */
        AwsCredentials credentials;
        char *imds_token;
} AwsConfig;

void aws_config_done(AwsConfig *c);

/*
 * aws_config_load() - region, endpoints and credentials. Returns 0; or -errno after filling
 * @ret_why with one sentence naming the cause (an invalid endpoint variable, IMDS unreachable
 * and no AWS_REGION, no instance role, ...).
 */
int aws_config_load(AwsConfig *c, char **ret_why);

/* aws_config_refresh_credentials() - fetch new instance-role credentials if they expire within
 * AWS_CREDENTIALS_REFRESH_USEC of @now_usec (CLOCK_REALTIME). 0 or -errno with @ret_why. */
int aws_config_refresh_credentials(AwsConfig *c, uint64_t now_usec, char **ret_why);

/* aws_why() - replace *@ret_why (when not NULL) with the sentence; returns @r. */
int aws_why(char **ret_why, int r, const char *format, ...) _printf_(3, 4);

/* Parsing of IMDS's answers, for tests: the role's credentials JSON; an ISO 8601 UTC time. */
int imds_parse_credentials(const char *json, AwsCredentials *ret);
int aws_parse_iso8601(const char *s, uint64_t *ret_usec);
