#!/bin/bash
# SPDX-License-Identifier: MIT
# Build the binary RPM of ebs-hydrate from this git tree, on Fedora / Amazon Linux or on a
# non-RPM host such as Debian (rpm and rpmbuild installed). The source tarball is "git archive
# HEAD" when the tree is clean, else the work tree's copies of the files that "git ls-files"
# lists (tracked, and untracked but not ignored), so that a local run packages uncommitted edits.
#
#   packaging/rpm/build.sh [--out DIR] [--without-check]
#
# Exit status: 0 built, 1 failed, 2 bad usage, 77 rpmbuild is not installed.
set -euo pipefail

usage() { # EXIT-STATUS: --help prints to stdout and succeeds, a bad argument does not
    {
        echo "usage: $0 [--out DIR] [--without-check]"
        echo "  --out DIR        copy the built .rpm files to DIR (default: ./dist)"
        echo "  --without-check  skip the unit tests in %check (no cmocka needed)"
    } >&$(($1 == 0 ? 1 : 2))
    exit "$1"
}

die() {
    echo "build.sh: $*" >&2
    exit 1
}

out=dist
rpmbuild_opts=()
while [ $# -gt 0 ]; do
    case "$1" in
    --out)
        if [ $# -lt 2 ] || [ -z "$2" ]; then usage 2; fi
        out=$2
        shift 2
        ;;
    --out=?*)
        out=${1#--out=}
        shift
        ;;
    --without-check)
        rpmbuild_opts+=(--without check)
        shift
        ;;
    -h | --help) usage 0 ;;
    *)
        echo "build.sh: unknown argument: $1" >&2
        usage 2
        ;;
    esac
done

if ! command -v rpmbuild >/dev/null; then
    echo "build.sh: rpmbuild is not installed (Debian: apt-get install rpm; Fedora: dnf install rpm-build)" >&2
    exit 77
fi
command -v git >/dev/null || die "git is not installed"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
spec=$here/ebs-hydrate.spec
repo=$(git -C "$here" rev-parse --show-toplevel 2>/dev/null) ||
    die "$here is not inside a git work tree"

version=$(sed -n 's/^project(ebs-hydrate VERSION \([0-9.]*\).*/\1/p' "$repo/CMakeLists.txt")
[ -n "$version" ] || die "no project(ebs-hydrate VERSION ...) in $repo/CMakeLists.txt"
spec_version=$(sed -n 's/^Version:[[:space:]]*//p' "$spec")
[ "$spec_version" = "$version" ] ||
    die "$spec says Version: $spec_version, but CMakeLists.txt says $version: update the spec (and its %changelog)"

mkdir -p "$out" || die "cannot create the output directory $out"
out=$(cd "$out" && pwd)

work=$(mktemp -d /tmp/rpm-build.XXXXXX)
keep_work=0
cleanup() {
    if [ "$keep_work" = 1 ]; then
        echo "build.sh: the build tree is kept in $work" >&2
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT

top=$work/rpmbuild
mkdir -p "$top"/{SOURCES,SPECS,BUILD,BUILDROOT,RPMS,SRPMS}
prefix=ebs-hydrate-$version
tarball=$top/SOURCES/$prefix.tar.gz

if [ -z "$(git -C "$repo" status --porcelain)" ]; then
    git -C "$repo" archive --format=tar.gz --prefix="$prefix/" -o "$tarball" HEAD
    echo "build.sh: source: git archive of HEAD $(git -C "$repo" rev-parse --short HEAD) (clean tree)"
else
    # Tracked files as they are in the work tree (one deleted there is left out), and untracked
    # ones that .gitignore does not exclude: a new source file is part of the edit. The output
    # directory is left out, in case it is inside the tree and not ignored.
    stage=$work/stage/$prefix
    mkdir -p "$stage"
    out_rel=
    exclude_out=()
    case "$out" in "$repo"/?*)
        out_rel=${out#"$repo"/}
        exclude_out=(-- . ":(exclude)$out_rel")
        ;;
    esac
    (cd "$repo" && git ls-files -z --cached --others --exclude-standard |
        while IFS= read -r -d '' f; do
            case "$f" in "$out_rel"/*) continue ;; esac
            if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
        done | sort -zu | tar --null -T - -cf - | tar -xf - -C "$stage")
    tar -C "$work/stage" --sort=name --owner=0 --group=0 --numeric-owner -czf "$tarball" "$prefix"
    echo "build.sh: source: work tree of $repo, with its uncommitted changes:"
    git -C "$repo" status --short "${exclude_out[@]}" | sed 's/^/build.sh:   /'
fi

# Source1: the sysusers file from that same tarball (see the spec).
tar -xzOf "$tarball" "$prefix/units/ebs-hydrate.sysusers" >"$top/SOURCES/ebs-hydrate.sysusers" ||
    die "$prefix/units/ebs-hydrate.sysusers is missing from the source tarball"
cp "$spec" "$top/SPECS/"

# Fedora's systemd-rpm-macros are missing on a non-RPM host: load our stand-ins for them.
# There, also run rpm's brp-compress with bash: it uses bash's "read -d" under #!/bin/sh, so
# where /bin/sh is dash (Debian) it compresses no man page, and the package would differ from
# one built on Fedora.
if [ -z "$(rpm --eval '%{?_unitdir}')" ]; then
    rpmbuild_opts+=(--load "$here/macros.non-rpm-host"
        --define '__brp_compress bash %{_rpmconfigdir}/brp-compress %{?_prefix}')
    echo "build.sh: no systemd rpm macros on this host: loading $here/macros.non-rpm-host"
fi

# --nodeps: on a non-RPM host the rpm database is empty, so no BuildRequires can be satisfied
# (the build tools and libraries come from the host's own packages instead). On Fedora, install
# them first: dnf builddep packaging/rpm/ebs-hydrate.spec.
log=$work/rpmbuild.log
echo "build.sh: rpmbuild -bb --nodeps ${rpmbuild_opts[*]}"
if ! rpmbuild -bb --nodeps --define "_topdir $top" "${rpmbuild_opts[@]}" \
    "$top/SPECS/ebs-hydrate.spec" >"$log" 2>&1; then
    keep_work=1
    tail -n 40 "$log" >&2
    die "rpmbuild failed (the whole log: $log)"
fi
grep -E '^[0-9]+% tests passed' "$log" | sed 's/^/build.sh: %check: /' || true

mapfile -t rpms < <(find "$top/RPMS" -name '*.rpm' | sort)
[ ${#rpms[@]} -gt 0 ] || die "rpmbuild succeeded but wrote no .rpm under $top/RPMS"
for rpm_file in "${rpms[@]}"; do
    cp "$rpm_file" "$out/"
    echo "$out/$(basename "$rpm_file")"
done
