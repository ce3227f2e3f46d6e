/* SPDX-License-Identifier: MIT */
/*
 * slab.c - buffers for decoded extents below 1 MiB, carved from 2 MiB
 * chunks offered to transparent huge pages.
 *
 * Fresh memory is dear: each 4 KiB page costs a page fault and a cleared
 * page the first time it is written (measured in a 2-CPU VM: 19 ms to
 * write 2 MiB of fresh 4 KiB pages, 1 ms as one huge page, 0.02 ms once
 * present), and a cold cache decodes every extent into fresh memory until
 * its budget is full. So a chunk is one huge page where the kernel gives
 * it, cut into slots of one size class (the capacity buf_cap gives: an
 * eighth of a power of two), and a freed slot goes back to its class for
 * the next extent of that size. A chunk whose slots are all free goes back
 * to the system when another class needs the room; past the limit, buffers
 * come from malloc. Called with the decoded-pcluster cache's lock held.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "read/internal.h"

#define CHUNK (2u << 20)

struct slot {
	struct slot *next;
};

struct ezi_chunk {
	uint8_t *base;
	unsigned cls;  /* index in s->cls */
	unsigned used; /* slots handed out */
};

/* The chunk holding p, or NULL. */
static struct ezi_chunk *chunk_of(struct ezi_slab *s, const void *p)
{
	uintptr_t base = (uintptr_t)p & ~(uintptr_t)(CHUNK - 1);
	unsigned i;

	for (i = 0; i < s->nchunks; i++)
		if ((uintptr_t)s->chunks[i].base == base)
			return &s->chunks[i];
	return NULL;
}

/* Class of slot size size, made if new; SLAB_CLASSES when out of room. */
static unsigned class_of(struct ezi_slab *s, size_t size)
{
	unsigned i;

	for (i = 0; i < s->ncls; i++)
		if (s->cls[i].size == size)
			return i;
	if (s->ncls == SLAB_CLASSES)
		return SLAB_CLASSES;
	s->cls[s->ncls].size = size;
	s->cls[s->ncls].free = NULL;
	return s->ncls++;
}

/* Give back the chunks without a slot in use, but those of class keep;
 * true if one went. */
static bool reclaim(struct ezi_slab *s, unsigned keep)
{
	bool any = false;
	unsigned i = 0;

	while (i < s->nchunks) {
		struct ezi_chunk *c = &s->chunks[i];
		struct slot **pp;

		if (c->used || c->cls == keep) {
			i++;
			continue;
		}
		for (pp = (struct slot **)&s->cls[c->cls].free; *pp;) {
			if ((uint8_t *)*pp >= c->base &&
			    (uint8_t *)*pp < c->base + CHUNK)
				*pp = (*pp)->next;
			else
				pp = &(*pp)->next;
		}
		free(c->base);
		s->bytes -= CHUNK;
		*c = s->chunks[--s->nchunks];
		any = true;
	}
	return any;
}

/* A new chunk for class k, its slots on the class's free list. */
static bool grow(struct ezi_slab *s, unsigned k)
{
	size_t size = s->cls[k].size, n, i;
	struct ezi_chunk *c;
	void *p;

	if ((s->bytes + CHUNK > s->limit || s->nchunks == s->cap) &&
	    !reclaim(s, k))
		return false;
	if (s->bytes + CHUNK > s->limit || s->nchunks == s->cap ||
	    posix_memalign(&p, CHUNK, CHUNK))
		return false;
#ifdef MADV_HUGEPAGE
	madvise(p, CHUNK, MADV_HUGEPAGE);
#endif
	c = &s->chunks[s->nchunks++];
	c->base = p;
	c->cls = k;
	c->used = 0;
	s->bytes += CHUNK;
	n = CHUNK / size;
	for (i = n; i-- > 0;) {
		struct slot *sl = (struct slot *)(c->base + i * size);

		sl->next = s->cls[k].free;
		s->cls[k].free = sl;
	}
	return true;
}

int ezi_slab_init(struct ezi_slab *s, size_t limit)
{
	memset(s, 0, sizeof(*s));
	s->limit = limit;
	s->cap = (unsigned)(limit / CHUNK) + 1;
	s->chunks = calloc(s->cap, sizeof(*s->chunks));
	return s->chunks ? 0 : -ENOMEM;
}

void ezi_slab_fini(struct ezi_slab *s)
{
	unsigned i;

	for (i = 0; i < s->nchunks; i++)
		free(s->chunks[i].base);
	free(s->chunks);
	memset(s, 0, sizeof(*s));
}

void *ezi_slab_get(struct ezi_slab *s, size_t size)
{
	unsigned k = class_of(s, size);
	struct slot *sl;

	if (k == SLAB_CLASSES || size > CHUNK / 2)
		return NULL;
	if (!s->cls[k].free && !grow(s, k))
		return NULL;
	sl = s->cls[k].free;
	s->cls[k].free = sl->next;
	chunk_of(s, sl)->used++;
	return sl;
}

bool ezi_slab_put(struct ezi_slab *s, void *p)
{
	struct ezi_chunk *c = p ? chunk_of(s, p) : NULL;
	struct slot *sl = p;

	if (!c)
		return false;
	sl->next = s->cls[c->cls].free;
	s->cls[c->cls].free = sl;
	c->used--;
	return true;
}
