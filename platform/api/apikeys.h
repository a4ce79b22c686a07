/*
 * apikeys.h: managed team API keys of the local platform and the admin credential that manages
 * them (E2B's /api-keys routes).
 *
 * Routes:  GET /api-keys → 200 TeamAPIKey[] (creation order; never a key's value), POST /api-keys
 *          {name} → 201 CreatedTeamAPIKey (the only answer holding the key), PATCH
 *          /api-keys/{apiKeyID} {name} → 202 (e2b-dev/infra handlers/apikey.go; the spec says 200),
 *          DELETE /api-keys/{apiKeyID} → 204. Unknown id: 404, text body "id not found"; an id
 *          that is not a UUID: 400 "Error when parsing API key ID: ..." (both as apikey.go).
 *          Source: e2b-dev/infra spec/openapi.yml paths /api-keys, /api-keys/{apiKeyID}; schemas
 *          NewTeamAPIKey, UpdateTeamAPIKey, TeamAPIKey, CreatedTeamAPIKey, TeamUser,
 *          IdentifierMaskingDetails.
 * Shapes:  a key is "e2b_" + 40 hex digits (packages/shared/pkg/keys GenerateKey: 20 random
 *          bytes); mask {prefix "e2b_", valueLength 40, maskedValuePrefix = first 2 hex digits,
 *          maskedValueSuffix = last 4} (keys.MaskKey); id a random UUID v4; createdBy {id: the
 *          local admin user's UUID, email: null}; createdAt / lastUsed RFC3339 (lastUsed null
 *          until the key authenticates a request).
 * Auth:    the routes take the access token, "Authorization: Bearer sk_e2b_<40 hex>" (serve's,
 *          on its ready line as access_token; ABX_LOCAL_ACCESS_TOKEN chooses it), never an API
 *          key: E2B's security there is AuthProviderBearerAuth + AuthProviderTeamAuth (a dashboard
 *          JWT and X-Team-ID), for which the local platform, having one team and one user,
 *          takes its access token (X-Team-ID is not required and not checked). Missing header:
 *          401 "authorization header is missing"; anything else: 401 "Invalid access token"
 *          (middleware.go ErrNoAuthHeader; the AccessTokenAuth message). Every key created works
 *          as X-API-Key on every sandbox route until deleted, then it gets the 401 of an unknown
 *          key (api.c).
 * Storage: <state>/api-keys.json, mode 0600, written whole through a temporary file and rename;
 *          it holds the SHA-256 of each key, never the key, and the admin user's id. A serve
 *          started on a state dir with that file keeps its keys; a file that is not a regular
 *          file of mode 0600 or does not parse stops serve at start-up (fail closed). lastUsed is
 *          kept in memory and written with the next change and at shutdown.
 * Locking: one mutex inside apikeys.c (handlers run on the worker pool).
 * Errors:  int functions return 0 or an HTTP status with a message.
 */
#ifndef ABX_API_APIKEYS_H
#define ABX_API_APIKEYS_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>

#define ABX_ACCESS_TOKEN_PREFIX "sk_e2b_"
#define ABX_API_KEY_PREFIX "e2b_"

/* The access token: ABX_LOCAL_ACCESS_TOKEN when set (it must match ^sk_e2b_[0-9a-f]{1,52}$),
 * else "sk_e2b_" + 40 random hex digits (keys.GenerateKey with AccessTokenPrefix), into out.
 * 0; 4 (a usage error: a bad variable) or 1 (no randomness) with a message. */
int abx_apikeys_choose_token(char out[64], char *msg, size_t n);

/* Set once at startup, before the daemon: loads <state>/api-keys.json when present, and keeps
 * `access_token` (copied). 0, or -1 with a message (bad file mode, unreadable or malformed file). */
int abx_apikeys_init(const char *state_dir, const char *access_token, char *msg, size_t n);

/* Writes lastUsed back (the file is rewritten only when something changed). */
void abx_apikeys_shutdown(void);

/* 1 when `key` is a managed key that was not deleted (and its lastUsed is now), else 0.
 * Constant time over the stored hashes. */
int abx_apikeys_check(const char *key);

/* 1 when `url` (prefix already stripped) is one of the /api-keys routes' paths. */
int abx_apikeys_path(const char *url);

/* The admin check of an /api-keys request: 1 when its Authorization is "Bearer <access token>";
 * else 0 with the 401 queued into *sent. */
int abx_apikeys_authorized(struct MHD_Connection *c, enum MHD_Result *sent);

/* POST /api-keys: *out gets a CreatedTeamAPIKey. 0, 400 (name), 500. */
int abx_apikeys_create(const char *name, json_t **out, char *msg, size_t n);

/* GET /api-keys: a new TeamAPIKey[] (creation order), NULL when out of memory. */
json_t *abx_apikeys_list(void);

/* PATCH /api-keys/{id}: 0, 400 (name), 404 (unknown id). */
int abx_apikeys_rename(const char *id, const char *name, char *msg, size_t n);

/* DELETE /api-keys/{id}: 0 or 404. */
int abx_apikeys_delete(const char *id, char *msg, size_t n);

/* 1 when `id` has the 8-4-4-4-12 hex form of a UUID (what uuid.Parse takes here). */
int abx_apikeys_uuid_ok(const char *id);

#endif
