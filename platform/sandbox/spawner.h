/*
 * spawner.h: fork+exec on one long-lived thread.
 *
 * Why:     bwrap --die-with-parent uses PR_SET_PDEATHSIG, which fires when the *thread* that forked
 *          the process exits. libmicrohttpd runs each connection on its own short-lived thread, so
 *          sandboxes must be forked by a thread that lives as long as the server: the main thread,
 *          which calls abx_spawner_poll() in its loop.
 * Shapes:  the child gets stdin from /dev/null, stdout and stderr on `log_fd`, `pass_fd` as fd 3,
 *          every other fd closed, its own process group (pgid == pid), and the environment `envp`.
 *          Before exec it joins each cgroup whose cgroup.procs path is in `cgroups` (NULL-terminated,
 *          may be NULL); failing to join one exits 125, so no sandbox runs outside its cgroups.
 *          With keep_caps != 0 (a mask of 1 << CAP_x) the child's capability bounding set is cut
 *          to keep_caps, its current capabilities made inheritable so the exec'd program (bwrap,
 *          run as root) still starts with all of them; failing exits 124.
 * Errors:  abx_spawner_run returns the pid, or -1 when fork failed or the spawner is stopped.
 */
#ifndef ABX_SANDBOX_SPAWNER_H
#define ABX_SANDBOX_SPAWNER_H

#include <stdint.h>
#include <sys/types.h>

/* Ask the spawner thread to fork and execve(path, argv, envp); blocks until it has forked.
 * Any thread. Returns the child pid or -1. */
pid_t abx_spawner_run(const char *path, char *const argv[], char *const envp[], int pass_fd,
                      int log_fd, char *const cgroups[], uint64_t keep_caps);

/* Serve pending requests, waiting at most `ms` milliseconds for one. Only the spawner thread. */
void abx_spawner_poll(int ms);

/* Refuse new requests and fail pending ones (shutdown). */
void abx_spawner_stop(void);

#endif
