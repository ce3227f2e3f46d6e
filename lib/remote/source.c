/* SPDX-License-Identifier: MIT */
/*
 * source.c - an image read over HTTP(S) with Range, as struct ezfs_io_ops.
 *
 * The image is cut into blocks (64 KiB by default). A read takes the
 * blocks it needs from the cache; those missing are marked busy, adjacent
 * ones joined into one range, and the ranges (with more blocks ahead of a
 * sequential reader) fetched together on one curl multi handle, several in
 * flight. Readers that need a block another reader is fetching wait for
 * it. Blocks live in memory (a FIFO within a byte budget) or, with a cache
 * directory, in a sparse file whose map of present blocks is written after
 * the data is on disk (cache.c), so a crash never leaves a block marked
 * present that is not. No thread is started: each reader runs its own
 * transfers, so the source survives the fork of a daemonizing mount.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "remote/curl_dl.h"

#include "remote/internal.h"
#include "util/sha256.h"

enum { B_ABSENT = 0, B_BUSY = 1, B_PRESENT = 2 };

#define HEAD_BYTES   (256u << 10)  /* fetched at open */
#define WHOLE_MAX    (64ull << 20) /* a 200 at open: take it whole */
#define RUN_MAX	     (1u << 20)	   /* one range at most */
#define INFLIGHT     16		   /* ranges in flight per reader */
#define RA_MIN_BYTES (128u << 10)  /* first read-ahead window */
#define RA_MAX_BYTES (8u << 20)	   /* read-ahead window at most */
#define MISS_BYTES   (64u << 10)   /* what an unhinted miss fetches */
#define HINT_MAX     (64ull << 20) /* one hint at most */
#define FLUSH_BYTES  (4ull << 20)  /* map written after this much */
#define LAT_SAMPLES  4096

struct fetcher {
	CURLM *multi;
	struct fetcher *next;
};

struct ezfs_remote {
	struct ezfs_remote_params p;
	char *name;	     /* as given */
	char *url;	     /* what is fetched */
	struct ezi_reg *reg; /* oci://: its registry */
	struct ezi_s3 *s3;   /* s3://: how requests are signed */
	char digest[128];    /* oci://: the blob's */
	int verified, bad;
	char *eff_url; /* where the last redirect led; NULL: none */
	char etag[256];
	char lastmod[128];
	uint64_t size;
	unsigned bs, bsbits;
	uint64_t nblocks;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint8_t *state;
	/* memory mode */
	uint8_t **mem;
	size_t mem_used;
	uint64_t *fifo; /* ring of present blocks, oldest first */
	uint64_t fifo_head, fifo_n;
	/* disk mode */
	int data_fd;
	char *data_path, *map_path;
	struct ezi_cmap map;
	uint64_t dirty;
	int ignores_range;

	struct fetcher *fetchers;
	uint64_t last_end, ra; /* ra: bytes */
	int reader_ahead;      /* the reader hints its own read-ahead */
	struct ezfs_remote_stats st;
	/* counted without the lock (atomics) */
	uint64_t a_requests, a_retries, a_fetched, a_rounds;
	uint32_t lat[LAT_SAMPLES];
	uint64_t nlat;
};

/* One range request (with its retries). */
struct xfer {
	struct ezfs_remote *r;
	uint64_t off, len; /* wanted */
	uint8_t *buf;
	uint64_t cap; /* of buf (the probe's grows) */
	uint64_t got;
	uint64_t pos; /* of the body stream */
	int probe;    /* the request at open */
	int whole;    /* a 200 taken whole */
	int refuse;   /* a 200 too big to take */
	int early;    /* stopped on purpose once it had its bytes */
	int cond;     /* sent a conditional request */
	long status;
	uint64_t cr_a, cr_b, cr_total;
	int have_cr;
	uint64_t clen;
	char etag[256];
	char lastmod[128];
	char www[1024];
	char *used_url;
	unsigned attempt;
	uint64_t not_before; /* us, monotonic */
	uint64_t started;
	CURL *e;
	struct curl_slist *hdrs;
	char cerr[CURL_ERROR_SIZE];
	int state; /* 0 waiting, 1 active, 2 done */
	int err;   /* 0 or negative errno once done */
	char why[512];
};

void ezi_rlogf(ezfs_log_fn log, void *arg, int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log(arg, level, msg);
}

static int rlog_on(const struct ezfs_remote *r, int lvl);
#define rlog(r, lvl, ...)                                                      \
	do {                                                                   \
		if (rlog_on(r, lvl))                                           \
			ezi_rlogf((r)->p.log, (r)->p.log_arg, lvl,             \
				  __VA_ARGS__);                                \
	} while (0)

static int rlog_on(const struct ezfs_remote *r, int lvl)
{
	return lvl <= (int)r->p.verbose;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void ezfs_remote_params_init(struct ezfs_remote_params *p)
{
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
	p->retries = -1;
	p->layer = -1;
}

int ezfs_remote_is_url(const char *s)
{
	return s &&
	       (!strncasecmp(s, "http://", 7) ||
		!strncasecmp(s, "https://", 8) ||
		!strncasecmp(s, "oci://", 6) || !strncasecmp(s, "s3://", 5));
}

int ezi_content_range(const char *v, uint64_t *a, uint64_t *b, uint64_t *total)
{
	char *end;

	while (*v == ' ' || *v == '\t')
		v++;
	if (strncasecmp(v, "bytes", 5))
		return -1;
	v += 5;
	while (*v == ' ')
		v++;
	if (!isdigit((unsigned char)*v))
		return -1;
	errno = 0;
	*a = strtoull(v, &end, 10);
	if (errno || *end != '-' || !isdigit((unsigned char)end[1]))
		return -1;
	*b = strtoull(end + 1, &end, 10);
	if (errno || *end != '/' || *b < *a)
		return -1;
	v = end + 1;
	if (*v == '*') {
		*total = UINT64_MAX;
		end = (char *)v + 1;
	} else {
		if (!isdigit((unsigned char)*v))
			return -1;
		*total = strtoull(v, &end, 10);
		if (errno || *b >= *total)
			return -1;
	}
	while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
		end++;
	return *end ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* Transfers                                                           */

void ezi_header_value(char *dst, size_t size, const char *v, size_t n)
{
	while (n && (*v == ' ' || *v == '\t')) {
		v++;
		n--;
	}
	while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' '))
		n--;
	if (n >= size)
		n = size - 1;
	memcpy(dst, v, n);
	dst[n] = '\0';
}

static size_t on_header(char *b, size_t sz, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = sz * n;
	char v[512];

	if (len >= 5 && !strncmp(b, "HTTP/", 5)) {
		/* a new response (after a redirect): forget the last */
		x->have_cr = 0;
		x->clen = 0;
		x->etag[0] = x->lastmod[0] = x->www[0] = '\0';
		x->status = 0;
		return len;
	}
	if (len > 14 && !strncasecmp(b, "content-range:", 14)) {
		ezi_header_value(v, sizeof(v), b + 14, len - 14);
		x->have_cr =
			!ezi_content_range(v, &x->cr_a, &x->cr_b, &x->cr_total);
		if (!x->have_cr)
			x->have_cr = -1;
	} else if (len > 15 && !strncasecmp(b, "content-length:", 15)) {
		ezi_header_value(v, sizeof(v), b + 15, len - 15);
		x->clen = strtoull(v, NULL, 10);
	} else if (len > 5 && !strncasecmp(b, "etag:", 5)) {
		ezi_header_value(x->etag, sizeof(x->etag), b + 5, len - 5);
	} else if (len > 17 && !strncasecmp(b, "www-authenticate:", 17)) {
		ezi_header_value(x->www, sizeof(x->www), b + 17, len - 17);
	} else if (len > 14 && !strncasecmp(b, "last-modified:", 14)) {
		ezi_header_value(x->lastmod, sizeof(x->lastmod), b + 14,
				 len - 14);
	}
	return len;
}

static size_t on_body(char *b, size_t sz, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = sz * n, skip, take;
	long st = 0;

	curl_easy_getinfo(x->e, CURLINFO_RESPONSE_CODE, &st);
	x->status = st;
	__atomic_add_fetch(&x->r->a_fetched, len, __ATOMIC_RELAXED);
	if (st == 206) {
		if (x->have_cr != 1 || x->cr_a != x->off)
			return 0; /* judged at the end */
		if (x->got + len > x->len)
			return 0; /* more than asked for: a lie */
		memcpy(x->buf + x->got, b, len);
		x->got += len;
		return len;
	}
	if (st != 200)
		return len; /* an error page: thrown away */
	if (x->probe && !x->whole && !x->pos) {
		/* the server ignores Range: keep a small image whole */
		if (!x->clen || x->clen > x->r->p.whole_max) {
			x->refuse = 1;
			return 0;
		}
		if (x->clen > x->cap) {
			uint8_t *nb = realloc(x->buf, x->clen);

			if (!nb)
				return 0;
			x->buf = nb;
			x->cap = x->clen;
		}
		x->len = x->clen;
		x->whole = 1;
	}
	skip = x->pos < x->off ? (size_t)(x->off - x->pos) : 0;
	if (skip > len)
		skip = len;
	take = len - skip;
	if (take > x->len - x->got)
		take = (size_t)(x->len - x->got);
	memcpy(x->buf + x->got, b + skip, take);
	x->got += take;
	x->pos += len;
	if (x->got == x->len && !x->whole) {
		x->early = 1;
		return 0;
	}
	return len;
}

static int xfer_start(struct ezfs_remote *r, CURLM *multi, struct xfer *x)
{
	char range[64], h[4200];
	unsigned tmo = r->p.timeout_ms;

	x->e = curl_easy_init();
	if (!x->e)
		return -ENOMEM;
	pthread_mutex_lock(&r->lock);
	free(x->used_url);
	x->used_url = strdup(r->eff_url ? r->eff_url : r->url);
	pthread_mutex_unlock(&r->lock);
	if (!x->used_url)
		return -ENOMEM;
	x->got = x->pos = 0;
	x->have_cr = 0;
	x->clen = 0;
	x->status = 0;
	x->early = x->refuse = 0;
	x->cerr[0] = '\0';
	x->etag[0] = x->lastmod[0] = '\0';
	if (x->whole) {
		x->whole = 0;
		x->len = HEAD_BYTES;
	}
	snprintf(range, sizeof(range), "%" PRIu64 "-%" PRIu64, x->off,
		 x->off + x->len - 1);
	curl_easy_setopt(x->e, CURLOPT_URL, x->used_url);
	curl_easy_setopt(x->e, CURLOPT_RANGE, range);
	curl_easy_setopt(x->e, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(x->e, CURLOPT_MAXREDIRS, 10L);
	curl_easy_setopt(x->e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(x->e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(x->e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(x->e, CURLOPT_CONNECTTIMEOUT_MS, (long)tmo);
	/* nothing received for the timeout: a stalled server */
	curl_easy_setopt(x->e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(x->e, CURLOPT_LOW_SPEED_TIME,
			 (long)((tmo + 999) / 1000));
	curl_easy_setopt(x->e, CURLOPT_TIMEOUT_MS, (long)tmo * 6);
	curl_easy_setopt(x->e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(x->e, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(x->e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(x->e, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(x->e, CURLOPT_ERRORBUFFER, x->cerr);
	curl_easy_setopt(x->e, CURLOPT_PRIVATE, x);
	curl_easy_setopt(x->e, CURLOPT_USERAGENT,
			 "ezfs/"
			 "0.1");
	curl_slist_free_all(x->hdrs);
	x->hdrs = NULL;
	if (x->probe && x->cond && r->etag[0]) {
		snprintf(h, sizeof(h), "If-None-Match: %s", r->etag);
		x->hdrs = curl_slist_append(x->hdrs, h);
	} else if (x->probe && x->cond && r->lastmod[0]) {
		snprintf(h, sizeof(h), "If-Modified-Since: %s", r->lastmod);
		x->hdrs = curl_slist_append(x->hdrs, h);
	} else if (!x->probe && r->etag[0] && r->etag[0] != 'W') {
		/* a changed image answers 200 in full: caught below */
		snprintf(h, sizeof(h), "If-Range: %s", r->etag);
		x->hdrs = curl_slist_append(x->hdrs, h);
	}
	if (r->reg && !strcmp(x->used_url, r->url)) {
		/* the registry's credentials; never to where it redirects */
		ezi_reg_auth(r->reg, h, sizeof(h));
		if (h[0])
			x->hdrs = curl_slist_append(x->hdrs, h);
	}
	if (r->s3 && !strcmp(x->used_url, r->url) &&
	    ezi_s3_apply(r->s3, x->e, &x->hdrs) < 0)
		return -ENOMEM;
	if (x->hdrs)
		curl_easy_setopt(x->e, CURLOPT_HTTPHEADER, x->hdrs);
	x->started = now_us();
	__atomic_add_fetch(&r->a_requests, 1, __ATOMIC_RELAXED);
	if (x->attempt)
		__atomic_add_fetch(&r->a_retries, 1, __ATOMIC_RELAXED);
	if (curl_multi_add_handle(multi, x->e) != CURLM_OK)
		return -ENOMEM;
	x->state = 1;
	return 0;
}

/* Judge a finished attempt: 0 (its bytes are good), 1 (retry), or a
 * negative errno with x->why set. */
static int xfer_judge(struct ezfs_remote *r, struct xfer *x, CURLcode rc)
{
	const char *eff = NULL;
	long st = 0;
	uint64_t want;

	curl_easy_getinfo(x->e, CURLINFO_RESPONSE_CODE, &st);
	x->status = st;
	curl_easy_getinfo(x->e, CURLINFO_EFFECTIVE_URL, &eff);
	if (eff && strcmp(eff, x->used_url)) {
		pthread_mutex_lock(&r->lock);
		if (!r->eff_url || strcmp(r->eff_url, eff)) {
			free(r->eff_url);
			r->eff_url = strdup(eff);
			r->st.redirects++;
		}
		pthread_mutex_unlock(&r->lock);
	}
	if (x->refuse) {
		snprintf(x->why, sizeof(x->why),
			 "the server ignores Range (200 to a range request) "
			 "and the image is %s; refusing to download it "
			 "whole for each read",
			 x->clen ? "too large" : "of unknown size");
		return -EIO;
	}
	if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && x->early)) {
		if (rc == CURLE_WRITE_ERROR && st == 206)
			goto check206; /* a bad Content-Range, below */
		snprintf(x->why, sizeof(x->why), "%s",
			 x->cerr[0] ? x->cerr : curl_easy_strerror(rc));
		if (rc == CURLE_OUT_OF_MEMORY)
			return -ENOMEM;
		if (rc == CURLE_UNSUPPORTED_PROTOCOL ||
		    rc == CURLE_URL_MALFORMAT ||
		    rc == CURLE_TOO_MANY_REDIRECTS ||
		    rc == CURLE_COULDNT_RESOLVE_HOST ||
		    rc == CURLE_PEER_FAILED_VERIFICATION)
			return -EIO;
		return 1;
	}
	if (x->probe && x->cond && st == 304)
		return 0;
	if (st >= 500 || st == 429 || st == 408) {
		snprintf(x->why, sizeof(x->why), "HTTP %ld", st);
		return 1;
	}
	if (st == 416) {
		snprintf(x->why, sizeof(x->why),
			 "HTTP 416 (range not satisfiable: the image is "
			 "shorter than the server said, or empty)");
		return -EIO;
	}
	if ((st == 401 || st == 403 || st == 404 || st == 410) &&
	    strcmp(x->used_url, r->url)) {
		/* a remembered redirect (a signed URL) that expired: go
		 * back to the first URL */
		pthread_mutex_lock(&r->lock);
		free(r->eff_url);
		r->eff_url = NULL;
		pthread_mutex_unlock(&r->lock);
		snprintf(x->why, sizeof(x->why), "HTTP %ld from %s", st,
			 x->used_url);
		return 1;
	}
	if (st == 401 && r->reg && x->attempt < 2) {
		/* a token that expired: another, then again */
		if (ezi_reg_reauth(r->reg, x->www[0] ? x->www : NULL)) {
			snprintf(x->why, sizeof(x->why), "%.400s", r->reg->err);
			return -EACCES;
		}
		snprintf(x->why, sizeof(x->why), "HTTP 401 (new credentials)");
		return 1;
	}
	if (st == 404 || st == 410) {
		snprintf(x->why, sizeof(x->why), "HTTP %ld (not found)", st);
		return -ENOENT;
	}
	if (st == 401 || st == 403) {
		snprintf(x->why, sizeof(x->why), "HTTP %ld (access denied)",
			 st);
		return -EACCES;
	}
	if (st == 200) {
		if (!x->probe && !r->ignores_range) {
			/* If-Range failed: the image changed */
			if (r->etag[0] && strcmp(x->etag, r->etag)) {
				snprintf(x->why, sizeof(x->why),
					 "the image changed on the server "
					 "(ETag %.200s, now %.200s)",
					 r->etag,
					 x->etag[0] ? x->etag : "none");
				return -EIO;
			}
		}
		if (x->whole) {
			if (x->got != x->len) {
				snprintf(x->why, sizeof(x->why),
					 "short body: %" PRIu64 " of %" PRIu64
					 " bytes",
					 x->got, x->len);
				return 1;
			}
			return 0;
		}
		want = x->len;
		if (x->got != want) {
			snprintf(x->why, sizeof(x->why),
				 "the body (200, Range ignored) ended after "
				 "%" PRIu64 " bytes, before byte %" PRIu64,
				 x->pos, x->off + want);
			return r->size && x->off + want <= r->size ? 1 : -EIO;
		}
		return 0;
	}
	if (st != 206) {
		snprintf(x->why, sizeof(x->why), "HTTP %ld", st);
		return -EIO;
	}
check206:
	if (x->have_cr != 1) {
		snprintf(x->why, sizeof(x->why),
			 "206 without a valid Content-Range");
		return -EIO;
	}
	want = x->len;
	if (x->probe && x->cr_total != UINT64_MAX && x->cr_total < want)
		want = x->cr_total - x->off;
	if (x->cr_a != x->off || x->cr_b != x->off + want - 1 ||
	    (r->size && x->cr_total != r->size)) {
		snprintf(x->why, sizeof(x->why),
			 "asked for bytes %" PRIu64 "-%" PRIu64 ", got %" PRIu64
			 "-%" PRIu64 "/%" PRIu64,
			 x->off, x->off + want - 1, x->cr_a, x->cr_b,
			 x->cr_total);
		return -EIO;
	}
	if (x->got != want) {
		snprintf(x->why, sizeof(x->why),
			 "short body: %" PRIu64 " of %" PRIu64 " bytes", x->got,
			 want);
		return 1;
	}
	if (!x->probe && r->etag[0] && x->etag[0] && strcmp(x->etag, r->etag)) {
		snprintf(x->why, sizeof(x->why),
			 "the image changed on the server (ETag %.200s, now "
			 "%.200s)",
			 r->etag, x->etag);
		return -EIO;
	}
	x->len = want;
	return 0;
}

static void lat_add(struct ezfs_remote *r, uint64_t us)
{
	pthread_mutex_lock(&r->lock);
	r->lat[r->nlat++ % LAT_SAMPLES] =
		us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
	pthread_mutex_unlock(&r->lock);
}

static struct fetcher *fetcher_get(struct ezfs_remote *r)
{
	struct fetcher *f;

	pthread_mutex_lock(&r->lock);
	f = r->fetchers;
	if (f)
		r->fetchers = f->next;
	pthread_mutex_unlock(&r->lock);
	if (f)
		return f;
	f = calloc(1, sizeof(*f));
	if (f && !(f->multi = curl_multi_init())) {
		free(f);
		f = NULL;
	}
	return f;
}

static void fetcher_put(struct ezfs_remote *r, struct fetcher *f)
{
	pthread_mutex_lock(&r->lock);
	f->next = r->fetchers;
	r->fetchers = f;
	pthread_mutex_unlock(&r->lock);
}

/* Run n transfers to the end, at most INFLIGHT at once, each retried up
 * to retries times with backoff. Each ends with x->err set. */
static void run_xfers(struct ezfs_remote *r, struct xfer *xs, unsigned n)
{
	struct fetcher *f = fetcher_get(r);
	unsigned done = 0, active = 0;
	int still;

	for (unsigned i = 0; i < n; i++)
		done += xs[i].state == 2;
	if (done < n) /* one round trip, however many ranges */
		__atomic_add_fetch(&r->a_rounds, 1, __ATOMIC_RELAXED);

	if (!f) {
		for (unsigned i = 0; i < n; i++) {
			xs[i].err = -ENOMEM;
			xs[i].state = 2;
		}
		return;
	}
	while (done < n) {
		uint64_t now = now_us(), next = UINT64_MAX;
		CURLMsg *msg;
		int left;

		for (unsigned i = 0; i < n && active < INFLIGHT; i++) {
			struct xfer *x = &xs[i];

			if (x->state)
				continue;
			if (x->not_before > now) {
				if (x->not_before < next)
					next = x->not_before;
				continue;
			}
			x->err = xfer_start(r, f->multi, x);
			if (x->err) {
				x->state = 2;
				done++;
				continue;
			}
			active++;
		}
		curl_multi_perform(f->multi, &still);
		while ((msg = curl_multi_info_read(f->multi, &left))) {
			struct xfer *x = NULL;
			int v;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE,
					  (char **)&x);
			v = xfer_judge(r, x, msg->data.result);
			lat_add(r, now_us() - x->started);
			curl_multi_remove_handle(f->multi, x->e);
			curl_easy_cleanup(x->e);
			x->e = NULL;
			active--;
			if (v == 1 && x->attempt < (unsigned)r->p.retries) {
				unsigned ms =
					100u
					<< (x->attempt < 5 ? x->attempt : 5);

				rlog(r, EZFS_LOG_WARN,
				     "bytes %" PRIu64 "-%" PRIu64
				     ": %s; retrying in %u ms",
				     x->off, x->off + x->len - 1, x->why, ms);
				x->attempt++;
				x->not_before = now_us() + ms * 1000u;
				x->state = 0;
				continue;
			}
			if (v == 1)
				v = -EIO;
			x->err = v;
			x->state = 2;
			done++;
		}
		if (done == n)
			break;
		{
			int ms = 200;

			now = now_us();
			if (!active && next != UINT64_MAX)
				ms = next > now
					     ? (int)((next - now) / 1000u) + 1
					     : 0;
			if (active)
				curl_multi_poll(f->multi, NULL, 0, ms, NULL);
			else if (ms)
				usleep((useconds_t)ms * 1000u);
		}
	}
	fetcher_put(r, f);
}

/* ------------------------------------------------------------------ */
/* Blocks                                                              */

static void flush_map(struct ezfs_remote *r)
{
	if (r->data_fd < 0 || !r->dirty)
		return;
	if (fdatasync(r->data_fd))
		return;
	for (uint64_t b = 0; b < r->nblocks; b++)
		if (r->state[b] == B_PRESENT)
			r->map.bits[b >> 3] |= (uint8_t)(1u << (b & 7));
	if (ezi_cmap_store(r->map_path, &r->map))
		rlog(r, EZFS_LOG_WARN, "cannot write the cache map %s",
		     r->map_path);
	r->dirty = 0;
}

static void mem_evict(struct ezfs_remote *r, size_t need)
{
	while (r->fifo_n && r->mem_used + need > r->p.mem_bytes) {
		uint64_t b = r->fifo[r->fifo_head];

		r->fifo_head = (r->fifo_head + 1) % r->nblocks;
		r->fifo_n--;
		if (r->state[b] != B_PRESENT || !r->mem[b])
			continue;
		free(r->mem[b]);
		r->mem[b] = NULL;
		r->state[b] = B_ABSENT;
		r->mem_used -= r->bs;
	}
}

static size_t blk_len(const struct ezfs_remote *r, uint64_t b)
{
	uint64_t o = b << r->bsbits;

	return r->size - o < r->bs ? (size_t)(r->size - o) : r->bs;
}

/* Store the good bytes of x (whole blocks from x->off on), or mark its
 * blocks absent again. Called with the lock held. */
static void store_locked(struct ezfs_remote *r, struct xfer *x)
{
	uint64_t b0 = x->off >> r->bsbits;
	uint64_t nb = (x->len + r->bs - 1) >> r->bsbits;
	uint64_t end = b0 + nb < r->nblocks ? b0 + nb : r->nblocks;

	if (r->data_fd >= 0 && !x->err) {
		/* each run of blocks not yet present in one write */
		for (uint64_t b = b0, e; b < end; b = e) {
			uint64_t o = b << r->bsbits, l;
			int ok;

			for (e = b; e < end && r->state[e] != B_PRESENT; e++)
				;
			if (e == b) {
				e++;
				continue;
			}
			l = (e << r->bsbits < r->size ? e << r->bsbits
						      : r->size) -
			    o;
			ok = pwrite(r->data_fd, x->buf + (o - x->off), l,
				    (off_t)o) == (ssize_t)l;
			for (uint64_t k = b; k < e; k++) {
				r->state[k] = ok ? B_PRESENT : B_ABSENT;
				if (ok) {
					r->dirty += blk_len(r, k);
					r->st.cache_bytes += blk_len(r, k);
				}
			}
		}
		if (r->dirty >= FLUSH_BYTES)
			flush_map(r);
		return;
	}
	for (uint64_t b = b0; b < end; b++) {
		size_t l = blk_len(r, b);
		const uint8_t *src = x->buf + ((b - b0) << r->bsbits);

		if (x->err) {
			if (r->state[b] == B_BUSY)
				r->state[b] = B_ABSENT;
			continue;
		}
		if (r->state[b] == B_PRESENT)
			continue;
		if (r->data_fd >= 0) {
			if (pwrite(r->data_fd, src, l,
				   (off_t)(b << r->bsbits)) != (ssize_t)l) {
				r->state[b] = B_ABSENT;
				continue;
			}
			r->dirty += l;
		} else {
			mem_evict(r, r->bs);
			r->mem[b] = malloc(r->bs);
			if (!r->mem[b]) {
				r->state[b] = B_ABSENT;
				continue;
			}
			memcpy(r->mem[b], src, l);
			r->mem_used += r->bs;
			r->fifo[(r->fifo_head + r->fifo_n++) % r->nblocks] = b;
		}
		r->state[b] = B_PRESENT;
		r->st.cache_bytes += l;
	}
	if (r->dirty >= FLUSH_BYTES)
		flush_map(r);
}

/* oci://: once every block is present, the blob against its digest. A
 * mismatch drops the cache and fails every read from then on. Called
 * with the lock held. */
static void verify_locked(struct ezfs_remote *r)
{
	struct ezi_sha256 c;
	uint8_t d[32], *tmp = NULL;
	char hex[65];

	if (!r->digest[0] || r->verified ||
	    __atomic_load_n(&r->bad, __ATOMIC_RELAXED) ||
	    r->st.cache_bytes != r->size)
		return;
	if (r->data_fd >= 0 && !(tmp = malloc(r->bs)))
		return;
	ezi_sha256_init(&c);
	for (uint64_t b = 0; b < r->nblocks; b++) {
		size_t l = blk_len(r, b);

		if (r->data_fd < 0) {
			ezi_sha256_update(&c, r->mem[b], l);
		} else if (pread(r->data_fd, tmp, l, (off_t)(b << r->bsbits)) !=
			   (ssize_t)l) {
			free(tmp);
			return;
		} else {
			ezi_sha256_update(&c, tmp, l);
		}
	}
	free(tmp);
	ezi_sha256_final(&c, d);
	for (int i = 0; i < 32; i++) {
		hex[2 * i] = "0123456789abcdef"[d[i] >> 4];
		hex[2 * i + 1] = "0123456789abcdef"[d[i] & 15];
	}
	hex[64] = '\0';
	if (!strcmp(hex, r->digest + 7)) {
		r->verified = 1;
		return;
	}
	rlog(r, EZFS_LOG_ERROR,
	     "the blob does not match its digest %s (sha256:%s); the cache "
	     "is dropped",
	     r->digest, hex);
	__atomic_store_n(&r->bad, 1, __ATOMIC_RELAXED);
	memset(r->state, B_ABSENT, r->nblocks);
	if (r->map_path)
		(void)unlink(r->map_path);
	r->dirty = 0;
	if (r->data_fd >= 0 && ftruncate(r->data_fd, 0))
		__atomic_store_n(&r->bad, 1, __ATOMIC_RELAXED);
}

/* Fetch the blocks of list (ascending, all marked busy by the caller):
 * runs of adjacent blocks become one range each. Returns 0, or the error
 * of the first range that holds a block in [need0, need1]. */
static int fetch_blocks(struct ezfs_remote *r, const uint64_t *list, unsigned n,
			uint64_t need0, uint64_t need1)
{
	struct xfer *xs = calloc(n, sizeof(*xs));
	unsigned nx = 0, per = RUN_MAX >> r->bsbits;
	int err = 0;

	if (!per)
		per = 1;
	if (!xs) {
		err = -ENOMEM;
		pthread_mutex_lock(&r->lock);
		for (unsigned i = 0; i < n; i++)
			r->state[list[i]] = B_ABSENT;
		pthread_cond_broadcast(&r->cond);
		pthread_mutex_unlock(&r->lock);
		return err;
	}
	for (unsigned i = 0; i < n;) {
		unsigned j = i + 1;
		struct xfer *x = &xs[nx++];

		while (j < n && list[j] == list[j - 1] + 1 && j - i < per)
			j++;
		x->r = r;
		x->off = list[i] << r->bsbits;
		x->len = ((uint64_t)(j - i)) << r->bsbits;
		if (x->off + x->len > r->size)
			x->len = r->size - x->off;
		x->buf = malloc(x->len);
		x->cap = x->len;
		if (!x->buf) {
			x->err = -ENOMEM;
			x->state = 2;
		}
		i = j;
	}
	{
		/* the transfers that still need running, packed */
		struct xfer *run = xs;

		run_xfers(r, run, nx);
	}
	pthread_mutex_lock(&r->lock);
	for (unsigned i = 0; i < nx; i++) {
		struct xfer *x = &xs[i];
		uint64_t b0 = x->off >> r->bsbits;
		uint64_t b1 = (x->off + x->len - 1) >> r->bsbits;

		if (x->err && !err && b1 >= need0 && b0 <= need1) {
			err = x->err;
			rlog(r, EZFS_LOG_ERROR,
			     "bytes %" PRIu64 "-%" PRIu64 ": %s%s", x->off,
			     x->off + x->len - 1, x->why,
			     x->attempt ? " (retries exhausted)" : "");
		}
		store_locked(r, x);
	}
	verify_locked(r);
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	for (unsigned i = 0; i < nx; i++) {
		free(xs[i].buf);
		free(xs[i].used_url);
		curl_slist_free_all(xs[i].hdrs);
	}
	free(xs);
	return err;
}

static int copy_out(struct ezfs_remote *r, uint8_t *dst, size_t len,
		    uint64_t off)
{
	while (len) {
		uint64_t b = off >> r->bsbits;
		size_t in = (size_t)(off & (r->bs - 1));
		size_t l = r->bs - in < len ? r->bs - in : len;

		if (r->data_fd >= 0) {
			if (pread(r->data_fd, dst, l, (off_t)off) != (ssize_t)l)
				return -EIO;
		} else {
			memcpy(dst, r->mem[b] + in, l);
		}
		dst += l;
		off += l;
		len -= l;
	}
	return 0;
}

/* Read [off, off + len) through the cache; with ra, blocks ahead too. */
static ssize_t read_range(struct ezfs_remote *r, void *buf, size_t len,
			  uint64_t off, int count)
{
	uint64_t b0, b1, mb, *list;
	unsigned cap, tries = 0;
	int fetched = 0, err;

	if (__atomic_load_n(&r->bad, __ATOMIC_RELAXED)) {
		rlog(r, EZFS_LOG_ERROR, "the blob does not match its digest %s",
		     r->digest);
		return -EIO;
	}
	if (off >= r->size || !len)
		return 0;
	if (len > r->size - off)
		len = (size_t)(r->size - off);
	b0 = off >> r->bsbits;
	b1 = (off + len - 1) >> r->bsbits;
	mb = MISS_BYTES > r->bs ? MISS_BYTES >> r->bsbits : 1;
	cap = (unsigned)(b1 - b0 + 1 + 2 * mb + (RA_MAX_BYTES >> r->bsbits));
	list = malloc(cap * sizeof(*list));
	if (!list)
		return -ENOMEM;
	pthread_mutex_lock(&r->lock);
	for (;;) {
		uint64_t w0, w1, k;
		unsigned n = 0;
		int wait, absent = 0;

		for (k = b0; k <= b1 && !absent; k++)
			absent = r->state[k] == B_ABSENT;
		if (count) {
			/* the window grows while a sequential reader
			 * still misses (unless it hints its own) */
			if (absent && off == r->last_end && off)
				r->ra = r->ra ? r->ra * 2 : RA_MIN_BYTES;
			else if (absent)
				r->ra = 0;
			if (r->ra > RA_MAX_BYTES)
				r->ra = RA_MAX_BYTES;
			if (r->reader_ahead)
				r->ra = 0;
			r->last_end = off + len;
		}
		/* a miss nobody hinted: the absent blocks of its aligned
		 * MISS_BYTES window (and the read-ahead) come with it */
		w0 = b0 & ~(uint64_t)(mb - 1);
		w1 = (b1 | (mb - 1)) + (count ? r->ra >> r->bsbits : 0);
		if (w1 >= r->nblocks)
			w1 = r->nblocks - 1;
		for (k = w0; absent && k <= w1; k++)
			if (r->state[k] == B_ABSENT) {
				r->state[k] = B_BUSY;
				list[n++] = k;
			}
		if (n) {
			pthread_mutex_unlock(&r->lock);
			err = fetch_blocks(r, list, n, b0, b1);
			pthread_mutex_lock(&r->lock);
			fetched = 1;
			if (err) {
				pthread_mutex_unlock(&r->lock);
				free(list);
				return err;
			}
		}
		do {
			wait = absent = 0;
			for (uint64_t b = b0; b <= b1; b++) {
				if (r->state[b] == B_BUSY)
					wait = 1;
				else if (r->state[b] == B_ABSENT)
					absent = 1;
			}
			if (wait)
				pthread_cond_wait(&r->cond, &r->lock);
		} while (wait);
		if (!absent)
			break;
		if (++tries > 2) {
			pthread_mutex_unlock(&r->lock);
			free(list);
			return -EIO;
		}
	}
	err = copy_out(r, buf, len, off);
	if (!err && __atomic_load_n(&r->bad, __ATOMIC_RELAXED))
		err = -EIO; /* found out by this read's fetch */
	if (err) {
		pthread_mutex_unlock(&r->lock);
		free(list);
		rlog(r, EZFS_LOG_ERROR, "cache file %s: %s", r->data_path,
		     strerror(EIO));
		return err;
	}
	if (count) {
		r->st.reads++;
		r->st.bytes_read += len;
		if (!fetched)
			r->st.reads_hit++;
	}
	pthread_mutex_unlock(&r->lock);
	free(list);
	return (ssize_t)len;
}

static ssize_t rm_pread(void *arg, void *buf, size_t len, uint64_t off)
{
	return read_range(arg, buf, len, off, 1);
}

static void rm_close(void *arg)
{
	ezfs_remote_close(arg);
}

static const struct ezfs_io_ops remote_ops = {
	.pread = rm_pread,
	.close = rm_close,
};

const struct ezfs_io_ops *ezfs_remote_io_ops(void)
{
	return &remote_ops;
}

uint64_t ezfs_remote_size(const ezfs_remote *r)
{
	return r->size;
}

void ezfs_remote_hint(void *arg, uint64_t off, uint64_t len, unsigned flags)
{
	struct ezfs_remote *r = arg;
	uint64_t b0, b1, *list, got = 0;
	unsigned n = 0;

	if (__atomic_load_n(&r->bad, __ATOMIC_RELAXED) || off >= r->size ||
	    !len)
		return;
	if (len > r->size - off)
		len = r->size - off;
	if (len > HINT_MAX)
		len = HINT_MAX;
	b0 = off >> r->bsbits;
	b1 = (off + len - 1) >> r->bsbits;
	list = malloc((size_t)(b1 - b0 + 1) * sizeof(*list));
	pthread_mutex_lock(&r->lock);
	if (flags & EZFS_HINT_AHEAD)
		r->reader_ahead = 1;
	r->st.hints++;
	for (uint64_t b = b0; list && b <= b1; b++)
		if (r->state[b] == B_ABSENT) {
			r->state[b] = B_BUSY;
			list[n++] = b;
		}
	pthread_mutex_unlock(&r->lock);
	/* exactly these blocks, adjacent ones in one range; a failure
	 * leaves them absent for the read that follows to report */
	if (n)
		(void)fetch_blocks(r, list, n, UINT64_MAX, 0);
	pthread_mutex_lock(&r->lock);
	for (unsigned i = 0; i < n; i++)
		if (r->state[list[i]] == B_PRESENT)
			got += blk_len(r, list[i]);
	r->st.bytes_hinted += got;
	if (n)
		r->st.hints_fetched++;
	pthread_mutex_unlock(&r->lock);
	free(list);
}

void ezfs_remote_prefetch(ezfs_remote *r, uint64_t off, uint64_t len)
{
	uint8_t *tmp;

	if (off >= r->size)
		return;
	if (len > r->size - off)
		len = r->size - off;
	while (len) {
		size_t l = len > (64u << 20) ? (64u << 20) : (size_t)len;

		tmp = malloc(l);
		if (!tmp)
			return;
		if (read_range(r, tmp, l, off, 0) < 0) {
			free(tmp);
			return;
		}
		free(tmp);
		off += l;
		len -= l;
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

void ezfs_remote_get_stats(ezfs_remote *r, struct ezfs_remote_stats *st)
{
	uint32_t *s;
	uint64_t n;

	pthread_mutex_lock(&r->lock);
	*st = r->st;
	/* counted outside the lock */
	st->requests = __atomic_load_n(&r->a_requests, __ATOMIC_RELAXED);
	st->retries = __atomic_load_n(&r->a_retries, __ATOMIC_RELAXED);
	st->bytes_fetched = __atomic_load_n(&r->a_fetched, __ATOMIC_RELAXED);
	st->rounds = __atomic_load_n(&r->a_rounds, __ATOMIC_RELAXED);
	st->size = r->size;
	n = r->nlat < LAT_SAMPLES ? r->nlat : LAT_SAMPLES;
	s = n ? malloc(n * sizeof(*s)) : NULL;
	if (s)
		memcpy(s, r->lat, n * sizeof(*s));
	pthread_mutex_unlock(&r->lock);
	if (s) {
		qsort(s, n, sizeof(*s), cmp_u32);
		st->fetch_us_p50 = s[n / 2];
		st->fetch_us_p99 =
			s[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1];
		free(s);
	}
}

/* ------------------------------------------------------------------ */
/* Open and close                                                      */

static int setup_blocks(struct ezfs_remote *r)
{
	r->nblocks = (r->size + r->bs - 1) >> r->bsbits;
	r->state = calloc(r->nblocks ? r->nblocks : 1, 1);
	if (!r->state)
		return -ENOMEM;
	if (r->data_fd < 0) {
		r->mem = calloc(r->nblocks ? r->nblocks : 1, sizeof(*r->mem));
		r->fifo = calloc(r->nblocks ? r->nblocks : 1, sizeof(*r->fifo));
		if (!r->mem || !r->fifo)
			return -ENOMEM;
	}
	return 0;
}

/* The persistent cache entry of r->url: its map, if any, is loaded and
 * its data file opened; a failure only leaves r in memory mode. */
static void cache_attach(struct ezfs_remote *r)
{
	char key[17];
	size_t n;

	if (!r->p.cache_dir || !*r->p.cache_dir)
		return;
	if (mkdir(r->p.cache_dir, 0700) && errno != EEXIST) {
		rlog(r, EZFS_LOG_WARN, "cache folder %s: %s; not caching",
		     r->p.cache_dir, strerror(errno));
		return;
	}
	ezi_cache_key(r->digest[0] ? r->digest : r->url, key);
	n = strlen(r->p.cache_dir) + 32;
	r->data_path = malloc(n);
	r->map_path = malloc(n);
	if (!r->data_path || !r->map_path)
		return;
	snprintf(r->data_path, n, "%s/%s.data", r->p.cache_dir, key);
	snprintf(r->map_path, n, "%s/%s.map", r->p.cache_dir, key);
	if (!ezi_cmap_load(r->map_path, &r->map) &&
	    !strcmp(r->map.url, r->url) && r->map.bs == r->bs) {
		snprintf(r->etag, sizeof(r->etag), "%s", r->map.etag);
		snprintf(r->lastmod, sizeof(r->lastmod), "%s", r->map.lastmod);
	} else {
		free(r->map.bits);
		memset(&r->map, 0, sizeof(r->map));
	}
	r->data_fd = open(r->data_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (r->data_fd < 0)
		rlog(r, EZFS_LOG_WARN, "cache file %s: %s; not caching",
		     r->data_path, strerror(errno));
}

/* After the probe: keep the loaded map if the image is the same, else
 * start the entry afresh. */
static int cache_adopt(struct ezfs_remote *r, int same)
{
	uint64_t nb = r->nblocks, present = 0;

	if (r->data_fd < 0)
		return 0;
	if (!same || r->map.size != r->size || r->map.nblocks != nb) {
		free(r->map.bits);
		memset(&r->map, 0, sizeof(r->map));
		if (ftruncate(r->data_fd, 0))
			return 0;
		(void)unlink(r->map_path);
	}
	if (ftruncate(r->data_fd, (off_t)r->size)) {
		close(r->data_fd);
		r->data_fd = -1;
		return 0;
	}
	if (!r->map.bits) {
		r->map.bits = calloc((nb + 7) / 8 ? (nb + 7) / 8 : 1, 1);
		if (!r->map.bits)
			return -ENOMEM;
	}
	snprintf(r->map.url, sizeof(r->map.url), "%s", r->url);
	snprintf(r->map.name, sizeof(r->map.name), "%s", r->name);
	snprintf(r->map.etag, sizeof(r->map.etag), "%s", r->etag);
	snprintf(r->map.lastmod, sizeof(r->map.lastmod), "%s", r->lastmod);
	r->map.size = r->size;
	r->map.bs = r->bs;
	r->map.nblocks = nb;
	for (uint64_t b = 0; b < nb; b++)
		if (r->map.bits[b >> 3] & (1u << (b & 7))) {
			r->state[b] = B_PRESENT;
			present += blk_len(r, b);
		}
	r->st.cache_bytes = present;
	/* mark it used now, for the LRU order of gc */
	(void)utimensat(AT_FDCWD, r->map_path, NULL, 0);
	return 0;
}

/* libcurl, loaded on first use (curl_dl.c): 0, or why not, logged */
static int curl_ready(const struct ezfs_remote_params *p)
{
	const char *why;
	int err = ezi_curl_load(&why);

	if (err)
		ezi_rlogf(p->log, p->log_arg, EZFS_LOG_ERROR, "%s", why);
	return err;
}

/* oci://: resolve the reference to its layer's blob URL and digest. */
static int open_oci(struct ezfs_remote *r, const char *ref)
{
	struct ezi_oci_sel sel = { .layer = r->p.layer,
				   .blob = r->p.blob,
				   .platform = r->p.platform };
	struct ezi_oci_ref o;
	char url[4096];
	uint64_t size = 0;
	int err;

	if (ezi_oci_parse(ref, r->p.insecure, &o)) {
		rlog(r, EZFS_LOG_ERROR,
		     "not a reference oci://HOST[:PORT]/REPO:TAG or "
		     "oci://HOST[:PORT]/REPO@sha256:HEX");
		return -EINVAL;
	}
	r->reg = calloc(1, sizeof(*r->reg));
	if (!r->reg)
		return -ENOMEM;
	ezi_reg_init(r->reg, &o, r->p.log, r->p.log_arg, r->p.timeout_ms);
	err = ezi_oci_resolve(r->reg, &sel, url, sizeof(url), r->digest, &size);
	if (err) {
		rlog(r, EZFS_LOG_ERROR, "%s", r->reg->err);
		return err;
	}
	r->url = strdup(url);
	return r->url ? 0 : -ENOMEM;
}

int ezfs_remote_push(const char *path, const char *ref,
		     const struct ezfs_remote_params *p, char digest[72],
		     char manifest[72])
{
	struct ezi_oci_ref o;
	struct ezi_reg g;
	int err;

	if (!p || !p->size || p->size > sizeof(struct ezfs_remote_params))
		return -EINVAL;
	if (curl_ready(p))
		return -ELIBACC;
	if (ezi_oci_parse(ref, p->insecure, &o) ||
	    !strncmp(o.ref, "sha256:", 7)) {
		ezi_rlogf(p->log, p->log_arg, EZFS_LOG_ERROR,
			  "not a reference oci://HOST[:PORT]/REPO:TAG");
		return -EINVAL;
	}
	ezi_reg_init(&g, &o, p->log, p->log_arg, p->timeout_ms);
	err = ezi_oci_push(&g, path, digest, 72, manifest, 72);
	if (err)
		ezi_rlogf(p->log, p->log_arg, EZFS_LOG_ERROR, "%s", g.err);
	ezi_reg_destroy(&g);
	return err;
}

int ezfs_remote_open(const char *url, const struct ezfs_remote_params *p,
		     ezfs_remote **out)
{
	struct ezfs_remote *r;
	struct xfer x;
	int err, same = 0, have_map;

	*out = NULL;
	if (!p || !p->size || p->size > sizeof(*p) || !ezfs_remote_is_url(url))
		return -EINVAL;
	if (curl_ready(p))
		return -ELIBACC;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	ezfs_remote_params_init(&r->p);
	memcpy(&r->p, p, p->size);
	r->p.size = sizeof(r->p);
	if (!r->p.timeout_ms)
		r->p.timeout_ms = 10000;
	if (r->p.retries < 0)
		r->p.retries = 3;
	if (!r->p.block_size)
		r->p.block_size = 4096;
	if (!r->p.mem_bytes)
		r->p.mem_bytes = 256u << 20;
	if (!r->p.cache_max)
		r->p.cache_max = 10ull << 30;
	if (!r->p.whole_max)
		r->p.whole_max = WHOLE_MAX;
	r->bs = r->p.block_size;
	if (r->bs < 4096 || (r->bs & (r->bs - 1)) || r->bs > (16u << 20)) {
		free(r);
		return -EINVAL;
	}
	while ((1u << r->bsbits) < r->bs)
		r->bsbits++;
	if (r->p.mem_bytes < 4 * RA_MAX_BYTES)
		r->p.mem_bytes = 4 * RA_MAX_BYTES;
	r->data_fd = -1;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	r->name = strdup(url);
	if (!r->name) {
		err = -ENOMEM;
		goto fail;
	}
	if (!strncasecmp(url, "oci://", 6)) {
		err = open_oci(r, url);
		if (err == -EIO && r->p.cache_dir && *r->p.cache_dir &&
		    !ezi_cache_find(r->p.cache_dir, url, &r->map)) {
			/* the registry cannot be reached, but the blob it
			 * named is cached whole (read by the digest in its
			 * URL, checked as always) */
			const char *d = strstr(r->map.url, "/blobs/sha256:");

			if (d && strlen(d + 7) < sizeof(r->digest)) {
				free(r->url);
				r->url = strdup(r->map.url);
				snprintf(r->digest, sizeof(r->digest), "%s",
					 d + 7);
				err = r->url ? 0 : -ENOMEM;
			}
			free(r->map.bits);
			memset(&r->map, 0, sizeof(r->map));
		}
		if (err)
			goto fail;
	} else if (!strncasecmp(url, "s3://", 5)) {
		char why[256];

		err = ezi_s3_open(url, &r->s3, &r->url, why, sizeof(why));
		if (err) {
			rlog(r, EZFS_LOG_ERROR, "%s", why);
			goto fail;
		}
	} else {
		r->url = strdup(url);
	}
	if (!r->url) {
		err = -ENOMEM;
		goto fail;
	}
	cache_attach(r);
	have_map = r->map.bits && (r->etag[0] || r->lastmod[0]);

	/* One request: the size, the validators, and the image's head. */
	memset(&x, 0, sizeof(x));
	x.r = r;
	x.probe = 1;
	x.cond = have_map;
	x.len = x.cap = HEAD_BYTES;
	x.buf = malloc(x.len);
	if (!x.buf) {
		err = -ENOMEM;
		goto fail;
	}
	run_xfers(r, &x, 1);
	err = x.err;
	if (err == -EIO && (!x.status || x.status >= 500) && have_map &&
	    ezi_cmap_complete(&r->map)) {
		/* the server is gone (no answer, or 5xx) but every block
		 * is cached: serve the copy, as a 304 would */
		rlog(r, EZFS_LOG_WARN,
		     "%s; serving the complete cached copy (%" PRIu64 " bytes)",
		     x.why[0] ? x.why : strerror(-err), r->map.size);
		err = 0;
		x.status = 304;
	}
	if (err) {
		rlog(r, EZFS_LOG_ERROR, "%s",
		     x.why[0] ? x.why : strerror(-err));
		goto fail_x;
	}
	if (x.status == 304) {
		r->size = r->map.size;
		same = 1;
	} else {
		if (x.whole) {
			r->size = x.len;
			r->ignores_range = 1;
		} else if (x.status == 200) {
			r->ignores_range = 1;
			r->size = x.clen;
		} else {
			r->size = x.cr_total;
		}
		if (r->size == UINT64_MAX || !r->size) {
			rlog(r, EZFS_LOG_ERROR,
			     "the server does not say the image's size");
			err = -EIO;
			goto fail_x;
		}
		same = have_map &&
		       (r->etag[0] ? !strcmp(r->etag, x.etag)
				   : !strcmp(r->lastmod, x.lastmod)) &&
		       r->map.size == r->size;
		snprintf(r->etag, sizeof(r->etag), "%s", x.etag);
		snprintf(r->lastmod, sizeof(r->lastmod), "%s", x.lastmod);
	}
	if (r->ignores_range && !x.whole) {
		rlog(r, EZFS_LOG_ERROR,
		     "the server ignores Range (200 to a range request)");
		err = -EIO;
		goto fail_x;
	}
	err = setup_blocks(r);
	if (!err)
		err = cache_adopt(r, same);
	if (err)
		goto fail_x;
	if (x.status != 304) {
		/* keep the head (whole blocks, and the image's last) */
		uint64_t keep = x.len;

		if (keep < r->size)
			keep &= ~((uint64_t)r->bs - 1);
		x.len = keep;
		x.err = 0;
		pthread_mutex_lock(&r->lock);
		store_locked(r, &x);
		pthread_mutex_unlock(&r->lock);
	}
	if (r->digest[0]) {
		pthread_mutex_lock(&r->lock);
		verify_locked(r);
		pthread_mutex_unlock(&r->lock);
	}
	if (r->ignores_range)
		rlog(r, EZFS_LOG_WARN,
		     "the server ignores Range; the image (%" PRIu64
		     " bytes) was fetched whole",
		     r->size);
	free(x.buf);
	free(x.used_url);
	curl_slist_free_all(x.hdrs);
	if (r->data_fd >= 0) {
		char key[17];

		pthread_mutex_lock(&r->lock);
		flush_map(r);
		pthread_mutex_unlock(&r->lock);
		/* room for this image: the least recently used others go */
		ezi_cache_key(r->digest[0] ? r->digest : r->url, key);
		(void)ezi_cache_gc(
			r->p.cache_dir,
			r->p.cache_max > r->size ? r->p.cache_max - r->size : 0,
			key, NULL);
	}
	*out = r;
	return 0;
fail_x:
	free(x.buf);
	free(x.used_url);
	curl_slist_free_all(x.hdrs);
fail:
	r->dirty = 0;
	r->p.on_close = NULL;
	ezfs_remote_close(r);
	return err;
}

void ezfs_remote_close(ezfs_remote *r)
{
	struct fetcher *f;

	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	flush_map(r);
	pthread_mutex_unlock(&r->lock);
	if (r->p.on_close) {
		struct ezfs_remote_stats st;

		ezfs_remote_get_stats(r, &st);
		r->p.on_close(r->p.on_close_arg, r->name, &st);
	}
	while ((f = r->fetchers)) {
		r->fetchers = f->next;
		curl_multi_cleanup(f->multi);
		free(f);
	}
	if (r->mem)
		for (uint64_t b = 0; b < r->nblocks; b++)
			free(r->mem[b]);
	free(r->mem);
	free(r->fifo);
	free(r->state);
	free(r->map.bits);
	if (r->data_fd >= 0)
		close(r->data_fd);
	free(r->data_path);
	free(r->map_path);
	free(r->url);
	free(r->name);
	free(r->eff_url);
	ezi_s3_free(r->s3);
	if (r->reg) {
		ezi_reg_destroy(r->reg);
		free(r->reg);
	}
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
	free(r);
}
