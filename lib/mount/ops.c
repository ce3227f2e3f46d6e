/* SPDX-License-Identifier: MIT */
/* ops.c - the FUSE low-level operations: a read-only view of the image. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>

#include "internal.h"

#define MNT_MAX_READ (1u << 20)

static struct ezfs_mount *req_mount(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* Map a library error to what the VFS should see: corruption is EIO. */
static int fs_err(int err)
{
	if (err >= 0)
		return EIO;
	err = -err;
	if (err == EUCLEAN || err == EOPNOTSUPP)
		return EIO;
	return err;
}

/*
 * st_blocks as the kernel's driver reports it (erofs_read_inode): for a
 * compressed inode the 32-bit count of compressed blocks in i_u (only
 * those 32 bits), else the size rounded up to whole blocks; in 512-byte
 * units either way.
 */
static blkcnt_t mnt_blocks(const struct ezfs_mount *m,
			   const struct ezfs_stat *es)
{
	unsigned shift = m->sb.blkszbits - 9;

	if (es->layout == EZFS_LAYOUT_COMPRESSED_FULL ||
	    es->layout == EZFS_LAYOUT_COMPRESSED_COMPACT)
		return (blkcnt_t)((es->blocks & 0xffffffffu) << shift);
	return (blkcnt_t)(((es->size + m->sb.blksz - 1) >> m->sb.blkszbits)
			  << shift);
}

static void fill_attr(struct ezfs_mount *m, const ezfs_inode *ino,
		      struct stat *st)
{
	struct ezfs_stat es;

	ezfs_inode_stat(ino, &es);
	memset(st, 0, sizeof(*st));
	st->st_ino = es.nid;
	st->st_mode = es.mode;
	st->st_nlink = es.nlink;
	st->st_uid = m->p.uid >= 0 ? (uid_t)m->p.uid : es.uid;
	st->st_gid = m->p.gid >= 0 ? (gid_t)m->p.gid : es.gid;
	st->st_size = (off_t)es.size;
	st->st_blksize = (blksize_t)m->sb.blksz;
	st->st_blocks = mnt_blocks(m, &es);
	if (S_ISCHR(es.mode) || S_ISBLK(es.mode))
		st->st_rdev = makedev(es.rdev_major, es.rdev_minor);
	st->st_mtim.tv_sec = es.mtime;
	st->st_mtim.tv_nsec = es.mtime_nsec;
	st->st_atim = st->st_mtim;
	st->st_ctim = st->st_mtim;
}

static void fill_entry(struct ezfs_mount *m, struct mnode *n,
		       struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = mnt_nid_to_ino(m, n->nid);
	e->generation = 1;
	e->attr_timeout = m->timeout;
	e->entry_timeout = m->timeout;
	fill_attr(m, n->ino, &e->attr);
}

/* Pin the node of a FUSE inode number (the kernel holds a reference, so it
 * is normally in the table; otherwise it is loaded). */
static int get_node(struct ezfs_mount *m, fuse_ino_t ino, struct mnode **out)
{
	int err = ezi_it_get(m, mnt_ino_to_nid(m, ino), 0, out);
	char detail[256];

	if (err)
		ezi_mnt_log(m, EZFS_LOG_ERROR,
			    "nid %llu: cannot load inode: %s "
			    "(%s)",
			    (unsigned long long)mnt_ino_to_nid(m, ino),
			    ezfs_strerror(err),
			    ezi_mnt_take_detail(detail, sizeof(detail)));
	return err;
}

/* One line per inode for data errors, so a bad file cannot flood the log. */
static void log_once(struct ezfs_mount *m, struct mnode *n, const char *what,
		     uint64_t off, int err)
{
	char detail[256];

	ezi_mnt_take_detail(detail, sizeof(detail));
	if (__atomic_exchange_n(&n->err_logged, 1, __ATOMIC_RELAXED))
		return;
	ezi_mnt_log(m, EZFS_LOG_ERROR, "nid %llu: %s at offset %llu: %s%s%s%s",
		    (unsigned long long)n->nid, what, (unsigned long long)off,
		    ezfs_strerror(err), detail[0] ? " (" : "", detail,
		    detail[0] ? ")" : "");
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	conn->want |= FUSE_CAP_ASYNC_READ;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO;
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
			FUSE_CAP_SPLICE_MOVE | FUSE_CAP_AUTO_INVAL_DATA);
	conn->time_gran = 1;
	ezi_mnt_ctl_init(conn);
	/* conn->max_readahead starts at the kernel's offer, which we may only
	 * lower: keep all of it. Reads of up to MNT_MAX_READ are served. */
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct ezfs_mount *m = req_mount(req);
	struct fuse_entry_param e;
	struct mnode *dir, *child;
	unsigned ftype;
	uint64_t nid;
	int err;

	err = get_node(m, parent, &dir);
	if (err) {
		fuse_reply_err(req, fs_err(err));
		return;
	}
	err = ezfs_lookup(dir->ino, name, strlen(name), &nid, &ftype);
	ezi_it_unpin(m, dir);
	if (err == -ENOENT) {
		/* A negative entry, cached as long as positive ones. */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = m->timeout;
		fuse_reply_entry(req, &e);
		return;
	}
	if (!err)
		err = ezi_it_get(m, nid, 1, &child);
	if (err) {
		char detail[256];

		ezi_mnt_take_detail(detail, sizeof(detail));
		if (err != -ENAMETOOLONG && err != -ENOTDIR)
			ezi_mnt_log(
				m, EZFS_LOG_ERROR,
				"nid %llu: lookup of '%s' failed: %s (%s)",
				(unsigned long long)mnt_ino_to_nid(m, parent),
				name, ezfs_strerror(err), detail);
		fuse_reply_err(req, fs_err(err));
		return;
	}
	fill_entry(m, child, &e);
	if (fuse_reply_entry(req, &e))
		ezi_it_forget(m, child->nid,
			      1); /* the kernel did not take it */
	ezi_it_unpin(m, child);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct ezfs_mount *m = req_mount(req);

	if (ino != FUSE_ROOT_ID)
		ezi_it_forget(m, mnt_ino_to_nid(m, ino), nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	struct ezfs_mount *m = req_mount(req);
	size_t i;

	for (i = 0; i < count; i++)
		if (forgets[i].ino != FUSE_ROOT_ID)
			ezi_it_forget(m, mnt_ino_to_nid(m, forgets[i].ino),
				      forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct ezfs_mount *m = req_mount(req);
	struct mnode *n;
	struct stat st;
	int err = get_node(m, ino, &n);

	if (err) {
		fuse_reply_err(req, fs_err(err));
		return;
	}
	fill_attr(m, n->ino, &st);
	ezi_it_unpin(m, n);
	fuse_reply_attr(req, &st, m->timeout);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct ezfs_mount *m = req_mount(req);
	char buf[PATH_MAX + 1];
	struct mnode *n;
	ssize_t len;
	int err = get_node(m, ino, &n);

	if (err) {
		fuse_reply_err(req, fs_err(err));
		return;
	}
	len = ezfs_readlink(n->ino, buf, sizeof(buf));
	if (len < 0) {
		if (len != -EINVAL)
			log_once(m, n, "readlink", 0, (int)len);
		ezi_it_unpin(m, n);
		fuse_reply_err(req, fs_err((int)len));
		return;
	}
	ezi_it_unpin(m, n);
	fuse_reply_readlink(req, buf);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ezfs_mount *m = req_mount(req);
	struct ezfs_stat es;
	struct mfile *f;
	struct mnode *n;
	int err;

	if ((fi->flags & O_ACCMODE) != O_RDONLY ||
	    (fi->flags & (O_TRUNC | O_APPEND))) {
		fuse_reply_err(req, EROFS);
		return;
	}
	err = get_node(m, ino, &n);
	if (err) {
		fuse_reply_err(req, fs_err(err));
		return;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		ezi_it_unpin(m, n);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ezfs_inode_stat(n->ino, &es);
	f->node = n;
	f->size = es.size;
	f->compressed = es.layout == EZFS_LAYOUT_COMPRESSED_FULL ||
			es.layout == EZFS_LAYOUT_COMPRESSED_COMPACT;
	pthread_mutex_init(&f->lock, NULL);
	ezi_pf_open(m, f);
	ezi_ra_open(m, f);
	fi->fh = (uint64_t)(uintptr_t)f;
	fi->keep_cache = 1;
	fi->noflush = 1;
	if (fuse_reply_open(req, fi)) {
		pthread_mutex_destroy(&f->lock);
		free(f);
		ezi_it_unpin(m, n);
	}
}

/*
 * A read inside encoded extents is answered from the decoded-pcluster
 * cache, and the rest of those extents goes to the page cache through a
 * helper (prefetch.c); any other read, or one whose extents cannot be
 * decoded, is read exactly, so an error is reported only for the bytes
 * asked for.
 */
static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct ezfs_mount *m = req_mount(req);
	struct mfile *f = (struct mfile *)(uintptr_t)fi->fh;
	uint64_t from = (uint64_t)off, want;
	ssize_t r;
	char *buf;

	if (size > MNT_MAX_READ)
		size = MNT_MAX_READ;
	want = from < f->size ? (f->size - from < size ? f->size - from : size)
			      : 0;
	MNT_COUNT(m, reads, 1);
	if (m->p.prefetch && ezi_pf_answer(m, f, req, from, want))
		return;
	r = ezi_pf_read(f, from, from + want, &buf);
	if (r < 0) {
		log_once(m, f->node, "read", from, (int)r);
		fuse_reply_err(req, fs_err((int)r));
		return;
	}
	if (m->p.prefetch)
		ezi_pf_seq_hint(m, f, from, (uint64_t)r, from + (uint64_t)r);
	fuse_reply_buf(req, buf, (size_t)r); /* the thread's buffer */
}

static void op_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct ezfs_mount *m = req_mount(req);
	struct mfile *f = (struct mfile *)(uintptr_t)fi->fh;

	ezi_it_unpin(m, f->node);
	pthread_mutex_destroy(&f->lock);
	free(f);
	fuse_reply_err(req, 0);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct ezfs_mount *m = req_mount(req);
	struct mnode *n;
	int err = get_node(m, ino, &n);

	if (err) {
		fuse_reply_err(req, fs_err(err));
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)n;
	fi->keep_cache = 1;
	fi->cache_readdir = 1;
	if (fuse_reply_open(req, fi))
		ezi_it_unpin(m, n);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	ezi_it_unpin(req_mount(req), (struct mnode *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

struct rd_ctx {
	struct ezfs_mount *m;
	fuse_req_t req;
	char *buf;
	size_t size, used;
	bool plus;
	int err;
};

static int rd_entry(void *arg, const char *name, size_t namelen, uint64_t nid,
		    unsigned ftype, uint64_t next_pos)
{
	struct rd_ctx *c = arg;
	struct fuse_entry_param e;
	struct mnode *n;
	char nm[256];
	size_t need;
	int err;

	if (namelen == 0 || namelen > 255)
		return -EUCLEAN;
	memcpy(nm, name, namelen);
	nm[namelen] = '\0';
	memset(&e, 0, sizeof(e));
	e.attr.st_ino = nid;
	e.attr.st_mode = (mode_t)(ftype == EZFS_FT_REG	     ? S_IFREG
				  : ftype == EZFS_FT_DIR     ? S_IFDIR
				  : ftype == EZFS_FT_CHR     ? S_IFCHR
				  : ftype == EZFS_FT_BLK     ? S_IFBLK
				  : ftype == EZFS_FT_FIFO    ? S_IFIFO
				  : ftype == EZFS_FT_SOCK    ? S_IFSOCK
				  : ftype == EZFS_FT_SYMLINK ? S_IFLNK
							     : 0);
	if (!c->plus) {
		need = fuse_add_direntry(c->req, c->buf + c->used,
					 c->size - c->used, nm, &e.attr,
					 (off_t)next_pos);
		if (need > c->size - c->used)
			return 1;
		c->used += need;
		return 0;
	}
	need = fuse_add_direntry_plus(c->req, NULL, 0, nm, NULL, 0);
	if (need > c->size - c->used)
		return 1;
	if (strcmp(nm, ".") && strcmp(nm, "..")) {
		/* Every entry but . and .. counts as a lookup. */
		err = ezi_it_get(c->m, nid, 1, &n);
		if (err) {
			char detail[256];

			ezi_mnt_log(
				c->m, EZFS_LOG_ERROR,
				"nid %llu: cannot load inode: %s (%s)",
				(unsigned long long)nid, ezfs_strerror(err),
				ezi_mnt_take_detail(detail, sizeof(detail)));
			return c->used ? 1 : err;
		}
		fill_entry(c->m, n, &e);
		ezi_it_unpin(c->m, n);
	}
	c->used += fuse_add_direntry_plus(c->req, c->buf + c->used,
					  c->size - c->used, nm, &e,
					  (off_t)next_pos);
	return 0;
}

static void do_readdir(fuse_req_t req, size_t size, off_t off,
		       struct fuse_file_info *fi, bool plus)
{
	struct ezfs_mount *m = req_mount(req);
	struct mnode *dir = (struct mnode *)(uintptr_t)fi->fh;
	struct rd_ctx c = { .m = m, .req = req, .size = size, .plus = plus };
	int err;

	c.buf = malloc(size ? size : 1);
	if (!c.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	err = ezfs_readdir(dir->ino, (uint64_t)off, rd_entry, &c);
	if (err < 0 && !c.used) {
		log_once(m, dir, "readdir", (uint64_t)off, err);
		free(c.buf);
		fuse_reply_err(req, fs_err(err));
		return;
	}
	fuse_reply_buf(req, c.buf, c.used);
	free(c.buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	do_readdir(req, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	do_readdir(req, size, off, fi, true);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct ezfs_mount *m = req_mount(req);
	struct statvfs sv;

	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = m->sb.blksz;
	sv.f_frsize = m->sb.blksz;
	sv.f_blocks = m->sb.blocks;
	sv.f_files = m->sb.inos;
	sv.f_namemax = 255;
	sv.f_flag = ST_RDONLY;
	fuse_reply_statfs(req, &sv);
}

/* getxattr of name, or listxattr if name is NULL; size 0 asks the length. */
static void do_xattr(fuse_req_t req, fuse_ino_t ino, const char *name,
		     size_t size)
{
	struct ezfs_mount *m = req_mount(req);
	struct mnode *n;
	ssize_t r;
	char *buf = NULL;
	int err = get_node(m, ino, &n);

	if (err) {
		fuse_reply_err(req, fs_err(err));
		return;
	}
	if (size) {
		buf = malloc(size);
		if (!buf) {
			ezi_it_unpin(m, n);
			fuse_reply_err(req, ENOMEM);
			return;
		}
	}
	if (name) {
		r = ezfs_getxattr(n->ino, name, buf, size);
		if (r < 0 && r != -ENODATA && r != -ERANGE)
			log_once(m, n, "getxattr", 0, (int)r);
	} else {
		r = ezfs_listxattr(n->ino, buf, size);
		if (r < 0 && r != -ERANGE)
			log_once(m, n, "listxattr", 0, (int)r);
	}
	ezi_it_unpin(m, n);
	if (r < 0)
		fuse_reply_err(req, fs_err((int)r));
	else if (!size)
		fuse_reply_xattr(req, (size_t)r);
	else
		fuse_reply_buf(req, buf, (size_t)r);
	free(buf);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			size_t size)
{
	do_xattr(req, ino, name, size);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	do_xattr(req, ino, NULL, size);
}

const struct fuse_lowlevel_ops ezi_mnt_ops = {
	.init = op_init,
	.ioctl = ezi_mnt_ctl_ioctl,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.readlink = op_readlink,
	.open = op_open,
	.read = op_read,
	.release = op_release,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.statfs = op_statfs,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
};
