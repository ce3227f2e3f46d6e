/* SPDX-License-Identifier: MIT */
/*
 * verity.c - an image's dm-verity tree: found and hung on the image's io
 * at open (before the superblock is parsed, so that every byte parsed is
 * checked), reported, scanned whole; and the digests of files.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <openssl/evp.h>

#include "ezfs/verity.h"
#include "format/verity.h"
#include "io/verity.h"
#include "read/internal.h"

/* The filesystem's bytes, as its superblock says (read unchecked: only
 * to find the tree, which then checks them); -EMEDIUMTYPE if it has
 * none. */
static int fs_bytes(ezfs_image *img, uint64_t *bytes)
{
	uint8_t raw[sizeof(struct erofs_super_block)];
	const struct erofs_super_block *sb = (const void *)raw;
	uint64_t blocks;

	memset(raw, 0, sizeof(raw));
	if (img->io.size < EROFS_SUPER_OFFSET + EROFS_SB_BASE_SIZE ||
	    ezi_io_read(&img->io, raw, EROFS_SB_BASE_SIZE,
			EROFS_SUPER_OFFSET) ||
	    get_le32(&sb->magic) != EROFS_SUPER_MAGIC ||
	    sb->blkszbits < EROFS_MIN_BLKSZBITS ||
	    sb->blkszbits > EROFS_MAX_BLKSZBITS)
		return -EMEDIUMTYPE;
	blocks = get_le32(&sb->blocks_lo);
	if ((get_le32(&sb->feature_incompat) & EROFS_FEATURE_INCOMPAT_48BIT) &&
	    get_le64(&sb->rootnid_8b))
		blocks |= (uint64_t)get_le16(&sb->rootnid_2b) << 32;
	*bytes = blocks << sb->blkszbits;
	return 0;
}

/* The image's bytes from its start (the open offset) on. */
static ssize_t image_pread(void *arg, void *buf, size_t len, uint64_t off)
{
	const struct ezfs_io *io = arg;

	return io->ops->pread(io->arg, buf, len, io->base + off);
}

static const struct ezfs_io_ops image_ops = { .pread = image_pread };

static int attach_tree(ezfs_image *img, const struct ezfs_open_params *p);

int ezi_verity_attach(ezfs_image *img, const struct ezfs_open_params *p)
{
	int err = attach_tree(img, p);

	/* a source that fetches checks what it fetches from now on, or
	 * learns that there is nothing to check against */
	if (!err && p->io_verity && !ezi_io_local(&img->io)) {
		p->io_verity(img->io.arg, img->io.verity, img->io.base);
		if (img->io.verity)
			img->io_verity = p->io_verity;
	}
	return err;
}

void ezi_verity_detach(ezfs_image *img)
{
	if (img->io_verity && img->io.verity)
		img->io_verity(img->io.arg, NULL, img->io.base);
	img->io_verity = NULL;
}

static int attach_tree(ezfs_image *img, const struct ezfs_open_params *p)
{
	struct ezfs_verity_params vp;
	const char *file = p->verity_hash_file;
	int mode = p->verity, err;
	ezfs_verity *v = NULL;
	uint64_t fsb, off;
	struct ezfs_io hio;

	if (p->root_hash || p->root_hash_sig_file || file)
		mode = EZFS_VERITY_REQUIRE;
	if (mode == EZFS_VERITY_OFF)
		return 0;
	if (fs_bytes(img, &fsb))
		return 0; /* parse_super says what it is */
	ezfs_verity_params_init(&vp);
	vp.log = img->logger.fn;
	vp.log_arg = img->logger.arg;
	vp.root = p->root_hash;
	vp.root_size = p->root_hash_size;
	vp.root_sig_file = p->root_hash_sig_file;
	vp.trusted_cert = p->trusted_cert;
	vp.min_data_bytes = fsb;
	vp.max_data_bytes = img->io.size;
	if (file) {
		vp.name = file;
		off = p->verity_hash_offset;
		err = ezi_io_open_path(file, &img->logger, &hio);
		if (err) {
			ezfs_err(img, "dm-verity: %s: %s", file,
				 ezfs_strerror(err));
			return err;
		}
		err = ezfs_verity_load(hio.ops, hio.arg, off, &vp, &v);
		ezi_io_close(&hio);
	} else {
		/* right after the filesystem, on a 4096-byte boundary */
		off = p->verity_hash_offset ? p->verity_hash_offset
					    : (fsb + 4095) / 4096 * 4096;
		err = off < img->io.size
			      ? ezfs_verity_load(&image_ops, &img->io, off, &vp,
						 &v)
			      : -ENODATA;
	}
	if (err == -ENODATA && mode == EZFS_VERITY_AUTO)
		return 0;
	if (err == -ENODATA)
		ezfs_err(img,
			 "dm-verity: no tree at byte %llu of %s (no "
			 "\"verity\" superblock there)",
			 (unsigned long long)off, file ? file : "the image");
	if (err)
		return err;
	err = ezi_verity_set_source(v, file, file != NULL);
	if (err) {
		ezfs_verity_free(v);
		return err;
	}
	img->io.verity = v;
	return 0;
}

int ezfs_image_verity(const ezfs_image *img, struct ezfs_verity_info *vi)
{
	if (!img->io.verity)
		return -ENODATA;
	ezfs_verity_get_info(img->io.verity, vi);
	return 0;
}

int64_t ezfs_image_verity_scan(ezfs_image *img, unsigned threads,
			       void (*bad)(void *arg, const char *msg),
			       void (*progress)(void *arg, uint64_t bytes),
			       void *arg)
{
	return ezi_verity_scan(&img->io, threads, bad, progress, arg);
}

/* ---- file digests ---- */

#define DIGEST_CHUNK (256u << 10)

int ezfs_file_digest(ezfs_inode *ino, int kind, uint8_t out[32])
{
	struct ezi_fsv *fsv = NULL;
	EVP_MD_CTX *md = NULL;
	uint8_t *buf = NULL;
	uint64_t off;
	int err = 0;

	if (!S_ISREG(ino->mode) ||
	    (kind != EZFS_DIGEST_FSVERITY && kind != EZFS_DIGEST_SHA256))
		return -EINVAL;
	buf = malloc(DIGEST_CHUNK);
	if (kind == EZFS_DIGEST_FSVERITY) {
		fsv = malloc(sizeof(*fsv));
		if (fsv)
			ezi_fsv_init(fsv);
	} else {
		md = EVP_MD_CTX_new();
		if (md && !EVP_DigestInit_ex(md, EVP_sha256(), NULL))
			err = -EIO;
	}
	if (!buf || (!fsv && !md)) {
		err = -ENOMEM;
		goto out;
	}
	for (off = 0; !err && off < ino->size;) {
		ssize_t n = ezfs_pread(ino, buf, DIGEST_CHUNK, off);

		if (n <= 0) {
			err = n < 0 ? (int)n : -EUCLEAN;
			break;
		}
		if (fsv)
			err = ezi_fsv_update(fsv, buf, (size_t)n);
		else if (!EVP_DigestUpdate(md, buf, (size_t)n))
			err = -EIO;
		off += (uint64_t)n;
	}
	if (!err && fsv)
		err = ezi_fsv_final(fsv, out);
	else if (!err && !EVP_DigestFinal_ex(md, out, NULL))
		err = -EIO;
out:
	EVP_MD_CTX_free(md);
	free(fsv);
	free(buf);
	return err;
}
