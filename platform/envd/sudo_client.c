/*
 * sudo_client.c: the `sudo` command of a sandbox (contract in sudo.h). It decides nothing: it
 * parses sudo's command line, sends it with its fds 0-2, cwd, umask and environment to envd's
 * broker, forwards the signals it gets and exits as the command did. Option letters and
 * messages follow sudo(8) 1.9.13.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "platform_main.h"

#include "envd/sudo.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

extern char **environ;

static const int fwd_sigs[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGTERM,
                               SIGUSR1, SIGUSR2, SIGALRM, SIGWINCH};

static void usage(FILE *f)
{
  fprintf(f, "usage: sudo -h | -K | -k | -V\n"
             "usage: sudo -v [-knS] [-g group] [-p prompt] [-u user]\n"
             "usage: sudo -l [-knS] [-g group] [-p prompt] [-u user] [command [arg ...]]\n"
             "usage: sudo [-EHknS] [-g group] [-p prompt] [-u user] [VAR=value] [-i | -s]\n"
             "            [command [arg ...]]\n");
}

static void help(void)
{
  printf("sudo - execute a command as another user (abxlua sandbox: envd's privilege broker)\n\n");
  usage(stdout);
  printf("\nOptions:\n"
         "  -E, --preserve-env            preserve user environment when running command\n"
         "      --preserve-env=list       preserve specific environment variables\n"
         "  -g, --group=group             run command as the specified group name or ID\n"
         "  -H, --set-home                set HOME variable to target user's home dir\n"
         "  -h, --help                    display help message and exit\n"
         "  -i, --login                   run login shell as the target user\n"
         "  -K, --remove-timestamp        remove timestamp file completely\n"
         "  -k, --reset-timestamp         invalidate timestamp file\n"
         "  -l, --list                    list user's privileges or check a specific command\n"
         "  -n, --non-interactive         non-interactive mode, no prompts are used\n"
         "  -p, --prompt=prompt           use the specified password prompt (none is ever shown)\n"
         "  -S, --stdin                   read password from standard input (none is ever read)\n"
         "  -s, --shell                   run shell as the target user\n"
         "  -u, --user=user               run command (or edit file) as specified user name or ID\n"
         "  -V, --version                 display version information and exit\n"
         "  -v, --validate                update user's timestamp without running a command\n"
         "  --                            stop processing command line arguments\n"
         "Not available in a sandbox: -A, -b, -C, -D, -e, -h host, -P, -R, -r, -T, -t, -U.\n");
}

struct buf {
  char *b;
  size_t n, cap;
  int oom;
};

static void rec(struct buf *b, char tag, const char *v)
{
  size_t l = strlen(v) + 2;
  if (b->n + l > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + l)
      cap *= 2;
    char *nb = realloc(b->b, cap);
    if (!nb) {
      b->oom = 1;
      return;
    }
    b->b = nb;
    b->cap = cap;
  }
  b->b[b->n] = tag;
  memcpy(b->b + b->n + 1, v, l - 1);
  b->n += l;
}

static int valid_var(const char *a)
{
  const char *eq = strchr(a, '=');
  if (!eq || eq == a)
    return 0;
  for (const char *c = a; c < eq; c++)
    if (!(*c == '_' || (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
          (c > a && *c >= '0' && *c <= '9')))
      return 0;
  return 1;
}

/* Send header + fds 0-2, then the records. 0 or -1. */
static int send_req(int s, struct buf *b)
{
  int fds[3];
  for (int i = 0; i < 3; i++) {
    fds[i] = i;
    if (fcntl(i, F_GETFD) < 0) /* a closed stdio fd goes as /dev/null */
      fds[i] = open("/dev/null", i ? O_WRONLY : O_RDONLY | O_CLOEXEC);
    if (fds[i] < 0)
      return -1;
  }
  struct sudo_hdr h = {SUDO_MAGIC, SUDO_VERSION, (uint32_t)b->n};
  union {
    struct cmsghdr align;
    char c[CMSG_SPACE(sizeof fds)];
  } cm;
  memset(&cm, 0, sizeof cm);
  struct iovec iov = {&h, sizeof h};
  struct msghdr m = {
      .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.c, .msg_controllen = sizeof cm.c};
  struct cmsghdr *x = CMSG_FIRSTHDR(&m);
  x->cmsg_level = SOL_SOCKET;
  x->cmsg_type = SCM_RIGHTS;
  x->cmsg_len = CMSG_LEN(sizeof fds);
  memcpy(CMSG_DATA(x), fds, sizeof fds);
  if (sendmsg(s, &m, MSG_NOSIGNAL) != (ssize_t)sizeof h)
    return -1;
  for (size_t off = 0; off < b->n;) {
    ssize_t k = send(s, b->b + off, b->n - off, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return -1;
    off += (size_t)k;
  }
  return 0;
}

/* Exit as the command did: its code, or its signal raised on ourselves (as sudo does). */
static int finish(uint32_t st)
{
  if (!(st & SUDO_SIGNALED))
    return (int)(st & 0xff);
  int sig = (int)(st & 0xff);
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  signal(sig, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  sigprocmask(SIG_UNBLOCK, &one, NULL);
  raise(sig);
  return 128 + sig;
}

static int unsupported(int c)
{
  fprintf(stderr, "sudo: the -%c option is not supported by this sandbox's sudo (envd's broker)\n",
          c);
  return 1;
}

/* sudo's long options; O_HOST and O_PRESERVE are the two with no letter of their own here. */
enum { O_HOST = 1000, O_PRESERVE };
static const struct option long_opts[] = {{"askpass", no_argument, NULL, 'A'},
                                          {"background", no_argument, NULL, 'b'},
                                          {"bell", no_argument, NULL, 'B'},
                                          {"close-from", required_argument, NULL, 'C'},
                                          {"chdir", required_argument, NULL, 'D'},
                                          {"preserve-env", optional_argument, NULL, O_PRESERVE},
                                          {"edit", no_argument, NULL, 'e'},
                                          {"group", required_argument, NULL, 'g'},
                                          {"set-home", no_argument, NULL, 'H'},
                                          {"help", no_argument, NULL, 'h'},
                                          {"host", required_argument, NULL, O_HOST},
                                          {"login", no_argument, NULL, 'i'},
                                          {"remove-timestamp", no_argument, NULL, 'K'},
                                          {"reset-timestamp", no_argument, NULL, 'k'},
                                          {"list", no_argument, NULL, 'l'},
                                          {"non-interactive", no_argument, NULL, 'n'},
                                          {"preserve-groups", no_argument, NULL, 'P'},
                                          {"prompt", required_argument, NULL, 'p'},
                                          {"chroot", required_argument, NULL, 'R'},
                                          {"role", required_argument, NULL, 'r'},
                                          {"stdin", no_argument, NULL, 'S'},
                                          {"shell", no_argument, NULL, 's'},
                                          {"type", required_argument, NULL, 't'},
                                          {"command-timeout", required_argument, NULL, 'T'},
                                          {"other-user", required_argument, NULL, 'U'},
                                          {"user", required_argument, NULL, 'u'},
                                          {"version", no_argument, NULL, 'V'},
                                          {"validate", no_argument, NULL, 'v'},
                                          {NULL, 0, NULL, 0}};

/* sudo's command line as read so far, and the request records it makes. */
struct sudo_cli {
  char flags[16]; /* the 'f' record's letters (sudo.h), each once */
  const char *user, *group;
  int remove_ts, reset_ts; /* -K, -k */
  int nopt;                /* options seen */
  struct buf b;            /* the request's records */
};

/* Add flag letter f to cli's flags once. */
static void add_flag(struct sudo_cli *cli, char f)
{
  if (!strchr(cli->flags, f))
    cli->flags[strlen(cli->flags)] = f;
}

/* Read sudo's options (getopt, stopping at the first operand; optind is left at it) into cli.
 * -1 to go on, else the exit code after -h, -V or a usage error (written to stderr). */
static int parse_options(int argc, char **argv, struct sudo_cli *cli)
{
  int o;
  opterr = 0;
  optind = 1;
  while ((o = getopt_long(argc, argv, "+:AbBC:D:Eeg:Hh::iKklnPp:R:r:SsT:t:U:u:Vv", long_opts,
                          NULL)) != -1) {
    cli->nopt++;
    switch (o) {
    case 'E':
    case 'H':
    case 'i':
    case 'l':
    case 'n':
    case 's':
    case 'v': add_flag(cli, (char)o); break;
    case O_PRESERVE:
      if (!optarg) {
        add_flag(cli, 'E');
        break;
      }
      for (char *save = NULL, *n = strtok_r(optarg, ",", &save); n; n = strtok_r(NULL, ",", &save))
        rec(&cli->b, 'p', n);
      break;
    case 'u': cli->user = optarg; break;
    case 'g': cli->group = optarg; break;
    case 'k': cli->reset_ts = 1; break;
    case 'K': cli->remove_ts = 1; break;
    case 'B':
    case 'p':
    case 'S': break; /* only about a password prompt, which never happens */
    case 'h':
      if (optarg || argc != 2)
        return unsupported('h'); /* with more arguments, sudo reads -h as -h host */
      help();
      return 0;
    case 'V':
      printf("Sudo version 1.9 (abxlua sandbox sudo: a client of envd's privilege broker)\n");
      return 0;
    case O_HOST: return unsupported('h');
    case ':':
      fprintf(stderr, "sudo: option requires an argument -- '%c'\n", optopt);
      usage(stderr);
      return 1;
    case '?':
      if (optopt)
        fprintf(stderr, "sudo: invalid option -- '%c'\n", optopt);
      else
        fprintf(stderr, "sudo: unrecognized option '%s'\n", argv[optind - 1]);
      usage(stderr);
      return 1;
    default: return unsupported(o);
    }
  }
  return -1;
}

/* Check the options against the operands *args (*nargs of them) and take the leading
 * VAR=value ones as records. -1 to go on, else the exit code (a usage error, or -K / -k done:
 * no password is ever cached, so there is nothing to remove or invalidate). */
static int take_operands(struct sudo_cli *cli, char ***args, int *nargs)
{
  const char *f = cli->flags;
  if (strchr(f, 'i') && strchr(f, 's')) {
    fprintf(stderr, "sudo: you may not specify both the -i and -s options\n");
    usage(stderr);
    return 1;
  }
  if (cli->remove_ts) { /* -K takes nothing else */
    if (cli->nopt != 1 || *nargs) {
      usage(stderr);
      return 1;
    }
    return 0;
  }
  while (*nargs > 0 && valid_var((*args)[0]) && !strchr(f, 'l') && !strchr(f, 'v')) {
    rec(&cli->b, 's', (*args)[0]);
    (*args)++;
    (*nargs)--;
  }
  int shell = strchr(f, 'i') || strchr(f, 's');
  if (strchr(f, 'v') && *nargs) {
    usage(stderr);
    return 1;
  }
  if (!*nargs && !shell && !strchr(f, 'l') && !strchr(f, 'v')) {
    if (cli->reset_ts)
      return 0;
    usage(stderr);
    return 1;
  }
  return -1;
}

/* Add the records of the flags, user, group, cwd, umask, environment and the command's nargs
 * arguments. 0, or 1 (the exit code) after saying on stderr that they do not fit. */
static int add_records(struct sudo_cli *cli, char **args, int nargs)
{
  if (isatty(0) && tcgetpgrp(0) == getpgrp())
    add_flag(cli, 'F'); /* the foreground job: the broker may take the terminal's input (use_pty) */
  rec(&cli->b, 'f', cli->flags);
  if (cli->user)
    rec(&cli->b, 'u', cli->user);
  if (cli->group)
    rec(&cli->b, 'g', cli->group);
  char cwd[4096], um[8];
  rec(&cli->b, 'c', getcwd(cwd, sizeof cwd) ? cwd : "/");
  mode_t old = umask(022);
  umask(old);
  snprintf(um, sizeof um, "%o", (unsigned)old);
  rec(&cli->b, 'm', um);
  for (char **e = environ; e && *e; e++)
    rec(&cli->b, 'e', *e);
  for (int i = 0; i < nargs; i++)
    rec(&cli->b, 'a', args[i]);
  if (cli->b.oom || cli->b.n > SUDO_MAX_REQ) {
    fprintf(stderr, "sudo: %s\n", cli->b.oom ? "out of memory" : "argument list too long");
    return 1;
  }
  return 0;
}

/* Block the forwarded signals into *sfd (a signalfd) and connect *s to the broker. 0, or -1
 * after saying why on stderr. */
static int connect_broker(int *sfd, int *s)
{
  sigset_t fwd;
  sigemptyset(&fwd);
  for (size_t i = 0; i < sizeof fwd_sigs / sizeof fwd_sigs[0]; i++)
    sigaddset(&fwd, fwd_sigs[i]);
  sigprocmask(SIG_BLOCK, &fwd, NULL);
  *sfd = signalfd(-1, &fwd, SFD_CLOEXEC);
  *s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", SUDO_SOCK);
  if (*sfd < 0 || *s < 0 || connect(*s, (struct sockaddr *)&sa, sizeof sa) != 0) {
    fprintf(stderr, "sudo: cannot reach the sandbox's sudo broker (envd) at %s: %s\n", SUDO_SOCK,
            strerror(errno));
    return -1;
  }
  return 0;
}

/* Forward the signals read from sfd to the broker on s until it sends the command's status;
 * exit as the command did (finish), or 1 when the broker goes away without the status. */
static int await_status(int s, int sfd)
{
  for (;;) {
    struct pollfd p[2] = {{s, POLLIN, 0}, {sfd, POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (p[1].revents & POLLIN) {
      struct signalfd_siginfo si;
      if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        uint32_t sig = si.ssi_signo;
        send(s, &sig, sizeof sig, MSG_NOSIGNAL);
      }
    }
    if (p[0].revents) {
      uint32_t st;
      ssize_t n = recv(s, &st, sizeof st, MSG_WAITALL);
      if (n == (ssize_t)sizeof st)
        return finish(st);
      if (n < 0 && errno == EINTR)
        continue;
      break;
    }
  }
  fprintf(stderr, "sudo: the sudo broker closed the connection without the command's status\n");
  return 1;
}

int abx_sudo_main(int argc, char **argv)
{
  const char *base = strrchr(argv[0], '/');
  if (strcmp(base ? base + 1 : argv[0], "sudoedit") == 0) {
    fprintf(stderr,
            "sudo: sudoedit is not supported by this sandbox's sudo; run the editor with sudo\n");
    return 1;
  }
  struct sudo_cli cli = {0};
  int rc = parse_options(argc, argv, &cli);
  if (rc >= 0)
    return rc;
  char **args = argv + optind;
  int nargs = argc - optind;
  rc = take_operands(&cli, &args, &nargs);
  if (rc >= 0)
    return rc;
  if (add_records(&cli, args, nargs) != 0)
    return 1;
  int sfd, s;
  if (connect_broker(&sfd, &s) != 0)
    return 1;
  if (send_req(s, &cli.b) != 0) {
    fprintf(stderr, "sudo: cannot send the request to the sudo broker: %s\n", strerror(errno));
    return 1;
  }
  free(cli.b.b);
  return await_status(s, sfd);
}
