/* SPDX-License-Identifier: MIT */
/*
 * fragments.c - the decoded contents of the packed inode (9.10).
 *
 * Compression leaves each file's fragment (its tail, or the whole file) in
 * z->frag, which the worker moves to the spool file (spool/spool.c); a
 * file that is all one fragment is not read then, its source is
 * (z->fromsrc). Once
 * all files are compressed, the fragments are appended to
 * the packed inode in depth-first tree order: the files of a directory in
 * name order, then its subdirectories one after the other, each with all
 * of its subtree. Files of one subtree are alike (same language, same
 * headers), so neighbours in the packed stream compress better than in
 * the breadth-first inode order (mkfs.erofs 1.9.3 uses the same order).
 * A fragment equal to the end of an earlier one points into it instead
 * of being appended; a whole-file fragment that only ends like an earlier
 * one may keep just its head (fragnear.c). The order depends only on the
 * tree, never on the number of workers. Workers compress the packed
 * inode's segments as soon as they are complete (zsegs.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "write/internal.h"
#include "format/erofs_fs.h"
#include "util/hash.h"
#include "util/vec.h"

/* Fragment dedupe table (b->fragtab): identical tails share packed
 * bytes. The fragments placed, and their keys -> 1 + index (a multimap). */
struct fragent {
	uint64_t off, len;
};

struct fragtab {
	EZI_VEC(struct fragent) e;
	struct ezi_hash idx;
};

static void frag_table_free(struct ezfs_builder *b)
{
	struct fragtab *ft = b->fragtab;

	if (ft) {
		ezi_vec_free(&ft->e);
		ezi_hash_free(&ft->idx);
		free(ft);
	}
	b->fragtab = NULL;
}

#define FRAG_HASHLEN 64 /* bytes of a fragment's end that are hashed */

/* Key of a fragment of len bytes ending at end: CRC32C of its last
 * FRAG_HASHLEN bytes (or all). */
static uint32_t frag_key(const uint8_t *end, uint64_t len)
{
	uint64_t n = len < FRAG_HASHLEN ? len : FRAG_HASHLEN;

	return ezi_crc32c(0, end - n, (size_t)n) ^
	       (len < FRAG_HASHLEN ? (uint32_t)len : 0);
}

/*
 * What placing keeps while it runs: FRAG_BUF-sized buffers (a fragment's
 * end, the packed bytes it is compared with, the rest of a long one) and
 * the source of a whole-file fragment (z->fromsrc) being placed.
 */
#define FRAG_BUF (256u << 10) /* also fragnear.c's largest fragment */

struct fplace {
	uint8_t *fbuf, *pbuf, *sbuf; /* FRAG_BUF bytes each */
	struct bsrc src;	     /* the file placed, when z->fromsrc */
};

static void fplace_free(struct fplace *f)
{
	free(f->fbuf);
	free(f->pbuf);
	free(f->sbuf);
	f->fbuf = f->pbuf = f->sbuf = NULL;
}

void ezi_bld_packed_free(struct ezfs_builder *b)
{
	ezi_bld_zsegs_free(b);
	if (b->packed)
		munmap(b->packed, (size_t)b->packed_cap);
	b->packed = NULL;
	b->packed_cap = 0;
	ezi_bld_spool_free(b);
}

/* Append len bytes at p to the packed file. */
static int packed_put(struct ezfs_builder *b, const uint8_t *p, uint64_t len)
{
	int err;

	if (b->packed_len + len > b->packed_cap)
		return -EOVERFLOW; /* more than reserved */
	err = ezi_bld_packfile_write(b, p, (size_t)len, b->packed_len);
	if (err)
		return err;
	b->packed_len += len;
	ezi_bld_zsegs_feed(b, b->packed_len);
	return 0;
}

/*
 * n bytes of z's fragment from off: from the spool, or from the source
 * (z->fromsrc: the whole file, f->src open).
 */
static int frag_read(const struct ezfs_builder *b, struct fplace *f,
		     const struct binode *in, const struct bzfile *z,
		     uint8_t *buf, uint64_t n, uint64_t off)
{
	ssize_t got;

	if (!z->fromsrc)
		return ezi_bld_spool_read(b, buf, (size_t)n, z->spoff + off);
	got = ezi_bld_src_pread(&f->src, buf, (size_t)n, off);
	if ((uint64_t)got == n)
		return 0;
	ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s", in->srcpath,
		    got < 0 ? strerror((int)-got)
			    : "file shrank while building");
	return got < 0 ? (int)got : -EAGAIN;
}

/* Append z's fragment (its last min(len, FRAG_BUF) bytes in fbuf). */
static int packed_append(struct ezfs_builder *b, struct fplace *f,
			 const struct binode *in, const struct bzfile *z)
{
	uint64_t len = z->frag_len, done = 0;
	int err = 0;

	if (len <= FRAG_BUF)
		return packed_put(b, f->fbuf, len);
	while (!err && done < len) {
		uint64_t n = len - done < FRAG_BUF ? len - done : FRAG_BUF;

		err = frag_read(b, f, in, z, f->sbuf, n, done);
		if (err)
			return err;
		err = packed_put(b, f->sbuf, n);
		done += n;
	}
	return err;
}

/*
 * Length of the longest common end of the packed bytes [off, off + alen)
 * and f[0, flen) (flen <= FRAG_BUF: all of the fragment); -errno.
 */
static int64_t common_end(struct ezfs_builder *b, struct fplace *f,
			  uint64_t off, uint64_t alen, const uint8_t *e,
			  uint64_t flen)
{
	uint64_t n = alen < flen ? alen : flen, l = 0;
	const uint8_t *a = f->pbuf;
	int err;

	err = ezi_bld_packed_read(b, f->pbuf, (size_t)n, off + alen - n);
	if (err)
		return err;
	while (l < n && a[n - 1 - l] == e[flen - 1 - l])
		l++;
	return (int64_t)l;
}

/* Do the packed bytes at off equal z's fragment (its end in fbuf)? */
static int frag_equal(struct ezfs_builder *b, struct fplace *f,
		      const struct binode *in, const struct bzfile *z,
		      uint64_t off)
{
	uint64_t len = z->frag_len, n = len < FRAG_BUF ? len : FRAG_BUF;
	int err;

	err = ezi_bld_packed_read(b, f->pbuf, (size_t)n, off + len - n);
	if (err)
		return err;
	if (memcmp(f->pbuf, f->fbuf, (size_t)n))
		return 0;
	/* a long fragment: the rest, from its end backwards */
	while (len > n) {
		uint64_t k = len - n < FRAG_BUF ? len - n : FRAG_BUF;

		len -= n;
		n = k;
		err = ezi_bld_packed_read(b, f->pbuf, (size_t)n, off + len - n);
		if (!err)
			err = frag_read(b, f, in, z, f->sbuf, n, len - n);
		if (err)
			return err;
		if (memcmp(f->pbuf, f->sbuf, (size_t)n))
			return 0;
	}
	return 1;
}

/*
 * Put z's fragment into the packed inode, or point it at identical packed
 * bytes: the end of an earlier fragment with the same last bytes.
 */
static int place_bytes(struct ezfs_builder *b, struct fplace *f,
		       struct binode *in, struct bzfile *z)
{
	uint64_t len = z->frag_len, flen = len < FRAG_BUF ? len : FRAG_BUF;
	uint32_t crc, idx = z->idx_size;
	uint64_t best = 0, bend = 0;
	/*
	 * near-copies (fragnear.c): whole-file fragments up to 256 KiB (its
	 * estimates compress the file twice on this thread), 8 candidates
	 */
	unsigned near =
		z->wholefrag && len > b->blksz && len <= FRAG_BUF ? 8 : 0;
	struct fragtab *ft = b->fragtab;
	struct fragent *t, ne;
	size_t pos = 0;
	uintptr_t i;
	int err;

	/* the fragment's end (all of it up to FRAG_BUF) */
	err = frag_read(b, f, in, z, f->fbuf, flen, len - flen);
	if (err)
		return err;
	crc = frag_key(f->fbuf + flen, len);
	if (!ft) {
		ft = calloc(1, sizeof(*ft));
		if (!ft)
			return -ENOMEM;
		b->fragtab = ft;
	}
	while ((i = (uintptr_t)ezi_hash_next(&ft->idx, crc, &pos))) {
		uint64_t off;
		int64_t l;

		t = &ft->e.v[i - 1];
		if (near && t->len >= FRAG_HASHLEN) {
			/* the longest common end, for near-copies */
			near--;
			l = common_end(b, f, t->off, t->len, f->fbuf, len);
			if (l < 0)
				return (int)l;
			if ((uint64_t)l > best) {
				best = (uint64_t)l;
				bend = t->off + t->len;
			}
		}
		if (t->len < len || (len < FRAG_HASHLEN && t->len != len))
			continue;
		off = t->off + t->len - len;
		err = frag_equal(b, f, in, z, off);
		if (err < 0)
			return err;
		if (err) {
			z->fragoff = off;
			goto done;
		}
	}
	if (best >= b->blksz) {
		z->frag = f->fbuf; /* all of it (near: len <= FRAG_BUF) */
		err = ezi_bld_frag_near(b, in, z, bend, best);
		z->frag = NULL;
		if (err < 0)
			return err;
		if (err)
			goto done;
	}
	z->fragoff = b->packed_len;
	err = packed_append(b, f, in, z);
	if (err)
		return err;
	ne = (struct fragent){ z->fragoff, len };
	if (ezi_vec_push(&ft->e, ne))
		return -ENOMEM;
	if (ezi_hash_add(&ft->idx, crc, (void *)(uintptr_t)ft->e.n)) {
		ft->e.n--;
		return -ENOMEM;
	}
done:
	z->spooled = false;
	/* compact headers hold 32 bits of the offset (9.10) */
	if (z->compact && z->fragoff > 0xFFFFFFFFull) {
		z->compact = false;
		z->idx_size = ezi_bld_zindex_size(b, in, false);
		in->datalayout = EROFS_INODE_COMPRESSED_FULL;
		in->unit_size += z->idx_size - idx;
	}
	return 0;
}

/* place_bytes, with the source open while it reads a whole file */
static int place_frag(struct ezfs_builder *b, struct fplace *f,
		      struct binode *in, struct bzfile *z)
{
	int err;

	if (!z->fromsrc)
		return place_bytes(b, f, in, z);
	err = ezi_bld_src_open(b, in, &f->src);
	if (err)
		return err;
	err = place_bytes(b, f, in, z);
	if (!err)
		err = ezi_bld_src_check(b, in, &f->src);
	ezi_bld_src_close(&f->src);
	z->fromsrc = false;
	return err;
}

static bool is_dot(const struct bdentry *d)
{
	return d->name[0] == '.' &&
	       (d->namelen == 1 || (d->namelen == 2 && d->name[1] == '.'));
}

/* Call fn for each regular file in dir (skipping "." and ".."). */
static int walk_dir_files(struct ezfs_builder *b, const struct binode *dir,
			  bld_file_fn fn, void *arg)
{
	unsigned i;
	int err;

	for (i = 0; i < dir->ndents; i++) {
		struct binode *in = dir->dents[i].inode;

		if (is_dot(&dir->dents[i]) || !S_ISREG(in->mode))
			continue;
		err = fn(b, in, arg);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Call fn for every regular file in depth-first tree order (the files of
 * a directory in name order, then each subdirectory with its subtree),
 * then for all regular files in inode order (what the walk did not reach;
 * fn skips what it has seen, and hard links come more than once).
 */
int ezi_bld_files_dfs(struct ezfs_builder *b, bld_file_fn fn, void *arg)
{
	struct fstack {
		const struct binode *dir;
		unsigned next;
	} *st = NULL;
	size_t sp = 0, cap = 0, i;
	int err;

	if (!b->ninodes)
		return 0;
	/* an explicit stack: the tree may be deep */
	err = walk_dir_files(b, b->inodes[0], fn, arg);
	if (!err && S_ISDIR(b->inodes[0]->mode)) {
		st = malloc(16 * sizeof(*st));
		cap = 16;
		if (!st)
			err = -ENOMEM;
		else
			st[sp++] = (struct fstack){ b->inodes[0], 0 };
	}
	while (!err && sp) {
		struct fstack *top = &st[sp - 1];
		const struct binode *d = NULL;

		while (top->next < top->dir->ndents) {
			const struct bdentry *de =
				&top->dir->dents[top->next++];

			if (!is_dot(de) && S_ISDIR(de->inode->mode)) {
				d = de->inode;
				break;
			}
		}
		if (!d) {
			sp--;
			continue;
		}
		err = walk_dir_files(b, d, fn, arg);
		if (err)
			break;
		if (sp > b->ninodes)
			break; /* not a tree: the pass below takes the rest */
		if (sp == cap) {
			struct fstack *ns = realloc(st, 2 * cap * sizeof(*ns));

			if (!ns) {
				err = -ENOMEM;
				break;
			}
			st = ns;
			cap *= 2;
		}
		st[sp++] = (struct fstack){ d, 0 };
	}
	free(st);
	for (i = 0; !err && i < b->ninodes; i++)
		if (S_ISREG(b->inodes[i]->mode))
			err = fn(b, b->inodes[i], arg);
	return err;
}

/* A file's pending fragment (hard links: placed on the first visit). */
static int place_one(struct ezfs_builder *b, struct binode *in, void *arg)
{
	if (!in->z || !in->z->spooled)
		return 0;
	return place_frag(b, arg, in, in->z);
}

/*
 * Make the packed file, sparse, as large as placing can make it (every
 * pending fragment, and --zD's directories, which dirs.c appends
 * later), map it, and let the workers compress the packed inode's
 * segments while the rest is placed (zsegs.c).
 */
static int packed_reserve(struct ezfs_builder *b, struct fplace *f)
{
	uint64_t total = 0, dirs = 0, cap;
	long pg = sysconf(_SC_PAGESIZE);
	size_t i;
	int err;

	for (i = 0; i < b->ninodes; i++) {
		const struct binode *in = b->inodes[i];

		if (in->z && in->z->frag)
			return -EINVAL; /* every fragment went to the spool */
		if (in->z && in->z->spooled)
			total += in->z->frag_len;
		else if (S_ISDIR(in->mode) && in->z)
			dirs += in->size;
	}
	if (!total || !ezi_bld_spool_on(b))
		return 0;
	if (pg <= 0)
		pg = 4096;
	cap = (total + dirs + (uint64_t)pg - 1) & ~((uint64_t)pg - 1);
	if (cap > SIZE_MAX)
		return -ENOMEM;
	f->fbuf = malloc(FRAG_BUF);
	f->pbuf = malloc(FRAG_BUF);
	f->sbuf = malloc(FRAG_BUF);
	if (!f->fbuf || !f->pbuf || !f->sbuf)
		return -ENOMEM;
	err = ezi_bld_packfile_map(b, cap);
	return err ? err : ezi_bld_zsegs_start(b, b->packed, total);
}

int ezi_bld_frags_place(struct ezfs_builder *b)
{
	struct fplace f = { .fbuf = NULL };
	int err;

	if (!(b->p.flags & (EZFS_BUILD_FRAGMENTS | EZFS_BUILD_ALL_FRAGMENTS)))
		return 0;
	err = packed_reserve(b, &f);
	if (!err)
		err = ezi_bld_files_dfs(b, place_one, &f);
	if (b->fragcctx)
		ezi_bld_cctx_free(b, b->fragcctx);
	b->fragcctx = NULL;
	frag_table_free(b);
	/* the packed file stays, for the packed inode's writer */
	ezi_bld_spool_close(b);
	fplace_free(&f);
	return err;
}
