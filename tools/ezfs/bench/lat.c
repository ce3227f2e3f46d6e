/* SPDX-License-Identifier: MIT */
/* bench/lat.c - ezfs bench ratio and latency: image size and decode times. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ezfs/engine.h"
#include "bench.h"
#include "../common.h"

int bench_ratio(const struct bench_opts *o, const struct bench_src *s,
		struct bench_results *res, struct bench_prog *pg)
{
	double secs[100];
	char what[96], lab[32];
	int i, k, err = 0;

	for (i = 0; i < o->nlevels && !err; i++) {
		const struct bench_alg *a = &o->levels[i];
		struct bench_rec rec;
		uint64_t ib = 0;

		bench_alg_label(a, lab, sizeof(lab));
		snprintf(what, sizeof(what), "ratio %s", lab);
		bench_prog_cell(pg, what);
		for (k = 0; k < o->repeat && !err; k++) {
			char *img = NULL;

			err = bench_build(s, a, o->ratio_cluster, &img, &ib,
					  &secs[k]);
			if (img)
				unlink(img);
			free(img);
		}
		if (err)
			break;
		bench_rec_init(&rec, "ratio");
		snprintf(rec.workload, sizeof(rec.workload), "build");
		snprintf(rec.target, sizeof(rec.target), "lib");
		snprintf(rec.alg, sizeof(rec.alg), "%s", a->name);
		snprintf(rec.engine, sizeof(rec.engine), "default");
		rec.level = a->level;
		rec.cluster = o->ratio_cluster;
		rec.repeat = o->repeat;
		rec.seconds = bench_median(secs, (size_t)o->repeat);
		rec.bytes = s->input_bytes;
		rec.input_blocks = s->input_blocks;
		rec.image_blocks = (ib + 4095) / 4096;
		rec.ratio = rec.input_blocks ? (double)rec.image_blocks /
						       rec.input_blocks
					     : 0;
		rec.mkfs_mb_s = rec.seconds > 0
					? s->input_bytes / 1e6 / rec.seconds
					: 0;
		err = bench_add(res, &rec);
		bench_prog_done(pg);
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
static int measure(const char *image, const char *engine,
		   const struct bench_disp *d, double cap,
		   struct bench_rec *rec, char *desc, size_t dsz)
{
	struct bench_files fl = { 0 };
	struct ezfs_latency_stats ls;
	struct ezfs_extent ext;
	ezfs_image *img = NULL;
	size_t i, cnt = 0, bufsz = 0;
	double t0;
	char *buf = NULL;
	int err;

	err = bench_open(image, engine, d, &img);
	if (err)
		return err;
	err = bench_list_files(img, &fl);
	bench_disp_label(img, rec->dispatch, sizeof(rec->dispatch));
	bench_disp_describe(img, desc, dsz);
	ezfs_image_engine_reset(img);
	t0 = bench_now();
	for (i = 0; !err && i < fl.n && cnt < LAT_MAX; i++) {
		ezfs_inode *ino = NULL;
		uint64_t la = 0;

		err = ezfs_inode_get(img, fl.v[i].nid, &ino);
		while (!err && la < fl.v[i].size && cnt < LAT_MAX &&
		       bench_now() - t0 <= cap) {
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
		cli_fail(BENCH_CMD, image, NULL, err);
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

static unsigned engines_of(const struct bench_opts *o, int alg)
{
	char eng[BENCH_MAX_ENGINES][24];

	return (unsigned)bench_engines_for(o, alg, eng, BENCH_MAX_ENGINES, 0);
}

unsigned bench_latency_cells(const struct bench_opts *o,
			     const struct bench_src *s)
{
	unsigned n = 0;
	char name[16];
	int a;

	if (s->is_image)
		return (unsigned)(o->ndisp * o->nloads) *
		       engines_of(o, bench_image_alg(s->source, name,
						     sizeof(name)));
	for (a = 0; a < o->nalgs; a++)
		n += (unsigned)(o->ndisp * o->nloads) *
		     engines_of(o, o->algs[a].alg);
	return n;
}

/* Every engine x dispatch mode x load of the options on one image. */
static int latency_one(const struct bench_opts *o, const char *image, int alg,
		       struct bench_rec *key, struct bench_results *res,
		       struct bench_prog *pg)
{
	static int described[3];
	char eng[BENCH_MAX_ENGINES][24], what[128], cl[16], desc[96];
	int ne = bench_engines_for(o, alg, eng, BENCH_MAX_ENGINES, 1);
	int e, d, l, err = 0;

	for (e = 0; e < ne; e++)
		for (d = 0; d < o->ndisp; d++)
			for (l = 0; l < o->nloads; l++) {
				const char *ln = bench_load_names[o->loads[l]];
				struct bench_rec rec = *key;
				struct bench_load ld;

				snprintf(what, sizeof(what),
					 "latency %s %s %.23s %s load %s",
					 key->alg,
					 bench_fmt_cluster(key->cluster, cl,
							   sizeof(cl)),
					 bench_engine_label(eng[e]),
					 o->disp[d].name, ln);
				bench_prog_cell(pg, what);
				snprintf(rec.engine, sizeof(rec.engine),
					 "%.23s", bench_engine_label(eng[e]));
				snprintf(rec.load, sizeof(rec.load), "%s", ln);
				snprintf(rec.workload, sizeof(rec.workload),
					 "decode");
				err = bench_load_start(&ld, o->loads[l]);
				if (!err)
					err = measure(image, eng[e],
						      &o->disp[d], o->runtime,
						      &rec, desc, sizeof(desc));
				bench_load_stop(&ld);
				if (!err && !rec.samples) {
					cli_error(BENCH_CMD,
						  "%s: no compressed extents",
						  image);
					err = -ENOENT;
				}
				if (err)
					return err;
				if (!o->quiet &&
				    !described[o->disp[d].mode]++) {
					bench_prog_end(pg);
					printf("latency: %s\n", desc);
				}
				err = bench_add(res, &rec);
				bench_prog_done(pg);
				if (err)
					return err;
			}
	return 0;
}

int bench_latency(const struct bench_opts *o, const struct bench_src *s,
		  struct bench_results *res, struct bench_prog *pg)
{
	struct bench_rec key;
	int a, err = 0;

	bench_rec_init(&key, "latency");
	if (s->is_image) {
		snprintf(key.target, sizeof(key.target), "image");
		a = bench_image_alg(s->source, key.alg, sizeof(key.alg));
		return latency_one(o, s->source, a, &key, res, pg);
	}
	snprintf(key.target, sizeof(key.target), "lib");
	key.cluster = o->ratio_cluster;
	for (a = 0; a < o->nalgs && !err; a++) {
		char *img = NULL;
		uint64_t ib;
		double bt;

		snprintf(key.alg, sizeof(key.alg), "%s", o->algs[a].name);
		key.level = o->algs[a].level;
		bench_prog_cell(pg, "building image");
		err = bench_build(s, &o->algs[a], o->ratio_cluster, &img, &ib,
				  &bt);
		if (!err)
			err = latency_one(o, img, o->algs[a].alg, &key, res,
					  pg);
		bench_image_done(img, o->ratio_cluster);
	}
	return err;
}
