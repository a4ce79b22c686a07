/*
 * envd.h: the in-sandbox daemon, `abxlua envd` (process and filesystem Connect services, /files).
 * Source: reference/envd-protocol.md.
 */
#ifndef ABX_ENVD_H
#define ABX_ENVD_H

/* Entry point of `abxlua envd ARGS...`; argv[0] is "envd". Returns the process exit code. */
int abx_envd_main(int argc, char **argv);

#endif
