#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Many volumes at once, and a machine short of asynchronous I/O contexts.
#   sixteen     16 cold rig volumes hydrated by 16 instances at the same time: every one
#               completes, qemu's overlays prove every byte was read, and the test reports the
#               CPU time and peak memory of each instance.
#   aio-max-nr  fs.aio-max-nr lowered so that io_setup() fails with EAGAIN: QueueDepth=auto
#               makes do with a smaller depth; when nothing fits, the run waits with a STATUS=
#               that names the sysctl and starts by itself once there is room.
# Usage: load.sh CASE PATH-TO-ebs-hydrated
CASES=(sixteen aio-max-nr)
. "$(dirname "$0")/cases.sh"
. "$(dirname "$0")/lib.sh"
require_root

DAEMON=$(wrapped "$2")
RIG="$(cd "$(dirname "$0")/../lab" && pwd)/ebs-rig"
STATE="$WORK/state"
mkdir -p "$STATE"
chmod 0700 "$STATE"

hydrate() {
    "$DAEMON" --no-bus --state-dir="$STATE" --config-dir="$WORK" --progress=never "$@"
}

case_sixteen() {
    local n=16 i name pids=() devs=() rc total_read=0 start secs
    NAMES=() # global: the EXIT trap tears these down after this function has returned
    command -v qemu-storage-daemon >/dev/null || { echo "SKIP: qemu-storage-daemon missing" >&2; exit 77; }
    [ -e /dev/fuse ] || { echo "SKIP: no /dev/fuse" >&2; exit 77; }
    [ -x /usr/bin/time ] || { echo "SKIP: GNU time (/usr/bin/time) missing" >&2; exit 77; }
    trap 'for v in "${NAMES[@]}"; do "$RIG" down "$v" >/dev/null 2>&1 || true; done; cleanup' EXIT
    for i in $(seq 1 $n); do
        name="ld$i-$$"
        NAMES+=("$name")
        devs+=("$("$RIG" up "$name" --profile seed --size 128M 2>/dev/null)")
    done
    start=$SECONDS
    for i in $(seq 0 $((n - 1))); do
        # GNU time: wall seconds, user and system CPU seconds, peak RSS in KiB
        /usr/bin/time -o "$WORK/time.$i" -f '%e %U %S %M' \
            "$DAEMON" --no-bus --state-dir="$STATE" --config-dir="$WORK" --progress=never \
            --state-key="${NAMES[$i]}" "${devs[$i]}" >"$WORK/out.$i" 2>&1 &
        pids+=($!)
    done
    for i in $(seq 0 $((n - 1))); do
        rc=0
        wait "${pids[$i]}" || rc=$?
        [ "$rc" -eq 0 ] || fail "instance $i (${devs[$i]}) exited $rc: $(cat "$WORK/out.$i")"
    done
    secs=$((SECONDS - start))
    printf '%-10s %-12s %8s %8s %8s %10s %9s\n' instance device wall_s user_s sys_s peak_rss hydrated
    for i in $(seq 0 $((n - 1))); do
        read -r wall user sys rss <"$WORK/time.$i"
        hyd=$("$RIG" hydrated "${NAMES[$i]}" | awk '{ print $3 }')
        printf '%-10s %-12s %8s %8s %8s %7s KiB %8s%%\n' "$i" "${devs[$i]}" "$wall" "$user" "$sys" "$rss" "$hyd"
        assert_eq "$("$RIG" hydrated "${NAMES[$i]}" | awk '{ print $1 }')" $((128 << 20)) \
            "bytes in the overlay of instance $i"
        # Issue 4's memory bound holds with 15 neighbours too (not measurable under valgrind,
        # nor under a sanitizer: ASan's shadow and quarantine put it at 15.6-16.0 MiB).
        [ -n "${EBS_HYDRATE_WRAPPER:-}" ] || [ -n "${EBS_HYDRATE_SANITIZER:-}" ] ||
            assert_le "$rss" $((16 * 1024)) "peak RSS of instance $i in KiB"
        total_read=$((total_read + 128))
    done
    awk '{ u += $2; s += $3; m += $4 } END { printf "per instance: %.2f s CPU (user+sys), %.1f MiB peak RSS on average\n", (u + s) / NR, m / NR / 1024 }' "$WORK"/time.*
    echo "$n volumes, $total_read MiB in $secs s"
}

case_aio_max_nr() {
    local dev sock log listener pid rc=0 used out
    OLD_AIO_MAX_NR=$(cat /proc/sys/fs/aio-max-nr)
    local old=$OLD_AIO_MAX_NR
    echo "$old" >/proc/sys/fs/aio-max-nr 2>/dev/null || { echo "SKIP: cannot write fs.aio-max-nr" >&2; exit 77; }
    trap 'echo "$OLD_AIO_MAX_NR" >/proc/sys/fs/aio-max-nr; cleanup' EXIT
    dev=$(make_loop 256M)

    # Room for 8 reads but not 16 (what auto wants on 256 MiB): it makes do with 8.
    used=$(cat /proc/sys/fs/aio-nr)
    echo $((used + 8)) >/proc/sys/fs/aio-max-nr
    out=$(hydrate --state-key=a1 "$dev" 2>&1) || fail "run with room for 8 reads exited $?: $out"
    echo "$out"
    echo "$old" >/proc/sys/fs/aio-max-nr
    assert_contains "$out" "asynchronous I/O set up, queue depth up to 8" "log"
    assert_contains "$out" "a1: hydrated" "summary"

    # No room at all: the run waits, says why, and goes on once there is room.
    sock="$WORK/notify.sock"
    log="$WORK/notify.log"
    python3 "$(dirname "$0")/notify-listener.py" "$sock" "$log" 60 &
    listener=$!
    wait_for 5 test -S "$sock" || fail "notify listener did not start"
    cat /proc/sys/fs/aio-nr >/proc/sys/fs/aio-max-nr
    NOTIFY_SOCKET="$sock" hydrate --state-key=a2 "$dev" >"$WORK/out" 2>&1 &
    pid=$!
    wait_for 10 grep -q '^STATUS=a2: 0.0% hydrated (of 256.0 MiB); waiting for asynchronous I/O: fs.aio-max-nr is used up, trying again every 5 s$' "$log" ||
        { echo "$old" >/proc/sys/fs/aio-max-nr; fail "no STATUS= about fs.aio-max-nr: $(cat "$log")"; }
    grep -qx 'READY=1' "$log" || fail "no READY=1 while waiting"
    kill -0 "$pid" 2>/dev/null || fail "the daemon exited instead of waiting: $(cat "$WORK/out")"
    echo "$old" >/proc/sys/fs/aio-max-nr
    wait "$pid" || rc=$?
    kill "$listener" 2>/dev/null || true
    cat "$WORK/out"
    assert_eq "$rc" 0 "exit status once there was room"
    assert_contains "$(cat "$WORK/out")" "fs.aio-max-nr sysctl allows is used up by other processes; trying again every 5 s" "log"
    assert_contains "$(cat "$WORK/out")" "asynchronous I/O set up after waiting for fs.aio-max-nr" "log"
    assert_eq "$(tail -n 1 "$log")" "STATUS=a2: hydrated (256.0 MiB)" "final STATUS="
}

run_case
