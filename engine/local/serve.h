/*
 * serve.h: the embedded local E2B platform, `abxlua serve` (a separate process).
 *
 * Nothing outside engine/main.c includes this header: the engine reaches the platform only over
 * HTTP (DESIGN.md "Boundaries that never bend").
 */
#ifndef ABX_LOCAL_SERVE_H
#define ABX_LOCAL_SERVE_H

/* Entry point of `abxlua serve ARGS...`; argv[0] is "serve". Returns the process exit code. */
int abx_serve_main(int argc, char **argv);

#endif
