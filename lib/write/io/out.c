/* SPDX-License-Identifier: MIT */
/*
 * out.c - what the builder puts out, called from every file of lib/write:
 * log lines and progress to the caller's callbacks, and image bytes to the
 * output file or device (zeroing a device's gaps, the final size), and
 * chunk data to the blob (--blobdev).
 */
#define _GNU_SOURCE /* copy_file_range */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "write/internal.h"
#include "format/erofs_fs.h"

void ezi_bld_log(const struct ezfs_builder *b, int level, const char *fmt, ...)
{
	char msg[1024], q[4096];
	va_list ap;

	if (!b->p.log || level > (int)b->p.verbose)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* the parts of a split file fail alike (a file that shrank): say it
	 * once (error lines are rare, and a repeat is always next to it) */
	if (level == EZFS_LOG_ERROR) {
		uint32_t crc = ezi_crc32c(0, msg, strlen(msg)) | 1;

		if (__atomic_exchange_n(&((struct ezfs_builder *)b)->last_err,
					crc, __ATOMIC_RELAXED) == crc)
			return;
	}
	/* names from the source (a tree, a tar archive) may hold newlines:
	 * one message, one line */
	b->p.log(b->p.log_arg, level,
		 ezfs_quote(msg, strlen(msg), q, sizeof(q)));
}

void ezi_bld_progress(struct ezfs_builder *b, int phase, uint64_t items,
		      uint64_t items_total, uint64_t bytes,
		      uint64_t bytes_total)
{
	struct ezfs_build_progress pr = {
		.phase = phase,
		.items = items,
		.items_total = items_total,
		.bytes = bytes,
		.bytes_total = bytes_total,
	};

	if (b->p.progress)
		b->p.progress(b->p.progress_arg, &pr);
}

/* All of len bytes at off, restarted after EINTR; a short transfer that
 * makes no progress is -EIO. */
int ezi_bld_fd_rw(int fd, void *p, size_t len, uint64_t off, bool wr)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = wr ? pwrite(fd, (uint8_t *)p + done, len - done,
					(off_t)(off + done))
			       : pread(fd, (uint8_t *)p + done, len - done,
				       (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

static int too_large(const struct ezfs_builder *b)
{
	ezi_bld_log(b, EZFS_LOG_ERROR,
		    "%s: the image is larger than the device (%llu bytes)",
		    b->out_path, (unsigned long long)b->devsize);
	return -EFBIG;
}

/*
 * A device keeps what it held where the image leaves gaps (a file reads
 * zeros there): zero [b->zeroed, end) before anything is written beyond
 * it, so that every byte below b->zeroed is either written or zero.
 */
static int dev_zero_to(struct ezfs_builder *b, uint64_t off, uint64_t end)
{
	static const uint8_t zeros[65536];
	int err = 0;

	if (end > b->devsize)
		return too_large(b);
	pthread_mutex_lock(&b->devlock);
	while (!err && b->zeroed < off) {
		uint64_t n = off - b->zeroed;

		if (n > sizeof(zeros))
			n = sizeof(zeros);
		err = ezi_bld_fd_rw(b->fd, (void *)zeros, (size_t)n, b->zeroed,
				    true);
		if (!err)
			b->zeroed += n;
	}
	if (!err && b->zeroed < end)
		b->zeroed = end;
	pthread_mutex_unlock(&b->devlock);
	return err;
}

int ezi_bld_pwrite(struct ezfs_builder *b, const void *buf, size_t len,
		   uint64_t off)
{
	int err = 0;

	if (b->device)
		err = dev_zero_to(b, off, off + len);
	if (err == -EFBIG)
		return err;
	if (!err)
		err = ezi_bld_fd_rw(b->fd, (void *)buf, len, off, true);
	if (err)
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: write: %s",
			    b->out_path ? b->out_path : "image",
			    strerror(-err));
	return err;
}

uint64_t ezi_bld_copy_in(struct ezfs_builder *b, int fd, uint64_t from,
			 uint64_t to, uint64_t len)
{
	uint64_t done = 0;

	if (b->device || b->nocopy || fd < 0)
		return 0;
	while (done < len) {
		loff_t in = (loff_t)(from + done), out = (loff_t)(to + done);
		size_t want = len - done < (1u << 30) ? (size_t)(len - done)
						      : (1u << 30);
		ssize_t n = copy_file_range(fd, &in, b->fd, &out, want, 0);

		if (n < 0 && errno == EINTR)
			continue;
		/* across file systems, or one without it: the buffer from
		 * now on (one refused call per file costs more than it
		 * saves) */
		if (n < 0 && (errno == EXDEV || errno == EINVAL ||
			      errno == ENOSYS || errno == EOPNOTSUPP))
			b->nocopy = true;
		if (n <= 0)
			break;
		done += (uint64_t)n;
	}
	return done;
}

int ezi_bld_blob_pwrite(struct ezfs_builder *b, const void *buf, size_t len,
			uint64_t off)
{
	int err = ezi_bld_fd_rw(b->blobfd, (void *)buf, len, off, true);

	if (err)
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: write: %s", b->p.blobdev,
			    strerror(-err));
	return err;
}

int ezi_bld_set_size(struct ezfs_builder *b, uint64_t size)
{
	int err;

	if (b->device) {
		err = dev_zero_to(b, size, size);
		if (err && err != -EFBIG)
			ezi_bld_log(b, EZFS_LOG_ERROR, "%s: write: %s",
				    b->out_path, strerror(-err));
		return err;
	}
	if (!ftruncate(b->fd, (off_t)size))
		return 0;
	err = -errno;
	ezi_bld_log(b, EZFS_LOG_ERROR, "%s: truncate: %s", b->out_path,
		    strerror(errno));
	return err;
}
