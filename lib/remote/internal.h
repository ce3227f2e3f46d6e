/* SPDX-License-Identifier: MIT */
/* internal.h - what the files of lib/remote share. */
#ifndef EZFS_REMOTE_INTERNAL_H
#define EZFS_REMOTE_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "ezfs/remote.h"

/* Parse "Content-Range: bytes A-B/T" (the value only): 0, or -1 when it
 * is not that form; *total is UINT64_MAX for an unknown total ("/" then "*").
 */
int ezi_content_range(const char *v, uint64_t *a, uint64_t *b, uint64_t *total);

/* cache.c: the map of a persistent cache entry. */
struct ezi_cmap {
	char url[4096];
	char etag[256];
	char lastmod[128];
	uint64_t size;
	unsigned bs;
	uint8_t *bits; /* one bit per block */
	uint64_t nblocks;
};
/* FNV-1a of s as 16 hex digits into key[17]. */
void ezi_cache_key(const char *s, char key[17]);
int ezi_cmap_load(const char *path, struct ezi_cmap *m);
/* Write m to path crash-safely: a temporary file, fsync, rename, then
 * fsync of the folder. */
int ezi_cmap_store(const char *path, const struct ezi_cmap *m);
/* ezfs_remote_cache_gc, keeping the entry named keep (NULL: none). */
int ezi_cache_gc(const char *dir, uint64_t max, const char *keep,
		 uint64_t *freed);

void ezi_rlogf(ezfs_log_fn log, void *arg, int level, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
