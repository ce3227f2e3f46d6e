/* SPDX-License-Identifier: MIT */
/*
 * prefetch.c - store-ahead: helper threads put decoded bytes into the
 * kernel's page cache (fuse_lowlevel_notify_store), as the kernel's own
 * EROFS driver does with the neighbours of what it decompressed.
 *
 * - A read that touches part of an encoded extent decodes the whole extent
 *   anyway: it is widened to whole extents, answered, and its buffer goes
 *   to a helper that stores the rest. Later reads of those pages (random
 *   ones included) are page cache hits.
 * - A sequential reader gets the next window decoded and stored by the
 *   helpers, in extent-aligned jobs that run in parallel (one helper per
 *   CPU, up to PF_THREADS_MAX), while the FUSE workers answer the reads
 *   that still reach the daemon.
 *
 * Helpers never make a FUSE worker wait: a full queue drops the job. A
 * helper may wait for a page lock held by a read in flight; the worker that
 * answers that read releases it.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

#define PF_WIDEN_MAX (8u << 20)   /* largest widened read */
#define PF_BUF_MAX (16u << 20)    /* bytes held by queued buffers, at most */
#define PF_WINDOW (16u << 20)     /* ahead of a sequential reader, at least */
#define PF_WINDOW_MAX (32u << 20)
#define PF_CHUNK (512u << 10)     /* one helper job, at least */
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static void pf_store(struct ezfs_mount *m, struct pf_job *job, uint64_t from,
		     uint64_t to)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(0);

	if (to <= from)
		return;
	bv.buf[0].size = (size_t)(to - from);
	bv.buf[0].mem = job->buf + (from - job->off);
	/* -ENOENT: the kernel forgot the inode; nothing to do then. */
	fuse_lowlevel_notify_store(m->se, mnt_nid_to_ino(m, job->node->nid),
				   (off_t)from, &bv, 0);
}

static void pf_run(struct ezfs_mount *m, struct pf_job *job)
{
	struct mfile f = { .node = job->node, .size = job->off + job->len };

	if (!job->buf) {
		/* Errors are for the reader to meet (and log) there. */
		if (pf_read(&f, job->off, job->off + job->len, true,
			    &job->buf) != (ssize_t)job->len)
			return;
		job->skip = job->skip_len = 0;
	}
	pf_store(m, job, job->off, job->skip_len ? job->skip : job->off +
		 job->len);
	if (job->skip_len)
		pf_store(m, job, job->skip + job->skip_len,
			 job->off + job->len);
}

/* The end of the extent holding pos (clamped to the file), or 0: an error,
 * or, with encoded, not an encoded extent of its own. */
static uint64_t ext_end(struct mfile *f, uint64_t pos, bool encoded,
			uint64_t *start)
{
	struct ezfs_extent e;

	if (ezfs_map(f->node->ino, pos, &e) || pos < e.la ||
	    pos - e.la >= e.llen)
		return 0;
	if (encoded && (e.flags & (EZFS_EXTENT_MAPPED | EZFS_EXTENT_ENCODED |
				   EZFS_EXTENT_FRAGMENT)) !=
			       (EZFS_EXTENT_MAPPED | EZFS_EXTENT_ENCODED))
		return 0;
	if (start)
		*start = e.la;
	return e.la + e.llen < f->size ? e.la + e.llen : f->size;
}

/* pread all of [from, to) into buf. */
static ssize_t read_all(ezfs_inode *ino, char *buf, uint64_t from,
			uint64_t to)
{
	uint64_t done = 0;
	ssize_t r = 0;

	while (from + done < to) {
		r = ezfs_pread(ino, buf + done, to - from - done, from + done);
		if (r <= 0)
			break;
		done += (uint64_t)r;
	}
	return r < 0 ? r : (ssize_t)done;
}

/*
 * A whole encoded extent in one pread is decoded straight into the caller's
 * buffer (lib/read), unseen by anyone else: two FUSE requests inside one
 * extent (readahead sends 128 KiB pieces of a ~1 MiB extent) would decode
 * it twice, and a helper a third time. Cached, each extent is read as its
 * first byte and the rest: one decode into the shared cache, which
 * concurrent readers of the extent wait for and copy from.
 */
ssize_t pf_read(struct mfile *f, uint64_t from, uint64_t to, bool cached,
		char **out)
{
	char *buf = malloc(to > from ? (size_t)(to - from) : 1);
	uint64_t pos = from, end;
	ssize_t r = 0;

	*out = NULL;
	if (!buf)
		return -ENOMEM;
	while (cached && pos < to) {
		end = ext_end(f, pos, false, NULL);
		if (!end || end > to)
			end = to;
		r = read_all(f->node->ino, buf + (pos - from), pos, pos + 1);
		if (r == 1 && end > pos + 1)
			r = read_all(f->node->ino, buf + (pos + 1 - from),
				     pos + 1, end);
		if (r <= 0)
			break;
		pos = end;
	}
	if (!cached)
		r = read_all(f->node->ino, buf, from, to);
	else if (r >= 0)
		r = (ssize_t)(pos - from);
	if (r < 0) {
		free(buf);
		return r;
	}
	*out = buf;
	return r;
}

/* Take the next job; false when stopping. Called with the lock held. */
static bool pf_pop(struct prefetcher *pf, struct pf_job *job)
{
	if (!pf->n)
		return false;
	*job = pf->q[pf->head];
	pf->head = (pf->head + 1) % PF_QUEUE;
	pf->n--;
	return true;
}

static void pf_done(struct ezfs_mount *m, struct pf_job *job, bool owned)
{
	struct prefetcher *pf = &m->pf;

	if (owned) {
		pthread_mutex_lock(&pf->lock);
		pf->buf_bytes -= job->len;
		pthread_mutex_unlock(&pf->lock);
	}
	free(job->buf);
	it_unpin(m, job->node);
}

static void *pf_worker(void *arg)
{
	struct ezfs_mount *m = arg;
	struct prefetcher *pf = &m->pf;
	struct pf_job job;
	bool owned;

	pthread_mutex_lock(&pf->lock);
	for (;;) {
		while (!pf->n && !pf->stop)
			pthread_cond_wait(&pf->cond, &pf->lock);
		if (pf->stop)
			break;
		pf_pop(pf, &job);
		pthread_mutex_unlock(&pf->lock);
		owned = job.buf != NULL;
		pf_run(m, &job);
		pf_done(m, &job, owned);
		pthread_mutex_lock(&pf->lock);
	}
	/* Drop what is still queued. */
	while (pf_pop(pf, &job)) {
		pthread_mutex_unlock(&pf->lock);
		pf_done(m, &job, job.buf != NULL);
		pthread_mutex_lock(&pf->lock);
	}
	pthread_mutex_unlock(&pf->lock);
	return NULL;
}

int pf_start(struct ezfs_mount *m)
{
	struct prefetcher *pf = &m->pf;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned want = ncpu < 1 ? 1 : ncpu > PF_THREADS_MAX ?
			PF_THREADS_MAX : (unsigned)ncpu;
	struct ezfs_cache_stats cs;
	int err = 0;

	pthread_mutex_init(&pf->lock, NULL);
	pthread_cond_init(&pf->cond, NULL);
	pf->head = pf->n = 0;
	pf->buf_bytes = 0;
	/* Queued buffers are decoded data too: a quarter of the budget. */
	ezfs_cache_stats(m->img, &cs);
	pf->buf_max = cs.bytes_max / 4 < (1u << 20) ? (1u << 20) :
		      cs.bytes_max / 4 > PF_BUF_MAX ? PF_BUF_MAX :
						      (size_t)(cs.bytes_max / 4);
	pf->stop = false;
	for (pf->nthreads = 0; pf->nthreads < want; pf->nthreads++) {
		err = pthread_create(&pf->tid[pf->nthreads], NULL, pf_worker,
				     m);
		if (err)
			break;
	}
	if (!pf->nthreads) {
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
	unsigned i;

	if (!pf->started)
		return;
	pthread_mutex_lock(&pf->lock);
	pf->stop = true;
	pthread_cond_broadcast(&pf->cond);
	pthread_mutex_unlock(&pf->lock);
	for (i = 0; i < pf->nthreads; i++)
		pthread_join(pf->tid[i], NULL);
	pthread_cond_destroy(&pf->cond);
	pthread_mutex_destroy(&pf->lock);
	pf->started = false;
}

/* Queue a job (pins its node); false when the queue or the buffer budget
 * is full. */
static bool pf_queue(struct ezfs_mount *m, const struct pf_job *job)
{
	struct prefetcher *pf = &m->pf;

	if (!pf->started)
		return false;
	pthread_mutex_lock(&pf->lock);
	if (pf->n == PF_QUEUE || pf->stop ||
	    (job->buf && pf->buf_bytes + job->len > pf->buf_max)) {
		pthread_mutex_unlock(&pf->lock);
		return false;
	}
	if (job->buf)
		pf->buf_bytes += job->len;
	it_pin(m, job->node);
	pf->q[(pf->head + pf->n) % PF_QUEUE] = *job;
	pf->n++;
	pthread_cond_signal(&pf->cond);
	pthread_mutex_unlock(&pf->lock);
	return true;
}

/* Unless [from, to) lies in a range recently decoded for the page cache,
 * note [s, e) as one (true). */
static bool note_recent(struct mfile *f, uint64_t from, uint64_t to,
			uint64_t s, uint64_t e)
{
	unsigned i;

	pthread_mutex_lock(&f->lock);
	for (i = 0; i < ARRAY_SIZE(f->recent); i++) {
		if (from >= f->recent[i].from && to <= f->recent[i].to) {
			pthread_mutex_unlock(&f->lock);
			return false;
		}
	}
	i = f->recent_next++ % ARRAY_SIZE(f->recent);
	f->recent[i].from = s;
	f->recent[i].to = e;
	pthread_mutex_unlock(&f->lock);
	return true;
}

bool pf_widen(struct ezfs_mount *m, struct mfile *f, uint64_t *from,
	      uint64_t *to)
{
	uint64_t s = *from, e = *to, la, end;

	if (!m->pf.started || !f->compressed || s >= e)
		return false;
	end = ext_end(f, s, true, &la);
	if (end)
		s = la;
	end = ext_end(f, e - 1, true, NULL);
	if (end)
		e = end;
	if ((s == *from && e == *to) || e - s > PF_WIDEN_MAX ||
	    !note_recent(f, *from, *to, s, e))
		return false;
	*from = s;
	*to = e;
	return true;
}

bool pf_store_rest(struct ezfs_mount *m, struct mnode *node, char *buf,
		   uint64_t from, uint64_t to, uint64_t off, uint64_t len)
{
	struct pf_job job = {
		.node = node, .off = from, .len = to - from, .buf = buf,
		.skip = off, .skip_len = len,
	};

	return pf_queue(m, &job);
}

void pf_seq_hint(struct ezfs_mount *m, struct mfile *f, uint64_t off,
		 uint64_t len, uint64_t decoded_end)
{
	uint64_t end = off + len, from = 0, to = 0, pos, jend, win;
	struct pf_job job = { .node = f->node };

	if (!m->pf.started || !f->compressed)
		return;
	/* Eight times the rest of the extent just decoded, 16 MiB at
	 * least: with only two extents (1 MiB pclusters decode to ~4 MiB of
	 * text) ahead, the helpers sat idle between top-ups. */
	win = 8 * (decoded_end - off);
	win = win < PF_WINDOW ? PF_WINDOW : win > PF_WINDOW_MAX ?
						 PF_WINDOW_MAX : win;
	pthread_mutex_lock(&f->lock);
	/* Sequential: this read starts where the last ended, or where the
	 * pages stored ahead ran out (reads of those never came here). */
	if ((off == f->last_end && (off || len > 4096)) ||
	    (off > f->last_end && off <= f->pf_end)) {
		from = f->pf_end > decoded_end ? f->pf_end : decoded_end;
		to = end + win < f->size ? end + win : f->size;
		/* Top up only when less than half the window is queued. */
		if (f->pf_end > end + win / 2 || from >= to)
			from = to = 0;
	}
	f->last_end = end;
	pthread_mutex_unlock(&f->lock);

	/* Jobs of whole extents, at least PF_CHUNK each, run in parallel. */
	for (pos = from; pos < to; pos = jend) {
		jend = pos + PF_CHUNK < to ? pos + PF_CHUNK : to;
		jend = ext_end(f, jend - 1, false, NULL);
		if (!jend || jend - pos > PF_WIDEN_MAX)
			break;
		job.off = pos;
		job.len = jend - pos;
		if (!pf_queue(m, &job))
			break;
	}
	if (pos > from) {
		pthread_mutex_lock(&f->lock);
		if (pos > f->pf_end)
			f->pf_end = pos;
		pthread_mutex_unlock(&f->lock);
		note_recent(f, pos, pos, from, pos);
	}
}
