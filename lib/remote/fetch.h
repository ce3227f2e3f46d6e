/* SPDX-License-Identifier: MIT */
/*
 * fetch.h - range requests of a source (fetch.c): each one a struct
 * ezi_xfer, run to the end together on one curl multi handle with bounded
 * timeouts and retries, every answer judged against what was asked.
 */
#ifndef EZFS_REMOTE_FETCH_H
#define EZFS_REMOTE_FETCH_H

#include "remote/curl_dl.h"

#include "remote/internal.h"

/* One range request (with its retries). */
struct ezi_xfer {
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
	int answered; /* a status line came */
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

/* Run n transfers to the end, at most 16 at once, each retried up to
 * r->p.retries times with backoff. Each ends with x->err set (and x->why
 * when it failed). */
void ezi_xfers_run(struct ezfs_remote *r, struct ezi_xfer *xs, unsigned n);
/* Free what a transfer holds (not x itself, nor x->buf). */
void ezi_xfer_clear(struct ezi_xfer *x);
/* The curl multi handles a source keeps between reads. */
void ezi_fetchers_free(struct ezfs_remote *r);

#endif
