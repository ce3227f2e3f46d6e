/* SPDX-License-Identifier: MIT */
/*
 * bench/bench.c - the bench object: parameters and their defaults, the
 * modes run on it, its records, logging and progress.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ezfs/engine.h"
#include "bench/internal.h"

/* ---- logging, progress, records ---- */

void ezi_bench_log(const ezfs_bench *b, int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!b->p.log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	b->p.log(b->p.log_arg, level, msg);
}

void ezi_bench_fail(const ezfs_bench *b, const char *what, int err)
{
	ezi_bench_log(b, EZFS_LOG_ERROR, "%s: %s", what, ezfs_strerror(err));
}

void ezi_bench_cell(ezfs_bench *b, const char *what)
{
	if (b->p.progress)
		b->p.progress(b->p.progress_arg, what, b->done, b->total);
}

void ezi_bench_done(ezfs_bench *b)
{
	b->done++;
}

double ezi_bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

unsigned ezi_bench_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > 256 ? 256 : (unsigned)n;
}

void ezi_bench_rec_init(struct ezfs_bench_rec *rec, const char *mode)
{
	memset(rec, 0, sizeof(*rec));
	snprintf(rec->mode, sizeof(rec->mode), "%s", mode);
	rec->level = -1;
}

int ezi_bench_add(ezfs_bench *b, const struct ezfs_bench_rec *rec)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		struct ezfs_bench_rec *v = realloc(b->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		b->v = v;
		b->cap = cap;
	}
	b->v[b->n++] = *rec;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double ezi_bench_median(double *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n & 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

size_t ezfs_bench_nrecords(const ezfs_bench *b)
{
	return b->n;
}

const struct ezfs_bench_rec *ezfs_bench_record(const ezfs_bench *b, size_t i)
{
	return i < b->n ? &b->v[i] : NULL;
}

double ezfs_bench_shortest_read(const ezfs_bench *b)
{
	double shortest = -1;
	size_t i;

	for (i = 0; i < b->n; i++)
		if (!strcmp(b->v[i].mode, "read") &&
		    (shortest < 0 || b->v[i].seconds < shortest))
			shortest = b->v[i].seconds;
	return shortest;
}

/* ---- the bench ---- */

int ezfs_bench_new(const struct ezfs_bench_params *p, const char *source,
		   ezfs_bench **out)
{
	ezfs_bench *b;
	int err;

	*out = NULL;
	if (!p || p->size < sizeof(*p) || (!source && !p->path) ||
	    p->repeat < 1 || p->repeat > 100 || !p->bs)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->p = *p;
	b->source = source;
	if ((p->modes & EZFS_BENCH_READ) && (p->modes & EZFS_BENCH_LATENCY))
		b->keep_cluster = p->cluster; /* latency reuses them */
	err = ezi_bench_tmp_init(b);
	if (err) {
		ezfs_bench_free(b);
		return err;
	}
	*out = b; /* the workspace exists: a signal handler may clean up */
	if (source)
		err = ezi_bench_src_prepare(b, source);
	if (err) {
		*out = NULL;
		ezfs_bench_free(b);
	}
	return err;
}

void ezfs_bench_source_info(const ezfs_bench *b, struct ezfs_bench_source *s)
{
	s->is_image = b->is_image;
	s->input_bytes = b->input_bytes;
	s->input_blocks = b->input_blocks;
}

unsigned ezfs_bench_cells(const ezfs_bench *b, unsigned mode)
{
	switch (mode) {
	case EZFS_BENCH_READ:
		return ezi_bench_read_cells(b);
	case EZFS_BENCH_RATIO:
		return b->is_image ? 0 : (unsigned)b->p.nlevels;
	case EZFS_BENCH_LATENCY:
		return ezi_bench_latency_cells(b);
	case EZFS_BENCH_ADVISE:
		return ezi_bench_advise_cells(b);
	default:
		return 0;
	}
}

int ezfs_bench_run(ezfs_bench *b, unsigned mode)
{
	unsigned m, total = 0;

	/* the progress counts every mode still to run */
	for (m = mode; m <= EZFS_BENCH_ADVISE; m <<= 1)
		if (m == mode || ((b->p.modes & m) && m > mode))
			total += ezfs_bench_cells(b, m);
	b->total = b->done + total;
	if ((mode == EZFS_BENCH_RATIO || mode == EZFS_BENCH_ADVISE) &&
	    (b->is_image || !b->dir)) {
		ezi_bench_log(b, EZFS_LOG_ERROR,
			      "%s needs the source tree, not an image",
			      mode == EZFS_BENCH_RATIO ? "ratio" : "advise");
		return -EINVAL;
	}
	switch (mode) {
	case EZFS_BENCH_READ:
		return ezi_bench_read(b);
	case EZFS_BENCH_RATIO:
		return ezi_bench_ratio(b);
	case EZFS_BENCH_LATENCY:
		return ezi_bench_latency(b);
	case EZFS_BENCH_ADVISE:
		return ezi_bench_advise(b);
	default:
		return -EINVAL;
	}
}

void ezfs_bench_free(ezfs_bench *b)
{
	int i;

	if (!b)
		return;
	ezfs_bench_cleanup(b);
	for (i = 0; i < b->nkept; i++)
		free(b->kept[i].path);
	ezi_bench_advice_free(b->adv);
	free(b->dir);
	free(b->v);
	free(b);
}
