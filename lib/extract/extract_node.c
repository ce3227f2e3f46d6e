/* SPDX-License-Identifier: MIT */
/* extract_node.c - ezfs_extract: creating symlinks, special and regular
 * files, then hard links and directory metadata at the end. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "extract/internal.h"

void ezi_x_progress(struct xctx *x, int force)
{
	if (!x->o->progress || !ezi_x_progress_due(&x->last_progress, force))
		return;
	x->prog.bytes = __atomic_load_n(&x->bytes_done, __ATOMIC_RELAXED);
	x->prog.entries = __atomic_load_n(&x->entries_done, __ATOMIC_RELAXED);
	pthread_mutex_lock(&x->cblock);
	x->o->progress(x->o->arg, &x->prog);
	pthread_mutex_unlock(&x->cblock);
}

void ezi_x_entry_done(struct xctx *x)
{
	__atomic_add_fetch(&x->entries_done, 1, __ATOMIC_RELAXED);
	ezi_x_progress(x, 0);
}

/* chown, xattrs, chmod, times of a non-regular, non-directory entry. */
static int meta_at(struct xctx *x, int dirfd, const char *name, ezfs_inode *ino,
		   const struct ezfs_stat *st, const char *path)
{
	struct timespec ts[2];

	if (x->is_root &&
	    fchownat(dirfd, name, st->uid, st->gid, AT_SYMLINK_NOFOLLOW) < 0)
		goto fail;
	if (ezi_x_apply_xattrs(x, ino, st, -1, dirfd, name, path) < 0)
		return -EIO;
	if (!S_ISLNK(st->mode) &&
	    fchmodat(dirfd, name, st->mode & 07777, 0) < 0)
		goto fail;
	ts[0].tv_sec = ts[1].tv_sec = st->mtime;
	ts[0].tv_nsec = ts[1].tv_nsec = st->mtime_nsec;
	if (utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		goto fail;
	return 0;
fail : {
	int err = -errno;

	ezi_x_error(x, path, "setting metadata", err);
	return err;
}
}

int ezi_x_do_symlink(struct xctx *x, int dirfd, const char *name,
		     ezfs_inode *ino, const struct ezfs_stat *st,
		     const char *path)
{
	char *target = malloc(st->size + 1);
	ssize_t n = target ? ezfs_readlink(ino, target, st->size + 1) : -ENOMEM;
	int ret;

	if (n < 0) {
		ezi_x_error(x, path, "reading the link target", (int)n);
		free(target);
		return n == -ENOMEM ? (int)n
				    : ezi_x_skip_damaged(x, path, (int)n);
	}
	while ((ret = symlinkat(target, dirfd, name) < 0 ? -errno : 0) ==
		       -EEXIST &&
	       !(ret = ezi_x_remove_existing(x, dirfd, name)))
		;
	free(target);
	if (ret < 0) {
		ezi_x_error(x, path, "creating the symlink", ret);
		return ret;
	}
	return meta_at(x, dirfd, name, ino, st, path);
}

int ezi_x_do_special(struct xctx *x, int dirfd, const char *name,
		     ezfs_inode *ino, const struct ezfs_stat *st,
		     const char *path)
{
	dev_t dev = 0;
	int ret;

	if (S_ISCHR(st->mode) || S_ISBLK(st->mode))
		dev = makedev(st->rdev_major, st->rdev_minor);
	while ((ret = mknodat(dirfd, name, (st->mode & S_IFMT) | 0600, dev) < 0
			      ? -errno
			      : 0) == -EEXIST &&
	       !(ret = ezi_x_remove_existing(x, dirfd, name)))
		;
	if (ret == -EPERM && !x->is_root && dev) {
		ezi_x_error(x, path, "device node skipped (not root)", 0);
		return 0;
	}
	if (ret < 0) {
		ezi_x_error(x, path, "creating the special file", ret);
		return ret;
	}
	return meta_at(x, dirfd, name, ino, st, path);
}

int ezi_x_do_file(struct xctx *x, int dirfd, const char *name, ezfs_inode **ino,
		  const struct ezfs_stat *st, const char *path)
{
	/*
	 * Permissions can be final at creation unless the umask takes some
	 * away, chown would clear suid/sgid, or a non-root owner without
	 * write permission still has to set user.* xattrs.
	 */
	int early = !(st->mode & 07000) && !(st->mode & 0777 & x->umask) &&
		    (x->is_root || !st->xattr_isize);
	struct xjob *j;
	int fd, ret;

	for (;;) {
		fd = openat(dirfd, name,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				    O_CLOEXEC,
			    early ? st->mode & 0777 : 0600);
		if (fd >= 0)
			break;
		ret = -errno;
		if (ret != -EEXIST ||
		    (ret = ezi_x_remove_existing(x, dirfd, name))) {
			ezi_x_error(x, path, "creating the file", ret);
			return ret;
		}
	}
	j = calloc(1, sizeof(*j));
	if (j) {
		j->fd = fd;
		j->mode_set = early;
		j->path = strdup(path);
		j->st = *st;
	}
	if (!j || !j->path) {
		ret = -ENOMEM;
		ezi_x_error(x, path, "queueing the file", ret);
		if (!j)
			close(fd);
		ezi_x_job_free(j);
		unlinkat(dirfd, name, 0);
		return ret;
	}
	j->ino = *ino;
	*ino = NULL;
	ezi_x_enqueue(x, j);
	return 0;
}

int ezi_x_link_phase(struct walker *w)
{
	struct xctx *x = w->x;
	size_t i;

	for (i = 0; i < w->nlnks; i++) {
		const struct xlink *l = &w->lnks[i];
		const char *on, *nn;
		int ofd, nfd, ret;

		if (!l->oldpath || !l->newpath) {
			ezi_x_error(x, l->newpath ? l->newpath : "",
				    "hard link", -ENOMEM);
			return -ENOMEM;
		}
		ofd = ezi_x_open_path(x, l->oldpath, 1, &on);
		if (ofd < 0) {
			ezi_x_error(x, l->oldpath, "opening the link's parent",
				    ofd);
			return ofd;
		}
		nfd = ezi_x_open_path(x, l->newpath, 1, &nn);
		if (nfd < 0) {
			close(ofd);
			ezi_x_error(x, l->newpath, "opening the link's parent",
				    nfd);
			return nfd;
		}
		while ((ret = linkat(ofd, on, nfd, nn, 0) < 0 ? -errno : 0) ==
			       -EEXIST &&
		       !(ret = ezi_x_remove_existing(x, nfd, nn)))
			;
		close(ofd);
		close(nfd);
		/* the file it links to was skipped: unreadable data */
		if (ret == -ENOENT && x->read_errors)
			continue;
		if (ret < 0) {
			ezi_x_error(x, l->newpath, "creating the hard link",
				    ret);
			return ret;
		}
		ezi_x_entry_done(x);
	}
	return 0;
}

static int cmp_depth(const void *a, const void *b)
{
	const struct xdir *da = a, *db = b;

	return da->depth < db->depth ? 1 : da->depth > db->depth ? -1 : 0;
}

/* Owners, xattrs, modes and times of directories, deepest first. */
int ezi_x_dir_phase(struct walker *w)
{
	struct xctx *x = w->x;
	size_t i;

	if (w->ndirs)
		qsort(w->dirs, w->ndirs, sizeof(*w->dirs), cmp_depth);
	for (i = 0; i < w->ndirs; i++) {
		const struct xdir *d = &w->dirs[i];
		struct timespec ts[2];
		struct ezfs_stat st;
		ezfs_inode *ino;
		int fd, ret;

		if (!d->path) {
			ezi_x_error(x, "", "directory", -ENOMEM);
			return -ENOMEM;
		}
		ret = ezfs_inode_get(x->fs, d->nid, &ino);
		if (ret < 0) {
			ezi_x_error(x, d->path, "reading the inode", ret);
			return ret;
		}
		ezfs_inode_stat(ino, &st);
		fd = ezi_x_open_path(x, d->path, 0, NULL);
		if (fd < 0) {
			ezfs_inode_put(ino);
			ezi_x_error(x, d->path, "opening the directory", fd);
			return fd;
		}
		ret = 0;
		if (x->is_root && fchown(fd, st.uid, st.gid) < 0)
			ret = -errno;
		if (!ret &&
		    ezi_x_apply_xattrs(x, ino, &st, fd, -1, NULL, d->path) < 0)
			ret = 1;
		if (!ret && fchmod(fd, st.mode & 07777) < 0)
			ret = -errno;
		ts[0].tv_sec = ts[1].tv_sec = st.mtime;
		ts[0].tv_nsec = ts[1].tv_nsec = st.mtime_nsec;
		if (!ret && futimens(fd, ts) < 0)
			ret = -errno;
		close(fd);
		ezfs_inode_put(ino);
		if (ret) {
			if (ret < 0)
				ezi_x_error(x, d->path, "setting metadata",
					    ret);
			return ret < 0 ? ret : -EIO;
		}
	}
	return 0;
}
