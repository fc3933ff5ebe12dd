#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ebs-hydratectl wait against ebs-hydrated on real loop devices (ext4 on them, so that the plan
# has stages): a wait started before the daemon, the phases in their order, a path on the mounted
# file system, a volume already hydrated (after a "reboot" that empties the runtime directory),
# an unprivileged caller, runs that end short of the phase, a daemon stopped and started again,
# timeouts and unknown targets, and a runtime directory others could write to.
# Usage: wait.sh CASE PATH-TO-ebs-hydrated PATH-TO-state-make (ebs-hydratectl beside the first)
CASES=(started-after phase-order path btrfs-path already-hydrated unprivileged short restart
       timeout-unknown untrusted-runtime-dir progress-line ends-short-of-a-run lock-busy
       runtime-dir-replaced before-the-disk writer-gone record-on-a-full-disk overlay-path)
. "$(dirname "$0")/cases.sh"
. "$(dirname "$0")/lib.sh"
require_root

DAEMON=$(wrapped "$2")
CTL=$(wrapped "$(dirname "$2")/ebs-hydratectl")
STATE_MAKE=${3:?}
STATE="$WORK/state"
CONF="$WORK/conf"
RT="$WORK/run" # the runtime directory: readable by all, as the unit's is
mkdir -p "$STATE" "$CONF" "$RT"
chmod 0700 "$STATE"
chmod 0711 "$WORK" # nobody may reach $RT, not the state
chmod 0755 "$RT"

daemon() {
    RUNTIME_DIRECTORY=$RT "$DAEMON" --no-bus --state-dir="$STATE" --config-dir="$CONF" \
        --progress=never "$@"
}

# start_daemon OUT ARGS...: the daemon in the background, as a process of its own (not a
# subshell, which a signal would not reach), its output in OUT; its PID in $DPID
start_daemon() {
    local out=$1
    shift
    RUNTIME_DIRECTORY=$RT "$DAEMON" --no-bus --state-dir="$STATE" --config-dir="$CONF" \
        --progress=never "$@" >"$out" 2>&1 &
    DPID=$!
}

waitctl() {
    "$CTL" --runtime-dir="$RT" --state-dir="$STATE" wait "$@"
}

# make_ext4_loop SIZE: a read-only, direct-I/O loop device over a fresh ext4 image
make_ext4_loop() {
    local img
    img=$(mktemp "$WORK/img.XXXXXX")
    truncate -s "$1" "$img"
    mkfs.ext4 -q -F "$img"
    loop_attach --direct-io=on --read-only "$img"
}

record_says() { # KEY FIELD=VALUE
    grep -qxF "$2" "$RT/$1.record" 2>/dev/null
}

alive() {
    kill -0 "$1" 2>/dev/null
}

# A wait started before any daemon ran (no record yet) returns once the volume is complete, and
# not before: the record it returned on says so, and the daemon is done.
case_started_after() {
    local dev wpid dpid rc=0 out
    dev=$(make_ext4_loop 256M)
    waitctl --timeout=120 k1 >"$WORK/wait.out" 2>&1 &
    wpid=$!
    sleep 1
    alive "$wpid" || fail "wait returned before any daemon ran: $(cat "$WORK/wait.out")"
    start_daemon "$WORK/daemon.out" --state-key=k1 --rate-limit=64M "$dev"
    dpid=$DPID
    wait "$wpid" || rc=$?
    assert_eq "$rc" 0 "wait's exit status ($(cat "$WORK/wait.out"))"
    record_says k1 STATE=completed || fail "wait returned before the record said completed"
    wait_for 10 bash -c "! kill -0 $dpid 2>/dev/null" || fail "the daemon did not end"
    wait "$dpid" || fail "daemon exited $?: $(cat "$WORK/daemon.out")"
    out=$(cat "$WORK/wait.out")
    assert_contains "$out" "k1: k1 (${dev#/dev/}): complete reached" "wait's output"
}

# The stages are reached in their order, each while the rest is still being read.
case_phase_order() {
    local dev dpid
    dev=$(make_ext4_loop 256M)
    start_daemon "$WORK/daemon.out" --state-key=k2 --rate-limit=16M "$dev"
    dpid=$DPID
    waitctl --timeout=60 --phase=metadata k2 || fail "wait --phase=metadata exited $?"
    alive "$dpid" || fail "metadata was only reached when the daemon ended"
    grep -Eqx 'PHASE=(hot-paths|used|free)' "$RT/k2.record" ||
        fail "after metadata the record says $(grep PHASE= "$RT/k2.record")"
    # A whole-device ext4 without HotPaths= has neither hot paths nor used data beyond its
    # metadata: "used" comes with the free space.
    waitctl --timeout=60 --phase=hot k2 || fail "wait --phase=hot exited $?"
    waitctl --timeout=60 --phase=used k2 || fail "wait --phase=used exited $?"
    alive "$dpid" || fail "used was only reached when the daemon ended"
    record_says k2 STATE=hydrating || fail "the record does not say hydrating"
    waitctl --timeout=60 --phase=complete k2 || fail "wait --phase=complete exited $?"
    record_says k2 STATE=completed || fail "complete reached, the record says otherwise"
    wait "$dpid" || fail "daemon exited $?"
}

# A path on the file system the volume holds names it: the kernel name comes from the mount.
case_path() {
    local dev dpid out
    dev=$(make_ext4_loop 128M)
    mkdir -p "$WORK/mnt"
    mount -o ro,noload "$dev" "$WORK/mnt" || skip "cannot mount the ext4 image read-only"
    start_daemon "$WORK/daemon.out" --state-key=k3 --rate-limit=64M "$dev"
    dpid=$DPID
    out=$(waitctl --timeout=60 "$WORK/mnt/lost+found") || fail "wait on a path exited $?: $out"
    assert_contains "$out" "$WORK/mnt/lost+found: k3 (${dev#/dev/}): complete reached" "output"
    out=$(waitctl --timeout=5 "$dev") || fail "wait on the device exited $?: $out"
    umount "$WORK/mnt"
    wait "$dpid" || fail "daemon exited $?"
}

# Files on btrfs have an anonymous st_dev, not the disk's: the mount's source names the disk.
case_btrfs_path() {
    local img dev dpid out
    command -v mkfs.btrfs >/dev/null || skip "no mkfs.btrfs (btrfs-progs)"
    grep -qw btrfs /proc/filesystems || modprobe btrfs 2>/dev/null || skip "no btrfs in the kernel"
    img=$(mktemp "$WORK/img.XXXXXX")
    truncate -s 256M "$img"
    mkfs.btrfs -q -f "$img" >/dev/null
    dev=$(loop_attach --direct-io=on --read-only "$img")
    mkdir -p "$WORK/mnt"
    mount -o ro "$dev" "$WORK/mnt" || skip "cannot mount the btrfs image read-only"
    [ "$(stat -c %d "$WORK/mnt")" != "$(stat -c %d "$dev")" ] ||
        echo "note: this kernel gives btrfs files the disk's own device number"
    start_daemon "$WORK/daemon.out" --state-key=k11 --rate-limit=64M "$dev"
    dpid=$DPID
    out=$(waitctl --timeout=60 "$WORK/mnt") || fail "wait on a btrfs path exited $?: $out"
    assert_contains "$out" "k11 (${dev#/dev/}): complete reached" "output"
    umount "$WORK/mnt"
    wait "$dpid" || fail "daemon exited $?"
}

# After a reboot the runtime directory is empty: the daemon that udev starts again says "already
# hydrated" at once, and a wait returns at once. Root also believes the state file alone.
case_already_hydrated() {
    local dev out
    dev=$(make_ext4_loop 64M)
    daemon --state-key=k4 "$dev" >/dev/null || fail "first run exited $?"
    rm -f "$RT"/*.record # the reboot
    out=$(waitctl --timeout=0 k4) || fail "root's wait on the state file alone exited $?: $out"
    assert_contains "$out" "k4: k4: complete reached" "root, from the state file"
    expect_exit 6 "nobody, with neither record nor a state file to read" \
        as_nobody "$CTL" --runtime-dir="$RT" --state-dir="$STATE" wait --timeout=1 k4
    daemon --state-key=k4 "$dev" >/dev/null || fail "second run exited $?"
    record_says k4 STATE=completed || fail "the already-hydrated run wrote no completed record"
    out=$(as_nobody "$CTL" --runtime-dir="$RT" wait --timeout=5 "${dev#/dev/}") ||
        fail "nobody's wait exited $?: $out"
}

# Anyone may wait: the records are readable by all, the state is not needed.
case_unprivileged() {
    local dev dpid out
    dev=$(make_ext4_loop 128M)
    start_daemon "$WORK/daemon.out" --state-key=k5 --rate-limit=32M "$dev"
    dpid=$DPID
    out=$(as_nobody "$CTL" --runtime-dir="$RT" wait --timeout=60 k5) ||
        fail "nobody's wait exited $?: $out"
    record_says k5 STATE=completed || fail "nobody's wait returned before completion"
    assert_eq "$(stat -c %a "$RT/k5.record")" 644 "record mode (the daemon's umask aside)"
    wait "$dpid" || fail "daemon exited $?"
}

# Runs that end without reaching the phase: Mode=used for "complete", Enabled=no.
case_short() {
    local dev dev2 out
    dev=$(make_ext4_loop 64M)
    daemon --state-key=k6 --mode=used "$dev" >/dev/null || fail "Mode=used run exited $?"
    out=$(expect_exit 3 "wait for complete after Mode=used" waitctl --timeout=5 k6)
    assert_contains "$out" "Mode=used" "why"
    waitctl --timeout=5 --phase=used k6 >/dev/null || fail "Mode=used did not reach used"
    dev2=$(make_ext4_loop 64M)
    printf '[Match]\nKernelName=%s\n[Hydrate]\nEnabled=no\n' "${dev2#/dev/}" \
        >"$CONF/hydrate.conf"
    daemon --state-key=k7 "$dev2" >/dev/null || fail "disabled run exited $?"
    out=$(expect_exit 3 "wait on a disabled volume" waitctl --timeout=5 --phase=metadata k7)
    assert_contains "$out" "disabled by configuration" "why"
    rm "$CONF/hydrate.conf"
}

# A daemon stopped midway says so; the wait goes on, and ends when a new one finishes.
case_restart() {
    local dev wpid dpid rc=0
    dev=$(make_ext4_loop 256M)
    waitctl --timeout=120 k8 >"$WORK/wait.out" 2>&1 &
    wpid=$!
    start_daemon "$WORK/daemon.out" --state-key=k8 --rate-limit=32M "$dev"
    dpid=$DPID
    sleep 2
    kill -TERM "$dpid"
    wait "$dpid" || true
    record_says k8 STATE=stopped || fail "a stopped run's record says $(grep STATE= "$RT/k8.record")"
    sleep 1
    alive "$wpid" || fail "wait ended on a stopped run: $(cat "$WORK/wait.out")"
    daemon --state-key=k8 "$dev" >/dev/null || fail "the resumed run exited $?"
    wait "$wpid" || rc=$?
    assert_eq "$rc" 0 "wait's exit status ($(cat "$WORK/wait.out"))"
}

case_timeout_unknown() {
    local dev dpid out
    dev=$(make_ext4_loop 256M)
    start_daemon "$WORK/daemon.out" --state-key=k9 --rate-limit=8M "$dev"
    dpid=$DPID
    wait_for 10 test -e "$RT/k9.record" || fail "no record"
    out=$(expect_exit 5 "a volume still hydrating" waitctl --timeout=1 k9)
    assert_contains "$out" "complete not reached in time" "timeout message"
    out=$(expect_exit 6 "a name no volume has" waitctl --timeout=1 vol-nosuch)
    assert_contains "$out" "no volume by this name was seen" "unknown message"
    # A path that no volume can hold is unknown at once: waiting could not help.
    out=$(expect_exit 6 "/proc" waitctl /proc)
    assert_contains "$out" "is not on a block device" "/proc"
    # A path the caller may not search could hold a volume: a failure (1), not "unknown" (6).
    mkdir -m 0700 "$WORK/private"
    out=$(expect_exit 1 "a path nobody may search" as_nobody "$CTL" --runtime-dir="$RT" wait \
        --timeout=1 "$WORK/private/data")
    assert_contains "$out" "$WORK/private/data: Permission denied" "message for a path nobody may search"
    expect_exit 2 "a bad --phase" waitctl --phase=free k9 >/dev/null
    expect_exit 2 "--phase for status" "$CTL" --phase=used status >/dev/null
    expect_exit 2 "no target" waitctl >/dev/null
    kill -TERM "$dpid"
    wait "$dpid" || true
}

# Issue 23: a unit waits for /dev/KERNEL-NAME early in boot, before the disk is attached: the
# name is the disk's once it is there (here a loop device of a number nobody used yet).
case_before_the_disk() {
    local n=200 img wpid rc=0
    while [ -e "/dev/loop$n" ] || [ -e "/sys/class/block/loop$n" ]; do
        n=$((n + 1))
        [ "$n" -lt 1000 ] || skip "no unused loop device number under 1000"
    done
    waitctl --timeout=60 "/dev/loop$n" >"$WORK/wait.out" 2>&1 &
    wpid=$!
    sleep 1
    alive "$wpid" || fail "wait on a disk not there yet ended at once: $(cat "$WORK/wait.out")"
    img=$(mktemp "$WORK/img.XXXXXX")
    truncate -s 64M "$img"
    mkfs.ext4 -q -F "$img"
    losetup --direct-io=on --read-only "/dev/loop$n" "$img" || skip "cannot attach /dev/loop$n"
    daemon --state-key=k14 "/dev/loop$n" >"$WORK/daemon.out" 2>&1 || rc=$?
    losetup -d "/dev/loop$n"
    rm -f "/dev/loop$n"
    assert_eq "$rc" 0 "the daemon's exit status ($(cat "$WORK/daemon.out"))"
    rc=0
    wait "$wpid" || rc=$?
    assert_eq "$rc" 0 "wait's exit status ($(cat "$WORK/wait.out"))"
    assert_contains "$(cat "$WORK/wait.out")" "/dev/loop$n: k14 (loop$n): complete reached" "wait's output"
}

# Issue 23: a path on overlayfs (a container's root file system) names the disks of its layers;
# a layer on no block device makes it name no volume, and says which layer.
case_overlay_path() {
    local img dev dpid out
    mkdir -p "$WORK/tree/a/etc" "$WORK/tree/b" "$WORK/mnt" "$WORK/ovl" "$WORK/t" "$WORK/ovl2"
    img=$(mktemp "$WORK/img.XXXXXX")
    truncate -s 64M "$img"
    mkfs.ext4 -q -F -d "$WORK/tree" "$img" || skip "mkfs.ext4 cannot populate an image (-d)"
    dev=$(loop_attach --direct-io=on --read-only "$img")
    mount -o ro,noload "$dev" "$WORK/mnt" || skip "cannot mount the ext4 image read-only"
    mount -t overlay overlay -o "lowerdir=$WORK/mnt/a:$WORK/mnt/b" "$WORK/ovl" ||
        skip "cannot mount an overlay"
    start_daemon "$WORK/daemon.out" --state-key=k17 --rate-limit=64M "$dev"
    dpid=$DPID
    out=$(waitctl --timeout=60 "$WORK/ovl/etc") || fail "wait on an overlay path exited $?: $out"
    assert_contains "$out" "$WORK/ovl/etc: k17 (${dev#/dev/}): complete reached" "output"
    mount -t tmpfs tmpfs "$WORK/t"
    mkdir "$WORK/t/x"
    mount -t overlay overlay -o "lowerdir=$WORK/t/x:$WORK/mnt/a" "$WORK/ovl2"
    out=$(expect_exit 6 "an overlay with a layer on tmpfs" waitctl --timeout=5 "$WORK/ovl2")
    assert_contains "$out" "$WORK/ovl2 is on an overlay: its layer $WORK/t/x cannot be waited for" \
        "message for a layer on no block device"
    umount "$WORK/ovl2" "$WORK/t" "$WORK/ovl" "$WORK/mnt"
    wait "$dpid" || fail "daemon exited $?"
}

# fake_record KEY STATE PID START-TIME: a record as a run of PID (started at START-TIME) writes
# it, 64 MiB, half read
fake_record() {
    printf '%s\n' "VOLUME_ID=$1" KERNEL_NAME=nvme42n1 DEVICE_NAME= "STATE=$2" PHASE=used \
        SIZE_BYTES=67108864 HYDRATED_BYTES=33554432 ERRORS=0 FREE_SPACE_COLD=0 FS_AWARE=1 \
        DISKSEQ=0 "PID=$3" "START_TIME=$4" >"$RT/.$1.tmp"
    chmod 0644 "$RT/.$1.tmp"
    mv "$RT/.$1.tmp" "$RT/$1.record"
}

# Issue 23: a record that says the run goes on, whose writer was killed (no last record): the
# waiter wakes when the writer ends (its pidfd) and no longer believes it; root goes by what the
# state file proves, others wait for the next run (exit 5 at the timeout, never "reached").
# A record whose PID went to another process (another start time) is not believed either.
case_writer_gone() {
    local sp st wpid rc=0 out
    "$STATE_MAKE" "$STATE" k15 $((64 << 20)) $((64 << 20)) complete
    sleep 1000 &
    sp=$!
    st=$(cut -d' ' -f22 "/proc/$sp/stat")
    fake_record k15 hydrating "$sp" "$st"
    waitctl --timeout=60 k15 >"$WORK/wait.out" 2>&1 &
    wpid=$!
    sleep 1
    alive "$wpid" || fail "the wait ended while the writer ran: $(cat "$WORK/wait.out")"
    kill -KILL "$sp"
    wait "$sp" 2>/dev/null || true
    gone() { ! alive "$wpid"; }
    wait_for 5 gone || fail "still waiting 5 s after the writer was killed"
    wait "$wpid" || rc=$?
    assert_eq "$rc" 0 "wait's exit status ($(cat "$WORK/wait.out"))"
    assert_contains "$(cat "$WORK/wait.out")" "k15: k15 (nvme42n1): complete reached" "wait's output"
    out=$(expect_exit 5 "nobody, with the writer gone" as_nobody "$CTL" --runtime-dir="$RT" \
        wait --timeout=1 k15)
    assert_contains "$out" "complete not reached in time" "nobody's message"
    fake_record k15 hydrating $$ 1 # this shell started long after tick 1
    out=$(waitctl --timeout=5 k15) || fail "a record of a PID given again was believed: $out"
}

# Issue 23: the runtime directory's file system fills up while the daemon runs: its last record
# goes over the old one in place, and never stays "hydrating" for a run that ended.
case_record_on_a_full_disk() {
    local dev dpid out
    mkdir -p "$WORK/small"
    mount -t tmpfs -o size=64k,mode=0755 tmpfs "$WORK/small" || skip "cannot mount a tmpfs"
    dev=$(make_ext4_loop 64M)
    RUNTIME_DIRECTORY="$WORK/small" "$DAEMON" --no-bus --state-dir="$STATE" \
        --config-dir="$CONF" --progress=never --state-key=k16 --rate-limit=16M "$dev" \
        >"$WORK/daemon.out" 2>&1 &
    dpid=$!
    wait_for 10 test -e "$WORK/small/k16.record" || fail "no record: $(cat "$WORK/daemon.out")"
    dd if=/dev/zero of="$WORK/small/.fill" bs=4k status=none 2>/dev/null || true
    wait "$dpid" || fail "daemon exited $?: $(cat "$WORK/daemon.out")"
    out=$(cat "$WORK/daemon.out")
    echo "$out"
    assert_contains "$out" "cannot write its volume record" "daemon's warning"
    assert_contains "$out" "written over the old one in place" "daemon's last word on the record"
    grep -qx STATE=completed "$WORK/small/k16.record" ||
        fail "the record says $(grep STATE= "$WORK/small/k16.record")"
    out=$(as_nobody "$CTL" --runtime-dir="$WORK/small" wait --timeout=5 k16) ||
        fail "nobody's wait on the rewritten record exited $?: $out"
    umount "$WORK/small"
}

# On a terminal, a progress line on stderr while it waits, cleared at the end; none in a pipe.
case_progress_line() {
    local dev dpid out
    command -v script >/dev/null || skip "no script(1) to give it a terminal"
    dev=$(make_ext4_loop 128M)
    start_daemon "$WORK/daemon.out" --state-key=k12 --rate-limit=32M "$dev"
    dpid=$DPID
    script -qec "$(printf '%q ' "$CTL" --runtime-dir="$RT" wait --timeout=60 k12)" \
        "$WORK/tty.out" >/dev/null || fail "wait on a terminal exited $?: $(cat "$WORK/tty.out")"
    out=$(tr '\r' '\n' <"$WORK/tty.out")
    assert_contains "$out" "Waiting for complete: k12 (${dev#/dev/})" "the progress line"
    echo "$out" | grep -Eq 'k12 \(loop[0-9]+\) [0-9]+\.[0-9]%' || fail "no percentage: $out"
    assert_contains "$out" "k12: k12 (${dev#/dev/}): complete reached" "the final line"
    wait "$dpid" || fail "daemon exited $?"
    out=$(waitctl --timeout=5 k12 2>&1)
    assert_not_contains "$out" "Waiting for" "output in a pipe"
}

# A run that cannot start still leaves a last word: "failed" for what waits for a person (a bad
# configuration: the unit does not restart it), "completed" if the state says the volume is
# hydrated whatever stops this run (Enabled=no included).
case_ends_short_of_a_run() {
    local dev dev2 out
    dev=$(make_ext4_loop 64M)
    daemon --state-key=k13 "$dev" >/dev/null || fail "first run exited $?"
    printf '[Hydrate]\nRateLimit=banana\n' >"$CONF/hydrate.conf"
    expect_exit 2 "a run with a bad configuration" daemon --state-key=k13 "$dev" >/dev/null
    record_says k13 STATE=completed || fail "a bad configuration unsaid a hydrated volume"
    waitctl --timeout=5 k13 >/dev/null || fail "wait on the hydrated volume exited $?"
    dev2=$(make_ext4_loop 64M)
    expect_exit 2 "a first run with a bad configuration" daemon --state-key=k14 "$dev2" >/dev/null
    record_says k14 STATE=failed || fail "the failed start left $(cat "$RT/k14.record" 2>&1)"
    out=$(expect_exit 3 "wait on a volume whose run cannot start" waitctl --timeout=30 k14)
    assert_contains "$out" "will not be reached" "message"
    printf '[Hydrate]\nEnabled=no\n' >"$CONF/hydrate.conf"
    daemon --state-key=k13 "$dev" >/dev/null || fail "disabled run exited $?"
    record_says k13 STATE=completed || fail "Enabled=no unsaid a hydrated volume"
    rm "$CONF/hydrate.conf"
}

# A second run for a volume that a first one hydrates leaves the first one's record alone.
case_lock_busy() {
    local dev dpid
    dev=$(make_ext4_loop 256M)
    start_daemon "$WORK/daemon.out" --state-key=k15 --rate-limit=16M "$dev"
    dpid=$DPID
    wait_for 10 record_says k15 "PID=$dpid" || fail "no record of the first run"
    expect_exit 1 "a second run on the same volume" daemon --state-key=k15 "$dev" >/dev/null
    record_says k15 "PID=$dpid" || fail "the second run overwrote the record"
    record_says k15 STATE=hydrating || fail "the record does not say hydrating any more"
    kill -TERM "$dpid"
    wait "$dpid" || true
    record_says k15 STATE=stopped || fail "a stopped run's record says $(grep STATE= "$RT/k15.record")"
}

# The runtime directory removed and made again while the daemon runs and a waiter waits: both
# go on with the new one.
case_runtime_dir_replaced() {
    local dev dpid wpid rc=0
    dev=$(make_ext4_loop 256M)
    start_daemon "$WORK/daemon.out" --state-key=k16 --rate-limit=32M "$dev"
    dpid=$DPID
    waitctl --timeout=120 k16 >"$WORK/wait.out" 2>&1 &
    wpid=$!
    wait_for 10 test -e "$RT/k16.record" || fail "no record"
    rm -rf "$RT"
    mkdir -m 0755 "$RT"
    wait "$wpid" || rc=$?
    assert_eq "$rc" 0 "wait's exit status ($(cat "$WORK/wait.out"))"
    record_says k16 STATE=completed || fail "the new directory has no completed record"
    wait "$dpid" || fail "daemon exited $?"
}

# A runtime directory that others could write to is not used: they could write "completed".
case_untrusted_runtime_dir() {
    local dev out
    dev=$(make_ext4_loop 64M)
    chmod 0777 "$RT"
    out=$(daemon --state-key=k10 "$dev" 2>&1) || fail "run exited $?: $out"
    assert_contains "$out" "writable by group or others" "the warning"
    [ ! -e "$RT/k10.record" ] || fail "a record was written where others can write"
    assert_contains "$out" "k10: hydrated" "the hydration itself"
    chmod 0755 "$RT"
    # The service user's directory, and root running the daemon by hand beside it: root writes
    # its record there, and the waiter believes root's record in that user's directory.
    chown 65534:65534 "$RT"
    out=$(daemon --state-key=k10 "$dev" 2>&1) || fail "run by root exited $?: $out"
    record_says k10 STATE=completed || fail "root wrote no record in the service user's directory"
    waitctl --timeout=5 k10 >/dev/null || fail "wait on root's record exited $?"
    chown 0:0 "$RT"
}

run_case
