/* SPDX-License-Identifier: MIT */
/*
 * raw.c - the bytes of an opened image as its io reads them (expanded
 * when sparse, from the open offset on), for callers that pass the image
 * on whole: ezfs push uploads them.
 */
#include "read/internal.h"

uint64_t ezfs_image_raw_size(const ezfs_image *img)
{
	return img->io.size;
}

int ezfs_image_read_raw(ezfs_image *img, void *buf, size_t len, uint64_t off)
{
	return ezi_io_read(&img->io, buf, len, off);
}
