/* SPDX-License-Identifier: MIT */
/*
 * Whole-file reads with a size cap: a file is read to its end or not at all, so that nothing
 * decides on the first part of a file it believes whole. And the converse for writes: a file
 * replaced whole, so that no reader ever sees part of it.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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

/*
 * read_regular_file_at() - read @name in @dir_fd whole if it is a regular file of at most
 * @max_size bytes, never following a symbolic link and never blocking on a FIFO; its owner
 * into @ret_uid (may be NULL). 0; -EBADFD for a link, FIFO, device or directory; -EFBIG; or
 * the errno of open(2) (-ENOENT).
 */
int read_regular_file_at(int dir_fd, const char *name, size_t max_size, char **ret,
                         size_t *ret_size, uid_t *ret_uid);

/*
 * write_full_fd() - write all @size bytes of @buf to @fd, resuming after short writes (EINTR is
 * retried). Return: 0 or the negative errno of write(2).
 */
int write_full_fd(int fd, const void *buf, size_t size);
/* write_full_fd_stall() - the same into a descriptor that may be O_NONBLOCK: on EAGAIN it waits
 * for room, and a reader that takes nothing for @stall_usec is -ETIMEDOUT, not a wait for ever
 * (0: EAGAIN is an error, as in write_full_fd()). */
int write_full_fd_stall(int fd, const void *buf, size_t size, uint64_t stall_usec);

/*
 * write_file_atomic() - replace @path with @size bytes of @buf, so that a reader opens either the
 * old file or the whole new one. The bytes go to a new temporary file in @path's directory
 * ("." + the base name + a random suffix, created with O_EXCL), which gets @mode whatever the
 * umask, is fsync'ed and renamed over @path; then the directory is fsync'ed.
 *
 * Return: 0, or the negative errno of the step that failed. The temporary file is gone either
 * way: a failure leaves @path as it was (or, if only the final fsync of the directory failed,
 * already replaced).
 */
int write_file_atomic(const char *path, const void *buf, size_t size, mode_t mode);

typedef enum WriteAtomicFlags {
        WRITE_ATOMIC_SYNC = 1 << 0, /* fsync the file before the rename, the directory after */
} WriteAtomicFlags;

/*
 * write_file_atomic_at() - write_file_atomic() for @name in the directory @dir_fd; the fsyncs
 * only with WRITE_ATOMIC_SYNC (a file on tmpfs needs none). -EISDIR for a name that is not one.
 */
/*
 * rename_into_place() - the end of an atomic write: if @r (what writing the temporary file @tmp
 * in @dir_fd gave: 0 or -errno) is not an error, rename @tmp over @name. On any error @tmp is
 * removed and the error returned; 0 otherwise. The directory is not synced.
 */
int rename_into_place(int dir_fd, const char *tmp, const char *name, int r);

int write_file_atomic_at(int dir_fd, const char *name, const void *buf, size_t size, mode_t mode,
                         WriteAtomicFlags flags);
