/* SPDX-License-Identifier: MIT */
/* extract_io.c - ezfs_extract: data workers, xattrs and safe path helpers. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/openat2.h>

#include "extract/internal.h"
#include "util/pool.h"

void ezi_x_error(struct xctx *x, const char *path, const char *what, int err)
{
	char q[1024];

	ezfs_quote(path, strlen(path), q, sizeof(q));
	if (err)
		ezi_x_msg(x, "%s%s%s: %s: %s", x->dest, *path ? "/" : "", q,
			  what, ezfs_strerror(err));
	else
		ezi_x_msg(x, "%s%s%s: %s", x->dest, *path ? "/" : "", q, what);
}

void ezi_x_msg(struct xctx *x, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ezi_x_vsay(x->o->message, x->o->arg, &x->cblock, EZFS_LOG_ERROR, fmt,
		   ap);
	va_end(ap);
}

int ezi_x_failed(struct xctx *x)
{
	return __atomic_load_n(&x->failed, __ATOMIC_ACQUIRE) ||
	       (x->o->cancel && *x->o->cancel);
}

void ezi_x_entry_problem(struct xctx *x, const char *path, int problem, int err)
{
	pthread_mutex_lock(&x->cblock);
	x->damaged++;
	if (x->o->entry)
		x->o->entry(x->o->arg, path, problem, err);
	pthread_mutex_unlock(&x->cblock);
}

int ezi_x_skip_damaged(struct xctx *x, const char *path, int err)
{
	if (!x->keep_going)
		return err;
	ezi_x_entry_problem(x, path, EZFS_ENTRY_DAMAGED, err);
	return 0;
}

void ezi_x_set_failed(struct xctx *x)
{
	__atomic_store_n(&x->failed, 1, __ATOMIC_RELEASE);
}

int ezi_x_remove_existing(struct xctx *x, int dirfd, const char *name)
{
	struct stat st;

	if (!x->force)
		return -EEXIST;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (unlinkat(dirfd, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) < 0)
		return -errno;
	return 0;
}

/*
 * One openat2() that refuses to leave DIR or follow any symlink (Linux 5.6+):
 * the same guarantee as opening component by component with O_NOFOLLOW, in
 * one system call. Returns -ENOSYS where the kernel lacks it.
 */
static int open_beneath(int rootfd, const char *relpath, size_t len)
{
	struct open_how how = {
		.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS,
	};
	char path[4096];
	long fd;

	if (!len) {
		fd = dup(rootfd);
		return fd < 0 ? -errno : (int)fd;
	}
	if (len >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, relpath, len);
	path[len] = '\0';
	fd = syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
	return fd < 0 ? -errno : (int)fd;
}

int ezi_x_open_path(struct xctx *x, const char *relpath, int parent,
		    const char **name)
{
	const char *p = relpath, *slash;
	int fd, nfd;
	char comp[256];

	if (parent && !*relpath)
		return -EINVAL;
	/* fast path: the whole directory part in one system call */
	slash = parent ? strrchr(relpath, '/') : NULL;
	fd = open_beneath(x->rootfd, relpath,
			  parent ? (slash ? (size_t)(slash - relpath) : 0)
				 : strlen(relpath));
	if (fd >= 0) {
		if (parent)
			*name = slash ? slash + 1 : relpath;
		return fd;
	}
	if (fd != -ENOSYS && fd != -EPERM)
		return fd;
	fd = dup(x->rootfd);
	if (fd < 0)
		return -errno;
	while (*p) {
		size_t len;

		slash = strchr(p, '/');
		if (!slash && parent) {
			*name = p;
			return fd;
		}
		len = slash ? (size_t)(slash - p) : strlen(p);
		if (len >= sizeof(comp)) {
			close(fd);
			return -ENAMETOOLONG;
		}
		memcpy(comp, p, len);
		comp[len] = '\0';
		nfd = openat(fd, comp,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		if (nfd < 0)
			return -errno;
		fd = nfd;
		p += len;
		if (*p == '/')
			p++;
	}
	if (parent) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

static int set_one(int fd, int dirfd, const char *name, const char *key,
		   const void *val, size_t len)
{
	char proc[64 + 256];

	if (fd >= 0)
		return fsetxattr(fd, key, val, len, 0) < 0 ? -errno : 0;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d/%s", dirfd, name);
	return lsetxattr(proc, key, val, len, 0) < 0 ? -errno : 0;
}

int ezi_x_apply_xattrs(struct xctx *x, ezfs_inode *ino,
		       const struct ezfs_stat *st, int fd, int dirfd,
		       const char *name, const char *path)
{
	char *names = NULL, *k, what[600];
	void *val = NULL;
	size_t vcap = 0;
	ssize_t n, vn;
	int ret = 0;

	if (!st->xattr_isize || x->no_xattrs)
		return 0;
	n = ezfs_listxattr(ino, NULL, 0);
	if (n > 0) {
		names = malloc(n);
		n = names ? ezfs_listxattr(ino, names, n) : -ENOMEM;
	}
	if (n < 0) {
		ezi_x_error(x, path, "listing xattrs", (int)n);
		free(names);
		return (int)n;
	}
	for (k = names; n > 0 && k < names + n; k += strlen(k) + 1) {
		int user = !strncmp(k, "user.", 5);

		if (!x->is_root && !user)
			continue; /* trusted., security.: root only */
		vn = ezfs_getxattr(ino, k, NULL, 0);
		if (vn >= 0 && (size_t)vn + 1 > vcap) {
			void *nv = realloc(val, vn + 1);

			if (!nv)
				vn = -ENOMEM;
			else
				val = nv, vcap = vn + 1;
		}
		if (vn >= 0)
			vn = ezfs_getxattr(ino, k, val, vcap);
		if (vn < 0) {
			snprintf(what, sizeof(what), "reading xattr %s", k);
			ezi_x_error(x, path, what, (int)vn);
			ret = (int)vn;
			break;
		}
		ret = set_one(fd, dirfd, name, k, val, vn);
		if (ret == -EPERM && user && !S_ISREG(st->mode) &&
		    !S_ISDIR(st->mode)) {
			/* Linux allows user.* only on files and directories */
			if (!__atomic_fetch_add(&x->warned_xattr, 1,
						__ATOMIC_RELAXED))
				ezi_x_error(
					x, path,
					"user.* xattrs not possible on this "
					"file type here; skipped",
					0);
			ret = 0;
			continue;
		}
		if (ret == -ENOTSUP && !x->is_root) {
			if (!__atomic_fetch_add(&x->warned_xattr, 1,
						__ATOMIC_RELAXED))
				ezi_x_error(x, path,
					    "xattrs not supported by the "
					    "destination; skipped",
					    0);
			ret = 0;
			continue;
		}
		if (ret < 0) {
			snprintf(what, sizeof(what), "setting xattr %s", k);
			ezi_x_error(x, path, what, ret);
			break;
		}
	}
	free(val);
	free(names);
	return ret;
}

/* ---- workers ---- */

void ezi_x_job_free(struct xjob *job)
{
	if (!job)
		return;
	ezfs_inode_put(job->ino);
	if (job->fd >= 0)
		close(job->fd);
	free(job->path);
	free(job);
}

/* Write n bytes at off as they are; 0 or -errno (reported). */
static int write_all(struct xctx *x, struct xjob *j, const char *buf, size_t n,
		     uint64_t off)
{
	size_t done = 0;
	ssize_t w;

	while (done < n) {
		w = pwrite(j->fd, buf + done, n - done, off + done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int err = w < 0 ? -errno : -EIO;

			ezi_x_error(x, j->path, "write", err);
			return err;
		}
		done += w;
	}
	return 0;
}

/*
 * Write n bytes of data at off, the whole blocks of zeros in it (blocks of
 * the file, x->blksz bytes) left as holes (*sparse set): the file is new,
 * so what is not written reads as zeros. 0 or -errno (reported).
 */
static int write_piece(struct xctx *x, struct xjob *j, const char *buf,
		       size_t n, uint64_t off, int *sparse)
{
	uint64_t end = off + n, at = off, run = off;
	int ret;

	if (x->no_sparse)
		return write_all(x, j, buf, n, off);
	while (at < end) {
		/* the block of the file holding at, cut to the piece */
		uint64_t next = (at / x->blksz + 1) * x->blksz;

		if (next > end)
			next = end;
		if (ezi_x_all_zero(buf + (at - off), (size_t)(next - at))) {
			if (run < at) {
				ret = write_all(x, j, buf + (run - off),
						(size_t)(at - run), run);
				if (ret)
					return ret;
			}
			*sparse = 1;
			run = next;
		}
		at = next;
	}
	return run < end ? write_all(x, j, buf + (run - off),
				     (size_t)(end - run), run)
			 : 0;
}

/* --no-sparse: a hole of the image written as zeros; 0 or -errno. */
static int write_zeros(struct xctx *x, struct xjob *j, uint64_t off,
		       uint64_t len)
{
	static const char z[65536];
	int ret = 0;

	while (!ret && len) {
		size_t n = len < sizeof(z) ? (size_t)len : sizeof(z);

		ret = write_all(x, j, z, n, off);
		off += n;
		len -= n;
	}
	return ret;
}

/* Write the file's contents and metadata; 0 or -errno (reported). */
static int do_job(struct xctx *x, struct xjob *j)
{
	const struct ezfs_stat *st = &j->st;
	struct timespec ts[2];
	uint64_t pos = 0, woff;
	ezfs_stream *xs;
	const void *data;
	int sparse = 0, ret, err = 0;
	size_t len;

	/* windows decoded ahead where the dispatcher has workers; holes
	 * of the image come without their zeros */
	ret = ezfs_stream_open(j->ino, 0, st->size, EZFS_STREAM_HOLES, &xs);
	if (ret < 0) {
		ezi_x_error(x, j->path, "buffer", ret);
		return ret;
	}
	while ((ret = ezfs_stream_next(xs, &data, &woff, &len)) > 0 &&
	       woff == pos) {
		if (ezi_x_failed(x)) {
			err = -ECANCELED;
			break;
		}
		if (!data && x->no_sparse)
			err = write_zeros(x, j, woff, len);
		else if (!data)
			sparse = 1;
		else
			err = write_piece(x, j, data, len, woff, &sparse);
		if (err)
			break;
		pos += len;
		__atomic_add_fetch(&x->bytes_done, len, __ATOMIC_RELAXED);
	}
	ezfs_stream_close(xs);
	if (err)
		return err;
	if (ret < 0 || pos < st->size) {
		/* named by the worker (at most XREAD_NAMED files) */
		j->read_failed = 1;
		j->read_err = ret < 0 ? ret : 0;
		return ret < 0 ? ret : -EIO;
	}
	if (sparse && ftruncate(j->fd, st->size) < 0)
		goto fail;
	if (x->is_root &&
	    !(x->ids_default && st->uid == x->euid && st->gid == x->egid) &&
	    fchown(j->fd, st->uid, st->gid) < 0)
		goto fail;
	if (ezi_x_apply_xattrs(x, j->ino, st, j->fd, -1, NULL, j->path) < 0)
		return -EIO;
	if (!j->mode_set && fchmod(j->fd, st->mode & 07777) < 0)
		goto fail;
	ts[0].tv_sec = ts[1].tv_sec = st->mtime;
	ts[0].tv_nsec = ts[1].tv_nsec = st->mtime_nsec;
	if (futimens(j->fd, ts) < 0)
		goto fail;
	if (close(j->fd) < 0) {
		j->fd = -1;
		goto fail;
	}
	j->fd = -1;
	return 0;
fail : {
	int e = -errno;

	ezi_x_error(x, j->path, "setting metadata", e);
	return e;
}
}

/* A job failed or was cancelled: remove its file. */
static void discard(struct xctx *x, struct xjob *j)
{
	const char *name;
	int pfd;

	if (j->fd >= 0) {
		close(j->fd);
		j->fd = -1;
	}
	pfd = ezi_x_open_path(x, j->path, 1, &name);
	if (pfd >= 0) {
		unlinkat(pfd, name, 0);
		close(pfd);
	}
}

/* Count a file skipped for unreadable data; name the first XREAD_NAMED. */
static void read_failed(struct xctx *x, struct xjob *j)
{
	unsigned k = __atomic_add_fetch(&x->read_errors, 1, __ATOMIC_RELAXED);

	ezi_x_entry_problem(x, j->path, EZFS_ENTRY_UNREADABLE, j->read_err);

	if (k <= XREAD_NAMED)
		ezi_x_error(x, j->path,
			    j->read_err ? "reading from the image"
					: "reading from the image: unexpected "
					  "end of data",
			    j->read_err);
	if (k == XREAD_NAMED)
		ezi_x_msg(x,
			  "%s: more files with unreadable data are "
			  "counted, not named",
			  x->img);
}

/* A file written whole, for source_check: kept by path. */
static void written(struct xctx *x, struct xjob *j)
{
	pthread_mutex_lock(&x->cblock);
	if (!ezi_vec_push(&x->written, j->path))
		j->path = NULL;
	pthread_mutex_unlock(&x->cblock);
}

/* One regular file, on a worker of the pool. */
static void job_run(void *arg)
{
	struct xjob *j = arg;
	struct xctx *x = j->x;
	int ret;

	ret = ezi_x_failed(x) ? -ECANCELED : do_job(x, j);
	if (ret < 0) {
		/*
		 * Never leave a half-written file behind. A file whose data
		 * the image cannot give is skipped (the others still come
		 * out, the result says it); anything else (the target is
		 * full, ...) stops everyone.
		 */
		if (j->read_failed)
			read_failed(x, j);
		else
			ezi_x_set_failed(x);
		discard(x, j);
	} else {
		__atomic_add_fetch(&x->entries_done, 1, __ATOMIC_RELAXED);
		if (x->o->source_check)
			written(x, j);
	}
	ezi_x_job_free(j);
	pthread_mutex_lock(&x->lock);
	if (!--x->pending)
		pthread_cond_broadcast(&x->idle);
	pthread_mutex_unlock(&x->lock);
}

int ezi_x_workers_start(struct xctx *x)
{
	int err = 0;

	/* bounded: the walker waits for the workers (open files, memory) */
	x->pool = ezi_pool_new(x->threads, x->threads * 8 + 64, &err);
	return x->pool ? 0 : err;
}

void ezi_x_enqueue(struct xctx *x, struct xjob *job)
{
	job->x = x;
	pthread_mutex_lock(&x->lock);
	x->pending++;
	pthread_mutex_unlock(&x->lock);
	if (ezi_pool_submit(x->pool, job_run, job) < 0)
		job_run(job); /* no room to queue it: now, here */
}

void ezi_x_workers_finish(struct xctx *x)
{
	if (!x->pool)
		return;
	pthread_mutex_lock(&x->lock);
	while (x->pending) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&x->idle, &x->lock, &ts);
		pthread_mutex_unlock(&x->lock);
		ezi_x_progress(x, 0);
		pthread_mutex_lock(&x->lock);
	}
	pthread_mutex_unlock(&x->lock);
	ezi_pool_wait(x->pool);
	ezi_pool_destroy(x->pool);
	x->pool = NULL;
}
