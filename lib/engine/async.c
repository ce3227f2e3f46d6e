/* SPDX-License-Identifier: MIT */
/*
 * async.c - asynchronous engines: a decode request submitted to a device,
 * the thread kept busy while it is in flight, the deadline, the checks.
 *
 * A thread that waits for its request runs other decodes that are queued
 * (the rest of its inline batch, or the dispatcher's queues): each of
 * those submits its own request before it waits, so that one reader keeps
 * as many requests in flight as it has decodes queued (NEST_MAX at most
 * per thread), in every dispatch mode, without the read layer being
 * written as callbacks. The engine's copy of the input (rq.in) is the
 * engine layer's: the thread's input buffer is reused by the decodes it
 * runs meanwhile, and a fallback decodes from the copy.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/engine.h"

#define NEST_MAX 48 /* decodes one thread keeps in flight at most */

__thread struct ezi_inline_batch *ezi_inline_cur;
static __thread unsigned nest;

/* ---- the registry's async engines ---- */

#define DPDK_ENGINE(nm, drv)                                                   \
	{                                                                      \
		.ops = { .name = nm,                                           \
			 .alg = EZFS_ALG_DEFLATE,                              \
			 .flags = EZFS_CODEC_DECODE },                         \
		.aops = &ezi_dpdk_ops, .arg = drv, .test = false,              \
	}

static struct ezi_aengine testdev = {
	.ops = { .name = "async-test",
		 .alg = EZFS_ALG_DEFLATE,
		 .flags = EZFS_CODEC_DECODE },
	.aops = &ezi_testdev_ops,
	.test = true,
};
static struct ezi_aengine dpdk_any = DPDK_ENGINE("dpdk", NULL);
static struct ezi_aengine dpdk_zlib =
	DPDK_ENGINE("dpdk:compress_zlib", "compress_zlib");
static struct ezi_aengine dpdk_isal =
	DPDK_ENGINE("dpdk:compress_isal", "compress_isal");
static struct ezi_aengine dpdk_qat =
	DPDK_ENGINE("dpdk:compress_qat", "compress_qat");

struct ezi_aengine *const ezi_aengines[] = {
	&testdev, &dpdk_any, &dpdk_zlib, &dpdk_isal, &dpdk_qat, NULL,
};

struct ezi_aengine *ezi_aengine_of(const struct ezfs_codec_ops *ops)
{
	struct ezi_aengine *const *p;

	for (p = ezi_aengines; *p; p++)
		if (&(*p)->ops == ops)
			return *p;
	return NULL;
}

void *ezi_aengine_dev(struct ezi_aengine *ae)
{
	static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;

	if (__atomic_load_n(&ae->open_err, __ATOMIC_ACQUIRE) < 0)
		return NULL;
	if (!__atomic_load_n(&ae->opened, __ATOMIC_ACQUIRE)) {
		/* once per process, on first use (a device may take long) */
		pthread_mutex_lock(&open_lock);
		if (!ae->opened) {
			int err = 0;

			ae->dev = ae->aops->open(ae->arg, ae->why,
						 sizeof(ae->why), &err);
			if (!ae->dev)
				__atomic_store_n(&ae->open_err,
						 err ? err : -ENODEV,
						 __ATOMIC_RELEASE);
			__atomic_store_n(&ae->opened, true, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&open_lock);
	}
	if (__atomic_load_n(&ae->open_err, __ATOMIC_ACQUIRE) < 0)
		return NULL;
	return ae->dev;
}

int ezi_aengine_probe(struct ezi_aengine *ae, char *why, size_t size, bool full)
{
	int err = __atomic_load_n(&ae->open_err, __ATOMIC_ACQUIRE);

	if (err < 0) {
		if (size)
			snprintf(why, size, "%s", ae->why);
		return err;
	}
	if (size)
		why[0] = '\0';
	if (!full)
		return ae->aops->installed ? ae->aops->installed(why, size) : 0;
	return ae->aops->probe ? ae->aops->probe(ae->arg, why, size) : 0;
}

/* ---- one request ---- */

#define ADD(field, v) __atomic_fetch_add(&(field), (v), __ATOMIC_RELAXED)

static void async_complete(struct ezi_areq *r)
{
	r->t_done = ezi_engine_now_ns();
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
}

static void note_max(uint64_t *max, uint64_t v)
{
	uint64_t m = __atomic_load_n(max, __ATOMIC_RELAXED);

	while (v > m &&
	       !__atomic_compare_exchange_n(max, &m, v, true, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
}

static void nap(void)
{
	struct timespec ts = { 0, 20000 }; /* 20 us */

	nanosleep(&ts, NULL);
}

bool ezi_async_help(struct ezfs_estate *es)
{
	struct ezi_inline_batch *b = ezi_inline_cur;
	struct ezfs_ejob *j = NULL;

	if (nest >= NEST_MAX)
		return false;
	if (b && b->next < b->n) {
		ezi_inline_run(es, &b->jobs[b->next++]);
		return true;
	}
	pthread_rwlock_rdlock(&es->dlock);
	if (es->disp)
		j = ezi_disp_take_any(es->disp, ezi_engine_dlock_held > 0);
	pthread_rwlock_unlock(&es->dlock);
	if (j)
		ezi_disp_run(es, j);
	return j != NULL;
}

/* Take ae out of use for the process, with the reason. */
static void out_of_use(struct ezfs_estate *es, struct ezi_aengine *ae,
		       const char *why)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	bool first = false;

	/* the reason is written before open_err says so (readers load
	 * open_err first), by one thread */
	pthread_mutex_lock(&lock);
	if (!__atomic_load_n(&ae->open_err, __ATOMIC_ACQUIRE)) {
		snprintf(ae->why, sizeof(ae->why), "%s", why);
		__atomic_store_n(&ae->open_err, -ETIMEDOUT, __ATOMIC_RELEASE);
		first = true;
	}
	pthread_mutex_unlock(&lock);
	if (first)
		ezi_logf(es->lg, EZFS_LOG_ERROR, "engine %s: %s; out of use",
			 ae->ops.name, why);
}

int ezi_async_decode(struct ezfs_estate *es, int e, struct ezi_aengine *ae,
		     struct ezfs_dreq *rq, uint8_t **keep)
{
	const struct ezi_async_ops *ops = ae->aops;
	struct ezi_areq r = { 0 };
	uint64_t deadline, now, inflight;
	bool timed_out = false;
	void *dev;
	uint8_t *copy;
	int err;

	if (rq->partial && !(ae->ops.flags & EZFS_CODEC_PARTIAL))
		return -EOPNOTSUPP;
	dev = ezi_aengine_dev(ae);
	if (!dev) {
		/* not usable: the next engine serves; said once per image */
		if (!__atomic_exchange_n(&es->said[e], true, __ATOMIC_RELAXED))
			ezi_logf(es->lg, EZFS_LOG_WARN,
				 "engine %s: not usable: %s; the next engine "
				 "decodes",
				 ae->ops.name, ae->why);
		return -EOPNOTSUPP;
	}
	copy = *keep;
	if (!copy) {
		copy = malloc(rq->inlen ? rq->inlen : 1);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, rq->in, rq->inlen);
		*keep = copy;
		rq->in = copy; /* a fallback decodes from the copy too */
	}
	r.rq = *rq;
	r.complete = async_complete;
	ADD(es->cnt[e].requests, 1);
	inflight = ADD(es->cnt[e].in_flight, 1) + 1;
	note_max(&es->cnt[e].in_flight_max, inflight);
	r.t_submit = ezi_engine_now_ns();
	err = ops->submit(dev, &r);
	if (err) {
		__atomic_fetch_sub(&es->cnt[e].in_flight, 1, __ATOMIC_RELAXED);
		return err;
	}
	deadline = r.t_submit + ops->deadline_ns(dev);
	nest++;
	/* keep the device fed first: more decodes queued means more in
	 * flight; the deepest waiter polls, completing the others' too */
	while (!__atomic_load_n(&r.done, __ATOMIC_ACQUIRE)) {
		if (ezi_async_help(es))
			continue;
		if (ops->poll && ops->poll(dev, 8) &&
		    __atomic_load_n(&r.done, __ATOMIC_ACQUIRE))
			break;
		now = ezi_engine_now_ns();
		if (now >= deadline && !timed_out) {
			bool oou = false;
			char why[96];

			if (!ops->abandon(dev, &r, &oou)) {
				timed_out = true;
				if (oou) {
					snprintf(why, sizeof(why),
						 "a request took more than "
						 "%.3f s",
						 (double)ops->deadline_ns(dev) /
							 1e9);
					out_of_use(es, ae, why);
				}
				break;
			}
			deadline = now + 1000000; /* completing: wait */
		}
		nap();
	}
	nest--;
	now = ezi_engine_now_ns();
	__atomic_fetch_sub(&es->cnt[e].in_flight, 1, __ATOMIC_RELAXED);
	/* completed at t_done (the thread may have come back later: it ran
	 * other decodes meanwhile) */
	if (timed_out || !r.t_done || r.t_done > now)
		r.t_done = now;
	if (!r.t_start || r.t_start < r.t_submit || timed_out)
		r.t_start = r.t_submit;
	if (r.t_start > r.t_done)
		r.t_start = r.t_done;
	ADD(es->cnt[e].queued_ns, r.t_start - r.t_submit);
	ADD(es->cnt[e].service_ns, r.t_done - r.t_start);
	if (timed_out)
		return -ETIMEDOUT;
	if (r.err)
		return r.err == -EUCLEAN ? -EUCLEAN : r.err;
	if (r.produced != rq->outlen)
		return -EUCLEAN; /* short or long: the reference decides */
	ADD(es->cnt[e].bytes_out, rq->outlen);
	return 0;
}
