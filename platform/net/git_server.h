/*
 * git_server.h: a read-only git server for sandboxes (issue 15 part 7, `abxlua serve --git-root`):
 * the bare repositories under one directory, cloned by sandboxes as
 * git://<hub end of their link>:9418/<name>.git, with no network beyond this machine.
 *
 * Where:   it listens on 0.0.0.0:ABX_GIT_SERVER_PORT inside the platform's hub network namespace
 *          (network.h; the socket is made there, netns.h, and keeps that namespace), as the build
 *          proxy does (build_proxy.h), so a sandbox with outbound traffic allowed reaches it at the
 *          hub end of its own link (get_info's abxNetwork.hostAddress), the one address its rules
 *          always accept. A sandbox with allow_internet_access=false cannot reach it. Nothing is
 *          added to the host namespace.
 * Speaks:  the git protocol (git-daemon(1), gitprotocol-pack(5)): each accepted connection is
 *          handed, as stdin and stdout, to one `git daemon --inetd` run in the host namespace
 *          (posix_spawn; it only ever talks over that socket) with --base-path=<root> and
 *          <root> as its one whitelisted directory: git://.../<name> is <root>/<name>, and git
 *          daemon itself refuses "." and ".." components (daemon.c daemon_avoid_alias) and any
 *          repository outside the whitelist, so nothing beyond <root> is served.
 *          Read-only: upload-pack only; receive-pack and upload-archive are disabled and their
 *          per-repository override forbidden (--disable=, --forbid-override=). The child's
 *          environment is fixed (PATH, HOME=<root>, GIT_CONFIG_NOSYSTEM=1,
 *          GIT_CONFIG_GLOBAL=/dev/null): no user or system git config applies.
 * Limits:  at most ABX_GIT_SERVER_MAX_CHILDREN connections at once (more are closed at once);
 *          each child has --init-timeout=ABX_GIT_SERVER_INIT_TIMEOUT_S (the request line) and
 *          --timeout=ABX_GIT_SERVER_IDLE_TIMEOUT_S (no progress), so a child outlives a serve that
 *          was SIGKILLed by at most those bounds.
 * Log:     git daemon's own lines (--verbose: the repository asked for) go to serve's stderr.
 * Errors:  int functions return 0, or -1 with a message in err.
 */
#ifndef ABX_NET_GIT_SERVER_H
#define ABX_NET_GIT_SERVER_H

#include <stddef.h>

#define ABX_GIT_SERVER_PORT 9418 /* git's registered port (git-daemon(1) --port default) */
#define ABX_GIT_SERVER_MAX_CHILDREN 16
#define ABX_GIT_SERVER_INIT_TIMEOUT_S 10
#define ABX_GIT_SERVER_IDLE_TIMEOUT_S 60

/* Start serving the bare repositories under `root` (an existing directory; made absolute with
 * realpath). Call once, after the hub namespace can be made (network.h abx_network_hub_fd).
 * -1 with err when `root` is not a directory, sandbox links are unavailable, /usr/bin/git is
 * missing, or the port cannot be bound. */
int abx_git_server_start(const char *root, char *err, size_t errlen);

/* Stop accepting, SIGKILL every child still serving a connection and reap it. Idempotent; a
 * no-op when the server never started. */
void abx_git_server_stop(void);

#endif
