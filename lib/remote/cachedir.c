/* SPDX-License-Identifier: MIT */
/*
 * cachedir.c - the cache folder as a whole: its entries listed, the least
 * recently used removed (gc), the complete entry opened as a name found.
 * An entry is KEY.map and KEY.data (cache.c); its last use is the map's
 * mtime, which every open sets.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "remote/internal.h"

int ezi_cache_find(const char *dir, const char *name, struct ezi_cmap *m)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[4200];
	size_t n;

	memset(m, 0, sizeof(*m));
	if (!d)
		return -ENOENT;
	while ((de = readdir(d))) {
		n = strlen(de->d_name);
		if (n < 5 || strcmp(de->d_name + n - 4, ".map"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (ezi_cmap_load(path, m))
			continue;
		if (!strcmp(m->name, name) && ezi_cmap_complete(m)) {
			closedir(d);
			return 0;
		}
		free(m->bits);
		memset(m, 0, sizeof(*m));
	}
	closedir(d);
	return -ENOENT;
}

struct centry {
	char key[64];
	char url[4096];
	char name[4096];
	uint64_t size, present, disk;
	int64_t used;
};

/* Every entry of dir; *out freed by the caller. */
static int scan(const char *dir, struct centry **out, size_t *count)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	struct centry *v = NULL;
	size_t n = 0, cap = 0;

	*out = NULL;
	*count = 0;
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		char path[4096];
		struct ezi_cmap m;
		struct stat st;
		struct centry *e;

		if (l < 5 || l - 4 >= sizeof(v->key) ||
		    strcmp(de->d_name + l - 4, ".map"))
			continue;
		if (n == cap) {
			struct centry *nv;

			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
		}
		e = &v[n];
		memset(e, 0, sizeof(*e));
		memcpy(e->key, de->d_name, l - 4);
		e->key[l - 4] = '\0';
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stat(path, &st))
			continue;
		e->used = (int64_t)st.st_mtime;
		if (!ezi_cmap_load(path, &m)) {
			snprintf(e->url, sizeof(e->url), "%s", m.url);
			snprintf(e->name, sizeof(e->name), "%s",
				 m.name[0] ? m.name : m.url);
			e->size = m.size;
			for (uint64_t b = 0; b < m.nblocks; b++)
				if (m.bits[b >> 3] & (1u << (b & 7)))
					e->present +=
						b + 1 == m.nblocks
							? m.size - b * m.bs
							: m.bs;
			free(m.bits);
		}
		snprintf(path, sizeof(path), "%s/%s.data", dir, e->key);
		if (!stat(path, &st))
			e->disk = (uint64_t)st.st_blocks * 512u;
		n++;
	}
	closedir(d);
	*out = v;
	*count = n;
	return 0;
}

/* the most recently used first; equal times by key, so the order is
 * stable */
static int by_recent_use(const void *a, const void *b)
{
	const struct centry *x = a, *y = b;

	if (x->used != y->used)
		return x->used > y->used ? -1 : 1;
	return strcmp(x->key, y->key);
}

int ezfs_remote_cache_list(const char *dir,
			   int (*fn)(void *arg,
				     const struct ezfs_remote_cache_entry *e),
			   void *arg)
{
	struct centry *v;
	size_t n;
	int err = scan(dir, &v, &n);

	if (!err && n)
		qsort(v, n, sizeof(*v), by_recent_use);
	for (size_t i = 0; !err && i < n; i++) {
		struct ezfs_remote_cache_entry e = {
			.key = v[i].key,
			.url = v[i].url,
			.size = v[i].size,
			.present = v[i].present,
			.used = v[i].used,
			.name = v[i].name,
			.disk = v[i].disk,
		};

		err = fn(arg, &e);
	}
	free(v);
	return err;
}

static int by_use(const void *a, const void *b)
{
	const struct centry *x = a, *y = b;

	return x->used < y->used ? -1 : x->used > y->used;
}

static void remove_entry(const char *dir, const char *key)
{
	char path[4096];

	/* the map first: data without a map is never read */
	snprintf(path, sizeof(path), "%s/%s.map", dir, key);
	(void)unlink(path);
	snprintf(path, sizeof(path), "%s/%s.data", dir, key);
	(void)unlink(path);
	/* the records of what of it was verified (verify.c) and of the
	 * manifest it was resolved from (oci.c) */
	snprintf(path, sizeof(path), "%s/%s.vok", dir, key);
	(void)unlink(path);
	snprintf(path, sizeof(path), "%s/%s.oci", dir, key);
	(void)unlink(path);
}

int ezi_cache_gc(const char *dir, uint64_t max, const char *keep,
		 uint64_t *freed)
{
	struct centry *v;
	uint64_t total = 0, gone = 0;
	size_t n;
	int err = scan(dir, &v, &n);

	if (err)
		return err;
	for (size_t i = 0; i < n; i++)
		total += v[i].disk;
	if (n)
		qsort(v, n, sizeof(*v), by_use);
	for (size_t i = 0; i < n && total > max; i++) {
		char data[4096];

		if (keep && !strcmp(v[i].key, keep))
			continue;
		/* a file the kernel has mounted stays (kernel.c) */
		snprintf(data, sizeof(data), "%s/%s.data", dir, v[i].key);
		if (ezfs_remote_cache_pinned(data))
			continue;
		remove_entry(dir, v[i].key);
		total -= v[i].disk;
		gone += v[i].disk;
	}
	free(v);
	if (freed)
		*freed = gone;
	return 0;
}

int ezfs_remote_cache_gc(const char *dir, uint64_t max, uint64_t *freed)
{
	return ezi_cache_gc(dir, max, NULL, freed);
}

const char *ezfs_remote_cache_dir(char *buf, size_t size)
{
	const char *v = getenv("EZFS_CACHE_DIR");

	if (v && *v) {
		snprintf(buf, size, "%s", v);
		return buf;
	}
	v = getenv("XDG_CACHE_HOME");
	if (v && *v) {
		snprintf(buf, size, "%s/ezfs", v);
		return buf;
	}
	v = getenv("HOME");
	if (v && *v) {
		snprintf(buf, size, "%s/.cache", v);
		/* ~/.cache may not exist yet */
		(void)mkdir(buf, 0700);
		snprintf(buf, size, "%s/.cache/ezfs", v);
		return buf;
	}
	return NULL;
}
