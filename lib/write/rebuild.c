/* SPDX-License-Identifier: MIT */
/*
 * rebuild.c - rebuild mode (mkfs.erofs IMAGE LAYER...): a metadata image
 * merged from EROFS layer images with overlayfs' rules, every file's data
 * a list of chunk indexes into its layer, which becomes an extra device.
 *
 * The layers are read through the public read API. They are merged from
 * the last (the uppermost) down: a name an upper layer holds hides the
 * lower ones, except that two directories merge, unless the upper one is
 * opaque (trusted.overlay.opaque=y) or a layer between them holds a
 * non-directory of that name (a whiteout, a 0/0 character device, is one:
 * it stays in the tree, hiding what lies below, until --ovlfs-strip drops
 * it with the overlay xattrs in ezi_bld_tree_fixup).
 *
 * Device k is layer k (command-line order) read whole: a chunk index
 * names device k and the block in that file, the one a flat read of the
 * layer gives (for a tar index with its tar appended, the block of the
 * appended tar). Compressed files and inline tails cannot be referenced
 * from another image and are refused.
 *
 * An incremental build (--incremental=data) merges one image the same way
 * under a scanned tree (directory or tar), but copies each file's data
 * into a temporary file the data stage reads, so that the new image holds
 * it all and the old one can be replaced.
 */
#define _GNU_SOURCE /* asprintf */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "write/internal.h"
#include "format/erofs_fs.h"
#include "util/hash.h"

/* One entry of a merged directory, for the name lookups of the merge. */
struct rent {
	struct binode *dir;
	const char *name; /* the dentry's own copy */
	struct binode *in;
	bool stop; /* a directory nothing below may merge into */
};

struct rlayer {
	const char *path;
	ezfs_image *img;
	unsigned dev;	    /* 1-based device slot */
	struct ezi_hash hl; /* nid -> binode: hard links of this layer */
};

struct rctx {
	struct ezfs_builder *b;
	struct ezi_hash ents; /* hash(dir, name) -> struct rent */
	struct rent **all;    /* every rent, to free */
	size_t nall, capall;
	char line[512];	   /* the read API's first error line at open */
	const char *first; /* the first layer: its block size is the image's */
	bool copy;	   /* incremental: file data copied, not referenced */
	uint64_t olddata;  /* incremental: bytes in b->olddatafd */
};

static uint64_t ent_key(const struct binode *dir, const char *name)
{
	uint64_t h = (uint64_t)(uintptr_t)dir * 0x9E3779B97F4A7C15ull;

	while (*name)
		h = (h ^ (uint8_t)*name++) * 0x100000001B3ull;
	return h;
}

static struct rent *ent_find(const struct rctx *c, const struct binode *dir,
			     const char *name)
{
	uint64_t key = ent_key(dir, name);
	struct rent *e;
	size_t pos = 0;

	while ((e = ezi_hash_next(&c->ents, key, &pos)))
		if (e->dir == dir && !strcmp(e->name, name))
			return e;
	return NULL;
}

/* Track dir's entry name (its own copy) -> in in the lookup table. */
static int ent_track(struct rctx *c, struct binode *dir, const char *name,
		     struct binode *in, struct rent **out)
{
	struct rent *e;
	int err;

	if (c->nall == c->capall) {
		size_t cap = c->capall ? c->capall * 2 : 256;
		struct rent **n = realloc(c->all, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		c->all = n;
		c->capall = cap;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->dir = dir;
	e->name = name;
	e->in = in;
	c->all[c->nall++] = e;
	err = ezi_hash_add(&c->ents, ent_key(dir, e->name), e);
	if (!err && out)
		*out = e;
	return err;
}

/* Add an entry name -> in to dir, and to the lookup table. */
static int ent_add(struct rctx *c, struct binode *dir, const char *name,
		   struct binode *in, struct rent **out)
{
	int err = ezi_bld_add_dentry(dir, name, in);

	if (err)
		return err;
	return ent_track(c, dir, dir->dents[dir->ndents - 1].name, in, out);
}

/* The read API's first error line while a layer is opened. */
static void open_log(void *arg, int level, const char *msg)
{
	struct rctx *c = arg;

	if (level == EZFS_LOG_ERROR && !c->line[0])
		snprintf(c->line, sizeof(c->line), "%s", msg);
}

static bool is_whiteout(const struct ezfs_stat *st)
{
	return S_ISCHR(st->mode) && !st->rdev_major && !st->rdev_minor;
}

static bool is_opaque(ezfs_inode *ino)
{
	char v[2];

	return ezfs_getxattr(ino, "trusted.overlay.opaque", v, sizeof(v)) ==
		       1 &&
	       v[0] == 'y';
}

static int layer_err(struct rctx *c, const struct rlayer *L, const char *path,
		     int err, const char *what)
{
	ezi_bld_log(c->b, EZFS_LOG_ERROR, "%s: %s: %s", L->path, path,
		    what ? what : ezfs_strerror(err));
	return err;
}

/* Copy the xattrs of ino to in. */
static int copy_xattrs(struct rctx *c, const struct rlayer *L, ezfs_inode *ino,
		       struct binode *in, const char *path)
{
	ssize_t n = ezfs_listxattr(ino, NULL, 0), k;
	char *names;
	uint8_t *val = NULL;
	int err = 0;

	if (n <= 0 || c->b->p.xattr_tolerance < 0)
		return n < 0 ? layer_err(c, L, path, (int)n, NULL) : 0;
	names = malloc((size_t)n);
	if (!names)
		return -ENOMEM;
	n = ezfs_listxattr(ino, names, (size_t)n);
	if (n < 0)
		err = layer_err(c, L, path, (int)n, NULL);
	val = malloc(0x10000);
	if (!val)
		err = -ENOMEM;
	for (k = 0; !err && k < n; k += (ssize_t)strlen(names + k) + 1) {
		ssize_t v = ezfs_getxattr(ino, names + k, val, 0x10000);

		if (v < 0)
			err = layer_err(c, L, path, (int)v, NULL);
		else
			err = ezi_bld_xattr_add(c->b, in, names + k, val,
						(size_t)v);
	}
	free(val);
	free(names);
	if (!err)
		ezi_bld_xattrs_sort(in);
	return err;
}

/* A stretch of a file: its blocks at blk of the layer, or a hole */
struct run {
	uint64_t la, len, blk; /* blk UINT64_MAX: a hole */
};

/*
 * The file's data as chunk indexes into device L->dev: the extents of
 * the layer's file (flat plain or chunk-based, block aligned), adjacent
 * ones joined, cut into chunks of the largest power of two that every
 * extent start allows (one chunk for a contiguous file).
 */
static int map_file(struct rctx *c, const struct rlayer *L, ezfs_inode *ino,
		    struct binode *in, const char *path)
{
	struct ezfs_builder *b = c->b;
	unsigned bits = b->blkszbits, cbits, maxbits;
	const unsigned bad = EZFS_EXTENT_INLINE | EZFS_EXTENT_FRAGMENT |
			     EZFS_EXTENT_ENCODED | EZFS_EXTENT_META;
	struct run *r = NULL;
	size_t nr = 0, cap = 0, i;
	uint64_t la = 0, n, k, top = 0;
	bool wide = false;
	int err = 0;

	while (la < in->size) {
		struct ezfs_extent e;
		uint64_t blk = UINT64_MAX, end;

		err = ezfs_map(ino, la, &e);
		if (err)
			break;
		if (e.flags & bad) {
			err = layer_err(
				c, L, path, -EOPNOTSUPP,
				e.flags & EZFS_EXTENT_INLINE
					? "inline data cannot be referenced "
					  "from another image (make the layer "
					  "with -E noinline_data)"
					: "compressed data cannot be "
					  "referenced from another image");
			goto out;
		}
		end = e.la + e.llen;
		if (e.la > la || end <= la || (la & (b->blksz - 1))) {
			err = layer_err(c, L, path, -EUCLEAN,
					"extents not block aligned");
			goto out;
		}
		if (end > in->size)
			end = in->size;
		if (e.flags & EZFS_EXTENT_MAPPED) {
			unsigned dev;
			uint64_t off;

			ezfs_addr_device(L->img, e.pa + (la - e.la), &dev,
					 &off);
			if (off & (b->blksz - 1)) {
				err = layer_err(c, L, path, -EUCLEAN,
						"data not block aligned");
				goto out;
			}
			blk = off >> bits;
		}
		if (nr && ((blk == UINT64_MAX && r[nr - 1].blk == UINT64_MAX) ||
			   (blk != UINT64_MAX && r[nr - 1].blk != UINT64_MAX &&
			    r[nr - 1].blk + (r[nr - 1].len >> bits) == blk))) {
			r[nr - 1].len += end - la;
		} else {
			if (nr == cap) {
				struct run *nrn;

				cap = cap ? cap * 2 : 8;
				nrn = realloc(r, cap * sizeof(*r));
				if (!nrn) {
					err = -ENOMEM;
					goto out;
				}
				r = nrn;
			}
			r[nr++] = (struct run){ la, end - la, blk };
		}
		la = end;
	}
	if (err) {
		layer_err(c, L, path, err, NULL);
		goto out;
	}
	maxbits = bits + EROFS_CHUNK_FORMAT_BLKBITS_MASK;
	for (cbits = bits; cbits < maxbits && (1ull << cbits) < in->size;)
		cbits++;
	for (i = 1; i < nr; i++)
		while ((r[i].la & ((1ull << cbits) - 1)) && cbits > bits)
			cbits--;
	n = (in->size + (1ull << cbits) - 1) >> cbits;
	if (n > 0x1FFFFFF) { /* the unit would not fit any inode slot */
		err = layer_err(c, L, path, -EFBIG, "too many chunks");
		goto out;
	}
	in->chunkidx_len = (uint32_t)(n * 8);
	in->chunkidx = calloc(1, in->chunkidx_len);
	if (!in->chunkidx) {
		err = -ENOMEM;
		goto out;
	}
	for (k = 0, i = 0; k < n; k++) {
		uint64_t at = k << cbits;

		while (i + 1 < nr && r[i + 1].la <= at)
			i++;
		if (r[i].blk == UINT64_MAX)
			continue;
		at = r[i].blk + ((at - r[i].la) >> bits);
		if (at > top)
			top = at;
	}
	/* EROFS_NULL_ADDR32 (a hole) is no address: 48 bits from it on */
	wide = top >= EROFS_NULL_ADDR32;
	if (top >= EROFS_NULL_ADDR48) {
		err = layer_err(c, L, path, -EFBIG,
				"block address beyond 48 bits");
		goto out;
	}
	for (k = 0, i = 0; k < n; k++) {
		uint8_t *x = in->chunkidx + k * 8;
		uint64_t at = k << cbits, addr;

		while (i + 1 < nr && r[i + 1].la <= at)
			i++;
		if (r[i].blk == UINT64_MAX) {
			put_le16(x, wide ? 0xFFFF : 0);
			put_le32(x + 4, EROFS_NULL_ADDR32);
			continue;
		}
		addr = r[i].blk + ((at - r[i].la) >> bits);
		put_le16(x, (uint16_t)(addr >> 32));
		put_le16(x + 2, (uint16_t)L->dev);
		put_le32(x + 4, (uint32_t)addr);
	}
	if (wide)
		b->p.flags |= EZFS_BUILD_48BIT;
	in->datalayout = EROFS_INODE_CHUNK_BASED;
	in->chunkfmt = (uint16_t)((cbits - bits) | EROFS_CHUNK_FORMAT_INDEXES |
				  (wide ? EROFS_CHUNK_FORMAT_48BIT : 0));
	in->nblocks = 0;
	in->tail_len = 0;
	b->chunked = true;
out:
	free(r);
	return err;
}

/* Incremental: the file's bytes appended to b->olddatafd, where the data
 * stage reads them (io/datasrc.c). */
static int copy_file(struct rctx *c, const struct rlayer *L, ezfs_inode *ino,
		     struct binode *in, const char *path)
{
	struct ezfs_builder *b = c->b;
	size_t bufsz = 1u << 20;
	uint8_t *buf = malloc(bufsz);
	uint64_t off = 0;
	int err = 0;

	if (!buf)
		return -ENOMEM;
	if (b->olddatafd < 0) {
		b->olddatafd = ezi_bld_tmpfd(b);
		if (b->olddatafd < 0) {
			free(buf);
			return b->olddatafd;
		}
	}
	while (!err && off < in->size) {
		ssize_t n = ezfs_pread(ino, buf, bufsz, off), w = 0;

		if (n <= 0) {
			err = layer_err(c, L, path, n ? (int)n : -EIO,
					n ? NULL : "the file ends early");
			break;
		}
		while (!err && w < n) {
			ssize_t k =
				pwrite(b->olddatafd, buf + w, (size_t)(n - w),
				       (off_t)(c->olddata + off + w));

			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0) {
				err = -errno;
				ezi_bld_log(b, EZFS_LOG_ERROR,
					    "%s: %s: copying its data to a "
					    "temporary file: %s",
					    L->path, path, strerror(errno));
				break;
			}
			w += k;
		}
		off += (uint64_t)n;
	}
	free(buf);
	if (err)
		return err;
	in->olddata = true;
	in->dataoff = c->olddata;
	c->olddata += in->size;
	return 0;
}

/* A new inode of the merged tree from the layer's inode ino. */
static int new_node(struct rctx *c, struct rlayer *L, ezfs_inode *ino,
		    const struct ezfs_stat *es, const char *path,
		    struct binode **out)
{
	struct ezfs_builder *b = c->b;
	struct binode *in = calloc(1, sizeof(*in));
	struct stat st;
	int err;

	*out = NULL;
	if (!in)
		return -ENOMEM;
	if (asprintf(&in->srcpath, "%s:%s", L->path, path) < 0) {
		free(in);
		return -ENOMEM;
	}
	err = ezi_bld_add_inode(b, in);
	if (err) {
		ezi_bld_inode_free(in);
		return err;
	}
	memset(&st, 0, sizeof(st));
	st.st_mode = es->mode;
	st.st_uid = es->uid;
	st.st_gid = es->gid;
	st.st_mtim.tv_sec = es->mtime;
	st.st_mtim.tv_nsec = es->mtime_nsec;
	st.st_dev = L->dev;
	st.st_ino = es->nid;
	ezi_bld_inode_meta(b, in, &st);
	in->nlink = 0; /* counted as entries name it */
	if (S_ISREG(es->mode)) {
		in->size = es->size;
		b->st.files++;
		if (in->size)
			err = c->copy ? copy_file(c, L, ino, in, path)
				      : map_file(c, L, ino, in, path);
	} else if (S_ISLNK(es->mode)) {
		char buf[EZFS_SYMLINK_MAX + 1];
		ssize_t n = ezfs_readlink(ino, buf, sizeof(buf));

		if (n < 0)
			return layer_err(c, L, path, (int)n, NULL);
		in->symlink = strdup(buf);
		if (!in->symlink)
			return -ENOMEM;
		in->size = (uint64_t)n;
		b->st.symlinks++;
	} else if (S_ISDIR(es->mode)) {
		b->st.dirs++;
	} else {
		if (S_ISCHR(es->mode) || S_ISBLK(es->mode))
			in->rdev = erofs_new_encode_dev(es->rdev_major,
							es->rdev_minor);
		b->st.specials++;
	}
	if (!err)
		err = copy_xattrs(c, L, ino, in, path);
	*out = in;
	return err;
}

static int merge_dir(struct rctx *c, struct rlayer *L, ezfs_inode *ldir,
		     struct binode *mdir, const char *dpath);

/* One entry of a layer's directory into the merged directory mdir. */
static int merge_ent(struct rctx *c, struct rlayer *L, struct binode *mdir,
		     const struct ezfs_dirent *de, const char *path)
{
	struct ezfs_builder *b = c->b;
	struct rent *e = ent_find(c, mdir, de->name);
	struct ezfs_stat es;
	ezfs_inode *ino;
	struct binode *in = NULL;
	int err;

	/* an upper non-directory, or a directory closed below, hides it */
	if (e && (!S_ISDIR(e->in->mode) || e->stop))
		return 0;
	err = ezfs_inode_get(L->img, de->nid, &ino);
	if (err)
		return layer_err(c, L, path, err, NULL);
	ezfs_inode_stat(ino, &es);
	if (e) {
		/* an upper directory: a lower directory merges into it, a
		 * lower non-directory ends the merge (as in overlayfs) */
		if (!S_ISDIR(es.mode)) {
			e->stop = true;
		} else {
			err = merge_dir(c, L, ino, e->in, path);
			if (is_opaque(ino))
				e->stop = true;
		}
		ezfs_inode_put(ino);
		return err;
	}
	if (!S_ISDIR(es.mode) && es.nlink > 1 && !b->p.hard_dereference)
		in = ezi_hash_get(&L->hl, de->nid);
	if (in) {
		b->st.hardlinks++;
	} else {
		err = new_node(c, L, ino, &es, path, &in);
		if (!err && !S_ISDIR(es.mode) && es.nlink > 1 &&
		    !b->p.hard_dereference)
			err = ezi_hash_add(&L->hl, de->nid, in);
	}
	if (!err)
		err = ent_add(c, mdir, de->name, in, &e);
	if (!err) {
		in->nlink++;
		if (S_ISDIR(in->mode)) {
			in->parent = mdir;
			e->stop = is_opaque(ino) || is_whiteout(&es);
			err = merge_dir(c, L, ino, in, path);
		}
	}
	ezfs_inode_put(ino);
	return err;
}

static int merge_dir(struct rctx *c, struct rlayer *L, ezfs_inode *ldir,
		     struct binode *mdir, const char *dpath)
{
	struct ezfs_dirent *v = NULL;
	size_t n = 0, i, dl = strlen(dpath);
	char *path = NULL;
	int err;

	err = ezfs_readdir_all(ldir, &v, &n);
	if (err) {
		layer_err(c, L, *dpath ? dpath : "/", err, NULL);
		goto out;
	}
	for (i = 0; i < n && !err; i++) {
		const struct ezfs_dirent *de = &v[i];

		if (!strcmp(de->name, ".") || !strcmp(de->name, ".."))
			continue;
		if (de->namelen != strlen(de->name) ||
		    de->namelen > EROFS_NAME_LEN) {
			err = layer_err(c, L, dpath, -EUCLEAN, "a bad name");
			break;
		}
		free(path);
		path = malloc(dl + de->namelen + 2);
		if (!path) {
			err = -ENOMEM;
			break;
		}
		sprintf(path, "%s/%s", dpath, de->name);
		if (ezi_bld_excluded(c->b, path + 1))
			continue;
		err = merge_ent(c, L, mdir, de, path);
	}
out:
	free(path);
	ezfs_dirents_free(v, n);
	return err;
}

static int cmp_dent(const void *a, const void *b)
{
	return strcmp(((const struct bdentry *)a)->name,
		      ((const struct bdentry *)b)->name);
}

/* b->inodes in breadth-first order of the sorted tree, as a scan makes
 * it; directories' nlink 2 + subdirectories. */
static int order_bfs(struct ezfs_builder *b)
{
	struct binode **q = malloc(b->ninodes * sizeof(*q));
	struct ezi_hash seen = EZI_HASH_INIT;
	size_t n = 1, i;
	unsigned k;
	int err = 0;

	if (!q)
		return -ENOMEM;
	q[0] = b->inodes[0];
	for (i = 0; i < n && !err; i++) {
		struct binode *d = q[i];

		if (!S_ISDIR(d->mode))
			continue;
		/* an empty directory has no entries array (qsort: non-null) */
		if (d->ndents)
			qsort(d->dents, d->ndents, sizeof(*d->dents), cmp_dent);
		d->nlink = 2;
		for (k = 0; k < d->ndents && !err; k++) {
			struct binode *in = d->dents[k].inode;

			if (!strcmp(d->dents[k].name, ".") ||
			    !strcmp(d->dents[k].name, ".."))
				continue; /* an incremental scan's */
			if (S_ISDIR(in->mode))
				d->nlink++;
			if (in->nlink > 1 && !S_ISDIR(in->mode)) {
				if (ezi_hash_get(&seen, (uintptr_t)in))
					continue;
				err = ezi_hash_add(&seen, (uintptr_t)in, in);
			}
			if (n < b->ninodes)
				q[n++] = in;
		}
	}
	ezi_hash_free(&seen);
	if (!err && n != b->ninodes)
		err = -EUCLEAN;
	if (err) {
		free(q);
		return err;
	}
	free(b->inodes);
	b->inodes = q;
	b->capinodes = b->ninodes;
	return 0;
}

/* Tag of a layer's slot: its UUID in 32 hex digits (as mkfs.erofs) */
static void layer_tag(const struct ezfs_sb_info *si, char *tag)
{
	unsigned i;

	for (i = 0; i < 16; i++)
		sprintf(tag + 2 * i, "%02x", si->uuid[i]);
}

/* Open layer k; its block size must be the builder's. */
static int open_layer(struct rctx *c, struct rlayer *L)
{
	struct ezfs_builder *b = c->b;
	struct ezfs_open_params op;
	struct ezfs_sb_info si;
	struct bldev *d = &b->rdevs[L->dev - 1];
	unsigned j;
	int err;

	ezfs_open_params_init(&op);
	op.log = open_log;
	op.log_arg = c;
	c->line[0] = '\0';
	err = ezfs_image_open(L->path, &op, &L->img);
	if (err == -ENODEV) /* a device slot the file does not hold */
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "%s: its extra device does not follow it in the "
			    "file (a tar index: append its tar)",
			    L->path);
	else if (err)
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s", L->path,
			    c->line[0] ? c->line : ezfs_strerror(err));
	if (err)
		return err;
	ezfs_get_sb_info(L->img, &si);
	if (L->dev == 1) {
		b->blksz = si.blksz;
		b->blkszbits = si.blkszbits;
	} else if (si.blksz != b->blksz) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "%s: block size %u, not %u as in %s", L->path,
			    si.blksz, b->blksz, c->first);
		return -EINVAL;
	}
	d->blocks = si.blocks;
	/* a tar index with its tar appended: the device is read flat */
	for (j = 1; j <= ezfs_device_count(L->img); j++) {
		struct ezfs_device dv;

		if (!ezfs_device_get(L->img, j, &dv) &&
		    dv.uniaddr + dv.blocks > d->blocks)
			d->blocks = dv.uniaddr + dv.blocks;
	}
	layer_tag(&si, d->tag);
	return 0;
}

int ezi_bld_scan_images(struct ezfs_builder *b, const char *const *layers,
			size_t n)
{
	struct rctx c = { .b = b, .ents = EZI_HASH_INIT, .first = layers[0] };
	struct rlayer *L;
	struct binode *root;
	size_t i, k;
	int err = 0;

	if (!n || n > 0xFFFE)
		return -EINVAL;
	L = calloc(n, sizeof(*L));
	b->rdevs = calloc(n, sizeof(*b->rdevs));
	if (!L || !b->rdevs) {
		free(L);
		return -ENOMEM;
	}
	b->nrdevs = (unsigned)n;
	for (i = 0; i < n && !err; i++) {
		L[i].path = layers[i];
		L[i].dev = (unsigned)i + 1;
		L[i].hl = (struct ezi_hash)EZI_HASH_INIT;
		err = open_layer(&c, &L[i]);
	}
	for (i = 0; i < n; i++)
		b->dev_blocks += b->rdevs[i].blocks;
	/* the uppermost layer first: what it holds hides the rest */
	for (k = n; k-- > 0 && !err;) {
		ezfs_inode *lroot;
		struct ezfs_stat es;

		err = ezfs_inode_get(L[k].img, ezfs_root_nid(L[k].img), &lroot);
		if (err) {
			layer_err(&c, &L[k], "/", err, NULL);
			break;
		}
		ezfs_inode_stat(lroot, &es);
		if (!S_ISDIR(es.mode)) {
			err = layer_err(&c, &L[k], "/", -ENOTDIR, NULL);
		} else if (!b->ninodes) {
			err = new_node(&c, &L[k], lroot, &es, "", &root);
			if (!err)
				root->parent = root;
		}
		if (!err)
			err = merge_dir(&c, &L[k], lroot, b->inodes[0], "");
		ezfs_inode_put(lroot);
	}
	for (i = 0; i < c.nall; i++)
		free(c.all[i]);
	free(c.all);
	ezi_hash_free(&c.ents);
	for (i = 0; i < n; i++) {
		ezi_hash_free(&L[i].hl);
		ezfs_image_close(L[i].img);
	}
	free(L);
	if (!err)
		err = order_bfs(b);
	if (!err) {
		/* the layers' names are what they are: no aufs renaming;
		 * --ovlfs-strip drops the whiteouts and overlay xattrs */
		int aufs = b->p.aufs;

		b->p.aufs = 0;
		err = ezi_bld_scan_finish(b);
		b->p.aufs = aufs;
	}
	return err;
}

/* trusted.overlay.opaque=y among a scanned directory's xattrs */
static bool bin_opaque(const struct binode *in)
{
	unsigned k;

	for (k = 0; k < in->nxattrs; k++)
		if (!strcmp(in->xattrs[k].name, "trusted.overlay.opaque") &&
		    in->xattrs[k].vlen == 1 && in->xattrs[k].value[0] == 'y')
			return true;
	return false;
}

/* Incremental: the scanned tree is the upper layer, the base image's the
 * lower one (with its data copied); then the new directories get "." and
 * "..", and the inodes their breadth-first order again. */
static int merge_base(struct rctx *c, struct rlayer *L)
{
	struct ezfs_builder *b = c->b;
	size_t n0 = b->ninodes, i;
	ezfs_inode *lroot;
	struct ezfs_stat es;
	unsigned k;
	int err = 0;

	for (i = 0; i < n0 && !err; i++) {
		struct binode *d = b->inodes[i];

		if (!S_ISDIR(d->mode))
			continue;
		for (k = 0; k < d->ndents && !err; k++) {
			struct bdentry *de = &d->dents[k];
			struct rent *e;

			if (!strcmp(de->name, ".") || !strcmp(de->name, ".."))
				continue;
			err = ent_track(c, d, de->name, de->inode, &e);
			if (!err && S_ISDIR(de->inode->mode))
				e->stop = bin_opaque(de->inode);
		}
	}
	if (!err)
		err = ezfs_inode_get(L->img, ezfs_root_nid(L->img), &lroot);
	if (err)
		return err == -ENOMEM ? err : layer_err(c, L, "/", err, NULL);
	ezfs_inode_stat(lroot, &es);
	if (!S_ISDIR(es.mode))
		err = layer_err(c, L, "/", -ENOTDIR, NULL);
	else if (!bin_opaque(b->inodes[0]))
		err = merge_dir(c, L, lroot, b->inodes[0], "");
	ezfs_inode_put(lroot);
	for (i = n0; i < b->ninodes && !err; i++) {
		struct binode *d = b->inodes[i];

		if (!S_ISDIR(d->mode))
			continue;
		err = ezi_bld_add_dots(b, d);
	}
	if (!err)
		err = order_bfs(b);
	b->st.inodes = b->ninodes;
	return err;
}

int ezi_bld_merge_base(struct ezfs_builder *b)
{
	struct rlayer L = { .path = b->p.incremental_base,
			    .hl = EZI_HASH_INIT };
	struct rctx c = { .b = b, .ents = EZI_HASH_INIT, .copy = true };
	struct ezfs_open_params op;
	struct ezfs_sb_info si;
	size_t i;
	int err;

	ezfs_open_params_init(&op);
	op.log = open_log;
	op.log_arg = &c;
	err = ezfs_image_open(L.path, &op, &L.img);
	if (err) {
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s", L.path,
			    c.line[0] ? c.line : ezfs_strerror(err));
		return err;
	}
	ezfs_get_sb_info(L.img, &si);
	if (si.blksz != b->blksz) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "%s: block size %u, not %u: an incremental build "
			    "keeps the image's",
			    L.path, si.blksz, b->blksz);
		err = -EINVAL;
	} else {
		if (!b->p.has_uuid)
			memcpy(b->uuid, si.uuid, sizeof(b->uuid));
		err = merge_base(&c, &L);
	}
	for (i = 0; i < c.nall; i++)
		free(c.all[i]);
	free(c.all);
	ezi_hash_free(&c.ents);
	ezi_hash_free(&L.hl);
	ezfs_image_close(L.img);
	return err;
}
