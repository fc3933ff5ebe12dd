#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What a hostile or careless neighbour could try on a host that runs ebs-hydrated, on loop
# devices: the modes of the state directory and its files, links planted under the state's
# names, the device opened read-only, and ebs-hydratectl's refusals for non-root users.
# Usage: security.sh CASE PATH-TO-ebs-hydrated PATH-TO-ebs-hydratectl
#   state-modes     a new state directory is 0700, state and lock files 0600 whatever the umask;
#                   an existing one open to group or others is refused (exit 2), left as it is;
#                   the shipped unit asks systemd for the same (StateDirectoryMode=0700)
#   state-symlink   <key>.state -> a victim that holds a complete state: not followed, set
#                   aside as a link; the whole device is read; the victim is untouched
#   state-owner     a 0700 state directory, and a complete state file, owned by another user:
#                   the directory is refused (exit 2), nothing read; the file is set aside
#   state-odd-files a 10 GiB file, a socket, a FIFO, a directory as <key>.state: each is set
#                   aside, the device read, the next run finds it hydrated
#   tmp-symlink     .<key>.state.tmp -> a victim: the link is replaced, the victim untouched
#   lock-symlink    <key>.lock -> a victim, or dangling: a clear error naming it, nothing read,
#                   nothing created through the link; ebs-hydratectl forget refuses as well
#   device-read-only  a read-only loop device hydrates; on a writable one, no descriptor of the
#                   daemon refers to the device with write access (every open, from strace when
#                   there is one, and the live descriptors in /proc), and its data is unchanged
#   ctl-not-root    pause, resume, set-rate-limit and forget as nobody: exit 4 and a clear
#                   message, before the bus is asked and without touching the state directory,
#                   even one that the file system would let nobody change
CASES=(state-modes state-symlink state-owner state-odd-files tmp-symlink lock-symlink
       device-read-only ctl-not-root)
. "$(dirname "$0")/cases.sh"
. "$(dirname "$0")/lib.sh"
require_root

DAEMON=$(wrapped "$2")
DISCOVERY=0
CTL=$(wrapped "$3")
UNIT_IN="$(cd "$(dirname "$0")/../.." && pwd)/units/ebs-hydrate@.service.in"
STATE="$WORK/state"
KEY=sec1
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$WORK/no-bus"

hydrate() {
    "$DAEMON" --no-bus --state-dir="$STATE" --config-dir="$WORK" --progress=never --state-key="$KEY" "$@"
}

# fingerprint PATH...: type, mode, size, mtime and content hash of each, to compare before/after
fingerprint() {
    local p
    for p in "$@"; do
        stat -c '%n %F %a %s %Y' "$p"
        [ -L "$p" ] || [ ! -f "$p" ] || sha256sum "$p"
    done
}

# dir_fingerprint DIR: the fingerprint of everything in DIR (links not followed)
dir_fingerprint() {
    find "$1" -mindepth 1 -print0 | sort -z | xargs -0 -r stat -c '%n %F %a %s %Y'
    find "$1" -mindepth 1 -type f -print0 | sort -z | xargs -0 -r sha256sum
}

# make_victim PATH: a file of root's that a planted link points at
make_victim() {
    head -c 4096 /dev/urandom >"$1"
    chmod 0644 "$1"
    touch -d '2001-01-01' "$1"
}

# assert_read_all DEV BASE: the kernel counted the whole device read since BASE, and what the
# daemon's file system discovery reads before it (see discovery_sectors in lib.sh; measured
# before BASE, which it moves on).
assert_read_all() {
    assert_eq $(($(sectors_read "$1") - $2)) $(($(device_sectors "$1") + DISCOVERY)) \
        "sectors read from $1"
}

case_state_modes() {
    local dev base out
    assert_contains "$(grep -x 'StateDirectoryMode=0700' "$UNIT_IN")" "0700" "StateDirectoryMode= in $UNIT_IN"
    assert_contains "$(grep -x 'UMask=0077' "$UNIT_IN")" "0077" "UMask= in $UNIT_IN"
    dev=$(make_loop 16M)
    # Created by the daemon, under a umask that takes nothing away: the modes are its own.
    (umask 000 && hydrate "$dev" >/dev/null) || fail "hydrating exited $?"
    assert_eq "$(stat -c %a "$STATE")" 700 "mode of the state directory it created"
    assert_eq "$(stat -c '%F %a' "$STATE/$KEY.state")" "regular file 600" "the state file"
    assert_eq "$(stat -c '%F %a' "$STATE/$KEY.lock")" "regular empty file 600" "the lock file"

    # An existing directory open to others: refused before anything is read, left as it is.
    for mode in 0755 0750 0701 0703; do
        rm -rf "$STATE"
        mkdir -m "$mode" "$STATE"
        DISCOVERY=$(discovery_sectors "$dev")
        base=$(sectors_read "$dev")
        out=$(expect_exit 2 "a state directory of mode $mode" hydrate "$dev")
        assert_contains "$out" "State directory $STATE is open to group or others (mode $mode)" "refusal"
        assert_contains "$out" "chmod 0700 $STATE" "refusal"
        assert_eq "$(stat -c %a "$STATE")" "${mode#0}" "mode after the refusal"
        assert_eq "$(find "$STATE" -mindepth 1 | wc -l)" 0 "files created in a refused directory"
        assert_eq "$(sectors_read "$dev")" "$base" "sectors read after the refusal"
    done
    chmod 0700 "$STATE"
    DISCOVERY=$(discovery_sectors "$dev")
    base=$(sectors_read "$dev")
    hydrate "$dev" >/dev/null || fail "hydrating in a 0700 directory exited $?"
    assert_read_all "$dev" "$base"
}

case_state_symlink() {
    local dev base out victim="$WORK/victim.state" aside before
    dev=$(make_loop 32M)
    mkdir -m 0700 "$STATE"
    # The victim is a complete state of this very key: were the link followed, the daemon
    # would take the volume as hydrated and read nothing.
    hydrate "$dev" >/dev/null || fail "first run exited $?"
    mv "$STATE/$KEY.state" "$victim"
    touch -d '2001-01-01' "$victim"
    before=$(fingerprint "$victim")
    ln -s "$victim" "$STATE/$KEY.state"
    DISCOVERY=$(discovery_sectors "$dev")
    base=$(sectors_read "$dev")
    out=$(hydrate "$dev" 2>&1) || fail "run with a planted link exited $?: $out"
    echo "$out"
    assert_contains "$out" "State file $KEY.state is a symbolic link, not a state file: kept as $KEY.state.symlink-" "message"
    assert_read_all "$dev" "$base"
    assert_eq "$(fingerprint "$victim")" "$before" "the victim"
    aside=$(find "$STATE" -name "$KEY.state.symlink-*")
    [ -L "$aside" ] && [ "$(readlink "$aside")" = "$victim" ] || fail "the link was not set aside as it was"
    assert_eq "$(stat -c '%F %a' "$STATE/$KEY.state")" "regular file 600" "the new state file"
}

case_state_owner() {
    local dev base out planted="$WORK/planted" nobody_uid
    nobody_uid=$(id -u nobody)
    dev=$(make_loop 32M)
    mkdir -m 0700 "$STATE"
    hydrate "$dev" >/dev/null || fail "first run exited $?"
    # A directory and a complete checkpoint that an unprivileged user made, modes as they
    # should be: its owner could have written "complete" into it. Refused, nothing read.
    mkdir -m 0700 "$planted"
    cp "$STATE/$KEY.state" "$planted/"
    chown -R nobody: "$planted"
    DISCOVERY=$(discovery_sectors "$dev")
    base=$(sectors_read "$dev")
    out=$(expect_exit 2 "a state directory of nobody's" hydrate --state-dir="$planted" "$dev")
    assert_contains "$out" "State directory $planted belongs to nobody (uid $nobody_uid), not to uid 0" "refusal"
    assert_not_contains "$out" "already hydrated" "refusal"
    assert_eq "$(sectors_read "$dev")" "$base" "sectors read after the refusal"
    # ebs-hydratectl, as root, trusts files owned by the directory's owner (the service's user):
    out=$("$CTL" --state-dir="$planted" status --no-legend 2>&1) || fail "ctl status exited $?: $out"
    assert_contains "$out" "$KEY" "ctl over the service user's directory"
    assert_not_contains "$out" "Skipping" "ctl over the service user's directory"
    # ... and not a file of another owner in it.
    chown root: "$planted/$KEY.state"
    out=$("$CTL" --state-dir="$planted" status --no-legend 2>&1) || fail "ctl status exited $?: $out"
    assert_contains "$out" "Skipping $planted/$KEY.state: owned by another user" "ctl over a foreign file"
    # The same file owned by nobody in root's own directory: set aside, the whole device read.
    chown nobody: "$STATE/$KEY.state"
    DISCOVERY=$(discovery_sectors "$dev")
    base=$(sectors_read "$dev")
    out=$(hydrate "$dev" 2>&1) || fail "run over a foreign state file exited $?: $out"
    assert_contains "$out" "State file $KEY.state is owned by another user than uid 0: kept as $KEY.state.foreign-" "message"
    assert_read_all "$dev" "$base"
    assert_eq "$(stat -c '%U %a' "$STATE/$KEY.state")" "root 600" "the new state file"
}

# Things under the state file's name that are no state file: each is set aside once, the whole
# device is read, and the next run finds the volume hydrated (no failure that a restart repeats).
case_state_odd_files() {
    local dev base out kind
    dev=$(make_loop 16M)
    mkdir -m 0700 "$STATE"
    for kind in huge socket fifo directory; do
        rm -f "$STATE/$KEY.state"
        case $kind in
        huge) truncate -s 10G "$STATE/$KEY.state" ;;
        socket) python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$STATE/$KEY.state" ;;
        fifo) mkfifo -m 0600 "$STATE/$KEY.state" ;;
        directory) mkdir -m 0700 "$STATE/$KEY.state" ;;
        esac
        DISCOVERY=$(discovery_sectors "$dev")
        base=$(sectors_read "$dev")
        out=$(timeout 60 "$DAEMON" --no-bus --state-dir="$STATE" --config-dir="$WORK" --progress=never --state-key="$KEY" "$dev" 2>&1) ||
            fail "run over a $kind state file exited $?: $out"
        assert_contains "$out" "kept as $KEY.state." "the $kind set aside"
        assert_read_all "$dev" "$base"
        out=$(hydrate "$dev" 2>&1) || fail "the run after the $kind exited $?: $out"
        assert_contains "$out" "already hydrated" "the run after the $kind"
    done
    # Nothing set aside was lost: four distinct names.
    assert_eq "$(find "$STATE" -maxdepth 1 -name "$KEY.state.*" | wc -l)" 4 "files set aside"
    # Under the lock's name: refused, never opened, exit 2 (a restart cannot remove them).
    for kind in directory socket; do
        rm -f "$STATE/$KEY.lock"
        case $kind in
        socket) python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$STATE/$KEY.lock" ;;
        directory) mkdir "$STATE/$KEY.lock" ;;
        esac
        out=$(expect_exit 2 "a $kind as the lock" hydrate "$dev")
        assert_contains "$out" "$KEY.lock is a symbolic link or not a regular file" "the $kind as the lock"
        rm -rf "$STATE/$KEY.lock"
    done
}

case_tmp_symlink() {
    local dev base victim="$WORK/victim" before
    dev=$(make_loop 32M)
    mkdir -m 0700 "$STATE"
    make_victim "$victim"
    before=$(fingerprint "$victim")
    ln -s "$victim" "$STATE/.$KEY.state.tmp"
    DISCOVERY=$(discovery_sectors "$dev")
    base=$(sectors_read "$dev")
    hydrate "$dev" >/dev/null || fail "run with a planted temporary link exited $?"
    assert_read_all "$dev" "$base"
    assert_eq "$(fingerprint "$victim")" "$before" "the victim"
    [ ! -e "$STATE/.$KEY.state.tmp" ] && [ ! -L "$STATE/.$KEY.state.tmp" ] ||
        fail "the temporary name is still there"
    assert_eq "$(stat -c '%F %a' "$STATE/$KEY.state")" "regular file 600" "the state file"
}

case_lock_symlink() {
    local dev base out victim="$WORK/victim" before
    dev=$(make_loop 32M)
    mkdir -m 0700 "$STATE"
    make_victim "$victim"
    before=$(fingerprint "$victim")
    ln -s "$victim" "$STATE/$KEY.lock"
    DISCOVERY=$(discovery_sectors "$dev")
    base=$(sectors_read "$dev")
    out=$(expect_exit 2 "a run whose lock is a link" hydrate "$dev")
    assert_contains "$out" "Refusing to lock the state of $KEY: $STATE/$KEY.lock is a symbolic link or not a regular file; remove it" "message"
    assert_eq "$(sectors_read "$dev")" "$base" "sectors read"
    assert_eq "$(fingerprint "$victim")" "$before" "the victim"
    [ ! -e "$STATE/$KEY.state" ] || fail "a state was written without the lock"

    # A dangling link: O_CREAT must not create its target.
    rm "$STATE/$KEY.lock"
    ln -s "$WORK/created-through-link" "$STATE/$KEY.lock"
    out=$(expect_exit 2 "a run whose lock is a dangling link" hydrate "$dev")
    assert_contains "$out" "$STATE/$KEY.lock is a symbolic link" "message"
    [ ! -e "$WORK/created-through-link" ] || fail "the lock was created through the link"

    # forget takes the same lock: it refuses too and leaves the state where it is.
    rm "$STATE/$KEY.lock"
    hydrate "$dev" >/dev/null || fail "run without the link exited $?"
    rm "$STATE/$KEY.lock"
    ln -s "$victim" "$STATE/$KEY.lock"
    out=$(expect_exit 1 "forget with a link as lock" "$CTL" --state-dir="$STATE" forget "$KEY")
    assert_contains "$out" "Refusing to lock the state of $KEY: $STATE/$KEY.lock is a symbolic link or not a regular file; remove it" "forget"
    [ -f "$STATE/$KEY.state" ] || fail "forget removed the state"
    assert_eq "$(fingerprint "$victim")" "$before" "the victim after forget"
}

# write_opens_of DEV LOG: the opens in an strace -y LOG that returned a descriptor of DEV with
# write access
write_opens_of() {
    grep -E "= [0-9]+<$1>" "$2" | grep -E 'O_WRONLY|O_RDWR' || true
}

# check_fds PID DEV: fails if a descriptor of PID refers to DEV with write access; true if one
# refers to it at all
check_fds() {
    local fd found=1 flags
    for fd in /proc/"$1"/fd/*; do
        [ "$(readlink "$fd" 2>/dev/null)" = "$2" ] || continue
        flags=$(awk '$1 == "flags:" { print $2 }' "/proc/$1/fdinfo/$(basename "$fd")" 2>/dev/null) || continue
        [ -n "$flags" ] || continue
        [ $((8#$flags & 3)) -eq 0 ] || fail "descriptor $(basename "$fd") of the daemon has $2 open with flags $flags"
        found=0
    done
    return "$found"
}

case_device_read_only() {
    local dev base img pid seen=0 before strace=() rc=0
    # The helpers' loop devices are read-only, and a read-only device hydrates.
    dev=$(make_loop 32M)
    assert_eq "$(blockdev --getro "$dev")" 1 "read-only flag of a make_loop device"
    mkdir -m 0700 "$STATE"
    DISCOVERY=$(discovery_sectors "$dev")
    base=$(sectors_read "$dev")
    hydrate "$dev" >/dev/null || fail "hydrating a read-only device exited $?"
    assert_read_all "$dev" "$base"

    # A writable device: the daemon still only reads. Every open is seen with strace when there
    # is one; the live descriptors are looked at in any case, while a rate-limited run goes on.
    img=$(mktemp "$WORK/img.XXXXXX")
    head -c $((64 << 20)) /dev/urandom >"$img"
    before=$(sha256sum <"$img")
    dev=$(loop_attach --direct-io=on "$img")
    assert_eq "$(blockdev --getro "$dev")" 0 "read-only flag of the writable device"
    if command -v strace >/dev/null; then
        strace=(strace -f -qq -y -e 'trace=open,openat,openat2,creat' -o "$WORK/strace.log")
    else
        echo "strace is missing: checking the live descriptors only"
    fi
    "${strace[@]}" "$DAEMON" --no-bus --state-dir="$STATE" --config-dir="$WORK" --progress=never \
        --state-key=writable --rate-limit=32M "$dev" >"$WORK/daemon.out" 2>&1 &
    pid=$!
    if [ ${#strace[@]} -gt 0 ]; then # $! is strace's: the daemon is its child
        for _ in $(seq 1 100); do
            [ -z "$(pgrep -P "$pid")" ] || break
            sleep 0.05
        done
        pid=$(pgrep -P "$pid") || fail "strace started no daemon"
    fi
    while kill -0 "$pid" 2>/dev/null; do
        check_fds "$pid" "$dev" && seen=$((seen + 1))
        sleep 0.1
    done
    wait || rc=$?
    assert_eq "$rc" 0 "exit status of the run on the writable device ($(cat "$WORK/daemon.out"))"
    echo "the device was open, read-only, in $seen samples of the running daemon"
    [ "$seen" -ge 5 ] || fail "the device was seen open in only $seen samples"
    if [ ${#strace[@]} -gt 0 ]; then
        grep -qE "= [0-9]+<$dev>" "$WORK/strace.log" || fail "strace saw no open of $dev"
        assert_eq "$(write_opens_of "$dev" "$WORK/strace.log")" "" "opens of $dev for writing"
    fi
    losetup -d "$dev"
    assert_eq "$(sha256sum <"$img")" "$before" "the writable device's data"
}

case_ctl_not_root() {
    local dev before out cmd
    dev=$(make_loop 16M)
    mkdir -m 0700 "$STATE"
    hydrate "$dev" >/dev/null || fail "hydrating exited $?"
    # Open the directory and the lock to everyone, so that only ebs-hydratectl's own check
    # stands between nobody and the state.
    chmod 0711 "$WORK"
    chmod 0777 "$STATE"
    chmod 0644 "$STATE/$KEY.lock"
    before=$(dir_fingerprint "$STATE")
    for cmd in "pause $KEY" "resume $KEY" "set-rate-limit $KEY 10M" "forget $KEY"; do
        # shellcheck disable=SC2086
        out=$(expect_exit 4 "$cmd as nobody" as_nobody "$CTL" --state-dir="$STATE" $cmd)
        assert_contains "$out" "${cmd%% *}: must be run as root" "$cmd as nobody"
        assert_not_contains "$out" "bus" "$cmd as nobody (refused before the bus is asked)"
    done
    assert_eq "$(dir_fingerprint "$STATE")" "$before" "the state directory after nobody's commands"
    # Reading is allowed: status runs (it cannot read root's 0600 state, and says so).
    out=$(as_nobody "$CTL" --state-dir="$STATE" status 2>&1) || fail "status as nobody exited $?: $out"
}

run_case security/
