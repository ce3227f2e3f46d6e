/* SPDX-License-Identifier: MIT */
/*
 * zsplit.c - large files compressed in parts on several workers.
 *
 * A file larger than 16 MiB (or 16 pclusters) is cut into parts at fixed
 * offsets (part_plan() says how); each part is
 * compressed on its own by whichever worker takes it (zjobs.c) and the writer
 * appends them in order. A part ends its last pcluster early, as a file would,
 * so the image depends only on the file and the part size, never on the number
 * of workers. Only the last part has the file's tail (inline data or a
 * fragment). Without this a single large file ran on one CPU: 128 MiB of
 * text at lz4hc-12 took 6.7 s against mkfs.erofs 1.9.3's 3.3 s (which
 * cuts 16 MiB segments too).
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
 * pclusters then end. How the parts are cut depends on the encoder:
 *
 * lz4, lz4hc and lzma fill pclusters natively, as mkfs.erofs 1.9.3 does,
 * and cost it the same CPU time: their parts are its 16 MiB segments (or
 * 16 pclusters), the last one whatever is left. Same cuts, same
 * pclusters, so the image is not larger than 1.9.3's, and many parts keep
 * both CPUs busy to the end (256 MiB of text, lz4hc-12: 6.5 s; with 64 MiB
 * parts 12 blocks smaller but 6.9 s, one CPU idle behind the last part;
 * lz4: 0.24 s as 1.9.3, with 64 MiB parts 8 blocks smaller but 0.27-0.34).
 *
 * The others (deflate and zstd, whose encoders differ from 1.9.3's) take
 * fewer boundaries: equal parts of at most 64 MiB (or 64 pclusters), in
 * whole MiB, the last one halved so that the slower worker is not waited
 * for long (zstd-3: with 16 MiB parts 11 blocks more than 1.9.3, with 64
 * MiB 6 fewer).
 */
#define PART_UNIT (1ull << 20)
#define SPLIT_MIN (16ull << 20) /* files up to this: one part */

static bool native_fill(const struct ezfs_builder *b, const struct binode *in)
{
	const struct ezfs_build_zalg *za = &b->zalgs[in->zalg];

	return za->alg == EZFS_ALG_LZ4 || za->alg == EZFS_ALG_LZMA;
}

/* 1.9.3's segment: 16 MiB, or 16 pclusters when larger (times k). */
static uint64_t seg_size(const struct ezfs_builder *b, const struct binode *in,
			 unsigned k)
{
	uint64_t pc = (uint64_t)ezi_bld_pcluster_blocks(b, in) << b->blkszbits;

	return k * (pc * 16 > SPLIT_MIN ? pc * 16 : SPLIT_MIN);
}

/* The parts of a file: nfull of ps bytes, then the rest, halved (at a
 * whole MiB) in `half` unless that is 0. */
struct plan {
	uint64_t ps, half;
	uint32_t nfull, n;
};

static void part_plan(const struct ezfs_builder *b, const struct binode *in,
		      struct plan *p)
{
	uint64_t max, m;

	if (native_fill(b, in)) {
		p->ps = seg_size(b, in, 1);
		p->nfull = (uint32_t)((in->size - 1) / p->ps);
		p->half = 0;
	} else {
		max = seg_size(b, in, 4);
		m = (in->size + max - 1) / max;
		p->ps = m <= 1 ? max
			       : ((in->size + m - 1) / m + PART_UNIT - 1) /
					 PART_UNIT * PART_UNIT;
		p->nfull = (uint32_t)((in->size - 1) / p->ps);
		p->half = (in->size - (uint64_t)p->nfull * p->ps) / 2 /
			  PART_UNIT * PART_UNIT;
	}
	p->n = p->nfull + (p->half ? 2 : 1);
}

uint32_t ezi_bld_zsplit_parts(const struct ezfs_builder *b,
			      const struct binode *in)
{
	struct plan p;

	if (in->size <= seg_size(b, in, 1) || in->zkeep || in->zshare ||
	    (b->p.flags & EZFS_BUILD_ALL_FRAGMENTS) ||
	    ezi_bld_zunaligned_ok(b, in))
		return 1;
	part_plan(b, in, &p);
	return p.n;
}

/* Where part k starts, and its length. */
static void part_range(const struct ezfs_builder *b, const struct binode *in,
		       uint32_t k, uint64_t *base, uint64_t *len)
{
	struct plan p;
	uint64_t rest;

	part_plan(b, in, &p);
	rest = (uint64_t)p.nfull * p.ps;
	if (k < p.nfull) {
		*base = k * p.ps;
		*len = p.ps;
	} else if (k == p.nfull && p.half) {
		*base = rest;
		*len = p.half;
	} else {
		*base = k == p.nfull ? rest : rest + p.half;
		*len = in->size - *base;
	}
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
