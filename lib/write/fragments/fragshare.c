/* SPDX-License-Identifier: MIT */
/*
 * fragshare.c - files that end alike, found before compression (9.10).
 *
 * With -E fragments a file's tail goes to the packed inode, and a tail
 * that is the end of an earlier fragment is stored once. Near-copies
 * (another head, the same long end: generated register headers, copied
 * sources) only share a part of their tails. Before any file is
 * compressed, the files are visited in the fragments' depth-first order;
 * the last SHARE_HASH bytes of each are hashed, and a file whose end
 * equals the end of an earlier one for at least SHARE_MIN bytes is marked:
 * the earlier file keeps at least that much in its fragment (zkeep), the
 * later one compresses its head into pclusters and leaves only a part of
 * the common end as its fragment (zshare), which then points into the
 * earlier fragment. Only file contents decide, so the image does not
 * depend on the number of workers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "write/internal.h"
#include "format/erofs_fs.h"
#include "util/hash.h"

#define SHARE_MIN  (32u << 10) /* shorter common ends are left alone */
#define SHARE_HASH 64	       /* bytes of a file's end that are hashed */
#define SHARE_CAND 8	       /* earlier files compared at most */
#define SHARE_BUF  (64u << 10)

struct shtab {
	struct ezi_hash t; /* CRC of a file's end -> binode (multimap) */
	uint8_t *b1, *b2;
};

/* Read len bytes of in at off into buf; 0 or a negative errno. */
static int read_at(const struct ezfs_builder *b, const struct bsrc *s,
		   uint8_t *buf, size_t len, uint64_t off)
{
	size_t have = 0;

	(void)b;
	while (have < len) {
		ssize_t n = ezi_bld_src_pread(s, buf + have, len - have,
					      off + have);

		if (n <= 0)
			return n < 0 ? (int)n : -EAGAIN;
		have += (size_t)n;
	}
	return 0;
}

/* Length of the common end of files a and c (at most their sizes). */
static int common_tail(const struct ezfs_builder *b, struct shtab *h,
		       const struct binode *a, const struct binode *c,
		       uint64_t *lenp)
{
	struct bsrc sa = { .fd = -1 }, sc = { .fd = -1 };
	uint64_t max = a->size < c->size ? a->size : c->size, l = 0;
	int err;

	err = ezi_bld_src_open(b, a, &sa);
	if (!err)
		err = ezi_bld_src_open(b, c, &sc);
	while (!err && l < max) {
		size_t n = max - l < SHARE_BUF ? (size_t)(max - l) : SHARE_BUF;
		size_t k = 0;

		err = read_at(b, &sa, h->b1, n, a->size - l - n);
		if (!err)
			err = read_at(b, &sc, h->b2, n, c->size - l - n);
		if (err)
			break;
		while (k < n && h->b1[n - 1 - k] == h->b2[n - 1 - k])
			k++;
		l += k;
		if (k < n)
			break;
	}
	ezi_bld_src_close(&sa);
	ezi_bld_src_close(&sc);
	*lenp = l;
	return err;
}

static int visit(struct ezfs_builder *b, struct binode *in, void *arg)
{
	struct shtab *h = arg;
	struct binode *best = NULL;
	uint64_t bestlen = 0;
	struct bsrc s = { .fd = -1 };
	unsigned cand = 0;
	uint32_t crc;
	struct binode *c;
	size_t pos = 0;
	int err;

	if (in->zseen || in->size < SHARE_MIN ||
	    !ezi_bld_compress_wanted(b, in))
		return 0;
	in->zseen = true;
	err = ezi_bld_src_open(b, in, &s);
	if (!err)
		err = read_at(b, &s, h->b1, SHARE_HASH, in->size - SHARE_HASH);
	ezi_bld_src_close(&s);
	if (err)
		return 0; /* the compression pass reports it */
	crc = ezi_crc32c(0, h->b1, SHARE_HASH);
	while (cand < SHARE_CAND && (c = ezi_hash_next(&h->t, crc, &pos))) {
		uint64_t l;

		cand++;
		if (common_tail(b, h, c, in, &l))
			continue;
		if (l > bestlen) {
			bestlen = l;
			best = c;
		}
	}
	if (best && bestlen >= SHARE_MIN) {
		in->zshare = bestlen;
		if (best->zkeep < bestlen)
			best->zkeep = bestlen;
	}
	return ezi_hash_add(&h->t, crc, in);
}

int ezi_bld_frags_share(struct ezfs_builder *b)
{
	struct shtab h = { .t = EZI_HASH_INIT };
	int err;

	/*
	 * Only when the packed inode's codec has a short window (lz4: 64 KiB,
	 * deflate: 32 KiB): with zstd and lzma a fragment among similar ones
	 * in the packed inode costs much less than alone, and the head in
	 * pclusters of its own then makes the image larger (linux tools/
	 * zstd-3: +8 blocks, lz4hc-12 and deflate-9 over amdgpu's register
	 * headers: -28 and -19 blocks).
	 */
	if (!(b->p.flags & EZFS_BUILD_FRAGMENTS) ||
	    (b->p.flags & (EZFS_BUILD_ALL_FRAGMENTS | EZFS_BUILD_48BIT)) ||
	    b->zalgs[0].alg == EZFS_ALG_ZSTD ||
	    b->zalgs[0].alg == EZFS_ALG_LZMA)
		return 0;
	h.b1 = malloc(SHARE_BUF);
	h.b2 = malloc(SHARE_BUF);
	err = !ezi_hash_reserve(&h.t, 512) && h.b1 && h.b2
		      ? ezi_bld_files_dfs(b, visit, &h)
		      : -ENOMEM;
	ezi_hash_free(&h.t);
	free(h.b1);
	free(h.b2);
	return err;
}
