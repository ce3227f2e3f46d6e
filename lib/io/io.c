/* SPDX-License-Identifier: MIT */
/* io.c - where image bytes come from: a file, a memory buffer, custom ops. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/fs.h>

#include <stdio.h>

#include "io/android.h"
#include "io/io.h"
#include "io/verity.h"

#ifndef EUCLEAN
#define EUCLEAN 117
#endif
#ifndef EMEDIUMTYPE
#define EMEDIUMTYPE 124
#endif

struct file_io {
	int fd;
};

static ssize_t file_pread(void *arg, void *buf, size_t len, uint64_t off)
{
	struct file_io *f = arg;
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(f->fd, (char *)buf + done, len - done,
				  (off_t)(off + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static void file_close(void *arg)
{
	struct file_io *f = arg;

	close(f->fd);
	free(f);
}

static const struct ezfs_io_ops file_ops = {
	.pread = file_pread,
	.close = file_close,
};

struct mem_io {
	const uint8_t *buf;
	size_t len;
};

static ssize_t mem_pread(void *arg, void *buf, size_t len, uint64_t off)
{
	struct mem_io *m = arg;

	if (off >= m->len)
		return 0;
	if (len > m->len - off)
		len = m->len - (size_t)off;
	memcpy(buf, m->buf + off, len);
	return (ssize_t)len;
}

static const struct ezfs_io_ops mem_ops = {
	.pread = mem_pread,
	.close = free,
};

/* A container that could not be read: its reason, told at the first read
 * (when the image's logger is there). */
struct failed_io {
	int err;
	char msg[512];
	/* a super image opened whole: its bytes, for reads from an offset
	 * past its reserved first 4096 bytes (--offset); else ops NULL */
	struct ezfs_io whole;
};

static ssize_t failed_pread(void *arg, void *buf, size_t len, uint64_t off)
{
	const struct failed_io *f = arg;

	if (f->whole.ops)
		return f->whole.ops->pread(f->whole.arg, buf, len, off);
	return f->err;
}

static void failed_close(void *arg)
{
	struct failed_io *f = arg;

	ezi_io_close(&f->whole);
	free(f);
}

static const struct ezfs_io_ops failed_ops = {
	.pread = failed_pread,
	.close = failed_close,
};

#define LP_RESERVED_BYTES 4096

/* The open's logger: keeps the first error line. */
static void keep_first(void *arg, int level, const char *msg)
{
	struct failed_io *f = arg;

	if (level == EZFS_LOG_ERROR && !f->msg[0])
		snprintf(f->msg, sizeof(f->msg), "%s", msg);
}

/* path as a plain file or block device, nothing expanded */
static int open_raw(const char *path, struct ezfs_io *io)
{
	struct file_io *f;
	struct stat st;
	uint64_t size;
	int fd;

	memset(io, 0, sizeof(*io));
	/* O_NONBLOCK: a FIFO without a writer must not hang the open */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || fcntl(fd, F_SETFL, 0) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &size) < 0) {
			int err = -errno;
			close(fd);
			return err;
		}
	} else if (S_ISREG(st.st_mode)) {
		size = (uint64_t)st.st_size;
	} else {
		close(fd);
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
		return S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) ? -ESPIPE
								    : -ENOTBLK;
	}
	f = malloc(sizeof(*f));
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	f->fd = fd;
	io->ops = &file_ops;
	io->arg = f;
	io->size = size;
	return 0;
}

int ezi_io_open_mem(const void *buf, size_t len, struct ezfs_io *io)
{
	struct mem_io *m = malloc(sizeof(*m));

	memset(io, 0, sizeof(*io));
	if (!m)
		return -ENOMEM;
	m->buf = buf;
	m->len = len;
	io->ops = &mem_ops;
	io->arg = m;
	io->size = len;
	return 0;
}

void ezi_io_close(struct ezfs_io *io)
{
	/* first: the tree's thread reads through the ops; the source,
	 * closed next, may still use the tree (a remote source records
	 * which blocks of its cache were verified) */
	ezi_verity_quiesce(io->verity);
	if (io->ops && io->ops->close)
		io->ops->close(io->arg);
	ezfs_verity_free(io->verity);
	io->verity = NULL;
	io->ops = NULL;
	io->arg = NULL;
}

int ezi_io_local(const struct ezfs_io *io)
{
	return io->ops == &file_ops || io->ops == &mem_ops;
}

/* The bytes [off, off + len) of an in-memory image in place, else NULL
 * (the caller then reads them with ezi_io_read). */
const void *ezi_io_map(const struct ezfs_io *io, size_t len, uint64_t off)
{
	const struct mem_io *m = io->arg;

	if (io->ops != &mem_ops || off > io->size || len > io->size - off ||
	    io->base + off > m->len || len > m->len - (io->base + off))
		return NULL;
	/* a block that fails: NULL, and the read that follows fails too */
	if (io->verity && ezi_verity_io_check_mem(io, m->buf + io->base,
						  m->len - io->base, len, off))
		return NULL;
	return m->buf + io->base + off;
}

/* Ask for [off, off + len) of a file image without waiting for it. */
void ezi_io_willneed(const struct ezfs_io *io, uint64_t off, uint64_t len)
{
	const struct file_io *f = io->arg;

	if (io->ops != &file_ops || !len || off > io->size ||
	    len > io->size - off)
		return;
	(void)posix_fadvise(f->fd, (off_t)(io->base + off), (off_t)len,
			    POSIX_FADV_WILLNEED);
}

void ezi_io_hint(const struct ezfs_io *io, uint64_t off, uint64_t len,
		 unsigned flags)
{
	if (!len || off >= io->size)
		return;
	if (len > io->size - off)
		len = io->size - off;
	if (io->hint)
		io->hint(io->arg, io->base + off, len, flags);
	else if (flags & EZFS_HINT_DATA)
		ezi_io_willneed(io, off, len);
}

/* Read exactly len bytes at image offset off. A range past the end of the
 * image is corruption (something in the image pointed there). */
int ezi_io_read(const struct ezfs_io *io, void *buf, size_t len, uint64_t off)
{
	ssize_t n;

	if (io->ops == &failed_ops) {
		const struct failed_io *f = io->arg;

		if (!f->whole.ops || io->base < LP_RESERVED_BYTES) {
			ezi_logf(io->lg, EZFS_LOG_ERROR, "%s", f->msg);
			return f->err;
		}
	}
	if (off > io->size || len > io->size - off) {
		ezi_logf(io->lg, EZFS_LOG_ERROR,
			 "read of %zu bytes at %llu is beyond the end of "
			 "the image (%llu bytes)",
			 len, (unsigned long long)off,
			 (unsigned long long)io->size);
		return -EUCLEAN;
	}
	if (!len)
		return 0;
	n = io->ops->pread(io->arg, buf, len, io->base + off);
	if (n < 0) {
		ezi_logf(io->lg, EZFS_LOG_ERROR,
			 "read of %zu bytes at %llu failed: %s", len,
			 (unsigned long long)off, strerror((int)-n));
		return n == -ENOMEM ? -ENOMEM : -EIO;
	}
	if ((size_t)n != len) {
		ezi_logf(io->lg, EZFS_LOG_ERROR,
			 "short read at %llu: %zd of %zu bytes",
			 (unsigned long long)off, n, len);
		return -EIO;
	}
	return io->verity ? ezi_verity_io_check(io, buf, len, off) : 0;
}

/* The name of piece k of the split set whose first file is path (which
 * ends in ".0"); NULL on -ENOMEM. */
static char *piece_name(const char *path, size_t stem, unsigned k)
{
	size_t len = stem + 12;
	char *s = malloc(len);

	if (s)
		snprintf(s, len, "%.*s%u", (int)stem, path, k);
	return s;
}

/* Path as a file, expanded when it is a sparse image or the first file of
 * a split sparse set. */
static int open_expanded(const char *path, const struct ezfs_logger *lg,
			 struct ezfs_io *io)
{
	struct ezfs_io *pieces = NULL;
	char **names = NULL;
	size_t len = strlen(path);
	unsigned n = 1, k;
	int err;

	err = open_raw(path, io);
	if (err)
		return err;
	err = ezi_sparse_probe(io);
	if (err <= 0) {
		if (err)
			ezi_io_close(io);
		return err;
	}
	pieces = calloc(EZI_SPARSE_MAX_PIECES, sizeof(*pieces));
	names = calloc(EZI_SPARSE_MAX_PIECES, sizeof(*names));
	if (!pieces || !names) {
		ezi_io_close(io);
		free(pieces);
		free(names);
		return -ENOMEM;
	}
	pieces[0] = *io;
	names[0] = strdup(path);
	if (!names[0]) {
		err = -ENOMEM;
		goto fail;
	}
	/* NAME.0: the first of a split set NAME.0, NAME.1... */
	if (len >= 2 && !strcmp(path + len - 2, ".0")) {
		for (; n < EZI_SPARSE_MAX_PIECES; n++) {
			names[n] = piece_name(path, len - 1, n);
			if (!names[n]) {
				err = -ENOMEM;
				goto fail;
			}
			err = open_raw(names[n], &pieces[n]);
			if (err == -ENOENT) {
				free(names[n]);
				names[n] = NULL;
				break;
			}
			if (!err) {
				err = ezi_sparse_probe(&pieces[n]);
				if (err > 0)
					continue;
				ezi_io_close(&pieces[n]);
			}
			if (!err) {
				ezi_logf(lg, EZFS_LOG_ERROR,
					 "%s: not a sparse image, but it "
					 "follows %s",
					 names[n], names[0]);
				err = -EUCLEAN;
			} else {
				ezi_logf(lg, EZFS_LOG_ERROR, "%s: %s", names[n],
					 strerror(-err));
			}
			goto fail;
		}
	}
	err = ezi_sparse_open(pieces, n, (const char *const *)names, lg, io);
	n = 0; /* taken by ezi_sparse_open */
	goto out;
fail:
	for (k = 0; k < n; k++)
		ezi_io_close(&pieces[k]);
out:
	if (names)
		for (k = 0; k < EZI_SPARSE_MAX_PIECES; k++)
			free(names[k]);
	free(names);
	free(pieces);
	return err;
}

int ezi_io_open_path(const char *path, const struct ezfs_logger *lg,
		     struct ezfs_io *io)
{
	const char *colon = strrchr(path, ':');
	struct ezfs_io super;
	char *prefix;
	int err, e2;

	err = open_expanded(path, lg, io);
	if ((err != -ENOENT && err != -ENOTDIR) || !colon || colon == path ||
	    !colon[1])
		return err;
	/* SUPER:PART, when no file has the whole name */
	prefix = strndup(path, (size_t)(colon - path));
	if (!prefix)
		return -ENOMEM;
	e2 = open_expanded(prefix, lg, &super);
	free(prefix);
	if (e2)
		return e2 == -EUCLEAN || e2 == -EOPNOTSUPP || e2 == -ENOMEM
			       ? e2
			       : err;
	e2 = ezi_lp_probe(&super);
	if (e2 <= 0) {
		ezi_io_close(&super);
		return e2 ? e2 : err;
	}
	return ezi_lp_open_partition(&super, colon + 1, lg, io);
}

int ezi_io_open_file(const char *path, struct ezfs_io *io)
{
	struct failed_io *f = calloc(1, sizeof(*f));
	struct ezfs_logger lg = { keep_first, f, 0 };
	int err;

	if (!f)
		return -ENOMEM;
	err = ezi_io_open_path(path, &lg, io);
	if (!err && ezi_lp_probe(io) > 0) {
		/* never an EROFS image at its start: say what it is */
		snprintf(f->msg, sizeof(f->msg),
			 "an Android super image: name one of its partitions "
			 "as %.200s:NAME ('ezfs lpinfo' lists them)",
			 path);
		f->err = -EMEDIUMTYPE;
		f->whole = *io;
		memset(io, 0, sizeof(*io));
		io->ops = &failed_ops;
		io->arg = f;
		io->size = f->whole.size;
		return 0;
	}
	if (!err || !f->msg[0]) {
		free(f);
		return err;
	}
	f->err = err;
	memset(io, 0, sizeof(*io));
	io->ops = &failed_ops;
	io->arg = f;
	io->size = UINT64_MAX / 2;
	return 0;
}
