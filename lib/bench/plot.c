/* SPDX-License-Identifier: MIT */
/* bench/plot.c - the charts: gnuplot data and a script drawing PNGs. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/internal.h"

static int has_mode(const ezfs_bench *b, const char *mode)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		if (!strcmp(b->v[i].mode, mode))
			return 1;
	return 0;
}

/* The series ("ALG[-LEVEL]/ENGINE/DISPATCH") of a read record of workload
 * wl in s, or NULL for a record of another kind. */
static const char *read_series(const struct ezfs_bench_rec *x, const char *wl,
			       char *s, size_t size)
{
	char lv[16];

	if (strcmp(x->mode, "read") || strcmp(x->workload, wl) || !x->cluster)
		return NULL;
	lv[0] = '\0';
	if (x->level >= 0)
		snprintf(lv, sizeof(lv), "-%d", x->level);
	snprintf(s, size, "%s%s/%s/%s", x->alg, lv, x->engine, x->dispatch);
	return s;
}

/*
 * Series j's algorithm (part 0: before the first '/') or variant (part 1:
 * engine/dispatch) as the index of its first appearance among series[]:
 * one colour per algorithm, one dash and point type per variant.
 */
/* Do series a and b share the part before (0) or after (1) the first '/'? */
static int same_part(const char *a, const char *b, int part)
{
	const char *sa = strchr(a, '/'), *sb = strchr(b, '/');
	size_t la = sa ? (size_t)(sa - a) : strlen(a);
	size_t lb = sb ? (size_t)(sb - b) : strlen(b);

	if (!part)
		return la == lb && !strncmp(a, b, la);
	return !strcmp(sa ? sa : "", sb ? sb : "");
}

static unsigned series_part(char (*series)[80], size_t j, int part)
{
	unsigned n = 0;
	size_t i, k;

	for (i = 0; i < j; i++) {
		for (k = 0; k < i && !same_part(series[k], series[i], part);
		     k++)
			;
		if (k < i)
			continue; /* not the first of its kind */
		if (same_part(series[i], series[j], part))
			return n;
		n++;
	}
	return n;
}

/* read-WORKLOAD.png: MiB/s against cluster size, a line per alg/engine. */
static void plot_read(FILE *gp, const char *dir, const ezfs_bench *b,
		      const char *wl)
{
	static const unsigned pts[5] = { 7, 5, 9, 11, 13 };
	char series[64][80], fn[4096];
	size_t i, j, ns = 0;
	FILE *d;

	for (i = 0; i < b->n; i++) {
		char s[80];

		if (!read_series(&b->v[i], wl, s, sizeof(s)))
			continue;
		for (j = 0; j < ns && strcmp(series[j], s); j++)
			;
		if (j == ns && ns < 64)
			snprintf(series[ns++], sizeof(series[0]), "%s", s);
	}
	if (!ns)
		return;
	snprintf(fn, sizeof(fn), "%s/read-%s.dat", dir, wl);
	d = fopen(fn, "w");
	if (!d)
		return;
	for (j = 0; j < ns; j++) {
		fprintf(d, "# %s\n", series[j]);
		for (i = 0; i < b->n; i++) {
			const struct ezfs_bench_rec *x = &b->v[i];
			char s[80];

			if (read_series(x, wl, s, sizeof(s)) &&
			    !strcmp(s, series[j]))
				fprintf(d, "%u %.3f\n", x->cluster / 1024,
					x->mib_s);
		}
		fprintf(d, "\n\n");
	}
	fclose(d);
	fprintf(gp,
		"set output '%s/read-%s.png'\n"
		"set title 'ezfs bench: %s read throughput'\n"
		"set xlabel 'pcluster size (KiB)'\nset ylabel 'MiB/s'\n"
		"set logscale x 2\nset key outside right\nunset logscale y\n"
		"plot ",
		dir, wl, wl);
	for (j = 0; j < ns; j++) {
		unsigned c = series_part(series, j, 0),
			 v = series_part(series, j, 1);

		fprintf(gp,
			"%s'%s' index %zu using 1:2 with linespoints lw 1.5 "
			"lc %u dt %u pt %u title '%s'",
			j ? ", " : "", fn, j, c % 8 + 1, v % 5 + 1, pts[v % 5],
			series[j]);
	}
	fprintf(gp, "\nunset logscale x\n");
}

static void plot_ratio(FILE *gp, const char *dir, const ezfs_bench *b)
{
	static const char *const algs[] = { "lz4", "lz4hc", "lzma", "deflate",
					    "zstd" };
	char fn[4096];
	size_t i, j, k = 0;
	FILE *d;

	snprintf(fn, sizeof(fn), "%s/ratio.dat", dir);
	d = fopen(fn, "w");
	if (!d)
		return;
	fprintf(gp,
		"set output '%s/ratio.png'\n"
		"set title 'ezfs bench: ratio against mkfs speed'\n"
		"set xlabel 'mkfs speed (MB/s)'\n"
		"set ylabel 'image blocks / input blocks'\n"
		"set key outside right\nplot ",
		dir);
	for (j = 0; j < 5; j++) {
		int any = 0;

		for (i = 0; i < b->n; i++) {
			const struct ezfs_bench_rec *x = &b->v[i];

			if (strcmp(x->mode, "ratio") || strcmp(x->alg, algs[j]))
				continue;
			fprintf(d, "%.3f %.5f %d\n", x->mkfs_mb_s, x->ratio,
				x->level);
			any = 1;
		}
		if (!any)
			continue;
		fprintf(d, "\n\n");
		fprintf(gp,
			"%s'%s' index %zu using 1:2 with linespoints "
			"pt 7 title '%s', '' index %zu using 1:2:3 with "
			"labels offset 1,0.6 notitle",
			k ? ", " : "", fn, k, algs[j], k);
		k++;
	}
	fprintf(gp, "\n");
	fclose(d);
}

/* The bar ("DISPATCH load LOAD", with the engine unless default) and the
 * group ("ALG CLUSTER") of a latency record. */
static void lat_names(const struct ezfs_bench_rec *x, char *bar, size_t bsz,
		      char *grp, size_t gsz)
{
	char cl[16];

	if (strcmp(x->engine, "default"))
		snprintf(bar, bsz, "%s %s, load %s", x->engine, x->dispatch,
			 x->load);
	else
		snprintf(bar, bsz, "%s, load %s", x->dispatch, x->load);
	snprintf(grp, gsz, "%s %s", x->alg,
		 x->cluster ? ezi_bench_fmt_cluster(x->cluster, cl, sizeof(cl))
			    : "");
}

/* Add s to the list v (n entries of 64 bytes, at most max); its index. */
static size_t name_index(char (*v)[64], size_t *n, size_t max, const char *s)
{
	size_t i;

	for (i = 0; i < *n && strcmp(v[i], s); i++)
		;
	if (i == *n && *n < max)
		snprintf(v[(*n)++], 64, "%s", s);
	return i;
}

/*
 * latency.png: two panels, median and mean, each a group of bars per
 * algorithm/cluster and a bar per dispatch mode and load (log scale).
 */
static void plot_latency(FILE *gp, const char *dir, const ezfs_bench *bn)
{
	char bars[24][64], grps[32][64], bar[64], grp[64], fn[4096];
	double med[32][24], avg[32][24];
	size_t i, g, b, nb = 0, ng = 0;
	FILE *d;
	int k;

	for (g = 0; g < 32; g++)
		for (b = 0; b < 24; b++)
			med[g][b] = avg[g][b] = -1;
	for (i = 0; i < bn->n; i++) {
		const struct ezfs_bench_rec *x = &bn->v[i];

		if (strcmp(x->mode, "latency"))
			continue;
		lat_names(x, bar, sizeof(bar), grp, sizeof(grp));
		b = name_index(bars, &nb, 24, bar);
		g = name_index(grps, &ng, 32, grp);
		if (b < 24 && g < 32) {
			med[g][b] = x->median_us;
			avg[g][b] = x->avg_us;
		}
	}
	snprintf(fn, sizeof(fn), "%s/latency.dat", dir);
	d = fopen(fn, "w");
	if (!d)
		return;
	fprintf(d, "# group, median per bar, mean per bar (us; - = none)\n");
	for (g = 0; g < ng; g++) {
		fprintf(d, "\"%s\"", grps[g]);
		for (k = 0; k < 2; k++)
			for (b = 0; b < nb; b++)
				fprintf(d,
					(k ? avg : med)[g][b] < 0 ? " -"
								  : " %.3f",
					(k ? avg : med)[g][b]);
		fputc('\n', d);
	}
	fclose(d);
	fprintf(gp,
		"set output '%s/latency.png'\n"
		"set multiplot layout 1,2 title 'ezfs bench: decode latency "
		"per pcluster request, submit to completion'\n"
		"set style data histogram\nset style histogram cluster gap 1\n"
		"set style fill solid 0.8 border -1\nset datafile missing '-'\n"
		"set logscale y\nset xlabel 'algorithm, pcluster size'\n"
		"set yrange [1:*]\nset bmargin 7\n"
		"set key below font ',9' maxrows 2 spacing 0.9\n"
		"set xtics nomirror\n",
		dir);
	for (k = 0; k < 2; k++) {
		fprintf(gp,
			"set title '%s'\nset ylabel '%s (microseconds)'\n"
			"plot ",
			k ? "mean" : "median", k ? "mean" : "median");
		for (b = 0; b < nb; b++)
			fprintf(gp, "%s'%s' using %zu:xtic(1) title '%s'",
				b ? ", " : "", fn, 2 + (size_t)k * nb + b,
				bars[b]);
		fputc('\n', gp);
	}
	fprintf(gp, "unset multiplot\nunset logscale y\nset yrange [*:*]\n"
		    "set bmargin\n"
		    "set style data points\n");
}

int ezfs_bench_write_plot(const ezfs_bench *b, const char *dir, char *script,
			  size_t size)
{
	FILE *gp;
	int err;

	if (mkdir(dir, 0755) && errno != EEXIST) {
		err = -errno;
		ezi_bench_log(b, EZFS_LOG_ERROR, "%s: %s", dir,
			      strerror(errno));
		return err;
	}
	snprintf(script, size, "%s/bench.gp", dir);
	gp = ezi_bench_create(b, script);
	if (!gp)
		return -EIO;
	fprintf(gp, "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
		    "  set terminal pngcairo size 1100,600 noenhanced\n"
		    "} else {\n  set terminal png size 1100,600 noenhanced\n}\n"
		    "set grid\n");
	if (has_mode(b, "read")) {
		plot_read(gp, dir, b, "seq");
		plot_read(gp, dir, b, "rand");
		plot_read(gp, dir, b, "small");
	}
	if (has_mode(b, "ratio"))
		plot_ratio(gp, dir, b);
	if (has_mode(b, "latency"))
		plot_latency(gp, dir, b);
	return ezi_bench_close(b, gp, script);
}
