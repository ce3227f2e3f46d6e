/* SPDX-License-Identifier: MIT */
/*
 * plan.c - the plan, before any byte is written: each inode's form
 * (compact or extended), the layouts that need no data (flat with an
 * inline tail or not, directories' sizes, --zD's directories in the packed
 * inode), the root's own block, and the image's own inodes.
 *
 * Image layout (all addresses deterministic, independent of thread count):
 *   block 0..      zeros, superblock at 1024, compression configs, shared
 *                  xattrs, then inodes (meta_blkaddr = 0); a root inode
 *                  that does not fit there gets the next block(s)
 *   data_start..   file data (flat blocks and pclusters) in inode order
 *                  (data.c, chunks.c)
 *   meta..         inodes, each followed by its xattrs, compressed index and
 *                  inline tail; blocks and the gaps before them filled with
 *                  the units that add up to them (space.c);
 *                  if block 0 cannot be used, meta_blkaddr = first metadata
 *                  block - 1 so that the root NID is small and non-zero
 *   after meta     full blocks of directories (they need the NIDs: meta.c)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "write/internal.h"
#include "format/erofs_fs.h"

unsigned ezi_bld_core_size(const struct binode *in)
{
	return in->extended ? sizeof(struct erofs_inode_extended)
			    : sizeof(struct erofs_inode_compact);
}

/*
 * 48BIT: the superblock's epoch (2.2: max(0, T - 0xFFFFFFFF), the build
 * time T = epoch + build_time), which compact inodes' 32-bit mtimes are
 * relative to.
 */
int64_t ezi_bld_epoch48(const struct ezfs_builder *b)
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
		return in->mtime_ns || in->mtime < ezi_bld_epoch48(b) ||
		       in->mtime - ezi_bld_epoch48(b) > 0xFFFFFFFFll;
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
void ezi_bld_plan_flat(const struct ezfs_builder *b, struct binode *in,
		       bool allow_inline)
{
	uint32_t meta = ezi_bld_core_size(in) + in->xattr_isize;
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
bool ezi_bld_zdirs(const struct ezfs_builder *b)
{
	return b->p.compress_dir && b->nzalgs && !b->p.tar_index;
}

#define ZDIR_HDR 8 /* Z_EROFS_LEGACY_MAP_HEADER_SIZE */

/* A directory's size and layout (its entries need the NIDs: later). */
int ezi_bld_plan_dir(const struct ezfs_builder *b, struct binode *in)
{
	in->size = dir_size(b, in);
	if (in->size > 0xFFFFFFFFull)
		in->extended = true;
	if (!ezi_bld_zdirs(b) || in->size < ZDIR_HDR) {
		ezi_bld_plan_flat(b, in, true);
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
	in->unit_size = ((ezi_bld_core_size(in) + in->xattr_isize + 7) & ~7u) +
			ZDIR_HDR;
	return 0;
}

/* A special inode of the image's own (the packed or the metabox inode):
 * a regular file of size bytes named by what, no blocks yet. */
int ezi_bld_special_inode(struct ezfs_builder *b, const char *what,
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
	err = ezi_bld_plan_dir(b, root);
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

int ezi_bld_plan(struct ezfs_builder *b)
{
	uint64_t shared_end = b->shared_start + b->shared_len;
	size_t i;
	int err;

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
	return 0;
}
