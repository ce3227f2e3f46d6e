/* SPDX-License-Identifier: MIT */
/*
 * tails.c - the inline bytes of each unit (a flat file's or a symlink's
 * tail, ztailpacking's compressed tail) from the data pass, which makes
 * them, to the metadata pass, which puts them after their inode. They
 * wait in an unlinked temporary file, appended through a buffer, so that
 * what stays in memory per file is its record: held in memory they were
 * 11 MiB per 16,000 files of a source tree, which made the peak grow
 * with the tree (docs/mkfs.md, Memory).
 *
 * Only the writer thread keeps and reads tails: no lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "write/internal.h"

#define TBUF (256u << 10)

struct btails {
	int fd;	      /* the temporary file; -1 until the buffer fills */
	uint8_t *buf; /* the bytes from base on, not yet in the file */
	size_t used;
	uint64_t base;
};

static int tails_err(const struct ezfs_builder *b, const char *what, int err)
{
	ezi_bld_log(b, EZFS_LOG_ERROR, "inline tails: temporary file: %s: %s",
		    what, strerror(-err));
	return err;
}

int ezi_bld_tail_keep(struct ezfs_builder *b, struct binode *in, const void *p,
		      uint32_t len)
{
	struct btails *t = b->tails;
	int err;

	if (!len)
		return 0;
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return -ENOMEM;
		t->fd = -1;
		t->buf = malloc(TBUF);
		b->tails = t;
		if (!t->buf)
			return -ENOMEM;
	}
	if (t->used + len > TBUF) {
		if (t->fd < 0) {
			t->fd = ezi_bld_tmpfd(b); /* logged */
			if (t->fd < 0)
				return t->fd;
		}
		err = ezi_bld_fd_rw(t->fd, t->buf, t->used, t->base, true);
		if (err)
			return tails_err(b, "write", err);
		t->base += t->used;
		t->used = 0;
	}
	/* a tail is below one block, TBUF at least 4 blocks of 64 KiB */
	memcpy(t->buf + t->used, p, len);
	in->tailoff = t->base + t->used;
	t->used += len;
	return 0;
}

int ezi_bld_tail_read(const struct ezfs_builder *b, const struct binode *in,
		      uint8_t *dst, uint32_t len)
{
	const struct btails *t = b->tails;
	int err;

	if (!len)
		return 0;
	if (!t) /* nothing was kept: a bug of the caller */
		return tails_err(b, "read", -EIO);
	/* whole in the buffer, or whole in the file (flushed whole) */
	if (in->tailoff >= t->base) {
		memcpy(dst, t->buf + (in->tailoff - t->base), len);
		return 0;
	}
	err = ezi_bld_fd_rw(t->fd, dst, len, in->tailoff, false);
	return err ? tails_err(b, "read", err) : 0;
}

void ezi_bld_tails_free(struct ezfs_builder *b)
{
	struct btails *t = b->tails;

	if (!t)
		return;
	if (t->fd >= 0)
		close(t->fd);
	free(t->buf);
	free(t);
	b->tails = NULL;
}
