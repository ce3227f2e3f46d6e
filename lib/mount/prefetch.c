/* SPDX-License-Identifier: MIT */
/* prefetch.c - a helper thread decoding ahead of sequential readers. */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

#define PF_CHUNK (1u << 20)

static void *pf_worker(void *arg)
{
	struct ezfs_mount *m = arg;
	struct prefetcher *pf = &m->pf;
	struct pf_job job;
	char *buf = malloc(PF_CHUNK);

	pthread_mutex_lock(&pf->lock);
	for (;;) {
		while (!pf->n && !pf->stop)
			pthread_cond_wait(&pf->cond, &pf->lock);
		if (pf->stop)
			break;
		job = pf->q[pf->head];
		pf->head = (pf->head + 1) % PF_QUEUE;
		pf->n--;
		pthread_mutex_unlock(&pf->lock);

		/* Decoding fills the shared pcluster cache; the bytes
		 * themselves are thrown away. Errors are for the reader to
		 * meet (and log) when it gets there. */
		while (buf && job.len) {
			size_t len = job.len > PF_CHUNK ? PF_CHUNK :
				     (size_t)job.len;
			ssize_t r = ezfs_pread(job.node->ino, buf, len,
					       job.off);

			if (r <= 0)
				break;
			job.off += (uint64_t)r;
			job.len -= (uint64_t)r;
		}
		it_unpin(m, job.node);
		pthread_mutex_lock(&pf->lock);
	}
	/* Drop what is still queued. */
	while (pf->n) {
		job = pf->q[pf->head];
		pf->head = (pf->head + 1) % PF_QUEUE;
		pf->n--;
		pthread_mutex_unlock(&pf->lock);
		it_unpin(m, job.node);
		pthread_mutex_lock(&pf->lock);
	}
	pthread_mutex_unlock(&pf->lock);
	free(buf);
	return NULL;
}

int pf_start(struct ezfs_mount *m)
{
	struct prefetcher *pf = &m->pf;
	int err;

	pthread_mutex_init(&pf->lock, NULL);
	pthread_cond_init(&pf->cond, NULL);
	pf->head = pf->n = 0;
	pf->stop = false;
	err = pthread_create(&pf->tid, NULL, pf_worker, m);
	if (err) {
		pthread_cond_destroy(&pf->cond);
		pthread_mutex_destroy(&pf->lock);
		return -err;
	}
	pf->started = true;
	return 0;
}

void pf_stop(struct ezfs_mount *m)
{
	struct prefetcher *pf = &m->pf;

	if (!pf->started)
		return;
	pthread_mutex_lock(&pf->lock);
	pf->stop = true;
	pthread_cond_signal(&pf->cond);
	pthread_mutex_unlock(&pf->lock);
	pthread_join(pf->tid, NULL);
	pthread_cond_destroy(&pf->cond);
	pthread_mutex_destroy(&pf->lock);
	pf->started = false;
}

void pf_queue(struct ezfs_mount *m, struct mnode *node, uint64_t off,
	      uint64_t len)
{
	struct prefetcher *pf = &m->pf;
	struct pf_job *job;

	if (!pf->started)
		return;
	pthread_mutex_lock(&pf->lock);
	if (pf->n == PF_QUEUE || pf->stop) {
		pthread_mutex_unlock(&pf->lock);
		return;
	}
	it_pin(m, node);
	job = &pf->q[(pf->head + pf->n) % PF_QUEUE];
	job->node = node;
	job->off = off;
	job->len = len;
	pf->n++;
	pthread_cond_signal(&pf->cond);
	pthread_mutex_unlock(&pf->lock);
}
