# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Shared helpers for the integration tests: temporary loop devices, sector counters from
# /sys/block/<dev>/stat (the kernel's independent count of what was read), and assertions.

set -euo pipefail

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# skip REASON: the test cannot run here (ctest reports it skipped)
skip() {
    echo "SKIP: $*" >&2
    exit 77
}

require_root() {
    if [ "$(id -u)" -ne 0 ] || ! [ -e /dev/loop-control ]; then
        echo "SKIP: needs root and loop devices" >&2
        exit 77
    fi
}

WORK=$(mktemp -d /var/tmp/ebs-hydrate-test.XXXXXX)
# The daemons the tests start keep their volume records here, not in the machine's
# /run/ebs-hydrate (tests/integration/wait.sh sets its own).
export RUNTIME_DIRECTORY="$WORK/run"

# $EBS_HYDRATE_WRAPPER: a command, words separated by ';', that the programs under test run
# under, such as valgrind and its options (EBS_HYDRATE_TEST_WRAPPER in tests/CMakeLists.txt).
# Scripts take their program paths through wrapped(). Reports of a valgrind wrapper go to
# $WRAP_DIR/log, and cleanup fails the test if any holds an error: also those of runs whose exit
# status a test ignores (a daemon stopped at the end, say).
WRAP_DIR=
if [ -n "${EBS_HYDRATE_WRAPPER:-}" ]; then
    WRAP_DIR=$(mktemp -d /var/tmp/ebs-hydrate-wrap.XXXXXX)
    chmod 0755 "$WRAP_DIR" # as_nobody runs wrapped programs too
    mkdir -m 1777 "$WRAP_DIR/log"
    export VALGRIND_OPTS="${VALGRIND_OPTS:-} --log-file=$WRAP_DIR/log/%p.log --error-markers=VGERROR-BEGIN,VGERROR-END"
fi

# wrapped PROGRAM: the path to run PROGRAM by. Under a wrapper, a script in $WRAP_DIR that execs
# the wrapper on PROGRAM: the PID that a test waits for, signals and kills stays the program's
# (valgrind runs the program in its own process, it does not fork). Every ebs-hydrate* program
# beside PROGRAM gets one too, so that $(dirname "$(wrapped ...)") still finds its siblings.
wrapped() {
    local wrapper program
    if [ -z "$WRAP_DIR" ]; then
        echo "$1"
        return
    fi
    IFS=';' read -ra wrapper <<<"$EBS_HYDRATE_WRAPPER"
    for program in "$(dirname "$1")"/ebs-hydrate*; do
        [ -x "$program" ] && [ -f "$program" ] || continue
        printf '#!/bin/bash\nexec %s %q "$@"\n' "$(printf '%q ' "${wrapper[@]}")" \
            "$(realpath "$program")" >"$WRAP_DIR/$(basename "$program")"
        chmod 0755 "$WRAP_DIR/$(basename "$program")"
    done
    echo "$WRAP_DIR/$(basename "$1")"
}

# wrapper_errors: print the wrapper's error reports; false if there were none
wrapper_errors() {
    local log found=1
    [ -n "$WRAP_DIR" ] || return 1
    for log in "$WRAP_DIR"/log/*.log; do
        [ -e "$log" ] && grep -q VGERROR-BEGIN "$log" || continue
        echo "== errors reported by the wrapper in $(basename "$log"):" >&2
        cat "$log" >&2
        found=0
    done
    return "$found"
}

# Loop devices are found by backing file: make_loop runs in $(...), so it cannot record them.
cleanup() {
    local img l wrapper_failed=
    wrapper_errors && wrapper_failed=1
    [ -z "$WRAP_DIR" ] || rm -rf "$WRAP_DIR"
    for img in "$WORK"/*.img "$WORK"/img.*; do
        [ -e "$img" ] || continue
        for l in $(losetup -j "$img" | cut -d: -f1); do losetup -d "$l" 2>/dev/null || true; done
    done
    # A test that failed between its mount and its umount (a small tmpfs as the state
    # directory) leaves it mounted: rm -rf would stop at it, and the mount would outlive us.
    awk -v w="$WORK/" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r |
        while read -r m; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
    rm -rf "$WORK"
    [ -z "$wrapper_failed" ] || fail "the wrapper ($EBS_HYDRATE_WRAPPER) reported errors"
}
trap cleanup EXIT

# loop_attach [losetup options...] FILE: losetup -f --show, but coping with a free loop device
# whose node is missing from /dev (tests/tools/loop-attach)
loop_attach() {
    "$(dirname "${BASH_SOURCE[0]}")/../tools/loop-attach" "$@"
}

# make_loop SIZE [losetup options...]: a read-only, direct-I/O loop device over a sparse file
make_loop() {
    local size=$1 img
    shift
    img=$(mktemp "$WORK/img.XXXXXX")
    truncate -s "$size" "$img"
    loop_attach --direct-io=on --read-only "$@" "$img"
}

# sectors_read DEV: 512-byte sectors read from DEV. The count survives detaching and
# re-attaching the same loop number: compare before and after, never use it absolutely.
sectors_read() {
    awk '{ print $3 }' "/sys/block/$(basename "$1")/stat"
}

# discovery_sectors DEV: how many sectors ebs-hydrated's file system discovery reads of DEV before
# it hydrates (libblkid's probes, buffered: the kernel drops them from the page cache when the
# device is last closed, so every run reads them again), measured with the same library code
# (tests/tools/fslayout-dump, whose path CMake passes). Each run of the daemon that gets past its
# checks reads this many sectors on top of what it hydrates.
# The kernel's count is of the device, not of one process: anything else that reads it at the
# same moment (a udev probe of a loop device just attached, say; one CI run counted 8 sectors
# more than every run before) is counted too. So the probe is repeated until two runs in a row
# agree, at most four times; a count that never settles is returned as the smallest seen.
discovery_sectors() {
    local before n last= min=
    if [ -z "${EBS_HYDRATE_FSLAYOUT_DUMP:-}" ]; then
        echo 0
        return
    fi
    for _ in 1 2 3 4; do
        before=$(sectors_read "$1")
        "$EBS_HYDRATE_FSLAYOUT_DUMP" --summary "$1" >/dev/null 2>&1 || true
        n=$(($(sectors_read "$1") - before))
        if [ "$n" = "$last" ]; then
            echo "$n"
            return
        fi
        [ -n "$min" ] && [ "$min" -le "$n" ] || min=$n
        last=$n
    done
    echo "$min"
}

device_sectors() {
    blockdev --getsz "$1"
}

assert_eq() {
    [ "$1" = "$2" ] || fail "$3: expected '$2', got '$1'"
}

assert_contains() {
    grep -qF -- "$2" <<<"$1" || fail "$3: output does not contain '$2': $1"
}

# assert_not_contains TEXT NEEDLE WHAT
assert_not_contains() {
    ! grep -qF -- "$2" <<<"$1" || fail "$3: output contains '$2': $1"
}

# assert_le A B WHAT: integer A <= B
assert_le() {
    [ "$1" -le "$2" ] || fail "$3: $1 > $2"
}

# expect_exit CODE WHAT CMD...: run CMD, check its exit status, print its stdout and stderr
expect_exit() {
    local want=$1 what=$2 rc=0 out
    shift 2
    out=$("$@" 2>&1) || rc=$?
    assert_eq "$rc" "$want" "exit status for $what"
    echo "$out"
}

# wait_for SECONDS CMD...: poll CMD every 0.1 s until it succeeds; fails after SECONDS
wait_for() {
    local deadline=$((SECONDS + $1))
    shift
    until "$@"; do
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.1
    done
}

# lock_held FILE: someone holds a lock on FILE (/proc/locks names its device and inode)
lock_held() {
    local dev ino
    read -r dev ino < <(stat -c '%d %i' "$1" 2>/dev/null) || return 1
    awk -v m="$(printf '%02x:%02x:%d' $((dev >> 8)) $((dev & 255)) "$ino")" \
        '$0 ~ ("[ ]" m "[ ]") { found = 1 } END { exit !found }' /proc/locks
}

# as_nobody CMD...: run CMD as uid/gid 65534 with no supplementary groups
as_nobody() {
    setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}

# kill_at_percent PERCENT DEV BASE CMD...: start CMD in the background, SIGKILL it as soon as
# the kernel has counted PERCENT of DEV read since BASE (a sectors_read value), and check that
# it died by the signal before reading everything. CMD runs directly, not through a shell
# function, so that the PID killed is the daemon's and not a subshell's.
kill_at_percent() {
    local percent=$1 dev=$2 base=$3 total pid read_now rc=0
    shift 3
    total=$(device_sectors "$dev")
    "$@" >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 1 3000); do
        read_now=$(($(sectors_read "$dev") - base))
        [ "$read_now" -ge $((total * percent / 100)) ] && break
        sleep 0.01
    done
    kill -9 "$pid"
    wait "$pid" || rc=$?
    assert_eq "$rc" 137 "killed run's exit status"
    read_now=$(($(sectors_read "$dev") - base))
    [ "$read_now" -lt "$total" ] || fail "the killed run had already read everything"
    echo "killed with $((read_now * 100 / total))% read"
}
