/*
 * mutants.h: envd's lies on demand, the envd rows of `abxlua serve --mutant` (issue 27): each
 * mutant makes envd answer one documented way a buggy E2B-compatible platform was seen to answer,
 * so a suite can show it would catch that bug. Off unless named; with none named envd is byte for
 * byte what it is without this file.
 *
 * Input:   the environment variable ABX_ENVD_MUTANTS="name[,name...]" read once at start
 *          (abx_envd_main; serve sets it when it starts a sandbox's envd). Empty items and
 *          spaces around names are ignored; unset or empty: no mutant. An unknown name (or one
 *          with a ":N" parameter: no envd mutant takes one) makes envd refuse to start, exit 4,
 *          with a message naming the valid envd mutants (fail closed).
 * Shapes:  struct envd's `mutants` is a bit set of enum envd_mutant; envd_mutant_on asks it.
 * Catalogue (name — public source — what changes on the wire):
 *   binary-read-mangled  TencentCloud/CubeSandbox#1570: GET /files answers the file with every
 *                        invalid UTF-8 sequence replaced by U+FFFD (EF BF BD), as a server that
 *                        decoded the bytes as text would (WHATWG's decoder, one U+FFFD a maximal
 *                        subpart; Python's bytes.decode("utf-8", "replace") agrees). Valid UTF-8
 *                        is unchanged; Content-Length is the mangled length; gzip still applies.
 *   large-upload-dropped opensandbox-group/OpenSandbox#1016: POST /files with a file over
 *                        ENVD_MUT_UPLOAD_MAX (18 KiB, 18432 bytes; after gzip inflation) answers
 *                        the normal 200 body and leaves no file at that path: the bytes past the
 *                        limit are never written and the file is truncated and removed once the
 *                        upload crosses it (one that was there before is gone too). A file of
 *                        18432 bytes or fewer is written as usual.
 *   exit-code-zero       issue 27's list: every process end event says exit 0 (`exited: true`,
 *                        `status: "exit status 0"`, no exitCode, no error), whatever the exit
 *                        code or signal. A Start deadline still ends the stream with
 *                        deadline_exceeded (a stream error, not the end event).
 *   stderr-as-stdout     issue 27's list: stderr bytes go out in `data.stdout` events.
 *   stream-no-end        opensandbox-group/OpenSandbox#1277: a Start or Connect stream never sends
 *                        its end event nor its end-of-stream envelope; it stays open with its
 *                        keepalives until the client leaves, a Connect-Timeout-Ms deadline or
 *                        envd's shutdown. The process itself ends normally (gone from List).
 *   command-tail-1s      opensandbox-group/OpenSandbox#1661: every process's end event is queued
 *                        ENVD_MUT_TAIL_MS (1 s) after envd saw the process end and its output
 *                        drained, so every command takes at least 1 s.
 * execd:   OpenSandbox's execd routes (--execd-port, execd*.c) show the same facts: GET
 *          /files/download is mangled (Range and offset/limit apply to the mangled bytes),
 *          POST /files/upload drops a file over 18 KiB, and a command's events (built on the
 *          process table) report exit 0 (execution_complete), stderr as stdout, the final event
 *          1 s late (execd's own 1 s linger follows it); stream-no-end keeps a POST /command (or
 *          session run) SSE stream open with its pings and without its final event, while the
 *          command's status says it ended.
 * Scope:   the lies apply to every caller of envd, serve's own process runs through envd
 *          (template start and ready commands) included.
 * Source:  issue 27's mutant catalogue (`abxlua serve --mutant list` prints it); the public
 *          reports named above.
 */
#ifndef ABX_ENVD_MUTANTS_H
#define ABX_ENVD_MUTANTS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "envd/envd_int.h"

/* The envd mutants, in catalogue order; a bit each in struct envd's `mutants`. */
enum envd_mutant {
  ENVD_MUT_BINARY_READ_MANGLED,
  ENVD_MUT_LARGE_UPLOAD_DROPPED,
  ENVD_MUT_EXIT_CODE_ZERO,
  ENVD_MUT_STDERR_AS_STDOUT,
  ENVD_MUT_STREAM_NO_END,
  ENVD_MUT_COMMAND_TAIL_1S,
  ENVD_MUT_COUNT
};

/* large-upload-dropped: the largest file (bytes) an upload still writes. */
#define ENVD_MUT_UPLOAD_MAX 18432u
/* command-tail-1s: how long (ms) an end event is held. */
#define ENVD_MUT_TAIL_MS 1000

/* Parse a comma-separated list of mutant names (NULL or "" → none) into *set. 0, or -1 with
 * "unknown envd mutant '<name>' in ABX_ENVD_MUTANTS (valid: ...)" in msg[msglen]. */
int envd_mutants_parse(const char *list, unsigned *set, char *msg, size_t msglen);

/* The names in set, comma-separated, into out[outlen] ("" for none). */
void envd_mutants_names(unsigned set, char *out, size_t outlen);

/* Whether mutant m is on in envd e. */
static inline bool envd_mutant_on(const struct envd *e, enum envd_mutant m)
{
  return e && (e->mutants >> m) & 1u;
}

/* binary-read-mangled: a new fd (a memfd, offset 0) holding fd's bytes from offset 0 with every
 * invalid UTF-8 sequence replaced by U+FFFD; fd is closed and st->st_size set to the new size.
 * On failure (out of memory, read error) returns -1 with fd closed. */
int envd_mutant_mangle_fd(int fd, struct stat *st);

/* large-upload-dropped: the upload of the file open on *fd at `path` is to reach `size` bytes.
 * When the mutant is on in e and size is over ENVD_MUT_UPLOAD_MAX, truncates the file, unlinks
 * it (as user `as`'s fs identity, or the caller's when NULL), closes *fd, sets it to -1 and
 * returns true: the caller writes nothing more of it and answers as usual. Else false. */
bool envd_mutant_upload_drop(const struct envd *e, int *fd, const char *path,
                             const struct envd_user *as, uint64_t size);

/* stream-no-end: whether the stream envelope env (len bytes: prefix and JSON) is a process's end
 * event {"event":{"end":...}} that a stream must not send because the mutant is on in e. */
bool envd_mutant_hides_end(const struct envd *e, const char *env, size_t len);

#endif
