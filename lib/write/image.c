/* SPDX-License-Identifier: MIT */
/*
 * image.c - the files the builder writes: the image (an unnamed temporary
 * file in its folder, named only once complete, or a block device written
 * in place) and the blob (--blobdev) likewise; once the filesystem is
 * complete, ezi_bld_image_finish moves it up by --offset, makes it
 * --sparse, gives it the replaced file's owner and mode, syncs and names
 * it, or on an error leaves the old file as it was. The zinfo (--gzinfo) is
 * written to a temporary name beside it before, renamed only after.
 */
#define _GNU_SOURCE /* O_TMPFILE, renameat2 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "write/internal.h"
#include "write/tar/tar.h"

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

int ezi_bld_image_open(struct ezfs_builder *b, const char *path,
		       struct bimage *im)
{
	int err, kind;

	memset(im, 0, sizeof(*im));
	b->out_path = path;
	im->target = ezfs_build_image_target(path);
	if (!im->target) {
		err = -errno;
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s", path, strerror(errno));
		return err;
	}
	kind = output_kind(b, im->target, &im->old);
	if (kind == 1)
		err = open_device(b, im->target);
	else if (!kind)
		/* a new image gets 0666 less the umask, as with open(2); a
		 * replaced one keeps its mode, set once it is complete */
		err = open_output(b, im->target, im->old.st_mode ? 0600 : 0666,
				  &im->tmp);
	else
		err = kind;
	if (err) {
		/* no file was made: the name tried may be another's */
		free(im->tmp);
		im->tmp = NULL;
		return err;
	}
	if (b->p.image_offset && kind == 1) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "%s: --offset: only for image "
			    "files, not block devices",
			    path);
		return -EINVAL;
	}
	return b->p.blobdev ? open_blob(b, im->target, &im->blob) : 0;
}

int ezi_bld_image_finish(struct ezfs_builder *b, struct bimage *im, int err)
{
	const char *path = b->out_path;

	if (!err && b->p.image_offset)
		err = shift_image(b, im->target, im->old.st_mode != 0);
	if (!err && (b->p.flags & EZFS_BUILD_SPARSE))
		err = ezi_bld_sparse(b);
	if (!err && im->old.st_mode && !b->device)
		err = keep_owner_mode(b, &im->old);
	if (!err && !(b->p.flags & EZFS_BUILD_NO_FSYNC) && fsync(b->fd)) {
		err = -errno;
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: fsync: %s", path,
			    strerror(errno));
	}
	if (!err && b->blobfd >= 0)
		err = finish_blob(b, &im->blob);
	if (!err && !im->tmp && !b->device) {
		err = link_output(b, b->fd, path, im->target, &im->tmp);
		im->named = !err && !im->tmp;
	}
	if (b->fd >= 0 && close(b->fd) && !err) {
		err = -errno;
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: close: %s", path,
			    strerror(errno));
	}
	b->fd = -1;
	if (!err && im->tmp) {
		err = replace_name(b, im->tmp, im->target);
		if (err)
			ezi_bld_log(b, EZFS_LOG_ERROR, "%s: rename: %s", path,
				    strerror(-err));
	}
	if (err && im->tmp)
		unlink(im->tmp);
	if (err && im->named)
		unlink(im->target);
	if (b->blobfd >= 0) {
		close(b->blobfd);
		b->blobfd = -1;
	}
	if (err && im->blob.tmp)
		unlink(im->blob.tmp);
	if (err && im->blob.placed)
		unlink(im->blob.target);
	free(im->blob.target);
	free(im->blob.tmp);
	if (b->device)
		pthread_mutex_destroy(&b->devlock);
	b->device = false;
	b->out_path = NULL;
	free(im->tmp);
	free(im->target);
	return err;
}

int ezi_bld_zinfo_write(struct ezfs_builder *b, char **tmp)
{
	const char *name = b->p.gzinfo_file;
	unsigned i;
	int fd = -1, err;

	*tmp = temp_name(name);
	if (!*tmp)
		return -ENOMEM;
	for (i = 0; i < 100 && fd < 0; i++) {
		temp_randomize(*tmp, i);
		fd = open(*tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		err = -errno;
		free(*tmp);
		*tmp = NULL;
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s", name, strerror(-err));
		return err;
	}
	err = ezi_tzinfo_write(b->zinfo, fd);
	if (!err && !(b->p.flags & EZFS_BUILD_NO_FSYNC) && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	if (err) {
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s", name, strerror(-err));
		unlink(*tmp);
		free(*tmp);
		*tmp = NULL;
	}
	return err;
}

int ezi_bld_zinfo_place(struct ezfs_builder *b, char *tmp, int err)
{
	if (!tmp)
		return err;
	if (!err && rename(tmp, b->p.gzinfo_file)) {
		err = -errno;
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: rename: %s",
			    b->p.gzinfo_file, strerror(errno));
	}
	if (err)
		unlink(tmp);
	free(tmp);
	return err;
}
