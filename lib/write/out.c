/* SPDX-License-Identifier: MIT */
/*
 * out.c - what the builder puts out, called from every file of lib/write:
 * log lines and progress to the caller's callbacks, and image bytes to the
 * output file or device (zeroing a device's gaps, the final size), and
 * chunk data to the blob (--blobdev).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
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

/* pwrite all of buf at off; 0 or -errno (-EIO for a write of nothing) */
static int write_all(int fd, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
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
		err = write_all(b->fd, zeros, (size_t)n, b->zeroed);
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
		err = write_all(b->fd, buf, len, off);
	if (err)
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: write: %s",
			    b->out_path ? b->out_path : "image",
			    strerror(-err));
	return err;
}

int ezi_bld_blob_pwrite(struct ezfs_builder *b, const void *buf, size_t len,
			uint64_t off)
{
	int err = write_all(b->blobfd, buf, len, off);

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
