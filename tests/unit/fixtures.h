/* SPDX-License-Identifier: MIT */
/*
 * Fixtures that several unit tests share: scratch directories under $TMPDIR and their removal,
 * files and links written under a root, and a fake sysfs tree with an EBS NVMe volume beside
 * other disks. Include after <cmocka.h>; the helpers fail the test instead of returning errors.
 */
#pragma once

#include <stddef.h>

/* The model an EBS volume's NVMe controller shows in sysfs, padded to its 40 bytes. */
#define FAKE_EBS_MODEL "Amazon Elastic Block Store              "

/* fixture_tmpdir() - a new directory $TMPDIR/@prefix-XXXXXX (malloc'd), or NULL on failure. */
char *fixture_tmpdir(const char *prefix);

/* rm_rf() - removes @path and everything under it without following links, giving back the
 * write permission a test may have taken away first. Returns 0 or -errno. */
int rm_rf(const char *path);

/* fixture_mkdirs() - mkdir -p @root/@rel. */
void fixture_mkdirs(const char *root, const char *rel);

/* fixture_write() - writes @content to @root/@rel, creating the directories on the way. */
void fixture_write(const char *root, const char *rel, const char *content);

/* fixture_write_bytes() - like fixture_write(), for @size bytes that may hold NULs. */
void fixture_write_bytes(const char *root, const char *rel, const void *content, size_t size);

/* fixture_symlink() - @root/@rel, a symbolic link to @target. */
void fixture_symlink(const char *root, const char *target, const char *rel);

/*
 * fake_sysfs_tree() - under @root, a sysfs as a real system shows it: class/block/<name> links
 * into devices/, and an NVMe namespace's device/ is its controller, where model and serial
 * live; wwid sits on the namespace itself. nvme91n1 is an EBS volume (serial
 * vol0123456789ABCDEF0), nvme92n1 a QEMU NVMe disk, sdzz a SCSI disk with a wwid, loop991 a
 * loop device. No real udev knows these names.
 */
void fake_sysfs_tree(const char *root);
