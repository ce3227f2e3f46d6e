/* SPDX-License-Identifier: MIT */
/*
 * metabox.c - metadata stage, -m: the units of the tree's inodes are the
 * contents of the metabox inode (Linux 6.17), compressed with the
 * metabox's configuration and pcluster size when that saves space, its
 * data after the directory blocks, its own unit in the metadata.
 */
#define _GNU_SOURCE /* memfd_create */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "write/internal.h"
#include "format/erofs_fs.h"

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
int ezi_bld_write_mbox(struct ezfs_builder *b, struct bgaps *g,
		       const uint8_t *mbox, uint64_t mlen,
		       uint64_t meta_blkaddr)
{
	const unsigned nofrag = EZFS_BUILD_FRAGMENTS |
				EZFS_BUILD_ALL_FRAGMENTS | EZFS_BUILD_DEDUPE;
	struct binode *in;
	struct bzfile *z = NULL;
	int err = ezi_bld_special_inode(b, "(metabox inode)", mlen, &in);

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
		err = ezi_bld_place_file(b, in, z, NULL, NULL);
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
				((ezi_bld_core_size(in) + in->xattr_isize + 7) &
				 ~7u) +
				c + z->idata_len;
		}
	} else {
		ezi_bld_plan_flat(b, in, true);
		if (in->nblocks) {
			in->startblk = ezi_bld_take_blocks(b, in->nblocks);
			err = ezi_bld_pwrite(b, mbox,
					     in->nblocks << b->blkszbits,
					     in->startblk << b->blkszbits);
		}
		if (!err)
			err = ezi_bld_tail_keep(
				b, in, mbox + (in->nblocks << b->blkszbits),
				in->tail_len);
	}
	if (err)
		return err;
	return ezi_bld_place_late(b, g, in, meta_blkaddr);
}
