/* SPDX-License-Identifier: MIT */
/*
 * cache.c - the persistent cache: per image KEY.data, a sparse file with
 * the image's bytes at their own offsets, and KEY.map, which blocks of it
 * are present. The map is only ever replaced whole (a temporary file,
 * fsync, rename, fsync of the folder) after the data it lists was synced,
 * so after a crash it lists fewer blocks than the data holds, never more.
 *
 * KEY.map: a text header, an empty line, then one bit per block:
 *
 *   ezfs-remote-cache 1
 *   url URL
 *   name URL-OR-REFERENCE (what was opened: an oci:// reference's blob
 *        is found by it when the registry cannot be reached)
 *   size BYTES
 *   block BYTES
 *   etag ETAG
 *   lastmod DATE
 *
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "remote/internal.h"

#define MAP_MAGIC "ezfs-remote-cache 1"

void ezi_cache_key(const char *s, char key[17])
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	snprintf(key, 17, "%016" PRIx64, h);
}

static int header_line(const char *line, const char *name, char *dst,
		       size_t size)
{
	size_t n = strlen(name);

	if (strncmp(line, name, n) || line[n] != ' ')
		return 0;
	snprintf(dst, size, "%s", line + n + 1);
	return 1;
}

int ezi_cmap_load(const char *path, struct ezi_cmap *m)
{
	FILE *f = fopen(path, "rbe");
	char line[4200], num[32];
	size_t nbytes;
	int ok = 0;

	memset(m, 0, sizeof(*m));
	if (!f)
		return -errno;
	if (!fgets(line, sizeof(line), f) || strcmp(line, MAP_MAGIC "\n"))
		goto bad;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!line[0]) {
			ok = 1;
			break;
		}
		if (header_line(line, "size", num, sizeof(num)))
			m->size = strtoull(num, NULL, 10);
		else if (header_line(line, "block", num, sizeof(num)))
			m->bs = (unsigned)strtoul(num, NULL, 10);
		else if (header_line(line, "name", m->name, sizeof(m->name)))
			;
		else if (!header_line(line, "url", m->url, sizeof(m->url)) &&
			 !header_line(line, "etag", m->etag, sizeof(m->etag)))
			header_line(line, "lastmod", m->lastmod,
				    sizeof(m->lastmod));
	}
	if (!ok || !m->size || m->bs < 4096 || (m->bs & (m->bs - 1)))
		goto bad;
	m->nblocks = (m->size + m->bs - 1) / m->bs;
	nbytes = (size_t)((m->nblocks + 7) / 8);
	m->bits = calloc(nbytes ? nbytes : 1, 1);
	if (!m->bits || fread(m->bits, 1, nbytes, f) != nbytes)
		goto bad;
	fclose(f);
	return 0;
bad:
	fclose(f);
	free(m->bits);
	memset(m, 0, sizeof(*m));
	return -EUCLEAN;
}

int ezi_cmap_complete(const struct ezi_cmap *m)
{
	if (!m->bits || !m->nblocks)
		return 0;
	for (uint64_t b = 0; b < m->nblocks; b++)
		if (!(m->bits[b >> 3] & (1u << (b & 7))))
			return 0;
	return 1;
}

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

int ezi_cmap_store(const char *path, const struct ezi_cmap *m)
{
	size_t n = strlen(path) + 8, nbytes = (size_t)((m->nblocks + 7) / 8);
	char *tmp = malloc(n), *dir, *slash;
	FILE *f;
	int err = 0, fd;

	if (!tmp)
		return -ENOMEM;
	snprintf(tmp, n, "%s.tmp", path);
	f = fopen(tmp, "wbe");
	if (!f) {
		err = -errno;
		free(tmp);
		return err;
	}
	fprintf(f,
		MAP_MAGIC "\nurl %s\nname %s\nsize %" PRIu64
			  "\nblock %u\netag %s\nlastmod %s\n\n",
		m->url, m->name, m->size, m->bs, m->etag, m->lastmod);
	if (fwrite(m->bits, 1, nbytes, f) != nbytes || fflush(f) ||
	    fsync(fileno(f)))
		err = -EIO;
	if (fclose(f) && !err)
		err = -EIO;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err) {
		unlink(tmp);
		free(tmp);
		return err;
	}
	free(tmp);
	dir = strdup(path);
	if (dir && (slash = strrchr(dir, '/'))) {
		*slash = '\0';
		fd = open(*dir ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0) {
			(void)fsync(fd);
			close(fd);
		}
	}
	free(dir);
	return 0;
}

struct centry {
	char key[64];
	char url[4096];
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

int ezfs_remote_cache_list(const char *dir,
			   int (*fn)(void *arg,
				     const struct ezfs_remote_cache_entry *e),
			   void *arg)
{
	struct centry *v;
	size_t n;
	int err = scan(dir, &v, &n);

	for (size_t i = 0; !err && i < n; i++) {
		struct ezfs_remote_cache_entry e = {
			.key = v[i].key,
			.url = v[i].url,
			.size = v[i].size,
			.present = v[i].present,
			.used = v[i].used,
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
	qsort(v, n, sizeof(*v), by_use);
	for (size_t i = 0; i < n && total > max; i++) {
		if (keep && !strcmp(v[i].key, keep))
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
