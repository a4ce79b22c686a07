/*
 * platform_main.h: the two entry points of the platform side, the one header outside platform/
 * may include (engine/main.c dispatches to them; tests/layout/boundary.py enforces it). The
 * engine reaches the platform only over HTTP (DESIGN.md "Boundaries that never bend").
 *
 * `abxlua serve`: the embedded local E2B platform (a separate process).
 * Usage:   abxlua serve [--host 127.0.0.1] [--port 0] [--domain localhost] [--state-dir DIR]
 *                       [--build-cache DIR] [--tls] [--ready-fd FD] [--faults FILE]
 *                       [--git-root DIR] [--help]
 * --git-root: serve the bare repositories under DIR read-only to sandboxes (git_server.h); DIR
 *          not a directory or the git server not able to listen is a startup failure (exit 1).
 * --build-cache: the template build cache (layer_cache.h; default <state>/build-cache with
 *          --state-dir, else $XDG_CACHE_HOME/abxlua/build-cache or ~/.cache/abxlua/build-cache);
 *          a dir that cannot be created is a startup failure (exit 1).
 * --mutant NAME[:N][,NAME...]: the platform lies as each named mutant's row says (util/mutant.h,
 *          docs/mutants.md); the first log line is "mutants on: NAME[, NAME...] (docs/mutants.md)";
 *          an unknown name or one of another flavour is exit 4; `--mutant list` prints the
 *          catalogue as a JSON array on stdout and exits 0.
 * Log:     every line serve writes (stdout and stderr) is "<UTC time> abxlua serve: <message>"
 *          (util/log.h: the time is ISO 8601 with ms; requests, sandbox starts and stops).
 * Startup: prints "listening on http://127.0.0.1:PORT (domain DOMAIN)" and
 *          "api key e2b_<40 hex>" on stdout (as log lines). The key is random unless env
 *          ABX_LOCAL_API_KEY is set (it must match ^e2b_[0-9a-f]+$, else exit 4). With --ready-fd FD
 *          one JSON line {"url","port","api_key","domain"} is written to FD, which is then closed.
 * --tls:   HTTPS only (docs/PLATFORM.md "TLS and E2B's default addressing", tls.h): the domain
 *          defaults to e2b.localhost and needs two or more labels (else exit 4); "listening on
 *          https://api.DOMAIN:PORT (domain DOMAIN, TLS, CA PATH)"; the ready line's url is
 *          https://api.DOMAIN:PORT and it gains "ca_cert" (the CA's path); sandbox answers report
 *          "domain" as DOMAIN:PORT.
 * Stop:    SIGTERM / SIGINT kill every sandbox, remove the state dir, exit 0.
 * Exit:    0 clean stop, 1 startup failure, 2 usage error, 4 bad ABX_LOCAL_API_KEY.
 *
 * `abxlua envd`: the in-sandbox daemon (process and filesystem Connect services, /files).
 * Source: docs/protocol/envd-protocol.md.
 *
 * `sudo` (the binary run as `sudo` or `sudoedit`, or `abxlua sudo ARGS`): a sandbox's sudo, a
 * client of envd's privilege broker (platform/envd/sudo.h; docs/PLATFORM.md "sudo").
 */
#ifndef ABX_PLATFORM_MAIN_H
#define ABX_PLATFORM_MAIN_H

/* Entry point of `abxlua serve ARGS...`; argv[0] is "serve". Returns the process exit code. */
int abx_serve_main(int argc, char **argv);

/* Entry point of `abxlua envd ARGS...`; argv[0] is "envd". Returns the process exit code. */
int abx_envd_main(int argc, char **argv);

/* Entry point of `sudo ARGS...` in a sandbox; argv[0] is "sudo" (or a path ending in it, or
 * "sudoedit", refused). Returns the exit code: the command's, or 1 when sudo refused or failed. */
int abx_sudo_main(int argc, char **argv);

#endif
