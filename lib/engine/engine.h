/* SPDX-License-Identifier: MIT */
/* engine.h - the engine layer's interface to the read layer and its state. */
#ifndef EZFS_ENGINE_INTERNAL_H
#define EZFS_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "codec/codec.h"
#include "ezfs/engine.h"
#include "util/log.h"

#define EZFS_MAX_ENGINES 16
#define EZFS_LAT_SAMPLES 8192

/* ---- for the read layer ---- */

struct ezfs_estate;

/*
 * An image's engine state: the order per algorithm (EZFS_ACCEL, else the
 * default), strictness (EZFS_STRICT_ACCEL), counters, the dispatcher.
 * codecs and lg must outlive it. NULL: out of memory.
 */
struct ezfs_estate *ezi_estate_new(struct ezfs_codec_pool *codecs,
				   const struct ezfs_logger *lg);
void ezi_estate_free(struct ezfs_estate *es); /* accepts NULL */
/* Start the dispatcher EZFS_DISPATCH asks for (a failure is logged and
 * leaves decoding inline). */
void ezi_estate_start_env(struct ezfs_estate *es);

/* Decode rq with the state's engine order, fallback and dispatch mode. */
int ezi_engine_decompress(struct ezfs_estate *es, int alg,
			  struct ezfs_dreq *rq);

struct wq;
struct ezfs_dispatcher;
struct ezfs_ebatch;

/*
 * A unit of work for the dispatcher; fn(arg) returns 0 or -errno. A job of
 * ezi_engine_run completes its batch; a job of ezi_engine_submit calls
 * done(job) on the thread that ran it (a worker, or the one that claimed
 * it back), after which the job is the submitter's again (done may free
 * it). Decodes that fn starts run on the thread that runs fn.
 */
struct ezfs_ejob {
	int (*fn)(void *arg);
	void *arg;
	void (*done)(struct ezfs_ejob *job); /* submit only */
	int err;			     /* fn's result */
	/* private */
	struct ezfs_ejob *next, *prev;
	struct wq *q;		   /* the queue holding it, NULL once taken */
	struct ezfs_dispatcher *d; /* where it was queued */
	struct ezfs_ebatch *batch;
	uint64_t t_submit;
};

/* true when jobs run on worker threads (not inline, not on a worker). */
bool ezi_engine_batching(struct ezfs_estate *es);
/* true when a read's decodes are worth handing over at once as a batch:
 * workers run them, or an asynchronous engine heads an order (an inline
 * batch keeps several requests in flight on the device). */
bool ezi_engine_batches(struct ezfs_estate *es);
/* Run n jobs (on the workers, all at once, or inline) and wait for all,
 * running those no worker has taken yet on the calling thread; returns the
 * first job's error in array order, or 0. */
int ezi_engine_run(struct ezfs_estate *es, struct ezfs_ejob *jobs, size_t n);
/*
 * Queue the jobs linked through next (the list is the dispatcher's until
 * each completes) behind every job a reader waits for, without waiting:
 * decodes ahead of a reader. false (nothing queued, no done called): no
 * workers (inline dispatch, or called on a worker).
 */
bool ezi_engine_submit(struct ezfs_estate *es, struct ezfs_ejob *jobs);
/* Take back job j of ezi_engine_submit if no worker has started it: true,
 * and then run it with ezi_engine_run_claimed; false: it runs or ran
 * elsewhere (its done tells when). */
bool ezi_engine_claim(struct ezfs_estate *es, struct ezfs_ejob *j);
void ezi_engine_run_claimed(struct ezfs_estate *es, struct ezfs_ejob *j);
/* Run the oldest job of ezi_engine_submit that no worker has started, on
 * the calling thread (a reader waiting for a decode a worker runs keeps
 * busy meanwhile: on a busy machine the worker may wait long for a CPU);
 * false: there was none. */
bool ezi_engine_help(struct ezfs_estate *es);

/* Validate EZFS_ACCEL / EZFS_DISPATCH at open (logs and -EINVAL). */
int ezi_engine_env_check(const struct ezfs_logger *lg);

/* The state behind the public ezfs_image_* engine calls (ezfs/engine.h
 * says what each does and returns). */
int ezi_es_set_accel(struct ezfs_estate *es, const char *spec);
int ezi_es_get_accel(struct ezfs_estate *es, char *buf, size_t size);
int ezi_es_set_strict(struct ezfs_estate *es, int strict);
int ezi_es_get_strict(struct ezfs_estate *es);
int ezi_es_set_dispatch(struct ezfs_estate *es, int mode, unsigned nthreads);
int ezi_es_dispatch_info(struct ezfs_estate *es, struct ezfs_dispatch_info *di);
int ezi_es_engine_stats(struct ezfs_estate *es, struct ezfs_engine_stats *st,
			size_t n);
int ezi_es_latency_stats(struct ezfs_estate *es, struct ezfs_latency_stats *ls);
void ezi_es_reset(struct ezfs_estate *es);

/* ---- asynchronous engines (async.c, testdev.c, plugin.c) ---- */

/*
 * One decode request as an engine sees it: rq (input, output buffer, the
 * exact length wanted, whether a partial decode is allowed), the submit
 * time, and the completion callback. The engine layer owns it; an engine
 * that accepted it (submit returned 0) calls complete(r) exactly once, on
 * any thread, after setting err and produced, and touches r no more after
 * that (nor after a successful abandon). rq.in is the engine layer's own
 * copy and stays valid until then; rq.out must hold exactly rq.outlen
 * bytes: the engine writes no byte past it (produced may say more: a
 * "long" output the engine layer rejects).
 */
struct ezi_areq {
	struct ezfs_dreq rq;
	uint64_t t_submit; /* set by the engine layer */
	uint64_t t_start;  /* set by the engine: service began (0: submit) */
	int err;	   /* engine: 0, or -errno (-ENOSPC: out of space) */
	size_t produced;   /* engine: bytes the decode produced */
	void (*complete)(struct ezi_areq *r);
	int done;	       /* engine layer: complete ran (atomic) */
	uint64_t t_done;       /* engine layer: when complete ran */
	void *priv;	       /* engine's */
	struct ezi_areq *link; /* engine's */
	uint64_t due;	       /* engine's */
};

/*
 * The operations of an asynchronous engine (a device, or the test engine
 * that plays one). submit: 0 accepted (completes later), else -errno and
 * nothing kept (-EOPNOTSUPP: cannot serve it, e.g. a partial decode;
 * -ENODEV: out of use). poll: complete what is ready, up to max requests,
 * on the calling thread; returns how many (NULL: the engine completes on
 * its own threads). abandon: r's deadline passed; 0: r will never be
 * touched again, -EBUSY: it is completing now (complete follows soon).
 * *out_of_use set: take the engine out of use for the process.
 */
struct ezi_async_ops {
	int (*submit)(void *dev, struct ezi_areq *r);
	unsigned (*poll)(void *dev, unsigned max);
	int (*abandon)(void *dev, struct ezi_areq *r, bool *out_of_use);
	/* The device (lazily started on first use; NULL with *err and the
	 * reason in why: not usable). Called once per process. */
	void *(*open)(const char *arg, char *why, size_t size, int *err);
	/* Usable here? (no device started where avoidable) 0 or -errno,
	 * the reason in why. */
	int (*probe)(const char *arg, char *why, size_t size);
	/* The same without loading anything (a file there); may be NULL. */
	int (*installed)(char *why, size_t size);
	/* A request's deadline, from its submit (dev: the open's). */
	uint64_t (*deadline_ns)(void *dev);
};

/* An engine of the registry that is asynchronous: its ops, the argument
 * given to open/probe (the driver), and its process-wide state. */
struct ezi_aengine {
	struct ezfs_codec_ops ops; /* name, alg, flags; decompress unused */
	const struct ezi_async_ops *aops;
	const char *arg;
	bool test; /* test-only: selectable by name only */
	/* process-wide: the device, opened once on first use */
	bool opened; /* atomic */
	void *dev;
	int open_err; /* atomic: < 0 out of use */
	char why[160];
};

/* The async engines behind the software ones in the registry. */
extern struct ezi_aengine *const ezi_aengines[];
/* The async engine of ops, or NULL (a software engine). */
struct ezi_aengine *ezi_aengine_of(const struct ezfs_codec_ops *ops);
/* Its device (opened on first use); NULL: not usable (why says). */
void *ezi_aengine_dev(struct ezi_aengine *ae);
/* 0 usable, else -errno with the reason in why (probe, or the open's
 * failure once it was tried). full false: only what costs nothing (out
 * of use, the plugin's file there: nothing loaded). */
int ezi_aengine_probe(struct ezi_aengine *ae, char *why, size_t size,
		      bool full);

/* The test engine that plays a device (testdev.c) and the DPDK plugin's
 * engines (plugin.c). */
extern const struct ezi_async_ops ezi_testdev_ops;
extern const struct ezi_async_ops ezi_dpdk_ops;

/*
 * Decode rq with async engine e (index) of es and wait for it: submitted,
 * then while it is in flight the thread runs other queued decodes (each
 * submitting its own request: that is the queue depth) or polls; a
 * request past its deadline is abandoned. Checks the output length.
 * Returns 0, or the error to fall back on (-ETIMEDOUT, -EUCLEAN for a
 * short or long output, the engine's error; -EOPNOTSUPP: not usable, or a
 * partial decode it cannot serve). rq->in then points to the engine
 * layer's copy of the input, *keep, which the caller frees after any
 * fallback (*keep NULL on entry; reused when not). Counters updated.
 */
int ezi_async_decode(struct ezfs_estate *es, int e, struct ezi_aengine *ae,
		     struct ezfs_dreq *rq, uint8_t **keep);
/* Run one more decode while waiting (inline batch, or the dispatcher's
 * queues); false: none. */
bool ezi_async_help(struct ezfs_estate *es);

/* The jobs of an inline batch on this thread not yet started, which a
 * thread waiting for an async engine runs meanwhile (run_jobs). */
struct ezi_inline_batch {
	struct ezfs_ejob *jobs;
	size_t n, next;
	struct ezi_inline_batch *up;
};
extern __thread struct ezi_inline_batch *ezi_inline_cur;
void ezi_inline_run(struct ezfs_estate *es, struct ezfs_ejob *j);

/* ---- between engine.c and dispatch.c ---- */

struct ezfs_dispatcher;

struct ezfs_estate {
	struct ezfs_codec_pool *codecs;
	const struct ezfs_logger *lg;
	const struct ezfs_order *order; /* atomic; current table */
	struct ezfs_order *old;		/* superseded tables, freed at close */
	pthread_mutex_t lock;		/* old list, set_accel */
	int strict;			/* atomic */
	int probe[EZFS_MAX_ENGINES];
	struct ezi_aengine *ae[EZFS_MAX_ENGINES]; /* NULL: a software engine */
	struct {
		uint64_t requests, bytes_out, fallbacks, errors; /* atomic */
		uint64_t in_flight, in_flight_max;		 /* atomic */
		uint64_t queued_ns, service_ns;			 /* atomic */
	} cnt[EZFS_MAX_ENGINES];
	bool async_first; /* atomic: an async engine heads an order */
	bool said[EZFS_MAX_ENGINES]; /* atomic: "not usable" logged */

	pthread_rwlock_t dlock;	      /* read: using disp; write: swap */
	struct ezfs_dispatcher *disp; /* NULL = inline */
	int disp_mode;		      /* disp's mode (under dlock) */
	uint64_t batches;	      /* atomic */
	uint64_t ahead;		      /* atomic: jobs of ezi_engine_submit */

	pthread_mutex_t lat_lock;
	uint64_t lat_total;
	uint32_t lat_next;
	uint64_t lat_ns[EZFS_LAT_SAMPLES];
};

uint64_t ezi_engine_now_ns(void);
void ezi_engine_lat_record(struct ezfs_estate *es, uint64_t ns);

extern __thread bool ezi_engine_on_worker;
/* This thread holds es->dlock for reading across a batch (run_jobs): the
 * decodes it runs meanwhile must not be decodes ahead, whose completion
 * takes the cache's lock, which is held around ezi_engine_claim. */
extern __thread unsigned ezi_engine_dlock_held;

struct ezfs_dispatcher *ezi_disp_new(struct ezfs_estate *es, int mode,
				     unsigned nthreads, int *err);
/* Runs what is still queued, then ends the workers. */
void ezi_disp_free(struct ezfs_dispatcher *d);
/* Queue the jobs linked through next (each with batch or done set); they
 * complete asynchronously. ahead: behind every other job. */
void ezi_disp_submit(struct ezfs_dispatcher *d, struct ezfs_ejob *jobs,
		     bool ahead);
/* Any queued job (a reader's first, then decodes ahead unless
 * no_ahead), unqueued; NULL: none. */
struct ezfs_ejob *ezi_disp_take_any(struct ezfs_dispatcher *d, bool no_ahead);
/* The oldest queued job of ezi_disp_submit(ahead), unqueued; NULL: none. */
struct ezfs_ejob *ezi_disp_take_ahead(struct ezfs_dispatcher *d);
/* Unqueue j if it is still queued in d: true (the caller runs it). */
bool ezi_disp_claim(struct ezfs_dispatcher *d, struct ezfs_ejob *j);
/* Run j (taken off a queue) on this thread and complete it. */
void ezi_disp_run(struct ezfs_estate *es, struct ezfs_ejob *j);
void ezi_disp_info(struct ezfs_dispatcher *d, struct ezfs_dispatch_info *di);

/* Completion of a set of jobs. */
struct ezfs_ebatch {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	size_t left;
};
void ezi_ebatch_done(struct ezfs_ebatch *b);

#endif
