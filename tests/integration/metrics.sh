#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ebs-hydratectl metrics for node_exporter, against the real thing: `metrics --output` writes
# into a textfile directory, Debian's prometheus-node-exporter (textfile collector only) serves
# it over HTTP on localhost, and the ebs_hydrate_* series it shows must say what the state files
# say; promtool (Debian's prometheus) must accept the exposition without a lint finding. The
# state files come from state-make, the library's own codec: no root and no device needed. No
# system bus is reachable (DBUS_SYSTEM_BUS_ADDRESS points nowhere): running volumes, and the
# phase they report, are the unit tests' and the guest's (tests/vm).
# Usage: metrics.sh CASE PATH-TO-ebs-hydratectl PATH-TO-state-make BUILD-UNITS-DIR
CASES=(node-exporter promtool output-fails output-not-a-file output-replaces units unit-capabilities)
. "$(dirname "$0")/cases.sh"
. "$(dirname "$0")/lib.sh"

CTL_PATH=${2:?usage: metrics.sh CASE CTL STATE-MAKE UNITS-DIR}
CTL=$(wrapped "$CTL_PATH")
STATE_MAKE=${3:?}
UNITS=${4:?}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
STATE="$WORK/state"
TEXTFILE="$WORK/textfile"
mkdir -p "$STATE" "$TEXTFILE"
chmod 0700 "$STATE"
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$WORK/no-bus"
export EBS_HYDRATE_LOG_LEVEL=err # the note that the bus cannot be asked, every time
PYTHON=/usr/bin/python3 # Debian's, which has python3-prometheus-client
ODD_KEY='odd"key\x'      # escaped in labels: must reach node_exporter's output intact
MIB=$((1 << 20))
CHUNK=$((512 << 10))

ctl() {
    "$CTL" --state-dir="$STATE" "$@"
}

# The volumes, as ebs-hydrated leaves them (ctl.sh checks the same with real runs):
#   done1     64 MiB, every chunk read: completed, phase done
#   part1     256 MiB, 100 MiB read, stopped part-way: stopped, phase unknown
#   used1     128 MiB, 40 MiB read by a Mode=used run that finished: completed, phase done
#   failed1   32 MiB, all read but one unreadable chunk: failed, phase unknown, 1 error
#   b1        holds the state of a1 (a copied file): mismatched, no figures, phase unknown
#   $ODD_KEY  32 MiB, complete
make_states() {
    "$STATE_MAKE" "$STATE" done1 $((64 * MIB)) $((64 * MIB)) complete
    "$STATE_MAKE" "$STATE" part1 $((256 * MIB)) $((100 * MIB))
    "$STATE_MAKE" "$STATE" used1 $((128 * MIB)) $((40 * MIB)) used-complete
    "$STATE_MAKE" "$STATE" failed1 $((32 * MIB)) $((32 * MIB - CHUNK)) \
        "bad=$((32 * MIB - CHUNK))+$CHUNK"
    "$STATE_MAKE" "$STATE" a1 $((16 * MIB)) $((16 * MIB)) complete as=b1
    "$STATE_MAKE" "$STATE" "$ODD_KEY" $((32 * MIB)) $((32 * MIB)) complete
}

# What node_exporter must show, as Python literals for check_series.
EXPECTED='
MIB = 1 << 20
ODD = "odd\"key\\x"
size = {"done1": 64 * MIB, "part1": 256 * MIB, "used1": 128 * MIB, "failed1": 32 * MIB,
        ODD: 32 * MIB}
hydrated = {"done1": 64 * MIB, "part1": 100 * MIB, "used1": 40 * MIB,
            "failed1": 32 * MIB - (512 << 10), ODD: 32 * MIB}
errors = {"done1": 0, "part1": 0, "used1": 0, "failed1": 1, ODD: 0}
state = {"done1": "completed", "part1": "stopped", "used1": "completed", "failed1": "failed",
         "b1": "mismatched", ODD: "completed"}
phase = {"done1": "done", "part1": "unknown", "used1": "done", "failed1": "unknown",
         "b1": "unknown", ODD: "done"}
STATES = ["hydrating", "paused", "completed", "failed", "stopped", "mismatched"]
PHASES = ["metadata", "hot-paths", "used", "free", "done", "unknown"]
'

# check_series FILE: the ebs_hydrate_* families of the exposition in FILE (a scrape or our
# file) hold exactly the samples EXPECTED describes.
check_series() {
    EXPECTED="$EXPECTED" "$PYTHON" - "$1" <<'PY'
import os, sys
from prometheus_client.parser import text_string_to_metric_families
exec(os.environ["EXPECTED"])
fams = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())
        if f.name.startswith("ebs_hydrate_")}
gauges = ["ebs_hydrate_volume_size_bytes", "ebs_hydrate_volume_hydrated_bytes",
          "ebs_hydrate_volume_empty_bytes",
          "ebs_hydrate_volume_rate_bytes_per_second", "ebs_hydrate_volume_eta_seconds",
          "ebs_hydrate_volume_errors", "ebs_hydrate_volume_running",
          "ebs_hydrate_volume_state", "ebs_hydrate_volume_phase"]
assert sorted(fams) == sorted(gauges), sorted(fams)

def samples(name, extra=None):
    out = {}
    for s in fams[name].samples:
        assert fams[name].type == "gauge" and fams[name].documentation, name
        labels = dict(s.labels)
        assert labels.pop("device") == "" and labels.pop("device_name") == "", s
        key = labels.pop("volume_id")
        if extra:
            key = (key, labels.pop(extra))
        assert not labels, s
        assert key not in out, ("duplicate", s)
        out[key] = s.value
    return out

figures = sorted(size)
assert samples("ebs_hydrate_volume_size_bytes") == size, samples("ebs_hydrate_volume_size_bytes")
assert samples("ebs_hydrate_volume_hydrated_bytes") == hydrated
assert samples("ebs_hydrate_volume_errors") == errors
for name in ["ebs_hydrate_volume_rate_bytes_per_second", "ebs_hydrate_volume_eta_seconds"]:
    assert samples(name) == {k: 0 for k in figures}, (name, samples(name))
assert samples("ebs_hydrate_volume_running") == {k: 0 for k in state}
want = {(k, s): float(state[k] == s) for k in state for s in STATES}
assert samples("ebs_hydrate_volume_state", "state") == want, samples("ebs_hydrate_volume_state", "state")
want = {(k, p): float(phase[k] == p) for k in phase for p in PHASES}
assert samples("ebs_hydrate_volume_phase", "phase") == want, samples("ebs_hydrate_volume_phase", "phase")
print("series OK in %s: %d families, %d volumes" % (sys.argv[1], len(fams), len(state)))
PY
}

# free_port: a TCP port on 127.0.0.1 that nothing listens on right now
free_port() {
    "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_node_exporter DIR: prometheus-node-exporter with the textfile collector alone, reading
# DIR, on a free port of 127.0.0.1 ($PORT); waits until it answers. Stopped by the EXIT trap.
start_node_exporter() {
    command -v prometheus-node-exporter >/dev/null ||
        skip "prometheus-node-exporter is not installed (scripts/deps)"
    for _ in 1 2 3; do
        PORT=$(free_port)
        prometheus-node-exporter --collector.disable-defaults --collector.textfile \
            --collector.textfile.directory="$1" --web.listen-address="127.0.0.1:$PORT" \
            >"$WORK/node-exporter.log" 2>&1 &
        NODE_EXPORTER=$!
        if wait_for 10 scrape "$WORK/probe.txt" 2>/dev/null; then
            return 0
        fi
        kill "$NODE_EXPORTER" 2>/dev/null || true
        wait "$NODE_EXPORTER" 2>/dev/null || true
    done
    cat "$WORK/node-exporter.log" >&2
    fail "prometheus-node-exporter did not answer on 127.0.0.1:$PORT"
}

# scrape FILE: GET http://127.0.0.1:$PORT/metrics into FILE
scrape() {
    "$PYTHON" -c '
import sys, urllib.request
with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=5) as r:
    assert r.status == 200, r.status
    open(sys.argv[2], "wb").write(r.read())' "$PORT" "$1"
}

NODE_EXPORTER=
stop_node_exporter() {
    [ -z "$NODE_EXPORTER" ] || kill "$NODE_EXPORTER" 2>/dev/null || true
}
trap 'stop_node_exporter; cleanup' EXIT

# ls_names DIR: the names in DIR, hidden ones too, sorted, on one line
ls_names() {
    (cd "$1" && find . -mindepth 1 -maxdepth 1 -printf '%f\n' | sort | tr '\n' ' ')
}

case_node_exporter() {
    local out scraped="$WORK/scrape.txt"
    make_states
    ctl metrics --output="$TEXTFILE/ebs-hydrate.prom" || fail "metrics --output exited $?"
    assert_eq "$(ls_names "$TEXTFILE")" "ebs-hydrate.prom " "the textfile directory afterwards"
    assert_eq "$(stat -c %a "$TEXTFILE/ebs-hydrate.prom")" 644 "mode (node_exporter's user reads it)"
    # The same text as on standard output.
    ctl metrics >"$WORK/stdout.prom" || fail "metrics exited $?"
    cmp "$WORK/stdout.prom" "$TEXTFILE/ebs-hydrate.prom" || fail "--output differs from stdout"
    check_series "$TEXTFILE/ebs-hydrate.prom" || fail "the file's series"

    start_node_exporter "$TEXTFILE"
    scrape "$scraped" || fail "scraping node_exporter"
    # (node_exporter sorts the labels by name.)
    grep -E '^ebs_hydrate_volume_(phase|hydrated_bytes)\{.*volume_id="part1"' "$scraped"
    check_series "$scraped" || fail "the series node_exporter serves"
    # node_exporter read the file without an error, and only that file.
    "$PYTHON" - "$scraped" "$TEXTFILE/ebs-hydrate.prom" <<'PY' || fail "node_exporter's own view of the textfile"
import sys
from prometheus_client.parser import text_string_to_metric_families
fams = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())}
err = [s.value for s in fams["node_textfile_scrape_error"].samples]
assert err == [0.0], ("node_textfile_scrape_error", err)
files = [s.labels["file"] for s in fams["node_textfile_mtime_seconds"].samples]
assert [f.rsplit("/", 1)[-1] for f in files] == ["ebs-hydrate.prom"], files
print("node_exporter: no textfile error; files", files)
PY
    # A volume that changes shows at the next scrape: no restart, no stale copy.
    "$STATE_MAKE" "$STATE" part1 $((256 * MIB)) $((256 * MIB)) complete
    ctl metrics --output="$TEXTFILE/ebs-hydrate.prom" || fail "metrics --output exited $?"
    scrape "$scraped" || fail "scraping node_exporter again"
    out=$(grep -E '^ebs_hydrate_volume_phase\{.*phase="done",volume_id="part1"\}' "$scraped")
    assert_eq "${out##* }" 1 "part1's phase once complete"
    out=$(grep -E '^ebs_hydrate_volume_hydrated_bytes\{.*volume_id="part1"\}' "$scraped")
    awk -v v="${out##* }" -v want=$((256 * MIB)) 'BEGIN { exit !(v + 0 == want) }' ||
        fail "part1's hydrated bytes once complete: $out"
}

# promtool, the Prometheus project's own linter: not a word to say about the exposition.
case_promtool() {
    local out rc=0
    command -v promtool >/dev/null || skip "promtool is not installed (Debian package prometheus)"
    make_states
    ctl metrics --output="$TEXTFILE/ebs-hydrate.prom" || fail "metrics --output exited $?"
    out=$(promtool check metrics <"$TEXTFILE/ebs-hydrate.prom" 2>&1) || rc=$?
    echo "promtool check metrics: exit $rc${out:+, said: $out}"
    assert_eq "$rc" 0 "promtool's exit status"
    assert_eq "$out" "" "promtool's findings"
    # No volume at all: the families still parse (HELP and TYPE only).
    "$CTL" --state-dir="$WORK/none" metrics --output="$TEXTFILE/empty.prom" ||
        fail "metrics without volumes exited $?"
    out=$(promtool check metrics <"$TEXTFILE/empty.prom" 2>&1) || fail "promtool on no volumes: $out"
    assert_eq "$out" "" "promtool's findings without volumes"
}

# A file that cannot be written: exit 1 naming it, the old file untouched, no temporary left.
case_output_fails() {
    local out dir="$TEXTFILE"
    make_states
    out=$(expect_exit 1 "a missing directory" ctl metrics --output="$WORK/missing/ebs-hydrate.prom")
    assert_contains "$out" "Failed to write $WORK/missing/ebs-hydrate.prom: No such file or directory" \
        "message for a missing directory"
    [ ! -e "$WORK/missing" ] || fail "a missing directory was created"

    echo "old" >"$dir/ebs-hydrate.prom"
    chmod 0555 "$dir"
    if [ "$(id -u)" -eq 0 ]; then # root writes anyway: try as nobody (whose metrics are empty)
        chmod 0711 "$WORK"
        out=$(expect_exit 1 "a read-only directory" as_nobody "$CTL" --state-dir="$STATE" \
            metrics --output="$dir/ebs-hydrate.prom")
    else
        out=$(expect_exit 1 "a read-only directory" ctl metrics --output="$dir/ebs-hydrate.prom")
    fi
    chmod 0755 "$dir"
    assert_contains "$out" "Failed to write $dir/ebs-hydrate.prom: Permission denied" \
        "message for a read-only directory"
    assert_eq "$(cat "$dir/ebs-hydrate.prom")" "old" "the file after a failed write"

    # Renaming over a directory fails after the temporary file was written: it goes too.
    mkdir "$dir/taken.prom"
    out=$(expect_exit 1 "a directory in the way" ctl metrics --output="$dir/taken.prom")
    assert_contains "$out" "Failed to write $dir/taken.prom: Is a directory" "message for a directory"
    assert_eq "$(ls_names "$dir")" "ebs-hydrate.prom taken.prom " "what is left in the directory"
    assert_eq "$(ls_names "$dir/taken.prom")" "" "what is left in the directory in the way"

    out=$(expect_exit 2 "--output with status" ctl --output="$dir/x.prom" status)
    assert_contains "$out" "--output is for metrics only" "--output with another command"
    [ ! -e "$dir/x.prom" ] || fail "status --output wrote a file"
}

# Issue 23: what --output names is written to as what it is. A device node (a twin of /dev/null
# here) and a link to one (like /dev/stdout) stay what they are; a FIFO gets the figures, or an
# error at once when nobody reads it; a link to a file keeps being a link (the file is
# replaced); a link to nothing, a block device and a name ending in / are refused.
case_output_not_a_file() {
    local out dir="$WORK/odd" pid
    make_states
    ctl metrics >"$WORK/want.prom" || fail "metrics exited $?"
    mkdir "$dir"
    mknod "$dir/null" c 1 3
    ctl metrics --output="$dir/null" || fail "metrics --output=a character device exited $?"
    [ -c "$dir/null" ] || fail "the character device was replaced: $(ls -l "$dir/null")"

    ln -s /proc/self/fd/1 "$dir/stdout"
    ctl metrics --output="$dir/stdout" >"$WORK/got.prom" || fail "metrics --output=stdout exited $?"
    [ -L "$dir/stdout" ] || fail "the link to standard output was replaced: $(ls -l "$dir/stdout")"
    cmp "$WORK/want.prom" "$WORK/got.prom" || fail "what went through the link to standard output"

    mkfifo "$dir/fifo"
    out=$(expect_exit 1 "a FIFO nobody reads" timeout 10 "$CTL" --state-dir="$STATE" metrics \
        --output="$dir/fifo")
    assert_contains "$out" "Failed to write $dir/fifo: a FIFO nobody reads" "message for a FIFO nobody reads"
    cat "$dir/fifo" >"$WORK/fifo.prom" &
    pid=$!
    timeout 10 "$CTL" --state-dir="$STATE" metrics --output="$dir/fifo" || fail "metrics --output=a FIFO exited $?"
    wait "$pid"
    [ -p "$dir/fifo" ] || fail "the FIFO was replaced"
    cmp "$WORK/want.prom" "$WORK/fifo.prom" || fail "what went through the FIFO"

    echo old >"$dir/real.prom"
    ln -s real.prom "$dir/link.prom"
    ctl metrics --output="$dir/link.prom" || fail "metrics --output=a link exited $?"
    [ -L "$dir/link.prom" ] || fail "the link was replaced by a file"
    cmp "$WORK/want.prom" "$dir/real.prom" || fail "the file the link names"

    # A link another user could have planted (in a textfile directory of theirs) is not
    # followed: root would replace whatever it names.
    echo secret >"$WORK/secret"
    mkdir "$WORK/theirs"
    ln -s "$WORK/secret" "$WORK/theirs/ebs.prom"
    chown -h nobody "$WORK/theirs" "$WORK/theirs/ebs.prom"
    out=$(expect_exit 1 "a link of another user's" ctl metrics --output="$WORK/theirs/ebs.prom")
    assert_contains "$out" "Failed to write $WORK/theirs/ebs.prom: a symbolic link, not followed (it belongs to another user)" \
        "message for a link of another user's"
    assert_eq "$(cat "$WORK/secret")" secret "the file another user's link names"
    chown -h root "$WORK/theirs/ebs.prom"
    out=$(expect_exit 1 "a link in a directory of another user's" ctl metrics \
        --output="$WORK/theirs/ebs.prom")
    assert_contains "$out" "others may replace it in its directory" \
        "message for a link in a directory of another user's"
    assert_eq "$(cat "$WORK/secret")" secret "the file the link names"

    ln -s nowhere.prom "$dir/dangling.prom"
    out=$(expect_exit 1 "a link to nothing" ctl metrics --output="$dir/dangling.prom")
    assert_contains "$out" "Failed to write $dir/dangling.prom: a symbolic link to nothing" "message for a link to nothing"
    [ -L "$dir/dangling.prom" ] || fail "the link to nothing was replaced"

    mknod "$dir/blk" b 7 254
    out=$(expect_exit 1 "a block device" ctl metrics --output="$dir/blk")
    assert_contains "$out" "Failed to write $dir/blk: a block device, not a file" "message for a block device"
    [ -b "$dir/blk" ] || fail "the block device node was replaced"

    out=$(expect_exit 2 "a name ending in /" ctl metrics --output="$dir/new/")
    assert_contains "$out" "--output=$dir/new/: not a file name" "message for a name ending in /"
    assert_eq "$(ls_names "$dir")" "blk dangling.prom fifo link.prom null real.prom stdout " \
        "what is left in the directory"
}

# Replaced, not rewritten: a reader that holds the old file keeps it whole, and a reader that
# opens the file while it is written again and again always finds every family, whole.
case_output_replaces() {
    local target="$TEXTFILE/ebs-hydrate.prom" inode reader
    make_states
    ctl metrics --output="$target" || fail "metrics --output exited $?"
    inode=$(stat -c %i "$target")
    exec 3<"$target"
    ctl metrics --output="$target" || fail "metrics --output exited $?"
    [ "$(stat -c %i "$target")" != "$inode" ] || fail "the file was rewritten in place"
    cmp <(cat <&3) "$target" || fail "the old file, still open, changed"
    exec 3<&-

    "$PYTHON" - "$target" "$WORK/stop" <<'PY' &
import os, sys
n = 0
while not os.path.exists(sys.argv[2]):
    text = open(sys.argv[1]).read()
    assert text.endswith("\n") and text.count("# TYPE ") == 9, "a partial file: %r" % text[-200:]
    n += 1
print("reader: %d whole reads" % n)
PY
    reader=$!
    # The race wants many replacements; under a wrapper (valgrind: 0.7 s a run) a few check
    # the same code for memory errors, and the plain pass runs the race.
    local rounds=200
    [ -z "${EBS_HYDRATE_WRAPPER:-}" ] || rounds=10
    for _ in $(seq 1 "$rounds"); do
        ctl metrics --output="$target" || fail "metrics --output exited $?"
    done
    touch "$WORK/stop"
    wait "$reader" || fail "the reader saw a partial file"
    assert_eq "$(ls_names "$TEXTFILE")" "ebs-hydrate.prom " "no temporary file left"
}

# The shipped units: systemd-analyze verify accepts them; the directory is named alike in the
# condition, the writable paths and the command.
case_units() {
    local dir="$WORK/units" out service
    command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
    mkdir -p "$dir"
    service="$UNITS/ebs-hydrate-metrics.service"
    [ -f "$service" ] || fail "no $service (configured by CMake)"
    # verify wants the command to exist: point it at the one built here.
    sed "s|^ExecStart=[^ ]*/ebs-hydratectl |ExecStart=$(realpath "$CTL_PATH") |" "$service" \
        >"$dir/ebs-hydrate-metrics.service"
    cp "$SRC/units/ebs-hydrate-metrics.timer" "$dir/"
    out=$(cd "$dir" && systemd-analyze verify --man=no ./ebs-hydrate-metrics.service \
        ./ebs-hydrate-metrics.timer 2>&1) || fail "systemd-analyze verify: $out"
    assert_eq "$out" "" "systemd-analyze verify's findings"
    # shellcheck disable=SC2016 # ${TEXTFILE_DIR} is the unit's, expanded by systemd
    for want in '^ConditionPathIsDirectory=/var/lib/prometheus/node-exporter$' \
        '^Environment=TEXTFILE_DIR=/var/lib/prometheus/node-exporter$' \
        '^ReadWritePaths=-/var/lib/prometheus/node-exporter$' \
        '^ExecStart=/.*/ebs-hydratectl metrics --output=\${TEXTFILE_DIR}/ebs-hydrate\.prom$'; do
        grep -q -- "$want" "$service" || fail "$service has no line matching $want"
    done
    grep -q '^OnCalendar=\*:\*:00/30$' "$SRC/units/ebs-hydrate-metrics.timer" ||
        fail "the timer does not fire every 30 s by the clock"
    check_dropin "$dir"
    echo "units OK: verified, one directory throughout, the documented drop-in works"
}

# check_dropin UNIT-DIR: the drop-in of ebs-hydratectl(1) EXAMPLES, for another directory,
# replaces the condition (systemd-analyze condition loads the unit and its drop-ins as systemd
# does), and the command, with its TEXTFILE_DIR, writes there.
check_dropin() {
    local dir=$1 other="$WORK/other" out rc=0 cmd env
    mkdir -p "$dir/ebs-hydrate-metrics.service.d"
    sed -n '/^# systemctl edit ebs\\-hydrate\\-metrics.service$/,/^\.EE$/p' "$SRC/man/ebs-hydratectl.1" |
        sed -e '1d' -e '$d' -e 's/\\-/-/g' -e "s|/var/lib/node_exporter/textfile_collector|$other|g" \
            >"$dir/ebs-hydrate-metrics.service.d/other.conf"
    cat "$dir/ebs-hydrate-metrics.service.d/other.conf"
    assert_eq "$(grep -c "=$other\$" "$dir/ebs-hydrate-metrics.service.d/other.conf")" 3 \
        "the man page's drop-in names the directory three times"
    mkdir "$other"
    out=$(SYSTEMD_UNIT_PATH="$dir:" systemd-analyze condition --unit=ebs-hydrate-metrics.service 2>&1) ||
        fail "with the drop-in and $other, the conditions fail: $out"
    assert_contains "$out" "ConditionPathIsDirectory=$other succeeded" "the drop-in's condition"
    assert_not_contains "$out" /var/lib/prometheus "the shipped condition, which the drop-in empties"
    rmdir "$other"
    out=$(SYSTEMD_UNIT_PATH="$dir:" systemd-analyze condition --unit=ebs-hydrate-metrics.service 2>&1) || rc=$?
    [ "$rc" -ne 0 ] || fail "with the drop-in and no $other, the conditions hold: $out"
    out=$(cd "$dir" && systemd-analyze verify --man=no ./ebs-hydrate-metrics.service 2>&1) ||
        fail "systemd-analyze verify with the drop-in: $out"
    # What the service runs, with the drop-in's environment.
    mkdir "$other"
    env=$(sed -n 's/^Environment=TEXTFILE_DIR=//p' "$dir/ebs-hydrate-metrics.service.d/other.conf")
    cmd=$(sed -n 's/^ExecStart=//p' "$dir/ebs-hydrate-metrics.service")
    cmd=${cmd//\$\{TEXTFILE_DIR\}/$env}
    # shellcheck disable=SC2086 # the unit's command line, split into words as systemd does
    $cmd --state-dir="$STATE" || fail "the service's command with the drop-in exited $?"
    [ -s "$other/ebs-hydrate.prom" ] || fail "nothing written to $other/ebs-hydrate.prom"
}

# The service runs as root with the capabilities of its CapabilityBoundingSet= only: they must
# be enough to read a state directory that the service user owns (mode 0700, as
# StateDirectory= makes it), and without them the volumes there would be missing.
case_unit_capabilities() {
    local caps out
    [ "$(id -u)" -eq 0 ] || skip "needs root"
    caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNITS/ebs-hydrate-metrics.service")
    assert_eq "$caps" CAP_DAC_READ_SEARCH "the service's capabilities"
    chmod 0711 "$WORK"
    chown 65534:65534 "$STATE"
    as_nobody "$STATE_MAKE" "$STATE" done1 $((64 * MIB)) $((64 * MIB)) complete
    setpriv --bounding-set=-all,+dac_read_search --inh-caps=-all \
        "$CTL" --state-dir="$STATE" metrics --output="$TEXTFILE/ebs-hydrate.prom" ||
        fail "metrics with the unit's capabilities exited $?"
    out=$(grep '^ebs_hydrate_volume_hydrated_bytes{volume_id="done1"' "$TEXTFILE/ebs-hydrate.prom") ||
        fail "done1 is missing with the unit's capabilities"
    assert_eq "${out##* }" $((64 * MIB)) "done1's hydrated bytes"
    # The capability is what makes the difference.
    setpriv --bounding-set=-all --inh-caps=-all \
        "$CTL" --state-dir="$STATE" metrics --output="$TEXTFILE/none.prom" 2>/dev/null ||
        fail "metrics without capabilities exited $?"
    ! grep -q 'volume_id="done1"' "$TEXTFILE/none.prom" ||
        fail "root without CAP_DAC_READ_SEARCH read the state directory: the test proves nothing"
}

run_case
