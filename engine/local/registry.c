/*
 * registry.c: the list of live sandboxes. Contract in registry.h.
 */
#include "local/registry.h"

#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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
  sb->next = head;
  head = sb;
  pthread_mutex_unlock(&mu);
}

struct abx_sandbox *abx_registry_take(const char *id)
{
  pthread_mutex_lock(&mu);
  struct abx_sandbox **pp = &head, *found = NULL;
  for (; *pp; pp = &(*pp)->next) {
    if (strcmp((*pp)->id, id) == 0) {
      found = *pp;
      *pp = found->next;
      found->next = NULL;
      break;
    }
  }
  pthread_mutex_unlock(&mu);
  return found;
}

struct abx_sandbox *abx_registry_take_expired(int64_t now_ns)
{
  struct abx_sandbox *out = NULL;
  pthread_mutex_lock(&mu);
  struct abx_sandbox **pp = &head;
  while (*pp) {
    struct abx_sandbox *s = *pp;
    int gone = 0;
    if (s->end_ns <= now_ns) {
      gone = 1;
    } else if (s->pid > 0) {
      int st;
      if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
        s->pid = 0;
        gone = 1;
      }
    }
    if (gone) {
      *pp = s->next;
      s->next = out;
      out = s;
    } else {
      pp = &s->next;
    }
  }
  pthread_mutex_unlock(&mu);
  return out;
}

struct abx_sandbox *abx_registry_take_all(void)
{
  pthread_mutex_lock(&mu);
  struct abx_sandbox *all = head;
  head = NULL;
  pthread_mutex_unlock(&mu);
  return all;
}

int abx_registry_netns(const char *id)
{
  int fd = -1;
  pthread_mutex_lock(&mu);
  struct abx_sandbox *s = abx_registry_find(id);
  if (s && s->netns_fd >= 0)
    fd = fcntl(s->netns_fd, F_DUPFD_CLOEXEC, 0);
  pthread_mutex_unlock(&mu);
  return fd;
}
