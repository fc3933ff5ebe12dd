#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ebs-hydratectl against state files that real ebs-hydrated runs left on loop devices: one
# volume complete, one killed part-way, one whose key needs escaping. No system bus is reachable
# here (DBUS_SYSTEM_BUS_ADDRESS points nowhere), so status and metrics come from the state files;
# the bus side is covered by the D-Bus tests.
# Usage: ctl.sh CASE PATH-TO-ebs-hydratectl PATH-TO-ebs-hydrated
CASES=(status status-by-device status-not-root json metrics forget mismatched usage)
. "$(dirname "$0")/cases.sh"
. "$(dirname "$0")/lib.sh"
require_root

CTL=$(wrapped "$2")
DAEMON=$(wrapped "$3")
STATE="$WORK/state"
CONF="$WORK/conf"
mkdir -p "$STATE" "$CONF"
chmod 0700 "$STATE"
chmod 0711 "$WORK" # others may reach $STATE, and are stopped by its mode as on a real system
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$WORK/no-bus"
ODD_KEY='odd"key\x' # a state key that must be escaped in JSON and Prometheus labels
PYTHON=/usr/bin/python3 # Debian's, which has python3-prometheus-client

ctl() {
    "$CTL" --state-dir="$STATE" "$@"
}

hydrate() {
    "$DAEMON" --no-bus --state-dir="$STATE" --config-dir="$CONF" --progress=never "$@"
}


# Three volumes: "done1" complete, "part1" killed at about 40%, $ODD_KEY complete. PART_DEV
# is the device of part1, for a later run that resumes it.
setup_states() {
    local dev base
    dev=$(make_loop 64M)
    hydrate --state-key=done1 "$dev" >/dev/null || fail "hydrating done1 exited $?"
    dev=$(make_loop 32M)
    hydrate --state-key="$ODD_KEY" "$dev" >/dev/null || fail "hydrating the odd key exited $?"
    PART_DEV=$(make_loop 256M)
    base=$(sectors_read "$PART_DEV")
    kill_at_percent 40 "$PART_DEV" "$base" "$DAEMON" --no-bus --state-dir="$STATE" \
        --config-dir="$CONF" --progress=never --state-key=part1 --rate-limit=48M "$PART_DEV"
    [ -f "$STATE/part1.state" ] || fail "the killed run left no state"
    # Not state files: set aside, temporary, lock; and one that is damaged.
    cp "$STATE/done1.state" "$STATE/done1.state.corrupt-1700000000"
    : >"$STATE/.done1.state.tmp"
    printf 'garbage' >"$STATE/bad.state"
}

case_status() {
    local out err
    setup_states
    out=$(ctl status 2>"$WORK/err") || fail "status exited $?"
    err=$(cat "$WORK/err")
    echo "$out"
    assert_contains "$err" "Cannot query running instances on the system bus: No such file or directory" \
        "note that the bus could not be asked"
    assert_contains "$err" "Skipping $STATE/bad.state: not a usable state file" "damaged file"
    [ "$(grep -c . <<<"$err")" -eq 2 ] || fail "unexpected messages: $err"
    assert_eq "$(head -n 1 <<<"$out" | tr -s ' ')" \
        "VOLUME DEVICE MAPPING STATE HYDRATED SIZE RATE ETA ERRORS PHASE" "header"
    assert_eq "$(grep -c . <<<"$out")" 4 "lines (header and three volumes, nothing set aside)"
    assert_eq "$(grep '^done1 ' <<<"$out" | tr -s ' ')" \
        "done1 - - completed 100.0% 64.0 MiB - - 0 -" "complete volume"
    grep -Eq '^part1 +- +- +stopped +[1-9][0-9]?\.[0-9]% +256\.0 MiB +- +- +0 +-$' <<<"$out" ||
        fail "partial volume: $(grep '^part1' <<<"$out")"
    cut -d ' ' -f 1 <<<"$out" | grep -qxF -- "$ODD_KEY" || fail "odd key missing"

    # Filters: by key; an unknown target is an error naming it.
    out=$(ctl --no-legend status part1 2>/dev/null) || fail "status part1 exited $?"
    assert_eq "$(grep -c . <<<"$out")" 1 "lines for one volume without legend"
    grep -q '^part1 ' <<<"$out" || fail "status part1: $out"
    out=$(expect_exit 1 "unknown target" ctl status vol-0000000000000000f)
    assert_contains "$out" "No volume 'vol-0000000000000000f'" "unknown target"

    # Empty directory: a friendly line, or nothing without legend.
    out=$("$CTL" --state-dir="$WORK/conf" status 2>/dev/null) || fail "empty status exited $?"
    assert_eq "$out" "No volumes." "empty list"
    out=$("$CTL" --state-dir="$WORK/conf" --no-legend status 2>/dev/null) || fail "exited $?"
    assert_eq "$out" "" "empty list without legend"
}

# A volume that is not running, named by its device: found through the device's identity, as the
# daemon finds it. A fake sysfs describes the loop device as an EBS volume (as in loop.sh).
case_status_by_device() {
    local dev other bare name majmin sys out
    dev=$(make_loop 64M)
    other=$(make_loop 32M)
    bare=$(make_loop 16M)
    name=$(basename "$dev")
    majmin=$(cat "/sys/block/$name/dev")
    if [ -e "/run/udev/data/b$majmin" ]; then
        echo "SKIP: udev knows $dev, so its identity does not come from the fake sysfs" >&2
        exit 77
    fi
    sys="$WORK/sys"
    mkdir -p "$sys/devices/virtual/block/$name/device" "$sys/dev/block" "$sys/class/block"
    printf '%-40s' 'Amazon Elastic Block Store' >"$sys/devices/virtual/block/$name/device/model"
    printf '%-20s' 'vol0123456789abcdef0' >"$sys/devices/virtual/block/$name/device/serial"
    ln -s "../../devices/virtual/block/$name" "$sys/dev/block/$majmin"
    ln -s "../../devices/virtual/block/$name" "$sys/class/block/$name"
    EBS_HYDRATE_SYSFS_ROOT="$sys" hydrate "$dev" >/dev/null || fail "hydrating the fake EBS volume exited $?"
    [ -f "$STATE/vol-0123456789abcdef0.state" ] || fail "no state under the volume id"
    hydrate --state-key=other "$other" >/dev/null || fail "hydrating 'other' exited $?"
    for target in "$dev" "$name"; do
        out=$(EBS_HYDRATE_SYSFS_ROOT="$sys" ctl --no-legend status "$target" 2>/dev/null) ||
            fail "status $target exited $?"
        assert_eq "$(tr -s ' ' <<<"$out")" \
            "vol-0123456789abcdef0 - - completed 100.0% 64.0 MiB - - 0 -" "status $target"
    done
    out=$(EBS_HYDRATE_SYSFS_ROOT="$sys" expect_exit 1 "a device without a state" ctl status "$bare")
    assert_contains "$out" "No volume '$bare'" "device without a state"
    # Without the fake sysfs the same device has no identity: not found.
    out=$(expect_exit 1 "no identity" ctl status "$dev")
    assert_contains "$out" "No volume '$dev'" "device without identity"
}

case_status_not_root() {
    local out err
    setup_states
    out=$(as_nobody "$CTL" --state-dir="$STATE" status 2>"$WORK/err") ||
        fail "status as nobody exited $?"
    err=$(cat "$WORK/err")
    assert_contains "$err" "Cannot read $STATE: Permission denied; volumes not running are not shown (run as root)" \
        "note on the unreadable directory"
    assert_eq "$out" "No volumes." "what nobody sees without a bus"
}

case_json() {
    setup_states
    ctl --json status >"$WORK/status.json" 2>/dev/null || fail "--json status exited $?"
    cat "$WORK/status.json"
    ODD_KEY="$ODD_KEY" "$PYTHON" - "$WORK/status.json" <<'EOF' || fail "JSON checks"
import json, os, sys
doc = json.load(open(sys.argv[1]))
assert list(doc) == ["volumes"], doc
vols = {v["volume_id"]: v for v in doc["volumes"]}
assert sorted(vols) == sorted(["done1", "part1", os.environ["ODD_KEY"]]), sorted(vols)
keys = ["volume_id", "device", "device_name", "state", "size_bytes", "hydrated_bytes", "empty_bytes", "percent",
        "rate_bytes_per_second", "eta_seconds", "error_count", "running", "free_space_cold", "yielding",
        "aws"]
for v in vols.values():
    assert list(v) == keys, list(v)
    assert v["aws"] is None, v  # AWS said nothing of these
    assert v["device"] == "" and v["device_name"] == "" and v["running"] is False, v
    assert v["free_space_cold"] is False, v
    assert v["rate_bytes_per_second"] == 0 and v["eta_seconds"] == 0 and v["error_count"] == 0, v
d, p = vols["done1"], vols["part1"]
assert d["state"] == "completed" and d["size_bytes"] == 64 << 20, d
assert d["hydrated_bytes"] == d["size_bytes"] and d["percent"] == 100.0, d
assert p["state"] == "stopped" and p["size_bytes"] == 256 << 20, p
assert 0 < p["hydrated_bytes"] < p["size_bytes"] and p["hydrated_bytes"] % (512 << 10) == 0, p
assert p["percent"] == (p["hydrated_bytes"] * 1000 // p["size_bytes"]) / 10, p
print("JSON OK:", p["percent"], "% of part1")
EOF
    # One volume by key, as a script would ask.
    ctl --json status part1 2>/dev/null | "$PYTHON" -c '
import json, sys
v = json.load(sys.stdin)["volumes"]
assert [x["volume_id"] for x in v] == ["part1"], v' || fail "--json status part1"
}

case_metrics() {
    setup_states
    ctl metrics >"$WORK/metrics.prom" 2>/dev/null || fail "metrics exited $?"
    cat "$WORK/metrics.prom"
    "$PYTHON" -c 'import prometheus_client' 2>/dev/null || {
        echo "SKIP: python3-prometheus-client is not installed" >&2
        exit 77
    }
    ODD_KEY="$ODD_KEY" "$PYTHON" - "$WORK/metrics.prom" <<'EOF' || fail "Prometheus parser checks"
import os, sys
from prometheus_client.parser import text_string_to_metric_families

text = open(sys.argv[1]).read()
fams = {f.name: f for f in text_string_to_metric_families(text)}
gauges = ["ebs_hydrate_volume_size_bytes", "ebs_hydrate_volume_hydrated_bytes",
          "ebs_hydrate_volume_empty_bytes",
          "ebs_hydrate_volume_rate_bytes_per_second", "ebs_hydrate_volume_eta_seconds",
          "ebs_hydrate_volume_errors", "ebs_hydrate_volume_running", "ebs_hydrate_volume_state",
          "ebs_hydrate_volume_phase"]
assert sorted(fams) == sorted(gauges), sorted(fams)
for name in gauges:
    assert text.count("# TYPE %s gauge\n" % name) == 1, name
    assert text.count("# HELP %s " % name) == 1, name
    assert fams[name].type == "gauge" and fams[name].documentation, name
odd = os.environ["ODD_KEY"]
keys = sorted(["done1", "part1", odd])

def values(name):
    out = {}
    for s in fams[name].samples:
        assert s.labels["device"] == "" and s.labels["device_name"] == "", s
        if name == "ebs_hydrate_volume_state":
            out[(s.labels["volume_id"], s.labels["state"])] = s.value
        elif name == "ebs_hydrate_volume_phase":
            out[(s.labels["volume_id"], s.labels["phase"])] = s.value
        else:
            assert sorted(s.labels) == ["device", "device_name", "volume_id"], s
            out[s.labels["volume_id"]] = s.value
    return out

size, hyd = values("ebs_hydrate_volume_size_bytes"), values("ebs_hydrate_volume_hydrated_bytes")
assert sorted(size) == keys, sorted(size)  # the odd key survived escaping and parsing
assert size["done1"] == 64 << 20 and size["part1"] == 256 << 20 and size[odd] == 32 << 20, size
assert hyd["done1"] == size["done1"] and hyd[odd] == size[odd], hyd
assert 0 < hyd["part1"] < size["part1"], hyd
for name in ["ebs_hydrate_volume_rate_bytes_per_second", "ebs_hydrate_volume_eta_seconds",
             "ebs_hydrate_volume_errors", "ebs_hydrate_volume_running",
             "ebs_hydrate_volume_empty_bytes"]:
    assert values(name) == {k: 0.0 for k in keys}, (name, values(name))
states = ["hydrating", "paused", "completed", "failed", "stopped", "mismatched"]
want = {(k, s): 0.0 for k in keys for s in states}
want[("done1", "completed")] = want[(odd, "completed")] = want[("part1", "stopped")] = 1.0
assert values("ebs_hydrate_volume_state") == want, values("ebs_hydrate_volume_state")
phases = ["metadata", "hot-paths", "used", "free", "done", "unknown"]
want = {(k, p): 0.0 for k in keys for p in phases}
want[("done1", "done")] = want[(odd, "done")] = want[("part1", "unknown")] = 1.0
assert values("ebs_hydrate_volume_phase") == want, values("ebs_hydrate_volume_phase")
print("metrics OK:", len(fams), "families")
EOF
    grep -qF 'volume_id="odd\"key\\x"' "$WORK/metrics.prom" || fail "label value not escaped"
}

case_forget() {
    local out pid
    setup_states
    out=$(expect_exit 4 "forget as nobody" as_nobody "$CTL" --state-dir="$STATE" forget part1)
    assert_contains "$out" "forget: must be run as root" "non-root refusal"
    # A daemon resuming part1 holds its lock: forget must refuse and leave the state alone.
    hydrate --state-key=part1 --rate-limit=16M "$PART_DEV" >/dev/null 2>&1 &
    pid=$!
    # Once it holds the lock (a fixed wait was not always enough under valgrind).
    wait_for 60 lock_held "$STATE/part1.lock" || fail "the daemon took no lock on $STATE/part1.lock in 60 s"
    out=$(expect_exit 1 "forget while hydrating" ctl forget part1)
    kill "$pid"
    wait "$pid" || true
    assert_contains "$out" "part1 is being hydrated right now (an ebs-hydrated process holds $STATE/part1.lock); stop it first" \
        "refusal while locked"
    [ -f "$STATE/part1.state" ] || fail "forget removed the state of a running hydration"
    # The same with the lock held by someone else (flock), then released.
    out=$(flock "$STATE/part1.lock" "$CTL" --state-dir="$STATE" forget part1 2>&1) && fail "forget under flock succeeded"
    assert_contains "$out" "is being hydrated right now" "refusal under flock"

    out=$(ctl forget part1) || fail "forget exited $?"
    assert_eq "$out" "Forgot part1: it will be hydrated from the start next time." "message"
    [ ! -e "$STATE/part1.state" ] || fail "state file still there"
    [ -e "$STATE/done1.state.corrupt-1700000000" ] || fail "set-aside file removed"
    out=$(ctl --no-legend status 2>/dev/null)
    grep -q '^part1 ' <<<"$out" && fail "part1 still listed: $out"
    out=$(expect_exit 1 "forget again" ctl forget part1)
    assert_contains "$out" "No volume 'part1'" "unknown volume"
    out=$(expect_exit 1 "forget a path" ctl forget ../x)
    assert_contains "$out" "No volume '../x'" "not a key"
    out=$(expect_exit 1 "forget unknown" ctl forget nothere)
    [ ! -e "$STATE/nothere.lock" ] || fail "forget of an unknown volume created a lock file"
    # The next run reads the whole volume again.
    out=$(hydrate --state-key=part1 "$PART_DEV") || fail "run after forget exited $?"
    assert_contains "$out" "part1: hydrated, read 256.0 MiB of 256.0 MiB" "full read after forget"
}

# `cp a1.state b1.state`: a file is the state of the volume its name says. b1.state holds a1's
# state, so it is b1's and "mismatched", with no figures: never a second a1 at 100%. The daemon
# agrees: it sets the file aside and starts b1 over.
case_mismatched() {
    local out err dev
    dev=$(make_loop 32M)
    hydrate --state-key=a1 "$dev" >/dev/null || fail "hydrating a1 exited $?"
    cp "$STATE/a1.state" "$STATE/b1.state"

    out=$(ctl status 2>"$WORK/err") || fail "status exited $?"
    err=$(cat "$WORK/err")
    echo "$out"
    assert_contains "$err" "$STATE/b1.state holds the state of 'a1', not of 'b1': shown as mismatched" \
        "note on the mismatched file"
    assert_eq "$(tail -n +2 <<<"$out" | tr -s ' ')" \
        "a1 - - completed 100.0% 32.0 MiB - - 0 -
b1 - - mismatched - - - - - -" "one a1, and b1 as what it is"
    out=$(ctl --no-legend status b1 2>/dev/null) || fail "status b1 exited $?"
    assert_eq "$(tr -s ' ' <<<"$out")" "b1 - - mismatched - - - - - -" "status b1"
    out=$(ctl --no-legend status a1 2>/dev/null) || fail "status a1 exited $?"
    assert_eq "$(tr -s ' ' <<<"$out")" "a1 - - completed 100.0% 32.0 MiB - - 0 -" "status a1"

    ctl --json status 2>/dev/null | "$PYTHON" -c '
import json, sys
v = {x["volume_id"]: x for x in json.load(sys.stdin)["volumes"]}
assert sorted(v) == ["a1", "b1"], sorted(v)
a, b = v["a1"], v["b1"]
assert a["state"] == "completed" and a["size_bytes"] == 32 << 20 and a["percent"] == 100.0, a
assert b["state"] == "mismatched" and b["size_bytes"] == 0 and b["hydrated_bytes"] == 0, b
assert b["percent"] == 0.0 and b["error_count"] == 0 and b["free_space_cold"] is False, b' ||
        fail "--json status"

    out=$(ctl metrics 2>/dev/null) || fail "metrics exited $?"
    assert_eq "$(grep -c '^ebs_hydrate_volume_hydrated_bytes{' <<<"$out")" 1 "hydrated samples"
    assert_contains "$out" 'ebs_hydrate_volume_hydrated_bytes{volume_id="a1",device="",device_name=""} 33554432' \
        "a1 counted once"
    assert_not_contains "$out" '_bytes{volume_id="b1"' "b1 has no figures"
    assert_contains "$out" 'ebs_hydrate_volume_state{volume_id="b1",device="",device_name="",state="mismatched"} 1' \
        "b1 mismatched"
    assert_contains "$out" 'ebs_hydrate_volume_state{volume_id="b1",device="",device_name="",state="completed"} 0' \
        "b1 not completed"

    # forget acts on the file its argument names, and only on it.
    out=$(ctl forget a1) || fail "forget a1 exited $?"
    assert_eq "$out" "Forgot a1: it will be hydrated from the start next time." "forget a1"
    [ ! -e "$STATE/a1.state" ] && [ -e "$STATE/b1.state" ] || fail "forget a1 removed the wrong file"
    out=$(ctl --no-legend status 2>/dev/null)
    assert_eq "$(tr -s ' ' <<<"$out")" "b1 - - mismatched - - - - - -" "after forget a1"
    out=$(expect_exit 1 "status a1 after forget" ctl status a1)
    assert_contains "$out" "No volume 'a1'" "a1 forgotten"
    out=$(ctl forget b1) || fail "forget b1 exited $?"
    assert_eq "$out" "Forgot b1: it will be hydrated from the start next time." "forget b1"
    [ ! -e "$STATE/b1.state" ] || fail "forget b1 left b1.state"
    assert_eq "$(ctl status 2>/dev/null)" "No volumes." "after forget b1"

    # The daemon sets the copy aside and starts b1 over; ctl then shows b1's own state.
    hydrate --state-key=a1 "$dev" >/dev/null || fail "hydrating a1 again exited $?"
    cp "$STATE/a1.state" "$STATE/b1.state"
    dev=$(make_loop 16M)
    hydrate --state-key=b1 "$dev" >/dev/null 2>&1 || fail "hydrating b1 exited $?"
    ls "$STATE"/b1.state.mismatch-* >/dev/null || fail "the daemon did not set the copy aside"
    out=$(ctl --no-legend status 2>"$WORK/err") || fail "status exited $?"
    assert_eq "$(tr -s ' ' <<<"$out")" "a1 - - completed 100.0% 32.0 MiB - - 0 -
b1 - - completed 100.0% 16.0 MiB - - 0 -" "after the daemon set the copy aside"
    assert_not_contains "$(cat "$WORK/err")" "mismatched" "no note once the copy is set aside"
}

case_usage() {
    local out
    out=$(expect_exit 2 "unknown command" ctl frobnicate)
    assert_contains "$out" "Unknown command 'frobnicate'" "unknown command"
    out=$(expect_exit 2 "missing TARGET" ctl pause)
    assert_contains "$out" "Usage: ebs-hydratectl [OPTIONS] pause TARGET" "missing argument"
    out=$(expect_exit 2 "extra argument" ctl metrics extra)
    out=$(expect_exit 2 "bad RATE" ctl set-rate-limit part1 fast)
    assert_contains "$out" "Invalid RATE 'fast'" "bad rate"
    out=$(expect_exit 2 "bad option" ctl --frobnicate)
    for cmd in pause resume; do
        out=$(expect_exit 4 "$cmd as nobody" as_nobody "$CTL" "$cmd" nvme1n1)
        assert_contains "$out" "$cmd: must be run as root" "$cmd as nobody"
    done
    out=$(expect_exit 4 "set-rate-limit as nobody" as_nobody "$CTL" set-rate-limit nvme1n1 10M)
    assert_contains "$out" "set-rate-limit: must be run as root" "set-rate-limit as nobody"
    out=$(expect_exit 1 "pause without a bus" ctl pause nvme1n1)
    assert_contains "$out" "Cannot connect to the system bus" "no bus"
    out=$(expect_exit 0 "--help" "$CTL" --help)
    assert_contains "$out" "Usage: ebs-hydratectl" "help"
    out=$(expect_exit 0 "--version" "$CTL" --version)
    assert_contains "$out" "ebs-hydratectl " "version"
}

run_case
