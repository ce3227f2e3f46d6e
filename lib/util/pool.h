/* SPDX-License-Identifier: MIT */
/*
 * pool.h - a fixed set of worker threads running jobs from one FIFO.
 *
 * A job is fn(arg). Jobs start in the order they were submitted; with
 * more than one thread they may finish in any order. The pool knows
 * nothing of results: a job publishes its own (into a slot the caller
 * gave it). Per-thread scratch (a codec context, a buffer) is indexed by
 * ezi_pool_self(), the calling worker's number in its pool.
 */
#ifndef EZFS_UTIL_POOL_H
#define EZFS_UTIL_POOL_H

#include <stddef.h>

struct ezi_pool;

typedef void (*ezi_pool_fn)(void *arg);

/*
 * Start nthreads workers (at least 1). maxq > 0 bounds the jobs waiting
 * to start: ezi_pool_submit then blocks while maxq are queued; 0 = no
 * bound. NULL when not even one thread could start (*err: the errno),
 * else fewer threads may have started than asked: ezi_pool_threads.
 */
struct ezi_pool *ezi_pool_new(unsigned nthreads, size_t maxq, int *err);

/* Queue fn(arg); 0 or -ENOMEM (fn is then not run). */
int ezi_pool_submit(struct ezi_pool *p, ezi_pool_fn fn, void *arg);

/* Return once every job submitted before is finished. */
void ezi_pool_wait(struct ezi_pool *p);

/*
 * Join the workers and free the pool. Jobs already running finish; jobs
 * still queued are dropped without being run (ezi_pool_wait first to run
 * them). NULL is fine.
 */
void ezi_pool_destroy(struct ezi_pool *p);

/* The number of workers running. */
unsigned ezi_pool_threads(const struct ezi_pool *p);

/* The calling thread's index in its pool, 0 .. threads-1; -1 on a thread
 * that is no pool's worker. */
int ezi_pool_self(void);

#endif
