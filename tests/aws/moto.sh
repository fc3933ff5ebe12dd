#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ebs-hydrate-aws and the EBS block-list client (aws-list-blocks) against moto, an AWS stand-in
# that is not ours (tests/aws/moto-world.py makes its world with boto3). It answers as moto
# 5.2.1 does, which is not always as AWS does: DescribeVolumeStatus is HTTP 500, an empty
# volume has no <snapshotId/>, BlockSize is 512. Everything runs in a network namespace with
# only loopback up, every endpoint on 127.0.0.1 and IMDS off, so nothing can leave this machine.
# Usage: moto.sh PATH-TO-ebs-hydrate-aws PATH-TO-aws-list-blocks
set -euo pipefail

HELPER=$(realpath "$1")
LIST_BLOCKS=$(realpath "$2")
HERE=$(cd "$(dirname "$0")" && pwd)

if ! python3 -c 'import boto3, moto.server' 2>/dev/null; then
    echo "SKIP: needs moto[server] and boto3 for python3 (scripts/deps installs them)"
    exit 77
fi
if [ -z "${EBS_HYDRATE_AWS_NETNS:-}" ]; then
    if [ "$(id -u)" -ne 0 ] || ! unshare --net true 2>/dev/null; then
        echo "SKIP: needs root and unshare --net (a network namespace of its own)"
        exit 77
    fi
    exec unshare --net env EBS_HYDRATE_AWS_NETNS=1 "$0" "$@"
fi
ip link set lo up
# Only loopback: nothing can leave, 169.254.169.254 included.
[ "$(ip -o link show | grep -vc ': lo:')" -eq 0 ] || {
    echo "FAIL: more than loopback" >&2
    exit 1
}

TMP=$(mktemp -d)
MOTO_PID=
cleanup() {
    [ -n "$MOTO_PID" ] && kill "$MOTO_PID" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    echo "--- stdout"; cat "$TMP/out" 2>/dev/null
    echo "--- stderr"; cat "$TMP/err" 2>/dev/null
    echo "--- requests"; cat "$TMP/log" 2>/dev/null
    echo "--- moto"; tail -n 40 "$TMP/moto.err" 2>/dev/null
    exit 1
}

"$HERE/moto-world.py" "$TMP" 2>"$TMP/moto.err" &
MOTO_PID=$!
for _ in $(seq 300); do
    [ -s "$TMP/world" ] && break
    kill -0 "$MOTO_PID" 2>/dev/null || fail "moto-world.py ended before its world was made"
    sleep 0.05
done
[ -s "$TMP/world" ] || fail "moto-world.py made no world in 15 s"
declare -A W
while IFS='=' read -r key value; do
    W[$key]=$value
done <"$TMP/world"
URL=${W[URL]}
[[ $URL =~ ^http://127\.0\.0\.1:[0-9]+$ ]] || fail "moto is not on 127.0.0.1: '$URL'"

# run PROGRAM ARG...: with every endpoint on moto, IMDS off and nothing of the caller's AWS_*;
# sets $RC.
run() {
    RC=0
    env -i PATH="$PATH" AWS_ACCESS_KEY_ID=AKIDMOTOTEST AWS_SECRET_ACCESS_KEY=moto/test+secret= \
        AWS_REGION=us-east-1 AWS_ENDPOINT_URL="$URL" AWS_ENDPOINT_URL_EC2="$URL" \
        AWS_ENDPOINT_URL_EBS="$URL" AWS_EC2_METADATA_SERVICE_ENDPOINT="$URL" \
        AWS_EC2_METADATA_DISABLED=true "$@" >"$TMP/out" 2>"$TMP/err" || RC=$?
}

expect_rc() { [ "$RC" -eq "$1" ] || fail "exit status $RC, expected $1"; }
expect_line() { grep -qxF -- "$2" "$1" || fail "no line '$2' in $(basename "$1")"; }
no_key() { ! grep -q "^$2=" "$1" || fail "$(basename "$1") has $2="; }
# requests ACTION STATUS: how many requests of ACTION moto answered with STATUS
requests() { grep -cF "{\"action\": \"$1\", \"status\": $2, " "$TMP/log" || true; }
expect_requests() {
    local n
    n=$(grep -cF "{\"action\": \"$1\"" "$TMP/log" || true)
    [ "$n" -eq "$2" ] || fail "$1 asked $n times, expected $2"
}

mkdir "$TMP/state"

# A volume from an EC2 snapshot. moto answers DescribeVolumes, but DescribeVolumeStatus only
# with HTTP 500: retried (5 attempts), then the origin stands without the status, STATUS_ERROR=
# says why, and the helper succeeds (the daemon hydrates a plain restore). moto has no
# fastRestored: unknown, not "no". moto's EBS direct APIs know only the snapshots made with
# them, not EC2's: ListSnapshotBlocks is HTTP 500 too, and BLOCKS_ERROR= says so (AWS lists an
# EC2 snapshot's blocks).
VOL=${W[VOLUME_FROM_SNAPSHOT]}
run "$HELPER" --state-dir "$TMP/state" "$VOL"
expect_rc 0
F=$TMP/state/$VOL.aws
[ -f "$F" ] || fail "no findings file $F"
cmp -s "$TMP/out" "$F" || fail "the findings file and stdout differ"
expect_line "$F" "EBS_HYDRATE_AWS_FINDINGS=1"
expect_line "$F" "VOLUME_ID=$VOL"
expect_line "$F" "SOURCE=snapshot"
expect_line "$F" "SNAPSHOT_ID=${W[SNAPSHOT]}"
expect_line "$F" "FAST_RESTORED=unknown"
expect_line "$F" "SIZE_GIB=1"
expect_line "$F" "STATUS_ERROR=EC2 answered HTTP 500 (5 attempts; giving up)"
no_key "$F" ERROR
no_key "$F" INITIALIZATION_STATE
expect_line "$F" "BLOCKS_ERROR=EBS answered HTTP 500: InternalServerException (5 attempts; giving up)"
no_key "$F" BLOCKS_STORED
[ ! -e "$TMP/state/$VOL.blocks" ] || fail "a .blocks file beside BLOCKS_ERROR="
[ "$(requests "GET /snapshots/${W[SNAPSHOT]}/blocks" 500)" -eq 5 ] ||
    fail "ListSnapshotBlocks of the EC2 snapshot was not asked 5 times"
grep -qF "$VOL: EC2 answered HTTP 500 (5 attempts; giving up)" "$TMP/err" ||
    fail "stderr does not say why the status is missing"
expect_requests DescribeVolumes 1
[ "$(requests DescribeVolumes 200)" -eq 1 ] || fail "moto did not answer DescribeVolumes"
expect_requests DescribeVolumeStatus 5
[ "$(requests DescribeVolumeStatus 500)" -eq 5 ] || fail "moto answered DescribeVolumeStatus"
grep -q '"region": "us-east-1", "service": "ec2"' "$TMP/log" ||
    fail "not signed for ec2 in us-east-1"

# A volume created empty. EC2 says <snapshotId/>; moto 5.2.1 leaves it out, and an answer without
# it is refused rather than read as "empty" (a wrong "empty" would leave a cold volume cold):
# ERROR=, exit 3, and DescribeVolumes is not asked again.
[ "${W[EMPTY_SNAPSHOT_ID_SENT]}" = no ] ||
    fail "moto now sends <snapshotId/> for an empty volume: this case should expect SOURCE=empty"
: >"$TMP/log"
VOL=${W[VOLUME_EMPTY]}
run "$HELPER" --state-dir "$TMP/state" "$VOL"
expect_rc 3
F=$TMP/state/$VOL.aws
expect_line "$F" "VOLUME_ID=$VOL"
expect_line "$F" "ERROR=EC2's DescribeVolumes answer is not valid"
no_key "$F" SOURCE
expect_requests DescribeVolumes 1
expect_requests DescribeVolumeStatus 0

# The blocks of a snapshot written with the EBS direct APIs: moto lists them unsorted, with
# string indexes of 512-byte blocks, in one page; the client maps them to 512 KiB blocks.
: >"$TMP/log"
SNAP=${W[EBS_SNAPSHOT]}
run "$LIST_BLOCKS" "$SNAP"
expect_rc 0
if ! diff -u "$TMP/expected-blocks" "$TMP/out" >"$TMP/diff"; then
    cat "$TMP/diff"
    fail "the block list differs from what the blocks put make"
fi
expect_requests "GET /snapshots/$SNAP/blocks" 1
[ "$(requests "GET /snapshots/$SNAP/blocks" 200)" -eq 1 ] || fail "moto did not list the blocks"
grep -q '"region": "us-east-1", "service": "ebs"' "$TMP/log" ||
    fail "not signed for ebs in us-east-1"

echo "PASS: aws/moto (moto block size ${W[EBS_BLOCK_SIZE]})"
