/* SPDX-License-Identifier: MIT */
/*
 * meta.c - the metadata stage: every unit placed (space.c: NIDs), the
 * directories' blocks after the metadata, then each unit encoded (core,
 * xattrs, index or chunk array, inline tail) into the early blocks, the
 * metabox or a window over the metadata area that is written as it fills.
 * It leaves b->meta_blkaddr and b->blocks for super.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "write/internal.h"
#include "format/erofs_fs.h"

static int encode_core(const struct ezfs_builder *b, const struct binode *in,
		       uint8_t *p)
{
	uint16_t icount = in->xattr_isize
				  ? (uint16_t)((in->xattr_isize - 12) / 4 + 1)
				  : 0;
	uint16_t fmt = (uint16_t)((in->extended ? EROFS_INODE_EXTENDED
						: EROFS_INODE_COMPACT) |
				  (in->datalayout << EROFS_I_DATALAYOUT_SHIFT));
	bool bit48 = b->p.flags & EZFS_BUILD_48BIT;
	uint16_t nb = 0;
	uint64_t u;

	if (in->z)
		u = in->z->blocks;
	else if (in->datalayout == EROFS_INODE_CHUNK_BASED)
		u = in->chunkfmt;
	else if (S_ISCHR(in->mode) || S_ISBLK(in->mode))
		u = in->rdev;
	else if (S_ISFIFO(in->mode) || S_ISSOCK(in->mode))
		u = 0;
	else if (in->nblocks)
		u = in->startblk;
	else
		u = in->datalayout == EROFS_INODE_FLAT_INLINE
			    ? EROFS_NULL_ADDR32
			    : 0;
	/* 11.1: 48-bit addresses keep bits 32..47 in i_nb; a compact inode
	 * then needs NLINK_1 (nlink 1), and NULL is 0xFFFF there */
	if (bit48 && in->extended && !in->nblocks &&
	    in->datalayout == EROFS_INODE_FLAT_INLINE)
		nb = 0xFFFF;
	if (u > 0xFFFFFFFFull && bit48 && u <= 0xFFFFFFFFFFFFull &&
	    (in->extended || in->nlink == 1)) {
		nb = (uint16_t)(u >> 32);
		if (!in->extended)
			fmt |= EROFS_I_NLINK_1_BIT;
	} else if (u > 0xFFFFFFFFull) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "%s: block address beyond %d bits", in->srcpath,
			    bit48 ? 48 : 32);
		return -EFBIG;
	}
	/* the same bit as NLINK_1, for directories: no "." entry */
	put_le16(p, S_ISDIR(in->mode) && b->p.dot_omitted && bit48
			    ? fmt | EROFS_I_DOT_OMITTED_BIT
			    : fmt);
	put_le16(p + 2, icount);
	put_le16(p + 4, (uint16_t)in->mode);
	if (in->extended) {
		put_le16(p + 6, nb);
		put_le64(p + 8, in->size);
		put_le32(p + 16, (uint32_t)u);
		put_le32(p + 20, in->ino32);
		put_le32(p + 24, in->uid);
		put_le32(p + 28, in->gid);
		put_le64(p + 32, (uint64_t)in->mtime);
		put_le32(p + 40, in->mtime_ns);
		put_le32(p + 44, in->nlink);
		memset(p + 48, 0, 16);
	} else {
		put_le16(p + 6,
			 fmt & EROFS_I_NLINK_1_BIT ? nb : (uint16_t)in->nlink);
		put_le32(p + 8, (uint32_t)in->size);
		/* 48BIT: seconds after the epoch; else mtime == epoch */
		put_le32(p + 12,
			 bit48 ? (uint32_t)(in->mtime - ezi_bld_epoch48(b))
			       : 0);
		put_le32(p + 16, (uint32_t)u);
		put_le32(p + 20, in->ino32);
		put_le16(p + 24, (uint16_t)in->uid);
		put_le16(p + 26, (uint16_t)in->gid);
		put_le32(p + 28, 0);
	}
	return 0;
}

/* Encode in's unit at p (unit_size bytes, zeroed); a directory's full
 * blocks are written (dbuf: scratch). */
static int encode_unit(struct ezfs_builder *b, struct binode *in, uint8_t *p,
		       uint8_t **dbuf)
{
	uint32_t hdr = ezi_bld_core_size(in) + in->xattr_isize;
	uint64_t h = (in->meta_off + hdr + 7) & ~7ull;
	int err;

	err = encode_core(b, in, p);
	if (err)
		return err;
	if (in->xattr_isize)
		ezi_bld_xattrs_encode(in, p + ezi_bld_core_size(in));
	if (S_ISDIR(in->mode) && in->z) {
		/* --zD: the whole directory in the packed inode */
		put_le64(p + (h - in->meta_off), in->z->fragoff | 1ull << 63);
		return 0;
	}
	if (in->z) {
		uint8_t *hp = p + (h - in->meta_off);

		err = ezi_bld_zindex_encode(b, in, hp);
		if (!err)
			err = ezi_bld_tail_read(b, in, hp + in->z->idx_size,
						in->z->idata_len);
		return err;
	}
	if (in->chunkidx) {
		memcpy(p + ezi_bld_chunk_hdr(in, (in->chunkfmt &
						  EROFS_CHUNK_FORMAT_INDEXES)
							 ? 8
							 : 4),
		       in->chunkidx, in->chunkidx_len);
		return 0;
	}
	if (S_ISDIR(in->mode)) {
		free(*dbuf);
		/* whole blocks: a FLAT_PLAIN directory writes its last block
		 * in full, padding included */
		*dbuf = calloc(1, (in->size + b->blksz - 1) &
					  ~(uint64_t)(b->blksz - 1));
		if (!*dbuf)
			return -ENOMEM;
		ezi_bld_dir_build(b, in, *dbuf);
		if (in->nblocks)
			err = ezi_bld_pwrite(b, *dbuf,
					     in->nblocks << b->blkszbits,
					     in->startblk << b->blkszbits);
		if (in->tail_len)
			memcpy(p + hdr, *dbuf + (in->nblocks << b->blkszbits),
			       in->tail_len);
		return err;
	}
	return ezi_bld_tail_read(b, in, p + hdr, in->tail_len);
}

/*
 * The buffer that holds in's unit: the early blocks, the metabox
 * contents, or the window over the area [base, end) (win: wcap bytes
 * from wstart, the area's units come in offset order); NULL: after the
 * area (a unit placed late).
 */
struct mbufs {
	uint8_t *blk0, *mbox, *win;
	uint64_t gap0, base, end, wstart, wcap;
};

static bool in_area(const struct mbufs *m, const struct binode *in)
{
	return !in->mbox && in->meta_off >= m->base && in->meta_off < m->end;
}

static uint8_t *unit_buf(const struct mbufs *m, const struct binode *in)
{
	if (in->mbox)
		return m->mbox + in->meta_off;
	if (in->meta_off < m->base)
		return m->blk0 + (in->meta_off - m->gap0);
	if (in->meta_off < m->end)
		return m->win + (in->meta_off - m->wstart);
	return NULL;
}

/* Encode in's unit into its buffer, or write it (a unit placed late). */
static int put_unit(struct ezfs_builder *b, const struct mbufs *m,
		    struct binode *in, uint8_t **dbuf)
{
	uint8_t *p = unit_buf(m, in), *x;
	int err;

	if (p)
		return encode_unit(b, in, p, dbuf);
	x = calloc(1, in->unit_size);
	if (!x)
		return -ENOMEM;
	err = encode_unit(b, in, x, dbuf);
	if (!err)
		err = ezi_bld_pwrite(b, x, in->unit_size, in->meta_off);
	free(x);
	return err;
}

/* Write the window's bytes below to (every unit there is encoded, the
 * rest of the window is zero) and move it to start there. */
static int area_flush(struct ezfs_builder *b, struct mbufs *m, uint64_t to)
{
	size_t n = (size_t)(to - m->wstart);
	int err = n ? ezi_bld_pwrite(b, m->win, n, m->wstart) : 0;

	memset(m->win, 0, n);
	m->wstart = to;
	return err;
}

/*
 * Encode the area's units in offset order through a window of 1 MiB (or
 * the largest unit) and write it as it fills: the whole area in memory
 * was 13 MiB per 16,000 files, held beside every inode's metadata.
 */
static int write_area(struct ezfs_builder *b, struct mbufs *m, uint8_t **dbuf)
{
	size_t i, n = 0;
	struct bunit *u;
	int err = 0;

	if (m->end <= m->base)
		return 0;
	u = malloc(b->ninodes * sizeof(*u));
	if (!u)
		return -ENOMEM;
	m->wcap = 1u << 20;
	for (i = 0; i < b->ninodes; i++) {
		struct binode *in = b->inodes[i];

		if (!in_area(m, in))
			continue;
		u[n].off = in->meta_off;
		u[n].len = in->unit_size;
		u[n++].in = in;
		if (in->unit_size > m->wcap)
			m->wcap = in->unit_size;
	}
	qsort(u, n, sizeof(*u), ezi_bld_unit_cmp);
	m->wstart = m->base;
	m->win = calloc(1, (size_t)m->wcap);
	if (!m->win)
		err = -ENOMEM;
	for (i = 0; i < n && !err; i++) {
		if (u[i].off + u[i].len > m->wstart + m->wcap)
			err = area_flush(b, m, u[i].off);
		if (!err)
			err = put_unit(b, m, u[i].in, dbuf);
	}
	if (!err)
		err = area_flush(b, m, m->end);
	free(m->win);
	m->win = NULL;
	free(u);
	return err;
}

static int write_meta(struct ezfs_builder *b)
{
	uint64_t shared_end = b->shared_start + b->shared_len;
	uint64_t base, meta_blkaddr, blk, end = 0, gap0, early, after = 0;
	uint64_t mend = 0;
	uint8_t *dbuf = NULL;
	bool mb = b->p.metabox_pcluster, blk0;
	struct mbufs m = { 0 };
	struct bgaps *g, *gm = NULL;
	size_t i;
	int err = 0;

	/*
	 * 1. NIDs: block 0 after the superblock when the root fits there,
	 * or the root's own block before the data (plan.c); with -m,
	 * the tree's units in the metabox first
	 */
	base = b->cursor << b->blkszbits;
	gap0 = (shared_end + 31) & ~31ull;
	early = b->data_start << b->blkszbits;
	blk0 = mb || b->root_blk ||
	       gap0 + ((b->inodes[0]->unit_size + 31) & ~31u) <= b->blksz;
	meta_blkaddr = blk0 ? 0 : (base - 1) >> b->blkszbits;
	g = ezi_bld_gaps_new(b);
	if (mb)
		gm = ezi_bld_gaps_new(b);
	if (!g || (mb && !gm)) {
		ezi_bld_gaps_free(g);
		ezi_bld_gaps_free(gm);
		return -ENOMEM;
	}
	if (mb) {
		err = ezi_bld_place_inodes(b, gm, 0, 0, &mend, 1);
		ezi_bld_gaps_free(gm);
	}
	/* the early blocks take inodes whenever NIDs can address them */
	if (!err && !meta_blkaddr)
		err = ezi_bld_gap_rest(g, b->blkszbits, gap0);
	if (!err && b->root_blk)
		err = ezi_bld_place_root(b, g);
	if (!err)
		err = ezi_bld_place_inodes(b, g, base, meta_blkaddr, &end,
					   mb ? 0 : -1);
	if (!err && ezi_bld_zdirs(b))
		err = ezi_bld_pack_dirs(b, g, meta_blkaddr, &end, &after);
	if (!err && b->devt_off)
		err = ezi_bld_pair_tails(b, meta_blkaddr ? base : gap0, base,
					 meta_blkaddr, &end);
	if (err)
		goto out;
	if (b->inodes[0]->nid > 0xFFFF && !(b->p.flags & EZFS_BUILD_48BIT)) {
		ezi_bld_log(b, EZFS_LOG_ERROR, "root nid %llu beyond 16 bits",
			    (unsigned long long)b->inodes[0]->nid);
		err = -EFBIG;
		goto out;
	}

	/* 2. directory blocks after the metadata */
	blk = (end + b->blksz - 1) >> b->blkszbits;
	if (blk < after)
		blk = after;
	for (i = 0; i < b->ninodes; i++) {
		struct binode *in = b->inodes[i];

		if (S_ISDIR(in->mode) && in->nblocks) {
			in->startblk = blk;
			blk += in->nblocks;
		}
	}

	/* 3. encode inodes into the metadata buffers, directory blocks */
	m.gap0 = gap0;
	m.base = base;
	m.end = end;
	m.blk0 = calloc(1, early > gap0 ? early - gap0 : 1);
	m.mbox = calloc(1, mend ? mend : 1);
	if (!m.blk0 || !m.mbox) {
		err = -ENOMEM;
		goto out;
	}
	/* the units outside the area; the area's wait for the window */
	for (i = 0; i < b->ninodes && !err; i++) {
		if (!in_area(&m, b->inodes[i]))
			err = put_unit(b, &m, b->inodes[i], &dbuf);
		if ((i & 1023) == 0)
			ezi_bld_progress(b, EZFS_BUILD_META, i, b->ninodes, 0,
					 0);
	}
	/* -m: the metabox inode after the directory blocks, its unit in
	 * the device's metadata (b->inodes' last) */
	if (!err && mb) {
		b->cursor = blk;
		err = ezi_bld_write_mbox(b, g, m.mbox, mend, meta_blkaddr);
		if (!err && !in_area(&m, b->mbox_inode))
			err = put_unit(b, &m, b->mbox_inode, &dbuf);
		blk = b->cursor;
	}
	if (!err)
		err = write_area(b, &m, &dbuf);
	if (!err && !meta_blkaddr && early > gap0)
		err = ezi_bld_pwrite(b, m.blk0, early - gap0, gap0);
	/* for super.c */
	b->meta_blkaddr = meta_blkaddr;
	b->blocks = blk;
out:
	ezi_bld_gaps_free(g);
	free(dbuf);
	free(m.blk0);
	free(m.mbox);
	return err;
}

int ezi_bld_write_meta(struct ezfs_builder *b)
{
	int err = write_meta(b);

	ezi_bld_tails_free(b);
	ezi_bld_packed_free(b); /* --zD: kept until the directories joined */
	return err;
}
