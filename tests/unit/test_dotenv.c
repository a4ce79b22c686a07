/*
 * test_dotenv.c: unit tests of engine/dotenv.h (the .env parser).
 *
 * Each case parses a literal text and compares the bindings and the reported errors (line and
 * message). Inputs are copied into an exact-size heap buffer without a terminator, so a read past
 * the end shows up under AddressSanitizer (build with -DABX_SANITIZE=ON).
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dotenv.h"

#define MAXP 32

struct result {
  int npairs, nerrors;
  char keys[MAXP][64];
  char vals[MAXP][256];
  size_t vlens[MAXP];
  int err_lines[MAXP];
  char err_msgs[MAXP][160];
};

static void on_pair(void *ud, const char *key, const char *value, size_t vlen)
{
  struct result *r = ud;
  if (r->npairs >= MAXP)
    return;
  snprintf(r->keys[r->npairs], sizeof r->keys[0], "%s", key);
  size_t n = vlen < sizeof r->vals[0] - 1 ? vlen : sizeof r->vals[0] - 1;
  memcpy(r->vals[r->npairs], value, n);
  r->vals[r->npairs][n] = '\0';
  r->vlens[r->npairs] = vlen;
  r->npairs++;
}

static void on_error(void *ud, int line, const char *msg)
{
  struct result *r = ud;
  if (r->nerrors >= MAXP)
    return;
  r->err_lines[r->nerrors] = line;
  snprintf(r->err_msgs[r->nerrors], sizeof r->err_msgs[0], "%s", msg);
  r->nerrors++;
}

/* Parses 'len' bytes of 'text' from an unterminated heap copy; returns the parser's result. */
static int parse_n(const char *text, size_t len, struct result *r)
{
  memset(r, 0, sizeof *r);
  char *buf = malloc(len ? len : 1);
  memcpy(buf, text, len);
  int rc = abx_dotenv_parse(buf, len, on_pair, on_error, r);
  free(buf);
  return rc;
}

static int parse(const char *text, struct result *r)
{
  return parse_n(text, strlen(text), r);
}

/* The value bound to 'key' (the last binding), or NULL. */
static const char *get(const struct result *r, const char *key)
{
  for (int i = r->npairs - 1; i >= 0; i--)
    if (strcmp(r->keys[i], key) == 0)
      return r->vals[i];
  return NULL;
}

static void test_empty_and_comments(void)
{
  struct result r;
  CHECK(parse("", &r) == 0);
  CHECK(r.npairs == 0 && r.nerrors == 0);
  CHECK(parse("\n\n   \n\t\n# a comment\n   # indented comment = not a binding\n", &r) == 0);
  CHECK(r.npairs == 0 && r.nerrors == 0);
  CHECK(parse("# c\nA=1\n\n# c2\nB=2", &r) == 0);
  CHECK(r.npairs == 2);
  CHECK_STR(get(&r, "A"), "1");
  CHECK_STR(get(&r, "B"), "2");
}

static void test_plain_and_spaces(void)
{
  struct result r;
  CHECK(parse("KEY=value\nK2 = spaced\nK3\t=\ttabbed\n  K4=indented\nK5=\nK6 =   \n", &r) == 0);
  CHECK(r.nerrors == 0);
  CHECK(r.npairs == 6);
  CHECK_STR(get(&r, "KEY"), "value");
  CHECK_STR(get(&r, "K2"), "spaced");
  CHECK_STR(get(&r, "K3"), "tabbed");
  CHECK_STR(get(&r, "K4"), "indented");
  CHECK_STR(get(&r, "K5"), "");
  CHECK(r.vlens[4] == 0);
  CHECK_STR(get(&r, "K6"), "");
  /* key characters: letters, digits, _ . - after the first */
  CHECK(parse("_a.b-c9=x\nabc.DEF=y\n", &r) == 0);
  CHECK_STR(get(&r, "_a.b-c9"), "x");
  CHECK_STR(get(&r, "abc.DEF"), "y");
}

static void test_unquoted_trim_and_comments(void)
{
  struct result r;
  CHECK(parse("A=  value with  inner   spaces   \nB=abc # comment\nC=abc#not-a-comment\n"
              "D=#hash-start\nE= # only a note\nF=x\t# tab comment\nG=a=b=c\n",
              &r) == 0);
  CHECK(r.nerrors == 0);
  CHECK_STR(get(&r, "A"), "value with  inner   spaces");
  CHECK_STR(get(&r, "B"), "abc");
  CHECK_STR(get(&r, "C"), "abc#not-a-comment");
  CHECK_STR(get(&r, "D"), "#hash-start");
  CHECK_STR(get(&r, "E"), "");
  CHECK_STR(get(&r, "F"), "x");
  CHECK_STR(get(&r, "G"), "a=b=c");
  /* unquoted quotes inside a value stay as they are */
  CHECK(parse("H=it's \"fine\"\n", &r) == 0);
  CHECK_STR(get(&r, "H"), "it's \"fine\"");
}

static void test_export(void)
{
  struct result r;
  CHECK(parse("export A=1\nexport\t \tB = 2\nexport=3\nexported=4\n", &r) == 0);
  CHECK(r.nerrors == 0);
  CHECK_STR(get(&r, "A"), "1");
  CHECK_STR(get(&r, "B"), "2");
  CHECK_STR(get(&r, "export"), "3");
  CHECK_STR(get(&r, "exported"), "4");
  CHECK(r.npairs == 4);
  /* `export KEY` alone sets nothing, like a bare key */
  CHECK(parse("export ONLY\nBARE\nBARE2 # note\nexport\n", &r) == 0);
  CHECK(r.npairs == 0 && r.nerrors == 0);
}

static void test_single_quotes(void)
{
  struct result r;
  CHECK(
      parse(
          "A='literal \\n $HOME # not a comment'\nB=''\nC='x' # comment\nD='two\nlines'\nE=after\n",
          &r) == 0);
  CHECK(r.nerrors == 0);
  CHECK_STR(get(&r, "A"), "literal \\n $HOME # not a comment");
  CHECK_STR(get(&r, "B"), "");
  CHECK_STR(get(&r, "C"), "x");
  CHECK_STR(get(&r, "D"), "two\nlines");
  CHECK_STR(get(&r, "E"), "after");
  CHECK(parse("A='has \"double\" inside'\n", &r) == 0);
  CHECK_STR(get(&r, "A"), "has \"double\" inside");
}

static void test_double_quotes(void)
{
  struct result r;
  CHECK(parse("A=\"a\\nb\\tc\\\"q\\\" \\\\ \\r end\"\nB=\"\"\nC=\"keep \\x and \\$ \"\n"
              "D=\"  spaces kept  \" # comment\nE=\"it\\'s\"\n",
              &r) == 0);
  CHECK(r.nerrors == 0);
  CHECK_STR(get(&r, "A"), "a\nb\tc\"q\" \\ \r end");
  CHECK_STR(get(&r, "B"), "");
  CHECK_STR(get(&r, "C"), "keep \\x and \\$ ");
  CHECK_STR(get(&r, "D"), "  spaces kept  ");
  CHECK_STR(get(&r, "E"), "it's");
  /* the remaining escapes of python-dotenv */
  CHECK(parse("F=\"\\a\\b\\f\\v\"\n", &r) == 0);
  CHECK_STR(get(&r, "F"), "\a\b\f\v");
  /* a backslash before the closing quote's predecessor: \\ then the quote closes */
  CHECK(parse("G=\"ends with backslash \\\\\"\n", &r) == 0);
  CHECK(r.nerrors == 0);
  CHECK_STR(get(&r, "G"), "ends with backslash \\");
}

static void test_multiline_and_line_numbers(void)
{
  struct result r;
  /* a 3-line value; the malformed line after it is reported as line 5 */
  CHECK(parse("A=\"line1\nline2\nline3\"\nB=ok\n1BAD=x\n", &r) == 1);
  CHECK_STR(get(&r, "A"), "line1\nline2\nline3");
  CHECK_STR(get(&r, "B"), "ok");
  CHECK(r.nerrors == 1);
  CHECK(r.err_lines[0] == 5);
  /* escaped line breaks inside double quotes are decoded too */
  CHECK(parse("C=\"x\\ny\"\n", &r) == 0);
  CHECK_STR(get(&r, "C"), "x\ny");
}

static void test_line_endings(void)
{
  struct result r;
  CHECK(parse("A=1\r\nB=two words \r\nC=\"q\"\r\n\r\nD=4\rE=5\r!bad\r\nF=6", &r) == 1);
  CHECK_STR(get(&r, "A"), "1");
  CHECK_STR(get(&r, "B"), "two words");
  CHECK_STR(get(&r, "C"), "q");
  CHECK_STR(get(&r, "D"), "4");
  CHECK_STR(get(&r, "E"), "5");
  CHECK_STR(get(&r, "F"), "6");
  CHECK(r.nerrors == 1);
  CHECK(r.err_lines[0] == 7); /* A, B, C, empty, D (\r), E (\r), then !bad */
}

static void test_malformed(void)
{
  struct result r;
  const char *text = "GOOD1=a\n"          /* 1 */
                     "1KEY=x\n"           /* 2: key starts with a digit */
                     "KEY!=x\n"           /* 3: bad character in key */
                     "KEY VALUE\n"        /* 4: no '=' */
                     "=novalue\n"         /* 5: no key */
                     "Q=\"x\"junk\n"      /* 6: text after the closing quote */
                     "S='a' 'b'\n"        /* 7: text after the closing quote */
                     "export \n"          /* 8: export and a blank, no key */
                     "'QK'=1\n"           /* 9: quoted keys are not supported */
                     "GOOD2=b\n"          /* 10 */
                     "U=\"never closed\n" /* 11: unterminated: skip line 11 only */
                     "GOOD3=c\n";         /* 12 */
  int rc = parse(text, &r);
  CHECK(rc == 9);
  CHECK(r.nerrors == 9);
  int want[] = {2, 3, 4, 5, 6, 7, 8, 9, 11};
  for (int i = 0; i < 9 && i < r.nerrors; i++) {
    if (r.err_lines[i] != want[i])
      fprintf(stderr, "error %d: line %d, expected %d (%s)\n", i, r.err_lines[i], want[i],
              r.err_msgs[i]);
    CHECK(r.err_lines[i] == want[i]);
  }
  CHECK_CONTAINS(r.err_msgs[0], "invalid key");
  CHECK_CONTAINS(r.err_msgs[1], "invalid character in key");
  CHECK_CONTAINS(r.err_msgs[2], "expected '='");
  CHECK_CONTAINS(r.err_msgs[4], "after the closing quote");
  CHECK_CONTAINS(r.err_msgs[6], "export");
  CHECK_CONTAINS(r.err_msgs[8], "unterminated double-quoted");
  /* only the good bindings came through; the unterminated one did not eat GOOD3 */
  CHECK(r.npairs == 3);
  CHECK_STR(get(&r, "GOOD1"), "a");
  CHECK_STR(get(&r, "GOOD2"), "b");
  CHECK_STR(get(&r, "GOOD3"), "c");
  CHECK(get(&r, "Q") == NULL);
  CHECK(get(&r, "U") == NULL);

  CHECK(parse("A='open\nB=1\n", &r) == 1);
  CHECK(r.nerrors == 1 && r.err_lines[0] == 1);
  CHECK_CONTAINS(r.err_msgs[0], "unterminated single-quoted");
  CHECK_STR(get(&r, "B"), "1");
  /* unterminated at the very end of input */
  CHECK(parse("A=\"", &r) == 1);
  CHECK(r.npairs == 0);
}

static void test_duplicates_in_order(void)
{
  struct result r;
  CHECK(parse("A=1\nA=2\n", &r) == 0);
  CHECK(r.npairs == 2);
  CHECK_STR(r.vals[0], "1");
  CHECK_STR(r.vals[1], "2");
}

static void test_binary_and_bounds(void)
{
  struct result r;
  /* a NUL byte inside an unquoted value is kept: vlen says 3 */
  CHECK(parse_n("K=a\0b\n", 6, &r) == 0);
  CHECK(r.npairs == 1);
  CHECK(r.vlens[0] == 3);
  CHECK(memcmp(r.vals[0], "a\0b", 3) == 0);
  /* no terminator needed: the input ends right after the value */
  CHECK(parse_n("K=abc", 5, &r) == 0);
  CHECK_STR(get(&r, "K"), "abc");
  /* NULL callbacks are allowed */
  CHECK(abx_dotenv_parse("A=1\n!x\n", 7, NULL, NULL, NULL) == 1);

  /* exactly 1 MiB is parsed; one byte more is refused with an error on line 0 */
  size_t n = ABX_DOTENV_MAX;
  char *big = malloc(n + 1);
  memset(big, '#', n + 1);
  memcpy(big, "A=1\n", 4);
  memset(&r, 0, sizeof r);
  CHECK(abx_dotenv_parse(big, n, on_pair, on_error, &r) == 0);
  CHECK(r.npairs == 1 && r.nerrors == 0);
  memset(&r, 0, sizeof r);
  CHECK(abx_dotenv_parse(big, n + 1, on_pair, on_error, &r) == -1);
  CHECK(r.npairs == 0);
  CHECK(r.nerrors == 1 && r.err_lines[0] == 0);
  CHECK_CONTAINS(r.err_msgs[0], "1 MiB");
  free(big);
}

int main(void)
{
  RUN(test_empty_and_comments);
  RUN(test_plain_and_spaces);
  RUN(test_unquoted_trim_and_comments);
  RUN(test_export);
  RUN(test_single_quotes);
  RUN(test_double_quotes);
  RUN(test_multiline_and_line_numbers);
  RUN(test_line_endings);
  RUN(test_malformed);
  RUN(test_duplicates_in_order);
  RUN(test_binary_and_bounds);
  return check_report();
}
