/* SPDX-License-Identifier: MIT */
/*
 * testdev.c - "async-test", a test engine that plays a decompression
 * device, so that the asynchronous paths run without one: deflate
 * requests complete after 20-400 us each (so out of the order they came
 * in), decoded by zlib on whichever thread polls; and a fixed share of
 * them (one in 29 of each kind) go wrong the ways DPDK's drivers do: an error,
 * a short or a long output, "out of space", or no completion at all (abandoned
 * at the deadline; the engine stays in use). Corrupt input gives "out of
 * space", as most of DPDK's drivers say. Selectable by name only (`--all` lists
 * it).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

#define LAT_MIN_NS  20000u
#define LAT_SPAN_NS 380000u
#define DEADLINE_NS (100u * 1000000u)

struct tdev {
	pthread_mutex_t lock;
	struct ezi_areq *pending; /* linked through link */
	uint64_t n;		  /* requests accepted */
	uint64_t rng;
};

enum fault { F_NONE, F_ERROR, F_SHORT, F_LONG, F_NOSPC, F_HANG };

/* The fault request number k gets: one in 29 of each kind but hang, one
 * in 499 hangs. */
static enum fault fault_of(uint64_t k)
{
	if (k % 499 == 50)
		return F_HANG;
	switch (k % 29) {
	case 1:
		return F_ERROR;
	case 4:
		return F_SHORT;
	case 7:
		return F_LONG;
	case 10:
		return F_NOSPC;
	default:
		return F_NONE;
	}
}

static void *tdev_open(const char *arg, char *why, size_t size, int *err)
{
	struct tdev *d = calloc(1, sizeof(*d));

	(void)arg;
	(void)why;
	(void)size;
	if (!d) {
		*err = -ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&d->lock, NULL);
	d->rng = 0x9e3779b97f4a7c15ull;
	return d; /* lives as long as the process */
}

static uint64_t next_rand(struct tdev *d)
{
	d->rng ^= d->rng << 13;
	d->rng ^= d->rng >> 7;
	d->rng ^= d->rng << 17;
	return d->rng;
}

static int tdev_submit(void *dev, struct ezi_areq *r)
{
	struct tdev *d = dev;
	enum fault f;

	pthread_mutex_lock(&d->lock);
	f = fault_of(++d->n);
	r->priv = (void *)(uintptr_t)f;
	r->due = f == F_HANG ? UINT64_MAX
			     : r->t_submit + LAT_MIN_NS +
				       next_rand(d) % LAT_SPAN_NS;
	r->link = d->pending;
	d->pending = r;
	pthread_mutex_unlock(&d->lock);
	return 0;
}

/* Decode r with zlib, then spoil the result as its fault says. */
static void execute(struct ezi_areq *r)
{
	const struct ezfs_codec_ops *z = &ezi_codec_zlib;
	enum fault f = (enum fault)(uintptr_t)r->priv;
	void *ctx = NULL;
	int err = 0;

	r->t_start = ezi_engine_now_ns();
	if (z->ctx_new)
		ctx = z->ctx_new(&err);
	if (!err)
		err = z->decompress(ctx, &r->rq);
	if (z->ctx_free)
		z->ctx_free(ctx);
	r->produced = err ? 0 : r->rq.outlen;
	r->err = err == -EUCLEAN ? -ENOSPC : err;
	if (f == F_ERROR)
		r->err = -EIO;
	else if (f == F_NOSPC)
		r->err = -ENOSPC;
	else if (f == F_SHORT && r->produced)
		r->produced--;
	else if (f == F_LONG && !r->err)
		r->produced++;
}

static unsigned tdev_poll(void *dev, unsigned max)
{
	struct tdev *d = dev;
	unsigned n = 0;

	while (n < max) {
		uint64_t now = ezi_engine_now_ns();
		struct ezi_areq **p, *r = NULL;

		pthread_mutex_lock(&d->lock);
		for (p = &d->pending; *p; p = &(*p)->link)
			if ((*p)->due <= now) {
				r = *p;
				*p = r->link;
				break;
			}
		pthread_mutex_unlock(&d->lock);
		if (!r)
			break;
		execute(r);
		r->complete(r); /* r is the submitter's again */
		n++;
	}
	return n;
}

static int tdev_abandon(void *dev, struct ezi_areq *r, bool *out_of_use)
{
	struct tdev *d = dev;
	struct ezi_areq **p;
	int err = -EBUSY; /* taken by a poll: it completes */

	*out_of_use = false;
	pthread_mutex_lock(&d->lock);
	for (p = &d->pending; *p; p = &(*p)->link)
		if (*p == r) {
			*p = r->link;
			err = 0;
			break;
		}
	pthread_mutex_unlock(&d->lock);
	return err;
}

static uint64_t tdev_deadline(void *dev)
{
	(void)dev;
	return DEADLINE_NS;
}

const struct ezi_async_ops ezi_testdev_ops = {
	.submit = tdev_submit,
	.poll = tdev_poll,
	.abandon = tdev_abandon,
	.open = tdev_open,
	.deadline_ns = tdev_deadline,
};
