/* SPDX-License-Identifier: MIT */
/*
 * spool.c - the temporary files where fragments and the packed inode's
 * bytes wait: the seam between compress/ and fragments/, which both call
 * down into it (neither calls the other back through it).
 *
 * Neither the fragments nor the packed inode's bytes stay in memory: a
 * 1.3 GB tree held 2.4 GB (every fragment from its compression until all
 * files were done, then the packed inode's bytes beside them). The worker
 * moves each fragment to the spool file as soon as the file is compressed
 * (any order: each has its offset); placing (fragments/fragments.c) reads
 * them back in the depth-first order and writes the packed inode's bytes
 * to the packed file, which b->packed maps (shared) for the workers that
 * compress its segments (compress/zsegs.c drops each segment's pages once
 * done) and for the metadata stage. The files are unlinked temporary
 * files ($TMPDIR, else /tmp, as mkfs.erofs' tmpfile(); memory where none
 * can be made): the page cache holds what it can, the process only
 * buffers. A whole-file fragment skips the spool: placing reads the source
 * file itself (any source can be read again: a path, or a range of the tar
 * or of its spool). On the Linux tree at lz4 1M, where nearly every file
 * is one fragment, writing and reading back 1.1 GB of spool was a quarter
 * of the build's CPU time.
 */
#define _GNU_SOURCE /* O_TMPFILE, memfd_create, mkostemp */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "write/internal.h"

struct bspool {
	int spoolfd, packfd; /* -1: none yet */
	uint64_t spool_len;
};

int ezi_bld_tmpfd(const struct ezfs_builder *b)
{
	const char *dir = getenv("TMPDIR");
	char *path;
	int fd, err;

	if (!dir || !*dir)
		dir = "/tmp";
	fd = open(dir, O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	path = malloc(strlen(dir) + sizeof("/ezfs-XXXXXX"));
	if (path) {
		strcpy(path, dir);
		strcat(path, "/ezfs-XXXXXX");
		fd = mkostemp(path, O_CLOEXEC);
		if (fd >= 0)
			unlink(path);
		free(path);
	}
	if (fd < 0)
		fd = memfd_create("ezfs-packed", MFD_CLOEXEC);
	if (fd >= 0)
		return fd;
	err = -errno;
	ezi_bld_log(b, EZFS_LOG_ERROR, "%s: temporary file: %s", dir,
		    strerror(errno));
	return err;
}

static int io_error(const struct ezfs_builder *b, const char *what, int err)
{
	ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s", what, strerror(-err));
	return err;
}

int ezi_bld_spool_open(struct ezfs_builder *b)
{
	struct bspool *sp;

	if (!(b->p.flags & (EZFS_BUILD_FRAGMENTS | EZFS_BUILD_ALL_FRAGMENTS)) ||
	    !b->nzalgs || b->spool)
		return 0;
	sp = calloc(1, sizeof(*sp));
	if (!sp)
		return -ENOMEM;
	sp->spoolfd = sp->packfd = -1;
	b->spool = sp;
	sp->spoolfd = ezi_bld_tmpfd(b);
	return sp->spoolfd < 0 ? sp->spoolfd : 0;
}

bool ezi_bld_spool_on(const struct ezfs_builder *b)
{
	const struct bspool *sp = b->spool;

	return sp && sp->spoolfd >= 0;
}

bool ezi_bld_spool_reserve(const struct ezfs_builder *b, uint64_t len,
			   uint64_t *off)
{
	struct bspool *sp = b->spool;

	if (!sp || sp->spoolfd < 0)
		return false;
	/* workers spool in any order: placing reads each at its offset */
	*off = __atomic_fetch_add(&sp->spool_len, len, __ATOMIC_RELAXED);
	return true;
}

int ezi_bld_spool_write(const struct ezfs_builder *b, const void *p, size_t len,
			uint64_t off)
{
	const struct bspool *sp = b->spool;
	int err = ezi_bld_fd_rw(sp->spoolfd, (void *)p, len, off, true);

	return err ? io_error(b, "fragment spool: write", err) : 0;
}

int ezi_bld_spool_read(const struct ezfs_builder *b, void *p, size_t len,
		       uint64_t off)
{
	const struct bspool *sp = b->spool;
	int err = ezi_bld_fd_rw(sp->spoolfd, p, len, off, false);

	return err ? io_error(b, "fragment spool: read", err) : 0;
}

int ezi_bld_frag_spool(const struct ezfs_builder *b, struct bzfile *z)
{
	uint64_t off;
	int err;

	if (!z || !z->frag || !ezi_bld_spool_reserve(b, z->frag_len, &off))
		return 0;
	err = ezi_bld_spool_write(b, z->frag, (size_t)z->frag_len, off);
	if (err)
		return err;
	z->spoff = off;
	free(z->frag);
	z->frag = NULL;
	z->spooled = true;
	return 0;
}

void ezi_bld_spool_close(struct ezfs_builder *b)
{
	struct bspool *sp = b->spool;

	if (sp && sp->spoolfd >= 0)
		close(sp->spoolfd);
	if (sp)
		sp->spoolfd = -1;
}

int ezi_bld_packfile_map(struct ezfs_builder *b, uint64_t cap)
{
	struct bspool *sp = b->spool;
	void *np;

	sp->packfd = ezi_bld_tmpfd(b);
	if (sp->packfd < 0)
		return sp->packfd;
	if (ftruncate(sp->packfd, (off_t)cap))
		return io_error(b, "packed inode: truncate", -errno);
	np = mmap(NULL, (size_t)cap, PROT_READ | PROT_WRITE, MAP_SHARED,
		  sp->packfd, 0);
	if (np == MAP_FAILED)
		return io_error(b, "packed inode: mmap", -errno);
	b->packed = np;
	b->packed_cap = cap;
	b->packed_len = 0;
	return 0;
}

int ezi_bld_packfile_write(const struct ezfs_builder *b, const void *p,
			   size_t len, uint64_t off)
{
	const struct bspool *sp = b->spool;
	int err = ezi_bld_fd_rw(sp->packfd, (void *)p, len, off, true);

	return err ? io_error(b, "packed inode: write", err) : 0;
}

int ezi_bld_packed_read(const struct ezfs_builder *b, void *buf, size_t len,
			uint64_t off)
{
	const struct bspool *sp = b->spool;
	int err;

	if (!sp || sp->packfd < 0) {
		memcpy(buf, b->packed + off, len);
		return 0;
	}
	err = ezi_bld_fd_rw(sp->packfd, buf, len, off, false);
	return err ? io_error(b, "packed inode: read", err) : 0;
}

bool ezi_bld_packed_filebacked(const struct ezfs_builder *b, const uint8_t *mem)
{
	const struct bspool *sp = b->spool;

	return sp && sp->packfd >= 0 && mem && mem == b->packed;
}

void ezi_bld_spool_free(struct ezfs_builder *b)
{
	struct bspool *sp = b->spool;

	if (!sp)
		return;
	ezi_bld_spool_close(b);
	if (sp->packfd >= 0)
		close(sp->packfd);
	free(sp);
	b->spool = NULL;
}
