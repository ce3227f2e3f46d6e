/* SPDX-License-Identifier: MIT */
/* bench/out.c - the records as tables, CSV and JSON. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench/internal.h"

const char *ezi_bench_cache_note(enum ezi_bench_cache c)
{
	switch (c) {
	case EZI_BENCH_CACHE_DROPPED:
		return "page cache dropped before each run";
	case EZI_BENCH_CACHE_KEPT:
		return "warm cache: page cache as it was, --no-drop";
	case EZI_BENCH_CACHE_NOT_DROPPED:
		return "page cache not dropped (no permission): warm after "
		       "the first run";
	default:
		return "cold decoded cache each run";
	}
}

FILE *ezi_bench_create(const ezfs_bench *b, const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		ezi_bench_log(b, EZFS_LOG_ERROR, "%s: %s", path,
			      strerror(errno));
	return f;
}

int ezi_bench_close(const ezfs_bench *b, FILE *f, const char *path)
{
	int bad = ferror(f);

	if (fclose(f) || bad) {
		ezi_bench_log(b, EZFS_LOG_ERROR, "%s: %s", path,
			      strerror(errno ? errno : EIO));
		return -EIO;
	}
	return 0;
}

void ezi_bench_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void lvl_str(int level, char *buf, size_t size)
{
	if (level < 0)
		snprintf(buf, size, "def");
	else
		snprintf(buf, size, "%d", level);
}

static double find_mib(const ezfs_bench *b, const struct ezfs_bench_rec *k,
		       const char *workload)
{
	size_t i;

	for (i = 0; i < b->n; i++) {
		const struct ezfs_bench_rec *x = &b->v[i];

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

static void print_read(FILE *f, const ezfs_bench *b)
{
	static const char *wl[] = { "seq", "rand", "small" };
	char cl[16], lv[12], num[3][16], rt[16];
	size_t i;
	int j;

	fprintf(f,
		"\nread throughput, MiB/s (%s; ratio = image blocks / "
		"input blocks)\n",
		ezi_bench_cache_note(b->cache));
	fprintf(f, "%-7s %-8s %-5s %7s %-10s %-8s %6s %9s %9s %9s\n", "target",
		"alg", "level", "cluster", "engine", "dispatch", "ratio", "seq",
		"rand", "small");
	for (i = 0; i < b->n; i++) {
		const struct ezfs_bench_rec *x = &b->v[i];

		if (strcmp(x->mode, "read") || strcmp(x->workload, "seq"))
			continue;
		for (j = 0; j < 3; j++) {
			double v = find_mib(b, x, wl[j]);

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
			x->cluster ? ezi_bench_fmt_cluster(x->cluster, cl,
							   sizeof(cl))
				   : "-",
			x->engine, x->dispatch, rt, num[0], num[1], num[2]);
	}
}

static void print_ratio(FILE *f, const ezfs_bench *b)
{
	char cl[16], lv[12];
	size_t i;

	fprintf(f, "\ncompression ratio (image blocks / input blocks)\n");
	fprintf(f, "%-10s %-5s %7s %12s %12s %7s %10s\n", "alg", "level",
		"cluster", "input blks", "image blks", "ratio", "mkfs MB/s");
	for (i = 0; i < b->n; i++) {
		const struct ezfs_bench_rec *x = &b->v[i];

		if (strcmp(x->mode, "ratio"))
			continue;
		lvl_str(x->level, lv, sizeof(lv));
		fprintf(f, "%-10s %-5s %7s %12llu %12llu %7.4f %10.2f\n",
			x->alg, lv,
			ezi_bench_fmt_cluster(x->cluster, cl, sizeof(cl)),
			(unsigned long long)x->input_blocks,
			(unsigned long long)x->image_blocks, x->ratio,
			x->mkfs_mb_s);
	}
}

static void print_latency(FILE *f, const ezfs_bench *b)
{
	char cl[16];
	size_t i;

	fprintf(f, "\ndecode latency per pcluster request, submit to "
		   "completion, microseconds\n");
	fprintf(f, "%-8s %7s %-10s %-8s %-5s %7s %9s %9s %9s %9s %9s\n", "alg",
		"cluster", "engine", "dispatch", "load", "samples", "avg",
		"median", "min", "max", "stddev");
	for (i = 0; i < b->n; i++) {
		const struct ezfs_bench_rec *x = &b->v[i];

		if (strcmp(x->mode, "latency"))
			continue;
		fprintf(f,
			"%-8s %7s %-10s %-8s %-5s %7llu %9.1f %9.1f %9.1f "
			"%9.1f %9.1f\n",
			x->alg,
			x->cluster ? ezi_bench_fmt_cluster(x->cluster, cl,
							   sizeof(cl))
				   : "-",
			x->engine, x->dispatch, x->load,
			(unsigned long long)x->samples, x->avg_us, x->median_us,
			x->min_us, x->max_us, x->stddev_us);
	}
}

int ezfs_bench_write_table(const ezfs_bench *b, unsigned mode, FILE *f)
{
	if (mode == EZFS_BENCH_READ)
		print_read(f, b);
	else if (mode == EZFS_BENCH_RATIO)
		print_ratio(f, b);
	else if (mode == EZFS_BENCH_LATENCY)
		print_latency(f, b);
	else if (mode == EZFS_BENCH_ADVISE)
		return ezi_bench_advice_table(b, f);
	else
		return -EINVAL;
	return fflush(f) ? -errno : 0;
}

/* ---- CSV and JSON ---- */

static const char csv_head[] =
	"mode,workload,target,alg,level,cluster,engine,dispatch,load,repeat,"
	"bytes,seconds,mib_s,input_blocks,image_blocks,ratio,mkfs_mb_s,"
	"samples,avg_us,median_us,min_us,max_us,stddev_us\n";

int ezfs_bench_write_csv(const ezfs_bench *b, const char *path)
{
	FILE *f = ezi_bench_create(b, path);
	size_t i;

	if (!f)
		return -EIO;
	fputs(csv_head, f);
	for (i = 0; i < b->n; i++) {
		const struct ezfs_bench_rec *x = &b->v[i];

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
	return ezi_bench_close(b, f, path);
}

static void json_rec(FILE *f, const struct ezfs_bench_rec *x)
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

int ezfs_bench_write_json(const ezfs_bench *b, const char *path)
{
	FILE *f;
	size_t i;

	if (b->adv) /* advise: its own object, the table and the pick */
		return ezi_bench_advice_json(b, path);
	f = ezi_bench_create(b, path);
	if (!f)
		return -EIO;
	fputs("[\n", f);
	for (i = 0; i < b->n; i++) {
		json_rec(f, &b->v[i]);
		fputs(i + 1 < b->n ? ",\n" : "\n", f);
	}
	fputs("]\n", f);
	return ezi_bench_close(b, f, path);
}
