/* SPDX-License-Identifier: MIT */
/*
 * accel.c - the image's engine state (lib/engine), made on first use so
 * that a process that forks after opening (a daemonizing mount) starts the
 * EZFS_DISPATCH workers in the process that reads; the public
 * ezfs_image_* engine calls of ezfs/engine.h.
 */
#include "engine/engine.h"
#include "read/internal.h"

struct ezfs_estate *ezi_image_engine(ezfs_image *img)
{
	struct ezfs_estate *es =
		__atomic_load_n(&img->engine, __ATOMIC_ACQUIRE);
	struct ezfs_estate *none = NULL;

	if (es || !img->codecs)
		return es;
	es = ezi_estate_new(img->codecs, &img->logger);
	if (!es)
		return NULL;
	if (!__atomic_compare_exchange_n(&img->engine, &none, es, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		ezi_estate_free(es); /* another thread's won */
		return none;
	}
	ezi_estate_start_env(es);
	return es;
}

int ezfs_image_set_accel(ezfs_image *img, const char *spec)
{
	struct ezfs_estate *es = ezi_image_engine(img);

	return es ? ezi_es_set_accel(es, spec) : -ENOMEM;
}

int ezfs_image_get_accel(ezfs_image *img, char *buf, size_t size)
{
	struct ezfs_estate *es = ezi_image_engine(img);

	return es ? ezi_es_get_accel(es, buf, size) : -ENOMEM;
}

int ezfs_image_set_strict_accel(ezfs_image *img, int strict)
{
	struct ezfs_estate *es = ezi_image_engine(img);

	return es ? ezi_es_set_strict(es, strict) : -ENOMEM;
}

int ezfs_image_get_strict_accel(ezfs_image *img)
{
	struct ezfs_estate *es = ezi_image_engine(img);

	return es ? ezi_es_get_strict(es) : -ENOMEM;
}

int ezfs_image_set_dispatch(ezfs_image *img, int mode, unsigned nthreads)
{
	struct ezfs_estate *es = ezi_image_engine(img);

	return es ? ezi_es_set_dispatch(es, mode, nthreads) : -ENOMEM;
}

int ezfs_image_dispatch_info(ezfs_image *img, struct ezfs_dispatch_info *di)
{
	struct ezfs_estate *es = ezi_image_engine(img);

	if (!es) {
		memset(di, 0, sizeof(*di));
		return -ENOMEM;
	}
	return ezi_es_dispatch_info(es, di);
}

int ezfs_image_engine_stats(ezfs_image *img, struct ezfs_engine_stats *st,
			    size_t n)
{
	struct ezfs_estate *es = ezi_image_engine(img);

	return es ? ezi_es_engine_stats(es, st, n) : -ENOMEM;
}

int ezfs_image_latency_stats(ezfs_image *img, struct ezfs_latency_stats *ls)
{
	struct ezfs_estate *es = ezi_image_engine(img);

	if (!es) {
		memset(ls, 0, sizeof(*ls));
		return -ENOMEM;
	}
	return ezi_es_latency_stats(es, ls);
}

void ezfs_image_engine_reset(ezfs_image *img)
{
	struct ezfs_estate *es = ezi_image_engine(img);

	if (es)
		ezi_es_reset(es);
}
