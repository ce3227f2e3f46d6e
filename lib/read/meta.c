/* SPDX-License-Identifier: MIT */
/* meta.c - metadata reads through a direct-mapped block cache, or from the
 * decoded contents of the metabox inode. */
#include <stdlib.h>
#include <string.h>

#include "read/internal.h"

int ezi_meta_cache_init(ezfs_image *img, size_t bytes)
{
	struct meta_cache *mc = &img->mc;
	unsigned n = 1;

	while ((size_t)(n * 2) * img->blksz <= bytes && n < (1u << 20))
		n *= 2;
	mc->slots = calloc(n, sizeof(*mc->slots));
	if (!mc->slots)
		return -ENOMEM;
	mc->nslots = n;
	for (unsigned i = 0; i < n; i++) {
		pthread_mutex_init(&mc->slots[i].lock, NULL);
		mc->slots[i].blk = UINT64_MAX;
	}
	return 0;
}

void ezi_meta_cache_fini(ezfs_image *img)
{
	struct meta_cache *mc = &img->mc;

	for (unsigned i = 0; i < mc->nslots; i++) {
		pthread_mutex_destroy(&mc->slots[i].lock);
		free(mc->slots[i].data);
	}
	free(mc->slots);
	mc->slots = NULL;
	mc->nslots = 0;
}

/* Copy part of device block blk through the cache. */
static int meta_block(ezfs_image *img, uint64_t blk, unsigned off, void *buf,
		      unsigned len)
{
	struct meta_cache *mc = &img->mc;
	struct meta_slot *s =
		&mc->slots[(blk ^ (blk >> 17)) & (mc->nslots - 1)];
	uint64_t pos = blk << img->blkbits;
	int err = 0;

	pthread_mutex_lock(&s->lock);
	if (s->blk != blk) {
		uint32_t valid = img->blksz;

		if (!s->data) {
			s->data = malloc(img->blksz);
			if (!s->data) {
				err = -ENOMEM;
				goto out;
			}
		}
		if (pos >= img->io.size)
			valid = 0;
		else if (img->io.size - pos < valid)
			valid = (uint32_t)(img->io.size - pos);
		s->blk = UINT64_MAX;
		if (valid) {
			err = ezi_io_read(&img->io, s->data, valid, pos);
			if (err)
				goto out;
		}
		s->valid = valid;
		s->blk = blk;
	}
	if (off + len > s->valid) {
		ezfs_err(img, "metadata at %llu is beyond the end of the image",
			 (unsigned long long)(pos + off));
		err = -EUCLEAN;
		goto out;
	}
	memcpy(buf, s->data + off, len);
out:
	pthread_mutex_unlock(&s->lock);
	return err;
}

int ezi_meta_read(ezfs_image *img, bool metabox, uint64_t pos, void *buf,
		  size_t len)
{
	uint8_t *dst = buf;

	if (metabox) {
		ssize_t n;

		if (!img->metabox) {
			ezfs_err(img, "metabox reference without a metabox");
			return -EUCLEAN;
		}
		n = ezfs_pread(img->metabox, buf, len, pos);
		if (n < 0)
			return (int)n;
		if ((size_t)n != len) {
			ezfs_err(img, "metadata at %llu is beyond the metabox",
				 (unsigned long long)pos);
			return -EUCLEAN;
		}
		return 0;
	}
	if (pos > UINT64_MAX - len)
		return -EUCLEAN;
	/* Large reads (index arrays, big xattr areas) bypass the cache. */
	if (len > 4 * (size_t)img->blksz)
		return ezi_io_read(&img->io, buf, len, pos);
	while (len) {
		uint64_t blk = pos >> img->blkbits;
		unsigned off = (unsigned)(pos & (img->blksz - 1));
		unsigned n = img->blksz - off;
		int err;

		if (n > len)
			n = (unsigned)len;
		err = meta_block(img, blk, off, dst, n);
		if (err)
			return err;
		dst += n;
		pos += n;
		len -= n;
	}
	return 0;
}
