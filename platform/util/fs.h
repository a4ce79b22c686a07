/*
 * fs.h: filesystem helpers of the platform: small reads of /proc and cgroup entries, removing and
 * copying trees. Errors: -1 with errno set where the function says so; nothing aborts.
 */
#ifndef ABX_UTIL_FS_H
#define ABX_UTIL_FS_H

#include <stddef.h>
#include <sys/types.h>

/* Reads at most n - 1 bytes of a small file (a /proc or cgroup entry) into buf, NUL-terminated.
 * Returns the byte count, or -1 (errno set) when it cannot be opened or read. */
ssize_t abx_read_small(const char *path, char *buf, size_t n);

/* Remove a directory tree without following symlinks or crossing mounts. Returns 0 or -1. */
int abx_rmtree(const char *path);

/* cp -a src/. dst: modes, owners, xattrs and overlayfs whiteouts kept (posix_spawn of /bin/cp,
 * no shell; src up to 4000 bytes). 0, or -1 when cp cannot start or fails. */
int abx_copy_tree(const char *src, const char *dst);

#endif
