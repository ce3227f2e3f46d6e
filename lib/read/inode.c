/* SPDX-License-Identifier: MIT */
/* inode.c - parse compact and extended inodes into immutable handles. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "read/internal.h"

static int check_mode(ezfs_image *img, uint64_t nid, uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
	case S_IFDIR:
	case S_IFLNK:
	case S_IFCHR:
	case S_IFBLK:
	case S_IFIFO:
	case S_IFSOCK:
		return 0;
	default:
		ezfs_err(img, "nid %llu: bogus i_mode 0%o",
			 (unsigned long long)nid, mode);
		return -EUCLEAN;
	}
}

static int parse_inode(ezfs_image *img, ezfs_inode *ino)
{
	const uint64_t nid = ino->nid;
	uint8_t raw[64];
	uint16_t ifmt, nb;
	uint32_t iu;
	uint64_t blk_hi = 0;
	bool addr32 = true;
	int err;

	err = ezi_meta_read(img, ino->in_metabox, ino->ipos, raw, 32);
	if (err)
		return err;
	ifmt = get_le16(raw);
	if (ifmt & ~EROFS_I_ALL_BITS) {
		ezfs_err(img, "nid %llu: unsupported i_format 0x%x",
			 (unsigned long long)nid, ifmt);
		return -EOPNOTSUPP;
	}
	ino->layout =
		(ifmt >> EROFS_I_DATALAYOUT_SHIFT) & EROFS_I_DATALAYOUT_MASK;
	if (ino->layout > EROFS_INODE_CHUNK_BASED) {
		ezfs_err(img, "nid %llu: unsupported data layout %u",
			 (unsigned long long)nid, ino->layout);
		return -EOPNOTSUPP;
	}
	ino->extended = ifmt & EROFS_I_VERSION_MASK;
	ino->xattr_icount = get_le16(raw + 2);
	ino->xattr_isize = erofs_xattr_ibody_size(ino->xattr_icount);
	ino->mode = get_le16(raw + 4);
	nb = get_le16(raw + 6);
	if (ino->extended) {
		const struct erofs_inode_extended *die = (const void *)raw;

		err = ezi_meta_read(img, ino->in_metabox, ino->ipos + 32,
				    raw + 32, 32);
		if (err)
			return err;
		ino->core_size = 64;
		ino->size = get_le64(&die->i_size);
		iu = get_le32(&die->i_u);
		ino->ino32 = get_le32(&die->i_ino);
		ino->uid = get_le32(&die->i_uid);
		ino->gid = get_le32(&die->i_gid);
		ino->mtime = (int64_t)get_le64(&die->i_mtime);
		ino->mtime_nsec = get_le32(&die->i_mtime_nsec);
		ino->nlink = get_le32(&die->i_nlink);
		if (img->is48) {
			blk_hi = nb;
			addr32 = false;
		}
	} else {
		const struct erofs_inode_compact *dic = (const void *)raw;

		ino->core_size = 32;
		ino->size = get_le32(&dic->i_size);
		iu = get_le32(&dic->i_u);
		ino->ino32 = get_le32(&dic->i_ino);
		ino->uid = get_le16(&dic->i_uid);
		ino->gid = get_le16(&dic->i_gid);
		ino->mtime = img->si.epoch + (int64_t)get_le32(&dic->i_mtime);
		ino->mtime_nsec = img->si.fixed_nsec;
		if (!S_ISDIR(ino->mode) && (ifmt & EROFS_I_NLINK_1_BIT)) {
			ino->nlink = 1;
			blk_hi = nb;
			addr32 = false;
		} else {
			ino->nlink = nb;
		}
	}
	/* DOT_OMITTED exists only on 48-bit images [11.1] */
	if (S_ISDIR(ino->mode) && (ifmt & EROFS_I_DOT_OMITTED_BIT) && img->is48)
		ino->dot_omitted = 1;
	err = check_mode(img, nid, ino->mode);
	if (err)
		return err;
	if ((int64_t)ino->size < 0) {
		ezfs_err(img, "nid %llu: bogus size %llu",
			 (unsigned long long)nid,
			 (unsigned long long)ino->size);
		return -EUCLEAN;
	}

	ino->startblk = UINT64_MAX;
	switch (ino->mode & S_IFMT) {
	case S_IFCHR:
	case S_IFBLK:
		ino->rdev = iu;
		ino->size = 0;
		return 0;
	case S_IFIFO:
	case S_IFSOCK:
		ino->size = 0;
		return 0;
	default:
		break;
	}
	switch (ino->layout) {
	case EROFS_INODE_FLAT_PLAIN:
	case EROFS_INODE_FLAT_INLINE:
		if (addr32 ? iu != EROFS_NULL_ADDR32
			   : (iu | blk_hi << 32) != EROFS_NULL_ADDR48)
			ino->startblk = iu | blk_hi << 32;
		break;
	case EROFS_INODE_CHUNK_BASED:
		ino->chunkformat = (uint16_t)iu;
		if (ino->chunkformat & ~EROFS_CHUNK_FORMAT_ALL) {
			ezfs_err(img, "nid %llu: unsupported chunk format 0x%x",
				 (unsigned long long)nid, ino->chunkformat);
			return -EOPNOTSUPP;
		}
		ino->chunkbits =
			img->blkbits +
			(ino->chunkformat & EROFS_CHUNK_FORMAT_BLKBITS_MASK);
		EZFS_CHECK(img, ino->chunkbits < 48,
			   "nid %llu: chunk size 2^%u too large",
			   (unsigned long long)nid, ino->chunkbits);
		break;
	default: /* compressed */
		ino->zblocks = iu | blk_hi << 32;
		if (!S_ISREG(ino->mode) && !S_ISDIR(ino->mode)) {
			ezfs_err(img,
				 "nid %llu: compressed layout on a "
				 "non-regular inode",
				 (unsigned long long)nid);
			return -EUCLEAN;
		}
		return ezi_z_init(ino);
	}
	/* No system can hold a longer symlink target (PATH_MAX - 1): a corrupt
	 * size is refused here so that no caller sizes a buffer from it. */
	EZFS_CHECK(img, !S_ISLNK(ino->mode) || ino->size <= EZFS_SYMLINK_MAX,
		   "nid %llu: symlink of %llu bytes (at most %d)",
		   (unsigned long long)nid, (unsigned long long)ino->size,
		   EZFS_SYMLINK_MAX);
	/* [5.8] fast symlinks must be inline within one block, as the kernel
	 * checks when it loads the inode. */
	if (S_ISLNK(ino->mode) && ino->layout == EROFS_INODE_FLAT_INLINE &&
	    ino->size < img->blksz) {
		uint64_t p = ezfs_inode_datapos(ino);

		EZFS_CHECK(img,
			   (p & (img->blksz - 1)) + ino->size <= img->blksz,
			   "nid %llu: inline symlink crosses a block boundary",
			   (unsigned long long)nid);
	}
	return 0;
}

int ezi_inode_load(ezfs_image *img, uint64_t nid, ezfs_inode **out)
{
	ezfs_inode *ino;
	uint64_t slot = nid & ~EROFS_NID_METABOX;
	int err;

	*out = NULL;
	if (slot > (UINT64_MAX - img->meta_base) >> EROFS_ISLOTBITS) {
		ezfs_err(img, "nid %llu out of range", (unsigned long long)nid);
		return -EUCLEAN;
	}
	ino = calloc(1, sizeof(*ino));
	if (!ino)
		return -ENOMEM;
	ino->img = img;
	ino->nid = nid;
	ino->in_metabox = nid & EROFS_NID_METABOX;
	ino->ipos = (ino->in_metabox ? 0 : img->meta_base) +
		    (slot << EROFS_ISLOTBITS);
	if (ino->in_metabox && !img->metabox) {
		ezfs_err(img,
			 "nid %llu is in a metabox the image does not have",
			 (unsigned long long)nid);
		free(ino);
		return -EUCLEAN;
	}
	pthread_mutex_init(&ino->zlock, NULL);
	err = parse_inode(img, ino);
	if (err) {
		pthread_mutex_destroy(&ino->zlock);
		ezfs_dbg(img, "nid %llu: cannot load inode (%s)",
			 (unsigned long long)nid, ezfs_strerror(err));
		free(ino);
		return err;
	}
	*out = ino;
	return 0;
}

int ezfs_inode_get(ezfs_image *img, uint64_t nid, ezfs_inode **out)
{
	return ezi_inode_load(img, nid, out);
}

void ezfs_inode_put(ezfs_inode *ino)
{
	if (!ino)
		return;
	pthread_mutex_destroy(&ino->zlock);
	free(ino);
}

uint64_t ezfs_inode_nid(const ezfs_inode *ino)
{
	return ino->nid;
}

unsigned ezfs_mode_ftype(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return EZFS_FT_REG;
	case S_IFDIR:
		return EZFS_FT_DIR;
	case S_IFCHR:
		return EZFS_FT_CHR;
	case S_IFBLK:
		return EZFS_FT_BLK;
	case S_IFIFO:
		return EZFS_FT_FIFO;
	case S_IFSOCK:
		return EZFS_FT_SOCK;
	case S_IFLNK:
		return EZFS_FT_SYMLINK;
	}
	return EZFS_FT_UNKNOWN;
}

void ezfs_inode_stat(const ezfs_inode *ino, struct ezfs_stat *st)
{
	const ezfs_image *img = ino->img;

	memset(st, 0, sizeof(*st));
	st->nid = ino->nid;
	st->mode = ino->mode;
	st->nlink = ino->nlink;
	st->uid = ino->uid;
	st->gid = ino->gid;
	st->size = ino->size;
	st->mtime = ino->mtime;
	st->mtime_nsec = ino->mtime_nsec;
	if (S_ISCHR(ino->mode) || S_ISBLK(ino->mode)) {
		st->rdev_major = erofs_dev_major(ino->rdev);
		st->rdev_minor = erofs_dev_minor(ino->rdev);
	}
	st->layout = ino->layout;
	st->extended = ino->extended;
	st->xattr_isize = ino->xattr_isize;
	st->ino32 = ino->ino32;
	if (ino->layout == EROFS_INODE_COMPRESSED_FULL ||
	    ino->layout == EROFS_INODE_COMPRESSED_COMPACT)
		st->blocks = ino->zblocks;
	else
		st->blocks = (ino->size + img->blksz - 1) >> img->blkbits;
}

int ezfs_stat_nid(ezfs_image *img, uint64_t nid, struct ezfs_stat *st)
{
	ezfs_inode *ino;
	int err = ezfs_inode_get(img, nid, &ino);

	if (err)
		return err;
	ezfs_inode_stat(ino, st);
	ezfs_inode_put(ino);
	return 0;
}
