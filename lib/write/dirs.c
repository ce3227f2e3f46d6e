/* SPDX-License-Identifier: MIT */
/*
 * dirs.c - metadata stage: directories' contents (entries in blocks of
 * blksz, each naming an inode's NID, so written once every NID is known),
 * and --zD's directories appended to the packed inode, which is written
 * then.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "write/internal.h"
#include "format/erofs_fs.h"

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
void ezi_bld_dir_build(const struct ezfs_builder *b, const struct binode *in,
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
 * --zD, once every other inode has its NID: the directories' contents
 * are appended to the packed inode in inode (breadth-first) order, after
 * the files' fragments (as mkfs.erofs 1.9.3 groups them); the packed
 * inode is compressed and written after the metadata area, its unit
 * placed into the smallest gap it fits (the area's last block too), else
 * in a block of its own after its data. *endp: the metadata area's end,
 * *nextblk: the first block after all of it.
 */
int ezi_bld_pack_dirs(struct ezfs_builder *b, struct bgaps *g,
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
		ezi_bld_dir_build(b, in, b->packed + b->packed_len);
		in->z->fragoff = b->packed_len;
		b->packed_len += in->size;
	}
	b->cursor = (end + b->blksz - 1) >> b->blkszbits;
	r = ezi_bld_write_packed(b, NULL);
	if (r)
		return r;
	pk = b->packed_inode;
	r = ezi_bld_gap_rest(g, b->blkszbits, end);
	if (r)
		return r;
	r = ezi_bld_place_late(b, g, pk, meta_blkaddr);
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
