#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ebs-hydrated acting on what AWS said (ebs-hydrate-aws's findings, <volume>.aws in
# $EBS_HYDRATE_AWS_DIR) on real loop devices: a volume created empty or fast-restored completes
# without reading, at start or mid-run; findings that change nothing are noted and the volume is
# hydrated; a file planted by another user, or Aws=no, changes nothing. The last case runs the
# helper against the stand-in (tests/aws/aws-stub.py) in a network namespace with only loopback.
# Usage: aws.sh CASE PATH-TO-ebs-hydrated PATH-TO-ebs-hydrate-aws PATH-TO-ebs-hydratectl
#        PATH-TO-blocklist-tool
CASES=(empty-at-start fast-restored-mid-run snapshot-noted aws-error-noted planted-ignored
       aws-off helper-to-daemon provisioned-follows follow-released helper-follows copy-not-empty
       blocks-at-start blocks-mid-run blocks-not-believed first-word-waits)
. "$(dirname "$0")/cases.sh"
. "$(dirname "$0")/lib.sh"
require_root

DAEMON=$(wrapped "$2")
HELPER=$(realpath "$3")
CTL=$(realpath "$4")
BLOCKLIST=$(realpath "$5")
STATE="$WORK/state"
CONF="$WORK/conf"
export EBS_HYDRATE_AWS_DIR="$WORK/aws"
mkdir -p "$STATE" "$CONF" "$EBS_HYDRATE_AWS_DIR"
chmod 0700 "$STATE"
KEY=vol-0123456789abcdef0

gone() { ! kill -0 "$1" 2>/dev/null; }

hydrate() {
    "$DAEMON" --no-bus --state-dir="$STATE" --config-dir="$CONF" --progress=never \
        --state-key="$KEY" "$@"
}

# start_hydrate ARGS...: the daemon in the background as a process of its own (a subshell,
# which "hydrate ... &" would be, passes no signal on), its output in $WORK/out and err; its
# PID in $DPID, which the EXIT trap stops: a run that follows AWS never ends by itself.
DPID=
start_hydrate() {
    "$DAEMON" --no-bus --state-dir="$STATE" --config-dir="$CONF" --progress=never \
        --state-key="$KEY" "$@" >"$WORK/out" 2>"$WORK/err" &
    DPID=$!
}
trap '[ -z "$DPID" ] || { kill "$DPID" 2>/dev/null || true; wait "$DPID" 2>/dev/null || true; }; cleanup' EXIT

# findings LINES...: <KEY>.aws with the version, the volume and a time, then LINES.
findings() {
    { printf 'EBS_HYDRATE_AWS_FINDINGS=1\nVOLUME_ID=%s\nTIME_USEC=%s\n' "$KEY" "${TIME_USEC:-1}"
      printf '%s\n' "$@"; } >"$EBS_HYDRATE_AWS_DIR/tmp.aws"
    mv "$EBS_HYDRATE_AWS_DIR/tmp.aws" "$EBS_HYDRATE_AWS_DIR/$KEY.aws"
}

case_empty_at_start() {
    local dev before out line
    dev=$(make_loop 256M)
    findings SOURCE=empty FAST_RESTORED=unknown
    before=$(sectors_read "$dev")
    hydrate "$dev" >"$WORK/stdout" 2>"$WORK/stderr" || fail "run exited $?"
    cat "$WORK/stdout" "$WORK/stderr"
    line="$KEY: complete without reading: created empty: nothing to hydrate (AWS)"
    # Said on stdout for a script, and logged (the journal's record under systemd)...
    assert_eq "$(grep -cF "$line" "$WORK/stdout")" 1 "the summary on stdout"
    assert_eq "$(grep -cF "$line" "$WORK/stderr")" 1 "the log line on stderr"
    # Known before anything is read: not even the file systems are mapped.
    assert_eq $(($(sectors_read "$dev") - before)) 0 "sectors read"
    out=$(hydrate "$dev") || fail "second run exited $?"
    assert_contains "$out" "$KEY: already hydrated" "second run (the checkpoint says complete)"
    # ... but once where both are one (2>&1, one terminal, the journal's stream under systemd).
    rm -f "$STATE/$KEY.state"
    out=$(hydrate "$dev" 2>&1) || fail "run with 2>&1 exited $?"
    echo "$out"
    assert_eq "$(grep -cF "$line" <<<"$out")" 1 "the summary, stdout and stderr one pipe"
}

case_fast_restored_mid_run() {
    local dev before total pid rc=0 read out
    dev=$(make_loop 256M)
    total=$(device_sectors "$dev")
    before=$(sectors_read "$dev")
    # 16 MiB/s: 16 s for the device, unless AWS's word ends it.
    start_hydrate --rate-limit=16M "$dev"
    pid=$DPID
    sleep 2
    findings SOURCE=snapshot SNAPSHOT_ID=snap-0abc FAST_RESTORED=yes
    wait_for 5 gone "$pid" || fail "the run did not end within 5 s of the findings"
    wait "$pid" || rc=$?
    assert_eq "$rc" 0 "exit status"
    out=$(cat "$WORK/out")
    assert_contains "$out" "complete without reading: restored with fast snapshot restore: nothing is cold (AWS)" "summary"
    read=$(($(sectors_read "$dev") - before))
    echo "read $read of $total sectors before AWS's word"
    assert_le "$read" $((total / 2)) "sectors read"
    out=$(hydrate "$dev") || fail "second run exited $?"
    assert_contains "$out" "already hydrated" "second run"
}

case_snapshot_noted() {
    local dev out err
    dev=$(make_loop 64M)
    findings SOURCE=snapshot SNAPSHOT_ID=snap-0abc FAST_RESTORED=no INITIALIZATION_STATE=initializing \
        INITIALIZATION_TYPE=default INITIALIZATION_PROGRESS=10 INITIALIZATION_ETA_SECONDS=600
    out=$(hydrate "$dev" 2>"$WORK/err") || fail "run exited $?"
    err=$(cat "$WORK/err")
    assert_contains "$out" "$KEY: hydrated, read 64.0 MiB of 64.0 MiB" "summary"
    assert_contains "$err" "$KEY: AWS: restored from snap-0abc, initialization initializing default 10%, about 10 min left; hydrating" "journal line"
}

case_aws_error_noted() {
    local dev out err
    dev=$(make_loop 64M)
    findings "ERROR=the instance has no IAM role (no instance profile)"
    out=$(hydrate "$dev" 2>"$WORK/err") || fail "run exited $?"
    err=$(cat "$WORK/err")
    assert_contains "$out" "hydrated, read 64.0 MiB of 64.0 MiB" "summary"
    assert_contains "$err" "AWS could not be asked (the instance has no IAM role (no instance profile)); hydrating without it" "one line"
    [ "$(grep -c 'AWS could not be asked' "$WORK/err")" -eq 1 ] || fail "said more than once"
}

case_planted_ignored() {
    local dev out err
    dev=$(make_loop 64M)
    findings SOURCE=empty
    chown nobody "$EBS_HYDRATE_AWS_DIR/$KEY.aws"
    out=$(hydrate "$dev" 2>"$WORK/err") || fail "run exited $?"
    err=$(cat "$WORK/err")
    assert_contains "$out" "hydrated, read 64.0 MiB of 64.0 MiB" "a planted file is not believed"
    assert_contains "$err" "owned by another user than root and ebs-hydrate-aws" "warning"
    # Another volume's findings under this name, and a FIFO: not believed, no hang.
    rm -f "$EBS_HYDRATE_AWS_DIR/$KEY.aws"
    KEY=vol-0ffffffffffffffff findings SOURCE=empty
    mv "$EBS_HYDRATE_AWS_DIR/vol-0ffffffffffffffff.aws" "$EBS_HYDRATE_AWS_DIR/$KEY.aws"
    rm -f "$STATE/$KEY.state"
    out=$(timeout 30 "$DAEMON" --no-bus --state-dir="$STATE" --config-dir="$CONF" --progress=never \
        --state-key="$KEY" "$dev" 2>"$WORK/err") || fail "run with another volume's file exited $?"
    assert_contains "$out" "hydrated, read 64.0 MiB" "another volume's findings"
    rm -f "$EBS_HYDRATE_AWS_DIR/$KEY.aws" "$STATE/$KEY.state"
    mkfifo "$EBS_HYDRATE_AWS_DIR/$KEY.aws"
    out=$(timeout 30 "$DAEMON" --no-bus --state-dir="$STATE" --config-dir="$CONF" --progress=never \
        --state-key="$KEY" "$dev" 2>"$WORK/err") || fail "run with a FIFO exited $?"
    assert_contains "$out" "hydrated, read 64.0 MiB" "a FIFO"
}

case_aws_off() {
    local dev out
    dev=$(make_loop 64M)
    findings SOURCE=empty
    out=$(hydrate --aws=no "$dev") || fail "run exited $?"
    assert_contains "$out" "hydrated, read 64.0 MiB of 64.0 MiB" "--aws=no"
    rm -f "$STATE/$KEY.state"
    printf '[Hydrate]\nAws=no\n' >"$CONF/hydrate.conf"
    out=$(hydrate "$dev") || fail "run exited $?"
    assert_contains "$out" "hydrated, read 64.0 MiB of 64.0 MiB" "Aws=no"
    expect_exit 2 "--aws=maybe" hydrate --aws=maybe "$dev"
}

# helper_in_netns [OPTION...]: ebs-hydrate-aws --state-dir=$EBS_HYDRATE_AWS_DIR $KEY against the
# stand-in scripted by $WORK/scenario.json (its log in $WORK/stub.log), both in a network
# namespace of their own with only loopback up: every endpoint and IMDS on 127.0.0.1, and a
# forgotten one cannot leave the machine. The helper's exit status is the function's.
helper_in_netns() {
    unshare --net bash -c '
        ip link set lo up
        "$1" "$2" "$3" "$4" &
        stub=$!
        for _ in $(seq 100); do [ -s "$3" ] && break; sleep 0.05; done
        url=http://127.0.0.1:$(cat "$3")
        shift 4
        env -i PATH="$PATH" AWS_ENDPOINT_URL_EC2="$url" AWS_ENDPOINT_URL_EBS="$url" \
            AWS_EC2_METADATA_SERVICE_ENDPOINT="$url" \
            AWS_ACCESS_KEY_ID=AKIDSTUBENV AWS_SECRET_ACCESS_KEY=stub/env+secret= AWS_REGION=us-east-1 \
            "$@" >/dev/null
        rc=$?
        kill $stub
        exit $rc' _ "$(dirname "$0")/../aws/aws-stub.py" "$WORK/scenario.json" "$WORK/port" \
        "$WORK/stub.log" "$HELPER" --state-dir="$EBS_HYDRATE_AWS_DIR" "$@" "$KEY"
}

# The helper asks the stand-in, in a namespace with only loopback, and the daemon acts on it.
case_helper_to_daemon() {
    local dev out
    command -v unshare >/dev/null && unshare --net true 2>/dev/null || skip "no network namespace"
    dev=$(make_loop 64M)
    echo '{"volumes": {"'$KEY'": {}}}' >"$WORK/scenario.json"
    helper_in_netns 2>"$WORK/helper.err" || fail "the helper exited $?: $(cat "$WORK/helper.err")"
    grep -qx 'SOURCE=empty' "$EBS_HYDRATE_AWS_DIR/$KEY.aws" || fail "the helper wrote no findings"
    out=$(hydrate "$dev") || fail "run exited $?"
    assert_contains "$out" "complete without reading: created empty: nothing to hydrate (AWS)" \
        "the daemon acted on the helper's findings"
}

# make_ext4 SIZE: a read-only loop device over a fresh ext4 (every inode table written), so that
# the plan has metadata to read first and used and free blocks after it.
make_ext4() {
    local img
    img=$(mktemp "$WORK/img.XXXXXX")
    truncate -s "$1" "$img"
    mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$img"
    loop_attach --direct-io=on --read-only "$img"
}

now_usec() { echo $(($(date +%s%N) / 1000)); }

INITIALIZING=(SOURCE=snapshot SNAPSHOT_ID=snap-0abc FAST_RESTORED=no INITIALIZATION_RATE_MIBPS=300
    INITIALIZATION_STATE=initializing INITIALIZATION_TYPE=provisioned-rate)

said() { grep -qF "$1" "$WORK/err"; }
sectors_settled() { # DEV SECONDS: the count does not move for that long; prints it
    local a b
    a=$(sectors_read "$1")
    sleep "$2"
    b=$(sectors_read "$1")
    [ "$a" -eq "$b" ] && echo "$b"
}

case_provisioned_follows() {
    # AWS initializes the volume: the metadata is read, then nothing, STATUS= shows AWS's
    # progress; the run completes when AWS says it is done.
    local dev before total read pid rc=0 out eta t0 since
    command -v mkfs.ext4 >/dev/null || skip "mkfs.ext4 missing"
    dev=$(make_ext4 256M)
    total=$(device_sectors "$dev")
    # Asked 571 s ago, when AWS said 30 min: 1229 s left now, "about 20 min" for the next
    # 59 s (counted down, not as said: "about 30 min").
    t0=$(now_usec)
    TIME_USEC=$((t0 - 571 * 1000000)) findings "${INITIALIZING[@]}" \
        INITIALIZATION_PROGRESS=10 INITIALIZATION_ETA_SECONDS=1800
    before=$(sectors_read "$dev")
    python3 "$(dirname "$0")/notify-listener.py" "$WORK/notify.sock" "$WORK/notify.log" 60 \
        >/dev/null 2>&1 &
    LISTENER=$!
    for _ in $(seq 50); do [ -S "$WORK/notify.sock" ] && break; sleep 0.1; done
    mkdir -p "$WORK/run"
    RUNTIME_DIRECTORY="$WORK/run" NOTIFY_SOCKET="$WORK/notify.sock" start_hydrate --rate-limit=32M "$dev"
    pid=$DPID
    wait_for 10 said "$KEY: AWS initializes the volume (provisioned rate 300 MiB/s, 10%, about 20 min left): reading its metadata and hot paths only, then following AWS" ||
        fail "no line saying it follows AWS: $(cat "$WORK/err")"
    wait_for 20 sectors_settled "$dev" 2 >/dev/null || fail "the reads did not stop"
    read=$(($(sectors_read "$dev") - before))
    echo "read $read of $total sectors while following AWS"
    assert_le "$read" $((total / 8)) "sectors read (the metadata only)"
    kill -0 "$pid" || fail "the run ended while AWS still initializes"
    wait_for 5 grep -qF "STATUS=$KEY: following AWS's initialization (provisioned rate 300 MiB/s, 10%, about 20 min left); metadata and hot paths read" "$WORK/notify.log" ||
        fail "STATUS= does not show AWS's progress: $(tail -3 "$WORK/notify.log")"
    # Where the decision came from: the record, and ebs-hydratectl's table, JSON and metrics.
    wait_for 5 grep -qx 'AWS=initializing' "$WORK/run/$KEY.record" || fail "the record has no AWS="
    grep -qx 'AWS_SNAPSHOT_ID=snap-0abc' "$WORK/run/$KEY.record" || fail "the record has no snapshot"
    grep -qx 'AWS_PROGRESS=10' "$WORK/run/$KEY.record" || fail "the record has no AWS_PROGRESS="
    # AWS's ETA counts down from when the helper asked (TIME_USEC): 1800 s then, 1229 s at
    # t0, less the seconds since (the record is rewritten every 2 s or so).
    eta=$(sed -n 's/^AWS_ETA_SECONDS=//p' "$WORK/run/$KEY.record")
    [ -n "$eta" ] || fail "the record has no AWS_ETA_SECONDS="
    since=$((($(now_usec) - t0) / 1000000))
    echo "AWS_ETA_SECONDS=$eta, $since s after the findings were written"
    assert_le "$eta" 1229 "AWS_ETA_SECONDS= (1800 when the findings were written, 571 s before)"
    assert_le $((1229 - since - 4)) "$eta" "AWS_ETA_SECONDS= (1800 less the seconds since)"
    out=$("$CTL" --state-dir="$STATE" status "$KEY") || fail "ctl status exited $?"
    assert_contains "$out" "AWS" "ctl status legend"
    assert_contains "$out" "initializing 10%" "ctl status"
    out=$("$CTL" --state-dir="$STATE" --json status "$KEY") || fail "ctl --json status exited $?"
    assert_contains "$out" '"aws":{"verdict":"initializing","snapshot_id":"snap-0abc","initialization_percent":10,"initialization_eta_seconds":1' "ctl --json"
    eta=$(sed -n 's/.*"initialization_eta_seconds":\([0-9]*\)}.*/\1/p' <<<"$out")
    since=$((($(now_usec) - t0) / 1000000))
    assert_le "$eta" 1229 "ctl --json initialization_eta_seconds"
    assert_le $((1229 - since - 4)) "$eta" "ctl --json initialization_eta_seconds, counted down"
    out=$("$CTL" --state-dir="$STATE" metrics) || fail "ctl metrics exited $?"
    assert_contains "$out" "ebs_hydrate_volume_aws{volume_id=\"$KEY\",device=\"\",device_name=\"\",aws=\"initializing\"} 1" "metrics"
    assert_contains "$out" "ebs_hydrate_volume_aws_initialization_percent{volume_id=\"$KEY\",device=\"\",device_name=\"\"} 10" "metrics"
    TIME_USEC=$(now_usec) findings SOURCE=snapshot SNAPSHOT_ID=snap-0abc FAST_RESTORED=no \
        INITIALIZATION_STATE=completed INITIALIZATION_TYPE=provisioned-rate INITIALIZATION_PROGRESS=100
    wait_for 5 gone "$pid" || fail "the run did not end within 5 s of AWS's completion"
    wait "$pid" || rc=$?
    assert_eq "$rc" 0 "exit status"
    out=$(cat "$WORK/out")
    assert_contains "$out" "$KEY: complete without reading: AWS completed its initialization (provisioned-rate) (AWS)" "summary"
    kill "$LISTENER"
    assert_eq "$(($(sectors_read "$dev") - before))" "$read" "sectors read after AWS's word"
    out=$(hydrate "$dev") || fail "second run exited $?"
    assert_contains "$out" "already hydrated" "second run"
}

case_follow_released() {
    # While it follows, AWS can no longer be heard: the run reads the rest itself. Findings too
    # old to be the helper's latest are not followed at all.
    local dev before total pid rc=0 out
    command -v mkfs.ext4 >/dev/null || skip "mkfs.ext4 missing"
    dev=$(make_ext4 128M)
    total=$(device_sectors "$dev")
    TIME_USEC=$(now_usec) findings "${INITIALIZING[@]}" INITIALIZATION_PROGRESS=10
    before=$(sectors_read "$dev")
    mkdir -p "$WORK/run"
    RUNTIME_DIRECTORY="$WORK/run" start_hydrate "$dev"
    pid=$DPID
    wait_for 10 said "then following AWS" || fail "it did not follow AWS: $(cat "$WORK/err")"
    wait_for 20 sectors_settled "$dev" 1 >/dev/null || fail "the reads did not stop"
    TIME_USEC=$(now_usec) findings "${INITIALIZING[@]}" \
        "STATUS_ERROR=EC2 answered HTTP 503: RequestLimitExceeded: Request limit exceeded."
    wait_for 30 gone "$pid" || fail "the run did not hydrate the rest: $(cat "$WORK/err")"
    wait "$pid" || rc=$?
    assert_eq "$rc" 0 "exit status"
    assert_contains "$(cat "$WORK/err")" "$KEY: no longer following AWS's initialization (its status could not be had: EC2 answered HTTP 503: RequestLimitExceeded: Request limit exceeded.): hydrating" "the line"
    assert_contains "$(cat "$WORK/out")" "$KEY: hydrated" "summary"
    assert_le "$total" "$(($(sectors_read "$dev") - before))" "sectors read (all of it)"
    # no longer followed: the record does not say "initializing" (that means "followed")
    grep -qx 'AWS=snapshot' "$WORK/run/$KEY.record" || fail "the record says $(grep '^AWS=' "$WORK/run/$KEY.record")"

    # dated a day ahead of this host's clock: no fresher than a stale one, not followed
    rm -f "$STATE/$KEY.state"
    TIME_USEC=$(($(now_usec) + 86400 * 1000000)) findings "${INITIALIZING[@]}"
    out=$(hydrate "$dev" 2>"$WORK/err") || fail "run with findings from the future exited $?"
    assert_not_contains "$(cat "$WORK/err")" "following AWS" "findings from the future"

    # 20 minutes old: the helper stopped asking long ago; the run hydrates as without AWS.
    rm -f "$STATE/$KEY.state"
    TIME_USEC=$(($(now_usec) - 20 * 60 * 1000000)) findings "${INITIALIZING[@]}"
    out=$(hydrate "$dev" 2>"$WORK/err") || fail "run with stale findings exited $?"
    assert_contains "$out" "$KEY: hydrated" "stale findings"
    assert_not_contains "$(cat "$WORK/err")" "following AWS" "stale findings"
}

case_copy_not_empty() {
    # No snapshot is not "empty" when the volume is a copy, nor while AWS says it initializes:
    # those volumes have cold blocks. A copy AWS initializes is followed; the other hydrated.
    local dev out
    dev=$(make_loop 64M)
    findings SOURCE=empty INITIALIZATION_STATE=initializing INITIALIZATION_TYPE=default
    out=$(hydrate "$dev" 2>"$WORK/err") || fail "run exited $?"
    assert_contains "$out" "$KEY: hydrated, read 64.0 MiB of 64.0 MiB" "empty but initializing"
    rm -f "$STATE/$KEY.state"
    TIME_USEC=$(now_usec) findings SOURCE=copy SOURCE_VOLUME_ID=vol-0aaaaaaaaaaaaaaaa \
        INITIALIZATION_STATE=initializing INITIALIZATION_TYPE=volume-copy INITIALIZATION_PROGRESS=10
    start_hydrate "$dev"
    wait_for 10 said "$KEY: AWS initializes the volume" || fail "a copy AWS initializes is not followed: $(cat "$WORK/err")"
    kill "$DPID"
    wait "$DPID" || true
    ! kill -0 "$DPID" 2>/dev/null || fail "the daemon outlived its kill"
    DPID=
}

# End to end: the helper follows the stand-in's provisioned-rate initialization (one ask a
# second) while the daemon reads the metadata, then waits; AWS's completion ends the run.
case_helper_follows() {
    local dev pid hpid rc=0 out
    command -v unshare >/dev/null && unshare --net true 2>/dev/null || skip "no network namespace"
    command -v mkfs.ext4 >/dev/null || skip "mkfs.ext4 missing"
    dev=$(make_ext4 128M)
    echo '{"volumes": {"'$KEY'": {"snapshot": "snap-1", "init_rate": 300,
        "init_state": "initializing", "init_type": "provisioned-rate", "progress": 0,
        "eta": 90, "progress_step": 25}}}' >"$WORK/scenario.json"
    # 8 MiB/s: the whole device would take 16 s, the helper's first answer well under 1 s.
    start_hydrate --rate-limit=8M "$dev"
    pid=$DPID
    helper_in_netns --follow --interval=2 2>"$WORK/helper.err" &
    hpid=$!
    wait "$hpid" || fail "the helper exited $?: $(cat "$WORK/helper.err")"
    wait_for 5 gone "$pid" || fail "the run did not end within 5 s of AWS's completion"
    wait "$pid" || rc=$?
    assert_eq "$rc" 0 "exit status"
    assert_contains "$(cat "$WORK/err")" "then following AWS" "it followed"
    assert_contains "$(cat "$WORK/out")" "complete without reading: AWS completed its initialization (provisioned-rate) (AWS)" "summary"
    [ "$(grep -c '"DescribeVolumeStatus"' "$WORK/stub.log")" -eq 5 ] || fail "the helper asked $(grep -c '"DescribeVolumeStatus"' "$WORK/stub.log") times, expected 5"
}


# blocks BLOCKS SNAPSHOT RUNS...: <KEY>.blocks, the snapshot's list of a volume of BLOCKS
# 512 KiB blocks, as ebs-hydrate-aws leaves it.
blocks() {
    local n=$1 snap=$2
    shift 2
    "$BLOCKLIST" make "$EBS_HYDRATE_AWS_DIR" "$KEY" "$snap" "$n" "$@" >/dev/null ||
        fail "blocklist-tool make failed"
}

# The list known at the start: the stored blocks are read, the rest never; the totals are of
# what is stored; a second run reads nothing.
case_blocks_at_start() {
    local dev before read out err stored=$((48 * 1024 * 1024 / 512))
    dev=$(make_loop 256M)
    blocks 512 snap-0abc 0-15 200-263 496-511
    findings SOURCE=snapshot SNAPSHOT_ID=snap-0abc FAST_RESTORED=no BLOCKS_STORED=96
    before=$(sectors_read "$dev")
    mkdir -p "$WORK/run"
    out=$(RUNTIME_DIRECTORY="$WORK/run" hydrate "$dev" 2>"$WORK/err") || fail "run exited $?"
    err=$(cat "$WORK/err")
    read=$(($(sectors_read "$dev") - before))
    echo "read $read sectors; the snapshot stores $stored"
    # The record: the whole volume, the empty part counted as hydrated and said apart.
    grep -qx "SIZE_BYTES=$((256 << 20))" "$WORK/run/$KEY.record" || fail "record: SIZE_BYTES"
    grep -qx "HYDRATED_BYTES=$((256 << 20))" "$WORK/run/$KEY.record" || fail "record: HYDRATED"
    grep -qx "EMPTY_BYTES=$((208 << 20))" "$WORK/run/$KEY.record" || fail "record: EMPTY_BYTES"
    grep -qx "STATE=completed" "$WORK/run/$KEY.record" || fail "record: STATE"
    assert_contains "$err" "$KEY: snapshot snap-0abc stores 48.0 MiB of the volume's 256.0 MiB: reading only those blocks" "journal line"
    assert_contains "$out" "$KEY: hydrated, read 48.0 MiB in " "summary"
    assert_contains "$out" "48.0 MiB stored in the snapshot, the rest of the 256.0 MiB volume left unread (empty)" "summary"
    assert_le "$stored" "$read" "sectors read: every stored block"
    # and no more than what probing the device for partitions and file systems reads (4 MiB)
    assert_le "$read" $((stored + 8192)) "sectors read: the stored blocks and the probes"
    out=$(hydrate "$dev") || fail "second run exited $?"
    assert_contains "$out" "already hydrated" "second run"
}

# The list arrives mid-run: what is read already stays read, the empty chunks not read yet
# are dropped, and the run ends with the stored blocks.
case_blocks_mid_run() {
    local dev before total pid rc=0 read out
    dev=$(make_loop 256M)
    total=$(device_sectors "$dev")
    before=$(sectors_read "$dev")
    start_hydrate --rate-limit=16M "$dev" # 16 s for the device
    pid=$DPID
    findings SOURCE=snapshot SNAPSHOT_ID=snap-0abc FAST_RESTORED=no
    # The data waits up to 3 s for the list (the helper lists right after these findings);
    # here it comes later, when reading has begun.
    # (Waited for, not slept: under valgrind the start alone can take seconds.)
    wait_for 30 grep -qF "$KEY: the snapshot's block list not there within 3 s: hydrating until it comes" "$WORK/err" ||
        fail "the wait: not said within 30 s: $(cat "$WORK/err")"
    sleep 0.5 # reading has begun
    blocks 512 snap-0abc 0-31 384-399
    findings SOURCE=snapshot SNAPSHOT_ID=snap-0abc FAST_RESTORED=no BLOCKS_STORED=48
    wait_for 10 gone "$pid" || fail "the run did not end within 10 s of the list"
    wait "$pid" || rc=$?
    assert_eq "$rc" 0 "exit status"
    out=$(cat "$WORK/out")
    read=$(($(sectors_read "$dev") - before))
    echo "read $read of $total sectors"
    assert_contains "$out" "hydrated, read" "summary"
    assert_contains "$out" "stored in the snapshot" "summary"
    assert_le "$read" $((total / 3)) "sectors read"
    # the findings came twice (without the list, then with it): said once
    [ "$(grep -c "AWS: restored from snap-0abc" "$WORK/err")" -eq 1 ] || fail "noted more than once"
    out=$(hydrate "$dev") || fail "second run exited $?"
    assert_contains "$out" "already hydrated" "second run"
}

# A list the findings do not vouch for (another snapshot's, another count, another user's),
# or none to be had: said once, and every block is read.
case_blocks_not_believed() {
    local dev out err
    dev=$(make_loop 32M)
    blocks 64 snap-0fff 0-3
    findings SOURCE=snapshot SNAPSHOT_ID=snap-0abc FAST_RESTORED=no BLOCKS_STORED=4
    out=$(hydrate "$dev" 2>"$WORK/err") || fail "run exited $?"
    err=$(cat "$WORK/err")
    assert_contains "$err" "ignoring $EBS_HYDRATE_AWS_DIR/$KEY.blocks: not the list of the findings' snapshot; every block is read" "another snapshot's"
    assert_contains "$out" "hydrated, read 32.0 MiB of 32.0 MiB" "summary"
    rm -f "$STATE/$KEY.state"
    blocks 64 snap-0abc 0-3
    chown nobody "$EBS_HYDRATE_AWS_DIR/$KEY.blocks"
    out=$(hydrate "$dev" 2>"$WORK/err") || fail "run exited $?"
    assert_contains "$(cat "$WORK/err")" "owned by another user than root and ebs-hydrate-aws; every block is read" "planted"
    assert_contains "$out" "hydrated, read 32.0 MiB of 32.0 MiB" "summary"
    rm -f "$STATE/$KEY.state" "$EBS_HYDRATE_AWS_DIR/$KEY.blocks"
    findings SOURCE=snapshot SNAPSHOT_ID=snap-0abc FAST_RESTORED=no \
        "BLOCKS_ERROR=EBS answered HTTP 403: AccessDeniedException"
    out=$(hydrate "$dev" 2>"$WORK/err") || fail "run exited $?"
    err=$(cat "$WORK/err")
    assert_contains "$err" "$KEY: the snapshot's block list could not be had (EBS answered HTTP 403: AccessDeniedException): every block is read" "no list"
    [ "$(grep -c "block list could not be had" "$WORK/err")" -eq 1 ] || fail "said more than once"
    assert_contains "$out" "hydrated, read 32.0 MiB of 32.0 MiB" "summary"
}

# The helper's directory is there, its word not yet: the metadata (here, a device without a
# file system, only what probing reads) is read at once, the data waits for the word (a volume
# created empty is then read no further) or for 3 s at most.
case_first_word_waits() {
    local dev before pid rc=0 read out
    dev=$(make_loop 256M)
    before=$(sectors_read "$dev")
    start_hydrate "$dev"
    pid=$DPID
    sleep 1.5
    read=$(($(sectors_read "$dev") - before))
    echo "read $read sectors in 1.5 s without AWS's word"
    # what the mapping tells ahead of libblkid's probes (5 MiB at the start, 2 at the end) and
    # the probes' own reads through the page cache (4 MiB at most): 11 MiB
    assert_le "$read" 22528 "sectors read before the word (11 MiB of probes)"
    # a snapshot's findings without the block list are not yet the word: the list comes next
    findings SOURCE=snapshot SNAPSHOT_ID=snap-0abc FAST_RESTORED=no
    sleep 1
    read=$(($(sectors_read "$dev") - before))
    assert_le "$read" 22528 "sectors read before the list"
    findings SOURCE=empty FAST_RESTORED=unknown
    wait_for 5 gone "$pid" || fail "the run did not end after the word"
    wait "$pid" || rc=$?
    assert_eq "$rc" 0 "exit status"
    assert_contains "$(cat "$WORK/out")" "complete without reading: created empty" "summary"
    read=$(($(sectors_read "$dev") - before))
    assert_le "$read" 22528 "sectors read in all"
    # No word at all: after the wait, hydrated as before, said once.
    rm -f "$EBS_HYDRATE_AWS_DIR/$KEY.aws" "$STATE/$KEY.state"
    out=$(hydrate "$dev" 2>"$WORK/err") || fail "run exited $?"
    assert_contains "$(cat "$WORK/err")" "$KEY: no word from ebs-hydrate-aws within 3 s: hydrating without it" "the wait's end"
    assert_contains "$out" "hydrated, read 256.0 MiB of 256.0 MiB" "summary"
    # Aws=no: no wait.
    rm -f "$STATE/$KEY.state"
    out=$(hydrate --aws=no "$dev" 2>"$WORK/err") || fail "run exited $?"
    assert_not_contains "$(cat "$WORK/err")" "no word from" "Aws=no"
}

run_case
