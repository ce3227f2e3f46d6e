/* SPDX-License-Identifier: MIT */
/*
 * engine.c - engine registry, per-image engine order (spec parsing, live
 * switch), fallback to the reference engine, counters and latency samples.
 *
 * The registry is const: the decoders of ezi_codec_all() followed by the
 * test engines. Per image, the order is an immutable table read through an
 * atomic pointer; ezfs_image_set_accel publishes a new one and keeps the old
 * ones until the image is closed, so a reader never sees a freed table.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/engine.h"

__thread bool ezi_engine_on_worker;
__thread unsigned ezi_engine_dlock_held;

/* ---- the test engine: proves the fallback path ---- */

static int fail_decompress(void *ctx, const struct ezfs_dreq *rq)
{
	(void)ctx;
	(void)rq;
	return -EIO;
}

static const struct ezfs_codec_ops engine_fail = {
	.name = "fail",
	.alg = EZFS_ALG_DEFLATE,
	.flags = EZFS_CODEC_DECODE | EZFS_CODEC_PARTIAL,
	.decompress = fail_decompress,
};

static const struct ezfs_codec_ops *const test_engines[] = {
	&engine_fail,
	NULL,
};

/* ---- registry ---- */

static const struct ezfs_codec_ops *engine_at(unsigned i)
{
	const struct ezfs_codec_ops *const *p;
	struct ezi_aengine *const *a;

	for (p = ezi_codec_all(); *p; p++) {
		if (!(*p)->decompress)
			continue;
		if (!i--)
			return *p;
	}
	for (p = test_engines; *p; p++)
		if (!i--)
			return *p;
	for (a = ezi_aengines; *a; a++)
		if (!i--)
			return &(*a)->ops;
	return NULL;
}

static bool is_test_engine(const struct ezfs_codec_ops *ops)
{
	const struct ezfs_codec_ops *const *p;

	const struct ezi_aengine *ae = ezi_aengine_of(ops);

	for (p = test_engines; *p; p++)
		if (*p == ops)
			return true;
	return ae && ae->test;
}

unsigned ezfs_engine_count(void)
{
	unsigned n = 0;

	while (n < EZFS_MAX_ENGINES && engine_at(n))
		n++;
	return n;
}

static int engine_index(const struct ezfs_codec_ops *ops)
{
	const struct ezfs_codec_ops *e;
	unsigned i;

	for (i = 0; i < EZFS_MAX_ENGINES && (e = engine_at(i)); i++)
		if (e == ops)
			return (int)i;
	return -1;
}

static int engine_by_name(const char *name, size_t len)
{
	const struct ezfs_codec_ops *e;
	unsigned i;

	for (i = 0; i < EZFS_MAX_ENGINES && (e = engine_at(i)); i++)
		if (strlen(e->name) == len && !memcmp(e->name, name, len))
			return (int)i;
	return -1;
}

/* The reference engine of alg: the last of its default list. */
static int reference_of(int alg)
{
	const struct ezfs_codec_ops *const *l = ezi_codec_list(alg);
	const struct ezfs_codec_ops *last = NULL;

	for (; l && *l; l++)
		last = *l;
	return last ? engine_index(last) : -1;
}

/* Is e usable here (0), else -errno, the reason in why (may be cut).
 * full false: a plugin engine is not loaded (every command's open lists
 * the engines: check_algs). */
static int probe_now(const struct ezfs_codec_ops *e, char *why, size_t size,
		     bool full)
{
	struct ezi_aengine *ae = ezi_aengine_of(e);
	int err;

	if (ae)
		return ezi_aengine_probe(ae, why, size, full);
	err = e->probe ? e->probe() : 0;
	if (size)
		snprintf(why, size, "%s",
			 err ? "its library is not usable here" : "");
	return err;
}

int ezfs_engine_why(unsigned i, char *why, size_t size)
{
	const struct ezfs_codec_ops *e =
		i < EZFS_MAX_ENGINES ? engine_at(i) : NULL;

	if (!e)
		return -EINVAL;
	if (size)
		why[0] = '\0';
	return probe_now(e, why, size, true);
}

int ezfs_engine_get_info(unsigned i, struct ezfs_engine_info *info)
{
	const struct ezfs_codec_ops *e =
		i < EZFS_MAX_ENGINES ? engine_at(i) : NULL;
	const struct ezfs_codec_ops *const *l;
	int pos;

	if (!e)
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	info->name = e->name;
	info->alg = e->alg;
	info->flags =
		(e->flags & EZFS_CODEC_PARTIAL ? EZFS_ENGINE_PARTIAL : 0) |
		(is_test_engine(e) ? EZFS_ENGINE_TEST : 0);
	info->probe = probe_now(e, NULL, 0, false);
	info->default_pos = -1;
	for (l = ezi_codec_list(e->alg), pos = 0; l && *l; l++, pos++)
		if (*l == e)
			info->default_pos = pos;
	info->reference = reference_of(e->alg) == (int)i;
	return 0;
}

/* ---- order tables and the spec ---- */

struct ezfs_order {
	struct ezfs_order *next_old;
	unsigned char n[EZFS_ALG_MAX];
	unsigned char idx[EZFS_ALG_MAX][EZFS_MAX_ENGINES];
};

static void order_default(struct ezfs_order *o)
{
	const struct ezfs_codec_ops *const *l;
	int alg;

	memset(o, 0, sizeof(*o));
	for (alg = 0; alg < EZFS_ALG_MAX; alg++)
		for (l = ezi_codec_list(alg); l && *l; l++)
			o->idx[alg][o->n[alg]++] =
				(unsigned char)engine_index(*l);
}

static bool in_list(const unsigned char *l, unsigned n, int e)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (l[i] == e)
			return true;
	return false;
}

static void add_bad(char *bad, size_t size, const char *what, const char *s,
		    size_t len)
{
	size_t used = strlen(bad);

	if (used < size)
		snprintf(bad + used, size - used, "%s%s '%.*s'",
			 used ? ", " : "", what, (int)len, s);
}

static const char *skip_ws(const char *s, const char *end)
{
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	return s;
}

static const char *trim_end(const char *s, const char *end)
{
	while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	return end;
}

/*
 * Parse spec into o (which starts as the default order). Errors are
 * collected in bad ("unknown engine 'x', ...").
 */
static int parse_spec(const char *spec, struct ezfs_order *o, char *bad,
		      size_t badsz)
{
	unsigned char bare[EZFS_ALG_MAX][EZFS_MAX_ENGINES];
	unsigned nbare[EZFS_ALG_MAX] = { 0 };
	const char *g = spec, *gend;
	int alg;

	bad[0] = '\0';
	order_default(o);
	if (!spec)
		return 0;
	for (; *g; g = *gend ? gend + 1 : gend) {
		const char *eq, *names, *t, *tend;
		int galg = -1;
		unsigned n = 0;
		unsigned char list[EZFS_MAX_ENGINES];

		gend = strchr(g, ';');
		if (!gend)
			gend = g + strlen(g);
		eq = memchr(g, '=', (size_t)(gend - g));
		names = g;
		if (eq) {
			const char *a = skip_ws(g, eq), *aend = trim_end(a, eq);

			for (alg = 0; alg < EZFS_ALG_MAX; alg++)
				if (strlen(ezfs_alg_name(alg)) ==
					    (size_t)(aend - a) &&
				    !memcmp(ezfs_alg_name(alg), a,
					    (size_t)(aend - a)))
					galg = alg;
			if (galg < 0) {
				add_bad(bad, badsz, "unknown algorithm", a,
					(size_t)(aend - a));
				continue;
			}
			names = eq + 1;
		}
		for (t = names; t < gend; t = tend + 1) {
			const char *a, *aend;
			int e;

			tend = memchr(t, ',', (size_t)(gend - t));
			if (!tend)
				tend = gend;
			a = skip_ws(t, tend);
			aend = trim_end(a, tend);
			if (a == aend)
				continue;
			e = engine_by_name(a, (size_t)(aend - a));
			if (e < 0) {
				add_bad(bad, badsz, "unknown engine", a,
					(size_t)(aend - a));
				continue;
			}
			if (galg >= 0 && engine_at((unsigned)e)->alg != galg) {
				add_bad(bad, badsz,
					"engine of another "
					"algorithm",
					a, (size_t)(aend - a));
				continue;
			}
			if (galg >= 0) {
				if (!in_list(list, n, e))
					list[n++] = (unsigned char)e;
			} else {
				int ea = engine_at((unsigned)e)->alg;

				if (!in_list(bare[ea], nbare[ea], e))
					bare[ea][nbare[ea]++] =
						(unsigned char)e;
			}
		}
		if (galg >= 0 && n) {
			memcpy(o->idx[galg], list, n);
			o->n[galg] = (unsigned char)n;
		}
	}
	for (alg = 0; alg < EZFS_ALG_MAX; alg++) {
		unsigned char l[EZFS_MAX_ENGINES];
		unsigned n = nbare[alg], i;

		if (!n)
			continue;
		memcpy(l, bare[alg], n);
		for (i = 0; i < o->n[alg]; i++)
			if (!in_list(l, n, o->idx[alg][i]) &&
			    n < EZFS_MAX_ENGINES)
				l[n++] = o->idx[alg][i];
		memcpy(o->idx[alg], l, n);
		o->n[alg] = (unsigned char)n;
	}
	return bad[0] ? -EINVAL : 0;
}

int ezfs_accel_check_msg(const char *spec, char *why, size_t size)
{
	struct ezfs_order o;
	char bad[256];
	int err = parse_spec(spec, &o, bad, sizeof(bad));

	if (size)
		snprintf(why, size, "%s", bad);
	return err;
}

int ezfs_accel_check(const char *spec)
{
	return ezfs_accel_check_msg(spec, NULL, 0);
}

/* Does an async engine come before the reference engine in an order? */
static bool order_async(const struct ezfs_order *o)
{
	unsigned k;
	int alg;

	for (alg = 0; alg < EZFS_ALG_MAX; alg++)
		for (k = 0; k < o->n[alg]; k++) {
			if (o->idx[alg][k] == reference_of(alg))
				break;
			if (ezi_aengine_of(engine_at(o->idx[alg][k])))
				return true;
		}
	return false;
}

static int set_order(struct ezfs_estate *es, const char *spec, const char *from)
{
	struct ezfs_order *o = malloc(sizeof(*o));
	struct ezfs_order *prev;
	char bad[256];
	int err;

	if (!o)
		return -ENOMEM;
	err = parse_spec(spec, o, bad, sizeof(bad));
	if (err) {
		ezi_logf(es->lg, EZFS_LOG_ERROR, "%s '%s': %s", from, spec,
			 bad);
		free(o);
		return err;
	}
	pthread_mutex_lock(&es->lock);
	prev = (struct ezfs_order *)__atomic_load_n(&es->order,
						    __ATOMIC_ACQUIRE);
	if (prev) {
		prev->next_old = es->old;
		es->old = prev;
	}
	__atomic_store_n(&es->order, o, __ATOMIC_RELEASE);
	__atomic_store_n(&es->async_first, order_async(o), __ATOMIC_RELEASE);
	pthread_mutex_unlock(&es->lock);
	return 0;
}

int ezi_engine_env_check(const struct ezfs_logger *lg)
{
	const char *s = getenv("EZFS_ACCEL");
	struct ezfs_order o;
	unsigned n;
	char bad[256];

	if (s && parse_spec(s, &o, bad, sizeof(bad))) {
		ezi_logf(lg, EZFS_LOG_ERROR, "EZFS_ACCEL '%s': %s", s, bad);
		return -EINVAL;
	}
	s = getenv("EZFS_DISPATCH");
	if (s && *s && ezfs_dispatch_parse(s, &n) < 0) {
		ezi_logf(lg, EZFS_LOG_ERROR,
			 "EZFS_DISPATCH '%s': not inline, queue[:N] or "
			 "percpu",
			 s);
		return -EINVAL;
	}
	return 0;
}

/* ---- per-image state ---- */

void ezi_estate_free(struct ezfs_estate *es)
{
	struct ezfs_order *o, *n;

	if (!es)
		return;
	ezi_disp_free(es->disp);
	free((void *)es->order);
	for (o = es->old; o; o = n) {
		n = o->next_old;
		free(o);
	}
	pthread_mutex_destroy(&es->lock);
	pthread_mutex_destroy(&es->lat_lock);
	pthread_rwlock_destroy(&es->dlock);
	free(es);
}

struct ezfs_estate *ezi_estate_new(struct ezfs_codec_pool *codecs,
				   const struct ezfs_logger *lg)
{
	struct ezfs_estate *es = calloc(1, sizeof(*es));
	const struct ezfs_codec_ops *e;
	unsigned i;

	if (!es)
		return NULL;
	es->codecs = codecs;
	es->lg = lg;
	pthread_mutex_init(&es->lock, NULL);
	pthread_mutex_init(&es->lat_lock, NULL);
	pthread_rwlock_init(&es->dlock, NULL);
	/* an async engine is tried on first use (a device may take long to
	 * start): never at open */
	for (i = 0; i < EZFS_MAX_ENGINES && (e = engine_at(i)); i++) {
		es->ae[i] = ezi_aengine_of(e);
		es->probe[i] = es->ae[i] ? 0 : e->probe ? e->probe() : 0;
	}
	/* env validated at open; a bad one here leaves the default */
	if (set_order(es, getenv("EZFS_ACCEL"), "EZFS_ACCEL") &&
	    set_order(es, NULL, "default")) {
		ezi_estate_free(es);
		return NULL;
	}
	es->strict = getenv("EZFS_STRICT_ACCEL") &&
		     atoi(getenv("EZFS_STRICT_ACCEL")) > 0;
	return es;
}

void ezi_estate_start_env(struct ezfs_estate *es)
{
	const char *d = getenv("EZFS_DISPATCH");
	unsigned n = 0;
	int mode;

	if (!d || !*d)
		return;
	mode = ezfs_dispatch_parse(d, &n);
	if (mode > 0 && ezi_es_set_dispatch(es, mode, n))
		ezi_logf(es->lg, EZFS_LOG_ERROR,
			 "EZFS_DISPATCH '%s': cannot "
			 "start the workers; decoding inline",
			 d);
}

int ezi_es_set_accel(struct ezfs_estate *es, const char *spec)
{
	return set_order(es, spec && *spec ? spec : NULL, "accel");
}

int ezi_es_get_accel(struct ezfs_estate *es, char *buf, size_t size)
{
	const struct ezfs_order *o;
	size_t len = 0;
	int alg;
	unsigned i;

	o = __atomic_load_n(&es->order, __ATOMIC_ACQUIRE);
	if (size)
		buf[0] = '\0';
	for (alg = 0; alg < EZFS_ALG_MAX; alg++) {
		for (i = 0; i < o->n[alg]; i++) {
			int n = snprintf(len < size ? buf + len : NULL,
					 len < size ? size - len : 0, "%s%s%s",
					 !i ? (alg ? ";" : "") : ",",
					 !i ? ezfs_alg_name(alg) : "", "");
			len += (size_t)n;
			n = snprintf(len < size ? buf + len : NULL,
				     len < size ? size - len : 0, "%s%s",
				     !i ? "=" : "",
				     engine_at(o->idx[alg][i])->name);
			len += (size_t)n;
		}
	}
	return (int)len;
}

int ezi_es_set_strict(struct ezfs_estate *es, int strict)
{
	__atomic_store_n(&es->strict, !!strict, __ATOMIC_RELAXED);
	return 0;
}

int ezi_es_get_strict(struct ezfs_estate *es)
{
	return __atomic_load_n(&es->strict, __ATOMIC_RELAXED);
}

/* ---- decoding with fallback ---- */

#define ADD(field, v) __atomic_fetch_add(&(field), (v), __ATOMIC_RELAXED)

/*
 * Engine e serves rq. A software engine completes it at once, on this
 * thread (no clock is read for it: the latency samples time its decodes);
 * an async one is submitted and waited for (async.c), *keep then holding
 * the copy of the input that rq->in points to, for a fallback.
 */
static int run_engine(struct ezfs_estate *es, int e, struct ezfs_dreq *rq,
		      uint8_t **keep)
{
	const struct ezfs_codec_ops *ops;
	int err;

	if (es->ae[e])
		return ezi_async_decode(es, e, es->ae[e], rq, keep);
	ops = engine_at((unsigned)e);
	ADD(es->cnt[e].requests, 1);
	err = ezi_codec_decompress_one(es->codecs, ops, rq);
	if (!err)
		ADD(es->cnt[e].bytes_out, rq->outlen);
	return err;
}

/* An async engine taken out of use for the process (its device did not
 * start, or a request passed its deadline): skipped like a failed probe. */
static bool out_of_use(const struct ezfs_estate *es, int e)
{
	const struct ezi_aengine *ae = es->ae[e];

	return ae && __atomic_load_n(&ae->open_err, __ATOMIC_ACQUIRE) < 0;
}

/*
 * The first usable engine of the order serves the request. One that cannot
 * serve it (-EOPNOTSUPP) hands it to the next one; one that fails (also
 * after its completion: an error, a short or long output, out of space, a
 * passed deadline) hands it to the reference engine. A -EUCLEAN the reference
 * engine confirms is a corrupt stream, not an engine error: it counts neither
 * as a fallback nor as an error. strict: no hand-off at all.
 */
static int engine_decode(struct ezfs_estate *es, int alg,
			 struct ezfs_dreq *orig)
{
	const struct ezfs_order *o =
		__atomic_load_n(&es->order, __ATOMIC_ACQUIRE);
	bool strict = __atomic_load_n(&es->strict, __ATOMIC_RELAXED);
	int ref = reference_of(alg), failed = -1, ferr = 0, err;
	struct ezfs_dreq use = *orig, *rq = &use;
	uint8_t *keep = NULL; /* an async engine's copy of the input */
	unsigned k;

	if (ref < 0)
		return -EOPNOTSUPP;
	for (k = 0; k < o->n[alg]; k++) {
		int e = o->idx[alg][k];

		if (es->probe[e] || out_of_use(es, e))
			continue;
		if (e == ref)
			break;
		err = run_engine(es, e, rq, &keep);
		if (!err) {
			free(keep);
			return 0;
		}
		if (strict) {
			if (err != -EOPNOTSUPP && err != -EUCLEAN)
				ADD(es->cnt[e].errors, 1);
			free(keep);
			return err;
		}
		ADD(es->cnt[e].fallbacks, 1);
		if (err == -EOPNOTSUPP)
			continue;
		failed = e;
		ferr = err;
		break;
	}
	err = run_engine(es, ref, rq, &keep);
	free(keep);
	if (failed >= 0) {
		if (ferr == -EUCLEAN && err == -EUCLEAN)
			__atomic_fetch_sub(&es->cnt[failed].fallbacks, 1,
					   __ATOMIC_RELAXED);
		else
			ADD(es->cnt[failed].errors, 1);
	}
	if (err && err != -EOPNOTSUPP && err != -EUCLEAN)
		ADD(es->cnt[ref].errors, 1);
	return err;
}

uint64_t ezi_engine_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void ezi_engine_lat_record(struct ezfs_estate *es, uint64_t ns)
{
	pthread_mutex_lock(&es->lat_lock);
	es->lat_ns[es->lat_next] = ns;
	es->lat_next = (es->lat_next + 1) % EZFS_LAT_SAMPLES;
	es->lat_total++;
	pthread_mutex_unlock(&es->lat_lock);
}

struct decode_job {
	struct ezfs_estate *es;
	int alg;
	struct ezfs_dreq *rq;
};

static int decode_job_fn(void *arg)
{
	struct decode_job *j = arg;

	return engine_decode(j->es, j->alg, j->rq);
}

void ezi_inline_run(struct ezfs_estate *es, struct ezfs_ejob *j)
{
	uint64_t t0 = ezi_engine_now_ns();
	bool nested = ezi_engine_on_worker;

	ezi_engine_on_worker = true;
	j->err = j->fn(j->arg);
	ezi_engine_on_worker = nested;
	if (!nested)
		ezi_engine_lat_record(es, ezi_engine_now_ns() - t0);
}

void ezi_ebatch_done(struct ezfs_ebatch *b)
{
	pthread_mutex_lock(&b->lock);
	if (!--b->left)
		pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

/*
 * Run jobs inline, or on the workers; es->dlock is read-held. The caller
 * does not sit idle while its jobs wait in a queue: it takes back the ones
 * no worker has started, last first (the workers take them first first),
 * and runs them itself, so that a batch goes no slower than inline when the
 * workers do not get a CPU (a busy machine), and the wake-ups of a batch
 * cost one handoff at most. A lone decode under queue dispatch runs on the
 * caller: a worker could only add a handoff to it (percpu sends it to the
 * pinned worker of the caller's CPU).
 */
static int run_jobs(struct ezfs_estate *es, struct ezfs_ejob *jobs, size_t n)
{
	struct ezfs_dispatcher *d = es->disp;
	struct ezfs_ebatch b;
	size_t i;
	int err = 0;

	if (!d || ezi_engine_on_worker ||
	    (n == 1 && es->disp_mode == EZFS_DISPATCH_QUEUE)) {
		/* a thread waiting for an async engine runs the next ones */
		struct ezi_inline_batch ib = { jobs, n, 0, ezi_inline_cur };

		ezi_inline_cur = &ib;
		while (ib.next < n)
			ezi_inline_run(es, &jobs[ib.next++]);
		ezi_inline_cur = ib.up;
	} else {
		pthread_mutex_init(&b.lock, NULL);
		pthread_cond_init(&b.cond, NULL);
		b.left = n;
		for (i = 0; i < n; i++) {
			jobs[i].batch = &b;
			jobs[i].done = NULL;
			jobs[i].next = i + 1 < n ? &jobs[i + 1] : NULL;
		}
		ezi_disp_submit(d, jobs, false);
		for (i = n; i-- > 0;)
			if (ezi_disp_claim(d, &jobs[i]))
				ezi_disp_run(es, &jobs[i]);
		pthread_mutex_lock(&b.lock);
		while (b.left)
			pthread_cond_wait(&b.cond, &b.lock);
		pthread_mutex_unlock(&b.lock);
		pthread_mutex_destroy(&b.lock);
		pthread_cond_destroy(&b.cond);
	}
	for (i = 0; i < n && !err; i++)
		err = jobs[i].err;
	return err;
}

int ezi_engine_decompress(struct ezfs_estate *es, int alg, struct ezfs_dreq *rq)
{
	struct decode_job dj;
	struct ezfs_ejob job = { .fn = decode_job_fn, .arg = &dj };
	int err;

	if (alg < 0 || alg >= EZFS_ALG_MAX)
		return -EOPNOTSUPP;
	if (!es)
		return -ENOMEM;
	if (ezi_engine_on_worker)
		return engine_decode(es, alg, rq);
	dj.es = es;
	dj.alg = alg;
	dj.rq = rq;
	pthread_rwlock_rdlock(&es->dlock);
	ezi_engine_dlock_held++;
	err = run_jobs(es, &job, 1);
	ezi_engine_dlock_held--;
	pthread_rwlock_unlock(&es->dlock);
	return err;
}

bool ezi_engine_batching(struct ezfs_estate *es)
{
	if (ezi_engine_on_worker || !es)
		return false;
	return __atomic_load_n(&es->disp, __ATOMIC_ACQUIRE);
}

bool ezi_engine_batches(struct ezfs_estate *es)
{
	if (ezi_engine_on_worker || !es)
		return false;
	return __atomic_load_n(&es->disp, __ATOMIC_ACQUIRE) ||
	       __atomic_load_n(&es->async_first, __ATOMIC_ACQUIRE);
}

int ezi_engine_run(struct ezfs_estate *es, struct ezfs_ejob *jobs, size_t n)
{
	int err;

	if (!es)
		return -ENOMEM;
	pthread_rwlock_rdlock(&es->dlock);
	if (es->disp && n > 1 && !ezi_engine_on_worker)
		ADD(es->batches, 1);
	ezi_engine_dlock_held++;
	err = run_jobs(es, jobs, n);
	ezi_engine_dlock_held--;
	pthread_rwlock_unlock(&es->dlock);
	return err;
}

bool ezi_engine_submit(struct ezfs_estate *es, struct ezfs_ejob *jobs)
{
	struct ezfs_ejob *j;
	size_t n = 0;

	if (!es || ezi_engine_on_worker || !jobs)
		return false;
	pthread_rwlock_rdlock(&es->dlock);
	if (!es->disp) {
		pthread_rwlock_unlock(&es->dlock);
		return false;
	}
	for (j = jobs; j; j = j->next, n++)
		j->batch = NULL;
	ADD(es->batches, 1);
	ADD(es->ahead, n);
	ezi_disp_submit(es->disp, jobs, true);
	pthread_rwlock_unlock(&es->dlock);
	return true;
}

bool ezi_engine_claim(struct ezfs_estate *es, struct ezfs_ejob *j)
{
	bool mine;

	/* j->d is the dispatcher now in use, or one that is being drained
	 * (a switch): leave it to that one's workers then. ezi_disp_claim
	 * compares it under the dispatcher's lock, which its submit holds
	 * (another thread may be submitting j now: a decode ahead is in the
	 * cache before it is queued) */
	pthread_rwlock_rdlock(&es->dlock);
	mine = es->disp && ezi_disp_claim(es->disp, j);
	pthread_rwlock_unlock(&es->dlock);
	return mine;
}

void ezi_engine_run_claimed(struct ezfs_estate *es, struct ezfs_ejob *j)
{
	ezi_disp_run(es, j);
}

bool ezi_engine_help(struct ezfs_estate *es)
{
	struct ezfs_ejob *j = NULL;

	if (ezi_engine_on_worker)
		return false;
	pthread_rwlock_rdlock(&es->dlock);
	if (es->disp)
		j = ezi_disp_take_ahead(es->disp);
	pthread_rwlock_unlock(&es->dlock);
	if (j)
		ezi_disp_run(es, j);
	return j != NULL;
}

/* ---- dispatch mode ---- */

static const char *const dispatch_names[] = { "inline", "queue", "percpu" };

const char *ezfs_dispatch_name(int mode)
{
	return mode >= 0 && mode <= EZFS_DISPATCH_PERCPU ? dispatch_names[mode]
							 : "?";
}

int ezfs_dispatch_parse(const char *s, unsigned *nthreads)
{
	int m;

	*nthreads = 0;
	if (!s)
		return -EINVAL;
	for (m = 0; m <= EZFS_DISPATCH_PERCPU; m++) {
		size_t l = strlen(dispatch_names[m]);

		if (strncmp(s, dispatch_names[m], l))
			continue;
		if (!s[l])
			return m;
		if (s[l] == ':' && m == EZFS_DISPATCH_QUEUE) {
			char *end;
			unsigned long v = strtoul(s + l + 1, &end, 10);

			if (*end || end == s + l + 1 || !v || v > 1024)
				return -EINVAL;
			*nthreads = (unsigned)v;
			return m;
		}
	}
	return -EINVAL;
}

int ezi_es_set_dispatch(struct ezfs_estate *es, int mode, unsigned nthreads)
{
	struct ezfs_dispatcher *d = NULL, *old;
	int err = 0;

	if (mode < EZFS_DISPATCH_INLINE || mode > EZFS_DISPATCH_PERCPU)
		return -EINVAL;
	if (mode != EZFS_DISPATCH_INLINE) {
		d = ezi_disp_new(es, mode, nthreads, &err);
		if (!d)
			ezi_logf(es->lg, EZFS_LOG_ERROR,
				 "dispatch %s: cannot "
				 "start workers (%d)",
				 ezfs_dispatch_name(mode), err);
	}
	pthread_rwlock_wrlock(&es->dlock);
	old = es->disp;
	es->disp_mode = d ? mode : EZFS_DISPATCH_INLINE;
	__atomic_store_n(&es->disp, d, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&es->dlock);
	ezi_disp_free(old);
	return err;
}

int ezi_es_dispatch_info(struct ezfs_estate *es, struct ezfs_dispatch_info *di)
{
	memset(di, 0, sizeof(*di));
	pthread_rwlock_rdlock(&es->dlock);
	if (es->disp)
		ezi_disp_info(es->disp, di);
	di->batches = __atomic_load_n(&es->batches, __ATOMIC_RELAXED);
	pthread_rwlock_unlock(&es->dlock);
	return 0;
}

/* ---- statistics ---- */

#define LOAD(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

int ezi_es_engine_stats(struct ezfs_estate *es, struct ezfs_engine_stats *st,
			size_t n)
{
	unsigned i, count = ezfs_engine_count();

	for (i = 0; i < count && i < n; i++) {
		const struct ezfs_codec_ops *e = engine_at(i);

		st[i].name = e->name;
		st[i].alg = e->alg;
		st[i].requests = LOAD(es->cnt[i].requests);
		st[i].bytes_out = LOAD(es->cnt[i].bytes_out);
		st[i].fallbacks = LOAD(es->cnt[i].fallbacks);
		st[i].errors = LOAD(es->cnt[i].errors);
		st[i].in_flight = LOAD(es->cnt[i].in_flight);
		st[i].in_flight_max = LOAD(es->cnt[i].in_flight_max);
		st[i].queued_ns = LOAD(es->cnt[i].queued_ns);
		st[i].service_ns = LOAD(es->cnt[i].service_ns);
	}
	return (int)count;
}

/* Square root without libm (Newton; x >= 0). */
static double sqrt_d(double x)
{
	double r = x > 1 ? x : 1;
	int i;

	if (x <= 0)
		return 0;
	for (i = 0; i < 64; i++) {
		double n = (r + x / r) / 2;

		if (n >= r)
			break;
		r = n;
	}
	return r;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int ezi_es_latency_stats(struct ezfs_estate *es, struct ezfs_latency_stats *ls)
{
	uint64_t *v;
	double sum = 0, sq = 0;
	size_t n, i;

	memset(ls, 0, sizeof(*ls));
	v = malloc(sizeof(es->lat_ns));
	if (!v)
		return -ENOMEM;
	pthread_mutex_lock(&es->lat_lock);
	ls->total = es->lat_total;
	n = es->lat_total < EZFS_LAT_SAMPLES ? (size_t)es->lat_total
					     : EZFS_LAT_SAMPLES;
	memcpy(v, es->lat_ns, n * sizeof(*v));
	pthread_mutex_unlock(&es->lat_lock);
	ls->count = n;
	if (n) {
		qsort(v, n, sizeof(*v), cmp_u64);
		for (i = 0; i < n; i++)
			sum += (double)v[i] / 1000.0;
		ls->avg = sum / (double)n;
		for (i = 0; i < n; i++) {
			double d = (double)v[i] / 1000.0 - ls->avg;

			sq += d * d;
		}
		ls->stddev = n > 1 ? sqrt_d(sq / (double)(n - 1)) : 0;
		ls->min = (double)v[0] / 1000.0;
		ls->max = (double)v[n - 1] / 1000.0;
		ls->median = n % 2 ? (double)v[n / 2] / 1000.0
				   : ((double)v[n / 2 - 1] + (double)v[n / 2]) /
					     2000.0;
	}
	free(v);
	return 0;
}

void ezi_es_reset(struct ezfs_estate *es)
{
	unsigned i;

	for (i = 0; i < EZFS_MAX_ENGINES; i++) {
		__atomic_store_n(&es->cnt[i].requests, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&es->cnt[i].bytes_out, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&es->cnt[i].fallbacks, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&es->cnt[i].errors, 0, __ATOMIC_RELAXED);
		/* in_flight stays: requests still in flight complete */
		__atomic_store_n(&es->cnt[i].in_flight_max, 0,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&es->cnt[i].queued_ns, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&es->cnt[i].service_ns, 0, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&es->batches, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&es->ahead, 0, __ATOMIC_RELAXED);
	pthread_mutex_lock(&es->lat_lock);
	es->lat_total = 0;
	es->lat_next = 0;
	pthread_mutex_unlock(&es->lat_lock);
}
