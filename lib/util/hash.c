/* SPDX-License-Identifier: MIT */
/* hash.c - the u64 -> pointer table of hash.h. */
#include <errno.h>
#include <stdlib.h>

#include "util/hash.h"

/* Fibonacci hashing: the high bits of key * 2^64/phi, spread over cap. */
static size_t home(uint64_t key, size_t cap)
{
	key ^= key >> 32;
	key *= 0x9e3779b97f4a7c15ULL;
	return (size_t)(key >> 20) & (cap - 1);
}

void ezi_hash_free(struct ezi_hash *h)
{
	free(h->s);
	h->s = NULL;
	h->cap = h->n = 0;
}

static int rehash(struct ezi_hash *h, size_t cap)
{
	struct ezi_hslot *s = calloc(cap, sizeof(*s));
	size_t i, k;

	if (!s)
		return -ENOMEM;
	for (i = 0; i < h->cap; i++) {
		if (!h->s[i].val)
			continue;
		for (k = home(h->s[i].key, cap); s[k].val;
		     k = (k + 1) & (cap - 1))
			;
		s[k] = h->s[i];
	}
	free(h->s);
	h->s = s;
	h->cap = cap;
	return 0;
}

int ezi_hash_reserve(struct ezi_hash *h, size_t n)
{
	size_t cap = h->cap ? h->cap : 16;

	while (cap / 2 < n) {
		if (cap * 2 < cap)
			return -ENOMEM;
		cap *= 2;
	}
	return cap > h->cap ? rehash(h, cap) : 0;
}

int ezi_hash_add(struct ezi_hash *h, uint64_t key, void *val)
{
	size_t k;
	int err;

	if (!val)
		return -EINVAL;
	if ((h->n + 1) * 2 > h->cap) {
		err = ezi_hash_reserve(h, h->n + 1);
		if (err)
			return err;
	}
	for (k = home(key, h->cap); h->s[k].val; k = (k + 1) & (h->cap - 1))
		;
	h->s[k].key = key;
	h->s[k].val = val;
	h->n++;
	return 0;
}

void *ezi_hash_next(const struct ezi_hash *h, uint64_t key, size_t *pos)
{
	size_t k, mask = h->cap - 1;

	if (!h->n)
		return NULL;
	/* *pos: 0 = start, else 1 + the slot after the last one returned */
	k = *pos ? *pos - 1 : home(key, h->cap);
	for (; h->s[k].val; k = (k + 1) & mask) {
		if (h->s[k].key == key) {
			*pos = ((k + 1) & mask) + 1;
			return h->s[k].val;
		}
	}
	*pos = k + 1;
	return NULL;
}

void *ezi_hash_get(const struct ezi_hash *h, uint64_t key)
{
	size_t pos = 0;

	return ezi_hash_next(h, key, &pos);
}

void *ezi_hash_del(struct ezi_hash *h, uint64_t key, const void *val)
{
	size_t k, j, mask = h->cap - 1;
	void *got;

	if (!h->n)
		return NULL;
	for (k = home(key, h->cap); h->s[k].val; k = (k + 1) & mask)
		if (h->s[k].key == key && (!val || h->s[k].val == val))
			break;
	got = h->s[k].val;
	if (!got)
		return NULL;
	/* shift back the entries after k whose home is not in (k, j] */
	for (j = (k + 1) & mask; h->s[j].val; j = (j + 1) & mask) {
		size_t r = home(h->s[j].key, h->cap);

		if (((j - r) & mask) >= ((j - k) & mask)) {
			h->s[k] = h->s[j];
			k = j;
		}
	}
	h->s[k].val = NULL;
	h->n--;
	return got;
}

struct ezi_hslot *ezi_hash_each(const struct ezi_hash *h, size_t *pos)
{
	while (*pos < h->cap) {
		struct ezi_hslot *s = &h->s[(*pos)++];

		if (s->val)
			return s;
	}
	return NULL;
}
