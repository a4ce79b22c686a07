/*
 * main.c: `abxlua` subcommand dispatch. The engine subcommands (run, list, help) live in cli.c; the
 * local platform (serve) and envd are separate processes that happen to share this binary, and so
 * is a sandbox's `sudo` (a symlink to this binary there: it is dispatched on argv[0]).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "platform_main.h" /* the one allowed crossing into platform/ */

int main(int argc, char **argv)
{
  const char *base = argc > 0 ? strrchr(argv[0], '/') : NULL;
  base = base ? base + 1 : argc > 0 ? argv[0] : "";
  if (strcmp(base, "sudo") == 0 || strcmp(base, "sudoedit") == 0)
    return abx_sudo_main(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "sudo") == 0)
    return abx_sudo_main(argc - 1, argv + 1);
  /* `abxlua help serve|envd`: their help lives with them, outside the Lua command line */
  if (argc >= 3 && strcmp(argv[1], "help") == 0 &&
      (strcmp(argv[2], "serve") == 0 || strcmp(argv[2], "envd") == 0)) {
    char *help_argv[] = {argv[2], "--help", NULL};
    return strcmp(argv[2], "serve") == 0 ? abx_serve_main(2, help_argv)
                                         : abx_envd_main(2, help_argv);
  }
  if (argc >= 2 && strcmp(argv[1], "serve") == 0)
    return abx_serve_main(argc - 1, argv + 1);
  if (argc >= 2 && strcmp(argv[1], "envd") == 0)
    return abx_envd_main(argc - 1, argv + 1);
  return abx_cli_main(argc, argv);
}
