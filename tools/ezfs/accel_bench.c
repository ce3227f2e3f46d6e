/* SPDX-License-Identifier: MIT */
/*
 * accel_bench.c - ezfs accel bench: its options and its table. The
 * measuring (raw decode against reads through ezfs, per engine and
 * pcluster size) is lib/bench's (ezfs_bench_engines_*).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <ezfs/bench.h>
#include <ezfs/engine.h>
#include <ezfs/ezfs.h>

#include "accel.h"
#include "common.h"

static void on_log(void *arg, int level, const char *msg)
{
	if (level == EZFS_LOG_ERROR) {
		cli_error("accel", "bench: %s", msg);
		*(int *)arg = 1;
	}
}

/* A cell as it comes: the row's name before its first one. */
static void on_cell(void *arg, const struct ezfs_bench_engines_cell *c)
{
	(void)arg;
	if (!c->index)
		printf("%-11s %-8s", c->engine, ezfs_alg_name(c->alg));
	if (c->err)
		printf(" %22.22s", ezfs_strerror(c->err));
	else
		printf(" %6.0f %6.0f %4.0f%%", c->raw_mb_s, c->thr_mb_s,
		       c->raw_mb_s > 0 ? 100 * c->thr_mb_s / c->raw_mb_s : 0);
	if (c->index + 1 == EZFS_BENCH_ENGINE_SIZES)
		printf("\n");
	fflush(stdout);
}

static int engine_known(const char *name)
{
	struct ezfs_engine_info info;
	unsigned i;

	for (i = 0; i < ezfs_engine_count(); i++)
		if (!ezfs_engine_get_info(i, &info) && !strcmp(info.name, name))
			return 1;
	return 0;
}

int accel_bench(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ezfs_bench_engines_params p;
	struct cli_log lg = { 0 };
	ezfs_bench_engines *e = NULL;
	ezfs_image *img = NULL;
	const char *path = NULL, *from;
	unsigned mib = 4, rd = 4, k;
	size_t len;
	int c, err, logged = 0;

	ezfs_bench_engines_params_init(&p);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":e:n:s:r:h", opts, NULL)) != -1) {
		unsigned v = 0;

		if (c == 'n' || c == 's' || c == 'r') {
			v = cli_parse_threads(optarg);
			if (!v)
				return cli_usage_error("accel",
						       "invalid "
						       "-%c '%s'",
						       c, optarg);
		}
		if (c == 'n')
			p.iters = v;
		else if (c == 's')
			mib = v;
		else if (c == 'r')
			rd = v;
		else if (c == 'e')
			p.only = optarg;
		else
			return cli_opt_default("accel", c, argv, accel_usage);
	}
	if (cli_nargs("accel", argc - optind, 0, 1, ""))
		return 2;
	if (p.only && !engine_known(p.only))
		return cli_usage_error("accel",
				       "unknown engine '%s' (see "
				       "'ezfs accel list')",
				       p.only);
	if (argc > optind)
		path = argv[optind];
	if (path && cli_open("accel", path, &lg, &img) < 0)
		return 1;
	p.image = img;
	p.sample_bytes = (size_t)mib << 20;
	p.read_bytes = (size_t)rd << 20;
	p.log = on_log;
	p.log_arg = &logged;
	err = ezfs_bench_engines_new(&p, &e);
	if (img)
		ezfs_image_close(img);
	if (err) {
		if (path && !logged)
			cli_fail("accel", path, NULL, err);
		else if (!logged)
			cli_error("accel", "bench: %s", strerror(-err));
		return 1;
	}
	len = ezfs_bench_engines_sample(e, &from);
	printf("sample: %zu bytes (%s), %zu KiB ezfs_pread reads, %s\n", len,
	       path ? path : from, p.read_bytes >> 10,
	       p.iters ? "fixed rounds" : "about 0.2 s per figure");
	printf("MB/s (CPU time, fastest round): raw decode, through ezfs "
	       "(in-memory image built at that pcluster size), "
	       "through/raw\n%-11s %-8s",
	       "ENGINE", "ALG");
	for (k = 0; k < EZFS_BENCH_ENGINE_SIZES; k++)
		printf(" %22zuK", ezfs_bench_engines_size(k) >> 10);
	printf("\n");
	err = ezfs_bench_engines_run(e, on_cell, NULL);
	ezfs_bench_engines_free(e);
	return err ? 1 : 0;
}
