/* SPDX-License-Identifier: MIT */
/*
 * fetch.c - the fetcher: range requests run together on one curl multi
 * handle (at most INFLIGHT in flight), each with bounded timeouts and
 * retried with backoff, every answer judged against what was asked: a
 * 206 must hold exactly the range asked for, of the image's size, a
 * changed image (its ETag) or a server ignoring Range is caught. The
 * requests run on the thread that asks (a reader, a hint): they only wait
 * on the network, and the multi handles are kept for the next call.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "remote/fetch.h"

#define INFLIGHT 16 /* ranges in flight per reader */

struct ezi_fetcher {
	CURLM *multi;
	struct ezi_fetcher *next;
};

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
	struct ezi_xfer *x = arg;
	size_t len = sz * n;
	char v[512];

	if (len >= 5 && !strncmp(b, "HTTP/", 5)) {
		x->answered = 1;
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
	struct ezi_xfer *x = arg;
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

static int xfer_start(struct ezfs_remote *r, CURLM *multi, struct ezi_xfer *x)
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
	x->early = x->refuse = x->answered = 0;
	x->cerr[0] = '\0';
	x->etag[0] = x->lastmod[0] = '\0';
	if (x->whole) {
		x->whole = 0;
		x->len = EZI_HEAD_BYTES;
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
	/* the scheme's credentials; never to where it redirects */
	if (r->scheme->sign && !strcmp(x->used_url, r->url) &&
	    r->scheme->sign(r, x->e, &x->hdrs) < 0)
		return -ENOMEM;
	if (x->hdrs)
		curl_easy_setopt(x->e, CURLOPT_HTTPHEADER, x->hdrs);
	x->started = ezi_now_us();
	__atomic_add_fetch(&r->a_requests, 1, __ATOMIC_RELAXED);
	if (x->attempt)
		__atomic_add_fetch(&r->a_retries, 1, __ATOMIC_RELAXED);
	if (curl_multi_add_handle(multi, x->e) != CURLM_OK)
		return -ENOMEM;
	x->state = 1;
	return 0;
}

/* A request that timed out: what the user waited for, in words. */
static void timeout_why(struct ezfs_remote *r, struct ezi_xfer *x)
{
	char host[256];
	unsigned s = (r->p.timeout_ms + 999) / 1000;

	ezi_url_host(x->used_url, host, sizeof(host));
	if (!x->answered)
		snprintf(x->why, sizeof(x->why), "no answer from %s for %u s",
			 host, s);
	else
		snprintf(x->why, sizeof(x->why),
			 "%s stopped sending for %u s (%" PRIu64 " of %" PRIu64
			 " bytes received)",
			 host, s, x->got, x->len);
}

/* Judge a finished attempt: 0 (its bytes are good), 1 (retry), or a
 * negative errno with x->why set. */
static int xfer_judge(struct ezfs_remote *r, struct ezi_xfer *x, CURLcode rc)
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
		if (rc == CURLE_OPERATION_TIMEDOUT)
			timeout_why(r, x);
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
	if (st == 401 && r->scheme->reauth && x->attempt < 2) {
		/* a token that expired: another, then again */
		if (r->scheme->reauth(r, x->www[0] ? x->www : NULL, x->why,
				      sizeof(x->why)))
			return -EACCES;
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
	r->lat[r->nlat++ % EZI_LAT_SAMPLES] =
		us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
	pthread_mutex_unlock(&r->lock);
}

static struct ezi_fetcher *fetcher_get(struct ezfs_remote *r)
{
	struct ezi_fetcher *f;

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

static void fetcher_put(struct ezfs_remote *r, struct ezi_fetcher *f)
{
	pthread_mutex_lock(&r->lock);
	f->next = r->fetchers;
	r->fetchers = f;
	pthread_mutex_unlock(&r->lock);
}

/*
 * A retry, said: a retry after a silence (the server accepts and never
 * answers) as a warning, since the reader waits for it, once per attempt
 * however many ranges time out together, until an answer comes; other
 * reasons (a 503...) as info. The wait record says it to
 * ezfs_remote_waiting.
 */
static void retry_said(struct ezfs_remote *r, struct ezi_wait *w,
		       struct ezi_xfer *x, unsigned ms)
{
	int silent = !strncmp(x->why, "no answer from ", 15) ||
		     strstr(x->why, " stopped sending for ");
	int warn = 0;

	pthread_mutex_lock(&r->lock);
	if (silent && x->attempt > r->warned_attempt) {
		r->warned_attempt = x->attempt;
		warn = 1;
	}
	w->off = x->off;
	w->len = x->len;
	w->attempt = x->attempt;
	snprintf(w->why, sizeof(w->why), "%.150s", x->why);
	pthread_mutex_unlock(&r->lock);
	if (warn)
		ezi_rlog(r, EZFS_LOG_WARN, "%s; retrying, %u of %d", x->why,
			 x->attempt, r->p.retries);
	else
		ezi_rlog(r, EZFS_LOG_INFO,
			 "bytes %" PRIu64 "-%" PRIu64
			 ": %s; retrying in %u ms (%u of %d)",
			 x->off, x->off + x->len - 1, x->why, ms, x->attempt,
			 r->p.retries);
}

static void wait_begin(struct ezfs_remote *r, struct ezi_wait *w,
		       const struct ezi_xfer *x)
{
	memset(w, 0, sizeof(*w));
	w->since = ezi_now_us();
	w->off = x->off;
	w->len = x->len;
	pthread_mutex_lock(&r->lock);
	w->next = r->waits;
	r->waits = w;
	pthread_mutex_unlock(&r->lock);
}

/* The wait is over; answers came (ok): the next silence is said again. */
static void wait_end(struct ezfs_remote *r, struct ezi_wait *w, int ok)
{
	pthread_mutex_lock(&r->lock);
	if (ok)
		r->warned_attempt = 0;
	for (struct ezi_wait **p = &r->waits; *p; p = &(*p)->next)
		if (*p == w) {
			*p = w->next;
			break;
		}
	pthread_mutex_unlock(&r->lock);
}

/* Run n transfers to the end, at most INFLIGHT at once, each retried up
 * to retries times with backoff. Each ends with x->err set. */
void ezi_xfers_run(struct ezfs_remote *r, struct ezi_xfer *xs, unsigned n)
{
	struct ezi_fetcher *f = fetcher_get(r);
	unsigned done = 0, active = 0;
	struct ezi_wait w;
	int still, failed = 0;

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
	wait_begin(r, &w, xs);
	while (done < n) {
		uint64_t now = ezi_now_us(), next = UINT64_MAX;
		CURLMsg *msg;
		int left;

		for (unsigned i = 0; i < n && active < INFLIGHT; i++) {
			struct ezi_xfer *x = &xs[i];

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
			struct ezi_xfer *x = NULL;
			int v;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE,
					  (char **)&x);
			v = xfer_judge(r, x, msg->data.result);
			lat_add(r, ezi_now_us() - x->started);
			curl_multi_remove_handle(f->multi, x->e);
			curl_easy_cleanup(x->e);
			x->e = NULL;
			active--;
			if (v == 1 && x->attempt < (unsigned)r->p.retries) {
				unsigned ms =
					100u
					<< (x->attempt < 5 ? x->attempt : 5);

				x->attempt++;
				retry_said(r, &w, x, ms);
				x->not_before = ezi_now_us() + ms * 1000u;
				x->state = 0;
				continue;
			}
			if (v == 1)
				v = -EIO;
			x->err = v;
			x->state = 2;
			failed |= v != 0;
			done++;
		}
		if (done == n)
			break;
		{
			int ms = 200;

			now = ezi_now_us();
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
	wait_end(r, &w, !failed);
	fetcher_put(r, f);
}

void ezi_xfer_clear(struct ezi_xfer *x)
{
	if (x->e)
		curl_easy_cleanup(x->e);
	x->e = NULL;
	free(x->used_url);
	x->used_url = NULL;
	curl_slist_free_all(x->hdrs);
	x->hdrs = NULL;
}

void ezi_fetchers_free(struct ezfs_remote *r)
{
	struct ezi_fetcher *f;

	while ((f = r->fetchers)) {
		r->fetchers = f->next;
		curl_multi_cleanup(f->multi);
		free(f);
	}
}

void ezi_url_host(const char *url, char *out, size_t size)
{
	const char *h = url ? strstr(url, "://") : NULL;
	size_t n;

	h = h ? h + 3 : url ? url : "";
	n = strcspn(h, "/?#");
	if (n >= size)
		n = size - 1;
	memcpy(out, h, n);
	out[n] = '\0';
}

int ezfs_remote_waiting(ezfs_remote *r, char *buf, size_t size)
{
	const struct ezi_wait *old = NULL;
	char host[256];
	uint64_t now = ezi_now_us();
	int n;

	pthread_mutex_lock(&r->lock);
	for (const struct ezi_wait *w = r->waits; w; w = w->next)
		if (!old || w->since < old->since)
			old = w;
	if (!old) {
		pthread_mutex_unlock(&r->lock);
		return 0;
	}
	ezi_url_host(r->eff_url ? r->eff_url : r->url, host, sizeof(host));
	n = snprintf(buf, size,
		     "a read waits on %s (bytes %" PRIu64 "-%" PRIu64
		     ") for %" PRIu64 " s",
		     host, old->off, old->off + old->len - 1,
		     (now - old->since) / 1000000u);
	if (old->attempt && n >= 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, "; %s, retry %u of %d",
			 old->why, old->attempt, r->p.retries);
	pthread_mutex_unlock(&r->lock);
	return 1;
}
