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
	char *zeros;	       /* E_CHUNK zeros, once needed */
	/* entries holding what the format cannot: lost, or left out */
	struct {
		uint64_t xattrs, nsec, devices, sockets, links, holes, names;
	} lost;
	unsigned blksz; /* the image's block: holes are whole ones */
	struct ezfs_extract_progress prog;
	double last_progress;
};

static void e_progress(struct ectx *x, int force)
{
	if (!x->o->progress || !ezi_x_progress_due(&x->last_progress, force))
		return;
	x->prog.bytes = x->bytes;
	x->prog.entries = x->entries;
	x->o->progress(x->o->arg, &x->prog);
}

static void e_msg(struct ectx *x, int level, const char *fmt, ...)
	EZI_X_PRINTF(3, 4);

static void e_msg(struct ectx *x, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ezi_x_vsay(x->o->message, x->o->arg, NULL, level, fmt, ap);
	va_end(ap);
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

/* A run of a file's data: bytes [off, off + len). */
struct erun {
	uint64_t off, len;
};

/*
 * A file's data, read whole before anything of it is written (an
 * unreadable file leaves no half entry behind): its runs of data, the
 * holes between them (where the image stores holes, and whole blocks of
 * zeros), the bytes in memory at their file offsets (files up to
 * E_MEM_LIMIT) or packed in a temporary file.
 */
struct edata {
	char *mem;
	FILE *tf;
	EZI_VEC(struct erun) runs;
	int holes;
};

static void edata_free(struct edata *d)
{
	free(d->mem);
	if (d->tf)
		fclose(d->tf);
	ezi_vec_free(&d->runs);
	memset(d, 0, sizeof(*d));
}

/* Keep data [off, off + n) of the file: its run, its bytes. */
static int keep(struct edata *d, const char *src, uint64_t off, size_t n)
{
	struct erun *last = d->runs.n ? &d->runs.v[d->runs.n - 1] : NULL;

	if (last && last->off + last->len == off)
		last->len += n;
	else if (ezi_vec_push(&d->runs, ((struct erun){ off, n })))
		return -ENOMEM;
	if (d->mem)
		memcpy(d->mem + off, src, n);
	else if (fwrite(src, 1, n, d->tf) != n)
		return errno ? -errno : -EIO;
	return 0;
}

static int read_data(struct ectx *x, ezfs_inode *ino, uint64_t size,
		     struct edata *d)
{
	uint64_t pos = 0, woff;
	ezfs_stream *s;
	const void *data;
	size_t len;
	int ret, err = 0;

	memset(d, 0, sizeof(*d));
	if (size <= E_MEM_LIMIT) {
		d->mem = malloc(size ? size : 1);
		if (!d->mem)
			return -ENOMEM;
	} else if (!(d->tf = tmpfile())) {
		return -errno;
	}
	ret = ezfs_stream_open(ino, 0, size, EZFS_STREAM_HOLES, &s);
	if (ret < 0)
		return ret;
	while ((ret = ezfs_stream_next(s, &data, &woff, &len)) > 0 &&
	       woff == pos) {
		const char *p = data;
		uint64_t at = woff, end = woff + len;

		/* holes: the image's, and its whole blocks of zeros */
		while (p && at < end && !err) {
			uint64_t next = (at / x->blksz + 1) * x->blksz;

			if (next > end)
				next = end;
			if (ezi_x_all_zero(p + (at - woff),
					   (size_t)(next - at)))
				d->holes = 1;
			else
				err = keep(d, p + (at - woff), at,
					   (size_t)(next - at));
			at = next;
		}
		if (!p)
			d->holes = 1;
		if (err)
			break;
		pos += len;
	}
	ezfs_stream_close(s);
	if (err < 0)
		return err;
	if (ret < 0)
		return ret;
	if (pos < size)
		return -EUCLEAN; /* the data ended early */
	if (d->tf && (fflush(d->tf) || fseeko(d->tf, 0, SEEK_SET)))
		return -errno;
	return 0;
}

/* n bytes of the file to the archive (zeros: src NULL). */
static int feed(struct ectx *x, const char *path, const char *src, size_t n)
{
	if (!src && !x->zeros && !(x->zeros = calloc(1, E_CHUNK)))
		return -ENOMEM;
	if (archive_write_data(x->a, src ? src : x->zeros, n) != (la_ssize_t)n)
		return arch_fail(x, path);
	return 0;
}

/* The file's bytes in order: its runs, zeros for the holes between them
 * (a pax sparse member drops those again). */
static int write_data(struct ectx *x, const char *path, struct edata *d,
		      uint64_t size)
{
	uint64_t pos = 0;
	size_t i;
	int ret = 0;

	for (i = 0; i <= d->runs.n && !ret; i++) {
		const struct erun *r = i < d->runs.n ? &d->runs.v[i] : NULL;
		uint64_t hole = (r ? r->off : size) - pos, end;

		while (hole && !ret) {
			size_t n = hole < E_CHUNK ? (size_t)hole : E_CHUNK;

			ret = feed(x, path, NULL, n);
			hole -= n;
		}
		if (!r)
			break;
		for (pos = r->off, end = r->off + r->len; pos < end && !ret;) {
			size_t n = end - pos < E_CHUNK ? (size_t)(end - pos)
						       : E_CHUNK;

			if (d->tf && fread(x->buf, 1, n, d->tf) != n) {
				e_msg(x, EZFS_LOG_ERROR, "temporary file: %s",
				      strerror(errno ? errno : EIO));
				return -EIO;
			}
			ret = feed(x, path, d->mem ? d->mem + pos : x->buf, n);
			pos += n;
		}
	}
	return ret;
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

/* Is s well-formed UTF-8 (no overlong forms, surrogates or code points
 * past U+10FFFF)? */
static int utf8_ok(const char *str)
{
	const unsigned char *p = (const unsigned char *)str;

	while (*p) {
		unsigned c = *p, n, cp, i;

		if (c < 0x80) {
			p++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			n = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			n = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 3, cp = c & 0x07;
		else
			return 0;
		for (i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (p[i] & 0x3f);
		}
		if ((n == 2 &&
		     (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
		    (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
			return 0;
		p += n + 1;
	}
	return 1;
}

/* An entry the format cannot hold: counted for the summary, named unless
 * quiet. */
static void left_out(struct ectx *x, const char *path, const char *why,
		     uint64_t *count)
{
	if (!x->quiet)
		e_error(x, path, why, 0);
	(*count)++;
	x->skipped++;
}

/* Does ino have xattrs (not held by gnu, cpio, zip)? */
static int has_xattrs(ezfs_inode *ino, const struct ezfs_stat *st)
{
	return st->xattr_isize && ezfs_listxattr(ino, NULL, 0) > 0;
}

static int write_entry(struct ectx *x, uint64_t nid, const char *path,
		       unsigned depth)
{
	struct archive_entry *e = NULL;
	struct ezfs_stat st;
	struct edata d = { 0 };
	ezfs_inode *ino;
	char *name = NULL, *target = NULL;
	int ret, r, isdir, link_first = 0, zip = x->format == EZFS_EXPORT_ZIP;
	int tar = x->format == EZFS_EXPORT_PAX || x->format == EZFS_EXPORT_GNU;

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
	if (S_ISSOCK(st.mode)) {
		left_out(x, path,
			 zip ? "left out: zip holds no devices, FIFOs or "
			       "sockets"
			     : "left out: a socket cannot be archived",
			 &x->lost.sockets);
		goto out;
	}
	if (zip && !isdir && !S_ISREG(st.mode) && !S_ISLNK(st.mode)) {
		left_out(x, path,
			 "left out: zip holds no devices, FIFOs or "
			 "sockets",
			 &x->lost.devices);
		goto out;
	}
	/* zip names are UTF-8 (its flag set), or must be ASCII */
	if (zip && !utf8_ok(path)) {
		left_out(x, path, "left out: zip holds UTF-8 names only",
			 &x->lost.names);
		goto out;
	}
	if (isdir && zip && !*path)
		goto children; /* zip has no entry for its root */
	name = arch_name(path, isdir);
	e = archive_entry_new();
	if (!name || !e) {
		ret = -ENOMEM;
		e_error(x, path, "entry", ret);
		goto out;
	}
	if (zip)
		archive_entry_set_pathname_utf8(e, name);
	else
		archive_entry_set_pathname(e, name);
	archive_entry_set_mode(e, st.mode);
	archive_entry_set_uid(e, st.uid);
	archive_entry_set_gid(e, st.gid);
	archive_entry_set_mtime(e, st.mtime, st.mtime_nsec);
	archive_entry_set_dev(e, 1);
	if (tar) {
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
	if (x->format != EZFS_EXPORT_PAX && st.mtime_nsec)
		x->lost.nsec++;
	/* a later path of a hard link: a link entry (tar), not the data;
	 * cpio and zip store it again */
	if (!isdir && st.nlink > 1) {
		const char *first = ezi_hash_get(&x->links, nid);

		if (first && tar) {
			archive_entry_set_hardlink(e, first);
			archive_entry_set_size(e, 0);
			goto header;
		}
		if (first)
			x->lost.links++;
		link_first = !first;
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
		if (zip && utf8_ok(target))
			archive_entry_set_symlink_utf8(e, target);
		else
			archive_entry_set_symlink(e, target);
	}
	if (x->format == EZFS_EXPORT_PAX && st.xattr_isize) {
		ret = add_xattrs(x, e, ino, path);
		if (ret < 0) {
			ret = ret == -ENOMEM ? ret : damaged(x, path, ret);
			goto out;
		}
	} else if (x->format != EZFS_EXPORT_PAX && has_xattrs(ino, &st)) {
		x->lost.xattrs++;
	}
	if (S_ISREG(st.mode)) {
		size_t i;

		ret = read_data(x, ino, st.size, &d);
		if (ret < 0) {
			e_error(x, path, "reading from the image", ret);
			ret = ret == -ENOMEM ? ret : damaged(x, path, ret);
			goto out;
		}
		archive_entry_set_size(e, (la_int64_t)st.size);
		/* pax: a sparse member of the runs (libarchive writes GNU
		 * tar's PAX sparse format 1.0); the others write zeros */
		if (d.holes && x->format == EZFS_EXPORT_PAX) {
			if (!d.runs.n)
				archive_entry_sparse_add_entry(e, 0, 0);
			for (i = 0; i < d.runs.n; i++)
				archive_entry_sparse_add_entry(
					e, (la_int64_t)d.runs.v[i].off,
					(la_int64_t)d.runs.v[i].len);
		} else if (d.holes) {
			x->lost.holes++;
		}
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
		ret = write_data(x, name, &d, st.size);
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
	edata_free(&d);
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

	ret = ezi_x_readdir(dir, x->keep_going, &ents, &n);
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
		/* names given as UTF-8, stored with the zip's UTF-8 flag */
		if (r == ARCHIVE_OK)
			r = archive_write_set_format_option(
				x->a, "zip", "hdrcharset", "UTF-8");
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

/* cpio (newc) sizes are 8 hex digits: the first file of 4 GiB or more
 * under nid (path), reported; -EFBIG, else 0. Errors are left to the
 * export itself. */
static int cpio_fits(struct ectx *x, uint64_t nid, const char *path,
		     unsigned depth)
{
	struct ezfs_dirent *ents = NULL;
	struct ezfs_stat st;
	ezfs_inode *dir;
	size_t n = 0, i;
	int ret = 0;

	if (ezfs_stat_nid(x->fs, nid, &st))
		return 0;
	if (S_ISREG(st.mode) && st.size > 0xffffffffu) {
		char q[1024];

		ezfs_quote(path, strlen(path), q, sizeof(q));
		e_msg(x, EZFS_LOG_ERROR,
		      "%s: /%s: %llu bytes, more than a cpio member holds "
		      "(4 GiB - 1); nothing written (pax holds it)",
		      x->img, q, (unsigned long long)st.size);
		return -EFBIG;
	}
	if (!S_ISDIR(st.mode) || depth > E_MAX_DEPTH ||
	    ezi_x_nid_add(&x->dirs, nid) <= 0 ||
	    ezfs_inode_get(x->fs, nid, &dir))
		return 0;
	if (!ezfs_readdir_all(dir, &ents, &n)) {
		for (i = 0; !ret && i < n; i++) {
			char *child;

			if (ezi_x_is_dots(ents[i].name, ents[i].namelen) ||
			    asprintf(&child, "%s%s%s", path, *path ? "/" : "",
				     ents[i].name) < 0)
				continue;
			ret = cpio_fits(x, ents[i].nid, child, depth + 1);
			free(child);
		}
	}
	ezfs_dirents_free(ents, n);
	ezfs_inode_put(dir);
	return ret;
}

/* One line: what the format could not hold, and how many entries lost
 * it. */
static void summary(struct ectx *x)
{
	static const char *const fmts[] = { "pax", "gnu", "cpio", "zip" };
	const struct {
		uint64_t n;
		const char *what, *unit, *how;
		int pax; /* pax holds it */
	} l[] = {
		{ x->lost.xattrs, "xattrs", "entr", "", 1 },
		{ x->lost.nsec, "sub-second mtimes", "entr", "", 1 },
		{ x->lost.devices, "devices and FIFOs", "entr", ", left out",
		  1 },
		{ x->lost.sockets, "sockets", "entr", ", left out", 0 },
		{ x->lost.links, "hard links", "entr", ", stored as copies",
		  1 },
		{ x->lost.holes, "holes", "file", ", written as zeros", 1 },
		{ x->lost.names, "names that are not UTF-8", "entr",
		  ", left out", 1 },
	};
	char line[1024];
	size_t len = 0, i;
	int pax_keeps = 0;

	for (i = 0; i < sizeof(l) / sizeof(l[0]); i++) {
		int entr = l[i].unit[0] == 'e';

		if (!l[i].n || len >= sizeof(line))
			continue;
		len += (size_t)snprintf(line + len, sizeof(line) - len,
					"%s%s (%llu %s%s%s)", len ? ", " : "",
					l[i].what, (unsigned long long)l[i].n,
					l[i].unit,
					entr ? (l[i].n == 1 ? "y" : "ies")
					     : (l[i].n == 1 ? "" : "s"),
					l[i].how);
		pax_keeps |= l[i].pax;
	}
	if (len)
		e_msg(x, EZFS_LOG_WARN, "%s: what %s cannot hold: %s%s", x->img,
		      fmts[x->format], line,
		      pax_keeps && x->format != EZFS_EXPORT_PAX
			      ? "; pax keeps them"
			      : "");
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
	if (ezi_x_opts_copy(&given, sizeof(given), o) || !img || fd < 0 ||
	    given.format < EZFS_EXPORT_PAX || given.format > EZFS_EXPORT_ZIP ||
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
	if (x.format == EZFS_EXPORT_CPIO) {
		const char *base = strrchr(sub, '/');

		ret = cpio_fits(&x, nid,
				S_ISDIR(st.mode) ? ""
				: base		 ? base + 1
						 : sub,
				0);
		ezi_x_nid_free(&x.dirs, 0);
		if (ret < 0)
			return ret;
	}
	{
		struct ezfs_sb_info si;

		ezfs_get_sb_info(img, &si);
		x.blksz = si.blksz ? si.blksz : 4096;
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
	summary(&x);
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
		res->lost_xattrs = x.lost.xattrs;
		res->lost_nsec = x.lost.nsec;
		res->lost_devices = x.lost.devices;
		res->lost_sockets = x.lost.sockets;
		res->lost_links = x.lost.links;
		res->lost_holes = x.lost.holes;
		res->lost_names = x.lost.names;
	}
	if (x.a)
		archive_write_free(x.a);
	ezi_x_nid_free(&x.dirs, 0);
	ezi_x_nid_free(&x.links, 1);
	free(x.buf);
	free(x.zeros);
	return ret;
}
#endif
