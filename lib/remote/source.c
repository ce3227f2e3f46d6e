/* SPDX-License-Identifier: MIT */
/*
 * source.c - an image read where it lives, as struct ezfs_io_ops: the
 * source's life (open, the probe, close) and the public calls on it.
 *
 * At open the scheme (scheme.c) resolves the name to the URL fetched; one
 * request (the probe) learns the image's size and validators and brings
 * its head; the persistent cache entry, if any, is taken on when the
 * image is the one it holds. Reads go through the block table
 * (blocks.c). No thread is started: each reader runs its own transfers,
 * so the source survives the fork of a daemonizing mount.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "remote/fetch.h"

#define WHOLE_MAX (64ull << 20) /* a 200 at open: take it whole */

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

void ezfs_remote_params_init(struct ezfs_remote_params *p)
{
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
	p->retries = -1;
	p->layer = -1;
}

static ssize_t rm_pread(void *arg, void *buf, size_t len, uint64_t off)
{
	return ezi_read_range(arg, buf, len, off, 1);
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
	n = r->nlat < EZI_LAT_SAMPLES ? r->nlat : EZI_LAT_SAMPLES;
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

int ezi_curl_ready(const struct ezfs_remote_params *p)
{
	const char *why;
	int err = ezi_curl_load(&why);

	if (err)
		ezi_rlogf(p->log, p->log_arg, EZFS_LOG_ERROR, "%s", why);
	return err;
}

int ezfs_remote_open(const char *url, const struct ezfs_remote_params *p,
		     ezfs_remote **out)
{
	struct ezfs_remote *r;
	struct ezi_xfer x;
	int err, same = 0, have_map;

	*out = NULL;
	if (!p || !p->size || p->size > sizeof(*p) || !ezi_scheme_of(url))
		return -EINVAL;
	if (ezi_curl_ready(p))
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
	if (r->p.mem_bytes < 4 * EZI_RA_MAX_BYTES)
		r->p.mem_bytes = 4 * EZI_RA_MAX_BYTES;
	r->data_fd = -1;
	r->scheme = ezi_scheme_of(url);
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	r->name = strdup(url);
	if (!r->name) {
		err = -ENOMEM;
		goto fail;
	}
	err = r->scheme->resolve(r);
	if (err)
		goto fail;
	if (r->ci.nchunks && (1u << r->ci.bits) > r->bs) {
		/* a chunk index: blocks of its chunks, each checked whole */
		r->bs = 1u << r->ci.bits;
		r->bsbits = r->ci.bits;
	}
	ezi_cache_attach(r);
	have_map = r->map.bits && (r->etag[0] || r->lastmod[0]);

	/* One request: the size, the validators, and the image's head. */
	memset(&x, 0, sizeof(x));
	x.r = r;
	x.probe = 1;
	x.cond = have_map;
	x.len = x.cap = EZI_HEAD_BYTES;
	x.buf = malloc(x.len);
	if (!x.buf) {
		err = -ENOMEM;
		goto fail;
	}
	if (r->offline && r->map.bits && ezi_cmap_complete(&r->map)) {
		/* a blob by its digest, whole in the cache, and the
		 * registry unreachable: nothing to ask (checked below) */
		err = 0;
		x.status = 304;
	} else {
		ezi_xfers_run(r, &x, 1);
		err = x.err;
	}
	if (err == -EIO && (!x.status || x.status >= 500) && have_map &&
	    ezi_cmap_complete(&r->map)) {
		/* the server is gone (no answer, or 5xx) but every block
		 * is cached: serve the copy, as a 304 would */
		char host[256];

		ezi_url_host(r->url, host, sizeof(host));
		ezi_rlog(r, EZFS_LOG_WARN,
			 "%s unreachable; using the complete cached copy "
			 "(%" PRIu64 " bytes)",
			 host, r->map.size);
		ezi_rlog(r, EZFS_LOG_INFO, "%s",
			 x.why[0] ? x.why : strerror(-err));
		err = 0;
		x.status = 304;
	}
	if (err) {
		ezi_rlog(r, EZFS_LOG_ERROR, "%s",
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
			ezi_rlog(r, EZFS_LOG_ERROR,
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
		ezi_rlog(r, EZFS_LOG_ERROR,
			 "the server ignores Range (200 to a range request)");
		err = -EIO;
		goto fail_x;
	}
	err = ezi_blocks_setup(r);
	if (!err)
		err = ezi_cache_adopt(r, same);
	if (err)
		goto fail_x;
	if (x.status != 304) {
		/* keep the head (whole blocks, and the image's last) */
		uint64_t keep = x.len;

		if (keep < r->size)
			keep &= ~((uint64_t)r->bs - 1);
		x.len = keep;
		x.err = 0;
		/* checked as every fetch is (a chunk index) */
		if (ezi_verify_fetched(r, x.buf, x.off, x.len, x.why,
				       sizeof(x.why))) {
			ezi_rlog(r, EZFS_LOG_ERROR, "%s", x.why);
			x.len = 0;
		}
		/* in memory until the image's dm-verity tree is known
		 * (ezfs_remote_set_verity): a bad block never reaches the
		 * persistent cache */
		pthread_mutex_lock(&r->lock);
		r->hold = 1;
		ezi_blocks_store(r, x.buf, x.off, x.len, 0);
		r->hold = 0;
		pthread_mutex_unlock(&r->lock);
	}
	if (r->digest[0]) {
		pthread_mutex_lock(&r->lock);
		ezi_verify_blob(r);
		pthread_mutex_unlock(&r->lock);
	}
	if (r->ignores_range)
		ezi_rlog(r, EZFS_LOG_WARN,
			 "the server ignores Range; the image (%" PRIu64
			 " bytes) was fetched whole",
			 r->size);
	free(x.buf);
	ezi_xfer_clear(&x);
	if (r->data_fd >= 0) {
		char key[17];

		pthread_mutex_lock(&r->lock);
		ezi_cache_flush(r);
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
	ezi_xfer_clear(&x);
fail:
	r->dirty = 0;
	r->p.on_close = NULL;
	r->p.record_trace = NULL;
	ezfs_remote_close(r);
	return err;
}

void ezfs_remote_close(ezfs_remote *r)
{
	if (!r)
		return;
	ezi_fill_stop(r);
	ezi_trace_write(r);
	pthread_mutex_lock(&r->lock);
	/* no dm-verity tree came: the head is the entry's as it is */
	ezi_cache_settle(r);
	ezi_cache_flush(r);
	ezi_vrec_save(r);
	pthread_mutex_unlock(&r->lock);
	if (r->p.on_close) {
		struct ezfs_remote_stats st;

		ezfs_remote_get_stats(r, &st);
		r->p.on_close(r->p.on_close_arg, r->name, &st);
	}
	ezi_fetchers_free(r);
	ezi_blocks_free(r);
	ezi_cache_detach(r);
	free(r->url);
	free(r->name);
	free(r->eff_url);
	free(r->ci.hash);
	free(r->ci.tail);
	free(r->prio);
	if (r->scheme && r->scheme->release)
		r->scheme->release(r);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
	free(r);
}
