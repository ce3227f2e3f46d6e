/* SPDX-License-Identifier: MIT */
/*
 * fill.c - the background fill of a source (ezfs_remote_fill) and the
 * trace of what readers read (ezfs_remote_params.record_trace).
 *
 * FILL_THREADS I/O threads take the absent blocks in order of priority
 * (the ranges of a published trace, then the image from its start), mark
 * them busy, and fetch them FILL_BATCH bytes at a time as ranges of at
 * most RUN_MAX (several requests in flight on their own connections),
 * checked and kept as a read's blocks are (blocks.c). Two threads keep
 * the link busy while one waits for the last answer of its batch. A
 * reader's fetch goes first: no batch starts while one is in flight
 * (r->demand), and a reader wanting a block of a batch waits for it
 * there, as for any busy block.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote/fetch.h"

#define FILL_THREADS 2
#define FILL_BATCH   (4u << 20) /* one thread's requests at once */
#define FILL_RUN     (1u << 20) /* one request at most */
#define FILL_XFERS   16		/* requests of a batch at most (small ranges) */
/* present bytes fetched again, at most, rather than a request more */
#define FILL_GAP   (64u << 10)
#define TRACE_GAP  (128u << 10) /* the same between a trace's ranges */
#define FILL_FAILS 3		/* batches failed in a row: stop */

struct ezi_fill {
	pthread_t tid[FILL_THREADS];
	unsigned nthreads;
	int stop, all, fails, said;
	uint64_t rate, t0, sent; /* bytes started since t0 (us) */
	size_t pi;		 /* the priority range looked at */
	uint64_t cursor;	 /* the next block of the whole pass */
};

int ezi_prio_add(struct ezfs_remote *r, uint64_t off, uint64_t len)
{
	if (r->nprio + 2 > r->capprio) {
		size_t cap = r->capprio ? r->capprio * 2 : 64;
		uint64_t *p = realloc(r->prio, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		r->prio = p;
		r->capprio = cap;
	}
	r->prio[r->nprio++] = off;
	r->prio[r->nprio++] = len;
	return 0;
}

int ezfs_remote_fill_add(ezfs_remote *r, uint64_t off, uint64_t len)
{
	int err;

	pthread_mutex_lock(&r->lock);
	err = ezi_prio_add(r, off, len);
	pthread_mutex_unlock(&r->lock);
	return err;
}

/* Can the fill keep what it fetches: a cache entry that takes writes?
 * (Memory is the readers': a fill there would push their blocks out.)
 * Lock held. */
static int fill_room(struct ezfs_remote *r)
{
	return r->data_fd >= 0 && !r->cache_off;
}

/*
 * The next batch from block b on (up to block lim): absent blocks marked
 * busy, as ranges into xs (at most FILL_BATCH bytes in all); present
 * blocks between two absent ones joined in up to FILL_GAP; a busy one (a
 * reader's) ends a range. Returns the ranges made; *next: the block after
 * the last one looked at. Lock held.
 */
static unsigned batch_from(struct ezfs_remote *r, uint64_t b, uint64_t lim,
			   uint64_t gap, struct ezi_xfer *xs, unsigned nx,
			   unsigned max, uint64_t *bytes, uint64_t *next)
{
	uint64_t gapmax = gap >> r->bsbits, runmax = FILL_RUN >> r->bsbits;

	if (!runmax)
		runmax = 1;
	while (b < lim && nx < max && *bytes < FILL_BATCH) {
		uint64_t s, e, last;

		if (r->state[b] != EZI_B_ABSENT) {
			b++;
			continue;
		}
		s = last = b;
		for (e = b; e < lim && e - s < runmax; e++) {
			if (r->state[e] == EZI_B_ABSENT) {
				r->state[e] = EZI_B_BUSY;
				last = e;
			} else if (r->state[e] == EZI_B_BUSY ||
				   e - last > gapmax) {
				break;
			}
		}
		/* present blocks at its end are not fetched */
		xs[nx].r = r;
		xs[nx].off = s << r->bsbits;
		xs[nx].len = (last + 1) << r->bsbits;
		if (xs[nx].len > r->size)
			xs[nx].len = r->size;
		xs[nx].len -= xs[nx].off;
		*bytes += xs[nx].len;
		nx++;
		b = last + 1;
	}
	*next = b;
	return nx;
}

/* The next batch, in order of priority; 0 when nothing is left. Lock
 * held. */
static unsigned fill_pick(struct ezfs_remote *r, struct ezi_fill *f,
			  struct ezi_xfer *xs, unsigned max)
{
	uint64_t bytes = 0, next;
	unsigned nx = 0;

	while (f->pi < r->nprio && nx < max && bytes < FILL_BATCH) {
		uint64_t off = r->prio[f->pi], len = r->prio[f->pi + 1];
		uint64_t b0, b1;
		size_t pj = f->pi + 2;

		if (off >= r->size || !len) {
			f->pi += 2;
			continue;
		}
		if (len > r->size - off)
			len = r->size - off;
		/* the ranges after it, up to TRACE_GAP apart, with it: a
		 * request costs more than the bytes between them */
		while (pj < r->nprio && r->prio[pj] >= off &&
		       r->prio[pj] <= off + len + TRACE_GAP &&
		       r->prio[pj] < r->size) {
			uint64_t e = r->prio[pj] + r->prio[pj + 1];

			if (e > r->size)
				e = r->size;
			if (e > off + len)
				len = e - off;
			pj += 2;
		}
		b0 = off >> r->bsbits;
		b1 = ((off + len - 1) >> r->bsbits) + 1;
		nx = batch_from(r, b0, b1, TRACE_GAP, xs, nx, max, &bytes,
				&next);
		if (next >= b1)
			f->pi = pj;
		else if (next > b0) { /* the rest of it next time */
			f->pi = pj - 2;
			r->prio[f->pi] = next << r->bsbits;
			r->prio[f->pi + 1] = off + len - (next << r->bsbits);
		}
	}
	if (f->all && nx < max && bytes < FILL_BATCH) {
		nx = batch_from(r, f->cursor, r->nblocks, FILL_GAP, xs, nx, max,
				&bytes, &next);
		f->cursor = next;
	}
	return nx;
}

/* Blocks still absent or being fetched (a pass may have passed blocks a
 * reader was fetching, or a batch that failed). Lock held. */
static int fill_left(struct ezfs_remote *r, struct ezi_fill *f)
{
	if (!f->all)
		return 0;
	for (uint64_t b = 0; b < r->nblocks; b++)
		if (r->state[b] != EZI_B_PRESENT) {
			f->cursor = 0;
			return 1;
		}
	return 0;
}

static void timed_wait(struct ezfs_remote *r, uint64_t us)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(us / 1000000u);
	ts.tv_nsec += (long)(us % 1000000u) * 1000;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&r->cond, &r->lock, &ts);
}

static void *fill_thread(void *arg)
{
	struct ezfs_remote *r = arg;
	struct ezi_fill *f = r->fill;
	const unsigned max = FILL_XFERS;
	struct ezi_xfer xs[FILL_XFERS];

	pthread_mutex_lock(&r->lock);
	while (!f->stop) {
		unsigned nx;
		uint64_t bytes = 0, now;
		int err;

		if (r->demand && f->pi >= r->nprio) {
			/* a reader's fetch first (but the trace's ranges:
			 * what readers will want) */
			timed_wait(r, 50000);
			continue;
		}
		if (!fill_room(r) || ezi_refused(r)) {
			if (!f->said++)
				ezi_rlog(r, EZFS_LOG_WARN,
					 "background fill stopped: %s",
					 ezi_refused(r)
						 ? "the blob does not match "
						   "its digest"
						 : "the cache folder takes "
						   "no more");
			break;
		}
		if (f->rate) {
			/* the cap: this batch waits for its bytes' time */
			now = ezi_now_us();
			if (f->t0 + f->sent * 1000000u / f->rate > now) {
				timed_wait(r, f->t0 +
						      f->sent * 1000000u /
							      f->rate -
						      now);
				continue;
			}
		}
		memset(xs, 0, sizeof(xs));
		nx = fill_pick(r, f, xs, max);
		if (!nx) {
			if (!fill_left(r, f))
				break;
			timed_wait(r, 20000);
			continue;
		}
		for (unsigned i = 0; i < nx; i++)
			bytes += xs[i].len;
		f->sent += bytes;
		pthread_mutex_unlock(&r->lock);
		for (unsigned i = 0; i < nx; i++) {
			xs[i].buf = malloc(xs[i].len);
			xs[i].cap = xs[i].len;
			if (!xs[i].buf) {
				xs[i].err = -ENOMEM;
				xs[i].state = 2;
			}
		}
		err = ezi_fetch_run(r, xs, nx, 0, UINT64_MAX);
		pthread_mutex_lock(&r->lock);
		if (!err) {
			f->fails = 0;
			continue;
		}
		/* its blocks are absent again: the next pass takes them */
		if (++f->fails >= FILL_FAILS) {
			ezi_rlog(r, EZFS_LOG_WARN,
				 "background fill stopped after %d failed "
				 "batches: %s",
				 f->fails, strerror(-err));
			break;
		}
		timed_wait(r, 200000u << f->fails);
	}
	if (r->data_fd >= 0)
		ezi_cache_flush(r);
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

int ezfs_remote_fill(ezfs_remote *r, int policy, uint64_t rate)
{
	struct ezi_fill *f;
	int err = 0;

	if (policy != EZFS_FILL_NONE && policy != EZFS_FILL_ALL &&
	    policy != EZFS_FILL_TRACE)
		return -EINVAL;
	if (policy == EZFS_FILL_NONE)
		return 0;
	pthread_mutex_lock(&r->lock);
	if (r->fill) {
		pthread_mutex_unlock(&r->lock);
		return -EALREADY;
	}
	if (!fill_room(r)) {
		pthread_mutex_unlock(&r->lock);
		ezi_rlog(r, EZFS_LOG_WARN,
			 "no background fill: the image (%" PRIu64
			 " bytes) has no cache entry to fill (no cache "
			 "folder, or larger than --cache-max)",
			 r->size);
		return -EFBIG;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		pthread_mutex_unlock(&r->lock);
		return -ENOMEM;
	}
	f->all = policy == EZFS_FILL_ALL;
	f->rate = rate;
	f->t0 = ezi_now_us();
	r->fill = f;
	for (; f->nthreads < FILL_THREADS; f->nthreads++) {
		err = pthread_create(&f->tid[f->nthreads], NULL, fill_thread,
				     r);
		if (err)
			break;
	}
	pthread_mutex_unlock(&r->lock);
	if (!f->nthreads) {
		pthread_mutex_lock(&r->lock);
		r->fill = NULL;
		pthread_mutex_unlock(&r->lock);
		free(f);
		return -err;
	}
	return 0;
}

void ezi_fill_stop(struct ezfs_remote *r)
{
	struct ezi_fill *f = r->fill;

	if (!f)
		return;
	pthread_mutex_lock(&r->lock);
	f->stop = 1;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	for (unsigned i = 0; i < f->nthreads; i++)
		pthread_join(f->tid[i], NULL);
	r->fill = NULL;
	free(f);
}

int ezi_prio_parse(struct ezfs_remote *r, const char *s)
{
	while (*s) {
		char *end;
		uint64_t off, len;

		errno = 0;
		off = strtoull(s, &end, 16);
		if (errno || end == s || *end != '+')
			return -EBADMSG;
		s = end + 1;
		len = strtoull(s, &end, 16);
		if (errno || end == s || (*end && *end != ','))
			return -EBADMSG;
		s = *end ? end + 1 : end;
		if (ezi_prio_add(r, off, len))
			return -ENOMEM;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The trace of a reader                                               */

void ezi_trace_note(struct ezfs_remote *r, uint64_t b0, uint64_t b1)
{
	if (!r->p.record_trace)
		return;
	if (!r->traced) {
		r->traced = calloc((r->nblocks + 7) / 8 + 1, 1);
		if (!r->traced)
			return;
	}
	for (uint64_t b = b0; b <= b1 && b < r->nblocks; b++) {
		if (r->traced[b >> 3] & (1u << (b & 7)))
			continue;
		r->traced[b >> 3] |= (uint8_t)(1u << (b & 7));
		if (r->ntrace && r->trace[r->ntrace - 1] == b) {
			r->trace[r->ntrace - 1] = b + 1; /* the run goes on */
			continue;
		}
		if (r->ntrace + 2 > r->captrace) {
			size_t cap = r->captrace ? r->captrace * 2 : 256;
			uint64_t *t = realloc(r->trace, cap * sizeof(*t));

			if (!t)
				return;
			r->trace = t;
			r->captrace = cap;
		}
		r->trace[r->ntrace++] = b;
		r->trace[r->ntrace++] = b + 1;
	}
}

/* Write the trace to record_trace (a temporary file renamed over it). */
void ezi_trace_write(struct ezfs_remote *r)
{
	size_t n = r->p.record_trace ? strlen(r->p.record_trace) + 8 : 0;
	char *tmp;
	FILE *f;
	int bad;

	if (!n)
		return;
	tmp = malloc(n);
	if (!tmp)
		return;
	snprintf(tmp, n, "%s.tmp", r->p.record_trace);
	f = fopen(tmp, "we");
	bad = !f;
	for (size_t i = 0; f && i < r->ntrace; i += 2) {
		uint64_t off = r->trace[i] << r->bsbits;
		uint64_t end = r->trace[i + 1] << r->bsbits;

		if (end > r->size)
			end = r->size;
		fprintf(f, "%" PRIu64 " %" PRIu64 "\n", off, end - off);
	}
	if (f && (fflush(f) || ferror(f)))
		bad = 1;
	if (f && fclose(f))
		bad = 1;
	if (bad || rename(tmp, r->p.record_trace)) {
		ezi_rlog(r, EZFS_LOG_ERROR, "trace %s: cannot write it",
			 r->p.record_trace);
		(void)remove(tmp);
	}
	free(tmp);
	free(r->traced);
	free(r->trace);
	r->traced = NULL;
	r->trace = NULL;
	r->ntrace = r->captrace = 0;
}

static int cmp_range(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

#define ANN_MAX (64u << 10)

char *ezi_trace_annotation(const char *path, uint64_t size, char *why,
			   size_t whylen)
{
	FILE *f = fopen(path, "re");
	uint64_t *v = NULL, off, len, gap;
	size_t n = 0, cap = 0, line = 0;
	char *out = NULL;
	char buf[256];

	why[0] = '\0';
	if (!f) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	while (fgets(buf, sizeof(buf), f)) {
		char tail;

		line++;
		if (sscanf(buf, "%" SCNu64 " %" SCNu64 " %c", &off, &len,
			   &tail) != 2 ||
		    !len || off >= size || len > size - off) {
			snprintf(why, whylen,
				 "%s, line %zu: not an OFFSET LENGTH range "
				 "of the image (%" PRIu64 " bytes)",
				 path, line, size);
			goto out;
		}
		if (n + 2 > cap) {
			uint64_t *t;

			cap = cap ? cap * 2 : 256;
			t = realloc(v, cap * sizeof(*v));
			if (!t) {
				snprintf(why, whylen, "out of memory");
				goto out;
			}
			v = t;
		}
		v[n++] = off;
		v[n++] = len;
	}
	if (!n) {
		snprintf(why, whylen, "%s: no range", path);
		goto out;
	}
	qsort(v, n / 2, 2 * sizeof(*v), cmp_range);
	for (gap = 64u << 10;; gap *= 2) {
		size_t used = 0, m = 0;

		free(out);
		out = malloc(ANN_MAX + 64);
		if (!out) {
			snprintf(why, whylen, "out of memory");
			goto out;
		}
		for (size_t i = 0; i < n && used <= ANN_MAX; i = m) {
			uint64_t s = v[i], e = v[i] + v[i + 1];

			for (m = i + 2; m < n && v[m] <= e + gap; m += 2)
				if (v[m] + v[m + 1] > e)
					e = v[m] + v[m + 1];
			used += (size_t)snprintf(out + used,
						 ANN_MAX + 64 - used,
						 "%s%" PRIx64 "+%" PRIx64,
						 used ? "," : "", s, e - s);
		}
		if (used <= ANN_MAX)
			break;
	}
out:
	if (why[0]) {
		free(out);
		out = NULL;
	}
	free(v);
	fclose(f);
	return out;
}
