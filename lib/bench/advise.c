/* SPDX-License-Identifier: MIT */
/*
 * bench/advise.c - the advise mode: pick algorithm, level and pcluster
 * size for the storage the image will be read from.
 *
 * The candidates come from the data: a quick pass builds the sample at
 * 64 KiB with a set of algorithms and levels and keeps those on the front
 * of (ratio, read rate); each of them is then built at every pcluster
 * size. Every image is measured here (size, build rate, the library's
 * read rate, its extents), and the model (model.c) turns the figures into
 * read times on the target storage (docs/bench.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/advise.h"

#define MAX_CANDS     64
#define MAX_QUICK     16
#define QUICK_CLUSTER 65536
#define QUICK_MARGIN  1.25

/* The quick pass's set when no levels are given: every algorithm at the
 * levels a build finishes in reasonable time (zstd 19+ and lzma 9 build at
 * under 1 MB/s on a core; give them as levels). */
static const char *const quick_set[] = {
	"lz4",	  "lz4hc:9", "lz4hc:12", "deflate:6", "deflate:9",
	"zstd:3", "zstd:9",  "zstd:15",	 "lzma:6",
};
#define NQUICK (sizeof(quick_set) / sizeof(quick_set[0]))
static const uint32_t default_clusters[] = { 4096, 16384, 65536, 262144,
					     1048576 };
#define NDEFCL (sizeof(default_clusters) / sizeof(default_clusters[0]))

static size_t nquick(const ezfs_bench *b)
{
	size_t n = b->p.levels_given ? (size_t)b->p.nlevels : NQUICK;

	return n < MAX_QUICK ? n : MAX_QUICK;
}

static size_t nclusters(const ezfs_bench *b, const uint32_t **cl)
{
	if (cl)
		*cl = b->p.clusters_given ? b->p.clusters : default_clusters;
	return b->p.clusters_given ? (size_t)b->p.nclusters : NDEFCL;
}

unsigned ezi_bench_advise_cells(const ezfs_bench *b)
{
	return b->is_image ? 0 : (unsigned)(nquick(b) + 3 * nclusters(b, NULL));
}

/* Sequential reads of every file through fresh instances of image, 64 KiB
 * each: the best rate in bytes per second of at least three passes, for
 * up to runtime seconds in all. Each instance's decoded cache is cold, the
 * image file in the page cache: the library's read with the least
 * interference from the rest of the machine. */
static int read_rate(ezfs_bench *b, const char *image, double runtime,
		     double *best)
{
	const struct ezfs_bench_disp *d =
		b->p.disp_given ? &b->p.disp[0] : NULL;
	struct ezi_bench_target t;
	double total = 0, secs = 0;
	uint64_t bytes = 0;
	int pass, err = 0;

	*best = 0;
	for (pass = 0; !err && (pass < 3 || total < runtime) && pass < 1000;
	     pass++) {
		err = ezi_bench_target_open_lib(b, &t, image, 65536, NULL, d);
		if (err)
			break;
		err = ezi_bench_run_workload(b, &t, 0, 0, runtime, &bytes,
					     &secs);
		ezi_bench_target_close(&t);
		total += secs;
		if (!err && secs > 0 && bytes / secs > *best)
			*best = bytes / secs;
	}
	return err;
}

static int measure_cand(ezfs_bench *b, const struct adv_storage *st,
			struct adv_cand *c, double runtime)
{
	uint64_t ib = 0;
	double bt = 0, best = 0;
	char *img = NULL;
	int err;

	err = ezi_bench_build(b, &c->a, c->cluster, &img, &ib, &bt);
	if (!err)
		err = read_rate(b, img, runtime, &best);
	if (!err)
		ezi_adv_extents(img, st->reader, c);
	if (img)
		unlink(img);
	free(img);
	if (err)
		return err;
	c->ratio = b->input_blocks
			   ? (double)((ib + 4095) / 4096) / b->input_blocks
			   : 1;
	c->mkfs = bt > 0 ? b->input_bytes / 1e6 / bt : 0;
	c->read = best > 0 ? ADV_MIB / best : 0;
	/* pclusters stored raw are read, not decoded */
	c->decode = best * c->dshare / ADV_MIB;
	return 0;
}

/* Quick pass: the levels at QUICK_CLUSTER; keeps in q[] those on the
 * front of (smaller ratio, faster read), where only a level with a ratio
 * as good and a read QUICK_MARGIN times as fast dominates: the quick runs
 * are short and noisy on a busy machine, and a level dropped here is
 * never measured again. */
static int quick_pass(ezfs_bench *b, const struct adv_storage *st,
		      struct adv_cand *q, size_t *nq)
{
	struct adv_cand all[MAX_QUICK];
	size_t n = 0, i, j, k = 0, nset = nquick(b);
	char lab[40], note[1024];
	size_t len;
	int err = 0;

	for (i = 0; i < nset && !err; i++) {
		struct adv_cand *c = &all[n];

		memset(c, 0, sizeof(*c));
		if (b->p.levels_given)
			c->a = b->p.levels[i];
		else
			ezfs_bench_parse_alg(quick_set[i], &c->a);
		c->cluster = QUICK_CLUSTER;
		ezi_adv_label(c, lab, sizeof(lab));
		ezi_bench_cell(b, lab);
		err = measure_cand(b, st, c, fmin(b->p.runtime, 1));
		ezi_bench_done(b);
		if (!err)
			n++;
	}
	if (err)
		return err;
	for (i = 0; i < n; i++) {
		int dominated = 0;

		for (j = 0; j < n && !dominated; j++)
			dominated = j != i && all[j].ratio <= all[i].ratio &&
				    all[j].read * QUICK_MARGIN <= all[i].read;
		if (!dominated)
			q[k++] = all[i];
	}
	len = (size_t)snprintf(note, sizeof(note),
			       "quick pass at %uK: %zu levels; on the front "
			       "of ratio and read rate:",
			       QUICK_CLUSTER / 1024, n);
	for (i = 0; i < k && len < sizeof(note); i++) {
		ezi_bench_alg_label(&q[i].a, lab, sizeof(lab));
		len += (size_t)snprintf(note + len, sizeof(note) - len,
					" %s (%.3f, %.0f MiB/s)", lab,
					q[i].ratio,
					q[i].read > 0 ? 1 / q[i].read : 0);
	}
	ezi_bench_log(b, EZFS_LOG_INFO, "%s", note);
	*nq = k;
	return 0;
}

static void add_record(ezfs_bench *b, const struct adv_cand *c)
{
	struct ezfs_bench_rec rec;

	ezi_bench_rec_init(&rec, "advise");
	snprintf(rec.workload, sizeof(rec.workload), "candidate");
	snprintf(rec.target, sizeof(rec.target), "lib");
	snprintf(rec.alg, sizeof(rec.alg), "%.15s", c->a.name);
	snprintf(rec.engine, sizeof(rec.engine), "%.23s",
		 ezi_bench_engine_label(b, NULL));
	rec.level = c->a.level;
	rec.cluster = c->cluster;
	rec.repeat = 1;
	rec.mib_s = c->decode;
	rec.bytes = b->input_bytes;
	rec.seconds = c->seq_s;
	rec.input_blocks = b->input_blocks;
	rec.image_blocks = (uint64_t)(c->ratio * b->input_blocks + 0.5);
	rec.ratio = c->ratio;
	rec.mkfs_mb_s = c->mkfs;
	rec.avg_us = c->rand_s * 1e6;
	ezi_bench_add(b, &rec);
}

int ezi_bench_advise(ezfs_bench *b)
{
	struct adv_cand q[MAX_QUICK];
	struct ezi_bench_advice *a;
	size_t nq = 0, i, j, ncl;
	const uint32_t *cl;
	char lab[40];
	int err;

	ezi_bench_advice_free(b->adv);
	b->adv = a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	err = ezi_adv_storage(b, &a->st);
	if (err)
		return err;
	ezi_bench_log(b, EZFS_LOG_INFO,
		      "storage: %.1f MB/s, %.0f us per request, read by %s "
		      "(%s)",
		      a->st.rate / 1e6, a->st.lat * 1e6,
		      a->st.reader == EZFS_BENCH_READER_REMOTE
			      ? "ezfs over the network"
			      : "the kernel",
		      a->st.what);
	ncl = nclusters(b, &cl);
	a->c = calloc(MAX_CANDS, sizeof(*a->c));
	if (!a->c)
		return -ENOMEM;
	err = quick_pass(b, &a->st, q, &nq);
	b->total = b->done + (unsigned)(nq * ncl);
	for (i = 0; i < nq && !err; i++) {
		for (j = 0; j < ncl && !err && a->n < MAX_CANDS; j++) {
			struct adv_cand *x = &a->c[a->n];

			*x = q[i];
			if (cl[j] != QUICK_CLUSTER) {
				x->cluster = cl[j];
				ezi_adv_label(x, lab, sizeof(lab));
				ezi_bench_cell(b, lab);
				err = measure_cand(b, &a->st, x, b->p.runtime);
			}
			ezi_bench_done(b);
			if (!err)
				a->n++;
		}
	}
	if (err || !a->n)
		return err ? err : -ENOENT;
	for (i = 0; i < a->n; i++)
		ezi_adv_model(&a->c[i], &a->st);
	a->pick = ezi_adv_score(a->c, a->n, b->p.goal);
	for (i = 0; i < a->n; i++)
		add_record(b, &a->c[i]);
	a->is_dir = ezi_adv_command(&a->c[a->pick], b->source, a->cmd,
				    sizeof(a->cmd));
	return 0;
}

const char *ezfs_bench_advice_command(const ezfs_bench *b, int *source_is_dir)
{
	if (!b->adv || !b->adv->n)
		return NULL;
	if (source_is_dir)
		*source_is_dir = b->adv->is_dir;
	return b->adv->cmd;
}

void ezi_bench_advice_free(struct ezi_bench_advice *a)
{
	if (a)
		free(a->c);
	free(a);
}
