/* SPDX-License-Identifier: MIT */
/* bench/lat.c - the ratio and latency modes: image size and decode times. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ezfs/engine.h"
#include "bench/internal.h"

int ezi_bench_ratio(ezfs_bench *b)
{
	double secs[100];
	char what[96], lab[32];
	int i, k, err = 0;

	for (i = 0; i < b->p.nlevels && !err; i++) {
		const struct ezfs_bench_alg *a = &b->p.levels[i];
		struct ezfs_bench_rec rec;
		uint64_t ib = 0;

		ezi_bench_alg_label(a, lab, sizeof(lab));
		snprintf(what, sizeof(what), "ratio %s", lab);
		ezi_bench_cell(b, what);
		for (k = 0; k < b->p.repeat && !err; k++) {
			char *img = NULL;

			err = ezi_bench_build(b, a, b->p.cluster, &img, &ib,
					      &secs[k]);
			if (img)
				unlink(img);
			free(img);
		}
		if (err)
			break;
		ezi_bench_rec_init(&rec, "ratio");
		snprintf(rec.workload, sizeof(rec.workload), "build");
		snprintf(rec.target, sizeof(rec.target), "lib");
		snprintf(rec.alg, sizeof(rec.alg), "%s", a->name);
		snprintf(rec.engine, sizeof(rec.engine), "default");
		rec.level = a->level;
		rec.cluster = b->p.cluster;
		rec.repeat = b->p.repeat;
		rec.seconds = ezi_bench_median(secs, (size_t)b->p.repeat);
		rec.bytes = b->input_bytes;
		rec.input_blocks = b->input_blocks;
		rec.image_blocks = (ib + 4095) / 4096;
		rec.ratio = rec.input_blocks ? (double)rec.image_blocks /
						       rec.input_blocks
					     : 0;
		rec.mkfs_mb_s = rec.seconds > 0
					? b->input_bytes / 1e6 / rec.seconds
					: 0;
		err = ezi_bench_add(b, &rec);
		ezi_bench_done(b);
	}
	return err;
}

/* Requests timed per cell: the engine keeps this many latency samples. */
#define LAT_MAX 8192

/*
 * Read every compressed extent of image once (whole extent, one
 * ezfs_pread) on a fresh instance with engine and dispatch mode d, until
 * LAT_MAX requests or cap seconds, and take the engine's latency figures:
 * submit to completion of each decode request (inline: the decode itself).
 */
static int measure(ezfs_bench *b, const char *image, const char *engine,
		   const struct ezfs_bench_disp *d, double cap,
		   struct ezfs_bench_rec *rec, char *desc, size_t dsz)
{
	struct ezi_bench_files fl = { 0 };
	struct ezfs_latency_stats ls;
	struct ezfs_extent ext;
	ezfs_image *img = NULL;
	size_t i, cnt = 0, bufsz = 0;
	double t0;
	char *buf = NULL;
	int err;

	err = ezi_bench_open(b, image, engine, d, &img);
	if (err)
		return err;
	err = ezi_bench_list_files(img, &fl);
	ezi_bench_disp_label(img, rec->dispatch, sizeof(rec->dispatch));
	ezi_bench_disp_describe(img, desc, dsz);
	ezfs_image_engine_reset(img);
	t0 = ezi_bench_now();
	for (i = 0; !err && i < fl.n && cnt < LAT_MAX; i++) {
		ezfs_inode *ino = NULL;
		uint64_t la = 0;

		err = ezfs_inode_get(img, fl.v[i].nid, &ino);
		while (!err && la < fl.v[i].size && cnt < LAT_MAX &&
		       ezi_bench_now() - t0 <= cap) {
			ssize_t r;

			err = ezfs_map(ino, la, &ext);
			if (err || !ext.llen)
				break;
			if (ext.llen > bufsz) {
				char *nb = realloc(buf, ext.llen);

				if (!nb) {
					err = -ENOMEM;
					break;
				}
				buf = nb;
				bufsz = ext.llen;
			}
			if (ext.flags & EZFS_EXTENT_ENCODED) {
				r = ezfs_pread(ino, buf, ext.llen, ext.la);
				cnt++;
				if (r < 0)
					err = (int)r;
			}
			la = ext.la + ext.llen;
		}
		if (ino)
			ezfs_inode_put(ino);
	}
	if (!err)
		err = ezfs_image_latency_stats(img, &ls);
	free(buf);
	free(fl.v);
	ezfs_image_close(img);
	if (err) {
		ezi_bench_fail(b, image, err);
		return err;
	}
	rec->samples = ls.count;
	rec->avg_us = ls.avg;
	rec->median_us = ls.median;
	rec->min_us = ls.min;
	rec->max_us = ls.max;
	rec->stddev_us = ls.stddev;
	return 0;
}

static unsigned engines_of(const ezfs_bench *b, int alg)
{
	char eng[EZI_BENCH_MAX_ENGINES][24];

	return (unsigned)ezi_bench_engines_for(b, alg, eng,
					       EZI_BENCH_MAX_ENGINES, 0);
}

unsigned ezi_bench_latency_cells(const ezfs_bench *b)
{
	unsigned n = 0;
	char name[16];
	int a;

	if (b->is_image)
		return (unsigned)(b->p.ndisp * b->p.nloads) *
		       engines_of(b, ezi_bench_image_alg(b->source, name,
							 sizeof(name)));
	for (a = 0; a < b->p.nalgs; a++)
		n += (unsigned)(b->p.ndisp * b->p.nloads) *
		     engines_of(b, b->p.algs[a].alg);
	return n;
}

/* Every engine x dispatch mode x load of the options on one image. */
static int latency_one(ezfs_bench *b, const char *image, int alg,
		       struct ezfs_bench_rec *key)
{
	char eng[EZI_BENCH_MAX_ENGINES][24], what[128], cl[16], desc[96];
	int ne = ezi_bench_engines_for(b, alg, eng, EZI_BENCH_MAX_ENGINES, 1);
	int e, d, l, err = 0;

	for (e = 0; e < ne; e++)
		for (d = 0; d < b->p.ndisp; d++)
			for (l = 0; l < b->p.nloads; l++) {
				const char *ln =
					ezi_bench_load_names[b->p.loads[l]];
				struct ezfs_bench_rec rec = *key;
				struct ezi_bench_load ld;

				snprintf(what, sizeof(what),
					 "latency %s %s %.23s %s load %s",
					 key->alg,
					 ezi_bench_fmt_cluster(key->cluster, cl,
							       sizeof(cl)),
					 ezi_bench_engine_label(b, eng[e]),
					 b->p.disp[d].name, ln);
				ezi_bench_cell(b, what);
				snprintf(rec.engine, sizeof(rec.engine),
					 "%.23s",
					 ezi_bench_engine_label(b, eng[e]));
				snprintf(rec.load, sizeof(rec.load), "%s", ln);
				snprintf(rec.workload, sizeof(rec.workload),
					 "decode");
				err = ezi_bench_load_start(&ld, b->p.loads[l]);
				if (!err)
					err = measure(b, image, eng[e],
						      &b->p.disp[d],
						      b->p.runtime, &rec, desc,
						      sizeof(desc));
				ezi_bench_load_stop(&ld);
				if (!err && !rec.samples) {
					ezi_bench_log(
						b, EZFS_LOG_ERROR,
						"%s: no compressed extents",
						image);
					err = -ENOENT;
				}
				if (err)
					return err;
				if (!b->described[b->p.disp[d].mode]++)
					ezi_bench_log(b, EZFS_LOG_INFO,
						      "latency: %s", desc);
				err = ezi_bench_add(b, &rec);
				ezi_bench_done(b);
				if (err)
					return err;
			}
	return 0;
}

int ezi_bench_latency(ezfs_bench *b)
{
	struct ezfs_bench_rec key;
	int a, err = 0;

	ezi_bench_rec_init(&key, "latency");
	if (b->is_image) {
		snprintf(key.target, sizeof(key.target), "image");
		a = ezi_bench_image_alg(b->source, key.alg, sizeof(key.alg));
		return latency_one(b, b->source, a, &key);
	}
	snprintf(key.target, sizeof(key.target), "lib");
	key.cluster = b->p.cluster;
	for (a = 0; a < b->p.nalgs && !err; a++) {
		char *img = NULL;
		uint64_t ib;
		double bt;

		snprintf(key.alg, sizeof(key.alg), "%s", b->p.algs[a].name);
		key.level = b->p.algs[a].level;
		ezi_bench_cell(b, "building image");
		err = ezi_bench_build(b, &b->p.algs[a], b->p.cluster, &img, &ib,
				      &bt);
		if (!err)
			err = latency_one(b, img, b->p.algs[a].alg, &key);
		ezi_bench_image_done(b, img, b->p.cluster);
	}
	return err;
}
