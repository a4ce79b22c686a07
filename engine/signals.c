/*
 * signals.c: SIGINT/SIGTERM for the loop (loop.h abx_signals_install): the count the loop polls
 * to start an interrupt (loop.c dispatch_interrupt), and the second signal that exits at once.
 */
#include "loop.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Signal state is the one static mutable state in C: a signal handler has no other way to reach
 * the loop. Only async-signal-safe operations touch it inside the handler. */
static volatile sig_atomic_t interrupts;
static char second_note[1024] = "abxlua: interrupted twice: exiting now\n";

static void on_signal(int sig)
{
  (void)sig;
  interrupts++;
  if (interrupts >= 2) {
    ssize_t w = write(2, second_note, strlen(second_note));
    (void)w;
    _exit(2);
  }
}

void abx_signals_install(void)
{
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

void abx_interrupt_note(const char *note)
{
  snprintf(second_note, sizeof second_note, "%s\n", note);
}

int abx_interrupt_count(void)
{
  return interrupts;
}
