/* SPDX-License-Identifier: MIT */
/*
 * accel_bench.c - ezfs accel bench: its options and its table. The
 * measuring (raw decode against reads through ezfs, per engine and
 * pcluster size) is lib/bench's (ezfs_bench_engines_*); --qd (an image's
 * files read through each engine with that many extents per read, so
 * that many decodes in flight on an asynchronous engine) is here, over
 * the public API.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

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

/* ---- --qd: queue depth ---- */

#define QD_MAX	  32
#define QD_BUFCAP (64u << 20)

struct qwalk {
	ezfs_image *img;
	uint8_t *buf;
	unsigned qd;
	uint64_t bytes, digest;
};

/* Read one file qd whole extents per ezfs_pread (one pread's decodes are
 * handed over together: qd requests in flight on an async engine). */
static int qwalk_file(void *arg, uint64_t nid)
{
	struct qwalk *w = arg;
	struct ezfs_extent ext;
	ezfs_inode *ino;
	uint64_t off = 0, end;
	ssize_t n = 0;
	unsigned k;
	int err = ezfs_inode_get(w->img, nid, &ino);

	if (err)
		return err;
	for (;;) {
		end = off;
		for (k = 0; k < w->qd; k++) {
			if (ezfs_map(ino, end, &ext) || !ext.llen ||
			    ext.la + ext.llen <= end)
				break;
			if (ext.la + ext.llen - off > QD_BUFCAP)
				break;
			end = ext.la + ext.llen;
		}
		if (end == off)
			end = off +
			      (1u << 20); /* past the map: let pread say */
		n = ezfs_pread(ino, w->buf, (size_t)(end - off), off);
		if (n <= 0)
			break;
		/* every 4096th byte of the file, wherever the reads end */
		for (uint64_t i = (4096 - off % 4096) % 4096; i < (uint64_t)n;
		     i += 4096)
			w->digest = (w->digest ^ w->buf[i]) * 0x100000001b3ull;
		off += (uint64_t)n;
		w->bytes += (uint64_t)n;
	}
	ezfs_inode_put(ino);
	return n < 0 ? (int)n : 0;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru); /* every thread: a device's too */
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One figure: engine at depth qd, fastest of rounds (a fresh open each:
 * no cached decodes); 0, or 1 after a line. */
static int qd_cell(const char *path, const char *engine, unsigned qd,
		   unsigned rounds, uint8_t *buf, uint64_t *digest, double *mbs,
		   double *cpu_gb, uint64_t *maxq, uint64_t *req)
{
	struct ezfs_engine_stats st[32];
	struct cli_log lg = { 0 };
	unsigned r;
	int i, n;

	*mbs = 0;
	*cpu_gb = 0;
	*maxq = *req = 0;
	for (r = 0; r < rounds; r++) {
		struct qwalk w = { .buf = buf, .qd = qd };
		double t0, c0, t, c;
		int err;

		if (cli_open("accel", path, &lg, &w.img) < 0)
			return 1;
		if (ezfs_image_set_accel(w.img, engine) ||
		    ezfs_image_set_dispatch(w.img, EZFS_DISPATCH_INLINE, 0)) {
			ezfs_image_close(w.img);
			cli_error("accel", "bench: cannot select %s", engine);
			return 1;
		}
		t0 = wall_s();
		c0 = cpu_s();
		err = accel_for_each_file(w.img, qwalk_file, &w);
		t = wall_s() - t0;
		c = cpu_s() - c0;
		n = ezfs_image_engine_stats(w.img, st, 32);
		for (i = 0; i < n && i < 32; i++)
			if (!strcmp(st[i].name, engine)) {
				*req = st[i].requests;
				if (st[i].in_flight_max > *maxq)
					*maxq = st[i].in_flight_max;
			}
		ezfs_image_close(w.img);
		if (err) {
			cli_fail("accel", path, NULL, err);
			return 1;
		}
		if (*digest && w.digest != *digest) {
			cli_error("accel",
				  "bench: %s at depth %u read other "
				  "bytes than the first engine",
				  engine, qd);
			return 1;
		}
		*digest = w.digest;
		if (t > 0 && w.bytes && (double)w.bytes / t / 1e6 > *mbs) {
			*mbs = (double)w.bytes / t / 1e6;
			*cpu_gb = c / ((double)w.bytes / 1e9);
		}
	}
	return 0;
}

/* Parse "1,8,32" into qd[] (each 1..QD_MAX); the count, 0: invalid. */
static unsigned parse_qd(const char *s, unsigned *qd, unsigned max)
{
	unsigned n = 0;
	char *end;

	while (*s && n < max) {
		unsigned long v = strtoul(s, &end, 10);

		if (end == s || !v || v > QD_MAX || (*end && *end != ','))
			return 0;
		qd[n++] = (unsigned)v;
		s = *end ? end + 1 : end;
	}
	return *s ? 0 : n;
}

static int accel_bench_qd(const char *path, const char *only, const char *qds,
			  unsigned rounds)
{
	struct ezfs_engine_info info;
	unsigned qd[8], nq = parse_qd(qds, qd, 8), i, k;
	uint64_t digest = 0;
	uint8_t *buf;
	int rc = 0;

	if (!nq)
		return cli_usage_error("accel",
				       "invalid --qd '%s' (1..%d, "
				       "comma-separated)",
				       qds, QD_MAX);
	if (!path)
		return cli_usage_error("accel",
				       "--qd reads an image: give IMG");
	buf = malloc(QD_BUFCAP);
	if (!buf) {
		cli_error("accel", "bench: out of memory");
		return 1;
	}
	printf("%s: every file read once per round with QD whole extents per "
	       "ezfs_pread, inline dispatch, fastest of %u rounds\n"
	       "MB/s (wall), CPU s/GB (all threads), in_flight_max\n%-18s",
	       path, rounds, "ENGINE");
	for (k = 0; k < nq; k++)
		printf("  QD=%-2u MB/s CPUs/GB MAXQ", qd[k]);
	printf("\n");
	for (i = 0; i < ezfs_engine_count() && !rc; i++) {
		double mbs, cgb;
		uint64_t maxq, req;

		if (ezfs_engine_get_info(i, &info) || info.probe ||
		    (only ? strcmp(only, info.name)
			  : (info.flags & EZFS_ENGINE_TEST) != 0))
			continue;
		for (k = 0; k < nq && !rc; k++) {
			rc = qd_cell(path, info.name, qd[k], rounds, buf,
				     &digest, &mbs, &cgb, &maxq, &req);
			if (rc)
				break;
			if (!req) /* not this image's algorithm */
				break;
			if (!k)
				printf("%-18s", info.name);
			printf(" %12.0f %7.2f %4llu", mbs, cgb,
			       (unsigned long long)maxq);
			fflush(stdout);
		}
		if (!rc && k)
			printf("\n");
	}
	free(buf);
	return rc;
}

int accel_bench(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "qd", required_argument, NULL, 'Q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *qds = NULL;
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
		else if (c == 'Q')
			qds = optarg;
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
	if (qds)
		return accel_bench_qd(path, p.only, qds, p.iters ? p.iters : 3);
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
