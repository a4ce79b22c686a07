/*
 * replay.c: a main() for the fuzz targets in builds without libFuzzer (gcc, `make test`): runs
 * LLVMFuzzerTestOneInput once on every file named on the command line or found (one level deep)
 * in a directory named there. ctest replays each seed corpus this way, so the targets and their
 * seeds keep compiling and passing in the normal build; a crashing input reproduces with it too.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return -1;
  }
  size_t cap = 4096, n = 0;
  uint8_t *buf = malloc(cap);
  for (;;) {
    if (!buf)
      abort();
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap)
      break;
    cap *= 2;
    buf = realloc(buf, cap);
  }
  fclose(f);
  /* an exact-size copy, so a read past the input is caught by the sanitizers as with libFuzzer */
  uint8_t *in = malloc(n ? n : 1);
  if (!in)
    abort();
  memcpy(in, buf, n);
  free(buf);
  LLVMFuzzerTestOneInput(in, n);
  free(in);
  return 0;
}

int main(int argc, char **argv)
{
  int count = 0, bad = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      perror(argv[i]);
      bad++;
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      bad += run_file(argv[i]) != 0;
      count++;
      continue;
    }
    DIR *d = opendir(argv[i]);
    if (!d) {
      perror(argv[i]);
      bad++;
      continue;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
      if (e->d_name[0] == '.')
        continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
      if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
        bad += run_file(path) != 0;
        count++;
      }
    }
    closedir(d);
  }
  printf("%s: %d inputs replayed, %d unreadable\n", argv[0], count, bad);
  return bad || count == 0 ? 1 : 0;
}
