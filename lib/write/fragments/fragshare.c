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
 * earlier fragment. With -E all-fragments the later file's head goes to
 * pclusters the same way. With zstd packed inodes, and lzma ones with a
 * dictionary of 1 MiB or more, only an earlier copy beyond the codec's
 * window counts (its distance guessed
 * from the decoded bytes the files between add to the packed inode): a
 * nearer one costs little in the packed inode anyway. Only file contents
 * decide, so the image does not depend on the number of workers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "write/internal.h"
#include "codec/codec.h"
#include "format/erofs_fs.h"
#include "util/hash.h"
#include "util/vec.h"

#define SHARE_MIN  (32u << 10) /* shorter common ends are left alone */
#define SHARE_HASH 64	       /* bytes of a file's end that are hashed */
#define SHARE_CAND 8	       /* earlier files compared at most */
#define SHARE_BUF  (64u << 10)

/* A file visited, and where its bytes end in the packed inode (guessed) */
struct shent {
	struct binode *in;
	uint64_t end, add; /* add: its bytes in the packed inode (guessed) */
};

struct shtab {
	struct ezi_hash t; /* CRC of a file's end -> 1 + index (multimap) */
	EZI_VEC(struct shent) e;
	uint8_t *b1, *b2;
	uint64_t pos;	 /* decoded packed bytes so far (guessed) */
	uint64_t reach;	 /* how far back the packed inode's codec matches;
			  * 0: share whatever the distance */
	uint64_t bigadd; /* what a file of a pcluster or more adds (guessed) */
	bool allfrag;
	uint32_t pcap;
	void *zc; /* zstd at level 3: cost estimates for far near-copies */
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

#define EST_MAX (4u << 20) /* larger files: no estimate, their head pays */
#define EST_CTX (1u << 20) /* zstd's window at most */

/* zstd-3's stream size of p[0, n), or a negative errno */
static int zsize(struct shtab *h, const uint8_t *p, size_t n, uint8_t *out,
		 size_t cap)
{
	size_t in = n;
	int r;

	if (!n)
		return 0;
	r = ezi_codec_zstd.compress_destsize(h->zc, p, &in, out, cap);
	return r < 0 || in == n ? r : -ENOSPC;
}

/*
 * Does a head of its own pay for `in`, whose last l bytes repeat an
 * earlier file beyond the codec's window? In the packed inode the file
 * costs what it adds after its neighbours (the bytes before it there,
 * as far back as the window), which for alike neighbours (a font after
 * its sister fonts) is much less than it alone: DejaVuSerifCondensed-
 * Bold.ttf costs 116 KB after DejaVuSerif.ttf, its head alone 134 KB
 * (lzma-6, 512 KiB). zstd-3 with the same window stands in for the
 * packed inode's codec (some ms a candidate).
 */
static bool head_pays(const struct ezfs_builder *b, struct shtab *h,
		      struct binode *in, uint64_t l)
{
	size_t want = h->reach < EST_CTX ? (size_t)h->reach : EST_CTX;
	size_t have = 0, n, cap;
	struct bsrc s = { .fd = -1 };
	uint8_t *buf = NULL, *out = NULL;
	size_t k = h->e.n;
	int z1, z2, zh, err = 0;
	bool pays = true;

	if (in->size > EST_MAX)
		return true;
	if (!h->zc) {
		struct ezfs_codec_cfg cfg = { 0 };
		unsigned wl = 10;

		while (wl < 20 && (1ull << wl) < want)
			wl++;
		cfg.zstd_windowlog = wl - 10;
		h->zc = ezi_codec_zstd.cctx_new(3, &cfg, &err);
		if (!h->zc)
			return true;
	}
	n = want + (size_t)in->size;
	cap = n + n / 8 + 4096;
	buf = malloc(n);
	out = malloc(cap);
	if (!buf || !out)
		goto out;
	/* the packed bytes before the file, newest last */
	while (k-- && have < want && !err) {
		const struct shent *c = &h->e.v[k];
		uint64_t m = c->add < want - have ? c->add : want - have;

		if (!m)
			continue;
		err = ezi_bld_src_open(b, c->in, &s);
		if (!err)
			err = read_at(b, &s, buf + want - have - m, (size_t)m,
				      c->in->size - m);
		ezi_bld_src_close(&s);
		have += (size_t)m;
	}
	if (!err)
		err = ezi_bld_src_open(b, in, &s);
	if (!err)
		err = read_at(b, &s, buf + want, (size_t)in->size, 0);
	ezi_bld_src_close(&s);
	if (err)
		goto out;
	z1 = zsize(h, buf + want - have, have, out, cap);
	z2 = zsize(h, buf + want - have, have + (size_t)in->size, out, cap);
	zh = zsize(h, buf + want, (size_t)(in->size - l), out, cap);
	if (z1 >= 0 && z2 >= 0 && zh >= 0)
		pays = zh + (int)b->blksz < z2 - z1;
out:
	free(buf);
	free(out);
	return pays;
}

/* Bytes the file adds to the packed inode unless its end is shared: all
 * of it with all-fragments, else its tail (what compresses below one
 * pcluster: h->bigadd guessed) */
static uint64_t packed_add(const struct shtab *h, const struct binode *in)
{
	if (h->allfrag || in->size < h->pcap)
		return in->size;
	return in->size < h->bigadd ? in->size : h->bigadd;
}

static int visit(struct ezfs_builder *b, struct binode *in, void *arg)
{
	struct shtab *h = arg;
	struct shent *best = NULL, ne;
	uint64_t bestlen = 0, bestgain = 0, nearlen = 0, add;
	struct bsrc s = { .fd = -1 };
	unsigned cand = 0;
	uint32_t crc;
	uintptr_t i;
	size_t pos = 0;
	int err;

	if (in->zseen || !ezi_bld_compress_wanted(b, in))
		return 0;
	in->zseen = true;
	add = packed_add(h, in);
	if (in->size < SHARE_MIN) {
		h->pos += add;
		ne = (struct shent){ in, h->pos, add };
		/* (kept for head_pays' context) */
		return h->reach && ezi_vec_push(&h->e, ne) ? -ENOMEM : 0;
	}
	/* an unreadable source is an error where it is first seen: a read
	 * that fails once may not fail again later (the open logs its own) */
	err = ezi_bld_src_open(b, in, &s);
	if (err)
		return err;
	err = read_at(b, &s, h->b1, SHARE_HASH, in->size - SHARE_HASH);
	ezi_bld_src_close(&s);
	if (err) {
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s", in->srcpath,
			    err == -EAGAIN ? "file shrank while building"
					   : strerror(-err));
		return err;
	}
	crc = ezi_crc32c(0, h->b1, SHARE_HASH);
	while (cand < SHARE_CAND &&
	       (i = (uintptr_t)ezi_hash_next(&h->t, crc, &pos))) {
		struct shent *c = &h->e.v[i - 1];
		uint64_t l;

		cand++;
		if (common_tail(b, h, c->in, in, &l))
			continue;
		if (h->reach && l == in->size) {
			/* the end of an earlier file: stored once anyway */
			nearlen = l;
			add = 0;
			break;
		}
		if (h->reach && h->pos + add - c->end <= h->reach) {
			/* the packed inode's codec sees the earlier copy */
			if (l > nearlen)
				nearlen = l;
		} else {
			/* an earlier file that shares its own end gives that
			 * up when it keeps a longer one for this file: a file
			 * that it shares with may be as good (amdgpu's dcn
			 * register headers, lz4 1M: 84 blocks) */
			uint64_t lost = ezi_bld_zshare(c->in);

			if (l > lost && l - lost > bestgain) {
				bestgain = l - lost;
				bestlen = l;
				best = c;
			}
		}
	}
	if (best && bestlen >= SHARE_MIN && bestlen >= nearlen + SHARE_MIN &&
	    (!h->reach || head_pays(b, h, in, bestlen))) {
		in->zshare = bestlen;
		if (best->in->zkeep < bestlen)
			best->in->zkeep = bestlen;
		add = 0;
	}
	h->pos += add;
	ne = (struct shent){ in, h->pos, add };
	if (ezi_vec_push(&h->e, ne))
		return -ENOMEM;
	return ezi_hash_add(&h->t, crc, (void *)(uintptr_t)h->e.n);
}

/*
 * How far back the packed inode's codec finds a match (h->reach; and
 * h->bigadd, what a file of a pcluster or more adds): with zstd and
 * lzma, a near-copy within it costs much less in the packed inode than a
 * head in pclusters of its own (linux tools/ zstd-3: +8 blocks when every
 * near-copy was shared), but one further back costs as much as a file of
 * its own. 0 (lz4: 64 KiB, deflate: 32 KiB, shorter than SHARE_MIN plus
 * the file): share at any distance (lz4hc-12 and deflate-9 over amdgpu's
 * register headers: -28 and -19 blocks). The packed inode's pclusters are
 * compressed apart, so zstd-3 matches no further back than one of them
 * holds, about 4 pclusters of source text; a file of a pcluster or more
 * leaves a tail of up to that much, which puts what comes before it out
 * of reach (linux tree, zstd 4K/64K/1M: 136, 37 and 24 blocks below
 * 1.9.3; 49 below, 10 above and 1 below with a pcluster guessed for both
 * and earlier files chosen by length alone). lzma-6 packs more into a
 * pcluster and its dictionary sets the reach, with a pcluster per large
 * file guessed (1M, 4 MiB dictionary: 8 blocks below 1.9.3, 26 above
 * when sharing at any distance); with a smaller dictionary (pclusters
 * below 256 KiB) a near-copy is shared at any distance (4K: 231.38 MiB
 * against 1.9.3's 231.64, 231.57 with the dictionary as reach; 64K: 18
 * blocks below, 3 above).
 */
static void guess_reach(const struct ezfs_builder *b, struct shtab *h)
{
	uint64_t span = 4 * (uint64_t)h->pcap;

	h->reach = 0;
	h->bigadd = h->pcap;
	switch (b->zalgs[0].alg) {
	case EZFS_ALG_LZMA:
		/* below 1 MiB, as with lz4: any distance */
		h->reach = ezi_bld_lzma_dict_size(b);
		if (h->reach < (1u << 20))
			h->reach = 0;
		break;
	case EZFS_ALG_ZSTD:
		h->reach = 1ull << ezi_bld_zstd_windowlog(b);
		if (h->reach > span)
			h->reach = span;
		h->bigadd = span;
		break;
	default:
		break;
	}
}

int ezi_bld_frags_share(struct ezfs_builder *b)
{
	struct shtab h = { .t = EZI_HASH_INIT, .e = EZI_VEC_INIT };
	int err;

	if (!(b->p.flags & (EZFS_BUILD_FRAGMENTS | EZFS_BUILD_ALL_FRAGMENTS)) ||
	    (b->p.flags & EZFS_BUILD_48BIT) || !b->nzalgs)
		return 0;
	h.allfrag = b->p.flags & EZFS_BUILD_ALL_FRAGMENTS;
	h.pcap = b->pclusterblks << b->blkszbits;
	guess_reach(b, &h);
	h.b1 = malloc(SHARE_BUF);
	h.b2 = malloc(SHARE_BUF);
	err = !ezi_hash_reserve(&h.t, 512) && h.b1 && h.b2
		      ? ezi_bld_files_dfs(b, visit, &h)
		      : -ENOMEM;
	ezi_hash_free(&h.t);
	ezi_vec_free(&h.e);
	if (h.zc)
		ezi_codec_zstd.cctx_free(h.zc);
	free(h.b1);
	free(h.b2);
	return err;
}
