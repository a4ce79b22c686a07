/*
 * image_root.c: a fromImage build's parent (template_build.h abx_tbuild_image_root): the Debian
 * root of image_debian.h as the bottom record of a template chain (rootfs.h "Images"), or the
 * base template for the SDK's default image. Contracts in rootfs.h and template_build.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_debian.h"
#include "layer_cache.h"
#include "rootfs.h"
#include "template_store.h"

struct abx_template *abx_template_image(const char *image_dir, const char *id, const char *ref,
                                        char *err, size_t errlen)
{
  struct abx_template *t = calloc(1, sizeof *t);
  if (!t || !(t->layer = strdup(image_dir))) {
    free(t);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  snprintf(t->id, sizeof t->id, "%s", id);
  snprintf(t->alias, sizeof t->alias, "%s", ref);
  t->cpu_count = ABX_BASE_CPU_COUNT;
  t->memory_mb = ABX_BASE_MEMORY_MB;
  t->created_ns = 0;
  t->keep_layer = 1; /* the build cache's (image_debian.h "Build") */
  t->image_root = 1;
  t->refs = 1;
  /* The image key covers the package list and image_debian.c's recipe; the dpkg status covers
   * the versions mmdebstrap installed, so a root rebuilt later (a removed cache dir, new point
   * release) never reuses layers built over the old one. */
  char status[4400];
  snprintf(status, sizeof status, "%s/root/var/lib/dpkg/status", image_dir);
  struct abx_key *k = abx_key_new();
  abx_key_add(k, "abx image root v1");
  abx_key_add(k, id);
  abx_key_add_file(k, status);
  abx_key_end(k, t->build_key);
  return t;
}

int abx_template_is_image(const struct abx_template *t)
{
  while (t && t->parent)
    t = t->parent;
  return t && t->image_root;
}

struct abx_template *abx_tbuild_image_root(const char *image,
                                           void (*log)(void *ud, const char *line), void *ud,
                                           char *err, size_t errlen)
{
  /* The SDK's default base image (Template() without a from*: `e2bdev/base`, template/index.ts
   * defaultBaseImage) is the image E2B's base template is built from: here, the base template. */
  if (strcmp(image, "e2bdev/base") == 0 || strcmp(image, "e2bdev/base:latest") == 0) {
    struct abx_template *b = abx_template_base();
    abx_template_ref(b, 0);
    return b;
  }
  char root[4096];
  if (abx_image_root(image, abx_lcache_dir(), log, ud, root, sizeof root, err, errlen) != 0)
    return NULL;
  /* root is <cache>/images/<key>/root: the record's layer is its parent dir, named by the key */
  char *slash = strrchr(root, '/');
  if (!slash || strcmp(slash, "/root") != 0) {
    snprintf(err, errlen, "image '%s': unexpected root path %s", image, root);
    return NULL;
  }
  *slash = 0;
  const char *key = strrchr(root, '/');
  return abx_template_image(root, key ? key + 1 : root, image, err, errlen);
}
