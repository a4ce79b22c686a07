/*
 * faults.h: fault injection of `abxlua serve --faults FILE` (issue 5, item 4): rules that make
 * chosen control-plane or ingress (envd) requests fail in a chosen way, so tests can show that
 * the engine ends every fault with a typed error or a successful retry.
 *
 * File:    YAML, parsed with libyaml:
 *            faults:
 *              - route: "POST /sandboxes"   # "<METHOD or *> <path glob>" (fnmatch, no flags) or
 *                                           # just "<path glob>"; the path has no query string
 *                every: 2                   # fire on every 2nd matching request (default 1), or
 *                probability: 0.3           # fire with this probability, drawn from
 *                seed: 42                   # a per-rule generator seeded here (default 1)
 *                limit: 1                   # fire at most this many times (default: no limit)
 *                action: {...}              # exactly one of the kinds below; delay_ms may be
 *                                           # combined with any of them (the delay comes first)
 *          Actions:
 *            status: 503, body: '...', headers: {Retry-After: "1"}, after: true
 *                answer with this status (body default {"code":S,"message":"injected fault"},
 *                Content-Type application/json); the request is not handled. With after: true
 *                it is handled first (envd does the work, e.g. removes the file) and this answer
 *                replaces the handler's: a gateway that lost the upstream's answer.
 *            delay_ms: 2000       wait, then handle the request normally.
 *            reset: true|before   close the connection without answering, request not handled;
 *            reset: after         handle the request (e.g. really create the sandbox), then close
 *                                 without sending the answer: an unknown outcome for the client.
 *            truncate_after: N    the answer's body ends cleanly after N bytes (Content-Length N,
 *                                 or the end of a chunked stream): a cut JSON body or a Connect
 *                                 stream without its end-of-stream message.
 *            malformed_json: true the body is replaced by JSON that does not parse (on a Connect
 *                                 stream: one data envelope holding it).
 *            bad_envelope: huge_length|compressed|garbage
 *                                 the body is replaced by one bad Connect envelope: a 2 GiB length,
 *                                 the compressed flag on an uncompressed payload, or reserved flag
 *                                 bits and noise.
 *            no_answer: true      hold the connection, never answer, until the client leaves,
 *                                 serve stops, or 120 s pass (then it is closed).
 * Scope:   every request to serve's port: control plane (path after the host, e.g.
 *          "/v2/sandboxes") and ingress ("/process.Process/Start", "/files", ...). Rules are tried
 *          in file order; the first that fires wins.
 * Log:     each injected fault: "abxlua serve: fault <rule#> <action> on <METHOD path>" on stderr
 *          (rule# counts from 1 in file order).
 * Errors:  abx_faults_load: -1 with "FILE:LINE: message" in err (serve exits 4).
 * Threads: the rules are read-only after loading; counters and generators are under one mutex.
 *          A body fault is remembered per thread between abx_faults_before and abx_faults_after;
 *          serve runs both on one worker thread (util/pool.h), except for a proxied stream,
 *          whose answer is made later on the daemon's thread: it carries its fault across with
 *          abx_faults_detach / abx_faults_attach.
 */
#ifndef ABX_UTIL_FAULTS_H
#define ABX_UTIL_FAULTS_H

#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

#define ABX_FAULT_MAX_HOLD_MS 120000 /* no_answer and delay_ms are bounded by this */

/* Load the rules of `file`. 0, or -1 with a message naming the file and line in err. */
int abx_faults_load(const char *file, char *err, size_t errlen);

/* Make held and delayed requests finish now (call before stopping the daemon). */
void abx_faults_stop(void);

/* Free the rules. */
void abx_faults_free(void);

/* Before a request is handled: when a rule fires, either answer it here (returns 1, *ret is what
 * the access handler must return) or remember a body/reset fault for this thread and return 0
 * (handle the request, then call abx_faults_after). `path` may carry a query (ignored). */
int abx_faults_before(struct MHD_Connection *c, const char *method, const char *path,
                      enum MHD_Result *ret);

/* Where a handler is about to queue its answer on c: when this thread's fault is a status rule
 * with after: true, queue that rule's answer instead (*ret is what to return) and return 1; the
 * handler then drops its own answer. 0 otherwise. Called by abx_http_text and the ingress. */
int abx_faults_instead(struct MHD_Connection *c, enum MHD_Result *ret);

/* After the handler: forget this thread's fault; returns what the access handler must return
 * (MHD_NO for reset: after, which drops the queued answer and closes the connection). */
enum MHD_Result abx_faults_after(enum MHD_Result handled);

/* This thread's pending fault (an opaque handle, NULL when none), now forgotten by this thread:
 * for a request whose answer is made on another thread, which passes it to abx_faults_attach. */
const void *abx_faults_detach(void);

/* Make `fault` (from abx_faults_detach, may be NULL) this thread's pending fault, as if
 * abx_faults_before had just chosen it here; abx_faults_after forgets it again. */
void abx_faults_attach(const void *fault);

/* A response holding a copy of `data`, with this thread's body fault applied (if any). */
struct MHD_Response *abx_faults_response(const char *data, size_t len);

/* MHD_create_response_from_callback with this thread's body fault applied to the stream. `ctype`
 * is the answer's Content-Type (NULL when unknown): Connect streams get envelope-shaped faults. */
struct MHD_Response *abx_faults_stream(uint64_t size, size_t block, MHD_ContentReaderCallback crc,
                                       void *cls, MHD_ContentReaderFreeCallback crfc,
                                       const char *ctype);

#endif
