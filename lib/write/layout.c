/* SPDX-License-Identifier: MIT */
/*
 * layout.c - place file data, inodes and directories, and write them.
 *
 * Image layout (all addresses deterministic, independent of thread count):
 *   block 0..      zeros, superblock at 1024, compression configs, shared
 *                  xattrs, then inodes (meta_blkaddr = 0); a root inode
 *                  that does not fit there gets the next block(s)
 *   data_start..   file data (flat blocks and pclusters) in inode order
 *   meta..         inodes, each followed by its xattrs, compressed index and
 *                  inline tail; blocks and the gaps before them filled with
 *                  the units that add up to them (place_inodes);
 *                  if block 0 cannot be used, meta_blkaddr = first metadata
 *                  block - 1 so that the root NID is small and non-zero
 *   after meta     full blocks of directories (they need the NIDs)
 */
#define _GNU_SOURCE /* memfd_create */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "write/internal.h"
#include "format/erofs_fs.h"

#define COPY_BUF      (1u << 20)
#define FLAT_COPY_MIN (1u << 20)  /* larger flat files: copy_file_range */
#define BLD_MAX_SLOTS (4096 / 32) /* 32-byte slots in the largest block */

static unsigned core_size(const struct binode *in)
{
	return in->extended ? sizeof(struct erofs_inode_extended)
			    : sizeof(struct erofs_inode_compact);
}

/*
 * 48BIT: the superblock's epoch (2.2: max(0, T - 0xFFFFFFFF), the build
 * time T = epoch + build_time), which compact inodes' 32-bit mtimes are
 * relative to.
 */
static int64_t epoch48(const struct ezfs_builder *b)
{
	return b->epoch > 0xFFFFFFFFll ? b->epoch - 0xFFFFFFFFll : 0;
}

static bool need_extended(const struct ezfs_builder *b, const struct binode *in)
{
	unsigned f = b->p.flags;

	if (f & EZFS_BUILD_FORCE_EXTENDED)
		return true;
	if (in->size > 0xFFFFFFFFull || in->uid > 0xFFFF || in->gid > 0xFFFF ||
	    in->nlink > 0xFFFF)
		return true;
	if (f & EZFS_BUILD_FORCE_COMPACT)
		return false;
	/* 48BIT: a compact mtime is 32-bit seconds after the epoch, its
	 * nanoseconds fixed_nsec (0); only where that is exact (1.9.3
	 * truncates) */
	if (f & EZFS_BUILD_48BIT)
		return in->mtime_ns || in->mtime < epoch48(b) ||
		       in->mtime - epoch48(b) > 0xFFFFFFFFll;
	return in->mtime != b->epoch || in->mtime_ns != 0;
}

static uint64_t dir_size(const struct ezfs_builder *b, const struct binode *in)
{
	uint64_t size = 0;
	uint32_t used = 0;
	unsigned k;

	for (k = 0; k < in->ndents; k++) {
		uint32_t need =
			sizeof(struct erofs_dirent) + in->dents[k].namelen;

		if (used + need > b->blksz) {
			size += b->blksz;
			used = 0;
		}
		used += need;
	}
	return size + used;
}

/* FLAT_INLINE if the tail fits in the block where the inode ends, else
 * PLAIN. */
static void plan_flat(const struct ezfs_builder *b, struct binode *in,
		      bool allow_inline)
{
	uint32_t meta = core_size(in) + in->xattr_isize;
	uint32_t tail = (uint32_t)(in->size & (b->blksz - 1));

	if (tail && allow_inline &&
	    tail <= ezi_bld_inline_room(b->blksz, meta)) {
		in->datalayout = EROFS_INODE_FLAT_INLINE;
		in->nblocks = in->size >> b->blkszbits;
		in->tail_len = tail;
	} else {
		in->datalayout = EROFS_INODE_FLAT_PLAIN;
		in->nblocks = (in->size + b->blksz - 1) >> b->blkszbits;
		in->tail_len = 0;
	}
	in->unit_size = meta + in->tail_len;
}

/*
 * --zD (compressed directories, as mkfs.erofs 1.9.3): a directory of at
 * least 8 bytes is one whole-file fragment of the packed inode (FULL
 * layout, only the 8-byte map header); the packed inode is compressed
 * with the default configuration. Needs compression.
 */
static bool zdirs(const struct ezfs_builder *b)
{
	return b->p.compress_dir && b->nzalgs && !b->p.tar_index;
}

#define ZDIR_HDR 8 /* Z_EROFS_LEGACY_MAP_HEADER_SIZE */

/* A directory's size and layout (its entries need the NIDs: later). */
static int plan_dir(const struct ezfs_builder *b, struct binode *in)
{
	in->size = dir_size(b, in);
	if (in->size > 0xFFFFFFFFull)
		in->extended = true;
	if (!zdirs(b) || in->size < ZDIR_HDR) {
		plan_flat(b, in, true);
		return 0;
	}
	if (!in->z) {
		in->z = calloc(1, sizeof(*in->z));
		if (!in->z)
			return -ENOMEM;
	}
	in->z->wholefrag = true;
	in->z->idx_size = ZDIR_HDR;
	in->z->frag_len = in->size;
	in->datalayout = EROFS_INODE_COMPRESSED_FULL;
	in->nblocks = 0;
	in->tail_len = 0;
	in->unit_size =
		((core_size(in) + in->xattr_isize + 7) & ~7u) + ZDIR_HDR;
	return 0;
}

/* write_flat_file from the file's bytes in memory: a file read ahead, the
 * packed inode stored flat */
static int write_flat_raw(struct ezfs_builder *b, struct binode *in,
			  const uint8_t *raw)
{
	uint64_t full = in->nblocks << b->blkszbits, whole;
	uint8_t pad[4096]; /* the last block (blocks are 4 KiB at most) */
	int err = 0;

	if (in->nblocks)
		in->startblk = b->cursor;
	whole = in->size < full ? in->size & ~(uint64_t)(b->blksz - 1) : full;
	if (whole)
		err = ezi_bld_pwrite(b, raw, (size_t)whole,
				     b->cursor << b->blkszbits);
	if (!err && whole < full) { /* the last block, zero-padded */
		memcpy(pad, raw + whole, (size_t)(in->size - whole));
		memset(pad + (in->size - whole), 0, (size_t)(full - in->size));
		err = ezi_bld_pwrite(b, pad, (size_t)(full - whole),
				     (b->cursor << b->blkszbits) + whole);
	}
	if (err)
		return err;
	b->cursor += in->nblocks;
	return ezi_bld_tail_keep(b, in, raw + full, in->tail_len);
}

/*
 * Copy a regular file as a flat inode: full blocks at the cursor, tail.
 * raw: all its bytes, read ahead by a worker (zjobs.c), else NULL.
 */
static int write_flat_file(struct ezfs_builder *b, struct binode *in,
			   uint8_t *buf, const uint8_t *raw)
{
	uint64_t full = in->nblocks << b->blkszbits, done = 0;
	uint64_t whole = in->size & ~(uint64_t)(b->blksz - 1);
	struct bsrc src;
	int err;
	ssize_t n;

	if (raw)
		return write_flat_raw(b, in, raw);
	err = ezi_bld_src_open(b, in, &src);
	if (err)
		return err;
	if (in->nblocks)
		in->startblk = b->cursor;
	/*
	 * A large file's whole blocks: copied by the kernel, once, where it
	 * can (64 MiB of text into tmpfs: 31 ms, as mkfs.erofs 1.9.3 copies
	 * it, against 42 ms through the buffer); the rest, and all of a
	 * smaller file (the many of a tree were slower so), through the
	 * buffer
	 */
	if (whole > full)
		whole = full;
	if (whole >= FLAT_COPY_MIN)
		done = ezi_bld_copy_in(b, src.fd, src.base,
				       b->cursor << b->blkszbits, whole);
	while (done < full) {
		size_t want = full - done < COPY_BUF ? (size_t)(full - done)
						     : COPY_BUF;
		n = ezi_bld_src_pread(&src, buf, want, done);
		if (n < 0) {
			err = (int)n;
			goto rerr;
		}
		if (done + (uint64_t)n < in->size && (size_t)n < want)
			goto changed;
		memset(buf + n, 0, want - (size_t)n);
		err = ezi_bld_pwrite(b, buf, want,
				     (b->cursor << b->blkszbits) + done);
		if (err)
			goto out;
		done += want;
	}
	b->cursor += in->nblocks;
	if (in->tail_len) {
		n = ezi_bld_src_pread(&src, buf, in->tail_len, full);
		if (n < 0) {
			err = (int)n;
			goto rerr;
		}
		if ((uint32_t)n != in->tail_len)
			goto changed;
		err = ezi_bld_tail_keep(b, in, buf, in->tail_len);
		if (err)
			goto out;
	}
	err = ezi_bld_src_check(b, in, &src);
	goto out;
rerr:
	ezi_bld_log(b, EZFS_LOG_ERROR, "%s: read: %s", in->srcpath,
		    strerror(-err));
	goto out;
changed:
	err = -EAGAIN;
	ezi_bld_log(b, EZFS_LOG_ERROR, "%s: file shrank while building",
		    in->srcpath);
out:
	ezi_bld_src_close(&src);
	return err;
}

static int write_symlink_blocks(struct ezfs_builder *b, struct binode *in)
{
	uint64_t full = in->nblocks << b->blkszbits;
	uint8_t *blk;
	int err;

	if (!in->nblocks)
		return 0;
	blk = calloc(1, full);
	if (!blk)
		return -ENOMEM;
	memcpy(blk, in->symlink, in->size < full ? in->size : full);
	in->startblk = b->cursor;
	err = ezi_bld_pwrite(b, blk, full, b->cursor << b->blkszbits);
	b->cursor += in->nblocks;
	free(blk);
	return err;
}

/* Offset of the chunk array from the inode start (6.4.2). */
static uint32_t chunk_hdr(const struct binode *in, unsigned unit)
{
	uint32_t e = core_size(in) + in->xattr_isize;

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

	/* dedupe.c checks a candidate against the bytes at b->fd: for blob
	 * chunks (every chunk, with a blob) those are in the blob */
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
static int write_chunked_file(struct ezfs_builder *b, struct binode *in)
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
	in->unit_size = chunk_hdr(in, unit) + in->chunkidx_len;
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
static int write_tarindex_file(struct ezfs_builder *b, struct binode *in)
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
	in->unit_size = chunk_hdr(in, 8) + in->chunkidx_len;
	b->chunked = true;
	return 0;
}

/* -E dedupe on decoded data across files (zxdd.c): not with fragments,
 * whose tails 1.9.3 shares its own way, nor for the image's own inodes */
static bool xdd_on(const struct ezfs_builder *b)
{
	return (b->p.flags & EZFS_BUILD_DEDUPE) && b->nzalgs &&
	       !(b->p.flags &
		 (EZFS_BUILD_FRAGMENTS | EZFS_BUILD_ALL_FRAGMENTS));
}

static bool xdd_wanted(const struct ezfs_builder *b, const struct binode *in)
{
	return xdd_on(b) && in != b->packed_inode && in != b->mbox_inode &&
	       ezi_bld_compress_wanted(b, in) && !ezi_bld_zunaligned_ok(b, in);
}

/* Place one regular file whose compression result (or NULL) is known. */
static int place_file(struct ezfs_builder *b, struct binode *in,
		      struct bzfile *z, uint8_t *buf, const uint8_t *raw)
{
	int err;

	/* -E dedupe: an earlier file's data again (zxdd.c) */
	if (xdd_wanted(b, in)) {
		err = ezi_bld_xdd_file(b, in, &z);
		if (err) {
			ezi_bld_zfile_free(z);
			return err;
		}
	}
	if (z) {
		uint32_t k;

		/* z->frag: placed by ezi_bld_frags_place() once all are known
		 */
		/* like mkfs.erofs, fragments also share identical pclusters */
		if (ezi_bld_dedupe_shares(b, in)) {
			err = ezi_bld_dedupe_pclusters(b, in, z);
			if (err) {
				ezi_bld_zfile_free(z);
				return err;
			}
		}
		if (b->p.flags & EZFS_BUILD_48BIT)
			ezi_bld_zext_choose(b, in, z);
		in->z = z;
		in->datalayout = z->compact ? EROFS_INODE_COMPRESSED_COMPACT
					    : EROFS_INODE_COMPRESSED_FULL;
		for (k = 0; k < z->next; k++)
			z->ext[k].blkaddr += (uint32_t)b->cursor;
		err = z->written ? 0
				 : ezi_bld_pwrite(b, z->data, z->datalen,
						  b->cursor << b->blkszbits);
		b->cursor += z->blocks;
		free(z->data);
		z->data = NULL;
		in->unit_size = ((core_size(in) + in->xattr_isize + 7) & ~7u) +
				z->idx_size + z->idata_len;
		if (!err)
			err = ezi_bld_tail_keep(b, in, z->idata, z->idata_len);
		free(z->idata);
		z->idata = NULL;
		b->st.compressed_files++;
		if (!err && xdd_wanted(b, in))
			err = ezi_bld_xdd_commit(b, in, z);
		return err;
	}

	if (b->nrdevs) { /* rebuild.c made its chunk indexes */
		in->unit_size = chunk_hdr(in, 8) + in->chunkidx_len;
		return 0;
	}
	if (b->p.tar_index)
		return write_tarindex_file(b, in);
	if (b->p.chunksize && in != b->packed_inode)
		return write_chunked_file(b, in);
	plan_flat(b, in, !(b->p.flags & EZFS_BUILD_NOINLINE_DATA));
	return write_flat_file(b, in, buf, raw);
}

/* A special inode of the image's own (the packed or the metabox inode):
 * a regular file of size bytes named by what, no blocks yet. */
static int special_inode(struct ezfs_builder *b, const char *what,
			 uint64_t size, struct binode **out)
{
	struct binode *in, **ni;

	if (b->ninodes == b->capinodes) {
		ni = realloc(b->inodes, (b->capinodes + 1) * sizeof(*ni));
		if (!ni)
			return -ENOMEM;
		b->inodes = ni;
		b->capinodes++;
	}
	in = calloc(1, sizeof(*in));
	if (!in)
		return -ENOMEM;
	b->inodes[b->ninodes++] = in;
	*out = in;
	in->srcpath = strdup(what);
	if (!in->srcpath)
		return -ENOMEM;
	in->mode = S_IFREG | 0644;
	in->nlink = 1;
	in->mtime = b->epoch;
	in->size = size;
	in->startblk = EROFS_NULL_ADDR32;
	in->extended = need_extended(b, in);
	return 0;
}

/* The packed inode (9.10): compressed in segments, else flat. */
static int write_packed(struct ezfs_builder *b, uint8_t *buf)
{
	struct binode *in;
	struct bzfile *z = NULL;
	int err = special_inode(b, "(packed inode)", b->packed_len, &in);

	if (err)
		return err;
	b->packed_inode = in;
	if (!b->zsegs)
		err = ezi_bld_zsegs_start(b, b->packed, b->packed_len);
	if (!err)
		err = ezi_bld_zsegs_finish(b, in, b->packed_len, &z);
	if (err)
		return err;
	if (z)
		return place_file(b, in, z, buf, NULL);
	plan_flat(b, in, true);
	return write_flat_raw(b, in, b->packed);
}

/*
 * A root inode that does not fit in block 0 after the superblock gets its
 * own block(s) right after it, before the data (as mkfs.erofs): then
 * meta_blkaddr stays 0, the root NID small, and block 0 and the rest of
 * the root's block still take other inodes.
 */
static int reserve_root(struct ezfs_builder *b, uint64_t shared_end)
{
	struct binode *root = b->inodes[0];
	uint64_t gap0 = (shared_end + 31) & ~31ull, nb;
	int err;

	b->root_blk = 0;
	if (!S_ISDIR(root->mode))
		return 0;
	err = plan_dir(b, root);
	if (err)
		return err;
	/* -m: the root is in the metabox */
	if (b->p.metabox_pcluster ||
	    gap0 + ((root->unit_size + 31) & ~31u) <= b->blksz)
		return 0;
	nb = (root->unit_size + b->blksz - 1) >> b->blkszbits;
	/* the root NID must fit in 16 bits */
	if ((b->data_start << b->blkszbits) >> EROFS_ISLOTBITS > 0xFFFF)
		return 0;
	b->root_blk = b->data_start;
	b->data_start += nb;
	return 0;
}

struct dfs_ord {
	struct binode **o;
	size_t n;
};

static int dfs_add(struct ezfs_builder *b, struct binode *in, void *arg)
{
	struct dfs_ord *d = arg;

	(void)b;
	if (!in->zseen) {
		in->zseen = true;
		d->o[d->n++] = in;
	}
	return 0;
}

/*
 * -E dedupe across files (zxdd.c): the files' data goes in depth-first
 * order as in 1.9.3 (which copy of a file comes first decides what the
 * others can refer to). b->inodes is that order while the data is
 * written (*bfs: the inode order, put back after).
 */
static int dfs_data_order(struct ezfs_builder *b, struct binode ***bfs)
{
	struct dfs_ord d = { .o = malloc(b->ninodes * sizeof(*d.o)) };
	size_t i;
	int err;

	*bfs = NULL;
	if (!d.o)
		return -ENOMEM;
	/* the rest first, in inode order (the root stays first) */
	for (i = 0; i < b->ninodes; i++)
		if (!S_ISREG(b->inodes[i]->mode))
			d.o[d.n++] = b->inodes[i];
	err = ezi_bld_files_dfs(b, dfs_add, &d);
	for (i = 0; i < b->ninodes; i++)
		b->inodes[i]->zseen = false;
	if (err || d.n != b->ninodes) {
		free(d.o);
		return err ? err : -EINVAL;
	}
	*bfs = b->inodes;
	b->inodes = d.o;
	return 0;
}

int ezi_bld_write_data(struct ezfs_builder *b)
{
	struct binode **bfs = NULL;
	uint64_t shared_end = b->shared_start + b->shared_len, bytes = 0;
	uint64_t total_bytes = 0, files = 0;
	uint8_t *buf;
	size_t i;
	int err = 0;

	if (b->p.metabox_pcluster && b->devt_off) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "a metabox image cannot have a device table "
			    "(tar index, blob, rebuild)");
		return -EINVAL;
	}
	b->data_start = (shared_end + b->blksz - 1) >> b->blkszbits;
	for (i = 0; i < b->ninodes; i++) {
		struct binode *in = b->inodes[i];

		err = ezi_bld_inode_finish(b, in);
		if (err)
			return err;
		in->extended = need_extended(b, in);
		if (S_ISREG(in->mode))
			total_bytes += in->size;
	}
	/* the tar (device 1): its size in blocks; beyond 32 bits the
	 * device slot needs the 48-bit layout's high halves */
	if (b->p.tar_index) {
		b->dev_blocks = (b->tar_bytes + b->blksz - 1) >> b->blkszbits;
		if (b->dev_blocks > 0xFFFFFFFFull)
			b->p.flags |= EZFS_BUILD_48BIT;
	}
	err = reserve_root(b, shared_end);
	if (err)
		return err;
	b->cursor = b->data_start;
	buf = malloc(COPY_BUF);
	if (!buf)
		return -ENOMEM;
	err = ezi_bld_frags_share(b);
	if (!err && xdd_on(b))
		err = dfs_data_order(b, &bfs);
	if (!err)
		err = ezi_bld_zjobs_start(b);
	for (i = 0; i < b->ninodes && !err; i++) {
		struct binode *in = b->inodes[i];

		if (S_ISREG(in->mode)) {
			struct bzfile *z = NULL;
			uint8_t *raw = NULL;

			if (in->size && ezi_bld_compress_wanted(b, in)) {
				b->prog_files = files;
				b->prog_bytes = bytes;
				b->prog_total = total_bytes;
				err = ezi_bld_zjobs_take(b, in, &z);
			} else if (in->size) {
				err = ezi_bld_zjobs_take_raw(b, in, &raw);
			}
			if (err)
				break;
			if (in->size)
				err = place_file(b, in, z, buf, raw);
			else
				plan_flat(b, in, false);
			free(raw);
			bytes += in->size;
			files++;
			if ((files & 255) == 0 || in->size > COPY_BUF)
				ezi_bld_progress(b, EZFS_BUILD_DATA, files,
						 b->st.files, bytes,
						 total_bytes);
		} else if (S_ISLNK(in->mode)) {
			plan_flat(b, in, true);
			err = write_symlink_blocks(b, in);
			if (!err)
				err = ezi_bld_tail_keep(
					b, in,
					in->symlink +
						(in->nblocks << b->blkszbits),
					in->tail_len);
		} else if (S_ISDIR(in->mode)) {
			err = plan_dir(b, in);
		} else {
			plan_flat(b, in, false);
		}
	}
	ezi_bld_zjobs_stop(b);
	if (bfs) {
		free(b->inodes);
		b->inodes = bfs;
	}
	if (!err)
		err = ezi_bld_frags_place(b);
	/* --zD: the directories join the packed inode once NIDs are known
	 * (ezi_bld_write_meta) */
	if (!err && b->packed_len && !zdirs(b))
		err = write_packed(b, buf);
	if (err || !zdirs(b))
		ezi_bld_packed_free(b);
	ezi_bld_dedupe_free(b);
	ezi_bld_xdd_free(b);
	if (b->p.blobdev)
		b->dev_blocks = b->blob_cursor;
	b->st.bytes_in = bytes;
	ezi_bld_progress(b, EZFS_BUILD_DATA, files, b->st.files, bytes,
			 total_bytes);
	free(buf);
	return err;
}

static uint8_t ftype_of(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return EROFS_FT_REG_FILE;
	case S_IFDIR:
		return EROFS_FT_DIR;
	case S_IFCHR:
		return EROFS_FT_CHRDEV;
	case S_IFBLK:
		return EROFS_FT_BLKDEV;
	case S_IFIFO:
		return EROFS_FT_FIFO;
	case S_IFSOCK:
		return EROFS_FT_SOCK;
	case S_IFLNK:
		return EROFS_FT_SYMLINK;
	}
	return EROFS_FT_UNKNOWN;
}

/* Directory contents (in->size bytes, zeroed buffer): chunks of blksz. */
static void build_dir(const struct ezfs_builder *b, const struct binode *in,
		      uint8_t *buf)
{
	unsigned i = 0, j, k;
	uint64_t chunk = 0;

	while (i < in->ndents) {
		uint32_t used = 0, nameoff;

		for (j = i; j < in->ndents; j++) {
			uint32_t need = sizeof(struct erofs_dirent) +
					in->dents[j].namelen;

			if (used + need > b->blksz)
				break;
			used += need;
		}
		nameoff = (j - i) * (uint32_t)sizeof(struct erofs_dirent);
		for (k = i; k < j; k++) {
			uint8_t *de = buf + chunk +
				      (k - i) * sizeof(struct erofs_dirent);

			put_le64(de, in->dents[k].inode->nid);
			put_le16(de + 8, (uint16_t)nameoff);
			de[10] = ftype_of(in->dents[k].inode->mode);
			de[11] = 0;
			memcpy(buf + chunk + nameoff, in->dents[k].name,
			       in->dents[k].namelen);
			nameoff += in->dents[k].namelen;
		}
		chunk += b->blksz;
		i = j;
	}
}

static int encode_core(const struct ezfs_builder *b, const struct binode *in,
		       uint8_t *p)
{
	uint16_t icount = in->xattr_isize
				  ? (uint16_t)((in->xattr_isize - 12) / 4 + 1)
				  : 0;
	uint16_t fmt = (uint16_t)((in->extended ? EROFS_INODE_EXTENDED
						: EROFS_INODE_COMPACT) |
				  (in->datalayout << EROFS_I_DATALAYOUT_SHIFT));
	bool bit48 = b->p.flags & EZFS_BUILD_48BIT;
	uint16_t nb = 0;
	uint64_t u;

	if (in->z)
		u = in->z->blocks;
	else if (in->datalayout == EROFS_INODE_CHUNK_BASED)
		u = in->chunkfmt;
	else if (S_ISCHR(in->mode) || S_ISBLK(in->mode))
		u = in->rdev;
	else if (S_ISFIFO(in->mode) || S_ISSOCK(in->mode))
		u = 0;
	else if (in->nblocks)
		u = in->startblk;
	else
		u = in->datalayout == EROFS_INODE_FLAT_INLINE
			    ? EROFS_NULL_ADDR32
			    : 0;
	/* 11.1: 48-bit addresses keep bits 32..47 in i_nb; a compact inode
	 * then needs NLINK_1 (nlink 1), and NULL is 0xFFFF there */
	if (bit48 && in->extended && !in->nblocks &&
	    in->datalayout == EROFS_INODE_FLAT_INLINE)
		nb = 0xFFFF;
	if (u > 0xFFFFFFFFull && bit48 && u <= 0xFFFFFFFFFFFFull &&
	    (in->extended || in->nlink == 1)) {
		nb = (uint16_t)(u >> 32);
		if (!in->extended)
			fmt |= EROFS_I_NLINK_1_BIT;
	} else if (u > 0xFFFFFFFFull) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "%s: block address beyond %d bits", in->srcpath,
			    bit48 ? 48 : 32);
		return -EFBIG;
	}
	/* the same bit as NLINK_1, for directories: no "." entry */
	put_le16(p, S_ISDIR(in->mode) && b->p.dot_omitted && bit48
			    ? fmt | EROFS_I_DOT_OMITTED_BIT
			    : fmt);
	put_le16(p + 2, icount);
	put_le16(p + 4, (uint16_t)in->mode);
	if (in->extended) {
		put_le16(p + 6, nb);
		put_le64(p + 8, in->size);
		put_le32(p + 16, (uint32_t)u);
		put_le32(p + 20, in->ino32);
		put_le32(p + 24, in->uid);
		put_le32(p + 28, in->gid);
		put_le64(p + 32, (uint64_t)in->mtime);
		put_le32(p + 40, in->mtime_ns);
		put_le32(p + 44, in->nlink);
		memset(p + 48, 0, 16);
	} else {
		put_le16(p + 6,
			 fmt & EROFS_I_NLINK_1_BIT ? nb : (uint16_t)in->nlink);
		put_le32(p + 8, (uint32_t)in->size);
		/* 48BIT: seconds after the epoch; else mtime == epoch */
		put_le32(p + 12,
			 bit48 ? (uint32_t)(in->mtime - epoch48(b)) : 0);
		put_le32(p + 16, (uint32_t)u);
		put_le32(p + 20, in->ino32);
		put_le16(p + 24, (uint16_t)in->uid);
		put_le16(p + 26, (uint16_t)in->gid);
		put_le32(p + 28, 0);
	}
	return 0;
}

/*
 * Metadata placement: free runs of 32-byte slots inside one metadata
 * block ("gaps": block 0 after the superblock and shared xattrs, the
 * rest of a block left behind when a unit had to start a new one, the
 * slots skipped so that a unit's inline data does not cross a block) are
 * kept in buckets by length; place_inodes fills them with the units of a
 * block or less, the largest runs first (fill_run), and a unit placed
 * after those (place_late) goes into the smallest gap it fits.
 */
struct gaps {
	uint64_t *off[BLD_MAX_SLOTS + 1]; /* byte offset of each run */
	uint32_t n[BLD_MAX_SLOTS + 1];
	uint32_t cap[BLD_MAX_SLOTS + 1];
	unsigned nslots;
};

/* A free run of `slots` slots from byte offset off (inside one block). */
static int gap_push(struct gaps *g, uint64_t off, unsigned slots)
{
	if (!slots)
		return 0;
	if (g->n[slots] == g->cap[slots]) {
		uint32_t cap = g->cap[slots] ? g->cap[slots] * 2 : 16;
		uint64_t *v = realloc(g->off[slots], cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		g->off[slots] = v;
		g->cap[slots] = cap;
	}
	g->off[slots][g->n[slots]++] = off;
	return 0;
}

/* The rest of the block that pos is in, from pos on. */
static int gap_push_rest(struct gaps *g, unsigned blkszbits, uint64_t pos)
{
	uint64_t in = pos & ((1ull << blkszbits) - 1);

	return in ? gap_push(g, pos,
			     (unsigned)(((1ull << blkszbits) - in) >> 5))
		  : 0;
}

/* [from, to): the free slots before a unit placed at `to`, per block. */
static int gap_push_range(struct gaps *g, unsigned blkszbits, uint64_t from,
			  uint64_t to)
{
	while (from < to) {
		uint64_t end = ((from >> blkszbits) + 1) << blkszbits;
		int r;

		if (end > to)
			end = to;
		r = gap_push(g, from, (unsigned)((end - from) >> 5));
		if (r)
			return r;
		from = end;
	}
	return 0;
}

/* Best fit: byte offset of `slots` free slots in some gap, or 0. */
static int gap_take(struct gaps *g, unsigned slots, uint64_t *off)
{
	unsigned k;

	for (k = slots; k <= g->nslots; k++) {
		if (!g->n[k])
			continue;
		*off = g->off[k][--g->n[k]];
		return gap_push(g, *off + ((uint64_t)slots << 5), k - slots) < 0
			       ? -ENOMEM
			       : 1;
	}
	return 0;
}

static void gaps_free(struct gaps *g)
{
	unsigned k;

	for (k = 0; k <= g->nslots; k++)
		free(g->off[k]);
}

/* The unit's inline data (a flat tail or a ztailpacking pcluster), at its
 * end: it may not cross a block boundary. */
static uint32_t inline_len(const struct binode *in)
{
	return in->tail_len ? in->tail_len : in->z ? in->z->idata_len : 0;
}

/* The first 32-byte slot at or after pos where the unit's inline data
 * does not cross a block boundary. */
static uint64_t inline_fit(const struct ezfs_builder *b,
			   const struct binode *in, uint64_t pos)
{
	uint32_t il = inline_len(in);

	while (il && ((pos + in->unit_size - il) >> b->blkszbits) !=
			     ((pos + in->unit_size - 1) >> b->blkszbits))
		pos += 32;
	return pos;
}

/* The root at the start of its reserved block(s); the rest is a gap. */
static int place_root(struct ezfs_builder *b, struct gaps *g)
{
	struct binode *root = b->inodes[0];
	uint64_t end =
		(b->root_blk << b->blkszbits) + ((root->unit_size + 31) & ~31u);

	root->meta_off = b->root_blk << b->blkszbits;
	root->nid = root->meta_off >> EROFS_ISLOTBITS;
	root->ino32 = 1;
	return gap_push_rest(g, b->blkszbits, end);
}

/*
 * The order units are placed in: the root first, then by size, largest
 * first (in inode order for equal sizes), so that the small ones fill
 * what the large ones leave (first fit decreasing: fewer metadata blocks
 * than in plain inode order).
 */
static size_t *place_order(const struct ezfs_builder *b)
{
	unsigned nk = BLD_MAX_SLOTS + 2, key;
	size_t *ord = malloc(b->ninodes * sizeof(*ord)), *cnt, i;

	if (!ord)
		return NULL;
	cnt = calloc(nk + 1, sizeof(*cnt));
	if (!cnt) {
		free(ord);
		return NULL;
	}
#define PLACE_KEY(in)                                                          \
	(((in)->unit_size + 31) >> 5 > BLD_MAX_SLOTS                           \
		 ? 0                                                           \
		 : nk - (unsigned)(((in)->unit_size + 31) >> 5))
	ord[0] = 0;
	for (i = 1; i < b->ninodes; i++)
		cnt[PLACE_KEY(b->inodes[i]) + 1]++;
	cnt[0] = 1;
	for (key = 1; key <= nk; key++)
		cnt[key] += cnt[key - 1];
	for (i = 1; i < b->ninodes; i++)
		ord[cnt[PLACE_KEY(b->inodes[i])]++] = i;
#undef PLACE_KEY
	free(cnt);
	return ord;
}

/*
 * In images with a device (tar indexes: 512-byte blocks of small inodes,
 * as mkfs.erofs packs them) a unit without inline data that is not
 * compressed may cross a block boundary: an extended core, its xattrs
 * and chunk indexes may straddle two blocks, which the kernel, erofs-utils
 * and ezfs read (a compact core never does: it is one 32-byte slot).
 */
static bool crossable(const struct ezfs_builder *b, const struct binode *in)
{
	return b->devt_off && in != b->inodes[0] && !in->z && !inline_len(in);
}

/* -m: does the inode's unit go into the metabox (all but the packed and
 * metabox inodes)? */
static bool in_mbox(const struct ezfs_builder *b, const struct binode *in)
{
	return b->p.metabox_pcluster && in != b->packed_inode &&
	       in != b->mbox_inode;
}

/*
 * The units of one block or less still to place (not the root, nor a
 * unit that may cross a block: crossable()), by their size in slots,
 * each size's in placement order; `pool` (by position in the placement
 * order): one of them.
 */
struct fill {
	size_t *k[BLD_MAX_SLOTS + 1]; /* positions in the placement order */
	size_t n[BLD_MAX_SLOTS + 1], head[BLD_MAX_SLOTS + 1];
	size_t avail[BLD_MAX_SLOTS + 1]; /* not placed, per size */
	bool *pool;
	unsigned top; /* the largest size with units left */
	/* fill_exact(): failed (rest, size) pairs, the counts chosen and
	 * the steps left (a bound on the search, not a time) */
	uint8_t fail[(BLD_MAX_SLOTS + 1) * (BLD_MAX_SLOTS + 1) / 8 + 1];
	unsigned use[BLD_MAX_SLOTS + 1];
	unsigned budget;
};

static void fill_free(struct fill *f)
{
	unsigned s;

	for (s = 0; s <= BLD_MAX_SLOTS; s++)
		free(f->k[s]);
	free(f->pool);
}

static unsigned unit_slots(const struct binode *in)
{
	return (in->unit_size + 31) >> 5;
}

static bool fill_wants(const struct ezfs_builder *b, const struct binode *in,
		       int want)
{
	return want < 0 || in_mbox(b, in) == (want > 0);
}

static int fill_init(struct fill *f, const struct ezfs_builder *b,
		     const size_t *ord, int want)
{
	unsigned s, nb = b->blksz >> 5;
	size_t k;

	memset(f, 0, sizeof(*f));
	f->pool = calloc(b->ninodes, sizeof(*f->pool));
	if (!f->pool)
		return -ENOMEM;
	for (k = 1; k < b->ninodes; k++) {
		const struct binode *in = b->inodes[ord[k]];

		s = unit_slots(in);
		f->pool[k] =
			s <= nb && !crossable(b, in) && fill_wants(b, in, want);
		if (f->pool[k])
			f->avail[s]++;
	}
	for (s = 1; s <= nb; s++) {
		if (f->avail[s] &&
		    !(f->k[s] = malloc(f->avail[s] * sizeof(size_t))))
			return -ENOMEM;
		if (f->avail[s])
			f->top = s;
	}
	for (k = 1; k < b->ninodes; k++)
		if (f->pool[k]) {
			s = unit_slots(b->inodes[ord[k]]);
			f->k[s][f->n[s]++] = k;
		}
	return 0;
}

/* Take the next unit of size s (avail[s] > 0): its position. */
static size_t fill_take(struct fill *f, unsigned s)
{
	size_t k = f->k[s][f->head[s]++];

	f->avail[s]--;
	while (f->top && !f->avail[f->top])
		f->top--;
	return k;
}

/*
 * Can units of sizes at most s, as many of each as are left, add up to
 * exactly rest slots? Fills use[] (how many of each) when they can.
 * Sizes are tried largest first, each with as many units as fit first.
 */
static bool fill_exact(struct fill *f, unsigned rest, unsigned s)
{
	size_t bit;
	unsigned c;

	if (!rest)
		return true;
	if (!f->budget)
		return false;
	f->budget--;
	if (s > rest)
		s = rest;
	bit = (size_t)rest * (BLD_MAX_SLOTS + 1) + s;
	if (!s || (f->fail[bit >> 3] & (1u << (bit & 7))))
		return false;
	c = f->avail[s] < rest / s ? (unsigned)f->avail[s] : rest / s;
	for (;; c--) {
		f->use[s] = c;
		if (fill_exact(f, rest - c * s, s - 1))
			return true;
		if (!c)
			break;
	}
	f->use[s] = 0;
	f->fail[bit >> 3] |= (uint8_t)(1u << (bit & 7));
	return false;
}

static void set_place(const struct ezfs_builder *b, struct binode *in,
		      uint64_t off, uint64_t meta_blkaddr, size_t ino, int want)
{
	in->meta_off = off;
	in->nid = (off - (meta_blkaddr << b->blkszbits)) >> EROFS_ISLOTBITS;
	in->ino32 = (uint32_t)(ino + 1);
	if (want > 0) {
		in->mbox = true;
		in->nid |= EROFS_NID_METABOX;
	}
}

/*
 * Fill the free run of `slots` slots at off (inside one block) with
 * units still to place: units that add up to it exactly where some do
 * (the largest first), else the largest that fit, one after the other.
 * Returns the slots used.
 */
static unsigned fill_run(const struct ezfs_builder *b, struct fill *f,
			 const size_t *ord, uint64_t off, unsigned slots,
			 uint64_t meta_blkaddr, int want)
{
	unsigned s, rest = slots;

	memset(f->fail, 0, sizeof(f->fail));
	memset(f->use, 0, sizeof(f->use));
	f->budget = 4096;
	if (fill_exact(f, slots, f->top)) {
		rest = 0;
	} else {
		memset(f->use, 0, sizeof(f->use));
		for (s = f->top < rest ? f->top : rest; s; s--)
			for (; f->use[s] < f->avail[s] && s <= rest; rest -= s)
				f->use[s]++;
	}
	for (s = BLD_MAX_SLOTS; s; s--)
		for (; f->use[s]; f->use[s]--) {
			size_t k = fill_take(f, s);

			set_place(b, b->inodes[ord[k]], off, meta_blkaddr,
				  ord[k], want);
			off += (uint64_t)s << 5;
		}
	return slots - rest;
}

/*
 * Assign meta_off/nid to every inode (want < 0), or only to those that
 * in_mbox() says go (want 1) or do not go (want 0) into the metabox;
 * returns the end of the area.
 *
 * The root first, then the units larger than a block and those that may
 * cross one in order (at the cursor: the metadata of a large unit may
 * span blocks, its inline data stays in one, the slots skipped for it
 * are a gap). Then every free run (the rest of block 0, of the root's
 * block, of the cursor's block and those gaps), the largest first, and
 * after them one new block after the other get the units of a block or
 * less that fill them exactly where some do, the largest first
 * (fill_run): first fit decreasing alone left a block with whatever room
 * the next unit did not fit into (on a make_tree.py tree 65 runs of 1-2
 * slots, a block more than mkfs.erofs 1.9.3).
 */
static int place_inodes(struct ezfs_builder *b, struct gaps *g, uint64_t base,
			uint64_t meta_blkaddr, uint64_t *endp, int want)
{
	uint64_t pos = base, blksz = b->blksz, off;
	unsigned nb = b->blksz >> 5, s, used;
	size_t k, *ord = place_order(b);
	struct fill f;
	int r;

	if (!ord)
		return -ENOMEM;
	r = fill_init(&f, b, ord, want);
	for (k = b->root_blk ? 1 : 0; !r && k < b->ninodes; k++) {
		struct binode *in = b->inodes[ord[k]];
		uint32_t need = (in->unit_size + 31) & ~31u;
		uint64_t inblk = pos & (blksz - 1);

		if (f.pool[k] || !fill_wants(b, in, want))
			continue;
		r = need <= blksz ? gap_take(g, need >> 5, &off) : 0;
		if (r < 0)
			break;
		if (!r) {
			if (inblk && inblk + need > blksz &&
			    !crossable(b, in) && need <= blksz) {
				r = gap_push_rest(g, b->blkszbits, pos);
				if (r < 0)
					break;
				pos += blksz - inblk;
			} else if (in->extended && inblk + 64 > blksz &&
				   !crossable(b, in)) {
				r = gap_push(g, pos, 1);
				if (r < 0)
					break;
				pos += 32;
			}
			off = inline_fit(b, in, pos);
			r = gap_push_range(g, b->blkszbits, pos, off);
			if (r < 0)
				break;
			pos = (off + in->unit_size + 31) & ~31ull;
		}
		set_place(b, in, off, meta_blkaddr, ord[k], want);
		r = 0;
	}
	/* the free runs, the largest first; what is left of each stays a
	 * gap for the units placed later (place_late) */
	if (!r)
		r = gap_push_rest(g, b->blkszbits, pos);
	if (!r && (pos & (blksz - 1)))
		pos = (pos + blksz - 1) & ~(blksz - 1);
	for (s = nb, used = 1; !r && s && f.top && used; s--)
		while (!r && g->n[s] && f.top) {
			off = g->off[s][--g->n[s]];
			used = fill_run(b, &f, ord, off, s, meta_blkaddr, want);
			r = gap_push(g, off + ((uint64_t)used << 5), s - used);
			if (!used) /* nothing left fits: nor a smaller run */
				break;
		}
	/* then new blocks */
	while (!r && f.top) {
		used = fill_run(b, &f, ord, pos, nb, meta_blkaddr, want);
		pos += (uint64_t)used << 5;
		if (f.top && used < nb) {
			r = gap_push_rest(g, b->blkszbits, pos);
			pos = (pos + blksz - 1) & ~(blksz - 1);
		}
	}
	fill_free(&f);
	free(ord);
	*endp = pos;
	return r < 0 ? r : 0;
}

/*
 * Multi-device images (tar indexes: 512-byte blocks full of small
 * inodes): after placement, the free tail of a metadata block and the
 * free room of the next one become one run across their boundary (the
 * next block's units move to its end), and the last units of the area,
 * while they may cross a block boundary (crossable()), move into such
 * runs. *endp shrinks.
 */
struct punit {
	uint64_t off;
	uint32_t len;
	struct binode *in;
};

static int cmp_punit(const void *x, const void *y)
{
	const struct punit *a = x, *c = y;

	return a->off < c->off ? -1 : a->off > c->off;
}

static int pair_tails(struct ezfs_builder *b, uint64_t lo, uint64_t base,
		      uint64_t meta_blkaddr, uint64_t *endp)
{
	uint64_t bs = b->blksz, end = *endp, nblk, k, n = 0, *rs, *re, nr = 0;
	uint64_t first = lo >> b->blkszbits, split = base >> b->blkszbits;
	struct punit *u;
	size_t i, j, *bi, total;
	int err = 0;

	if (end <= lo)
		return 0;
	nblk = ((end - 1) >> b->blkszbits) - first + 1;
	u = malloc(b->ninodes * sizeof(*u));
	bi = calloc(nblk + 1, sizeof(*bi));
	rs = malloc((nblk / 2 + 1) * sizeof(*rs));
	re = malloc((nblk / 2 + 1) * sizeof(*re));
	if (!u || !bi || !rs || !re) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < b->ninodes; i++)
		if (b->inodes[i]->meta_off >= lo)
			u[n++] = (struct punit){
				.off = b->inodes[i]->meta_off,
				.len = (b->inodes[i]->unit_size + 31) & ~31u,
				.in = b->inodes[i],
			};
	qsort(u, n, sizeof(*u), cmp_punit);
	total = n;
	/* bi[k]: the first unit starting at or after block first + k */
	for (i = 0, k = 0; k <= nblk; k++) {
		while (i < n && (u[i].off >> b->blkszbits) < first + k)
			i++;
		bi[k] = i;
	}
	for (k = 0; k + 1 < nblk; k++) {
		uint64_t b0 = (first + k) * bs, b1 = b0 + bs, used0, used1;
		size_t a = bi[k], z = bi[k + 1], y = bi[k + 2];

		/* two blocks of one buffer (the early blocks end at base),
		 * each holding units, none crossing into or out of them */
		if (first + k + 1 == split || a == z || z == y)
			continue;
		if (u[z - 1].off + u[z - 1].len > b1 ||
		    u[y - 1].off + u[y - 1].len > b1 + bs ||
		    (a && u[a - 1].off + u[a - 1].len > b0))
			continue;
		used0 = u[z - 1].off + u[z - 1].len;
		for (used1 = 0, j = z; j < y; j++)
			used1 += u[j].len;
		if (used0 == b1 || used1 == bs)
			continue;
		/* the next block's units to its end, in their order */
		for (i = y, used1 = b1 + bs; i > z; i--) {
			used1 -= u[i - 1].len;
			u[i - 1].off = used1;
		}
		rs[nr] = used0;
		re[nr++] = used1;
		k++;
	}
	/* the area's last units into the runs while they fit */
	while (n && nr && crossable(b, u[n - 1].in)) {
		uint64_t best = nr;

		for (k = 0; k < nr; k++)
			if (re[k] - rs[k] >= u[n - 1].len &&
			    rs[k] + u[n - 1].len <= u[n - 1].off &&
			    (best == nr || re[k] - rs[k] < re[best] - rs[best]))
				best = k;
		if (best == nr)
			break;
		u[n - 1].off = rs[best];
		rs[best] += u[n - 1].len;
		n--;
	}
	/* u[n..total) moved into runs; all get their new place, and the
	 * area ends after the last of them */
	for (i = 0, end = lo; i < total; i++) {
		u[i].in->meta_off = u[i].off;
		u[i].in->nid = (u[i].off - (meta_blkaddr << b->blkszbits)) >>
			       EROFS_ISLOTBITS;
		if (u[i].off + u[i].len > end)
			end = u[i].off + u[i].len;
	}
	*endp = end > base ? end : base;
out:
	free(u);
	free(bi);
	free(rs);
	free(re);
	return err;
}

/*
 * --zD: the packed inode's bytes so far (the files' fragments, wherever
 * fragments.c keeps them: read through b->packed) copied into anonymous
 * memory with room for need bytes; fragments.c's own storage is dropped,
 * and ezi_bld_packed_free unmaps this one in the end.
 */
static int packed_own(struct ezfs_builder *b, uint64_t need)
{
	uint64_t cap = 2u << 20, len = b->packed_len;
	uint8_t *np;

	while (cap < need)
		cap *= 2;
	if (cap > SIZE_MAX)
		return -ENOMEM;
	np = mmap(NULL, (size_t)cap, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (np == MAP_FAILED)
		return -ENOMEM;
	if (len)
		memcpy(np, b->packed, (size_t)len);
	ezi_bld_packed_free(b);
	b->packed = np;
	b->packed_cap = cap;
	b->packed_len = len;
	return 0;
}

/*
 * A unit placed after the others (the packed inode with --zD, the
 * metabox inode): into the smallest gap it fits, else at the cursor (a
 * block of its own after its data), which moves past it.
 */
static int place_late(struct ezfs_builder *b, struct gaps *g, struct binode *in,
		      uint64_t meta_blkaddr)
{
	unsigned slots = (in->unit_size + 31) >> 5;
	uint64_t off;
	int r;

	r = slots <= g->nslots ? gap_take(g, slots, &off) : 0;
	if (r < 0)
		return r;
	if (!r) {
		off = inline_fit(b, in, b->cursor << b->blkszbits);
		b->cursor =
			(off + in->unit_size + b->blksz - 1) >> b->blkszbits;
	}
	in->meta_off = off;
	in->nid = (off - (meta_blkaddr << b->blkszbits)) >> EROFS_ISLOTBITS;
	in->ino32 = (uint32_t)b->ninodes;
	return 0;
}

/*
 * --zD, once every other inode has its NID: the directories' contents
 * are appended to the packed inode in inode (breadth-first) order, after
 * the files' fragments (as mkfs.erofs 1.9.3 groups them); the packed
 * inode is compressed and written after the metadata area, its unit
 * placed into the smallest gap it fits (the area's last block too), else
 * in a block of its own after its data. *endp: the metadata area's end,
 * *nextblk: the first block after all of it.
 */
static int pack_dirs(struct ezfs_builder *b, struct gaps *g,
		     uint64_t meta_blkaddr, uint64_t *endp, uint64_t *nextblk)
{
	uint64_t total = b->packed_len, end = *endp;
	struct binode *pk;
	size_t i;
	int r;

	ezi_bld_zsegs_free(b);
	for (i = 0; i < b->ninodes; i++)
		if (S_ISDIR(b->inodes[i]->mode) && b->inodes[i]->z)
			total += b->inodes[i]->size;
	r = packed_own(b, total);
	if (r)
		return r;
	for (i = 0; i < b->ninodes; i++) {
		struct binode *in = b->inodes[i];

		if (!S_ISDIR(in->mode) || !in->z)
			continue;
		build_dir(b, in, b->packed + b->packed_len);
		in->z->fragoff = b->packed_len;
		b->packed_len += in->size;
	}
	b->cursor = (end + b->blksz - 1) >> b->blkszbits;
	r = write_packed(b, NULL);
	if (r)
		return r;
	pk = b->packed_inode;
	r = gap_push_rest(g, b->blkszbits, end);
	if (r)
		return r;
	r = place_late(b, g, pk, meta_blkaddr);
	if (r)
		return r;
	/* in the area's last block: the area takes all of that block, so
	 * that a later unit in the rest of it lies inside too */
	if (pk->meta_off >= end && pk->meta_off < b->cursor << b->blkszbits)
		end = (end + b->blksz - 1) & ~(uint64_t)(b->blksz - 1);
	*endp = end;
	*nextblk = b->cursor;
	return 0;
}

/* Encode in's unit at p (unit_size bytes, zeroed); a directory's full
 * blocks are written (dbuf: scratch). */
static int encode_unit(struct ezfs_builder *b, struct binode *in, uint8_t *p,
		       uint8_t **dbuf)
{
	uint32_t hdr = core_size(in) + in->xattr_isize;
	uint64_t h = (in->meta_off + hdr + 7) & ~7ull;
	int err;

	err = encode_core(b, in, p);
	if (err)
		return err;
	if (in->xattr_isize)
		ezi_bld_xattrs_encode(in, p + core_size(in));
	if (S_ISDIR(in->mode) && in->z) {
		/* --zD: the whole directory in the packed inode */
		put_le64(p + (h - in->meta_off), in->z->fragoff | 1ull << 63);
		return 0;
	}
	if (in->z) {
		uint8_t *hp = p + (h - in->meta_off);

		err = ezi_bld_zindex_encode(b, in, hp);
		if (!err)
			err = ezi_bld_tail_read(b, in, hp + in->z->idx_size,
						in->z->idata_len);
		return err;
	}
	if (in->chunkidx) {
		memcpy(p + chunk_hdr(in,
				     (in->chunkfmt & EROFS_CHUNK_FORMAT_INDEXES)
					     ? 8
					     : 4),
		       in->chunkidx, in->chunkidx_len);
		return 0;
	}
	if (S_ISDIR(in->mode)) {
		free(*dbuf);
		/* whole blocks: a FLAT_PLAIN directory writes its last block
		 * in full, padding included */
		*dbuf = calloc(1, (in->size + b->blksz - 1) &
					  ~(uint64_t)(b->blksz - 1));
		if (!*dbuf)
			return -ENOMEM;
		build_dir(b, in, *dbuf);
		if (in->nblocks)
			err = ezi_bld_pwrite(b, *dbuf,
					     in->nblocks << b->blkszbits,
					     in->startblk << b->blkszbits);
		if (in->tail_len)
			memcpy(p + hdr, *dbuf + (in->nblocks << b->blkszbits),
			       in->tail_len);
		return err;
	}
	return ezi_bld_tail_read(b, in, p + hdr, in->tail_len);
}

/*
 * -m: compress the metabox contents as a file (its tail inline with
 * ztailpacking), read from a memory file as a tar source's data is; no
 * fragments or dedupe for it (as 1.9.3). *z = NULL: store it plain.
 */
static int mbox_compress(struct ezfs_builder *b, struct binode *in,
			 const uint8_t *mbox, uint64_t mlen, struct bzfile **z)
{
	int fd, datafd = b->datafd, err = 0;
	uint64_t done = 0;
	struct bzfile *s = NULL;
	void *cctx;

	*z = NULL;
	cctx = ezi_bld_cctx_new(b, &err);
	if (!cctx)
		return err ? err : -ENOMEM;
	fd = memfd_create("ezfs-metabox", MFD_CLOEXEC);
	while (fd >= 0 && done < mlen) {
		ssize_t n = pwrite(fd, mbox + done, (size_t)(mlen - done),
				   (off_t)done);

		if (n <= 0) {
			close(fd);
			fd = -1;
			break;
		}
		done += (uint64_t)n;
	}
	if (fd >= 0) {
		b->datafd = fd;
		in->dataoff = 0;
		err = ezi_bld_compress_file(b, in, cctx, z);
		b->datafd = datafd;
		close(fd);
		ezi_bld_cctx_free(b, cctx);
		return err;
	}
	/* no memory file: from memory, without an inline tail */
	err = ezi_bld_compress_mem(b, in, cctx, mbox, mlen, 0, false, &s);
	ezi_bld_cctx_free(b, cctx);
	if (err)
		return err;
	/* keep it only if it saves space (9.14 step 7) */
	if (s->datalen + s->idx_size >= mlen) {
		ezi_bld_zfile_free(s);
		s = NULL;
	}
	*z = s;
	return 0;
}

/*
 * -m: the metabox inode, a regular file holding mlen bytes of units at
 * mbox (compressed with the metabox's configuration and pcluster size
 * when that saves space), its data at the cursor, its unit placed late.
 */
static int write_mbox(struct ezfs_builder *b, struct gaps *g,
		      const uint8_t *mbox, uint64_t mlen, uint64_t meta_blkaddr)
{
	const unsigned nofrag = EZFS_BUILD_FRAGMENTS |
				EZFS_BUILD_ALL_FRAGMENTS | EZFS_BUILD_DEDUPE;
	struct binode *in;
	struct bzfile *z = NULL;
	int err = special_inode(b, "(metabox inode)", mlen, &in);

	if (err)
		return err;
	b->mbox_inode = in;
	in->zalg = (uint8_t)b->p.metabox_zalg;
	in->zblks = (uint16_t)(b->p.metabox_pcluster >> b->blkszbits);
	if (in->zblks > b->pclusterblks)
		in->zblks = (uint16_t)b->pclusterblks;
	if (in->zalg >= b->nzalgs)
		in->zalg = 0;
	if (b->nzalgs && mlen) {
		unsigned flags = b->p.flags;

		b->p.flags &= ~nofrag;
		err = mbox_compress(b, in, mbox, mlen, &z);
		b->p.flags = flags;
		if (err)
			return err;
	}
	if (z) {
		unsigned flags = b->p.flags;
		uint32_t c;

		/* as 1.9.3: no dedupe for the metabox (nor fragments, which
		 * share pclusters too) */
		b->p.flags &= ~nofrag;
		err = place_file(b, in, z, NULL, NULL);
		b->p.flags = flags;
		/* -E48bit's extent records, where compact indexes take less
		 * room (the unit is to fit a gap of the metadata) */
		c = ezi_bld_zindex_size(b, in, true);
		if (!err && z->extents && !z->plen && z->compact == false &&
		    !(b->p.flags & EZFS_BUILD_LEGACY_COMPRESS) &&
		    c < z->idx_size) {
			z->extents = false;
			z->compact = true;
			z->idx_size = c;
			in->datalayout = EROFS_INODE_COMPRESSED_COMPACT;
			in->unit_size =
				((core_size(in) + in->xattr_isize + 7) & ~7u) +
				c + z->idata_len;
		}
	} else {
		plan_flat(b, in, true);
		if (in->nblocks) {
			in->startblk = b->cursor;
			err = ezi_bld_pwrite(b, mbox,
					     in->nblocks << b->blkszbits,
					     b->cursor << b->blkszbits);
			b->cursor += in->nblocks;
		}
		if (!err)
			err = ezi_bld_tail_keep(
				b, in, mbox + (in->nblocks << b->blkszbits),
				in->tail_len);
	}
	if (err)
		return err;
	return place_late(b, g, in, meta_blkaddr);
}

/*
 * The buffer that holds in's unit: the early blocks, the metabox
 * contents, or the window over the area [base, end) (win: wcap bytes
 * from wstart, the area's units come in offset order); NULL: after the
 * area (a unit placed late).
 */
struct mbufs {
	uint8_t *blk0, *mbox, *win;
	uint64_t gap0, base, end, wstart, wcap;
};

static bool in_area(const struct mbufs *m, const struct binode *in)
{
	return !in->mbox && in->meta_off >= m->base && in->meta_off < m->end;
}

static uint8_t *unit_buf(const struct mbufs *m, const struct binode *in)
{
	if (in->mbox)
		return m->mbox + in->meta_off;
	if (in->meta_off < m->base)
		return m->blk0 + (in->meta_off - m->gap0);
	if (in->meta_off < m->end)
		return m->win + (in->meta_off - m->wstart);
	return NULL;
}

/* Encode in's unit into its buffer, or write it (a unit placed late). */
static int put_unit(struct ezfs_builder *b, const struct mbufs *m,
		    struct binode *in, uint8_t **dbuf)
{
	uint8_t *p = unit_buf(m, in), *x;
	int err;

	if (p)
		return encode_unit(b, in, p, dbuf);
	x = calloc(1, in->unit_size);
	if (!x)
		return -ENOMEM;
	err = encode_unit(b, in, x, dbuf);
	if (!err)
		err = ezi_bld_pwrite(b, x, in->unit_size, in->meta_off);
	free(x);
	return err;
}

/* Write the window's bytes below to (every unit there is encoded, the
 * rest of the window is zero) and move it to start there. */
static int area_flush(struct ezfs_builder *b, struct mbufs *m, uint64_t to)
{
	size_t n = (size_t)(to - m->wstart);
	int err = n ? ezi_bld_pwrite(b, m->win, n, m->wstart) : 0;

	memset(m->win, 0, n);
	m->wstart = to;
	return err;
}

/*
 * Encode the area's units in offset order through a window of 1 MiB (or
 * the largest unit) and write it as it fills: the whole area in memory
 * was 13 MiB per 16,000 files, held beside every inode's metadata.
 */
static int write_area(struct ezfs_builder *b, struct mbufs *m, uint8_t **dbuf)
{
	size_t i, n = 0;
	struct punit *u;
	int err = 0;

	if (m->end <= m->base)
		return 0;
	u = malloc(b->ninodes * sizeof(*u));
	if (!u)
		return -ENOMEM;
	m->wcap = 1u << 20;
	for (i = 0; i < b->ninodes; i++) {
		struct binode *in = b->inodes[i];

		if (!in_area(m, in))
			continue;
		u[n].off = in->meta_off;
		u[n].len = in->unit_size;
		u[n++].in = in;
		if (in->unit_size > m->wcap)
			m->wcap = in->unit_size;
	}
	qsort(u, n, sizeof(*u), cmp_punit);
	m->wstart = m->base;
	m->win = calloc(1, (size_t)m->wcap);
	if (!m->win)
		err = -ENOMEM;
	for (i = 0; i < n && !err; i++) {
		if (u[i].off + u[i].len > m->wstart + m->wcap)
			err = area_flush(b, m, u[i].off);
		if (!err)
			err = put_unit(b, m, u[i].in, dbuf);
	}
	if (!err)
		err = area_flush(b, m, m->end);
	free(m->win);
	m->win = NULL;
	free(u);
	return err;
}

static int write_meta(struct ezfs_builder *b)
{
	uint64_t shared_end = b->shared_start + b->shared_len;
	uint64_t base, meta_blkaddr, blk, end = 0, gap0, early, after = 0;
	uint64_t mend = 0;
	uint8_t *dbuf = NULL;
	bool mb = b->p.metabox_pcluster, blk0;
	struct mbufs m = { 0 };
	struct gaps *g, *gm = NULL;
	size_t i;
	int err = 0;

	/*
	 * 1. NIDs: block 0 after the superblock when the root fits there,
	 * or the root's own block before the data (reserve_root); with -m,
	 * the tree's units in the metabox first
	 */
	base = b->cursor << b->blkszbits;
	gap0 = (shared_end + 31) & ~31ull;
	early = b->data_start << b->blkszbits;
	blk0 = mb || b->root_blk ||
	       gap0 + ((b->inodes[0]->unit_size + 31) & ~31u) <= b->blksz;
	meta_blkaddr = blk0 ? 0 : (base - 1) >> b->blkszbits;
	g = calloc(1, sizeof(*g));
	if (mb)
		gm = calloc(1, sizeof(*gm));
	if (!g || (mb && !gm)) {
		free(g);
		return -ENOMEM;
	}
	g->nslots = b->blksz >> 5;
	if (mb) {
		gm->nslots = g->nslots;
		err = place_inodes(b, gm, 0, 0, &mend, 1);
		gaps_free(gm);
		free(gm);
	}
	/* the early blocks take inodes whenever NIDs can address them */
	if (!err && !meta_blkaddr)
		err = gap_push_rest(g, b->blkszbits, gap0);
	if (!err && b->root_blk)
		err = place_root(b, g);
	if (!err)
		err = place_inodes(b, g, base, meta_blkaddr, &end, mb ? 0 : -1);
	if (!err && zdirs(b))
		err = pack_dirs(b, g, meta_blkaddr, &end, &after);
	if (!err && b->devt_off)
		err = pair_tails(b, meta_blkaddr ? base : gap0, base,
				 meta_blkaddr, &end);
	if (err)
		goto out;
	if (b->inodes[0]->nid > 0xFFFF && !(b->p.flags & EZFS_BUILD_48BIT)) {
		ezi_bld_log(b, EZFS_LOG_ERROR, "root nid %llu beyond 16 bits",
			    (unsigned long long)b->inodes[0]->nid);
		err = -EFBIG;
		goto out;
	}

	/* 2. directory blocks after the metadata */
	blk = (end + b->blksz - 1) >> b->blkszbits;
	if (blk < after)
		blk = after;
	for (i = 0; i < b->ninodes; i++) {
		struct binode *in = b->inodes[i];

		if (S_ISDIR(in->mode) && in->nblocks) {
			in->startblk = blk;
			blk += in->nblocks;
		}
	}

	/* 3. encode inodes into the metadata buffers, directory blocks */
	m.gap0 = gap0;
	m.base = base;
	m.end = end;
	m.blk0 = calloc(1, early > gap0 ? early - gap0 : 1);
	m.mbox = calloc(1, mend ? mend : 1);
	if (!m.blk0 || !m.mbox) {
		err = -ENOMEM;
		goto out;
	}
	/* the units outside the area; the area's wait for the window */
	for (i = 0; i < b->ninodes && !err; i++) {
		if (!in_area(&m, b->inodes[i]))
			err = put_unit(b, &m, b->inodes[i], &dbuf);
		if ((i & 1023) == 0)
			ezi_bld_progress(b, EZFS_BUILD_META, i, b->ninodes, 0,
					 0);
	}
	/* -m: the metabox inode after the directory blocks, its unit in
	 * the device's metadata (b->inodes' last) */
	if (!err && mb) {
		b->cursor = blk;
		err = write_mbox(b, g, m.mbox, mend, meta_blkaddr);
		if (!err && !in_area(&m, b->mbox_inode))
			err = put_unit(b, &m, b->mbox_inode, &dbuf);
		blk = b->cursor;
	}
	if (!err)
		err = write_area(b, &m, &dbuf);
	if (!err && !meta_blkaddr && early > gap0)
		err = ezi_bld_pwrite(b, m.blk0, early - gap0, gap0);
	if (!err)
		err = ezi_bld_write_super(b, meta_blkaddr, blk);
out:
	gaps_free(g);
	free(g);
	free(dbuf);
	free(m.blk0);
	free(m.mbox);
	return err;
}

int ezi_bld_write_meta(struct ezfs_builder *b)
{
	int err = write_meta(b);

	ezi_bld_tails_free(b);
	ezi_bld_packed_free(b); /* --zD: kept until the directories joined */
	return err;
}
