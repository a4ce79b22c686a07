/*
 * e2b.c: the sandbox-id rule of e2b.h.
 */
#include "e2b.h"

int abx_e2b_sandbox_id_valid(const char *s, size_t n)
{
  if (n == 0 || n > ABX_E2B_SANDBOX_ID_MAX)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
      return 0;
  }
  return 1;
}
