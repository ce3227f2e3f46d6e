/* SPDX-License-Identifier: MIT */
/* bench/bench.h - shared state of ezfs bench (options, records). */
#ifndef EZFS_TOOL_BENCH_H
#define EZFS_TOOL_BENCH_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ezfs/ezfs.h"

#define BENCH_CMD	   "bench"
#define BENCH_MAX_CLUSTERS 12
#define BENCH_MAX_ALGS	   32
#define BENCH_MAX_DISP	   4
#define BENCH_MAX_ENGINES  8

/* Competing CPU load during a measurement (--load). */
enum { BENCH_LOAD_NONE, BENCH_LOAD_BUSY, BENCH_NLOADS };
extern const char *const bench_load_names[BENCH_NLOADS]; /* none, busy */

/* One dispatch mode of --dispatch: "queue:4" -> queue, 4 workers. */
struct bench_disp {
	char name[12];
	int mode; /* enum ezfs_dispatch */
	unsigned nthreads;
};

/* One compression setting: "zstd", level 9 (level < 0: codec default). */
struct bench_alg {
	char name[16]; /* lz4, lz4hc, lzma, deflate, zstd */
	int alg, hc, level;
};

struct bench_opts {
	int quiet;
	int no_drop; /* --no-drop: keep the page cache */
	const char *csv, *json, *plot;
	const char *path;    /* --path DIR: read through a mounted view */
	const char *engines; /* --engines: engine names, "default" */
	const char *accel;   /* --accel SPEC: every instance's order */
	int strict;	     /* --strict-accel */
	struct bench_disp disp[BENCH_MAX_DISP]; /* --dispatch */
	int ndisp;
	int disp_given; /* read: --dispatch given (else EZFS_DISPATCH) */
	int loads[BENCH_NLOADS]; /* --load: BENCH_LOAD_* */
	int nloads;
	uint64_t window;  /* seq read: readahead window, 0 = none */
	const char *goal; /* advise: size|seq|random|balanced */
	/* advise: the storage the image will be read from: --storage
	 * PATH|PROFILE, --storage-rate (MB/s), --storage-latency (s); < 0 =
	 * not given */
	const char *storage;
	double storage_rate, storage_lat;
	int levels_given, clusters_given;
	uint32_t clusters[BENCH_MAX_CLUSTERS];
	int nclusters;
	uint32_t ratio_cluster;		       /* --cluster for ratio/latency */
	struct bench_alg algs[BENCH_MAX_ALGS]; /* read, latency */
	int nalgs;
	struct bench_alg levels[BENCH_MAX_ALGS]; /* ratio */
	int nlevels;
	uint32_t bs;	 /* read block size */
	double io_share; /* small random read share of the data */
	double runtime;	 /* seconds per measured run (cap) */
	uint64_t size;	 /* bytes of SOURCE sampled */
	int repeat;
	unsigned seed;
};

/* One measured cell; fields a mode does not use stay 0 / "". */
struct bench_rec {
	char mode[12];	   /* read, ratio, latency, advise */
	char workload[16]; /* seq, rand, small | build | decode | ... */
	char target[16];   /* lib, path, image */
	char alg[16];
	int level; /* -1: default */
	uint32_t cluster;
	char engine[24];
	char dispatch[12];
	char load[8]; /* latency: none, busy */
	int repeat;
	uint64_t bytes;
	double seconds;
	double mib_s;
	uint64_t input_blocks, image_blocks;
	double ratio, mkfs_mb_s;
	uint64_t samples;
	double avg_us, median_us, min_us, max_us, stddev_us;
};

/* Results collected over the run (out.c). */
struct bench_results {
	struct bench_rec *v;
	size_t n, cap;
};
int bench_add(struct bench_results *r, const struct bench_rec *rec);
void bench_rec_init(struct bench_rec *rec, const char *mode);
void bench_print_table(FILE *f, const struct bench_results *r,
		       const char *mode);
int bench_write_csv(const char *path, const struct bench_results *r);
int bench_write_json(const char *path, const struct bench_results *r);
int bench_plot(const char *dir, const struct bench_results *r, int quiet);

/* Progress line: "[3/15] read zstd 64K rand ... ETA 0:42". */
struct bench_prog {
	int on;
	unsigned total, done;
	double start;
};
void bench_prog_init(struct bench_prog *p, int quiet, unsigned total);
void bench_prog_cell(struct bench_prog *p, const char *what);
void bench_prog_done(struct bench_prog *p);
void bench_prog_end(struct bench_prog *p);

/* Temporary workspace and sources (src.c). */
struct bench_src {
	const char *source;    /* as given */
	int is_image;	       /* SOURCE is an EROFS image */
	char *dir;	       /* directory given to the builder */
	uint64_t input_bytes;  /* regular file bytes under dir */
	uint64_t input_blocks; /* sum of ceil(size / 4096) */
};
int bench_is_erofs(const char *path);
/* Create the temp dir (removed at exit, on SIGINT, SIGTERM and SIGHUP;
 * a signal ignored at startup stays ignored). */
int bench_tmp_init(void);
const char *bench_tmp_dir(void);
void bench_tmp_cleanup(void);
/* A source without file data (an empty directory or file) is an error
 * (-ENODATA), printed. */
int bench_src_prepare(struct bench_src *s, const char *source,
		      uint64_t max_bytes);
void bench_src_free(struct bench_src *s);
/* Build an image of s->dir into the temp dir; *path is malloc'ed. An image
 * at the cluster size of bench_keep_cluster() is built once and kept. */
int bench_build(const struct bench_src *s, const struct bench_alg *a,
		uint32_t cluster, char **path, uint64_t *image_bytes,
		double *seconds);
void bench_keep_cluster(uint32_t cluster);
/* Done with an image of bench_build: deleted (unless kept), path freed. */
void bench_image_done(char *path, uint32_t cluster);

/* Engines, dispatch modes, competing load (eng.c). */
int bench_parse_dispatch(const char *s, struct bench_opts *o);
int bench_parse_loads(const char *s, struct bench_opts *o);
int bench_check_engines(const char *list);
int bench_engines_for(const struct bench_opts *o, int alg, char names[][24],
		      int max, int note);
/* --accel SPEC (NULL: none) and --strict-accel for every bench_open. */
void bench_set_engine_opts(const char *accel, int strict);
/* An engine of bench_engines_for as the tables name it ("default" is the
 * --accel spec where one was given). */
const char *bench_engine_label(const char *engine);
int bench_open(const char *image, const char *engine,
	       const struct bench_disp *d, ezfs_image **img);
void bench_disp_label(ezfs_image *img, char *buf, size_t size);
void bench_disp_describe(ezfs_image *img, char *buf, size_t size);
struct bench_load {
	pthread_t *th;
	unsigned n;
	int stop;
};
int bench_load_start(struct bench_load *l, int kind);
void bench_load_stop(struct bench_load *l);

/* Parsing and formatting helpers (fmt.c). */
int bench_parse_alg(const char *s, struct bench_alg *a);
void bench_alg_label(const struct bench_alg *a, char *buf, size_t size);
const char *bench_fmt_cluster(uint32_t c, char *buf, size_t size);

/* Statistics helpers (out.c). */
double bench_median(double *v, size_t n); /* sorts v */

/* What the page cache was like at the start of --path runs: read.c sets
 * it, the read table's title names it (out.c). */
enum bench_cache {
	BENCH_CACHE_LIB,	 /* no --path run: library targets */
	BENCH_CACHE_DROPPED,	 /* dropped before each run */
	BENCH_CACHE_KEPT,	 /* --no-drop */
	BENCH_CACHE_NOT_DROPPED, /* no permission */
};
void bench_cache_set(enum bench_cache state);
enum bench_cache bench_cache_get(void);
/* The cache the read table's figures start from, for its title. */
const char *bench_cache_note(void);

/* Modes. Each returns 0 or a negative errno. */
int bench_read(const struct bench_opts *o, const struct bench_src *s,
	       struct bench_results *r, struct bench_prog *pg);
unsigned bench_read_cells(const struct bench_opts *o,
			  const struct bench_src *s);
/* One line on stderr when a read cell's run was too short to mean much. */
void bench_read_warn_short(const struct bench_results *res);
int bench_ratio(const struct bench_opts *o, const struct bench_src *s,
		struct bench_results *r, struct bench_prog *pg);
int bench_latency(const struct bench_opts *o, const struct bench_src *s,
		  struct bench_results *r, struct bench_prog *pg);
unsigned bench_latency_cells(const struct bench_opts *o,
			     const struct bench_src *s);
int bench_advise(const struct bench_opts *o, const struct bench_src *s,
		 struct bench_results *r);

/* The algorithm of an image's first compressed extent (-1: none found);
 * its name (or "image") in buf (target.c). */
int bench_image_alg(const char *image, char *buf, size_t size);

/* Library read helpers shared by read, latency and advise (target.c). */
struct bench_file {
	uint64_t nid;
	uint64_t size;
};
struct bench_files {
	struct bench_file *v;
	size_t n, cap;
	uint64_t total;
};
int bench_list_files(ezfs_image *img, struct bench_files *fl);
/* Read targets and workloads (target.c). One target: the library
 * (inodes of a fresh image instance) or a mounted view (paths). */
struct bench_target {
	ezfs_image *img;
	ezfs_inode **inos;
	char **paths;
	int *fds;
	struct bench_files fl;
	char *buf;
	uint32_t bs;
	uint8_t *wbuf; /* seq: the readahead window */
	size_t wcap;
};
extern const char *const bench_workloads[3]; /* seq, rand, small */
int bench_target_open_lib(struct bench_target *t, const char *image,
			  uint32_t bs, const char *engine,
			  const struct bench_disp *d);
int bench_target_open_path(struct bench_target *t, const char *dir,
			   uint32_t bs);
void bench_target_close(struct bench_target *t);
/* One run of workload w (index into bench_workloads). */
int bench_run_workload(struct bench_target *t, int w,
		       const struct bench_opts *o, uint64_t *bytes,
		       double *secs);
/* Sequential read of every file through a fresh instance of image. */
int bench_lib_seq(const char *image, uint32_t bs, double cap,
		  const struct bench_disp *d, uint64_t *bytes, double *seconds);
double bench_now(void);

#endif
