#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The D-Bus status object on a private system-type bus: a dbus-daemon of our own, loaded with
# the shipped policy file, a stand-in notify socket, and the daemon on a cold rig volume.
# Usage: dbus.sh CASE PATH-TO-ebs-hydrated PATH-TO-POLICY-FILE [PATH-TO-ebs-hydratectl]
#   object    every property, PropertiesChanged pacing, Pause/Resume/SetRateLimit as root,
#             READY/STATUS/WATCHDOG (no STOPPING on completion), State "completed" at the end
#   policy    the shipped policy: nobody may Get, GetAll and introspect, but not call methods or
#             Set (the bus refuses each, before the daemon sees it)
#   caller    a bus that lets everyone call: the daemon itself refuses non-root callers
#   ctl       ebs-hydratectl status/pause/resume/set-rate-limit against the running daemon
#   name      a second daemon for the same device name cannot start; no bus = a clear error
CASES=(object policy caller ctl name)
. "$(dirname "$0")/cases.sh"
. "$(dirname "$0")/lib.sh"
require_root

DAEMON=$(wrapped "$2")
POLICY=$(realpath "$3")
CTL=${4:+$(wrapped "$4")}
RIG="$(cd "$(dirname "$0")/../lab" && pwd)/ebs-rig"
NAME="it-dbus-$CASE-$$"
# What AWS said (case object writes a findings file here mid-run).
export EBS_HYDRATE_AWS_DIR="$WORK/aws"
STATE="$WORK/state"
BUS="unix:path=$WORK/bus.sock"
mkdir -p -m 0700 "$STATE" # the daemon refuses a state directory open to others
chmod 0711 "$WORK" # nobody must reach the bus socket
for tool in dbus-daemon busctl qemu-storage-daemon setpriv; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool missing" >&2; exit 77; }
done
[ -e /dev/fuse ] || { echo "SKIP: no /dev/fuse" >&2; exit 77; }

BUS_PID=
DAEMON_PID=
LISTENER_PID=
stop_all() {
    local p
    for p in $DAEMON_PID $LISTENER_PID $BUS_PID; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    "$RIG" down "$NAME" >/dev/null 2>&1 || true
    cleanup
}
trap stop_all EXIT

# start_bus POLICY-XML: a system-type bus with the stock default policy plus POLICY-XML
start_bus() {
    cat >"$WORK/bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>$BUS</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus.Introspectable"/>
  </policy>
  <policy user="root">
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus.Monitoring"/>
  </policy>
  $1
</busconfig>
EOF
    dbus-daemon --config-file="$WORK/bus.conf" --nofork --nopidfile >"$WORK/bus.log" 2>&1 &
    BUS_PID=$!
    for _ in $(seq 1 100); do [ -S "$WORK/bus.sock" ] && return 0; sleep 0.05; done
    cat "$WORK/bus.log" >&2
    fail "dbus-daemon did not start"
}

start_listener() {
    python3 "$(dirname "$0")/notify-listener.py" "$WORK/notify.sock" "$WORK/notify.log" 300 &
    LISTENER_PID=$!
    for _ in $(seq 1 50); do [ -S "$WORK/notify.sock" ] && return 0; sleep 0.1; done
    fail "notify listener did not start"
}

# start_daemon DEV [OPTIONS...]: in the background, as systemd would run it
start_daemon() {
    local dev=$1
    shift
    DBUS_SYSTEM_BUS_ADDRESS="$BUS" NOTIFY_SOCKET="$WORK/notify.sock" WATCHDOG_USEC=2000000 \
        "$DAEMON" --state-dir="$STATE" --config-dir="$WORK" --progress=never \
        --state-key="$NAME" "$@" "$dev" >"$WORK/daemon.out" 2>&1 &
    DAEMON_PID=$!
}

SERVICE=
OBJ=/org/ebshydrate/Volume1
IFACE=org.ebshydrate.Volume1

# bus_as USER busctl-args...: busctl on the private bus, as root or as nobody
bus_as() {
    local who=$1
    shift
    if [ "$who" = root ]; then
        busctl --address="$BUS" "$@"
    else
        as_nobody busctl --address="$BUS" "$@"
    fi
}

# prop NAME: the property's value alone (busctl prints "TYPE VALUE")
prop() {
    bus_as root get-property "$SERVICE" "$OBJ" "$IFACE" "$1" | cut -d' ' -f2-
}

wait_for_name() {
    for _ in $(seq 1 200); do
        bus_as root status "$SERVICE" >/dev/null 2>&1 && return 0
        kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$WORK/daemon.out" >&2; fail "daemon exited"; }
        sleep 0.05
    done
    fail "the daemon never owned $SERVICE"
}

# A cold 512 MiB volume, hydrated at a limited rate so that there is time to look at it.
setup_volume() {
    DEV=$("$RIG" up "$NAME" --profile seed --size 512M)
    SIZE=$(blockdev --getsize64 "$DEV")
    SERVICE="org.ebshydrate.Volume1.$(basename "$DEV")"
}

case_object() {
    local h1 h2 n_changed pct
    start_bus "<include>$POLICY</include>"
    start_listener
    setup_volume
    start_daemon "$DEV" --rate-limit=24M
    wait_for_name

    # Constant properties, and the introspection data that tools rely on.
    assert_eq "$(prop VolumeId)" "\"$NAME\"" "VolumeId"
    assert_eq "$(prop Device)" "\"$DEV\"" "Device"
    assert_eq "$(prop DeviceName)" '""' "DeviceName"
    assert_eq "$(prop SizeBytes)" "$SIZE" "SizeBytes"
    bus_as root introspect "$SERVICE" "$OBJ" "$IFACE" >"$WORK/introspect"
    for p in "VolumeId property s" "Device property s" "DeviceName property s" \
        "State property s" "SizeBytes property t" "HydratedBytes property t" \
        "Percent property d" "RateBytesPerSecond property t" "EtaSeconds property t" \
        "ErrorCount property t" "Phase property s" "PhaseProgress property a\\(stt\\)" \
        ".Pause method" ".Resume method" ".SetRateLimit method t"; do
        grep -Eq "^\\.?${p// /[[:space:]]+}" "$WORK/introspect" ||
            fail "introspection lacks '$p': $(cat "$WORK/introspect")"
    done
    grep -E '^\.(State|HydratedBytes|Percent)' "$WORK/introspect" | grep -q emits-change ||
        fail "changing properties are not marked emits-change"
    grep -E '^\.VolumeId' "$WORK/introspect" | grep -q const || fail "VolumeId is not const"

    # What AWS said: nothing yet; then a findings file (a plain restore: hydrated as before).
    assert_eq "$(prop Aws)" '""' "Aws without findings"
    assert_eq "$(prop AwsProgress)" -1 "AwsProgress without findings"
    mkdir -p "$EBS_HYDRATE_AWS_DIR"
    printf 'EBS_HYDRATE_AWS_FINDINGS=1\nVOLUME_ID=%s\nTIME_USEC=1\nSOURCE=snapshot\nSNAPSHOT_ID=snap-0abc\nFAST_RESTORED=no\nINITIALIZATION_STATE=initializing\nINITIALIZATION_TYPE=default\nINITIALIZATION_PROGRESS=5\n' \
        "$NAME" >"$EBS_HYDRATE_AWS_DIR/tmp"
    mv "$EBS_HYDRATE_AWS_DIR/tmp" "$EBS_HYDRATE_AWS_DIR/$NAME.aws"
    aws_said() { [ "$(prop Aws)" = '"snapshot"' ]; }
    wait_for 5 aws_said || fail "Aws is $(prop Aws), expected \"snapshot\""
    assert_eq "$(prop AwsSnapshotId)" '"snap-0abc"' "AwsSnapshotId"
    assert_eq "$(prop AwsProgress)" 5 "AwsProgress"
    assert_eq "$(prop AwsEtaSeconds)" -1 "AwsEtaSeconds (not given)"

    # Moving properties, once the rate window holds more than the start: the rig completes a
    # paced trickle of reads in bunches about 1.3 s apart (fio's evenly spaced reads do not
    # see this; cause not found), so three seconds may hold one bunch and the start-up.
    sleep 6
    assert_eq "$(prop State)" '"hydrating"' "State while running"
    h1=$(prop HydratedBytes)
    [ "$h1" -gt 0 ] && [ "$h1" -lt "$SIZE" ] || fail "HydratedBytes $h1 not within (0, $SIZE)"
    pct=$(prop Percent)
    awk -v p="$pct" -v h="$h1" -v s="$SIZE" 'BEGIN { exit !(p > 0 && p < 100 && (p - 100*h/s)^2 < 4) }' ||
        fail "Percent $pct does not match HydratedBytes $h1 of $SIZE"
    awk -v r="$(prop RateBytesPerSecond)" 'BEGIN { exit !(r > 12*2^20 && r < 36*2^20) }' ||
        fail "RateBytesPerSecond $(prop RateBytesPerSecond) is not near the 24 MiB/s limit"
    [ "$(prop EtaSeconds)" -gt 0 ] || fail "EtaSeconds is 0 while hydrating"
    assert_eq "$(prop ErrorCount)" 0 "ErrorCount"
    # A volume without a file system: one phase, "used", the whole device.
    assert_eq "$(prop Phase)" '"used"' "Phase"
    case "$(prop PhaseProgress)" in
    "1 \"used\" "*" $SIZE") ;;
    *) fail "PhaseProgress is '$(prop PhaseProgress)', expected one used phase of $SIZE bytes" ;;
    esac

    # PropertiesChanged: a steady trickle, about once a second, not one per read.
    timeout 5 busctl --address="$BUS" monitor "$SERVICE" >"$WORK/monitor" 2>&1 || true
    n_changed=$(grep -c 'Member=PropertiesChanged' "$WORK/monitor" || true)
    echo "PropertiesChanged in 5 s: $n_changed"
    [ "$n_changed" -ge 3 ] && [ "$n_changed" -le 7 ] ||
        fail "expected 3-7 PropertiesChanged signals in 5 s, saw $n_changed"

    # Pause: State says so, and nothing more is read (reads in flight finish first).
    bus_as root call "$SERVICE" "$OBJ" "$IFACE" Pause || fail "Pause as root failed"
    assert_eq "$(prop State)" '"paused"' "State after Pause"
    sleep 1
    h1=$(prop HydratedBytes)
    sleep 2
    h2=$(prop HydratedBytes)
    assert_eq "$h2" "$h1" "HydratedBytes while paused"
    grep -q "STATUS=$NAME: paused at" "$WORK/notify.log" || sleep 2.5
    grep -q "STATUS=$NAME: paused at" "$WORK/notify.log" || fail "STATUS does not say paused"

    bus_as root call "$SERVICE" "$OBJ" "$IFACE" Resume || fail "Resume as root failed"
    assert_eq "$(prop State)" '"hydrating"' "State after Resume"
    grew() { [ "$(prop HydratedBytes)" -gt "$h2" ]; }
    wait_for 10 grew || fail "HydratedBytes does not grow within 10 s of Resume"

    # A limit is logged in words a human reads: "1 B/s (1 byte per second)", not "1 bytes/s".
    bus_as root call "$SERVICE" "$OBJ" "$IFACE" SetRateLimit t 1 || fail "SetRateLimit 1 failed"
    # Lift the limit: the rest (most of 512 MiB at 24 MiB/s would take ~15 s) goes fast.
    bus_as root call "$SERVICE" "$OBJ" "$IFACE" SetRateLimit t 0 || fail "SetRateLimit failed"
    timeout 30 tail --pid="$DAEMON_PID" -f /dev/null || fail "not finished 30 s after SetRateLimit 0"
    wait "$DAEMON_PID" || fail "daemon exited $?: $(cat "$WORK/daemon.out")"
    DAEMON_PID=
    assert_eq "$("$RIG" hydrated "$NAME" | awk '{ print $1 }')" "$SIZE" "bytes in the rig's overlay"
    sleep 0.3
    grep -vx 'WATCHDOG=1' "$WORK/notify.log" | sed 's/^/notify: /'
    grep -qx 'READY=1' "$WORK/notify.log" || fail "no READY=1"
    grep -qx 'WATCHDOG=1' "$WORK/notify.log" || fail "no WATCHDOG=1"
    grep -Eq "^STATUS=$NAME: [0-9]+\.[0-9]% hydrated \(" "$WORK/notify.log" || fail "no progress STATUS"
    ! grep -q "^STOPPING=1" "$WORK/notify.log" || fail "STOPPING=1 on completion (breaks RemainAfterExit=)"
    tail -n 1 "$WORK/notify.log" | grep -q "STATUS=$NAME: hydrated (512.0 MiB)" ||
        fail "last notification is not the final summary: $(tail -n 1 "$WORK/notify.log")"
    grep -q "rate limit removed over D-Bus" "$WORK/daemon.out" || fail "SetRateLimit not logged"
    grep -q "rate limit set to 1 B/s (1 byte per second) over D-Bus" "$WORK/daemon.out" ||
        fail "SetRateLimit 1 not logged as 1 B/s: $(grep 'rate limit' "$WORK/daemon.out")"
}

case_policy() {
    local out member
    start_bus "<include>$POLICY</include>"
    setup_volume
    start_daemon "$DEV" --rate-limit=8M
    wait_for_name
    # Anyone may read and introspect ...
    out=$(bus_as nobody get-property "$SERVICE" "$OBJ" "$IFACE" VolumeId) ||
        fail "nobody cannot Get: $out"
    assert_eq "$out" "s \"$NAME\"" "VolumeId as nobody"
    out=$(bus_as nobody call "$SERVICE" "$OBJ" org.freedesktop.DBus.Properties GetAll s "$IFACE") ||
        fail "nobody cannot GetAll: $out"
    assert_contains "$out" "\"VolumeId\" s \"$NAME\"" "GetAll as nobody"
    bus_as nobody introspect "$SERVICE" "$OBJ" >/dev/null || fail "nobody cannot introspect"
    bus_as nobody call "$SERVICE" "$OBJ" org.freedesktop.DBus.Introspectable Introspect >/dev/null ||
        fail "nobody cannot call Introspect"
    # ... but not steer: the bus refuses before the daemon sees the call.
    for call in "Pause" "Resume" "SetRateLimit t 1000"; do
        # shellcheck disable=SC2086
        out=$(bus_as nobody call "$SERVICE" "$OBJ" "$IFACE" $call 2>&1) &&
            fail "nobody could call $call"
        assert_contains "$out" "Access denied" "$call as nobody"
    done
    out=$(bus_as nobody set-property "$SERVICE" "$OBJ" "$IFACE" State s paused 2>&1) &&
        fail "nobody could Set"
    assert_contains "$out" "Access denied" "Set as nobody"
    out=$(bus_as nobody call "$SERVICE" "$OBJ" org.freedesktop.DBus.Properties Set ssv "$IFACE" \
        RateBytesPerSecond t 1 2>&1) && fail "nobody could call Properties.Set"
    assert_contains "$out" "Access denied" "Properties.Set as nobody"
    assert_eq "$(prop State)" '"hydrating"' "State after the refused calls"
    # Nobody else may own our names.
    out=$(bus_as nobody call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus \
        RequestName su org.ebshydrate.Volume1.evil 0 2>&1) && fail "nobody could own a name: $out"
    assert_contains "$out" "Access denied" "RequestName as nobody"
    bus_as root call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus \
        RequestName su org.ebshydrate.Volume1.evil 0 >/dev/null || fail "the policy denies root"
    for member in Pause Resume SetRateLimit Set; do
        grep -q "Rejected send message.*member=\"$member\"" "$WORK/bus.log" ||
            fail "the bus did not log the refused $member: $(cat "$WORK/bus.log")"
    done
}

case_caller() {
    local out
    # A careless bus: everyone may call everything. The daemon still refuses non-root callers.
    start_bus '<policy context="default"><allow own="*"/><allow send_type="method_call"/></policy>'
    setup_volume
    start_daemon "$DEV" --rate-limit=8M
    wait_for_name
    out=$(bus_as nobody call "$SERVICE" "$OBJ" "$IFACE" Pause 2>&1) && fail "nobody could Pause"
    assert_contains "$out" "Access denied" "Pause as nobody"
    out=$(bus_as nobody call "$SERVICE" "$OBJ" "$IFACE" SetRateLimit t 1 2>&1) &&
        fail "nobody could SetRateLimit"
    assert_contains "$out" "Access denied" "SetRateLimit as nobody"
    # It was the daemon that refused, not the bus.
    ! grep -q "Rejected send message" "$WORK/bus.log" || fail "the bus refused: $(cat "$WORK/bus.log")"
    assert_contains "$(cat "$WORK/daemon.out")" "Refused Pause() from uid 65534" "daemon's log"
    assert_contains "$(cat "$WORK/daemon.out")" "Refused SetRateLimit() from uid 65534" "daemon's log"
    assert_eq "$(prop State)" '"hydrating"' "State after the refused calls"
    bus_as root call "$SERVICE" "$OBJ" "$IFACE" Pause || fail "root cannot Pause"
    assert_eq "$(prop State)" '"paused"' "State after root's Pause"
}

case_name() {
    local out rc=0
    start_bus "<include>$POLICY</include>"
    setup_volume
    start_daemon "$DEV" --rate-limit=8M
    wait_for_name
    # Same device, another state key (so the checkpoint lock does not decide): the name does.
    out=$(DBUS_SYSTEM_BUS_ADDRESS="$BUS" "$DAEMON" --state-dir="$WORK/other" --state-key=other \
        --progress=never "$DEV" 2>&1) || rc=$?
    assert_eq "$rc" 1 "exit status of a second daemon for the same device"
    assert_contains "$out" "D-Bus name $SERVICE is owned by another process" "second daemon"
    # No bus at all: a clear error that points at --no-bus, not a silent run without it.
    rc=0
    out=$(DBUS_SYSTEM_BUS_ADDRESS="unix:path=$WORK/nothing" "$DAEMON" --state-dir="$WORK/other" \
        --state-key=other2 --progress=never "$DEV" 2>&1) || rc=$?
    assert_eq "$rc" 1 "exit status without a bus"
    assert_contains "$out" "Cannot connect to the D-Bus system bus" "no bus"
    assert_contains "$out" "--no-bus" "no bus"
}

# ctl_json FIELD: the field of the only volume in `ebs-hydratectl --json status`
ctl_json() {
    DBUS_SYSTEM_BUS_ADDRESS="$BUS" "$CTL" --state-dir="$STATE" --json status |
        python3 -c 'import json, sys; v = json.load(sys.stdin)["volumes"]; assert len(v) == 1, v; print(v[0][sys.argv[1]])' "$1"
}

case_ctl() {
    local out rc h1 kname
    [ -x "$CTL" ] || fail "no ebs-hydratectl given"
    start_bus "<include>$POLICY</include>"
    setup_volume
    kname=$(basename "$DEV")
    start_daemon "$DEV" --rate-limit=16M
    wait_for_name
    sleep 2
    # The running instance, from the bus: one row, live figures, not the stale state file.
    assert_eq "$(ctl_json running)" True "running"
    assert_eq "$(ctl_json volume_id)" "$NAME" "volume_id"
    assert_eq "$(ctl_json device)" "$DEV" "device"
    assert_eq "$(ctl_json state)" hydrating "state"
    assert_eq "$(ctl_json size_bytes)" "$SIZE" "size_bytes"
    # The rate is a sliding window refreshed on the bus once a second: give it a few seconds.
    for _ in $(seq 1 20); do
        [ "$(ctl_json rate_bytes_per_second)" -gt 0 ] && break
        sleep 0.5
    done
    [ "$(ctl_json rate_bytes_per_second)" -gt 0 ] || fail "rate still 0 after 12 s of hydrating"
    out=$(DBUS_SYSTEM_BUS_ADDRESS="$BUS" "$CTL" --state-dir="$STATE" status "$kname")
    echo "$out"
    assert_contains "$out" "$NAME" "table"
    assert_contains "$out" "hydrating" "table"

    # Control by kernel name, device path and volume id.
    DBUS_SYSTEM_BUS_ADDRESS="$BUS" "$CTL" pause "$kname" || fail "ctl pause exited $?"
    assert_eq "$(prop State)" '"paused"' "State after ctl pause"
    assert_eq "$(ctl_json state)" paused "ctl status after pause"
    # Not root: refused before the bus is asked, exit 4.
    rc=0
    out=$(as_nobody env DBUS_SYSTEM_BUS_ADDRESS="$BUS" \
        "$CTL" resume "$kname" 2>&1) || rc=$?
    assert_eq "$rc" 4 "ctl resume as nobody"
    assert_contains "$out" "must be run as root" "ctl resume as nobody"
    assert_eq "$(prop State)" '"paused"' "State after nobody's resume"
    DBUS_SYSTEM_BUS_ADDRESS="$BUS" "$CTL" resume "$DEV" || fail "ctl resume exited $?"
    assert_eq "$(prop State)" '"hydrating"' "State after ctl resume"
    h1=$(prop HydratedBytes)
    DBUS_SYSTEM_BUS_ADDRESS="$BUS" "$CTL" set-rate-limit "$NAME" 0 || fail "ctl set-rate-limit exited $?"
    timeout 30 tail --pid="$DAEMON_PID" -f /dev/null || fail "not finished 30 s after set-rate-limit 0"
    wait "$DAEMON_PID" || fail "daemon exited $?"
    DAEMON_PID=
    grep -q "rate limit removed over D-Bus" "$WORK/daemon.out" || fail "set-rate-limit did not reach the daemon"
    # Finished: the name is gone, the state file speaks for the volume.
    assert_eq "$(ctl_json running)" False "running after the end"
    assert_eq "$(ctl_json state)" completed "state after the end"
    assert_eq "$(ctl_json hydrated_bytes)" "$SIZE" "hydrated_bytes after the end"
    rc=0
    DBUS_SYSTEM_BUS_ADDRESS="$BUS" "$CTL" pause "$kname" 2>/dev/null || rc=$?
    assert_eq "$rc" 1 "ctl pause of a volume that is not running"
    echo "hydrated before lifting the limit: $h1 of $SIZE bytes"
}

run_case dbus/
