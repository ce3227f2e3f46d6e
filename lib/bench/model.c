/* SPDX-License-Identifier: MIT */
/*
 * bench/model.c - the advisor's model: what a reader of an image fetches
 * from the target storage (walked over the image's own extents), the read
 * times it gives, and the scores that rank the candidates.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/advise.h"

/* A sequential reader of one file: what it has fetched, its round trips
 * and, for the remote reader, its hint window (lib/read/hint.c). */
struct seqr {
	ezfs_inode *ino;
	uint64_t size;
	int reader;
	uint64_t fetched; /* the logical end of what is fetched */
	double rounds;
};

static int skip_extent(const struct ezfs_extent *e)
{
	return !(e->flags & EZFS_EXTENT_MAPPED) || !e->plen ||
	       (e->flags &
		(EZFS_EXTENT_FRAGMENT | EZFS_EXTENT_INLINE | EZFS_EXTENT_META));
}

/*
 * Fetch what [off, end) of the file needs and is not fetched yet: whole
 * extents (a kernel reads the part of a plain extent the window covers),
 * adjacent ones in one run. The kernel sends a request per run, one at a
 * time; the remote source cuts runs into ranges and sends 16 at once.
 */
static void fetch(struct seqr *r, uint64_t off, uint64_t end)
{
	uint64_t run_end = UINT64_MAX, ranges = 0, runs = 0, run = 0;
	struct ezfs_extent e;

	if (end > r->size)
		end = r->size;
	if (off < r->fetched)
		off = r->fetched;
	while (off < end) {
		uint64_t pa, plen;

		if (ezfs_map(r->ino, off, &e) || e.la + e.llen <= off ||
		    !e.llen)
			break;
		pa = e.pa;
		plen = e.plen;
		if (r->reader == EZFS_BENCH_READER_KERNEL &&
		    !(e.flags & EZFS_EXTENT_ENCODED) && e.llen == e.plen) {
			/* plain: the window's part of it */
			uint64_t to = e.la + e.llen < end ? e.la + e.llen : end;

			pa += off - e.la;
			plen = to - off;
			r->fetched = to;
		} else {
			r->fetched = e.la + e.llen;
		}
		off = r->fetched;
		if (skip_extent(&e))
			continue;
		if (pa != run_end) {
			if (run)
				ranges +=
					(run + REMOTE_RANGE - 1) / REMOTE_RANGE;
			runs++;
			run = 0;
		}
		run += plen;
		run_end = pa + plen;
	}
	if (run)
		ranges += (run + REMOTE_RANGE - 1) / REMOTE_RANGE;
	if (r->reader == EZFS_BENCH_READER_KERNEL)
		r->rounds += (double)runs;
	else
		r->rounds += (double)((ranges + REMOTE_INFLIGHT - 1) /
				      REMOTE_INFLIGHT);
}

/* The round trips of reading one file from start to end. */
static double seq_rounds(ezfs_inode *ino, uint64_t size, int reader)
{
	struct seqr r = { .ino = ino, .size = size, .reader = reader };
	uint64_t off, hinted = 0, win = 0;

	if (reader == EZFS_BENCH_READER_KERNEL) {
		for (off = 0; off < size; off += KERNEL_RA)
			fetch(&r, off, off + KERNEL_RA);
		return r.rounds;
	}
	/* ezfs_pread of REMOTE_READ bytes at a time, hinting as hint.c */
	for (off = 0; off < size; off += REMOTE_READ) {
		uint64_t end = off + REMOTE_READ;

		if (off && off <= hinted && hinted >= end)
			continue; /* told already */
		if (off && off <= hinted) {
			win = win ? (win < REMOTE_WIN_MAX ? win * 2
							  : REMOTE_WIN_MAX)
				  : REMOTE_WIN_MIN;
			end += win;
		} else {
			win = 0;
		}
		fetch(&r, off, end);
		hinted = end;
	}
	return r.rounds;
}

void ezi_adv_extents(const char *image, int reader, struct adv_cand *c)
{
	struct ezfs_open_params p;
	struct ezi_bench_files fl = { 0 };
	double data = 0, fetch_w = 0, dec = 0, phys = 0, nphys = 0;
	double enc = 0, rounds = 0;
	ezfs_image *img;
	size_t i;

	c->rand_fetch = c->rand_decode = c->dshare = 0;
	c->seq_extent = c->cluster;
	c->seq_rounds = 0;
	ezfs_open_params_init(&p);
	if (ezfs_image_open(image, &p, &img))
		return;
	if (ezi_bench_list_files(img, &fl)) {
		ezfs_image_close(img);
		return;
	}
	for (i = 0; i < fl.n; i++) {
		struct ezfs_extent e;
		ezfs_inode *ino;
		uint64_t la = 0;

		if (ezfs_inode_get(img, fl.v[i].nid, &ino))
			continue;
		rounds += seq_rounds(ino, fl.v[i].size, reader);
		while (la < fl.v[i].size && !ezfs_map(ino, la, &e) &&
		       e.la + e.llen > la) {
			double l = (double)e.llen;

			la = e.la + e.llen;
			if (!(e.flags & EZFS_EXTENT_MAPPED))
				continue;
			data += l;
			if (e.flags & EZFS_EXTENT_ENCODED) {
				fetch_w += l * (double)e.plen;
				dec += l * l;
				enc += l;
			} else if (reader == EZFS_BENCH_READER_REMOTE &&
				   !skip_extent(&e)) {
				/* a read hints the whole extent */
				fetch_w += l * (double)e.plen;
			} else {
				/* the 4 KiB block itself */
				fetch_w += l * 4096;
			}
			phys += (double)e.plen;
			nphys++;
		}
		ezfs_inode_put(ino);
	}
	free(fl.v);
	ezfs_image_close(img);
	if (data > 0) {
		c->rand_fetch = fetch_w / data;
		c->rand_decode = dec / data;
		c->dshare = enc / data;
		if (reader == EZFS_BENCH_READER_REMOTE)
			rounds += REMOTE_OPEN;
		c->seq_rounds = rounds / (data / ADV_MIB);
	}
	if (nphys > 0)
		c->seq_extent = phys / nphys;
}

/*
 * The model, per MiB of file data: a sequential read moves ratio MiB from
 * the storage, waits for its round trips and reads through the library
 * (decoding, copying); a cold random 4 KiB read waits for one request,
 * fetches its extent and decodes it. No overlap of fetching and decoding.
 */
void ezi_adv_model(struct adv_cand *c, const struct adv_storage *st)
{
	c->t_storage = c->ratio * ADV_MIB / st->rate;
	c->t_requests = c->seq_rounds * st->lat;
	c->t_decode = c->read;
	c->seq_s = c->t_storage + c->t_requests + c->t_decode;
	c->rand_s =
		st->lat + c->rand_fetch / st->rate +
		(c->decode > 0 ? c->rand_decode / (c->decode * ADV_MIB) : 0);
}

static int dominates(const struct adv_cand *a, const struct adv_cand *b)
{
	return a->ratio <= b->ratio && a->seq_s <= b->seq_s &&
	       a->rand_s <= b->rand_s &&
	       (a->ratio < b->ratio || a->seq_s < b->seq_s ||
		a->rand_s < b->rand_s);
}

/* log(x / best) / the axis' log spread (at least log ADV_MIN_SPREAD): 0
 * for the best, 1 for the worst of the table. */
static double axis(double x, double best, double worst)
{
	double spread = log(worst / best);

	if (spread < log(ADV_MIN_SPREAD))
		spread = log(ADV_MIN_SPREAD);
	return log(x / best) / spread;
}

static void axes(const struct adv_cand *c, double v[3])
{
	v[0] = c->ratio;
	v[1] = c->seq_s;
	v[2] = c->rand_s;
}

void ezi_adv_best(const struct adv_cand *c, size_t n, double best[3])
{
	double v[3];
	size_t i;
	int k;

	axes(&c[0], best);
	for (i = 1; i < n; i++) {
		axes(&c[i], v);
		for (k = 0; k < 3; k++)
			best[k] = fmin(best[k], v[k]);
	}
}

/*
 * balanced: the mean of the three axes. A single goal (axis g): x / best
 * on it, where every candidate within ADV_GOAL_TIE of the best counts as
 * 1 (they tie), plus ADV_GOAL_TIE times the mean of the other two axes:
 * the goal decides, and among the candidates it ties, the others do.
 */
size_t ezi_adv_score(struct adv_cand *c, size_t n, const char *goal)
{
	double best[3], worst[3], v[3], a[3];
	int g = !strcmp(goal, "size")	  ? 0
		: !strcmp(goal, "seq")	  ? 1
		: !strcmp(goal, "random") ? 2
					  : -1;
	size_t i, j, p = 0;
	int k;

	ezi_adv_best(c, n, best);
	axes(&c[0], worst);
	for (i = 1; i < n; i++) {
		axes(&c[i], v);
		for (k = 0; k < 3; k++)
			worst[k] = fmax(worst[k], v[k]);
	}
	for (i = 0; i < n; i++) {
		c[i].front = 1;
		for (j = 0; j < n && c[i].front; j++)
			if (j != i && dominates(&c[j], &c[i]))
				c[i].front = 0;
		axes(&c[i], v);
		for (k = 0; k < 3; k++)
			a[k] = axis(v[k], best[k], worst[k]);
		if (g < 0) {
			c[i].score = (a[0] + a[1] + a[2]) / 3;
			c[i].tied = 0;
			continue;
		}
		c[i].tied = v[g] / best[g] <= 1 + ADV_GOAL_TIE;
		c[i].score = (c[i].tied ? 1 : v[g] / best[g]) +
			     ADV_GOAL_TIE * (a[0] + a[1] + a[2] - a[g]) / 2;
	}
	/* the lowest score; ties: the smaller image, then the faster read */
	for (i = 1; i < n; i++)
		if (c[i].score < c[p].score - 1e-12 ||
		    (fabs(c[i].score - c[p].score) <= 1e-12 &&
		     (c[i].ratio < c[p].ratio ||
		      (c[i].ratio == c[p].ratio && c[i].seq_s < c[p].seq_s))))
			p = i;
	return p;
}
