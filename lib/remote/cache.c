/* SPDX-License-Identifier: MIT */
/*
 * cache.c - the persistent cache entry of an image: KEY.data, a sparse
 * file with the image's bytes at their own offsets, and KEY.map, which
 * blocks of it are present (the folder as a whole: cachedir.c). The map is only
 * ever replaced whole (a temporary file, fsync, rename, fsync of the folder)
 * after the data it lists was synced, so after a crash it lists fewer blocks
 * than the data holds, never more.
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
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* fallocate */
#endif
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

#define MAP_MAGIC   "ezfs-remote-cache 1"
#define FLUSH_BYTES (4ull << 20) /* the map written after this much */

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
	snprintf(dst, size, "%.*s", (int)(size - 1), line + n + 1);
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

/* ------------------------------------------------------------------ */
/* The entry of a source                                               */

/*
 * A write to the entry failed (err: a negative errno): one warning naming
 * the folder and the reason, and no more writes this run; the blocks go
 * to memory instead (blocks.c), those already on disk stay readable, and
 * the next open tries the cache again.
 */
static void cache_failed(struct ezfs_remote *r, int err)
{
	if (r->cache_off)
		return;
	r->cache_off = 1;
	ezi_rlog(r, EZFS_LOG_WARN,
		 "cache folder %s: %s; reading on from the network, the "
		 "blocks kept in memory (the cache is tried again at the "
		 "next open)",
		 r->p.cache_dir, strerror(-err));
}

void ezi_cache_flush(struct ezfs_remote *r)
{
	int err;

	if (r->data_fd < 0 || !r->dirty || r->dropped)
		return;
	r->dirty = 0;
	if (fdatasync(r->data_fd)) {
		cache_failed(r, -errno);
		return;
	}
	/* the blocks on disk; those in memory are not the entry's */
	for (uint64_t b = 0; b < r->nblocks; b++)
		if (r->state[b] == EZI_B_PRESENT && !r->mem[b])
			r->map.bits[b >> 3] |= (uint8_t)(1u << (b & 7));
	err = ezi_cmap_store(r->map_path, &r->map);
	if (err)
		cache_failed(r, err);
}

void ezi_cache_attach(struct ezfs_remote *r)
{
	char key[17];
	size_t n;

	if (!r->p.cache_dir || !*r->p.cache_dir)
		return;
	if (mkdir(r->p.cache_dir, 0700) && errno != EEXIST) {
		ezi_rlog(r, EZFS_LOG_WARN, "cache folder %s: %s; not caching",
			 r->p.cache_dir, strerror(errno));
		return;
	}
	ezi_cache_key(r->digest[0] ? r->digest : r->url, key);
	n = strlen(r->p.cache_dir) + 32;
	r->data_path = malloc(n);
	r->map_path = malloc(n);
	if (!r->data_path || !r->map_path)
		return;
	snprintf(r->data_path, n, "%s/%s.data", r->p.cache_dir, key);
	snprintf(r->map_path, n, "%s/%s.map", r->p.cache_dir, key);
	if (!ezi_cmap_load(r->map_path, &r->map) &&
	    !strcmp(r->map.url, r->url) && r->map.bs == r->bs) {
		snprintf(r->etag, sizeof(r->etag), "%s", r->map.etag);
		snprintf(r->lastmod, sizeof(r->lastmod), "%s", r->map.lastmod);
	} else {
		free(r->map.bits);
		memset(&r->map, 0, sizeof(r->map));
	}
	r->data_fd = open(r->data_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	ezi_vrec_attach(r); /* verify.c: before any write to it */
	if (r->data_fd < 0)
		ezi_rlog(r, EZFS_LOG_WARN, "cache file %s: %s; not caching",
			 r->data_path, strerror(errno));
}

int ezi_cache_adopt(struct ezfs_remote *r, int same)
{
	uint64_t nb = r->nblocks, present = 0;
	struct stat st;

	if (r->data_fd < 0)
		return 0;
	if (!same && ezfs_remote_cache_pinned(r->data_path)) {
		/* the kernel mounts it (kernel.c): never rewritten */
		ezi_rlog(r, EZFS_LOG_WARN,
			 "cache file %s is mounted by the kernel: not "
			 "rewritten, the blocks kept in memory",
			 r->data_path);
		ezi_cache_detach(r);
		return 0;
	}
	if (r->size > r->p.cache_max) {
		/* it would not fit: memory only, and no entry of it stays */
		ezi_rlog(r, EZFS_LOG_WARN,
			 "the image (%" PRIu64 " bytes) is larger than the "
			 "cache may grow (%" PRIu64 " bytes, --cache-max): "
			 "not cached on disk",
			 r->size, r->p.cache_max);
		(void)unlink(r->map_path);
		(void)unlink(r->data_path);
		ezi_cache_detach(r);
		return 0;
	}
	if (!same || r->map.size != r->size || r->map.nblocks != nb) {
		free(r->map.bits);
		memset(&r->map, 0, sizeof(r->map));
		if (ftruncate(r->data_fd, 0))
			return 0;
		(void)unlink(r->map_path);
	}
	/* its size set only when it is not already: a write changes the
	 * file's change time, which the record of its verified blocks
	 * (verify.c) is bound to */
	if ((fstat(r->data_fd, &st) || (uint64_t)st.st_size != r->size) &&
	    ftruncate(r->data_fd, (off_t)r->size)) {
		ezi_rlog(r, EZFS_LOG_WARN, "cache file %s: %s; not caching",
			 r->data_path, strerror(errno));
		ezi_cache_detach(r);
		return 0;
	}
	if (!r->map.bits) {
		r->map.bits = calloc((nb + 7) / 8 ? (nb + 7) / 8 : 1, 1);
		if (!r->map.bits)
			return -ENOMEM;
	}
	snprintf(r->map.url, sizeof(r->map.url), "%s", r->url);
	snprintf(r->map.name, sizeof(r->map.name), "%s", r->name);
	snprintf(r->map.etag, sizeof(r->map.etag), "%s", r->etag);
	snprintf(r->map.lastmod, sizeof(r->map.lastmod), "%s", r->lastmod);
	r->map.size = r->size;
	r->map.bs = r->bs;
	r->map.nblocks = nb;
	for (uint64_t b = 0; b < nb; b++)
		if (r->map.bits[b >> 3] & (1u << (b & 7))) {
			r->state[b] = EZI_B_PRESENT;
			present += ezi_blk_len(r, b);
		}
	r->st.cache_bytes = present;
	/* mark it used now, for the LRU order of gc */
	(void)utimensat(AT_FDCWD, r->map_path, NULL, 0);
	return 0;
}

void ezi_cache_put(struct ezfs_remote *r, uint64_t b0, uint64_t b1,
		   const uint8_t *src)
{
	/* each run of blocks not yet present in one write */
	for (uint64_t b = b0, e; b < b1 && !r->cache_off; b = e) {
		uint64_t o = b << r->bsbits, l;
		ssize_t n;

		for (e = b; e < b1 && r->state[e] != EZI_B_PRESENT; e++)
			;
		if (e == b) {
			e++;
			continue;
		}
		l = (e << r->bsbits < r->size ? e << r->bsbits : r->size) - o;
		n = pwrite(r->data_fd, src + ((b - b0) << r->bsbits), l,
			   (off_t)o);
		if (n != (ssize_t)l) {
			/* a short write: the disk is full */
			cache_failed(r, n < 0 ? -errno : -ENOSPC);
			break;
		}
		for (uint64_t k = b; k < e; k++) {
			r->state[k] = EZI_B_PRESENT;
			r->dirty += ezi_blk_len(r, k);
			r->st.cache_bytes += ezi_blk_len(r, k);
		}
	}
	if (r->dirty >= FLUSH_BYTES)
		ezi_cache_flush(r);
}

void ezi_cache_unput(struct ezfs_remote *r, uint64_t b)
{
	uint64_t o = b << r->bsbits;

	if (r->data_fd < 0)
		return;
	r->map.bits[b >> 3] &= (uint8_t) ~(1u << (b & 7));
	r->dirty += ezi_blk_len(r, b);
	/* its bytes gone from the data file too */
	(void)fallocate(r->data_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			(off_t)o, (off_t)ezi_blk_len(r, b));
}

void ezi_cache_settle(struct ezfs_remote *r)
{
	for (uint64_t b = 0; r->unchecked && b < r->nblocks; b++) {
		size_t l = ezi_blk_len(r, b);

		if (!r->unchecked[b] || r->state[b] != EZI_B_PRESENT ||
		    !r->mem[b] || r->data_fd < 0 || r->cache_off)
			continue;
		if (pwrite(r->data_fd, r->mem[b], l, (off_t)(b << r->bsbits)) !=
		    (ssize_t)l)
			continue; /* kept in memory */
		free(r->mem[b]);
		r->mem[b] = NULL;
		r->mem_used -= r->bs;
		r->dirty += l;
	}
	free(r->unchecked);
	r->unchecked = NULL;
}

void ezi_cache_drop(struct ezfs_remote *r)
{
	/* the map first: data without a map is never read; the open file
	 * keeps serving what it holds (when the reads go on) */
	if (r->map_path)
		(void)unlink(r->map_path);
	if (r->data_path)
		(void)unlink(r->data_path);
	r->dropped = 1;
	r->cache_off = 1;
	r->dirty = 0;
}

void ezi_cache_detach(struct ezfs_remote *r)
{
	free(r->map.bits);
	r->map.bits = NULL;
	if (r->data_fd >= 0)
		close(r->data_fd);
	r->data_fd = -1;
	free(r->data_path);
	free(r->map_path);
	r->data_path = r->map_path = NULL;
}
