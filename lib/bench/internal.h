/* SPDX-License-Identifier: MIT */
/* bench/internal.h - what the files of lib/bench share. */
#ifndef EZFS_BENCH_INTERNAL_H
#define EZFS_BENCH_INTERNAL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "ezfs/bench.h"
#include "ezfs/ezfs.h"

#define EZI_BENCH_MAX_ENGINES 8
#define EZI_BENCH_KEPT_MAX    EZFS_BENCH_MAX_ALGS

extern const char *const ezi_bench_load_names[EZFS_BENCH_NLOADS];
extern const char *const ezi_bench_workloads[3]; /* seq, rand, small */

/* What the page cache was like at the start of path runs (read.c), for
 * the read table's title (out.c). */
enum ezi_bench_cache {
	EZI_BENCH_CACHE_LIB,	     /* no path run: library targets */
	EZI_BENCH_CACHE_DROPPED,     /* dropped before each run */
	EZI_BENCH_CACHE_KEPT,	     /* no_drop */
	EZI_BENCH_CACHE_NOT_DROPPED, /* no permission */
};

struct ezi_bench_advice; /* advise.c */

struct ezfs_bench {
	struct ezfs_bench_params p;
	/* the source and its sample (src.c) */
	const char *source; /* as given */
	int is_image;
	char *dir; /* the directory given to the builder */
	uint64_t input_bytes, input_blocks;
	/* the workspace */
	char tmp[PATH_MAX - 512];
	pid_t owner;
	/* images kept for a later mode (read, then latency) */
	uint32_t keep_cluster;
	struct {
		char *path;
		uint64_t bytes;
		double seconds;
	} kept[EZI_BENCH_KEPT_MAX];
	int nkept;
	/* the records */
	struct ezfs_bench_rec *v;
	size_t n, cap;
	/* progress */
	unsigned total, done;
	enum ezi_bench_cache cache;
	int drop_warned;
	int described[3]; /* latency: the notes on each dispatch mode */
	struct ezi_bench_advice *adv;
};

/* ---- bench.c: logging, progress, records, the clock ---- */
void ezi_bench_log(const ezfs_bench *b, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* "IMAGE: reason" for err */
void ezi_bench_fail(const ezfs_bench *b, const char *what, int err);
void ezi_bench_cell(ezfs_bench *b, const char *what);
void ezi_bench_done(ezfs_bench *b);
void ezi_bench_rec_init(struct ezfs_bench_rec *rec, const char *mode);
int ezi_bench_add(ezfs_bench *b, const struct ezfs_bench_rec *rec);
double ezi_bench_now(void);
double ezi_bench_median(double *v, size_t n); /* sorts v */
unsigned ezi_bench_cpus(void);

/* ---- src.c: the workspace, the sample, image builds ---- */
int ezi_bench_is_erofs(const char *path);
int ezi_bench_tmp_init(ezfs_bench *b);
int ezi_bench_src_prepare(ezfs_bench *b, const char *source);
/* Build an image of the sample into the workspace; *path malloc'ed. An
 * image at b->keep_cluster is built once and kept. */
int ezi_bench_build(ezfs_bench *b, const struct ezfs_bench_alg *a,
		    uint32_t cluster, char **path, uint64_t *image_bytes,
		    double *seconds);
/* Done with an image of ezi_bench_build: deleted (unless kept), freed. */
void ezi_bench_image_done(ezfs_bench *b, char *path, uint32_t cluster);

/* ---- fmt.c ---- */
void ezi_bench_alg_label(const struct ezfs_bench_alg *a, char *buf,
			 size_t size);
const char *ezi_bench_fmt_cluster(uint32_t c, char *buf, size_t size);

/* ---- target.c: files, read targets and workloads ---- */
struct ezi_bench_file {
	uint64_t nid;
	uint64_t size;
};
struct ezi_bench_files {
	struct ezi_bench_file *v;
	size_t n, cap;
	uint64_t total;
};
/* Every regular file with data under the root, depth first in directory
 * order (a directory seen twice is walked once). */
int ezi_bench_list_files(ezfs_image *img, struct ezi_bench_files *fl);
/* One read target: the library (inodes of a fresh image instance) or a
 * mounted view (paths). */
struct ezi_bench_target {
	ezfs_image *img;
	ezfs_inode **inos;
	char **paths;
	int *fds;
	struct ezi_bench_files fl;
	char *buf;
	uint32_t bs;
	uint8_t *wbuf; /* seq: the readahead window */
	size_t wcap;
};
int ezi_bench_target_open_lib(ezfs_bench *b, struct ezi_bench_target *t,
			      const char *image, uint32_t bs,
			      const char *engine,
			      const struct ezfs_bench_disp *d);
int ezi_bench_target_open_path(ezfs_bench *b, struct ezi_bench_target *t,
			       const char *dir, uint32_t bs);
void ezi_bench_target_close(struct ezi_bench_target *t);
/* One run of workload w (index of ezi_bench_workloads); window: seq's
 * readahead window (0: bs reads). */
int ezi_bench_run_workload(ezfs_bench *b, struct ezi_bench_target *t, int w,
			   uint64_t window, double runtime, uint64_t *bytes,
			   double *secs);
/* The algorithm of an image's first compressed extent (-1: none found);
 * its name (or "image") in buf. */
int ezi_bench_image_alg(const char *image, char *buf, size_t size);

/* ---- eng.c: engines, dispatch modes, the competing load ---- */
int ezi_bench_engines_for(const ezfs_bench *b, int alg, char names[][24],
			  int max, int note);
/* An engine of ezi_bench_engines_for as the tables name it ("default"
 * is the accel spec where one was given). */
const char *ezi_bench_engine_label(const ezfs_bench *b, const char *engine);
int ezi_bench_open(const ezfs_bench *b, const char *image, const char *engine,
		   const struct ezfs_bench_disp *d, ezfs_image **img);
void ezi_bench_disp_label(ezfs_image *img, char *buf, size_t size);
void ezi_bench_disp_describe(ezfs_image *img, char *buf, size_t size);
struct ezi_pool;
struct ezi_bench_load {
	struct ezi_pool *pool;
	unsigned n;
	int stop;
};
int ezi_bench_load_start(struct ezi_bench_load *l, int kind);
void ezi_bench_load_stop(struct ezi_bench_load *l);

/* ---- the modes ---- */
int ezi_bench_read(ezfs_bench *b);
unsigned ezi_bench_read_cells(const ezfs_bench *b);
int ezi_bench_ratio(ezfs_bench *b);
int ezi_bench_latency(ezfs_bench *b);
unsigned ezi_bench_latency_cells(const ezfs_bench *b);
int ezi_bench_advise(ezfs_bench *b);
unsigned ezi_bench_advise_cells(const ezfs_bench *b);
int ezi_bench_advice_table(const ezfs_bench *b, FILE *f);
int ezi_bench_advice_json(const ezfs_bench *b, const char *path);
void ezi_bench_advice_free(struct ezi_bench_advice *a);

/* ---- out.c ---- */
const char *ezi_bench_cache_note(enum ezi_bench_cache c);
void ezi_bench_json_str(FILE *f, const char *s);
/* fclose(f) of path: 0, or -EIO logged */
int ezi_bench_close(const ezfs_bench *b, FILE *f, const char *path);
FILE *ezi_bench_create(const ezfs_bench *b, const char *path);

#endif
