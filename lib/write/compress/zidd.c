/* SPDX-License-Identifier: MIT */
/*
 * zidd.c - -E dedupe inside one file (9.11), for compress.c.
 *
 * Extents already written are indexed by a hash of their first IDD_W
 * bytes; a rolling hash over the input finds where an earlier extent's
 * data starts again, the current extent is cut there and the repeat
 * refers to the earlier pcluster (same decoded bytes, so no PARTIAL_REF).
 * Only data still in the read window is compared.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "write/internal.h"

#define IDD_W	64
#define IDD_MUL 0x01000193u

void ezi_bld_idd_init(struct bidd *d)
{
	unsigned i;

	memset(d, 0, sizeof(*d));
	d->powW = 1;
	for (i = 1; i < IDD_W; i++)
		d->powW *= IDD_MUL;
}

void ezi_bld_idd_free(struct bidd *d)
{
	free(d->slot);
	free(d->hash);
	d->slot = d->hash = NULL;
}

static uint32_t idd_hash(const uint8_t *p)
{
	uint32_t h = 0;
	unsigned i;

	for (i = 0; i < IDD_W; i++)
		h = h * IDD_MUL + p[i];
	return h;
}

static int idd_insert(struct bidd *d, uint32_t h, uint32_t idx)
{
	uint32_t i;

	if (2 * (d->n + 1) > d->cap) {
		uint32_t cap = d->cap ? d->cap * 2 : 256, k;
		uint32_t *ns = calloc(cap, sizeof(*ns)),
			 *nh = calloc(cap, sizeof(*nh));

		if (!ns || !nh) {
			free(ns);
			free(nh);
			return -ENOMEM;
		}
		for (k = 0; k < d->cap; k++) {
			if (!d->slot[k])
				continue;
			for (i = d->hash[k] & (cap - 1); ns[i];
			     i = (i + 1) & (cap - 1))
				;
			ns[i] = d->slot[k];
			nh[i] = d->hash[k];
		}
		free(d->slot);
		free(d->hash);
		d->slot = ns;
		d->hash = nh;
		d->cap = cap;
	}
	for (i = h & (d->cap - 1); d->slot[i]; i = (i + 1) & (d->cap - 1))
		if (d->hash[i] == h)
			return 0; /* keep the first extent */
	d->slot[i] = idx + 1;
	d->hash[i] = h;
	d->n++;
	return 0;
}

/* Register complete owned extents (all end at or before pos). */
int ezi_bld_idd_register(struct bidd *d, const struct bzfile *z, uint64_t pos,
			 const uint8_t *win, uint64_t wpos)
{
	int err;

	for (; d->nreg < z->next; d->nreg++) {
		const struct bextent *e = &z->ext[d->nreg];
		uint64_t end =
			d->nreg + 1 < z->next ? z->ext[d->nreg + 1].la : pos;

		if (e->ref || e->frag || !e->blocks || end - e->la < IDD_W ||
		    e->la < wpos)
			continue;
		err = idd_insert(d, idd_hash(win + (e->la - wpos)), d->nreg);
		if (err)
			return err;
	}
	return 0;
}

/* Extent whose data repeats at q (hash h), or -1. */
static int64_t idd_find(const struct bidd *d, const struct bzfile *z,
			uint32_t h, uint64_t q, uint64_t pos, uint64_t size,
			const uint8_t *win, uint64_t wpos, uint64_t wend,
			unsigned blkszbits)
{
	uint32_t i, j;

	if (!d->cap)
		return -1;
	for (i = h & (d->cap - 1); d->slot[i]; i = (i + 1) & (d->cap - 1)) {
		const struct bextent *e;
		uint64_t len;

		if (d->hash[i] != h)
			continue;
		j = d->slot[i] - 1;
		e = &z->ext[j];
		len = (j + 1 < z->next ? z->ext[j + 1].la : pos) - e->la;
		if (e->la < wpos || q + len > wend || q + len > size)
			return -1;
		/* the reference must reach a later lcluster (9.1) */
		if ((q >> blkszbits) == ((q + len) >> blkszbits) &&
		    q + len != size)
			return -1;
		if (!memcmp(win + (q - wpos), win + (e->la - wpos),
			    (size_t)len))
			return j;
		return -1;
	}
	return -1;
}

/*
 * First q in [from, to) (q + IDD_W <= wend) where an earlier extent
 * repeats; returns q and its extent in *jp, or `to` when none.
 */
uint64_t ezi_bld_idd_scan(const struct bidd *d, const struct bzfile *z,
			  uint64_t from, uint64_t to, uint64_t pos,
			  uint64_t size, const uint8_t *win, uint64_t wpos,
			  uint64_t wend, unsigned blkszbits, uint32_t *jp)
{
	uint64_t q;
	uint32_t h;

	if (!d->n || from + IDD_W > wend)
		return to;
	h = idd_hash(win + (from - wpos));
	for (q = from; q < to && q + IDD_W <= wend; q++) {
		int64_t j;

		if (q > from)
			h = (h - d->powW * win[q - 1 - wpos]) * IDD_MUL +
			    win[q + IDD_W - 1 - wpos];
		j = idd_find(d, z, h, q, pos, size, win, wpos, wend, blkszbits);
		if (j >= 0) {
			*jp = (uint32_t)j;
			return q;
		}
	}
	return to;
}
