/* SPDX-License-Identifier: MIT */
/*
 * fragnear.c - near-copies of earlier fragments (9.10).
 *
 * A file that is one whole fragment but only ends like an earlier fragment
 * (a near-copy: another header, the same body; at least one block of it is
 * the same, fragments.c finds it) would add all its bytes to
 * the packed inode. Instead its head is compressed into pclusters of its
 * own, appended after the file data, and the rest of the file points at
 * the end of the earlier fragment, when that takes fewer bytes than the
 * whole file would add to the packed inode (estimated by compressing it
 * after the packed bytes before it). Runs on the writer thread, in the fixed
 * fragment order, so the image does not depend on the number of workers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "write/internal.h"
#include "codec/codec.h"
#include "format/erofs_fs.h"

/*
 * Compress f[0, x) with x >= head into pclusters in *data (*blocks
 * blocks), extents into ext (at most *n); each extent reaches into a later
 * lcluster. Returns x, or a negative errno.
 */
static int64_t near_head(const struct ezfs_builder *b,
			 const struct ezfs_codec_ops *ops, void *cctx,
			 const uint8_t *f, uint64_t len, uint64_t head,
			 uint32_t pcap, uint8_t *data, uint32_t *blocks,
			 struct bextent *ext, uint32_t *n, uint32_t maxn)
{
	uint32_t blksz = b->blksz;
	uint64_t pos = 0;

	*blocks = 0;
	*n = 0;
	while (pos < head) {
		uint8_t *dst = data + ((uint64_t)*blocks << b->blkszbits);
		size_t inlen = (size_t)(head - pos);
		uint32_t cap = pcap, ob = 0;
		int r;

		if (*n == maxn ||
		    ((uint64_t)*blocks << b->blkszbits) + pcap > len + pcap)
			return -E2BIG;
		/* the smallest pcluster that holds the rest of the head */
		r = ops->compress_destsize(cctx, f + pos, &inlen, dst, cap);
		if (r < 0 && r != -ENOSPC)
			return r;
		if (r > 0 && inlen == head - pos)
			cap = ((uint32_t)r + blksz - 1) & ~(blksz - 1);
		/* filled to the brim: more of the matching rest is free */
		inlen = (size_t)(len - pos);
		r = ops->compress_destsize(cctx, f + pos, &inlen, dst, cap);
		if (r < 0 && r != -ENOSPC)
			return r;
		if (r > 0)
			ob = ((uint32_t)r + blksz - 1) & ~(blksz - 1);
		if (r > 0 && ob < inlen) {
			memmove(dst + ob - r, dst, (size_t)r);
			memset(dst, 0, ob - (uint32_t)r);
			ext[*n].type = Z_EROFS_LCLUSTER_TYPE_HEAD1;
		} else {
			/* one raw block */
			ob = blksz;
			inlen = len - pos < blksz ? (size_t)(len - pos) : blksz;
			memcpy(dst, f + pos, inlen);
			memset(dst + inlen, 0, blksz - inlen);
			ext[*n].type = Z_EROFS_LCLUSTER_TYPE_PLAIN;
		}
		ext[*n].la = pos;
		ext[*n].blocks = ob >> b->blkszbits;
		ext[*n].blkaddr = *blocks;
		ext[*n].frag = false;
		ext[*n].ref = false;
		ext[*n].xref = false;
		ext[*n].partial = false;
		ext[*n].hashed = false;
		(*n)++;
		*blocks += ob >> b->blkszbits;
		pos += inlen;
	}
	return (int64_t)pos;
}

/*
 * Bytes that f[0, len) adds to the packed inode after what is there now:
 * compressed after the last NEAR_CTX packed bytes, less those alone
 * (at most `alone`, its size compressed on its own).
 */
#define NEAR_CTX (64u << 10)
static int packed_cost(const struct ezfs_builder *b,
		       const struct ezfs_codec_ops *ops, void *cctx,
		       const uint8_t *f, uint64_t len, int alone)
{
	uint64_t p = b->packed_len < NEAR_CTX ? b->packed_len : NEAR_CTX;
	size_t n = (size_t)(p + len), cap = n + n / 8 + 4096, in1 = (size_t)p;
	uint8_t *buf = malloc(n), *out = malloc(cap);
	int r1 = 0, r2 = -ENOMEM;

	if (!buf || !out || !p)
		goto out;
	r1 = ezi_bld_packed_read(b, buf, (size_t)p, b->packed_len - p);
	if (r1 < 0)
		goto out;
	memcpy(buf + p, f, (size_t)len);
	r1 = ops->compress_destsize(cctx, buf, &in1, out, cap);
	if (r1 < 0 || in1 != p)
		goto out;
	in1 = n;
	r2 = ops->compress_destsize(cctx, buf, &in1, out, cap);
	if (r2 < 0 || in1 != n)
		r2 = -ENOMEM;
out:
	free(buf);
	free(out);
	if (r2 < 0 || r1 < 0)
		return r1 < 0 && r1 != -ENOSPC ? r1 : alone;
	if (r2 <= r1)
		return 0; /* (a codec's bounds: more input, less output) */
	return r2 - r1 < alone ? r2 - r1 : alone;
}

int ezi_bld_frag_near(struct ezfs_builder *b, struct binode *in,
		      struct bzfile *z, uint64_t cend, uint64_t matched)
{
	const struct ezfs_codec_ops *ops = ezi_bld_codec(b, in->zalg);
	uint32_t pcap = ezi_bld_pcluster_blocks(b, in) << b->blkszbits;
	uint64_t len = z->frag_len, head = len - matched, at;
	uint32_t maxn = (uint32_t)(len >> b->blkszbits) + 2, n, blocks, k;
	uint32_t idx = z->idx_size;
	struct bextent *ext = NULL;
	struct bzfile h;
	uint8_t *data = NULL;
	size_t est = (size_t)len;
	void *cctx;
	int64_t x;
	int err = 0, r;

	if (!z->wholefrag || matched >= len || !head ||
	    (b->p.flags & (EZFS_BUILD_48BIT | EZFS_BUILD_ALL_FRAGMENTS)))
		return 0;
	if (!b->fragcctx) {
		b->fragcctx = ezi_bld_cctx_new(b, &err);
		if (!b->fragcctx)
			return err;
	}
	cctx = ezi_bld_cctx_get(b, b->fragcctx, in->zalg, &err);
	if (!cctx)
		return err;
	data = malloc(len + pcap);
	ext = malloc(maxn * sizeof(*ext));
	if (!data || !ext) {
		err = -ENOMEM;
		goto out;
	}
	/* what the whole file would add to the packed inode */
	r = ops->compress_destsize(cctx, z->frag, &est, data, pcap);
	if (r < 0 && r != -ENOSPC) {
		err = r;
		goto out;
	}
	if (r <= 0 || est < len)
		goto out; /* (not a whole-file fragment then) */
	r = packed_cost(b, ops, cctx, z->frag, len, r);
	if (r < 0) {
		err = r;
		goto out;
	}
	x = near_head(b, ops, cctx, z->frag, len, head, pcap, data, &blocks,
		      ext, &n, maxn);
	if (x == -E2BIG)
		goto out;
	if (x < 0) {
		err = (int)x;
		goto out;
	}
	if ((uint64_t)x < len) {
		ext[n] =
			(struct bextent){ .la = (uint64_t)x,
					  .frag = true,
					  .type = Z_EROFS_LCLUSTER_TYPE_HEAD1 };
		n++;
	}
	/* identical pclusters of earlier files (and of this head) are
	 * shared, as every file's are with fragments (dedupe.c): only new
	 * blocks cost (seven copies of a header that ends like an earlier
	 * one paid seven heads) */
	h = *z;
	h.ext = ext;
	h.next = n;
	h.data = data;
	h.blocks = blocks;
	if (((uint64_t)ezi_bld_dedupe_new_blocks(b, in, &h) << b->blkszbits) >=
	    (uint64_t)r)
		goto out; /* the packed inode is cheaper */
	free(z->ext);
	free(z->data);
	z->ext = ext;
	z->data = data;
	ext = NULL;
	data = NULL;
	z->next = z->cap = n;
	z->blocks = blocks;
	z->compact = !(b->p.flags & EZFS_BUILD_LEGACY_COMPRESS) && !z->has_ref;
	err = ezi_bld_dedupe_pclusters(b, in, z);
	if (!err)
		err = ezi_bld_pwrite(b, z->data,
				     (size_t)z->blocks << b->blkszbits,
				     b->cursor << b->blkszbits);
	free(z->data);
	z->data = NULL;
	if (err)
		goto out;
	/* data.c's rule: every address relative to the cursor (mod 2^32) */
	at = ezi_bld_take_blocks(b, z->blocks);
	for (k = 0; k < z->next; k++)
		if (!z->ext[k].frag)
			z->ext[k].blkaddr += (uint32_t)at;
	z->datalen = (uint64_t)z->blocks << b->blkszbits;
	z->wholefrag = false;
	z->frag_len = len - (uint64_t)x;
	z->fragoff = cend - z->frag_len;
	z->idx_size = ezi_bld_zindex_size(b, in, z->compact);
	in->datalayout = z->compact ? EROFS_INODE_COMPRESSED_COMPACT
				    : EROFS_INODE_COMPRESSED_FULL;
	in->unit_size += z->idx_size - idx;
	err = 1;
out:
	ezi_bld_cctx_put(b, b->fragcctx, in->zalg);
	free(data);
	free(ext);
	return err;
}
