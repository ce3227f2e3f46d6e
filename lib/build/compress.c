/* SPDX-License-Identifier: MIT */
/*
 * compress.c - fixed-output compression of one file into pclusters (9.14).
 *
 * At each position the codec's destsize primitive fills one pcluster
 * (-C bytes) with as much input as fits. The result is kept only if its
 * block-rounded size is strictly smaller than the input it consumed (so
 * every extent reaches into a later lcluster and a pcluster of k > 1
 * blocks always has a CBLKCNT entry); otherwise one block of input is
 * stored raw (a PLAIN extent). The last <= 1 block is always raw. The
 * stream is right-aligned in its pcluster (0padding). Addresses are
 * relative to the file's first pcluster until layout.c places the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build/internal.h"
#include "codec/codec.h"
#include "format/erofs_fs.h"

bool bld_compress_wanted(const struct ezfs_builder *b, const struct binode *in)
{
	return b->p.alg >= 0 && S_ISREG(in->mode) && in->size > b->blksz;
}

void bld_zfile_free(struct bzfile *z)
{
	if (!z)
		return;
	free(z->ext);
	free(z->data);
	free(z->idata);
	free(z);
}

const struct ezfs_codec_ops *bld_codec(const struct ezfs_builder *b)
{
	switch (b->p.alg) {
	case EZFS_ALG_LZ4:
		return ezfs_codec_find(b->p.hc ? "lz4hc" : "lz4");
	case EZFS_ALG_LZMA:
		return ezfs_codec_find("lzma");
	case EZFS_ALG_DEFLATE:
		return ezfs_codec_find("libdeflate");
	case EZFS_ALG_ZSTD:
		return ezfs_codec_find("zstd");
	}
	return NULL;
}

void *bld_cctx_new(const struct ezfs_builder *b, int *err)
{
	const struct ezfs_codec_ops *ops = bld_codec(b);
	struct ezfs_codec_cfg cfg = { 0 };

	if (!ops || !ops->cctx_new || !ops->compress_destsize) {
		*err = -EOPNOTSUPP;
		return NULL;
	}
	cfg.lzma_dict_size = bld_lzma_dict_size(b);
	cfg.deflate_windowbits = 15;
	cfg.zstd_windowlog = bld_zstd_windowlog(b) - 10;
	cfg.lz4_max_distance = b->lz4_maxdist;
	return ops->cctx_new(b->p.level, &cfg, err);
}

void bld_cctx_free(const struct ezfs_builder *b, void *cctx)
{
	const struct ezfs_codec_ops *ops = bld_codec(b);

	if (ops && ops->cctx_free)
		ops->cctx_free(cctx);
}

static int add_extent(struct bzfile *z, uint64_t la, uint32_t blocks,
		      uint8_t type)
{
	if (z->next == z->cap) {
		uint32_t cap = z->cap ? z->cap * 2 : 16;
		struct bextent *e = realloc(z->ext, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		z->ext = e;
		z->cap = cap;
	}
	z->ext[z->next].la = la;
	z->ext[z->next].blocks = blocks;
	z->ext[z->next].blkaddr = z->blocks;
	z->ext[z->next].type = type;
	z->next++;
	z->blocks += blocks;
	return 0;
}

/* Make room for `blocks` more blocks of pcluster data. */
static uint8_t *grow_data(struct bzfile *z, uint64_t *cap, uint32_t blocks,
			  unsigned blkszbits)
{
	uint64_t need = ((uint64_t)z->blocks + blocks) << blkszbits;

	if (need > *cap) {
		uint64_t ncap = *cap ? *cap * 2 : (64u << 10);
		uint8_t *d;

		while (ncap < need)
			ncap *= 2;
		d = realloc(z->data, ncap);
		if (!d)
			return NULL;
		z->data = d;
		*cap = ncap;
	}
	return z->data + ((uint64_t)z->blocks << blkszbits);
}

/*
 * ztailpacking (9.9): the tail (<= 1 block) compressed or raw, stored after
 * the index. Returns 1 if inlined, 0 if it must go to a block.
 */
static int inline_tail(const struct ezfs_builder *b,
		       const struct ezfs_codec_ops *ops, void *cctx,
		       struct bzfile *z, uint64_t pos, const uint8_t *in,
		       size_t len, uint8_t *obuf)
{
	/* inline data must not cross a block: leave room for alignment */
	size_t maxin = b->blksz - 32, inlen = len;
	uint8_t type = Z_EROFS_LCLUSTER_TYPE_PLAIN;
	const uint8_t *src = in;
	int r;

	r = ops->compress_destsize(cctx, in, &inlen, obuf, maxin);
	if (r > 0 && inlen == len && (size_t)r < len) {
		type = Z_EROFS_LCLUSTER_TYPE_HEAD1;
		src = obuf;
		len = (size_t)r;
	} else if (r < 0 && r != -ENOSPC) {
		return r;
	}
	if (len > maxin)
		return 0;
	z->idata = malloc(len);
	if (!z->idata)
		return -ENOMEM;
	memcpy(z->idata, src, len);
	z->idata_len = (uint32_t)len;
	r = add_extent(z, pos, 0, type);
	return r < 0 ? r : 1;
}

/* Longest extent: 0x7FF lclusters keeps every delta below CBLKCNT. */
static uint64_t max_extent(const struct ezfs_builder *b)
{
	uint64_t m = (uint64_t)0x7FF << b->blkszbits;

	return m < EROFS_PCLUSTER_MAX_DSIZE ? m : EROFS_PCLUSTER_MAX_DSIZE;
}

/*
 * Compress in (whose size > blksz). *out = NULL when compression does not
 * save space (the caller stores the file flat). cctx: from bld_cctx_new.
 */
int bld_compress_file(const struct ezfs_builder *b, const struct binode *in,
		      void *cctx, struct bzfile **out)
{
	const struct ezfs_codec_ops *ops = bld_codec(b);
	uint64_t maxext = max_extent(b), size = in->size, pos = 0;
	uint64_t wpos = 0, wend = 0, dcap = 0;	/* window: file [wpos, wend) */
	uint32_t pcap = b->pclusterblks << b->blkszbits, blksz = b->blksz;
	uint8_t *win = NULL, *obuf = NULL, *dst;
	struct bzfile *z;
	int fd, err = 0;

	*out = NULL;
	z = calloc(1, sizeof(*z));
	win = malloc(maxext);
	obuf = malloc(pcap);
	if (!z || !win || !obuf) {
		err = -ENOMEM;
		goto fail_nofd;
	}
	fd = open(in->srcpath, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		bld_log(b, EZFS_LOG_ERROR, "%s: open: %s", in->srcpath,
			strerror(errno));
		goto fail_nofd;
	}
	while (pos < size) {
		uint64_t rem = size - pos, want = rem < maxext ? rem : maxext;
		size_t inlen;
		int r;

		/* 1. slide the window so that [pos, pos + want) is loaded */
		if (pos + want > wend) {
			size_t keep = (size_t)(wend - pos);

			memmove(win, win + (pos - wpos), keep);
			wpos = pos;
			while (wend < pos + want) {
				ssize_t n = pread(fd, win + (wend - wpos),
						  (size_t)(maxext - (wend - wpos)),
						  (off_t)wend);

				if (n < 0 && errno == EINTR)
					continue;
				if (n <= 0) {
					err = n < 0 ? -errno : -EAGAIN;
					bld_log(b, EZFS_LOG_ERROR, "%s: %s",
						in->srcpath, n < 0 ?
						strerror(errno) :
						"file shrank while building");
					goto fail;
				}
				wend += (uint64_t)n;
			}
		}
		/* 2. last piece of at most one block: inline or raw */
		if (rem <= blksz) {
			if (b->p.flags & EZFS_BUILD_ZTAILPACKING) {
				err = inline_tail(b, ops, cctx, z, pos,
						  win + (pos - wpos), (size_t)rem,
						  obuf);
				if (err < 0)
					goto fail;
				if (err > 0) {
					err = 0;
					pos += rem;
					continue;
				}
			}
			goto raw;
		}
		/* 3. fill one pcluster */
		inlen = (size_t)want;
		r = ops->compress_destsize(cctx, win + (pos - wpos), &inlen,
					   obuf, pcap);
		if (r == -ENOSPC)
			goto raw;
		if (r < 0) {
			err = r;
			bld_log(b, EZFS_LOG_ERROR, "%s: compression failed: %s",
				in->srcpath, strerror(-r));
			goto fail;
		} else {
			uint32_t ob = ((uint32_t)r + blksz - 1) & ~(blksz - 1);

			if (!r || ob >= inlen)
				goto raw;
			dst = grow_data(z, &dcap, ob >> b->blkszbits,
					b->blkszbits);
			if (!dst)
				goto nomem;
			memset(dst, 0, ob - (uint32_t)r);
			memcpy(dst + ob - r, obuf, (size_t)r);
			err = add_extent(z, pos, ob >> b->blkszbits,
					 Z_EROFS_LCLUSTER_TYPE_HEAD1);
			if (err)
				goto fail;
			pos += inlen;
			continue;
		}
raw:
		want = rem < blksz ? rem : blksz;
		dst = grow_data(z, &dcap, 1, b->blkszbits);
		if (!dst)
			goto nomem;
		memcpy(dst, win + (pos - wpos), (size_t)want);
		memset(dst + want, 0, blksz - (size_t)want);
		err = add_extent(z, pos, 1, Z_EROFS_LCLUSTER_TYPE_PLAIN);
		if (err)
			goto fail;
		pos += want;
	}
	close(fd);
	free(win);
	free(obuf);
	z->datalen = (uint64_t)z->blocks << b->blkszbits;
	z->compact = !(b->p.flags & EZFS_BUILD_LEGACY_COMPRESS);
	z->idx_size = bld_zindex_size(b, in, z->compact);
	/* 9.14 step 7: keep it only if it saves space */
	if (z->datalen + z->idx_size + z->idata_len >= size) {
		bld_zfile_free(z);
		return 0;
	}
	*out = z;
	return 0;
nomem:
	err = -ENOMEM;
fail:
	close(fd);
fail_nofd:
	free(win);
	free(obuf);
	bld_zfile_free(z);
	return err;
}
