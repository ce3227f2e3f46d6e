/* SPDX-License-Identifier: MIT */
/* itable.c - the mount's inode table: nid -> handle, lookup counts, pins. */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

static size_t hash_nid(uint64_t nid, size_t nbuckets)
{
	nid ^= nid >> 33;
	nid *= 0xff51afd7ed558ccdULL;
	nid ^= nid >> 33;
	return (size_t)(nid & (nbuckets - 1));
}

int ezi_it_init(struct itable *it)
{
	it->nbuckets = 1024;
	it->count = 0;
	it->buckets = calloc(it->nbuckets, sizeof(*it->buckets));
	if (!it->buckets)
		return -ENOMEM;
	pthread_mutex_init(&it->lock, NULL);
	return 0;
}

void ezi_it_destroy(struct itable *it)
{
	size_t i;

	if (!it->buckets)
		return;
	for (i = 0; i < it->nbuckets; i++) {
		struct mnode *n = it->buckets[i], *next;

		for (; n; n = next) {
			next = n->next;
			ezfs_inode_put(n->ino);
			ezi_st_free(n);
			free(n);
		}
	}
	free(it->buckets);
	it->buckets = NULL;
	pthread_mutex_destroy(&it->lock);
}

static struct mnode *find(struct itable *it, uint64_t nid)
{
	struct mnode *n = it->buckets[hash_nid(nid, it->nbuckets)];

	while (n && n->nid != nid)
		n = n->next;
	return n;
}

/* Double the buckets when chains get long; allocation failure is fine. */
static void grow(struct itable *it)
{
	size_t nb = it->nbuckets * 2, i;
	struct mnode **b = calloc(nb, sizeof(*b));

	if (!b)
		return;
	for (i = 0; i < it->nbuckets; i++) {
		struct mnode *n = it->buckets[i], *next;

		for (; n; n = next) {
			size_t h = hash_nid(n->nid, nb);

			next = n->next;
			n->next = b[h];
			b[h] = n;
		}
	}
	free(it->buckets);
	it->buckets = b;
	it->nbuckets = nb;
}

int ezi_it_get(struct ezfs_mount *m, uint64_t nid, uint64_t lookups,
	       struct mnode **out)
{
	struct itable *it = &m->it;
	struct mnode *n, *other;
	ezfs_inode *ino;
	size_t h;
	int err;

	pthread_mutex_lock(&it->lock);
	n = find(it, nid);
	if (n) {
		n->pins++;
		n->nlookup += lookups;
		pthread_mutex_unlock(&it->lock);
		*out = n;
		return 0;
	}
	pthread_mutex_unlock(&it->lock);

	/* Load outside the lock: it may read and parse metadata. */
	err = ezfs_inode_get(m->img, nid, &ino);
	if (err)
		return err;
	n = calloc(1, sizeof(*n));
	if (!n) {
		ezfs_inode_put(ino);
		return -ENOMEM;
	}
	n->nid = nid;
	n->ino = ino;

	pthread_mutex_lock(&it->lock);
	other = find(it, nid);
	if (other) {
		/* Another thread loaded it meanwhile: use theirs. */
		other->pins++;
		other->nlookup += lookups;
		pthread_mutex_unlock(&it->lock);
		ezfs_inode_put(ino);
		free(n);
		*out = other;
		return 0;
	}
	n->pins = 1;
	n->nlookup = lookups;
	if (it->count >= it->nbuckets * 2)
		grow(it);
	h = hash_nid(nid, it->nbuckets);
	n->next = it->buckets[h];
	it->buckets[h] = n;
	it->count++;
	pthread_mutex_unlock(&it->lock);
	*out = n;
	return 0;
}

void ezi_it_pin(struct ezfs_mount *m, struct mnode *n)
{
	pthread_mutex_lock(&m->it.lock);
	n->pins++;
	pthread_mutex_unlock(&m->it.lock);
}

/* Unlink and free n if nothing refers to it; called with the lock held.
 * Returns the handle to put (outside the lock) or NULL. */
static struct mnode *maybe_unlink(struct itable *it, struct mnode *n)
{
	struct mnode **pp;

	if (n->pins || n->nlookup)
		return NULL;
	pp = &it->buckets[hash_nid(n->nid, it->nbuckets)];
	while (*pp && *pp != n)
		pp = &(*pp)->next;
	if (*pp)
		*pp = n->next;
	it->count--;
	return n;
}

static void free_node(struct mnode *n)
{
	if (!n)
		return;
	ezfs_inode_put(n->ino);
	ezi_st_free(n);
	free(n);
}

void ezi_it_unpin(struct ezfs_mount *m, struct mnode *n)
{
	struct mnode *dead;

	if (!n)
		return;
	pthread_mutex_lock(&m->it.lock);
	n->pins--;
	dead = maybe_unlink(&m->it, n);
	pthread_mutex_unlock(&m->it.lock);
	free_node(dead);
}

void ezi_it_forget(struct ezfs_mount *m, uint64_t nid, uint64_t nlookup)
{
	struct mnode *n, *dead = NULL;

	pthread_mutex_lock(&m->it.lock);
	n = find(&m->it, nid);
	if (n) {
		n->nlookup = nlookup > n->nlookup ? 0 : n->nlookup - nlookup;
		dead = maybe_unlink(&m->it, n);
	}
	pthread_mutex_unlock(&m->it.lock);
	free_node(dead);
}

size_t ezi_it_count(struct ezfs_mount *m)
{
	size_t c;

	pthread_mutex_lock(&m->it.lock);
	c = m->it.count;
	pthread_mutex_unlock(&m->it.lock);
	return c;
}
