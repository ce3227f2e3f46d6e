/* SPDX-License-Identifier: MIT */
/* fsck.c - ezfs_fsck: check a whole image through the public read API. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ezfs/engine.h"
#include "ezfs/ezfs.h"
#include "util/hash.h"
#include "util/sha256.h"
#include "util/pool.h"
#include "util/vec.h"

#ifndef EUCLEAN
#define EUCLEAN 117
#endif

#define FSCK_PROGRESS_INODES 64
#define FSCK_PROGRESS_BYTES  (64ull << 20)
/* limits of EROFS and of the Linux VFS that reads it */
#define FSCK_NAME_MAX	    255	 /* dirent name */
#define FSCK_SYMLINK_MAX    4095 /* PATH_MAX - 1 */
#define FSCK_XATTR_NAME_MAX 255
#define FSCK_XATTR_SIZE_MAX 65536

/*
 * What we know of each nid reached from the root: directories must be
 * reached once; other inodes are counted to compare with their nlink.
 */
struct node {
	uint64_t nid;
	uint32_t nlink;
	uint32_t refs;
	uint8_t isdir;
	char *path; /* first path, kept when it may be reported */
};

/* A directory waiting to be scanned. */
struct pending {
	uint64_t nid, parent;
	char *path;
};

/* A regular file waiting for its data check. */
struct djob {
	struct fsck *f;
	ezfs_inode *ino;
	uint64_t nid, size;
	char *path;
};

struct fsck {
	ezfs_image *img;
	const struct ezfs_fsck_params *p;
	struct ezfs_fsck_result *res;
	struct ezfs_sb_info si;

	pthread_mutex_t lock; /* res, problem and progress callbacks */
	uint64_t last_inodes, last_bytes;

	EZI_VEC(struct node) nodes; /* in the order first reached */
	struct ezi_hash nidx;	    /* nid -> 1 + index in nodes */

	EZI_VEC(struct pending) stack;

	/* data checks on workers (util/pool.h) */
	struct ezi_pool *pool;
	unsigned nthreads;
};

static void problem(struct fsck *f, uint64_t nid, const char *path,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void problem(struct fsck *f, uint64_t nid, const char *path,
		    const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&f->lock);
	f->res->problems++;
	if (f->p && f->p->problem)
		f->p->problem(f->p->arg, nid, path, msg);
	pthread_mutex_unlock(&f->lock);
}

static void progress(struct fsck *f, uint64_t inodes, uint64_t bytes)
{
	struct ezfs_fsck_result *r = f->res;

	pthread_mutex_lock(&f->lock);
	r->inodes += inodes;
	r->data_bytes += bytes;
	if (f->p && f->p->progress &&
	    (r->inodes - f->last_inodes >= FSCK_PROGRESS_INODES ||
	     r->data_bytes - f->last_bytes >= FSCK_PROGRESS_BYTES)) {
		f->last_inodes = r->inodes;
		f->last_bytes = r->data_bytes;
		f->p->progress(f->p->arg, r->inodes, r->data_bytes);
	}
	pthread_mutex_unlock(&f->lock);
}

static const char *err_str(int err)
{
	return ezfs_strerror(err);
}

/* ---- nid table ---- */

/* The node of nid; *added = 1 when it was just created. NULL: ENOMEM.
 * The pointer holds until the next node_get. */
static struct node *node_get(struct fsck *f, uint64_t nid, int *added)
{
	uintptr_t i = (uintptr_t)ezi_hash_get(&f->nidx, nid);
	struct node *n;

	*added = 0;
	if (i)
		return &f->nodes.v[i - 1];
	if (ezi_vec_add(&f->nodes, &n))
		return NULL;
	if (ezi_hash_add(&f->nidx, nid, (void *)(uintptr_t)f->nodes.n)) {
		f->nodes.n--;
		return NULL;
	}
	n->nid = nid;
	*added = 1;
	return n;
}

/* ---- per-inode checks ---- */

static void check_xattrs(struct fsck *f, ezfs_inode *ino, uint64_t nid,
			 const char *path)
{
	ssize_t n, n2, vn, vn2;
	char *names, *k, *end, qbuf[512];
	const char *qk;
	uint64_t count = 0;
	void *val;

	n = ezfs_listxattr(ino, NULL, 0);
	if (n < 0) {
		problem(f, nid, path, "listing xattrs: %s", err_str((int)n));
		return;
	}
	if (!n)
		return;
	names = malloc(n);
	if (!names) {
		problem(f, nid, path, "listing xattrs: %s", err_str(-ENOMEM));
		return;
	}
	n2 = ezfs_listxattr(ino, names, n);
	if (n2 != n) {
		problem(f, nid, path, "listing xattrs: size %zd, then %zd%s%s",
			n, n2, n2 < 0 ? ": " : "",
			n2 < 0 ? err_str((int)n2) : "");
		free(names);
		return;
	}
	if (names[n - 1] != '\0') {
		problem(f, nid, path, "xattr name list not NUL terminated");
		free(names);
		return;
	}
	end = names + n;
	for (k = names; k < end; k += strlen(k) + 1) {
		if (!*k) {
			problem(f, nid, path, "empty xattr name");
			continue;
		}
		if (strlen(k) > FSCK_XATTR_NAME_MAX)
			problem(f, nid, path,
				"xattr name of %zu bytes (at most "
				"%d)",
				strlen(k), FSCK_XATTR_NAME_MAX);
		count++;
		/* names come from the image: quote them in messages */
		qk = ezfs_quote(k, strlen(k), qbuf, sizeof(qbuf));
		vn = ezfs_getxattr(ino, k, NULL, 0);
		if (vn < 0) {
			problem(f, nid, path, "xattr %s: %s", qk,
				err_str((int)vn));
			continue;
		}
		val = malloc(vn ? vn : 1);
		if (!val) {
			problem(f, nid, path, "xattr %s: %s", qk,
				err_str(-ENOMEM));
			continue;
		}
		if (vn > FSCK_XATTR_SIZE_MAX)
			problem(f, nid, path,
				"xattr %s: value of %zd bytes (at "
				"most %d)",
				qk, vn, FSCK_XATTR_SIZE_MAX);
		vn2 = ezfs_getxattr(ino, k, val, vn);
		if (vn2 != vn)
			problem(f, nid, path,
				"xattr %s: value size %zd, then %zd%s%s", qk,
				vn, vn2, vn2 < 0 ? ": " : "",
				vn2 < 0 ? err_str((int)vn2) : "");
		free(val);
	}
	free(names);
	pthread_mutex_lock(&f->lock);
	f->res->xattrs += count;
	pthread_mutex_unlock(&f->lock);
}

/* An extent's bytes must lie in its file: the image or an extra device
 * (whose chunks name it, or whose flat block range holds them). */
static void check_where(struct fsck *f, uint64_t nid, const char *path,
			const struct ezfs_extent *e)
{
	struct ezfs_device d;
	uint64_t off, size = f->si.image_bytes;
	unsigned dev;

	ezfs_addr_device(f->img, e->pa, &dev, &off);
	if (dev && !ezfs_device_get(f->img, dev, &d))
		size = d.bytes;
	if (off <= size && e->plen <= size - off)
		return;
	if (dev)
		problem(f, nid, path,
			"extent %" PRIu64 "+%" PRIu64 ": physical %" PRIu64
			"+%" PRIu64 " beyond the end of device %u (%s, %" PRIu64
			" bytes)",
			e->la, e->llen, off, e->plen, dev, d.path, size);
	else
		problem(f, nid, path,
			"extent %" PRIu64 "+%" PRIu64 ": physical %" PRIu64
			"+%" PRIu64 " beyond the end of the image",
			e->la, e->llen, e->pa, e->plen);
}

/* The extent map must tile [0, size) without gaps or overlaps. */
static void check_extents(struct fsck *f, ezfs_inode *ino, uint64_t nid,
			  uint64_t size, const char *path)
{
	struct ezfs_extent e;
	uint64_t la = 0;
	int ret;

	while (la < size) {
		ret = ezfs_map(ino, la, &e);
		if (ret < 0) {
			problem(f, nid, path, "extent map at %" PRIu64 ": %s",
				la, err_str(ret));
			return;
		}
		if (e.la > la || e.la + e.llen <= la) {
			problem(f, nid, path,
				"extent map at %" PRIu64 ": extent %" PRIu64
				"+%" PRIu64 " does not contain it",
				la, e.la, e.llen);
			return;
		}
		if (e.la < la) {
			problem(f, nid, path,
				"extent %" PRIu64 "+%" PRIu64
				" overlaps the previous one ending at %" PRIu64,
				e.la, e.llen, la);
			return;
		}
		if ((e.flags & EZFS_EXTENT_MAPPED) &&
		    !(e.flags & (EZFS_EXTENT_FRAGMENT | EZFS_EXTENT_META)))
			check_where(f, nid, path, &e);
		la = e.la + e.llen;
	}
}

/*
 * Decode every byte of a regular file, in the windows of ezfs_stream
 * (decoded ahead by its readers with the dispatcher's workers), holes
 * skipped: a sparse 1 PiB file is not a petabyte of zeros to decode.
 */
/* The file's inode digest against the SHA-256 of its data (md) */
static void check_digest(struct fsck *f, struct djob *j, struct ezi_sha256 *md)
{
	uint8_t want[40], got[32];
	ssize_t n = ezfs_inode_digest(j->ino, want, sizeof(want));

	ezi_sha256_final(md, got);
	if (n == -ENODATA)
		return;
	if (n < 0)
		problem(f, j->nid, j->path, "inode digest: %s",
			err_str((int)n));
	else if (n != 39 || memcmp(want, "sha256:", 7))
		problem(f, j->nid, j->path,
			"inode digest: not a sha256: value (%zd bytes)", n);
	else if (memcmp(want + 7, got, 32))
		problem(f, j->nid, j->path,
			"inode digest: the data's SHA-256 differs");
}

/* Holes of the data as zeros into md */
static void digest_zeros(struct ezi_sha256 *md, uint64_t len)
{
	static const uint8_t zeros[65536];

	while (len) {
		size_t n = len < sizeof(zeros) ? (size_t)len : sizeof(zeros);

		ezi_sha256_update(md, zeros, n);
		len -= n;
	}
}

static void check_data(struct fsck *f, struct djob *j)
{
	uint64_t pos = 0, off = 0, pending = 0;
	struct ezi_sha256 md;
	ezfs_stream *s;
	const void *data;
	size_t len;
	int ret;

	check_extents(f, j->ino, j->nid, j->size, j->path);
	ret = ezfs_stream_open(j->ino, 0, j->size, EZFS_STREAM_HOLES, &s);
	if (ret < 0) {
		problem(f, j->nid, j->path, "data check: %s", err_str(ret));
		return;
	}
	ezi_sha256_init(&md);
	while ((ret = ezfs_stream_next(s, &data, &off, &len)) > 0 &&
	       off == pos) {
		if (f->p->inode_digests && data)
			ezi_sha256_update(&md, data, len);
		else if (f->p->inode_digests)
			digest_zeros(&md, len);
		pos += len;
		pending += len;
		if (pending >= FSCK_PROGRESS_BYTES / 4) {
			progress(f, 0, pending);
			pending = 0;
		}
	}
	ezfs_stream_close(s);
	if (ret < 0) {
		problem(f, j->nid, j->path, "reading data at %" PRIu64 ": %s",
			off, err_str(ret));
	} else if (pos < j->size) {
		problem(f, j->nid, j->path,
			"data ends at %" PRIu64 ", size %" PRIu64, pos,
			j->size);
	} else {
		char c;
		ssize_t n = ezfs_pread(j->ino, &c, 1, j->size);

		if (n != 0)
			problem(f, j->nid, j->path, "read at EOF returned %zd",
				n);
		else if (f->p->inode_digests && j->size)
			check_digest(f, j, &md);
	}
	progress(f, 0, pending);
}

static void djob_free(struct djob *j)
{
	ezfs_inode_put(j->ino);
	free(j->path);
	free(j);
}

static void data_job(void *arg)
{
	struct djob *j = arg;

	check_data(j->f, j);
	djob_free(j);
}

/* Check the data of a regular file, now or on a worker. Takes ino. */
static void submit_data(struct fsck *f, ezfs_inode *ino, uint64_t nid,
			uint64_t size, const char *path)
{
	struct djob *j = calloc(1, sizeof(*j));

	if (j)
		j->path = strdup(path);
	if (!j || !j->path) {
		problem(f, nid, path, "data check: %s", err_str(-ENOMEM));
		ezfs_inode_put(ino);
		if (j)
			free(j->path);
		free(j);
		return;
	}
	j->f = f;
	j->ino = ino;
	j->nid = nid;
	j->size = size;
	if (!f->nthreads || ezi_pool_submit(f->pool, data_job, j)) {
		check_data(f, j);
		djob_free(j);
	}
}

/*
 * First sight of an inode: type-specific checks, xattrs, counters. Takes
 * ino (regular files hand it on to the data check).
 */
static void check_inode(struct fsck *f, ezfs_inode *ino,
			const struct ezfs_stat *st, const char *path)
{
	struct ezfs_fsck_result *r = f->res;
	uint64_t *counter = &r->specials;

	check_xattrs(f, ino, st->nid, path);
	if (st->mtime_nsec >= 1000000000u)
		problem(f, st->nid, path, "mtime nanoseconds %u out of range",
			st->mtime_nsec);
	switch (st->mode & S_IFMT) {
	case S_IFDIR:
		counter = &r->dirs;
		check_extents(f, ino, st->nid, st->size, path);
		break;
	case S_IFREG:
		counter = &r->files;
		break;
	case S_IFLNK: {
		/* a corrupt size must not become a giant allocation */
		char *buf = st->size <= FSCK_SYMLINK_MAX ? malloc(st->size + 1)
							 : NULL;
		ssize_t n;

		counter = &r->symlinks;
		if (st->size > FSCK_SYMLINK_MAX) {
			problem(f, st->nid, path,
				"symlink target of %" PRIu64
				" bytes (at most %d)",
				st->size, FSCK_SYMLINK_MAX);
			break;
		}
		n = buf ? ezfs_readlink(ino, buf, st->size + 1) : -ENOMEM;
		if (n < 0)
			problem(f, st->nid, path, "symlink target: %s",
				err_str((int)n));
		else if ((uint64_t)n != st->size)
			problem(f, st->nid, path,
				"symlink target has %zd bytes, "
				"inode size %" PRIu64,
				n, st->size);
		else if (!n)
			problem(f, st->nid, path, "empty symlink target");
		else if (n > FSCK_SYMLINK_MAX)
			problem(f, st->nid, path,
				"symlink target of %zd bytes "
				"(at most %d)",
				n, FSCK_SYMLINK_MAX);
		else if (memchr(buf, '\0', n))
			problem(f, st->nid, path,
				"symlink target contains a "
				"NUL byte");
		free(buf);
		break;
	}
	case S_IFCHR:
	case S_IFBLK:
	case S_IFIFO:
	case S_IFSOCK:
		break;
	default:
		problem(f, st->nid, path, "unknown file type in mode 0%o",
			st->mode);
		break;
	}
	pthread_mutex_lock(&f->lock);
	(*counter)++;
	pthread_mutex_unlock(&f->lock);
	progress(f, 1, 0);
	if (S_ISREG(st->mode) && !f->p->skip_data) {
		submit_data(f, ino, st->nid, st->size, path);
		return;
	}
	if (S_ISREG(st->mode))
		check_extents(f, ino, st->nid, st->size, path);
	ezfs_inode_put(ino);
}

/* ---- directories ---- */

static int name_cmp(const struct ezfs_dirent *a, const struct ezfs_dirent *b)
{
	size_t n = a->namelen < b->namelen ? a->namelen : b->namelen;
	int c = memcmp(a->name, b->name, n);

	if (c)
		return c;
	return a->namelen < b->namelen ? -1 : a->namelen > b->namelen;
}

static char *join(const char *dir, const char *name, size_t namelen)
{
	size_t a = strlen(dir);
	char *p = malloc(a + namelen + 2);

	if (!p)
		return NULL;
	memcpy(p, dir, a);
	if (!a || dir[a - 1] != '/')
		p[a++] = '/';
	memcpy(p + a, name, namelen);
	p[a + namelen] = '\0';
	return p;
}

static int push_dir(struct fsck *f, uint64_t nid, uint64_t parent, char *path)
{
	struct pending d = { nid, parent, path };

	return ezi_vec_push(&f->stack, d);
}

/* One entry of directory dnid (not "." or ".."). Returns 1 if it is a
 * directory, 0 otherwise, -1 if it could not be checked. */
static int check_entry(struct fsck *f, uint64_t dnid,
		       const struct ezfs_dirent *e, char *cpath)
{
	struct ezfs_stat st;
	ezfs_inode *ino;
	struct node *nd;
	int ret, added;

	ret = ezfs_inode_get(f->img, e->nid, &ino);
	if (ret < 0) {
		problem(f, e->nid, cpath, "inode: %s", err_str(ret));
		free(cpath);
		return -1;
	}
	ezfs_inode_stat(ino, &st);
	if (e->ftype != ezfs_mode_ftype(st.mode))
		problem(f, e->nid, cpath,
			"directory entry file type %u does not "
			"match inode mode 0%o",
			e->ftype, st.mode);
	nd = node_get(f, e->nid, &added);
	if (!nd) {
		problem(f, e->nid, cpath, "%s", err_str(-ENOMEM));
		ezfs_inode_put(ino);
		free(cpath);
		return -1;
	}
	if (!added) {
		if (nd->isdir || S_ISDIR(st.mode)) {
			char q[512];

			problem(f, e->nid, cpath,
				"directory reached twice "
				"(first at %s): loop or hard-linked directory",
				nd->path
					? ezfs_quote(nd->path, strlen(nd->path),
						     q, sizeof(q))
					: "?");
			ezfs_inode_put(ino);
			free(cpath);
			return S_ISDIR(st.mode);
		}
		if (++nd->refs > nd->nlink && !nd->path)
			nd->path = cpath; /* report it at the end */
		else
			free(cpath);
		ezfs_inode_put(ino);
		return 0;
	}
	nd->isdir = S_ISDIR(st.mode);
	nd->nlink = st.nlink;
	nd->refs = 1;
	if (nd->isdir) {
		nd->path = strdup(cpath);
		check_inode(f, ino, &st, cpath);
		if (push_dir(f, e->nid, dnid, cpath) < 0) {
			problem(f, e->nid, cpath, "%s", err_str(-ENOMEM));
			free(cpath);
		}
		return 1;
	}
	if (st.nlink > 1)
		nd->path = strdup(cpath);
	check_inode(f, ino, &st, cpath);
	free(cpath);
	return 0;
}

static void scan_dir(struct fsck *f, struct pending *d)
{
	struct ezfs_dirent *ents;
	const struct ezfs_dirent *prev = NULL;
	char q1[400], q2[400];
	int ret, bad = 0, dot = 0, dotdot = 0;
	uint64_t subdirs = 0, nid;
	struct ezfs_stat st;
	ezfs_inode *dir;
	unsigned ft;
	size_t i, nents;

	ret = ezfs_inode_get(f->img, d->nid, &dir);
	if (ret < 0) {
		problem(f, d->nid, d->path, "inode: %s", err_str(ret));
		return;
	}
	ezfs_inode_stat(dir, &st);
	ret = ezfs_readdir_all(dir, &ents, &nents);
	if (ret < 0) {
		problem(f, d->nid, d->path, "reading the directory: %s",
			err_str(ret));
		bad = 1;
	}
	for (i = 0; i < nents; i++) {
		const struct ezfs_dirent *e = &ents[i];
		int isdot = e->namelen == 1 && e->name[0] == '.';
		int isdotdot = e->namelen == 2 && !memcmp(e->name, "..", 2);
		char *cpath;

		if (!e->namelen || e->namelen > FSCK_NAME_MAX ||
		    memchr(e->name, '/', e->namelen) ||
		    memchr(e->name, '\0', e->namelen)) {
			problem(f, d->nid, d->path,
				"invalid entry name '%s' "
				"(nid %" PRIu64 ")",
				ezfs_quote(e->name, e->namelen, q1, sizeof(q1)),
				e->nid);
			bad = 1;
			continue;
		}
		/* a dot-omitted directory's "." is synthesised up front */
		if (!(isdot && i == 0)) {
			if (prev && name_cmp(prev, e) >= 0) {
				problem(f, d->nid, d->path,
					"entry '%s' not "
					"after '%s': names not strictly sorted",
					ezfs_quote(e->name, e->namelen, q1,
						   sizeof(q1)),
					ezfs_quote(prev->name, prev->namelen,
						   q2, sizeof(q2)));
				bad = 1;
			}
			prev = e;
		}
		if ((isdot && dot) || (isdotdot && dotdot)) {
			problem(f, d->nid, d->path,
				"duplicate '%s' entry "
				"(nid %" PRIu64 ")",
				e->name, e->nid);
			bad = 1;
			continue;
		}
		if (isdot) {
			dot++;
			if (e->nid != d->nid) {
				problem(f, d->nid, d->path,
					"'.' points to nid %" PRIu64, e->nid);
				bad = 1;
			}
			continue;
		}
		if (isdotdot) {
			dotdot++;
			if (e->nid != d->parent) {
				problem(f, d->nid, d->path,
					"'..' points to nid %" PRIu64
					", parent is %" PRIu64,
					e->nid, d->parent);
				bad = 1;
			}
			continue;
		}
		if (!bad) {
			ret = ezfs_lookup(dir, e->name, e->namelen, &nid, &ft);
			if (ret < 0 || nid != e->nid) {
				problem(f, d->nid, d->path,
					"lookup of '%s': %s",
					ezfs_quote(e->name, e->namelen, q1,
						   sizeof(q1)),
					ret < 0 ? err_str(ret)
						: "finds another nid");
				bad = 1;
			}
		}
		cpath = join(d->path, e->name, e->namelen);
		if (!cpath) {
			problem(f, e->nid, d->path, "%s", err_str(-ENOMEM));
			bad = 1;
			continue;
		}
		ret = check_entry(f, d->nid, e, cpath);
		if (ret < 0)
			bad = 1;
		else
			subdirs += ret;
	}
	if (!dot) {
		problem(f, d->nid, d->path, "no '.' entry");
		bad = 1;
	}
	if (!dotdot) {
		problem(f, d->nid, d->path, "no '..' entry");
		bad = 1;
	}
	/* erofs-utils writes 2 + subdirectories (1 if that overflows) */
	if (!bad && st.nlink != 2 + subdirs &&
	    !(st.nlink == 1 && 2 + subdirs > 65535))
		problem(f, d->nid, d->path,
			"nlink %u, expected %" PRIu64 " (2 + %" PRIu64
			" subdirectories)",
			st.nlink, 2 + subdirs, subdirs);
	ezfs_dirents_free(ents, nents);
	ezfs_inode_put(dir);
}

static void check_links(struct fsck *f)
{
	size_t i;

	for (i = 0; i < f->nodes.n; i++) {
		struct node *n = &f->nodes.v[i];

		if (n->isdir || n->refs == n->nlink)
			continue;
		problem(f, n->nid, n->path,
			"nlink %u, but %u directory "
			"entries refer to it",
			n->nlink, n->refs);
	}
}

static void start_threads(struct fsck *f, unsigned n)
{
	if (n <= 1)
		return;
	/* bounded: the walk waits for the checks (memory) */
	f->pool = ezi_pool_new(n, n * 8 + 16, NULL);
	f->nthreads = ezi_pool_threads(f->pool);
}

/* Run every data check queued, then join the workers. */
static void stop_threads(struct fsck *f)
{
	if (f->pool) {
		ezi_pool_wait(f->pool);
		ezi_pool_destroy(f->pool);
		f->pool = NULL;
	}
}

void ezfs_fsck_params_init(struct ezfs_fsck_params *p)
{
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
}

int ezfs_fsck(ezfs_image *img, const struct ezfs_fsck_params *p,
	      struct ezfs_fsck_result *res)
{
	struct ezfs_fsck_params given;
	struct ezfs_fsck_result local;
	struct ezfs_stat st;
	struct fsck f;
	ezfs_inode *root;
	struct node *nd;
	uint64_t rnid;
	int ret, added;
	size_t i;

	if (!img)
		return -EINVAL;
	ezfs_fsck_params_init(&given);
	if (p) {
		/* an older caller's struct is a prefix of ours */
		if (!p->size || p->size > sizeof(given))
			return -EINVAL;
		memcpy(&given, p, p->size);
	}
	if (!res)
		res = &local;
	memset(res, 0, sizeof(*res));
	memset(&f, 0, sizeof(f));
	f.img = img;
	f.p = &given;
	f.res = res;
	ezfs_get_sb_info(img, &f.si);
	pthread_mutex_init(&f.lock, NULL);

	rnid = ezfs_root_nid(img);
	ret = ezfs_inode_get(img, rnid, &root);
	if (ret < 0) {
		problem(&f, rnid, "/", "root inode: %s", err_str(ret));
		goto out;
	}
	ezfs_inode_stat(root, &st);
	if (given.inode_digests &&
	    (given.skip_data ||
	     ezfs_inode_digest(root, NULL, 0) == -EOPNOTSUPP)) {
		ezfs_inode_put(root);
		ret = given.skip_data ? -EINVAL : -ENODATA;
		goto out;
	}
	if (!S_ISDIR(st.mode)) {
		problem(&f, rnid, "/", "root is not a directory (mode 0%o)",
			st.mode);
		ezfs_inode_put(root);
		goto out;
	}
	if (!f.p->skip_data)
		start_threads(&f, f.p->threads);
	nd = node_get(&f, rnid, &added);
	if (!nd || push_dir(&f, rnid, rnid, strdup("/")) < 0 ||
	    !f.stack.v[0].path) {
		ezfs_inode_put(root);
		ret = -ENOMEM;
		goto stop;
	}
	nd->isdir = 1;
	nd->nlink = st.nlink;
	nd->refs = 1;
	nd->path = strdup("/");
	check_inode(&f, root, &st, "/");

	/* depth first over the pending directories */
	while (f.stack.n) {
		struct pending d = f.stack.v[--f.stack.n];

		scan_dir(&f, &d);
		free(d.path);
	}
	ret = 0;
stop:
	stop_threads(&f);
	if (!ret)
		check_links(&f);
out:
	if (f.p->progress)
		f.p->progress(f.p->arg, res->inodes, res->data_bytes);
	for (i = 0; i < f.stack.n; i++)
		free(f.stack.v[i].path);
	ezi_vec_free(&f.stack);
	for (i = 0; i < f.nodes.n; i++)
		free(f.nodes.v[i].path);
	ezi_vec_free(&f.nodes);
	ezi_hash_free(&f.nidx);
	pthread_mutex_destroy(&f.lock);
	if (ret < 0)
		return ret;
	return res->problems ? -EUCLEAN : 0;
}
