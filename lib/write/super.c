/* SPDX-License-Identifier: MIT */
/* super.c - superblock, compression config records and the checksum. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "write/internal.h"
#include "format/erofs_fs.h"

/* Config record of algorithm id alg at p (le16 size + payload); length. */
static uint32_t cfg_encode(const struct ezfs_builder *b, int alg, uint8_t *p)
{
	switch (alg) {
	case EZFS_ALG_LZ4:
		put_le16(p, 14);
		put_le16(p + 2, b->lz4_maxdist);
		put_le16(p + 4, (uint16_t)b->pclusterblks);
		return 16;
	case EZFS_ALG_LZMA:
		put_le16(p, 14);
		put_le32(p + 2, ezi_bld_lzma_dict_size(b));
		put_le16(p + 6, 0);
		return 16;
	case EZFS_ALG_DEFLATE:
		put_le16(p, 6);
		p[2] = 15;
		return 8;
	case EZFS_ALG_ZSTD:
		put_le16(p, 6);
		p[2] = 0;
		p[3] = (uint8_t)(ezi_bld_zstd_windowlog(b) - 10);
		return 8;
	}
	return 0;
}

/*
 * The records of every algorithm id in use, in ascending id order (3);
 * each is a multiple of 4 bytes, so every record starts 4-byte aligned.
 * p NULL: only the length.
 */
uint32_t ezi_bld_cfgs_encode(const struct ezfs_builder *b, uint8_t *p)
{
	uint8_t rec[16];
	uint32_t len = 0, n;
	int alg;

	for (alg = 0; alg < EZFS_ALG_MAX; alg++) {
		if (!(b->algmask & (1u << alg)))
			continue;
		n = cfg_encode(b, alg, p ? p + len : rec);
		len += n;
	}
	return len;
}

/*
 * The one device slot (4): an empty tag (the device is named at mount
 * time), its blocks, and its place in the flat address space right after
 * the primary device's `blocks` (an image with its tar or blob appended
 * reads as one file).
 */
static void devslot_encode(const struct ezfs_builder *b, uint8_t *p,
			   uint64_t blocks)
{
	put_le32(p + offsetof(struct erofs_deviceslot, blocks_lo),
		 (uint32_t)b->dev_blocks);
	put_le32(p + offsetof(struct erofs_deviceslot, uniaddr_lo),
		 (uint32_t)blocks);
	put_le16(p + offsetof(struct erofs_deviceslot, blocks_hi),
		 (uint16_t)(b->dev_blocks >> 32));
	put_le16(p + offsetof(struct erofs_deviceslot, uniaddr_hi),
		 (uint16_t)(blocks >> 32));
}

/* A rebuild's slots (rebuild.c), one per layer: its tag and blocks, the
 * flat address space the image's blocks, then each layer in turn. */
static void rdevs_encode(const struct ezfs_builder *b, uint8_t *p,
			 uint64_t uniaddr)
{
	unsigned i;

	for (i = 0; i < b->nrdevs; i++, p += sizeof(struct erofs_deviceslot)) {
		const struct bldev *d = &b->rdevs[i];

		memcpy(p, d->tag, strnlen(d->tag, 64));
		put_le32(p + offsetof(struct erofs_deviceslot, blocks_lo),
			 (uint32_t)d->blocks);
		put_le32(p + offsetof(struct erofs_deviceslot, uniaddr_lo),
			 (uint32_t)uniaddr);
		put_le16(p + offsetof(struct erofs_deviceslot, blocks_hi),
			 (uint16_t)(d->blocks >> 32));
		put_le16(p + offsetof(struct erofs_deviceslot, uniaddr_hi),
			 (uint16_t)(uniaddr >> 32));
		uniaddr += d->blocks;
	}
}

int ezi_bld_write_super(struct ezfs_builder *b)
{
	uint64_t meta_blkaddr = b->meta_blkaddr, blocks = b->blocks;
	size_t len = b->shared_start + b->shared_len, clen;
	bool bit48 = b->p.flags & EZFS_BUILD_48BIT;
	uint64_t rootnid = b->inodes[0]->nid;
	uint32_t compat = EROFS_FEATURE_COMPAT_MTIME, incompat = 0;
	uint8_t *buf, *sb, *crcbuf;
	uint16_t u1 = 0;
	ssize_t n;
	int err;

	/* --fsalignblks: the size a multiple of a power of two of blocks */
	if (b->p.fsalign_blocks > 1) {
		uint64_t a = 1;

		while (a < b->p.fsalign_blocks)
			a <<= 1;
		blocks = (blocks + a - 1) / a * a;
	}

	/* the device's size (plan.c, chunks.c) and the end of the flat address
	 * space must fit the slot's fields too */
	if (blocks > (bit48 ? 0xFFFFFFFFFFFFull : 0xFFFFFFFFull) ||
	    (b->devt_off && b->dev_blocks + blocks > (bit48 ? 0xFFFFFFFFFFFFull
							    : 0xFFFFFFFFull))) {
		ezi_bld_log(b, EZFS_LOG_ERROR, "image too large (%llu blocks)",
			    (unsigned long long)(blocks + b->dev_blocks));
		return -EFBIG;
	}
	buf = calloc(1, len);
	if (!buf)
		return -ENOMEM;
	sb = buf + EROFS_SUPER_OFFSET;
	if (!(b->p.flags & EZFS_BUILD_NO_SBCRC))
		compat |= EROFS_FEATURE_COMPAT_SB_CHKSUM;
	if (b->st.xattrs && !b->p.no_xattr_filter)
		compat |= EROFS_FEATURE_COMPAT_XATTR_FILTER;
	if (bit48)
		incompat |= EROFS_FEATURE_INCOMPAT_48BIT;
	if (b->nzalgs) {
		incompat |= EROFS_FEATURE_INCOMPAT_ZERO_PADDING;
		if (b->p.flags & EZFS_BUILD_ZTAILPACKING)
			incompat |= EROFS_FEATURE_INCOMPAT_ZTAILPACKING;
		if (b->packed_inode)
			incompat |= EROFS_FEATURE_INCOMPAT_FRAGMENTS;
		if (b->deduped)
			incompat |= EROFS_FEATURE_INCOMPAT_DEDUPE;
		if (b->big_pcluster) {
			incompat |= EROFS_FEATURE_INCOMPAT_COMPR_CFGS;
			u1 = (uint16_t)b->algmask;
			ezi_bld_cfgs_encode(b,
					    sb + EROFS_SB_BASE_SIZE +
						    (b->mbox_inode ? 16 : 0));
		} else {
			u1 = b->lz4_maxdist;
		}
	}
	if (b->chunked)
		incompat |= EROFS_FEATURE_INCOMPAT_CHUNKED_FILE;
	/* --xattr-inode-digest: one long prefix, plain, the ishare one */
	if (b->pfx_len) {
		compat |= EROFS_FEATURE_COMPAT_PLAIN_XATTR_PFX |
			  EROFS_FEATURE_COMPAT_ISHARE_XATTRS;
		incompat |= EROFS_FEATURE_INCOMPAT_XATTR_PREFIXES;
		sb[offsetof(struct erofs_super_block, xattr_prefix_count)] = 1;
		put_le32(sb + offsetof(struct erofs_super_block,
				       xattr_prefix_start),
			 b->pfx_start / 4);
		sb[offsetof(struct erofs_super_block, ishare_xattr_prefix_id)] =
			0;
	}
	if (b->devt_off) {
		incompat |= EROFS_FEATURE_INCOMPAT_DEVICE_TABLE;
		put_le16(sb + offsetof(struct erofs_super_block, extra_devices),
			 (uint16_t)(b->nrdevs ? b->nrdevs : 1));
		put_le16(sb + offsetof(struct erofs_super_block, devt_slotoff),
			 (uint16_t)(b->devt_off /
				    sizeof(struct erofs_deviceslot)));
		if (b->nrdevs)
			rdevs_encode(b, buf + b->devt_off, blocks);
		else
			devslot_encode(b, buf + b->devt_off, blocks);
	}
	put_le32(sb + 0, EROFS_SUPER_MAGIC);
	put_le32(sb + 8, compat);
	sb[12] = (uint8_t)b->blkszbits;
	/* -m: one extension slot (a 144-byte superblock) for metabox_nid */
	sb[13] = b->mbox_inode ? 1 : 0;
	if (b->mbox_inode) {
		incompat |= EROFS_FEATURE_INCOMPAT_METABOX;
		put_le64(sb + offsetof(struct erofs_super_block, metabox_nid),
			 b->mbox_inode->nid);
	}
	/* 2.4: a 64-bit root NID frees offset 14 for blocks_hi (48BIT) */
	if (bit48 && (rootnid > 0xFFFF || blocks > 0xFFFFFFFFull)) {
		put_le16(sb + 14, (uint16_t)(blocks >> 32));
		put_le64(sb + offsetof(struct erofs_super_block, rootnid_8b),
			 rootnid);
	} else {
		put_le16(sb + 14, (uint16_t)rootnid);
	}
	put_le64(sb + 16, b->ninodes);
	/* 2.2: on 48-bit images the epoch compact mtimes count from, and the
	 * build time after it */
	if (bit48) {
		int64_t e =
			b->epoch > 0xFFFFFFFFll ? b->epoch - 0xFFFFFFFFll : 0;

		put_le64(sb + 24, (uint64_t)e);
		put_le32(sb + offsetof(struct erofs_super_block, build_time),
			 (uint32_t)(b->epoch - e));
	} else {
		put_le64(sb + 24, (uint64_t)b->epoch);
	}
	put_le32(sb + 32, 0);
	put_le32(sb + 36, (uint32_t)blocks);
	put_le32(sb + 40, (uint32_t)meta_blkaddr);
	put_le32(sb + 44, 0); /* xattr_blkaddr: ids are absolute / 4 */
	memcpy(sb + 48, b->uuid, 16);
	memcpy(sb + 64, b->p.label, strnlen(b->p.label, 15));
	put_le32(sb + 80, incompat);
	put_le16(sb + 84, u1);
	if (b->packed_inode)
		put_le64(sb + offsetof(struct erofs_super_block, packed_nid),
			 b->packed_inode->nid);
	if (b->shared_len)
		memcpy(buf + b->shared_start, b->shared, b->shared_len);
	err = ezi_bld_pwrite(b, buf, len, 0);
	free(buf);
	if (err)
		return err;
	err = ezi_bld_set_size(b, blocks << b->blkszbits);
	if (err)
		return err;
	b->st.image_bytes = blocks << b->blkszbits;
	if (b->p.flags & EZFS_BUILD_NO_SBCRC)
		return 0;

	/* 2.3: CRC32C of 1024..end of block 0 (or one block), computed last */
	clen = b->blksz > EROFS_SUPER_OFFSET ? b->blksz - EROFS_SUPER_OFFSET
					     : b->blksz;
	crcbuf = malloc(clen);
	if (!crcbuf)
		return -ENOMEM;
	n = pread(b->fd, crcbuf, clen, EROFS_SUPER_OFFSET);
	if (n != (ssize_t)clen) {
		free(crcbuf);
		ezi_bld_log(b, EZFS_LOG_ERROR, "image: read back failed");
		return -EIO;
	}
	memset(crcbuf + 4, 0, 4);
	put_le32(crcbuf, ezi_crc32c(0xFFFFFFFFu, crcbuf, clen));
	err = ezi_bld_pwrite(b, crcbuf, 4, EROFS_SUPER_OFFSET + 4);
	free(crcbuf);
	return err;
}
