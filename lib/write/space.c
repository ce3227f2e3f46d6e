/* SPDX-License-Identifier: MIT */
/*
 * space.c - where the metadata goes: each inode's unit (core, xattrs,
 * index, inline tail) gets 32-byte slots in the metadata blocks, the root
 * first, the large units in order, then the free runs and new blocks
 * filled exactly where units add up to them; the units placed last (the
 * packed and metabox inodes) into the smallest gap they fit. The data
 * blocks are taken in order at b->cursor (ezi_bld_take_blocks).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "write/internal.h"
#include "format/erofs_fs.h"

#define BLD_MAX_SLOTS (4096 / 32) /* 32-byte slots in the largest block */

/*
 * Metadata placement: free runs of 32-byte slots inside one metadata
 * block ("gaps": block 0 after the superblock and shared xattrs, the
 * rest of a block left behind when a unit had to start a new one, the
 * slots skipped so that a unit's inline data does not cross a block) are
 * kept in buckets by length; ezi_bld_place_inodes fills them with the units of
 * a block or less, the largest runs first (fill_run), and a unit placed after
 * those (ezi_bld_place_late) goes into the smallest gap it fits.
 */
struct bgaps {
	uint64_t *off[BLD_MAX_SLOTS + 1]; /* byte offset of each run */
	uint32_t n[BLD_MAX_SLOTS + 1];
	uint32_t cap[BLD_MAX_SLOTS + 1];
	unsigned nslots;
};

/* A free run of `slots` slots from byte offset off (inside one block). */
static int gap_push(struct bgaps *g, uint64_t off, unsigned slots)
{
	if (!slots)
		return 0;
	if (g->n[slots] == g->cap[slots]) {
		uint32_t cap = g->cap[slots] ? g->cap[slots] * 2 : 16;
		uint64_t *v = realloc(g->off[slots], cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		g->off[slots] = v;
		g->cap[slots] = cap;
	}
	g->off[slots][g->n[slots]++] = off;
	return 0;
}

/* The rest of the block that pos is in, from pos on. */
int ezi_bld_gap_rest(struct bgaps *g, unsigned blkszbits, uint64_t pos)
{
	uint64_t in = pos & ((1ull << blkszbits) - 1);

	return in ? gap_push(g, pos,
			     (unsigned)(((1ull << blkszbits) - in) >> 5))
		  : 0;
}

/* [from, to): the free slots before a unit placed at `to`, per block. */
static int gap_push_range(struct bgaps *g, unsigned blkszbits, uint64_t from,
			  uint64_t to)
{
	while (from < to) {
		uint64_t end = ((from >> blkszbits) + 1) << blkszbits;
		int r;

		if (end > to)
			end = to;
		r = gap_push(g, from, (unsigned)((end - from) >> 5));
		if (r)
			return r;
		from = end;
	}
	return 0;
}

/* Best fit: byte offset of `slots` free slots in some gap, or 0. */
static int gap_take(struct bgaps *g, unsigned slots, uint64_t *off)
{
	unsigned k;

	for (k = slots; k <= g->nslots; k++) {
		if (!g->n[k])
			continue;
		*off = g->off[k][--g->n[k]];
		return gap_push(g, *off + ((uint64_t)slots << 5), k - slots) < 0
			       ? -ENOMEM
			       : 1;
	}
	return 0;
}

struct bgaps *ezi_bld_gaps_new(const struct ezfs_builder *b)
{
	struct bgaps *g = calloc(1, sizeof(*g));

	if (g)
		g->nslots = b->blksz >> 5;
	return g;
}

void ezi_bld_gaps_free(struct bgaps *g)
{
	unsigned k;

	if (!g)
		return;
	for (k = 0; k <= g->nslots; k++)
		free(g->off[k]);
	free(g);
}

/* The unit's inline data (a flat tail or a ztailpacking pcluster), at its
 * end: it may not cross a block boundary. */
static uint32_t inline_len(const struct binode *in)
{
	return in->tail_len ? in->tail_len : in->z ? in->z->idata_len : 0;
}

/* The first 32-byte slot at or after pos where the unit's inline data
 * does not cross a block boundary. */
static uint64_t inline_fit(const struct ezfs_builder *b,
			   const struct binode *in, uint64_t pos)
{
	uint32_t il = inline_len(in);

	while (il && ((pos + in->unit_size - il) >> b->blkszbits) !=
			     ((pos + in->unit_size - 1) >> b->blkszbits))
		pos += 32;
	return pos;
}

/* The root at the start of its reserved block(s); the rest is a gap. */
int ezi_bld_place_root(struct ezfs_builder *b, struct bgaps *g)
{
	struct binode *root = b->inodes[0];
	uint64_t end =
		(b->root_blk << b->blkszbits) + ((root->unit_size + 31) & ~31u);

	root->meta_off = b->root_blk << b->blkszbits;
	root->nid = root->meta_off >> EROFS_ISLOTBITS;
	root->ino32 = 1;
	return ezi_bld_gap_rest(g, b->blkszbits, end);
}

/*
 * The order units are placed in: the root first, then by size, largest
 * first (in inode order for equal sizes), so that the small ones fill
 * what the large ones leave (first fit decreasing: fewer metadata blocks
 * than in plain inode order).
 */
static size_t *place_order(const struct ezfs_builder *b)
{
	unsigned nk = BLD_MAX_SLOTS + 2, key;
	size_t *ord = malloc(b->ninodes * sizeof(*ord)), *cnt, i;

	if (!ord)
		return NULL;
	cnt = calloc(nk + 1, sizeof(*cnt));
	if (!cnt) {
		free(ord);
		return NULL;
	}
#define PLACE_KEY(in)                                                          \
	(((in)->unit_size + 31) >> 5 > BLD_MAX_SLOTS                           \
		 ? 0                                                           \
		 : nk - (unsigned)(((in)->unit_size + 31) >> 5))
	ord[0] = 0;
	for (i = 1; i < b->ninodes; i++)
		cnt[PLACE_KEY(b->inodes[i]) + 1]++;
	cnt[0] = 1;
	for (key = 1; key <= nk; key++)
		cnt[key] += cnt[key - 1];
	for (i = 1; i < b->ninodes; i++)
		ord[cnt[PLACE_KEY(b->inodes[i])]++] = i;
#undef PLACE_KEY
	free(cnt);
	return ord;
}

/*
 * In images with a device (tar indexes: 512-byte blocks of small inodes,
 * as mkfs.erofs packs them) a unit without inline data that is not
 * compressed may cross a block boundary: an extended core, its xattrs
 * and chunk indexes may straddle two blocks, which the kernel, erofs-utils
 * and ezfs read (a compact core never does: it is one 32-byte slot).
 */
static bool crossable(const struct ezfs_builder *b, const struct binode *in)
{
	return b->devt_off && in != b->inodes[0] && !in->z && !inline_len(in);
}

/* -m: does the inode's unit go into the metabox (all but the packed and
 * metabox inodes)? */
static bool in_mbox(const struct ezfs_builder *b, const struct binode *in)
{
	return b->p.metabox_pcluster && in != b->packed_inode &&
	       in != b->mbox_inode;
}

/*
 * The units of one block or less still to place (not the root, nor a
 * unit that may cross a block: crossable()), by their size in slots,
 * each size's in placement order; `pool` (by position in the placement
 * order): one of them.
 */
struct fill {
	size_t *k[BLD_MAX_SLOTS + 1]; /* positions in the placement order */
	size_t n[BLD_MAX_SLOTS + 1], head[BLD_MAX_SLOTS + 1];
	size_t avail[BLD_MAX_SLOTS + 1]; /* not placed, per size */
	bool *pool;
	unsigned top; /* the largest size with units left */
	/* fill_exact(): failed (rest, size) pairs, the counts chosen and
	 * the steps left (a bound on the search, not a time) */
	uint8_t fail[(BLD_MAX_SLOTS + 1) * (BLD_MAX_SLOTS + 1) / 8 + 1];
	unsigned use[BLD_MAX_SLOTS + 1];
	unsigned budget;
};

static void fill_free(struct fill *f)
{
	unsigned s;

	for (s = 0; s <= BLD_MAX_SLOTS; s++)
		free(f->k[s]);
	free(f->pool);
}

static unsigned unit_slots(const struct binode *in)
{
	return (in->unit_size + 31) >> 5;
}

static bool fill_wants(const struct ezfs_builder *b, const struct binode *in,
		       int want)
{
	return want < 0 || in_mbox(b, in) == (want > 0);
}

static int fill_init(struct fill *f, const struct ezfs_builder *b,
		     const size_t *ord, int want)
{
	unsigned s, nb = b->blksz >> 5;
	size_t k;

	memset(f, 0, sizeof(*f));
	f->pool = calloc(b->ninodes, sizeof(*f->pool));
	if (!f->pool)
		return -ENOMEM;
	for (k = 1; k < b->ninodes; k++) {
		const struct binode *in = b->inodes[ord[k]];

		s = unit_slots(in);
		f->pool[k] =
			s <= nb && !crossable(b, in) && fill_wants(b, in, want);
		if (f->pool[k])
			f->avail[s]++;
	}
	for (s = 1; s <= nb; s++) {
		if (f->avail[s] &&
		    !(f->k[s] = malloc(f->avail[s] * sizeof(size_t))))
			return -ENOMEM;
		if (f->avail[s])
			f->top = s;
	}
	for (k = 1; k < b->ninodes; k++)
		if (f->pool[k]) {
			s = unit_slots(b->inodes[ord[k]]);
			f->k[s][f->n[s]++] = k;
		}
	return 0;
}

/* Take the next unit of size s (avail[s] > 0): its position. */
static size_t fill_take(struct fill *f, unsigned s)
{
	size_t k = f->k[s][f->head[s]++];

	f->avail[s]--;
	while (f->top && !f->avail[f->top])
		f->top--;
	return k;
}

/*
 * Can units of sizes at most s, as many of each as are left, add up to
 * exactly rest slots? Fills use[] (how many of each) when they can.
 * Sizes are tried largest first, each with as many units as fit first.
 */
static bool fill_exact(struct fill *f, unsigned rest, unsigned s)
{
	size_t bit;
	unsigned c;

	if (!rest)
		return true;
	if (!f->budget)
		return false;
	f->budget--;
	if (s > rest)
		s = rest;
	bit = (size_t)rest * (BLD_MAX_SLOTS + 1) + s;
	if (!s || (f->fail[bit >> 3] & (1u << (bit & 7))))
		return false;
	c = f->avail[s] < rest / s ? (unsigned)f->avail[s] : rest / s;
	for (;; c--) {
		f->use[s] = c;
		if (fill_exact(f, rest - c * s, s - 1))
			return true;
		if (!c)
			break;
	}
	f->use[s] = 0;
	f->fail[bit >> 3] |= (uint8_t)(1u << (bit & 7));
	return false;
}

static void set_place(const struct ezfs_builder *b, struct binode *in,
		      uint64_t off, uint64_t meta_blkaddr, size_t ino, int want)
{
	in->meta_off = off;
	in->nid = (off - (meta_blkaddr << b->blkszbits)) >> EROFS_ISLOTBITS;
	in->ino32 = (uint32_t)(ino + 1);
	if (want > 0) {
		in->mbox = true;
		in->nid |= EROFS_NID_METABOX;
	}
}

/*
 * Fill the free run of `slots` slots at off (inside one block) with
 * units still to place: units that add up to it exactly where some do
 * (the largest first), else the largest that fit, one after the other.
 * Returns the slots used.
 */
static unsigned fill_run(const struct ezfs_builder *b, struct fill *f,
			 const size_t *ord, uint64_t off, unsigned slots,
			 uint64_t meta_blkaddr, int want)
{
	unsigned s, rest = slots;

	memset(f->fail, 0, sizeof(f->fail));
	memset(f->use, 0, sizeof(f->use));
	f->budget = 4096;
	if (fill_exact(f, slots, f->top)) {
		rest = 0;
	} else {
		memset(f->use, 0, sizeof(f->use));
		for (s = f->top < rest ? f->top : rest; s; s--)
			for (; f->use[s] < f->avail[s] && s <= rest; rest -= s)
				f->use[s]++;
	}
	for (s = BLD_MAX_SLOTS; s; s--)
		for (; f->use[s]; f->use[s]--) {
			size_t k = fill_take(f, s);

			set_place(b, b->inodes[ord[k]], off, meta_blkaddr,
				  ord[k], want);
			off += (uint64_t)s << 5;
		}
	return slots - rest;
}

/*
 * Assign meta_off/nid to every inode (want < 0), or only to those that
 * in_mbox() says go (want 1) or do not go (want 0) into the metabox;
 * returns the end of the area.
 *
 * The root first, then the units larger than a block and those that may
 * cross one in order (at the cursor: the metadata of a large unit may
 * span blocks, its inline data stays in one, the slots skipped for it
 * are a gap). Then every free run (the rest of block 0, of the root's
 * block, of the cursor's block and those gaps), the largest first, and
 * after them one new block after the other get the units of a block or
 * less that fill them exactly where some do, the largest first
 * (fill_run): first fit decreasing alone left a block with whatever room
 * the next unit did not fit into (on a make_tree.py tree 65 runs of 1-2
 * slots, a block more than mkfs.erofs 1.9.3).
 */
int ezi_bld_place_inodes(struct ezfs_builder *b, struct bgaps *g, uint64_t base,
			 uint64_t meta_blkaddr, uint64_t *endp, int want)
{
	uint64_t pos = base, blksz = b->blksz, off;
	unsigned nb = b->blksz >> 5, s, used;
	size_t k, *ord = place_order(b);
	struct fill f;
	int r;

	if (!ord)
		return -ENOMEM;
	r = fill_init(&f, b, ord, want);
	for (k = b->root_blk ? 1 : 0; !r && k < b->ninodes; k++) {
		struct binode *in = b->inodes[ord[k]];
		uint32_t need = (in->unit_size + 31) & ~31u;
		uint64_t inblk = pos & (blksz - 1);

		if (f.pool[k] || !fill_wants(b, in, want))
			continue;
		r = need <= blksz ? gap_take(g, need >> 5, &off) : 0;
		if (r < 0)
			break;
		if (!r) {
			if (inblk && inblk + need > blksz &&
			    !crossable(b, in) && need <= blksz) {
				r = ezi_bld_gap_rest(g, b->blkszbits, pos);
				if (r < 0)
					break;
				pos += blksz - inblk;
			} else if (in->extended && inblk + 64 > blksz &&
				   !crossable(b, in)) {
				r = gap_push(g, pos, 1);
				if (r < 0)
					break;
				pos += 32;
			}
			off = inline_fit(b, in, pos);
			r = gap_push_range(g, b->blkszbits, pos, off);
			if (r < 0)
				break;
			pos = (off + in->unit_size + 31) & ~31ull;
		}
		set_place(b, in, off, meta_blkaddr, ord[k], want);
		r = 0;
	}
	/* the free runs, the largest first; what is left of each stays a
	 * gap for the units placed later (ezi_bld_place_late) */
	if (!r)
		r = ezi_bld_gap_rest(g, b->blkszbits, pos);
	if (!r && (pos & (blksz - 1)))
		pos = (pos + blksz - 1) & ~(blksz - 1);
	for (s = nb, used = 1; !r && s && f.top && used; s--)
		while (!r && g->n[s] && f.top) {
			off = g->off[s][--g->n[s]];
			used = fill_run(b, &f, ord, off, s, meta_blkaddr, want);
			r = gap_push(g, off + ((uint64_t)used << 5), s - used);
			if (!used) /* nothing left fits: nor a smaller run */
				break;
		}
	/* then new blocks */
	while (!r && f.top) {
		used = fill_run(b, &f, ord, pos, nb, meta_blkaddr, want);
		pos += (uint64_t)used << 5;
		if (f.top && used < nb) {
			r = ezi_bld_gap_rest(g, b->blkszbits, pos);
			pos = (pos + blksz - 1) & ~(blksz - 1);
		}
	}
	fill_free(&f);
	free(ord);
	*endp = pos;
	return r < 0 ? r : 0;
}

/*
 * Multi-device images (tar indexes: 512-byte blocks full of small
 * inodes): after placement, the free tail of a metadata block and the
 * free room of the next one become one run across their boundary (the
 * next block's units move to its end), and the last units of the area,
 * while they may cross a block boundary (crossable()), move into such
 * runs. *endp shrinks.
 */
int ezi_bld_unit_cmp(const void *x, const void *y)
{
	const struct bunit *a = x, *c = y;

	return a->off < c->off ? -1 : a->off > c->off;
}

int ezi_bld_pair_tails(struct ezfs_builder *b, uint64_t lo, uint64_t base,
		       uint64_t meta_blkaddr, uint64_t *endp)
{
	uint64_t bs = b->blksz, end = *endp, nblk, k, n = 0, *rs, *re, nr = 0;
	uint64_t first = lo >> b->blkszbits, split = base >> b->blkszbits;
	struct bunit *u;
	size_t i, j, *bi, total;
	int err = 0;

	if (end <= lo)
		return 0;
	nblk = ((end - 1) >> b->blkszbits) - first + 1;
	u = malloc(b->ninodes * sizeof(*u));
	bi = calloc(nblk + 1, sizeof(*bi));
	rs = malloc((nblk / 2 + 1) * sizeof(*rs));
	re = malloc((nblk / 2 + 1) * sizeof(*re));
	if (!u || !bi || !rs || !re) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < b->ninodes; i++)
		if (b->inodes[i]->meta_off >= lo)
			u[n++] = (struct bunit){
				.off = b->inodes[i]->meta_off,
				.len = (b->inodes[i]->unit_size + 31) & ~31u,
				.in = b->inodes[i],
			};
	qsort(u, n, sizeof(*u), ezi_bld_unit_cmp);
	total = n;
	/* bi[k]: the first unit starting at or after block first + k */
	for (i = 0, k = 0; k <= nblk; k++) {
		while (i < n && (u[i].off >> b->blkszbits) < first + k)
			i++;
		bi[k] = i;
	}
	for (k = 0; k + 1 < nblk; k++) {
		uint64_t b0 = (first + k) * bs, b1 = b0 + bs, used0, used1;
		size_t a = bi[k], z = bi[k + 1], y = bi[k + 2];

		/* two blocks of one buffer (the early blocks end at base),
		 * each holding units, none crossing into or out of them */
		if (first + k + 1 == split || a == z || z == y)
			continue;
		if (u[z - 1].off + u[z - 1].len > b1 ||
		    u[y - 1].off + u[y - 1].len > b1 + bs ||
		    (a && u[a - 1].off + u[a - 1].len > b0))
			continue;
		used0 = u[z - 1].off + u[z - 1].len;
		for (used1 = 0, j = z; j < y; j++)
			used1 += u[j].len;
		if (used0 == b1 || used1 == bs)
			continue;
		/* the next block's units to its end, in their order */
		for (i = y, used1 = b1 + bs; i > z; i--) {
			used1 -= u[i - 1].len;
			u[i - 1].off = used1;
		}
		rs[nr] = used0;
		re[nr++] = used1;
		k++;
	}
	/* the area's last units into the runs while they fit */
	while (n && nr && crossable(b, u[n - 1].in)) {
		uint64_t best = nr;

		for (k = 0; k < nr; k++)
			if (re[k] - rs[k] >= u[n - 1].len &&
			    rs[k] + u[n - 1].len <= u[n - 1].off &&
			    (best == nr || re[k] - rs[k] < re[best] - rs[best]))
				best = k;
		if (best == nr)
			break;
		u[n - 1].off = rs[best];
		rs[best] += u[n - 1].len;
		n--;
	}
	/* u[n..total) moved into runs; all get their new place, and the
	 * area ends after the last of them */
	for (i = 0, end = lo; i < total; i++) {
		u[i].in->meta_off = u[i].off;
		u[i].in->nid = (u[i].off - (meta_blkaddr << b->blkszbits)) >>
			       EROFS_ISLOTBITS;
		if (u[i].off + u[i].len > end)
			end = u[i].off + u[i].len;
	}
	*endp = end > base ? end : base;
out:
	free(u);
	free(bi);
	free(rs);
	free(re);
	return err;
}

/*
 * A unit placed after the others (the packed inode with --zD, the
 * metabox inode): into the smallest gap it fits, else at the cursor (a
 * block of its own after its data), which moves past it.
 */
int ezi_bld_place_late(struct ezfs_builder *b, struct bgaps *g,
		       struct binode *in, uint64_t meta_blkaddr)
{
	unsigned slots = (in->unit_size + 31) >> 5;
	uint64_t off;
	int r;

	r = slots <= g->nslots ? gap_take(g, slots, &off) : 0;
	if (r < 0)
		return r;
	if (!r) {
		off = inline_fit(b, in, b->cursor << b->blkszbits);
		b->cursor =
			(off + in->unit_size + b->blksz - 1) >> b->blkszbits;
	}
	in->meta_off = off;
	in->nid = (off - (meta_blkaddr << b->blkszbits)) >> EROFS_ISLOTBITS;
	in->ino32 = (uint32_t)b->ninodes;
	return 0;
}
