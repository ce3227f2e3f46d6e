/* SPDX-License-Identifier: MIT */
/*
 * datasrc.c - where a regular file's bytes come from: its source path
 * (directory scans), or a range of one shared file (tar sources: the
 * archive itself or the spool file holding its data), or for a sparse tar
 * member its runs of data in that file, zeros between them.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "write/internal.h"

int ezi_bld_src_open(const struct ezfs_builder *b, const struct binode *in,
		     struct bsrc *s)
{
	int err;

	s->sparse = NULL;
	s->nsparse = 0;
	s->sfd = -1;
	if (in->olddata) {
		s->fd = b->olddatafd;
		s->own = false;
		s->base = in->dataoff;
		s->len = in->size;
		return 0;
	}
	if (b->datafd >= 0) {
		s->fd = b->datafd;
		s->own = false;
		s->base = in->dataoff;
		s->len = in->size;
		if (in->sparse) {
			/* no plain range to copy: read through pread */
			s->fd = -1;
			s->sfd = b->datafd;
			s->sparse = in->sparse;
			s->nsparse = in->nsparse;
		}
		return 0;
	}
	s->fd = open(in->srcpath, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (s->fd < 0) {
		err = -errno;
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: open: %s", in->srcpath,
			    strerror(errno));
		return err;
	}
	s->own = true;
	s->base = 0;
	s->len = UINT64_MAX;
	return 0;
}

/* Stored bytes [at, at + len) of s->sfd, whole; 0 or -errno (-EIO: the
 * file ended). */
static int read_at(const struct bsrc *s, uint8_t *buf, size_t len, uint64_t at)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(s->sfd, buf + got, len - got,
				  (off_t)(s->base + at + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		got += (size_t)n;
	}
	return 0;
}

/* A sparse member's bytes [off, off + len) (within its size): its runs,
 * zeros between them. */
static ssize_t sparse_pread(const struct bsrc *s, uint8_t *buf, size_t len,
			    uint64_t off)
{
	uint32_t lo = 0, hi = s->nsparse;
	size_t done = 0;

	/* the first run that ends past off */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (s->sparse[mid].off + s->sparse[mid].len <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (done < len) {
		const struct bsparse *r =
			lo < s->nsparse ? &s->sparse[lo] : NULL;
		uint64_t pos = off + done;
		size_t n = len - done;
		int err;

		if (!r || r->off > pos) {
			/* a hole up to the next run */
			if (r && r->off - pos < n)
				n = (size_t)(r->off - pos);
			memset(buf + done, 0, n);
		} else {
			if (r->off + r->len - pos < n)
				n = (size_t)(r->off + r->len - pos);
			err = read_at(s, buf + done, n, r->at + (pos - r->off));
			if (err)
				return err;
			lo++;
		}
		done += n;
	}
	return (ssize_t)done;
}

ssize_t ezi_bld_src_pread(const struct bsrc *s, void *buf, size_t len,
			  uint64_t off)
{
	size_t got = 0;

	if (off >= s->len)
		return 0;
	if (len > s->len - off)
		len = (size_t)(s->len - off);
	if (s->sparse)
		return sparse_pread(s, buf, len, off);
	while (got < len) {
		ssize_t n = pread(s->fd, (uint8_t *)buf + got, len - got,
				  (off_t)(s->base + off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

int ezi_bld_src_check(const struct ezfs_builder *b, const struct binode *in,
		      const struct bsrc *s)
{
	const char *what;
	struct stat st;

	if (!s->own)
		return 0;
	if (fstat(s->fd, &st)) {
		int err = -errno;

		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: stat: %s", in->srcpath,
			    strerror(-err));
		return err;
	}
	if ((uint64_t)st.st_size > in->size)
		what = "grew";
	else if ((uint64_t)st.st_size < in->size)
		what = "shrank";
	else if (st.st_ino != in->ino || st.st_dev != in->dev)
		what = "was replaced";
	else if ((int64_t)((uint64_t)st.st_mtim.tv_sec * 1000000000u +
			   (uint64_t)st.st_mtim.tv_nsec) != in->src_mtime_ns)
		what = "changed";
	else
		return 0;
	ezi_bld_log(b, EZFS_LOG_ERROR, "%s: file %s while building",
		    in->srcpath, what);
	return -EAGAIN;
}

void ezi_bld_src_close(struct bsrc *s)
{
	if (s->own && s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}
