/* SPDX-License-Identifier: MIT */
/*
 * datasrc.c - where a regular file's bytes come from: its source path
 * (directory scans), or a range of one shared file (tar sources: the
 * archive itself or the spool file holding its data).
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

	if (b->datafd >= 0) {
		s->fd = b->datafd;
		s->own = false;
		s->base = in->dataoff;
		s->len = in->size;
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

ssize_t ezi_bld_src_pread(const struct bsrc *s, void *buf, size_t len,
			  uint64_t off)
{
	size_t got = 0;

	if (off >= s->len)
		return 0;
	if (len > s->len - off)
		len = (size_t)(s->len - off);
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
	else if ((int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec !=
		 in->src_mtime_ns)
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
