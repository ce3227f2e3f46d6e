/* SPDX-License-Identifier: MIT */
/*
 * zindex.c - map header and lcluster indexes of compressed inodes: full
 * (9.4) and compact (9.5) forms, from the extent list of compress.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "write/internal.h"
#include "format/erofs_fs.h"

/* Logical view of one lcluster entry before encoding. */
struct lent {
	uint8_t type;
	bool cblk;	     /* first NONHEAD carrying CBLKCNT */
	uint16_t clusterofs; /* HEAD */
	uint16_t d0, d1;     /* NONHEAD; d0 = CBLKCNT blocks if cblk */
	uint32_t blkaddr;    /* HEAD */
	bool partial;	     /* HEAD: PARTIAL_REF (9.11) */
	bool sentinel;
};

static uint32_t hdr_offset(const struct binode *in)
{
	uint32_t e = (in->extended ? 64 : 32) + in->xattr_isize;

	return (e + 7) & ~7u; /* inode start is 32-byte aligned */
}

/* 9.5.1: numbers of entries in the initial 4B, 2B and final 4B regions. */
static void compact_regions(uint32_t ebase_mod32, uint64_t n, uint64_t *init4,
			    uint64_t *n2b, uint64_t *rest)
{
	*init4 = ((32 - ebase_mod32) / 4) & 7;
	if (*init4 < n)
		*n2b = (n - *init4) / 16 * 16;
	else
		*n2b = 0;
	if (*init4 > n)
		*init4 = n;
	*rest = n - *init4 - *n2b;
}

uint32_t ezi_bld_zindex_size(const struct ezfs_builder *b,
			     const struct binode *in, bool compact)
{
	uint64_t n = (in->size + b->blksz - 1) >> b->blkszbits;
	uint64_t init4, n2b, rest, bytes;

	if (!compact)
		return (uint32_t)(16 + 8 * n);
	compact_regions((hdr_offset(in) + 8) & 31, n, &init4, &n2b, &rest);
	bytes = 8 + ((init4 + 1) & ~1ull) * 4 + n2b * 2 +
		((rest + 1) & ~1ull) * 4;
	return (uint32_t)bytes;
}

/* Build the per-lcluster view (n entries). */
static void build_lents(const struct ezfs_builder *b, const struct binode *in,
			struct lent *le, uint64_t n)
{
	const struct bzfile *z = in->z;
	uint64_t lcs = b->blksz, size = in->size;
	uint32_t k;

	for (k = 0; k < z->next; k++) {
		const struct bextent *e = &z->ext[k];
		uint64_t end = k + 1 < z->next ? z->ext[k + 1].la : size;
		uint64_t h = e->la >> b->blkszbits, nh = end >> b->blkszbits, j;

		le[h].type = e->type;
		le[h].clusterofs = (uint16_t)(e->la & (lcs - 1));
		le[h].blkaddr = e->blkaddr;
		le[h].partial = e->partial;
		if (e->frag) {
			/* FULL: high bits of the fragment offset (9.10) */
			le[h].blkaddr = (uint32_t)(z->fragoff >> 32);
			le[h].sentinel = true; /* no pcluster behind it */
		}
		if (nh > n)
			nh = n;
		for (j = h + 1; j < nh; j++) {
			le[j].type = Z_EROFS_LCLUSTER_TYPE_NONHEAD;
			le[j].clusterofs = le[h].clusterofs;
			le[j].d0 = (uint16_t)(j - h);
			le[j].d1 = (uint16_t)(nh - j);
			if (j == h + 1 && b->big_pcluster) {
				le[j].cblk = true;
				le[j].d0 = (uint16_t)e->blocks;
			}
		}
	}
	/* EOF sentinel (9.1) */
	if ((size & (lcs - 1)) &&
	    (z->ext[z->next - 1].la >> b->blkszbits) < n - 1) {
		le[n - 1].type = Z_EROFS_LCLUSTER_TYPE_PLAIN;
		le[n - 1].clusterofs = (uint16_t)(size & (lcs - 1));
		le[n - 1].blkaddr = 0;
		le[n - 1].sentinel = true;
	}
}

static void encode_full(const struct lent *le, uint64_t n, uint8_t *p)
{
	uint64_t i;

	for (i = 0; i < n; i++, p += 8) {
		put_le16(p, (uint16_t)(le[i].type |
				       (le[i].partial ? Z_EROFS_LI_PARTIAL_REF
						      : 0)));
		put_le16(p + 2, le[i].clusterofs);
		if (le[i].type != Z_EROFS_LCLUSTER_TYPE_NONHEAD) {
			put_le32(p + 4, le[i].blkaddr);
			continue;
		}
		put_le16(p + 4,
			 le[i].cblk
				 ? (uint16_t)(Z_EROFS_LI_D0_CBLKCNT | le[i].d0)
				 : (le[i].d0 > 0x7FF ? 0x7FF : le[i].d0));
		put_le16(p + 6, le[i].d1 > 0x7FF ? 0x7FF : le[i].d1);
	}
}

/* lo + type of entry i of a pack of vcnt entries. */
static uint32_t pack_value(const struct lent *e, unsigned i, unsigned vcnt)
{
	uint32_t lo;

	if (e->type != Z_EROFS_LCLUSTER_TYPE_NONHEAD)
		lo = e->clusterofs;
	else if (e->cblk)
		lo = Z_EROFS_LI_D0_CBLKCNT | e->d0;
	else if (i == vcnt - 1)
		lo = e->d1 > 0x7FF ? 0x7FF : e->d1;
	else
		lo = e->d0;
	return lo | (uint32_t)e->type << 12;
}

/* The kernel's blkaddr walk (9.5.3): blocks before entry i of the pack. */
static uint32_t pack_nblk(const uint32_t *v, int i, bool big)
{
	uint32_t nblk = big ? 0 : 1, lo, type;

	while (i > 0) {
		--i;
		lo = v[i] & 0xFFF;
		type = v[i] >> 12;
		if (!big) {
			if (type == Z_EROFS_LCLUSTER_TYPE_NONHEAD)
				i -= (int)lo;
			if (i >= 0)
				++nblk;
			continue;
		}
		if (type == Z_EROFS_LCLUSTER_TYPE_NONHEAD) {
			if (lo & Z_EROFS_LI_D0_CBLKCNT) {
				--i;
				nblk += lo & ~Z_EROFS_LI_D0_CBLKCNT;
				continue;
			}
			i -= (int)lo - 2;
			continue;
		}
		++nblk;
	}
	return nblk;
}

/* Encode one pack of vcnt entries (le may run past n: zero slots). */
static int encode_pack(const struct lent *le, uint64_t first, uint64_t n,
		       unsigned vcnt, unsigned encodebits, bool big,
		       uint32_t *running, uint8_t *p)
{
	uint32_t v[16] = { 0 }, base = *running;
	bool have_base = false;
	unsigned i;

	for (i = 0; i < vcnt && first + i < n; i++)
		v[i] = pack_value(&le[first + i], i, vcnt);
	for (i = 0; i < vcnt && first + i < n; i++) {
		const struct lent *e = &le[first + i];
		uint32_t nblk, want;

		if (e->type == Z_EROFS_LCLUSTER_TYPE_NONHEAD || e->sentinel)
			continue;
		nblk = pack_nblk(v, (int)i, big);
		want = e->blkaddr - nblk;
		if (have_base && want != base)
			return -EINVAL; /* pclusters not consecutive */
		base = want;
		have_base = true;
		*running = e->blkaddr;
	}
	memset(p, 0, vcnt * encodebits / 8 + 4);
	for (i = 0; i < vcnt; i++) {
		unsigned bit = i * encodebits;
		uint32_t w = get_le32(p + bit / 8);

		w |= v[i] << (bit % 8);
		put_le32(p + bit / 8, w);
	}
	put_le32(p + vcnt * encodebits / 8, base);
	return 0;
}

static int encode_compact(const struct ezfs_builder *b, const struct lent *le,
			  uint64_t n, uint32_t ebase_mod32, uint8_t *p)
{
	uint64_t init4, n2b, rest, i;
	uint32_t running = 0;
	int err;

	compact_regions(ebase_mod32, n, &init4, &n2b, &rest);
	for (i = 0; i < init4; i += 2, p += 8) {
		err = encode_pack(le, i, init4, 2, 16, b->big_pcluster,
				  &running, p);
		if (err)
			return err;
	}
	for (i = init4; i < init4 + n2b; i += 16, p += 32) {
		err = encode_pack(le, i, n, 16, 14, b->big_pcluster, &running,
				  p);
		if (err)
			return err;
	}
	for (i = init4 + n2b; i < n; i += 2, p += 8) {
		err = encode_pack(le, i, n, 2, 16, b->big_pcluster, &running,
				  p);
		if (err)
			return err;
	}
	return 0;
}

/*
 * [9.12] Encoded extent records (48BIT): one record per extent with its
 * byte length and format (0 raw, else algorithm + 1), byte address and
 * logical start; the tail fragment's record holds the fragment offset.
 * 16-byte records (32 for files of 4 GiB or more) let extents have any
 * length, which the fixed-output extents need.
 */
static uint32_t ext_recsz(const struct binode *in)
{
	return in->size > 0xFFFFFFFFull ? 32 : 16;
}

static uint32_t ext_size(const struct binode *in, const struct bzfile *z)
{
	uint32_t h = hdr_offset(in), rs = ext_recsz(in);

	/* byte-aligned data: le64 base address, 4-byte records (H + 8 is
	 * 4-byte aligned) */
	if (z->plen)
		return 8 + 8 + 4 * z->next;

	return ((h + 8 + rs - 1) & ~(rs - 1)) - h + rs * z->next;
}

void ezi_bld_zext_choose(const struct ezfs_builder *b, const struct binode *in,
			 struct bzfile *z)
{
	uint32_t sz;

	if (z->wholefrag || z->idata_len)
		return;
	sz = ext_size(in, z);
	if (sz > ezi_bld_zindex_size(b, in, false) && !z->plen)
		return;
	z->extents = true;
	z->compact = false;
	z->idx_size = sz;
}

static int encode_extents(const struct ezfs_builder *b, const struct binode *in,
			  uint8_t *p)
{
	const struct bzfile *z = in->z;
	uint32_t rs = ext_recsz(in), h = hdr_offset(in), k;
	uint16_t advise = Z_EROFS_ADVISE_EXTENTS | (rs == 32 ? 6 : 4);
	uint8_t *r = p + (((h + 8 + rs - 1) & ~(rs - 1)) - h);

	if (z->plen) {
		uint32_t lcs = ezi_bld_pcluster_blocks(b, in) << b->blkszbits;
		unsigned lcb = 0;

		while ((1u << lcb) < lcs)
			lcb++;
		memset(p, 0, 16);
		put_le16(p + 4, Z_EROFS_ADVISE_EXTENTS);
		p[7] = (uint8_t)(lcb - b->blkszbits);
		put_le64(p + 8, (uint64_t)z->ext[0].blkaddr << b->blkszbits);
		for (k = 0; k < z->next; k++)
			put_le32(
				p + 16 + 4 * k,
				z->plen[k] |
					(z->ext[k].type ==
							 Z_EROFS_LCLUSTER_TYPE_PLAIN
						 ? 0
						 : (uint32_t)(b->zalgs[in->zalg]
								      .alg +
							      1)
							   << Z_EROFS_EXTENT_PLEN_FMT_BIT));
		return 0;
	}
	if (z->frag_len || (z->next && z->ext[z->next - 1].frag))
		advise |= Z_EROFS_ADVISE_FRAGMENT_PCLUSTER;
	put_le32(p, z->next);
	put_le16(p + 4, advise);
	put_le16(p + 6, 0);
	memset(p + 8, 0, (size_t)(r - p) - 8 + (size_t)rs * z->next);
	for (k = 0; k < z->next; k++, r += rs) {
		const struct bextent *e = &z->ext[k];
		uint64_t pa = (uint64_t)e->blkaddr << b->blkszbits;
		uint32_t plen = e->blocks << b->blkszbits;

		if (e->frag) {
			plen = (uint32_t)z->fragoff;
			pa = z->fragoff >> 32;
		} else if (e->type != Z_EROFS_LCLUSTER_TYPE_PLAIN) {
			plen |= (uint32_t)(b->zalgs[in->zalg].alg + 1)
				<< Z_EROFS_EXTENT_PLEN_FMT_BIT;
			if (e->partial)
				plen |= Z_EROFS_EXTENT_PLEN_PARTIAL;
		}
		put_le32(r, plen);
		put_le32(r + 4, (uint32_t)pa);
		put_le32(r + 8, (uint32_t)(pa >> 32));
		put_le32(r + 12, (uint32_t)e->la);
		if (rs > 16)
			put_le32(r + 16, (uint32_t)(e->la >> 32));
	}
	return 0;
}

/* Write map header + index at p (= inode start + hdr_offset). */
int ezi_bld_zindex_encode(const struct ezfs_builder *b, const struct binode *in,
			  uint8_t *p)
{
	uint64_t n = (in->size + b->blksz - 1) >> b->blkszbits;
	bool compact = in->z->compact;
	uint16_t advise = 0;
	struct lent *le;
	int err = 0;

	if (in->z->wholefrag) {
		put_le64(p, in->z->fragoff | 1ull << 63);
		memset(p + 8, 0, 8);
		return 0;
	}
	if (in->z->extents)
		return encode_extents(b, in, p);
	le = calloc(n, sizeof(*le));
	if (!le)
		return -ENOMEM;
	build_lents(b, in, le, n);
	if (compact)
		advise |= Z_EROFS_ADVISE_COMPACTED_2B;
	if (b->big_pcluster)
		advise |= Z_EROFS_ADVISE_BIG_PCLUSTER_1 |
			  (compact ? Z_EROFS_ADVISE_BIG_PCLUSTER_2 : 0);
	if (in->z->idata_len)
		advise |= Z_EROFS_ADVISE_INLINE_PCLUSTER;
	if (in->z->frag_len)
		advise |= Z_EROFS_ADVISE_FRAGMENT_PCLUSTER;
	memset(p, 0, 8);
	if (in->z->frag_len)
		put_le32(p, (uint32_t)in->z->fragoff);
	else
		put_le16(p + 2, (uint16_t)in->z->idata_len);
	put_le16(p + 4, advise);
	p[6] = (uint8_t)b->zalgs[in->zalg].alg;
	p[7] = 0;
	if (compact) {
		/* the initial 4B region of an init4 < 2 file is never partial
		 */
		err = encode_compact(b, le, n, (hdr_offset(in) + 8) & 31,
				     p + 8);
	} else {
		memset(p + 8, 0, 8);
		encode_full(le, n, p + 16);
	}
	free(le);
	if (err)
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "%s: internal error encoding the index",
			    in->srcpath);
	return err;
}
