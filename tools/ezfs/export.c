/* SPDX-License-Identifier: MIT */
/*
 * export.c - ezfs export: the image's tree (or a part) as an archive on
 * stdout or in a file, through libarchive: pax (xattrs as SCHILY.xattr),
 * GNU tar, cpio or zip, optionally gzip, xz or zstd compressed. Needs no
 * root: nothing is created on the host but the archive.
 */
#define _GNU_SOURCE /* asprintf */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "extract.h" /* x_readdir_tolerant */

int cmd_export(int argc, char **argv);

#ifndef EZFS_HAVE_LIBARCHIVE
int cmd_export(int argc, char **argv)
{
	fprintf(stderr, "ezfs export: this ezfs was built without libarchive "
			"(install libarchive-dev and build again)\n");
	return 1;
}
#else

#include "archive_dl.h"

#define E_CMD	    "export"
#define E_MAX_DEPTH 4096
#define E_MEM_LIMIT (64u << 20) /* larger files go through a temp file */
#define E_CHUNK	    (4u << 20)

enum { E_PAX, E_GNU, E_CPIO, E_ZIP };

struct ectx {
	const char *img, *out;
	ezfs_image *fs;
	struct archive *a;
	int format, keep_going, quiet;
	FILE *errs;
	unsigned damaged, skipped;
	uint64_t ino_seq;
	struct cli_nidset dirs;
	struct cli_nidmap links; /* nid -> first path written (tar) */
	char *buf;		 /* E_CHUNK bytes */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ezfs export [OPTIONS] IMG [PATH]\n"
		"Write the image's tree (or the directory or file PATH) as an\n"
		"archive to stdout or FILE: contents, modes, owners, "
		"nanosecond\n"
		"mtimes, xattrs (pax: SCHILY.xattr), hard links, symlinks,\n"
		"devices and FIFOs. No root needed.\n"
		"  -o, --output FILE  the archive's file (made whole or not at "
		"all)\n"
		"  --format FMT       pax (default), gnu, cpio or zip\n"
		"  --compress ALG     gzip, xz or zstd (tar and cpio)\n"
		"  -z                 --compress=gzip\n"
		"  -J                 --compress=xz\n"
		"  --keep-going       a damaged inode, extent or directory is\n"
		"                     named and left out; the rest is "
		"archived\n"
		"                     (exit 1)\n"
		"  --errors FILE      the damaged paths, one a line\n"
		"  -q, --quiet        no notes on skipped sockets\n"
		"A tar holds no sockets: they are left out with a "
		"note.\n" CLI_ENGINE_HELP CLI_IMAGE_HELP);
}

static void e_error(struct ectx *x, const char *path, const char *what, int err)
{
	char q[1024];

	ezfs_quote(path, strlen(path), q, sizeof(q));
	if (err)
		cli_error(E_CMD, "%s: /%s: %s: %s", x->img, q, what,
			  ezfs_strerror(err));
	else
		cli_error(E_CMD, "%s: /%s: %s", x->img, q, what);
}

/* An entry the image cannot give: listed and skipped with --keep-going
 * (0), else the error. */
static int damaged(struct ectx *x, const char *path, int err)
{
	if (!x->keep_going)
		return err;
	x->damaged++;
	if (x->errs)
		fprintf(x->errs, "%s\n", *path ? path : ".");
	return 0;
}

static int arch_fail(struct ectx *x, const char *path)
{
	cli_error(E_CMD, "%s: %s%s%s", x->out ? x->out : "stdout",
		  path ? path : "", path ? ": " : "",
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
			cli_error(E_CMD, "temporary file: %s",
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
	void **slot = NULL;
	int ret, added = 0, r, isdir;

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
	if (S_ISSOCK(st.mode) || (x->format == E_ZIP && !isdir &&
				  !S_ISREG(st.mode) && !S_ISLNK(st.mode))) {
		if (!x->quiet)
			e_error(x, path,
				x->format == E_ZIP
					? "left out: zip holds no devices, "
					  "FIFOs or sockets"
					: "left out: a socket cannot be "
					  "archived",
				0);
		x->skipped++;
		goto out;
	}
	if (isdir && x->format == E_ZIP && !*path)
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
	if (x->format == E_PAX || x->format == E_GNU) {
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
	    (x->format == E_PAX || x->format == E_GNU)) {
		slot = cli_nidmap_slot(&x->links, nid, &added);
		if (!slot) {
			ret = -ENOMEM;
			e_error(x, path, "hard link", ret);
			goto out;
		}
		if (*slot) {
			archive_entry_set_hardlink(e, *slot);
			archive_entry_set_size(e, 0);
			goto header;
		}
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
	if (st.xattr_isize && (x->format == E_PAX)) {
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
		cli_error(E_CMD, "%s: /%s: left out: %s", x->img, path,
			  archive_error_string(x->a));
		x->skipped++;
		goto out;
	}
	if (S_ISREG(st.mode) && !archive_entry_hardlink(e)) {
		ret = write_data(x, name, mem, tf, st.size);
		if (ret < 0)
			goto out;
	}
	if (slot && !*slot && !(*slot = strdup(name))) {
		ret = -ENOMEM;
		e_error(x, path, "hard link", ret);
		goto out;
	}
children:
	if (isdir) {
		r = cli_nidset_add(&x->dirs, nid);
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
		ret = x_readdir_tolerant(x->fs, dir, dst.size, &ents, &n,
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

		if (cli_is_dots(d->name, d->namelen))
			continue;
		if (!d->namelen || memchr(d->name, '/', d->namelen) ||
		    memchr(d->name, '\0', d->namelen)) {
			char q[768];

			ezfs_quote(d->name, d->namelen, q, sizeof(q));
			cli_error(E_CMD, "%s: /%s: invalid entry name '%s'",
				  x->img, path, q);
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

static int set_format(struct ectx *x, const char *fmt, const char *comp)
{
	int r = ARCHIVE_OK;

	switch (x->format) {
	case E_PAX:
		r = archive_write_set_format_pax(x->a);
		/* SCHILY.xattr only, as GNU tar writes and reads them (it
		 * warns about each LIBARCHIVE.xattr record) */
		if (r == ARCHIVE_OK)
			r = archive_write_set_format_option(
				x->a, "pax", "xattrheader", "SCHILY");
		break;
	case E_GNU:
		r = archive_write_set_format_gnutar(x->a);
		break;
	case E_CPIO:
		r = archive_write_set_format_cpio_newc(x->a);
		break;
	case E_ZIP:
		r = archive_write_set_format_zip(x->a);
		break;
	}
	if (r == ARCHIVE_OK && comp) {
		if (!strcmp(comp, "gzip"))
			r = archive_write_add_filter_gzip(x->a);
		else if (!strcmp(comp, "xz"))
			r = archive_write_add_filter_xz(x->a);
		else
			r = archive_write_add_filter_zstd(x->a);
	}
	if (r == ARCHIVE_OK)
		r = archive_write_set_bytes_in_last_block(x->a, 1);
	if (r != ARCHIVE_OK) {
		cli_error(E_CMD, "--format=%s%s%s: %s", fmt,
			  comp ? " --compress=" : "", comp ? comp : "",
			  archive_error_string(x->a));
		return -EINVAL;
	}
	return 0;
}

int cmd_export(int argc, char **argv)
{
	enum { O_FORMAT = 0x300, O_COMPRESS, O_KEEP, O_ERRORS };
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, O_FORMAT },
		{ "compress", required_argument, NULL, O_COMPRESS },
		{ "keep-going", no_argument, NULL, O_KEEP },
		{ "errors", required_argument, NULL, O_ERRORS },
		{ "quiet", no_argument, NULL, 'q' },
		CLI_ENGINE_OPTS,
		CLI_IMAGE_OPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ectx x;
	struct cli_log lg = { 0 };
	const char *fmt = "pax", *comp = NULL, *errors = NULL, *sub = "/";
	char *tmp = NULL;
	const char *why;
	ezfs_inode *root = NULL;
	int c, ret, fd = -1, rc = 1;
	struct ezfs_stat st;
	uint64_t nid;

	memset(&x, 0, sizeof(x));
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":o:zJqh", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			x.out = optarg;
			break;
		case O_FORMAT:
			fmt = optarg;
			break;
		case O_COMPRESS:
			comp = optarg;
			break;
		case 'z':
			comp = "gzip";
			break;
		case 'J':
			comp = "xz";
			break;
		case O_KEEP:
			x.keep_going = 1;
			break;
		case O_ERRORS:
			errors = optarg;
			break;
		case 'q':
			x.quiet = 1;
			break;
		default:
			ret = cli_opt_other(E_CMD, c, argv, usage);
			if (ret >= 0)
				return ret;
		}
	}
	if (cli_nargs(E_CMD, argc - optind, 1, 2, "missing IMG"))
		return 2;
	if (!strcmp(fmt, "pax") || !strcmp(fmt, "tar"))
		x.format = E_PAX;
	else if (!strcmp(fmt, "gnu") || !strcmp(fmt, "gnutar"))
		x.format = E_GNU;
	else if (!strcmp(fmt, "cpio") || !strcmp(fmt, "newc"))
		x.format = E_CPIO;
	else if (!strcmp(fmt, "zip"))
		x.format = E_ZIP;
	else
		return cli_usage_error(
			E_CMD, "--format '%s': pax, gnu, cpio or zip", fmt);
	if (comp && strcmp(comp, "gzip") && strcmp(comp, "xz") &&
	    strcmp(comp, "zstd"))
		return cli_usage_error(
			E_CMD, "--compress '%s': gzip, xz or zstd", comp);
	if (comp && x.format == E_ZIP)
		return cli_usage_error(E_CMD, "--compress: not with zip (it "
					      "compresses each file itself)");
	if (!x.out && isatty(STDOUT_FILENO))
		return cli_usage_error(E_CMD,
				       "refusing to write an archive to a "
				       "terminal (use -o FILE or a pipe)");
	x.img = argv[optind];
	if (argc - optind == 2)
		sub = argv[optind + 1];
	lg.max = 20;
	if (cli_open(E_CMD, x.img, &lg, &x.fs) < 0)
		return 1;
	ret = ezfs_resolve(x.fs, sub, &nid);
	if (!ret)
		ret = ezfs_inode_get(x.fs, nid, &root);
	if (ret < 0) {
		cli_fail(E_CMD, x.img, sub, ret);
		goto out;
	}
	ezfs_inode_stat(root, &st);
	if (archive_dl_load(&why) < 0) {
		cli_error(E_CMD, "%s", why);
		goto out;
	}
	x.buf = malloc(E_CHUNK);
	x.a = archive_write_new();
	if (!x.buf || !x.a) {
		cli_error(E_CMD, "out of memory");
		goto out;
	}
	if (set_format(&x, fmt, comp) < 0)
		goto out;
	if (errors && !(x.errs = fopen(errors, "w"))) {
		cli_error(E_CMD, "%s: %s", errors, strerror(errno));
		goto out;
	}
	if (x.out) {
		/* a temporary name beside FILE, renamed once complete */
		if (asprintf(&tmp, "%s.XXXXXX", x.out) < 0) {
			tmp = NULL;
			goto out;
		}
		fd = mkstemp(tmp);
		if (fd < 0) {
			cli_error(E_CMD, "%s: %s", x.out, strerror(errno));
			free(tmp);
			tmp = NULL;
			goto out;
		}
		{
			mode_t um = umask(0);

			umask(um);
			fchmod(fd, 0666 & ~um);
		}
	}
	if (archive_write_open_fd(x.a, x.out ? fd : STDOUT_FILENO) !=
	    ARCHIVE_OK) {
		arch_fail(&x, NULL);
		goto out;
	}
	if (S_ISDIR(st.mode)) {
		ezfs_inode_put(root);
		root = NULL;
		ret = write_entry(&x, nid, "", 0);
	} else {
		const char *base = strrchr(sub, '/');

		ezfs_inode_put(root);
		root = NULL;
		ret = write_entry(&x, nid, base ? base + 1 : sub, 1);
	}
	if (ret < 0)
		goto out;
	if (archive_write_close(x.a) != ARCHIVE_OK) {
		arch_fail(&x, NULL);
		goto out;
	}
	if (x.out && close(fd)) {
		fd = -1;
		cli_error(E_CMD, "%s: %s", x.out, strerror(errno));
		goto out;
	}
	fd = -1;
	if (x.out && rename(tmp, x.out)) {
		cli_error(E_CMD, "%s: %s", x.out, strerror(errno));
		goto out;
	}
	free(tmp);
	tmp = NULL;
	rc = 0;
	if (x.damaged) {
		cli_error(E_CMD,
			  "%s: %u damaged entr%s left out (see above); "
			  "everything else archived",
			  x.img, x.damaged, x.damaged == 1 ? "y" : "ies");
		rc = 1;
	}
out:
	if (x.errs && fclose(x.errs) && !rc) {
		cli_error(E_CMD, "%s: %s", errors, strerror(errno));
		rc = 1;
	}
	if (x.a)
		archive_write_free(x.a);
	if (fd >= 0)
		close(fd);
	if (tmp) {
		unlink(tmp);
		free(tmp);
	}
	if (root)
		ezfs_inode_put(root);
	cli_nidset_free(&x.dirs);
	cli_nidmap_free(&x.links, free);
	free(x.buf);
	ezfs_image_close(x.fs);
	return rc;
}
#endif
