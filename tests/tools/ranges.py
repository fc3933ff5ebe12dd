#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ranges: byte-range arithmetic for the file-system-aware integration tests (fsaware.sh).

Range files hold "OFFSET LENGTH" lines, like `ebs-rig map`; results are printed the same way,
merged and sorted.

  ranges.py union FILE...        merged, sorted
  ranges.py missing NEED HAVE    the parts of NEED that HAVE does not cover
  ranges.py inter A B            the parts of A inside B
  ranges.py bytes FILE...        total bytes of the union
  ranges.py chunks FILE          widened to whole 512 KiB chunks (what a chunk-granular reader
                                 reads)
  ranges.py ext4 DUMPE2FS OFF free|used|meta|meta-all
                                 from `dumpe2fs` output, shifted by OFF bytes; meta has only
                                 the inode table blocks that hold an inode in use (what the
                                 kernel reads), meta-all the whole tables
  ranges.py xfs-free FREESP BLOCKSIZE AGBLOCKS  from `xfs_db -c 'freesp -d'` output
  ranges.py xfs-use BLOCKUSE BLOCKSIZE AGBLOCKS TYPE...  the blocks `xfs_db -c blockuse` types
                                                         as TYPE
  ranges.py fiemap OFF FILEFRAG  extents from `filefrag -v -b1` output (bytes), shifted by OFF
"""
import re
import sys

CHUNK = 524288

def read(path):
    out = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) >= 2 and int(p[1]) > 0:
                out.append((int(p[0]), int(p[0]) + int(p[1])))
    return out

def merge(rs):
    out = []
    for a, b in sorted(rs):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [tuple(r) for r in out]

def missing(need, have):
    have, out, i = merge(have), [], 0
    for a, b in merge(need):
        while i < len(have) and have[i][1] <= a:
            i += 1
        j, cur = i, a
        while j < len(have) and have[j][0] < b:
            if have[j][0] > cur:
                out.append((cur, have[j][0]))
            cur = max(cur, have[j][1])
            j += 1
        if cur < b:
            out.append((cur, b))
    return out

def show(rs):
    for a, b in merge(rs):
        print(a, b - a)

def total(rs):
    return sum(b - a for a, b in merge(rs))

def runs(text):
    """ "12-2048, 4000" -> [(12, 2049), (4000, 4001)]"""
    out = []
    for item in text.split(","):
        item = item.strip()
        if item:
            a, _, b = item.partition("-")
            out.append((int(a), int(b or a) + 1))
    return out

def inode_tables(text, bs, used):
    """The blocks of each group's inode table that hold an inode in use (not in its "Free inodes:"
    list) if @used, else the whole tables."""
    ipg = int(re.search(r"^Inodes per group:\s+(\d+)", text, re.M).group(1))
    isz = int(re.search(r"^Inode size:\s+(\d+)", text, re.M).group(1))
    per_block = bs // isz
    out = []
    for g in re.finditer(r"^Group (\d+):.*?(?=^Group |\Z)", text, re.M | re.S):
        group = int(g.group(1))
        t = re.search(r"Inode table at (\d+)(?:-(\d+))?", g.group(0))
        if not t:
            continue
        first, last = int(t.group(1)), int(t.group(2) or t.group(1))
        if not used:
            out.append((first, last + 1))
            continue
        free = re.search(r"^\s+Free inodes: ?(.*)$", g.group(0), re.M)
        lo, hi = group * ipg + 1, (group + 1) * ipg + 1
        free_runs = [(max(a, lo), min(b, hi)) for a, b in runs(free.group(1) if free else "")]
        if sum(max(b - a, 0) for a, b in free_runs) == ipg:
            continue  # no inode in use: none of the table
        in_use = [True] * ipg
        for a, b in free_runs:
            for ino in range(a, b):
                in_use[ino - lo] = False
        for blk in range(last + 1 - first):
            if any(in_use[blk * per_block:(blk + 1) * per_block]):
                out.append((first + blk, first + blk + 1))
    return out

def ext4(path, off, what):
    """free, used (not free), meta (superblocks, descriptors, reserved GDT, bitmaps, and the
    inode table blocks that hold an inode in use: what the kernel reads) or meta-all (the same
    with the whole inode tables), in bytes of the device"""
    text = open(path).read()
    bs = int(re.search(r"^Block size:\s+(\d+)", text, re.M).group(1))
    count = int(re.search(r"^Block count:\s+(\d+)", text, re.M).group(1))
    free, meta = [], []
    for m in re.finditer(r"^\s+Free blocks: (.*)$", text, re.M):
        free += runs(m.group(1))
    pat = (r"(superblock|Group descriptors|Reserved GDT blocks|Block bitmap|Inode bitmap) at "
           r"(\d+)(?:-(\d+))?")
    for m in re.finditer(pat, text):
        a = int(m.group(2))
        meta.append((a, int(m.group(3) or a) + 1))
    if what in ("meta", "meta-all"):
        meta += inode_tables(text, bs, what == "meta")
    rs = {"free": free, "meta": meta, "meta-all": meta,
          "used": missing([(0, count)], free)}[what]
    return [(a * bs + off, b * bs + off) for a, b in rs]

op, args = sys.argv[1], sys.argv[2:]
if op == "union":
    show([r for p in args for r in read(p)])
elif op == "missing":
    show(missing(read(args[0]), read(args[1])))
elif op == "inter":
    a = read(args[0])
    show(missing(a, missing(a, read(args[1]))))
elif op == "bytes":
    print(total([r for p in args for r in read(p)]))
elif op == "chunks":
    show([(a // CHUNK * CHUNK, -(-b // CHUNK) * CHUNK) for a, b in read(args[0])])
elif op == "ext4":
    show(ext4(args[0], int(args[1]), args[2]))
elif op == "xfs-free":
    bs, agblocks, rs = int(args[1]), int(args[2]), []
    for line in open(args[0]):
        p = line.split()
        if len(p) == 3 and all(x.isdigit() for x in p):
            start = (int(p[0]) * agblocks + int(p[1])) * bs
            rs.append((start, start + int(p[2]) * bs))
    show(rs)
elif op == "xfs-use":
    # "block 65537 (1/1) type btbno": AG 1, block 1 of the AG
    bs, agblocks, types, rs = int(args[1]), int(args[2]), set(args[3:]), []
    for line in open(args[0]):
        m = re.match(r"block \d+ \((\d+)/(\d+)\) type (\S+)", line)
        if m and m.group(3) in types:
            start = (int(m.group(1)) * agblocks + int(m.group(2))) * bs
            rs.append((start, start + bs))
    show(rs)
elif op == "fiemap":
    off, rs = int(args[0]), []
    for line in open(args[1]):
        m = re.match(r"\s*\d+:\s*\d+\.\.\s*\d+:\s*(\d+)\.\.\s*(\d+):", line)
        if m:
            rs.append((int(m.group(1)) + off, int(m.group(2)) + 1 + off))
    show(rs)
else:
    sys.exit("ranges: unknown op " + op)
