/* SPDX-License-Identifier: MIT */
/* test_iofault.c - I/O faults: a custom backend that fails chosen reads;
 * extent references (ezfs_extent_ref) with and without them; the
 * compressed bytes asked for ahead (ezfs_fetch_ahead). */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <ezfs/ezfs.h>

/*
 * The image is made at test time by Debian's mkfs.erofs (exit 77 without
 * it) from a small tree written here, once plain and once lz4. It is served
 * from memory through ezfs_image_open_io with a fault window:
 *  - an open whose superblock read fails returns an error, calls close once;
 *  - a file whose data read fails gives -EIO, other files still read right,
 *    and the file reads right once the fault is gone (errors not cached);
 *  - short reads never turn into wrong data;
 *  - a fault on each block in turn: every call succeeds with the right
 *    bytes or fails with a negative errno (never a crash, a hang, a leak).
 */

enum fault_mode { F_NONE, F_EIO, F_SHORT, F_ZERO };

struct backend {
	const uint8_t *buf;
	size_t len;
	enum fault_mode mode;
	uint64_t lo, hi; /* faulty byte range [lo, hi) */
	unsigned long reads, faults;
	int closes;
};

#include "check.h"

static ssize_t be_pread(void *arg, void *buf, size_t len, uint64_t off)
{
	struct backend *b = arg;
	size_t n;

	b->reads++;
	if (off >= b->len)
		return 0;
	n = len;
	if (n > b->len - off)
		n = b->len - off;
	if (b->mode != F_NONE && off < b->hi && off + n > b->lo) {
		b->faults++;
		switch (b->mode) {
		case F_EIO:
			return -EIO;
		case F_ZERO: /* a broken backend: 0 bytes, not at EOF */
			return 0;
		case F_SHORT: /* stop right before the fault */
			if (off >= b->lo)
				return 0;
			n = b->lo - off;
			break;
		default:
			break;
		}
	}
	memcpy(buf, b->buf + off, n);
	return (ssize_t)n;
}

static void be_close(void *arg)
{
	struct backend *b = arg;

	b->closes++;
}

static const struct ezfs_io_ops be_ops = {
	.pread = be_pread,
	.close = be_close,
};

static void log_fn(void *arg, int level, const char *msg)
{
	CHECK(!strchr(msg, '\n'), "log line with a newline: %s", msg);
	if (getenv("IOFAULT_VERBOSE"))
		fprintf(stderr, "  log: %s\n", msg);
}

static void fsck_problem(void *arg, uint64_t nid, const char *path,
			 const char *msg)
{
	CHECK(!strchr(msg, '\n'), "fsck message with a newline: %s", msg);
	if (getenv("IOFAULT_VERBOSE"))
		fprintf(stderr, "  fsck: nid %llu %s: %s\n",
			(unsigned long long)nid, path ? path : "", msg);
}

static int open_be(struct backend *b, ezfs_image **img)
{
	struct ezfs_open_params p;

	ezfs_open_params_init(&p);
	p.log = log_fn;
	p.cache_bytes = 256u << 10;
	p.meta_cache_bytes = 64u << 10;
	return ezfs_image_open_io(&be_ops, b, b->len, &p, img);
}

/* ------------------------------------------------------------------ */
/* The tree                                                            */

struct file {
	const char *path;
	size_t size;
	uint8_t *data;
};

static struct file files[] = {
	{ "big.txt", 200000, NULL }, { "rand.bin", 20000, NULL },
	{ "small", 100, NULL },	     { "d/inner.txt", 9000, NULL },
	{ "d/e/deep", 50000, NULL }, { "z/zero", 16384, NULL },
};
#define NFILES (sizeof(files) / sizeof(files[0]))

static void fill(struct file *f, unsigned seed)
{
	static const char *const words[] = { "erofs ",	 "block ", "inode ",
					     "cluster ", "the ",   "data ",
					     "read\n",	 "only ",  "lz4 " };
	uint32_t x = seed * 2654435761u + 1;
	size_t i = 0;

	f->data = malloc(f->size ? f->size : 1);
	if (!f->data)
		exit(99);
	if (!strcmp(f->path, "z/zero")) {
		memset(f->data, 0, f->size);
		return;
	}
	while (i < f->size) {
		const char *w;
		size_t n;

		x = x * 1103515245u + 12345u;
		if (!strcmp(f->path, "rand.bin")) {
			f->data[i++] = x >> 16;
			continue;
		}
		w = words[(x >> 16) % 9];
		n = strlen(w);
		if (n > f->size - i)
			n = f->size - i;
		memcpy(f->data + i, w, n);
		i += n;
	}
}

static int write_tree(const char *root)
{
	char path[8400];
	unsigned i;
	FILE *fp;

	static const char *const dirs[] = { "d", "d/e", "z" };

	for (i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
		if (mkdir(path, 0755) && errno != EEXIST)
			return -1;
	}
	for (i = 0; i < NFILES; i++) {
		snprintf(path, sizeof(path), "%s/%s", root, files[i].path);
		fp = fopen(path, "wb");
		if (!fp)
			return -1;
		if (fwrite(files[i].data, 1, files[i].size, fp) !=
		    files[i].size) {
			fclose(fp);
			return -1;
		}
		fclose(fp);
	}
	return 0;
}

static uint8_t *load(const char *path, size_t *len)
{
	uint8_t *buf;
	struct stat st;
	FILE *fp;

	fp = fopen(path, "rb");
	if (!fp || fstat(fileno(fp), &st)) {
		if (fp)
			fclose(fp);
		return NULL;
	}
	*len = st.st_size;
	buf = malloc(*len ? *len : 1);
	if (buf && fread(buf, 1, *len, fp) != *len) {
		free(buf);
		buf = NULL;
	}
	fclose(fp);
	return buf;
}

/* ------------------------------------------------------------------ */
/* Reading                                                             */

/* Read a whole file by path: 0 and it matched, or a negative errno.
 * Aborts the test (CHECK) if a successful read gave wrong bytes. */
static int read_file(ezfs_image *img, const struct file *f, const char *tag)
{
	ezfs_inode *ino;
	uint8_t *buf;
	uint64_t nid;
	size_t got = 0;
	ssize_t n;
	int err;

	err = ezfs_resolve(img, f->path, &nid);
	if (err)
		return err;
	err = ezfs_inode_get(img, nid, &ino);
	if (err)
		return err;
	buf = malloc(f->size + 1);
	if (!buf) {
		ezfs_inode_put(ino);
		return -ENOMEM;
	}
	while (got <= f->size) {
		n = ezfs_pread(ino, buf + got, f->size + 1 - got, got);
		if (n < 0) {
			err = (int)n;
			break;
		}
		if (n == 0)
			break;
		got += n;
	}
	if (!err) {
		CHECK(got == f->size, "%s: %s: read %zu bytes, want %zu", tag,
		      f->path, got, f->size);
		CHECK(got != f->size || !memcmp(buf, f->data, got),
		      "%s: %s: wrong data returned without an error", tag,
		      f->path);
	}
	free(buf);
	ezfs_inode_put(ino);
	return err;
}

/* Byte range of the first mapped extent of a file: 0 or -errno. */
static int data_range(ezfs_image *img, const char *path, uint64_t *lo,
		      uint64_t *hi)
{
	struct ezfs_extent e;
	ezfs_inode *ino;
	uint64_t nid, la = 0;
	struct ezfs_stat st;
	int err;

	err = ezfs_resolve(img, path, &nid);
	if (err)
		return err;
	err = ezfs_inode_get(img, nid, &ino);
	if (err)
		return err;
	ezfs_inode_stat(ino, &st);
	err = -ENOENT;
	while (la < st.size) {
		if (ezfs_map(ino, la, &e))
			break;
		if ((e.flags & EZFS_EXTENT_MAPPED) &&
		    !(e.flags & (EZFS_EXTENT_INLINE | EZFS_EXTENT_FRAGMENT |
				 EZFS_EXTENT_META)) &&
		    e.plen) {
			*lo = e.pa;
			*hi = e.pa + e.plen;
			err = 0;
			break;
		}
		if (!e.llen)
			break;
		la = e.la + e.llen;
	}
	ezfs_inode_put(ino);
	return err;
}

/*
 * ezfs_extent_ref over a whole file: each reference holds its extent's
 * bytes, from its start, and covers the offset asked for; uncompressed
 * data is -EOPNOTSUPP (then the next extent is asked). 0, or the first
 * error other than -EOPNOTSUPP (the reference then left empty).
 */
static int ref_file(ezfs_image *img, const struct file *f, const char *tag,
		    unsigned *nrefs)
{
	struct ezfs_extent e;
	struct ezfs_ref ref;
	ezfs_inode *ino;
	uint64_t nid, pos = 0;
	int err;

	err = ezfs_resolve(img, f->path, &nid);
	if (!err)
		err = ezfs_inode_get(img, nid, &ino);
	if (err)
		return err;
	while (pos < f->size && !err) {
		err = ezfs_extent_ref(ino, pos, &ref);
		if (err == -EOPNOTSUPP) {
			CHECK(!ref.data && !ref.priv,
			      "%s: %s: refused ref "
			      "not empty",
			      tag, f->path);
			err = ezfs_map(ino, pos, &e);
			if (!err && e.la + e.llen <= pos)
				err = -EUCLEAN;
			if (!err)
				pos = e.la + e.llen;
			continue;
		}
		if (err) {
			CHECK(!ref.data && !ref.priv,
			      "%s: %s: failed ref not "
			      "empty",
			      tag, f->path);
			break;
		}
		(*nrefs)++;
		CHECK(ref.off <= pos && pos < ref.off + ref.len &&
			      ref.off + ref.len <= f->size,
		      "%s: %s: ref at %llu "
		      "holds [%llu, +%zu)",
		      tag, f->path, (unsigned long long)pos,
		      (unsigned long long)ref.off, ref.len);
		if (ref.off + ref.len <= f->size)
			CHECK(!memcmp(ref.data, f->data + ref.off, ref.len),
			      "%s: %s: ref at %llu: wrong bytes", tag, f->path,
			      (unsigned long long)ref.off);
		pos = ref.off + ref.len > pos ? ref.off + ref.len : pos + 1;
		ezfs_ref_put(ino, &ref);
		CHECK(!ref.priv, "%s: ref_put left the ref set", tag);
	}
	ezfs_inode_put(ino);
	return err;
}

static int is_errno(int err)
{
	return err == -EIO || err == -EUCLEAN || err == -ENOMEM ||
	       err == -ENOENT || err == -ENOTDIR || err == -EINVAL;
}

/* ------------------------------------------------------------------ */
/* The tests                                                           */

static void test_open_faults(struct backend *b, const char *name)
{
	static const struct {
		enum fault_mode mode;
		uint64_t lo, hi;
		const char *what;
	} cases[] = {
		{ F_EIO, 1024, 1025, "EIO on the superblock" },
		{ F_EIO, 0, UINT64_MAX, "EIO everywhere" },
		{ F_SHORT, 1030, 1031, "short read inside the superblock" },
		{ F_ZERO, 0, UINT64_MAX, "zero-byte reads everywhere" },
		{ F_EIO, 4096, UINT64_MAX, "EIO after block 0" },
	};
	ezfs_image *img;
	unsigned i;
	int err;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		b->mode = cases[i].mode;
		b->lo = cases[i].lo;
		b->hi = cases[i].hi;
		b->closes = 0;
		img = NULL;
		err = open_be(b, &img);
		if (i < 4) {
			CHECK(err < 0, "%s: open with %s succeeded", name,
			      cases[i].what);
			CHECK(is_errno(err), "%s: open with %s: error %d", name,
			      cases[i].what, err);
			CHECK(b->closes == 1,
			      "%s: open with %s: close called %d times", name,
			      cases[i].what, b->closes);
			if (!err)
				ezfs_image_close(img);
			continue;
		}
		/* Metadata beyond block 0 is unreadable: open may succeed,
		 * but then the root cannot be listed nor files read. */
		if (!err) {
			CHECK(read_file(img, &files[0], name) < 0,
			      "%s: read worked with %s", name, cases[i].what);
			ezfs_image_close(img);
		}
		CHECK(b->closes == 1, "%s: %s: close called %d times", name,
		      cases[i].what, b->closes);
	}
	b->mode = F_NONE;
}

static void test_data_fault(struct backend *b, const char *name,
			    enum fault_mode mode)
{
	uint64_t lo = 0, hi = 0;
	ezfs_image *img;
	unsigned i;
	int err;

	/* where "big.txt" keeps its first pcluster / block */
	b->mode = F_NONE;
	b->closes = 0;
	err = open_be(b, &img);
	CHECK(!err, "%s: open: %d", name, err);
	if (err)
		return;
	err = data_range(img, files[0].path, &lo, &hi);
	CHECK(!err, "%s: no mapped extent in %s: %d", name, files[0].path, err);
	ezfs_image_close(img);
	if (err)
		return;

	b->mode = mode;
	b->lo = lo;
	b->hi = lo + 1;
	err = open_be(b, &img);
	CHECK(!err, "%s: open with a data fault: %d", name, err);
	if (err) {
		b->mode = F_NONE;
		return;
	}
	err = read_file(img, &files[0], name);
	if (mode == F_EIO)
		CHECK(err == -EIO,
		      "%s: read of a file with a bad block: %d, want -EIO",
		      name, err);
	if (mode == F_EIO) {
		unsigned n = 0;

		err = ref_file(img, &files[0], name, &n);
		CHECK(err == -EIO || (!err && !n),
		      "%s: refs of a file with a "
		      "bad block: %d, want -EIO (or no encoded extent)",
		      name, err);
	} else
		CHECK(err < 0, "%s: short read: read succeeded (%d)", name,
		      err);
	for (i = 1; i < NFILES; i++) {
		err = read_file(img, &files[i], name);
		CHECK(!err, "%s: %s after another file's I/O error: %d", name,
		      files[i].path, err);
	}
	/* fsck (two threads) sees the fault, reports it and ends. */
	if (mode == F_EIO) {
		struct ezfs_fsck_params fp;
		struct ezfs_fsck_result res;

		ezfs_fsck_params_init(&fp);
		memset(&res, 0, sizeof(res));
		fp.problem = fsck_problem;
		fp.threads = 2;
		err = ezfs_fsck(img, &fp, &res);
		CHECK(err < 0, "%s: fsck with an I/O error returned %d", name,
		      err);
		CHECK(err >= 0 || res.problems > 0 || err == -EIO,
		      "%s: fsck failed (%d) without naming a problem", name,
		      err);
	}
	/* The fault is gone: the file must read right (no cached error). */
	b->mode = F_NONE;
	err = read_file(img, &files[0], name);
	CHECK(!err, "%s: %s after the fault went away: %d", name, files[0].path,
	      err);
	ezfs_image_close(img);
	CHECK(b->closes == 2, "%s: close called %d times", name, b->closes);
}

/* A fault on each block in turn, each mode; walk and read everything. */
static void test_sweep(struct backend *b, const char *name)
{
	static const enum fault_mode modes[] = { F_EIO, F_SHORT, F_ZERO };
	uint64_t blk, nblk = (b->len + 4095) / 4096;
	unsigned m, i, nerr = 0, nok = 0;
	ezfs_image *img;
	int err;

	for (m = 0; m < 3; m++) {
		for (blk = 0; blk < nblk; blk++) {
			b->mode = modes[m];
			b->lo = blk * 4096 + (blk ? 17 : 1100);
			b->hi = b->lo + 1;
			b->closes = 0;
			err = open_be(b, &img);
			if (err) {
				CHECK(is_errno(err), "%s: sweep open: %d", name,
				      err);
				CHECK(modes[m] != F_EIO || err == -EIO,
				      "%s: EIO at block %llu: open gave %d",
				      name, (unsigned long long)blk, err);
				CHECK(b->closes == 1, "%s: close calls %d",
				      name, b->closes);
				continue;
			}
			for (i = 0; i < NFILES; i++) {
				err = read_file(img, &files[i], name);
				CHECK(!err || is_errno(err),
				      "%s: sweep read: %d", name, err);
				/* an I/O error is not reported as corruption */
				CHECK(!err || modes[m] != F_EIO || err == -EIO,
				      "%s: EIO at block %llu: %s read gave %d",
				      name, (unsigned long long)blk,
				      files[i].path, err);
				if (err)
					nerr++;
				else
					nok++;
			}
			ezfs_image_close(img);
			CHECK(b->closes == 1, "%s: close calls %d", name,
			      b->closes);
		}
	}
	b->mode = F_NONE;
	printf("  %s: sweep over %llu blocks x 3 modes: %u reads ok, %u "
	       "failed\n",
	       name, (unsigned long long)nblk, nok, nerr);
}

/* Pages of [lo, hi) of the mapped file not in the page cache. */
static size_t not_resident(const uint8_t *map, uint64_t lo, uint64_t hi)
{
	const uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	unsigned char vec[256];
	uint64_t a = lo & ~(pg - 1), p;
	size_t n = 0, i, np;

	for (p = a; p < hi; p += np * pg) {
		np = (size_t)((hi - p + pg - 1) / pg);
		if (np > sizeof(vec))
			np = sizeof(vec);
		if (mincore((void *)(map + p), np * pg, vec))
			return SIZE_MAX;
		for (i = 0; i < np; i++)
			n += !(vec[i] & 1);
	}
	return n;
}

/*
 * ezfs_fetch_ahead on a file image: with the image's pages dropped from
 * the page cache, the pclusters of big.txt's encoded extents are there
 * soon after the call, without a read; the file then reads right. On a
 * memory image, on other layouts and past the end it does nothing.
 */
static void test_fetch_ahead(const char *imgpath, const char *name)
{
	struct ezfs_open_params p;
	struct ezfs_extent e;
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	uint64_t la = 0, lo = UINT64_MAX, hi = 0, nid;
	ezfs_image *img;
	ezfs_inode *ino;
	struct stat st;
	uint8_t *map;
	size_t missing = 0;
	int fd, err, tries;

	ezfs_open_params_init(&p);
	p.log = log_fn;
	err = ezfs_image_open(imgpath, &p, &img);
	CHECK(!err, "%s: open %s: %d", name, imgpath, err);
	if (err)
		return;
	err = ezfs_resolve(img, files[0].path, &nid);
	if (!err)
		err = ezfs_inode_get(img, nid, &ino);
	CHECK(!err, "%s: %s: %d", name, files[0].path, err);
	if (err) {
		ezfs_image_close(img);
		return;
	}
	while (la < files[0].size && !ezfs_map(ino, la, &e) && e.llen) {
		if ((e.flags & EZFS_EXTENT_ENCODED) &&
		    !(e.flags & (EZFS_EXTENT_INLINE | EZFS_EXTENT_FRAGMENT |
				 EZFS_EXTENT_META))) {
			lo = e.pa < lo ? e.pa : lo;
			hi = e.pa + e.plen > hi ? e.pa + e.plen : hi;
		}
		la = e.la + e.llen;
	}
	fd = open(imgpath, O_RDONLY);
	map = MAP_FAILED;
	if (fd >= 0 && !fstat(fd, &st))
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd,
			   0);
	CHECK(map != MAP_FAILED, "%s: cannot map %s", name, imgpath);
	if (map != MAP_FAILED && hi > lo) {
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		missing = not_resident(map, lo, hi);
	}
	if (hi <= lo) {
		printf("  %s: fetch ahead: no encoded extent\n", name);
	} else if (!missing) {
		printf("  %s: fetch ahead: not checked (the image's pages "
		       "cannot be dropped here)\n",
		       name);
	} else {
		ezfs_fetch_ahead(ino, 0, files[0].size);
		for (tries = 0; tries < 300; tries++) {
			if (!not_resident(map, lo, hi))
				break;
			nanosleep(&ts, NULL);
		}
		CHECK(!not_resident(map, lo, hi),
		      "%s: fetch ahead: %zu of "
		      "the pclusters' pages still not read after 3 s",
		      name, not_resident(map, lo, hi));
		printf("  %s: fetch ahead: %zu pages read in by the hint\n",
		       name, missing);
	}
	/* Out of range, empty, other layouts: nothing, no crash. */
	ezfs_fetch_ahead(ino, files[0].size, 100);
	ezfs_fetch_ahead(ino, 0, 0);
	ezfs_fetch_ahead(ino, files[0].size - 1, UINT64_MAX);
	ezfs_inode_put(ino);
	CHECK(!read_file(img, &files[0], name), "%s: read %s after the hint",
	      name, files[0].path);
	if (!ezfs_inode_get(img, ezfs_root_nid(img), &ino)) {
		ezfs_fetch_ahead(ino, 0, 4096);
		ezfs_inode_put(ino);
	}
	if (map != MAP_FAILED)
		munmap(map, (size_t)st.st_size);
	if (fd >= 0)
		close(fd);
	ezfs_image_close(img);
}

static void test_image(const char *imgpath, const char *name)
{
	struct backend b;
	ezfs_image *img;
	ezfs_inode *ino;
	unsigned i, nrefs;
	uint64_t nid;
	int err;

	memset(&b, 0, sizeof(b));
	b.buf = load(imgpath, &b.len);
	if (!b.buf) {
		CHECK(0, "%s: cannot load %s", name, imgpath);
		return;
	}
	/* 0. no fault: everything reads right */
	err = open_be(&b, &img);
	CHECK(!err, "%s: open: %d", name, err);
	if (err) {
		free((void *)b.buf);
		return;
	}
	for (i = 0; i < NFILES; i++)
		CHECK(!read_file(img, &files[i], name), "%s: read %s", name,
		      files[i].path);
	for (i = 0, nrefs = 0; i < NFILES; i++)
		CHECK(!ref_file(img, &files[i], name, &nrefs), "%s: refs of %s",
		      name, files[i].path);
	/* The plain image has no encoded extent; the lz4 ones have some. */
	CHECK(!strcmp(name, "plain") == !nrefs, "%s: %u extent refs", name,
	      nrefs);
	/* A memory image: the hint does nothing, reads stay right. */
	if (!ezfs_resolve(img, files[0].path, &nid) &&
	    !ezfs_inode_get(img, nid, &ino)) {
		ezfs_fetch_ahead(ino, 0, UINT64_MAX);
		ezfs_inode_put(ino);
	}
	CHECK(!read_file(img, &files[0], name), "%s: read after the hint",
	      name);
	ezfs_image_close(img);
	CHECK(b.closes == 1, "%s: close called %d times", name, b.closes);

	test_fetch_ahead(imgpath, name);
	test_open_faults(&b, name);
	test_data_fault(&b, name, F_EIO);
	test_data_fault(&b, name, F_SHORT);
	test_sweep(&b, name);
	printf("  %s: %lu backend reads, %lu faults injected\n", name, b.reads,
	       b.faults);
	free((void *)b.buf);
}

/* The size field of the parameter structs: 0 and a future size are
 * refused, an older caller's prefix takes the defaults for the rest. */
static void test_params_size(const char *img_path)
{
	struct ezfs_open_params p;
	struct ezfs_fsck_params fp;
	ezfs_image *img = NULL;
	int err;

	ezfs_open_params_init(&p);
	CHECK(p.size == sizeof(p), "open params init: size %zu", p.size);
	p.size = 0;
	err = ezfs_image_open(img_path, &p, &img);
	CHECK(err == -EINVAL && !img, "open params size 0: %d", err);
	p.size = sizeof(p) + 8;
	err = ezfs_image_open(img_path, &p, &img);
	CHECK(err == -EINVAL && !img, "open params from the future: %d", err);
	/* a caller built before the engine fields */
	ezfs_open_params_init(&p);
	p.size = offsetof(struct ezfs_open_params, accel);
	p.accel = "no such engine list"; /* past its size: ignored */
	err = ezfs_image_open(img_path, &p, &img);
	CHECK(!err && img, "open params of an older caller: %d", err);
	if (img) {
		ezfs_fsck_params_init(&fp);
		CHECK(fp.size == sizeof(fp), "fsck params init");
		fp.size = 0;
		CHECK(ezfs_fsck(img, &fp, NULL) == -EINVAL,
		      "fsck params size 0");
		CHECK(ezfs_fsck(img, NULL, NULL) == 0, "fsck without params");
		ezfs_image_close(img);
	}
}

int main(void)
{
	static const struct {
		const char *name, *opts;
	} variants[] = {
		{ "plain", "-Enosbcrc" },
		{ "lz4", "-zlz4hc -C16384" },
		{ "lz4-legacy", "-zlz4 -Elegacy-compress -Eztailpacking" },
	};
	char tmpl[] = "/tmp/ezfs-iofault.XXXXXX", tree[4200], img[4200];
	char cmd[9000];
	const char *tmp;
	unsigned i;

	alarm(300); /* a hang is a failure */
	if (system("command -v mkfs.erofs >/dev/null 2>&1")) {
		printf("SKIP: mkfs.erofs not found\n");
		return 77;
	}
	tmp = mkdtemp(tmpl);
	if (!tmp) {
		perror("mkdtemp");
		return 1;
	}
	for (i = 0; i < NFILES; i++)
		fill(&files[i], i + 1);
	snprintf(tree, sizeof(tree), "%s/tree", tmp);
	if (mkdir(tree, 0755) || write_tree(tree)) {
		perror("tree");
		return 1;
	}
	for (i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		snprintf(img, sizeof(img), "%s/%s.img", tmp, variants[i].name);
		snprintf(cmd, sizeof(cmd),
			 "SOURCE_DATE_EPOCH=1600000000 mkfs.erofs --quiet %s "
			 "'%s' '%s' >/dev/null 2>&1",
			 variants[i].opts, img, tree);
		if (system(cmd)) {
			printf("SKIP: %s failed\n", cmd);
			continue;
		}
		printf("image %s (mkfs.erofs %s)\n", variants[i].name,
		       variants[i].opts);
		test_image(img, variants[i].name);
		if (i == 0)
			test_params_size(img);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", tmp);
	for (i = 0; i < NFILES; i++)
		free(files[i].data);
	if (failures) {
		printf("test_iofault: %d failures\n", failures);
		return 1;
	}
	printf("test_iofault: ok\n");
	return 0;
}
