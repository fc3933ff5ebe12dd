#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ebs-hydrate-aws against the stand-in for IMDSv2, EC2 and the EBS direct APIs (aws-stub.py,
# 127.0.0.1 only). Every case runs in a network namespace of its own with only loopback up, so
# that an endpoint the test forgot to override fails at once instead of sending a packet off this
# machine; the stub checks every request's SigV4 signature with botocore.
# Usage: helper.sh CASE PATH-TO-ebs-hydrate-aws PATH-TO-aws-list-blocks
set -euo pipefail
CASES=(snapshot-volume empty-volume fast-restored provisioned-rate imds-credentials
    imds-credentials-refresh no-imds imds-disabled denied status-denied throttled-then-ok
    throttled-beyond-budget server-errors redirect huge-answer wrong-volume bad-endpoint usage
    state-dir state-dir-error hostile-message device device-aws-off device-not-ebs follow follow-nothing follow-lagging copy-volume list-blocks list-blocks-moto
    list-blocks-expired list-blocks-errors blocks-listed blocks-denied blocks-not-listed
    blocks-follow blocks-stale)
. "$(dirname "$0")/../integration/cases.sh"

HELPER=$(realpath "$2")
LIST_BLOCKS=$(realpath "$3")
HERE=$(cd "$(dirname "$0")" && pwd)
VOL=vol-0123456789abcdef0

if [ -z "${EBS_HYDRATE_AWS_NETNS:-}" ]; then
    if [ "$(id -u)" -ne 0 ] || ! unshare --net true 2>/dev/null; then
        echo "SKIP: needs root and unshare --net (a network namespace of its own)"
        exit 77
    fi
    exec unshare --net env EBS_HYDRATE_AWS_NETNS=1 "$0" "$@"
fi
ip link set lo up
# Only loopback: nothing can leave, 169.254.169.254 included.
[ "$(ip -o link show | grep -vc ': lo:')" -eq 0 ] || { echo "FAIL: more than loopback" >&2; exit 1; }

TMP=$(mktemp -d)
STUB_PID=
cleanup() {
    [ -n "$STUB_PID" ] && kill "$STUB_PID" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    echo "--- stdout"; cat "$TMP/out" 2>/dev/null
    echo "--- stderr"; cat "$TMP/err" 2>/dev/null
    echo "--- stub log"; cat "$TMP/log" 2>/dev/null
    exit 1
}

# stub SCENARIO-JSON: start the stand-in; sets $URL.
stub() {
    if [ -n "$STUB_PID" ]; then # a case may script several in turn
        kill "$STUB_PID" 2>/dev/null || true
        wait "$STUB_PID" 2>/dev/null || true
        STUB_PID=
    fi
    rm -f "$TMP/port"
    echo "$1" >"$TMP/scenario.json"
    : >"$TMP/log"
    "$HERE/aws-stub.py" "$TMP/scenario.json" "$TMP/port" "$TMP/log" &
    STUB_PID=$!
    for _ in $(seq 100); do
        [ -s "$TMP/port" ] && break
        sleep 0.05
    done
    [ -s "$TMP/port" ] || fail "the stub did not start"
    URL="http://127.0.0.1:$(cat "$TMP/port")"
}

# run [ENV...]: the helper with every endpoint on the stub and the environment's own AWS_*
# variables cleared; sets $RC.
# run [ENV...] [-- OPTION...]
run() {
    local vars=() opts=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do vars+=("$1"); shift; done
    [ $# -gt 0 ] && { shift; opts=("$@"); }
    RC=0
    env -i PATH="$PATH" AWS_ENDPOINT_URL_EC2="$URL" AWS_ENDPOINT_URL_EBS="$URL" \
        AWS_EC2_METADATA_SERVICE_ENDPOINT="$URL" \
        "${vars[@]}" "$HELPER" "${opts[@]}" "$VOL" >"$TMP/out" 2>"$TMP/err" || RC=$?
}
with_keys=(AWS_ACCESS_KEY_ID=AKIDSTUBENV AWS_SECRET_ACCESS_KEY=stub/env+secret= AWS_REGION=us-east-1)

expect_rc() { [ "$RC" -eq "$1" ] || fail "exit status $RC, expected $1"; }
expect_out() { grep -qxF -- "$1" "$TMP/out" || fail "no line '$1' on stdout"; }
expect_err() { grep -qF -- "$1" "$TMP/err" || fail "stderr does not say '$1'"; }
ec2_requests() { grep -c '"action": "'"$1"'"' "$TMP/log" || true; }
all_signed() {
    [ "$(grep -c '"signature_ok": false' "$TMP/log" || true)" -eq 0 ] || fail "a request's signature did not verify"
    [ "$(grep -c '"signature_ok": true' "$TMP/log" || true)" -gt 0 ] || fail "no signed request"
}

case_snapshot_volume() {
    stub '{"volumes": {"'$VOL'": {"snapshot": "snap-0abc", "fast_restored": false}}}'
    run "${with_keys[@]}"
    expect_rc 0
    expect_out "VOLUME_ID=$VOL"
    expect_out "SOURCE=snapshot"
    expect_out "SNAPSHOT_ID=snap-0abc"
    expect_out "FAST_RESTORED=no"
    all_signed
    # environment keys: IMDS is not asked at all
    ! grep -q '"/latest/' "$TMP/log" || fail "IMDS was asked although the environment has keys"
}

case_empty_volume() {
    stub '{"volumes": {"'$VOL'": {}}}'
    run "${with_keys[@]}"
    expect_rc 0
    expect_out "SOURCE=empty"
    ! grep -q '^SNAPSHOT_ID=' "$TMP/out" || fail "an empty volume has no snapshot"
}

case_fast_restored() {
    stub '{"volumes": {"'$VOL'": {"snapshot": "snap-1", "fast_restored": true}}}'
    run "${with_keys[@]}"
    expect_rc 0
    expect_out "FAST_RESTORED=yes"
}

case_provisioned_rate() {
    stub '{"volumes": {"'$VOL'": {"snapshot": "snap-1", "init_rate": 300, "init_state": "initializing",
        "init_type": "provisioned-rate", "progress": 42, "eta": 1800}}}'
    run "${with_keys[@]}"
    expect_rc 0
    expect_out "INITIALIZATION_RATE_MIBPS=300"
    expect_out "INITIALIZATION_STATE=initializing"
    expect_out "INITIALIZATION_TYPE=provisioned-rate"
    expect_out "INITIALIZATION_PROGRESS=42"
    expect_out "INITIALIZATION_ETA_SECONDS=1800"
}

case_imds_credentials() {
    stub '{"region": "eu-west-1", "volumes": {"'$VOL'": {"snapshot": "snap-1"}}}'
    run
    expect_rc 0
    expect_out "SOURCE=snapshot"
    all_signed
    grep -q '"token": "token1+/="' "$TMP/log" || fail "the role's session token was not sent"
    grep -q '"path": "/latest/api/token"' "$TMP/log" || fail "no IMDSv2 session token asked"
}

case_imds_credentials_refresh() {
    # Credentials that expire within the refresh margin are fetched anew before each call.
    stub '{"credentials_ttl": 60, "volumes": {"'$VOL'": {"snapshot": "snap-1"}}}'
    run AWS_REGION=us-east-1
    expect_rc 0
    all_signed
    [ "$(grep -o '"token": "token[0-9]*' "$TMP/log" | sort -u | wc -l)" -ge 2 ] ||
        fail "expiring credentials were not refreshed"
}

case_no_imds() {
    # Not on EC2: the default metadata address is unreachable in this namespace.
    stub '{}'
    local start=$SECONDS
    RC=0
    env -i PATH="$PATH" AWS_ENDPOINT_URL_EC2="$URL" "$HELPER" "$VOL" >"$TMP/out" 2>"$TMP/err" || RC=$?
    expect_rc 3
    expect_err "instance metadata service at http://169.254.169.254 did not answer"
    [ $((SECONDS - start)) -le 3 ] || fail "giving up on IMDS took $((SECONDS - start)) s"
    [ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "more than one line on stderr"
    [ ! -s "$TMP/log" ] || fail "the stub was asked"
}

case_imds_disabled() {
    stub '{}'
    run AWS_EC2_METADATA_DISABLED=true
    expect_rc 3
    expect_err "AWS_EC2_METADATA_DISABLED"
}

case_denied() {
    stub '{"deny": ["DescribeVolumes"], "volumes": {"'$VOL'": {"snapshot": "snap-1"}}}'
    run "${with_keys[@]}"
    expect_rc 3
    expect_err "UnauthorizedOperation"
    expect_err "the instance role needs ec2:DescribeVolumes"
    [ "$(ec2_requests DescribeVolumes)" -eq 1 ] || fail "a denial was retried"
}

case_status_denied() {
    stub '{"deny": ["DescribeVolumeStatus"], "volumes": {"'$VOL'": {"snapshot": "snap-1"}}}'
    run "${with_keys[@]}"
    expect_rc 0
    expect_out "SOURCE=snapshot"
    grep -q '^STATUS_ERROR=.*UnauthorizedOperation' "$TMP/out" || fail "no STATUS_ERROR"
    expect_err "ec2:DescribeVolumeStatus"
}

case_throttled_then_ok() {
    stub '{"throttle": 2, "volumes": {"'$VOL'": {"snapshot": "snap-1"}}}'
    run "${with_keys[@]}"
    expect_rc 0
    [ "$(ec2_requests DescribeVolumes)" -eq 3 ] || fail "expected 2 throttled attempts and 1 more"
}

case_throttled_beyond_budget() {
    stub '{"throttle": 1000, "volumes": {"'$VOL'": {"snapshot": "snap-1"}}}'
    run "${with_keys[@]}"
    expect_rc 3
    expect_err "RequestLimitExceeded"
    expect_err "(5 attempts; giving up)"
    [ "$(ec2_requests DescribeVolumes)" -eq 5 ] || fail "expected exactly 5 attempts"
}

case_server_errors() {
    stub '{"fail500": 2, "volumes": {"'$VOL'": {"snapshot": "snap-1"}}}'
    run "${with_keys[@]}"
    expect_rc 0
    expect_out "SOURCE=snapshot"
}

case_redirect() {
    stub '{"redirect": true, "volumes": {"'$VOL'": {}}}'
    run "${with_keys[@]}"
    expect_rc 3
    expect_err "not followed"
}

case_huge_answer() {
    stub '{"huge": true, "volumes": {"'$VOL'": {}}}'
    run "${with_keys[@]}"
    expect_rc 3
    expect_err "sent an answer over 4 MiB"
    [ "$(ec2_requests DescribeVolumes)" -eq 1 ] || fail "a huge answer was asked again"
}

case_wrong_volume() {
    stub '{"wrong_volume": true, "volumes": {"'$VOL'": {"snapshot": "snap-1"}}}'
    run "${with_keys[@]}"
    expect_rc 3
    expect_err "does not hold $VOL"
    ! grep -q '^SOURCE=' "$TMP/out" || fail "findings printed for another volume's answer"
    grep -q "^ERROR=EC2's DescribeVolumes answer does not hold $VOL\$" "$TMP/out" || fail "no ERROR="
}

case_bad_endpoint() {
    stub '{}'
    RC=0
    env -i PATH="$PATH" AWS_ENDPOINT_URL_EC2="ftp://127.0.0.1/" "${with_keys[@]}" "$HELPER" "$VOL" \
        >"$TMP/out" 2>"$TMP/err" || RC=$?
    expect_rc 3
    expect_err "AWS_ENDPOINT_URL_EC2='ftp://127.0.0.1/' is not an http or https endpoint"
}

case_usage() {
    stub '{}'
    RC=0
    "$HELPER" "vol-12; rm" >"$TMP/out" 2>"$TMP/err" || RC=$?
    expect_rc 2
    expect_err "Invalid volume id"
    RC=0
    "$HELPER" >"$TMP/out" 2>"$TMP/err" || RC=$?
    expect_rc 2
    "$HELPER" --help | grep -q "ec2:DescribeVolumes" || fail "--help names no IAM action"
    "$HELPER" --help | grep -q "ebs:ListSnapshotBlocks" || fail "--help does not name ebs:ListSnapshotBlocks"
}

case_state_dir() {
    stub '{"volumes": {"'$VOL'": {"snapshot": "snap-0abc", "init_state": "completed",
        "init_type": "default", "progress": 100}}}'
    mkdir "$TMP/state"
    run "${with_keys[@]}" -- --state-dir "$TMP/state"
    expect_rc 0
    [ "$(stat -c %a "$TMP/state/$VOL.aws")" = 644 ] || fail "the findings file is not mode 0644"
    cmp -s "$TMP/out" "$TMP/state/$VOL.aws" || fail "the file and stdout differ"
    head -1 "$TMP/state/$VOL.aws" | grep -qx 'EBS_HYDRATE_AWS_FINDINGS=1' || fail "no version line"
    expect_out "INITIALIZATION_STATE=completed"
    expect_out "INITIALIZATION_PROGRESS=100"
    [ "$(find "$TMP/state" -type f | wc -l)" -eq 1 ] || fail "a temporary file was left behind"
}

case_state_dir_error() {
    # AWS could not be asked: the file says why, and the helper says so by its status (3, which
    # the unit counts as success: the daemon hydrates as without AWS).
    stub '{"deny": ["DescribeVolumes"], "volumes": {}}'
    mkdir "$TMP/state"
    run "${with_keys[@]}" -- --state-dir "$TMP/state"
    expect_rc 3
    grep -q '^ERROR=EC2 answered HTTP 403: UnauthorizedOperation' "$TMP/state/$VOL.aws" ||
        fail "the findings file does not say why"
    grep -q '^ERROR=.*; the instance role needs ec2:DescribeVolumes$' "$TMP/state/$VOL.aws" ||
        fail "the findings file does not name what the role lacks"
    ! grep -q '^SOURCE=' "$TMP/state/$VOL.aws" || fail "an error file with a SOURCE="
    # a state directory that is not one: a clear error, nothing else written
    run "${with_keys[@]}" -- --state-dir "$TMP/missing"
    expect_rc 1
    expect_err "Failed to open the state directory $TMP/missing"
}

case_hostile_message() {
    # AWS's words may hold any byte: the file still says why, on its line, and replaces an old
    # answer (which must not outlive a failed ask).
    stub '{"deny": ["DescribeVolumes"], "deny_message": "no&#10;SOURCE=empty&#9;tab", "volumes": {}}'
    mkdir "$TMP/state"
    printf 'EBS_HYDRATE_AWS_FINDINGS=1\nVOLUME_ID=%s\nTIME_USEC=1\nSOURCE=empty\n' "$VOL" \
        >"$TMP/state/$VOL.aws"
    run "${with_keys[@]}" -- --state-dir "$TMP/state"
    expect_rc 3
    grep -qF 'ERROR=EC2 answered HTTP 403: UnauthorizedOperation: no\nSOURCE=empty\ttab' \
        "$TMP/state/$VOL.aws" || fail "the reason is not in the file, escaped"
    ! grep -q '^SOURCE=' "$TMP/state/$VOL.aws" || fail "the old answer outlived the failed ask"
}

case_follow() {
    # AWS initializes at a provisioned rate: asked again every second (--interval=1) until it
    # is done, the findings replaced at each answer; the status alone is asked again.
    stub '{"volumes": {"'$VOL'": {"snapshot": "snap-1", "init_rate": 300, "init_state": "initializing",
        "init_type": "provisioned-rate", "progress": 40, "eta": 600, "progress_step": 30}}}'
    mkdir "$TMP/state"
    run "${with_keys[@]}" -- --state-dir "$TMP/state" --follow --interval=1
    expect_rc 0
    for p in 40 70 100; do
        expect_out "INITIALIZATION_PROGRESS=$p"
    done
    expect_out "INITIALIZATION_ETA_SECONDS=300"
    grep -qx 'INITIALIZATION_STATE=completed' "$TMP/state/$VOL.aws" || fail "the file does not end completed"
    [ "$(ec2_requests DescribeVolumeStatus)" -eq 3 ] || fail "DescribeVolumeStatus asked $(ec2_requests DescribeVolumeStatus) times, expected 3"
    [ "$(ec2_requests DescribeVolumes)" -eq 1 ] || fail "DescribeVolumes asked again while following"
    expect_err "$VOL: AWS's initialization completed"
    all_signed
    run "${with_keys[@]}" -- --follow --interval=0
    expect_rc 2
    expect_err "Invalid --interval '0'"
    run "${with_keys[@]}" -- --follow --interval=601
    expect_rc 2
}

case_follow_lagging() {
    # DescribeVolumes gives a provisioned rate, the status does not show it for two asks: the
    # helper keeps asking (for at most 10 minutes) and follows it when it shows.
    stub '{"volumes": {"'$VOL'": {"snapshot": "snap-1", "init_rate": 300, "init_state": "initializing",
        "init_type": "provisioned-rate", "progress": 0, "progress_step": 50, "status_lag": 2}}}'
    mkdir "$TMP/state"
    run "${with_keys[@]}" -- --state-dir "$TMP/state" --follow --interval=1
    expect_rc 0
    [ "$(ec2_requests DescribeVolumeStatus)" -eq 3 ] || fail "DescribeVolumeStatus asked $(ec2_requests DescribeVolumeStatus) times, expected 3"
    grep -qx 'INITIALIZATION_STATE=completed' "$TMP/state/$VOL.aws" || fail "the file does not end completed"
}

case_copy_volume() {
    # A copy (CopyVolumes) has no snapshot, but is not empty: AWS initializes it (volume-copy),
    # and the helper follows that as it follows a provisioned rate.
    stub '{"volumes": {"'$VOL'": {"source_volume": "vol-0aaaaaaaaaaaaaaaa", "init_state": "initializing",
        "init_type": "volume-copy", "progress": 10, "progress_step": 90}}}'
    run "${with_keys[@]}" -- --follow --interval=1
    expect_rc 0
    expect_out "SOURCE=copy"
    expect_out "SOURCE_VOLUME_ID=vol-0aaaaaaaaaaaaaaaa"
    ! grep -q '^SOURCE=empty' "$TMP/out" || fail "a copy was called empty"
    expect_out "INITIALIZATION_STATE=completed"
    [ "$(ec2_requests DescribeVolumeStatus)" -eq 2 ] || fail "DescribeVolumeStatus asked $(ec2_requests DescribeVolumeStatus) times, expected 2"
}

case_follow_nothing() {
    # Nothing to follow (a plain restore, an empty volume): one answer, and done at once.
    stub '{"volumes": {"'$VOL'": {"snapshot": "snap-1", "init_state": "initializing",
        "init_type": "default", "progress_step": 50}}}'
    run "${with_keys[@]}" -- --follow --interval=1
    expect_rc 0
    [ "$(ec2_requests DescribeVolumeStatus)" -eq 1 ] || fail "a default initialization was followed"
}

# list SNAPSHOT: ListSnapshotBlocks through the client (aws-list-blocks); sets $RC.
list() {
    RC=0
    env -i PATH="$PATH" AWS_ENDPOINT_URL="$URL" AWS_EC2_METADATA_SERVICE_ENDPOINT="$URL" \
        "${with_keys[@]}" "$LIST_BLOCKS" "$1" >"$TMP/out" 2>"$TMP/err" || RC=$?
}
list_requests() { grep -c '"action": "ListSnapshotBlocks"' "$TMP/log" || true; }

case_list_blocks() {
    # 25000 blocks in three runs over a 16 GiB volume: three pages of at most 10000, every
    # one asked with the previous page's token, signed as "ebs" (the stub checks it).
    stub '{"snapshots": {"snap-0abc": {"volume_size": 16, "ranges": [[0, 5000], [10000, 29000], [32000, 32768]]}}}'
    list snap-0abc
    expect_rc 0
    expect_out "pages=3 restarts=0 block_size=524288 volume_gib=16 blocks=32768 stored=24768 past_end=0"
    expect_out "0-4999"
    expect_out "10000-28999"
    expect_out "32000-32767"
    [ "$(list_requests)" -eq 3 ] || fail "$(list_requests) requests for 3 pages"
    grep -q '"max_results": "10000"' "$TMP/log" || fail "maxResults is not 10000"
    [ "$(grep -c '"token": null' "$TMP/log")" -eq 1 ] || fail "more than the first page without a token"
    all_signed
    # the blocks past the volume's end are counted, not stored
    stub '{"snapshots": {"snap-0abc": {"volume_size": 1, "blocks": [0, 2047, 2048, 99999]}}}'
    list snap-0abc
    expect_rc 0
    expect_out "pages=1 restarts=0 block_size=524288 volume_gib=1 blocks=2048 stored=2 past_end=2"
}

case_list_blocks_moto() {
    # What moto sends (a real server could too): indexes as strings, unsorted, duplicates,
    # BlockSize 512: each counts in the 512 KiB block it touches.
    stub '{"snapshots": {"snap-0abc": {"volume_size": 1, "block_size": 512, "index_as_string": true,
        "shuffle": true, "blocks": [0, 1, 1, 1024, 1025, 4095]}}}'
    list snap-0abc
    expect_rc 0
    expect_out "pages=1 restarts=0 block_size=512 volume_gib=1 blocks=2048 stored=3 past_end=0"
    expect_out "0-1" # 512-byte blocks 0 and 1 in the first 512 KiB, 1024 and 1025 in the second
    expect_out "3-3" # 4095: the last 512 bytes of the fourth
}

case_list_blocks_expired() {
    # The token of the third page has expired: the listing starts over once, and completes.
    stub '{"snapshots": {"snap-0abc": {"volume_size": 1, "page_size": 100, "ranges": [[0, 450]],
        "expire_after_pages": 2}}}'
    list snap-0abc
    expect_rc 0
    expect_out "pages=5 restarts=1 block_size=524288 volume_gib=1 blocks=2048 stored=450 past_end=0"
    expect_out "0-449"
    [ "$(list_requests)" -eq 8 ] || fail "$(list_requests) requests: 3 before the expiry, 5 after"
}

case_list_blocks_errors() {
    # Throttled for two requests: retried, then listed.
    stub '{"snapshots": {"snap-0abc": {"volume_size": 1, "blocks": [5], "throttle_pages": 2}}}'
    list snap-0abc
    expect_rc 0
    expect_out "pages=1 restarts=0 block_size=524288 volume_gib=1 blocks=2048 stored=1 past_end=0"
    [ "$(list_requests)" -eq 3 ] || fail "$(list_requests) requests, expected 3"
    # A snapshot that does not exist: said, not retried.
    stub '{"snapshots": {}}'
    list snap-0fff
    expect_rc 1
    expect_err "EBS answered HTTP 404: ResourceNotFoundException: SNAPSHOT_NOT_FOUND: The snapshot 'snap-0fff' does not exist."
    [ "$(list_requests)" -eq 1 ] || fail "a missing snapshot was asked again"
    # Not a snapshot id: nothing asked.
    : >"$TMP/log"
    list "snap-0abc/../x"
    expect_rc 1
    expect_err "is not a snapshot id"
    [ "$(list_requests)" -eq 0 ] || fail "an invalid id was asked"
    # A block size EBS does not use.
    stub '{"snapshots": {"snap-0abc": {"volume_size": 1, "block_size": 1000, "blocks": [5]}}}'
    list snap-0abc
    expect_rc 1
    expect_err "EBS answered a BlockSize of 1000 bytes, which is no block size EBS uses"
}

# The snapshot's block list, as the helper gets it after EC2's answer -------------------------

BLOCKS_SNAPSHOT='"snapshots": {"snap-0abc": {"volume_size": 16, "ranges": [[0, 5000], [10000, 29000], [32000, 32768]]}}'
BLOCKS_RANGES=(0-4999 10000-28999 32000-32767)
decode() { "$HERE/../tools/blocks-decode.py" "$@"; }
# expect_blocks FILE RANGE...: FILE decodes to these ranges of stored blocks, and to no others.
expect_blocks() {
    local file=$1
    shift
    decode "$file" >"$TMP/decoded" 2>&1 || fail "$file does not decode: $(cat "$TMP/decoded")"
    diff <(grep -E '^[0-9]+-[0-9]+$' "$TMP/decoded") <(printf '%s\n' "$@") >&2 ||
        fail "$file holds other blocks than the snapshot's"
}
findings_blocks() { grep -c '^VOLUME_ID=' "$1"; }

case_blocks_listed() {
    # EC2's answer is in the file at once; the list comes after it (each page here takes 0.3 s),
    # then <volume>.blocks, then the findings vouching for it, printed once, whole.
    stub '{"volumes": {"'$VOL'": {"snapshot": "snap-0abc", "fast_restored": false}},
        "snapshots": {"snap-0abc": {"volume_size": 16, "slow_pages": 0.3,
        "ranges": [[0, 5000], [10000, 29000], [32000, 32768]]}}}'
    local pid
    mkdir "$TMP/state"
    (run "${with_keys[@]}" -- --state-dir "$TMP/state" && exit "$RC") &
    pid=$!
    for _ in $(seq 40); do [ -e "$TMP/state/$VOL.aws" ] && break; sleep 0.05; done
    grep -qx 'SOURCE=snapshot' "$TMP/state/$VOL.aws" || fail "EC2's answer was not written before the list"
    ! grep -q '^BLOCKS_' "$TMP/state/$VOL.aws" || fail "the first findings already speak of blocks"
    [ ! -e "$TMP/state/$VOL.blocks" ] || fail "a list before ListSnapshotBlocks was answered"
    RC=0
    wait "$pid" || RC=$?
    expect_rc 0
    [ "$(tail -1 "$TMP/out")" = BLOCKS_STORED=24768 ] || fail "the findings do not end with BLOCKS_STORED=24768"
    cmp -s "$TMP/out" "$TMP/state/$VOL.aws" || fail "the file and stdout differ"
    [ "$(findings_blocks "$TMP/out")" -eq 1 ] || fail "the findings were printed more than once"
    expect_blocks "$TMP/state/$VOL.blocks" "${BLOCKS_RANGES[@]}"
    grep -qx "VOLUME_ID=$VOL" "$TMP/decoded" || fail "the list names another volume"
    grep -qx 'SNAPSHOT_ID=snap-0abc' "$TMP/decoded" || fail "the list names another snapshot"
    grep -qx 'BLOCKS=32768' "$TMP/decoded" || fail "the list is not over 16 GiB"
    [ "$(stat -c '%a %u' "$TMP/state/$VOL.blocks")" = "644 $(id -u)" ] ||
        fail "<volume>.blocks is $(stat -c '%a %u' "$TMP/state/$VOL.blocks"), expected mode 644 and owner $(id -u)"
    [ ! "$TMP/state/$VOL.blocks" -nt "$TMP/state/$VOL.aws" ] || fail "the findings were written before the list"
    [ "$(find "$TMP/state" -type f | wc -l)" -eq 2 ] || fail "a temporary file was left behind"
    # the same blocks as the client lists them, every page signed for the EBS direct APIs
    [ "$(list_requests)" -eq 3 ] || fail "$(list_requests) ListSnapshotBlocks requests for 3 pages"
    [ "$(grep '"ListSnapshotBlocks"' "$TMP/log" | grep -c '"service": "ebs"')" -eq 3 ] ||
        fail "ListSnapshotBlocks not signed for the service ebs"
    all_signed
    expect_err "$VOL: snap-0abc stores 24768 of its 32768 blocks of 512 KiB (3 pages)"
    # without --state-dir: the count alone
    stub '{"volumes": {"'$VOL'": {"snapshot": "snap-0abc"}}, '"$BLOCKS_SNAPSHOT"'}'
    run "${with_keys[@]}"
    expect_rc 0
    expect_out "BLOCKS_STORED=24768"
}

case_blocks_denied() {
    # No ebs:ListSnapshotBlocks: said once, naming it; the rest of the findings stand, and an
    # older list is not left beside findings that do not vouch for it.
    stub '{"deny": ["ListSnapshotBlocks"], "volumes": {"'$VOL'": {"snapshot": "snap-0abc"}}, '"$BLOCKS_SNAPSHOT"'}'
    mkdir "$TMP/state"
    echo stale >"$TMP/state/$VOL.blocks"
    run "${with_keys[@]}" -- --state-dir "$TMP/state"
    expect_rc 0
    expect_out "SOURCE=snapshot"
    expect_out "BLOCKS_ERROR=EBS answered HTTP 403: AccessDeniedException: UNAUTHORIZED_ACCOUNT: User is not authorized to perform ebs:ListSnapshotBlocks.; the instance role needs ebs:ListSnapshotBlocks"
    ! grep -q '^BLOCKS_STORED=' "$TMP/out" || fail "BLOCKS_STORED= beside BLOCKS_ERROR="
    cmp -s "$TMP/out" "$TMP/state/$VOL.aws" || fail "the file and stdout differ"
    [ "$(grep -c 'the instance role needs ebs:ListSnapshotBlocks' "$TMP/err")" -eq 1 ] ||
        fail "the journal does not say once that ebs:ListSnapshotBlocks is missing"
    [ ! -e "$TMP/state/$VOL.blocks" ] || fail "a .blocks file beside BLOCKS_ERROR="
    [ "$(list_requests)" -eq 1 ] || fail "a denial was asked again"
    # An encrypted snapshot whose KMS key the role may not use: the key, not the action.
    stub '{"volumes": {"'$VOL'": {"snapshot": "snap-0abc"}},
        "snapshots": {"snap-0abc": {"volume_size": 1, "blocks": [5], "kms_denied": true}}}'
    run "${with_keys[@]}" -- --state-dir "$TMP/state"
    expect_rc 0
    grep -q "^BLOCKS_ERROR=EBS answered HTTP 403: AccessDeniedException: DEPENDENCY_ACCESS_DENIED: .*; the instance role needs the use of the snapshot's KMS key (it is encrypted: kms:Decrypt" \
        "$TMP/out" || fail "BLOCKS_ERROR= does not point at the KMS key"
    [ ! -e "$TMP/state/$VOL.blocks" ] || fail "a .blocks file beside BLOCKS_ERROR="
}

case_blocks_not_listed() {
    # Volumes the daemon does not read: no list asked for, none written, no BLOCKS_ line.
    local v=(vol-0e0000000000000e0 vol-0f0000000000000f0 vol-0c0000000000000c0 vol-0d0000000000000d0)
    stub '{"volumes": {"'${v[0]}'": {}, "'${v[1]}'": {"snapshot": "snap-0abc", "fast_restored": true},
        "'${v[2]}'": {"snapshot": "snap-0abc", "init_state": "completed", "init_type": "default", "progress": 100},
        "'${v[3]}'": {"source_volume": "vol-0aaaaaaaaaaaaaaaa", "init_state": "initializing", "init_type": "volume-copy"}},
        '"$BLOCKS_SNAPSHOT"'}'
    mkdir "$TMP/state"
    for VOL in "${v[@]}"; do
        run "${with_keys[@]}" -- --state-dir "$TMP/state"
        expect_rc 0
        [ "$(list_requests)" -eq 0 ] || fail "the blocks of $VOL's snapshot were listed"
        ! grep -q '^BLOCKS_' "$TMP/out" || fail "BLOCKS_ findings for $VOL"
        [ ! -e "$TMP/state/$VOL.blocks" ] || fail "a .blocks file for $VOL"
    done
    [ "$(ec2_requests DescribeVolumes)" -eq 4 ] || fail "not every volume was asked about"
}

case_blocks_follow() {
    # AWS initializes at a provisioned rate: the list is had once, its count in every findings
    # written while following.
    stub '{"volumes": {"'$VOL'": {"snapshot": "snap-0abc", "init_rate": 300, "init_state": "initializing",
        "init_type": "provisioned-rate", "progress": 40, "progress_step": 60}}, '"$BLOCKS_SNAPSHOT"'}'
    mkdir "$TMP/state"
    run "${with_keys[@]}" -- --state-dir "$TMP/state" --follow --interval=1
    expect_rc 0
    [ "$(ec2_requests DescribeVolumeStatus)" -eq 2 ] || fail "DescribeVolumeStatus asked $(ec2_requests DescribeVolumeStatus) times, expected 2"
    [ "$(list_requests)" -eq 3 ] || fail "$(list_requests) ListSnapshotBlocks requests, expected 3 (one listing of 3 pages)"
    [ "$(findings_blocks "$TMP/out")" -eq 2 ] || fail "$(findings_blocks "$TMP/out") findings printed, expected 2"
    [ "$(grep -cx 'BLOCKS_STORED=24768' "$TMP/out")" -eq 2 ] || fail "a findings printed without BLOCKS_STORED="
    grep -qx 'INITIALIZATION_STATE=completed' "$TMP/state/$VOL.aws" || fail "the file does not end completed"
    grep -qx 'BLOCKS_STORED=24768' "$TMP/state/$VOL.aws" || fail "the last findings lost BLOCKS_STORED="
    expect_blocks "$TMP/state/$VOL.blocks" "${BLOCKS_RANGES[@]}"
}

case_blocks_stale() {
    # A list from an earlier run (another snapshot's blocks) is replaced by this run's.
    stub '{"volumes": {"'$VOL'": {"snapshot": "snap-0abc"}},
        "snapshots": {"snap-0abc": {"volume_size": 1, "ranges": [[0, 10], [100, 101]]}}}'
    mkdir "$TMP/state"
    run "${with_keys[@]}" -- --state-dir "$TMP/state"
    expect_rc 0
    expect_blocks "$TMP/state/$VOL.blocks" 0-9 100-100
    stub '{"volumes": {"'$VOL'": {"snapshot": "snap-0abc"}}, '"$BLOCKS_SNAPSHOT"'}'
    run "${with_keys[@]}" -- --state-dir "$TMP/state"
    expect_rc 0
    expect_out "BLOCKS_STORED=24768"
    expect_blocks "$TMP/state/$VOL.blocks" "${BLOCKS_RANGES[@]}"
}

# fake_ebs NAME MODEL SERIAL: a device NAME in a sysfs tree of its own ($TMP/sys), as the
# helper finds it when udev does not know it (no udevd here).
fake_ebs() {
    local d="$TMP/sys/devices/virtual/block/$1"
    mkdir -p "$d/device" "$TMP/sys/class/block"
    printf '%-40s' "$2" >"$d/device/model"
    printf '%-20s' "$3" >"$d/device/serial"
    ln -s "../../devices/virtual/block/$1" "$TMP/sys/class/block/$1"
}

# run_device DEVICE [OPTION...]: the helper given a device, not a volume id.
run_device() {
    local dev=$1
    shift
    RC=0
    env -i PATH="$PATH" AWS_ENDPOINT_URL_EC2="$URL" AWS_EC2_METADATA_SERVICE_ENDPOINT="$URL" \
        EBS_HYDRATE_SYSFS_ROOT="$TMP/sys" "${with_keys[@]}" "$HELPER" --config-dir="$TMP/conf" \
        --state-dir="$TMP/state" "$@" "$dev" >"$TMP/out" 2>"$TMP/err" || RC=$?
}

case_device() {
    # What the unit runs: the kernel name; the volume id comes from the device's identity.
    stub '{"volumes": {"'$VOL'": {}}}'
    mkdir "$TMP/state" "$TMP/conf"
    fake_ebs nvme9n9 'Amazon Elastic Block Store' vol0123456789abcdef0
    run_device nvme9n9
    expect_rc 0
    expect_out "VOLUME_ID=$VOL"
    expect_out "SOURCE=empty"
    [ -f "$TMP/state/$VOL.aws" ] || fail "no findings under the volume id"
    all_signed
    run_device /dev/nvme9n9
    expect_rc 0
    run_device nvme8n8
    expect_rc 1
    expect_err "Cannot look up nvme8n8 in udev or sysfs"
    for bad in ../nvme9n9 /dev/../etc/passwd .hidden ""; do
        run_device "$bad"
        expect_rc 2
        expect_err "expected a volume id (vol-...) or a device"
    done
}

case_device_aws_off() {
    # Aws=no for this device: AWS is not asked at all, and nothing is written.
    stub '{"volumes": {"'$VOL'": {}}}'
    mkdir "$TMP/state" "$TMP/conf"
    fake_ebs nvme9n9 'Amazon Elastic Block Store' vol0123456789abcdef0
    mkdir "$TMP/conf/hydrate.conf.d"
    printf '[Match]\nVolumeId=%s\n\n[Hydrate]\nAws=no\n' "$VOL" >"$TMP/conf/hydrate.conf.d/off.conf"
    run_device nvme9n9
    expect_rc 0
    expect_err "$VOL (nvme9n9): Aws=no in the configuration: not asking AWS"
    [ ! -s "$TMP/log" ] || fail "AWS was asked although Aws=no"
    [ ! -e "$TMP/state/$VOL.aws" ] || fail "findings written although Aws=no"
    # another volume's drop-in does not turn it off
    sed -i 's/^VolumeId=.*/VolumeId=vol-0fffffffffffffff0/' "$TMP/conf/hydrate.conf.d/off.conf"
    run_device nvme9n9
    expect_rc 0
    expect_out "SOURCE=empty"
    # a configuration that cannot be read: the file and line, and nothing asked
    printf '[Hydrate]\nAws=maybe\n' >"$TMP/conf/hydrate.conf.d/bad.conf"
    : >"$TMP/log"
    run_device nvme9n9
    expect_rc 2
    expect_err "bad.conf:2"
    [ ! -s "$TMP/log" ] || fail "AWS was asked with a broken configuration"
}

case_device_not_ebs() {
    stub '{"volumes": {}}'
    mkdir "$TMP/state" "$TMP/conf"
    fake_ebs sdz 'QEMU HARDDISK' QM00001
    run_device sdz
    expect_rc 2
    expect_err "sdz is not an EBS volume"
    [ ! -s "$TMP/log" ] || fail "AWS was asked about a disk that is not EBS"
}

run_case aws/
