#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The bash completion of ebs-hydratectl and ebs-hydrated (shell-completion/bash), driven as bash
# drives it: a clean `bash --norc` sources the file named after the command, finds the function
# that `complete -p` registered for it, and calls it with COMP_WORDS, COMP_CWORD, COMP_LINE and
# COMP_POINT set as bash sets them for a command line whose cursor is at its end ('=' breaks
# words, as in COMP_WORDBREAKS by default). Volume ids and kernel names come from a fake
# ebs-hydratectl on PATH that prints a status table, and from the real one on state files;
# disks from a fake /sys/block. Each option and command in the programs' own --help must be
# offered. Needs neither root nor bash-completion.
# Usage: completion.sh CASE COMPLETION-DIR PATH-TO-ebs-hydratectl PATH-TO-ebs-hydrated
CASES=(ctl-commands ctl-options ctl-targets ctl-state-dir ctl-real-status ctl-help daemon-values
    daemon-options daemon-devices daemon-help no-equals-break)
. "$(dirname "$0")/cases.sh"
. "$(dirname "$0")/lib.sh"

DIR=${2:?usage: completion.sh CASE COMPLETION-DIR PATH-TO-ebs-hydratectl PATH-TO-ebs-hydrated}
CTL=$(wrapped "${3:?}")
DAEMON=$(wrapped "${4:?}")
for f in ebs-hydratectl ebs-hydrated; do
    [ -f "$DIR/$f" ] || fail "no completion file $DIR/$f"
done

# The child shell: sources $DIR/<command>, then completes the line $1 (cursor at its end) with
# the function registered for the command. Prints COMPREPLY sorted, one a line, then a line
# "compopt ARGS" for each call of compopt (a builtin that works only under readline).
# shellcheck disable=SC2016 # expanded by the child shell
DRIVER='
dir=$1 line=$2
[[ -z ${WORDBREAKS:-} ]] || COMP_WORDBREAKS=$WORDBREAKS
compopt_calls=()
compopt() { compopt_calls+=("compopt $*"); }
read -ra tokens <<<"$line"
[[ $line == *" " ]] && tokens+=("")
COMP_WORDS=()
for t in "${tokens[@]}"; do
    if [[ $COMP_WORDBREAKS == *=* && $t == *=* ]]; then
        COMP_WORDS+=("${t%%=*}" "=")
        [[ -z ${t#*=} ]] || COMP_WORDS+=("${t#*=}")
    else
        COMP_WORDS+=("$t")
    fi
done
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE=$line
COMP_POINT=${#line}
cmd=${COMP_WORDS[0]##*/}
. "$dir/$cmd" || exit 3
spec=$(complete -p "$cmd") || exit 3
[[ $spec =~ -F\ ([^ ]+) ]] || { echo "not a -F completion: $spec" >&2; exit 3; }
COMPREPLY=()
"${BASH_REMATCH[1]}" "$cmd" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
if ((${#COMPREPLY[@]})); then printf "%s\n" "${COMPREPLY[@]}" | LC_ALL=C sort; fi
if ((${#compopt_calls[@]})); then printf "%s\n" "${compopt_calls[@]}"; fi
'

# completions LINE: what completing LINE offers (see DRIVER); the environment passes through.
completions() {
    env PATH="$WORK/bin:$PATH" bash --norc --noprofile -c "$DRIVER" driver "$DIR" "$1" ||
        fail "completing '$1': the driver exited $?"
}

flat() {
    tr '\n' ' ' <<<"$1" | sed 's/ $//'
}

# expect LINE REPLY...: completing LINE offers exactly the REPLYs (and their compopt lines)
expect() {
    local line=$1 got want
    shift
    got=$(completions "$line")
    want=$(if [ $# -gt 0 ]; then printf '%s\n' "$@"; fi)
    [ "$got" = "$want" ] ||
        fail "completing '$line': expected [$(flat "$want")], got [$(flat "$got")]"
    echo "ok: '$line' -> [$(flat "$got")]"
}

# A status table as ebs-hydratectl --no-legend prints it (src/ctl/volinfo-format.c): VOLUME,
# DEVICE, MAPPING, STATE, HYDRATED, SIZE, RATE, ETA, ERRORS, PHASE; "-" where there is none.
# Each call appends its arguments to $WORK/ctl-args.
fake_ctl() {
    mkdir -p "$WORK/bin"
    cat >"$WORK/bin/ebs-hydratectl" <<EOF
#!/bin/sh
echo "\$*" >>"$WORK/ctl-args"
cat <<'TABLE'
vol-0123456789abcdef0  /dev/nvme1n1  sdf  hydrating   9.6%    1.0 GiB  8.0 MiB/s  2min  0  used
vol-0fedcba9876543210  -             -    completed 100.0%    8.0 GiB          -     -  0  complete
it-key-1               /dev/loop3    -    paused     50.0%  512.0 MiB          -     -  0  used
-                      /dev/sdb      -    failed      0.0%          -          -     -  -  -
TABLE
EOF
    chmod +x "$WORK/bin/ebs-hydratectl"
}

# A /sys/block with whole disks of every kind, one empty loop device and disks of other kinds.
fake_sysfs() {
    local name
    for name in nvme0n1 nvme1n1 nvme10n1 sda xvdf loop0 loop7 dm-0 sr0 zram0 nvme0c0n1; do
        mkdir -p "$WORK/sys/block/$name"
        echo 2097152 >"$WORK/sys/block/$name/size"
    done
    echo 0 >"$WORK/sys/block/loop7/size"
    export EBS_HYDRATE_SYSFS_ROOT="$WORK/sys"
}

# help_words PROGRAM commands|options: the commands or long options its --help lists
help_words() {
    "$1" --help | if [ "$2" = commands ]; then
        awk '/^Commands:/ { on = 1; next } on && /^$/ { exit } on && /^  [a-z]/ { print $1 }'
    else
        grep -oE '^ +(-[a-z], )?--[a-z-]+' | grep -oE -- '--[a-z-]+'
    fi
}

case_ctl_commands() {
    expect "ebs-hydratectl " forget metrics pause resume set-rate-limit status wait
    expect "ebs-hydratectl s" set-rate-limit status
    expect "ebs-hydratectl --json st" status
    expect "ebs-hydratectl --state-dir /var/tmp re" resume
    expect "ebs-hydratectl metrics "
}

case_ctl_options() {
    expect "ebs-hydratectl --" --help --json --no-legend --output= --phase= --runtime-dir= \
        --state-dir= --timeout= --version
    expect "ebs-hydratectl wait --phase=" complete hot metadata used
    expect "ebs-hydratectl --phase h" hot
    expect "ebs-hydratectl --st" --state-dir= "compopt -o nospace"
    expect "ebs-hydratectl status --no" --no-legend
    mkdir -p "$WORK/states/a" "$WORK/states/b"
    expect "ebs-hydratectl --state-dir=$WORK/states/" "$WORK/states/a" "$WORK/states/b" \
        "compopt -o filenames"
    expect "ebs-hydratectl --state-dir $WORK/states/b" "$WORK/states/b" "compopt -o filenames"
    : >"$WORK/states/m.prom"
    expect "ebs-hydratectl metrics --output=$WORK/states/m" "$WORK/states/m.prom" \
        "compopt -o filenames"
}

case_ctl_targets() {
    fake_ctl
    expect "ebs-hydratectl status " it-key-1 loop3 nvme1n1 sdb vol-0123456789abcdef0 \
        vol-0fedcba9876543210
    expect "ebs-hydratectl pause vol-0" vol-0123456789abcdef0 vol-0fedcba9876543210
    expect "ebs-hydratectl resume n" nvme1n1
    expect "ebs-hydratectl set-rate-limit nv" nvme1n1
    expect "ebs-hydratectl set-rate-limit nvme1n1 " off
    expect "ebs-hydratectl set-rate-limit nvme1n1 off "
    # forget takes a volume (a state key), not a device
    expect "ebs-hydratectl forget " it-key-1 vol-0123456789abcdef0 vol-0fedcba9876543210
    expect "ebs-hydratectl pause nvme1n1 "
    # wait takes several targets
    expect "ebs-hydratectl wait --phase=hot nvme1n1 vol-0f" vol-0fedcba9876543210
    assert_eq "$(sort -u "$WORK/ctl-args")" "--no-legend status" "how the fake was asked"
    # A path: any file, for /dev/disk/by-id/ links and the like.
    : >"$WORK/link-1"
    expect "ebs-hydratectl pause $WORK/lin" "$WORK/link-1" "compopt -o filenames"
}

case_ctl_state_dir() {
    fake_ctl
    expect "ebs-hydratectl --state-dir=/srv/st pause i" it-key-1
    expect "ebs-hydratectl --state-dir /srv/other forget i" it-key-1
    expect "ebs-hydratectl --json resume i" it-key-1
    assert_eq "$(cat "$WORK/ctl-args")" "--state-dir=/srv/st --no-legend status
--state-dir=/srv/other --no-legend status
--no-legend status" "how the fake was asked"
}

# The real ebs-hydratectl, on state files that the real encoder wrote (the fuzzer's seeds, keyed
# as they say), with no bus to ask: its table is what the completion reads.
case_ctl_real_status() {
    local seeds
    seeds=$(cd "$(dirname "$0")/../fuzz/corpus/state" && pwd)
    mkdir -p "$WORK/bin" "$WORK/real"
    chmod 0700 "$WORK/real"
    ln -s "$CTL" "$WORK/bin/ebs-hydratectl"
    cp "$seeds/complete.state" "$WORK/real/vol-12345678.state"
    cp "$seeds/partial.state" "$WORK/real/vol-0fedcba9876543210.state"
    export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$WORK/no-bus"
    expect "ebs-hydratectl --state-dir=$WORK/real forget " vol-0fedcba9876543210 vol-12345678
    expect "ebs-hydratectl --state-dir $WORK/real status vol-1" vol-12345678
}

# Every command and long option of `ebs-hydratectl --help` is offered.
case_ctl_help() {
    local w n=0 commands options
    commands=$(completions "ebs-hydratectl ")
    options=$(completions "ebs-hydratectl --")
    for w in $(help_words "$CTL" commands); do
        grep -qxF -- "$w" <<<"$commands" || fail "command $w (in --help) is not completed"
        n=$((n + 1))
    done
    for w in $(help_words "$CTL" options); do
        grep -qE -- "^$w=?\$" <<<"$options" || fail "option $w (in --help) is not completed"
        n=$((n + 1))
    done
    [ "$n" -ge 9 ] || fail "found only $n commands and options in ebs-hydratectl --help"
    echo "ok: the $n commands and options of ebs-hydratectl --help are completed"
}

case_daemon_values() {
    expect "ebs-hydrated --mode=" full used
    expect "ebs-hydrated --mode=u" used
    expect "ebs-hydrated --mode " full used
    expect "ebs-hydrated --progress=" always auto never
    expect "ebs-hydrated --progress=a" always auto
    expect "ebs-hydrated --yield=" no yes
    expect "ebs-hydrated --aws=" auto no
    expect "ebs-hydrated -q " auto
    expect "ebs-hydrated --queue-depth=" auto
    expect "ebs-hydrated --rate-limit=" off
    expect "ebs-hydrated --block-size=1" 1M
    expect "ebs-hydrated --state-key="
    mkdir -p "$WORK/conf.d" "$WORK/conf.x"
    : >"$WORK/conf.file"
    expect "ebs-hydrated --config-dir=$WORK/conf." "$WORK/conf.d" "$WORK/conf.x" \
        "compopt -o filenames"
}

case_daemon_options() {
    expect "ebs-hydrated --" --aws= --block-size= --config-dir= --help --mode= --no-bus --progress= \
        --queue-depth= --rate-limit= --state-dir= --state-key= --version --yield=
    expect "ebs-hydrated --y" --yield= "compopt -o nospace"
    expect "ebs-hydrated --mode=used --no-" --no-bus
    expect "ebs-hydrated --no-bus /dev/sda --pro" --progress= "compopt -o nospace"
}

case_daemon_devices() {
    fake_sysfs
    expect "ebs-hydrated " loop0 nvme0n1 nvme10n1 nvme1n1 sda xvdf
    expect "ebs-hydrated nvme1" nvme10n1 nvme1n1
    expect "ebs-hydrated /" /dev/loop0 /dev/nvme0n1 /dev/nvme10n1 /dev/nvme1n1 /dev/sda /dev/xvdf
    expect "ebs-hydrated --mode=used -q 8 /dev/x" /dev/xvdf
    expect "ebs-hydrated --progress never s" sda
    # Not one of ours: any path (a /dev/disk/by-id/ link, an image).
    : >"$WORK/disk.img"
    expect "ebs-hydrated $WORK/disk" "$WORK/disk.img" "compopt -o filenames"
    # One DEVICE only.
    expect "ebs-hydrated nvme1n1 "
    expect "ebs-hydrated /dev/sda --mode=full "
}

# Every long option of `ebs-hydrated --help` is offered.
case_daemon_help() {
    local w n=0 options
    options=$(completions "ebs-hydrated --")
    for w in $(help_words "$DAEMON" options); do
        grep -qE -- "^$w=?\$" <<<"$options" || fail "option $w (in --help) is not completed"
        n=$((n + 1))
    done
    [ "$n" -ge 10 ] || fail "found only $n options in ebs-hydrated --help"
    echo "ok: the $n options of ebs-hydrated --help are completed"
}

# Where '=' does not break words, the whole "--opt=value" is the word, and so is each reply.
case_no_equals_break() {
    export WORDBREAKS=$' \t\n"\'><;|&(:'
    fake_ctl
    expect "ebs-hydrated --mode=u" --mode=used
    expect "ebs-hydrated --progress=" --progress=always --progress=auto --progress=never
    expect "ebs-hydratectl --state-dir=/srv/st pause vol-0f" vol-0fedcba9876543210
    assert_eq "$(cat "$WORK/ctl-args")" "--state-dir=/srv/st --no-legend status" \
        "how the fake was asked"
}

run_case completion/
