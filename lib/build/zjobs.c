/* SPDX-License-Identifier: MIT */
/*
 * zjobs.c - compress files on worker threads, hand results back in inode
 * order.
 *
 * Jobs are the compressible regular files in inode order. Workers take the
 * next job while it lies within a window ahead of the consumer (bounding
 * memory), compress it into its own buffer and publish the result; the
 * writer takes results strictly in order and assigns addresses then, so
 * the image does not depend on the number of workers. A codec context is
 * fresh per file unless the codec's destsize is history-free, so results
 * do not depend on which thread compressed what before.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "build/internal.h"

struct zslot {
	struct binode *in;
	struct bzfile *z;
	int err;
	bool done;
};

struct zjobs {
	struct ezfs_builder *b;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct zslot *slots;
	size_t njobs, next, consumed, window;
	uint64_t *upto;          /* input bytes of the jobs before each */
	bool stop;
	pthread_t *threads;
	unsigned nthreads;
	void *cctx;              /* synchronous mode (no threads) */
};

static bool reusable_ctx(const struct ezfs_builder *b)
{
	return b->p.alg == EZFS_ALG_LZ4 || b->p.alg == EZFS_ALG_LZMA;
}

static int run_job(struct ezfs_builder *b, struct binode *in, void **cctx,
		   struct bzfile **z)
{
	int err = 0;

	if (!*cctx) {
		*cctx = bld_cctx_new(b, &err);
		if (!*cctx && err) {
			bld_log(b, EZFS_LOG_ERROR,
				"cannot set up the compressor: %s",
				strerror(-err));
			return err;
		}
	}
	err = bld_compress_file(b, in, *cctx, z);
	if (!reusable_ctx(b)) {
		bld_cctx_free(b, *cctx);
		*cctx = NULL;
	}
	return err;
}

/*
 * A worker may run ahead of the writer by `window` jobs, or further while
 * the jobs ahead hold less than ZJ_AHEAD input bytes: one large file then
 * does not leave the other workers idle.
 */
#define ZJ_AHEAD (64ull << 20)
static bool may_take(const struct zjobs *j)
{
	return j->next < j->consumed + j->window ||
	       j->upto[j->next] - j->upto[j->consumed] < ZJ_AHEAD;
}

static void *worker(void *arg)
{
	struct zjobs *j = arg;
	void *cctx = NULL;

	pthread_mutex_lock(&j->lock);
	for (;;) {
		size_t idx;
		struct bzfile *z = NULL;
		int err;

		while (!j->stop && j->next < j->njobs && !may_take(j))
			pthread_cond_wait(&j->cond, &j->lock);
		if (j->stop || j->next >= j->njobs)
			break;
		idx = j->next++;
		pthread_mutex_unlock(&j->lock);
		err = run_job(j->b, j->slots[idx].in, &cctx, &z);
		pthread_mutex_lock(&j->lock);
		j->slots[idx].z = z;
		j->slots[idx].err = err;
		j->slots[idx].done = true;
		pthread_cond_broadcast(&j->cond);
	}
	pthread_mutex_unlock(&j->lock);
	bld_cctx_free(j->b, cctx);
	return NULL;
}

int bld_zjobs_start(struct ezfs_builder *b)
{
	struct zjobs *j;
	size_t i, n = 0;
	unsigned t, want;

	if (b->p.alg < 0)
		return 0;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->b = b;
	for (i = 0; i < b->ninodes; i++)
		if (b->inodes[i]->size && bld_compress_wanted(b, b->inodes[i]))
			n++;
	j->slots = calloc(n ? n : 1, sizeof(*j->slots));
	if (!j->slots) {
		free(j);
		return -ENOMEM;
	}
	j->upto = malloc((n + 1) * sizeof(*j->upto));
	if (!j->upto) {
		free(j->slots);
		free(j);
		return -ENOMEM;
	}
	j->upto[0] = 0;
	for (i = 0; i < b->ninodes; i++)
		if (b->inodes[i]->size && bld_compress_wanted(b, b->inodes[i])) {
			j->slots[j->njobs].in = b->inodes[i];
			j->upto[j->njobs + 1] = j->upto[j->njobs] +
						b->inodes[i]->size;
			j->njobs++;
		}
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->cond, NULL);
	b->zjobs = j;
	want = b->p.workers ? b->p.workers : 1;
	if (want <= 1 || j->njobs <= 1)
		return 0;	/* synchronous */
	j->window = 4 * (size_t)want;
	j->threads = calloc(want, sizeof(*j->threads));
	if (!j->threads)
		return 0;
	for (t = 0; t < want; t++) {
		if (pthread_create(&j->threads[t], NULL, worker, j))
			break;
		j->nthreads++;
	}
	return 0;
}

int bld_zjobs_take(struct ezfs_builder *b, struct binode *in,
		   struct bzfile **z)
{
	struct zjobs *j = b->zjobs;
	struct zslot *s;
	int err;

	*z = NULL;
	if (!j || j->consumed >= j->njobs || j->slots[j->consumed].in != in)
		return -EINVAL;
	s = &j->slots[j->consumed];
	if (!j->nthreads) {
		err = run_job(b, in, &j->cctx, z);
		j->consumed++;
		return err;
	}
	pthread_mutex_lock(&j->lock);
	while (!s->done)
		pthread_cond_wait(&j->cond, &j->lock);
	*z = s->z;
	s->z = NULL;
	err = s->err;
	j->consumed++;
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
	return err;
}

void bld_zjobs_stop(struct ezfs_builder *b)
{
	struct zjobs *j = b->zjobs;
	unsigned t;
	size_t i;

	if (!j)
		return;
	pthread_mutex_lock(&j->lock);
	j->stop = true;
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
	for (t = 0; t < j->nthreads; t++)
		pthread_join(j->threads[t], NULL);
	for (i = 0; i < j->njobs; i++)
		bld_zfile_free(j->slots[i].z);
	bld_cctx_free(b, j->cctx);
	pthread_mutex_destroy(&j->lock);
	pthread_cond_destroy(&j->cond);
	free(j->threads);
	free(j->slots);
	free(j->upto);
	free(j);
	b->zjobs = NULL;
}

/* Segments of the packed inode, compressed by several threads. */
struct mjobs {
	struct ezfs_builder *b;
	struct binode *in;
	const uint8_t *mem;
	uint64_t len, seg;
	size_t nseg, next;
	struct bzfile **res;
	int *err;
	pthread_mutex_t lock;
};

static void *mworker(void *arg)
{
	struct mjobs *m = arg;
	void *cctx = NULL;

	for (;;) {
		uint64_t off, n;
		size_t i;
		int err = 0;

		pthread_mutex_lock(&m->lock);
		i = m->next++;
		pthread_mutex_unlock(&m->lock);
		if (i >= m->nseg)
			break;
		off = (uint64_t)i * m->seg;
		n = m->len - off < m->seg ? m->len - off : m->seg;
		if (!cctx)
			cctx = bld_cctx_new(m->b, &err);
		if (cctx)
			err = bld_compress_mem(m->b, m->in, cctx, m->mem + off,
					       n, &m->res[i]);
		m->err[i] = cctx ? err : (err ? err : -ENOMEM);
		if (!reusable_ctx(m->b)) {
			bld_cctx_free(m->b, cctx);
			cctx = NULL;
		}
	}
	bld_cctx_free(m->b, cctx);
	return NULL;
}

/* Append segment s (logical start la) to z. */
static int merge_seg(struct ezfs_builder *b, struct bzfile *z,
		     const struct bzfile *s, uint64_t la)
{
	uint32_t k;

	if (z->next + s->next > z->cap) {
		uint32_t cap = z->next + s->next;
		struct bextent *e = realloc(z->ext, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		z->ext = e;
		z->cap = cap;
	}
	for (k = 0; k < s->next; k++) {
		z->ext[z->next] = s->ext[k];
		z->ext[z->next].la += la;
		z->ext[z->next].blkaddr += z->blocks;
		z->next++;
	}
	if (s->datalen) {
		uint8_t *d = realloc(z->data, z->datalen + s->datalen);

		if (!d)
			return -ENOMEM;
		z->data = d;
		memcpy(d + z->datalen, s->data, s->datalen);
		z->datalen += s->datalen;
	}
	z->blocks += s->blocks;
	(void)b;
	return 0;
}

int bld_zjobs_mem(struct ezfs_builder *b, struct binode *in,
		  const uint8_t *mem, uint64_t len, struct bzfile **out)
{
	struct mjobs m = { .b = b, .in = in, .mem = mem, .len = len };
	uint64_t pcap = (uint64_t)b->pclusterblks << b->blkszbits;
	unsigned want = b->p.workers ? b->p.workers : 1, t, started = 0;
	pthread_t *th = NULL;
	struct bzfile *z = NULL;
	size_t i;
	int err = 0;

	*out = NULL;
	/* segment boundaries are extent boundaries on block boundaries */
	m.seg = pcap * 16 > (16u << 20) ? pcap * 16 : (16u << 20);
	m.nseg = (size_t)((len + m.seg - 1) / m.seg);
	m.res = calloc(m.nseg, sizeof(*m.res));
	m.err = calloc(m.nseg, sizeof(*m.err));
	if (!m.res || !m.err) {
		err = -ENOMEM;
		goto out;
	}
	pthread_mutex_init(&m.lock, NULL);
	if (want > m.nseg)
		want = (unsigned)m.nseg;
	if (want > 1)
		th = calloc(want, sizeof(*th));
	for (t = 0; th && t < want; t++) {
		if (pthread_create(&th[t], NULL, mworker, &m))
			break;
		started++;
	}
	if (!started)
		mworker(&m);
	for (t = 0; t < started; t++)
		pthread_join(th[t], NULL);
	pthread_mutex_destroy(&m.lock);
	for (i = 0; i < m.nseg && !err; i++)
		err = m.err[i];
	if (!err)
		z = calloc(1, sizeof(*z));
	if (!err && !z)
		err = -ENOMEM;
	for (i = 0; i < m.nseg && !err; i++)
		err = merge_seg(b, z, m.res[i], (uint64_t)i * m.seg);
	if (!err) {
		z->compact = !(b->p.flags & EZFS_BUILD_LEGACY_COMPRESS);
		z->idx_size = bld_zindex_size(b, in, z->compact);
		/* keep it only if it saves space (9.14 step 7) */
		if (z->datalen + z->idx_size >= len) {
			bld_zfile_free(z);
			z = NULL;
		}
		*out = z;
		z = NULL;
	}
out:
	bld_zfile_free(z);
	for (i = 0; m.res && i < m.nseg; i++)
		bld_zfile_free(m.res[i]);
	free(m.res);
	free(m.err);
	free(th);
	return err;
}
