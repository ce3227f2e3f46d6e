/* SPDX-License-Identifier: MIT */
/*
 * tar.c - a tar archive as the builder's source: read the members in
 * order into a tree (later members replace earlier ones, missing parents
 * are created), then hand the builder its inodes in the same breadth
 * first, name sorted order as a directory scan. File data stays where it
 * is (a seekable plain archive) or goes to one unlinked spool file.
 */
#define _GNU_SOURCE /* O_TMPFILE */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build/internal.h"
#include "build/tar.h"
#include "format/erofs_fs.h"

#define MAX_META (16u << 20)     /* largest PAX / GNU long-name member */

struct tnode {
	char *name;
	struct tnode *parent;
	struct binode *in;
	struct tnode **kids;
	unsigned nkids, capkids;
	bool implicit;           /* a parent missing from the archive */
};

struct tctx {
	struct ezfs_builder *b;
	struct tstream s;
	int spool;               /* -1: data read in place */
	uint64_t spool_off;
	struct tnode *root;
	struct tnode **tab;      /* (parent, name) -> node, open addressing */
	size_t tabcap, tabn;
	struct vec { void **v; size_t n, cap; } nodes, bins; /* to free */
	int64_t newest;          /* newest mtime in the archive */
	const char *entry;       /* member being read, for messages */
	uint64_t hdr_off;
};

static int terr(struct tctx *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* One error line: INPUT: entry 'PATH' (offset N): reason */
static int terr(struct tctx *c, int err, const char *fmt, ...)
{
	char msg[512], q[300];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->entry)
		bld_log(c->b, EZFS_LOG_ERROR, "%s: entry '%s' (offset %llu): %s",
			c->s.name, ezfs_quote(c->entry, strlen(c->entry), q,
					      sizeof(q)),
			(unsigned long long)c->hdr_off, msg);
	else
		bld_log(c->b, EZFS_LOG_ERROR, "%s: offset %llu: %s", c->s.name,
			(unsigned long long)c->hdr_off, msg);
	return err;
}

static int push(struct vec *v, void *p)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 256;
		void **n = realloc(v->v, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		v->v = n;
		v->cap = cap;
	}
	v->v[v->n++] = p;
	return 0;
}

/* ---- the (parent, name) table ---- */

static size_t thash(const struct tnode *parent, const char *name, size_t cap)
{
	uint64_t h = 0xcbf29ce484222325ull ^ (uintptr_t)parent;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 0x100000001b3ull;
	h ^= h >> 31;
	return (size_t)(h & (cap - 1));
}

static struct tnode **tslot(struct tctx *c, const struct tnode *parent,
			    const char *name)
{
	size_t i;

	for (i = thash(parent, name, c->tabcap); c->tab[i];
	     i = (i + 1) & (c->tabcap - 1))
		if (c->tab[i]->parent == parent && !strcmp(c->tab[i]->name, name))
			break;
	return &c->tab[i];
}

static int tab_grow(struct tctx *c)
{
	struct tnode **old = c->tab;
	size_t ocap = c->tabcap, i;

	if ((c->tabn + 1) * 2 <= c->tabcap)
		return 0;
	c->tabcap = ocap ? ocap * 2 : 1024;
	c->tab = calloc(c->tabcap, sizeof(*c->tab));
	if (!c->tab) {
		c->tab = old;
		c->tabcap = ocap;
		return -ENOMEM;
	}
	for (i = 0; i < ocap; i++)
		if (old[i])
			*tslot(c, old[i]->parent, old[i]->name) = old[i];
	free(old);
	return 0;
}

/* ---- nodes ---- */

static struct binode *new_binode(struct tctx *c, const char *path)
{
	struct binode *in = calloc(1, sizeof(*in));

	if (!in)
		return NULL;
	in->srcpath = malloc(strlen(c->s.name) + strlen(path) + 2);
	if (!in->srcpath || push(&c->bins, in)) {
		free(in->srcpath);
		free(in);
		return NULL;
	}
	sprintf(in->srcpath, "%s:%s", c->s.name, path);
	return in;
}

/* A new node (name, in) under parent, replacing the old one if any. */
static struct tnode *put_node(struct tctx *c, struct tnode *parent,
			      const char *name, struct binode *in)
{
	struct tnode *t = calloc(1, sizeof(*t)), **slot;
	unsigned i;

	if (!t || push(&c->nodes, t) || tab_grow(c)) {
		free(t);
		return NULL;
	}
	t->name = strdup(name);
	if (!t->name)
		return NULL;
	t->parent = parent;
	t->in = in;
	slot = tslot(c, parent, name);
	if (*slot) {
		for (i = 0; i < parent->nkids; i++)
			if (parent->kids[i] == *slot)
				parent->kids[i] = t;
		*slot = t;
		return t;
	}
	if (parent->nkids == parent->capkids) {
		unsigned cap = parent->capkids ? parent->capkids * 2 : 8;
		struct tnode **k = realloc(parent->kids, cap * sizeof(*k));

		if (!k)
			return NULL;
		parent->kids = k;
		parent->capkids = cap;
	}
	parent->kids[parent->nkids++] = t;
	*slot = t;
	c->tabn++;
	return t;
}

/* Metadata from st (and the entry's xattrs); nlink 0 = not yet placed. */
static int set_meta(struct tctx *c, struct binode *in, uint32_t mode,
		    const struct tentry *e)
{
	struct stat st;
	size_t i;
	int err;

	memset(&st, 0, sizeof(st));
	st.st_mode = mode;
	if (e) {
		if (e->uid > UINT32_MAX || e->gid > UINT32_MAX)
			return terr(c, -ERANGE, "uid or gid beyond 32 bits");
		st.st_uid = (uid_t)e->uid;
		st.st_gid = (gid_t)e->gid;
		st.st_mtim.tv_sec = e->mtime;
		st.st_mtim.tv_nsec = e->mtime_ns;
		if (e->mtime > c->newest)
			c->newest = e->mtime;
	} else {
		st.st_mtim.tv_sec = c->b->p.has_timestamp ? c->b->epoch
							  : c->newest;
	}
	bld_inode_meta(c->b, in, &st);
	in->nlink = 0;
	if (!e || c->b->p.xattr_tolerance < 0)
		return 0;
	for (i = 0; i < e->nx; i++) {
		err = bld_xattr_add(c->b, in, e->x[i].name, e->x[i].value,
				    e->x[i].len);
		if (err)
			return err;
	}
	bld_xattrs_sort(in);
	return 0;
}

/*
 * Split path into components in place (leading '/', "." and empty ones
 * dropped); refuses "..", over-long names. Returns the count.
 */
static int split(struct tctx *c, char *path, char **comp, int max)
{
	char *p = path, *save = NULL, *tok;
	int n = 0;

	for (tok = strtok_r(p, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		if (!strcmp(tok, "."))
			continue;
		if (!strcmp(tok, ".."))
			return terr(c, -EPERM, "'..' in the path escapes the root");
		if (strlen(tok) > EROFS_NAME_LEN)
			return terr(c, -ENAMETOOLONG,
				    "a name is longer than %u bytes",
				    EROFS_NAME_LEN);
		if (n == max)
			return terr(c, -ENAMETOOLONG, "path too deep");
		comp[n++] = tok;
	}
	return n;
}

#define MAX_DEPTH 1024

/* The directory node holding comp[0..n-1]; creates missing ones. */
static int walk(struct tctx *c, char **comp, int n, bool create,
		struct tnode **out)
{
	struct tnode *t = c->root;
	int i;

	for (i = 0; i < n; i++) {
		struct tnode *k = *tslot(c, t, comp[i]);

		if (!k && !create)
			return -ENOENT;
		if (!k) {
			struct binode *in = new_binode(c, comp[i]);

			if (!in)
				return -ENOMEM;
			k = put_node(c, t, comp[i], in);
			if (!k || set_meta(c, in, S_IFDIR | 0755, NULL))
				return -ENOMEM;
			k->implicit = true;
		} else if (!S_ISDIR(k->in->mode) && (create || i < n - 1)) {
			return terr(c, -ENOTDIR, "'%s' is not a directory",
				    comp[i]);
		}
		t = k;
	}
	*out = t;
	return 0;
}

static int read_data(struct tctx *c, struct binode *in, uint64_t size)
{
	uint64_t pad = (512 - (size & 511)) & 511, done = 0;
	uint8_t buf[65536];
	int err;

	if (c->spool < 0) {
		in->dataoff = c->s.base + c->s.pos;
		err = tstream_skip(&c->s, size + pad);
		return err == -EPIPE ? terr(c, -EPIPE, "truncated archive") :
		       err < 0 ? terr(c, err, "%s", c->s.err ? c->s.err :
				      strerror(-err)) : 0;
	}
	in->dataoff = c->spool_off;
	while (done < size) {
		size_t want = size - done < sizeof(buf) ? (size_t)(size - done)
							: sizeof(buf);
		ssize_t n = tstream_read(&c->s, buf, want);

		if (n < 0)
			return terr(c, (int)n, "%s", c->s.err ? c->s.err :
				    strerror((int)-n));
		if ((size_t)n < want)
			return terr(c, -EPIPE, "truncated archive");
		if (pwrite(c->spool, buf, want, (off_t)(c->spool_off + done)) !=
		    (ssize_t)want)
			return terr(c, errno ? -errno : -EIO,
				    "spool file: write: %s", strerror(errno));
		done += want;
	}
	c->spool_off += size;
	err = tstream_skip(&c->s, pad);
	return err == -EPIPE ? terr(c, -EPIPE, "truncated archive") : err;
}

/* --exclude-path / --exclude-regex on the path or any of its parents */
static bool excluded(struct tctx *c, char **comp, int n)
{
	char rel[8192];
	size_t len = 0, l;
	int i;

	if (!c->b->p.n_exclude_paths && !c->b->p.n_exclude_regex)
		return false;
	for (i = 0; i < n; i++) {
		l = strlen(comp[i]);
		if (len + l + 2 > sizeof(rel))
			return false;
		if (i)
			rel[len++] = '/';
		memcpy(rel + len, comp[i], l + 1);
		len += l;
		if (bld_excluded(c->b, rel))
			return true;
	}
	return false;
}

/* Put one member into the tree; path: a copy of e->path to split. */
static int add_entry(struct tctx *c, struct tentry *e, char *path)
{
	static const char types[] = "0123456";
	static const uint32_t fmt[] = { S_IFREG, 0, S_IFLNK, S_IFCHR, S_IFBLK,
					S_IFDIR, S_IFIFO };
	char *comp[MAX_DEPTH], *lcomp[MAX_DEPTH];
	struct tnode *dir, *t, *target;
	struct binode *in;
	int n, ln, err;
	bool skip;

	if (!strchr(types, e->type) || !e->type)
		return terr(c, -EOPNOTSUPP, e->type == 'S' ?
			    "sparse files are not supported" :
			    "unsupported entry type '%c'", e->type);
	n = split(c, path, comp, MAX_DEPTH);
	if (n < 0)
		return n;
	skip = excluded(c, comp, n);
	if ((skip || e->type != '0') && e->size) {
		if (e->size > UINT64_MAX - 511)
			return terr(c, -EFBIG, "size overflow");
		err = tstream_skip(&c->s, (e->size + 511) & ~511ull);
		if (err)
			return terr(c, err, "%s", err == -EPIPE ?
				    "truncated archive" : c->s.err ? c->s.err :
				    strerror(-err));
	}
	if (skip)
		return 0;
	if (!n) {	/* the root itself */
		if (e->type != '5')
			return terr(c, -ENOTDIR, "the root must be a directory");
		c->root->implicit = false;
		return set_meta(c, c->root->in, S_IFDIR | e->mode, e);
	}
	err = walk(c, comp, n - 1, true, &dir);
	if (err)
		return err;
	t = *tslot(c, dir, comp[n - 1]);
	if (e->type == '1') {
		if (!e->link)
			return terr(c, -EINVAL, "hard link without a target");
		ln = split(c, e->link, lcomp, MAX_DEPTH);
		if (ln < 0)
			return ln;
		err = ln ? walk(c, lcomp, ln, false, &target) : -EISDIR;
		if (err == -ENOENT || err == -ENOTDIR)
			return terr(c, -ENOENT, "hard link target not found");
		if (!err && S_ISDIR(target->in->mode))
			err = -EISDIR;
		if (err)
			return err == -EISDIR ?
			       terr(c, err, "hard link to a directory") : err;
		if (t == target)
			return 0;
		if (t && !S_ISDIR(t->in->mode))
			t->in = target->in;
		else if (!put_node(c, dir, comp[n - 1], target->in))
			return -ENOMEM;
		return 0;
	}
	in = new_binode(c, c->entry);
	if (!in)
		return -ENOMEM;
	err = set_meta(c, in, fmt[e->type - '0'] | e->mode, e);
	if (err)
		return err;
	if (e->type == '0') {
		in->size = e->size;
		err = read_data(c, in, e->size);
	} else if (e->type == '2') {
		if (!e->link || strlen(e->link) >= 4096)
			return terr(c, -EINVAL, e->link ? "symlink target too long"
					       : "symlink without a target");
		in->symlink = strdup(e->link);
		if (!in->symlink)
			return -ENOMEM;
		in->size = strlen(in->symlink);
	} else if (e->type == '3' || e->type == '4') {
		in->rdev = erofs_new_encode_dev(e->major, e->minor);
	}
	if (err)
		return err;
	if (t && S_ISDIR(t->in->mode) && e->type == '5') {
		t->in = in;	/* keeps its children */
		t->implicit = false;
	} else if (t && !S_ISDIR(t->in->mode)) {
		t->in = in;
	} else if (!put_node(c, dir, comp[n - 1], in)) {
		return -ENOMEM;
	}
	return 0;
}

static int cmp_tnode(const void *a, const void *b)
{
	return strcmp((*(struct tnode *const *)a)->name,
		      (*(struct tnode *const *)b)->name);
}

static void count(struct ezfs_builder *b, const struct binode *in)
{
	if (S_ISREG(in->mode))
		b->st.files++;
	else if (S_ISLNK(in->mode))
		b->st.symlinks++;
	else if (S_ISDIR(in->mode))
		b->st.dirs++;
	else
		b->st.specials++;
}

/* Breadth first, names sorted: the order of a directory scan. */
static int emit(struct tctx *c)
{
	struct ezfs_builder *b = c->b;
	struct tnode **q;
	size_t qn = 1, qi;
	unsigned k;
	int err;

	q = malloc((c->tabn + 1) * sizeof(*q));
	if (!q)
		return -ENOMEM;
	q[0] = c->root;
	err = bld_add_inode(b, c->root->in);
	c->root->in->nlink = 2;
	c->root->in->parent = c->root->in;
	count(b, c->root->in);
	for (qi = 0; qi < qn && !err; qi++) {
		struct binode *dir = q[qi]->in;

		qsort(q[qi]->kids, q[qi]->nkids, sizeof(*q[qi]->kids),
		      cmp_tnode);
		for (k = 0; k < q[qi]->nkids && !err; k++) {
			struct tnode *t = q[qi]->kids[k];
			struct binode *in = t->in;

			if (in->nlink) {
				in->nlink++;
				b->st.hardlinks++;
			} else if (!(err = bld_add_inode(b, in))) {
				in->nlink = S_ISDIR(in->mode) ? 2 : 1;
				count(b, in);
				if (S_ISDIR(in->mode)) {
					in->parent = dir;
					dir->nlink++;
					q[qn++] = t;
				}
			}
			if (!err)
				err = bld_add_dentry(dir, t->name, in);
		}
	}
	free(q);
	return err ? err : bld_scan_finish(b);
}

static int open_spool(struct tctx *c, const char *tmpdir)
{
	const char *dir = tmpdir && *tmpdir ? tmpdir : ".";
	char *t;

	c->spool = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (c->spool >= 0)
		return 0;
	t = malloc(strlen(dir) + 32);
	if (!t)
		return -ENOMEM;
	sprintf(t, "%s/.ezfs-tar.XXXXXX", dir);
	c->spool = mkstemp(t);
	if (c->spool >= 0)
		unlink(t);
	free(t);
	if (c->spool >= 0)
		return 0;
	bld_log(c->b, EZFS_LOG_ERROR, "%s: cannot create a spool file: %s",
		dir, strerror(errno));
	return -errno;
}

/* A PAX or GNU long-name member: its data, NUL terminated. */
static int read_meta(struct tctx *c, uint64_t size, char **out)
{
	uint64_t pad = (512 - (size & 511)) & 511;
	ssize_t n;
	int err;

	if (size > MAX_META)
		return terr(c, -EFBIG, "extended header of %llu bytes",
			    (unsigned long long)size);
	*out = malloc((size_t)size + 1);
	if (!*out)
		return -ENOMEM;
	n = tstream_read(&c->s, *out, (size_t)size);
	if (n >= 0 && (uint64_t)n == size) {
		(*out)[size] = '\0';
		err = tstream_skip(&c->s, pad);
		if (!err)
			return 0;
		n = err;
	}
	free(*out);
	*out = NULL;
	if (n < 0 && n != -EPIPE)
		return terr(c, (int)n, "%s", c->s.err ? c->s.err :
			    strerror((int)-n));
	return terr(c, -EPIPE, "truncated archive");
}

static int set_long(char **dst, char *data)
{
	free(*dst);
	*dst = data;
	return 0;
}

/* Read members until the end-of-archive blocks. */
static int read_archive(struct tctx *c)
{
	struct tpax g = { 0 }, l = { 0 };
	uint8_t blk[512];
	uint64_t members = 0;
	int err = 0;

	for (;;) {
		struct tentry e;
		const char *why = NULL;
		char *data = NULL, *path;
		char nm[101];
		int64_t size;
		ssize_t n;

		c->entry = NULL;
		c->hdr_off = c->s.pos;
		n = tstream_read(&c->s, blk, sizeof(blk));
		if (n < 0) {
			err = terr(c, (int)n, "%s", c->s.err ? c->s.err :
				   strerror((int)-n));
			break;
		}
		if (n < (ssize_t)sizeof(blk)) {
			err = terr(c, -EPIPE, !n && !members ? "not a tar archive (empty)"
				   : "truncated archive (no end-of-archive block)");
			break;
		}
		memcpy(nm, blk, 100);
		nm[100] = '\0';
		c->entry = nm;
		err = thdr_check(blk);
		if (err == 1) {
			err = 0;	/* end (a second zero block may follow) */
			break;
		}
		if (err) {
			err = terr(c, -EUCLEAN, members ? "bad header checksum" :
				   "not a tar archive (bad header checksum)");
			break;
		}
		members++;
		if (thdr_num(blk + 124, 12, &size) || size < 0) {
			err = terr(c, -EUCLEAN, "bad size field");
			break;
		}
		switch (blk[156]) {
		case 'x':
		case 'g':
			err = read_meta(c, (uint64_t)size, &data);
			if (!err && tpax_parse(blk[156] == 'g' ? &g : &l, data,
					       (size_t)size, blk[156] == 'g',
					       &why))
				err = terr(c, -EUCLEAN, "%s", why);
			free(data);
			break;
		case 'L':
		case 'K':
			err = read_meta(c, (uint64_t)size, &data);
			if (!err)
				set_long(blk[156] == 'L' ? &l.path : &l.link,
					 data);
			break;
		case 'V':
			err = tstream_skip(&c->s, ((uint64_t)size + 511) & ~511ull);
			if (err)
				err = terr(c, err, "truncated archive");
			break;
		default:
			err = tentry_fill(&e, blk, &g, &l, &why);
			if (err && why)
				err = terr(c, err, "%s", why);
			c->entry = e.path;
			path = e.path ? strdup(e.path) : NULL;
			if (!err && !path)
				err = -ENOMEM;
			if (!err)
				err = add_entry(c, &e, path);
			free(path);
			tentry_clear(&e);
			tpax_clear(&l);
			if ((members & 1023) == 0)
				bld_progress(c->b, EZFS_BUILD_SCAN, c->bins.n,
					     0, 0, 0);
		}
		if (err)
			break;
	}
	c->entry = NULL;
	tpax_clear(&g);
	tpax_clear(&l);
	return err;
}

static void tctx_free(struct tctx *c)
{
	size_t i;

	for (i = 0; i < c->nodes.n; i++) {
		struct tnode *t = c->nodes.v[i];

		free(t->name);
		free(t->kids);
		free(t);
	}
	for (i = 0; i < c->bins.n; i++) {
		struct binode *in = c->bins.v[i];

		if (!in->nlink)	/* not handed to the builder */
			bld_inode_free(in);
	}
	free(c->nodes.v);
	free(c->bins.v);
	free(c->tab);
	tstream_close(&c->s);
	if (c->spool >= 0)
		close(c->spool);
}

int bld_scan_tar(struct ezfs_builder *b, const char *path, const char *tmpdir)
{
	struct tctx c = { .b = b, .spool = -1 };
	struct binode *rin;
	size_t i;
	int err;

	err = tstream_open(&c.s, path);
	if (err) {
		bld_log(b, EZFS_LOG_ERROR, "%s: %s", c.s.name ? c.s.name : path,
			strerror(-err));
		tstream_close(&c.s);
		return err;
	}
	if (!c.s.seekable)
		err = open_spool(&c, tmpdir);
	rin = err ? NULL : new_binode(&c, "/");
	if (!err && rin) {
		c.root = calloc(1, sizeof(*c.root));
		if (c.root && push(&c.nodes, c.root)) {
			free(c.root);
			c.root = NULL;
		}
	}
	if (!err && (!rin || !c.root || !(c.root->name = strdup("")) ||
		     tab_grow(&c) ||
		     set_meta(&c, rin, S_IFDIR | 0755, NULL)))
		err = -ENOMEM;
	if (!err) {
		c.root->in = rin;
		c.root->implicit = true;
		err = read_archive(&c);
	}
	/* missing parents: 0755, root, -T or the newest mtime */
	for (i = 0; !err && i < c.nodes.n; i++) {
		struct tnode *t = c.nodes.v[i];

		if (t->implicit)
			err = set_meta(&c, t->in, S_IFDIR | 0755, NULL);
	}
	if (!err)
		err = emit(&c);
	if (!err) {
		b->datafd = c.spool >= 0 ? c.spool : dup(c.s.fd);
		c.spool = -1;
		if (b->datafd < 0)
			err = -errno;
	}
	if (err == -ENOMEM)
		bld_log(b, EZFS_LOG_ERROR, "%s: out of memory", c.s.name);
	tctx_free(&c);
	return err;
}
