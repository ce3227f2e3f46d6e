/* SPDX-License-Identifier: MIT */
/* data.c - file reads: flat, chunk-based and compressed layouts. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "read/internal.h"
#include "engine/engine.h"

#define NID(ino) ((unsigned long long)(ino)->nid)

/* [6.3] flat inodes: blocks from startblk, plus an inline tail. */
int ezi_flat_map(ezfs_inode *ino, uint64_t la, struct ezfs_extent *ext)
{
	ezfs_image *img = ino->img;
	uint64_t nblocks = (ino->size + img->blksz - 1) >> img->blkbits;
	uint64_t lastblk = nblocks;

	memset(ext, 0, sizeof(*ext));
	ext->alg = EZFS_ALG_SHIFTED;
	if (ino->layout == EROFS_INODE_FLAT_INLINE && nblocks)
		lastblk = nblocks - 1;
	if (la < lastblk << img->blkbits) {
		ext->la = 0;
		ext->llen = lastblk << img->blkbits;
		if (ext->llen > ino->size)
			ext->llen = ino->size;
		if (ino->startblk == UINT64_MAX) {
			/* 48-bit sparse file (or corrupt): a hole */
			EZFS_CHECK(img, img->is48,
				   "nid %llu: data blocks at a NULL address",
				   NID(ino));
			return 0;
		}
		EZFS_CHECK(img,
			   ino->startblk <=
				   (UINT64_MAX >> img->blkbits) - nblocks,
			   "nid %llu: start block out of range", NID(ino));
		ext->plen = ext->llen;
		ext->flags = EZFS_EXTENT_MAPPED;
		return ezi_dev_addr(img, ino->nid, 0, ino->startblk, ext->llen,
				    &ext->pa);
	}
	ext->la = lastblk << img->blkbits;
	ext->llen = ino->size - ext->la;
	ext->pa = ezfs_inode_datapos(ino);
	ext->plen = ext->llen;
	ext->flags = EZFS_EXTENT_MAPPED | EZFS_EXTENT_INLINE |
		     (ino->in_metabox ? EZFS_EXTENT_META : 0);
	EZFS_CHECK(img, (ext->pa & (img->blksz - 1)) + ext->llen <= img->blksz,
		   "nid %llu: inline data crosses a block boundary", NID(ino));
	return 0;
}

/* [6.4] chunk-based inodes: a block map or chunk indexes. */
int ezi_chunk_map(ezfs_inode *ino, uint64_t la, struct ezfs_extent *ext)
{
	ezfs_image *img = ino->img;
	const bool indexes = ino->chunkformat & EROFS_CHUNK_FORMAT_INDEXES;
	const unsigned unit = indexes ? 8 : 4;
	uint64_t chunk = la >> ino->chunkbits, blk;
	uint64_t pos =
		(ezfs_inode_datapos(ino) + unit - 1) & ~(uint64_t)(unit - 1);
	uint16_t dev = 0;
	uint8_t e[8];
	int err;

	memset(ext, 0, sizeof(*ext));
	ext->alg = EZFS_ALG_SHIFTED;
	ext->la = chunk << ino->chunkbits;
	ext->llen = 1ull << ino->chunkbits;
	if (ext->llen > ino->size - ext->la)
		ext->llen = ino->size - ext->la;
	err = ezi_meta_read(img, ino->in_metabox, pos + chunk * unit, e, unit);
	if (err)
		return err;
	if (indexes) {
		dev = get_le16(e + 2);
		blk = get_le32(e + 4);
		if (ino->chunkformat & EROFS_CHUNK_FORMAT_48BIT)
			blk |= (uint64_t)get_le16(e) << 32;
		if ((ino->chunkformat & EROFS_CHUNK_FORMAT_48BIT)
			    ? blk == EROFS_NULL_ADDR48
			    : blk == EROFS_NULL_ADDR32)
			return 0;
	} else {
		blk = get_le32(e);
		if (blk == EROFS_NULL_ADDR32)
			return 0;
	}
	ext->plen = ext->llen;
	ext->flags = EZFS_EXTENT_MAPPED;
	return ezi_dev_addr(img, ino->nid, dev, blk, ext->llen, &ext->pa);
}

static bool is_compressed(const ezfs_inode *ino)
{
	return ino->layout == EROFS_INODE_COMPRESSED_FULL ||
	       ino->layout == EROFS_INODE_COMPRESSED_COMPACT;
}

int ezfs_map(ezfs_inode *ino, uint64_t la, struct ezfs_extent *ext)
{
	struct zmap m;
	int err;

	if (la >= ino->size)
		return -EINVAL;
	if (!S_ISREG(ino->mode) && !S_ISDIR(ino->mode) && !S_ISLNK(ino->mode))
		return -EINVAL;
	if (ino->layout == EROFS_INODE_CHUNK_BASED)
		return ezi_chunk_map(ino, la, ext);
	if (!is_compressed(ino))
		return ezi_flat_map(ino, la, ext);
	err = ezi_z_map(ino, la, &m);
	if (err)
		return err;
	ext->la = m.la;
	ext->llen = m.llen;
	ext->pa = m.pa;
	ext->plen = m.plen;
	ext->alg = m.alg;
	ext->flags = m.flags;
	return 0;
}

uint64_t ezfs_hole_end(ezfs_inode *ino, uint64_t la, uint64_t size)
{
	struct ezfs_extent e;
	uint64_t end;

	if (ezfs_map(ino, la, &e) || (e.flags & EZFS_EXTENT_MAPPED) ||
	    e.la > la || e.llen > UINT64_MAX - e.la)
		return la;
	end = e.la + e.llen;
	return end < size ? end : size;
}

/* Copy a raw extent (SHIFTED or INTERLACED) part [from, from+len). */
static int read_raw(ezfs_inode *ino, const struct zmap *m, uint64_t from,
		    uint8_t *dst, size_t len)
{
	ezfs_image *img = ino->img;
	bool meta = m->flags & (EZFS_EXTENT_INLINE | EZFS_EXTENT_META);
	uint64_t off = from;

	if (m->alg == EZFS_ALG_INTERLACED) {
		/* byte i of the extent is at (la + i) mod blksz, wrapping */
		uint64_t shift = m->la & (img->blksz - 1);
		uint64_t right = img->blksz - shift;

		EZFS_CHECK(img, m->plen >= img->blksz,
			   "nid %llu: interlaced pcluster smaller than a block",
			   NID(ino));
		if (from < right) {
			size_t n = len < right - from ? len
						      : (size_t)(right - from);
			int err = ezi_data_read(img, dst, n,
						m->pa + shift + from);

			if (err || n == len)
				return err;
			dst += n;
			len -= n;
			from += n;
		}
		off = from - right;
	}
	if (meta)
		return ezi_meta_read(img, m->flags & EZFS_EXTENT_META,
				     m->pa + off, dst, len);
	return ezi_data_read(img, dst, len, m->pa + off);
}

static int read_fragment(ezfs_inode *ino, uint64_t pos, uint8_t *dst,
			 size_t len)
{
	ssize_t n = ezfs_pread(ino->img->packed, dst, len, pos);

	if (n < 0)
		return (int)n;
	EZFS_CHECK(ino->img, (size_t)n == len,
		   "nid %llu: fragment at %llu beyond the packed inode",
		   NID(ino), (unsigned long long)pos);
	return 0;
}

/*
 * Read [pos, pos+len) which lies inside compressed-layout extent m. seq: a
 * reader in order, which does not come back: an extent it has had whole
 * from the cache leaves it, its buffer taking the next decode.
 */
static int read_zextent(ezfs_inode *ino, const struct zmap *m, uint64_t pos,
			uint8_t *dst, size_t len, bool seq)
{
	struct pcache_entry *e;
	const uint8_t *data;
	uint64_t from = pos - m->la, whole;
	int err;

	if (!(m->flags & EZFS_EXTENT_MAPPED)) {
		memset(dst, 0, len);
		return 0;
	}
	if (m->flags & EZFS_EXTENT_FRAGMENT) {
		EZFS_CHECK(ino->img, m->pa <= UINT64_MAX - m->llen,
			   "nid %llu: fragment offset out of range", NID(ino));
		return read_fragment(ino, m->pa + from, dst, len);
	}
	if (!(m->flags & EZFS_EXTENT_ENCODED))
		return read_raw(ino, m, from, dst, len);
	/* Whole extent requested and not decoded (or being decoded) in the
	 * cache: decode straight into the caller's buffer. */
	if (!from && len == m->llen && !(m->flags & EZFS_EXTENT_PARTIAL_REF) &&
	    !ezi_pcache_has(ino->img, m))
		return ezi_z_decode(ino, m, dst, len, false);
	err = ezi_pcache_get(ino, m, from + len, &e, &data);
	if (err)
		return err;
	memcpy(dst, data + from, len);
	if (seq) {
		whole = m->la + m->llen < ino->size ? m->llen
						    : ino->size - m->la;
		ezi_pcache_served(ino->img, e, len, (size_t)whole);
	}
	ezi_pcache_put(ino->img, e);
	return 0;
}

/*
 * Decoding ahead (dispatch queue/percpu): the encoded extents of [from, to)
 * not in the cache are queued for decoding into it, behind every decode a
 * reader waits for, so that the workers decode them while the reader
 * copies and writes what it has; a quarter of the cache at most is on its
 * way at once, AHEAD_JOBS extents at most per call. Returns how many were
 * queued.
 */
#define AHEAD_JOBS 64

static int decode_ahead(ezfs_inode *ino, uint64_t from, uint64_t to,
			uint64_t *next)
{
	ezfs_image *img = ino->img;
	const size_t max = img->pc.budget / 4;
	struct ezfs_ejob *jobs = NULL, **tail = &jobs;
	uint64_t pos = from;
	struct zmap m;
	int n = 0, r = 0;

	if (to > ino->size)
		to = ino->size;
	while (pos < to && n < AHEAD_JOBS) {
		r = ezi_z_map(ino, pos, &m);
		if (r || pos < m.la || pos - m.la >= m.llen)
			break; /* the reader meets it, and says */
		if ((m.flags &
		     (EZFS_EXTENT_MAPPED | EZFS_EXTENT_ENCODED |
		      EZFS_EXTENT_FRAGMENT | EZFS_EXTENT_PARTIAL_REF)) ==
		    (EZFS_EXTENT_MAPPED | EZFS_EXTENT_ENCODED)) {
			r = ezi_pcache_ahead(ino, &m, max, &tail);
			if (r < 0)
				break;
			n += r;
		}
		pos = m.la + m.llen;
	}
	*next = pos < to ? pos : to;
	if (jobs && !ezi_engine_submit(ezi_image_engine(img), jobs)) {
		ezi_pcache_ahead_drop(jobs); /* the dispatcher just went */
		n = 0;
	}
	return n;
}

/*
 * A reader in order whose read ended inside an extent (cat's 4 MiB reads
 * of 1 MiB extents; not the extent-aligned windows of fsck and extract,
 * which batch whole extents themselves) gets the extents after it decoded
 * ahead: two reads' worth, 2 to 16 MiB, from where the last call stopped.
 */
#define AHEAD_MIN (2u << 20)
#define AHEAD_MAX (16u << 20)

static void read_ahead(ezfs_inode *ino, uint64_t end, size_t len)
{
	uint64_t win = 2 * (uint64_t)len, pos;

	win = win < AHEAD_MIN ? AHEAD_MIN : win > AHEAD_MAX ? AHEAD_MAX : win;
	pos = __atomic_load_n(&ino->ahead_end, __ATOMIC_RELAXED);
	if (pos < end)
		pos = end;
	if (pos < end + win) {
		decode_ahead(ino, pos, end + win, &pos);
		__atomic_store_n(&ino->ahead_end, pos, __ATOMIC_RELAXED);
	}
}

int ezfs_decode_ahead(ezfs_inode *ino, uint64_t off, uint64_t len,
		      uint64_t *next)
{
	uint64_t end = len < UINT64_MAX - off ? off + len : UINT64_MAX, at;

	if (next)
		*next = end;
	if (!S_ISREG(ino->mode) || !is_compressed(ino) || off >= ino->size ||
	    !len || !ezi_engine_batching(ezi_image_engine(ino->img)))
		return 0;
	return decode_ahead(ino, off, end, next ? next : &at);
}

/*
 * Batched decoding (dispatch queue/percpu): whole encoded extents of one
 * read are decoded together on the workers, each straight into the
 * caller's buffer, and the read waits for all of them.
 */
#define ZBATCH_MAX 32

struct zjob {
	ezfs_inode *ino;
	struct zmap m;
	const uint8_t *in; /* its bytes in the reader's window, or NULL */
	uint8_t *dst;
};

struct zbatch {
	unsigned n;
	struct zjob z[ZBATCH_MAX];
	struct ezfs_ejob j[ZBATCH_MAX];
};

static int zjob_run(void *arg)
{
	struct zjob *z = arg;

	if (z->in)
		return ezi_z_decode_from(z->ino, &z->m, z->in, z->dst,
					 (size_t)z->m.llen);
	return ezi_z_decode(z->ino, &z->m, z->dst, (size_t)z->m.llen, false);
}

static int zbatch_flush(ezfs_image *img, struct zbatch *b)
{
	int err;

	if (!b->n)
		return 0;
	err = ezi_engine_run(ezi_image_engine(img), b->j, b->n);
	b->n = 0;
	return err;
}

/* Whole extent m wanted at dst: queue it (true), or leave it (false; also
 * when the cache has it, or it is being decoded ahead). */
static bool zbatch_add(struct zbatch *b, ezfs_inode *ino, const struct zmap *m,
		       uint64_t pos, uint64_t seg_end, uint8_t *dst)
{
	struct zjob *z;

	if (pos != m->la || seg_end - pos != m->llen ||
	    (m->flags & (EZFS_EXTENT_PARTIAL_REF | EZFS_EXTENT_FRAGMENT)) ||
	    (m->flags & (EZFS_EXTENT_MAPPED | EZFS_EXTENT_ENCODED)) !=
		    (EZFS_EXTENT_MAPPED | EZFS_EXTENT_ENCODED) ||
	    ezi_pcache_has(ino->img, m))
		return false;
	z = &b->z[b->n];
	z->ino = ino;
	z->m = *m;
	z->in = ezi_zwin_get(ino->img, m);
	z->dst = dst;
	b->j[b->n].fn = zjob_run;
	b->j[b->n].arg = z;
	b->n++;
	return true;
}

/*
 * A read of several small pclusters reads their compressed bytes at once,
 * into the thread's window: from extent m's on, as many as the rest of the
 * read [m->la, end) needs at m's ratio, 256 KiB at most. For file images
 * with one device (memory images are read in place); at most three per
 * read (pclusters that are not adjacent, from dedupe, are read alone).
 * Jobs queued in zb that use the old window run first. true: filled.
 */
#define ZWIN_PLEN_MAX (64u << 10) /* larger pclusters are read alone */
#define ZWIN_MAX      (256u << 10)

/* ezfs_pread calls on this thread now: a read nested in another (a
 * fragment from the packed inode, the metabox) leaves the window to the
 * outer one, whose queued jobs may point into it */
static __thread unsigned pread_depth;

static bool zwin_fill(ezfs_inode *ino, const struct zmap *m, uint64_t end,
		      struct zbatch *zb, int *err)
{
	ezfs_image *img = ino->img;
	uint64_t want;

	if (pread_depth > 1 ||
	    (m->flags &
	     (EZFS_EXTENT_MAPPED | EZFS_EXTENT_ENCODED | EZFS_EXTENT_FRAGMENT |
	      EZFS_EXTENT_INLINE | EZFS_EXTENT_META)) !=
		    (EZFS_EXTENT_MAPPED | EZFS_EXTENT_ENCODED) ||
	    m->plen > ZWIN_PLEN_MAX || !m->llen || end <= m->la + m->llen ||
	    img->ndevs || ezi_zwin_get(img, m) || ezi_data_map(img, 1, m->pa) ||
	    ezi_pcache_has(img, m))
		return false;
	want = (end - m->la) / m->llen * m->plen + 2 * m->plen;
	if (want > ZWIN_MAX)
		want = ZWIN_MAX;
	if (zb && zb->n)
		*err = zbatch_flush(img, zb);
	if (!*err && ezi_zwin_fill(img, m->pa, (size_t)want))
		return false; /* each read alone, which reports */
	return true;
}

ssize_t ezfs_pread(ezfs_inode *ino, void *buf, size_t len, uint64_t off)
{
	uint8_t *dst = buf;
	uint64_t end, pos;
	struct zbatch *zb = NULL;
	bool seq = false, mid = false;
	int err = 0, berr, wins = 0;

	if (S_ISDIR(ino->mode) || S_ISREG(ino->mode) || S_ISLNK(ino->mode)) {
		if (off >= ino->size)
			return 0;
	} else {
		return -EINVAL;
	}
	end = ino->size - off < len ? ino->size : off + len;
	pos = off;
	ezi_hint_read(ino, off, (size_t)(end - off));
	/* more than one pcluster's worth: worth batching (lib/engine: on
	 * workers, or in flight on an async engine) */
	if (is_compressed(ino) && end - off > ino->img->blksz &&
	    ezi_engine_batches(ezi_image_engine(ino->img)))
		zb = malloc(sizeof(*zb));
	if (zb)
		zb->n = 0;
	if (is_compressed(ino)) {
		/* in order: this read starts where the last one ended */
		seq = __atomic_exchange_n(&ino->seq_next, end,
					  __ATOMIC_RELAXED) == off;
		if (!seq)
			__atomic_store_n(&ino->ahead_end, 0, __ATOMIC_RELAXED);
	}
	pread_depth++;
	while (pos < end) {
		uint64_t seg_end;

		if (is_compressed(ino)) {
			struct zmap m;

			err = ezi_z_map(ino, pos, &m);
			if (!err && (pos < m.la || pos - m.la >= m.llen)) {
				ezfs_err(ino->img,
					 "nid %llu: extent map does "
					 "not cover %llu",
					 NID(ino), (unsigned long long)pos);
				err = -EUCLEAN;
			}
			if (err)
				break;
			seg_end = m.la + m.llen < end ? m.la + m.llen : end;
			mid = seg_end < m.la + m.llen &&
			      (m.flags & EZFS_EXTENT_ENCODED);
			/* a third window: the pclusters are not adjacent */
			if (wins < 3 && zwin_fill(ino, &m, end, zb, &err))
				wins++;
			if (err)
				break;
			if (zb && zbatch_add(zb, ino, &m, pos, seg_end,
					     dst + (pos - off))) {
				if (zb->n == ZBATCH_MAX)
					err = zbatch_flush(ino->img, zb);
			} else {
				err = read_zextent(
					ino, &m, pos, dst + (pos - off),
					(size_t)(seg_end - pos), seq);
			}
		} else {
			struct ezfs_extent ext;

			err = ino->layout == EROFS_INODE_CHUNK_BASED
				      ? ezi_chunk_map(ino, pos, &ext)
				      : ezi_flat_map(ino, pos, &ext);
			if (err)
				break;
			seg_end = ext.la + ext.llen < end ? ext.la + ext.llen
							  : end;
			if (seg_end <= pos) {
				err = -EUCLEAN;
				break;
			}
			if (!(ext.flags & EZFS_EXTENT_MAPPED))
				memset(dst + (pos - off), 0, seg_end - pos);
			else if (ext.flags & EZFS_EXTENT_INLINE)
				err = ezi_meta_read(
					ino->img, ext.flags & EZFS_EXTENT_META,
					ext.pa + (pos - ext.la),
					dst + (pos - off),
					(size_t)(seg_end - pos));
			else
				err = ezi_data_read(ino->img, dst + (pos - off),
						    (size_t)(seg_end - pos),
						    ext.pa + (pos - ext.la));
		}
		if (err)
			break;
		pos = seg_end;
	}
	if (zb) {
		/* the next extents on their way before this read waits */
		if (!err && seq && mid && end < ino->size)
			read_ahead(ino, end, (size_t)(end - off));
		/* wait for the queued decodes also on error: they write
		 * into buf */
		berr = zbatch_flush(ino->img, zb);
		free(zb);
		if (!err)
			err = berr;
	}
	pread_depth--;
	if (wins)
		ezi_zwin_drop(ino->img);
	if (err)
		return err;
	return (ssize_t)(end - off);
}

int ezfs_extent_ref(ezfs_inode *ino, uint64_t off, struct ezfs_ref *ref)
{
	struct pcache_entry *e;
	const uint8_t *data;
	struct zmap m;
	uint64_t end;
	int err;

	memset(ref, 0, sizeof(*ref));
	if (!S_ISREG(ino->mode) || !is_compressed(ino))
		return -EOPNOTSUPP;
	if (off >= ino->size)
		return -EINVAL;
	err = ezi_z_map(ino, off, &m);
	if (err)
		return err;
	if (off < m.la || off - m.la >= m.llen) {
		ezfs_err(ino->img, "nid %llu: extent map does not cover %llu",
			 NID(ino), (unsigned long long)off);
		return -EUCLEAN;
	}
	if ((m.flags & (EZFS_EXTENT_MAPPED | EZFS_EXTENT_ENCODED |
			EZFS_EXTENT_FRAGMENT)) !=
	    (EZFS_EXTENT_MAPPED | EZFS_EXTENT_ENCODED))
		return -EOPNOTSUPP;
	end = m.la + m.llen < ino->size ? m.la + m.llen : ino->size;
	err = ezi_pcache_get(ino, &m, m.llen, &e, &data);
	if (err)
		return err;
	ref->data = data;
	ref->off = m.la;
	ref->len = (size_t)(end - m.la);
	ref->priv = e;
	return 0;
}

void ezfs_ref_served(ezfs_inode *ino, struct ezfs_ref *ref, size_t bytes)
{
	if (ref->priv && bytes)
		ezi_pcache_served(ino->img, ref->priv, bytes, ref->len);
}

void ezfs_fetch_ahead(ezfs_inode *ino, uint64_t off, uint64_t len)
{
	const unsigned mask = EZFS_EXTENT_MAPPED | EZFS_EXTENT_ENCODED |
			      EZFS_EXTENT_FRAGMENT | EZFS_EXTENT_INLINE |
			      EZFS_EXTENT_META;
	uint64_t end, run = 0, run_end = 0;
	struct zmap m;

	if (!S_ISREG(ino->mode) || !is_compressed(ino) || off >= ino->size)
		return;
	end = len < ino->size - off ? off + len : ino->size;
	while (off < end) {
		if (ezi_z_map(ino, off, &m) || m.la + m.llen <= off)
			break;
		if ((m.flags & mask) ==
			    (EZFS_EXTENT_MAPPED | EZFS_EXTENT_ENCODED) &&
		    !ezi_pcache_has(ino->img, &m)) {
			if (m.pa != run_end) {
				ezi_data_willneed(ino->img, run, run_end - run);
				run = m.pa;
			}
			run_end = m.pa + m.plen;
		}
		off = m.la + m.llen;
	}
	ezi_data_willneed(ino->img, run, run_end - run);
}

void ezfs_ref_put(ezfs_inode *ino, struct ezfs_ref *ref)
{
	if (ref->priv)
		ezi_pcache_put(ino->img, ref->priv);
	memset(ref, 0, sizeof(*ref));
}

ssize_t ezfs_readlink(ezfs_inode *ino, char *buf, size_t size)
{
	ssize_t n;

	if (!S_ISLNK(ino->mode))
		return -EINVAL;
	if (ino->size >= size)
		return -ERANGE;
	n = ezfs_pread(ino, buf, (size_t)ino->size, 0);
	if (n < 0)
		return n;
	if ((uint64_t)n != ino->size)
		return -EUCLEAN;
	buf[n] = '\0';
	/* like the kernel, a target ends at its first NUL */
	return (ssize_t)strlen(buf);
}
