/* SPDX-License-Identifier: MIT */
/*
 * device.c - multi-device images: the device table, the device files, and
 * where a block address of the image is read from.
 *
 * The reader keeps one address space for file data. In flat mode (no
 * device files given) it is the primary file itself: extra device k's
 * blocks lie in it from block uniaddr_k on, as when an index image and its
 * tar are concatenated. With device files, device k's blocks are placed
 * at vbase_k: its uniaddr where that range is its own, else in a fresh
 * range above everything else. Every data address a map hands out is in
 * this space; ezi_data_read() finds the file behind it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read/internal.h"

static uint64_t blocks_of(const ezfs_image *img, uint64_t bytes)
{
	return bytes >> img->blkbits;
}

/* The slot's block count, or the file's where the slot says 0 (mkfs.erofs
 * 1.5 writes 0 for --blobdev). */
static uint64_t dev_blocks(const ezfs_image *img, const struct ezi_dev *d)
{
	if (d->blocks || !d->io.ops)
		return d->blocks;
	return blocks_of(img, d->io.size);
}

static void tag_of(const struct erofs_deviceslot *s, char out[65])
{
	memcpy(out, s->tag, 64);
	out[64] = '\0';
	for (char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

static int read_slots(ezfs_image *img, uint16_t slotoff)
{
	uint64_t pos = (uint64_t)slotoff * sizeof(struct erofs_deviceslot);

	img->devs = calloc(img->ndevs, sizeof(*img->devs));
	if (!img->devs)
		return -ENOMEM;
	for (unsigned i = 0; i < img->ndevs; i++) {
		struct erofs_deviceslot s;
		struct ezi_dev *d = &img->devs[i];
		int err = ezi_io_read(&img->io, &s, sizeof(s),
				      pos + i * sizeof(s));

		if (err) {
			ezfs_err(img, "cannot read device slot %u", i + 1);
			return err;
		}
		tag_of(&s, d->tag);
		d->blocks = get_le32(&s.blocks_lo);
		d->uniaddr = get_le32(&s.uniaddr_lo);
		if (img->is48) {
			d->blocks |= (uint64_t)get_le16(&s.blocks_hi) << 32;
			d->uniaddr |= (uint64_t)get_le16(&s.uniaddr_hi) << 32;
		}
		EZFS_CHECK(img,
			   d->uniaddr <=
				   (UINT64_MAX >> img->blkbits) - d->blocks,
			   "device %u: block range %llu+%llu out of range",
			   i + 1, (unsigned long long)d->uniaddr,
			   (unsigned long long)d->blocks);
	}
	return 0;
}

/* Flat mode: every device must lie in the primary file. */
static int check_flat(ezfs_image *img)
{
	uint64_t have = blocks_of(img, img->io.size);

	for (unsigned i = 0; i < img->ndevs; i++) {
		const struct ezi_dev *d = &img->devs[i];

		if (!d->uniaddr) {
			ezfs_err(img,
				 "needs extra device %u (tag '%s', %llu "
				 "blocks), which is not in the image: give "
				 "it with --device",
				 i + 1, d->tag, (unsigned long long)d->blocks);
			return -ENODEV;
		}
		if (d->uniaddr + d->blocks > have) {
			ezfs_err(img,
				 "extra device %u (tag '%s') should be at "
				 "blocks %llu..%llu of the image, which ends "
				 "at block %llu: give it with --device",
				 i + 1, d->tag, (unsigned long long)d->uniaddr,
				 (unsigned long long)(d->uniaddr + d->blocks),
				 (unsigned long long)have);
			return -ENODEV;
		}
	}
	return 0;
}

/* Device files: open them, check their sizes, place them. */
static int open_devices(ezfs_image *img, const char *const *paths)
{
	uint64_t fresh = blocks_of(img, img->io.size);

	if (img->si.blocks > fresh)
		fresh = img->si.blocks;
	for (unsigned i = 0; i < img->ndevs; i++) {
		struct ezi_dev *d = &img->devs[i];
		int err;

		if (d->uniaddr && d->uniaddr + d->blocks > fresh)
			fresh = d->uniaddr + d->blocks;
		if (!paths[i] || !*paths[i]) {
			ezfs_err(img, "device %u: empty file name", i + 1);
			return -EINVAL;
		}
		d->path = strdup(paths[i]);
		if (!d->path)
			return -ENOMEM;
		err = ezi_io_open_file(paths[i], &d->io);
		if (err) {
			ezfs_err(img, "device %u: %s: %s", i + 1, paths[i],
				 ezfs_strerror(err));
			return err;
		}
		d->io.lg = &img->logger;
		if (d->blocks && blocks_of(img, d->io.size) < d->blocks) {
			ezfs_err(img,
				 "device %u: %s: %llu bytes, the device "
				 "table says %llu blocks of %u bytes",
				 i + 1, paths[i],
				 (unsigned long long)d->io.size,
				 (unsigned long long)d->blocks, img->blksz);
			return -ENODEV;
		}
	}
	img->fresh = fresh;
	for (unsigned i = 0; i < img->ndevs; i++) {
		struct ezi_dev *d = &img->devs[i];
		bool own = d->uniaddr && d->blocks;

		/* a range an earlier device covers goes to that one */
		for (unsigned j = 0; own && j < i; j++) {
			const struct ezi_dev *e = &img->devs[j];

			if (e->vbase == e->uniaddr && e->blocks &&
			    d->uniaddr < e->uniaddr + e->blocks &&
			    e->uniaddr < d->uniaddr + d->blocks)
				own = false;
		}
		if (own) {
			d->vbase = d->uniaddr;
			d->vspan = d->blocks;
			continue;
		}
		d->vspan = dev_blocks(img, d);
		EZFS_CHECK(img,
			   fresh <= (UINT64_MAX >> img->blkbits) - d->vspan,
			   "device %u: too large", i + 1);
		d->vbase = fresh;
		fresh += d->vspan;
	}
	return 0;
}

int ezi_devices_init(ezfs_image *img, const struct ezfs_open_params *p,
		     uint16_t slotoff)
{
	const bool table =
		img->si.feature_incompat & EROFS_FEATURE_INCOMPAT_DEVICE_TABLE;
	unsigned n = table ? img->si.extra_devices : 0;
	int err;

	img->fresh = UINT64_MAX;
	if (p->ndevices && p->ndevices != n) {
		ezfs_err(img,
			 "%u device file(s) given, the image has %u extra "
			 "device(s)",
			 p->ndevices, n);
		return -EINVAL;
	}
	if (p->ndevices && !p->devices)
		return -EINVAL;
	if (!n)
		return 0;
	if ((uint64_t)slotoff * sizeof(struct erofs_deviceslot) +
		    (uint64_t)n * sizeof(struct erofs_deviceslot) >
	    img->io.size) {
		ezfs_err(img,
			 "device table (%u slots at byte %llu) beyond the end "
			 "of the image",
			 n,
			 (unsigned long long)slotoff *
				 sizeof(struct erofs_deviceslot));
		return -EUCLEAN;
	}
	img->ndevs = n;
	for (uint32_t m = 1;; m <<= 1)
		if (m >= n + 1u) {
			img->devmask = (uint16_t)(m - 1);
			break;
		}
	err = read_slots(img, slotoff);
	if (err)
		return err;
	if (!p->ndevices) {
		img->flatdev = true;
		return check_flat(img);
	}
	return open_devices(img, p->devices);
}

void ezi_devices_fini(ezfs_image *img)
{
	for (unsigned i = 0; i < img->ndevs && img->devs; i++) {
		ezi_io_close(&img->devs[i].io);
		free(img->devs[i].path);
	}
	free(img->devs);
	img->devs = NULL;
	img->ndevs = 0;
}

int ezi_dev_addr(ezfs_image *img, uint64_t nid, unsigned devid, uint64_t blk,
		 uint64_t len, uint64_t *pa)
{
	const uint64_t nblk = (len + img->blksz - 1) >> img->blkbits;
	const uint64_t maxblk = UINT64_MAX >> img->blkbits;

	devid &= img->devmask; /* 0 without a device table, as the kernel */
	if (devid) {
		const struct ezi_dev *d;
		uint64_t base, limit;

		if (devid > img->ndevs) {
			ezfs_err(img,
				 "nid %llu: data on device %u, the image "
				 "has %u extra device(s)",
				 (unsigned long long)nid, devid, img->ndevs);
			return -EUCLEAN;
		}
		d = &img->devs[devid - 1];
		base = img->flatdev ? d->uniaddr : d->vbase;
		limit = img->flatdev ? d->blocks : dev_blocks(img, d);
		if (blk > limit || nblk > limit - blk) {
			ezfs_err(img,
				 "nid %llu: blocks %llu+%llu are beyond "
				 "device %u (%s: %llu blocks)",
				 (unsigned long long)nid,
				 (unsigned long long)blk,
				 (unsigned long long)nblk, devid,
				 d->path ? d->path : "in the image",
				 (unsigned long long)limit);
			return -EUCLEAN;
		}
		*pa = (base + blk) << img->blkbits;
		return 0;
	}
	EZFS_CHECK(img, blk <= maxblk - nblk,
		   "nid %llu: block %llu out of range", (unsigned long long)nid,
		   (unsigned long long)blk);
	if (img->ndevs && !img->flatdev) {
		for (unsigned i = 0; i < img->ndevs; i++) {
			const struct ezi_dev *d = &img->devs[i];

			if (d->uniaddr && blk >= d->uniaddr &&
			    blk - d->uniaddr < d->blocks) {
				*pa = (d->vbase + blk - d->uniaddr)
				      << img->blkbits;
				return 0;
			}
		}
		/* the fresh ranges are no addresses of the primary */
		if (blk + nblk > img->fresh) {
			ezfs_err(img,
				 "nid %llu: blocks %llu+%llu are beyond the "
				 "image",
				 (unsigned long long)nid,
				 (unsigned long long)blk,
				 (unsigned long long)nblk);
			return -EUCLEAN;
		}
	}
	*pa = blk << img->blkbits;
	return 0;
}

int ezi_dev_remap(ezfs_image *img, uint64_t nid, uint64_t pa, uint64_t len,
		  uint64_t *out)
{
	const uint64_t blk = pa >> img->blkbits;
	const uint64_t in = pa & (img->blksz - 1);
	int err;

	EZFS_CHECK(img, len <= UINT64_MAX - in,
		   "nid %llu: extent length out of range",
		   (unsigned long long)nid);
	err = ezi_dev_addr(img, nid, 0, blk, in + len, out);
	if (!err)
		*out += in;
	return err;
}

/* The device file holding data address pa (NULL: the primary). */
static const struct ezi_dev *dev_at(const ezfs_image *img, uint64_t pa)
{
	uint64_t blk = pa >> img->blkbits;

	if (!img->ndevs || img->flatdev)
		return NULL;
	for (unsigned i = 0; i < img->ndevs; i++) {
		const struct ezi_dev *d = &img->devs[i];

		if (blk >= d->vbase && blk - d->vbase < d->vspan)
			return d;
	}
	return NULL;
}

int ezi_data_read(ezfs_image *img, void *buf, size_t len, uint64_t pa)
{
	const struct ezi_dev *d = dev_at(img, pa);
	uint64_t off;

	if (!d)
		return ezi_io_read(&img->io, buf, len, pa);
	off = pa - (d->vbase << img->blkbits);
	if (off > d->io.size || len > d->io.size - off) {
		ezfs_err(img,
			 "device %u: %s: read of %zu bytes at %llu is beyond "
			 "its end (%llu bytes)",
			 (unsigned)(d - img->devs) + 1, d->path, len,
			 (unsigned long long)off,
			 (unsigned long long)d->io.size);
		return -EUCLEAN;
	}
	return ezi_io_read(&d->io, buf, len, off);
}

const void *ezi_data_map(ezfs_image *img, size_t len, uint64_t pa)
{
	if (dev_at(img, pa))
		return NULL;
	return ezi_io_map(&img->io, len, pa);
}

void ezi_data_willneed(ezfs_image *img, uint64_t pa, uint64_t len)
{
	const struct ezi_dev *d = dev_at(img, pa);

	if (!d)
		ezi_io_hint(&img->io, pa, len, EZFS_HINT_DATA);
	else
		ezi_io_willneed(&d->io, pa - (d->vbase << img->blkbits), len);
}

unsigned ezfs_device_count(const ezfs_image *img)
{
	return img->ndevs;
}

int ezfs_device_get(const ezfs_image *img, unsigned index,
		    struct ezfs_device *out)
{
	const struct ezi_dev *d;

	memset(out, 0, sizeof(*out));
	if (!index || index > img->ndevs)
		return -EINVAL;
	d = &img->devs[index - 1];
	memcpy(out->tag, d->tag, sizeof(out->tag));
	out->blocks = d->blocks;
	out->uniaddr = d->uniaddr;
	out->path = d->path;
	out->bytes = d->io.ops ? d->io.size : 0;
	return 0;
}

int ezfs_addr_device(const ezfs_image *img, uint64_t pa, unsigned *dev,
		     uint64_t *off)
{
	const struct ezi_dev *d = dev_at(img, pa);

	if (!d) {
		*dev = 0;
		*off = pa;
		return 0;
	}
	*dev = (unsigned)(d - img->devs) + 1;
	*off = pa - (d->vbase << img->blkbits);
	return 0;
}
