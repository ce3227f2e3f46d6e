/* SPDX-License-Identifier: MIT */
/*
 * vec.h - a growable array of any element type.
 *
 *	EZI_VEC(struct foo) v = EZI_VEC_INIT;
 *	if (ezi_vec_push(&v, x)) return -ENOMEM;
 *	... v.v[0 .. v.n - 1] ...
 *	ezi_vec_free(&v);
 *
 * The capacity doubles (from 16), so n pushes cost O(n). Elements move
 * when it grows: keep indexes, not pointers, across a push.
 */
#ifndef EZFS_UTIL_VEC_H
#define EZFS_UTIL_VEC_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EZI_VEC(type)                                                          \
	struct {                                                               \
		type *v;                                                       \
		size_t n, cap;                                                 \
	}

#define EZI_VEC_INIT                                                           \
	{                                                                      \
		NULL, 0, 0                                                     \
	}

/* Make *(T **)pv hold at least need elements of esz bytes. */
static inline int ezi_vec_grow_(void *pv, size_t *cap, size_t need, size_t esz)
{
	size_t c = *cap ? *cap : 16;
	void *p, *np;

	if (need <= *cap)
		return 0;
	while (c < need) {
		if (c > SIZE_MAX / 2)
			return -ENOMEM;
		c *= 2;
	}
	if (c > SIZE_MAX / esz)
		return -ENOMEM;
	memcpy(&p, pv, sizeof(p));
	np = realloc(p, c * esz);
	if (!np)
		return -ENOMEM;
	memcpy(pv, &np, sizeof(np));
	*cap = c;
	return 0;
}

/* Room for need elements in all; 0 or -ENOMEM (the vector unchanged). */
#define ezi_vec_reserve(vec, need)                                             \
	ezi_vec_grow_(&(vec)->v, &(vec)->cap, (need), sizeof(*(vec)->v))

/* Append x; 0 or -ENOMEM. */
#define ezi_vec_push(vec, x)                                                   \
	(ezi_vec_reserve((vec), (vec)->n + 1)                                  \
		 ? -ENOMEM                                                     \
		 : ((vec)->v[(vec)->n++] = (x), 0))

/* Append a zeroed element and point *slotp at it; 0 or -ENOMEM. */
#define ezi_vec_add(vec, slotp)                                                \
	(ezi_vec_reserve((vec), (vec)->n + 1)                                  \
		 ? -ENOMEM                                                     \
		 : (*(slotp) = &(vec)->v[(vec)->n++],                          \
		    memset(*(slotp), 0, sizeof(**(slotp))), 0))

#define ezi_vec_free(vec)                                                      \
	do {                                                                   \
		free((vec)->v);                                                \
		(vec)->v = NULL;                                               \
		(vec)->n = (vec)->cap = 0;                                     \
	} while (0)

#endif
