#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Crash consistency of the checkpoint, on the cold-EBS rig (tests/lab/ebs-rig): SIGKILL at
# random moments, power cuts of the state's file system (ext4 on a loop image, shut down with
# EXT4_IOC_SHUTDOWN without a journal flush) and a final save that fails. After every crash the
# state file must decode (never set aside), must not mark more bytes done than the kernel had
# counted read when it was saved, and every chunk it marks done must be in qemu's copy-on-read
# overlay, the independent witness of what was read; every restart loads it, and the last run
# completes.
# Usage: crash.sh CASE PATH-TO-ebs-hydrated PATH-TO-state-dump
# EBS_HYDRATE_LONG_TESTS=1 crashes hundreds of times instead of the CI-sized few; under a
# sanitizer or a wrapper (valgrind) a third as many: there each crash checks the same load and
# save code for memory errors, and the plain pass covers the spread of crash moments;
# EBS_HYDRATE_CRASH_SEED=N replays the crash moments of an earlier run (each run prints its seed).
CASES=(sigkill-loop sigkill-eio power-cut save-fails)
. "$(dirname "$0")/cases.sh"
. "$(dirname "$0")/lib.sh"
require_root

DAEMON=$(wrapped "$2")
DUMP=$3
HERE=$(cd "$(dirname "$0")" && pwd)
RIG="$HERE/../lab/ebs-rig"
CRASH_AT="$HERE/crash-at.py"
NAME="crash-$CASE-$$" # the rig volume, and the state key
STATE="$WORK/state"
MNT="$WORK/statefs"
LONG=${EBS_HYDRATE_LONG_TESTS:-0}
CHECKED=0 # built with a sanitizer or run under a wrapper
[ -z "${EBS_HYDRATE_WRAPPER:-}${EBS_HYDRATE_SANITIZER:-}" ] || CHECKED=1
# crashes PLAIN LONG: how many crashes a case aims for (see above)
crashes() {
    if [ "$LONG" = 1 ]; then
        echo "$2"
    elif [ "$CHECKED" = 1 ]; then
        echo $(((${1} + 2) / 3))
    else
        echo "$1"
    fi
}
command -v qemu-storage-daemon >/dev/null || { echo "SKIP: qemu-storage-daemon missing" >&2; exit 77; }
[ -e /dev/fuse ] || { echo "SKIP: no /dev/fuse" >&2; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing" >&2; exit 77; }

SEED=${EBS_HYDRATE_CRASH_SEED:-$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')}
RANDOM=$SEED
echo "seed $SEED (replay with EBS_HYDRATE_CRASH_SEED=$SEED)"

teardown() {
    if mountpoint -q "$MNT" 2>/dev/null; then umount "$MNT" || umount -l "$MNT" || true; fi
    "$RIG" down "$NAME" >/dev/null 2>&1 || true
    cleanup
}
trap teardown EXIT
mkdir -p "$WORK/conf"

DAEMON_ARGS=()
DEV=""
SIZE=0
BASE=0
PREV_DONE=0 # done bytes in the state the next run loads
HAD_STATE=0 # is there a state file for it to load?
RUNS=0
TRIALS=0
VERDICT=""
FINISHED=0   # the exit status of a run that finishes
BAD_CHUNK="" # the offset of the chunk that cannot be read, if any

# volume_up SIZE [ebs-rig up options]: a fresh cold volume; the state starts over.
volume_up() {
    "$RIG" down "$NAME" >/dev/null 2>&1 || true
    DEV=$("$RIG" up "$NAME" --profile seed --size "$@")
    SIZE=$(blockdev --getsize64 "$DEV")
    BASE=$(sectors_read "$DEV") # the kernel's counters survive re-attaching a loop number
    [ -d "$STATE" ] || mkdir -m 0700 "$STATE" # watched for checkpoints before the first run
    rm -f "$STATE/$NAME".*
    sync -f "$STATE" # a power cut must not bring back the last trial's state
    PREV_DONE=0 HAD_STATE=0
    TRIALS=$((TRIALS + 1))
    DAEMON_ARGS=(--no-bus --state-dir="$STATE" --config-dir="$WORK/conf" --progress=never
        --state-key="$NAME" "$DEV")
}

# permille BYTES: "12.3%" as the daemon prints it (rounded down)
permille() {
    awk -v d="$1" -v s="$SIZE" 'BEGIN { p = d >= s ? 1000 : int(d * 1000 / s); printf "%d.%d%%", p / 10, p % 10 }'
}

# check_log LOG: the run loaded the state it was given, without a word about damage.
check_log() {
    local out word
    out=$(cat "$1")
    for word in corrupt "set aside" "kept as" "starting over" "unsupported version"; do
        assert_not_contains "$out" "$word" "log of run $RUNS"
    done
    if grep -q "^.*Hydrating .* from " <<<"$out"; then
        assert_contains "$out" "($NAME) from $(permille "$PREV_DONE")," "resume point of run $RUNS"
    fi
}

# check_state WHAT: the state file decodes (or there is none yet), went no further back than
# the state the run started from, was never set aside, and every chunk it marks done is
# hydrated in the overlay. And it marks no more bytes done than the device had finished
# reading when it was saved: the kernel counts a read as it completes, before the daemon
# learns of it, and crash-at.py samples that count as each save lands and at the crash; the
# first sample taken after the state's "updated" time bounds what it may mark done. Sets
# PREV_DONE for the next run.
check_state() {
    local what=$1 rc=0 done_bytes updated bad completed
    "$DUMP" "$STATE/$NAME.state" >"$WORK/dump" 2>"$WORK/dump.err" || rc=$?
    if ls "$STATE/$NAME".state.* >/dev/null 2>&1; then
        fail "$what: a state file was set aside: $(ls "$STATE")"
    fi
    if [ "$rc" -eq 3 ] && [ "$HAD_STATE" = 0 ]; then
        return 0 # crashed before its first save reached the disk
    fi
    [ "$rc" -eq 0 ] || fail "$what: the state file does not decode (state-dump exit $rc): $(cat "$WORK/dump.err")"
    done_bytes=$(awk '$1 == "done-bytes" { print $2 }' "$WORK/dump")
    assert_le "$PREV_DONE" "$done_bytes" "$what: done bytes (the run started from $PREV_DONE)"
    updated=$(awk '$1 == "updated" { print $2 }' "$WORK/dump")
    completed=$(sort -n "$WORK/sectors" | awk -v t="$updated" -v base="$BASE" \
        '$1 >= t { printf "%.0f", ($2 - base) * 512; exit }')
    [ -n "$completed" ] || fail "$what: no count of sectors read after the state's last save"
    assert_le "$done_bytes" "$completed" "$what: bytes marked done vs bytes whose reads had completed when it was saved"
    "$RIG" map "$NAME" >"$WORK/map" 2>/dev/null || fail "$what: ebs-rig map failed"
    # Both lists are sorted and the map's ranges are merged: each done range must lie inside
    # one hydrated range.
    bad=$(awk 'NR == FNR { s[n] = $1; e[n] = $1 + $2; n++; next }
        $1 == "done" {
            o = $2; end = $2 + $3
            while (i < n && e[i] <= o) i++
            if (i >= n || s[i] > o || e[i] < end) { printf "%.0f-%.0f", o, end - 1; exit }
        }' "$WORK/map" "$WORK/dump")
    [ -z "$bad" ] || fail "$what: bytes $bad are marked done but not hydrated in the overlay
state: $(grep -c '^done ' "$WORK/dump") done ranges; overlay: $(tr '\n' ' ' <"$WORK/map")"
    PREV_DONE=$done_bytes HAD_STATE=1
}

# check_complete: the last run hydrated everything but the bad chunk (BAD_CHUNK, a byte
# offset, or "" for none), and state and overlay agree.
check_complete() {
    local hydrated dump want=$SIZE
    "$DUMP" "$STATE/$NAME.state" >"$WORK/dump" || fail "final state does not decode"
    dump=$(cat "$WORK/dump")
    if [ -n "$BAD_CHUNK" ]; then
        want=$((SIZE - 524288))
        assert_contains "$dump" "complete no" "final state"
        assert_contains "$dump" "bad $BAD_CHUNK 524288" "final state's unreadable range"
    else
        assert_contains "$dump" "complete yes" "final state"
    fi
    assert_contains "$dump" "done-bytes $want" "final state"
    hydrated=$("$RIG" hydrated "$NAME" 2>/dev/null | awk '{ print $1 }')
    assert_eq "$hydrated" "$want" "bytes in the overlay at the end"
}

# pick_moment: crash-at.py options for a random crash moment, from $RANDOM (seeded): early
# (0-40 ms: start-up, configuration, state load, lock), at a checkpoint save (the Nth one, as
# the temporary file appears, once it is synced, or just after the rename) or anywhere (40 ms
# to 1.5 s).
pick_moment() {
    local r=$((RANDOM % 10)) ms events=(create close rename)
    if [ "$r" -lt 2 ]; then
        ms=$((RANDOM % 40))
    elif [ "$r" -lt 5 ]; then
        echo "--checkpoint $((1 + RANDOM % 6)) --event ${events[RANDOM % 3]}"
        return
    else
        ms=$((40 + RANDOM % 1460))
    fi
    printf -- '--delay %d.%03d\n' $((ms / 1000)) $((ms % 1000))
}

# crash_run [crash-at.py options]: one run of the daemon, crashed at a random moment; sets
# VERDICT to crash-at's ("killed MS" or "exited STATUS MS", " cut" after a power cut).
crash_run() {
    local moment
    moment=$(pick_moment)
    RUNS=$((RUNS + 1))
    : >"$WORK/run.log"
    rm -f "$WORK/sectors"
    # shellcheck disable=SC2086 # moment is a list of options
    VERDICT=$(python3 "$CRASH_AT" $moment "$@" --dir "$STATE" --key "$NAME" --stat "$DEV" \
        --stat-out "$WORK/sectors" --log "$WORK/run.log" -- "$DAEMON" "${DAEMON_ARGS[@]}") ||
        fail "crash-at.py failed"
    check_log "$WORK/run.log"
    echo "trial $TRIALS, run $RUNS from $(permille "$PREV_DONE"), $moment: $VERDICT"
}

# final_run: restart without a crash; it must finish (exit 0, or 3 with a bad chunk).
final_run() {
    local rc=0
    RUNS=$((RUNS + 1))
    "$DAEMON" "${DAEMON_ARGS[@]}" >"$WORK/run.log" 2>&1 || rc=$?
    cat "$WORK/run.log"
    assert_eq "$rc" "$FINISHED" "exit status of the last run"
    check_log "$WORK/run.log"
}

# kill_loop TARGET SIZE [ebs-rig up options]: SIGKILL runs on fresh cold volumes until TARGET
# kills; on each volume the runs go on until one finishes (exit FINISHED), then check_complete.
kill_loop() {
    local target=$1 kills=0 t0=$SECONDS
    shift
    while [ "$kills" -lt "$target" ]; do
        volume_up "$@"
        VERDICT=""
        while [ "$kills" -lt "$target" ]; do
            crash_run
            case $VERDICT in
            killed*)
                kills=$((kills + 1))
                check_state "kill $kills"
                ;;
            "exited $FINISHED "*) break ;;
            *) fail "run $RUNS: $VERDICT; its log: $(cat "$WORK/run.log")" ;;
            esac
        done
        [[ $VERDICT == "exited $FINISHED "* ]] || final_run
        check_complete
    done
    echo "$kills kills in $TRIALS trials, $RUNS runs, $((SECONDS - t0)) s: no state lost or set aside, every done chunk hydrated"
}

case_sigkill_loop() {
    # 8 s of reading at 32 MiB/s: a few dozen crashes fit in one volume.
    kill_loop "$(crashes 25 300)" 256M --bps 32M
}

# The same with a snapshot block that cannot be fetched: crashes land while it waits for its
# retries (0.1, 0.4, 1.6 s), and it must never be saved as done.
case_sigkill_eio() {
    local sector=$((RANDOM * 8 % (128 * 2048)))
    BAD_CHUNK=$((sector * 512 / 524288 * 524288))
    FINISHED=3
    kill_loop "$(crashes 10 100)" 128M --bps 32M --eio-sector "$sector" \
        --eio-layer backing
}

# statefs_up: the state directory on a fresh ext4 file system of its own (a loop image).
# noauto_da_alloc: ext4 does not flush a file replaced by rename on its own, as other file
# systems do not: only the daemon's own fsyncs make a save durable.
statefs_up() {
    command -v mkfs.ext4 >/dev/null || { echo "SKIP: mkfs.ext4 missing" >&2; exit 77; }
    truncate -s 64M "$WORK/statefs.img"
    mkfs.ext4 -q -F "$WORK/statefs.img"
    mkdir -p "$MNT"
    mount -o loop,noauto_da_alloc "$WORK/statefs.img" "$MNT" ||
        fail "mount -o loop of an ext4 image failed on kernel $(uname -r)"
    STATE="$MNT/state"
    mkdir -m 0700 "$STATE"
}

# power_restored: unmount the shut-down file system and mount it again (journal recovery).
power_restored() {
    umount "$MNT" || fail "umount after the power cut failed"
    mount -o loop,noauto_da_alloc "$WORK/statefs.img" "$MNT" || fail "mount after the power cut failed"
}

case_power_cut() {
    local target cuts=0 t0=$SECONDS
    target=$(crashes 12 150)
    statefs_up
    while [ "$cuts" -lt "$target" ]; do
        volume_up 256M --bps 32M
        VERDICT=""
        while [ "$cuts" -lt "$target" ]; do
            # After the cut the daemon runs on for up to 0.2 s: its saves fail.
            crash_run --shutdown "$MNT" --after "0.$(printf %03d $((RANDOM % 200)))"
            case $VERDICT in
            *" cut")
                cuts=$((cuts + 1))
                [[ $VERDICT =~ ^(killed|exited\ [01])\  ]] ||
                    fail "run $RUNS ended with '$VERDICT' after the power cut: $(cat "$WORK/run.log")"
                power_restored
                check_state "power cut $cuts"
                # Exit 0 said "complete": that save was durable before the cut. A run that
                # finished after the cut could not save, and failed (exit 1).
                if [[ $VERDICT == "exited 0 "* ]]; then
                    assert_contains "$(cat "$WORK/dump")" "complete yes" "state of a run that completed"
                    break
                fi
                ;;
            "exited 0 "*) break ;;
            *) fail "run $RUNS: $VERDICT; its log: $(cat "$WORK/run.log")" ;;
            esac
        done
        [[ $VERDICT == "exited 0 "* ]] || final_run
        check_complete
    done
    echo "$cuts power cuts in $TRIALS trials, $RUNS runs, $((SECONDS - t0)) s: every state decoded, none went back, every done chunk hydrated"
}

# The state's file system dies during a run that then reads everything: the final save fails,
# so the run fails (exit 1), not "complete"; after the power comes back a restart completes.
case_save_fails() {
    local verdict out
    statefs_up
    volume_up 64M
    RUNS=1
    # At the second save: the first one is durable, so the state on disk is not complete.
    verdict=$(python3 "$CRASH_AT" --checkpoint 2 --event create --dir "$STATE" --key "$NAME" \
        --shutdown "$MNT" --after 60 --stat "$DEV" --stat-out "$WORK/sectors" --log "$WORK/run.log" \
        -- "$DAEMON" "${DAEMON_ARGS[@]}")
    out=$(cat "$WORK/run.log")
    echo "$verdict"
    echo "$out"
    [[ $verdict == "exited 1 "*" cut" ]] || fail "expected the run to fail on its own after the cut, got '$verdict'"
    assert_contains "$out" "Failed to save state file $NAME.state: Input/output error" "log"
    assert_contains "$out" "hydration failed at 100.0%: Input/output error; the state file could not be saved" "log"
    assert_not_contains "$out" "progress saved" "log"
    assert_not_contains "$out" "hydration complete" "log"
    power_restored
    check_state "after the failed save"
    assert_contains "$(cat "$WORK/dump")" "complete no" "state after the failed final save"
    final_run
    check_complete
}

run_case
