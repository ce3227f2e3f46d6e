/* SPDX-License-Identifier: MIT */
/*
 * fragments.c - the decoded contents of the packed inode (9.10).
 *
 * Compression leaves each file's fragment (its tail, or the whole file) in
 * z->frag. Once all files are compressed, the fragments are appended to
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
#define _GNU_SOURCE /* mremap */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

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

/* Key of a fragment: CRC32C of its last FRAG_HASHLEN bytes (or all). */
static uint32_t frag_key(const uint8_t *p, uint64_t len)
{
	uint64_t n = len < FRAG_HASHLEN ? len : FRAG_HASHLEN;

	return ezi_crc32c(0, p + len - n, (size_t)n) ^
	       (len < FRAG_HASHLEN ? (uint32_t)len : 0);
}

/*
 * The packed inode's bytes live in anonymous memory offered to huge
 * pages: one thread appends them, each fresh page is a fault on its path,
 * and first touches are slow on a VM (a third of the placing went to
 * zeroing 4 KiB pages). The room for every fragment is reserved before
 * placing (packed_reserve), so they never move while workers read them;
 * without workers reading, it may still grow by mremap (no copy).
 */
static int packed_grow(struct ezfs_builder *b, uint64_t need)
{
	uint64_t cap = b->packed_cap ? b->packed_cap : (2u << 20);
	void *np;

	while (cap < need)
		cap *= 2;
	if (cap > SIZE_MAX)
		return -ENOMEM;
	/* workers read the bytes while b->zsegs runs: grow in place only */
	np = b->packed ? mremap(b->packed, (size_t)b->packed_cap, (size_t)cap,
				b->zsegs ? 0 : MREMAP_MAYMOVE)
		       : mmap(NULL, (size_t)cap, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (np == MAP_FAILED)
		return -ENOMEM;
#ifdef MADV_HUGEPAGE
	madvise(np, (size_t)cap, MADV_HUGEPAGE);
#endif
	b->packed = np;
	b->packed_cap = cap;
	return 0;
}

void ezi_bld_packed_free(struct ezfs_builder *b)
{
	ezi_bld_zsegs_free(b);
	if (b->packed)
		munmap(b->packed, (size_t)b->packed_cap);
	b->packed = NULL;
	b->packed_cap = 0;
}

static int packed_append(struct ezfs_builder *b, const uint8_t *p, uint64_t len)
{
	int err;

	if (b->packed_len + len > b->packed_cap) {
		err = packed_grow(b, b->packed_len + len);
		if (err)
			return err;
	}
	memcpy(b->packed + b->packed_len, p, (size_t)len);
	b->packed_len += len;
	ezi_bld_zsegs_feed(b, b->packed_len);
	return 0;
}

/* Length of the longest common end of a[0, alen) and f[0, flen). */
static uint64_t common_end(const uint8_t *a, uint64_t alen, const uint8_t *f,
			   uint64_t flen)
{
	uint64_t n = alen < flen ? alen : flen, l = 0;

	while (l < n && a[alen - 1 - l] == f[flen - 1 - l])
		l++;
	return l;
}

/*
 * Put z's fragment into the packed inode, or point it at identical packed
 * bytes: the end of an earlier fragment with the same last bytes.
 */
static int place_frag(struct ezfs_builder *b, struct binode *in,
		      struct bzfile *z)
{
	uint32_t crc = frag_key(z->frag, z->frag_len), idx = z->idx_size;
	uint64_t best = 0, bend = 0;
	/*
	 * near-copies (fragnear.c): whole-file fragments up to 256 KiB (its
	 * estimates compress the file twice on this thread), 8 candidates
	 */
	unsigned near = z->wholefrag && z->frag_len > b->blksz &&
					z->frag_len <= (256u << 10)
				? 8
				: 0;
	struct fragtab *ft = b->fragtab;
	struct fragent *t, ne;
	size_t pos = 0;
	uintptr_t i;
	int err;

	if (!ft) {
		ft = calloc(1, sizeof(*ft));
		if (!ft)
			return -ENOMEM;
		b->fragtab = ft;
	}
	while ((i = (uintptr_t)ezi_hash_next(&ft->idx, crc, &pos))) {
		uint64_t off, l;

		t = &ft->e.v[i - 1];
		if (near && t->len >= FRAG_HASHLEN) {
			/* the longest common end, for near-copies */
			near--;
			l = common_end(b->packed + t->off, t->len, z->frag,
				       z->frag_len);
			if (l > best) {
				best = l;
				bend = t->off + t->len;
			}
		}
		if (t->len < z->frag_len ||
		    (z->frag_len < FRAG_HASHLEN && t->len != z->frag_len))
			continue;
		off = t->off + t->len - z->frag_len;
		if (!memcmp(b->packed + off, z->frag, (size_t)z->frag_len)) {
			z->fragoff = off;
			goto done;
		}
	}
	if (best >= b->blksz) {
		err = ezi_bld_frag_near(b, in, z, bend, best);
		if (err < 0)
			return err;
		if (err)
			goto done;
	}
	z->fragoff = b->packed_len;
	err = packed_append(b, z->frag, z->frag_len);
	if (err)
		return err;
	ne = (struct fragent){ z->fragoff, z->frag_len };
	if (ezi_vec_push(&ft->e, ne))
		return -ENOMEM;
	if (ezi_hash_add(&ft->idx, crc, (void *)(uintptr_t)ft->e.n)) {
		ft->e.n--;
		return -ENOMEM;
	}
done:
	free(z->frag);
	z->frag = NULL;
	/* compact headers hold 32 bits of the offset (9.10) */
	if (z->compact && z->fragoff > 0xFFFFFFFFull) {
		z->compact = false;
		z->idx_size = ezi_bld_zindex_size(b, in, false);
		in->datalayout = EROFS_INODE_COMPRESSED_FULL;
		in->unit_size += z->idx_size - idx;
	}
	return 0;
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
	(void)arg;
	if (!in->z || !in->z->frag)
		return 0;
	return place_frag(b, in, in->z);
}

/*
 * Reserve room for every pending fragment (what placing can append at
 * most), so that the bytes never move, and let the workers compress the
 * packed inode's segments while the rest is placed (zsegs.c).
 */
static int packed_reserve(struct ezfs_builder *b)
{
	uint64_t total = 0;
	size_t i;
	int err;

	for (i = 0; i < b->ninodes; i++) {
		const struct bzfile *z = b->inodes[i]->z;

		if (z && z->frag)
			total += z->frag_len;
	}
	if (!total)
		return 0;
	err = packed_grow(b, total);
	if (!err)
		err = ezi_bld_zsegs_start(b, b->packed, total);
	return err;
}

int ezi_bld_frags_place(struct ezfs_builder *b)
{
	int err;

	if (!(b->p.flags & (EZFS_BUILD_FRAGMENTS | EZFS_BUILD_ALL_FRAGMENTS)))
		return 0;
	err = packed_reserve(b);
	if (!err)
		err = ezi_bld_files_dfs(b, place_one, NULL);
	if (b->fragcctx)
		ezi_bld_cctx_free(b, b->fragcctx);
	b->fragcctx = NULL;
	frag_table_free(b);
	return err;
}
