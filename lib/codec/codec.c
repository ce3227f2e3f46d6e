/* SPDX-License-Identifier: MIT */
/* codec.c - codec registry, per-image context pools and decode dispatch. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <ezfs/ezfs.h>
#include "codec.h"

/* Every codec built in; a codec's index here names its pool slot. */
static const struct ezfs_codec_ops *const all_codecs[] = {
	&ezfs_codec_lz4,
	&ezfs_codec_lz4hc,
	&ezfs_codec_libdeflate,
#ifdef EZFS_HAVE_ISAL
	&ezfs_codec_isal,
#endif
	&ezfs_codec_zlib,
	&ezfs_codec_zstd,
	&ezfs_codec_lzma,
	NULL,
};

#define NCODECS (sizeof(all_codecs) / sizeof(all_codecs[0]) - 1)

/* Default decoding order; the reference codec is last. */
static const struct ezfs_codec_ops *const lz4_list[] = {
	&ezfs_codec_lz4, NULL,
};
static const struct ezfs_codec_ops *const lzma_list[] = {
	&ezfs_codec_lzma, NULL,
};
static const struct ezfs_codec_ops *const deflate_list[] = {
	&ezfs_codec_libdeflate,
#ifdef EZFS_HAVE_ISAL
	&ezfs_codec_isal,
#endif
	&ezfs_codec_zlib,
	NULL,
};
static const struct ezfs_codec_ops *const zstd_list[] = {
	&ezfs_codec_zstd, NULL,
};

static const struct ezfs_codec_ops *const *const default_lists[EZFS_ALG_MAX] = {
	[EZFS_ALG_LZ4] = lz4_list,
	[EZFS_ALG_LZMA] = lzma_list,
	[EZFS_ALG_DEFLATE] = deflate_list,
	[EZFS_ALG_ZSTD] = zstd_list,
};

const struct ezfs_codec_ops *const *ezfs_codec_list(int alg)
{
	if (alg < 0 || alg >= EZFS_ALG_MAX)
		return NULL;
	return default_lists[alg];
}

const struct ezfs_codec_ops *const *ezfs_codec_all(void)
{
	return all_codecs;
}

const struct ezfs_codec_ops *ezfs_codec_find(const char *name)
{
	size_t i;

	if (!name)
		return NULL;
	for (i = 0; i < NCODECS; i++)
		if (!strcmp(all_codecs[i]->name, name))
			return all_codecs[i];
	return NULL;
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
	/* decoding order per alg, NULL-terminated */
	const struct ezfs_codec_ops *order[EZFS_ALG_MAX][NCODECS + 1];
	int probe_err[NCODECS];
	struct ctx_slot slot[NCODECS];
};

int ezfs_codec_pool_set_list(struct ezfs_codec_pool *pool, int alg,
			     const struct ezfs_codec_ops *const *list)
{
	size_t i, n = 0;

	if (alg < 0 || alg >= EZFS_ALG_MAX)
		return -EINVAL;
	if (!list)
		list = default_lists[alg];
	for (i = 0; list[i]; i++) {
		if (list[i]->alg != alg || !list[i]->decompress ||
		    codec_index(list[i]) < 0 || i >= NCODECS)
			return -EINVAL;
	}
	for (n = 0; list[n]; n++)
		pool->order[alg][n] = list[n];
	pool->order[alg][n] = NULL;
	return 0;
}

struct ezfs_codec_pool *ezfs_codec_pool_new(const struct ezfs_codec_cfg *cfg)
{
	struct ezfs_codec_pool *pool = calloc(1, sizeof(*pool));
	size_t i;
	int alg;

	if (!pool)
		return NULL;
	if (cfg)
		pool->cfg = *cfg;
	for (alg = 0; alg < EZFS_ALG_MAX; alg++)
		ezfs_codec_pool_set_list(pool, alg, NULL);
	for (i = 0; i < NCODECS; i++) {
		const struct ezfs_codec_ops *ops = all_codecs[i];

		pool->probe_err[i] = ops->probe ? ops->probe() : 0;
		if (pthread_mutex_init(&pool->slot[i].lock, NULL)) {
			while (i--)
				pthread_mutex_destroy(&pool->slot[i].lock);
			free(pool);
			return NULL;
		}
	}
	return pool;
}

void ezfs_codec_pool_free(struct ezfs_codec_pool *pool)
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

int ezfs_codec_decompress(struct ezfs_codec_pool *pool, int alg,
			  struct ezfs_dreq *rq)
{
	const struct ezfs_codec_ops *const *list;
	int err = -EOPNOTSUPP;

	if (alg < 0 || alg >= EZFS_ALG_MAX)
		return -EOPNOTSUPP;
	if (!rq->cfg)
		rq->cfg = &pool->cfg;
	if (!rq->outlen && rq->partial)
		return 0;
	if (!rq->inlen)
		return -EUCLEAN;
	for (list = pool->order[alg]; *list; list++) {
		int i = codec_index(*list);
		void *ctx;

		if (pool->probe_err[i])
			continue;
		ctx = ctx_get(pool, (size_t)i, &err);
		if (err)
			return err;
		err = (*list)->decompress(ctx, rq);
		ctx_put(pool, (size_t)i, ctx);
		if (err != -EOPNOTSUPP)
			return err;
	}
	return err;
}
