/*
 * test_proto.c: unit tests of proto/base64.h, proto/e2b.h and abx_connect_header
 * (proto/connect.h): RFC 4648 vectors in both alphabets, the decoder's strictness (padding,
 * alphabet, length 4k+1), the sandbox-id rule and its minting, and the envelope prefix checks.
 */
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "check.h"
#include "connect.h"
#include "e2b.h"

/* Decodes s with flags; returns the bytes as a string ("<malformed>" when refused). */
static const char *dec(const char *s, unsigned flags)
{
  static char out[256];
  long n = abx_b64_decode((unsigned char *)out, s, strlen(s), flags);
  if (n < 0)
    return "<malformed>";
  out[n] = '\0';
  return out;
}

static void test_encode(void)
{
  static const char *vec[][2] = {{"", ""},
                                 {"f", "Zg=="},
                                 {"fo", "Zm8="},
                                 {"foo", "Zm9v"},
                                 {"foob", "Zm9vYg=="},
                                 {"fooba", "Zm9vYmE="},
                                 {"foobar", "Zm9vYmFy"}};
  char out[64];
  for (size_t i = 0; i < sizeof vec / sizeof vec[0]; i++) {
    size_t n = abx_b64_encode(out, vec[i][0], strlen(vec[i][0]), ABX_B64_STD);
    CHECK_STR(out, vec[i][1]);
    CHECK(n == strlen(vec[i][1]) && n == ABX_B64_LEN(strlen(vec[i][0])));
    CHECK_STR(dec(vec[i][1], 0), vec[i][0]);
  }
  static const unsigned char hi[] = {0xfb, 0xff, 0xbf};
  abx_b64_encode(out, hi, 3, ABX_B64_STD);
  CHECK_STR(out, "+/+/");
  abx_b64_encode(out, hi, 3, ABX_B64_URL);
  CHECK_STR(out, "-_-_");
  char *a = abx_b64_encode_alloc("fo", 2, ABX_B64_URL);
  CHECK_STR(a, "Zm8=");
  free(a);
}

static void test_decode_forms(void)
{
  CHECK_STR(dec("Zm8", 0), "fo"); /* unpadded */
  CHECK_STR(dec("Zg", 0), "f");
  CHECK_STR(dec("-_-_", 0), "\xfb\xff\xbf");
  CHECK_STR(dec("+/+/", 0), "\xfb\xff\xbf");
  CHECK_STR(dec("-_-_", ABX_B64_URL_ONLY), "\xfb\xff\xbf");
  CHECK_STR(dec("+/+/", ABX_B64_URL_ONLY), "<malformed>");
  CHECK_STR(dec("Zm9v\nYmFy\r\n", ABX_B64_SPACE), "foobar");
  CHECK_STR(dec("Zm9v YmFy", 0), "<malformed>"); /* spaces only with ABX_B64_SPACE */
  size_t n = 0;
  unsigned char *d = abx_b64_decode_alloc("Zm9vYg==", 0, &n);
  CHECK(d && n == 4 && memcmp(d, "foob", 5) == 0); /* NUL after the bytes */
  free(d);
  CHECK(abx_b64_decode_alloc("Zm9vY", 0, &n) == NULL);
}

static void test_decode_strict(void)
{
  static const char *bad[] = {
      "Zm9vY",    /* 4k+1 characters: no byte ends there */
      "Zg=",      /* padding that does not complete a quantum */
      "Zg===",    /* three '=' */
      "Z===",     /* three '=' after one digit */
      "Zg==Zg==", /* a digit after padding */
      "Zm=8",     /* '=' inside */
      "Zm9v!",    /* outside both alphabets */
      "Zm9v\x80", /* a byte above ASCII */
      "====",     /* padding alone */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *got = dec(bad[i], 0);
    CHECK_STR(got, "<malformed>");
  }
  CHECK_STR(dec("", 0), "");
}

/* The quad-at-a-time fast path of abx_b64_decode agrees with the strict loop: every length
 * round-trips in both alphabets, and a bad character, an inner '=' or a space deep inside a long
 * text is still refused (or skipped with ABX_B64_SPACE) wherever it falls in its quad. */
static void test_decode_long(void)
{
  static unsigned char bytes[300], back[400];
  static char text[420];
  for (size_t i = 0; i < sizeof bytes; i++)
    bytes[i] = (unsigned char)(i * 131u + 7u);
  for (size_t n = 0; n <= sizeof bytes; n++)
    for (int alpha = 0; alpha < 2; alpha++) {
      size_t k = abx_b64_encode(text, bytes, n, alpha ? ABX_B64_URL : ABX_B64_STD);
      long got = abx_b64_decode(back, text, k, 0);
      CHECK(got == (long)n && memcmp(back, bytes, n) == 0);
    }
  size_t k = abx_b64_encode(text, bytes, 300, ABX_B64_STD); /* 400 characters, no padding */
  for (size_t at = 200; at < 204; at++) {
    char saved = text[at];
    text[at] = '*';
    CHECK(abx_b64_decode(back, text, k, 0) == -1);
    text[at] = '=';
    CHECK(abx_b64_decode(back, text, k, 0) == -1);
    text[at] = saved;
  }
  char spaced[430];
  memcpy(spaced, text, 201);
  spaced[201] = '\n';
  memcpy(spaced + 202, text + 201, k - 201);
  CHECK(abx_b64_decode(back, spaced, k + 1, 0) == -1);
  CHECK(abx_b64_decode(back, spaced, k + 1, ABX_B64_SPACE) == 300 && memcmp(back, bytes, 300) == 0);
  CHECK(abx_b64_decode(back, "Zm9vYmFy+/+/", 12, ABX_B64_URL_ONLY) == -1);
}

static void test_sandbox_id(void)
{
  CHECK(abx_e2b_sandbox_id_valid("i2", 2));
  CHECK(abx_e2b_sandbox_id_valid("0123456789abcdefghijklmnopqrstu", 31));
  CHECK(!abx_e2b_sandbox_id_valid("0123456789abcdefghijklmnopqrstuv", 32));
  CHECK(!abx_e2b_sandbox_id_valid("", 0));
  CHECK(!abx_e2b_sandbox_id_valid("Ab", 2));
  CHECK(!abx_e2b_sandbox_id_valid("a-b", 3));
  CHECK(abx_e2b_sandbox_id_valid("ab-cd", 2)); /* only the first n bytes count */
  CHECK(ABX_E2B_ENVD_PORT == 49983 && strcmp(ABX_E2B_ENVD_PORT_STR, "49983") == 0);
}

/* A byte source for abx_e2b_sandbox_id_new: a script of bytes, then failure. */
static const unsigned char *g_script;
static size_t g_script_left;

static int scripted(void *buf, size_t n)
{
  if (n > g_script_left)
    return -1;
  memcpy(buf, g_script, n);
  g_script += n;
  g_script_left -= n;
  return 0;
}

static void test_sandbox_id_new(void)
{
  unsigned char bytes[24];
  for (size_t i = 0; i < 20; i++)
    bytes[i] = (unsigned char)i; /* 0..19: "a".."t" */
  bytes[3] = 36 + 25;            /* 61 % 36 = 25: 'z' */
  bytes[4] = 35;                 /* '9' */
  bytes[5] = 252;                /* refused: redrawn from the bytes after the 20 */
  bytes[6] = 255;                /* refused too */
  bytes[20] = 253, bytes[21] = 26,
  bytes[22] = 1; /* 253 refused again; then '0' for [5], 'b' for [6] */
  char id[ABX_E2B_SANDBOX_ID_MAX + 1];
  g_script = bytes, g_script_left = 23;
  CHECK(abx_e2b_sandbox_id_new(id, 'i', scripted) == 0);
  CHECK(strcmp(id, "iabcz90bhijklmnopqrst") == 0);
  CHECK(abx_e2b_sandbox_id_valid(id, strlen(id)) && strlen(id) == 1 + ABX_E2B_SANDBOX_ID_RANDOM);
  CHECK(g_script_left == 0);
  g_script = bytes, g_script_left = 20; /* the redraw for byte 5 finds nothing left */
  CHECK(abx_e2b_sandbox_id_new(id, 'b', scripted) == -1 && id[0] == 0);
  g_script = bytes, g_script_left = 19;
  CHECK(abx_e2b_sandbox_id_new(id, 'b', scripted) == -1 && id[0] == 0);
  g_script = bytes, g_script_left = 23;
  CHECK(abx_e2b_sandbox_id_new(id, 'B', scripted) == -1 && id[0] == 0);
  CHECK(abx_e2b_sandbox_id_new(id, '-', scripted) == -1 && id[0] == 0);
}

static void test_connect_header(void)
{
  unsigned char h[5];
  unsigned flags;
  uint32_t len;
  abx_connect_prefix(h, 0, 0x01020304u);
  CHECK(abx_connect_header(h, &flags, &len, 0, 0x7fffffffu) == ABX_CONNECT_GOOD);
  CHECK(flags == 0 && len == 0x01020304u);
  CHECK(abx_connect_header(h, &flags, &len, 0, 0x01020303u) == ABX_CONNECT_BAD_SIZE);
  abx_connect_prefix(h, ABX_CONNECT_FLAG_END, 2);
  CHECK(abx_connect_header(h, &flags, &len, 1, 10) == ABX_CONNECT_GOOD);
  CHECK(abx_connect_header(h, &flags, &len, 0, 10) == ABX_CONNECT_BAD_END);
  abx_connect_prefix(h, ABX_CONNECT_FLAG_COMPRESSED | ABX_CONNECT_FLAG_END, 2);
  CHECK(abx_connect_header(h, &flags, &len, 0, 10) == ABX_CONNECT_BAD_COMPRESSED);
  abx_connect_prefix(h, 0x80, 2);
  CHECK(abx_connect_header(h, &flags, &len, 1, 10) == ABX_CONNECT_BAD_RESERVED);
}

int main(void)
{
  test_encode();
  test_decode_forms();
  test_decode_strict();
  test_decode_long();
  test_sandbox_id();
  test_sandbox_id_new();
  test_connect_header();
  return check_report();
}
