/* SPDX-License-Identifier: MIT */
/*
 * tree.c - the in-memory tree every source builds (a directory, a tar, the
 * layers of a rebuild): inodes in breadth-first order, directory entries,
 * an inode's metadata from a stat (with -T, --all-root, --force-*), the
 * exclusions, the finished tree ("." and "..", sorted entries), freeing.
 */
#include <errno.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

int ezi_bld_add_dots(const struct ezfs_builder *b, struct binode *dir)
{
	/* -E dot-omitted: no ".", the directory's DOT_OMITTED bit says so
	 * (meta.c) */
	int err = b->p.dot_omitted ? 0 : ezi_bld_add_dentry(dir, ".", dir);

	return err ? err : ezi_bld_add_dentry(dir, "..", dir->parent);
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
		err = ezi_bld_add_dots(b, in);
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
