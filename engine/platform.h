/*
 * platform.h: runs the embedded local platform (`abxlua serve`) as a child of the engine.
 *
 * The child gets PR_SET_PDEATHSIG(SIGTERM), so it never outlives the engine even when the engine
 * is killed with SIGKILL; on SIGTERM it kills its sandboxes and removes its state.
 * Units:   timeouts in milliseconds.
 * Errors:  -1 with a message in 'err' (spawn failure, no ready line before the deadline, child
 *          exited early, malformed ready line).
 */
#ifndef ABX_PLATFORM_H
#define ABX_PLATFORM_H

#include <stddef.h>
#include <sys/types.h>

struct abx_secrets;

struct abx_platform {
  pid_t pid;
  /* the child's ready line: JSON {"url","port","api_key","domain"}, and "ca_cert" (a path) when
   * serve runs with --tls (platform/platform_main.h) */
  char ready[8192];
};

/* Remembers the engine's own executable (from argv[0] when it names a path), used to start the
 * platform child. Without it, /proc/self/exe is used, which under valgrind names valgrind. */
void abx_platform_set_exe(const char *argv0);

/* The engine's own executable as abx_platform_set_exe resolved it (or "/proc/self/exe"), for
 * bindings that start the engine as a child (core.self_exe). Static storage. */
const char *abx_platform_exe(void);

/* Starts '<the engine's executable> serve --port 0 --ready-fd 3 <extra...>' with stdout and stderr sent to
 * 'log_path' (appended; created or made mode 0600, never through a symlink; NULL or unopenable:
 * /dev/null), and waits up to 'timeout_ms' for the ready line. Serve gives its API key only on the
 * ready line, never in the log. With 'secrets' (may be NULL) and a log, serve writes into a pipe
 * and a second child of the engine (the log writer, forked first) appends what it reads to the
 * log masked with every value registered in 'secrets' at this call (engine/secrets.h); it ignores
 * SIGINT and SIGTERM and ends when serve and everything serve started have closed the pipe.
 * Returns 0, or -1 with a message in err. */
int abx_platform_start(struct abx_platform *p, const char *const *extra, const char *log_path,
                       struct abx_secrets *secrets, int timeout_ms, char *err, size_t errlen);

/* SIGTERM, wait up to 'timeout_ms', then SIGKILL; then up to 2 s for its log writer, so that the
 * log is complete when this returns. Returns the child's exit status or -1. */
int abx_platform_stop(pid_t pid, int timeout_ms);

#endif
