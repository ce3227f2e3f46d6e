/* SPDX-License-Identifier: MIT */
/*
 * zunaligned.c - -E48bit byte-aligned compression (9.12), as mkfs.erofs
 * does for zstd and deflate: the file is cut into fixed extents of one
 * pcluster size of input, each compressed on its own (or kept raw when
 * that is not smaller) and stored back to back without padding. The index
 * is then a base byte address and one 4-byte record (length | format) per
 * extent; the lcluster size is the extent length.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "write/internal.h"
#include "codec/codec.h"
#include "format/erofs_fs.h"

bool ezi_bld_zunaligned_ok(const struct ezfs_builder *b,
			   const struct binode *in)
{
	uint32_t pcs = ezi_bld_pcluster_blocks(b, in) << b->blkszbits;
	int alg = b->zalgs[in->zalg].alg;

	/* fixed power-of-two extents: no room for tails, fragments,
	 * shared pclusters */
	return (b->p.flags & EZFS_BUILD_48BIT) &&
	       !(b->p.flags & (EZFS_BUILD_ZTAILPACKING | EZFS_BUILD_FRAGMENTS |
			       EZFS_BUILD_ALL_FRAGMENTS | EZFS_BUILD_DEDUPE)) &&
	       (alg == EZFS_ALG_ZSTD || alg == EZFS_ALG_DEFLATE) &&
	       !(pcs & (pcs - 1));
}

/* Append len bytes to z->data (cap in *cap). */
static int put_data(struct bzfile *z, uint64_t *cap, const void *p, size_t len)
{
	if (z->datalen + len > *cap) {
		uint64_t ncap = *cap ? *cap * 2 : (64u << 10);
		uint8_t *d;

		while (ncap < z->datalen + len)
			ncap *= 2;
		d = realloc(z->data, ncap);
		if (!d)
			return -ENOMEM;
		z->data = d;
		*cap = ncap;
	}
	memcpy(z->data + z->datalen, p, len);
	z->datalen += len;
	return 0;
}

int ezi_bld_zunaligned(const struct ezfs_builder *b, const struct binode *in,
		       void *hctx, struct bzfile **out)
{
	const struct ezfs_codec_ops *ops = ezi_bld_codec(b, in->zalg);
	uint32_t pcs = ezi_bld_pcluster_blocks(b, in) << b->blkszbits;
	uint64_t size = in->size, pos, cap = 0, nrec = (size + pcs - 1) / pcs;
	uint8_t *ibuf = malloc(pcs), *obuf = malloc(pcs);
	struct bsrc src = { .fd = -1 };
	struct bzfile *z = calloc(1, sizeof(*z));
	void *cctx;
	uint32_t k;
	int err = 0;

	*out = NULL;
	if (z) {
		z->ext = calloc(nrec, sizeof(*z->ext));
		z->plen = calloc(nrec, sizeof(*z->plen));
	}
	if (!ibuf || !obuf || !z || !z->ext || !z->plen) {
		err = -ENOMEM;
		goto out;
	}
	cctx = ezi_bld_cctx_get(b, hctx, in->zalg, &err);
	if (!cctx) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "cannot set up the compressor: %s", strerror(-err));
		goto out;
	}
	err = ezi_bld_src_open(b, in, &src);
	for (k = 0, pos = 0; !err && pos < size; k++, pos += pcs) {
		size_t len = size - pos < pcs ? (size_t)(size - pos) : pcs;
		size_t inlen = len;
		ssize_t n = ezi_bld_src_pread(&src, ibuf, len, pos);
		int r;

		if (n != (ssize_t)len) {
			err = n < 0 ? (int)n : -EAGAIN;
			ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s", in->srcpath,
				    n < 0 ? strerror(-err)
					  : "file shrank while building");
			break;
		}
		/* compressed only when strictly smaller than the input */
		r = len <= 64 ? -ENOSPC
			      : ops->compress_destsize(cctx, ibuf, &inlen, obuf,
						       (uint32_t)len - 1);
		if (r < 0 && r != -ENOSPC) {
			err = r;
			ezi_bld_log(b, EZFS_LOG_ERROR,
				    "%s: compression failed: %s", in->srcpath,
				    strerror(-err));
			break;
		}
		z->ext[k].la = pos;
		if (r > 0 && inlen == len) {
			z->ext[k].type = Z_EROFS_LCLUSTER_TYPE_HEAD1;
			z->plen[k] = (uint32_t)r;
			err = put_data(z, &cap, obuf, (size_t)r);
		} else {
			z->ext[k].type = Z_EROFS_LCLUSTER_TYPE_PLAIN;
			z->plen[k] = (uint32_t)len;
			err = put_data(z, &cap, ibuf, len);
		}
		z->next = k + 1;
	}
	if (!err)
		err = ezi_bld_src_check(b, in, &src);
	if (err)
		goto out;
	/* whole blocks: the writer places z->data at a block boundary */
	z->blocks = (uint32_t)((z->datalen + b->blksz - 1) >> b->blkszbits);
	if (z->datalen & (b->blksz - 1)) {
		static const uint8_t zero[4096];
		size_t pad = b->blksz - (size_t)(z->datalen & (b->blksz - 1));

		err = put_data(z, &cap, zero, pad);
		if (err)
			goto out;
	}
	ezi_bld_zext_choose(b, in, z);
	/* 9.14 step 7: keep a file only if it saves space */
	if (z->datalen + z->idx_size < size) {
		*out = z;
		z = NULL;
	}
out:
	ezi_bld_cctx_put(b, hctx, in->zalg);
	ezi_bld_src_close(&src);
	ezi_bld_zfile_free(z);
	free(ibuf);
	free(obuf);
	return err;
}
