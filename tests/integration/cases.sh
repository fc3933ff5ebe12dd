# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# The cases of an integration script, listed once: the script sets CASES=(...) and sources this
# file with its arguments before anything else. `SCRIPT --list` prints the cases, from which
# tests/CMakeLists.txt registers one test each (ebs_hydrate_script_cases); `SCRIPT CASE ...` sets
# $CASE, and run_case runs case_<CASE> (dashes as underscores) once the script is set up.

# shellcheck disable=SC2153 # CASES is the sourcing script's
if [ "${1:-}" = --list ]; then
    printf '%s\n' "${CASES[@]}"
    exit 0
fi

CASE=${1:-}
if ! printf '%s\n' "${CASES[@]}" | grep -qxF -- "$CASE"; then
    echo "usage: $(basename "$0") CASE ..., where CASE is one of: ${CASES[*]}" >&2
    exit 2
fi

# run_case [PREFIX]: run $CASE; PASS names it as PREFIX$CASE
# shellcheck disable=SC2120 # PREFIX is optional
run_case() {
    "case_${CASE//-/_}"
    echo "PASS: ${1:-}$CASE"
}
