/* SPDX-License-Identifier: MIT */
/* bench/out.c - ezfs bench: result records, tables, CSV, JSON, progress. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "../common.h"

double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void bench_rec_init(struct bench_rec *rec, const char *mode)
{
	memset(rec, 0, sizeof(*rec));
	snprintf(rec->mode, sizeof(rec->mode), "%s", mode);
	rec->level = -1;
}

int bench_add(struct bench_results *r, const struct bench_rec *rec)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		struct bench_rec *v = realloc(r->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = *rec;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double bench_median(double *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n & 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- progress line ---- */

void bench_prog_init(struct bench_prog *p, int quiet, unsigned total)
{
	p->on = !quiet;
	p->total = total;
	p->done = 0;
	p->start = bench_now();
}

void bench_prog_cell(struct bench_prog *p, const char *what)
{
	double el = bench_now() - p->start;
	char eta[32] = "";

	if (!p->on)
		return;
	if (p->done && p->done < p->total) {
		unsigned s = (unsigned)(el / p->done * (p->total - p->done));

		snprintf(eta, sizeof(eta), "  ETA %u:%02u", s / 60, s % 60);
	}
	fprintf(stderr, "\r\033[K[%u/%u] %s%s", p->done + 1, p->total, what,
		eta);
	fflush(stderr);
}

void bench_prog_done(struct bench_prog *p)
{
	p->done++;
}

void bench_prog_end(struct bench_prog *p)
{
	if (p->on)
		fputs("\r\033[K", stderr);
}

/* ---- terminal tables ---- */

/* What the page cache was like at the start of --path runs (read.c). */
static enum bench_cache cache_state;

void bench_cache_set(enum bench_cache state)
{
	cache_state = state;
}

enum bench_cache bench_cache_get(void)
{
	return cache_state;
}

const char *bench_cache_note(void)
{
	switch (cache_state) {
	case BENCH_CACHE_DROPPED:
		return "page cache dropped before each run";
	case BENCH_CACHE_KEPT:
		return "warm cache: page cache as it was, --no-drop";
	case BENCH_CACHE_NOT_DROPPED:
		return "page cache not dropped (no permission): warm after "
		       "the first run";
	default:
		return "cold decoded cache each run";
	}
}

static void lvl_str(int level, char *buf, size_t size)
{
	if (level < 0)
		snprintf(buf, size, "def");
	else
		snprintf(buf, size, "%d", level);
}

static double find_mib(const struct bench_results *r, const struct bench_rec *k,
		       const char *workload)
{
	size_t i;

	for (i = 0; i < r->n; i++) {
		const struct bench_rec *x = &r->v[i];

		if (!strcmp(x->mode, "read") &&
		    !strcmp(x->workload, workload) &&
		    !strcmp(x->target, k->target) && !strcmp(x->alg, k->alg) &&
		    x->level == k->level && x->cluster == k->cluster &&
		    !strcmp(x->engine, k->engine) &&
		    !strcmp(x->dispatch, k->dispatch))
			return x->mib_s;
	}
	return -1;
}

static void print_read(FILE *f, const struct bench_results *r)
{
	static const char *wl[] = { "seq", "rand", "small" };
	char cl[16], lv[12], num[3][16], rt[16];
	size_t i;
	int j;

	fprintf(f,
		"\nread throughput, MiB/s (%s; ratio = image blocks / "
		"input blocks)\n",
		bench_cache_note());
	fprintf(f, "%-7s %-8s %-5s %7s %-10s %-8s %6s %9s %9s %9s\n", "target",
		"alg", "level", "cluster", "engine", "dispatch", "ratio", "seq",
		"rand", "small");
	for (i = 0; i < r->n; i++) {
		const struct bench_rec *x = &r->v[i];

		if (strcmp(x->mode, "read") || strcmp(x->workload, "seq"))
			continue;
		for (j = 0; j < 3; j++) {
			double v = find_mib(r, x, wl[j]);

			if (v < 0)
				snprintf(num[j], sizeof(num[j]), "-");
			else
				snprintf(num[j], sizeof(num[j]), "%.1f", v);
		}
		lvl_str(x->level, lv, sizeof(lv));
		if (x->ratio > 0)
			snprintf(rt, sizeof(rt), "%.3f", x->ratio);
		else
			snprintf(rt, sizeof(rt), "-");
		fprintf(f, "%-7s %-8s %-5s %7s %-10s %-8s %6s %9s %9s %9s\n",
			x->target, x->alg, lv,
			x->cluster
				? bench_fmt_cluster(x->cluster, cl, sizeof(cl))
				: "-",
			x->engine, x->dispatch, rt, num[0], num[1], num[2]);
	}
}

static void print_ratio(FILE *f, const struct bench_results *r)
{
	char cl[16], lv[12];
	size_t i;

	fprintf(f, "\ncompression ratio (image blocks / input blocks)\n");
	fprintf(f, "%-10s %-5s %7s %12s %12s %7s %10s\n", "alg", "level",
		"cluster", "input blks", "image blks", "ratio", "mkfs MB/s");
	for (i = 0; i < r->n; i++) {
		const struct bench_rec *x = &r->v[i];

		if (strcmp(x->mode, "ratio"))
			continue;
		lvl_str(x->level, lv, sizeof(lv));
		fprintf(f, "%-10s %-5s %7s %12llu %12llu %7.4f %10.2f\n",
			x->alg, lv,
			bench_fmt_cluster(x->cluster, cl, sizeof(cl)),
			(unsigned long long)x->input_blocks,
			(unsigned long long)x->image_blocks, x->ratio,
			x->mkfs_mb_s);
	}
}

static void print_latency(FILE *f, const struct bench_results *r)
{
	char cl[16];
	size_t i;

	fprintf(f, "\ndecode latency per pcluster request, submit to "
		   "completion, microseconds\n");
	fprintf(f, "%-8s %7s %-10s %-8s %-5s %7s %9s %9s %9s %9s %9s\n", "alg",
		"cluster", "engine", "dispatch", "load", "samples", "avg",
		"median", "min", "max", "stddev");
	for (i = 0; i < r->n; i++) {
		const struct bench_rec *x = &r->v[i];

		if (strcmp(x->mode, "latency"))
			continue;
		fprintf(f,
			"%-8s %7s %-10s %-8s %-5s %7llu %9.1f %9.1f %9.1f "
			"%9.1f %9.1f\n",
			x->alg,
			x->cluster
				? bench_fmt_cluster(x->cluster, cl, sizeof(cl))
				: "-",
			x->engine, x->dispatch, x->load,
			(unsigned long long)x->samples, x->avg_us, x->median_us,
			x->min_us, x->max_us, x->stddev_us);
	}
}

void bench_print_table(FILE *f, const struct bench_results *r, const char *mode)
{
	if (!strcmp(mode, "read"))
		print_read(f, r);
	else if (!strcmp(mode, "ratio"))
		print_ratio(f, r);
	else if (!strcmp(mode, "latency"))
		print_latency(f, r);
	fflush(f);
}

/* ---- CSV and JSON ---- */

static const char csv_head[] =
	"mode,workload,target,alg,level,cluster,engine,dispatch,load,repeat,"
	"bytes,seconds,mib_s,input_blocks,image_blocks,ratio,mkfs_mb_s,"
	"samples,avg_us,median_us,min_us,max_us,stddev_us\n";

int bench_write_csv(const char *path, const struct bench_results *r)
{
	FILE *f = fopen(path, "w");
	size_t i;

	if (!f) {
		cli_error(BENCH_CMD, "%s: %s", path, strerror(errno));
		return -errno;
	}
	fputs(csv_head, f);
	for (i = 0; i < r->n; i++) {
		const struct bench_rec *x = &r->v[i];

		fprintf(f,
			"%s,%s,%s,%s,%d,%u,%s,%s,%s,%d,%llu,%.6f,%.3f,"
			"%llu,%llu,%.6f,%.3f,%llu,%.3f,%.3f,%.3f,%.3f,%.3f\n",
			x->mode, x->workload, x->target, x->alg, x->level,
			(unsigned)x->cluster, x->engine, x->dispatch, x->load,
			x->repeat, (unsigned long long)x->bytes, x->seconds,
			x->mib_s, (unsigned long long)x->input_blocks,
			(unsigned long long)x->image_blocks, x->ratio,
			x->mkfs_mb_s, (unsigned long long)x->samples, x->avg_us,
			x->median_us, x->min_us, x->max_us, x->stddev_us);
	}
	if (fclose(f)) {
		cli_error(BENCH_CMD, "%s: %s", path, strerror(errno));
		return -EIO;
	}
	return 0;
}

static void json_rec(FILE *f, const struct bench_rec *x)
{
	fprintf(f,
		"  {\"mode\": \"%s\", \"workload\": \"%s\", "
		"\"target\": \"%s\", \"alg\": \"%s\", \"level\": %d, "
		"\"cluster\": %u, \"engine\": \"%s\"",
		x->mode, x->workload, x->target, x->alg, x->level,
		(unsigned)x->cluster, x->engine);
	if (!strcmp(x->mode, "read"))
		fprintf(f, ", \"dispatch\": \"%s\"", x->dispatch);
	if (!strcmp(x->mode, "read") || !strcmp(x->mode, "advise"))
		fprintf(f,
			", \"repeat\": %d, \"bytes\": %llu, "
			"\"seconds\": %.6f, \"mib_s\": %.3f",
			x->repeat, (unsigned long long)x->bytes, x->seconds,
			x->mib_s);
	if (!strcmp(x->mode, "ratio"))
		fprintf(f, ", \"seconds\": %.6f", x->seconds);
	if (!strcmp(x->mode, "ratio") || !strcmp(x->mode, "advise") ||
	    (!strcmp(x->mode, "read") && x->image_blocks))
		fprintf(f,
			", \"input_blocks\": %llu, \"image_blocks\": %llu, "
			"\"ratio\": %.6f, \"mkfs_mb_s\": %.3f",
			(unsigned long long)x->input_blocks,
			(unsigned long long)x->image_blocks, x->ratio,
			x->mkfs_mb_s);
	if (!strcmp(x->mode, "latency"))
		fprintf(f,
			", \"dispatch\": \"%s\", \"load\": \"%s\", "
			"\"samples\": %llu, \"avg_us\": %.3f, "
			"\"median_us\": %.3f, \"min_us\": %.3f, "
			"\"max_us\": %.3f, \"stddev_us\": %.3f",
			x->dispatch, x->load, (unsigned long long)x->samples,
			x->avg_us, x->median_us, x->min_us, x->max_us,
			x->stddev_us);
	fputc('}', f);
}

int bench_write_json(const char *path, const struct bench_results *r)
{
	FILE *f = fopen(path, "w");
	size_t i;

	if (!f) {
		cli_error(BENCH_CMD, "%s: %s", path, strerror(errno));
		return -errno;
	}
	fputs("[\n", f);
	for (i = 0; i < r->n; i++) {
		json_rec(f, &r->v[i]);
		fputs(i + 1 < r->n ? ",\n" : "\n", f);
	}
	fputs("]\n", f);
	if (fclose(f)) {
		cli_error(BENCH_CMD, "%s: %s", path, strerror(errno));
		return -EIO;
	}
	return 0;
}
