/*
 * volume.h: team volumes of the local platform: host directories bind-mounted into sandboxes.
 *
 * Layout:  <state>/volumes/<volumeID> (owned 1000:1000, mode 0755); they live as long as the
 *          serve process (its state dir). volumeID is "vol" + 20 chars [a-z0-9]; token is 64 hex
 *          digits (the volume content API is not served: docs/protocol/e2b-control-plane.md §5).
 * Names:   ^[a-zA-Z0-9_-]+$, at most 63 characters, unique.
 * Locking: one mutex inside this file. A sandbox holds a use of each mounted volume from start to
 *          destroy; DELETE answers 400 while uses remain.
 * Errors:  int functions return 0 or an HTTP status (400, 404, 409, 500) with a message.
 */
#ifndef ABX_SANDBOX_VOLUME_H
#define ABX_SANDBOX_VOLUME_H

#include <jansson.h>
#include <stddef.h>

/* Set once at startup: creates <state>/volumes. Returns 0 or -1. */
int abx_volume_init(const char *state_dir);

/* POST /volumes: create; *out gets {volumeID,name,token}. */
int abx_volume_create(const char *name, json_t **out, char *msg, size_t msglen);

/* GET /volumes: [{volumeID,name}] (new array). */
json_t *abx_volume_list(void);

/* GET /volumes/{id}: {volumeID,name,token}, or NULL when unknown. */
json_t *abx_volume_get(const char *id);

/* DELETE /volumes/{id}: 0, 404 unknown, 400 mounted by a live sandbox. */
int abx_volume_delete(const char *id, char *msg, size_t msglen);

/* Take a use of volume `name` for a sandbox; *dir gets its host path (malloc'd). 0, or 404. */
int abx_volume_use(const char *name, char **dir, char *msg, size_t msglen);

/* Give back a use taken by abx_volume_use. */
void abx_volume_release(const char *name);

#endif
