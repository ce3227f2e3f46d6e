/* SPDX-License-Identifier: MIT */
/* super.c - open an image: superblock, compression records, special inodes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ezfs/engine.h"
#include "engine/engine.h"
#include "format/names.h"
#include "read/internal.h"

#define DEFAULT_CACHE_BYTES	 (64u << 20)
#define DEFAULT_META_CACHE_BYTES (4u << 20)

void ezfs_open_params_init(struct ezfs_open_params *p)
{
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
}

void ezfs_feature_string(const ezfs_image *img, char *buf, size_t size)
{
	ezi_feature_names(img->si.feature_compat, img->si.feature_incompat, buf,
			  size);
}

void ezfs_get_sb_info(const ezfs_image *img, struct ezfs_sb_info *si)
{
	*si = img->si;
}

uint64_t ezfs_root_nid(const ezfs_image *img)
{
	return img->si.root_nid;
}

/* [2.3] The checksum covers 1024..end of block 0 with the field zeroed.
 * A mismatch is -EUCLEAN, or a warning when the caller asked to go on. */
static int check_sb_crc(ezfs_image *img, uint32_t expect, int go_on)
{
	uint32_t len = img->blksz > EROFS_SUPER_OFFSET
			       ? img->blksz - EROFS_SUPER_OFFSET
			       : img->blksz;
	uint8_t *buf = malloc(len);
	uint32_t crc;
	int err;

	if (!buf)
		return -ENOMEM;
	err = ezi_io_read(&img->io, buf, len, EROFS_SUPER_OFFSET);
	if (err) {
		free(buf);
		return err;
	}
	memset(buf + 4, 0, 4);
	crc = ezi_crc32c(0xFFFFFFFFu, buf, len);
	free(buf);
	if (crc != expect) {
		ezfs_log(img, go_on ? EZFS_LOG_WARN : EZFS_LOG_ERROR,
			 "superblock checksum mismatch: stored 0x%08x, "
			 "computed 0x%08x%s",
			 expect, crc, go_on ? "; ignored" : "");
		return go_on ? 0 : -EUCLEAN;
	}
	return 0;
}

/* [3] Compression configuration records after the superblock. */
static int parse_compr_cfgs(ezfs_image *img, uint16_t algs)
{
	uint64_t pos = EROFS_SUPER_OFFSET + img->si.sb_size;

	for (unsigned alg = 0; alg < 16; alg++) {
		uint8_t rec[64];
		uint16_t size;
		int err;

		if (!(algs & (1u << alg)))
			continue;
		if (alg >= Z_EROFS_COMPRESSION_MAX) {
			ezfs_err(img,
				 "unknown compression algorithm %u in the "
				 "superblock",
				 alg);
			return -EOPNOTSUPP;
		}
		pos = (pos + 3) & ~3ull;
		err = ezi_io_read(&img->io, rec, 2, pos);
		if (err)
			return err;
		size = get_le16(rec);
		EZFS_CHECK(img, size && size <= sizeof(rec),
			   "invalid %s config record size %u",
			   ezfs_alg_name((int)alg), size);
		err = ezi_io_read(&img->io, rec, size, pos + 2);
		if (err)
			return err;
		pos += 2 + size;
		switch (alg) {
		case Z_EROFS_COMPRESSION_LZ4:
			EZFS_CHECK(img, size >= sizeof(struct z_erofs_lz4_cfgs),
				   "short lz4 config record (%u bytes)", size);
			img->si.lz4_max_distance = get_le16(rec);
			img->si.lz4_max_pclusterblks = get_le16(rec + 2);
			break;
		case Z_EROFS_COMPRESSION_LZMA:
			EZFS_CHECK(img,
				   size >= sizeof(struct z_erofs_lzma_cfgs),
				   "short lzma config record (%u bytes)", size);
			img->si.lzma_dict_size = get_le32(rec);
			if (get_le16(rec + 4)) {
				ezfs_err(img, "unknown lzma format %u",
					 get_le16(rec + 4));
				return -EOPNOTSUPP;
			}
			EZFS_CHECK(img, img->si.lzma_dict_size <= (8u << 20),
				   "lzma dictionary too large (%u bytes)",
				   img->si.lzma_dict_size);
			break;
		case Z_EROFS_COMPRESSION_DEFLATE:
			img->si.deflate_windowbits = rec[0];
			EZFS_CHECK(img, rec[0] <= 15,
				   "deflate window bits %u > 15", rec[0]);
			break;
		case Z_EROFS_COMPRESSION_ZSTD:
			if (rec[0]) {
				ezfs_err(img, "unknown zstd format %u", rec[0]);
				return -EOPNOTSUPP;
			}
			img->si.zstd_windowlog = rec[1];
			EZFS_CHECK(img, rec[1] <= 17,
				   "zstd window log %u too large", rec[1]);
			break;
		}
	}
	return 0;
}

/* "2.35 MiB" for the messages of a truncated image. */
static const char *fmt_size(uint64_t n, char *buf, size_t size)
{
	static const char *const units[] = { "B",   "KiB", "MiB", "GiB",
					     "TiB", "PiB", "EiB" };
	double v = (double)n;
	unsigned u = 0;

	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	if (!u || v == (double)(uint64_t)v)
		snprintf(buf, size, "%.0f %s", v, units[u]);
	else
		snprintf(buf, size, "%.*f %s",
			 v < 10	   ? 2
			 : v < 100 ? 1
				   : 0,
			 v, units[u]);
	return buf;
}

/*
 * mkfs.erofs counts only the primary device's blocks in the superblock;
 * a writer that counted the extra devices in too is not truncated when
 * the primary part is there.
 */
static bool devices_counted(ezfs_image *img, const struct erofs_super_block *sb)
{
	uint64_t pos, sum = 0;
	unsigned n = get_le16(&sb->extra_devices);

	if (!(img->si.feature_incompat & EROFS_FEATURE_INCOMPAT_DEVICE_TABLE))
		return false;
	pos = (uint64_t)get_le16(&sb->devt_slotoff) *
	      sizeof(struct erofs_deviceslot);
	for (unsigned i = 0; i < n; i++) {
		struct erofs_deviceslot s;
		uint64_t b;

		if (ezi_io_read(&img->io, &s, sizeof(s), pos + i * sizeof(s)))
			return false;
		b = get_le32(&s.blocks_lo);
		if (img->is48)
			b |= (uint64_t)get_le16(&s.blocks_hi) << 32;
		sum += b;
	}
	return sum <= img->si.blocks &&
	       img->si.blocks - sum <= img->io.size >> img->blkbits;
}

static int parse_super(ezfs_image *img, const struct ezfs_open_params *p)
{
	struct ezfs_sb_info *si = &img->si;
	uint8_t raw[sizeof(struct erofs_super_block)];
	const struct erofs_super_block *sb = (const void *)raw;
	uint32_t unknown;
	int err;

	memset(raw, 0, sizeof(raw));
	if (img->io.size < EROFS_SUPER_OFFSET + EROFS_SB_BASE_SIZE) {
		ezfs_err(img,
			 "not an EROFS image (%llu bytes: too small for "
			 "a superblock)",
			 (unsigned long long)img->io.size);
		return -EMEDIUMTYPE;
	}
	err = ezi_io_read(&img->io, raw, EROFS_SB_BASE_SIZE,
			  EROFS_SUPER_OFFSET);
	if (err)
		return err;
	if (get_le32(&sb->magic) != EROFS_SUPER_MAGIC) {
		ezfs_err(img, "not an EROFS image (no EROFS magic at byte %u)",
			 EROFS_SUPER_OFFSET);
		return -EMEDIUMTYPE;
	}
	si->blkszbits = sb->blkszbits;
	if (si->blkszbits < EROFS_MIN_BLKSZBITS ||
	    si->blkszbits > EROFS_MAX_BLKSZBITS) {
		ezfs_err(img, "unsupported block size 2^%u", si->blkszbits);
		return -EOPNOTSUPP;
	}
	img->blkbits = si->blkszbits;
	img->blksz = si->blksz = 1u << si->blkszbits;
	si->sb_size = EROFS_SB_BASE_SIZE + 16u * sb->sb_extslots;
	EZFS_CHECK(img, EROFS_SUPER_OFFSET + si->sb_size <= 4096,
		   "superblock extension slots (%u) too large",
		   sb->sb_extslots);
	if (si->sb_size > EROFS_SB_BASE_SIZE) {
		size_t more =
			si->sb_size > sizeof(raw) ? sizeof(raw) : si->sb_size;
		err = ezi_io_read(&img->io, raw, more, EROFS_SUPER_OFFSET);
		if (err)
			return err;
	}
	EZFS_CHECK(img, sb->dirblkbits == 0, "dirblkbits %u is not 0",
		   sb->dirblkbits);
	si->feature_compat = get_le32(&sb->feature_compat);
	si->feature_incompat = get_le32(&sb->feature_incompat);
	if (si->feature_compat & EROFS_FEATURE_COMPAT_SB_CHKSUM) {
		err = check_sb_crc(img, get_le32(&sb->checksum), p->no_sb_crc);
		if (err)
			return err;
	}
	unknown = si->feature_incompat & ~(uint32_t)EROFS_ALL_FEATURE_INCOMPAT;
	if (unknown) {
		ezfs_err(img, "unknown incompatible feature bits 0x%x",
			 unknown);
		return -EOPNOTSUPP;
	}
	img->is48 = si->feature_incompat & EROFS_FEATURE_INCOMPAT_48BIT;
	img->zero_padding =
		si->feature_incompat & EROFS_FEATURE_INCOMPAT_ZERO_PADDING;
	si->inos = get_le64(&sb->inos);
	si->epoch = (int64_t)get_le64(&sb->epoch);
	si->fixed_nsec = get_le32(&sb->fixed_nsec);
	si->build_time = get_le32(&sb->build_time);
	si->blocks = get_le32(&sb->blocks_lo);
	si->root_nid = get_le16(&sb->rootnid_2b);
	if (img->is48 && get_le64(&sb->rootnid_8b)) {
		si->root_nid = get_le64(&sb->rootnid_8b);
		si->blocks |= (uint64_t)get_le16(&sb->rootnid_2b) << 32;
	}
	if (si->blocks && si->blocks > img->io.size >> img->blkbits &&
	    !devices_counted(img, sb)) {
		char have[32], want[32];

		ezfs_err(img, "truncated: %s of %s",
			 fmt_size(img->io.size, have, sizeof(have)),
			 fmt_size(si->blocks << img->blkbits, want,
				  sizeof(want)));
		return -EUCLEAN;
	}
	si->meta_blkaddr = get_le32(&sb->meta_blkaddr);
	si->xattr_blkaddr = get_le32(&sb->xattr_blkaddr);
	img->meta_base = si->meta_blkaddr << img->blkbits;
	img->xattr_base = si->xattr_blkaddr << img->blkbits;
	memcpy(si->uuid, sb->uuid, 16);
	memcpy(si->volume_name, sb->volume_name, 16);
	si->volume_name[16] = '\0';
	si->extra_devices = get_le16(&sb->extra_devices);
	si->xattr_prefix_count = sb->xattr_prefix_count;
	img->ishare_index =
		si->feature_compat & EROFS_FEATURE_COMPAT_ISHARE_XATTRS
			? EROFS_XATTR_LONG_PREFIX | sb->ishare_xattr_prefix_id
			: -1;
	si->packed_nid = get_le64(&sb->packed_nid);
	img->filter_ok =
		(si->feature_compat & EROFS_FEATURE_COMPAT_XATTR_FILTER) &&
		!sb->xattr_filter_reserved;
	if (si->feature_incompat & EROFS_FEATURE_INCOMPAT_METABOX) {
		EZFS_CHECK(img, si->sb_size > EROFS_SB_BASE_SIZE,
			   "metabox feature without superblock extension");
		si->metabox_nid = get_le64(&sb->metabox_nid);
		EZFS_CHECK(img, !(si->metabox_nid & EROFS_NID_METABOX),
			   "metabox nid has bit 63 set");
	}
	EZFS_CHECK(img, !(si->packed_nid & EROFS_NID_METABOX),
		   "packed nid has bit 63 set");
	err = ezi_devices_init(img, p, get_le16(&sb->devt_slotoff));
	if (err)
		return err;
	if (si->feature_incompat & EROFS_FEATURE_INCOMPAT_COMPR_CFGS) {
		si->available_algs = get_le16(&sb->u1);
		err = parse_compr_cfgs(img, si->available_algs);
		if (err)
			return err;
	} else {
		si->lz4_max_distance = get_le16(&sb->u1);
		si->available_algs = 1u << Z_EROFS_COMPRESSION_LZ4;
	}
	img->ccfg.lz4_max_distance = si->lz4_max_distance
					     ? si->lz4_max_distance
					     : Z_EROFS_LZ4_MAX_DISTANCE;
	img->ccfg.lzma_dict_size =
		si->lzma_dict_size ? si->lzma_dict_size : (8u << 20);
	img->ccfg.deflate_windowbits =
		si->deflate_windowbits ? si->deflate_windowbits : 15;
	img->ccfg.zstd_windowlog = si->zstd_windowlog;
	return 0;
}

static int load_special(ezfs_image *img)
{
	struct ezfs_sb_info *si = &img->si;
	ezfs_inode *root;
	int err;

	if (si->metabox_nid ||
	    (si->feature_incompat & EROFS_FEATURE_INCOMPAT_METABOX)) {
		err = ezi_inode_load(img, si->metabox_nid, &img->metabox);
		if (err) {
			ezfs_err(img, "cannot load the metabox inode %llu",
				 (unsigned long long)si->metabox_nid);
			return err;
		}
		EZFS_CHECK(img, S_ISREG(img->metabox->mode),
			   "metabox inode is not a regular file");
	}
	if (si->packed_nid) {
		err = ezi_inode_load(img, si->packed_nid, &img->packed);
		if (err) {
			ezfs_err(img, "cannot load the packed inode %llu",
				 (unsigned long long)si->packed_nid);
			return err;
		}
		EZFS_CHECK(img, S_ISREG(img->packed->mode),
			   "packed inode is not a regular file");
	}
	err = ezi_inode_load(img, si->root_nid, &root);
	if (err) {
		ezfs_err(img, "cannot load the root inode %llu",
			 (unsigned long long)si->root_nid);
		return err;
	}
	if (!S_ISDIR(root->mode)) {
		ezfs_inode_put(root);
		ezfs_err(img, "root inode %llu is not a directory",
			 (unsigned long long)si->root_nid);
		return -EUCLEAN;
	}
	ezfs_inode_put(root);
	return ezi_xattr_prefixes_init(img);
}

/* Engine order, dispatch and strictness: params first, else environment. */
static int apply_engine_params(ezfs_image *img,
			       const struct ezfs_open_params *p)
{
	unsigned nthreads = 0;
	int err, mode;

	err = ezi_engine_env_check(&img->logger);
	if (err)
		return err;
	if (p->accel) {
		err = ezfs_image_set_accel(img, p->accel);
		if (err)
			return err;
	}
	if (p->strict_accel) {
		err = ezfs_image_set_strict_accel(img, 1);
		if (err)
			return err;
	}
	if (p->dispatch && *p->dispatch) {
		mode = ezfs_dispatch_parse(p->dispatch, &nthreads);
		if (mode < 0) {
			ezfs_err(img,
				 "dispatch '%s': not inline, queue[:N] or "
				 "percpu",
				 p->dispatch);
			return mode;
		}
		err = ezfs_image_set_dispatch(img, mode, nthreads);
		if (err)
			return err;
	}
	return 0;
}

int ezfs_image_open_io(const struct ezfs_io_ops *ops, void *arg, uint64_t size,
		       const struct ezfs_open_params *p, ezfs_image **out)
{
	struct ezfs_open_params given;
	ezfs_image *img;
	int err;

	*out = NULL;
	ezfs_open_params_init(&given);
	if (p) {
		/* an older caller's struct is a prefix of ours */
		if (!p->size || p->size > sizeof(given)) {
			if (ops->close)
				ops->close(arg);
			return -EINVAL;
		}
		memcpy(&given, p, p->size);
	}
	p = &given;
	img = calloc(1, sizeof(*img));
	if (!img) {
		if (ops->close)
			ops->close(arg);
		return -ENOMEM;
	}
	ezi_stream_spares_init(img);
	img->logger.fn = p->log;
	img->logger.arg = p->log_arg;
	img->logger.verbose = p->verbose;
	img->io.ops = ops;
	img->io.arg = arg;
	img->io.base = p->offset;
	img->io.size = size > p->offset ? size - p->offset : 0;
	img->io.lg = &img->logger;
	img->io.hint = p->io_hint;
	img->si.image_bytes = img->io.size;

	err = ezi_verity_attach(img, p);
	if (!err)
		err = parse_super(img, p);
	if (!err)
		err = ezi_meta_cache_init(
			img, p->meta_cache_bytes ? p->meta_cache_bytes
						 : DEFAULT_META_CACHE_BYTES);
	if (!err)
		err = ezi_pcache_init(img, p->cache_bytes
						   ? p->cache_bytes
						   : DEFAULT_CACHE_BYTES);
	if (!err) {
		img->codecs = ezi_codec_pool_new(&img->ccfg);
		if (!img->codecs)
			err = -ENOMEM;
	}
	if (!err)
		err = apply_engine_params(img, p);
	if (!err)
		err = load_special(img);
	if (err) {
		ezfs_image_close(img);
		return err;
	}
	ezi_hint_open(img);
	*out = img;
	return 0;
}

int ezfs_image_open(const char *path, const struct ezfs_open_params *p,
		    ezfs_image **out)
{
	struct ezfs_io io;
	int err;

	*out = NULL;
	err = ezi_io_open_file(path, &io);
	if (err)
		return err;
	return ezfs_image_open_io(io.ops, io.arg, io.size, p, out);
}

int ezfs_image_open_mem(const void *buf, size_t len,
			const struct ezfs_open_params *p, ezfs_image **out)
{
	struct ezfs_io io;
	int err;

	*out = NULL;
	err = ezi_io_open_mem(buf, len, &io);
	if (err)
		return err;
	return ezfs_image_open_io(io.ops, io.arg, io.size, p, out);
}

void ezfs_image_close(ezfs_image *img)
{
	if (!img)
		return;
	ezi_pcache_quiesce(img);
	ezi_xattr_prefixes_fini(img);
	ezfs_inode_put(img->packed);
	ezfs_inode_put(img->metabox);
	ezi_pcache_fini(img);
	ezi_stream_spares_fini(img);
	ezi_meta_cache_fini(img);
	ezi_estate_free(img->engine);
	ezi_codec_pool_free(img->codecs);
	ezi_devices_fini(img);
	ezi_verity_detach(img);
	ezi_io_close(&img->io);
	free(img);
}
