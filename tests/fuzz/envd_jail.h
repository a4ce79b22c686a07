/*
 * envd_jail.h: an in-process envd for fuzz targets (tests/fuzz/fuzz_multipart.c). A libmicrohttpd
 * daemon with envd's own access handler (envd_on_request) and no listening socket is run by
 * MHD_run on the calling thread, and only ever chrooted into a scratch tree, because envd writes
 * wherever an absolute path points (as root, by design).
 *
 * Tree:    <TMPDIR>/envd_jail.XXXXXX/root with etc/passwd (root, home /root; user, uid 1000,
 *          home /home/user), etc/group, etc/nsswitch.conf; removed at exit (not after a crash).
 * Jail:    the thread's filesystem context is unshared, so the chroot stays on it; its cwd is
 *          kept, so libFuzzer still writes a crash found inside the jail to a relative
 *          -artifact_prefix (run.sh gives one; an absolute one would land in the jail). With
 *          AddressSanitizer the symbolizer is started before the first jailed call.
 * Needs:   root (chroot, setfsuid, chown). Every failure of the harness itself aborts.
 */
#ifndef ABX_FUZZ_ENVD_JAIL_H
#define ABX_FUZZ_ENVD_JAIL_H

#include <stddef.h>

#define JAIL_USER_UID 1000
#define JAIL_USER_HOME "/home/user"

/* A growing byte buffer, always NUL-terminated after its n bytes (p NULL while empty). */
struct jail_buf {
  char *p;
  size_t n, cap;
};

/* Append n bytes / printf-formatted text (at most 511 bytes) to b; aborts when out of memory. */
void jail_put(struct jail_buf *b, const void *data, size_t n);
void jail_putf(struct jail_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Create the tree and the daemon and check that the jail holds ("/" inside is the root).
 * Idempotent; call before anything else. */
void jail_setup(void);

/* The tree's root as a host path, and its length. */
const char *jail_root(size_t *len);

/* Write `req` (a whole HTTP/1.1 request that asks for Connection: close) on a fresh connection
 * of the daemon and append the whole answer to `ans`; returns once the daemon closed the
 * connection and released it. Aborts when no complete exchange happens within 8 s. */
void jail_exchange(const struct jail_buf *req, struct jail_buf *ans);

/* For a path relative to the root ("" the root itself, "/etc/passwd"): 1 when it is one of the
 * tree's own directories; the expected text of a fixture file or NULL. */
int jail_fixture_dir(const char *rel);
const char *jail_fixture_text(const char *rel);

/* Rewrite every fixture file (after an upload as root replaced one). */
void jail_restore_fixtures(void);

#endif
