/* SPDX-License-Identifier: MIT */
/* bench_lat.c - ezfs bench ratio and latency: image size and decode times. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "common.h"

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
		rec.ratio = rec.input_blocks ?
			    (double)rec.image_blocks / rec.input_blocks : 0;
		rec.mkfs_mb_s = rec.seconds > 0 ?
				s->input_bytes / 1e6 / rec.seconds : 0;
		err = bench_add(res, &rec);
		bench_prog_done(pg);
	}
	return err;
}

/* ---- competing CPU load ---- */

struct load {
	pthread_t *th;
	unsigned n;
	volatile int stop;
};

static void *spin(void *arg)
{
	struct load *l = arg;
	volatile uint64_t x = 0;

	while (!__atomic_load_n(&l->stop, __ATOMIC_RELAXED))
		x = x * 6364136223846793005ull + 1;
	return NULL;
}

static int load_start(struct load *l)
{
	unsigned i;

	l->n = cli_online_cpus();
	l->stop = 0;
	l->th = calloc(l->n, sizeof(*l->th));
	if (!l->th)
		return -ENOMEM;
	for (i = 0; i < l->n; i++) {
		if (pthread_create(&l->th[i], NULL, spin, l)) {
			l->n = i;
			break;
		}
	}
	return 0;
}

static void load_stop(struct load *l)
{
	unsigned i;

	__atomic_store_n(&l->stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < l->n; i++)
		pthread_join(l->th[i], NULL);
	free(l->th);
	l->th = NULL;
}

/*
 * Inline dispatch: the caller's thread decodes. Time ezfs_pread of each
 * compressed extent once, on a fresh instance (nothing cached).
 */
static int measure_inline(const char *image, double cap, double **out,
			  size_t *n)
{
	struct bench_files fl = { 0 };
	struct ezfs_open_params p;
	struct ezfs_extent ext;
	ezfs_image *img = NULL;
	size_t i, cnt = 0, max = 20000, bufsz = 0;
	double *v = malloc(max * sizeof(*v)), t0 = bench_now();
	char *buf = NULL;
	int err;

	if (!v)
		return -ENOMEM;
	ezfs_open_params_init(&p);
	err = ezfs_image_open(image, &p, &img);
	if (!err)
		err = bench_list_files(img, &fl);
	for (i = 0; !err && i < fl.n && cnt < max; i++) {
		ezfs_inode *ino = NULL;
		uint64_t la = 0;

		err = ezfs_inode_get(img, fl.v[i].nid, &ino);
		while (!err && la < fl.v[i].size && cnt < max) {
			double t1;
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
				t1 = bench_now();
				r = ezfs_pread(ino, buf, ext.llen, ext.la);
				v[cnt++] = (bench_now() - t1) * 1e6;
				if (r < 0)
					err = (int)r;
			}
			la = ext.la + ext.llen;
			if (bench_now() - t0 > cap)
				break;
		}
		if (ino)
			ezfs_inode_put(ino);
		if (bench_now() - t0 > cap)
			break;
	}
	free(buf);
	free(fl.v);
	if (img)
		ezfs_image_close(img);
	if (err) {
		cli_fail(BENCH_CMD, image, NULL, err);
		free(v);
		return err;
	}
	*out = v;
	*n = cnt;
	return 0;
}

unsigned bench_latency_cells(const struct bench_opts *o,
			     const struct bench_src *s)
{
	return 2u * (unsigned)(s->is_image ? 1 : o->nalgs);
}

static int latency_one(const struct bench_opts *o, const char *image,
		       struct bench_rec *key, struct bench_results *res,
		       struct bench_prog *pg)
{
	static const char *const loads[] = { "idle", "loaded" };
	char what[96], cl[16];
	int l, err = 0;

	for (l = 0; l < 2 && !err; l++) {
		struct bench_rec rec = *key;
		struct load ld = { 0 };
		double *v = NULL;
		size_t n = 0;

		snprintf(what, sizeof(what), "latency %s %s inline %s", key->alg,
			 bench_fmt_cluster(key->cluster, cl, sizeof(cl)),
			 loads[l]);
		bench_prog_cell(pg, what);
		if (l == 1)
			err = load_start(&ld);
		if (!err)
			err = measure_inline(image, o->runtime, &v, &n);
		if (l == 1)
			load_stop(&ld);
		if (err)
			break;
		snprintf(rec.dispatch, sizeof(rec.dispatch), "inline");
		snprintf(rec.load, sizeof(rec.load), "%s", loads[l]);
		snprintf(rec.workload, sizeof(rec.workload), "decode");
		bench_stats(v, n, &rec);
		free(v);
		if (!n) {
			cli_error(BENCH_CMD, "%s: no compressed extents", image);
			return -ENOENT;
		}
		err = bench_add(res, &rec);
		bench_prog_done(pg);
	}
	return err;
}

int bench_latency(const struct bench_opts *o, const struct bench_src *s,
		  struct bench_results *res, struct bench_prog *pg)
{
	struct bench_rec key;
	int a, err = 0;

	bench_rec_init(&key, "latency");
	snprintf(key.engine, sizeof(key.engine), "default");
	if (!o->quiet)
		printf("latency: inline dispatch measured around ezfs_pread of "
		       "single extents; queue/percpu: engine layer not "
		       "available\n");
	if (s->is_image) {
		snprintf(key.target, sizeof(key.target), "image");
		snprintf(key.alg, sizeof(key.alg), "image");
		return latency_one(o, s->source, &key, res, pg);
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
			err = latency_one(o, img, &key, res, pg);
		if (img)
			unlink(img);
		free(img);
	}
	return err;
}
