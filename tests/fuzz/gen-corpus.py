#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the seeds of the nvme-id, identity and decisions fuzz targets into CORPUS/nvme-id,
CORPUS/identity and CORPUS/decisions. nvme-id: 4096-byte identify-controller pages laid out as
NVMe 1.4 says, with the fields an EBS controller fills in and Amazon's block-device mapping name
in the vendor-specific area (bytes 3072..3103). identity: the parts of fuzz-identity.c joined by
"%%" lines. decisions: the header of fuzz-decisions.c, then the device argument, a "%%" line and
the state key. Usage: gen-corpus.py CORPUS (tests/fuzz/corpus)"""
import struct
import sys

EBS_VID = 0x1D0F
EBS_MODEL = b"Amazon Elastic Block Store"


def field(value, size, pad=b" "):
    assert len(value) <= size
    return value + pad * (size - len(value))


def page(vid, serial, model, vendor_area, sn_pad=b" ", mn_pad=b" ", vs_pad=b" "):
    p = bytearray(4096)
    struct.pack_into("<HH", p, 0, vid, vid)               # VID, SSVID
    p[4:24] = field(serial, 20, sn_pad)                    # SN
    p[24:64] = field(model, 40, mn_pad)                    # MN
    p[64:72] = field(b"1.0", 8)                            # FR
    p[72] = 32                                             # RAB
    p[73:76] = b"\xa0\x02\xdc"                             # IEEE OUI
    p[77] = 6                                              # MDTS
    struct.pack_into("<I", p, 80, 0x00010400)              # VER 1.4
    p[258], p[259], p[260], p[263] = 4, 3, 3, 1            # ACL, AERL, FRMW, NPSS
    p[512], p[513] = 0x66, 0x44                            # SQES, CQES
    struct.pack_into("<I", p, 516, 1)                      # NN
    struct.pack_into("<H", p, 2048, 0x0100)                # PSD0 MP
    p[3072:3104] = field(vendor_area, 32, vs_pad)          # EBS: block-device mapping name
    return bytes(p)


NVME_SEEDS = {
    "ebs-sdf": page(EBS_VID, b"vol0123456789abcdef0", EBS_MODEL, b"sdf"),
    "ebs-legacy-dev-xvdf": page(EBS_VID, b"vol-1a2b3c4d", EBS_MODEL, b"/dev/xvdf", vs_pad=b"\0"),
    "ebs-uppercase-nul-padded": page(EBS_VID, b"vol0ABCDEF0123456789", EBS_MODEL, b"/dev/sdb",
                                     mn_pad=b"\0", vs_pad=b"\0"),
    "ebs-bad-mapping": page(EBS_VID, b"vol0fedcba9876543210", EBS_MODEL, b"sd f"),
    "qemu": page(0x1B36, b"deadbeef", b"QEMU NVMe Ctrl", bytes(range(1, 33))),
    "ebs-model-other-vendor": page(0x8086, b"vol0123456789abcdef0", EBS_MODEL, b"sdf"),
}

MODEL = EBS_MODEL.ljust(40) + b"\n"
NONE = b""  # a missing file or property

# model, serial, wwid, device/wwid (sysfs; the first three are also ID_MODEL, ID_SERIAL_SHORT,
# ID_WWN), then ID_SERIAL, EBS_VOLUME_ID, EBS_DEVICE_NAME and the kernel name (udev)
IDENTITY_SEEDS = {
    "ebs-nvme": [MODEL, b"vol0123456789ABCDEF0\n",
                 b"nvme.1d0f-766f6c30313233343536373839616263646566-416d617a6f6e20456c617374696320"
                 b"426c6f636b2053746f7265-00000001\n", NONE,
                 b"Amazon Elastic Block Store_vol0123456789abcdef0", b"vol-0123456789abcdef0",
                 b"/dev/sdf", b"nvme1n1"],
    "ebs-legacy-mapping": [MODEL, b"vol12345678         \n", NONE, NONE, NONE, NONE, b"xvdf",
                           b"nvme2n1"],
    "helper-only-bad-mapping": [NONE, NONE, NONE, NONE, NONE, b"vol-0fedcba9876543210", b"sd f",
                                b"nvme3n1"],
    "qemu-nvme": [b"QEMU NVMe Ctrl".ljust(40) + b"\n", b"deadbeef".ljust(20) + b"\n",
                  b"nvme.1b36-6465616462656566-514555204e564d65204374726c-00000001\n", NONE,
                  b"QEMU NVMe Ctrl_deadbeef", NONE, NONE, b"nvme0n1"],
    "scsi-device-wwid": [b"QEMU HARDDISK   \n", NONE, NONE,
                         b"t10.ATA     QEMU HARDDISK" + b" " * 27 + b"QM00001\n", NONE, NONE, NONE,
                         b"sda"],
    "loop": [NONE] * 7 + [b"loop0"],
    "bad-kernel-name": [MODEL, b"vol0123456789abcdef0\n", NONE, NONE, NONE, NONE, NONE, b"../sda"],
    # stable ids: 255 characters fit, 256 are an error, not a cut key
    "long-stable-id": [b"Vendor Model\n", NONE, b"w" * 256 + b"\n", NONE, b"s" * 255, NONE, NONE,
                       b"sdb"],
    # mapping names from the helper: 32 characters is all the vendor area holds; 33 is refused
    "mapping-name-32": [MODEL, b"vol0123456789abcdef0\n", NONE, NONE, NONE,
                        b"vol-0123456789abcdef0", b"/dev/" + b"d" * 32, b"nvme1n1"],
    "mapping-name-33": [MODEL, b"vol0123456789abcdef0\n", NONE, NONE, NONE,
                        b"vol-0123456789abcdef0", b"e" * 33, b"nvme1n1"],
    # a sysfs model one byte over the limit: cut there, it would read as the EBS model
    "regress-sysfs-model-too-long": [EBS_MODEL.ljust(4096) + b"X\n", b"vol0123456789abcdef0\n",
                                     NONE, NONE, NONE, NONE, NONE, b"nvme1n1"],
}

S_IFSOCK, S_IFLNK, S_IFREG, S_IFBLK, S_IFDIR, S_IFCHR, S_IFIFO = (
    0o140000, 0o120000, 0o100000, 0o060000, 0o040000, 0o020000, 0o010000)
GiB = 1 << 30
KEY = b"vol-0123456789abcdef0"


def decision(mode, size, lbs, st_mode, st_uid=990, euid=990, st_size=4096, arg=b"nvme1n1",
             key=KEY):
    return struct.pack("<IQIIIIq", mode, size, lbs, st_mode, st_uid, euid, st_size) + arg + \
        b"\n%%\n" + key


# device verdict; state directory and state file verdicts of the one stat; key
DECISION_SEEDS = {
    # 0; directory 0 (a file: -EBADMSG); valid key
    "ebs-nvme-ok": decision(S_IFBLK | 0o660, 20 * GiB, 512, S_IFDIR | 0o700),
    # 0 at 4 KiB blocks; a state file 0 (a directory: -ENOTDIR); a by-id path
    "lbs-4096-file-ok": decision(S_IFBLK | 0o660, 8 * GiB, 4096, S_IFREG | 0o600, st_size=1234,
                                 arg=b"/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_vol0123"
                                     b"456789abcdef0"),
    # -ENOTBLK; a symbolic link: -ELOOP; a key with a leading dot
    "char-device-symlink": decision(S_IFCHR | 0o620, 0, 0, S_IFLNK | 0o777, arg=b"tty0",
                                    key=b".hidden"),
    # -ENOTBLK; a directory open to the group: -EACCES; an empty argument
    "fifo-dir-group": decision(S_IFIFO | 0o600, 4096, 512, S_IFDIR | 0o770, arg=b""),
    # -EINVAL; a directory of another user: -EPERM; a key with '/'
    "lbs-1000-foreign-dir": decision(S_IFBLK | 0o660, 1000 * 4096, 1000, S_IFDIR | 0o700,
                                     st_uid=0, key=b"vol/../x"),
    # 0 by the contract, but above the 64 KiB state_decode() takes; key of STATE_KEY_MAX
    "lbs-128k": decision(S_IFBLK | 0o660, 4 * GiB, 128 << 10, S_IFDIR | 0o700, key=b"k" * 200),
    # -ENODATA; a state file of another user: -EPERM; a key one byte too long
    "size-zero-foreign-file": decision(S_IFBLK | 0o660, 0, 512, S_IFREG | 0o600, st_uid=0,
                                       key=b"k" * 201),
    # -ERANGE; a state file over 64 MiB: -EFBIG; a key with a space
    "size-tail-oversize": decision(S_IFBLK | 0o660, 10 * 4096 + 512, 4096, S_IFREG | 0o600,
                                   st_size=(64 << 20) + 1, key=b"vol 1"),
    # a socket, a FIFO planted as the state file: -EBADMSG; a key with a control byte
    "socket-fifo-file": decision(S_IFSOCK | 0o755, 1 << 20, 512, S_IFIFO | 0o600,
                                 key=b"vol\x01"),
}


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


for name, data in NVME_SEEDS.items():
    write(f"{sys.argv[1]}/nvme-id/{name}", data)
for name, parts in IDENTITY_SEEDS.items():
    assert len(parts) == 8
    write(f"{sys.argv[1]}/identity/{name}", b"\n%%\n".join(parts))
for name, data in DECISION_SEEDS.items():
    write(f"{sys.argv[1]}/decisions/{name}", data)
