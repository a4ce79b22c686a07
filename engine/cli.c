#include <stdio.h>
#include "cli.h"
int abx_cli_main(int argc, char **argv)
{
  (void)argc; (void)argv;
  fprintf(stderr, "abxlua: engine not built yet\n");
  return 3;
}
