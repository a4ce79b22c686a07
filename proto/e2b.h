/*
 * e2b.h: protocol facts of the E2B platform that both sides of abxlua need (no Lua, no I/O): the
 * port envd listens on inside a sandbox, the envd version the local platform speaks, and the rule
 * for a sandbox id. One place for each, so serve, envd and ingress cannot disagree.
 *
 * Source:  docs/protocol/envd-protocol.md §1 (port 49983), §9 (X-Envd-Version; the SDK's version
 *          gates: 0.6.4 is the newest, ENVD_VERSION_WATCH_NETWORK_MOUNTS);
 *          docs/protocol/e2b-control-plane.md (the `<sandboxID>-<clientID>` path form: the id is
 *          the segment before the first '-'). The id alphabet is the one the platform mints.
 */
#ifndef ABX_E2B_H
#define ABX_E2B_H

#include <stddef.h>

/* TCP port of envd inside every sandbox (numeric, and as text for argv). */
#define ABX_E2B_ENVD_PORT 49983
#define ABX_E2B_ENVD_PORT_STR "49983"

/* The envd version the local platform's envd implements: X-Envd-Version, `envd --version`, the
 * control plane's envdVersion field. */
#define ABX_E2B_ENVD_VERSION "0.6.4"

/* Longest sandbox id, in characters (ids fit a char[32] with the NUL). */
#define ABX_E2B_SANDBOX_ID_MAX 31

/* True (1) when s[0..n) is a sandbox id: 1 to ABX_E2B_SANDBOX_ID_MAX characters of [a-z0-9];
 * else 0. s need not be NUL-terminated. */
int abx_e2b_sandbox_id_valid(const char *s, size_t n);

/* Random characters of a minted sandbox id, after its kind letter ("i" + 20 in all). */
#define ABX_E2B_SANDBOX_ID_RANDOM 20

/* Mint a sandbox id into `out` (ABX_E2B_SANDBOX_ID_MAX + 1 bytes): `kind` (a letter of [a-z]:
 * 'i' for a sandbox of the API, 'b' for a template build's), then ABX_E2B_SANDBOX_ID_RANDOM
 * characters of [a-z0-9], then a NUL. The characters come uniformly from the bytes `fill` gives
 * (a byte of 252..255 is drawn again, so no character is likelier than another); proto does no
 * I/O, so the caller brings the source: `fill(buf, n)` writes n random bytes and returns 0, or
 * -1 when it has none. Returns 0 (the id passes abx_e2b_sandbox_id_valid), or -1 with out ""
 * when `fill` fails or `kind` is not in [a-z]. */
int abx_e2b_sandbox_id_new(char *out, char kind, int (*fill)(void *buf, size_t n));

/* ABX_CLIENT_ID: the deprecated but required `clientID` of every Sandbox answer, always
 * "6532622b" (docs/protocol/e2b-control-plane.md §2 "Sandbox ids"). */
#define ABX_CLIENT_ID "6532622b"
/* ABX_MAX_TIMEOUT_S: 24 h, E2B Pro's maximum run (docs/protocol/e2b-v2-and-peers.md §6).
 * ABX_V2_TIMEOUT_S: the v2 create/connect default TTL (docs/protocol/e2b-v2-and-peers.md §1.2). */
#define ABX_MAX_TIMEOUT_S 86400
#define ABX_V2_TIMEOUT_S 300

#endif
