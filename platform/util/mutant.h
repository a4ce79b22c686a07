/*
 * mutant.h: `abxlua serve --mutant NAME[,NAME...]`: the catalogue of the documented lies the local
 * platform can tell (issue 27), one row a mutant, and which of them are on.
 *
 * A mutant reproduces one platform bug users of E2B-compatible platforms reported in public (the
 * row's `source`), so that a suite can be scored by the mutants it catches (`abxlua mutate`).
 * Each row says what changes on the wire and nothing else changes. The names are fixed: tests,
 * docs/mutants.md and envd (ABX_ENVD_MUTANTS) use exactly these.
 *
 * Layers:  api      the E2B control plane (platform/api/), asked through abx_mutant_on;
 *          ingress  serve's edge in front of envd (platform/ingress/);
 *          envd     the daemon in each sandbox (platform/envd/): serve passes the envd mutants that
 *                   are on to every sandbox's envd (not a template build's) as the environment
 *                   variable ABX_ENVD_MUTANTS="name,name" (abx_mutant_names_on), and envd refuses
 *                   an unknown name at start.
 * Flavours: each row names the serve flavours (flavor.h) it applies to; serve refuses a mutant that
 *          does not apply to the flavour served (the api mutants live in the E2B front only, the
 *          ingress one counts requests to envd's port 49983 only; the envd mutants change
 *          OpenSandbox's execd routes too, so they apply to every flavour).
 * Requires: the abxlua capabilities (lib/abx/run/config.lua CAPABILITIES) a suite needs to see the
 *          mutant: `abxlua mutate` scores only the mutants whose capabilities the provider has.
 * Threads: abx_mutant_enable before serving (the main thread); the queries are then read-only and
 *          safe on any thread.
 * Sources: the public reports named in each row (GitHub issues and pull requests; "abxlua issue 27"
 *          for the classes that issue lists without a public report).
 */
#ifndef ABX_UTIL_MUTANT_H
#define ABX_UTIL_MUTANT_H

#include <stddef.h>

/* The mutants, in catalogue order (mutant.c's table has one row each, in this order). */
enum abx_mutant {
  /* api */
  ABX_MUT_RESUME_NOOP,
  ABX_MUT_KILL_NOOP,
  ABX_MUT_SET_TIMEOUT_NOOP,
  ABX_MUT_NEXT_TOKEN_IGNORED,
  ABX_MUT_METADATA_FILTER_IGNORED,
  ABX_MUT_STATE_FILTER_IGNORED,
  ABX_MUT_END_AT_MISSING,
  ABX_MUT_METADATA_DROPPED,
  ABX_MUT_CONNECT_SHORTENS_TTL,
  ABX_MUT_V2_ROUTES_405,
  ABX_MUT_CREATE_BEFORE_READY,
  /* ingress */
  ABX_MUT_TRANSIENT_502,
  /* envd */
  ABX_MUT_BINARY_READ_MANGLED,
  ABX_MUT_LARGE_UPLOAD_DROPPED,
  ABX_MUT_EXIT_CODE_ZERO,
  ABX_MUT_STDERR_AS_STDOUT,
  ABX_MUT_STREAM_NO_END,
  ABX_MUT_COMMAND_TAIL_1S,
  ABX_MUT_COUNT
};

enum abx_mutant_layer { ABX_MUT_LAYER_API, ABX_MUT_LAYER_INGRESS, ABX_MUT_LAYER_ENVD };

/* A set of layers for abx_mutant_enable: ABX_MUT_LAYERS(ENVD), or ABX_MUT_ALL_LAYERS. */
#define ABX_MUT_LAYERS(l) (1u << ABX_MUT_LAYER_##l)
#define ABX_MUT_ALL_LAYERS (ABX_MUT_LAYERS(API) | ABX_MUT_LAYERS(INGRESS) | ABX_MUT_LAYERS(ENVD))

/* What transient-502 answers instead of forwarding (text/html, no newline): a gateway's bare
 * page, not the platform's JSON (e2b-dev/E2B#1262). create-before-ready answers it too. */
#define ABX_MUT_BARE_502 "<html><body><h1>502 Bad Gateway</h1></body></html>"

/* One row of the catalogue. */
struct abx_mutant_row {
  const char *name;            /* e.g. "kill-noop" */
  const char *source;          /* the public report: URL(s), space-separated, or an id */
  const char *wire;            /* what changes on the wire, one sentence */
  const char *const *flavors;  /* the serve flavours it applies to, NULL-terminated */
  const char *const *requires; /* abxlua capability names a suite needs, NULL-terminated */
  enum abx_mutant_layer layer;
  long param_default;        /* 0: no parameter; else NAME:N is allowed, N param_min.. */
  long param_min, param_max; /* ..param_max, and a bare NAME means N = param_default */
};

/* Row `m` (0 <= m < ABX_MUT_COUNT). Never NULL for a valid m. */
const struct abx_mutant_row *abx_mutant_row(enum abx_mutant m);

/* "api", "ingress" or "envd". */
const char *abx_mutant_layer_name(enum abx_mutant_layer layer);

/* Turn on the mutants of `list`, "NAME[:N][,NAME[:N]...]" (no spaces; empty pieces are an error),
 * on top of those already on. Every name must be a row whose layer is in `layers` and, when
 * `flavor` is not NULL, whose flavours include `flavor`; ":N" only where the row allows a
 * parameter, N a decimal in its range; a name given twice is an error. All or nothing: on an
 * error nothing of `list` is turned on. 0, or -1 with msg (n bytes) naming the fault and the valid
 * names. */
int abx_mutant_enable(const char *list, const char *flavor, unsigned layers, char *msg, size_t n);

/* 1 when mutant `m` is on, else 0. */
int abx_mutant_on(enum abx_mutant m);

/* The parameter N of an enabled mutant that takes one (its default when none was given); 0 when
 * it is off or takes none. */
long abx_mutant_param(enum abx_mutant m);

/* The mutants on, in catalogue order, into buf (n bytes, cut when short): with `sep` between the
 * names, each "name" or "name:N" when with_param and the row takes a parameter, only those of
 * `layers`. "" when none. Returns the count of names written. For serve's first log line
 * (", ", with parameters) and ABX_ENVD_MUTANTS (",", envd's only). */
int abx_mutant_names_on(unsigned layers, const char *sep, int with_param, char *buf, size_t n);

/* Every name, "a|b|...", for usage text and errors. Static. */
const char *abx_mutant_names(void);

/* The catalogue as a JSON array, one object a row: {"name","source","wire","flavors":[...],
 * "requires":[...],"layer", "parameter":{"default","min","max"} only on a row that takes one}.
 * Indented, with a final newline; malloc'd (free it), NULL when out of memory. */
char *abx_mutant_catalogue_json(void);

#endif
