/* SPDX-License-Identifier: MIT */
/*
 * bench.h - measuring how images read and choosing how to build them
 * (libezfs-bench, the library behind `ezfs bench` and `ezfs accel bench`).
 *
 * A bench holds a sample of a source (a directory or a file, copied into
 * a temporary workspace when larger than the bound) or an existing EROFS
 * image, builds images of it with the builder API, measures them and
 * keeps the results as records:
 *
 *   read      sequential, random and small random reads of every file
 *   ratio     image size and build rate per algorithm and level
 *   latency   the engine layer's decode latency per dispatch mode and load
 *   advise    the algorithm, level and pcluster size for the storage the
 *             image will be read from: measured candidates and a model
 *
 * The library prints nothing: errors and notes go to the log callback,
 * the cell being measured to the progress callback; the tables, CSV, JSON
 * and gnuplot files are written to the FILE or path the caller gives.
 * One bench is used from one thread at a time; it starts threads of its
 * own only for the competing load of the latency mode (on a worker pool,
 * joined before the measurement returns). This library uses libezfs
 * through its public API only.
 */
#ifndef EZFS_BENCH_H
#define EZFS_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ezfs/ezfs.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ezfs_bench ezfs_bench;

#define EZFS_BENCH_MAX_CLUSTERS 12
#define EZFS_BENCH_MAX_ALGS	32
#define EZFS_BENCH_MAX_DISP	4

/* The modes: ezfs_bench_run takes one; ezfs_bench_params.modes all those
 * the caller will run (read and latency then share their images). */
enum ezfs_bench_mode {
	EZFS_BENCH_READ = 1 << 0,
	EZFS_BENCH_RATIO = 1 << 1,
	EZFS_BENCH_LATENCY = 1 << 2,
	EZFS_BENCH_ADVISE = 1 << 3,
};

/* Competing CPU load during a latency measurement. */
enum ezfs_bench_load {
	EZFS_BENCH_LOAD_NONE, /* none */
	EZFS_BENCH_LOAD_BUSY, /* one spinning thread per online CPU */
	EZFS_BENCH_NLOADS,
};

/* Who reads the image on the target storage (advise's model). */
enum ezfs_bench_reader {
	EZFS_BENCH_READER_AUTO,	  /* remote for registry-20ms, else kernel */
	EZFS_BENCH_READER_KERNEL, /* a kernel mount: 128 KiB readahead */
	EZFS_BENCH_READER_REMOTE, /* ezfs over http/oci/s3: windows of the
				   * file's next extents, 1 MiB to 32 MiB */
};

/* One compression setting: "zstd:9" = zstd, level 9 (level < 0: the
 * codec's default, as ezfs mkfs -z ALG). */
struct ezfs_bench_alg {
	char name[16]; /* lz4, lz4hc, lzma, deflate, libdeflate, zstd */
	int alg;       /* enum ezfs_alg */
	int hc;	       /* lz4hc, libdeflate */
	int level;
};

/* "lz4", "lz4hc:12", "libdeflate:6"... into *a. 0 or -EINVAL. */
EZFS_API int ezfs_bench_parse_alg(const char *s, struct ezfs_bench_alg *a);

/* One dispatch mode: "queue:4" = queue, 4 workers (ezfs_dispatch_parse). */
struct ezfs_bench_disp {
	char name[12];
	int mode; /* enum ezfs_dispatch */
	unsigned nthreads;
};

/* Progress: cell number done + 1 of total starts, what = its name. */
typedef void (*ezfs_bench_progress_fn)(void *arg, const char *what,
				       unsigned done, unsigned total);

struct ezfs_bench_params {
	size_t size;	 /* sizeof(struct ezfs_bench_params), set by _init */
	unsigned modes;	 /* enum ezfs_bench_mode: what will be run */
	ezfs_log_fn log; /* errors (ERROR), notes (INFO), the page cache
			  * left warm (WARN); NULL: silent */
	void *log_arg;
	ezfs_bench_progress_fn progress; /* NULL: none */
	void *progress_arg;
	const char *tmpdir;  /* the workspace's parent; NULL: $TMPDIR, /tmp */
	uint64_t max_sample; /* bytes of the source sampled; 0: all */
	/* read */
	const char *path; /* read the files under it (pread) instead */
	int no_drop;	  /* path: keep the page cache between runs */
	uint32_t clusters[EZFS_BENCH_MAX_CLUSTERS]; /* read, advise */
	int nclusters;
	int clusters_given; /* advise: else its own list */
	struct ezfs_bench_alg algs[EZFS_BENCH_MAX_ALGS]; /* read, latency */
	int nalgs;
	uint32_t bs;	 /* read size */
	double io_share; /* small random read: share of the blocks, 0..1 */
	uint64_t window; /* seq read: readahead window, 0: bs reads */
	unsigned seed;	 /* the random order */
	/* ratio, latency: one pcluster size; ratio (advise): the levels */
	uint32_t cluster;
	struct ezfs_bench_alg levels[EZFS_BENCH_MAX_ALGS];
	int nlevels;
	int levels_given; /* advise: else its own quick set */
	/* engines and dispatch */
	const char *engines; /* comma-separated names or "default"; NULL */
	const char *accel;   /* every instance's engine order; NULL */
	int strict_accel;
	struct ezfs_bench_disp disp[EZFS_BENCH_MAX_DISP];
	int ndisp;
	int disp_given; /* read, advise: else EZFS_DISPATCH or inline */
	int loads[EZFS_BENCH_NLOADS]; /* latency: enum ezfs_bench_load */
	int nloads;
	/* every measured run */
	double runtime; /* seconds at most */
	int repeat;	/* runs per cell; the median counts (1..100) */
	/* advise */
	const char *goal;    /* size, seq, random, balanced */
	const char *storage; /* a file, device or profile; NULL: the disk
			      * the source is on */
	double storage_rate; /* bytes per second; < 0: not given */
	double storage_lat;  /* seconds per request; < 0: not given */
	int reader;	     /* enum ezfs_bench_reader */
};

/* The defaults of `ezfs bench` (docs/bench.md), size set. */
EZFS_API void ezfs_bench_params_init(struct ezfs_bench_params *p);

/*
 * Set one parameter from its text, as the options of ezfs bench name and
 * write it (docs/bench.md): "clusters" "4K,64K", "algs" "lz4hc,zstd:9",
 * "levels" "zstd:3,9 lzma:6", "dispatch" "inline,queue:2", "load"
 * "none,busy", "engines", "accel", "strict-accel", "window", "bs",
 * "io-share" (percent), "runtime" (s), "size" (the sample bound),
 * "repeat", "cluster", "path", "no-drop", "goal", "storage",
 * "storage-rate" (MB/s), "storage-latency" ("20ms"), "reader" ("kernel",
 * "remote"). Returns 0, -EINVAL (*why, static: what the value must be)
 * or -ENOENT (no such parameter). String values are kept, not copied.
 */
EZFS_API int ezfs_bench_params_set(struct ezfs_bench_params *p,
				   const char *name, const char *value,
				   const char **why);

/*
 * Prepare a bench of source (a directory, a file or an EROFS image; NULL
 * with p->path: the read mode of that view only): the workspace under
 * p->tmpdir, the sample. Returns 0 and *out (free with ezfs_bench_free),
 * or a negative errno after one log line: -ENODATA for a source without
 * file data, -EINVAL for one that is no directory, file or image; *out is
 * then NULL. *out is set as soon as the workspace exists, before the
 * sample is copied, so that a signal handler reading it can remove the
 * workspace (ezfs_bench_cleanup). p is copied; its strings must outlive
 * the bench.
 */
EZFS_API int ezfs_bench_new(const struct ezfs_bench_params *p,
			    const char *source, ezfs_bench **out);

/* What was sampled. */
struct ezfs_bench_source {
	int is_image;	       /* the source is an EROFS image */
	uint64_t input_bytes;  /* file data in the sample */
	uint64_t input_blocks; /* the sum of ceil(size / 4096) */
};
EZFS_API void ezfs_bench_source_info(const ezfs_bench *b,
				     struct ezfs_bench_source *s);

/* The cells mode (one enum ezfs_bench_mode) will measure (progress). */
EZFS_API unsigned ezfs_bench_cells(const ezfs_bench *b, unsigned mode);

/*
 * Run one mode, adding its records. ratio and advise need a source tree
 * (-EINVAL for an image). Returns 0 or a negative errno (logged).
 */
EZFS_API int ezfs_bench_run(ezfs_bench *b, unsigned mode);

/* One measured cell; the fields a mode does not use are 0 or "". */
struct ezfs_bench_rec {
	char mode[12];	   /* read, ratio, latency, advise */
	char workload[16]; /* seq, rand, small | build | decode | candidate */
	char target[16];   /* lib, path, image */
	char alg[16];
	int level; /* -1: the default */
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

/* The records so far, in the order measured; valid until the next run or
 * ezfs_bench_free. */
EZFS_API size_t ezfs_bench_nrecords(const ezfs_bench *b);
EZFS_API const struct ezfs_bench_rec *ezfs_bench_record(const ezfs_bench *b,
							size_t i);

/* The shortest read run of the records, seconds (< 0: none): runs under
 * 50 ms measure the clock more than the reads. */
EZFS_API double ezfs_bench_shortest_read(const ezfs_bench *b);

/*
 * Output. The table of one mode (read, ratio, latency: enum
 * ezfs_bench_mode; advise: the candidates, the front, the pick as an
 * ezfs mkfs command and its reasons) to f. The CSV (one row per record)
 * and JSON (read, ratio, latency: an array of records; advise: one object,
 * docs/bench.md) to path. Return 0 or a negative errno (logged).
 */
EZFS_API int ezfs_bench_write_table(const ezfs_bench *b, unsigned mode,
				    FILE *f);
EZFS_API int ezfs_bench_write_csv(const ezfs_bench *b, const char *path);
EZFS_API int ezfs_bench_write_json(const ezfs_bench *b, const char *path);
/*
 * The charts' data (.dat) and a gnuplot script drawing them into dir
 * (made if missing): read-seq/rand/small.png, ratio.png, latency.png.
 * The script's path into script (size bytes); running gnuplot on it is
 * the caller's choice.
 */
EZFS_API int ezfs_bench_write_plot(const ezfs_bench *b, const char *dir,
				   char *script, size_t size);

/* advise: the pick's ezfs mkfs command (NULL before a run); whether the
 * source is a directory (else the command ends in DIR, to fill in). */
EZFS_API const char *ezfs_bench_advice_command(const ezfs_bench *b,
					       int *source_is_dir);

/*
 * Remove the workspace now (the bench stays usable for output): for a
 * signal handler or atexit of the caller. Only the process that made it
 * removes it. Uses opendir/readdir: not strictly async-signal-safe.
 */
EZFS_API void ezfs_bench_cleanup(ezfs_bench *b);

/* Remove the workspace and free the bench. NULL is fine. */
EZFS_API void ezfs_bench_free(ezfs_bench *b);

/* ------------------------------------------------------------------ */
/* Engines: raw decode against reads through ezfs (ezfs accel bench)   */

#define EZFS_BENCH_ENGINE_SIZES 5 /* 4K, 16K, 64K, 256K, 1M */

typedef struct ezfs_bench_engines ezfs_bench_engines;

struct ezfs_bench_engines_params {
	size_t size; /* sizeof(struct ezfs_bench_engines_params), by _init */
	ezfs_image *image;   /* the sample: its files' data; NULL: text */
	size_t sample_bytes; /* at most (4 MiB) */
	size_t read_bytes;   /* the ezfs_pread size (4 MiB) */
	unsigned iters;	     /* rounds per figure; 0: about 0.2 s */
	const char *only;    /* this engine only; NULL: every usable one */
	const char *tmpdir;  /* NULL: $TMPDIR (if short), /tmp */
	ezfs_log_fn log;     /* NULL: silent */
	void *log_arg;
};
EZFS_API void
ezfs_bench_engines_params_init(struct ezfs_bench_engines_params *p);

/* One figure pair: engine at one pcluster size (index of the row). */
struct ezfs_bench_engines_cell {
	const char *engine;
	int alg;
	unsigned index; /* 0 .. EZFS_BENCH_ENGINE_SIZES - 1 */
	size_t pcluster;
	int err;	 /* the cell failed: a negative errno */
	double raw_mb_s; /* ezfs_engine_bench_raw: decode in memory */
	double thr_mb_s; /* ezfs_pread of an in-memory image of it */
};
typedef void (*ezfs_bench_engines_fn)(void *arg,
				      const struct ezfs_bench_engines_cell *c);

/*
 * Take the sample (p->image's files, or generated text) and write it to a
 * temporary directory. Returns 0 and *out, or a negative errno (logged:
 * -ENODATA for an image without file data).
 */
EZFS_API int ezfs_bench_engines_new(const struct ezfs_bench_engines_params *p,
				    ezfs_bench_engines **out);
/* The sample's bytes, and where they came from (*from, static or p's). */
EZFS_API size_t ezfs_bench_engines_sample(const ezfs_bench_engines *e,
					  const char **from);
/* The sizes of the cells, index 0 .. EZFS_BENCH_ENGINE_SIZES - 1. */
EZFS_API size_t ezfs_bench_engines_size(unsigned index);
/* Measure every usable engine (p->only: that one) of every algorithm at
 * each size, calling fn for each cell in order (a row is an engine, index
 * 0 starts it). Returns 0 or a negative errno. */
EZFS_API int ezfs_bench_engines_run(ezfs_bench_engines *e,
				    ezfs_bench_engines_fn fn, void *arg);
/* Remove the temporary directory and free. NULL is fine. */
EZFS_API void ezfs_bench_engines_free(ezfs_bench_engines *e);

#ifdef __cplusplus
}
#endif

#endif
