/* SPDX-License-Identifier: MIT */
/*
 * Whole-file reads with a size cap: a file is read to its end or not at all, so that nothing
 * decides on the first part of a file it believes whole.
 */
#pragma once

#include <stddef.h>

/*
 * read_full_fd() - read @fd from its current position to its end.
 * @fd: any readable descriptor (a regular file's size is only a hint: it may change meanwhile).
 * @max_size: the most bytes accepted; one byte more is an error, never a cut.
 * @ret: receives the bytes, malloc'ed and NUL-terminated (a NUL in the content stays).
 * @ret_size: receives how many bytes were read, the terminating NUL not counted; may be NULL.
 *
 * Return: 0, -EFBIG if there is more than @max_size bytes, -ENOMEM, or the negative errno of
 * read(2) (EINTR is retried). *@ret and *@ret_size are set on success only.
 */
int read_full_fd(int fd, size_t max_size, char **ret, size_t *ret_size);

/*
 * read_full_file_at() - open @path (relative to @dir_fd, or AT_FDCWD) read-only and read it whole
 * with read_full_fd(). The errno of open(2) is returned as is (-ENOENT for a missing file).
 */
int read_full_file_at(int dir_fd, const char *path, size_t max_size, char **ret, size_t *ret_size);
