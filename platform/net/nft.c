/*
 * nft.c: nftables scripts applied through libnftables, loaded at run time. Contract in nft.h.
 */
#include "nft.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/util.h"

/* The part of libnftables' API used here (libnftables(3), nftables/libnftables.h), declared
 * here so that building abxlua needs no libnftables-dev. */
struct nft_ctx;
static struct {
  struct nft_ctx *(*ctx_new)(uint32_t flags);
  void (*ctx_free)(struct nft_ctx *ctx);
  int (*buffer_output)(struct nft_ctx *ctx);
  int (*buffer_error)(struct nft_ctx *ctx);
  const char *(*error_buffer)(struct nft_ctx *ctx);
  int (*run_buffer)(struct nft_ctx *ctx, const char *buf);
} g_lib;
static int g_loaded; /* 1 loaded, -1 not available */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load(void)
{
  void *h = dlopen("libnftables.so.1", RTLD_NOW | RTLD_LOCAL);
  g_loaded = -1;
  if (!h)
    return;
  *(void **)&g_lib.ctx_new = dlsym(h, "nft_ctx_new");
  *(void **)&g_lib.ctx_free = dlsym(h, "nft_ctx_free");
  *(void **)&g_lib.buffer_output = dlsym(h, "nft_ctx_buffer_output");
  *(void **)&g_lib.buffer_error = dlsym(h, "nft_ctx_buffer_error");
  *(void **)&g_lib.error_buffer = dlsym(h, "nft_ctx_get_error_buffer");
  *(void **)&g_lib.run_buffer = dlsym(h, "nft_run_cmd_from_buffer");
  if (g_lib.ctx_new && g_lib.ctx_free && g_lib.buffer_output && g_lib.buffer_error &&
      g_lib.error_buffer && g_lib.run_buffer)
    g_loaded = 1;
  else
    dlclose(h);
}

int abx_nft_apply(int netns_fd, const char *text, char *out, size_t outlen)
{
  out[0] = 0;
  pthread_once(&g_once, load);
  if (g_loaded < 0)
    return 1;
  int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (self < 0) {
    snprintf(out, outlen, "cannot open this thread's network namespace: %s", strerror(errno));
    return -1;
  }
  if (setns(netns_fd, CLONE_NEWNET) != 0) {
    snprintf(out, outlen, "cannot enter the sandbox network namespace: %s", strerror(errno));
    close(self);
    return -1;
  }
  /* the context (and its netlink socket) is made, used and freed inside the namespace */
  struct nft_ctx *c = g_lib.ctx_new(0 /* NFT_CTX_DEFAULT */);
  int rc = -1;
  if (!c) {
    snprintf(out, outlen, "nft_ctx_new failed");
  } else {
    g_lib.buffer_output(c); /* nothing reaches serve's stdout/stderr */
    g_lib.buffer_error(c);
    rc = g_lib.run_buffer(c, text) == 0 ? 0 : -1;
    if (rc != 0) {
      const char *e = g_lib.error_buffer(c);
      snprintf(out, outlen, "%s", e && *e ? e : "nft_run_cmd_from_buffer failed");
    }
    g_lib.ctx_free(c);
  }
  if (setns(self, CLONE_NEWNET) != 0) {
    abx_slog("cannot return to the host network namespace");
    abort();
  }
  close(self);
  for (char *p = out; *p; p++)
    if (*p == '\n' || *p == '"')
      *p = ' ';
  return rc;
}
