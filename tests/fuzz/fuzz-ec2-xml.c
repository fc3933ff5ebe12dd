/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for EC2's answers (src/aws/ec2-xml.c): DescribeVolumes, DescribeVolumeStatus and
 * an error, parsed from any bytes with expat. Whatever comes, the result is one of the
 * documented ones; an answer taken is about the volume asked for, its strings end within their
 * buffers, and an error has a code.
 */
#include <errno.h>
#include <string.h>

#include "ec2-xml.h"
#include "fuzz-util.h"

#define VOL "vol-0123456789abcdef0"

static void check_string(const char *s, size_t size) {
        fuzz_assert(strnlen(s, size) < size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *xml = (const char *)data;
        AwsError e = {};
        Ec2Volume v;
        Ec2VolumeStatus s;
        int r;

        r = ec2_parse_describe_volumes(xml, size, VOL, &v, &e);
        fuzz_assert(r == 0 || r == -ENOENT || r == -EBADMSG || r == -EPROTO || r == -ENOMEM);
        if (r == 0) {
                fuzz_assert(strcmp(v.volume_id, VOL) == 0);
                check_string(v.snapshot_id, sizeof(v.snapshot_id));
                check_string(v.state, sizeof(v.state));
                fuzz_assert(v.fast_restored == EC2_UNKNOWN || v.fast_restored == 0 ||
                            v.fast_restored == 1);
        }
        if (r == -EPROTO) {
                fuzz_assert(e.code[0] != '\0');
                check_string(e.code, sizeof(e.code));
                check_string(e.message, sizeof(e.message));
        }
        r = ec2_parse_describe_volume_status(xml, size, VOL, &s, &e);
        fuzz_assert(r == 0 || r == -ENOENT || r == -EBADMSG || r == -EPROTO || r == -ENOMEM);
        if (r == 0) {
                fuzz_assert(strcmp(s.volume_id, VOL) == 0);
                check_string(s.initialization_state, sizeof(s.initialization_state));
                check_string(s.initialization_type, sizeof(s.initialization_type));
                fuzz_assert(s.progress == EC2_UNKNOWN || (s.progress >= 0 && s.progress <= 100));
        }
        r = aws_parse_error(xml, size, &e);
        fuzz_assert(r == 0 || r == -EBADMSG || r == -ENOMEM);
        if (r == 0)
                fuzz_assert(e.code[0] != '\0');
        return 0;
}
