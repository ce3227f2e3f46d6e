/* SPDX-License-Identifier: MIT */
/* bench_plot.c - ezfs bench --plot: PNG charts through gnuplot. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "common.h"

static int have_gnuplot(void)
{
	const char *path = getenv("PATH");
	char *dup, *dir, *save = NULL, full[4096];
	int found = 0;

	if (!path)
		path = "/usr/bin:/bin";
	dup = strdup(path);
	if (!dup)
		return 0;
	for (dir = strtok_r(dup, ":", &save); dir && !found;
	     dir = strtok_r(NULL, ":", &save)) {
		snprintf(full, sizeof(full), "%s/gnuplot", dir);
		found = !access(full, X_OK);
	}
	free(dup);
	return found;
}

static int has_mode(const struct bench_results *r, const char *mode)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (!strcmp(r->v[i].mode, mode))
			return 1;
	return 0;
}

/* The series ("ALG[-LEVEL]/ENGINE") of a read record of workload wl in s,
 * or NULL for a record of another kind. */
static const char *read_series(const struct bench_rec *x, const char *wl,
			       char *s, size_t size)
{
	char lv[16];

	if (strcmp(x->mode, "read") || strcmp(x->workload, wl) || !x->cluster)
		return NULL;
	lv[0] = '\0';
	if (x->level >= 0)
		snprintf(lv, sizeof(lv), "-%d", x->level);
	snprintf(s, size, "%s%s/%s", x->alg, lv, x->engine);
	return s;
}

/* read-WORKLOAD.png: MiB/s against cluster size, a line per alg/engine. */
static void plot_read(FILE *gp, const char *dir, const struct bench_results *r,
		      const char *wl)
{
	char series[64][80], fn[4096];
	size_t i, j, ns = 0;
	FILE *d;

	for (i = 0; i < r->n; i++) {
		char s[80];

		if (!read_series(&r->v[i], wl, s, sizeof(s)))
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
		for (i = 0; i < r->n; i++) {
			const struct bench_rec *x = &r->v[i];
			char s[80];

			if (read_series(x, wl, s, sizeof(s)) &&
			    !strcmp(s, series[j]))
				fprintf(d, "%u %.3f\n", x->cluster / 1024,
					x->mib_s);
		}
		fprintf(d, "\n\n");
	}
	fclose(d);
	fprintf(gp, "set output '%s/read-%s.png'\n"
		"set title 'ezfs bench: %s read throughput'\n"
		"set xlabel 'pcluster size (KiB)'\nset ylabel 'MiB/s'\n"
		"set logscale x 2\nset key outside right\nunset logscale y\n"
		"plot ", dir, wl, wl);
	for (j = 0; j < ns; j++)
		fprintf(gp, "%s'%s' index %zu using 1:2 with linespoints "
			"title '%s'", j ? ", " : "", fn, j, series[j]);
	fprintf(gp, "\nunset logscale x\n");
}

static void plot_ratio(FILE *gp, const char *dir,
		       const struct bench_results *r)
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
	fprintf(gp, "set output '%s/ratio.png'\n"
		"set title 'ezfs bench: ratio against mkfs speed'\n"
		"set xlabel 'mkfs speed (MB/s)'\n"
		"set ylabel 'image blocks / input blocks'\n"
		"set key outside right\nplot ", dir);
	for (j = 0; j < 5; j++) {
		int any = 0;

		for (i = 0; i < r->n; i++) {
			const struct bench_rec *x = &r->v[i];

			if (strcmp(x->mode, "ratio") || strcmp(x->alg, algs[j]))
				continue;
			fprintf(d, "%.3f %.5f %d\n", x->mkfs_mb_s, x->ratio,
				x->level);
			any = 1;
		}
		if (!any)
			continue;
		fprintf(d, "\n\n");
		fprintf(gp, "%s'%s' index %zu using 1:2 with linespoints "
			"pt 7 title '%s', '' index %zu using 1:2:3 with "
			"labels offset 1,0.6 notitle", k ? ", " : "", fn, k,
			algs[j], k);
		k++;
	}
	fprintf(gp, "\n");
	fclose(d);
}

static void plot_latency(FILE *gp, const char *dir,
			 const struct bench_results *r)
{
	char fn[4096], cl[16];
	size_t i;
	FILE *d;

	snprintf(fn, sizeof(fn), "%s/latency.dat", dir);
	d = fopen(fn, "w");
	if (!d)
		return;
	for (i = 0; i < r->n; i++) {
		const struct bench_rec *x = &r->v[i];

		if (!strcmp(x->mode, "latency"))
			fprintf(d, "\"%s %s\\n%s %s\" %.3f %.3f %.3f\n", x->alg,
				bench_fmt_cluster(x->cluster, cl, sizeof(cl)),
				x->dispatch, x->load, x->median_us, x->min_us,
				x->max_us);
	}
	fclose(d);
	fprintf(gp, "set output '%s/latency.png'\n"
		"set title 'ezfs bench: decode latency per dispatch mode'\n"
		"set xlabel 'algorithm, cluster, dispatch mode, load'\n"
		"set ylabel 'microseconds (median, bar: min..max)'\n"
		"set style fill solid 0.5\nset boxwidth 0.6\n"
		"set key outside right\nset logscale y\n"
		"plot '%s' using 0:2:xtic(1) with boxes title 'median', "
		"'' using 0:2:3:4 with yerrorbars title 'min..max'\n"
		"unset logscale y\n", dir, fn);
}

int bench_plot(const char *dir, const struct bench_results *r, int quiet)
{
	char script[4096];
	FILE *gp;
	pid_t pid;
	int st;

	if (!have_gnuplot()) {
		fprintf(stderr, "ezfs bench: --plot: gnuplot not found; install "
			"it (Debian: apt-get install gnuplot-nox) and rerun; "
			"no charts written\n");
		return 0;
	}
	if (mkdir(dir, 0755) && errno != EEXIST) {
		cli_error(BENCH_CMD, "%s: %s", dir, strerror(errno));
		return -errno;
	}
	snprintf(script, sizeof(script), "%s/bench.gp", dir);
	gp = fopen(script, "w");
	if (!gp) {
		cli_error(BENCH_CMD, "%s: %s", script, strerror(errno));
		return -errno;
	}
	fprintf(gp, "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
		"  set terminal pngcairo size 1000,600 noenhanced\n"
		"} else {\n  set terminal png size 1000,600 noenhanced\n}\n"
		"set grid\n");
	if (has_mode(r, "read")) {
		plot_read(gp, dir, r, "seq");
		plot_read(gp, dir, r, "rand");
		plot_read(gp, dir, r, "small");
	}
	if (has_mode(r, "ratio"))
		plot_ratio(gp, dir, r);
	if (has_mode(r, "latency"))
		plot_latency(gp, dir, r);
	fclose(gp);
	pid = fork();
	if (pid == 0) {
		execlp("gnuplot", "gnuplot", script, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) ||
	    WEXITSTATUS(st)) {
		cli_error(BENCH_CMD, "gnuplot %s failed", script);
		return -EIO;
	}
	if (!quiet)
		printf("charts: %s/*.png\n", dir);
	return 0;
}
