/* SPDX-License-Identifier: MIT */
/* scan.c - walk the source tree into inodes (breadth first, sorted names). */
#include <dirent.h>
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "write/internal.h"
#include "format/erofs_fs.h"

int ezi_bld_add_inode(struct ezfs_builder *b, struct binode *in)
{
	if (b->ninodes == b->capinodes) {
		size_t cap = b->capinodes ? b->capinodes * 2 : 256;
		struct binode **n = realloc(b->inodes, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		b->inodes = n;
		b->capinodes = cap;
	}
	b->inodes[b->ninodes++] = in;
	return 0;
}

/* ---- hardlink table: (dev, ino) -> inode, open addressing ---- */

static size_t hl_hash(dev_t dev, ino_t ino, size_t cap)
{
	uint64_t h = (uint64_t)ino * 0x9E3779B97F4A7C15ull ^ (uint64_t)dev;

	h ^= h >> 29;
	return (size_t)(h & (cap - 1));
}

static struct binode *hl_find(struct ezfs_builder *b, dev_t dev, ino_t ino)
{
	struct binode **t = b->hlmap;
	size_t i;

	if (!b->hlcap)
		return NULL;
	for (i = hl_hash(dev, ino, b->hlcap); t[i];
	     i = (i + 1) & (b->hlcap - 1))
		if (t[i]->dev == dev && t[i]->ino == ino)
			return t[i];
	return NULL;
}

static int hl_add(struct ezfs_builder *b, struct binode *in)
{
	struct binode **t;
	size_t i;

	if ((b->hlcount + 1) * 2 > b->hlcap) {
		size_t cap = b->hlcap ? b->hlcap * 2 : 1024, k;
		struct binode **nt = calloc(cap, sizeof(*nt)), **ot = b->hlmap;

		if (!nt)
			return -ENOMEM;
		for (k = 0; k < b->hlcap; k++) {
			if (!ot[k])
				continue;
			for (i = hl_hash(ot[k]->dev, ot[k]->ino, cap); nt[i];
			     i = (i + 1) & (cap - 1))
				;
			nt[i] = ot[k];
		}
		free(ot);
		b->hlmap = nt;
		b->hlcap = cap;
	}
	t = b->hlmap;
	for (i = hl_hash(in->dev, in->ino, b->hlcap); t[i];
	     i = (i + 1) & (b->hlcap - 1))
		;
	t[i] = in;
	b->hlcount++;
	return 0;
}

/* ---- directories ---- */

int ezi_bld_add_dentry(struct binode *dir, const char *name, struct binode *in)
{
	struct bdentry *d;

	if (dir->ndents == dir->capdents) {
		unsigned cap = dir->capdents ? dir->capdents * 2 : 8;

		d = realloc(dir->dents, cap * sizeof(*d));
		if (!d)
			return -ENOMEM;
		dir->dents = d;
		dir->capdents = cap;
	}
	d = &dir->dents[dir->ndents];
	d->name = strdup(name);
	if (!d->name)
		return -ENOMEM;
	d->namelen = (unsigned)strlen(name);
	d->inode = in;
	dir->ndents++;
	return 0;
}

static int cmp_dent(const void *a, const void *b)
{
	return strcmp(((const struct bdentry *)a)->name,
		      ((const struct bdentry *)b)->name);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Is relative path rel excluded by --exclude-path / --exclude-regex? */
bool ezi_bld_excluded(const struct ezfs_builder *b, const char *rel)
{
	const regex_t *re = b->regex;
	size_t i;

	for (i = 0; i < b->p.n_exclude_paths; i++) {
		const char *e = b->p.exclude_paths[i];
		size_t n;

		while (*e == '/')
			e++;
		n = strlen(e);
		while (n && e[n - 1] == '/')
			n--;
		if (n && strlen(rel) == n && !memcmp(rel, e, n))
			return true;
	}
	for (i = 0; i < b->nregex; i++)
		if (!regexec(&re[i], rel, 0, NULL, 0))
			return true;
	return false;
}

void ezi_bld_inode_meta(struct ezfs_builder *b, struct binode *in,
			const struct stat *st)
{
	const struct ezfs_build_params *p = &b->p;

	in->mode = st->st_mode;
	in->uid = st->st_uid;
	in->gid = st->st_gid;
	if (p->flags & EZFS_BUILD_ALL_ROOT)
		in->uid = in->gid = 0;
	if (p->force_uid >= 0)
		in->uid = (uint32_t)p->force_uid;
	if (p->force_gid >= 0)
		in->gid = (uint32_t)p->force_gid;
	in->mtime = st->st_mtim.tv_sec;
	in->mtime_ns = (uint32_t)st->st_mtim.tv_nsec;
	if (p->has_timestamp && p->time_mode == EZFS_TIME_FIXED) {
		in->mtime = b->epoch;
		in->mtime_ns = 0;
	} else if (p->has_timestamp && p->time_mode == EZFS_TIME_CLAMP &&
		   in->mtime > b->epoch) {
		in->mtime = b->epoch;
		in->mtime_ns = 0;
	}
	in->dev = st->st_dev;
	in->ino = st->st_ino;
	/* compared for equality only: wraps for mtimes past 2262, no UB */
	in->src_mtime_ns =
		(int64_t)((uint64_t)st->st_mtim.tv_sec * 1000000000u +
			  (uint64_t)st->st_mtim.tv_nsec);
	in->nlink = 1;
	in->startblk = EROFS_NULL_ADDR32;
}

static int fill_inode(struct ezfs_builder *b, struct binode *in,
		      const struct stat *st)
{
	const struct ezfs_build_params *p = &b->p;

	ezi_bld_inode_meta(b, in, st);
	if (S_ISREG(st->st_mode)) {
		in->size = (uint64_t)st->st_size;
		b->st.files++;
	} else if (S_ISLNK(st->st_mode)) {
		size_t cap = (size_t)st->st_size + 1;
		ssize_t n;

		if (cap < 2)
			cap = 4096;
		in->symlink = malloc(cap);
		if (!in->symlink)
			return -ENOMEM;
		n = readlink(in->srcpath, in->symlink, cap);
		if (n < 0 || (size_t)n >= cap) {
			int err = n < 0 ? -errno : -EAGAIN;

			ezi_bld_log(b, EZFS_LOG_ERROR, "%s: readlink: %s",
				    in->srcpath, strerror(-err));
			return err;
		}
		in->symlink[n] = '\0';
		in->size = (uint64_t)n;
		b->st.symlinks++;
	} else if (S_ISDIR(st->st_mode)) {
		b->st.dirs++;
	} else {
		if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
			in->rdev = erofs_new_encode_dev(major(st->st_rdev),
							minor(st->st_rdev));
		b->st.specials++;
	}
	if (p->xattr_tolerance >= 0)
		return ezi_bld_xattrs_read(b, in);
	return 0;
}

static struct binode *new_inode(const char *path)
{
	struct binode *in = calloc(1, sizeof(*in));

	if (!in)
		return NULL;
	in->srcpath = strdup(path);
	if (!in->srcpath) {
		free(in);
		return NULL;
	}
	return in;
}

/* Read directory dir, creating inodes for its children. */
static int scan_dir(struct ezfs_builder *b, struct binode *dir, size_t rootlen)
{
	char **names = NULL, *path = NULL;
	size_t n = 0, cap = 0, i, plen = strlen(dir->srcpath);
	struct dirent *de;
	int err = 0;
	DIR *d;

	d = opendir(dir->srcpath);
	if (!d) {
		err = -errno;
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: opendir: %s", dir->srcpath,
			    strerror(errno));
		return err;
	}
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno) {
				err = -errno;
				ezi_bld_log(b, EZFS_LOG_ERROR,
					    "%s: readdir: %s", dir->srcpath,
					    strerror(errno));
			}
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == cap) {
			char **nn;

			cap = cap ? cap * 2 : 64;
			nn = realloc(names, cap * sizeof(*nn));
			if (!nn) {
				err = -ENOMEM;
				break;
			}
			names = nn;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			err = -ENOMEM;
			break;
		}
		n++;
	}
	closedir(d);
	if (err)
		goto out;
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);

	for (i = 0; i < n && !err; i++) {
		struct binode *in;
		struct stat st;
		const char *rel;

		free(path);
		path = malloc(plen + strlen(names[i]) + 2);
		if (!path) {
			err = -ENOMEM;
			break;
		}
		sprintf(path, "%s/%s", dir->srcpath, names[i]);
		rel = path + rootlen + 1;
		if (ezi_bld_excluded(b, rel))
			continue;
		if (lstat(path, &st)) {
			err = -errno;
			ezi_bld_log(b, EZFS_LOG_ERROR, "%s: lstat: %s", path,
				    strerror(errno));
			break;
		}
		if (strlen(names[i]) > EROFS_NAME_LEN) {
			err = -ENAMETOOLONG;
			ezi_bld_log(b, EZFS_LOG_ERROR, "%s: name too long",
				    path);
			break;
		}
		if (!S_ISDIR(st.st_mode) && st.st_nlink > 1 &&
		    !b->p.hard_dereference) {
			in = hl_find(b, st.st_dev, st.st_ino);
			if (in) {
				in->nlink++;
				b->st.hardlinks++;
				err = ezi_bld_add_dentry(dir, names[i], in);
				continue;
			}
		}
		in = new_inode(path);
		if (!in) {
			err = -ENOMEM;
			break;
		}
		err = ezi_bld_add_inode(b, in);
		if (err) {
			free(in->srcpath);
			free(in);
			break;
		}
		err = fill_inode(b, in, &st);
		if (!err && S_ISDIR(st.st_mode)) {
			in->parent = dir;
			dir->nlink++;
		}
		if (!err && !S_ISDIR(st.st_mode) && st.st_nlink > 1 &&
		    !b->p.hard_dereference)
			err = hl_add(b, in);
		if (!err)
			err = ezi_bld_add_dentry(dir, names[i], in);
	}
out:
	free(path);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return err;
}

int ezi_bld_scan(struct ezfs_builder *b, const char *srcdir)
{
	struct binode *root;
	struct stat st;
	size_t i, rootlen;
	int err;

	if (lstat(srcdir, &st)) {
		err = -errno;
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s", srcdir,
			    strerror(errno));
		return err;
	}
	if (!S_ISDIR(st.st_mode)) {
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: not a directory", srcdir);
		return -ENOTDIR;
	}
	root = new_inode(srcdir);
	if (!root)
		return -ENOMEM;
	/* strip trailing slashes so that child paths are clean */
	rootlen = strlen(root->srcpath);
	while (rootlen > 1 && root->srcpath[rootlen - 1] == '/')
		root->srcpath[--rootlen] = '\0';
	if (rootlen == 1 && root->srcpath[0] == '/')
		rootlen = 0;
	err = ezi_bld_add_inode(b, root);
	if (err) {
		free(root->srcpath);
		free(root);
		return err;
	}
	err = fill_inode(b, root, &st);
	if (err)
		return err;
	root->parent = root;
	root->nlink = 2;

	/* breadth first: b->inodes grows while we walk it */
	for (i = 0; i < b->ninodes; i++) {
		struct binode *in = b->inodes[i];

		if (!S_ISDIR(in->mode))
			continue;
		in->nlink = 2; /* + 1 per subdirectory, in scan_dir */
		err = scan_dir(b, in, rootlen);
		if (err)
			return err;
		if ((i & 1023) == 0)
			ezi_bld_progress(b, EZFS_BUILD_SCAN, b->ninodes, 0, 0,
					 0);
	}
	return ezi_bld_scan_finish(b);
}

/* "." and "..", then sort every directory */
int ezi_bld_scan_finish(struct ezfs_builder *b)
{
	size_t i;
	int err;

	err = ezi_bld_tree_fixup(b);
	if (err)
		return err;
	/* DOT_OMITTED and a root NID in the metabox (bit 63) need the
	 * 48-bit layout */
	if (b->p.dot_omitted || b->p.metabox_pcluster)
		b->p.flags |= EZFS_BUILD_48BIT;
	for (i = 0; i < b->ninodes; i++) {
		struct binode *in = b->inodes[i];

		if (!S_ISDIR(in->mode))
			continue;
		/* -E dot-omitted: no ".", the directory's DOT_OMITTED bit
		 * says so (layout.c) */
		err = b->p.dot_omitted ? 0 : ezi_bld_add_dentry(in, ".", in);
		if (!err)
			err = ezi_bld_add_dentry(in, "..", in->parent);
		if (err)
			return err;
		qsort(in->dents, in->ndents, sizeof(*in->dents), cmp_dent);
	}
	b->st.inodes = b->ninodes;
	return 0;
}

void ezi_bld_inode_free(struct binode *in)
{
	unsigned k;

	for (k = 0; k < in->ndents; k++)
		free(in->dents[k].name);
	free(in->dents);
	for (k = 0; k < in->nxattrs; k++) {
		free(in->xattrs[k].name);
		free(in->xattrs[k].value);
	}
	free(in->xattrs);
	free(in->symlink);
	free(in->sparse);
	free(in->chunkidx);
	ezi_bld_zfile_free(in->z);
	free(in->srcpath);
	free(in);
}

void ezi_bld_free_inodes(struct ezfs_builder *b)
{
	size_t i;

	for (i = 0; i < b->ninodes; i++)
		ezi_bld_inode_free(b->inodes[i]);
	free(b->inodes);
	b->inodes = NULL;
	b->ninodes = b->capinodes = 0;
	for (i = 0; i < b->ngone; i++)
		ezi_bld_inode_free(b->gone[i]);
	free(b->gone);
	b->gone = NULL;
	b->ngone = 0;
	free(b->hlmap);
	b->hlmap = NULL;
	b->hlcap = b->hlcount = 0;
}
