/*
 * util/pool.c: a bounded pool of worker threads for serve's blocking handlers. Contract in
 * util/pool.h.
 */
#include "pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct job {
  void (*fn)(void *);
  void *arg;
  struct job *next;
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_work = PTHREAD_COND_INITIALIZER; /* a job was queued */
static pthread_cond_t g_idle = PTHREAD_COND_INITIALIZER; /* a job ended (for the drain) */
static struct job *g_head, *g_tail;
static int g_threads, g_waiting, g_busy, g_queued, g_draining;

static void *worker(void *unused)
{
  (void)unused;
  pthread_mutex_lock(&g_mu);
  for (;;) {
    while (!g_head) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_sec += ABX_POOL_IDLE_MS / 1000;
      g_waiting++;
      int rc = pthread_cond_timedwait(&g_work, &g_mu, &ts);
      g_waiting--;
      if (rc == ETIMEDOUT && !g_head) {
        g_threads--;
        pthread_cond_broadcast(&g_idle);
        pthread_mutex_unlock(&g_mu);
        return NULL;
      }
    }
    struct job *j = g_head;
    g_head = j->next;
    g_queued--;
    if (!g_head)
      g_tail = NULL;
    g_busy++;
    pthread_mutex_unlock(&g_mu);
    j->fn(j->arg);
    free(j);
    pthread_mutex_lock(&g_mu);
    g_busy--;
    pthread_cond_broadcast(&g_idle);
  }
}

int abx_pool_submit(void (*fn)(void *), void *arg)
{
  struct job *j = malloc(sizeof *j);
  if (!j)
    return -1;
  j->fn = fn;
  j->arg = arg;
  j->next = NULL;
  pthread_mutex_lock(&g_mu);
  if (g_draining) {
    pthread_mutex_unlock(&g_mu);
    free(j);
    return -1;
  }
  /* a thread more when every one is busy with a job queued before this one, up to the bound */
  if (g_threads < ABX_POOL_MAX && g_waiting <= g_queued) {
    pthread_t th;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &attr, worker, NULL) == 0)
      g_threads++;
    pthread_attr_destroy(&attr);
    if (g_threads == 0) { /* none at all: the caller runs it */
      pthread_mutex_unlock(&g_mu);
      free(j);
      return -1;
    }
  }
  if (g_tail)
    g_tail->next = j;
  else
    g_head = j;
  g_tail = j;
  g_queued++;
  pthread_cond_signal(&g_work);
  pthread_mutex_unlock(&g_mu);
  return 0;
}

void abx_pool_drain(void)
{
  pthread_mutex_lock(&g_mu);
  g_draining = 1;
  while (g_head || g_busy)
    pthread_cond_wait(&g_idle, &g_mu);
  pthread_mutex_unlock(&g_mu);
}
