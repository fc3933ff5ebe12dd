#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# File-system-aware hydration on the cold-EBS rig (tests/lab/ebs-rig): the plan reads metadata,
# then hot paths, then used blocks, then free space (or never, --mode=used). Witnesses that do
# not come from the daemon's own fslayout code: qemu's copy-on-read overlay (ebs-rig map: what
# was really fetched), dumpe2fs / debugfs / xfs_db (what the file system uses), sfdisk -J (where
# the partition is), and the kernel's /sys/block/loopN/stat (how much was read).
#
# Usage: fsaware.sh CASE PATH-TO-ebs-hydrated
#        fsaware.sh make-image KIND     build (or find cached) KIND = gpt-ext4 | ext4 | xfs and
#                                       print its directory (KIND.img, KIND.hot, KIND.offset)
# Images are cached under $EBS_FSAWARE_CACHE (default /var/tmp/ebs-hydrate-fsaware), keyed by a
# hash of the code that builds them: writing 2 GiB takes about a minute, a cached run seconds.
CASES=(used-mode full-order resume-across-phases unpartitioned xfs-mounted xfs-unmounted unknown-fs
       mbr-overlap)
[ "${1:-}" = make-image ] || . "$(dirname "$0")/cases.sh"
. "$(dirname "$0")/lib.sh"

HERE="$(cd "$(dirname "$0")" && pwd)"
RIG="$(cd "$HERE/../lab" && pwd)/ebs-rig"
TOOLS="$(cd "$HERE/../tools" && pwd)"
BLKIO="$TOOLS/blkio-trace"
CACHE=${EBS_FSAWARE_CACHE:-/var/tmp/ebs-hydrate-fsaware}
MIB=1048576

skip() {
    echo "SKIP: $*" >&2
    exit 77
}

need_tools() {
    local t
    for t in "$@"; do command -v "$t" >/dev/null || skip "$t missing"; done
}

# ---- images -------------------------------------------------------------------------------

# build_image KIND DIR: write DIR/KIND.img (a dirty file system: filled to ~90% with 8 MiB and
# 256 KiB files interleaved, two files of every three deleted, cleanly unmounted),
# DIR/KIND.hot (a few surviving files, paths relative to the root, for HotPaths=) and
# DIR/KIND.offset (the file system's byte offset in the image: the GPT partition's, or 0).
build_image() {
    local kind=$1 dir=$2 img size off=0 fsdev mnt avail target written=0 i=0 j d
    img="$dir/$kind.img.tmp"
    mnt=$(mktemp -d "$WORK/mnt.XXXXXX")
    case $kind in
    gpt-ext4) size=$((2048 * MIB)) ;;
    ext4 | xfs) size=$((1024 * MIB)) ;;
    *) fail "unknown image kind '$kind'" ;;
    esac
    rm -f "$img"
    truncate -s "$size" "$img"
    if [ "$kind" = gpt-ext4 ]; then
        # One Linux partition from 1 MiB to the end (less the backup GPT).
        sfdisk -q "$img" <<<$'label: gpt\nstart=2048, type=0FC63DAF-8483-4772-8E79-3D69D8477DE4, name=data' >&2
        off=$(($(sfdisk -J "$img" | "$TOOLS/json-field.py" partitiontable.partitions.0.start) * 512))
    fi
    # The partition through an offset loop device: needs no partition scanning.
    fsdev=$(loop_attach -o "$off" --sizelimit $((size - off - (off ? 1 * MIB : 0))) "$img")
    # Runs in a subshell (image_dir): this trap is its own, the caller's cleanup stays.
    # shellcheck disable=SC2064
    trap "umount '$mnt' 2>/dev/null; losetup -d '$fsdev' 2>/dev/null" EXIT
    case $kind in
    xfs) mkfs.xfs -q -f "$fsdev" ;;
    *) mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$fsdev" ;;
    esac
    mount "$fsdev" "$mnt"
    avail=$(df -B1 --output=avail "$mnt" | tail -n 1)
    target=$((avail * 90 / 100))
    for d in 0 1 2 3 4 5 6 7; do mkdir "$mnt/d$d"; done
    # Interleaved: one 8 MiB file, then eight of 256 KiB, in eight directories.
    while [ "$written" -lt "$target" ]; do
        head -c $((8 * MIB)) /dev/urandom >"$mnt/d$((i % 8))/big-$(printf %05d "$i")"
        for j in 0 1 2 3 4 5 6 7; do
            head -c 262144 /dev/urandom >"$mnt/d$((i % 8))/small-$(printf %05d-%d "$i" "$j")"
        done
        written=$((written + 10 * MIB))
        i=$((i + 1))
    done
    sync
    # Delete two files of every three, in write order (every other two), big and small alike.
    for ((n = 0; n < i; n++)); do
        ((n % 3 == 0)) || rm "$mnt/d$((n % 8))/big-$(printf %05d "$n")"
        for j in 0 1 2 3 4 5 6 7; do
            (((n * 8 + j) % 3 == 0)) || rm "$mnt/d$((n % 8))/small-$(printf %05d-%d "$n" "$j")"
        done
    done
    sync
    # Hot paths: surviving files late in the write order (far into the device, where offset
    # order would reach them last).
    {
        for n in $((i * 3 / 4 / 3 * 3)) $((i * 9 / 10 / 3 * 3)); do
            echo "d$((n % 8))/big-$(printf %05d "$n")"
        done
        n=$((i * 4 / 5))
        for j in 0 1 2 3 4 5 6 7; do
            (((n * 8 + j) % 3 == 0)) && echo "d$((n % 8))/small-$(printf %05d-%d "$n" "$j")"
        done
    } >"$dir/$kind.hot.tmp"
    while read -r d; do [ -f "$mnt/$d" ] || fail "hot path $d missing from the image"; done <"$dir/$kind.hot.tmp"
    df -h "$mnt" >&2
    umount "$mnt"
    case $kind in
    xfs) xfs_repair -n "$fsdev" >&2 ;;
    *) e2fsck -fn "$fsdev" >&2 ;;
    esac
    losetup -d "$fsdev"
    trap - EXIT
    echo "$off" >"$dir/$kind.offset"
    mv "$dir/$kind.hot.tmp" "$dir/$kind.hot"
    mv "$img" "$dir/$kind.img"
}

# image_dir KIND: the cache directory holding KIND's image, built first if missing
image_dir() {
    local kind=$1 key dir
    key=$(declare -f build_image | sha256sum | cut -c1-16)
    dir="$CACHE/$key"
    mkdir -p "$dir"
    (
        flock 9
        if ! [ -f "$dir/$kind.img" ]; then
            echo "building the $kind image in $dir (cached for later runs)" >&2
            build_image "$kind" "$dir"
        fi
    ) 9>"$dir/.lock"
    echo "$dir"
}

if [ "${1:-}" = make-image ]; then
    require_root
    image_dir "$2"
    exit 0
fi

require_root
need_tools qemu-storage-daemon qemu-img sfdisk dumpe2fs debugfs mkfs.ext4 e2fsck python3 flock
[ -e /dev/fuse ] || skip "no /dev/fuse"

DAEMON=$(wrapped "$2")
CTL="$(dirname "$DAEMON")/ebs-hydratectl" # wrapped alike, if wrapped
NAME="fsa-$CASE-$$"
STATE="$WORK/state"
CONF="$WORK/conf"
RT="$WORK/run" # the daemon's runtime directory: its volume records, which wait follows
# Short: HotPaths= is one configuration line, and lines hold at most 199 characters.
MNT=$(mktemp -d /tmp/fsa.XXXXXX)
mkdir -p -m 0700 "$STATE" # the daemon refuses a state directory open to others
mkdir -p "$CONF" "$RT"
PARTS=() # partition nodes added with partx, removed again at exit

teardown() {
    local dev
    if mountpoint -q "$MNT"; then umount "$MNT" || umount -l "$MNT" || true; fi
    for dev in "${PARTS[@]}"; do partx -d "$dev" >/dev/null 2>&1 || true; done
    [ -z "${BLKTRACE:-}" ] || "$BLKIO" drop "$BLKTRACE" || true
    "$RIG" down "$NAME" >/dev/null 2>&1 || true
    rmdir "$MNT" 2>/dev/null || true
    cleanup
}
trap teardown EXIT

# ---- byte ranges --------------------------------------------------------------------------
# ranges OP ...: byte-range arithmetic over "OFFSET LENGTH" files (tests/tools/ranges.py)
ranges() { "$TOOLS/ranges.py" "$@"; }

# ---- helpers ------------------------------------------------------------------------------

hydrate() {
    RUNTIME_DIRECTORY=$RT "$DAEMON" --no-bus --state-dir="$STATE" --config-dir="$CONF" --progress=never --state-key="$NAME" "$@"
}

now() { date +%s.%N; }
# pct A B: A as a percentage of B, one decimal
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b ? 100 * a / b : 0 }'; }
# rig_map FILE: the overlay's hydrated ranges now
rig_map() { "$RIG" map "$NAME" >"$1"; }

# rig_up KIND PROFILE: a cold rig volume over KIND's cached image; sets IMG, OFF, HOT, DEV, SIZE
rig_up() {
    local dir
    dir=$(image_dir "$1")
    IMG="$dir/$1.img" OFF=$(cat "$dir/$1.offset") HOT="$dir/$1.hot"
    DEV=$("$RIG" up "$NAME" --data "$IMG" --profile "$2")
    SIZE=$(blockdev --getsize64 "$DEV")
}

# ext4_witness: $WORK/used, free, meta: what ext4 uses / has free / keeps its metadata in, in
# bytes of the whole image, from dumpe2fs and debugfs on the cached image (not the rig: their
# reads would hydrate it). used and meta include the GPT (the protective MBR, the header and its
# entries at the start, their backup at the end) when there is one. Of the inode tables, meta has
# the blocks that hold an inode in use (dumpe2fs "Free inodes:"): the kernel reads no other; the
# rest of each table is used.
ext4_witness() {
    local spec="$IMG" gpt="$WORK/gpt"
    [ "$OFF" = 0 ] || spec="$IMG?offset=$OFF" # e2fsprogs' unix_io option
    dumpe2fs "$spec" >"$WORK/dumpe2fs" 2>/dev/null || fail "dumpe2fs $spec failed"
    grep -q '^Filesystem state: *clean$' "$WORK/dumpe2fs" || fail "the image's ext4 is not clean"
    : >"$gpt"
    [ "$OFF" = 0 ] || printf '0 %d\n%d %d\n' $((34 * 512)) $((SIZE - 33 * 512)) $((33 * 512)) >"$gpt"
    ranges ext4 "$WORK/dumpe2fs" "$OFF" free >"$WORK/free"
    ranges ext4 "$WORK/dumpe2fs" "$OFF" used >"$WORK/used.fs"
    ranges union "$WORK/used.fs" "$gpt" >"$WORK/used"
    ranges ext4 "$WORK/dumpe2fs" "$OFF" meta >"$WORK/meta.groups"
    # The journal (inode 8): its blocks, as debugfs lists them.
    debugfs -R 'blocks <8>' "$spec" 2>/dev/null | tr ' ' '\n' | grep -E '^[0-9]+$' |
        awk -v bs="$(awk '/^Block size:/ { print $3 }' "$WORK/dumpe2fs")" -v off="$OFF" \
            '{ printf "%.0f %d\n", $1 * bs + off, bs }' >"$WORK/journal"
    [ -s "$WORK/journal" ] || fail "debugfs listed no journal blocks"
    ranges union "$WORK/meta.groups" "$WORK/journal" "$gpt" >"$WORK/meta"
}

# ext4_file_ranges RELPATH...: the files' blocks in bytes of the whole image (debugfs blocks)
ext4_file_ranges() {
    local spec="$IMG" f bs
    [ "$OFF" = 0 ] || spec="$IMG?offset=$OFF"
    bs=$(awk '/^Block size:/ { print $3 }' "$WORK/dumpe2fs")
    for f in "$@"; do
        debugfs -R "blocks /$f" "$spec" 2>/dev/null | tr ' ' '\n' | grep -E '^[0-9]+$' |
            awk -v bs="$bs" -v off="$OFF" '{ printf "%.0f %d\n", $1 * bs + off, bs }' >"$WORK/f.tmp"
        [ -s "$WORK/f.tmp" ] || fail "debugfs found no blocks of /$f"
        cat "$WORK/f.tmp"
    done | sort -n >"$WORK/f.all"
    ranges union "$WORK/f.all"
}

# assert_covered NEED HAVE WHAT: every byte of range file NEED lies in range file HAVE
assert_covered() {
    local miss
    miss=$(ranges missing "$1" "$2")
    [ -z "$miss" ] || fail "$3: $(wc -l <<<"$miss") ranges, $(awk '{ s += $2 } END { printf "%.0f", s }' <<<"$miss") bytes not hydrated, first: $(head -n 3 <<<"$miss" | tr '\n' ';')"
}

# check_used_mode WHAT: after a --mode=used run: the overlay holds every used byte, reads no
# whole free chunk beyond 1% of the device, and at most MAX-PERCENT (default 45) of the device
check_used_mode() {
    local what=$1 max_percent=${2:-45} hyd used usedc extra
    rig_map "$WORK/map"
    hyd=$(ranges bytes "$WORK/map")
    used=$(ranges bytes "$WORK/used")
    ranges chunks "$WORK/used" >"$WORK/used.chunks"
    usedc=$(ranges bytes "$WORK/used.chunks")
    ranges missing "$WORK/map" "$WORK/used.chunks" >"$WORK/extra"
    extra=$(ranges bytes "$WORK/extra")
    echo "$what: device $SIZE bytes; file system uses $used ($(pct "$used" "$SIZE")%), in 512 KiB chunks $usedc ($(pct "$usedc" "$SIZE")%); overlay $hyd ($(pct "$hyd" "$SIZE")%); whole free chunks read $extra ($(pct "$extra" "$SIZE")%)"
    assert_covered "$WORK/used" "$WORK/map" "$what: used bytes (dumpe2fs/xfs_db) left cold"
    assert_le "$((hyd * 100))" "$((SIZE * max_percent))" "$what: overlay bytes, $max_percent% of the device"
    assert_le "$((extra * 100))" "$SIZE" "$what: bytes of whole free chunks read, 1% of the device"
}

# run_sampled OUT ARGS...: run the daemon with ARGS, sampling `ebs-rig map` into
# $WORK/sample.N every 0.3 s; $WORK/samples gets "N SECONDS" (when the map was back, since the
# start); sets RUN_S (wall time) and RUN_RC.
run_sampled() {
    local out=$1 pid t0 t n=0
    shift
    rm -f "$WORK"/sample.* "$WORK/samples"
    t0=$(now)
    hydrate "$@" >"$out" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        rig_map "$WORK/sample.$n" 2>/dev/null || true
        t=$(now)
        echo "$n $(awk -v a="$t" -v b="$t0" 'BEGIN { printf "%.3f", a - b }')" >>"$WORK/samples"
        n=$((n + 1))
        sleep 0.3
    done
    RUN_RC=0
    wait "$pid" || RUN_RC=$?
    RUN_S=$(awk -v a="$(now)" -v b="$t0" 'BEGIN { printf "%.3f", a - b }')
}

# traced_full_run NEED BEFORE WHAT PERMILLE [META]: a full-mode run at $FULL_RATE traced by
# blkio-trace; it must exit 0 and leave the whole device in the overlay, the trace must have seen
# every byte not in range file BEFORE (hydrated before the run) read, and every byte of range
# file NEED (WHAT, for the messages) must have been read within PERMILLE of the run's time (under
# a wrapper: by the time PERMILLE of the device had been read). Prints
# the figures; leaves the daemon's output in $WORK/out and the bytes read by then in READ_THEN.
# With META (a range file, the file system's metadata), `ebs-hydratectl wait --phase=metadata`
# and `--phase=hot` run beside it, each marking the trace when it returns: neither may return
# before the block layer has read all of META (and, for hot, all of NEED), nor after the run.
traced_full_run() {
    local need=$1 before=$2 what=$3 permille=$4 meta=${5:-} rc=0 q c run read_total missed marks
    local phase waiters=() mark
    BLKTRACE="fsa-$$"
    "$BLKIO" start "$BLKTRACE" "$DEV" || fail "cannot trace the block layer (blkio-trace start)"
    if [ -n "$meta" ]; then
        for phase in metadata hot; do
            ("$CTL" --runtime-dir="$RT" --state-dir="$STATE" wait --phase=$phase --timeout=600 \
                "$NAME" >/dev/null 2>&1 && "$BLKIO" mark "$BLKTRACE" "wait-$phase") &
            waiters+=($!)
        done
    fi
    hydrate --mode=full --rate-limit="$FULL_RATE" "$DEV" >"$WORK/out" 2>&1 || rc=$?
    for mark in "${waiters[@]}"; do wait "$mark" || true; done
    "$BLKIO" stop "$BLKTRACE" "$WORK/blk" || fail "blkio-trace stop failed"
    BLKTRACE=
    cat "$WORK/out"
    assert_eq "$rc" 0 "full-mode run's exit status"
    assert_eq "$("$RIG" hydrated "$NAME" | awk '{ print $1 }')" "$SIZE" "bytes in the overlay at the end"
    read -r _ q _ c _ run _ READ_THEN _ read_total _ missed marks <<<"$("$BLKIO" when "$WORK/blk" "$need" "$before" "$SIZE")"
    echo "block layer: run $run s, read $read_total bytes; $what all asked for by $q s ($(pct "$q" "$run")%), all read by $c s ($(pct "$c" "$run")% of the run), device read by then $READ_THEN bytes ($(pct "$READ_THEN" "$SIZE")%)"
    assert_eq "$missed" 0 "bytes of the device neither in the trace's reads nor hydrated before the run"
    [ "$c" != never ] || fail "$what: the trace never saw it all read"
    if [ -n "${EBS_HYDRATE_WRAPPER:-}" ]; then
        # Under a wrapper the mapping takes the wrapper's time, not ours: the order is checked
        # in the bytes the device had read by then (at a rate limit, the same share of the run
        # but for the mapping's time).
        assert_le "$((READ_THEN * 1000))" "$((SIZE * permille))" \
            "bytes read until $what was read, per mille of the device"
    else
        assert_le "$(awk -v a="$c" -v b="$run" 'BEGIN { printf "%d", 1000 * a / b }')" "$permille" \
            "time until $what was read, per mille of the run"
    fi
    [ -n "$meta" ] || return 0
    check_wait_mark "$marks" hot "$c" "$run" "$what"
    read -r _ _ _ c _ <<<"$("$BLKIO" when "$WORK/blk" "$meta" "$before" "$SIZE")"
    check_wait_mark "$marks" metadata "$c" "$run" "the metadata"
}

# full_rate RATE: $FULL_RATE, the rate of traced_full_run. The metadata's share of the run is its
# share of the bytes (the rate limit paces it too) plus the mapping, a fixed time: at 64 MiB/s
# ext4's metadata and hot files were read by 4.7% of the run (35 s) and XFS's by 9.1% at
# 48 MiB/s (22 s). Under a wrapper the mapping is slower (valgrind's took 2.5 s longer), and
# traced_full_run checks the share of the bytes instead, which the order sets and the rate barely
# moves: there the runs go four times as fast (valgrind's at 256 and 192 MiB/s: 23-26 and 21-22 s
# against 51 and 32 s at 64 and 48; bytes read when the metadata was done 4.1% and 8.6% of the
# device, 3.2% and 6.6% at the slower rates, limits 10% and 15%). RATE: whole MiB/s, "64M".
full_rate() {
    FULL_RATE=$1
    [ -z "${EBS_HYDRATE_WRAPPER:-}" ] || FULL_RATE=$((${1%M} * 4))M
}

# check_wait_mark MARKS PHASE READ RUN WHAT: the trace's mark of `wait --phase=PHASE` (in MARKS,
# "mark_LABEL S" pairs) came once WHAT had been read (READ s) and before the run ended (RUN s)
check_wait_mark() {
    local at
    at=$(awk -v k="mark_wait-$2" '{ for (i = 1; i < NF; i += 2) if ($i == k) print $(i + 1) }' <<<"$1")
    [ -n "$at" ] || fail "wait --phase=$2 did not return during the run"
    echo "wait --phase=$2 returned at $at s; $5 all read at $3 s (block layer), the run ended at $4 s"
    [ "$3" != never ] || fail "$5: the trace never saw it all read"
    awk -v a="$at" -v c="$3" 'BEGIN { exit !(a >= c) }' ||
        fail "wait --phase=$2 returned at $at s, before $5 was all read ($3 s)"
}

# mount_rig_partition: the rig's loop device's first partition (partx: the rig's loop device is
# not partition-scanned) mounted read-only without touching the journal at $MNT; or the device
# itself when OFF is 0. Sets MOUNTED_DEV.
mount_rig_partition() {
    local fstype=$1 opts=ro,noload
    [ "$fstype" = xfs ] && opts=ro,norecovery
    MOUNTED_DEV=$DEV
    if [ "$OFF" != 0 ]; then
        partx -a "$DEV" >/dev/null 2>&1 || true
        PARTS+=("$DEV")
        wait_for 5 test -b "${DEV}p1" || fail "partx -a $DEV made no ${DEV}p1"
        MOUNTED_DEV=${DEV}p1
    fi
    mount -t "$fstype" -o "$opts" "$MOUNTED_DEV" "$MNT" || fail "mount -o $opts $MOUNTED_DEV failed"
}

# ---- cases --------------------------------------------------------------------------------

# ctl_says STATE FREE-SPACE-COLD PHASE WHAT: ebs-hydratectl, from the state file alone, shows the
# volume as STATE, with "free_space_cold" FREE-SPACE-COLD (true|false) in JSON, and PHASE in the
# table's last column
ctl_says() {
    local json table
    json=$("$CTL" --state-dir="$STATE" --json status "$NAME" 2>/dev/null) || fail "$4: ebs-hydratectl --json status exited $?"
    table=$("$CTL" --state-dir="$STATE" status "$NAME" 2>/dev/null) || fail "$4: ebs-hydratectl status exited $?"
    echo "$4: $(tail -n 1 <<<"$table")"
    assert_eq "$("$TOOLS/json-field.py" volumes.0.state volumes.0.free_space_cold <<<"$json")" "$1 $2" "$4: ebs-hydratectl state and free_space_cold"
    assert_eq "$(tail -n 1 <<<"$table" | sed 's/.*  //')" "$3" "$4: ebs-hydratectl PHASE"
}

# The dirty GPT ext4 image, unmounted: --mode=used reads every used byte and (almost) no free
# chunk, at most 45% of the device; a --mode=full run then reads the rest. Between them the
# state file says what ebs-hydratectl shows: completed by Mode=used; stopped once a full run
# has begun (SIGTERM after 3 s); completed by Mode=used again when a used-mode run finds nothing
# left; completed.
case_used_mode() {
    local out t0 s hyd pid rc=0
    rig_up gpt-ext4 seed
    ext4_witness
    t0=$(now)
    out=$(hydrate --mode=used "$DEV" 2>&1) || fail "used-mode run exited $?: $out"
    s=$(awk -v a="$(now)" -v b="$t0" 'BEGIN { printf "%.2f", a - b }')
    echo "$out"
    echo "used-mode run: $s s"
    assert_contains "$out" "plan: metadata " "plan log line"
    check_used_mode "used-mode"
    ctl_says completed true "done (Mode=used)" "after the used-mode run"
    # exec: $! must be the daemon, not a subshell running the function
    (exec "$DAEMON" --no-bus --state-dir="$STATE" --config-dir="$CONF" --progress=never \
        --state-key="$NAME" --mode=full --rate-limit=24M "$DEV" >"$WORK/out" 2>&1) &
    pid=$!
    sleep 3
    kill -TERM "$pid"
    wait "$pid" || rc=$?
    cat "$WORK/out"
    assert_eq "$rc" 143 "full-mode run stopped by SIGTERM: exit status"
    ctl_says stopped false - "after 3 s of a full-mode run"
    out=$(hydrate --mode=used "$DEV" 2>&1) || fail "second used-mode run exited $?: $out"
    echo "$out"
    assert_contains "$out" "already hydrated (Mode=used: " "second used-mode run"
    ctl_says completed true "done (Mode=used)" "after the second used-mode run"
    t0=$(now)
    out=$(hydrate --mode=full "$DEV" 2>&1) || fail "full-mode run after the used-mode run exited $?: $out"
    echo "$out"
    echo "full-mode run after it: $(awk -v a="$(now)" -v b="$t0" 'BEGIN { printf "%.2f", a - b }') s"
    hyd=$("$RIG" hydrated "$NAME" | awk '{ print $1 }')
    assert_eq "$hyd" "$SIZE" "bytes in the overlay after the full-mode run"
    ctl_says completed false - "after the full-mode run"
}

# Full mode with HotPaths= on the mounted partition: the metadata (dumpe2fs: superblocks, group
# descriptors, reserved GDT, bitmaps, the inode table blocks that hold an inode in use; debugfs:
# the journal; the GPT) and the hot files' blocks (debugfs) are all hydrated within the first 10%
# of the run's wall time, and `ebs-hydratectl wait` says metadata and hot paths only once they
# are (the block layer's trace: the wait marks it when it returns), while
# offset order would reach the hot files (75-90% into the device) last. The run is rate-limited
# (24 MiB/s, about 90 s). "Hydrated": the block layer completed a read of the byte on the rig's
# loop device (tests/tools/blkio-trace: the kernel's tracepoints, so the daemon's own accounting
# plays no part; a completed read is one qemu has fetched), or it was in the overlay before the
# run (partx and mount read some). The trace is checked against the overlay: together with what
# was there before, it saw every byte the overlay holds at the end.
case_full_order() {
    local hot=() f hotlist="" pre
    rig_up gpt-ext4 seed
    ext4_witness
    mapfile -t hot <"$HOT"
    ext4_file_ranges "${hot[@]}" >"$WORK/hot"
    mount_rig_partition ext4
    for f in "${hot[@]}"; do hotlist="${hotlist:+$hotlist }$MNT/$f"; done
    printf '[Hydrate]\nHotPaths=%s\n' "$hotlist" >"$CONF/hydrate.conf"
    cat "$CONF/hydrate.conf"
    rig_map "$WORK/premount"
    pre=$(ranges bytes "$WORK/premount")
    echo "hydrated by partx and mount before the run: $pre bytes"
    ranges union "$WORK/meta" "$WORK/hot" >"$WORK/first"
    echo "metadata $(ranges bytes "$WORK/meta") bytes, hot files $(ranges bytes "$WORK/hot") bytes (witnesses)"
    full_rate 64M
    traced_full_run "$WORK/first" "$WORK/premount" "metadata + hot files" 100 "$WORK/meta"
    assert_contains "$(cat "$WORK/out")" "plan: metadata " "plan log line"
    grep -q "hot paths 0 B\|hot paths 0\b" "$WORK/out" && fail "the plan found no hot path bytes"
    # Not merely a fast run: most of the device was still cold then.
    assert_le "$((READ_THEN * 100))" "$((SIZE * 50))" "bytes read when metadata and hot files were done, 50%"
}

# kill -9 during the used stage, restart: completes, reads nothing twice beyond the in-flight
# and checkpoint margin, and every used byte is hydrated.
case_resume_across_phases() {
    local sock log listener base after hyd status killed out margin est
    rig_up gpt-ext4 seed
    ext4_witness
    sock="$WORK/notify.sock" log="$WORK/notify.log"
    python3 "$HERE/notify-listener.py" "$sock" "$log" 120 &
    listener=$!
    wait_for 5 test -S "$sock" || fail "notify listener did not start"
    base=$(sectors_read "$DEV")
    # Metadata is about 5% of this device; the used stage runs to about 35% read. A fixed
    # depth of 20 (what QueueDepth=auto reached here before it was freed of the volume-size
    # bound) keeps the run slow enough for a STATUS= (every 2 s) to be sent before the kill.
    kill_at_percent 18 "$DEV" "$base" env NOTIFY_SOCKET="$sock" "$DAEMON" --no-bus \
        --state-dir="$STATE" --config-dir="$CONF" --progress=never --state-key="$NAME" \
        --mode=used --queue-depth=20 "$DEV"
    killed=$(($(sectors_read "$DEV") - base))
    echo "killed run: read $((killed * 512)) bytes, overlay then $("$RIG" hydrated "$NAME" | awk '{ print $1 }') bytes"
    status=$(grep '^STATUS=' "$log" | tail -n 1 || true)
    echo "last STATUS= before the kill: $status"
    kill "$listener" 2>/dev/null || true
    assert_contains "$status" "metadata done" "STATUS= at the kill"
    assert_contains "$status" ", used " "STATUS= at the kill (in the used stage)"
    out=$(hydrate --mode=used "$DEV" 2>&1) || fail "resumed run exited $?: $out"
    echo "$out"
    after=$(($(sectors_read "$DEV") - base))
    rig_map "$WORK/map"
    hyd=$(ranges bytes "$WORK/map")
    echo "read over both runs: $((after * 512)) bytes, overlay $hyd bytes: read twice $(pct $((after * 512 - hyd)) "$SIZE")% of the device"
    # The margin of rig/cold-resume-after-kill before the depth was freed of the volume's size:
    # 2% of the volume, plus what the file system discovery of each of the two runs reads
    # (libblkid's probes and libext2fs's bitmaps, with the kernel's readahead:
    # discovery_sectors in lib.sh, measured now that the used blocks are hydrated). What
    # completed after the last checkpoint (0.5% of the volume) and what was in flight (the
    # killed run's 20 reads of 1 MiB) make less than the 2%.
    local disc
    disc=$(($(discovery_sectors "$DEV") * 512))
    est=$((SIZE * 5 / 1000 + 20 * MIB + 2 * disc)) # the killed run's --queue-depth=20
    margin=$((SIZE * 2 / 100 + 2 * disc))
    echo "read twice allowed: $margin bytes (2% of the device + 2 x $disc bytes of discovery; checkpoint step + queue depth + discovery: $(pct "$est" "$SIZE")%)"
    assert_le "$((after * 512))" "$((hyd + margin))" "bytes read over both runs, overlay + margin"
    check_used_mode "resumed used-mode"
}

# An ext4 file system on the whole device, no partition table.
case_unpartitioned() {
    local out
    rig_up ext4 seed
    ext4_witness
    out=$(hydrate --mode=used "$DEV" 2>&1) || fail "used-mode run exited $?: $out"
    echo "$out"
    assert_contains "$out" "plan: metadata " "plan log line"
    check_used_mode "unpartitioned used-mode"
}

# XFS, mounted read-only (its free space is only known mounted, through GETFSMAP): --mode=used
# reads the used blocks (xfs_db freesp on the image: used = the rest, AG headers, inodes and log
# included) and every surviving file's blocks (filefrag, FIEMAP), and little else.
case_xfs_mounted() {
    local out bs agblocks
    need_tools xfs_db mkfs.xfs filefrag
    rig_up xfs seed
    bs=$(xfs_db -r -c 'sb 0' -c 'p blocksize' "$IMG" | awk '{ print $3 }')
    agblocks=$(xfs_db -r -c 'sb 0' -c 'p agblocks' "$IMG" | awk '{ print $3 }')
    xfs_db -r -c 'freesp -d' "$IMG" >"$WORK/freesp"
    ranges xfs-free "$WORK/freesp" "$bs" "$agblocks" >"$WORK/free"
    printf '0 %d\n' "$SIZE" >"$WORK/all"
    ranges missing "$WORK/all" "$WORK/free" >"$WORK/used"
    [ "$(ranges bytes "$WORK/free")" -gt $((SIZE / 3)) ] || fail "xfs_db freesp found too little free space"
    mount_rig_partition xfs
    out=$(hydrate --mode=used "$DEV" 2>&1) || fail "used-mode run exited $?: $out"
    echo "$out"
    assert_contains "$out" "plan: metadata " "plan log line"
    # Not 45%: XFS spreads these small files so that chunks of 512 KiB hold 44.6% of this
    # device; the bound is the used chunks plus 1% (whole free chunks read).
    check_used_mode "xfs used-mode" 100
    # The files' own extents, as the kernel maps them (FIEMAP on the mounted files).
    find "$MNT" -type f -exec filefrag -v -b1 {} + >"$WORK/ff"
    ranges fiemap 0 "$WORK/ff" >"$WORK/files.all"
    ranges union "$WORK/files.all" >"$WORK/files"
    echo "xfs: $(find "$MNT" -type f | wc -l) files, $(ranges bytes "$WORK/files") bytes of extents"
    assert_covered "$WORK/files" "$WORK/map" "xfs: file extents (FIEMAP) left cold"
}

# XFS made with xfsprogs' defaults (no reverse-mapping btree, so even a mounted file system's
# GETFSMAP cannot say which blocks are metadata), not mounted, in full mode: the plan finds its
# metadata by reading the AGs itself, and every such block is read within the first 15% of a
# rate-limited run (24 MiB/s, about 45 s): offset order would reach the last AG's headers at 75%.
# Not 10% as for ext4: the metadata is 6.5% of this small device (its log alone is 64 MiB), and
# the run measured 9.9%. The witness is xfs_db's own census of the image
# (blockget, then blockuse for every block of each AG): the AG headers, the free-space, inode,
# free-inode and refcount btrees, the inode chunks and the log. The timing, as in full-order,
# from the block layer (blkio-trace), and so is the check of `ebs-hydratectl wait`.
case_xfs_unmounted() {
    local out bs agblocks agcount agblklog ag cmds=()
    need_tools xfs_db
    rig_up xfs seed
    bs=$(xfs_db -r -c 'sb 0' -c 'p blocksize' "$IMG" | awk '{ print $3 }')
    agblocks=$(xfs_db -r -c 'sb 0' -c 'p agblocks' "$IMG" | awk '{ print $3 }')
    agcount=$(xfs_db -r -c 'sb 0' -c 'p agcount' "$IMG" | awk '{ print $3 }')
    agblklog=$(xfs_db -r -c 'sb 0' -c 'p agblklog' "$IMG" | awk '{ print $3 }')
    xfs_db -r -c version "$IMG" | grep -q RMAPBT && fail "the image has a reverse-mapping btree: not the default XFS this case is about"
    # xfs_db's file system block numbers: the AG number above agblklog bits of block number
    for ((ag = 0; ag < agcount; ag++)); do
        cmds+=(-c "fsblock $((ag << agblklog))" -c "blockuse -c $agblocks")
    done
    xfs_db -r -c 'blockget -n' "${cmds[@]}" "$IMG" >"$WORK/blockuse" 2>&1 || fail "xfs_db blockget/blockuse failed"
    ranges xfs-use "$WORK/blockuse" "$bs" "$agblocks" sb agf agi agfl btbno btcnt btino btfino \
        btrefcnt btrmap inode log >"$WORK/meta"
    echo "xfs_db: $(wc -l <"$WORK/blockuse") blocks typed; metadata $(ranges bytes "$WORK/meta") bytes ($(awk '{ print $5 }' "$WORK/blockuse" | sort | uniq -c | sort -rn | head -n 12 | awk '{ printf "%s %s, ", $2, $1 }'))"
    [ "$(ranges bytes "$WORK/meta")" -gt $((4 * MIB)) ] || fail "xfs_db found too little metadata"
    rig_map "$WORK/before"
    full_rate 48M
    traced_full_run "$WORK/meta" "$WORK/before" "the XFS metadata" 150 "$WORK/meta"
    out=$(grep -m1 'plan: metadata ' "$WORK/out") || fail "no plan log line"
    case $out in *"plan: metadata 0 B,"*) fail "the plan found no XFS metadata: $out" ;; esac
}

# No file system (zeroes): as before the plan, the whole device in offset order, in either
# mode (unknown means used).
case_unknown_fs() {
    local out n s prev=0 hyd end bad=0 mode
    for mode in used full; do
        NAME="fsa-$CASE-$mode-$$"
        DEV=$("$RIG" up "$NAME" --profile seed --size 256M)
        SIZE=$(blockdev --getsize64 "$DEV")
        run_sampled "$WORK/out" --mode=$mode --rate-limit=24M "$DEV"
        cat "$WORK/out"
        assert_eq "$RUN_RC" 0 "--mode=$mode run's exit status"
        assert_eq "$("$RIG" hydrated "$NAME" | awk '{ print $1 }')" "$SIZE" "--mode=$mode: bytes in the overlay"
        # Offset order: in every sample, the hydrated bytes are a prefix of the device but
        # for what is in flight (up to 32 MiB here) and for the last 4 MiB, which the start-up
        # probe (libblkid: a backup GPT, RAID superblocks) reads first.
        printf '%d %d\n' $((SIZE - 4 * MIB)) $((4 * MIB)) >"$WORK/tail"
        echo "--mode=$mode: hydrated at the first sample, in the last 4 MiB: $(ranges inter "$WORK/sample.0" "$WORK/tail" | tr '\n' ' ')"
        while read -r n s; do
            [ -s "$WORK/sample.$n" ] || continue
            ranges missing "$WORK/sample.$n" "$WORK/tail" >"$WORK/head"
            hyd=$(ranges bytes "$WORK/head")
            end=$(awk 'END { printf "%.0f", $1 + $2 }' "$WORK/head")
            echo "sample $n at $s s: hydrated $hyd bytes below the last 4 MiB, up to $end"
            if [ $((end - hyd)) -gt $((32 * MIB)) ] || [ "$hyd" -lt "$prev" ]; then
                bad=$((bad + 1))
            fi
            prev=$hyd
        done <"$WORK/samples"
        echo "--mode=$mode: $RUN_S s, $(wc -l <"$WORK/samples") samples, all in offset order"
        assert_eq "$bad" 0 "--mode=$mode: samples out of offset order"
        "$RIG" down "$NAME" >/dev/null 2>&1
        rm -f "$STATE"/*
        prev=0
    done
}

# Issue 15: an MBR whose partition 2 lies inside partition 1 (a clean ext4 that calls those bytes
# free) and holds 40 MiB of data. Partition 2 is not scanned, so all of it is used: --mode=used
# reads it (the overlay holds every byte of it) and still leaves most of the ext4's free space
# cold. The witness that the bytes are free to the ext4 is dumpe2fs.
case_mbr_overlap() {
    local out img="$WORK/mbr-overlap.img" p2=$((150 * MIB)) p2_size=$((40 * MIB))
    truncate -s $((208 * MIB)) "$img"
    mkfs.ext4 -q -F -E offset=$MIB,lazy_itable_init=0,lazy_journal_init=0,nodiscard "$img" \
        $((206 * 1024)) || fail "mkfs.ext4 failed"
    # sfdisk refuses overlapping partitions: the table by hand, Linux [1, 207) and [150, 190) MiB
    # (clear of the ext4's metadata: its journal at 89 MiB, flex group 1's tables at 129 MiB)
    "$TOOLS/write-mbr.py" "$img" 1:206 150:40 || fail "cannot write the MBR"
    head -c "$p2_size" /dev/urandom |
        dd of="$img" bs=1M seek=$((p2 / MIB)) iflag=fullblock conv=notrunc status=none
    e2fsck -fn "$img?offset=$MIB" >&2 || fail "the data of partition 2 broke the ext4"
    dumpe2fs "$img?offset=$MIB" >"$WORK/dumpe2fs" 2>/dev/null || fail "dumpe2fs failed"
    ranges ext4 "$WORK/dumpe2fs" "$MIB" free >"$WORK/free"
    ranges ext4 "$WORK/dumpe2fs" "$MIB" used >"$WORK/used.fs"
    printf '%d %d\n' "$p2" "$p2_size" >"$WORK/p2"
    [ "$(ranges bytes <(ranges inter "$WORK/p2" "$WORK/free"))" -gt $((30 * MIB)) ] ||
        fail "dumpe2fs: partition 2 is not in the ext4's free space; the case tests nothing"
    IMG=$img OFF=$MIB
    DEV=$("$RIG" up "$NAME" --data "$IMG" --profile seed)
    SIZE=$(blockdev --getsize64 "$DEV")
    # Used: the MBR and the gap after it, the ext4's used blocks, partition 2, the tail.
    printf '0 %d\n%d %d\n' "$MIB" $((207 * MIB)) $((SIZE - 207 * MIB)) >"$WORK/table"
    ranges union "$WORK/table" "$WORK/used.fs" "$WORK/p2" >"$WORK/used"
    out=$(hydrate --mode=used "$DEV" 2>&1) || fail "used-mode run exited $?: $out"
    echo "$out"
    rig_map "$WORK/map"
    assert_covered "$WORK/p2" "$WORK/map" "partition 2 (inside the ext4's free space)"
    check_used_mode "mbr-overlap used-mode" 50
    assert_contains "$out" "partition 2: overlaps partition 1, treated as used" "the layout's note"
    ctl_says completed true "done (Mode=used)" "after the used-mode run"
}

run_case
