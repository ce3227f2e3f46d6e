/* SPDX-License-Identifier: MIT */
/* accel.c - ezfs accel: list decompression engines, per-image stats. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ezfs/engine.h>
#include <ezfs/ezfs.h>

#include "cmd.h"

static void accel_usage(void)
{
	fprintf(stderr,
		"usage: ezfs accel list\n"
		"       ezfs accel stats [--accel SPEC] [--dispatch MODE] "
		"[--strict-accel] IMG\n"
		"       ezfs accel bench [-n ITERS] [IMG]\n"
		"  SPEC: ALG=ENG[,ENG..][;ALG=..] or ENG (first for its "
		"algorithm)\n"
		"  MODE: inline, queue[:N], percpu\n"
		"  The environment sets the same for every command: EZFS_ACCEL,\n"
		"  EZFS_DISPATCH, EZFS_STRICT_ACCEL=1.\n");
}

static int accel_list(void)
{
	struct ezfs_engine_info info;
	unsigned i;

	printf("%-11s %-8s %-7s %-9s %-8s %s\n", "ENGINE", "ALG", "USABLE",
	       "DEFAULT", "PARTIAL", "NOTE");
	for (i = 0; i < ezfs_engine_count(); i++) {
		char pos[16];

		if (ezfs_engine_get_info(i, &info))
			continue;
		if (info.default_pos >= 0)
			snprintf(pos, sizeof(pos), "%d", info.default_pos + 1);
		else
			snprintf(pos, sizeof(pos), "off");
		printf("%-11s %-8s %-7s %-9s %-8s %s\n", info.name,
		       ezfs_alg_name(info.alg),
		       info.probe ? "no" : "yes", pos,
		       info.flags & EZFS_ENGINE_PARTIAL ? "yes" : "no",
		       info.flags & EZFS_ENGINE_TEST ? "test only: always fails" :
		       info.reference ? "reference (fallback)" : "");
	}
	return 0;
}

/*
 * Call fn(arg, nid) for each regular file under directory nid, depth first;
 * a non-zero return (or a read error) ends the walk with that value.
 */
struct files_walk {
	ezfs_image *img;
	int (*fn)(void *arg, uint64_t nid);
	void *arg;
};

static int files_dir(struct files_walk *fw, uint64_t nid);

static int files_ent(void *arg, const char *name, size_t namelen,
		     uint64_t nid, unsigned ftype, uint64_t next_pos)
{
	struct files_walk *fw = arg;

	if ((namelen == 1 && name[0] == '.') ||
	    (namelen == 2 && !memcmp(name, "..", 2)))
		return 0;
	if (ftype == EZFS_FT_DIR)
		return files_dir(fw, nid);
	if (ftype != EZFS_FT_REG)
		return 0;
	return fw->fn(fw->arg, nid);
}

static int files_dir(struct files_walk *fw, uint64_t nid)
{
	ezfs_inode *dir;
	int err = ezfs_inode_get(fw->img, nid, &dir);

	if (err)
		return err;
	err = ezfs_readdir(dir, 0, files_ent, fw);
	ezfs_inode_put(dir);
	return err;
}

static int for_each_file(ezfs_image *img, int (*fn)(void *arg, uint64_t nid),
			 void *arg)
{
	struct files_walk fw = { .img = img, .fn = fn, .arg = arg };

	return files_dir(&fw, ezfs_root_nid(img));
}

struct walk {
	ezfs_image *img;
	uint8_t *buf;
	uint64_t bytes;
};

/* Read a whole file, for the timing walk. */
static int walk_file(void *arg, uint64_t nid)
{
	struct walk *w = arg;
	ezfs_inode *ino;
	uint64_t off = 0;
	ssize_t n;
	int err;

	err = ezfs_inode_get(w->img, nid, &ino);
	if (err)
		return err;
	while ((n = ezfs_pread(ino, w->buf, 1 << 20, off)) > 0) {
		off += (uint64_t)n;
		w->bytes += (uint64_t)n;
	}
	ezfs_inode_put(ino);
	return n < 0 ? (int)n : 0;
}

static void log_stderr(void *arg, int level, const char *msg)
{
	(void)arg;
	(void)level;
	fprintf(stderr, "ezfs accel: %s\n", msg);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int accel_stats(int argc, char **argv)
{
	const char *spec = NULL, *mode = NULL, *path = NULL;
	struct ezfs_engine_stats st[32];
	struct ezfs_latency_stats ls;
	struct ezfs_dispatch_info di;
	struct ezfs_open_params p;
	struct walk w = { 0 };
	ezfs_image *img;
	int strict = 0, i, n, err;
	unsigned nt;
	double t0, t;
	char order[256];

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--accel") && i + 1 < argc)
			spec = argv[++i];
		else if (!strcmp(argv[i], "--dispatch") && i + 1 < argc)
			mode = argv[++i];
		else if (!strcmp(argv[i], "--strict-accel"))
			strict = 1;
		else if (argv[i][0] != '-' && !path)
			path = argv[i];
		else {
			accel_usage();
			return 2;
		}
	}
	if (!path) {
		accel_usage();
		return 2;
	}
	ezfs_open_params_init(&p);
	p.log = log_stderr;
	err = ezfs_image_open(path, &p, &img);
	if (err) {
		fprintf(stderr, "ezfs accel: %s: %s\n", path, ezfs_strerror(err));
		return 1;
	}
	err = spec ? ezfs_image_set_accel(img, spec) : 0;
	if (!err && mode) {
		int m = ezfs_dispatch_parse(mode, &nt);

		err = m < 0 ? m : ezfs_image_set_dispatch(img, m, nt);
		if (m < 0)
			fprintf(stderr, "ezfs accel: bad --dispatch '%s'\n",
				mode);
	}
	if (!err && strict)
		err = ezfs_image_set_strict_accel(img, 1);
	w.img = img;
	w.buf = malloc(1 << 20);
	if (!err && !w.buf)
		err = -ENOMEM;
	t0 = now_s();
	if (!err)
		err = for_each_file(img, walk_file, &w);
	t = now_s() - t0;
	free(w.buf);
	if (err) {
		fprintf(stderr, "ezfs accel: %s: %s\n", path, ezfs_strerror(err));
		ezfs_image_close(img);
		return 1;
	}
	ezfs_image_get_accel(img, order, sizeof(order));
	ezfs_image_dispatch_info(img, &di);
	printf("order: %s\n", order);
	printf("read %llu bytes in %.3f s (%.1f MB/s), dispatch %s, "
	       "%u workers (%u pinned, %s, nice %d), %llu batches\n",
	       (unsigned long long)w.bytes, t, t > 0 ? w.bytes / t / 1e6 : 0,
	       ezfs_dispatch_name(di.mode), di.workers, di.pinned,
	       di.policy ? "SCHED_FIFO" : "SCHED_OTHER", di.nice,
	       (unsigned long long)di.batches);
	printf("%-11s %-8s %10s %14s %10s %8s\n", "ENGINE", "ALG", "REQUESTS",
	       "BYTES_OUT", "FALLBACKS", "ERRORS");
	n = ezfs_image_engine_stats(img, st, 32);
	for (i = 0; i < n && i < 32; i++)
		if (st[i].requests)
			printf("%-11s %-8s %10llu %14llu %10llu %8llu\n",
			       st[i].name, ezfs_alg_name(st[i].alg),
			       (unsigned long long)st[i].requests,
			       (unsigned long long)st[i].bytes_out,
			       (unsigned long long)st[i].fallbacks,
			       (unsigned long long)st[i].errors);
	ezfs_image_latency_stats(img, &ls);
	printf("latency (us, last %llu of %llu): avg %.1f median %.1f "
	       "min %.1f max %.1f stddev %.1f\n", (unsigned long long)ls.count,
	       (unsigned long long)ls.total, ls.avg, ls.median, ls.min, ls.max,
	       ls.stddev);
	ezfs_image_close(img);
	return 0;
}

/* The files of an image (up to 64 MiB), for the raw benchmark. */
struct slurp {
	ezfs_image *img;
	uint8_t *buf;
	size_t len, cap;
};

static int slurp_file(void *arg, uint64_t nid)
{
	struct slurp *s = arg;
	ezfs_inode *ino;
	ssize_t n;
	int err;

	if (s->len == s->cap)
		return 0;
	err = ezfs_inode_get(s->img, nid, &ino);
	if (err)
		return err;
	n = ezfs_pread(ino, s->buf + s->len, s->cap - s->len, 0);
	ezfs_inode_put(ino);
	if (n < 0)
		return (int)n;
	s->len += (size_t)n;
	return 0;
}

/* /usr/share/common-licenses/ concatenated. */
static int slurp_licenses(struct slurp *s)
{
	static const char *const files[] = {
		"Apache-2.0", "Artistic", "BSD", "CC0-1.0", "GFDL-1.3",
		"GPL-2", "GPL-3", "LGPL-2", "LGPL-2.1", "LGPL-3", "MPL-2.0",
	};
	size_t i, round;
	char path[256];

	for (round = 0; round < 1; round++) { /* one copy: no long repeats */
		for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			FILE *f;
			size_t n;

			snprintf(path, sizeof(path),
				 "/usr/share/common-licenses/%s", files[i]);
			f = fopen(path, "rb");
			if (!f)
				continue;
			n = fread(s->buf + s->len, 1, s->cap - s->len, f);
			s->len += n;
			fclose(f);
		}
	}
	return s->len ? 0 : -ENOENT;
}

static int accel_bench(int argc, char **argv)
{
	static const size_t sizes[] = { 4096, 16384, 65536, 262144, 1048576 };
	struct ezfs_open_params p;
	struct ezfs_engine_info info;
	struct ezfs_sb_info si;
	struct slurp s = { 0 };
	const char *path = NULL;
	unsigned iters = 20, i, k;
	ezfs_image *img = NULL;
	int err, a;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "-n") && a + 1 < argc)
			iters = (unsigned)atoi(argv[++a]);
		else if (argv[a][0] != '-' && !path)
			path = argv[a];
		else {
			accel_usage();
			return 2;
		}
	}
	if (!iters)
		iters = 1;
	s.cap = 64u << 20;
	s.buf = malloc(s.cap);
	if (!s.buf)
		return 1;
	ezfs_open_params_init(&p);
	p.log = log_stderr;
	p.cache_bytes = 1 << 20;
	if (path) {
		err = ezfs_image_open(path, &p, &img);
		s.img = img;
		if (!err)
			err = for_each_file(img, slurp_file, &s);
	} else {
		err = slurp_licenses(&s);
	}
	if (err) {
		fprintf(stderr, "ezfs accel bench: %s: %s\n",
			path ? path : "/usr/share/common-licenses",
			ezfs_strerror(err));
		ezfs_image_close(img);
		free(s.buf);
		return 1;
	}
	printf("data: %zu bytes from %s, %u decodes of each pcluster\n",
	       s.len, path ? path : "/usr/share/common-licenses", iters);
	printf("raw decode, MB/s (compression ratio)\n%-11s %-8s", "ENGINE",
	       "ALG");
	for (k = 0; k < 5; k++)
		printf(" %15zuK", sizes[k] >> 10);
	printf("\n");
	for (i = 0; i < ezfs_engine_count(); i++) {
		if (ezfs_engine_get_info(i, &info) || info.probe ||
		    (info.flags & EZFS_ENGINE_TEST))
			continue;
		printf("%-11s %-8s", info.name, ezfs_alg_name(info.alg));
		for (k = 0; k < 5; k++) {
			double mbps = 0, ratio = 0;

			err = ezfs_engine_bench_raw(info.name, s.buf, s.len,
						    sizes[k], iters, &mbps,
						    &ratio);
			if (err)
				printf(" %16s", ezfs_strerror(err));
			else
				printf(" %9.0f (%4.2f)", mbps, ratio);
			fflush(stdout);
		}
		printf("\n");
	}
	if (img) {
		ezfs_get_sb_info(img, &si);
		printf("read path (ezfs_pread of every file, 1 MiB cache), "
		       "MB/s, against raw decode at the same pcluster size "
		       "is the ratio to compare\n");
		for (i = 0; i < ezfs_engine_count(); i++) {
			struct walk w = { .img = img };
			char spec[64];
			double t0, t;
			unsigned r;

			if (ezfs_engine_get_info(i, &info) || info.probe ||
			    (info.flags & EZFS_ENGINE_TEST) ||
			    !(si.available_algs & (1u << info.alg)))
				continue;
			snprintf(spec, sizeof(spec), "%s=%s",
				 ezfs_alg_name(info.alg), info.name);
			if (ezfs_image_set_accel(img, spec))
				continue;
			w.buf = malloc(1 << 20);
			if (!w.buf)
				break;
			t0 = now_s();
			for (r = 0, err = 0; r < iters && !err; r++)
				err = for_each_file(img, walk_file, &w);
			t = now_s() - t0;
			free(w.buf);
			if (err)
				printf("%-11s %s\n", info.name,
				       ezfs_strerror(err));
			else
				printf("%-11s %9.0f MB/s\n", info.name,
				       t > 0 ? (double)w.bytes / t / 1e6 : 0);
		}
	}
	ezfs_image_close(img);
	free(s.buf);
	return 0;
}

int cmd_accel(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		accel_usage();
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "list"))
		return accel_list();
	if (!strcmp(argv[1], "stats"))
		return accel_stats(argc - 1, argv + 1);
	if (!strcmp(argv[1], "bench"))
		return accel_bench(argc - 1, argv + 1);
	accel_usage();
	return 2;
}
