#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks on the man pages, run by ctest (tests/CMakeLists.txt, tests named man/*).
#
#   check.sh render PAGE            groff formats PAGE without a single warning, for the terminal
#                                   and for PostScript; PAGE is plain ASCII and writes every
#                                   option dash as \- (a bare "-" may render as a hyphen); and
#                                   "man -l PAGE", as a reader runs it (80 columns, in the C and
#                                   C.UTF-8 locales), writes nothing to stderr.
#   check.sh options PAGE PROGRAM   PROGRAM --help and PAGE document the same options: each long
#                                   and short option of --help appears in the OPTIONS section of
#                                   PAGE, and each long option anywhere in PAGE is one --help
#                                   knows, unless PAGE declares it as another program's with a
#                                   comment line '.\" man-check: foreign-options --opt ...'.
# Exits 0 on success, 1 on a finding, 2 on bad usage, 77 (skip) when groff is not installed, or
# when man is not and everything else passed.
set -euo pipefail

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

usage() {
    echo "Usage: $0 render PAGE | options PAGE PROGRAM" >&2
    exit 2
}

# The page without roff comment lines, with every \- turned into a plain dash.
page_text() {
    grep -v '^\.\\"' "$1" | sed 's/\\-/-/g'
}

long_options() {
    grep -oE -- '--[a-z][a-z0-9-]*[a-z0-9]' | sort -u
}

render() {
    local page=$1 device out status=0

    if ! command -v groff >/dev/null 2>&1; then
        echo "SKIP: groff is not installed (Debian package groff-base)" >&2
        exit 77
    fi
    for device in utf8 ps; do
        out=$(LC_ALL=C groff -man -ww -z -t -T"$device" "$page" 2>&1) ||
            fail "groff -T$device failed on $page: $out"
        if [ -n "$out" ]; then
            echo "groff -T$device warnings for $page:" >&2
            echo "$out" >&2
            status=1
        fi
    done
    if LC_ALL=C grep -n '[^ -~]' "$page" >&2; then
        echo "non-ASCII characters or tabs above: use roff escapes such as \\(em" >&2
        status=1
    fi
    if grep -v '^\.\\"' "$page" | grep -n -e '--' -e '\\f[BIR]-' >&2; then
        echo "bare dashes above: write options as \\-\\-name and \\-x" >&2
        status=1
    fi
    man_l "$page" || status=1
    [ "$status" -eq 0 ] || fail "$page does not render cleanly"
    if ! command -v man >/dev/null 2>&1; then
        echo "SKIP: groff is fine with $page, but man is not installed (Debian package man-db)" >&2
        exit 77
    fi
    echo "OK: $page renders without warnings"
}

# man -l PAGE as a reader runs it, with its own groff options and warnings; not a word on stderr.
man_l() {
    local page=$1 locale out status=0

    command -v man >/dev/null 2>&1 || return 0
    for locale in C C.UTF-8; do
        out=$(env -u MAN_KEEP_FORMATTING -u MANOPT -u MANROFFOPT MANWIDTH=80 MANPAGER=cat \
            PAGER=cat LC_ALL="$locale" man -l "$page" 2>&1 >/dev/null) || {
            echo "LC_ALL=$locale man -l $page exited $?" >&2
            status=1
        }
        if [ -n "$out" ]; then
            echo "LC_ALL=$locale MANWIDTH=80 man -l $page wrote to stderr:" >&2
            echo "$out" >&2
            status=1
        fi
    done
    return "$status"
}

options() {
    local page=$1 program=$2 help section foreign opt status=0 wrapper=()

    # Under a test wrapper such as valgrind (tests/CMakeLists.txt), PROGRAM runs under it too.
    [ -z "${EBS_HYDRATE_WRAPPER:-}" ] || IFS=';' read -ra wrapper <<<"$EBS_HYDRATE_WRAPPER"
    help=$("${wrapper[@]}" "$program" --help) || fail "$program --help exited $?"
    section=$(page_text "$page" | sed -n '/^\.SH OPTIONS/,/^\.SH /p')
    [ -n "$section" ] || fail "$page has no OPTIONS section"
    foreign=$(sed -n 's/^\.\\" man-check: foreign-options //p' "$page" | tr ' ' '\n')

    for opt in $(long_options <<<"$help"); do
        grep -qE -- "${opt}([^a-z0-9-]|$)" <<<"$section" || {
            echo "$opt is in '$program --help' but not in the OPTIONS of $page" >&2
            status=1
        }
    done
    for opt in $(grep -oE '^ +-[A-Za-z0-9]' <<<"$help" | tr -d ' '); do
        grep -qE -- "${opt}([^A-Za-z0-9-]|$)" <<<"$section" || {
            echo "$opt is in '$program --help' but not in the OPTIONS of $page" >&2
            status=1
        }
    done
    for opt in $(page_text "$page" | long_options); do
        grep -qE -- "${opt}([^a-z0-9-]|$)" <<<"$help" && continue
        grep -qxF -- "$opt" <<<"$foreign" && continue
        echo "$opt is documented in $page but '$program --help' does not know it" >&2
        status=1
    done
    [ "$status" -eq 0 ] || fail "$page and '$program --help' disagree"
    echo "OK: $page and '$program --help' document the same options"
}

case "${1:-}" in
render)
    [ $# -eq 2 ] || usage
    render "$2"
    ;;
options)
    [ $# -eq 3 ] || usage
    options "$2" "$3"
    ;;
*)
    usage
    ;;
esac
