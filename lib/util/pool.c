/* SPDX-License-Identifier: MIT */
/*
 * pool.c - worker threads over a ring of (fn, arg) jobs under one mutex.
 *
 * A submission wakes one sleeping worker, never all of them; the ring
 * grows by doubling (unbounded pools), so a submission allocates only
 * when the queue is longer than it ever was.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "util/pool.h"

struct pjob {
	ezi_pool_fn fn;
	void *arg;
};

struct pworker {
	struct ezi_pool *p;
	pthread_t th;
	int idx;
};

struct ezi_pool {
	pthread_mutex_t lock;
	pthread_cond_t more;  /* a job was queued, or stop */
	pthread_cond_t space; /* a bounded queue has room */
	pthread_cond_t idle;  /* queue empty and nothing running */
	struct pjob *ring;
	size_t cap, head, n, maxq;
	unsigned running, sleeping, waiters, nthreads;
	bool stop;
	struct pworker *w;
};

static __thread int pool_self = -1;

int ezi_pool_self(void)
{
	return pool_self;
}

unsigned ezi_pool_threads(const struct ezi_pool *p)
{
	return p ? p->nthreads : 0;
}

static void *pool_main(void *arg)
{
	struct pworker *w = arg;
	struct ezi_pool *p = w->p;

	pool_self = w->idx;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct pjob j;

		while (!p->n && !p->stop) {
			p->sleeping++;
			pthread_cond_wait(&p->more, &p->lock);
			p->sleeping--;
		}
		if (p->stop)
			break;
		j = p->ring[p->head];
		p->head = (p->head + 1) & (p->cap - 1);
		p->n--;
		p->running++;
		if (p->maxq)
			pthread_cond_signal(&p->space);
		pthread_mutex_unlock(&p->lock);
		j.fn(j.arg);
		pthread_mutex_lock(&p->lock);
		p->running--;
		if (!p->running && !p->n && p->waiters)
			pthread_cond_broadcast(&p->idle);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Double the ring (lock held), unwrapping it; 0 or -ENOMEM. */
static int ring_grow(struct ezi_pool *p)
{
	size_t cap = p->cap * 2, i;
	struct pjob *r;

	if (cap < p->cap)
		return -ENOMEM;
	r = malloc(cap * sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (i = 0; i < p->n; i++)
		r[i] = p->ring[(p->head + i) & (p->cap - 1)];
	free(p->ring);
	p->ring = r;
	p->cap = cap;
	p->head = 0;
	return 0;
}

struct ezi_pool *ezi_pool_new(unsigned nthreads, size_t maxq, int *err)
{
	struct ezi_pool *p = calloc(1, sizeof(*p));
	unsigned i;
	int e = 0;

	if (nthreads < 1)
		nthreads = 1;
	if (p) {
		p->maxq = maxq;
		for (p->cap = 16; p->cap < maxq; p->cap *= 2)
			;
		p->ring = malloc(p->cap * sizeof(*p->ring));
		p->w = calloc(nthreads, sizeof(*p->w));
	}
	if (!p || !p->ring || !p->w) {
		if (p) {
			free(p->ring);
			free(p->w);
		}
		free(p);
		if (err)
			*err = -ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->more, NULL);
	pthread_cond_init(&p->space, NULL);
	pthread_cond_init(&p->idle, NULL);
	for (i = 0; i < nthreads; i++) {
		p->w[i].p = p;
		p->w[i].idx = (int)i;
		e = pthread_create(&p->w[i].th, NULL, pool_main, &p->w[i]);
		if (e)
			break;
		p->nthreads++;
	}
	if (!p->nthreads) {
		ezi_pool_destroy(p);
		if (err)
			*err = -e;
		return NULL;
	}
	return p;
}

int ezi_pool_submit(struct ezi_pool *p, ezi_pool_fn fn, void *arg)
{
	pthread_mutex_lock(&p->lock);
	while (p->maxq && p->n >= p->maxq)
		pthread_cond_wait(&p->space, &p->lock);
	if (p->n == p->cap && ring_grow(p)) {
		pthread_mutex_unlock(&p->lock);
		return -ENOMEM;
	}
	p->ring[(p->head + p->n) & (p->cap - 1)] = (struct pjob){ fn, arg };
	p->n++;
	if (p->sleeping)
		pthread_cond_signal(&p->more);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

void ezi_pool_wait(struct ezi_pool *p)
{
	pthread_mutex_lock(&p->lock);
	p->waiters++;
	while (p->n || p->running)
		pthread_cond_wait(&p->idle, &p->lock);
	p->waiters--;
	pthread_mutex_unlock(&p->lock);
}

void ezi_pool_destroy(struct ezi_pool *p)
{
	unsigned i;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	p->n = 0;
	pthread_cond_broadcast(&p->more);
	pthread_cond_broadcast(&p->space);
	pthread_mutex_unlock(&p->lock);
	for (i = 0; i < p->nthreads; i++)
		pthread_join(p->w[i].th, NULL);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->more);
	pthread_cond_destroy(&p->space);
	pthread_cond_destroy(&p->idle);
	free(p->ring);
	free(p->w);
	free(p);
}
