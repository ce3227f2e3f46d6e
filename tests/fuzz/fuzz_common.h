/* SPDX-License-Identifier: MIT */
/* fuzz_common.h - shared helpers of the fuzz targets: open, bounded tree walk.
 */
#ifndef EZFS_FUZZ_COMMON_H
#define EZFS_FUZZ_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ezfs/ezfs.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Limits that keep one input fast (a hang is reported by libFuzzer). */
#define FUZZ_MAX_INODES	 128  /* inodes visited by a walk */
#define FUZZ_MAX_DIRENTS 1024 /* entries read from one directory */
#define FUZZ_MAX_NAMES	 64   /* names kept per directory for lookups */

/*
 * Known, already reported problems can be skipped while fuzzing for new
 * ones: FUZZ_IGNORE="newline,stale" (comma separated check names). Replay
 * tests run with every check on.
 */
static inline int fuzz_ignored(const char *check)
{
	const char *s = getenv("FUZZ_IGNORE");

	return s && strstr(s, check);
}

/* Contract check: the library must never hand us a broken log line. */
static inline void fuzz_log(void *arg, int level, const char *msg)
{
	size_t n = strlen(msg);

	(void)arg;
	if (level < EZFS_LOG_ERROR || level > EZFS_LOG_DEBUG) {
		fprintf(stderr, "fuzz: bad log level %d\n", level);
		abort();
	}
	if (memchr(msg, '\n', n) && !fuzz_ignored("newline")) {
		fprintf(stderr, "fuzz: log line with a newline: %s\n", msg);
		abort();
	}
}

/* CRC32C state as EROFS uses it (seed ~0, no final inversion). */
static inline uint32_t fuzz_crc32c(uint32_t crc, const uint8_t *p, size_t n)
{
	int k;

	while (n--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
	}
	return crc;
}

/*
 * Mutations of block 0 would nearly all be rejected by the superblock
 * checksum, so the harness recomputes it, unless bit 0 of byte 0 (boot
 * area, unused) is set: then the stored checksum is left to be checked.
 */
static inline void fuzz_fix_sb_crc(uint8_t *img, size_t size)
{
	const size_t sb = 1024;
	size_t len, blksz;
	uint8_t *p = img + sb;
	uint32_t crc;

	if (size < sb + 128 || (img[0] & 1))
		return;
	if (p[0] != 0xe2 || p[1] != 0xe1 || p[2] != 0xf5 || p[3] != 0xe0)
		return;
	if (!(p[8] & 1) || p[12] < 9 || p[12] > 16)
		return;
	blksz = (size_t)1 << p[12];
	len = blksz > sb ? blksz - sb : blksz;
	if (sb + len > size)
		return;
	memset(p + 4, 0, 4);
	crc = fuzz_crc32c(0xffffffffu, p, len);
	p[4] = crc;
	p[5] = crc >> 8;
	p[6] = crc >> 16;
	p[7] = crc >> 24;
}

/*
 * Open a copy of the input (checksum fixed, see above) with small caches.
 * Returns 0 or a negative errno; on success free *copy after closing.
 */
static inline int fuzz_open(const uint8_t *data, size_t size, ezfs_image **img,
			    uint8_t **copy)
{
	struct ezfs_open_params p;
	int err;

	*copy = malloc(size ? size : 1);
	if (!*copy)
		return -ENOMEM;
	memcpy(*copy, data, size);
	fuzz_fix_sb_crc(*copy, size);
	ezfs_open_params_init(&p);
	p.log = fuzz_log;
	p.verbose = 3; /* format every message, even debug */
	p.cache_bytes = 4u << 20;
	p.meta_cache_bytes = 256u << 10;
	err = ezfs_image_open_mem(*copy, size, &p, img);
	if (err) {
		free(*copy);
		*copy = NULL;
	}
	return err;
}

/* Check that an error code is one the API documents. */
static inline void fuzz_check_err(long err, const char *what)
{
	switch (err) {
	case -EUCLEAN:
	case -EOPNOTSUPP:
	case -EIO:
	case -ENOMEM:
	case -ENOENT:
	case -ENOTDIR:
	case -EINVAL:
	case -ERANGE:
	case -ENODATA:
	case -EISDIR:
	case -ENAMETOOLONG:
	case -EFBIG:
	case -EOVERFLOW:
		return;
	}
	if (err >= 0)
		return;
	fprintf(stderr, "fuzz: %s returned unexpected error %ld\n", what, err);
	abort();
}

struct fuzz_name {
	uint64_t nid;
	uint64_t next_pos;
	unsigned ftype;
	size_t len;
	char name[256];
};

struct fuzz_dir {
	struct fuzz_name names[FUZZ_MAX_NAMES];
	unsigned nnames;
	unsigned seen;
	uint64_t last_pos;
	int nonmonotonic;
};

static inline int fuzz_dirent(void *arg, const char *name, size_t namelen,
			      uint64_t nid, unsigned ftype, uint64_t next_pos)
{
	struct fuzz_dir *d = arg;
	struct fuzz_name *n;
	volatile char sink = 0;
	size_t i;

	/* Touch every byte of the name: ASan checks the bounds. */
	for (i = 0; i < namelen; i++)
		sink ^= name[i];
	(void)sink;
	if (namelen == 0 || namelen > 255) {
		fprintf(stderr, "fuzz: readdir gave a name of length %zu\n",
			namelen);
		abort();
	}
	if (next_pos <= d->last_pos)
		d->nonmonotonic = 1;
	d->last_pos = next_pos;
	if (++d->seen > FUZZ_MAX_DIRENTS)
		return 1;
	if (d->nnames < FUZZ_MAX_NAMES) {
		n = &d->names[d->nnames++];
		n->nid = nid;
		n->next_pos = next_pos;
		n->ftype = ftype;
		n->len = namelen;
		memcpy(n->name, name, namelen);
		n->name[namelen] = '\0';
	}
	return 0;
}

static inline int fuzz_is_dot(const struct fuzz_name *n)
{
	return (n->len == 1 && n->name[0] == '.') ||
	       (n->len == 2 && n->name[0] == '.' && n->name[1] == '.');
}

/*
 * Breadth-first walk from the root, at most FUZZ_MAX_INODES inodes, each nid
 * once; visit(ino, st, arg) is called for every inode that could be got.
 */
typedef void (*fuzz_visit_fn)(ezfs_image *img, ezfs_inode *ino,
			      const struct ezfs_stat *st, void *arg);

static inline void fuzz_walk(ezfs_image *img, fuzz_visit_fn visit, void *arg)
{
	uint64_t queue[FUZZ_MAX_INODES];
	unsigned head = 0, tail = 0, i, j;
	struct fuzz_dir *d;

	d = malloc(sizeof(*d));
	if (!d)
		return;
	queue[tail++] = ezfs_root_nid(img);
	while (head < tail) {
		struct ezfs_stat st;
		ezfs_inode *ino;
		int err;

		err = ezfs_inode_get(img, queue[head++], &ino);
		fuzz_check_err(err, "inode_get");
		if (err)
			continue;
		ezfs_inode_stat(ino, &st);
		if (ezfs_inode_nid(ino) != queue[head - 1]) {
			fprintf(stderr, "fuzz: inode_nid mismatch\n");
			abort();
		}
		visit(img, ino, &st, arg);
		if ((st.mode & 0170000) == 0040000) {
			memset(d, 0, sizeof(*d));
			err = ezfs_readdir(ino, 0, fuzz_dirent, d);
			fuzz_check_err(err, "readdir");
			for (i = 0; i < d->nnames; i++) {
				if (fuzz_is_dot(&d->names[i]))
					continue;
				for (j = 0; j < tail; j++)
					if (queue[j] == d->names[i].nid)
						break;
				if (j == tail && tail < FUZZ_MAX_INODES)
					queue[tail++] = d->names[i].nid;
			}
		}
		ezfs_inode_put(ino);
	}
	free(d);
}

/* The body of a walking target: open the input, visit every inode, close. */
static inline int fuzz_open_and_walk(const uint8_t *data, size_t size,
				     fuzz_visit_fn visit, void *arg)
{
	ezfs_image *img;
	uint8_t *copy;

	if (fuzz_open(data, size, &img, &copy))
		return 0;
	fuzz_walk(img, visit, arg);
	ezfs_image_close(img);
	free(copy);
	return 0;
}

#endif
