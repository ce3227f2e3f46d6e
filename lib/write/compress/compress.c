/* SPDX-License-Identifier: MIT */
/*
 * compress.c - fixed-output compression of one file into pclusters (9.14).
 *
 * At each position the codec's destsize primitive fills one pcluster
 * (-C bytes) with as much input as fits. The result is kept only if its
 * block-rounded size is strictly smaller than the input it consumed (so
 * every extent reaches into a later lcluster and a pcluster of k > 1
 * blocks always has a CBLKCNT entry); otherwise one block of input is
 * stored raw (a PLAIN extent). The stream is right-aligned in its pcluster
 * (0padding). The end of the file: without options the last <= 1 block is
 * raw; with ztailpacking a rest that compresses into the room after the
 * index is inlined (9.9); with fragments the last <= 1 pcluster goes to the
 * packed inode (9.10). Addresses are relative to the file's first
 * pcluster until data.c places the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "write/internal.h"
#include "codec/codec.h"
#include "format/erofs_fs.h"

bool ezi_bld_compress_wanted(const struct ezfs_builder *b,
			     const struct binode *in)
{
	if (!b->nzalgs || in->zoff || !S_ISREG(in->mode) || !in->size)
		return false;
	/* small files may become an inline stream or a fragment */
	return in->size > b->blksz ||
	       (b->p.flags & (EZFS_BUILD_ZTAILPACKING | EZFS_BUILD_FRAGMENTS |
			      EZFS_BUILD_ALL_FRAGMENTS));
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
	z->ext[z->next].frag = false;
	z->ext[z->next].ref = false;
	z->ext[z->next].xref = false;
	z->ext[z->next].partial = false;
	z->ext[z->next].hashed = false;
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
 * Room for an inline tail after the unit's metadata (9.9). With -E
 * dedupe, only what the unit's first block leaves: a tail inline is
 * paid again by every later copy of the file, a pcluster is shared, and
 * the spanning room (more tails inline) made /usr/include 108 blocks
 * larger on the vendor line.
 */
size_t ezi_bld_zinline_room(const struct ezfs_builder *b,
			    const struct binode *in)
{
	uint32_t hdr = ((in->extended ? 64u : 32u) + in->xattr_isize + 7) & ~7u;
	uint64_t used =
		(uint64_t)hdr +
		ezi_bld_zindex_size(b, in,
				    !(b->p.flags & EZFS_BUILD_LEGACY_COMPRESS));

	if (b->p.flags & EZFS_BUILD_DEDUPE)
		return used < b->blksz ? b->blksz - used : 0;
	return ezi_bld_inline_room(b->blksz, used);
}

static int set_inline(struct bzfile *z, uint64_t pos, const uint8_t *src,
		      size_t len, uint8_t type)
{
	int r;

	z->idata = malloc(len ? len : 1);
	if (!z->idata)
		return -ENOMEM;
	memcpy(z->idata, src, len);
	z->idata_len = (uint32_t)len;
	r = add_extent(z, pos, 0, type);
	return r < 0 ? r : 1;
}

/*
 * Fragments: do the file's last rem bytes, from pos, go to the packed
 * inode? The last <= 1 pcluster, or what fragshare.c chose (share: the
 * end of another file; zkeep: a long end kept for a later file), or all.
 */
static bool frag_rest(uint64_t pos, uint64_t rem, uint64_t share, bool allfrag,
		      uint64_t zkeep, uint32_t pcap, uint32_t blksz)
{
	if (share)
		return rem <= share;
	if (allfrag)
		return pos == 0;
	return rem <= pcap || (zkeep && rem <= zkeep + blksz);
}

/*
 * Fragments (9.10): keep the file's bytes [pos, size) for the packed inode;
 * the window holds [wpos, wend), the rest is read from src.
 */
static int take_frag(const struct ezfs_builder *b, const struct binode *in,
		     struct bzfile *z, const struct bsrc *src,
		     const uint8_t *win, uint64_t wpos, uint64_t wend,
		     uint64_t pos, uint64_t size, uint64_t base)
{
	uint64_t len = size - pos, have = wend > pos ? wend - pos : 0;
	int r;

	if (have > len)
		have = len;
	/* with a spool file (fragments.c) the bytes go there, in pieces:
	 * a fragment may be a whole large file */
	if (ezi_bld_spool_reserve(b, len, &z->spoff)) {
		size_t cap = len - have < (256u << 10) ? (size_t)(len - have)
						       : (256u << 10);
		uint8_t *buf = cap ? malloc(cap) : NULL;

		r = ezi_bld_spool_write(b, win + (pos - wpos), (size_t)have,
					z->spoff);
		if (!r && cap && !buf)
			r = -ENOMEM;
		while (!r && have < len) {
			size_t k =
				len - have < cap ? (size_t)(len - have) : cap;
			ssize_t n = ezi_bld_src_pread(src, buf, k,
						      base + pos + have);

			if (n <= 0) {
				ezi_bld_log(
					b, EZFS_LOG_ERROR, "%s: %s",
					in->srcpath,
					n < 0 ? strerror((int)-n)
					      : "file shrank while building");
				r = n < 0 ? (int)n : -EAGAIN;
				break;
			}
			r = ezi_bld_spool_write(b, buf, (size_t)n,
						z->spoff + have);
			have += (uint64_t)n;
		}
		free(buf);
		if (r)
			return r;
		z->spooled = true;
		goto spooled;
	}
	z->frag = malloc(len);
	if (!z->frag)
		return -ENOMEM;
	memcpy(z->frag, win + (pos - wpos), (size_t)have);
	while (have < len) {
		ssize_t n = ezi_bld_src_pread(src, z->frag + have,
					      (size_t)(len - have),
					      base + pos + have);

		if (n <= 0) {
			ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s", in->srcpath,
				    n < 0 ? strerror((int)-n)
					  : "file shrank while building");
			return n < 0 ? (int)n : -EAGAIN;
		}
		have += (uint64_t)n;
	}
spooled:
	z->frag_len = len;
	r = add_extent(z, pos, 0, Z_EROFS_LCLUSTER_TYPE_HEAD1);
	if (r)
		return r;
	z->ext[z->next - 1].frag = true;
	return 0;
}

/*
 * ztailpacking, last pcluster of a file (r bytes in obuf, all `rem` input
 * consumed): if filling one block less (cap) leaves a rest that compresses
 * into the inline room, use that (the loop then inlines the rest), saving
 * a block. Returns the stream size now in obuf and updates *inlen.
 */
static int shrink_last(const struct ezfs_codec_ops *ops, void *cctx,
		       const uint8_t *in, uint64_t rem, uint32_t cap,
		       unsigned blkszbits, size_t room, size_t *inlen,
		       uint8_t *obuf, uint8_t *tmp, uint8_t *tmp2, int r)
{
	size_t in2 = (size_t)rem, in3;
	uint64_t ob2;
	int r2, r3;

	if (!room)
		return r;
	r2 = ops->compress_destsize(cctx, in, &in2, tmp, cap);
	if (r2 <= 0 || in2 >= rem)
		return r2 < 0 && r2 != -ENOSPC ? r2 : r;
	ob2 = (((uint64_t)r2 >> blkszbits) + !!(r2 & ((1u << blkszbits) - 1)))
	      << blkszbits;
	if (ob2 >= in2)
		return r;
	in3 = (size_t)rem - in2;
	r3 = ops->compress_destsize(cctx, in + in2, &in3, tmp2, (uint32_t)room);
	if (r3 <= 0 || in3 != rem - in2 || (size_t)r3 >= room ||
	    (size_t)r3 >= in3)
		return r3 < 0 && r3 != -ENOSPC ? r3 : r;
	memcpy(obuf, tmp, (size_t)r2);
	*inlen = in2;
	return r2;
}

static int add_ref(struct bzfile *z, uint64_t la, uint32_t j)
{
	struct bextent src = z->ext[j];
	uint32_t blocks = z->blocks;
	int r = add_extent(z, la, src.blocks, src.type);

	if (r)
		return r;
	z->blocks = blocks; /* no new blocks */
	z->ext[z->next - 1].blkaddr = src.blkaddr;
	z->ext[z->next - 1].ref = true;
	z->ext[z->next - 1].refidx = j;
	z->has_ref = true;
	return 0;
}

/* zxdd.c's match: the previous extent cut at m->at, a reference there */
static int add_xref(struct bzfile *z, uint64_t pos, const struct bxmatch *m)
{
	uint32_t blocks = z->blocks;
	struct bextent *e;
	int r;

	if (m->at < pos)
		z->ext[z->next - 1].partial =
			z->ext[z->next - 1].type != Z_EROFS_LCLUSTER_TYPE_PLAIN;
	r = add_extent(z, m->at, m->blocks, m->type);
	if (r)
		return r;
	z->blocks = blocks; /* no new blocks */
	e = &z->ext[z->next - 1];
	e->blkaddr = m->own ? z->ext[m->blkaddr].blkaddr : m->blkaddr;
	e->ref = m->own;
	e->xref = !m->own;
	e->refidx = m->blkaddr;
	e->partial = m->partial;
	z->has_ref = true;
	return 0;
}

/*
 * fragshare.c's later file: the pcluster size (whole blocks) that holds
 * the head bytes left before the shared end, or pcap if they need more.
 */
static int share_cap(const struct ezfs_codec_ops *ops, void *cctx,
		     const uint8_t *in, uint64_t head, uint32_t pcap,
		     uint32_t blksz, uint8_t *obuf)
{
	size_t inlen = (size_t)head;
	int r = ops->compress_destsize(cctx, in, &inlen, obuf, pcap);

	if (r < 0 && r != -ENOSPC)
		return r;
	if (r > 0 && inlen == head)
		return (int)(((uint32_t)r + blksz - 1) & ~(blksz - 1));
	return (int)pcap;
}

/* What a file's window holds past the pcluster being made (below) */
#define WIN_AHEAD (4ull << 20)

/* Longest extent: 0x7FF lclusters keeps every delta below CBLKCNT. */
static uint64_t max_extent(const struct ezfs_builder *b)
{
	uint64_t m = (uint64_t)0x7FF << b->blkszbits;

	return m < EROFS_PCLUSTER_MAX_DSIZE ? m : EROFS_PCLUSTER_MAX_DSIZE;
}

/*
 * Where pclusters are shared (dedupe.c), the worker hashes the ones it
 * made, so that the writer thread only looks them up: on 64 MiB of text
 * (lz4, fragments) the hashing was 5 of the writer's last 30 ms, after
 * both workers had finished.
 */
static void hash_pclusters(const struct ezfs_builder *b,
			   const struct binode *in, struct bzfile *z)
{
	uint32_t k;

	if (!ezi_bld_dedupe_shares(b, in))
		return;
	for (k = 0; k < z->next; k++) {
		struct bextent *e = &z->ext[k];

		if (!e->blocks || e->frag || e->ref || e->xref)
			continue;
		e->crc = ezi_crc32c(
			0, z->data + ((uint64_t)e->blkaddr << b->blkszbits),
			(size_t)e->blocks << b->blkszbits);
		e->hashed = true;
	}
}

/*
 * Compress a file (mem = NULL: in->srcpath, size in->size) or a memory
 * range (the packed inode: no fragments, result kept as is; its end
 * inline when mroom, the room for it, is not 0). *out = NULL when
 * compression does not save space (the caller stores the file flat).
 * cctx: from ezi_bld_cctx_new.
 */
static int compress_src(const struct ezfs_builder *b, const struct binode *in,
			void *cctx, const uint8_t *mem, uint64_t size,
			size_t mroom, bool drop, const struct bzpart *pt,
			struct bxdd *xd, struct bzfile **out)
{
	/* a part of a split file (zsplit.c): only the last has the tail */
	bool tail = !mem && (!pt || pt->last);
	uint64_t base = pt ? pt->base : 0;
	const struct ezfs_codec_ops *ops = ezi_bld_codec(b, in->zalg);
	uint64_t maxext = max_extent(b), pos = 0, wcap;
	uint64_t wpos = 0, wend = 0, dcap = 0; /* window: file [wpos, wend) */
	uint64_t dropped = 0; /* drop: mem's pages below are dropped */
	uint32_t pcap = ezi_bld_pcluster_blocks(b, in) << b->blkszbits;
	uint32_t blksz = b->blksz;
	uint8_t *win = NULL, *obuf = NULL, *obuf2 = NULL, *obuf3 = NULL, *dst;
	uint8_t *obufd = NULL;
	/* -E dedupe: inside the file (zidd.c), or across files on the
	 * writer (zxdd.c, xd) */
	bool dedup = !mem && !xd && (b->p.flags & EZFS_BUILD_DEDUPE);
	bool wide = dedup || xd;
	struct bidd dd = { 0 };
	size_t rawlen = 0, rawblks = 0;
	bool allfrag = tail && (b->p.flags & EZFS_BUILD_ALL_FRAGMENTS);
	bool frags = allfrag || (tail && (b->p.flags & EZFS_BUILD_FRAGMENTS));
	bool ztail =
		(tail && !frags && (b->p.flags & EZFS_BUILD_ZTAILPACKING)) ||
		mroom;
	/* fragshare.c: keep a long fragment, or share the end of another
	 * (with all-fragments too: the head then goes to pclusters) */
	uint64_t zkeep = frags && !allfrag ? in->zkeep : 0;
	uint64_t share = frags ? ezi_bld_zshare(in) : 0;
	size_t room = mroom ? mroom : ztail ? ezi_bld_zinline_room(b, in) : 0;
	struct bzfile *z;
	struct bsrc src = { .fd = -1 };
	void *hctx = cctx;
	int err = 0;

	*out = NULL;
	cctx = ezi_bld_cctx_get(b, hctx, in->zalg, &err);
	if (!cctx) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "cannot set up the compressor: %s", strerror(-err));
		return err;
	}
	z = calloc(1, sizeof(*z));
	/*
	 * The window holds the file's rest when it is an extent's worth or
	 * less (it may then be one fragment, or inline), else at least
	 * WIN_AHEAD past pos, which the codec is offered (as mkfs.erofs
	 * 1.9.3 offers its 4000 to 8000 KiB queue): it slides (a memmove of
	 * at most WIN_AHEAD) once per WIN_AHEAD of input, not after every
	 * pcluster (8 MiB moved per 64 KiB pcluster made 5 GB for 128 MiB
	 * of text). Dedupe compares whole extents inside it and keeps the
	 * previous one: twice the longest extent. One extent, not two,
	 * took 16 of the 66 MiB peak of 64 MiB of text on 2 workers.
	 */
	wcap = wide ? 2 * maxext : maxext;
	if (wcap > size)
		wcap = size;
	win = mem ? (uint8_t *)mem : ezi_bld_cctx_buf(hctx, 0, wcap);
	obuf = ezi_bld_cctx_buf(hctx, 1, pcap);
	if (ztail && pcap > blksz) {
		obuf2 = ezi_bld_cctx_buf(hctx, 2, pcap);
		obuf3 = ezi_bld_cctx_buf(hctx, 3, pcap);
		if (!obuf2 || !obuf3) {
			err = -ENOMEM;
			goto fail;
		}
	}
	if (dedup) {
		ezi_bld_idd_init(&dd);
		obufd = malloc(pcap);
		if (!obufd) {
			err = -ENOMEM;
			goto fail;
		}
	}
	if (!z || !win || !obuf) {
		err = -ENOMEM;
		goto fail;
	}
	/* the whole file is one fragment: unread here, the packed inode
	 * takes it from the source when placed (fragments.c); through the
	 * spool, the Linux tree at lz4 1M writes and reads back 1.1 GB
	 * more than mkfs.erofs 1.9.3 */
	if (frags && !pt && !xd && size &&
	    frag_rest(0, size, share, allfrag, zkeep, pcap, blksz) &&
	    ezi_bld_spool_on(b)) {
		z->fromsrc = z->spooled = true;
		z->frag_len = size;
		err = add_extent(z, 0, 0, Z_EROFS_LCLUSTER_TYPE_HEAD1);
		if (err)
			goto fail;
		z->ext[z->next - 1].frag = true;
		pos = size;
	}
	if (mem)
		wend = size;
	else if (pos < size && (err = ezi_bld_src_open(b, in, &src)))
		goto fail;
	while (pos < size) {
		uint64_t rem = size - pos, want = rem < maxext ? rem : maxext;
		uint64_t need = wide || want == rem || want < WIN_AHEAD
					? want
					: WIN_AHEAD;
		size_t inlen;
		int r;

		/* a shared file mapping (zsegs.c): the pages behind this
		 * pcluster go, 4 MiB at a time (pclusters are independent;
		 * the file keeps the bytes), the rest at the end: two
		 * segments of 16 MiB resident set the peak of a build with
		 * fragments */
		if (drop && (pos & ~(uint64_t)4095) >= dropped + (4u << 20)) {
			uint64_t to = pos & ~(uint64_t)4095;

			madvise((void *)(uintptr_t)(mem + dropped),
				(size_t)(to - dropped), MADV_DONTNEED);
			dropped = to;
		}

		/* 1. slide the window so that [pos, pos + need) is loaded,
		 * and as much after it as the window holds */
		if (!mem && pos + need > wend) {
			if (pos + need > wpos + wcap) {
				/* zxdd.c may cut the previous extent */
				uint64_t keep =
					xd && z->next &&
							z->ext[z->next - 1]
									.la >=
								wpos
						? z->ext[z->next - 1].la
						: pos;

				memmove(win, win + (keep - wpos),
					(size_t)(wend - keep));
				wpos = keep;
			}
			while (wend < pos + need) {
				uint64_t space = wpos + wcap - wend;
				ssize_t n = ezi_bld_src_pread(
					&src, win + (wend - wpos),
					(size_t)(space < size - wend
							 ? space
							 : size - wend),
					base + wend);

				if (n <= 0) {
					err = n < 0 ? (int)n : -EAGAIN;
					ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s",
						    in->srcpath,
						    n < 0 ? strerror(-err)
							  : "file shrank while "
							    "building");
					goto fail;
				}
				wend += (uint64_t)n;
			}
		}
		if (!mem && want > wend - pos)
			want = wend - pos;
		/* dedupe: an earlier extent of this file starts again here */
		if (dedup) {
			uint32_t j;

			err = ezi_bld_idd_register(&dd, z, pos, win, wpos);
			if (err)
				goto fail;
			if (ezi_bld_idd_scan(&dd, z, pos, pos + 1, pos, size,
					     win, wpos, wend, b->blkszbits,
					     &j) == pos) {
				uint64_t len =
					(j + 1 < z->next ? z->ext[j + 1].la
							 : pos) -
					z->ext[j].la;

				err = add_ref(z, pos, j);
				if (err)
					goto fail;
				pos += len;
				continue;
			}
		}
		/* an earlier file's (or this one's) data starts again */
		if (xd) {
			struct bxmatch m;

			err = ezi_bld_xdd_register(xd, in, z, pos, win, wpos,
						   wend);
			if (err)
				goto fail;
			err = ezi_bld_xdd_match(xd, b, in, z, pos, size, win,
						wpos, wend, &m);
			if (err < 0)
				goto fail;
			if (err) {
				err = add_xref(z, pos, &m);
				if (err)
					goto fail;
				pos = m.at + m.len;
				continue;
			}
		}
		/* fragments: the last <= 1 pcluster (or all) to the packed
		 * inode */
		if (frags &&
		    frag_rest(pos, rem, share, allfrag, zkeep, pcap, blksz)) {
			err = take_frag(b, in, z, &src, win, wpos, wend, pos,
					size, base);
			if (err)
				goto fail;
			pos = size;
			continue;
		}
		/*
		 * 2. fill one pcluster. With ztailpacking, when the stream
		 * holds all the rest of the file and fits next to the index it
		 * is inlined (9.14 step 5). Without it the last <= 1 block is
		 * stored raw.
		 */
		if (!ztail && rem <= blksz)
			goto raw;
		/* a rest that surely compresses below a pcluster: a fragment
		 * without compressing it twice (zfast.c) */
		if (frags && !share && !zkeep && want == rem &&
		    ezi_bld_fits_fast(b, in->zalg, win + (pos - wpos),
				      (size_t)rem, pcap, obuf)) {
			err = take_frag(b, in, z, &src, win, wpos, wend, pos,
					size, base);
			if (err)
				goto fail;
			pos = size;
			continue;
		}
		/* a pcluster of random-looking bytes (compressed media): raw,
		 * without the codec (zfast.c), as it would end anyway */
		if (!dedup && !xd && !share && !zkeep &&
		    want >= (uint64_t)pcap + blksz &&
		    ezi_bld_random_fast(b, in->zalg, win + (pos - wpos),
					pcap)) {
			rawblks = pcap / blksz;
			goto raw;
		}
		inlen = (size_t)want;
		if (zkeep && inlen > rem - zkeep)
			inlen = (size_t)(rem - zkeep);
		/* a whole file that cannot take less than one block */
		if (!frags && !ztail && !dedup && !xd && !pos && want == size &&
		    (r = ezi_bld_one_block_fast(b, in->zalg, win, inlen, obuf)))
			inlen = (size_t)size;
		else
			r = ops->compress_destsize(cctx, win + (pos - wpos),
						   &inlen, obuf, pcap);
		if (share && r > 0 && inlen > rem - share) {
			/* the last pcluster of the head: as few blocks as hold
			 * the head, filled with the shared end */
			r = share_cap(ops, cctx, win + (pos - wpos),
				      rem - share, pcap, blksz, obuf);
			inlen = (size_t)want;
			if (r > 0)
				r = ops->compress_destsize(
					cctx, win + (pos - wpos), &inlen, obuf,
					(size_t)r);
		}
		if (r < 0 && r != -ENOSPC) {
			err = r;
			goto cfail;
		}
		/* the whole rest compresses below one pcluster: a fragment */
		if (frags && !share && r > 0 && inlen == rem &&
		    (uint64_t)r < pcap) {
			err = take_frag(b, in, z, &src, win, wpos, wend, pos,
					size, base);
			if (err)
				goto fail;
			pos = size;
			continue;
		}
		if (ztail && r > 0 && inlen == rem && (size_t)r < room &&
		    (uint64_t)r < rem) {
			err = set_inline(z, pos, obuf, (size_t)r,
					 Z_EROFS_LCLUSTER_TYPE_HEAD1);
			if (err < 0)
				goto fail;
			err = 0;
			pos += rem;
			continue;
		}
		if (r > 0) {
			uint32_t ob = ((uint32_t)r + blksz - 1) & ~(blksz - 1);

			/* zstd and libdeflate fill to a tolerance: a rest of a
			 * few bytes would take a raw block after this
			 * pcluster, which may hold all of it in as many
			 * blocks (1 MiB and a byte of zeros) */
			if (!ztail && !share && inlen < rem &&
			    rem - inlen <= blksz && rem <= want &&
			    (ops->flags & EZFS_CODEC_FIT)) {
				size_t in2 = (size_t)rem;
				uint8_t *ob2 = ezi_bld_cctx_buf(hctx, 2, pcap);
				int r2 = ob2 ? ops->compress_destsize(
						       cctx, win + (pos - wpos),
						       &in2, ob2, ob)
					     : -ENOMEM;

				if (r2 > 0 && in2 == rem) {
					memcpy(obuf, ob2, (size_t)r2);
					r = r2;
					inlen = in2;
				}
			}

			if (ob >= inlen) {
				/* no block saved: every whole block of it raw
				 * (as mkfs.erofs), not one block and the same
				 * pcluster's worth compressed again (64 MiB of
				 * random bytes, lz4hc-9 64K: 16 s) */
				if (!dedup && !xd)
					rawblks = inlen / blksz;
				goto raw;
			}
			if (dedup) {
				/* cut the extent where earlier data repeats */
				uint64_t from = ((pos >> b->blkszbits) + 1)
						<< b->blkszbits,
					 q;
				uint32_t j;

				q = ezi_bld_idd_scan(&dd, z, from, pos + inlen,
						     pos, size, win, wpos, wend,
						     b->blkszbits, &j);
				if (q < pos + inlen) {
					size_t in2 = (size_t)(q - pos);
					int r2 = ops->compress_destsize(
						cctx, win + (pos - wpos), &in2,
						obufd, pcap);
					uint32_t ob2 =
						((uint32_t)(r2 > 0 ? r2 : 0) +
						 blksz - 1) &
						~(blksz - 1);

					if (r2 > 0 && in2 == q - pos &&
					    ob2 < in2) {
						memcpy(obuf, obufd, (size_t)r2);
						r = r2;
						inlen = in2;
						ob = ob2;
					} else if (q - pos <= blksz) {
						rawlen = (size_t)(q - pos);
						goto raw;
					}
				}
			}
			if (ztail && inlen == rem && ob > blksz) {
				r = shrink_last(ops, cctx, win + (pos - wpos),
						rem, ob - blksz, b->blkszbits,
						room, &inlen, obuf, obuf2,
						obuf3, r);
				if (r < 0) {
					err = r;
					goto cfail;
				}
				ob = ((uint32_t)r + blksz - 1) & ~(blksz - 1);
			}
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
		/* 3. one raw block, or a raw inline tail (ztailpacking) */
		if (ztail && rem <= blksz && rem <= room) {
			err = set_inline(z, pos, win + (pos - wpos),
					 (size_t)rem,
					 Z_EROFS_LCLUSTER_TYPE_PLAIN);
			if (err < 0)
				goto fail;
			err = 0;
			pos += rem;
			continue;
		}
		want = rawlen ? rawlen : (rem < blksz ? rem : blksz);
		rawlen = 0;
		do {
			dst = grow_data(z, &dcap, 1, b->blkszbits);
			if (!dst)
				goto nomem;
			memcpy(dst, win + (pos - wpos), (size_t)want);
			memset(dst + want, 0, blksz - (size_t)want);
			err = add_extent(z, pos, 1,
					 Z_EROFS_LCLUSTER_TYPE_PLAIN);
			if (err)
				goto fail;
			pos += want;
			want = blksz;
		} while (rawblks && --rawblks && size - pos > blksz);
		rawblks = 0;
	}
	if (!mem) {
		err = ezi_bld_src_check(b, in, &src);
		if (err)
			goto fail;
	}
	z->datalen = (uint64_t)z->blocks << b->blkszbits;
	/* results wait in the writer's window: no room to grow */
	if (!mem && z->data && dcap > z->datalen + (dcap >> 3)) {
		uint8_t *d = realloc(z->data, z->datalen ? z->datalen : 1);

		if (d)
			z->data = d;
	}
	/* the extents stay until the metadata is written: 16 slots of 32
	 * bytes were 15 MiB for 29,000 files, most of them with a few */
	if (z->cap > z->next && z->next) {
		struct bextent *e = realloc(z->ext, z->next * sizeof(*e));

		if (e) {
			z->ext = e;
			z->cap = z->next;
		}
	}
	/* a memory range (the packed inode's segments, the metabox) is
	 * never looked up among the written pclusters: not hashed, and the
	 * workers do not read b->packed_inode while the writer sets it */
	if (!mem)
		hash_pclusters(b, in, z);
	if (pt)
		*out = z; /* the whole file is judged once merged */
	else
		ezi_bld_zfile_finish(b, in, z, !mem, out);
	z = NULL;
	err = 0;
	goto out;
nomem:
	err = -ENOMEM;
	goto fail;
cfail:
	ezi_bld_log(b, EZFS_LOG_ERROR, "%s: compression failed: %s",
		    in->srcpath, strerror(-err));
fail:
	ezi_bld_zfile_free(z);
out:
	if (drop && size > dropped)
		madvise((void *)(uintptr_t)(mem + dropped),
			(size_t)(size - dropped), MADV_DONTNEED);
	ezi_bld_cctx_put(b, hctx, in->zalg);
	ezi_bld_src_close(&src);
	free(obufd);
	ezi_bld_idd_free(&dd);
	return err;
}

void ezi_bld_zfile_finish(const struct ezfs_builder *b, const struct binode *in,
			  struct bzfile *z, bool judge, struct bzfile **out)
{
	uint32_t meta;

	/* compact packs need consecutive pclusters (9.5.3) */
	z->compact = !(b->p.flags & EZFS_BUILD_LEGACY_COMPRESS) && !z->has_ref;
	z->idx_size = ezi_bld_zindex_size(b, in, z->compact);
	if (z->next == 1 && z->ext[0].frag) {
		/* whole-file fragment: FULL layout, header only (9.10) */
		z->wholefrag = true;
		z->compact = false;
		z->idx_size = 16;
	}
	if (b->p.flags & EZFS_BUILD_48BIT)
		ezi_bld_zext_choose(b, in, z);
	/*
	 * 9.14 step 7: keep a file only if it saves space. As in mkfs.erofs
	 * the index counts as full (8 bytes an lcluster) even when it is
	 * compact, unless the file has a fragment: a file that compresses
	 * only a few bytes below its size is stored plain (FLAT_INLINE, read
	 * without decoding), which takes no more room in the image.
	 */
	meta = z->idx_size;
	if (!z->extents && !z->frag_len &&
	    meta < ezi_bld_zindex_size(b, in, false))
		meta = ezi_bld_zindex_size(b, in, false);
	*out = NULL;
	if (judge && z->datalen + ((uint64_t)z->dd_blocks << b->blkszbits) +
				     meta + z->idata_len >=
			     in->size)
		ezi_bld_zfile_free(z);
	else
		*out = z;
}

int ezi_bld_compress_file(const struct ezfs_builder *b, const struct binode *in,
			  void *cctx, struct bzfile **out)
{
	if (ezi_bld_zunaligned_ok(b, in))
		return ezi_bld_zunaligned(b, in, cctx, out);
	return compress_src(b, in, cctx, NULL, in->size, 0, false, NULL, NULL,
			    out);
}

int ezi_bld_compress_xdd(const struct ezfs_builder *b, const struct binode *in,
			 void *cctx, struct bxdd *x, struct bzfile **out)
{
	return compress_src(b, in, cctx, NULL, in->size, 0, false, NULL, x,
			    out);
}

int ezi_bld_compress_part(const struct ezfs_builder *b, const struct binode *in,
			  void *cctx, const struct bzpart *pt,
			  struct bzfile **out)
{
	return compress_src(b, in, cctx, NULL, pt->len, 0, false, pt, NULL,
			    out);
}

int ezi_bld_compress_mem(const struct ezfs_builder *b, const struct binode *in,
			 void *cctx, const uint8_t *mem, uint64_t len,
			 size_t room, bool drop, struct bzfile **out)
{
	return compress_src(b, in, cctx, mem, len, room, drop, NULL, NULL, out);
}
