/* SPDX-License-Identifier: MIT */
/* scan.c - a directory as the source: walked into the tree (tree/tree.c)
 * breadth first, names sorted, hard links found by (dev, ino). */
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

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
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
