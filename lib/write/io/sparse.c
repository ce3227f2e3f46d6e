/* SPDX-License-Identifier: MIT */
/*
 * sparse.c - --sparse (EZFS_BUILD_SPARSE): the finished raw image in b->fd
 * becomes an Android sparse image (format 1.0, 28-byte header, 12-byte
 * chunk headers, 4096-byte blocks): runs of all-zero blocks are DONT_CARE
 * chunks, the rest RAW chunks; no FILL and no CRC32 chunks, and no image
 * checksum. An image whose size is no multiple of 4096 (block sizes below
 * 4096) gets sparse blocks of its own block size, so that simg2img gives
 * back exactly its bytes.
 *
 * The sparse file is written beside the raw one: when b->fd is an
 * unnamed O_TMPFILE file, into a new one in the same folder that then
 * takes b->fd's number (dup2), so that the builder names it as it would
 * have named the raw image; else (a named temporary file) into an
 * unnamed scratch file whose bytes are then copied back over b->fd.
 */
#define _GNU_SOURCE /* O_TMPFILE, dup3 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "write/internal.h"

#define SPARSE_RAW	 0xCAC1u
#define SPARSE_DONT_CARE 0xCAC3u

struct sparse_out {
	int fd;
	uint64_t pos;
	uint32_t chunks;
};

static void sp_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void sp_le32(uint8_t *p, uint32_t v)
{
	sp_le16(p, (uint16_t)v);
	sp_le16(p + 2, (uint16_t)(v >> 16));
}

static int sp_chunk(struct sparse_out *o, uint16_t type, uint32_t blocks,
		    uint32_t data)
{
	uint8_t h[12];
	int err;

	sp_le16(h, type);
	sp_le16(h + 2, 0);
	sp_le32(h + 4, blocks);
	sp_le32(h + 8, 12 + data);
	err = ezi_bld_fd_rw(o->fd, h, sizeof(h), o->pos, true);
	if (!err) {
		o->pos += sizeof(h);
		o->chunks++;
	}
	return err;
}

static int sp_zero(const uint8_t *p, size_t n)
{
	/* each byte equal to the next, and the first zero */
	return !p[0] && !memcmp(p, p + 1, n - 1);
}

/* Write the sparse form of the raw image (size bytes in rawfd) to o. */
static int sp_convert(int rawfd, uint64_t size, struct sparse_out *o)
{
	const size_t bufblks = 256;
	uint32_t blk = 4096;
	uint64_t blocks, i = 0;
	uint8_t *buf, hdr[28];
	int err = 0;

	while (blk > 512 && size % blk)
		blk /= 2;
	blocks = (size + blk - 1) / blk;
	buf = malloc(bufblks * blk);

	if (!buf)
		return -ENOMEM;
	if (blocks > UINT32_MAX) {
		free(buf);
		return -EFBIG;
	}
	o->pos = sizeof(hdr); /* the header last, with the chunk count */
	while (!err && i < blocks) {
		size_t n =
			blocks - i < bufblks ? (size_t)(blocks - i) : bufblks;
		size_t want = n * blk, got = 0, k = 0;

		if (i * blk + want > size)
			want = (size_t)(size - i * blk);
		memset(buf, 0, n * blk);
		while (got < want) {
			ssize_t r = pread(rawfd, buf + got, want - got,
					  (off_t)(i * blk + got));

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				err = r < 0 ? -errno : -EIO;
				break;
			}
			got += (size_t)r;
		}
		/* one chunk per run of like blocks within the buffer; a run
		 * cut by the buffer's end goes on as a second chunk */
		while (!err && k < n) {
			int zero = sp_zero(buf + k * blk, blk);
			size_t e = k + 1;

			while (e < n && sp_zero(buf + e * blk, blk) == zero)
				e++;
			if (zero) {
				err = sp_chunk(o, SPARSE_DONT_CARE,
					       (uint32_t)(e - k), 0);
			} else {
				uint32_t len = (uint32_t)((e - k) * blk);

				err = sp_chunk(o, SPARSE_RAW, (uint32_t)(e - k),
					       len);
				if (!err)
					err = ezi_bld_fd_rw(o->fd,
							    buf + k * blk, len,
							    o->pos, true);
				o->pos += len;
			}
			k = e;
		}
		i += n;
	}
	free(buf);
	if (err)
		return err;
	sp_le32(hdr, 0xed26ff3au);
	sp_le16(hdr + 4, 1); /* major */
	sp_le16(hdr + 6, 0); /* minor */
	sp_le16(hdr + 8, 28);
	sp_le16(hdr + 10, 12);
	sp_le32(hdr + 12, blk);
	sp_le32(hdr + 16, (uint32_t)blocks);
	sp_le32(hdr + 20, o->chunks);
	sp_le32(hdr + 24, 0); /* no image checksum */
	err = ezi_bld_fd_rw(o->fd, hdr, sizeof(hdr), 0, true);
	if (!err && ftruncate(o->fd, (off_t)o->pos))
		err = -errno;
	return err;
}

/* Copy len bytes of src (from 0) over dst (from 0). */
static int sp_copy_back(int src, int dst, uint64_t len)
{
	uint8_t *buf = malloc(1u << 20);
	uint64_t off = 0;
	int err = 0;

	if (!buf)
		return -ENOMEM;
	while (!err && off < len) {
		size_t n = len - off < (1u << 20) ? (size_t)(len - off)
						  : (1u << 20);
		ssize_t r = pread(src, buf, n, (off_t)off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			err = r < 0 ? -errno : -EIO;
			break;
		}
		err = ezi_bld_fd_rw(dst, buf, (size_t)r, off, true);
		off += (uint64_t)r;
	}
	free(buf);
	if (!err && ftruncate(dst, (off_t)len))
		err = -errno;
	return err;
}

int ezi_bld_sparse(struct ezfs_builder *b)
{
	struct sparse_out o = { .fd = -1 };
	const char *name = b->out_path ? b->out_path : "image";
	struct stat st;
	char proc[64], dir[4096];
	ssize_t n;
	int err;

	if (b->device) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "%s: --sparse: only for image files, not block "
			    "devices",
			    name);
		return -EINVAL;
	}
	if (fstat(b->fd, &st)) {
		err = -errno;
		goto fail;
	}
	/* the folder of an unnamed O_TMPFILE file: its /proc link reads
	 * "DIR/#INO (deleted)" */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", b->fd);
	n = st.st_nlink ? -1 : readlink(proc, dir, sizeof(dir) - 1);
	if (n > 0) {
		char *slash;

		dir[n] = '\0';
		slash = strrchr(dir, '/');
		if (slash) {
			slash[slash == dir] = '\0';
			o.fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC,
				    st.st_mode & 07777);
		}
	}
	if (o.fd >= 0) {
		err = sp_convert(b->fd, (uint64_t)st.st_size, &o);
		if (!err && dup3(o.fd, b->fd, O_CLOEXEC) < 0)
			err = -errno;
		close(o.fd);
		if (err)
			goto fail;
		return 0;
	}
	o.fd = open(".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (o.fd < 0) {
		FILE *f = tmpfile();

		o.fd = f ? dup(fileno(f)) : -1;
		if (f)
			fclose(f);
	}
	if (o.fd < 0) {
		err = -errno;
		goto fail;
	}
	err = sp_convert(b->fd, (uint64_t)st.st_size, &o);
	if (!err)
		err = sp_copy_back(o.fd, b->fd, o.pos);
	close(o.fd);
	if (!err)
		return 0;
fail:
	ezi_bld_log(b, EZFS_LOG_ERROR, "%s: --sparse: %s", name,
		    strerror(-err));
	return err;
}
