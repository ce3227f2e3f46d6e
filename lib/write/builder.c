/* SPDX-License-Identifier: MIT */
/*
 * builder.c - the public builder API: the parameters checked, a source
 * read into the tree (scan.c, tar/, rebuild.c), then ezfs_builder_write
 * running the stages in order.
 */
#include <errno.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "write/internal.h"
#include "write/tar/tar.h"
#include "format/erofs_fs.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void ezfs_build_params_init(struct ezfs_build_params *p)
{
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
	p->blksz = 4096;
	p->force_uid = -1;
	p->force_gid = -1;
	p->xattr_tolerance = 2;
	p->alg = -1;
	p->level = -1;
}

/* tar_index and blobdev: what they exclude and need (-EINVAL, logged) */
static int devices_check(struct ezfs_builder *b)
{
	const struct ezfs_build_params *p = &b->p;
	const char *why = NULL;

	if (p->tar_index && (p->alg >= 0 || p->n_more_algs))
		why = "a tar index stores no file data: no compression";
	else if (p->tar_index && p->chunksize)
		why = "a tar index chooses its own chunk sizes: no chunk size";
	else if (p->tar_index && p->blobdev)
		why = "a tar index has the tar as its device: no blob device";
	else if (p->inode_digest_xattr && (!*p->inode_digest_xattr ||
					   strlen(p->inode_digest_xattr) > 255))
		why = "inode digest xattr name: 1..255 bytes";
	else if (p->inode_digest_xattr && p->tar_index)
		why = "inode digests: a tar index does not read the data";
	else if (p->inode_digest_xattr &&
		 (p->metabox_pcluster || p->compress_dir ||
		  (p->flags &
		   (EZFS_BUILD_FRAGMENTS | EZFS_BUILD_ALL_FRAGMENTS))))
		why = "inode digests: their prefix table is stored plain: no "
		      "packed inode (fragments, compressed directories) or "
		      "metabox";
	else if (p->blobdev && !p->chunksize)
		why = "a blob device takes chunk data: it needs a chunk size";
	else if (p->blobdev && !*p->blobdev)
		why = "the blob device has an empty name";
	if (!why)
		return 0;
	ezi_bld_log(b, EZFS_LOG_ERROR, "%s", why);
	return -EINVAL;
}

int ezfs_builder_new(const struct ezfs_build_params *p, ezfs_builder **out)
{
	struct ezfs_build_params given;
	struct ezfs_builder *b;
	size_t i;
	int err;

	*out = NULL;
	ezfs_build_params_init(&given);
	if (p) {
		/* an older caller's struct is a prefix of ours */
		if (!p->size || p->size > sizeof(given))
			return -EINVAL;
		memcpy(&given, p, p->size);
	}
	p = &given;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->p = *p;
	p = &b->p;
	b->fd = -1;
	b->datafd = -1;
	b->olddatafd = -1;
	b->blobfd = -1;
	b->blksz = p->blksz ? p->blksz : 4096;
	if (b->blksz < 512 || b->blksz > 4096 || (b->blksz & (b->blksz - 1))) {
		ezi_bld_log(
			b, EZFS_LOG_ERROR,
			"block size %u: must be a power of two in 512..4096",
			b->blksz);
		free(b);
		return -EINVAL;
	}
	while ((1u << b->blkszbits) < b->blksz)
		b->blkszbits++;
	if ((p->flags & EZFS_BUILD_FORCE_COMPACT) &&
	    (p->flags & EZFS_BUILD_FORCE_EXTENDED)) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "force-inode-compact and force-inode-extended "
			    "exclude each other");
		free(b);
		return -EINVAL;
	}
	if (p->chunksize &&
	    (p->chunksize < b->blksz || (p->chunksize & (p->chunksize - 1)) ||
	     p->chunksize > (1u << 30))) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "chunk size %u: must be a power of two, at least "
			    "the block size, at most 1 GiB",
			    p->chunksize);
		free(b);
		return -EINVAL;
	}
	if ((p->root_xattr_isize && p->root_xattr_isize < 16) ||
	    p->root_xattr_isize > 65532 || p->fsalign_blocks > (1u << 30)) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "root xattr room %u (0 or 16..65532) or alignment "
			    "%u blocks (at most 2^30): out of range",
			    p->root_xattr_isize, p->fsalign_blocks);
		free(b);
		return -EINVAL;
	}
	err = devices_check(b);
	if (!err)
		err = ezi_bld_zalgs_init(b);
	if (err) {
		ezfs_builder_free(b);
		return err;
	}
	if (p->has_timestamp) {
		b->epoch = p->timestamp;
	} else {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		b->epoch = ts.tv_sec;
	}
	if (p->has_uuid) {
		memcpy(b->uuid, p->uuid, 16);
	} else {
		if (getrandom(b->uuid, 16, 0) != 16) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			memcpy(b->uuid, &ts, sizeof(ts) < 16 ? sizeof(ts) : 16);
		}
		b->uuid[6] = (b->uuid[6] & 0x0F) | 0x40; /* version 4 */
		b->uuid[8] = (b->uuid[8] & 0x3F) | 0x80;
	}
	if (p->n_exclude_regex) {
		regex_t *re = calloc(p->n_exclude_regex, sizeof(*re));

		if (!re) {
			ezfs_builder_free(b);
			return -ENOMEM;
		}
		b->regex = re;
		for (i = 0; i < p->n_exclude_regex; i++) {
			if (regcomp(&re[i], p->exclude_regex[i],
				    REG_EXTENDED | REG_NOSUB)) {
				ezi_bld_log(b, EZFS_LOG_ERROR,
					    "invalid regex '%s'",
					    p->exclude_regex[i]);
				ezfs_builder_free(b);
				return -EINVAL;
			}
			b->nregex++;
		}
	}
	b->t0 = now_s();
	*out = b;
	return 0;
}

void ezfs_builder_free(ezfs_builder *b)
{
	size_t i;

	if (!b)
		return;
	ezi_bld_free_inodes(b);
	ezi_bld_tails_free(b);
	for (i = 0; i < b->nregex; i++)
		regfree(&((regex_t *)b->regex)[i]);
	free(b->regex);
	ezi_bld_zalgs_free(b);
	free(b->shared);
	if (b->fd >= 0)
		close(b->fd);
	if (b->datafd >= 0)
		close(b->datafd);
	if (b->olddatafd >= 0)
		close(b->olddatafd);
	ezi_tzinfo_free(b->zinfo);
	if (b->blobfd >= 0)
		close(b->blobfd);
	free(b->rdevs);
	free(b);
}

/* After the tree is read: place the config records and shared xattrs. */
static int scanned(ezfs_builder *b)
{
	int err;

	/* config records follow the superblock; shared xattrs follow them */
	if (b->big_pcluster)
		b->cfgs_len = ezi_bld_cfgs_encode(b, NULL);
	/* -m: the superblock has one 16-byte extension slot */
	b->shared_start = (EROFS_SUPER_OFFSET + EROFS_SB_BASE_SIZE +
			   (b->p.metabox_pcluster ? 16 : 0) + b->cfgs_len + 3) &
			  ~3u;
	/* the device table (128-byte slots) before the shared xattrs */
	if (b->p.tar_index || b->p.blobdev || b->nrdevs) {
		b->devt_off = (b->shared_start + 127) & ~127u;
		b->shared_start =
			b->devt_off + (b->nrdevs ? b->nrdevs : 1) *
					      sizeof(struct erofs_deviceslot);
	}
	err = ezi_bld_digests(b);
	return err ? err : ezi_bld_xattrs_share(b);
}

int ezfs_builder_scan(ezfs_builder *b, const char *srcdir)
{
	int err;

	if (b->scanned)
		return -EINVAL;
	if (b->p.tar_index || b->p.gzinfo_file) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "%s: %s is made from a tar archive, not a "
			    "directory",
			    srcdir,
			    b->p.tar_index ? "a tar index"
					   : "a zinfo (--gzinfo)");
		return -EINVAL;
	}
	b->scanned = true;
	err = ezi_bld_scan(b, srcdir);
	if (!err && b->p.incremental_base)
		err = ezi_bld_merge_base(b);
	return err ? err : scanned(b);
}

int ezfs_builder_scan_images(ezfs_builder *b, const char *const *layers,
			     size_t n)
{
	const struct ezfs_build_params *p = &b->p;
	const char *why = NULL;
	int err;

	if (b->scanned || !n)
		return -EINVAL;
	if (p->tar_index)
		why = "a tar index is made from a tar archive";
	else if (p->alg >= 0 || p->n_more_algs)
		why = "a rebuild references the layers' data: no compression";
	else if (p->chunksize || p->blobdev)
		why = "a rebuild references the layers' data: no chunk size or "
		      "blob device";
	else if (p->inode_digest_xattr)
		why = "a rebuild references the layers' data: no inode digests";
	else if (p->gzinfo_file || p->incremental_base)
		why = "a rebuild reads no tar and appends to no image";
	if (why) {
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s", why);
		return -EINVAL;
	}
	b->scanned = true;
	err = ezi_bld_scan_images(b, layers, n);
	return err ? err : scanned(b);
}

int ezfs_builder_scan_tar(ezfs_builder *b, const char *path, const char *tmpdir)
{
	int err;

	if (b->scanned)
		return -EINVAL;
	if (b->p.tar_index && (b->p.incremental_base || b->p.tar_rvsp)) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "a tar index is neither appended to an image nor "
			    "made with its data left out (rvsp)");
		return -EINVAL;
	}
	b->scanned = true;
	err = ezi_bld_scan_tar(b, path, tmpdir);
	if (!err && b->p.incremental_base)
		err = ezi_bld_merge_base(b);
	return err ? err : scanned(b);
}

int ezfs_builder_scan_tar_layers(ezfs_builder *b, const char *const *paths,
				 size_t n, const char *tmpdir)
{
	int err;

	if (b->scanned || !paths || !n)
		return -EINVAL;
	if (b->p.tar_index || b->p.tar_rvsp || b->p.incremental_base ||
	    b->p.gzinfo_file || b->p.aufs) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "image layers are merged with their data (no tar "
			    "index, rvsp, incremental base, zinfo or aufs "
			    "renaming)");
		return -EINVAL;
	}
	b->scanned = true;
	err = ezi_bld_scan_tar_layers(b, paths, n, tmpdir);
	return err ? err : scanned(b);
}

void ezfs_builder_stats(const ezfs_builder *b, struct ezfs_build_stats *st)
{
	*st = b->st;
}

/*
 * The stages, in order (docs/architecture.md): the plan, the data, the
 * metadata, the superblock; then the finished filesystem (b->st.image_bytes
 * from the start of b->fd) becomes the named image file (image.c).
 */
int ezfs_builder_write(ezfs_builder *b, const char *path)
{
	struct bimage im;
	char *ztmp = NULL;
	int err;

	if (!b->scanned || b->fd >= 0)
		return -EINVAL;
	err = ezi_bld_image_open(b, path, &im);
	if (!err)
		err = ezi_bld_plan(b);
	if (!err)
		err = ezi_bld_write_data(b);
	if (!err)
		err = ezi_bld_write_meta(b);
	if (!err)
		err = ezi_bld_write_super(b);
	/* dm-verity: the tree over the finished filesystem, appended */
	if (!err && b->p.verity)
		err = ezi_bld_verity(b);
	/* the filesystem is complete; the block list names its blocks */
	if (!err)
		err = ezi_bld_block_list(b);
	if (!err && b->zinfo)
		err = ezi_bld_zinfo_write(b, &ztmp);
	err = ezi_bld_image_finish(b, &im, err);
	err = ezi_bld_zinfo_place(b, ztmp, err);
	b->st.seconds = now_s() - b->t0;
	return err;
}
