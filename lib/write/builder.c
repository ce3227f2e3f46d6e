/* SPDX-License-Identifier: MIT */
/* builder.c - the public builder API: params, temp file, superblock. */
#define _GNU_SOURCE /* O_TMPFILE */
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "write/internal.h"
#include "format/erofs_fs.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void ezfs_build_params_init(struct ezfs_build_params *p)
{
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
	p->blksz = 4096;
	p->force_uid = -1;
	p->force_gid = -1;
	p->xattr_tolerance = 2;
	p->alg = -1;
	p->level = -1;
}

/* tar_index and blobdev: what they exclude and need (-EINVAL, logged) */
static int devices_check(struct ezfs_builder *b)
{
	const struct ezfs_build_params *p = &b->p;
	const char *why = NULL;

	if (p->tar_index && (p->alg >= 0 || p->n_more_algs))
		why = "a tar index stores no file data: no compression";
	else if (p->tar_index && p->chunksize)
		why = "a tar index chooses its own chunk sizes: no chunk size";
	else if (p->tar_index && p->blobdev)
		why = "a tar index has the tar as its device: no blob device";
	else if (p->blobdev && !p->chunksize)
		why = "a blob device takes chunk data: it needs a chunk size";
	else if (p->blobdev && !*p->blobdev)
		why = "the blob device has an empty name";
	if (!why)
		return 0;
	ezi_bld_log(b, EZFS_LOG_ERROR, "%s", why);
	return -EINVAL;
}

int ezfs_builder_new(const struct ezfs_build_params *p, ezfs_builder **out)
{
	struct ezfs_build_params given;
	struct ezfs_builder *b;
	size_t i;
	int err;

	*out = NULL;
	ezfs_build_params_init(&given);
	if (p) {
		/* an older caller's struct is a prefix of ours */
		if (!p->size || p->size > sizeof(given))
			return -EINVAL;
		memcpy(&given, p, p->size);
	}
	p = &given;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->p = *p;
	p = &b->p;
	b->fd = -1;
	b->datafd = -1;
	b->blobfd = -1;
	b->blksz = p->blksz ? p->blksz : 4096;
	if (b->blksz < 512 || b->blksz > 4096 || (b->blksz & (b->blksz - 1))) {
		ezi_bld_log(
			b, EZFS_LOG_ERROR,
			"block size %u: must be a power of two in 512..4096",
			b->blksz);
		free(b);
		return -EINVAL;
	}
	while ((1u << b->blkszbits) < b->blksz)
		b->blkszbits++;
	if ((p->flags & EZFS_BUILD_FORCE_COMPACT) &&
	    (p->flags & EZFS_BUILD_FORCE_EXTENDED)) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "force-inode-compact and force-inode-extended "
			    "exclude each other");
		free(b);
		return -EINVAL;
	}
	if (p->chunksize &&
	    (p->chunksize < b->blksz || (p->chunksize & (p->chunksize - 1)) ||
	     p->chunksize > (1u << 30))) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "chunk size %u: must be a power of two, at least "
			    "the block size, at most 1 GiB",
			    p->chunksize);
		free(b);
		return -EINVAL;
	}
	err = devices_check(b);
	if (!err)
		err = ezi_bld_zalgs_init(b);
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
		b->uuid[6] = (b->uuid[6] & 0x0F) | 0x40; /* version 4 */
		b->uuid[8] = (b->uuid[8] & 0x3F) | 0x80;
	}
	if (p->n_exclude_regex) {
		regex_t *re = calloc(p->n_exclude_regex, sizeof(*re));

		if (!re) {
			ezfs_builder_free(b);
			return -ENOMEM;
		}
		b->regex = re;
		for (i = 0; i < p->n_exclude_regex; i++) {
			if (regcomp(&re[i], p->exclude_regex[i],
				    REG_EXTENDED | REG_NOSUB)) {
				ezi_bld_log(b, EZFS_LOG_ERROR,
					    "invalid regex '%s'",
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
	ezi_bld_free_inodes(b);
	ezi_bld_tails_free(b);
	for (i = 0; i < b->nregex; i++)
		regfree(&((regex_t *)b->regex)[i]);
	free(b->regex);
	ezi_bld_zalgs_free(b);
	free(b->shared);
	if (b->fd >= 0)
		close(b->fd);
	if (b->datafd >= 0)
		close(b->datafd);
	if (b->blobfd >= 0)
		close(b->blobfd);
	free(b->rdevs);
	free(b);
}

/* After the tree is read: place the config records and shared xattrs. */
static int scanned(ezfs_builder *b)
{
	/* config records follow the superblock; shared xattrs follow them */
	if (b->big_pcluster)
		b->cfgs_len = ezi_bld_cfgs_encode(b, NULL);
	/* -m: the superblock has one 16-byte extension slot */
	b->shared_start = (EROFS_SUPER_OFFSET + EROFS_SB_BASE_SIZE +
			   (b->p.metabox_pcluster ? 16 : 0) + b->cfgs_len + 3) &
			  ~3u;
	/* the device table (128-byte slots) before the shared xattrs */
	if (b->p.tar_index || b->p.blobdev || b->nrdevs) {
		b->devt_off = (b->shared_start + 127) & ~127u;
		b->shared_start =
			b->devt_off + (b->nrdevs ? b->nrdevs : 1) *
					      sizeof(struct erofs_deviceslot);
	}
	return ezi_bld_xattrs_share(b);
}

int ezfs_builder_scan(ezfs_builder *b, const char *srcdir)
{
	int err;

	if (b->scanned)
		return -EINVAL;
	if (b->p.tar_index) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "%s: a tar index is made from a tar archive, not "
			    "a directory",
			    srcdir);
		return -EINVAL;
	}
	b->scanned = true;
	err = ezi_bld_scan(b, srcdir);
	return err ? err : scanned(b);
}

int ezfs_builder_scan_images(ezfs_builder *b, const char *const *layers,
			     size_t n)
{
	const struct ezfs_build_params *p = &b->p;
	const char *why = NULL;
	int err;

	if (b->scanned || !n)
		return -EINVAL;
	if (p->tar_index)
		why = "a tar index is made from a tar archive";
	else if (p->alg >= 0 || p->n_more_algs)
		why = "a rebuild references the layers' data: no compression";
	else if (p->chunksize || p->blobdev)
		why = "a rebuild references the layers' data: no chunk size or "
		      "blob device";
	if (why) {
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s", why);
		return -EINVAL;
	}
	b->scanned = true;
	err = ezi_bld_scan_images(b, layers, n);
	return err ? err : scanned(b);
}

int ezfs_builder_scan_tar(ezfs_builder *b, const char *path, const char *tmpdir)
{
	int err;

	if (b->scanned)
		return -EINVAL;
	b->scanned = true;
	err = ezi_bld_scan_tar(b, path, tmpdir);
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

/* Replace the last six characters of t by random ones (try i). */
static void temp_randomize(char *t, unsigned i)
{
	static const char az[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	char *x = t + strlen(t) - 6;
	uint8_t rnd[6];
	int j;

	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		memset(rnd, (int)i, sizeof(rnd));
	for (j = 0; j < 6; j++)
		x[j] = az[rnd[j] % (sizeof(az) - 1)];
}

/* Follow the symlinks of path (include/ezfs/build.h). */
char *ezfs_build_image_target(const char *path)
{
	char *cur = strdup(path);
	unsigned hops;

	for (hops = 0; cur; hops++) {
		char buf[4096], *next;
		const char *slash;
		struct stat st;
		size_t dlen;
		ssize_t n;

		if (lstat(cur, &st) || !S_ISLNK(st.st_mode))
			return cur;
		n = hops < 40 ? readlink(cur, buf, sizeof(buf) - 1) : -1;
		if (n < 0) {
			int e = hops < 40 ? errno : ELOOP;

			free(cur);
			errno = e;
			return NULL;
		}
		buf[n] = '\0';
		slash = strrchr(cur, '/');
		dlen = buf[0] == '/' || !slash ? 0 : (size_t)(slash - cur) + 1;
		next = malloc(dlen + (size_t)n + 1);
		if (next) {
			memcpy(next, cur, dlen);
			memcpy(next + dlen, buf, (size_t)n + 1);
		}
		free(cur);
		cur = next;
	}
	errno = ENOMEM;
	return NULL;
}

/*
 * Open the output for target (path with its symlinks resolved): an
 * unnamed O_TMPFILE file in target's directory, so that nothing is left
 * behind whatever happens to the process; where the filesystem (or a
 * missing /proc, needed to link it) rules that out, a named temporary
 * file beside target (*tmp). Created with mode (umask applies).
 */
static int open_output(struct ezfs_builder *b, const char *target, mode_t mode,
		       char **tmp)
{
	const char *slash = strrchr(target, '/');
	unsigned i;
	char *dir;
	int err;

	*tmp = NULL;
	dir = slash ? strndup(target, (size_t)(slash - target + 1))
		    : strdup(".");
	if (!dir)
		return -ENOMEM;
	if (!access("/proc/self/fd", X_OK))
		b->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, mode);
	free(dir);
	if (b->fd >= 0)
		return 0;
	*tmp = temp_name(target);
	if (!*tmp)
		return -ENOMEM;
	for (i = 0; i < 100 && b->fd < 0; i++) {
		temp_randomize(*tmp, i);
		b->fd = open(*tmp, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, mode);
		if (b->fd < 0 && errno != EEXIST)
			break;
	}
	if (b->fd >= 0)
		return 0;
	/* name what the caller asked for, not the temporary name */
	err = -errno;
	ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s", b->out_path, strerror(errno));
	return err;
}

/* Give the complete O_TMPFILE file fd (the image, or the blob) its name:
 * target, or a temporary name (*tmp) renamed over an existing target. */
static int link_output(struct ezfs_builder *b, int fd, const char *name,
		       const char *target, char **tmp)
{
	char proc[64];
	unsigned i;
	int err;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (!linkat(AT_FDCWD, proc, AT_FDCWD, target, AT_SYMLINK_FOLLOW))
		return 0;
	if (errno != EEXIST)
		goto fail;
	*tmp = temp_name(target);
	if (!*tmp)
		return -ENOMEM;
	for (i = 0; i < 100; i++) {
		temp_randomize(*tmp, i);
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
	ezi_bld_log(b, EZFS_LOG_ERROR, "%s: cannot link: %s", name,
		    strerror(-err));
	return err;
}

/*
 * Put the complete file tmp in target's place, atomically: readers see
 * the old file or the new one. Over an existing file an exchange, then
 * the old file (now at tmp) unlinked: ext4 (auto_da_alloc) writes back
 * the whole new file inside a rename that replaces a name, 14 of the 38
 * ms of putting a 33 MiB image over an older one; the exchange does not.
 * Where the filesystem cannot exchange, a rename.
 */
static int replace_name(struct ezfs_builder *b, const char *tmp,
			const char *target)
{
	if (!renameat2(AT_FDCWD, tmp, AT_FDCWD, target, RENAME_EXCHANGE)) {
		if (unlink(tmp))
			ezi_bld_log(b, EZFS_LOG_WARN,
				    "%s: the replaced file stays as %s: %s",
				    target, tmp, strerror(errno));
		return 0;
	}
	return rename(tmp, target) ? -errno : 0;
}

/* A block device is written in place (there is nothing to rename over
 * it); O_EXCL fails while it is mounted. */
static int open_device(struct ezfs_builder *b, const char *target)
{
	off_t end;
	int err;

	b->fd = open(target, O_RDWR | O_EXCL | O_CLOEXEC);
	if (b->fd < 0)
		goto fail;
	end = lseek(b->fd, 0, SEEK_END);
	if (end < 0)
		goto fail;
	b->device = true;
	b->devsize = (uint64_t)end;
	b->zeroed = 0;
	pthread_mutex_init(&b->devlock, NULL);
	return 0;
fail:
	err = -errno;
	ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s", b->out_path, strerror(errno));
	if (b->fd >= 0)
		close(b->fd);
	b->fd = -1;
	return err;
}

/* The blob being written (blobdev) */
struct blobout {
	char *target; /* its path, symlinks followed */
	char *tmp;    /* its temporary name, while it has one */
	bool anon;    /* O_TMPFILE: no name until it is complete */
	bool placed;  /* target is the new blob now */
};

/*
 * Open the blob: a block device is written in place; a file is written
 * as the image is, an O_TMPFILE file in its directory (or a temporary
 * ".NAME.XXXXXX" beside it where that is not possible), named only once
 * complete (finish_blob). Not the image itself.
 */
static int open_blob(struct ezfs_builder *b, const char *image,
		     struct blobout *bo)
{
	const char *name = b->p.blobdev, *slash;
	struct stat st, ist;
	mode_t mode;
	unsigned i;
	char *dir;
	int err;

	bo->target = ezfs_build_image_target(name);
	if (!bo->target) {
		err = -errno;
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s", name, strerror(errno));
		return err;
	}
	if (stat(bo->target, &st)) {
		if (errno != ENOENT)
			goto fail;
		st.st_mode = 0;
	}
	if (!strcmp(bo->target, image) ||
	    (st.st_mode && !stat(image, &ist) && ist.st_dev == st.st_dev &&
	     ist.st_ino == st.st_ino)) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "%s: the blob is the image itself", name);
		return -EINVAL;
	}
	if (S_ISBLK(st.st_mode)) {
		b->blobfd = open(bo->target, O_RDWR | O_EXCL | O_CLOEXEC);
		if (b->blobfd < 0)
			goto fail;
		return 0;
	}
	if (S_ISDIR(st.st_mode)) {
		errno = EISDIR;
		goto fail;
	}
	if (st.st_mode && !S_ISREG(st.st_mode)) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "%s: not a regular file or a block device", name);
		return -EINVAL;
	}
	/* a replaced blob keeps its mode, set once it is open */
	mode = st.st_mode ? 0600 : 0666;
	slash = strrchr(bo->target, '/');
	dir = slash ? strndup(bo->target, (size_t)(slash - bo->target + 1))
		    : strdup(".");
	if (!dir)
		return -ENOMEM;
	if (!access("/proc/self/fd", X_OK))
		b->blobfd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, mode);
	free(dir);
	bo->anon = b->blobfd >= 0;
	if (!bo->anon) {
		bo->tmp = temp_name(bo->target);
		if (!bo->tmp)
			return -ENOMEM;
		for (i = 0; i < 100 && b->blobfd < 0; i++) {
			temp_randomize(bo->tmp, i);
			b->blobfd = open(bo->tmp,
					 O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC,
					 mode);
			if (b->blobfd < 0 && errno != EEXIST)
				break;
		}
		if (b->blobfd < 0) {
			free(bo->tmp);
			bo->tmp = NULL;
			goto fail;
		}
	}
	if (st.st_mode)
		(void)fchmod(b->blobfd, st.st_mode & 07777);
	return 0;
fail:
	err = -errno;
	ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s", name, strerror(errno));
	return err;
}

/* The blob is complete: synced (unless NO_FSYNC), named, closed. */
static int finish_blob(struct ezfs_builder *b, struct blobout *bo)
{
	const char *name = b->p.blobdev;
	int err = 0;

	if (!(b->p.flags & EZFS_BUILD_NO_FSYNC) && fsync(b->blobfd)) {
		err = -errno;
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: fsync: %s", name,
			    strerror(errno));
	}
	if (!err && bo->anon) {
		err = link_output(b, b->blobfd, name, bo->target, &bo->tmp);
		bo->placed = !err && !bo->tmp;
	}
	if (close(b->blobfd) && !err) {
		err = -errno;
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: close: %s", name,
			    strerror(errno));
	}
	b->blobfd = -1;
	if (!err && bo->tmp) {
		err = replace_name(b, bo->tmp, bo->target);
		if (err) {
			ezi_bld_log(b, EZFS_LOG_ERROR, "%s: rename: %s", name,
				    strerror(-err));
		} else {
			free(bo->tmp);
			bo->tmp = NULL;
			bo->placed = true;
		}
	}
	return err;
}

/* Where path leads: 1 a block device, 0 a regular file (*old its stat) or
 * nothing yet (old->st_mode 0); else an error, logged. */
static int output_kind(struct ezfs_builder *b, const char *target,
		       struct stat *old)
{
	const char *what = "a special file";

	memset(old, 0, sizeof(*old));
	if (stat(target, old)) {
		int err = -errno;

		old->st_mode = 0;
		if (errno == ENOENT)
			return 0;
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s", b->out_path,
			    strerror(errno));
		return err;
	}
	if (S_ISREG(old->st_mode))
		return 0;
	if (S_ISBLK(old->st_mode))
		return 1;
	if (S_ISDIR(old->st_mode)) {
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s", b->out_path,
			    strerror(EISDIR));
		return -EISDIR;
	}
	if (S_ISCHR(old->st_mode))
		what = "a character device";
	else if (S_ISFIFO(old->st_mode))
		what = "a FIFO";
	else if (S_ISSOCK(old->st_mode))
		what = "a socket";
	ezi_bld_log(b, EZFS_LOG_ERROR,
		    "%s: %s, not a regular file or a block device", b->out_path,
		    what);
	return -EINVAL;
}

/* The replaced file's owner and mode go to the new one (the owner where
 * we may set it; set-id bits only with the owner they belong to). */
static int keep_owner_mode(struct ezfs_builder *b, const struct stat *old)
{
	mode_t mode = old->st_mode & 07777;

	if (fchown(b->fd, old->st_uid, old->st_gid)) {
		mode &= ~(mode_t)S_ISUID;
		if (fchown(b->fd, (uid_t)-1, old->st_gid))
			mode &= ~(mode_t)S_ISGID;
	}
	if (!fchmod(b->fd, mode))
		return 0;
	ezi_bld_log(b, EZFS_LOG_ERROR, "%s: chmod: %s", b->out_path,
		    strerror(errno));
	return -errno;
}

/*
 * --offset: the image, written from byte 0, is moved up by the offset
 * (from its end back, so nothing is read after it was overwritten) and
 * the bytes before it are those of the old file at target (zeros beyond
 * its end, or for a new file).
 */
static int shift_image(struct ezfs_builder *b, const char *target, bool old)
{
	uint64_t off = b->p.image_offset, end, pos, n, got = 0;
	size_t bufsz = 1u << 20;
	uint8_t *buf = malloc(bufsz);
	struct stat st;
	int err = 0, ofd = -1;

	if (!buf)
		return -ENOMEM;
	if (fstat(b->fd, &st)) {
		err = -errno;
		goto out;
	}
	end = (uint64_t)st.st_size;
	for (pos = end; !err && pos > 0; pos -= n) {
		n = pos < bufsz ? pos : bufsz;
		if (pread(b->fd, buf, (size_t)n, (off_t)(pos - n)) !=
		    (ssize_t)n)
			err = -EIO;
		else
			err = ezi_bld_pwrite(b, buf, (size_t)n, pos - n + off);
	}
	if (!err && old)
		ofd = open(target, O_RDONLY | O_CLOEXEC);
	for (pos = 0; !err && pos < off; pos += n) {
		ssize_t r = 0;

		n = off - pos < bufsz ? off - pos : bufsz;
		if (ofd >= 0 && got == pos)
			r = pread(ofd, buf, (size_t)n, (off_t)pos);
		if (r < 0)
			r = 0;
		got += (uint64_t)r;
		memset(buf + r, 0, (size_t)n - (size_t)r);
		err = ezi_bld_pwrite(b, buf, (size_t)n, pos);
	}
out:
	if (ofd >= 0)
		close(ofd);
	free(buf);
	if (err && err != -EIO)
		return err;
	if (err)
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: --offset: read back failed",
			    b->out_path);
	return err;
}

int ezfs_builder_write(ezfs_builder *b, const char *path)
{
	struct blobout bo = { .target = NULL };
	bool named = false;
	char *target, *tmp = NULL;
	struct stat old;
	int err, kind;

	if (!b->scanned || b->fd >= 0)
		return -EINVAL;
	b->out_path = path;
	target = ezfs_build_image_target(path);
	if (!target) {
		err = -errno;
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s", path, strerror(errno));
		b->out_path = NULL;
		return err;
	}
	kind = output_kind(b, target, &old);
	if (kind == 1)
		err = open_device(b, target);
	else if (!kind)
		/* a new image gets 0666 less the umask, as with open(2); a
		 * replaced one keeps its mode, set once it is complete */
		err = open_output(b, target, old.st_mode ? 0600 : 0666, &tmp);
	else
		err = kind;
	if (err) {
		free(tmp);
		free(target);
		b->out_path = NULL;
		return err;
	}
	if (!err && b->p.image_offset && kind == 1) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "%s: --offset: only for image "
			    "files, not block devices",
			    path);
		err = -EINVAL;
	}
	if (!err && b->p.blobdev)
		err = open_blob(b, target, &bo);
	if (!err)
		err = ezi_bld_plan(b);
	if (!err)
		err = ezi_bld_write_data(b);
	if (!err)
		err = ezi_bld_write_meta(b);
	if (!err)
		err = ezi_bld_write_super(b);
	if (!err && b->p.image_offset)
		err = shift_image(b, target, old.st_mode != 0);
	if (!err)
		err = ezi_bld_block_list(b);
	if (!err && (b->p.flags & EZFS_BUILD_SPARSE))
		err = ezi_bld_sparse(b);
	if (!err && old.st_mode && !b->device)
		err = keep_owner_mode(b, &old);
	if (!err && !(b->p.flags & EZFS_BUILD_NO_FSYNC) && fsync(b->fd)) {
		err = -errno;
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: fsync: %s", path,
			    strerror(errno));
	}
	if (!err && b->blobfd >= 0) {
		err = finish_blob(b, &bo);
	}
	if (!err && !tmp && !b->device) {
		err = link_output(b, b->fd, b->out_path, target, &tmp);
		named = !err && !tmp;
	}
	if (close(b->fd) && !err) {
		err = -errno;
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: close: %s", path,
			    strerror(errno));
	}
	b->fd = -1;
	if (!err && tmp) {
		err = replace_name(b, tmp, target);
		if (err)
			ezi_bld_log(b, EZFS_LOG_ERROR, "%s: rename: %s", path,
				    strerror(-err));
	}
	if (err && tmp)
		unlink(tmp);
	if (err && named)
		unlink(target);
	if (b->blobfd >= 0) {
		close(b->blobfd);
		b->blobfd = -1;
	}
	if (err && bo.tmp)
		unlink(bo.tmp);
	if (err && bo.placed)
		unlink(bo.target);
	free(bo.target);
	free(bo.tmp);
	if (b->device)
		pthread_mutex_destroy(&b->devlock);
	b->device = false;
	b->out_path = NULL;
	free(tmp);
	free(target);
	b->st.seconds = now_s() - b->t0;
	return err;
}
