/* SPDX-License-Identifier: MIT */
/* builder.c - the public builder API: params, temp file, superblock. */
#define _GNU_SOURCE /* O_TMPFILE */
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "build/internal.h"
#include "format/erofs_fs.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void bld_log(const struct ezfs_builder *b, int level, const char *fmt, ...)
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
		uint32_t crc = ezfs_crc32c(0, msg, strlen(msg)) | 1;

		if (__atomic_exchange_n(&((struct ezfs_builder *)b)->last_err,
					crc, __ATOMIC_RELAXED) == crc)
			return;
	}
	/* names from the source (a tree, a tar archive) may hold newlines:
	 * one message, one line */
	b->p.log(b->p.log_arg, level, ezfs_quote(msg, strlen(msg), q, sizeof(q)));
}

void bld_progress(struct ezfs_builder *b, int phase, uint64_t items,
		  uint64_t items_total, uint64_t bytes, uint64_t bytes_total)
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

int bld_pwrite(struct ezfs_builder *b, const void *buf, size_t len,
	       uint64_t off)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = pwrite(b->fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int err = n < 0 ? -errno : -EIO;

			bld_log(b, EZFS_LOG_ERROR, "%s: write: %s",
				b->out_path ? b->out_path : "image",
				strerror(-err));
			return err;
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

void ezfs_build_params_init(struct ezfs_build_params *p)
{
	memset(p, 0, sizeof(*p));
	p->blksz = 4096;
	p->force_uid = -1;
	p->force_gid = -1;
	p->xattr_tolerance = 2;
	p->alg = -1;
	p->level = -1;
}

int ezfs_builder_new(const struct ezfs_build_params *p, ezfs_builder **out)
{
	struct ezfs_builder *b;
	size_t i;
	int err;

	*out = NULL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->p = *p;
	b->fd = -1;
	b->datafd = -1;
	b->blksz = p->blksz ? p->blksz : 4096;
	if (b->blksz < 512 || b->blksz > 4096 || (b->blksz & (b->blksz - 1))) {
		bld_log(b, EZFS_LOG_ERROR,
			"block size %u: must be a power of two in 512..4096",
			b->blksz);
		free(b);
		return -EINVAL;
	}
	while ((1u << b->blkszbits) < b->blksz)
		b->blkszbits++;
	if ((p->flags & EZFS_BUILD_FORCE_COMPACT) &&
	    (p->flags & EZFS_BUILD_FORCE_EXTENDED)) {
		bld_log(b, EZFS_LOG_ERROR,
			"force-inode-compact and force-inode-extended exclude each other");
		free(b);
		return -EINVAL;
	}
	if (p->chunksize && (p->chunksize < b->blksz ||
			     (p->chunksize & (p->chunksize - 1)) ||
			     p->chunksize > (1u << 30))) {
		bld_log(b, EZFS_LOG_ERROR,
			"chunk size %u: must be a power of two, at least the block size, at most 1 GiB",
			p->chunksize);
		free(b);
		return -EINVAL;
	}
	err = bld_zalgs_init(b);
	if (err) {
		ezfs_builder_free(b);
		return err;
	}
	if (p->has_timestamp) {
		b->epoch = p->timestamp;
	} else {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		b->epoch = ts.tv_sec;
	}
	if (p->has_uuid) {
		memcpy(b->uuid, p->uuid, 16);
	} else {
		if (getrandom(b->uuid, 16, 0) != 16) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			memcpy(b->uuid, &ts, sizeof(ts) < 16 ? sizeof(ts) : 16);
		}
		b->uuid[6] = (b->uuid[6] & 0x0F) | 0x40;	/* version 4 */
		b->uuid[8] = (b->uuid[8] & 0x3F) | 0x80;
	}
	if (p->n_exclude_regex) {
		regex_t *re = calloc(p->n_exclude_regex, sizeof(*re));

		if (!re) {
			free(b);
			return -ENOMEM;
		}
		b->regex = re;
		for (i = 0; i < p->n_exclude_regex; i++) {
			if (regcomp(&re[i], p->exclude_regex[i],
				    REG_EXTENDED | REG_NOSUB)) {
				bld_log(b, EZFS_LOG_ERROR, "invalid regex '%s'",
					p->exclude_regex[i]);
				ezfs_builder_free(b);
				return -EINVAL;
			}
			b->nregex++;
		}
	}
	b->t0 = now_s();
	*out = b;
	return 0;
}

void ezfs_builder_free(ezfs_builder *b)
{
	size_t i;

	if (!b)
		return;
	bld_free_inodes(b);
	for (i = 0; i < b->nregex; i++)
		regfree(&((regex_t *)b->regex)[i]);
	free(b->regex);
	bld_zalgs_free(b);
	free(b->shared);
	if (b->fd >= 0)
		close(b->fd);
	if (b->datafd >= 0)
		close(b->datafd);
	free(b);
}

/* After the tree is read: place the config records and shared xattrs. */
static int scanned(ezfs_builder *b)
{
	/* config records follow the superblock; shared xattrs follow them */
	if (b->big_pcluster)
		b->cfgs_len = bld_cfgs_encode(b, NULL);
	b->shared_start = (EROFS_SUPER_OFFSET + EROFS_SB_BASE_SIZE +
			   b->cfgs_len + 3) & ~3u;
	return bld_xattrs_share(b);
}

int ezfs_builder_scan(ezfs_builder *b, const char *srcdir)
{
	int err;

	if (b->scanned)
		return -EINVAL;
	b->scanned = true;
	err = bld_scan(b, srcdir);
	return err ? err : scanned(b);
}

int ezfs_builder_scan_tar(ezfs_builder *b, const char *path,
			  const char *tmpdir)
{
	int err;

	if (b->scanned)
		return -EINVAL;
	b->scanned = true;
	err = bld_scan_tar(b, path, tmpdir);
	return err ? err : scanned(b);
}

void ezfs_builder_stats(const ezfs_builder *b, struct ezfs_build_stats *st)
{
	*st = b->st;
}

/* Make a temporary file name beside path: DIR/.NAME.XXXXXX */
static char *temp_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t dlen = slash ? (size_t)(slash - path) + 1 : 0;
	char *t = malloc(strlen(path) + 16);

	if (!t)
		return NULL;
	memcpy(t, path, dlen);
	sprintf(t + dlen, ".%s.XXXXXX", path + dlen);
	return t;
}

/*
 * Open the output: an unnamed O_TMPFILE file in path's directory, so that
 * nothing is left behind whatever happens to the process; where the
 * filesystem (or a missing /proc, needed to link it) rules that out, a
 * named temporary file beside path (*tmp).
 */
static int open_output(struct ezfs_builder *b, const char *path, char **tmp)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int err;

	*tmp = NULL;
	dir = slash ? strndup(path, (size_t)(slash - path + 1)) : strdup(".");
	if (!dir)
		return -ENOMEM;
	if (!access("/proc/self/fd", X_OK))
		b->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	free(dir);
	if (b->fd >= 0)
		return 0;
	*tmp = temp_name(path);
	if (!*tmp)
		return -ENOMEM;
	b->fd = mkstemp(*tmp);
	if (b->fd >= 0)
		return 0;
	err = -errno;
	bld_log(b, EZFS_LOG_ERROR, "%s: cannot create: %s", *tmp,
		strerror(errno));
	return err;
}

/* Give the complete O_TMPFILE output its name: path, or a temporary name
 * (*tmp) renamed over an existing path. */
static int link_output(struct ezfs_builder *b, const char *path, char **tmp)
{
	char proc[64];
	unsigned i;
	int err;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", b->fd);
	if (!linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW))
		return 0;
	if (errno != EEXIST)
		goto fail;
	*tmp = temp_name(path);
	if (!*tmp)
		return -ENOMEM;
	for (i = 0; i < 100; i++) {
		static const char az[] = "abcdefghijklmnopqrstuvwxyz0123456789";
		char *x = *tmp + strlen(*tmp) - 6;
		uint8_t rnd[6];
		int j;

		if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
			memset(rnd, (int)i, sizeof(rnd));
		for (j = 0; j < 6; j++)
			x[j] = az[rnd[j] % (sizeof(az) - 1)];
		if (!linkat(AT_FDCWD, proc, AT_FDCWD, *tmp, AT_SYMLINK_FOLLOW))
			return 0;
		if (errno != EEXIST)
			break;
	}
	err = -errno;
	free(*tmp);
	*tmp = NULL;
	goto out;
fail:
	err = -errno;
out:
	bld_log(b, EZFS_LOG_ERROR, "%s: cannot link: %s", path,
		strerror(-err));
	return err;
}

int ezfs_builder_write(ezfs_builder *b, const char *path)
{
	bool named = false;
	char *tmp;
	int err;

	if (!b->scanned || b->fd >= 0)
		return -EINVAL;
	b->out_path = path;
	err = open_output(b, path, &tmp);
	if (err) {
		free(tmp);
		b->out_path = NULL;
		return err;
	}
	err = bld_write_data(b);
	if (!err)
		err = bld_write_meta(b);
	if (!err && fchmod(b->fd, 0644))
		err = -errno;
	if (!err && !(b->p.flags & EZFS_BUILD_NO_FSYNC) && fsync(b->fd)) {
		err = -errno;
		bld_log(b, EZFS_LOG_ERROR, "%s: fsync: %s", path,
			strerror(errno));
	}
	if (!err && !tmp) {
		err = link_output(b, path, &tmp);
		named = !err && !tmp;
	}
	if (close(b->fd) && !err) {
		err = -errno;
		bld_log(b, EZFS_LOG_ERROR, "%s: close: %s", path,
			strerror(errno));
	}
	b->fd = -1;
	b->out_path = NULL;
	if (!err && tmp && rename(tmp, path)) {
		err = -errno;
		bld_log(b, EZFS_LOG_ERROR, "%s: rename: %s", path,
			strerror(errno));
	}
	if (err && tmp)
		unlink(tmp);
	if (err && named)
		unlink(path);
	free(tmp);
	b->st.seconds = now_s() - b->t0;
	return err;
}
