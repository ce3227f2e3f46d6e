/* SPDX-License-Identifier: MIT */
/*
 * bench/advise.h - what the advisor's files share: the target storage
 * (storage.c), the candidates and the model (model.c), the run
 * (advise.c) and its output (advice.c).
 */
#ifndef EZFS_BENCH_ADVISE_H
#define EZFS_BENCH_ADVISE_H

#include "bench/internal.h"

#define ADV_MIB 1048576.0
/* An axis on which every candidate is within 10% counts for little in
 * the balanced score. */
#define ADV_MIN_SPREAD 1.1
/* A single goal: candidates within 1% of the best on its axis tie, and
 * the other two axes decide among them. */
#define ADV_GOAL_TIE 0.01

/* The readers of the model (docs/bench.md). The kernel reads a file in
 * readahead windows of 128 KiB (read_ahead_kb), each grown to whole
 * pclusters, one request per physical run, one at a time. ezfs over a
 * remote source (lib/read/hint.c, lib/remote/source.c) reads what
 * ezfs cat asks for, 4 MiB, and hints the file's next extents in a window
 * from 1 MiB doubling to 32 MiB; a hint is cut into ranges of at most
 * 1 MiB, 16 in flight: one round trip per 16 ranges. Opening the image
 * costs it two round trips (the first 256 KiB, the metadata area). */
#define KERNEL_RA	(128u << 10)
#define REMOTE_READ	(4u << 20)
#define REMOTE_WIN_MIN	(1u << 20)
#define REMOTE_WIN_MAX	(32u << 20)
#define REMOTE_RANGE	(1u << 20)
#define REMOTE_INFLIGHT 16
#define REMOTE_OPEN	2

struct adv_storage {
	double rate; /* bytes per second */
	double lat;  /* seconds per request */
	int rough;   /* measured from under 64 MiB */
	int reader;  /* EZFS_BENCH_READER_KERNEL or _REMOTE */
	char what[400];
};

struct adv_cand {
	struct ezfs_bench_alg a;
	uint32_t cluster;
	double ratio;  /* image blocks / input blocks */
	double mkfs;   /* MB/s of input */
	double read;   /* seconds per MiB of file data read through the
			* library from the page cache: decoding and copying */
	double dshare; /* share of the file data in encoded extents */
	double decode; /* MiB/s decoded: encoded data / read time; 0 when
			* nothing is encoded */
	/* a cold random 4 KiB read, weighted by the data each extent holds:
	 * the mean bytes it fetches and decodes */
	double rand_fetch, rand_decode;
	double seq_extent; /* the mean physical extent */
	double seq_rounds; /* round trips per MiB of a sequential read */
	/* the model, per MiB of file data (seconds) */
	double t_storage, t_requests, t_decode, seq_s, rand_s;
	double score;
	int front, tied;
};

struct ezi_bench_advice {
	struct adv_storage st;
	struct adv_cand *c;
	size_t n, pick;
	char cmd[9400];
	int is_dir;
};

/* storage.c: a profile or a measurement, then the explicit figures. */
int ezi_adv_storage(ezfs_bench *b, struct adv_storage *st);
const char *ezi_adv_reader_name(int reader);

/* model.c */
/* The extent figures of an image for reader (rand_*, seq_*, dshare). */
void ezi_adv_extents(const char *image, int reader, struct adv_cand *c);
void ezi_adv_model(struct adv_cand *c, const struct adv_storage *st);
/* Front, tie and score of every candidate; the index of the pick. */
size_t ezi_adv_score(struct adv_cand *c, size_t n, const char *goal);
/* The best (lowest) of ratio, seq and rand over the table. */
void ezi_adv_best(const struct adv_cand *c, size_t n, double best[3]);

/* advice.c */
void ezi_adv_label(const struct adv_cand *c, char *buf, size_t size);
int ezi_adv_command(const struct adv_cand *c, const char *source, char *cmd,
		    size_t size);

#endif
