/* SPDX-License-Identifier: MIT */
/*
 * droid.c - metadata from outside the source tree, applied once the tree
 * is read (ezi_bld_tree_fixup): Android's canned fs_config (owners, modes,
 * capabilities) and SELinux file_contexts, keyed by the mount point; aufs
 * whiteouts turned into overlayfs ones; overlayfs metadata stripped.
 */
#define _GNU_SOURCE /* asprintf */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifdef EZFS_HAVE_SELINUX
#include <selinux/label.h>
#include <selinux/selinux.h>
#endif

#include "write/internal.h"
#include "format/erofs_fs.h"

/* One fs_config line */
struct fsc_ent {
	char *key; /* path, no leading or trailing '/' */
	uint32_t uid, gid, mode;
	uint64_t caps;
	size_t line;
};

struct fixup {
	struct ezfs_builder *b;
	struct fsc_ent *fsc;
	size_t nfsc;
	void *sehnd; /* struct selabel_handle * */
	char *path;  /* the current relative path */
	size_t pathcap;
};

static int cmp_fsc(const void *a, const void *b)
{
	const struct fsc_ent *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c)
		return c;
	return x->line < y->line ? -1 : x->line > y->line;
}

static int fsc_parse_line(struct ezfs_builder *b, char *s, size_t lineno,
			  struct fsc_ent *e)
{
	const char *file = b->p.fs_config_file;
	char *tok[4], *save = NULL, *t, *end;
	unsigned long long v;
	int i;

	/* the root's line may have an empty path: " 0 0 755" */
	if (*s == ' ' || *s == '\t') {
		tok[0] = "";
		i = 1;
	} else {
		i = 0;
	}
	for (t = strtok_r(s, " \t", &save); t && i < 4;
	     t = strtok_r(NULL, " \t", &save))
		tok[i++] = t;
	if (i < 4) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "%s:%zu: not 'path uid gid mode "
			    "[capabilities=0x...]'",
			    file, lineno);
		return -EINVAL;
	}
	for (i = 1; i < 4; i++) {
		errno = 0;
		v = strtoull(tok[i], &end, i == 3 ? 8 : 10);
		if (errno || *end || end == tok[i] || *tok[i] == '-' ||
		    v > (i == 3 ? 07777ull : 0xFFFFFFFFull)) {
			ezi_bld_log(b, EZFS_LOG_ERROR, "%s:%zu: bad %s '%s'",
				    file, lineno,
				    i == 1   ? "uid"
				    : i == 2 ? "gid"
					     : "mode (octal)",
				    tok[i]);
			return -EINVAL;
		}
		if (i == 1)
			e->uid = (uint32_t)v;
		else if (i == 2)
			e->gid = (uint32_t)v;
		else
			e->mode = (uint32_t)v;
	}
	e->caps = 0;
	for (; t; t = strtok_r(NULL, " \t", &save)) {
		if (strncmp(t, "capabilities=", 13)) {
			ezi_bld_log(b, EZFS_LOG_ERROR,
				    "%s:%zu: unknown field "
				    "'%s'",
				    file, lineno, t);
			return -EINVAL;
		}
		errno = 0;
		e->caps = strtoull(t + 13, &end, 0);
		if (errno || *end || end == t + 13) {
			ezi_bld_log(b, EZFS_LOG_ERROR,
				    "%s:%zu: bad capabilities "
				    "'%s'",
				    file, lineno, t + 13);
			return -EINVAL;
		}
	}
	t = tok[0];
	while (*t == '/')
		t++;
	v = strlen(t);
	while (v && t[v - 1] == '/')
		t[--v] = '\0';
	e->key = strdup(t);
	e->line = lineno;
	return e->key ? 0 : -ENOMEM;
}

static int fsc_load(struct fixup *f)
{
	struct ezfs_builder *b = f->b;
	const char *file = b->p.fs_config_file;
	FILE *fp = fopen(file, "r");
	char *line = NULL;
	size_t cap = 0, lineno = 0, n, cnt = 0, i;
	ssize_t len;
	int err = 0;

	if (!fp) {
		err = -errno;
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s", file, strerror(errno));
		return err;
	}
	while (!err && (len = getline(&line, &cap, fp)) >= 0) {
		struct fsc_ent *ne;
		char *s = line;

		lineno++;
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		n = strspn(s, " \t");
		if (!s[n] || s[n] == '#')
			continue;
		if (f->nfsc == cnt) {
			cnt = cnt ? cnt * 2 : 256;
			ne = realloc(f->fsc, cnt * sizeof(*ne));
			if (!ne) {
				err = -ENOMEM;
				break;
			}
			f->fsc = ne;
		}
		err = fsc_parse_line(b, s, lineno, &f->fsc[f->nfsc]);
		if (!err)
			f->nfsc++;
	}
	free(line);
	fclose(fp);
	if (err)
		return err;
	/* sorted for the lookups; of two lines for one path the later
	 * wins */
	if (f->nfsc)
		qsort(f->fsc, f->nfsc, sizeof(*f->fsc), cmp_fsc);
	for (i = n = 0; i < f->nfsc; i++) {
		if (n && !strcmp(f->fsc[n - 1].key, f->fsc[i].key)) {
			free(f->fsc[n - 1].key);
			f->fsc[n - 1] = f->fsc[i];
		} else {
			f->fsc[n++] = f->fsc[i];
		}
	}
	f->nfsc = n;
	return 0;
}

static const struct fsc_ent *fsc_find(const struct fixup *f, const char *key)
{
	size_t lo = 0, hi = f->nfsc;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(key, f->fsc[mid].key);

		if (!c)
			return &f->fsc[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

/* Drop the xattr called name from in, if it has one */
static void xattr_drop(struct ezfs_builder *b, struct binode *in,
		       const char *name, bool prefix)
{
	unsigned k, n = 0;

	for (k = 0; k < in->nxattrs; k++) {
		struct bxattr *x = &in->xattrs[k];

		if (prefix ? !strncmp(x->name, name, strlen(name))
			   : !strcmp(x->name, name)) {
			free(x->name);
			free(x->value);
			b->st.xattrs--;
			continue;
		}
		in->xattrs[n++] = *x;
	}
	in->nxattrs = n;
}

static int apply_fsconfig(struct fixup *f, struct binode *in, const char *rel)
{
	struct ezfs_builder *b = f->b;
	const char *mp = b->p.mount_point;
	const struct fsc_ent *e;
	char *key = NULL;
	int err = 0;

	if (!*rel) {
		/* the root: an empty path, or the mount point itself */
		e = fsc_find(f, "");
		if (!e && mp && *mp)
			e = fsc_find(f, mp);
	} else if (mp && *mp) {
		if (asprintf(&key, "%s/%s", mp, rel) < 0)
			return -ENOMEM;
		e = fsc_find(f, key);
	} else {
		e = fsc_find(f, rel);
	}
	if (!e) {
		if (!b->p.fs_config_keep) {
			ezi_bld_log(b, EZFS_LOG_ERROR,
				    "%s: no entry for '%s' (the root: an empty "
				    "path or the mount point; "
				    "--fs-config-missing=keep keeps the "
				    "source's owner and mode)",
				    b->p.fs_config_file,
				    key	   ? key
				    : *rel ? rel
					   : "");
			err = -ENOENT;
		}
		free(key);
		return err;
	}
	free(key);
	in->mode = (in->mode & S_IFMT) | e->mode;
	in->uid = e->uid;
	in->gid = e->gid;
	if (b->p.flags & EZFS_BUILD_ALL_ROOT)
		in->uid = in->gid = 0;
	if (b->p.force_uid >= 0)
		in->uid = (uint32_t)b->p.force_uid;
	if (b->p.force_gid >= 0)
		in->gid = (uint32_t)b->p.force_gid;
	if (e->caps && b->p.xattr_tolerance >= 0) {
		/* struct vfs_cap_data, revision 2, effective */
		uint8_t v[20] = { 0 };

		put_le32(v, 0x02000000u | 0x1u);
		put_le32(v + 4, (uint32_t)e->caps);
		put_le32(v + 12, (uint32_t)(e->caps >> 32));
		xattr_drop(b, in, "security.capability", false);
		err = ezi_bld_xattr_add(b, in, "security.capability", v,
					sizeof(v));
	}
	return err;
}

#ifdef EZFS_HAVE_SELINUX
static int apply_selabel(struct fixup *f, struct binode *in, const char *rel)
{
	struct ezfs_builder *b = f->b;
	const char *mp = b->p.mount_point;
	char *path = NULL, *ctx = NULL;
	int err, n;

	if (mp && *mp)
		n = asprintf(&path, "/%s%s%s", mp, *rel ? "/" : "", rel);
	else
		n = asprintf(&path, "/%s", rel);
	if (n < 0)
		return -ENOMEM;
	if (selabel_lookup(f->sehnd, &ctx, path, (int)in->mode)) {
		err = errno == ENOENT ? 0 : -errno;
		if (err)
			ezi_bld_log(b, EZFS_LOG_ERROR,
				    "%s: no SELinux label for "
				    "'%s': %s",
				    b->p.file_contexts, path, strerror(errno));
		free(path);
		return err;
	}
	free(path);
	xattr_drop(b, in, "security.selinux", false);
	/* the label without its NUL, as mkfs.erofs stores it */
	err = ezi_bld_xattr_add(b, in, "security.selinux", ctx, strlen(ctx));
	freecon(ctx);
	return err;
}
#endif

/* The relative path of dir's child name into f->path at off: 0 or -ENOMEM */
static int path_set(struct fixup *f, size_t off, const char *name)
{
	size_t need = off + strlen(name) + 2;

	if (need > f->pathcap) {
		char *np = realloc(f->path, need * 2);

		if (!np)
			return -ENOMEM;
		f->path = np;
		f->pathcap = need * 2;
	}
	if (off)
		f->path[off - 1] = '/';
	strcpy(f->path + off, name);
	return 0;
}

/* Depth first from dir (whose path is f->path[0..off)), in name order */
static int visit(struct fixup *f, struct binode *in, size_t off)
{
	struct ezfs_builder *b = f->b;
	int err = 0;
	unsigned k;

	if (b->p.fs_config_file)
		err = apply_fsconfig(f, in, f->path);
#ifdef EZFS_HAVE_SELINUX
	if (!err && f->sehnd && b->p.xattr_tolerance >= 0)
		err = apply_selabel(f, in, f->path);
#endif
	ezi_bld_xattrs_sort(in);
	if (err || !S_ISDIR(in->mode))
		return err;
	for (k = 0; k < in->ndents && !err; k++) {
		struct binode *c = in->dents[k].inode;
		size_t coff = off ? off + 1 : 0;

		/* a hard link is set up by its first path */
		if (c->fixed)
			continue;
		c->fixed = true;
		err = path_set(f, coff, in->dents[k].name);
		if (!err)
			err = visit(f, c, coff + strlen(in->dents[k].name));
		if (f->path)
			f->path[off] = '\0';
	}
	return err;
}

static int cmp_dent_name(const void *a, const void *b)
{
	return strcmp(((const struct bdentry *)a)->name,
		      ((const struct bdentry *)b)->name);
}

/*
 * Take the inodes no entry names any more (whiteouts made or stripped) out
 * of b->inodes; they are freed with the builder (a tar source frees only
 * the inodes of nlink 0, those never handed over, so theirs stays set).
 */
static int drop_orphans(struct ezfs_builder *b)
{
	size_t i, n = 0, cnt = 0;
	struct binode **g;

	for (i = 0; i < b->ninodes; i++)
		cnt += b->inodes[i]->gone;
	if (!cnt)
		return 0;
	g = realloc(b->gone, (b->ngone + cnt) * sizeof(*g));
	if (!g)
		return -ENOMEM;
	b->gone = g;
	for (i = 0; i < b->ninodes; i++) {
		struct binode *in = b->inodes[i];

		if (!in->gone) {
			b->inodes[n++] = in;
			continue;
		}
		in->nlink = 1;
		b->gone[b->ngone++] = in;
		if (S_ISREG(in->mode))
			b->st.files--;
		else if (S_ISLNK(in->mode))
			b->st.symlinks--;
		else if (!S_ISDIR(in->mode))
			b->st.specials--;
	}
	b->ninodes = n;
	return 0;
}

/* Mark the inodes of the subtree of in as gone */
static void mark_gone(struct ezfs_builder *b, struct binode *in)
{
	unsigned k;

	if (in->gone)
		return;
	if (!S_ISDIR(in->mode) && --in->nlink)
		return; /* another hard link still names it */
	in->gone = true;
	if (S_ISDIR(in->mode)) {
		b->st.dirs--;
		for (k = 0; k < in->ndents; k++)
			mark_gone(b, in->dents[k].inode);
	}
}

static bool is_whiteout(const struct binode *in)
{
	return S_ISCHR(in->mode) && in->rdev == 0;
}

/*
 * aufs: ".wh.NAME" becomes a whiteout NAME (a 0/0 character device, mode
 * 0, the entry's owner, as 1.9.3), ".wh..wh..opq" the opaque xattr of
 * its directory, other ".wh..wh." entries (aufs' own) are dropped;
 * --ovlfs-strip: whiteouts and trusted.overlay.* xattrs are dropped.
 * Otherwise a directory holding a whiteout (one made from ".wh.", or in
 * a directory scan a 0/0 character device) gets an empty
 * trusted.overlay.origin, as 1.9.3 marks it copied up (overlayfs then
 * never lists its whiteouts: kernel commit b79e05aaa166). Before "." and
 * ".." are added.
 */
static int overlay_fixup(struct ezfs_builder *b)
{
	size_t i, cnt = b->ninodes;
	bool any = false;
	int err = 0;

	for (i = 0; i < cnt && !err; i++) {
		struct binode *dir = b->inodes[i];
		unsigned k, n = 0;
		bool wh = false;

		if (b->p.ovlfs_strip)
			xattr_drop(b, dir, "trusted.overlay.", true);
		if (!S_ISDIR(dir->mode) || dir->gone)
			continue;
		for (k = 0; k < dir->ndents && !err; k++) {
			struct bdentry *d = &dir->dents[k];
			struct binode *c = d->inode;
			bool drop = false;

			if (b->p.aufs && !strcmp(d->name, ".wh..wh..opq")) {
				xattr_drop(b, dir, "trusted.overlay.opaque",
					   false);
				if (b->p.xattr_tolerance >= 0 &&
				    !b->p.ovlfs_strip)
					err = ezi_bld_xattr_add(
						b, dir,
						"trusted.overlay.opaque", "y",
						1);
				drop = true;
			} else if (b->p.aufs &&
				   !strncmp(d->name, ".wh..wh.", 8)) {
				drop = true;
			} else if (b->p.aufs && !strncmp(d->name, ".wh.", 4) &&
				   d->name[4]) {
				char *nm = strdup(d->name + 4);

				if (!nm) {
					err = -ENOMEM;
					break;
				}
				free(d->name);
				d->name = nm;
				d->namelen = (unsigned)strlen(nm);
				if (S_ISDIR(c->mode) || c->nlink > 1) {
					ezi_bld_log(b, EZFS_LOG_ERROR,
						    "%s: an aufs whiteout must "
						    "be a file",
						    c->srcpath);
					err = -EINVAL;
					break;
				}
				if (S_ISREG(c->mode)) {
					b->st.files--;
					b->st.specials++;
				} else if (S_ISLNK(c->mode)) {
					b->st.symlinks--;
					b->st.specials++;
				}
				c->mode = S_IFCHR;
				c->rdev = 0;
				c->size = 0;
				free(c->symlink);
				c->symlink = NULL;
				wh = true;
			} else if (!b->tar_src && is_whiteout(c)) {
				wh = true; /* 1.9.3 marks them in scans */
			}
			if (!drop && b->p.ovlfs_strip && is_whiteout(c))
				drop = true;
			if (drop) {
				mark_gone(b, c);
				if (S_ISDIR(c->mode))
					dir->nlink--;
				free(d->name);
				any = true;
				continue;
			}
			dir->dents[n++] = *d;
		}
		dir->ndents = n;
		if (wh && !err && !b->p.ovlfs_strip &&
		    b->p.xattr_tolerance >= 0) {
			xattr_drop(b, dir, "trusted.overlay.origin", false);
			err = ezi_bld_xattr_add(
				b, dir, "trusted.overlay.origin", "", 0);
		}
		if (b->p.aufs && !err && dir->ndents) {
			/* a whiteout beside the name it hides */
			qsort(dir->dents, dir->ndents, sizeof(*dir->dents),
			      cmp_dent_name);
			for (k = 1; k < dir->ndents; k++) {
				if (strcmp(dir->dents[k - 1].name,
					   dir->dents[k].name))
					continue;
				ezi_bld_log(b, EZFS_LOG_ERROR,
					    "%s: '%s' and its aufs whiteout",
					    dir->srcpath, dir->dents[k].name);
				err = -EEXIST;
				break;
			}
		}
		ezi_bld_xattrs_sort(dir);
	}
	if (!err && any)
		err = drop_orphans(b);
	return err;
}

int ezi_bld_tree_fixup(struct ezfs_builder *b)
{
	struct fixup f = { .b = b };
	size_t i;
	int err = 0;

	if (!b->ninodes)
		return 0;
	/* a directory scan marks the directories of 0/0 devices too */
	if (b->p.aufs || b->p.ovlfs_strip || !b->tar_src) {
		err = overlay_fixup(b);
		if (err)
			return err;
	}
	if (!b->p.fs_config_file && !b->p.file_contexts)
		return 0;
	if (b->p.fs_config_file)
		err = fsc_load(&f);
	if (!err && b->p.file_contexts) {
#ifdef EZFS_HAVE_SELINUX
		struct selinux_opt opt = { SELABEL_OPT_PATH,
					   b->p.file_contexts };

		f.sehnd = selabel_open(SELABEL_CTX_FILE, &opt, 1);
		if (!f.sehnd) {
			err = errno ? -errno : -EINVAL;
			ezi_bld_log(b, EZFS_LOG_ERROR,
				    "%s: cannot load SELinux "
				    "file contexts: %s",
				    b->p.file_contexts, strerror(-err));
		}
#else
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: built without libselinux",
			    b->p.file_contexts);
		err = -ENOTSUP;
#endif
	}
	f.path = calloc(1, 256);
	f.pathcap = 256;
	if (!err && !f.path)
		err = -ENOMEM;
	if (!err)
		err = visit(&f, b->inodes[0], 0);
#ifdef EZFS_HAVE_SELINUX
	if (f.sehnd)
		selabel_close(f.sehnd);
#endif
	for (i = 0; i < f.nfsc; i++)
		free(f.fsc[i].key);
	free(f.fsc);
	free(f.path);
	return err;
}

/* Block list: one "START[-END]" range per run of blocks */
struct blist {
	FILE *fp;
	uint64_t start, next; /* the run being gathered; next 0: none */
	bool named;
};

static void blist_flush(struct blist *l)
{
	if (!l->next)
		return;
	if (l->next - l->start == 1)
		fprintf(l->fp, " %llu", (unsigned long long)l->start);
	else
		fprintf(l->fp, " %llu-%llu", (unsigned long long)l->start,
			(unsigned long long)(l->next - 1));
	l->next = 0;
}

static void blist_add(struct blist *l, const char *mp, const char *rel,
		      uint64_t blk, uint64_t n)
{
	if (!n)
		return;
	if (!l->named) {
		fprintf(l->fp, "/%s%s%s", mp ? mp : "", mp && *mp ? "/" : "",
			rel);
		l->named = true;
	}
	if (l->next && l->next == blk) {
		l->next += n;
		return;
	}
	blist_flush(l);
	l->start = blk;
	l->next = blk + n;
}

/*
 * A chunk-based file's stored chunks, as runs of image blocks (holes
 * and chunks on another device, the blob or a tar, are not listed); the
 * last chunk only up to the file's last block.
 */
static void blist_chunks(const struct ezfs_builder *b, struct blist *l,
			 const char *rel, const struct binode *in)
{
	bool idx8 = in->chunkfmt & EROFS_CHUNK_FORMAT_INDEXES;
	unsigned unit = idx8 ? 8 : 4;
	unsigned cbits = (in->chunkfmt & EROFS_CHUNK_FORMAT_BLKBITS_MASK);
	uint64_t cblks = 1ull << cbits;
	uint64_t fblks = (in->size + b->blksz - 1) >> b->blkszbits, i;

	for (i = 0; i * unit < in->chunkidx_len && i * cblks < fblks; i++) {
		const uint8_t *e = in->chunkidx + i * unit;
		uint64_t n =
			fblks - i * cblks < cblks ? fblks - i * cblks : cblks;
		uint32_t addr = get_le32(idx8 ? e + 4 : e);

		if (addr == EROFS_NULL_ADDR32 || (idx8 && get_le16(e + 2)))
			continue;
		blist_add(l, b->p.mount_point, rel, addr, n);
	}
}

static int blist_visit(struct ezfs_builder *b, struct fixup *f, struct blist *l,
		       struct binode *in, size_t off)
{
	const char *mp = b->p.mount_point;
	unsigned k;
	int err = 0;

	if (S_ISREG(in->mode)) {
		l->named = false;
		l->next = 0;
		if (in->z) {
			for (k = 0; k < in->z->next; k++) {
				const struct bextent *e = &in->z->ext[k];

				if (!e->frag && e->blocks)
					blist_add(l, mp, f->path, e->blkaddr,
						  e->blocks);
			}
		} else if (in->datalayout == EROFS_INODE_CHUNK_BASED) {
			blist_chunks(b, l, f->path, in);
		} else if (in->startblk != EROFS_NULL_ADDR32) {
			blist_add(l, mp, f->path, in->startblk, in->nblocks);
		}
		/* an inline tail is in the inode's block (with -m: inside
		 * the metabox, no block of the image) */
		if ((in->tail_len || (in->z && in->z->idata_len)) && !in->mbox)
			blist_add(l, mp, f->path, in->meta_off >> b->blkszbits,
				  1);
		blist_flush(l);
		if (l->named)
			fputc('\n', l->fp);
		return 0;
	}
	if (!S_ISDIR(in->mode))
		return 0;
	for (k = 0; k < in->ndents && !err; k++) {
		struct bdentry *d = &in->dents[k];
		size_t coff = off ? off + 1 : 0;

		if (!strcmp(d->name, ".") || !strcmp(d->name, "..") ||
		    d->inode->listed)
			continue;
		d->inode->listed = true;
		err = path_set(f, coff, d->name);
		if (!err)
			err = blist_visit(b, f, l, d->inode,
					  coff + strlen(d->name));
		f->path[off] = '\0';
	}
	return err;
}

/*
 * --block-list-file (Android): "/MOUNTPOINT/relpath RANGE..." for each
 * regular file with data: its plain or compressed blocks, its stored
 * chunks, and the block of its inline tail (not fragments), in
 * depth-first name order, once the image is laid out.
 */
int ezi_bld_block_list(struct ezfs_builder *b)
{
	struct fixup f = { .b = b };
	struct blist l = { .fp = NULL };
	int err = 0;

	if (!b->p.block_list_file || !b->ninodes)
		return 0;
	l.fp = fopen(b->p.block_list_file, "w");
	f.path = calloc(1, 256);
	f.pathcap = 256;
	if (!l.fp || !f.path) {
		err = l.fp ? -ENOMEM : -errno;
		goto out;
	}
	err = blist_visit(b, &f, &l, b->inodes[0], 0);
	if (!err && (ferror(l.fp) || fflush(l.fp)))
		err = -errno ? -errno : -EIO;
out:
	if (l.fp && fclose(l.fp) && !err)
		err = -errno;
	if (err)
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s", b->p.block_list_file,
			    strerror(-err));
	free(f.path);
	return err;
}
