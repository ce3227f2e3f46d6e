/* SPDX-License-Identifier: MIT */
/*
 * bench/eng.c - engines, dispatch modes and the competing CPU load: the
 * configuration an image instance is measured under.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "ezfs/engine.h"
#include "bench/internal.h"
#include "util/pool.h"

const char *const ezi_bench_load_names[EZFS_BENCH_NLOADS] = { "none", "busy" };

/* Engine name -> its description (0), or -ENOENT. */
static int engine_by_name(const char *name, struct ezfs_engine_info *info)
{
	unsigned i;

	for (i = 0; !ezfs_engine_get_info(i, info); i++)
		if (!strcmp(info->name, name))
			return 0;
	return -ENOENT;
}

/*
 * The engines of the engines list that decode alg (usable here), in list
 * order, into names[]; "default" when the list has none for alg (or there
 * is no list). With note, engines that cannot run here are logged.
 */
int ezi_bench_engines_for(const ezfs_bench *b, int alg, char names[][24],
			  int max, int note)
{
	char *dup = b->p.engines ? strdup(b->p.engines) : NULL, *tok,
	     *save = NULL;
	struct ezfs_engine_info info;
	int n = 0;

	for (tok = dup ? strtok_r(dup, ", ", &save) : NULL; tok && n < max;
	     tok = strtok_r(NULL, ", ", &save)) {
		if (!strcmp(tok, "default")) {
			snprintf(names[n++], 24, "%s", tok);
			continue;
		}
		if (engine_by_name(tok, &info) || info.alg != alg)
			continue;
		if (!info.probe)
			snprintf(names[n++], 24, "%s", tok);
		else if (note)
			ezi_bench_log(b, EZFS_LOG_INFO,
				      "engine %s: not usable here (%s), "
				      "skipped",
				      tok, ezfs_strerror(info.probe));
	}
	free(dup);
	if (!n)
		snprintf(names[n++], 24, "default");
	return n;
}

const char *ezi_bench_engine_label(const ezfs_bench *b, const char *engine)
{
	if ((!engine || !strcmp(engine, "default")) && b->p.accel)
		return b->p.accel;
	return engine ? engine : "default";
}

/*
 * A fresh instance of image (nothing cached) with engine (NULL or
 * "default": the accel order, else the default order) first for its
 * algorithm and dispatch mode d (NULL: EZFS_DISPATCH or inline). Logs
 * the error.
 */
int ezi_bench_open(const ezfs_bench *b, const char *image, const char *engine,
		   const struct ezfs_bench_disp *d, ezfs_image **img)
{
	struct ezfs_open_params p;
	int err;

	ezfs_open_params_init(&p);
	if (engine && strcmp(engine, "default"))
		p.accel = engine;
	else
		p.accel = b->p.accel;
	p.strict_accel = b->p.strict_accel;
	if (d)
		p.dispatch = d->name;
	err = ezfs_image_open(image, &p, img);
	if (err)
		ezi_bench_fail(b, image, err);
	return err;
}

/* The dispatch mode img runs under, as the tables show it. */
void ezi_bench_disp_label(ezfs_image *img, char *buf, size_t size)
{
	struct ezfs_dispatch_info di;

	if (ezfs_image_dispatch_info(img, &di))
		di.mode = EZFS_DISPATCH_INLINE;
	if (di.mode == EZFS_DISPATCH_QUEUE && di.workers != ezi_bench_cpus())
		snprintf(buf, size, "queue:%u", di.workers);
	else
		snprintf(buf, size, "%s", ezfs_dispatch_name(di.mode));
}

/* "percpu: 2 workers, 2 pinned, SCHED_FIFO" for the notes. */
void ezi_bench_disp_describe(ezfs_image *img, char *buf, size_t size)
{
	struct ezfs_dispatch_info di;
	char pol[32];

	if (ezfs_image_dispatch_info(img, &di) || !di.workers) {
		snprintf(buf, size, "inline: the reading thread decodes");
		return;
	}
	if (di.policy == SCHED_FIFO)
		snprintf(pol, sizeof(pol), "SCHED_FIFO");
	else
		snprintf(pol, sizeof(pol), "SCHED_OTHER nice %d", di.nice);
	snprintf(buf, size, "%s: %u workers, %u pinned, %s",
		 ezfs_dispatch_name(di.mode), di.workers, di.pinned, pol);
}

/* ---- competing CPU load: one spinning job per online CPU ---- */

/* A pool job: at normal priority whatever the bench runs at (under
 * chrt -f its workers inherit SCHED_FIFO), it spins until told to stop. */
static void spin(void *arg)
{
	struct ezi_bench_load *l = arg;
	struct sched_param sp = { 0 };
	volatile uint64_t x = 0;

	pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
	while (!__atomic_load_n(&l->stop, __ATOMIC_RELAXED))
		x = x * 6364136223846793005ull + 1;
}

int ezi_bench_load_start(struct ezi_bench_load *l, int kind)
{
	unsigned i, n;
	int err = 0;

	memset(l, 0, sizeof(*l));
	if (kind == EZFS_BENCH_LOAD_NONE)
		return 0;
	n = ezi_bench_cpus();
	l->pool = ezi_pool_new(n, 0, &err);
	if (!l->pool)
		return err ? err : -ENOMEM;
	l->n = ezi_pool_threads(l->pool);
	for (i = 0; i < l->n; i++)
		if (ezi_pool_submit(l->pool, spin, l))
			break;
	return 0;
}

void ezi_bench_load_stop(struct ezi_bench_load *l)
{
	__atomic_store_n(&l->stop, 1, __ATOMIC_RELAXED);
	ezi_pool_destroy(l->pool); /* joins the spinning workers */
	l->pool = NULL;
	l->n = 0;
}
