/* SPDX-License-Identifier: MIT */
/*
 * export.c - ezfs_export: the image's tree (or a part) as an archive
 * through libarchive, loaded when first needed (archive_dl.c): pax (xattrs
 * as SCHILY.xattr), GNU tar, cpio or zip, optionally gzip, xz or zstd
 * compressed. Creates nothing on the host but the archive.
 */
#define _GNU_SOURCE /* asprintf */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "extract/internal.h"

void ezfs_export_opts_init(struct ezfs_export_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
}

#ifndef EZFS_HAVE_LIBARCHIVE
int ezfs_export(ezfs_image *img, int fd, const struct ezfs_export_opts *o,
		struct ezfs_export_result *res)
{
	if (res)
		memset(res, 0, sizeof(*res));
	if (o && o->message)
		o->message(o->arg, EZFS_LOG_ERROR,
			   "this libezfs was built without libarchive");
	return -EOPNOTSUPP;
}
#else

#include "extract/archive_dl.h"

#define E_MAX_DEPTH 4096
#define E_MEM_LIMIT (64u << 20) /* larger files go through a temp file */
#define E_CHUNK	    (4u << 20)

struct ectx {
	const char *img, *out;
	const struct ezfs_export_opts *o;
	ezfs_image *fs;
	struct archive *a;
	int format, keep_going, quiet, complete;
	unsigned damaged, skipped;
	uint64_t ino_seq, entries, bytes;
	struct ezi_hash dirs;
	struct ezi_hash links; /* nid -> first path written (tar) */
	char *buf;	       /* E_CHUNK bytes */
	struct ezfs_extract_progress prog;
	double last_progress;
};

static void e_progress(struct ectx *x, int force)
{
	double now;

	if (!x->o->progress)
		return;
	now = ezi_x_now();
	if (!force && now - x->last_progress < 0.1)
		return;
	x->last_progress = now;
	x->prog.bytes = x->bytes;
	x->prog.entries = x->entries;
	x->o->progress(x->o->arg, &x->prog);
}

static void e_msg(struct ectx *x, int level, const char *fmt, ...)
	EZI_X_PRINTF(3, 4);

static void e_msg(struct ectx *x, int level, const char *fmt, ...)
{
	char line[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	ezi_x_say(x->o->message, x->o->arg, NULL, level, "%s", line);
}

static void e_error(struct ectx *x, const char *path, const char *what, int err)
{
	char q[1024];

	ezfs_quote(path, strlen(path), q, sizeof(q));
	if (err)
		e_msg(x, EZFS_LOG_ERROR, "%s: /%s: %s: %s", x->img, q, what,
		      ezfs_strerror(err));
	else
		e_msg(x, EZFS_LOG_ERROR, "%s: /%s: %s", x->img, q, what);
}

/* An entry the image cannot give: listed and skipped with --keep-going
 * (0), else the error. */
static int damaged(struct ectx *x, const char *path, int err)
{
	if (!x->keep_going)
		return err;
	x->damaged++;
	if (x->o->entry)
		x->o->entry(x->o->arg, path, EZFS_ENTRY_DAMAGED, err);
	return 0;
}

static int arch_fail(struct ectx *x, const char *path)
{
	e_msg(x, EZFS_LOG_ERROR, "%s: %s%s%s", x->out, path ? path : "",
	      path ? ": " : "",
	      archive_error_string(x->a) ? archive_error_string(x->a)
					 : "archive error");
	return -EIO;
}

/* The file's bytes, read whole before anything of it is written: an
 * unreadable file leaves no half entry behind. In memory up to
 * E_MEM_LIMIT, else in a temporary file (*tf). */
static int read_data(struct ectx *x, ezfs_inode *ino, uint64_t size, char **mem,
		     FILE **tf)
{
	uint64_t off = 0;

	*mem = NULL;
	*tf = NULL;
	if (size <= E_MEM_LIMIT) {
		*mem = malloc(size ? size : 1);
		if (!*mem)
			return -ENOMEM;
	} else if (!(*tf = tmpfile())) {
		return -errno;
	}
	while (off < size) {
		size_t want =
			size - off < E_CHUNK ? (size_t)(size - off) : E_CHUNK;
		char *dst = *mem ? *mem + off : x->buf;
		ssize_t n = ezfs_pread(ino, dst, want, off);

		if (n <= 0)
			return n ? (int)n : -EUCLEAN;
		if (*tf && fwrite(dst, 1, (size_t)n, *tf) != (size_t)n)
			return -errno;
		off += (uint64_t)n;
	}
	if (*tf && (fflush(*tf) || fseeko(*tf, 0, SEEK_SET)))
		return -errno;
	return 0;
}

static int write_data(struct ectx *x, const char *path, char *mem, FILE *tf,
		      uint64_t size)
{
	uint64_t off = 0;

	while (off < size) {
		size_t n =
			size - off < E_CHUNK ? (size_t)(size - off) : E_CHUNK;
		const char *src = mem ? mem + off : x->buf;

		if (tf && fread(x->buf, 1, n, tf) != n) {
			e_msg(x, EZFS_LOG_ERROR, "temporary file: %s",
			      strerror(errno ? errno : EIO));
			return -EIO;
		}
		if (archive_write_data(x->a, src, n) != (la_ssize_t)n)
			return arch_fail(x, path);
		off += n;
	}
	return 0;
}

static int add_xattrs(struct ectx *x, struct archive_entry *e, ezfs_inode *ino,
		      const char *path)
{
	char *names = NULL, *k;
	void *val = NULL;
	ssize_t n, vn;
	int ret = 0;

	n = ezfs_listxattr(ino, NULL, 0);
	if (n > 0) {
		names = malloc((size_t)n);
		n = names ? ezfs_listxattr(ino, names, (size_t)n) : -ENOMEM;
	}
	if (n < 0) {
		e_error(x, path, "listing xattrs", (int)n);
		free(names);
		return (int)n;
	}
	for (k = names; n > 0 && k < names + n; k += strlen(k) + 1) {
		vn = ezfs_getxattr(ino, k, NULL, 0);
		if (vn >= 0) {
			free(val);
			val = malloc((size_t)vn + 1);
			vn = val ? ezfs_getxattr(ino, k, val, (size_t)vn + 1)
				 : -ENOMEM;
		}
		if (vn < 0) {
			e_error(x, path, "reading xattrs", (int)vn);
			ret = (int)vn;
			break;
		}
		archive_entry_xattr_add_entry(e, k, val, (size_t)vn);
	}
	free(val);
	free(names);
	return ret;
}

static int walk(struct ectx *x, ezfs_inode *dir, const char *path,
		unsigned depth);

/* The archive name of path ("" = the root of what is exported). */
static char *arch_name(const char *path, int isdir)
{
	char *p;

	if (!*path)
		return strdup("./");
	if (asprintf(&p, "%s%s", path, isdir ? "/" : "") < 0)
		return NULL;
	return p;
}

static int write_entry(struct ectx *x, uint64_t nid, const char *path,
		       unsigned depth)
{
	struct archive_entry *e = NULL;
	struct ezfs_stat st;
	ezfs_inode *ino;
	char *name = NULL, *mem = NULL, *target = NULL;
	FILE *tf = NULL;
	int ret, r, isdir, link_first = 0;

	ret = ezfs_inode_get(x->fs, nid, &ino);
	if (ret < 0) {
		e_error(x, path, "reading the inode", ret);
		return damaged(x, path, ret);
	}
	ezfs_inode_stat(ino, &st);
	isdir = S_ISDIR(st.mode);
	if (st.mtime_nsec >= 1000000000) {
		e_error(x, path, "mtime nanoseconds out of range", -EUCLEAN);
		ret = damaged(x, path, -EUCLEAN);
		goto out;
	}
	if (S_ISSOCK(st.mode) || (x->format == EZFS_EXPORT_ZIP && !isdir &&
				  !S_ISREG(st.mode) && !S_ISLNK(st.mode))) {
		if (!x->quiet)
			e_error(x, path,
				x->format == EZFS_EXPORT_ZIP
					? "left out: zip holds no devices, "
					  "FIFOs or sockets"
					: "left out: a socket cannot be "
					  "archived",
				0);
		x->skipped++;
		goto out;
	}
	if (isdir && x->format == EZFS_EXPORT_ZIP && !*path)
		goto children; /* zip has no entry for its root */
	name = arch_name(path, isdir);
	e = archive_entry_new();
	if (!name || !e) {
		ret = -ENOMEM;
		e_error(x, path, "entry", ret);
		goto out;
	}
	archive_entry_set_pathname(e, name);
	archive_entry_set_mode(e, st.mode);
	archive_entry_set_uid(e, st.uid);
	archive_entry_set_gid(e, st.gid);
	archive_entry_set_mtime(e, st.mtime, st.mtime_nsec);
	archive_entry_set_dev(e, 1);
	if (x->format == EZFS_EXPORT_PAX || x->format == EZFS_EXPORT_GNU) {
		archive_entry_set_ino64(e, (la_int64_t)nid + 1);
		archive_entry_set_nlink(e, isdir ? 2 : st.nlink);
	} else {
		/* cpio, zip: each path a file of its own (a newc link set
		 * keeps its data in the last member only) */
		archive_entry_set_ino64(e, (la_int64_t)++x->ino_seq);
		archive_entry_set_nlink(e, isdir ? 2 : 1);
	}
	if (S_ISCHR(st.mode) || S_ISBLK(st.mode)) {
		archive_entry_set_rdevmajor(e, st.rdev_major);
		archive_entry_set_rdevminor(e, st.rdev_minor);
	}
	/* a later path of a hard link: a link entry (tar), not the data */
	if (!isdir && st.nlink > 1 &&
	    (x->format == EZFS_EXPORT_PAX || x->format == EZFS_EXPORT_GNU)) {
		const char *first = ezi_hash_get(&x->links, nid);

		if (first) {
			archive_entry_set_hardlink(e, first);
			archive_entry_set_size(e, 0);
			goto header;
		}
		link_first = 1;
	}
	if (S_ISLNK(st.mode)) {
		ssize_t n;

		target = malloc(st.size + 1);
		n = target ? ezfs_readlink(ino, target, st.size + 1) : -ENOMEM;
		if (n < 0) {
			e_error(x, path, "reading the link target", (int)n);
			ret = n == -ENOMEM ? (int)n : damaged(x, path, (int)n);
			goto out;
		}
		archive_entry_set_symlink(e, target);
	}
	if (st.xattr_isize && (x->format == EZFS_EXPORT_PAX)) {
		ret = add_xattrs(x, e, ino, path);
		if (ret < 0) {
			ret = ret == -ENOMEM ? ret : damaged(x, path, ret);
			goto out;
		}
	}
	if (S_ISREG(st.mode)) {
		ret = read_data(x, ino, st.size, &mem, &tf);
		if (ret < 0) {
			e_error(x, path, "reading from the image", ret);
			ret = ret == -ENOMEM ? ret : damaged(x, path, ret);
			goto out;
		}
		archive_entry_set_size(e, (la_int64_t)st.size);
	} else {
		archive_entry_set_size(e, 0);
	}
header:
	r = archive_write_header(x->a, e);
	if (r == ARCHIVE_FATAL) {
		ret = arch_fail(x, name);
		goto out;
	}
	if (r == ARCHIVE_FAILED) {
		e_msg(x, EZFS_LOG_ERROR, "%s: /%s: left out: %s", x->img, path,
		      archive_error_string(x->a));
		x->skipped++;
		goto out;
	}
	x->entries++;
	if (S_ISREG(st.mode) && !archive_entry_hardlink(e)) {
		ret = write_data(x, name, mem, tf, st.size);
		if (ret < 0)
			goto out;
		x->bytes += st.size;
	}
	e_progress(x, 0);
	if (link_first) {
		char *copy = strdup(name);

		ret = copy ? ezi_hash_add(&x->links, nid, copy) : -ENOMEM;
		if (ret < 0) {
			free(copy);
			e_error(x, path, "hard link", ret);
			goto out;
		}
	}
children:
	if (isdir) {
		r = ezi_x_nid_add(&x->dirs, nid);
		if (r == 0) {
			e_error(x, path, "directory loop in the image",
				-EUCLEAN);
			ret = damaged(x, path, -EUCLEAN);
		} else if (r < 0 || depth > E_MAX_DEPTH) {
			ret = r < 0 ? r : -ELOOP;
			e_error(x, path, "directory", ret);
		} else {
			ret = walk(x, ino, path, depth);
		}
	}
out:
	if (tf)
		fclose(tf);
	free(mem);
	free(target);
	free(name);
	if (e)
		archive_entry_free(e);
	ezfs_inode_put(ino);
	return ret;
}

static int walk(struct ectx *x, ezfs_inode *dir, const char *path,
		unsigned depth)
{
	struct ezfs_dirent *ents = NULL;
	size_t n = 0, i;
	int ret;

	if (x->keep_going) {
		struct ezfs_stat dst;
		unsigned nbad;

		ezfs_inode_stat(dir, &dst);
		ret = ezi_x_readdir_tolerant(x->fs, dir, dst.size, &ents, &n,
					     &nbad);
	} else {
		ret = ezfs_readdir_all(dir, &ents, &n);
	}
	if (ret < 0) {
		e_error(x, path, "reading the directory", ret);
		/* --keep-going: the entries of its other blocks go on */
		ret = ret == -ENOMEM ? ret : damaged(x, path, ret);
	}
	for (i = 0; !ret && i < n; i++) {
		const struct ezfs_dirent *d = &ents[i];
		char *child;

		if (ezi_x_is_dots(d->name, d->namelen))
			continue;
		if (!d->namelen || memchr(d->name, '/', d->namelen) ||
		    memchr(d->name, '\0', d->namelen)) {
			char q[768];

			ezfs_quote(d->name, d->namelen, q, sizeof(q));
			e_msg(x, EZFS_LOG_ERROR,
			      "%s: /%s: invalid entry name '%s'", x->img, path,
			      q);
			ret = damaged(x, path, -EUCLEAN);
			continue;
		}
		if (asprintf(&child, "%s%s%s", path, *path ? "/" : "",
			     d->name) < 0) {
			ret = -ENOMEM;
			break;
		}
		ret = write_entry(x, d->nid, child, depth + 1);
		free(child);
	}
	ezfs_dirents_free(ents, n);
	return ret;
}

static const char *const e_formats[] = { "pax", "gnu", "cpio", "zip" };
static const char *const e_filters[] = { NULL, "gzip", "xz", "zstd" };

static int set_format(struct ectx *x, int filter)
{
	int r = ARCHIVE_OK;

	switch (x->format) {
	case EZFS_EXPORT_PAX:
		r = archive_write_set_format_pax(x->a);
		/* SCHILY.xattr only, as GNU tar writes and reads them (it
		 * warns about each LIBARCHIVE.xattr record) */
		if (r == ARCHIVE_OK)
			r = archive_write_set_format_option(
				x->a, "pax", "xattrheader", "SCHILY");
		break;
	case EZFS_EXPORT_GNU:
		r = archive_write_set_format_gnutar(x->a);
		break;
	case EZFS_EXPORT_CPIO:
		r = archive_write_set_format_cpio_newc(x->a);
		break;
	case EZFS_EXPORT_ZIP:
		r = archive_write_set_format_zip(x->a);
		break;
	}
	if (r == ARCHIVE_OK && filter == EZFS_EXPORT_GZIP)
		r = archive_write_add_filter_gzip(x->a);
	else if (r == ARCHIVE_OK && filter == EZFS_EXPORT_XZ)
		r = archive_write_add_filter_xz(x->a);
	else if (r == ARCHIVE_OK && filter == EZFS_EXPORT_ZSTD)
		r = archive_write_add_filter_zstd(x->a);
	if (r == ARCHIVE_OK)
		r = archive_write_set_bytes_in_last_block(x->a, 1);
	if (r != ARCHIVE_OK) {
		e_msg(x, EZFS_LOG_ERROR, "--format=%s%s%s: %s",
		      e_formats[x->format], filter ? " --compress=" : "",
		      filter ? e_filters[filter] : "",
		      archive_error_string(x->a));
		return -EINVAL;
	}
	return 0;
}

int ezfs_export(ezfs_image *img, int fd, const struct ezfs_export_opts *o,
		struct ezfs_export_result *res)
{
	struct ezfs_export_opts given;
	struct ectx x;
	const char *why, *sub;
	ezfs_inode *root = NULL;
	struct ezfs_stat st;
	uint64_t nid;
	int ret;

	if (res)
		memset(res, 0, sizeof(*res));
	ezfs_export_opts_init(&given);
	if (o) {
		/* an older caller's struct is a prefix of ours */
		if (!o->size || o->size > sizeof(given))
			return -EINVAL;
		memcpy(&given, o, o->size);
	}
	if (!img || fd < 0 || given.format < EZFS_EXPORT_PAX ||
	    given.format > EZFS_EXPORT_ZIP ||
	    given.filter < EZFS_EXPORT_PLAIN ||
	    given.filter > EZFS_EXPORT_ZSTD ||
	    (given.filter && given.format == EZFS_EXPORT_ZIP))
		return -EINVAL;
	memset(&x, 0, sizeof(x));
	x.o = &given;
	x.fs = img;
	x.format = given.format;
	x.keep_going = !!(given.flags & EZFS_EXPORT_KEEP_GOING);
	x.quiet = !!(given.flags & EZFS_EXPORT_QUIET);
	x.img = given.image_name ? given.image_name : "image";
	x.out = given.output_name ? given.output_name : "stdout";
	sub = given.path ? given.path : "/";
	ret = ezfs_resolve(img, sub, &nid);
	if (!ret)
		ret = ezfs_inode_get(img, nid, &root);
	if (ret < 0) {
		e_msg(&x, EZFS_LOG_ERROR, "%s: %s: %s", x.img, sub,
		      ezfs_strerror(ret));
		return ret;
	}
	ezfs_inode_stat(root, &st);
	ezfs_inode_put(root);
	if (ezi_archive_dl_load(&why) < 0) {
		e_msg(&x, EZFS_LOG_ERROR, "%s", why);
		return -EOPNOTSUPP;
	}
	x.buf = malloc(E_CHUNK);
	x.a = archive_write_new();
	if (!x.buf || !x.a) {
		e_msg(&x, EZFS_LOG_ERROR, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	ret = set_format(&x, given.filter);
	if (ret < 0)
		goto out;
	if (archive_write_open_fd(x.a, fd) != ARCHIVE_OK) {
		ret = arch_fail(&x, NULL);
		goto out;
	}
	if (given.progress && S_ISDIR(st.mode)) {
		ezi_x_totals(img, nid, &x.prog.total_bytes,
			     &x.prog.total_entries);
		x.prog.total_entries++; /* the root's own entry */
	} else if (given.progress) {
		x.prog.total_entries = 1;
		x.prog.total_bytes = S_ISREG(st.mode) ? st.size : 0;
	}
	if (S_ISDIR(st.mode)) {
		ret = write_entry(&x, nid, "", 0);
	} else {
		const char *base = strrchr(sub, '/');

		ret = write_entry(&x, nid, base ? base + 1 : sub, 1);
	}
	if (ret < 0)
		goto out;
	if (archive_write_close(x.a) != ARCHIVE_OK) {
		ret = arch_fail(&x, NULL);
		goto out;
	}
	e_progress(&x, 1);
	x.complete = 1;
	if (x.damaged) {
		e_msg(&x, EZFS_LOG_ERROR,
		      "%s: %u damaged entr%s left out (see above); "
		      "everything else archived",
		      x.img, x.damaged, x.damaged == 1 ? "y" : "ies");
		ret = -EIO;
	}
out:
	if (res) {
		res->entries = x.entries;
		res->bytes = x.bytes;
		res->damaged = x.damaged;
		res->skipped = x.skipped;
		res->complete = x.complete;
	}
	if (x.a)
		archive_write_free(x.a);
	ezi_x_nid_free(&x.dirs, 0);
	ezi_x_nid_free(&x.links, 1);
	free(x.buf);
	return ret;
}
#endif
