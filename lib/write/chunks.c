/* SPDX-License-Identifier: MIT */
/*
 * chunks.c - data stage: CHUNK_BASED files (6.4): --chunksize chunks
 * stored once (compress/dedupe.c) and holes for all-zero ones, at the
 * cursor or in the blob (--blobdev); a tar index's files (--tar=i), whose
 * chunks point into the tar (device 1).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "write/internal.h"
#include "format/erofs_fs.h"

/* Offset of the chunk array from the inode start (6.4.2). */
uint32_t ezi_bld_chunk_hdr(const struct binode *in, unsigned unit)
{
	uint32_t e = ezi_bld_core_size(in) + in->xattr_isize;

	return (e + unit - 1) & ~(unit - 1);
}

static bool all_zero(const uint8_t *p, size_t len)
{
	return !len || (!p[0] && !memcmp(p, p + 1, len - 1));
}

/* A new chunk of `blocks` blocks at *cur: in the image or in the blob. */
static int chunk_store(struct ezfs_builder *b, const uint8_t *buf,
		       uint32_t blocks, uint64_t len, uint64_t *addr,
		       uint8_t *tmp)
{
	bool blob = b->blobfd >= 0;
	uint64_t *cur = blob ? &b->blob_cursor : &b->cursor, found;
	size_t bytes = (size_t)blocks << b->blkszbits;
	int fd = b->fd, err;

	/* compress/dedupe.c checks a candidate against the bytes at b->fd: for
	 * blob chunks (every chunk, with a blob) those are in the blob */
	if (blob)
		b->fd = b->blobfd;
	err = ezi_bld_dedupe_chunk(b, buf, blocks, len, *cur, &found, tmp);
	b->fd = fd;
	if (err < 0)
		return err;
	if (err) {
		*addr = found;
		return 0;
	}
	*addr = *cur;
	err = blob ? ezi_bld_blob_pwrite(b, buf, bytes, *cur << b->blkszbits)
		   : ezi_bld_pwrite(b, buf, bytes, *cur << b->blkszbits);
	if (!err)
		*cur += blocks;
	return err;
}

/* The start block of entry i of a chunk array (unit 4 or 8 bytes). */
static uint32_t chunk_addr(const uint8_t *idx, unsigned unit, uint32_t i)
{
	return get_le32(idx + (size_t)i * unit + (unit == 8 ? 4 : 0));
}

/*
 * Fewer, larger chunks (as mkfs.erofs): the largest power of two 2^k
 * such that every group of 2^k chunks is all holes or one contiguous run
 * on one device; the chunk array keeps each group's first entry. Returns
 * the new chunk bits (at most blksz << 31 bytes).
 */
static unsigned merge_chunks(const struct ezfs_builder *b, struct binode *in,
			     unsigned cbits, unsigned unit, uint32_t n)
{
	uint32_t cblocks = 1u << (cbits - b->blkszbits), g, s, j, m;
	unsigned k = 0;

	for (;;) {
		bool ok = true;

		g = 2u << k;
		if (cbits + k + 1 >
			    b->blkszbits + EROFS_CHUNK_FORMAT_BLKBITS_MASK ||
		    (g >> 1) >= n)
			break;
		for (s = 0; ok && s < n; s += g) {
			uint32_t a = chunk_addr(in->chunkidx, unit, s);
			const uint8_t *e = in->chunkidx + (size_t)s * unit;

			for (j = s + 1; ok && j < s + g && j < n; j++) {
				uint32_t c = chunk_addr(in->chunkidx, unit, j);

				if (a == EROFS_NULL_ADDR32)
					ok = c == EROFS_NULL_ADDR32;
				else
					ok = c != EROFS_NULL_ADDR32 &&
					     c == a + (j - s) * cblocks &&
					     !memcmp(e,
						     in->chunkidx +
							     (size_t)j * unit,
						     unit == 8 ? 4 : 0);
			}
		}
		if (!ok)
			break;
		k++;
	}
	if (!k)
		return cbits;
	g = 1u << k;
	m = (n + g - 1) / g;
	for (j = 1; j < m; j++)
		memmove(in->chunkidx + (size_t)j * unit,
			in->chunkidx + (size_t)j * g * unit, unit);
	in->chunkidx_len = m * unit;
	return cbits + k;
}

/*
 * CHUNK_BASED file (6.4): chunks of --chunksize bytes; all-zero chunks are
 * holes, identical chunks are stored once (dedupe.c), others at the cursor
 * (with a blob: at the blob's cursor, device 1 in 8-byte chunk indexes).
 */
int ezi_bld_write_chunked(struct ezfs_builder *b, struct binode *in)
{
	uint32_t csz = b->p.chunksize, cbits = 0, i, n;
	bool blob = b->blobfd >= 0;
	bool idx8 = blob || (b->p.flags & EZFS_BUILD_CHUNK_INDEXES);
	unsigned unit = idx8 ? 8 : 4;
	uint8_t *buf = NULL, *tmp = NULL;
	struct bsrc src;
	int err = 0;

	while ((1u << cbits) < csz)
		cbits++;
	n = (uint32_t)((in->size + csz - 1) >> cbits);
	in->chunkidx_len = n * unit;
	in->chunkidx = calloc(1, in->chunkidx_len);
	buf = malloc(csz);
	tmp = malloc(csz);
	if (!in->chunkidx || !buf || !tmp) {
		err = -ENOMEM;
		goto out_nofd;
	}
	err = ezi_bld_src_open(b, in, &src);
	if (err)
		goto out_nofd;
	for (i = 0; i < n; i++) {
		uint64_t off = (uint64_t)i << cbits, addr;
		size_t len =
			in->size - off < csz ? (size_t)(in->size - off) : csz;
		uint32_t blocks =
			(uint32_t)((len + b->blksz - 1) >> b->blkszbits);
		ssize_t got = ezi_bld_src_pread(&src, buf, len, off);
		uint8_t *e = in->chunkidx + (size_t)i * unit;

		if (got < 0 || (size_t)got != len) {
			err = got < 0 ? (int)got : -EAGAIN;
			ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s", in->srcpath,
				    got < 0 ? strerror(-err)
					    : "file shrank while building");
			break;
		}
		memset(buf + len, 0, ((size_t)blocks << b->blkszbits) - len);
		if (all_zero(buf, len)) {
			addr = EROFS_NULL_ADDR32;
		} else {
			err = chunk_store(b, buf, blocks, len, &addr, tmp);
			if (err)
				break;
		}
		if (addr > 0xFFFFFFFFull) {
			err = -EFBIG;
			ezi_bld_log(b, EZFS_LOG_ERROR,
				    "%s: block address beyond 32 bits",
				    in->srcpath);
			break;
		}
		if (idx8) {
			/* device 0, or the blob (1) for stored chunks */
			if (blob && addr != EROFS_NULL_ADDR32)
				put_le16(e + 2, 1);
			put_le32(e + 4, (uint32_t)addr);
		} else
			put_le32(e, (uint32_t)addr);
	}
	if (!err)
		err = ezi_bld_src_check(b, in, &src);
	ezi_bld_src_close(&src);
out_nofd:
	free(buf);
	free(tmp);
	if (err)
		return err;
	cbits = merge_chunks(b, in, cbits, unit, n);
	in->datalayout = EROFS_INODE_CHUNK_BASED;
	in->chunkfmt = (uint16_t)((cbits - b->blkszbits) |
				  (idx8 ? EROFS_CHUNK_FORMAT_INDEXES : 0));
	in->nblocks = 0;
	in->tail_len = 0;
	in->unit_size = ezi_bld_chunk_hdr(in, unit) + in->chunkidx_len;
	b->chunked = true;
	return 0;
}

/*
 * Tar index (mkfs.erofs --tar=i): the file's data stays in the tar,
 * device 1, at in->dataoff (block aligned, tar.c checks): one chunk
 * index per chunk, the chunk size the smallest power of two that holds
 * the whole file (at most blksz << 31), 48-bit addresses where a chunk
 * starts beyond 2^32 blocks.
 */
int ezi_bld_write_tarindex(struct ezfs_builder *b, struct binode *in)
{
	unsigned cbits = b->blkszbits,
		 maxbits = b->blkszbits + EROFS_CHUNK_FORMAT_BLKBITS_MASK;
	uint64_t start = in->dataoff >> b->blkszbits, n, i, last;
	bool wide;

	while (cbits < maxbits && (1ull << cbits) < in->size)
		cbits++;
	n = (in->size + (1ull << cbits) - 1) >> cbits;
	last = start + ((n - 1) << (cbits - b->blkszbits));
	wide = last > 0xFFFFFFFFull;
	if (last > 0xFFFFFFFFFFFFull) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "%s: block address beyond 48 bits", in->srcpath);
		return -EFBIG;
	}
	in->chunkidx_len = (uint32_t)(n * 8);
	in->chunkidx = calloc(1, in->chunkidx_len);
	if (!in->chunkidx)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		uint8_t *e = in->chunkidx + i * 8;
		uint64_t addr = start + (i << (cbits - b->blkszbits));

		put_le16(e, wide ? (uint16_t)(addr >> 32) : 0);
		put_le16(e + 2, 1);
		put_le32(e + 4, (uint32_t)addr);
	}
	if (wide)
		b->p.flags |= EZFS_BUILD_48BIT;
	in->datalayout = EROFS_INODE_CHUNK_BASED;
	in->chunkfmt =
		(uint16_t)((cbits - b->blkszbits) | EROFS_CHUNK_FORMAT_INDEXES |
			   (wide ? EROFS_CHUNK_FORMAT_48BIT : 0));
	in->nblocks = 0;
	in->tail_len = 0;
	in->unit_size = ezi_bld_chunk_hdr(in, 8) + in->chunkidx_len;
	b->chunked = true;
	return 0;
}
