/*
 * registry.c: the list of live sandboxes (their refs are their own: sandbox_new.c). Contract in
 * registry.h.
 */
#include "registry.h"

#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct abx_sandbox *head;

void abx_registry_lock(void)
{
  pthread_mutex_lock(&mu);
}
void abx_registry_unlock(void)
{
  pthread_mutex_unlock(&mu);
}
struct abx_sandbox *abx_registry_head(void)
{
  return head;
}

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
  sb->listed = 1;
  sb->next = head;
  head = sb;
  pthread_mutex_unlock(&mu);
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

int abx_registry_netns(const char *id)
{
  return netns_of(id, 0);
}
int abx_registry_netns_running(const char *id)
{
  return netns_of(id, -2);
}
