/* SPDX-License-Identifier: MIT */
/*
 * bench/eng.c - ezfs bench: engines, dispatch modes and the competing CPU
 * load, i.e. the configuration an image instance is measured under.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "ezfs/engine.h"
#include "bench.h"
#include "../common.h"

const char *const bench_load_names[BENCH_NLOADS] = { "none", "busy" };

/* "inline,queue:4,percpu" -> o->disp[]. */
int bench_parse_dispatch(const char *s, struct bench_opts *o)
{
	char *dup = strdup(s), *tok, *save = NULL;
	int err = 0;

	if (!dup)
		return -ENOMEM;
	o->ndisp = 0;
	for (tok = strtok_r(dup, ", ", &save); tok && !err;
	     tok = strtok_r(NULL, ", ", &save)) {
		struct bench_disp *d = &o->disp[o->ndisp];

		if (o->ndisp >= BENCH_MAX_DISP ||
		    strlen(tok) >= sizeof(d->name)) {
			err = -EINVAL;
			break;
		}
		d->mode = ezfs_dispatch_parse(tok, &d->nthreads);
		if (d->mode < 0)
			err = -EINVAL;
		snprintf(d->name, sizeof(d->name), "%s", tok);
		o->ndisp++;
	}
	free(dup);
	return err ? err : (o->ndisp ? 0 : -EINVAL);
}

/* "none,busy" -> o->loads[]. */
int bench_parse_loads(const char *s, struct bench_opts *o)
{
	char *dup = strdup(s), *tok, *save = NULL;
	int err = 0, l;

	if (!dup)
		return -ENOMEM;
	o->nloads = 0;
	for (tok = strtok_r(dup, ", ", &save); tok && !err;
	     tok = strtok_r(NULL, ", ", &save)) {
		for (l = 0; l < BENCH_NLOADS; l++)
			if (!strcmp(tok, bench_load_names[l]))
				break;
		if (l == BENCH_NLOADS || o->nloads >= BENCH_NLOADS)
			err = -EINVAL;
		else
			o->loads[o->nloads++] = l;
	}
	free(dup);
	return err ? err : (o->nloads ? 0 : -EINVAL);
}

/* Engine name -> its description (0), or -ENOENT. */
static int engine_by_name(const char *name, struct ezfs_engine_info *info)
{
	unsigned i;

	for (i = 0; !ezfs_engine_get_info(i, info); i++)
		if (!strcmp(info->name, name))
			return 0;
	return -ENOENT;
}

/* Every name of the --engines list must be an engine (or "default"). */
int bench_check_engines(const char *list)
{
	char *dup = strdup(list), *tok, *save = NULL;
	struct ezfs_engine_info info;
	int err = 0, n = 0;

	if (!dup)
		return -ENOMEM;
	for (tok = strtok_r(dup, ", ", &save); tok && !err;
	     tok = strtok_r(NULL, ", ", &save), n++)
		if (strcmp(tok, "default") && engine_by_name(tok, &info))
			err = -EINVAL;
	free(dup);
	return err ? err : (n ? 0 : -EINVAL);
}

/*
 * The engines of the --engines list that decode alg (usable here), in list
 * order, into names[]; "default" when the list has none for alg (or there
 * is no list). With note, engines that cannot run here are named on
 * stdout.
 */
int bench_engines_for(const struct bench_opts *o, int alg, char names[][24],
		      int max, int note)
{
	char *dup = o->engines ? strdup(o->engines) : NULL, *tok, *save = NULL;
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
		else if (note && !o->quiet)
			printf("engine %s: not usable here (%s), skipped\n",
			       tok, ezfs_strerror(info.probe));
	}
	free(dup);
	if (!n)
		snprintf(names[n++], 24, "default");
	return n;
}

/* --accel SPEC and --strict-accel: for every instance bench_open opens. */
static struct {
	const char *accel;
	int strict;
} engine_opts;

void bench_set_engine_opts(const char *accel, int strict)
{
	engine_opts.accel = accel;
	engine_opts.strict = strict;
}

const char *bench_engine_label(const char *engine)
{
	if ((!engine || !strcmp(engine, "default")) && engine_opts.accel)
		return engine_opts.accel;
	return engine ? engine : "default";
}

/*
 * A fresh instance of image (nothing cached) with engine (NULL or
 * "default": the --accel order, else the default order) first for its
 * algorithm and dispatch mode d (NULL: EZFS_DISPATCH or inline). Prints
 * the error.
 */
int bench_open(const char *image, const char *engine,
	       const struct bench_disp *d, ezfs_image **img)
{
	struct ezfs_open_params p;
	int err;

	ezfs_open_params_init(&p);
	if (engine && strcmp(engine, "default"))
		p.accel = engine;
	else
		p.accel = engine_opts.accel;
	p.strict_accel = engine_opts.strict;
	if (d)
		p.dispatch = d->name;
	err = ezfs_image_open(image, &p, img);
	if (err)
		cli_fail(BENCH_CMD, image, NULL, err);
	return err;
}

/* The dispatch mode img runs under, as the tables show it. */
void bench_disp_label(ezfs_image *img, char *buf, size_t size)
{
	struct ezfs_dispatch_info di;

	if (ezfs_image_dispatch_info(img, &di))
		di.mode = EZFS_DISPATCH_INLINE;
	if (di.mode == EZFS_DISPATCH_QUEUE && di.workers != cli_online_cpus())
		snprintf(buf, size, "queue:%u", di.workers);
	else
		snprintf(buf, size, "%s", ezfs_dispatch_name(di.mode));
}

/* "percpu: 2 workers, 2 pinned, SCHED_FIFO" for the notes. */
void bench_disp_describe(ezfs_image *img, char *buf, size_t size)
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

/* ---- competing CPU load: one spinning thread per online CPU ---- */

static void *spin(void *arg)
{
	struct bench_load *l = arg;
	volatile uint64_t x = 0;

	while (!__atomic_load_n(&l->stop, __ATOMIC_RELAXED))
		x = x * 6364136223846793005ull + 1;
	return NULL;
}

int bench_load_start(struct bench_load *l, int kind)
{
	struct sched_param sp = { 0 };
	pthread_attr_t attr;
	unsigned i;

	memset(l, 0, sizeof(*l));
	if (kind == BENCH_LOAD_NONE)
		return 0;
	l->n = cli_online_cpus();
	l->th = calloc(l->n, sizeof(*l->th));
	if (!l->th)
		return -ENOMEM;
	/* normal priority whatever ours is (not inherited): SCHED_OTHER */
	pthread_attr_init(&attr);
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
	pthread_attr_setschedparam(&attr, &sp);
	for (i = 0; i < l->n; i++) {
		if (pthread_create(&l->th[i], &attr, spin, l)) {
			l->n = i;
			break;
		}
	}
	pthread_attr_destroy(&attr);
	return 0;
}

void bench_load_stop(struct bench_load *l)
{
	unsigned i;

	__atomic_store_n(&l->stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < l->n; i++)
		pthread_join(l->th[i], NULL);
	free(l->th);
	l->th = NULL;
	l->n = 0;
}
