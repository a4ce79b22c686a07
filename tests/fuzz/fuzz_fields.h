/*
 * fuzz_fields.h: the input layout shared by the fuzz targets that take text fields: byte 0 is
 * the target's own selector, the rest is up to four '\n'-separated fields.
 */
#ifndef ABX_FUZZ_FIELDS_H
#define ABX_FUZZ_FIELDS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_FIELDS 4

/* Copies data[1..size) into a malloc'd buffer, NUL-terminates it, and splits it in place at the
 * first three '\n' into field[0..3] (missing fields are ""). Returns the buffer for free(), or
 * NULL when size < 1 or out of memory. */
static inline char *fuzz_fields(const uint8_t *data, size_t size, char *field[FUZZ_FIELDS])
{
  if (size < 1)
    return NULL;
  char *buf = malloc(size);
  if (!buf)
    return NULL;
  memcpy(buf, data + 1, size - 1);
  buf[size - 1] = 0;
  field[0] = buf;
  for (int i = 1; i < FUZZ_FIELDS; i++)
    field[i] = "";
  for (int i = 1; i < FUZZ_FIELDS; i++) {
    char *nl = strchr(field[i - 1], '\n');
    if (!nl)
      break;
    *nl = 0;
    field[i] = nl + 1;
  }
  return buf;
}

#endif
