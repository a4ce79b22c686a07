/*
 * main.c: `abxlua-envd`, the binary serve binds at /opt/abx/abxlua in each local sandbox: envd and
 * the sandbox's `sudo` only, the same code as `abxlua envd` / `abxlua sudo` (platform_main.h).
 *
 * Why:     the full abxlua links 48 shared libraries (Lua, libcurl with its TLS, LDAP and Kerberos
 *          chain, libarchive with libxml2 and ICU, libyaml): loading them is most of envd's start
 *          (6.3 ms of CPU against 2.6 ms for this binary, perf stat) and most of its idle memory
 *          (11 MiB RSS against 2.2 MiB, 9.5 MiB of it library pages). This one links what envd
 *          uses (libmicrohttpd, jansson, libcrypto, zlib; built with --as-needed), so every sandbox
 *          start and every `sudo` in a sandbox pays less.
 * Shapes:  argv[0] `sudo`/`sudoedit` → abx_sudo_main; `envd ARGS` → abx_envd_main; `help envd` →
 *          envd's help; `sudo ARGS` as with abxlua. Anything else: a usage error (exit 4) naming
 *          what this binary runs.
 */
#include <stdio.h>
#include <string.h>

#include "platform_main.h"

int main(int argc, char **argv)
{
  const char *base = argc > 0 ? strrchr(argv[0], '/') : NULL;
  base = base ? base + 1 : argc > 0 ? argv[0] : "";
  if (strcmp(base, "sudo") == 0 || strcmp(base, "sudoedit") == 0)
    return abx_sudo_main(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "sudo") == 0)
    return abx_sudo_main(argc - 1, argv + 1);
  if (argc >= 3 && strcmp(argv[1], "help") == 0 && strcmp(argv[2], "envd") == 0) {
    char *help_argv[] = {argv[2], "--help", NULL};
    return abx_envd_main(2, help_argv);
  }
  if (argc >= 2 && strcmp(argv[1], "envd") == 0)
    return abx_envd_main(argc - 1, argv + 1);
  fprintf(stderr,
          "abxlua-envd: this is the sandbox side of abxlua: it runs `envd ...`, `help envd` "
          "and `sudo ...` (as `sudo`); got '%s'\n",
          argc >= 2 ? argv[1] : "");
  return 4;
}
