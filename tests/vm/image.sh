#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# image.sh — build the root disk of the QEMU test guest: Debian bookworm (debootstrap minbase)
# with systemd, udev and D-Bus, the host kernel's modules, the files under tests/vm/guest/ and
# the project installed from a build directory, or its Debian package left in /root/packages
# for the test to install with dpkg. See tests/vm/README.md.
#
# The debootstrap result is cached under $EBS_HYDRATE_VM_CACHE (default /var/cache/ebs-hydrate/vm)
# keyed by a hash of this script, the package list, the mirror and the kernel version; a cache
# miss costs one debootstrap (1-2 min), a hit a few seconds (copy + mke2fs).
#
# Everything but the result goes to stderr. On stdout, for the caller (vm.py):
#   KERNEL=/boot/vmlinuz-...  INITRD=/boot/initrd.img-...  IMAGE=<the image>
# Exit status: 0 done, 1 failed, 2 bad usage, 77 prerequisites missing (not root, no tools).

set -euo pipefail

readonly PROG=image.sh
HERE=$(cd "$(dirname "$0")" && pwd)
readonly HERE
readonly SUITE=bookworm
readonly MIRROR=${EBS_HYDRATE_VM_MIRROR:-http://deb.debian.org/debian}
readonly CACHE=${EBS_HYDRATE_VM_CACHE:-/var/cache/ebs-hydrate/vm}
# Guest packages: init and device manager, the project's runtime libraries (ebs-hydrate-aws's:
# libcurl4 libexpat1 libssl3), test tools.
readonly PACKAGES=(systemd systemd-sysv udev dbus kmod
    libaio1 libsystemd0 libudev1 libblkid1 libinih1 zlib1g libjson-c5
    libcurl4 libexpat1 libssl3
    procps util-linux)
# Kernel module trees nobody in the guest needs (the guest has no sound, GPU, USB, and no NIC
# but QEMU's virtio-net: the restricted user network that reaches the host's AWS stub).
readonly MODULES_PRUNE=(sound drivers/gpu drivers/media drivers/net drivers/infiniband
    drivers/staging drivers/usb drivers/bluetooth drivers/iio drivers/hid drivers/input
    drivers/isdn drivers/mtd drivers/video drivers/comedi net/wireless net/mac80211
    net/bluetooth)
# ... but for these (virtio_net needs net_failover; failover is in net/core, kept).
readonly MODULES_KEEP=(drivers/net/virtio_net.ko drivers/net/net_failover.ko)

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() {
    log "error: $*"
    exit 1
}
skip() {
    log "skip: $*"
    exit 77
}

usage() {
    cat <<EOF
Usage: $PROG (--build-dir DIR | --staging DIR | --deb FILE | --bare | --rootfs-only)
              [--output IMAGE] [--size SIZE]

  --build-dir DIR   install the project from this CMake build directory. If it was not
                    configured with CMAKE_INSTALL_PREFIX=/usr, or is an ASan/UBSan build,
                    a guest build is configured and built in DIR/vm-build first.
  --staging DIR     copy this tree (a DESTDIR install with prefix /usr) into the image
  --deb FILE        no project installed: the package FILE is copied to /root/packages/,
                    for the test to install with dpkg -i (test-systemd.py)
  --bare            no project in the image (tests of the rig itself: smoke.py)
  --rootfs-only     only make sure the cached root filesystem exists (warm the cache)
  --output IMAGE    the ext4 image to write (default ./root.img)
  --size SIZE       image size for mke2fs (default 2G)
EOF
}

# Newest kernel in /boot that has its modules and an initrd next to it.
find_kernel() {
    local v
    for v in $(find /boot -maxdepth 1 -name 'vmlinuz-*' -printf '%f\n' | sed 's/^vmlinuz-//' |
        sort -V -r); do
        if [[ -d /lib/modules/$v && -r /boot/initrd.img-$v && -r /boot/vmlinuz-$v ]]; then
            echo "$v"
            return 0
        fi
    done
    return 1
}

check_prerequisites() {
    [[ $(id -u) -eq 0 ]] || skip "must run as root (debootstrap, chroot, file ownership)"
    local t
    for t in debootstrap mke2fs chroot cmake; do
        command -v "$t" >/dev/null 2>&1 || skip "'$t' not found (scripts/deps installs it)"
    done
    KVER=$(find_kernel) ||
        skip "no kernel with modules and initrd in /boot (apt-get install linux-image-amd64)"
}

cache_key() {
    {
        sha256sum <"$HERE/image.sh"
        printf '%s\n' "$SUITE" "$MIRROR" "$KVER" "$(dpkg --print-architecture)" "${PACKAGES[@]}"
    } | sha256sum | cut -c1-16
}

# Build the root filesystem into $1 (a fresh directory).
build_rootfs() {
    local dir=$1 include p
    include=$(
        IFS=,
        echo "${PACKAGES[*]}"
    )
    log "debootstrap $SUITE ($include) from $MIRROR: about 1-2 minutes"
    if ! debootstrap --variant=minbase --include="$include" "$SUITE" "$dir" "$MIRROR" \
        >"$dir.log" 2>&1; then
        tail -n 30 "$dir.log" "$dir/debootstrap/debootstrap.log" >&2 || true
        die "debootstrap failed"
    fi
    rm -f "$dir.log"
    rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/* \
        "$dir"/usr/share/doc "$dir"/usr/share/locale "$dir"/usr/share/info
    log "copying /lib/modules/$KVER"
    mkdir -p "$dir/lib/modules"
    cp -a "/lib/modules/$KVER" "$dir/lib/modules/"
    for p in "${MODULES_PRUNE[@]}"; do
        rm -rf "$dir/lib/modules/$KVER/kernel/$p"
    done
    for p in "${MODULES_KEEP[@]}"; do
        install -D -m 0644 "/lib/modules/$KVER/kernel/$p" "$dir/lib/modules/$KVER/kernel/$p"
    done
    # No machine id: each image gets its own (assemble), so no first-boot logic runs.
    : >"$dir/etc/machine-id"
}

# Temporary directories, removed on exit whatever happens.
TMPS=()
cleanup() {
    [[ ${#TMPS[@]} -eq 0 ]] || rm -rf "${TMPS[@]}"
}
trap cleanup EXIT

# Make sure the cached root filesystem for this key exists; sets ROOTFS. A shared lock on the
# cache stays held until exit, so that no other run replaces it while we copy from it.
ensure_rootfs() {
    local key dir tmp old
    key=$(cache_key)
    dir=$CACHE/rootfs-$key
    ROOTFS=$dir
    mkdir -p "$CACHE"
    exec 9>"$CACHE/lock"
    flock -s 9
    if [[ -f $dir/.complete ]]; then
        log "cached root filesystem: $dir"
        return 0
    fi
    flock -u 9
    flock -x 9
    if [[ ! -f $dir/.complete ]]; then
        tmp=$CACHE/tmp-$key.$$
        TMPS+=("$tmp" "$tmp.log")
        rm -rf "$tmp"
        mkdir -p "$tmp"
        build_rootfs "$tmp"
        touch "$tmp/.complete"
        rm -rf "$dir"
        mv "$tmp" "$dir"
        # Only one key is kept: older root filesystems (other script versions, kernels) go.
        for old in "$CACHE"/rootfs-* "$CACHE"/tmp-*; do
            [[ $old == "$dir" ]] || rm -rf "$old"
        done
    fi
    flock -u 9
    flock -s 9
}

guest_cmake_configured_for_usr() { # BUILD_DIR
    local cache=$1/CMakeCache.txt prefix type
    prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:[A-Z]*=//p' "$cache")
    type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$cache")
    [[ $prefix == /usr && $type != ASan && $type != UBSan ]]
}

# Install the project from a build directory into $2 (prefix /usr, as a package would).
stage_project() {
    local build=$1 stage=$2 src
    [[ -f $build/CMakeCache.txt ]] || die "$build is not a CMake build directory"
    if ! guest_cmake_configured_for_usr "$build"; then
        src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:[A-Z]*=//p' "$build/CMakeCache.txt")
        log "$build is not a /usr (non-sanitizer) build: building the guest's in $build/vm-build"
        cmake -S "$src" -B "$build/vm-build" -DCMAKE_INSTALL_PREFIX=/usr \
            -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEBS_HYDRATE_TESTS=OFF >&2 ||
            die "configuring $build/vm-build failed"
        cmake --build "$build/vm-build" -j"$(nproc)" >&2 || die "building $build/vm-build failed"
        build=$build/vm-build
    fi
    DESTDIR=$stage cmake --install "$build" --prefix /usr >&2 || die "cmake --install failed"
}

# Copy the guest's test configuration (tests/vm/guest) and enable its units.
stage_guest_files() {
    local tree=$1
    cp -a --remove-destination "$HERE/guest/." "$tree/"
    chown -R root:root "$tree/etc/systemd/system" "$tree/etc/udev/rules.d" "$tree/usr/local/sbin"
    chmod 0755 "$tree/usr/local/sbin/test-backdoor"
    mkdir -p "$tree/var/log/journal" # persistent journal: journalctl -b -1 after a reboot
    # eth0's static address (guest/etc/systemd/network): no DHCP, nothing asked of the network.
    chroot "$tree" systemctl enable --quiet systemd-networkd.service >&2 ||
        die "enabling systemd-networkd failed"
    systemd-machine-id-setup --root="$tree" >/dev/null 2>&1 ||
        tr -d - </proc/sys/kernel/random/uuid >"$tree/etc/machine-id"
}

# What the package's postinst does: create the service user from the installed sysusers.d file.
create_users() {
    local tree=$1 f
    for f in "$tree"/usr/lib/sysusers.d/ebs-hydrate*.conf; do
        [[ -e $f ]] || continue
        chroot "$tree" systemd-sysusers "${f#"$tree"}" >&2 || die "systemd-sysusers failed for $f"
    done
}

assemble() { # ROOTFS PROJECT_TREE OUTPUT SIZE
    local rootfs=$1 project=$2 out=$3 size=$4 tree
    tree=$(mktemp -d "$CACHE/assemble.XXXXXX")
    TMPS+=("$tree")
    # Hard links are cheap and mke2fs only reads them; /etc is copied because it gets edited.
    cp -al "$rootfs/." "$tree/"
    rm -rf "${tree:?}/etc" "$tree/.complete"
    cp -a "$rootfs/etc" "$tree/etc"
    cp -a --remove-destination "$project/." "$tree/"
    stage_guest_files "$tree"
    create_users "$tree"
    rm -f "$out"
    mke2fs -q -t ext4 -L root -d "$tree" -F "$out" "$size" >&2 || die "mke2fs failed"
}

main() {
    local build='' staging='' deb='' output=root.img size=2G rootfs_only=0 bare=0 stage
    while [[ $# -gt 0 ]]; do
        case $1 in
        --build-dir) build=${2:?}; shift 2 ;;
        --staging) staging=${2:?}; shift 2 ;;
        --deb) deb=${2:?}; shift 2 ;;
        --rootfs-only) rootfs_only=1; shift ;;
        --bare) bare=1; shift ;;
        --output | -o) output=${2:?}; shift 2 ;;
        --size) size=${2:?}; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        *) log "unknown argument '$1'"; usage >&2; exit 2 ;;
        esac
    done
    local modes=$((rootfs_only + bare))
    [[ -z $build ]] || modes=$((modes + 1))
    [[ -z $staging ]] || modes=$((modes + 1))
    [[ -z $deb ]] || modes=$((modes + 1))
    if [[ $modes -ne 1 ]]; then
        usage >&2
        exit 2
    fi
    check_prerequisites
    ensure_rootfs
    [[ $rootfs_only -eq 1 ]] && return 0

    output=$(realpath -m "$output")
    if [[ -n $build || -n $deb || $bare -eq 1 ]]; then
        stage=$(mktemp -d "$CACHE/stage.XXXXXX")
        TMPS+=("$stage")
        [[ -z $build ]] || stage_project "$(realpath "$build")" "$stage"
        if [[ -n $deb ]]; then
            [[ -f $deb && $deb == *.deb ]] || die "$deb: not a .deb file"
            install -D -m 0644 "$deb" "$stage/root/packages/$(basename "$deb")"
        fi
        assemble "$ROOTFS" "$stage" "$output" "$size"
    else
        [[ -d $staging/usr ]] || die "$staging has no usr/: not an install tree"
        assemble "$ROOTFS" "$staging" "$output" "$size"
    fi
    echo "KERNEL=/boot/vmlinuz-$KVER"
    echo "INITRD=/boot/initrd.img-$KVER"
    echo "IMAGE=$output"
}

main "$@"
