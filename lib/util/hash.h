/* SPDX-License-Identifier: MIT */
/*
 * hash.h - an open-addressing table from a u64 key to a non-NULL pointer.
 *
 * Linear probing, at most half full, removal by shifting back (no
 * tombstones). A key may be added more than once (a multimap: CRC keys
 * whose candidates are compared by the caller); ezi_hash_next walks every
 * value of one key. The caller mixes nothing: keys are mixed here.
 * Not locked: one thread at a time, or the caller's lock.
 */
#ifndef EZFS_UTIL_HASH_H
#define EZFS_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

struct ezi_hslot {
	uint64_t key;
	void *val; /* NULL: empty */
};

struct ezi_hash {
	struct ezi_hslot *s;
	size_t cap, n; /* cap: 0 or a power of two */
};

/* An empty table (no allocation until the first add). */
#define EZI_HASH_INIT                                                          \
	{                                                                      \
		NULL, 0, 0                                                     \
	}

/* Free the table (not the values); it is empty and usable after. */
void ezi_hash_free(struct ezi_hash *h);

/* Room for n entries without growing; 0 or -ENOMEM. */
int ezi_hash_reserve(struct ezi_hash *h, size_t n);

/* Add (key, val) even if key is there already; val != NULL. 0 or
 * -ENOMEM (-EINVAL: val NULL). */
int ezi_hash_add(struct ezi_hash *h, uint64_t key, void *val);

/* A value of key, or NULL. */
void *ezi_hash_get(const struct ezi_hash *h, uint64_t key);

/*
 * Every value of key in turn: set *pos = 0 first, then call until NULL.
 * No add or remove between the calls.
 */
void *ezi_hash_next(const struct ezi_hash *h, uint64_t key, size_t *pos);

/* Remove (key, val), or the first value of key when val is NULL; the
 * value removed, or NULL when there was none. */
void *ezi_hash_del(struct ezi_hash *h, uint64_t key, const void *val);

/* Every entry, in no order: set *pos = 0, call until NULL. */
struct ezi_hslot *ezi_hash_each(const struct ezi_hash *h, size_t *pos);

#endif
