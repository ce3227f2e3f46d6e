/* SPDX-License-Identifier: MIT */
/*
 * zsplit.c - large files compressed in parts on several workers.
 *
 * A file larger than 16 MiB (or 16 pclusters) is cut into parts at fixed
 * offsets (seg_size()); each part is compressed on its own by whichever
 * worker takes it (zjobs.c) and the writer appends them in order. A part ends
 * its last pcluster early, as a file would, so the image depends only on the
 * file and the part size, never on the number of workers. Only the last part
 * has the file's tail (inline data or a fragment). Without this a single large
 * file ran on one CPU: 128 MiB of text at lz4hc-12 took 6.7 s against
 * mkfs.erofs 1.9.3's 3.3 s (which cuts 16 MiB segments too).
 *
 * Not split: files whose end is shared with another file's fragment
 * (fragshare.c decides on the whole file), -E all-fragments (the file is
 * one fragment) and byte-aligned 48-bit data (zunaligned.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "write/internal.h"

/*
 * Every part boundary ends a pcluster early and stores its last block
 * raw: about a block lost, give or take the chance of where the later
 * pclusters then end. The parts are mkfs.erofs 1.9.3's segments: 16 MiB
 * (or 16 pclusters), the last one whatever is left. Same cuts as 1.9.3
 * (whose image then never has fewer boundaries), and many parts keep
 * both CPUs busy to the end (256 MiB of text, lz4hc-12: 6.5 s; with
 * 64 MiB parts 12 blocks smaller but 6.9 s, one CPU idle behind the last
 * part). Each part's output waits whole until the writer takes it: with
 * two parts of 32 MiB, 64 MiB of text at zstd 4K peaked at 56 MiB against
 * 1.9.3's 49; with its segments at 45 (and 42 against 62 on 256 MiB),
 * the images of zstd's default level 0-6 blocks smaller than 1.9.3's,
 * at level 3 1-4 blocks larger on 256 MiB (64 MiB parts: 6-16 smaller).
 */
#define SPLIT_MIN (16ull << 20) /* files up to this: one part */

/* 1.9.3's segment: 16 MiB, or 16 pclusters when larger. */
static uint64_t seg_size(const struct ezfs_builder *b, const struct binode *in)
{
	uint64_t pc = (uint64_t)ezi_bld_pcluster_blocks(b, in) << b->blkszbits;

	return pc * 16 > SPLIT_MIN ? pc * 16 : SPLIT_MIN;
}

uint32_t ezi_bld_zsplit_parts(const struct ezfs_builder *b,
			      const struct binode *in)
{
	if (in->size <= seg_size(b, in) || in->zkeep || in->zshare ||
	    (b->p.flags & EZFS_BUILD_ALL_FRAGMENTS) ||
	    ezi_bld_zunaligned_ok(b, in))
		return 1;
	return (uint32_t)((in->size - 1) / seg_size(b, in) + 1);
}

/* Where part k starts, and its length. */
static void part_range(const struct ezfs_builder *b, const struct binode *in,
		       uint32_t k, uint64_t *base, uint64_t *len)
{
	uint64_t ps = seg_size(b, in);

	*base = k * ps;
	*len = in->size - *base < ps ? in->size - *base : ps;
}

int ezi_bld_zsplit_run(const struct ezfs_builder *b, const struct binode *in,
		       void *cctx, uint32_t k, uint32_t n, struct bzfile **out)
{
	struct bzpart pt = { .last = k + 1 == n };

	part_range(b, in, k, &pt.base, &pt.len);
	return ezi_bld_compress_part(b, in, cctx, &pt, out);
}

int ezi_bld_zsplit_put(struct ezfs_builder *b, const struct binode *in,
		       uint32_t k, struct bzfile *part, uint32_t *blocks)
{
	uint64_t base, len;
	int err;

	/* -E dedupe compresses a file again (zxdd.c) and refers to its
	 * own earlier extents: the parts wait for the whole */
	if (!part ||
	    (b->p.flags & (EZFS_BUILD_DEDUPE | EZFS_BUILD_ALL_FRAGMENTS)))
		return 0;
	/* with fragments pclusters are shared (as mkfs.erofs): in order,
	 * part by part, as the whole file would be (the parts held until
	 * merged took 26 of the 70 MiB peak of 64 MiB of text, lz4 1M) */
	if (b->p.flags & EZFS_BUILD_FRAGMENTS) {
		part_range(b, in, k, &base, &len);
		err = ezi_bld_dedupe_part(b, part, len, b->cursor + *blocks);
		if (err)
			return err;
	}
	/* written while later parts are still being compressed, and never
	 * copied into one buffer (that copy and its fresh pages were most
	 * of the writer's time on 256 MiB of text with lz4) */
	err = ezi_bld_pwrite(b, part->data, part->datalen,
			     (b->cursor + *blocks) << b->blkszbits);
	if (err)
		return err;
	*blocks += part->blocks;
	free(part->data);
	part->data = NULL;
	part->written = true;
	return 0;
}

int ezi_bld_zfile_append(struct bzfile *z, struct bzfile *s, uint64_t la)
{
	uint32_t k, first = z->next;

	if (z->next + s->next > z->cap) {
		uint32_t cap = z->next + s->next;
		struct bextent *e = realloc(z->ext, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		z->ext = e;
		z->cap = cap;
	}
	for (k = 0; k < s->next; k++) {
		struct bextent *e = &z->ext[z->next++];

		*e = s->ext[k];
		e->la += la;
		e->blkaddr += z->blocks;
		if (e->ref)
			e->refidx += first;
	}
	if (s->written) {
		z->datalen += s->datalen; /* in the image already */
	} else if (s->datalen) {
		uint8_t *d = realloc(z->data, z->datalen + s->datalen);

		if (!d)
			return -ENOMEM;
		z->data = d;
		memcpy(d + z->datalen, s->data, s->datalen);
		z->datalen += s->datalen;
	}
	z->blocks += s->blocks;
	z->has_ref |= s->has_ref;
	z->shared |= s->shared;
	z->dd_blocks += s->dd_blocks;
	/* the tail (only in the last part) moves over */
	if (s->idata) {
		z->idata = s->idata;
		z->idata_len = s->idata_len;
		s->idata = NULL;
	}
	if (s->frag || s->spooled) {
		z->frag = s->frag;
		z->frag_len = s->frag_len;
		z->spoff = s->spoff;
		z->spooled = s->spooled;
		z->fromsrc = s->fromsrc;
		s->frag = NULL;
		s->spooled = false;
	}
	return 0;
}

int ezi_bld_zsplit_merge(const struct ezfs_builder *b, const struct binode *in,
			 struct bzfile **parts, uint32_t n, struct bzfile **out)
{
	struct bzfile *z = parts[0];
	uint64_t base, len;
	uint32_t k;
	int err = 0;

	*out = NULL;
	parts[0] = NULL;
	for (k = 1; k < n && !err; k++) {
		part_range(b, in, k, &base, &len);
		err = ezi_bld_zfile_append(z, parts[k], base);
		ezi_bld_zfile_free(parts[k]);
		parts[k] = NULL;
	}
	if (err) {
		ezi_bld_zfile_free(z);
		return err;
	}
	ezi_bld_zfile_finish(b, in, z, true, out);
	return 0;
}
