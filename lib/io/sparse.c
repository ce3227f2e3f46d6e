/* SPDX-License-Identifier: MIT */
/*
 * sparse.c - Android sparse images read in place. A sparse file is a
 * 28-byte header and a run of chunks, each a 12-byte header and its data:
 * RAW (blocks stored as they are), FILL (one 4-byte value repeated),
 * DONT_CARE (blocks not stored, read here as zeros) and CRC32 (a checksum
 * of the output so far, no blocks). A split set is several such files
 * over the same output, each holding some of its blocks. The chunks of all
 * files are sorted into one table at open; a read binary-searches it.
 * CRC32 chunks and the header's checksum are not checked: that would read
 * the whole image at open.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/android.h"

#ifndef EUCLEAN
#define EUCLEAN 117
#endif

#define SPARSE_MAGIC	0xed26ff3au
#define SPARSE_HDR_MIN	28
#define CHUNK_HDR_MIN	12
#define CHUNK_RAW	0xcac1
#define CHUNK_FILL	0xcac2
#define CHUNK_DONT_CARE 0xcac3
#define CHUNK_CRC32	0xcac4

struct sp_chunk {
	uint64_t start; /* output byte */
	uint64_t len;	/* output bytes */
	uint64_t src;	/* RAW: byte in its piece */
	uint32_t piece;
	uint8_t fill[4]; /* FILL: the value as stored */
	uint8_t raw;	 /* 1 RAW, 0 FILL */
};

struct sparse_io {
	struct ezfs_io *pieces;
	unsigned npieces;
	struct sp_chunk *c;
	size_t n, cap;
	uint64_t size;
	struct ezfs_sparse_info info; /* ezfs_sparse_stat's counts */
};

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* Exactly len bytes at off of a piece (its own size checked by the
 * caller); a short read is -EIO. */
static int piece_read(const struct ezfs_io *p, void *buf, size_t len,
		      uint64_t off)
{
	ssize_t n = p->ops->pread(p->arg, buf, len, p->base + off);

	if (n < 0)
		return n == -ENOMEM ? -ENOMEM : -EIO;
	return (size_t)n == len ? 0 : -EIO;
}

static void sparse_free(struct sparse_io *s)
{
	unsigned i;

	for (i = 0; i < s->npieces; i++)
		ezi_io_close(&s->pieces[i]);
	free(s->pieces);
	free(s->c);
	free(s);
}

static void sparse_close(void *arg)
{
	sparse_free(arg);
}

static ssize_t sparse_pread(void *arg, void *buf, size_t len, uint64_t off)
{
	const struct sparse_io *s = arg;
	uint8_t *dst = buf;
	size_t lo = 0, hi = s->n, done = 0;

	if (off >= s->size)
		return 0;
	if (len > s->size - off)
		len = (size_t)(s->size - off);
	/* the first chunk ending after off */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->c[mid].start + s->c[mid].len <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (done < len) {
		uint64_t pos = off + done, k = len - done;
		const struct sp_chunk *c = lo < s->n ? &s->c[lo] : NULL;

		if (!c || c->start > pos) {
			/* DONT_CARE, or blocks no chunk covers */
			uint64_t end = c ? c->start : s->size;

			if (k > end - pos)
				k = end - pos;
			memset(dst + done, 0, (size_t)k);
		} else {
			uint64_t in = pos - c->start;

			if (k > c->len - in)
				k = c->len - in;
			if (c->raw) {
				int err = piece_read(&s->pieces[c->piece],
						     dst + done, (size_t)k,
						     c->src + in);
				if (err)
					return err;
			} else {
				uint8_t *d = dst + done;
				uint64_t i, m;

				/* four bytes in phase, then doubled */
				for (i = 0; i < k && i < 4; i++)
					d[i] = c->fill[(in + i) & 3];
				for (; i < k; i += m) {
					m = i < k - i ? i : k - i;
					memcpy(d + i, d, (size_t)m);
				}
			}
			if (in + k == c->len)
				lo++;
		}
		done += (size_t)k;
	}
	return (ssize_t)len;
}

static const struct ezfs_io_ops sparse_ops = {
	.pread = sparse_pread,
	.close = sparse_close,
};

int ezi_sparse_probe(const struct ezfs_io *io)
{
	uint8_t m[4];
	int err;

	if (io->size < sizeof(m))
		return 0;
	err = piece_read(io, m, sizeof(m), 0);
	if (err)
		return err;
	return le32(m) == SPARSE_MAGIC;
}

unsigned ezi_sparse_pieces(const struct ezfs_io *io)
{
	return io->ops == &sparse_ops
		       ? ((const struct sparse_io *)io->arg)->npieces
		       : 0;
}

static int add_chunk(struct sparse_io *s, const struct sp_chunk *c)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct sp_chunk *nc = realloc(s->c, cap * sizeof(*nc));

		if (!nc)
			return -ENOMEM;
		s->c = nc;
		s->cap = cap;
	}
	s->c[s->n++] = *c;
	return 0;
}

static const char *chunk_type_name(uint16_t t)
{
	switch (t) {
	case CHUNK_RAW:
		return "raw";
	case CHUNK_FILL:
		return "fill";
	case CHUNK_DONT_CARE:
		return "dont-care";
	default:
		return "crc32";
	}
}

struct sp_geom {
	uint32_t blk_sz, total_blks;
};

/* Parse piece pi's header and chunks into s. */
static int parse_piece(struct sparse_io *s, unsigned pi, const char *name,
		       struct sp_geom *g, const struct ezfs_logger *lg)
{
	const struct ezfs_io *p = &s->pieces[pi];
	uint8_t h[SPARSE_HDR_MIN], ch[CHUNK_HDR_MIN];
	uint32_t blk_sz, total_blks, nchunks, i;
	uint16_t hdr_sz, chdr_sz;
	uint64_t pos, blk = 0;
	int err;

	if (p->size < SPARSE_HDR_MIN) {
		ezi_logf(lg, EZFS_LOG_ERROR,
			 "%s: truncated sparse header (%llu of %d bytes)", name,
			 (unsigned long long)p->size, SPARSE_HDR_MIN);
		return -EUCLEAN;
	}
	err = piece_read(p, h, sizeof(h), 0);
	if (err)
		return err;
	if (le32(h) != SPARSE_MAGIC) {
		ezi_logf(lg, EZFS_LOG_ERROR, "%s: not a sparse image", name);
		return -EUCLEAN;
	}
	if (le16(h + 4) != 1) {
		ezi_logf(lg, EZFS_LOG_ERROR,
			 "%s: sparse format version %u.%u (only 1.x is known)",
			 name, le16(h + 4), le16(h + 6));
		return -EOPNOTSUPP;
	}
	hdr_sz = le16(h + 8);
	chdr_sz = le16(h + 10);
	blk_sz = le32(h + 12);
	total_blks = le32(h + 16);
	nchunks = le32(h + 20);
	if (hdr_sz < SPARSE_HDR_MIN || chdr_sz < CHUNK_HDR_MIN) {
		ezi_logf(lg, EZFS_LOG_ERROR,
			 "%s: sparse header sizes %u/%u (at least %d/%d)", name,
			 hdr_sz, chdr_sz, SPARSE_HDR_MIN, CHUNK_HDR_MIN);
		return -EUCLEAN;
	}
	if (!blk_sz || blk_sz % 4) {
		ezi_logf(lg, EZFS_LOG_ERROR,
			 "%s: sparse block size %u is not a multiple of 4",
			 name, blk_sz);
		return -EUCLEAN;
	}
	if (pi == 0) {
		*g = (struct sp_geom){ blk_sz, total_blks };
	} else if (blk_sz != g->blk_sz) {
		ezi_logf(lg, EZFS_LOG_ERROR,
			 "%s: block size %u, the first file of the set has %u",
			 name, blk_sz, g->blk_sz);
		return -EUCLEAN;
	} else if (total_blks > g->total_blks) {
		g->total_blks = total_blks;
	}
	if ((uint64_t)nchunks * chdr_sz > p->size - hdr_sz ||
	    hdr_sz > p->size) {
		ezi_logf(lg, EZFS_LOG_ERROR,
			 "%s: truncated: %u chunks do not fit in %llu bytes",
			 name, nchunks, (unsigned long long)p->size);
		return -EUCLEAN;
	}
	pos = hdr_sz;
	for (i = 0; i < nchunks; i++) {
		struct sp_chunk c = { 0 };
		uint32_t nblk, total;
		uint64_t data, want;
		uint16_t type;

		if (pos > p->size || p->size - pos < chdr_sz) {
			ezi_logf(lg, EZFS_LOG_ERROR,
				 "%s: truncated: chunk %u of %u would start at "
				 "byte %llu of %llu",
				 name, i, nchunks, (unsigned long long)pos,
				 (unsigned long long)p->size);
			return -EUCLEAN;
		}
		err = piece_read(p, ch, sizeof(ch), pos);
		if (err)
			return err;
		type = le16(ch);
		nblk = le32(ch + 4);
		total = le32(ch + 8);
		data = pos + chdr_sz;
		switch (type) {
		case CHUNK_RAW:
			want = (uint64_t)nblk * blk_sz;
			break;
		case CHUNK_FILL:
		case CHUNK_CRC32:
			want = 4;
			break;
		case CHUNK_DONT_CARE:
			want = 0;
			break;
		default:
			ezi_logf(lg, EZFS_LOG_ERROR,
				 "%s: chunk %u at byte %llu: unknown type "
				 "0x%04x",
				 name, i, (unsigned long long)pos, type);
			return -EUCLEAN;
		}
		if (total < chdr_sz || total - chdr_sz != want) {
			ezi_logf(lg, EZFS_LOG_ERROR,
				 "%s: chunk %u (%s, %u blocks) at byte %llu: "
				 "size %u, expected %llu",
				 name, i, chunk_type_name(type), nblk,
				 (unsigned long long)pos, total,
				 (unsigned long long)(want + chdr_sz));
			return -EUCLEAN;
		}
		if (want > p->size - data) {
			ezi_logf(lg, EZFS_LOG_ERROR,
				 "%s: truncated: chunk %u (%s) at byte %llu "
				 "needs %llu bytes, the file has %llu",
				 name, i, chunk_type_name(type),
				 (unsigned long long)pos,
				 (unsigned long long)(data + want),
				 (unsigned long long)p->size);
			return -EUCLEAN;
		}
		s->info.chunks++;
		if (type == CHUNK_CRC32) {
			s->info.crc32_chunks++;
			pos = data + want;
			continue; /* no blocks */
		}
		if (nblk > total_blks - blk) {
			ezi_logf(lg, EZFS_LOG_ERROR,
				 "%s: chunk %u at byte %llu: blocks %llu+%u "
				 "run past the image's %u blocks",
				 name, i, (unsigned long long)pos,
				 (unsigned long long)blk, nblk, total_blks);
			return -EUCLEAN;
		}
		c.start = blk * blk_sz;
		c.len = (uint64_t)nblk * blk_sz;
		c.piece = pi;
		if (type == CHUNK_RAW) {
			c.raw = 1;
			c.src = data;
			s->info.raw_chunks++;
			s->info.raw_blocks += nblk;
		} else if (type == CHUNK_FILL) {
			err = piece_read(p, c.fill, 4, data);
			if (err)
				return err;
			s->info.fill_chunks++;
			s->info.fill_blocks += nblk;
		} else {
			s->info.dont_care_chunks++;
			s->info.dont_care_blocks += nblk;
		}
		if (type != CHUNK_DONT_CARE && nblk) {
			err = add_chunk(s, &c);
			if (err)
				return err;
		}
		blk += nblk;
		pos = data + want;
	}
	return 0;
}

static int chunk_cmp(const void *a, const void *b)
{
	const struct sp_chunk *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int ezi_sparse_open(struct ezfs_io *pieces, unsigned n,
		    const char *const *names, const struct ezfs_logger *lg,
		    struct ezfs_io *out)
{
	struct sparse_io *s = calloc(1, sizeof(*s));
	struct sp_geom g = { 0, 0 };
	char fallback[32];
	unsigned i;
	size_t k;
	int err = 0;

	if (s)
		s->pieces = calloc(n ? n : 1, sizeof(*s->pieces));
	if (!s || !s->pieces) {
		for (i = 0; i < n; i++)
			ezi_io_close(&pieces[i]);
		free(s);
		memset(out, 0, sizeof(*out));
		return -ENOMEM;
	}
	memcpy(s->pieces, pieces, n * sizeof(*pieces));
	s->npieces = n;
	memset(out, 0, sizeof(*out)); /* out may be one of the pieces */
	for (i = 0; i < n && !err; i++) {
		/* the first file is the one the caller named already */
		const char *name = i && names && names[i] ? names[i] : NULL;

		if (!name) {
			if (i)
				snprintf(fallback, sizeof(fallback),
					 "sparse file %u", i);
			else
				snprintf(fallback, sizeof(fallback),
					 "sparse image");
			name = fallback;
		}
		err = parse_piece(s, i, name, &g, lg);
	}
	if (!err && n > 1) {
		qsort(s->c, s->n, sizeof(*s->c), chunk_cmp);
		for (k = 1; k < s->n && !err; k++) {
			const struct sp_chunk *a = &s->c[k - 1], *b = &s->c[k];

			if (a->start + a->len > b->start) {
				ezi_logf(lg, EZFS_LOG_ERROR,
					 "%s: blocks from %llu are also in %s",
					 names ? names[b->piece] : "sparse set",
					 (unsigned long long)(b->start /
							      g.blk_sz),
					 names ? names[a->piece] : "another");
				err = -EUCLEAN;
			}
		}
	}
	if (err) {
		sparse_free(s);
		return err;
	}
	s->size = (uint64_t)g.total_blks * g.blk_sz;
	s->info.files = n;
	s->info.block_size = g.blk_sz;
	s->info.blocks = g.total_blks;
	s->info.image_bytes = s->size;
	for (i = 0; i < n; i++)
		s->info.stored_bytes += s->pieces[i].size;
	out->ops = &sparse_ops;
	out->arg = s;
	out->size = s->size;
	return 0;
}

int ezfs_sparse_stat(const char *path, struct ezfs_sparse_info *out)
{
	struct ezfs_io io;
	int err;

	memset(out, 0, sizeof(*out));
	err = ezi_io_open_path(path, NULL, &io);
	if (err)
		return err;
	if (io.ops == &sparse_ops)
		*out = ((const struct sparse_io *)io.arg)->info;
	else
		err = -EMEDIUMTYPE;
	ezi_io_close(&io);
	return err;
}
