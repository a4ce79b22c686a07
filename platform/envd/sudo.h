/*
 * sudo.h: `sudo` inside a sandbox, as a privilege broker of envd (internal to platform/envd).
 *
 * Why:     bubblewrap sets PR_SET_NO_NEW_PRIVS on every process of a sandbox, with no option to
 *          leave it off, so no set-user-ID program (the real /usr/bin/sudo) can raise privileges
 *          there. envd already runs as the sandbox's root, so it does the raising: a `sudo`
 *          client (this binary, as /usr/bin/sudo and /usr/local/bin/sudo of the base template)
 *          asks envd's broker over a unix socket, the broker learns the caller's uid from the
 *          kernel (SO_PEERCRED, never from the client), applies the sandbox's sudoers and runs
 *          the command. The command is a child of the broker, so it has the capabilities of the
 *          sandbox's root and no more (the bounding set bwrap left, sandbox.c KEEP_CAPS).
 *
 * Socket:  SUDO_SOCK, a SOCK_STREAM unix socket in the sandbox's own mount namespace (0666, so
 *          every uid can connect; the broker decides). Nothing outside the sandbox sees the path.
 * Wire:    client → broker, once: struct sudo_hdr with SCM_RIGHTS of the client's fds 0, 1, 2,
 *          then `len` bytes: NUL-terminated records, each a tag byte then its value:
 *            'f' flags (letters: E preserve env, H set HOME, i login shell, s shell, l list,
 *                v validate, n non-interactive, F the client is its terminal's foreground job)   'u' run-as user (name or #uid)
 *            'g' run-as group (name or #gid)      'c' the client's cwd   'm' its umask (octal)
 *            'p' a variable name to preserve (--preserve-env=LIST)
 *            'e' one K=V of the client's environment   's' one VAR=value of the command line
 *            'a' one argument of the command (the first is the command)
 *          then, any number of times: uint32 signal number the client received (forwarded to
 *          the command). broker → client, once at the end: uint32 status, the exit code
 *          (0..255), or SUDO_SIGNALED | signal number when the command was killed by a signal.
 *          Refusals and errors are written by the broker to the client's stderr, status 1.
 *          The client's going away before the status (it was SIGKILLed) SIGKILLs the command's
 *          process group, so a command never outlives a killed sudo. On a terminal the command
 *          gets a pty of its own (sudo_pty.c, sudo's use_pty).
 * Limits:  SUDO_MAX_REQ (4 MiB) of records; the header must arrive within 10 s of connecting.
 * Source:  sudo(8) and sudoers(5) of sudo 1.9.13 (Debian 12): options, env_reset, secure_path,
 *          the default env_keep / env_check / env_delete lists (`sudo -V` as root), messages.
 */
#ifndef ABX_ENVD_SUDO_H
#define ABX_ENVD_SUDO_H

#include <stddef.h>
#include <stdint.h>
#include <poll.h>
#include <sys/types.h>
#include <termios.h>

struct passwd;

#define SUDO_SOCK_DIR "/run/abx"
#define SUDO_SOCK SUDO_SOCK_DIR "/sudo.sock"
#define SUDO_MAGIC 0x41425853u /* "ABXS" */
#define SUDO_VERSION 1u
#define SUDO_MAX_REQ (4u * 1024u * 1024u)
#define SUDO_SIGNALED 0x100u
/* sudo's secure_path of Debian 12's /etc/sudoers, used when sudoers sets none. */
#define SUDO_SECURE_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

struct sudo_hdr {
  uint32_t magic, version, len;
};

/* ---- sudo_broker.c (envd's side) ------------------------------------------------------------ */

/* Start the broker as a child process of envd, listening on SUDO_SOCK. Call before envd starts
 * any thread (the broker is single-threaded and forks a handler per request). Only when envd is
 * root (otherwise it could not switch users): returns the broker's pid, 0 when not root, -1 when
 * the socket cannot be made (then a reason is on stderr and sudo in the sandbox reports the
 * broker unreachable). The broker dies with envd (PR_SET_PDEATHSIG). */
pid_t envd_sudo_broker_start(void);

/* Stop the broker started above (SIGKILL, reap) and remove the socket. pid <= 0: nothing. */
void envd_sudo_broker_stop(pid_t pid);

/* ---- sudo_policy.c (the sudoers the broker applies) ------------------------------------------ */

enum sudo_verdict {
  SUDO_ALLOW,       /* a `WHO ALL=(ALL[:ALL]) NOPASSWD: ALL` rule is the last one naming the user */
  SUDO_PASSWORD,    /* the last rule naming the user needs a password: refused, none is asked */
  SUDO_NOT_LISTED,  /* no rule names the user */
  SUDO_UNSUPPORTED, /* a rule that may name the user has a form the broker does not apply */
  SUDO_BAD_FILE     /* a sudoers file is unsafe (not root's, writable by others) or unreadable */
};

/* The outcome for one caller; `why` names the file (and line) behind UNSUPPORTED / BAD_FILE. */
struct sudo_policy {
  enum sudo_verdict verdict;
  int runas_group; /* the rule allows -g (runas `(ALL:ALL)`) */
  char secure_path[1024];
  char why[512];
};

/* Evaluate /etc/sudoers (and what it includes; /etc/sudoers.d alone when there is no
 * /etc/sudoers) for the caller named `name` (uid, groups from the sandbox's /etc/group).
 * Understood: `@include`/`#include FILE`, `@includedir`/`#includedir DIR` (files without '.'
 * and not ending in '~', in name order, as sudo), `Defaults secure_path=...`, other Defaults
 * ignored, alias definitions skipped, and user rules `WHO[, WHO...] ALL = (ALL[:ALL]) [TAG:]...
 * ALL` with WHO a name, %group, #uid, %#gid or ALL and tags NOPASSWD, PASSWD, SETENV; the last
 * rule naming the caller decides, as in sudo. A rule of any other form that may name the caller
 * (an alias, a negation, a command list, a host other than ALL) makes the verdict UNSUPPORTED:
 * refused rather than guessed. Root (uid 0) is decided by the caller of this function. */
void sudo_policy_eval(const char *name, uid_t uid, const gid_t *groups, int ngroups,
                      struct sudo_policy *p);

/* The command's environment, sudo's env_reset semantics (sudoers(5) "Command environment"):
 * reset (preserve == 0): only the env_keep names of sudo's defaults (DISPLAY, PS1, ...), the
 * env_check names (TERM, LANG, LC_*, TZ, ...) whose value has no '%' (nor '/', but for TZ), and
 * the names in `keep`; preserve (-E): all of the caller's but the env_delete list (LD_*,
 * BASH_ENV, IFS, ...). Either way values starting "()" are dropped, then PATH = secure_path,
 * LOGNAME and USER = target, SUDO_COMMAND, SUDO_USER, SUDO_UID, SUDO_GID; HOME = target's home
 * when reset or set_home; SHELL and MAIL = target's when reset; last the command line's
 * VAR=value `sets`. Returns a malloc'd NULL-terminated array of malloc'd strings, or NULL. */
struct sudo_env_in {
  char *const *caller; /* K=V */
  size_t ncaller;
  char *const *keep; /* names */
  size_t nkeep;
  char *const *sets; /* VAR=value */
  size_t nsets;
  int preserve, set_home;
  const char *secure_path, *target_name, *target_home, *target_shell, *command;
  const char *caller_name;
  uid_t caller_uid;
  gid_t caller_gid;
};
char **sudo_build_env(const struct sudo_env_in *in);

/* ---- sudo_request.c (a request, read by the broker) ------------------------------------------ */

/* A parsed request (records of the wire above); strings point into the request buffer. */
struct sudo_req {
  const char *flags, *user, *group, *cwd; /* flags: letters of "EHilsvnF"; user/group NULL: none */
  mode_t umask;
  char **keep, **env, **sets, **args; /* NULL-terminated, n* entries each */
  size_t nkeep, nenv, nsets, nargs;
};

/* Records → *r. Returns 0, or -1 when malformed (no final NUL, an unknown tag or flag, a 's'
 * record without '=', no command and none of -i, -s, -l, -v): fail closed, the broker refuses. */
int sudo_req_parse(char *b, size_t len, struct sudo_req *r);

/* Whether flag letter f was given. */
int sudo_req_has(const struct sudo_req *r, char f);

/* What the broker executes: path, argv (malloc'd array; strings borrowed from the request or
 * owned by the plan), the cwd, and SUDO_COMMAND (the path and arguments, space-joined). */
struct sudo_plan {
  char *path, **argv, *joined, *command, *argv0;
  const char *cwd;
};

/* The plan for r: -i the target's login shell ("-bash") in its home; -s $SHELL of the caller
 * (else its passwd shell); with a command, either shell gets `-c` and the arguments joined,
 * each character but alphanumerics, '_', '-' and '$' escaped with a backslash, as sudo does;
 * otherwise the command, looked up as sudo_find_cmd does. Returns 0, or -1 after telling the
 * client why on errfd ("sudo: X: command not found"). Free with sudo_plan_free either way. */
int sudo_plan_make(const struct sudo_req *r, const struct passwd *caller,
                   const struct passwd *target, const char *secure_path, int errfd,
                   struct sudo_plan *pl);
void sudo_plan_free(struct sudo_plan *p);

/* The command's path: as given when it has a '/' (relative to cwd), else the first executable
 * on `path` (secure_path: sudo searches it, not the caller's PATH). malloc'd, NULL: not found. */
char *sudo_find_cmd(const char *cmd, const char *cwd, const char *path);

/* Write "fmt\n" to fd (the client's stderr), best effort. */
void sudo_say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- sudo_pty.c (use_pty: the command's own terminal) ---------------------------------------- */

/* A pseudo-terminal between the command and the caller's terminal. master < 0: none. */
struct sudo_pty {
  int master, slave;
  int tty;       /* the caller's terminal (a dup of its stdout, else the first fd that is one) */
  int in;        /* the caller's stdin when it is a terminal and the caller is in the foreground */
  int raw, eof;  /* in was put in raw mode (saved restores it); the master reported EIO */
  int is_tty[3]; /* which of the caller's fds 0-2 are terminals (the command gets the slave) */
  struct termios saved;
  char pend[4096]; /* input read from in and not yet written to the master */
  size_t npend, pos;
};

/* When one of fds 0-2 is a terminal: open a pty (slave owned by `owner`, the caller's modes and
 * window size), and with `foreground` (the caller is its terminal's foreground job: the client
 * says so with flag F) put the caller's terminal in raw mode, so keys reach the command's line
 * discipline (Ctrl-C there). Returns 1 with a pty, 0 when no fd is a terminal, -1 on failure. */
int sudo_pty_open(struct sudo_pty *p, const int fds[3], int foreground, uid_t owner);

/* In the command's child: a session of its own with the slave as controlling terminal, and the
 * slave in place of each of fds 0-2 that is the caller's terminal. No-op without a pty. */
void sudo_pty_child(const struct sudo_pty *p, int fds[3]);

/* The handler's poll set for the relay (at most 2 entries into pf); then hand the results to
 * sudo_pty_events. SIGWINCH from the client: sudo_pty_winch copies the caller's window size. */
int sudo_pty_pollfds(struct sudo_pty *p, struct pollfd *pf);
void sudo_pty_events(struct sudo_pty *p, const struct pollfd *pf, int n);
void sudo_pty_winch(struct sudo_pty *p);

/* Relay what is left of the command's output, restore the caller's terminal mode, close. */
void sudo_pty_close(struct sudo_pty *p);

/* ---- sudo_client.c: abx_sudo_main (platform_main.h) ------------------------------------------ */
/* Parses sudo's options (fail-closed: an unknown option prints sudo's usage and exits 1; the known
 * ones this broker does not implement are named and refused, exit 1), sends the request,
 * forwards SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM and SIGWINCH, and exits
 * with the command's status (re-raising its signal, as sudo does). */

#endif
