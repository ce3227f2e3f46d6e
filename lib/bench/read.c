/* SPDX-License-Identifier: MIT */
/* bench/read.c - the read mode: sequential, random, small random reads. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/internal.h"

static void drop_caches(ezfs_bench *b)
{
	int fd;

	if (b->p.no_drop) {
		b->cache = EZI_BENCH_CACHE_KEPT;
		return;
	}
	sync();
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	if (fd >= 0 && write(fd, "3\n", 2) == 2) {
		close(fd);
		if (b->cache != EZI_BENCH_CACHE_NOT_DROPPED)
			b->cache = EZI_BENCH_CACHE_DROPPED;
		return;
	}
	if (fd >= 0)
		close(fd);
	b->cache = EZI_BENCH_CACHE_NOT_DROPPED;
	if (!b->drop_warned++)
		ezi_bench_log(b, EZFS_LOG_WARN,
			      "page cache not dropped between runs (needs "
			      "root: /proc/sys/vm/drop_caches); runs after "
			      "the first may read from memory");
}

/* What one read cell runs under: engine and dispatch mode (lib only). */
struct read_cfg {
	const char *image; /* NULL: the --path view */
	const char *engine;
	const struct ezfs_bench_disp *disp; /* NULL: EZFS_DISPATCH or inline */
};

static int open_target(ezfs_bench *b, const struct read_cfg *c,
		       struct ezi_bench_target *t)
{
	if (c->image)
		return ezi_bench_target_open_lib(b, t, c->image, b->p.bs,
						 c->engine, c->disp);
	drop_caches(b);
	return ezi_bench_target_open_path(b, t, b->p.path, b->p.bs);
}

/* All workloads on one image (c->image != NULL) or the --path view. */
static int read_cells(ezfs_bench *b, const struct read_cfg *c,
		      struct ezfs_bench_rec *key)
{
	double mib[100], sec[100];
	uint64_t bytes = 0;
	struct ezi_bench_target t;
	char what[96], cl[16];
	int w, k, err = 0;

	snprintf(key->engine, sizeof(key->engine), "%.23s",
		 c->image ? ezi_bench_engine_label(b, c->engine) : "-");
	snprintf(key->dispatch, sizeof(key->dispatch), "-");
	for (w = 0; w < 3 && !err; w++) {
		struct ezfs_bench_rec rec;

		snprintf(what, sizeof(what), "read %s %s %s %s %s %s",
			 key->target, key->alg,
			 key->cluster ? ezi_bench_fmt_cluster(key->cluster, cl,
							      sizeof(cl))
				      : "",
			 key->engine, c->disp ? c->disp->name : "",
			 ezi_bench_workloads[w]);
		ezi_bench_cell(b, what);
		for (k = 0; k < b->p.repeat && !err; k++) {
			err = open_target(b, c, &t);
			if (err)
				break;
			if (!t.fl.n) {
				ezi_bench_log(b, EZFS_LOG_ERROR,
					      "no regular files to read");
				ezi_bench_target_close(&t);
				return -ENOENT;
			}
			if (t.img)
				ezi_bench_disp_label(t.img, key->dispatch,
						     sizeof(key->dispatch));
			err = ezi_bench_run_workload(b, &t, w, b->p.window,
						     b->p.runtime, &bytes,
						     &sec[k]);
			mib[k] = sec[k] > 0 ? bytes / sec[k] / 1048576.0 : 0;
			ezi_bench_target_close(&t);
		}
		if (err)
			break;
		rec = *key;
		snprintf(rec.workload, sizeof(rec.workload), "%s",
			 ezi_bench_workloads[w]);
		rec.repeat = b->p.repeat;
		rec.bytes = bytes;
		rec.mib_s = ezi_bench_median(mib, (size_t)b->p.repeat);
		rec.seconds = ezi_bench_median(sec, (size_t)b->p.repeat);
		err = ezi_bench_add(b, &rec);
		ezi_bench_done(b);
	}
	return err;
}

/* Every engine x dispatch mode of the options on one image. */
static int read_configs(ezfs_bench *b, const char *image, int alg,
			struct ezfs_bench_rec *key)
{
	char eng[EZI_BENCH_MAX_ENGINES][24];
	int ne = ezi_bench_engines_for(b, alg, eng, EZI_BENCH_MAX_ENGINES, 1);
	int nd = b->p.disp_given ? b->p.ndisp : 1, e, d, err = 0;

	for (e = 0; e < ne && !err; e++) {
		for (d = 0; d < nd && !err; d++) {
			struct read_cfg c = { image, eng[e],
					      b->p.disp_given ? &b->p.disp[d]
							      : NULL };

			err = read_cells(b, &c, key);
		}
	}
	return err;
}

/* Cells of one image of algorithm alg. */
static unsigned cells_per_image(const ezfs_bench *b, int alg)
{
	char eng[EZI_BENCH_MAX_ENGINES][24];

	return 3u *
	       (unsigned)ezi_bench_engines_for(b, alg, eng,
					       EZI_BENCH_MAX_ENGINES, 0) *
	       (unsigned)(b->p.disp_given ? b->p.ndisp : 1);
}

unsigned ezi_bench_read_cells(const ezfs_bench *b)
{
	char name[16];
	unsigned n = 0;
	int a;

	if (b->p.path)
		return 3;
	if (b->is_image)
		return cells_per_image(
			b, ezi_bench_image_alg(b->source, name, sizeof(name)));
	for (a = 0; a < b->p.nalgs; a++)
		n += cells_per_image(b, b->p.algs[a].alg) *
		     (unsigned)b->p.nclusters;
	return n;
}

int ezi_bench_read(ezfs_bench *b)
{
	struct ezfs_bench_rec key;
	int a, c, err = 0;

	ezi_bench_rec_init(&key, "read");
	if (b->p.path) {
		struct read_cfg cfg = { NULL, NULL, NULL };

		snprintf(key.target, sizeof(key.target), "path");
		snprintf(key.alg, sizeof(key.alg), "-");
		return read_cells(b, &cfg, &key);
	}
	if (b->is_image) {
		snprintf(key.target, sizeof(key.target), "image");
		a = ezi_bench_image_alg(b->source, key.alg, sizeof(key.alg));
		return read_configs(b, b->source, a, &key);
	}
	snprintf(key.target, sizeof(key.target), "lib");
	for (a = 0; a < b->p.nalgs && !err; a++) {
		for (c = 0; c < b->p.nclusters && !err; c++) {
			char *img = NULL;
			uint64_t ib;
			double bt;

			snprintf(key.alg, sizeof(key.alg), "%s",
				 b->p.algs[a].name);
			key.level = b->p.algs[a].level;
			key.cluster = b->p.clusters[c];
			ezi_bench_cell(b, "building image");
			err = ezi_bench_build(b, &b->p.algs[a],
					      b->p.clusters[c], &img, &ib, &bt);
			/* the image's size next to its speed */
			key.input_blocks = b->input_blocks;
			key.image_blocks = (ib + 4095) / 4096;
			key.ratio = b->input_blocks ? (double)key.image_blocks /
							      b->input_blocks
						    : 0;
			key.mkfs_mb_s = bt > 0 ? b->input_bytes / 1e6 / bt : 0;
			if (!err)
				err = read_configs(b, img, b->p.algs[a].alg,
						   &key);
			ezi_bench_image_done(b, img, b->p.clusters[c]);
		}
	}
	return err;
}
