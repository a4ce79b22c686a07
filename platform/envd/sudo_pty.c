/*
 * sudo_pty.c: sudo's use_pty for the broker (Debian's sudoers sets `Defaults use_pty`): when one
 * of the caller's fds 0-2 is a terminal, the command gets a pseudo-terminal of its own as its
 * controlling terminal (so an interactive shell has job control and Ctrl-C reaches the command's
 * foreground group), and the handler relays between it and the caller's terminal, which it puts
 * in raw mode meanwhile when the caller is in the foreground. Contract in sudo.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "envd/sudo.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

int sudo_pty_open(struct sudo_pty *p, const int fds[3], int foreground, uid_t owner)
{
  memset(p, 0, sizeof *p);
  p->master = p->slave = p->tty = p->in = -1;
  int any = -1;
  for (int i = 0; i < 3; i++) {
    p->is_tty[i] = isatty(fds[i]);
    if (p->is_tty[i] && (any < 0 || i == 1))
      any = i; /* output goes to the caller's stdout when it is the terminal */
  }
  if (any < 0)
    return 0;
  char name[128];
  p->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (p->master < 0 || grantpt(p->master) < 0 || unlockpt(p->master) < 0 ||
      ptsname_r(p->master, name, sizeof name) != 0 ||
      (p->slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
    sudo_pty_close(p);
    return -1;
  }
  if (fchown(p->slave, owner, (gid_t)-1) != 0 || fchmod(p->slave, 0620) != 0) {
  } /* best effort: the command has the fd either way */
  struct winsize ws;
  if (ioctl(fds[any], TIOCGWINSZ, &ws) == 0)
    ioctl(p->master, TIOCSWINSZ, &ws);
  p->tty = fcntl(fds[any], F_DUPFD_CLOEXEC, 3);
  if (p->is_tty[0] && foreground) {
    p->in = fcntl(fds[0], F_DUPFD_CLOEXEC, 3);
    if (p->in >= 0 && tcgetattr(p->in, &p->saved) == 0) {
      struct termios raw = p->saved;
      cfmakeraw(&raw);
      p->raw = tcsetattr(p->in, TCSADRAIN, &raw) == 0;
    }
  }
  /* The command starts with the caller's modes; output is processed once: by the pty when the
   * caller's terminal is raw, else by the caller's terminal (no "\r\r\n" for a newline). */
  struct termios tio;
  if (tcgetattr(fds[any], &tio) == 0) {
    if (p->raw)
      tio = p->saved;
    else
      tio.c_oflag &= ~(tcflag_t)OPOST;
    tcsetattr(p->slave, TCSANOW, &tio);
  }
  fcntl(p->master, F_SETFL, O_NONBLOCK);
  return p->tty >= 0 ? 1 : (sudo_pty_close(p), -1);
}

void sudo_pty_child(const struct sudo_pty *p, int fds[3])
{
  if (p->master < 0)
    return;
  setsid();
  ioctl(p->slave, TIOCSCTTY, 0);
  for (int i = 0; i < 3; i++)
    if (p->is_tty[i])
      fds[i] = p->slave;
}

int sudo_pty_pollfds(struct sudo_pty *p, struct pollfd *pf)
{
  int n = 0;
  if (p->master >= 0)
    pf[n++] = (struct pollfd){p->master, (short)(POLLIN | (p->npend ? POLLOUT : 0)), 0};
  if (p->in >= 0 && !p->npend)
    pf[n++] = (struct pollfd){p->in, POLLIN, 0};
  return n;
}

/* Write all of b to the caller's terminal (blocking; it is the user's screen). */
static void to_tty(int fd, const char *b, size_t n)
{
  while (n) {
    ssize_t k = write(fd, b, n);
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0 && errno == EAGAIN) {
      struct pollfd w = {fd, POLLOUT, 0};
      poll(&w, 1, 100);
      continue;
    }
    if (k <= 0)
      return;
    b += k;
    n -= (size_t)k;
  }
}

/* Copy what the command wrote (at most 16 reads a call, so a command that keeps writing cannot
 * starve the rest of the relay; the pty holds less than that when the command ends); at the end
 * (master gone: EIO) stop relaying. */
static void from_master(struct sudo_pty *p)
{
  char b[4096];
  for (int i = 0; i < 16; i++) {
    ssize_t k = read(p->master, b, sizeof b);
    if (k > 0) {
      to_tty(p->tty, b, (size_t)k);
      continue;
    }
    if (k < 0 && (errno == EAGAIN || errno == EINTR))
      return;
    p->eof = 1; /* EIO: every holder of the slave is gone */
    return;
  }
}

void sudo_pty_events(struct sudo_pty *p, const struct pollfd *pf, int n)
{
  for (int i = 0; i < n; i++) {
    if (!pf[i].revents)
      continue;
    if (pf[i].fd == p->master) {
      if (pf[i].revents & (POLLIN | POLLHUP | POLLERR))
        from_master(p);
      if ((pf[i].revents & POLLOUT) && p->npend) {
        ssize_t k = write(p->master, p->pend + p->pos, p->npend - p->pos);
        if (k > 0 && (p->pos += (size_t)k) == p->npend)
          p->npend = p->pos = 0;
      }
    } else if (pf[i].fd == p->in) {
      ssize_t k = read(p->in, p->pend, sizeof p->pend);
      if (k > 0) {
        p->npend = (size_t)k;
        p->pos = 0;
      } else if (k == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(p->in); /* the caller's terminal hung up: no more input */
        p->in = -1;
      }
    }
  }
  if (p->eof && p->master >= 0) {
    close(p->master);
    p->master = -1;
  }
}

void sudo_pty_winch(struct sudo_pty *p)
{
  struct winsize ws;
  if (p->master >= 0 && p->tty >= 0 && ioctl(p->tty, TIOCGWINSZ, &ws) == 0)
    ioctl(p->master, TIOCSWINSZ, &ws); /* the kernel sends the command's group SIGWINCH */
}

void sudo_pty_close(struct sudo_pty *p)
{
  if (p->master >= 0)
    from_master(p); /* what the command wrote before it ended */
  if (p->raw && p->in >= 0)
    tcsetattr(p->in, TCSADRAIN, &p->saved);
  int *fds[] = {&p->master, &p->slave, &p->tty, &p->in};
  for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
    if (*fds[i] >= 0) {
      close(*fds[i]);
      *fds[i] = -1;
    }
}
