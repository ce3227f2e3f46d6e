/* SPDX-License-Identifier: MIT */
/*
 * zjobs.c - compress files on worker threads, hand results back in inode
 * order.
 *
 * Jobs are the compressible regular files in inode order (large files
 * as several parts, zsplit.c). The writer hands a job to the worker pool
 * (util/pool.h) while it lies within a window ahead of the consumer
 * (bounding memory); a worker compresses it into its own buffer and
 * publishes the result; the
 * writer takes results strictly in order and assigns addresses then, so
 * the image does not depend on the number of workers. A worker keeps its
 * codec contexts; after each file they give what fresh ones would
 * (ezi_bld_cctx_put), so results do not depend on which thread
 * compressed what before.
 *
 * Files stored flat (no compression, or too small for it) of at most
 * ZJ_RAW_MAX bytes are jobs too: a worker reads the file (open, read,
 * the check that it did not change) and the writer only writes its
 * bytes. A copy through the page cache is a read and a write; on one
 * thread an uncompressed image of the linux tree took 1.29 times
 * mkfs.erofs 1.9.3's time, which reads and writes on two.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "write/internal.h"
#include "util/pool.h"

struct zjobs;

struct zslot {
	struct zjobs *j;
	struct binode *in;
	struct bzfile *z;
	uint8_t *raw; /* a flat file's bytes (raw jobs) */
	bool israw;
	uint32_t part, nparts; /* a large file's parts (zsplit.c) */
	int err;
	bool done;
};

struct zjobs {
	struct ezfs_builder *b;
	pthread_mutex_t lock; /* the slots' results */
	pthread_cond_t cond;  /* the slot the writer waits for is done */
	struct zslot *slots;
	size_t njobs, next, consumed, window; /* the writer's only */
	size_t peak;			      /* most jobs queued at once */
	bool bounded;			      /* --async-queue-limit */
	uint64_t *upto;	       /* input bytes of the jobs before each */
	bool waiting;	       /* the writer waits on cond */
	struct ezi_pool *pool; /* NULL: synchronous mode */
	void **wcctx;	       /* one per worker */
	void *cctx;	       /* synchronous mode (no threads) */
};

#define ZJ_RAW_MAX (16u << 20)

/* Is in a file the writer stores flat, read ahead as a raw job? */
static bool raw_job(const struct ezfs_builder *b, const struct binode *in)
{
	return S_ISREG(in->mode) && in->size && in->size <= ZJ_RAW_MAX &&
	       !ezi_bld_compress_wanted(b, in) && !b->p.chunksize &&
	       !b->p.tar_index && !b->nrdevs;
}

/* A raw job: all of in's bytes in *raw, the source checked unchanged. */
static int read_raw(const struct ezfs_builder *b, struct binode *in,
		    uint8_t **raw)
{
	struct bsrc src;
	ssize_t n;
	int err;

	*raw = malloc((size_t)in->size);
	if (!*raw)
		return -ENOMEM;
	err = ezi_bld_src_open(b, in, &src);
	if (err)
		return err;
	n = ezi_bld_src_pread(&src, *raw, (size_t)in->size, 0);
	if (n < 0) {
		err = (int)n;
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: read: %s", in->srcpath,
			    strerror(-err));
	} else if ((uint64_t)n != in->size) {
		err = -EAGAIN;
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: file shrank while building",
			    in->srcpath);
	} else {
		err = ezi_bld_src_check(b, in, &src);
	}
	ezi_bld_src_close(&src);
	return err;
}

static int run_job(struct ezfs_builder *b, struct zslot *sl, void **cctx,
		   struct bzfile **z)
{
	struct binode *in = sl->in;
	int err = 0;

	if (sl->israw) {
		err = read_raw(b, in, &sl->raw);
		if (err) {
			free(sl->raw);
			sl->raw = NULL;
		}
		return err;
	}
	if (!*cctx) {
		*cctx = ezi_bld_cctx_new(b, &err);
		if (!*cctx && err) {
			ezi_bld_log(b, EZFS_LOG_ERROR,
				    "cannot set up the compressor: %s",
				    strerror(-err));
			return err;
		}
	}
	err = sl->nparts > 1 ? ezi_bld_zsplit_run(b, in, *cctx, sl->part,
						  sl->nparts, z)
			     : ezi_bld_compress_file(b, in, *cctx, z);
	/* the fragment waits in the spool file, not in the window */
	if (!err)
		err = ezi_bld_frag_spool(b, *z);
	if (err) {
		ezi_bld_zfile_free(*z);
		*z = NULL;
	}
	return err;
}

/*
 * A job may run ahead of the writer by `window` jobs, or further while
 * the jobs ahead hold less than ZJ_AHEAD input bytes: one large file then
 * does not leave the other workers idle.
 */
#define ZJ_AHEAD (64ull << 20)
static bool may_take(const struct zjobs *j)
{
	return j->next < j->consumed + j->window ||
	       (!j->bounded &&
		j->upto[j->next] - j->upto[j->consumed] < ZJ_AHEAD);
}

static void zjob(void *arg)
{
	struct zslot *sl = arg;
	struct zjobs *j = sl->j;
	struct bzfile *z = NULL;
	int err;

	err = run_job(j->b, sl, &j->wcctx[ezi_pool_self()], &z);
	pthread_mutex_lock(&j->lock);
	sl->z = z;
	sl->err = err;
	sl->done = true;
	if (j->waiting)
		pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->lock);
}

/* Queue every job the window now allows (the writer's thread). */
static void submit_more(struct zjobs *j)
{
	while (j->next < j->njobs && may_take(j)) {
		if (ezi_pool_submit(j->pool, zjob, &j->slots[j->next]))
			break; /* ENOMEM: take_slot runs it */
		j->next++;
		if (j->next - j->consumed > j->peak)
			j->peak = j->next - j->consumed;
	}
}

int ezi_bld_zjobs_start(struct ezfs_builder *b)
{
	struct zjobs *j;
	size_t i, n = 0;
	unsigned want;
	int err;

	want = b->p.workers ? b->p.workers : 1;
	if (b->p.alg < 0 && want <= 1)
		return 0;
	err = b->p.alg < 0 ? 0 : ezi_bld_spool_open(b);
	if (err)
		return err;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->b = b;
	for (i = 0; i < b->ninodes; i++)
		if (b->inodes[i]->size &&
		    ezi_bld_compress_wanted(b, b->inodes[i]))
			n += ezi_bld_zsplit_parts(b, b->inodes[i]);
		else if (want > 1 && raw_job(b, b->inodes[i]))
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
	for (i = 0; i < b->ninodes; i++) {
		struct binode *in = b->inodes[i];
		uint32_t k, np;

		if (want > 1 && raw_job(b, in)) {
			j->slots[j->njobs].j = j;
			j->slots[j->njobs].in = in;
			j->slots[j->njobs].israw = true;
			j->slots[j->njobs].nparts = 1;
			j->upto[j->njobs + 1] = j->upto[j->njobs] + in->size;
			j->njobs++;
			continue;
		}
		if (!in->size || !ezi_bld_compress_wanted(b, in))
			continue;
		np = ezi_bld_zsplit_parts(b, in);
		for (k = 0; k < np; k++) {
			j->slots[j->njobs].j = j;
			j->slots[j->njobs].in = in;
			j->slots[j->njobs].part = k;
			j->slots[j->njobs].nparts = np;
			j->upto[j->njobs + 1] =
				j->upto[j->njobs] + in->size / np;
			j->njobs++;
		}
	}
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->cond, NULL);
	b->zjobs = j;
	if (want <= 1 || j->njobs <= 1)
		return 0; /* synchronous */
	j->bounded = b->p.async_queue_limit > 0;
	j->window = j->bounded ? b->p.async_queue_limit : 4 * (size_t)want;
	j->wcctx = calloc(want, sizeof(*j->wcctx));
	if (!j->wcctx)
		return 0;
	j->pool = ezi_pool_new(want, 0, NULL);
	if (j->pool)
		submit_more(j);
	return 0;
}

/* The next slot's result (waited for, or computed here without
 * workers). */
static int take_slot(struct ezfs_builder *b, struct zjobs *j, struct bzfile **z)
{
	struct zslot *s = &j->slots[j->consumed];
	int err;

	if (j->consumed >= j->next) {
		/* not queued: synchronous mode, or a submission failed */
		err = run_job(b, s, &j->cctx, z);
		j->consumed++;
		j->next = j->consumed;
		if (j->pool)
			submit_more(j);
		return err;
	}
	pthread_mutex_lock(&j->lock);
	j->waiting = true;
	while (!s->done)
		pthread_cond_wait(&j->cond, &j->lock);
	j->waiting = false;
	*z = s->z;
	s->z = NULL;
	err = s->err;
	pthread_mutex_unlock(&j->lock);
	j->consumed++;
	submit_more(j);
	return err;
}

int ezi_bld_zjobs_take(struct ezfs_builder *b, struct binode *in,
		       struct bzfile **z)
{
	struct zjobs *j = b->zjobs;
	struct bzfile **parts;
	uint32_t k, np, blocks = 0;
	int err = 0, e;

	*z = NULL;
	if (!j || j->consumed >= j->njobs || j->slots[j->consumed].in != in ||
	    j->slots[j->consumed].part)
		return -EINVAL;
	np = j->slots[j->consumed].nparts;
	if (np <= 1)
		return take_slot(b, j, z);
	parts = calloc(np, sizeof(*parts));
	if (!parts)
		return -ENOMEM;
	/* every part is taken, also after an error (the slots move on) */
	for (k = 0; k < np; k++) {
		e = take_slot(b, j, &parts[k]);
		if (!e && !err)
			e = ezi_bld_zsplit_put(b, in, k, parts[k], &blocks);
		if (e && !err)
			err = e;
		/* a large file takes long: show its parts coming in */
		ezi_bld_progress(b, EZFS_BUILD_DATA, b->prog_files, b->st.files,
				 b->prog_bytes + in->size / np * (k + 1),
				 b->prog_total);
	}
	if (!err)
		err = ezi_bld_zsplit_merge(b, in, parts, np, z);
	for (k = 0; k < np; k++)
		ezi_bld_zfile_free(parts[k]);
	free(parts);
	return err;
}

int ezi_bld_zjobs_take_raw(struct ezfs_builder *b, struct binode *in,
			   uint8_t **raw)
{
	struct zjobs *j = b->zjobs;
	struct bzfile *z = NULL;
	struct zslot *s;
	int err;

	*raw = NULL;
	if (!j || j->consumed >= j->njobs || j->slots[j->consumed].in != in ||
	    !j->slots[j->consumed].israw)
		return 0;
	s = &j->slots[j->consumed];
	err = take_slot(b, j, &z);
	*raw = s->raw;
	s->raw = NULL;
	return err;
}

void ezi_bld_zjobs_stop(struct ezfs_builder *b)
{
	struct zjobs *j = b->zjobs;
	unsigned t, n;
	size_t i;

	if (!j)
		return;
	if (j->pool)
		ezi_bld_log(b, EZFS_LOG_DEBUG,
			    "compression: %u workers, %zu jobs, at most %zu "
			    "queued at once%s",
			    ezi_pool_threads(j->pool), j->njobs, j->peak,
			    j->bounded ? " (--async-queue-limit)" : "");
	/* the jobs running finish, the queued ones are dropped */
	n = ezi_pool_threads(j->pool);
	ezi_pool_destroy(j->pool);
	for (t = 0; t < n; t++)
		ezi_bld_cctx_free(b, j->wcctx[t]);
	free(j->wcctx);
	for (i = 0; i < j->njobs; i++) {
		ezi_bld_zfile_free(j->slots[i].z);
		free(j->slots[i].raw);
	}
	ezi_bld_cctx_free(b, j->cctx);
	pthread_mutex_destroy(&j->lock);
	pthread_cond_destroy(&j->cond);
	free(j->slots);
	free(j->upto);
	free(j);
	b->zjobs = NULL;
}
