/* SPDX-License-Identifier: MIT */
/*
 * stored.c - which extents of an inode the daemon has put into the page
 * cache (or queued for it): a set of extent starts per inode, so that a
 * random reader's read of a page shared with a stored extent, or the
 * readaround of a neighbour already there, does not decode and store that
 * extent again. Only a hint: pages the kernel evicted since are read again
 * when asked for, just not stored ahead.
 *
 * Open addressing on the extent start (+1, 0 is empty), growing from 64
 * to ST_MAX entries; a full set records nothing more.
 */
#include <stdlib.h>

#include "internal.h"

#define ST_MIN 64
#define ST_MAX (1u << 14)

struct stored_set {
	uint32_t cap, n;
	uint64_t keys[];
};

static uint64_t *slot(struct stored_set *s, uint64_t key)
{
	uint32_t i =
		(uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 40) & (s->cap - 1);

	while (s->keys[i] && s->keys[i] != key)
		i = (i + 1) & (s->cap - 1);
	return &s->keys[i];
}

static struct stored_set *grow(struct stored_set *old)
{
	uint32_t cap = old ? old->cap * 2 : ST_MIN, i;
	struct stored_set *s;

	if (cap > ST_MAX)
		return NULL;
	s = calloc(1, sizeof(*s) + cap * sizeof(s->keys[0]));
	if (!s)
		return NULL;
	s->cap = cap;
	for (i = 0; old && i < old->cap; i++) {
		if (old->keys[i]) {
			*slot(s, old->keys[i]) = old->keys[i];
			s->n++;
		}
	}
	free(old);
	return s;
}

bool ezi_st_mark(struct ezfs_mount *m, struct mnode *n, uint64_t off)
{
	uint64_t key = off + 1, *k;
	struct stored_set *s;
	bool had = false;

	pthread_mutex_lock(&m->st_lock);
	if (!n->stored || (n->stored->n + 1) * 4 > n->stored->cap * 3) {
		s = grow(n->stored);
		if (s)
			n->stored = s;
	}
	s = n->stored;
	if (s) {
		k = slot(s, key);
		had = *k == key;
		if (!had && (s->n + 1) * 4 <= s->cap * 3) {
			*k = key;
			s->n++;
		}
	}
	pthread_mutex_unlock(&m->st_lock);
	return had;
}

void ezi_st_free(struct mnode *n)
{
	free(n->stored);
	n->stored = NULL;
}
