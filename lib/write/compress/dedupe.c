/* SPDX-License-Identifier: MIT */
/*
 * dedupe.c - store identical pclusters and chunks once: a table of what
 * was written (keyed by CRC32C of the stored bytes), checked byte by byte
 * against the image before a block range is shared.
 *
 * Pclusters (-E dedupe): an extent whose encoded pcluster (same bytes, same
 * type, same decoded length) was written before refers to that pcluster;
 * the file then uses FULL indexes (compact packs need consecutive
 * addresses, 9.5.3). Identical bytes decode identically, so sharing is
 * exact (no PARTIAL_REF). Chunks (--chunksize): identical chunk contents
 * share blocks. Lookups happen on the writer thread in inode order, so the
 * image does not depend on the number of workers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "write/internal.h"
#include "format/erofs_fs.h"
#include "util/hash.h"
#include "util/vec.h"

struct dent {
	uint32_t blocks;
	uint64_t dlen; /* decoded length (chunks: data length) */
	uint64_t blkaddr;
	uint8_t type;
};

/* What was written, in order, and its CRCs -> 1 + index (a multimap). */
struct dtab {
	EZI_VEC(struct dent) e;
	struct ezi_hash idx;
};

void ezi_bld_dedupe_free(struct ezfs_builder *b)
{
	struct dtab *t = b->dedupe;

	if (!t)
		return;
	ezi_vec_free(&t->e);
	ezi_hash_free(&t->idx);
	free(t);
	b->dedupe = NULL;
}

/*
 * Do `len` bytes at image block blkaddr equal p? Blocks from block `at`
 * on are the current file's (or part's), not written yet: in `pending`.
 */
static bool same_in_image(struct ezfs_builder *b, uint64_t blkaddr,
			  const uint8_t *p, size_t len, uint8_t *tmp,
			  const uint8_t *pending, uint64_t at)
{
	size_t got = 0;

	if (pending && blkaddr >= at)
		return !memcmp(pending + ((blkaddr - at) << b->blkszbits), p,
			       len);
	while (got < len) {
		ssize_t n = pread(b->fd, tmp + got, len - got,
				  (off_t)((blkaddr << b->blkszbits) + got));

		if (n <= 0)
			return false;
		got += (size_t)n;
	}
	return !memcmp(tmp, p, len);
}

/*
 * Look up (p, blocks, type, dlen): 1 and its block address in *found, or
 * 0 when new, recorded at `addr` unless addr is DD_PROBE.
 */
#define DD_PROBE UINT64_MAX

static int dedupe_lookup(struct ezfs_builder *b, const uint8_t *p, uint32_t crc,
			 uint32_t blocks, uint8_t type, uint64_t dlen,
			 uint64_t addr, uint64_t *found, uint8_t *tmp,
			 const uint8_t *pending, uint64_t at)
{
	struct dtab *t = b->dedupe;
	size_t len = (size_t)blocks << b->blkszbits, pos = 0;
	struct dent ne;
	uintptr_t i;

	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return -ENOMEM;
		b->dedupe = t;
	}
	while ((i = (uintptr_t)ezi_hash_next(&t->idx, crc, &pos))) {
		struct dent *e = &t->e.v[i - 1];

		if (e->blocks == blocks && e->type == type && e->dlen == dlen &&
		    same_in_image(b, e->blkaddr, p, len, tmp, pending, at)) {
			*found = e->blkaddr;
			return 1;
		}
	}
	if (addr == DD_PROBE)
		return 0;
	ne = (struct dent){
		.blocks = blocks, .dlen = dlen, .blkaddr = addr, .type = type
	};
	if (ezi_vec_push(&t->e, ne))
		return -ENOMEM;
	if (ezi_hash_add(&t->idx, crc, (void *)(uintptr_t)t->e.n)) {
		t->e.n--;
		return -ENOMEM;
	}
	return 0;
}

bool ezi_bld_dedupe_shares(const struct ezfs_builder *b,
			   const struct binode *in)
{
	return (b->p.flags & (EZFS_BUILD_DEDUPE | EZFS_BUILD_FRAGMENTS |
			      EZFS_BUILD_ALL_FRAGMENTS)) &&
	       in != b->packed_inode;
}

/* The CRC32C of extent e's pcluster at p: the worker's, else taken and
 * kept (fragnear.c probes a head's extents, then shares them) */
static uint32_t ext_crc(const struct ezfs_builder *b, struct bextent *e,
			const uint8_t *p)
{
	if (!e->hashed) {
		e->crc = ezi_crc32c(0, p, (size_t)e->blocks << b->blkszbits);
		e->hashed = true;
	}
	return e->crc;
}

uint32_t ezi_bld_dedupe_new_blocks(struct ezfs_builder *b,
				   const struct binode *in,
				   const struct bzfile *z)
{
	uint8_t *tmp = malloc((size_t)b->pclusterblks << b->blkszbits);
	uint32_t k, blocks = 0;

	for (k = 0; k < z->next; k++) {
		struct bextent *e = &z->ext[k];
		uint64_t end = k + 1 < z->next ? z->ext[k + 1].la : in->size;
		const uint8_t *p;
		uint64_t found;

		if (!e->blocks || e->frag || e->ref || e->xref)
			continue;
		p = z->data + ((uint64_t)e->blkaddr << b->blkszbits);
		if (!tmp || dedupe_lookup(b, p, ext_crc(b, e, p), e->blocks,
					  e->type, end - e->la, DD_PROBE,
					  &found, tmp, NULL, 0) != 1)
			blocks += e->blocks;
	}
	free(tmp);
	return blocks;
}

/*
 * Share the pclusters of z (which decodes to `end` bytes) with identical
 * earlier ones, z's data to go to image block `at`: shared extents get
 * their block relative to `at` (mod 2^32), the others move together in
 * z->data. *shared: some extent was shared.
 */
static int dedupe_run(struct ezfs_builder *b, struct bzfile *z, uint64_t end,
		      uint64_t at, bool *shared)
{
	uint32_t k, newblocks = 0;
	uint8_t *tmp = NULL;
	int err = 0;

	for (k = 0; k < z->next; k++) {
		struct bextent *e = &z->ext[k];
		uint64_t eend = k + 1 < z->next ? z->ext[k + 1].la : end;
		uint64_t found;
		uint8_t *src;

		if (e->ref) {
			/* an earlier extent of this file, already placed */
			e->blkaddr = z->ext[e->refidx].blkaddr;
			continue;
		}
		if (e->xref) /* an earlier file's (zxdd.c) */
			continue;
		if (!e->blocks || e->frag)
			continue;
		if (!tmp)
			tmp = malloc((size_t)b->pclusterblks << b->blkszbits);
		if (!tmp)
			return -ENOMEM;
		src = z->data + ((uint64_t)e->blkaddr << b->blkszbits);
		/* earlier pclusters of this file too (as 1.9.3, which
		 * writes each before it looks up the next): a file of
		 * repeated blocks */
		err = dedupe_lookup(b, src, ext_crc(b, e, src), e->blocks,
				    e->type, eend - e->la, at + newblocks,
				    &found, tmp, z->data, at);
		if (err < 0)
			break;
		if (err) {
			e->blkaddr = (uint32_t)(found - at);
			*shared = true;
			err = 0;
			continue;
		}
		if (e->blkaddr != newblocks)
			memmove(z->data + ((uint64_t)newblocks << b->blkszbits),
				src, (size_t)e->blocks << b->blkszbits);
		e->blkaddr = newblocks;
		newblocks += e->blocks;
	}
	free(tmp);
	if (err)
		return err;
	z->blocks = newblocks;
	z->datalen = (uint64_t)newblocks << b->blkszbits;
	return 0;
}

int ezi_bld_dedupe_part(struct ezfs_builder *b, struct bzfile *part,
			uint64_t len, uint64_t at)
{
	uint32_t blocks = part->blocks;
	int err = dedupe_run(b, part, len, at, &part->shared);

	part->dd_blocks = blocks - part->blocks;
	return err;
}

int ezi_bld_dedupe_pclusters(struct ezfs_builder *b, const struct binode *in,
			     struct bzfile *z)
{
	/* data.c adds the cursor to every blkaddr (mod 2^32); a split
	 * file's parts were shared as they were written (zsplit.c) */
	int err = z->written
			  ? 0
			  : dedupe_run(b, z, in->size, b->cursor, &z->shared);

	if (err)
		return err;
	if (z->shared || z->has_ref) {
		z->compact = false;
		z->idx_size = ezi_bld_zindex_size(b, in, false);
		b->deduped = true;
	}
	return 0;
}

/*
 * Chunks: p holds `blocks` blocks of one chunk (dlen data bytes). Returns
 * 1 and *found when identical data was stored before, else records addr.
 */
int ezi_bld_dedupe_chunk(struct ezfs_builder *b, const uint8_t *p,
			 uint32_t blocks, uint64_t dlen, uint64_t addr,
			 uint64_t *found, uint8_t *tmp)
{
	return dedupe_lookup(b, p,
			     ezi_crc32c(0, p, (size_t)blocks << b->blkszbits),
			     blocks, 0xFF, dlen, addr, found, tmp, NULL, 0);
}
