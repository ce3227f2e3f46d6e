/* SPDX-License-Identifier: MIT */
/*
 * zsegs.c - compress the packed inode (9.10) in segments on worker
 * threads, while its bytes are still being appended.
 *
 * The packed inode is cut into segments of a fixed size (16 MiB, or 16
 * pclusters when larger); each segment is compressed on its own, so its
 * bytes depend only on its input, never on the number of workers. The
 * writer appends fragments one by one (fragments.c, a single thread: the
 * order and the dedupe decisions are sequential), and a worker takes a
 * segment as soon as the writer has gone past its end. The last, partial
 * segment waits for ezi_bld_zsegs_finish. Without this the workers sat idle
 * while the writer placed the fragments (linux tree, lz4hc-12 64K with
 * fragments: ~3.5 s on one CPU).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "write/internal.h"

struct zsegs {
	struct ezfs_builder *b;
	struct binode cfg; /* zeroed: default algorithm and pcluster */
	const uint8_t *mem;
	uint64_t seg, avail, len;
	size_t maxseg, next, signaled;
	bool final, stop;
	struct bzfile **res;
	int *err;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t *th;
	unsigned nth;
};

/* Next segment to compress, or maxseg when there is none (yet). */
static size_t seg_ready(const struct zsegs *s)
{
	uint64_t start = (uint64_t)s->next * s->seg;

	if (s->next >= s->maxseg)
		return s->maxseg;
	if (s->final)
		return start < s->len ? s->next : s->maxseg;
	return start + s->seg <= s->avail ? s->next : s->maxseg;
}

/* Bytes of segment i (under the lock: a segment taken before the end is
 * known is a full one). */
static uint64_t seg_len(const struct zsegs *s, size_t i)
{
	uint64_t off = (uint64_t)i * s->seg;

	return s->final && s->len - off < s->seg ? s->len - off : s->seg;
}

static void seg_run(struct zsegs *s, size_t i, uint64_t n, void **cctx)
{
	uint64_t off = (uint64_t)i * s->seg;
	int err = 0;

	if (!*cctx)
		*cctx = ezi_bld_cctx_new(s->b, &err);
	if (*cctx)
		err = ezi_bld_compress_mem(s->b, &s->cfg, *cctx, s->mem + off, n,
				       &s->res[i]);
	else if (!err)
		err = -ENOMEM;
	s->err[i] = err;
	if (!ezi_bld_ctx_reusable(s->b)) {
		ezi_bld_cctx_free(s->b, *cctx);
		*cctx = NULL;
	}
}

static void *seg_worker(void *arg)
{
	struct zsegs *s = arg;
	void *cctx = NULL;
	uint64_t n;
	size_t i = 0;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		while (!s->stop && (i = seg_ready(s)) == s->maxseg && !s->final)
			pthread_cond_wait(&s->cond, &s->lock);
		if (s->stop || i == s->maxseg)
			break;
		s->next++;
		n = seg_len(s, i);
		pthread_mutex_unlock(&s->lock);
		seg_run(s, i, n, &cctx);
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	ezi_bld_cctx_free(s->b, cctx);
	return NULL;
}

int ezi_bld_zsegs_start(struct ezfs_builder *b, const uint8_t *mem, uint64_t maxlen)
{
	uint64_t pcap = (uint64_t)b->pclusterblks << b->blkszbits;
	unsigned want = b->p.workers ? b->p.workers : 1, t;
	struct zsegs *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->b = b;
	s->mem = mem;
	/* segment boundaries are extent boundaries on block boundaries */
	s->seg = pcap * 16 > (16u << 20) ? pcap * 16 : (16u << 20);
	s->maxseg = (size_t)((maxlen + s->seg - 1) / s->seg);
	s->res = calloc(s->maxseg + 1, sizeof(*s->res));
	s->err = calloc(s->maxseg + 1, sizeof(*s->err));
	if (!s->res || !s->err) {
		free(s->res);
		free(s->err);
		free(s);
		return -ENOMEM;
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	b->zsegs = s;
	if (want > s->maxseg)
		want = (unsigned)s->maxseg;
	if (want <= 1)
		return 0; /* ezi_bld_zsegs_finish compresses them */
	s->th = calloc(want, sizeof(*s->th));
	for (t = 0; s->th && t < want; t++) {
		if (pthread_create(&s->th[t], NULL, seg_worker, s))
			break;
		s->nth++;
	}
	return 0;
}

void ezi_bld_zsegs_feed(struct ezfs_builder *b, uint64_t avail)
{
	struct zsegs *s = b->zsegs;

	/* wake the workers only when a segment is complete */
	if (!s || !s->nth || avail / s->seg <= s->signaled)
		return;
	pthread_mutex_lock(&s->lock);
	s->avail = avail;
	s->signaled = (size_t)(avail / s->seg);
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static void zsegs_end(struct zsegs *s, bool stop)
{
	unsigned t;

	pthread_mutex_lock(&s->lock);
	s->stop = stop;
	s->final = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	for (t = 0; t < s->nth; t++)
		pthread_join(s->th[t], NULL);
	s->nth = 0;
}

void ezi_bld_zsegs_free(struct ezfs_builder *b)
{
	struct zsegs *s = b->zsegs;
	size_t i;

	if (!s)
		return;
	zsegs_end(s, true);
	for (i = 0; i <= s->maxseg; i++)
		ezi_bld_zfile_free(s->res[i]);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s->th);
	free(s->res);
	free(s->err);
	free(s);
	b->zsegs = NULL;
}

int ezi_bld_zsegs_finish(struct ezfs_builder *b, struct binode *in, uint64_t len,
		     struct bzfile **out)
{
	struct zsegs *s = b->zsegs;
	struct bzfile *z = NULL;
	void *cctx = NULL;
	size_t i, nseg;
	int err = 0;

	*out = NULL;
	if (!s)
		return -EINVAL;
	nseg = (size_t)((len + s->seg - 1) / s->seg);
	if (nseg > s->maxseg) {
		ezi_bld_zsegs_free(b);
		return -EOVERFLOW; /* more than announced */
	}
	s->len = len;
	zsegs_end(s, false);
	/* without workers (or if none could start): here, in order */
	for (i = s->next; i < nseg; i++)
		seg_run(s, i, seg_len(s, i), &cctx);
	ezi_bld_cctx_free(b, cctx);
	for (i = 0; i < nseg && !err; i++)
		err = s->err[i];
	if (!err)
		z = calloc(1, sizeof(*z));
	if (!err && !z)
		err = -ENOMEM;
	for (i = 0; i < nseg && !err; i++)
		err = ezi_bld_zfile_append(z, s->res[i], (uint64_t)i * s->seg);
	if (!err) {
		z->compact = !(b->p.flags & EZFS_BUILD_LEGACY_COMPRESS);
		z->idx_size = ezi_bld_zindex_size(b, in, z->compact);
		/* keep it only if it saves space (9.14 step 7) */
		if (z->datalen + z->idx_size >= len) {
			ezi_bld_zfile_free(z);
			z = NULL;
		}
		*out = z;
		z = NULL;
	}
	ezi_bld_zfile_free(z);
	ezi_bld_zsegs_free(b);
	return err;
}
