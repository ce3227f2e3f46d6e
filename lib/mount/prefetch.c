/* SPDX-License-Identifier: MIT */
/*
 * prefetch.c - store-ahead: helper threads put decoded bytes into the
 * kernel's page cache (fuse_lowlevel_notify_store), as the kernel's own
 * EROFS driver does with the neighbours of what it decompressed.
 *
 * - A read that touches part of an encoded extent decodes the whole extent
 *   anyway: it is answered from the decoded-pcluster cache without a copy
 *   (ezfs_extent_ref), and a helper stores the rest of the extent from the
 *   same buffer. Later reads of those pages (random ones included) are
 *   page cache hits.
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
#include <sys/mman.h>
#include <sys/uio.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

#define PF_WIDEN_MAX  (8u << 20)  /* largest job or extent stored ahead */
#define PF_BUF_MAX    (16u << 20) /* extents held by queued jobs, at most */
#define PF_WINDOW     (16u << 20) /* ahead of a sequential reader, at least */
#define PF_WINDOW_MAX (32u << 20)
#define PF_CHUNK      (512u << 10) /* one helper job, at least */
#define PF_REFS                                                                \
	4			 /* extents in one answer, at most: more       \
				  * are small, read exactly */
#define PF_SMALL    (128u << 10) /* extents below: read, not borrowed */
#define PF_SEQ_MIN  (512u << 10) /* extents below: no store-ahead */
#define PF_READ_MAX (1u << 20)	 /* one read of a helper */
#define PF_AROUND                                                              \
	(256u << 10) /* a random read of small extents stores                  \
		      * at least this much after them */

/* A helper's buffer for bytes read rather than borrowed, kept between
 * jobs (a fresh one costs a page fault per 4 KiB). */
struct pf_buf {
	char *p;
	size_t cap;
};

/* Read [from, to) into the helper's buffer, in pieces of at most
 * PF_READ_MAX, and store it. */
static void store_read(struct ezfs_mount *m, struct mnode *node,
		       struct pf_buf *b, uint64_t from, uint64_t to)
{
	uint64_t pos, end;

	for (pos = from; pos < to; pos = end) {
		end = to - pos > PF_READ_MAX ? pos + PF_READ_MAX : to;
		if (b->cap < end - pos) {
			free(b->p);
			b->p = malloc(PF_READ_MAX);
			b->cap = b->p ? PF_READ_MAX : 0;
			if (!b->p)
				return;
		}
		/* Errors are for the reader to meet (and log) there. */
		if (ezfs_pread(node->ino, b->p, (size_t)(end - pos), pos) !=
		    (ssize_t)(end - pos))
			return;
		ezi_edge_store(m, node, b->p, pos, end);
	}
}

/*
 * Store [from, to) of node: large encoded extents straight from the
 * decoded-pcluster cache (shared with readers racing the helper); small
 * ones (small pclusters: 4 KiB of text decodes to ~10 KiB) and the rest
 * read in one go, decoded straight into the helper's buffer and stored in
 * one call instead of a cache entry and a store per extent. decode_only:
 * the encoded extents are only decoded into the cache, for the reader's
 * own requests to find there.
 */
static void store_range(struct ezfs_mount *m, struct mnode *node,
			struct pf_buf *b, uint64_t from, uint64_t to,
			bool decode_only)
{
	struct ezfs_extent e;
	struct ezfs_ref ref;
	uint64_t pos, end;

	for (pos = from; pos < to; pos = end) {
		if (ezfs_map(node->ino, pos, &e) || e.la + e.llen <= pos)
			return;
		if ((e.llen < PF_SMALL && !decode_only) ||
		    ezfs_extent_ref(node->ino, pos, &ref)) {
			if (!decode_only)
				store_read(m, node, b, pos, to);
			return;
		}
		end = ref.off + ref.len < to ? ref.off + ref.len : to;
		if (!decode_only) {
			ezi_st_mark(m, node, ref.off);
			ezi_edge_store(m, node,
				       (const char *)ref.data + (pos - ref.off),
				       pos, end);
		}
		ezfs_ref_put(node->ino, &ref);
	}
}

/* The end of the extent of ino (size bytes) holding pos (clamped to the
 * file), or 0 on error. */
static uint64_t node_ext_end(ezfs_inode *ino, uint64_t size, uint64_t pos)
{
	struct ezfs_extent e;

	if (ezfs_map(ino, pos, &e) || pos < e.la || pos - e.la >= e.llen)
		return 0;
	return e.la + e.llen < size ? e.la + e.llen : size;
}

static uint64_t ext_end(struct mfile *f, uint64_t pos)
{
	return node_ext_end(f->node->ino, f->size, pos);
}

/* A readaround job: its first extent, and the ones after it up to
 * PF_AROUND (mapped here, not on the worker that answered the read). */
static void around(struct pf_job *job)
{
	struct ezfs_stat st;
	uint64_t e = job->off + job->len, ne;

	ezfs_inode_stat(job->node->ino, &st);
	while (e < st.size && e - job->off < PF_AROUND) {
		ne = node_ext_end(job->node->ino, st.size, e);
		if (ne <= e || ne - job->off > PF_WIDEN_MAX)
			break;
		e = ne;
	}
	job->len = e - job->off;
}

static void pf_run(struct ezfs_mount *m, struct pf_job *job, struct pf_buf *b)
{
	uint64_t end = job->ref.off + job->ref.len, s, e;
	const char *data = job->ref.data;

	if (!job->ref.priv) {
		if (job->around)
			around(job);
		store_range(m, job->node, b, job->off, job->off + job->len,
			    job->decode_only);
		return;
	}
	/* The extent of a read, but the part that read was answered with. */
	s = job->skip > job->ref.off ? job->skip : job->ref.off;
	e = job->skip + job->skip_len < end ? job->skip + job->skip_len : end;
	if (s >= e) {
		ezi_edge_store(m, job->node, data, job->ref.off, end);
		return;
	}
	ezi_edge_store(m, job->node, data, job->ref.off, s);
	ezi_edge_store(m, job->node, data + (e - job->ref.off), e, end);
}

/*
 * Each FUSE worker's buffer for the reads it answers with a copy, kept for
 * the thread's life: a fresh buffer per read cost a page fault per 4 KiB
 * written (in a VM, 19 ms per 2 MiB of fresh pages), a fifth of the
 * daemon's time reading lz4hc 4K pclusters.
 */
struct rbuf {
	char *p;
	size_t cap;
};

static pthread_key_t rbuf_key;
static pthread_once_t rbuf_once = PTHREAD_ONCE_INIT;
static bool rbuf_ok;

static void rbuf_free(void *arg)
{
	struct rbuf *b = arg;

	free(b->p);
	free(b);
}

static void rbuf_init(void)
{
	rbuf_ok = !pthread_key_create(&rbuf_key, rbuf_free);
}

static char *rbuf_get(size_t len)
{
	const size_t huge = 2u << 20;
	struct rbuf *b;
	size_t cap;
	void *p;

	pthread_once(&rbuf_once, rbuf_init);
	if (!rbuf_ok)
		return NULL;
	b = pthread_getspecific(rbuf_key);
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b || pthread_setspecific(rbuf_key, b)) {
			free(b);
			return NULL;
		}
	}
	if (b->cap >= len)
		return b->p;
	/* in a huge page where the kernel gives one: 1 ms, against 10 ms
	 * of page faults for 1 MiB of small pages, per worker */
	cap = (len + huge - 1) & ~(huge - 1);
	if (posix_memalign(&p, huge, cap))
		return NULL;
#ifdef MADV_HUGEPAGE
	madvise(p, cap, MADV_HUGEPAGE);
#endif
	free(b->p);
	b->p = p;
	b->cap = cap;
	return p;
}

ssize_t ezi_pf_read(struct mfile *f, uint64_t from, uint64_t to, char **out)
{
	char *buf = rbuf_get(to > from ? (size_t)(to - from) : 1);
	uint64_t done = 0;
	ssize_t r = 0;

	*out = NULL;
	if (!buf)
		return -ENOMEM;
	while (from + done < to) {
		r = ezfs_pread(f->node->ino, buf + done, to - from - done,
			       from + done);
		if (r <= 0)
			break;
		done += (uint64_t)r;
	}
	if (r < 0)
		return r;
	*out = buf;
	return (ssize_t)done;
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

static void pf_done(struct ezfs_mount *m, struct pf_job *job)
{
	struct prefetcher *pf = &m->pf;

	if (job->ref.priv) {
		pthread_mutex_lock(&pf->lock);
		pf->buf_bytes -= job->ref.len;
		pthread_mutex_unlock(&pf->lock);
		ezfs_ref_put(job->node->ino, &job->ref);
	}
	ezi_it_unpin(m, job->node);
}

static void *pf_worker(void *arg)
{
	struct ezfs_mount *m = arg;
	struct prefetcher *pf = &m->pf;
	struct pf_buf buf = { NULL, 0 };
	struct pf_job job;

	pthread_mutex_lock(&pf->lock);
	for (;;) {
		while (!pf->n && !pf->stop)
			pthread_cond_wait(&pf->cond, &pf->lock);
		if (pf->stop)
			break;
		pf_pop(pf, &job);
		pthread_mutex_unlock(&pf->lock);
		pf_run(m, &job, &buf);
		pf_done(m, &job);
		pthread_mutex_lock(&pf->lock);
	}
	/* Drop what is still queued. */
	while (pf_pop(pf, &job)) {
		pthread_mutex_unlock(&pf->lock);
		pf_done(m, &job);
		pthread_mutex_lock(&pf->lock);
	}
	pthread_mutex_unlock(&pf->lock);
	free(buf.p);
	return NULL;
}

int ezi_pf_start(struct ezfs_mount *m)
{
	struct prefetcher *pf = &m->pf;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned want = ncpu < 1		? 1
			: ncpu > PF_THREADS_MAX ? PF_THREADS_MAX
						: (unsigned)ncpu;
	struct ezfs_cache_stats cs;
	int err = 0;

	pthread_mutex_init(&pf->lock, NULL);
	pthread_cond_init(&pf->cond, NULL);
	pf->head = pf->n = 0;
	pf->buf_bytes = 0;
	/* Extents held by queued jobs cannot be evicted: a quarter of the
	 * budget. */
	ezfs_cache_stats(m->img, &cs);
	pf->buf_max = cs.bytes_max / 4 < (1u << 20) ? (1u << 20)
		      : cs.bytes_max / 4 > PF_BUF_MAX
			      ? PF_BUF_MAX
			      : (size_t)(cs.bytes_max / 4);
	pf->win_max = cs.bytes_max / 2;
	pf->stop = false;
	if (ezi_edge_init(&pf->edges, cs.bytes_max)) {
		pthread_cond_destroy(&pf->cond);
		pthread_mutex_destroy(&pf->lock);
		return -ENOMEM;
	}
	for (pf->nthreads = 0; pf->nthreads < want; pf->nthreads++) {
		err = pthread_create(&pf->tid[pf->nthreads], NULL, pf_worker,
				     m);
		if (err)
			break;
	}
	if (!pf->nthreads) {
		ezi_edge_destroy(&pf->edges);
		pthread_cond_destroy(&pf->cond);
		pthread_mutex_destroy(&pf->lock);
		return -err;
	}
	pf->started = true;
	return 0;
}

void ezi_pf_stop(struct ezfs_mount *m)
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
	ezi_edge_destroy(&pf->edges);
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
	    (job->ref.priv && pf->buf_bytes + job->ref.len > pf->buf_max)) {
		pthread_mutex_unlock(&pf->lock);
		MNT_COUNT(m, jobs_dropped, 1);
		return false;
	}
	if (job->ref.priv)
		pf->buf_bytes += job->ref.len;
	ezi_it_pin(m, job->node);
	pf->q[(pf->head + pf->n) % PF_QUEUE] = *job;
	pf->n++;
	pthread_cond_signal(&pf->cond);
	pthread_mutex_unlock(&pf->lock);
	return true;
}

/* [from, to) lies in the run queued for a sequential reader (whose
 * readahead requests then need no store of the rest). */
static bool in_run(struct mfile *f, uint64_t from, uint64_t to)
{
	bool in;

	pthread_mutex_lock(&f->lock);
	in = from >= f->ezi_pf_start && to <= f->pf_end;
	pthread_mutex_unlock(&f->lock);
	return in;
}

/* Queue the store of ref's extent but [off, off + len) (answered); false
 * if not taken. */
static bool store_rest(struct ezfs_mount *m, struct mnode *node,
		       struct ezfs_ref *ref, uint64_t off, uint64_t len)
{
	struct pf_job job = {
		.node = node,
		.ref = *ref,
		.skip = off,
		.skip_len = len,
	};

	return pf_queue(m, &job);
}

/*
 * Small extents (pclusters up to 64 KiB: text decodes to a few hundred
 * KiB) are read ahead by the kernel's readahead alone, its requests spread
 * over the FUSE workers: store-ahead by the helpers then raced those
 * requests and decoded the same extents twice (zstd 16 KiB pclusters: 336
 * MiB/s with the helpers, 883 without, with a 1 MiB readahead window).
 * Extents of PF_SEQ_MIN and more (256 KiB pclusters and up) take whole
 * decodes that only the helpers run in parallel.
 */
void ezi_pf_open(struct ezfs_mount *m, struct mfile *f)
{
	struct ezfs_extent e;

	f->small = !f->compressed || !f->size ||
		   ezfs_map(f->node->ino, f->size / 2, &e) ||
		   e.llen < PF_SEQ_MIN;
}

bool ezi_pf_answer(struct ezfs_mount *m, struct mfile *f, fuse_req_t req,
		   uint64_t off, uint64_t len)
{
	struct ezfs_ref refs[PF_REFS];
	struct iovec iov[PF_REFS];
	uint64_t pos = off, end = off + len, e;
	struct mnode *node = f->node;
	struct pf_job next = { .node = node };
	unsigned n = 0, i;
	bool rest;

	/* Small extents: only a lone page (a random read) has its extents
	 * decoded whole and stored; readahead requests (larger) are read
	 * exactly and the kernel reads the rest ahead itself. */
	if (!m->pf.started || !f->compressed || !len ||
	    (f->small && len > m->pf.edges.page))
		return false;
	/* Count the extents first: a reference decodes its extent whole,
	 * and a read that then went the exact way decoded those again. */
	for (e = off; e < end && n < PF_REFS; n++) {
		struct ezfs_extent x;

		if (ezfs_map(node->ino, e, &x) || x.la + x.llen <= e)
			return false;
		e = x.la + x.llen;
	}
	if (e < end)
		return false;
	/* A read across pclusters asks for all of them at once: one I/O
	 * where they are adjacent, not one after the other (lz4hc 4 KiB
	 * pclusters hold about 10 KiB of text: 4 random 4 KiB reads in 10
	 * need two). */
	if (n > 1 && len <= m->pf.edges.page)
		ezfs_fetch_ahead(node->ino, off, e - off);
	for (n = 0; pos < end && n < PF_REFS; n++) {
		if (ezfs_extent_ref(node->ino, pos, &refs[n]))
			break;
		e = refs[n].off + refs[n].len;
		iov[n].iov_base = (char *)refs[n].data + (pos - refs[n].off);
		iov[n].iov_len = (size_t)((e < end ? e : end) - pos);
		pos = e;
	}
	if (!n || pos < end) {
		/* Not all encoded (or an error): the caller reads it. */
		while (n)
			ezfs_ref_put(node->ino, &refs[--n]);
		return false;
	}
	/* The rest of these extents goes to the page cache, unless a
	 * sequential run covers it or the extent was stored before (the
	 * inode's stored set, checked per extent below). */
	rest = !in_run(f, off, end);
	/*
	 * A lone page (a random read): the next extent is decoded and stored
	 * too, on a helper while this reader goes on (readaround, as the
	 * kernel's cache_strategy=readaround does for compressed pages).
	 * Random readers otherwise decode one extent at a time on one CPU
	 * (zstd 1 MiB pclusters: 4.8 ms each). Small extents gain too (fio
	 * randread deflate 4K/16K: 142/341 MiB/s with it, 97/219 without),
	 * and more with more of them: the extents that follow, PF_AROUND of
	 * them at least, like the kernel's read-around of mmap faults. A
	 * page stored is a FUSE request saved, and random readers leave the
	 * CPUs idle while they wait for the disk (lz4hc 4 KiB pclusters of
	 * text, cold fio randread: one extent 76 MiB/s, 128 KiB 228, 256
	 * KiB 322; --io_size=5%: 21, 26, 36-49).
	 */
	if (rest && len <= m->pf.edges.page && pos < f->size) {
		e = ext_end(f, pos);
		if (e > pos && e - pos <= PF_WIDEN_MAX &&
		    !ezi_st_mark(m, node, pos)) {
			next.off = pos;
			next.len = e - pos;
			next.around = true;
		}
	}
	/* Once answered, the file may be released at any time: f is not
	 * used after the reply, its node is pinned through it. */
	ezi_pf_seq_hint(m, f, off, len, pos);
	MNT_COUNT(m, reads_direct, 1);
	ezi_it_pin(m, node);
	/* What the reply carried is in the page cache now: counted, so that
	 * an extent a sequential reader was answered with whole leaves the
	 * decoded-pcluster cache, its buffer taking the next decode (stores
	 * are not counted: a random reader's extents stay, for the requests
	 * of edge pages that come before the neighbour does). */
	if (!fuse_reply_iov(req, iov, (int)n))
		for (i = 0; i < n; i++)
			ezfs_ref_served(node->ino, &refs[i], iov[i].iov_len);
	for (i = 0; i < n; i++) {
		if (!rest ||
		    (refs[i].off >= off && refs[i].off + refs[i].len <= end) ||
		    ezi_st_mark(m, node, refs[i].off) ||
		    !store_rest(m, node, &refs[i], off, len))
			ezfs_ref_put(node->ino, &refs[i]);
	}
	if (next.len)
		pf_queue(m, &next);
	ezi_it_unpin(m, node);
	return true;
}

void ezi_pf_seq_hint(struct ezfs_mount *m, struct mfile *f, uint64_t off,
		     uint64_t len, uint64_t decoded_end)
{
	uint64_t end = off + len, from = 0, to = 0, pos, jend, win;
	struct pf_job job = { .node = f->node, .decode_only = true };

	if (!m->pf.started || !f->compressed)
		return;
	/* Eight times the rest of the extent just decoded, 16 MiB at
	 * least: with only two extents (1 MiB pclusters decode to ~4 MiB of
	 * text) ahead, the helpers sat idle between top-ups. */
	win = 8 * (decoded_end - off);
	win = win < PF_WINDOW	    ? PF_WINDOW
	      : win > PF_WINDOW_MAX ? PF_WINDOW_MAX
				    : win;
	/* Decoded ahead into the cache: half of it at most, else the window
	 * evicts itself before the reader gets there. */
	if (win > m->pf.win_max)
		win = m->pf.win_max;
	pthread_mutex_lock(&f->lock);
	/* Sequential: this read starts where the last ended, or where the
	 * pages stored ahead ran out (reads of those never came here). */
	if (!f->small && ((off == f->last_end && (off || len > 4096)) ||
			  (off > f->last_end && off <= f->pf_end))) {
		from = f->pf_end > decoded_end ? f->pf_end : decoded_end;
		to = end + win < f->size ? end + win : f->size;
		/* Top up when a quarter of the window is missing. */
		if (f->pf_end > end + win * 3 / 4 || from >= to)
			from = to = 0;
	}
	f->last_end = end;
	pthread_mutex_unlock(&f->lock);

	/* Jobs of whole extents, at least PF_CHUNK each, run in parallel. */
	for (pos = from; pos < to; pos = jend) {
		jend = pos + PF_CHUNK < to ? pos + PF_CHUNK : to;
		jend = ext_end(f, jend - 1);
		if (!jend || jend - pos > PF_WIDEN_MAX)
			break;
		job.off = pos;
		job.len = jend - pos;
		if (!pf_queue(m, &job))
			break;
	}
	if (pos > from) {
		pthread_mutex_lock(&f->lock);
		if (from != f->pf_end) /* a new run */
			f->ezi_pf_start = from;
		if (pos > f->pf_end || from != f->pf_end)
			f->pf_end = pos;
		pthread_mutex_unlock(&f->lock);
	}
}
