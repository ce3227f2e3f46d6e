/* SPDX-License-Identifier: MIT */
/* bench/read.c - ezfs bench read: sequential, random, small random reads. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "../common.h"

static int dropped_warned;

static void drop_caches(const struct bench_opts *o)
{
	int fd;

	if (o->no_drop) {
		bench_cache_set(BENCH_CACHE_KEPT);
		return;
	}
	sync();
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	if (fd >= 0 && write(fd, "3\n", 2) == 2) {
		close(fd);
		if (bench_cache_get() != BENCH_CACHE_NOT_DROPPED)
			bench_cache_set(BENCH_CACHE_DROPPED);
		return;
	}
	if (fd >= 0)
		close(fd);
	bench_cache_set(BENCH_CACHE_NOT_DROPPED);
	if (!dropped_warned++ && !o->quiet)
		fprintf(stderr,
			"ezfs bench: page cache not dropped between "
			"runs (needs root: /proc/sys/vm/drop_caches); runs "
			"after the first may read from memory\n");
}

/* What one read cell runs under: engine and dispatch mode (lib only). */
struct read_cfg {
	const char *image; /* NULL: the --path view */
	const char *engine;
	const struct bench_disp *disp; /* NULL: EZFS_DISPATCH or inline */
};

static int open_target(const struct bench_opts *o, const struct read_cfg *c,
		       struct bench_target *t)
{
	if (c->image)
		return bench_target_open_lib(t, c->image, o->bs, c->engine,
					     c->disp);
	drop_caches(o);
	return bench_target_open_path(t, o->path, o->bs);
}

/* All workloads on one image (c->image != NULL) or the --path view. */
static int read_cells(const struct bench_opts *o, const struct read_cfg *c,
		      struct bench_rec *key, struct bench_results *res,
		      struct bench_prog *pg)
{
	double mib[100], sec[100];
	uint64_t bytes = 0;
	struct bench_target t;
	char what[96], cl[16];
	int w, k, err = 0;

	snprintf(key->engine, sizeof(key->engine), "%.23s",
		 c->image ? bench_engine_label(c->engine) : "-");
	snprintf(key->dispatch, sizeof(key->dispatch), "-");
	for (w = 0; w < 3 && !err; w++) {
		struct bench_rec rec;

		snprintf(what, sizeof(what), "read %s %s %s %s %s %s",
			 key->target, key->alg,
			 key->cluster ? bench_fmt_cluster(key->cluster, cl,
							  sizeof(cl))
				      : "",
			 key->engine, c->disp ? c->disp->name : "",
			 bench_workloads[w]);
		bench_prog_cell(pg, what);
		for (k = 0; k < o->repeat && !err; k++) {
			err = open_target(o, c, &t);
			if (err)
				break;
			if (!t.fl.n) {
				cli_error(BENCH_CMD,
					  "no regular files to read");
				bench_target_close(&t);
				return -ENOENT;
			}
			if (t.img)
				bench_disp_label(t.img, key->dispatch,
						 sizeof(key->dispatch));
			err = bench_run_workload(&t, w, o, &bytes, &sec[k]);
			mib[k] = sec[k] > 0 ? bytes / sec[k] / 1048576.0 : 0;
			bench_target_close(&t);
		}
		if (err)
			break;
		rec = *key;
		snprintf(rec.workload, sizeof(rec.workload), "%s",
			 bench_workloads[w]);
		rec.repeat = o->repeat;
		rec.bytes = bytes;
		rec.mib_s = bench_median(mib, (size_t)o->repeat);
		rec.seconds = bench_median(sec, (size_t)o->repeat);
		err = bench_add(res, &rec);
		bench_prog_done(pg);
	}
	return err;
}

/* Every engine x dispatch mode of the options on one image. */
static int read_configs(const struct bench_opts *o, const char *image, int alg,
			struct bench_rec *key, struct bench_results *res,
			struct bench_prog *pg)
{
	char eng[BENCH_MAX_ENGINES][24];
	int ne = bench_engines_for(o, alg, eng, BENCH_MAX_ENGINES, 1);
	int nd = o->disp_given ? o->ndisp : 1, e, d, err = 0;

	for (e = 0; e < ne && !err; e++) {
		for (d = 0; d < nd && !err; d++) {
			struct read_cfg c = { image, eng[e],
					      o->disp_given ? &o->disp[d]
							    : NULL };

			err = read_cells(o, &c, key, res, pg);
		}
	}
	return err;
}

/* Cells of one image of algorithm alg. */
static unsigned cells_per_image(const struct bench_opts *o, int alg)
{
	char eng[BENCH_MAX_ENGINES][24];

	return 3u *
	       (unsigned)bench_engines_for(o, alg, eng, BENCH_MAX_ENGINES, 0) *
	       (unsigned)(o->disp_given ? o->ndisp : 1);
}

unsigned bench_read_cells(const struct bench_opts *o, const struct bench_src *s)
{
	char name[16];
	unsigned n = 0;
	int a;

	if (o->path)
		return 3;
	if (s->is_image)
		return cells_per_image(
			o, bench_image_alg(s->source, name, sizeof(name)));
	for (a = 0; a < o->nalgs; a++)
		n += cells_per_image(o, o->algs[a].alg) *
		     (unsigned)o->nclusters;
	return n;
}

int bench_read(const struct bench_opts *o, const struct bench_src *s,
	       struct bench_results *res, struct bench_prog *pg)
{
	struct bench_rec key;
	int a, c, err = 0;

	bench_rec_init(&key, "read");
	if (o->path) {
		struct read_cfg cfg = { NULL, NULL, NULL };

		snprintf(key.target, sizeof(key.target), "path");
		snprintf(key.alg, sizeof(key.alg), "-");
		return read_cells(o, &cfg, &key, res, pg);
	}
	if (s->is_image) {
		snprintf(key.target, sizeof(key.target), "image");
		a = bench_image_alg(s->source, key.alg, sizeof(key.alg));
		return read_configs(o, s->source, a, &key, res, pg);
	}
	snprintf(key.target, sizeof(key.target), "lib");
	for (a = 0; a < o->nalgs && !err; a++) {
		for (c = 0; c < o->nclusters && !err; c++) {
			char *img = NULL;
			uint64_t ib;
			double bt;

			snprintf(key.alg, sizeof(key.alg), "%s",
				 o->algs[a].name);
			key.level = o->algs[a].level;
			key.cluster = o->clusters[c];
			bench_prog_cell(pg, "building image");
			err = bench_build(s, &o->algs[a], o->clusters[c], &img,
					  &ib, &bt);
			/* the image's size next to its speed */
			key.input_blocks = s->input_blocks;
			key.image_blocks = (ib + 4095) / 4096;
			key.ratio = s->input_blocks ? (double)key.image_blocks /
							      s->input_blocks
						    : 0;
			key.mkfs_mb_s = bt > 0 ? s->input_bytes / 1e6 / bt : 0;
			if (!err)
				err = read_configs(o, img, o->algs[a].alg, &key,
						   res, pg);
			bench_image_done(img, o->clusters[c]);
		}
	}
	return err;
}

/* Runs this short say more about the clock and the start-up than about
 * the reads. */
#define BENCH_SHORT_RUN 0.05

void bench_read_warn_short(const struct bench_results *res)
{
	double shortest = -1;
	size_t i;

	for (i = 0; i < res->n; i++) {
		const struct bench_rec *x = &res->v[i];

		if (strcmp(x->mode, "read"))
			continue;
		if (shortest < 0 || x->seconds < shortest)
			shortest = x->seconds;
	}
	if (shortest < 0 || shortest >= BENCH_SHORT_RUN)
		return;
	fprintf(stderr,
		"ezfs bench: read: runs as short as %.2g ms are too "
		"short to be meaningful (under %.0f ms): measure more data (a "
		"larger --size or SOURCE) or more runs (--repeat N)\n",
		shortest * 1e3, BENCH_SHORT_RUN * 1e3);
}
