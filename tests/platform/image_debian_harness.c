/*
 * image_debian_harness.c: drives platform/template/image_debian.c for tests/platform/test_image_debian.py.
 *   image_debian_harness parse REF...           one line per REF: "ok SUITE SLIM" or "err MESSAGE"
 *   image_debian_harness build REF CACHE ABXLUA abx_image_root with ABXLUA's libraries: every log
 *                                               line as "log LINE", then "ok ROOT" or "err MESSAGE"
 * Exit 0 when every answer was ok, else 1.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#include "template/image_debian.h"

static void log_line(void *ud, const char *line)
{
  (void)ud;
  printf("log %s\n", line);
}

int main(int argc, char **argv)
{
  setvbuf(stdout, NULL, _IOLBF, 0);
  char err[2048], root[4096];
  int bad = 0;
  if (argc >= 3 && strcmp(argv[1], "parse") == 0) {
    for (int i = 2; i < argc; i++) {
      struct abx_image_ref r;
      if (abx_image_parse(argv[i], &r, err, sizeof err) == 0) {
        printf("ok %s %d\n", r.suite, r.slim);
      } else {
        printf("err %s\n", err);
        bad = 1;
      }
    }
    return bad;
  }
  if (argc == 5 && strcmp(argv[1], "build") == 0) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    abx_image_set_binary(argv[4]);
    int rc = abx_image_root(argv[2], argv[3], log_line, NULL, root, sizeof root, err, sizeof err);
    printf(rc == 0 ? "ok %s\n" : "err %s\n", rc == 0 ? root : err);
    curl_global_cleanup();
    return rc == 0 ? 0 : 1;
  }
  fprintf(stderr, "usage: image_debian_harness parse REF... | build REF CACHE ABXLUA\n");
  return 2;
}
