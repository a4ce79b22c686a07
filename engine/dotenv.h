/*
 * dotenv.h: a parser for .env files, compatible with python-dotenv's syntax.
 *
 * Syntax, one binding per logical line:
 *   - blank lines and lines whose first non-blank character is `#` are ignored;
 *   - an optional `export ` prefix (export, then at least one space or tab);
 *   - KEY matches [A-Za-z_][A-Za-z0-9_.-]*; spaces and tabs around `=` are allowed;
 *   - 'single quotes': the text between them, literally (no escapes; may span lines);
 *   - "double quotes": the escapes \\ \' \" \a \b \f \n \r \t \v are decoded, any other backslash
 *     stays as it is; the value may span lines;
 *   - unquoted: the rest of the line, cut at the first `#` that follows a space or tab (also the
 *     blanks after `=`), trailing blanks removed;
 *   - after a quoted value only blanks and a `#` comment may follow on the line;
 *   - a key alone (no `=`) sets nothing and is not an error (python-dotenv gives it no value);
 *   - line ends are \n, \r\n or \r. A later binding of the same key wins (the caller decides).
 * A malformed line (bad key, text after a closing quote, an unterminated quote, a key followed by
 * something other than `=`) is reported through on_error with its 1-based line number and skipped
 * up to the end of that line, as python-dotenv warns and goes on.
 * Divergences from python-dotenv, on purpose: keys are restricted as above (python-dotenv also
 * takes quoted keys and almost any characters); single quotes decode no escapes (python-dotenv
 * decodes \' and \\); `KEY= # note` is an empty value (python-dotenv keeps "# note"; both keep
 * KEY=#x as "#x"); an unterminated double quote is an error (python-dotenv's regex may
 * backtrack to an escaped quote and close there).
 * Limits: at most ABX_DOTENV_MAX bytes of input. Two scratch buffers of len+1 bytes each.
 * Thread safety: none needed; the parser keeps no state between calls.
 */
#ifndef ABX_DOTENV_H
#define ABX_DOTENV_H

#include <stddef.h>

#define ABX_DOTENV_MAX (1024 * 1024)

/* Called for each binding: key is NUL-terminated; value is vlen bytes and NUL-terminated (it may
 * contain NUL bytes of its own). Both point into scratch memory valid only during the call. */
typedef void (*abx_dotenv_pair_fn)(void *ud, const char *key, const char *value, size_t vlen);
/* Called for each malformed line (line >= 1), or with line 0 when the whole input is refused. */
typedef void (*abx_dotenv_error_fn)(void *ud, int line, const char *msg);

/* Parses 'text' (len bytes; it need not be NUL-terminated). Either callback may be NULL.
 * Returns the number of malformed lines reported (0 when all is well), or -1 when the input was
 * refused (larger than ABX_DOTENV_MAX) or memory ran out; on_error is then called with line 0. */
int abx_dotenv_parse(const char *text, size_t len, abx_dotenv_pair_fn on_pair,
                     abx_dotenv_error_fn on_error, void *ud);

#endif
