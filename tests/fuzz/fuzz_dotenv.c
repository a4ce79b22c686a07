/*
 * fuzz_dotenv.c: libFuzzer target for the .env parser (engine/dotenv.h, abx_dotenv_parse).
 *
 * The input is parsed as it is (it need not be NUL-terminated; libFuzzer's buffer is exactly
 * 'size' bytes, so AddressSanitizer catches a read past it).
 * Oracles (abort() on violation):
 *   - every key matches [A-Za-z_][A-Za-z0-9_.-]* and is NUL-terminated; every value has
 *     value[vlen] == 0 and vlen <= size;
 *   - the return value equals the number of on_error calls; error lines are >= 1, never past the
 *     last line, and never decrease; line 0 (input refused) never happens under the size limit.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dotenv.h"

struct seen {
  size_t size;
  int lines; /* line count of the input (line ends: \n, \r\n, \r) */
  int errors;
  int last_line;
};

static int key_first(char c)
{
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static int key_char(char c)
{
  return key_first(c) || (c >= '0' && c <= '9') || c == '.' || c == '-';
}

static void on_pair(void *ud, const char *key, const char *value, size_t vlen)
{
  struct seen *s = ud;
  if (!key_first(key[0])) {
    fprintf(stderr, "fuzz_dotenv: key starts with 0x%02x\n", (unsigned char)key[0]);
    abort();
  }
  for (const char *k = key + 1; *k; k++)
    if (!key_char(*k)) {
      fprintf(stderr, "fuzz_dotenv: key holds 0x%02x\n", (unsigned char)*k);
      abort();
    }
  if (vlen > s->size || value[vlen] != '\0') {
    fprintf(stderr, "fuzz_dotenv: value of %zu bytes (input %zu) or not terminated\n", vlen,
            s->size);
    abort();
  }
}

static void on_error(void *ud, int line, const char *msg)
{
  struct seen *s = ud;
  if (!msg || !*msg || line < 1 || line > s->lines || line < s->last_line) {
    fprintf(stderr,
            "fuzz_dotenv: error at line %d (input has %d lines, previous error at %d): %s\n", line,
            s->lines, s->last_line, msg ? msg : "(null)");
    abort();
  }
  s->last_line = line;
  s->errors++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *text = (const char *)data;
  struct seen s = {.size = size, .lines = 1};
  for (size_t i = 0; i < size; i++)
    if (text[i] == '\n' || (text[i] == '\r' && !(i + 1 < size && text[i + 1] == '\n')))
      s.lines++;
  int rc = abx_dotenv_parse(text, size, on_pair, on_error, &s);
  if (rc != s.errors) {
    fprintf(stderr, "fuzz_dotenv: returned %d after %d errors\n", rc, s.errors);
    abort();
  }
  return 0;
}
