/* SPDX-License-Identifier: MIT */
/*
 * blocks.c - the block table of a source. The image is cut into blocks
 * (4 KiB by default). A read takes the blocks it needs where they are
 * kept; those missing are marked busy, adjacent ones joined into one
 * range, and the ranges (with more blocks ahead of a sequential reader)
 * fetched together (fetch.c), checked (verify.c), then kept: in memory (a
 * FIFO within a byte budget) or in the persistent cache entry (cache.c).
 * Readers that need a block another reader is fetching wait for it, so a
 * block is fetched once however many threads want it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "remote/fetch.h"

#define RUN_MAX	     (1u << 20)	   /* one range at most */
#define RA_MIN_BYTES (128u << 10)  /* first read-ahead window */
#define MISS_BYTES   (64u << 10)   /* what an unhinted miss fetches */
#define HINT_MAX     (64ull << 20) /* one hint at most */

static void mem_evict(struct ezfs_remote *r, size_t need)
{
	while (r->fifo_n && r->mem_used + need > r->p.mem_bytes) {
		uint64_t b = r->fifo[r->fifo_head];

		r->fifo_head = (r->fifo_head + 1) % r->nblocks;
		r->fifo_n--;
		if (r->state[b] != EZI_B_PRESENT || !r->mem[b])
			continue;
		free(r->mem[b]);
		r->mem[b] = NULL;
		r->state[b] = EZI_B_ABSENT;
		r->mem_used -= r->bs;
		r->st.cache_bytes -= ezi_blk_len(r, b);
	}
}

void ezi_blocks_store(struct ezfs_remote *r, const uint8_t *buf, uint64_t off,
		      uint64_t len, int err)
{
	uint64_t b0 = off >> r->bsbits;
	uint64_t nb = (len + r->bs - 1) >> r->bsbits;
	uint64_t end = b0 + nb < r->nblocks ? b0 + nb : r->nblocks;

	if (err) {
		for (uint64_t b = b0; b < end; b++)
			if (r->state[b] == EZI_B_BUSY)
				r->state[b] = EZI_B_ABSENT;
		return;
	}
	if (r->data_fd >= 0 && !r->cache_off && !r->hold)
		ezi_cache_put(r, b0, end, buf);
	/* in memory: without a cache entry, or what it refused */
	for (uint64_t b = b0; b < end; b++) {
		size_t l = ezi_blk_len(r, b);

		if (r->state[b] == EZI_B_PRESENT)
			continue;
		mem_evict(r, r->bs);
		r->mem[b] = malloc(r->bs);
		if (!r->mem[b]) {
			r->state[b] = EZI_B_ABSENT;
			continue;
		}
		memcpy(r->mem[b], buf + ((b - b0) << r->bsbits), l);
		r->mem_used += r->bs;
		r->fifo[(r->fifo_head + r->fifo_n++) % r->nblocks] = b;
		r->state[b] = EZI_B_PRESENT;
		r->st.cache_bytes += l;
	}
	/* kept before any tree came: checked when one does */
	for (uint64_t b = b0; r->unchecked && b < end; b++)
		r->unchecked[b] = r->state[b] == EZI_B_PRESENT;
}

void ezi_block_forget(struct ezfs_remote *r, uint64_t b)
{
	if (r->mem[b]) {
		free(r->mem[b]);
		r->mem[b] = NULL;
		r->mem_used -= r->bs;
	} else {
		ezi_cache_unput(r, b);
	}
	r->state[b] = EZI_B_ABSENT;
	r->st.cache_bytes -= ezi_blk_len(r, b);
}

/* Fetch the blocks of list (ascending, all marked busy by the caller):
 * runs of adjacent blocks become one range each. Returns 0, or the error
 * of the first range that holds a block in [need0, need1]. */
static int fetch_blocks(struct ezfs_remote *r, const uint64_t *list, unsigned n,
			uint64_t need0, uint64_t need1)
{
	struct ezi_xfer *xs = calloc(n, sizeof(*xs));
	unsigned nx = 0, per = RUN_MAX >> r->bsbits;
	int err = 0;

	if (!per)
		per = 1;
	if (!xs) {
		err = -ENOMEM;
		pthread_mutex_lock(&r->lock);
		for (unsigned i = 0; i < n; i++)
			r->state[list[i]] = EZI_B_ABSENT;
		pthread_cond_broadcast(&r->cond);
		pthread_mutex_unlock(&r->lock);
		return err;
	}
	for (unsigned i = 0; i < n;) {
		unsigned j = i + 1;
		struct ezi_xfer *x = &xs[nx++];

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
	err = ezi_fetch_run(r, xs, nx, need0, need1);
	free(xs);
	return err;
}

int ezi_fetch_run(struct ezfs_remote *r, struct ezi_xfer *xs, unsigned nx,
		  uint64_t need0, uint64_t need1)
{
	int err = 0;

	ezi_xfers_run(r, xs, nx);
	/* checked before they are kept (verify.c) */
	for (unsigned i = 0; i < nx; i++)
		if (!xs[i].err)
			xs[i].err = ezi_verify_fetched(r, xs[i].buf, xs[i].off,
						       xs[i].len, xs[i].why,
						       sizeof(xs[i].why));
	pthread_mutex_lock(&r->lock);
	for (unsigned i = 0; i < nx; i++) {
		struct ezi_xfer *x = &xs[i];
		uint64_t b0 = x->off >> r->bsbits;
		uint64_t b1 = (x->off + x->len - 1) >> r->bsbits;

		if (x->err && !err && b1 >= need0 && b0 <= need1) {
			err = x->err;
			ezi_rlog(r, EZFS_LOG_ERROR,
				 "bytes %" PRIu64 "-%" PRIu64 ": %s%s", x->off,
				 x->off + x->len - 1, x->why,
				 x->attempt ? " (retries exhausted)" : "");
		}
		ezi_blocks_store(r, x->buf, x->off, x->len, x->err);
	}
	ezi_verify_blob(r);
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	for (unsigned i = 0; i < nx; i++) {
		free(xs[i].buf);
		ezi_xfer_clear(&xs[i]);
	}
	return err;
}

int ezi_block_copy(struct ezfs_remote *r, uint64_t b, size_t in, void *dst,
		   size_t l)
{
	if (r->mem[b]) {
		memcpy(dst, r->mem[b] + in, l);
		return 0;
	}
	return pread(r->data_fd, dst, l, (off_t)(b << r->bsbits) + (off_t)in) ==
			       (ssize_t)l
		       ? 0
		       : -EIO;
}

static int copy_out(struct ezfs_remote *r, uint8_t *dst, size_t len,
		    uint64_t off)
{
	while (len) {
		uint64_t b = off >> r->bsbits;
		size_t in = (size_t)(off & (r->bs - 1));
		size_t l = r->bs - in < len ? r->bs - in : len;

		if (ezi_block_copy(r, b, in, dst, l))
			return -EIO;
		dst += l;
		off += l;
		len -= l;
	}
	return 0;
}

/* Read [off, off + len) through the cache; with ra, blocks ahead too. */
ssize_t ezi_read_range(struct ezfs_remote *r, void *buf, size_t len,
		       uint64_t off, int count)
{
	uint64_t b0, b1, mb, *list;
	unsigned cap, tries = 0;
	int fetched = 0, err;

	if (ezi_refused(r)) {
		ezi_rlog(r, EZFS_LOG_ERROR,
			 "the blob does not match its digest %s", r->digest);
		return -EIO;
	}
	if (off >= r->size || !len)
		return 0;
	if (len > r->size - off)
		len = (size_t)(r->size - off);
	b0 = off >> r->bsbits;
	b1 = (off + len - 1) >> r->bsbits;
	mb = MISS_BYTES > r->bs ? MISS_BYTES >> r->bsbits : 1;
	cap = (unsigned)(b1 - b0 + 1 + 2 * mb +
			 (EZI_RA_MAX_BYTES >> r->bsbits));
	list = malloc(cap * sizeof(*list));
	if (!list)
		return -ENOMEM;
	pthread_mutex_lock(&r->lock);
	for (;;) {
		uint64_t w0, w1, k;
		unsigned n = 0;
		int wait, absent = 0;

		for (k = b0; k <= b1 && !absent; k++)
			absent = r->state[k] == EZI_B_ABSENT;
		if (count) {
			/* the window grows while a sequential reader
			 * still misses (unless it hints its own) */
			if (absent && off == r->last_end && off)
				r->ra = r->ra ? r->ra * 2 : RA_MIN_BYTES;
			else if (absent)
				r->ra = 0;
			if (r->ra > EZI_RA_MAX_BYTES)
				r->ra = EZI_RA_MAX_BYTES;
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
			if (r->state[k] == EZI_B_ABSENT) {
				r->state[k] = EZI_B_BUSY;
				list[n++] = k;
			}
		if (count)
			ezi_trace_note(r, b0, b1);
		if (n) {
			/* a reader waits: the background fill holds back */
			r->demand++;
			pthread_mutex_unlock(&r->lock);
			err = fetch_blocks(r, list, n, b0, b1);
			pthread_mutex_lock(&r->lock);
			r->demand--;
			pthread_cond_broadcast(&r->cond);
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
				if (r->state[b] == EZI_B_BUSY)
					wait = 1;
				else if (r->state[b] == EZI_B_ABSENT)
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
	if (err || ezi_refused(r)) {
		pthread_mutex_unlock(&r->lock);
		free(list);
		if (err)
			ezi_rlog(r, EZFS_LOG_ERROR, "cache file %s: %s",
				 r->data_path, strerror(-err));
		/* else found out by this read's fetch, and logged */
		return -EIO;
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

void ezfs_remote_hint(void *arg, uint64_t off, uint64_t len, unsigned flags)
{
	struct ezfs_remote *r = arg;
	uint64_t b0, b1, *list, got = 0;
	unsigned n = 0;

	if (ezi_refused(r) || off >= r->size || !len)
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
		if (r->state[b] == EZI_B_ABSENT) {
			r->state[b] = EZI_B_BUSY;
			list[n++] = b;
		}
	pthread_mutex_unlock(&r->lock);
	/* exactly these blocks, adjacent ones in one range; a failure
	 * leaves them absent for the read that follows to report */
	if (n) {
		pthread_mutex_lock(&r->lock);
		r->demand++;
		pthread_mutex_unlock(&r->lock);
		(void)fetch_blocks(r, list, n, UINT64_MAX, 0);
	}
	pthread_mutex_lock(&r->lock);
	if (n) {
		r->demand--;
		pthread_cond_broadcast(&r->cond);
	}
	for (unsigned i = 0; i < n; i++)
		if (r->state[list[i]] == EZI_B_PRESENT)
			got += ezi_blk_len(r, list[i]);
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
		if (ezi_read_range(r, tmp, l, off, 0) < 0) {
			free(tmp);
			return;
		}
		free(tmp);
		off += l;
		len -= l;
	}
}

int ezi_blocks_setup(struct ezfs_remote *r)
{
	r->nblocks = (r->size + r->bs - 1) >> r->bsbits;
	r->state = calloc(r->nblocks ? r->nblocks : 1, 1);
	if (!r->state)
		return -ENOMEM;
	/* the memory blocks, also beside a cache entry: what it refuses
	 * (a full disk) is kept here */
	r->mem = calloc(r->nblocks ? r->nblocks : 1, sizeof(*r->mem));
	r->fifo = calloc(r->nblocks ? r->nblocks : 1, sizeof(*r->fifo));
	r->unchecked = calloc(r->nblocks ? r->nblocks : 1, 1);
	if (!r->mem || !r->fifo || !r->unchecked)
		return -ENOMEM;
	return 0;
}

void ezi_blocks_free(struct ezfs_remote *r)
{
	if (r->mem)
		for (uint64_t b = 0; b < r->nblocks; b++)
			free(r->mem[b]);
	free(r->mem);
	free(r->fifo);
	free(r->state);
	free(r->unchecked);
	r->unchecked = NULL;
	r->mem = NULL;
	r->fifo = NULL;
	r->state = NULL;
}
