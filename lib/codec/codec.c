/* SPDX-License-Identifier: MIT */
/* codec.c - codec registry, per-image context pools and decode dispatch. */
#include <errno.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <ezfs/ezfs.h>
#include "codec.h"

/* Every codec built in; a codec's index here names its pool slot. */
static const struct ezfs_codec_ops *const all_codecs[] = {
	&ezi_codec_lz4,	       &ezi_codec_lz4hc,
#ifdef EZFS_HAVE_LIBDEFLATE
	&ezi_codec_libdeflate,
#endif
#ifdef EZFS_HAVE_ISAL
	&ezi_codec_isal,
#endif
	&ezi_codec_zlib,       &ezi_codec_ezdeflate,
#ifdef EZFS_HAVE_ZSTD
	&ezi_codec_zstd,
#endif
	&ezi_codec_lzma,       NULL,
};

#define NCODECS (sizeof(all_codecs) / sizeof(all_codecs[0]) - 1)

/* Default decoding order; the reference codec is last. */
static const struct ezfs_codec_ops *const lz4_list[] = {
	&ezi_codec_lz4,
	NULL,
};
static const struct ezfs_codec_ops *const lzma_list[] = {
	&ezi_codec_lzma,
	NULL,
};
static const struct ezfs_codec_ops *const deflate_list[] = {
#ifdef EZFS_HAVE_LIBDEFLATE
	&ezi_codec_libdeflate,
#endif
#ifdef EZFS_HAVE_ISAL
	&ezi_codec_isal,
#endif
	&ezi_codec_zlib,
	NULL,
};
/* built without libzstd: no engine, the algorithm is not read */
static const struct ezfs_codec_ops *const zstd_list[] = {
#ifdef EZFS_HAVE_ZSTD
	&ezi_codec_zstd,
#endif
	NULL,
};

static const struct ezfs_codec_ops *const *const default_lists[EZFS_ALG_MAX] = {
	[EZFS_ALG_LZ4] = lz4_list,
	[EZFS_ALG_LZMA] = lzma_list,
	[EZFS_ALG_DEFLATE] = deflate_list,
	[EZFS_ALG_ZSTD] = zstd_list,
};

const struct ezfs_codec_ops *const *ezi_codec_list(int alg)
{
	if (alg < 0 || alg >= EZFS_ALG_MAX)
		return NULL;
	return default_lists[alg];
}

const struct ezfs_codec_ops *const *ezi_codec_all(void)
{
	return all_codecs;
}

const struct ezfs_codec_ops *ezi_codec_find(const char *name)
{
	size_t i;

	if (!name)
		return NULL;
	for (i = 0; i < NCODECS; i++)
		if (!strcmp(all_codecs[i]->name, name))
			return all_codecs[i];
	return NULL;
}

int ezfs_engine_library(const char *engine, const char **lib,
			const char **version)
{
	const struct ezfs_codec_ops *c = ezi_codec_find(engine);

	if (!c)
		return -ENOENT;
	if (lib)
		*lib = c->lib;
	if (version)
		*version = c->version ? c->version() : NULL;
	return 0;
}

static int codec_index(const struct ezfs_codec_ops *ops)
{
	size_t i;

	for (i = 0; i < NCODECS; i++)
		if (all_codecs[i] == ops)
			return (int)i;
	return -1;
}

/* ---- pools ---- */

/* Idle contexts of one codec: a mutex-protected stack. */
struct ctx_slot {
	pthread_mutex_t lock;
	void **idle;
	size_t nidle, cap;
};

struct ezfs_codec_pool {
	struct ezfs_codec_cfg cfg;
	struct ctx_slot slot[NCODECS];
};

const struct ezfs_codec_ops *ezi_codec_reference(int alg)
{
	const struct ezfs_codec_ops *const *l = ezi_codec_list(alg);

	if (!l || !*l)
		return NULL;
	while (l[1])
		l++;
	return *l;
}

struct ezfs_codec_pool *ezi_codec_pool_new(const struct ezfs_codec_cfg *cfg)
{
	struct ezfs_codec_pool *pool = calloc(1, sizeof(*pool));
	size_t i;

	if (!pool)
		return NULL;
	if (cfg)
		pool->cfg = *cfg;
	for (i = 0; i < NCODECS; i++) {
		if (pthread_mutex_init(&pool->slot[i].lock, NULL)) {
			while (i--)
				pthread_mutex_destroy(&pool->slot[i].lock);
			free(pool);
			return NULL;
		}
	}
	return pool;
}

void ezi_codec_pool_free(struct ezfs_codec_pool *pool)
{
	size_t i, j;

	if (!pool)
		return;
	for (i = 0; i < NCODECS; i++) {
		struct ctx_slot *s = &pool->slot[i];

		for (j = 0; j < s->nidle; j++)
			all_codecs[i]->ctx_free(s->idle[j]);
		free(s->idle);
		pthread_mutex_destroy(&s->lock);
	}
	free(pool);
}

/* Take an idle context of codec i, or make one. */
static void *ctx_get(struct ezfs_codec_pool *pool, size_t i, int *err)
{
	struct ctx_slot *s = &pool->slot[i];
	void *ctx = NULL;

	*err = 0;
	if (!all_codecs[i]->ctx_new)
		return NULL;
	pthread_mutex_lock(&s->lock);
	if (s->nidle)
		ctx = s->idle[--s->nidle];
	pthread_mutex_unlock(&s->lock);
	if (ctx)
		return ctx;
	return all_codecs[i]->ctx_new(err);
}

/* Give a context back; free it if the stack cannot grow. */
static void ctx_put(struct ezfs_codec_pool *pool, size_t i, void *ctx)
{
	struct ctx_slot *s = &pool->slot[i];

	if (!ctx)
		return;
	pthread_mutex_lock(&s->lock);
	if (s->nidle == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 4;
		void **p = realloc(s->idle, cap * sizeof(*p));

		if (!p) {
			pthread_mutex_unlock(&s->lock);
			all_codecs[i]->ctx_free(ctx);
			return;
		}
		s->idle = p;
		s->cap = cap;
	}
	s->idle[s->nidle++] = ctx;
	pthread_mutex_unlock(&s->lock);
}

/*
 * Checks every request goes through: the pool's config by default, nothing
 * to do for an empty partial request (1), none without input (-EUCLEAN).
 */
static int dreq_start(struct ezfs_codec_pool *pool, struct ezfs_dreq *rq)
{
	if (!rq->cfg)
		rq->cfg = &pool->cfg;
	if (!rq->outlen && rq->partial)
		return 1;
	if (!rq->inlen)
		return -EUCLEAN;
	return 0;
}

int ezi_codec_decompress_one(struct ezfs_codec_pool *pool,
			     const struct ezfs_codec_ops *ops,
			     struct ezfs_dreq *rq)
{
	int i = codec_index(ops);
	void *ctx;
	int err;

	if (!ops->decompress)
		return -EOPNOTSUPP;
	err = dreq_start(pool, rq);
	if (err)
		return err < 0 ? err : 0;
	if (i < 0) {
		ctx = ops->ctx_new ? ops->ctx_new(&err) : NULL;
		if (ops->ctx_new && err)
			return err;
		err = ops->decompress(ctx, rq);
		if (ops->ctx_free)
			ops->ctx_free(ctx);
		return err;
	}
	ctx = ctx_get(pool, (size_t)i, &err);
	if (err)
		return err;
	err = ops->decompress(ctx, rq);
	ctx_put(pool, (size_t)i, ctx);
	return err;
}

/* ---- fixed-output search for libdeflate and zstd ---- */

#define FIT_MAX_TRIALS 16

void ezi_codec_fit_free(struct ezfs_fit *f)
{
	free(f->buf);
	f->buf = NULL;
	f->bufcap = 0;
}

void ezi_codec_fit_reset(struct ezfs_fit *f)
{
	f->ratio_q8 = 0;
	f->est_k = 0;
}

/* Scratch room for the output of len bytes. */
static int fit_room(struct ezfs_fit *f, size_t len)
{
	size_t need = f->bound(f->arg, len);

	if (need > f->bufcap) {
		uint8_t *p = realloc(f->buf, need);

		if (!p)
			return -ENOMEM;
		f->buf = p;
		f->bufcap = need;
	}
	return 0;
}

/* Run one trial of len bytes into the scratch buffer. */
static long fit_trial(struct ezfs_fit *f, const uint8_t *in, size_t len)
{
	if (fit_room(f, len))
		return -ENOMEM;
	f->trials++;
	return f->trial(f->arg, in, len, f->buf, f->bufcap);
}

/* The cheap estimate of len bytes (same scratch buffer), or < 0. */
static long fit_estimate(struct ezfs_fit *f, const uint8_t *in, size_t len)
{
	if (fit_room(f, len))
		return -ENOMEM;
	return f->estimate(f->arg, in, len, f->buf, f->bufcap);
}

/* a * b / c, saturated; precise enough for the sizes at hand */
static size_t muldiv(size_t a, size_t b, size_t c)
{
	double r = (double)a * (double)b / (double)(c ? c : 1);

	return r >= (double)SIZE_MAX ? SIZE_MAX : (size_t)r;
}

/*
 * The compressed size s(L) of a prefix of length L grows almost linearly,
 * with small steps at block and table decisions, but its slope changes
 * where the data changes character (zeros, then random bytes). Root finding
 * on s(L) = target (outcap - slack / 2, so that most guesses land in the
 * accepted band [outcap - slack, outcap]):
 *  - first guess: the previous call's ratio (4:1 without one), aimed by
 *    a cheap trial (f->estimate) of that range when the codec has one;
 *  - while everything tried fits: the secant through the last two fitting
 *    trials (the local slope), else the line from the origin, at most
 *    doubling L since a far overshoot costs a long trial;
 *  - once a trial does not fit: regula falsi between the longest fitting
 *    trial (or the origin, s(0) = 0) and the shortest non-fitting one, with
 *    the Illinois rule (the retained end counts half after two steps on the
 *    same side), which stays fast on convex or concave stretches where
 *    plain regula falsi creeps.
 * Invariants: lo fits (its stream is in out; lo = 0: none yet), hi does not
 * (hi = n + 1: not tried), each guess lies strictly between them.
 *
 * libdeflate level 9 at 64K on source text, filled to 1/256: 3.2 trials
 * per pcluster from the previous ratio alone, 2.3 with a level-1
 * estimate first (each ~1/7 of a trial): 256 MiB in 22 instead of 25 CPU s.
 *
 * Measured (test_codec bench, CPU time, Debian 12 VM, default levels,
 * pcluster 4K / 16K / 64K, with slack and tolerance 1/256, pclusters
 * filled to 99.3-99.8 %; the 1/65536 now used costs ~1.5x the trials,
 * and mkfs images of text shrink by ~0.2 %):
 *   trials per call: 2.0 on text, 2.6-3.2 on /usr/bin and a tar of docs,
 *   4.4 on a pathological mix of 8 KiB runs of text, zeros and random
 *   (bisection to the same tolerance would need ~8-12).
 *   zstd -3:      65-75 MB/s on /usr/bin, 190-250 MB/s on text
 *   libdeflate 6: 26 MB/s on /usr/bin, 38-45 MB/s on text
 *   (for scale: lz4 destsize 490-550, lz4hc-9 36-77, lzma-6 4-5 MB/s on
 *   /usr/bin, all native fixed-output encoders).
 */
int ezi_codec_fit(struct ezfs_fit *f, const uint8_t *in, size_t *inlen,
		  uint8_t *out, size_t outcap)
{
	size_t n = *inlen, lo = 0, lo_size = 0, hi = n + 1, hi_size = 0;
	size_t plo = 0, plo_size = 0; /* the fitting trial before lo */
	/* as full as mkfs.erofs' bisection (an image is never larger), or
	 * within 1 / 2^slack_shift of outcap */
	size_t slack = outcap >> (f->slack_shift ? f->slack_shift : 16);
	double target = (double)outcap - (double)(slack / 2);
	double flo = -target, fhi = 0, gd; /* s - target at lo, hi */
	double erate = 0;		   /* cheap output / input */
	int trials = 0, last_side = 0;
	size_t g;

	if (!n)
		return -EINVAL;
	f->calls++;
	if (f->ratio_q8)
		g = muldiv(outcap - slack / 2, f->ratio_q8, 256);
	else
		g = 4 * outcap;
	/*
	 * The previous pcluster's ratio misses this one's by 5-12 % on
	 * source text, and each miss costs a whole trial. A cheap encoding of
	 * the guessed range tells how this data compresses: its output rate
	 * times the real / cheap rate of the last pcluster aims the first
	 * real trial.
	 */
	if (f->estimate && g < n) {
		long e = fit_estimate(f, in, g);

		if (e > 0) {
			erate = (double)e / (double)g;
			if (f->est_k > 0) {
				gd = target / (erate * f->est_k);
				g = gd < 1	     ? 1
				    : gd > (double)n ? n
						     : (size_t)gd;
			}
		}
	}
	for (;;) {
		/* close enough; with nothing fitting, down to one byte */
		size_t tol = !lo ? 1 : lo >> 16 > 4 ? lo >> 16 : 4;
		long s;

		if (g >= hi)
			g = hi - 1;
		if (g <= lo)
			g = lo + 1;
		s = fit_trial(f, in, g);
		if (s < 0)
			return (int)s;
		trials++;
		if ((size_t)s <= outcap) {
			plo = lo;
			plo_size = lo_size;
			lo = g;
			lo_size = (size_t)s;
			flo = (double)lo_size - target;
			memcpy(out, f->buf, lo_size);
			if (last_side > 0)
				fhi /= 2;
			last_side = 1;
		} else {
			hi = g;
			hi_size = (size_t)s;
			fhi = (double)hi_size - target;
			if (last_side < 0)
				flo /= 2;
			last_side = -1;
		}
		if (lo == n || hi - lo <= tol)
			break;
		if (trials >= FIT_MAX_TRIALS && (lo || hi <= 1))
			break;
		if (lo && lo_size + slack >= outcap)
			break; /* output full */

		if (hi <= n) {
			/* flo < 0 < fhi here */
			gd = (double)lo +
			     (double)(hi - lo) * -flo / (fhi - flo);
			if (trials >= FIT_MAX_TRIALS)
				gd = (double)(lo + (hi - lo) / 2);
		} else {
			if (plo && plo_size < lo_size)
				gd = (double)lo +
				     (target - (double)lo_size) *
					     (double)(lo - plo) /
					     (double)(lo_size - plo_size);
			else
				gd = (double)lo * target / (double)lo_size;
			if (gd > 2.0 * (double)lo)
				gd = 2.0 * (double)lo;
		}
		g = gd < 1 ? 1 : gd > (double)n ? n : (size_t)gd;
	}
	if (!lo) {
		*inlen = 0;
		return -ENOSPC;
	}
	if (lo < n) { /* a ratio limited by the output, not by the input */
		size_t r = muldiv(lo, 256, lo_size);

		f->ratio_q8 = r < UINT32_MAX ? (uint32_t)r : UINT32_MAX;
		if (erate > 0)
			f->est_k = (double)lo_size / (double)lo / erate;
	}
	*inlen = lo;
	return (int)lo_size;
}

/* The stub of a codec library this build is without (EZI_CODEC_STUB). */
void *ezi_codec_stub_cctx_new(int level, const struct ezfs_codec_cfg *cfg,
			      int *err)
{
	(void)level;
	(void)cfg;
	*err = -EOPNOTSUPP;
	return NULL;
}

void ezi_codec_stub_cctx_free(void *cctx)
{
	(void)cctx;
}

int ezi_codec_stub_compress(void *cctx, const uint8_t *in, size_t *inlen,
			    uint8_t *out, size_t outcap)
{
	(void)cctx;
	(void)in;
	(void)inlen;
	(void)out;
	(void)outcap;
	return -EOPNOTSUPP;
}
