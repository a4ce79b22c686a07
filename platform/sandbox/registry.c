/*
 * registry.c: the list of live sandboxes and their refs. Contract in registry.h.
 */
#include "registry.h"

#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct abx_sandbox *head;

void abx_registry_lock(void) { pthread_mutex_lock(&mu); }
void abx_registry_unlock(void) { pthread_mutex_unlock(&mu); }
struct abx_sandbox *abx_registry_head(void) { return head; }

struct abx_sandbox *abx_registry_find(const char *id)
{
  for (struct abx_sandbox *s = head; s; s = s->next)
    if (strcmp(s->id, id) == 0)
      return s;
  return NULL;
}

void abx_registry_add(struct abx_sandbox *sb)
{
  pthread_mutex_lock(&mu);
  sb->refs = 1;
  sb->listed = 1;
  sb->next = head;
  head = sb;
  pthread_mutex_unlock(&mu);
}

struct abx_sandbox *abx_registry_get(const char *id)
{
  pthread_mutex_lock(&mu);
  struct abx_sandbox *s = abx_registry_find(id);
  if (s)
    s->refs++;
  pthread_mutex_unlock(&mu);
  return s;
}

void abx_registry_put(struct abx_sandbox *sb)
{
  pthread_mutex_lock(&mu);
  int last = --sb->refs == 0;
  pthread_mutex_unlock(&mu);
  if (last)
    abx_sandbox_destroy(sb);
}

static int unlist_locked(struct abx_sandbox *sb)
{
  for (struct abx_sandbox **pp = &head; *pp; pp = &(*pp)->next)
    if (*pp == sb) {
      *pp = sb->next;
      sb->next = NULL;
      sb->listed = 0;
      return 1;
    }
  return 0;
}

int abx_registry_unlist(struct abx_sandbox *sb)
{
  pthread_mutex_lock(&mu);
  int was = unlist_locked(sb);
  pthread_mutex_unlock(&mu);
  return was;
}

size_t abx_registry_due(int64_t now_ns, struct abx_sandbox **out, size_t max)
{
  size_t n = 0;
  pthread_mutex_lock(&mu);
  for (struct abx_sandbox *s = head; s && n < max; s = s->next) {
    int due = !s->paused && s->end_ns <= now_ns;
    /* bwrap exited: reaped now, or at an earlier tick that could not take the op mutex
     * (abx_lifecycle_tick only try-locks); a sandbox paused filesystem only has no process.
     * Reaping needs op too (a try: the lock order is op, then registry, and a try never waits):
     * a halt or teardown under op waits for its bwrap without reaping it and then kills its
     * process group; reaped here meanwhile, that pid (or 0, serve's own group) would be hit. */
    if (!due && pthread_mutex_trylock(&s->op) == 0) {
      int st;
      if (s->pid > 0 && waitpid(s->pid, &st, WNOHANG) == s->pid)
        s->pid = 0, due = 1;
      else if (s->pid == 0 && !(s->paused && !s->memory_paused))
        due = 1;
      pthread_mutex_unlock(&s->op);
    }
    if (due) {
      s->refs++;
      out[n++] = s;
    }
  }
  pthread_mutex_unlock(&mu);
  return n;
}

struct abx_sandbox *abx_registry_take_all(void)
{
  pthread_mutex_lock(&mu);
  struct abx_sandbox *all = head;
  head = NULL;
  for (struct abx_sandbox *s = all; s; s = s->next)
    s->listed = 0;
  pthread_mutex_unlock(&mu);
  return all;
}

static int netns_of(const char *id, int paused_code)
{
  int fd = -1;
  pthread_mutex_lock(&mu);
  struct abx_sandbox *s = abx_registry_find(id);
  if (s && s->paused && paused_code)
    fd = paused_code;
  else if (s && s->netns_fd >= 0)
    fd = fcntl(s->netns_fd, F_DUPFD_CLOEXEC, 0);
  pthread_mutex_unlock(&mu);
  return fd;
}

int abx_registry_netns(const char *id) { return netns_of(id, 0); }
int abx_registry_netns_running(const char *id) { return netns_of(id, -2); }
