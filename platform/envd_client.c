/*
 * envd_client.c: health probe and /init against envd inside a sandbox. Contract in envd_client.h.
 */
#include "envd_client.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "http_util.h"
#include "netns.h"

static size_t discard(char *p, size_t sz, size_t n, void *cls)
{
  (void)p;
  (void)cls;
  return sz * n;
}

/* One request; returns the HTTP status, or -1 with err filled. */
static long request(int netns_fd, const char *path, const char *json_body, long timeout_ms,
                    char *err, size_t errlen)
{
  CURL *c = curl_easy_init();
  if (!c) {
    snprintf(err, errlen, "curl_easy_init failed");
    return -1;
  }
  char url[96];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", ABX_E2B_ENVD_PORT, path);
  int fd = netns_fd;
  struct curl_slist *h = NULL;
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
  curl_easy_setopt(c, CURLOPT_PROXY, "");
  abx_netns_curl(c, &fd);
  if (json_body) {
    h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, "Expect:");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, json_body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(json_body));
  }
  long status = -1;
  CURLcode rc = curl_easy_perform(c);
  if (rc == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  else
    snprintf(err, errlen, "%s", curl_easy_strerror(rc));
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  return status;
}

int abx_envd_wait_health(int netns_fd, pid_t bwrap_pid, int *exited, int64_t deadline_mono,
                         char *err, size_t errlen)
{
  *exited = 0;
  for (;;) {
    char e[160] = "";
    long st = request(netns_fd, "/health", NULL, 1000, e, sizeof e);
    if (st >= 200 && st < 300)
      return 0;
    int ws;
    if (waitpid(bwrap_pid, &ws, WNOHANG) == bwrap_pid) {
      *exited = 1;
      snprintf(err, errlen, "sandbox exited before envd became healthy (status %d)",
               WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws));
      return -1;
    }
    if (abx_mono_ns() >= deadline_mono) {
      if (st > 0)
        snprintf(err, errlen, "envd health check answered %ld", st);
      else
        snprintf(err, errlen, "envd did not become healthy in time: %s", e);
      return -1;
    }
    struct timespec ts = {0, 50 * 1000000L};
    nanosleep(&ts, NULL);
  }
}

int abx_envd_init(int netns_fd, json_t *body, char *err, size_t errlen)
{
  char *s = json_dumps(body, JSON_COMPACT);
  if (!s) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  char e[160] = "";
  long st = request(netns_fd, "/init", s, 5000, e, sizeof e);
  free(s);
  if (st >= 200 && st < 300)
    return 0;
  if (st > 0)
    snprintf(err, errlen, "envd /init answered %ld", st);
  else
    snprintf(err, errlen, "envd /init failed: %s", e);
  return -1;
}
