#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ebs-hydrated on the cold-EBS rig (tests/lab/ebs-rig): qemu's copy-on-read overlay is the
# independent witness of what was really read, so a chunk marked done but never read shows up.
# Usage: rig.sh CASE PATH-TO-ebs-hydrated
. "$(dirname "$0")/lib.sh"
require_root

CASE=$1
DAEMON=$2
RIG="$(cd "$(dirname "$0")/../lab" && pwd)/ebs-rig"
NAME="it-$CASE-$$"
STATE="$WORK/state"
mkdir -p "$STATE"
command -v qemu-storage-daemon >/dev/null || { echo "SKIP: qemu-storage-daemon missing" >&2; exit 77; }
[ -e /dev/fuse ] || { echo "SKIP: no /dev/fuse" >&2; exit 77; }

trap '"$RIG" down "$NAME" >/dev/null 2>&1 || true; cleanup' EXIT

hydrate() {
    "$DAEMON" --no-bus --state-dir="$STATE" --config-dir="$WORK" --progress=never --state-key="$NAME" "$@"
}

# hydrated_percent: qemu's own count of clusters copied into the overlay
hydrated_bytes() {
    "$RIG" hydrated "$NAME" | awk '{ print $1 }'
}

case_cold_complete() {
    local dev out size base
    dev=$("$RIG" up "$NAME" --profile seed --size 256M)
    size=$(blockdev --getsize64 "$dev")
    base=$(sectors_read "$dev") # counters survive re-attaching a loop number: use deltas
    assert_eq "$(hydrated_bytes)" 0 "hydrated bytes of a fresh volume"
    out=$(hydrate "$dev") || fail "run exited $?"
    echo "$out"
    assert_eq "$(hydrated_bytes)" "$size" "bytes in the overlay after hydration"
    assert_eq $(($(sectors_read "$dev") - base)) "$(device_sectors "$dev")" "sectors read"
}

case_cold_resume_after_kill() {
    local dev total out after size base
    # What a kill costs is read again after the restart: what completed after the last
    # checkpoint (at most 0.5% of the volume) and what was in flight (QueueDepth=auto keeps at
    # most 1% of a volume in flight, at least 16 MiB). On 2 GiB that is at most 1.5%: the
    # target is "at most 2% read twice".
    dev=$("$RIG" up "$NAME" --profile seed --size 2G)
    size=$(blockdev --getsize64 "$dev")
    total=$(device_sectors "$dev")
    base=$(sectors_read "$dev") # counters survive re-attaching a loop number: use deltas
    kill_at_percent 40 "$dev" "$base" "$DAEMON" --no-bus --state-dir="$STATE" --config-dir="$WORK" \
        --progress=never --state-key="$NAME" "$dev"

    out=$(hydrate "$dev") || fail "resumed run exited $?"
    after=$(($(sectors_read "$dev") - base))
    echo "$out"
    echo "read over both runs: $((after * 1000 / total / 10)).$((after * 1000 / total % 10))% of the device"
    assert_le "$after" $((total * 102 / 100)) "sectors read over both runs"
    assert_eq "$(hydrated_bytes)" "$size" "bytes in the overlay after the resumed run"
}

case_eio() {
    local dev out rc bad_sector=100000 bad_byte before after
    bad_byte=$((bad_sector * 512))
    # backing: the fault sits under the overlay, like a snapshot block that cannot be fetched
    dev=$("$RIG" up "$NAME" --profile warm --size 128M --eio-sector "$bad_sector" --eio-layer backing)
    rc=0
    out=$(hydrate "$dev" 2>&1) || rc=$?
    echo "$out"
    assert_eq "$rc" 3 "exit status with an unreadable range"
    assert_contains "$out" "1 unreadable range:" "summary"
    # The recorded range is the 512 KiB chunk holding the bad sector.
    local chunk_start=$((bad_byte / 524288 * 524288))
    assert_contains "$out" "$chunk_start-$((chunk_start + 524287))" "summary names the range"
    assert_contains "$out" "unreadable after 4 attempts" "log"
    # Everything else was read: the overlay holds all but the bad chunk.
    assert_eq "$(hydrated_bytes)" $(($(blockdev --getsize64 "$dev") - 524288)) "hydrated bytes"

    # A new run retries only the unreadable chunk, and still says so.
    before=$(sectors_read "$dev")
    rc=0
    out=$(hydrate "$dev" 2>&1) || rc=$?
    after=$(sectors_read "$dev")
    assert_eq "$rc" 3 "exit status of the second run"
    assert_le $((after - before)) 4096 "sectors read by the second run (the bad chunk, up to 4 attempts)"
}

case_vanish() {
    local dev pid rc=0 out
    dev=$("$RIG" up "$NAME" --profile seed --size 1G)
    "$DAEMON" --no-bus --state-dir="$STATE" --config-dir="$WORK" --progress=never --state-key="$NAME" \
        "$dev" >"$WORK/out" 2>&1 &
    pid=$!
    sleep 1.5
    "$RIG" vanish "$NAME" >/dev/null 2>&1
    wait "$pid" || rc=$?
    out=$(cat "$WORK/out")
    echo "$out"
    # A detached device is a failure with progress saved, not "finished with unreadable ranges".
    assert_eq "$rc" 1 "exit status when the device vanishes"
    assert_contains "$out" "reads in a row failed" "message"
    assert_contains "$out" "the device looks detached or broken; stopping with progress saved" "message"
    [ -f "$STATE/$NAME.state" ] || fail "no state saved"
}

"case_${CASE//-/_}"
echo "PASS: $CASE"
