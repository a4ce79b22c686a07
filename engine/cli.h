/*
 * cli.h: the engine's command line (run, list, help, --version).
 */
#ifndef ABX_CLI_H
#define ABX_CLI_H

/* Entry point for every subcommand but serve and envd. Returns the exit code. */
int abx_cli_main(int argc, char **argv);

#endif
