/* SPDX-License-Identifier: MIT */
/*
 * hint.c - telling an io that wants it (a remote source) which bytes the
 * reader will read soon, so that it fetches them together and exactly:
 * the metadata area at open (when the image's layout shows one), a
 * directory's blocks before they are read, the extents of a read, and the
 * next extents of a file read in order. Nothing here runs for an io
 * without a hint callback (files, memory): their reads are unchanged.
 */
#include <stdlib.h>
#include <sys/stat.h>

#include "read/internal.h"

#define AHEAD_MIN (1u << 20)  /* first read-ahead window of a file */
#define AHEAD_MAX (32u << 20) /* largest */
#define ZONE_MAX  (64ull << 20)

/* Hint the mapped extents of [off, end) of ino, adjacent ones joined. */
static void hint_extents(ezfs_inode *ino, uint64_t off, uint64_t end,
			 unsigned flags)
{
	const unsigned skip =
		EZFS_EXTENT_FRAGMENT | EZFS_EXTENT_INLINE | EZFS_EXTENT_META;
	uint64_t run = 0, run_end = 0;
	struct ezfs_extent e;

	if (end > ino->size)
		end = ino->size;
	while (off < end) {
		if (ezfs_map(ino, off, &e) || e.la + e.llen <= off || !e.llen)
			break;
		if ((e.flags & EZFS_EXTENT_MAPPED) && !(e.flags & skip) &&
		    e.plen) {
			if (e.pa != run_end) {
				if (run_end > run)
					ezi_io_hint(&ino->img->io, run,
						    run_end - run, flags);
				run = e.pa;
			}
			run_end = e.pa + e.plen;
		}
		off = e.la + e.llen;
	}
	if (run_end > run)
		ezi_io_hint(&ino->img->io, run, run_end - run, flags);
}

void ezi_hint_read(ezfs_inode *ino, uint64_t off, size_t len)
{
	uint64_t end = off + len, hinted, win;

	if (!ezi_io_hints(&ino->img->io) || S_ISDIR(ino->mode) || !len ||
	    ino->img->ndevs)
		return;
	hinted = __atomic_load_n(&ino->hint_end, __ATOMIC_RELAXED);
	win = __atomic_load_n(&ino->hint_win, __ATOMIC_RELAXED);
	if (off && off <= hinted && hinted >= end + win / 2)
		return; /* told already, and enough ahead */
	if (off && off <= hinted) {
		/* in order: the window grows, up to AHEAD_MAX; what was
		 * told already is not told again */
		win = win ? (win < AHEAD_MAX ? win * 2 : AHEAD_MAX) : AHEAD_MIN;
		hint_extents(ino, hinted > off ? hinted : off, end + win,
			     EZFS_HINT_DATA | EZFS_HINT_AHEAD);
		end += win;
	} else {
		/* the first read, or a jump: just what it needs */
		win = 0;
		hint_extents(ino, off, end, EZFS_HINT_DATA);
	}
	__atomic_store_n(&ino->hint_win, win, __ATOMIC_RELAXED);
	__atomic_store_n(&ino->hint_end, end, __ATOMIC_RELAXED);
}

void ezi_hint_dir(ezfs_inode *dir)
{
	if (!ezi_io_hints(&dir->img->io) || dir->size <= dir->img->blksz ||
	    __atomic_exchange_n(&dir->hint_end, 1, __ATOMIC_RELAXED))
		return;
	hint_extents(dir, 0, dir->size, EZFS_HINT_META);
}

struct zone {
	ezfs_image *img;
	uint64_t lo, skip;
};

static int zone_cb(void *arg, const char *name, size_t namelen, uint64_t nid,
		   unsigned ftype, uint64_t next)
{
	struct zone *z = arg;
	uint64_t pos = z->img->meta_base + (nid << EROFS_ISLOTBITS);

	(void)name;
	(void)namelen;
	(void)ftype;
	(void)next;
	if (pos >= z->skip && pos < z->lo)
		z->lo = pos;
	return 0;
}

/*
 * The metadata area, if the image has one at its end (ezfs mkfs: data
 * first, then inodes and directory blocks): from the lowest of the root
 * directory's blocks and its entries' inodes outside the root's block to
 * the end of the image, fetched at open when it is at most ZONE_MAX and
 * an eighth of the image (more is taken as metadata mixed with data, as
 * mkfs.erofs lays it out, and left to the reads).
 */
void ezi_hint_open(ezfs_image *img)
{
	struct ezfs_extent e;
	ezfs_inode *root;
	struct zone z = { .img = img, .lo = UINT64_MAX };
	uint64_t cap, size = img->io.size;

	if (!ezi_io_hints(&img->io) || img->metabox || img->ndevs)
		return;
	if (ezi_inode_load(img, img->si.root_nid, &root))
		return;
	z.skip = ((root->ipos >> img->blkbits) + 1) << img->blkbits;
	ezi_hint_dir(root);
	if (root->size > img->blksz && !ezfs_map(root, 0, &e) &&
	    (e.flags & EZFS_EXTENT_MAPPED) && e.pa >= z.skip)
		z.lo = e.pa;
	(void)ezfs_readdir(root, 0, zone_cb, &z);
	ezfs_inode_put(root);
	cap = size / 8 < ZONE_MAX ? size / 8 : ZONE_MAX;
	if (z.lo < size && size - z.lo <= cap)
		ezi_io_hint(&img->io, z.lo, size - z.lo, EZFS_HINT_META);
}
