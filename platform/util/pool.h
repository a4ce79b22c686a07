/*
 * util/pool.h: the bounded worker pool of `abxlua serve`. libmicrohttpd runs event-driven (a
 * couple of epoll threads for every connection), so a request whose handling can block (a
 * control-plane call: create, pause, snapshot, connect; a template archive's last bytes; a
 * --faults delay or hold; an ingress request's auto-resume and the start of its transfer) runs
 * here: the access handler suspends the connection (MHD_suspend_connection), submits the job, and
 * the job queues the answer (allowed on a suspended connection) and resumes it.
 *
 * Threads: made on demand up to ABX_POOL_MAX; one idle for ABX_POOL_IDLE_MS ends. Jobs beyond
 *          ABX_POOL_MAX running wait in FIFO order (a burst of 200 creates runs 32 at a time).
 * Stop:    abx_pool_drain refuses new jobs (abx_pool_submit returns -1: the caller then runs the
 *          job on its own thread) and waits for every queued and running one.
 */
#ifndef ABX_UTIL_POOL_H
#define ABX_UTIL_POOL_H

#define ABX_POOL_MAX 32
#define ABX_POOL_IDLE_MS 10000

/* Run fn(arg) on a pool thread. 0 when queued; -1 when the pool is draining or out of memory or
 * threads (nothing queued: the caller runs it itself). */
int abx_pool_submit(void (*fn)(void *), void *arg);

/* Refuse new jobs, then wait until no job is queued or running (no bound: the jobs themselves
 * are bounded, and --faults holds end at abx_faults_stop). */
void abx_pool_drain(void);

#endif
