/* SPDX-License-Identifier: MIT */
/*
 * tar_tree.c - the tree of a tar source while it is read: nodes found by
 * (parent, name) in one hash table, replaced in place by later members;
 * then handed to the builder breadth first with sorted names, the order
 * of a directory scan.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "write/internal.h"
#include "write/tar/tar.h"
#include "format/erofs_fs.h"

/* One error line: INPUT: entry 'PATH' (offset N): reason */
int ezi_tar_err(struct tctx *c, int err, const char *fmt, ...)
{
	char msg[512], q[300];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->entry)
		ezi_bld_log(
			c->b, EZFS_LOG_ERROR,
			"%s: entry '%s' (offset %llu): %s", c->s.name,
			ezfs_quote(c->entry, strlen(c->entry), q, sizeof(q)),
			(unsigned long long)c->hdr_off, msg);
	else
		ezi_bld_log(c->b, EZFS_LOG_ERROR, "%s: offset %llu: %s",
			    c->s.name, (unsigned long long)c->hdr_off, msg);
	return err;
}

int ezi_tar_push(struct vec *v, void *p)
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

struct tnode **ezi_tar_slot(struct tctx *c, const struct tnode *parent,
			    const char *name)
{
	size_t i;

	for (i = thash(parent, name, c->tabcap); c->tab[i];
	     i = (i + 1) & (c->tabcap - 1))
		if (c->tab[i]->parent == parent &&
		    !strcmp(c->tab[i]->name, name))
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
			*ezi_tar_slot(c, old[i]->parent, old[i]->name) = old[i];
	free(old);
	return 0;
}

/* ---- nodes ---- */

struct binode *ezi_tar_binode(struct tctx *c, char *const *comp, int n)
{
	struct binode *in = calloc(1, sizeof(*in));
	const char *src = c->srcname ? c->srcname : c->s.name;
	size_t len = strlen(src) + 3;
	char *p;
	int i;

	if (!in)
		return NULL;
	for (i = 0; i < n; i++)
		len += strlen(comp[i]) + 1;
	/* "INPUT:/a/b": the builder takes what follows its root's "INPUT:/"
	 * as the relative path (--compress-hints) */
	in->srcpath = malloc(len);
	if (!in->srcpath || ezi_tar_push(&c->bins, in)) {
		free(in->srcpath);
		free(in);
		return NULL;
	}
	p = in->srcpath + sprintf(in->srcpath, "%s:/", src);
	for (i = 0; i < n; i++)
		p += sprintf(p, i ? "/%s" : "%s", comp[i]);
	return in;
}

/* A new node (name, in) under parent, replacing the old one if any. */
struct tnode *ezi_tar_put(struct tctx *c, struct tnode *parent,
			  const char *name, struct binode *in)
{
	struct tnode *t = calloc(1, sizeof(*t)), **slot;
	unsigned i;
	bool reuse;

	if (!t || ezi_tar_push(&c->nodes, t) || tab_grow(c)) {
		free(t);
		return NULL;
	}
	t->name = strdup(name);
	if (!t->name)
		return NULL;
	t->parent = parent;
	t->in = in;
	t->layer = c->layer;
	slot = ezi_tar_slot(c, parent, name);
	/* whited out: the slot is the new node's, its parent lists it anew */
	reuse = *slot && (*slot)->gone;
	if (*slot && !reuse) {
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
	if (!reuse)
		c->tabn++;
	return t;
}

/* Metadata from st (and the entry's xattrs); nlink 0 = not yet placed. */
int ezi_tar_meta(struct tctx *c, struct binode *in, uint32_t mode,
		 const struct tentry *e)
{
	struct stat st;
	size_t i;
	int err;

	memset(&st, 0, sizeof(st));
	st.st_mode = mode;
	if (e) {
		if (e->uid > UINT32_MAX || e->gid > UINT32_MAX)
			return ezi_tar_err(c, -ERANGE,
					   "uid or gid beyond 32 bits");
		st.st_uid = (uid_t)e->uid;
		st.st_gid = (gid_t)e->gid;
		st.st_mtim.tv_sec = e->mtime;
		st.st_mtim.tv_nsec = e->mtime_ns;
		if (e->mtime > c->newest)
			c->newest = e->mtime;
	} else {
		st.st_mtim.tv_sec =
			c->b->p.has_timestamp ? c->b->epoch : c->newest;
	}
	ezi_bld_inode_meta(c->b, in, &st);
	in->nlink = 0;
	if (!e || c->b->p.xattr_tolerance < 0)
		return 0;
	for (i = 0; i < e->nx; i++) {
		err = ezi_bld_xattr_add(c->b, in, e->x[i].name, e->x[i].value,
					e->x[i].len);
		if (err)
			return err;
	}
	ezi_bld_xattrs_sort(in);
	return 0;
}

/*
 * Split path into components in place (leading '/', "." and empty ones
 * dropped); refuses "..", over-long names. Returns the count.
 */
int ezi_tar_split(struct tctx *c, char *path, char **comp, int max)
{
	char *p = path, *save = NULL, *tok;
	int n = 0;

	for (tok = strtok_r(p, "/", &save); tok;
	     tok = strtok_r(NULL, "/", &save)) {
		if (!strcmp(tok, "."))
			continue;
		if (!strcmp(tok, ".."))
			return ezi_tar_err(c, -EPERM,
					   "'..' in the path escapes the root");
		if (strlen(tok) > EROFS_NAME_LEN)
			return ezi_tar_err(c, -ENAMETOOLONG,
					   "a name is longer than %u bytes",
					   EROFS_NAME_LEN);
		if (n == max)
			return ezi_tar_err(c, -ENAMETOOLONG, "path too deep");
		comp[n++] = tok;
	}
	return n;
}

/* The directory node holding comp[0..n-1]; creates missing ones. */
int ezi_tar_walk(struct tctx *c, char **comp, int n, bool create,
		 struct tnode **out)
{
	struct tnode *t = c->root;
	int i;

	for (i = 0; i < n; i++) {
		struct tnode *k = *ezi_tar_slot(c, t, comp[i]);

		if (k && k->gone)
			k = NULL;
		if (k && create)
			k->layer = c->layer;
		if (!k && !create)
			return -ENOENT;
		if (!k) {
			struct binode *in = ezi_tar_binode(c, comp, i + 1);

			if (!in)
				return -ENOMEM;
			k = ezi_tar_put(c, t, comp[i], in);
			if (!k || ezi_tar_meta(c, in, S_IFDIR | 0755, NULL))
				return -ENOMEM;
			k->implicit = true;
		} else if (!S_ISDIR(k->in->mode) && (create || i < n - 1)) {
			return ezi_tar_err(c, -ENOTDIR,
					   "'%s' is not a directory", comp[i]);
		}
		t = k;
	}
	*out = t;
	return 0;
}

/* t and all below it out of the tree */
static void drop(struct tnode *t)
{
	struct tnode *p = t->parent;
	unsigned i;

	t->gone = true;
	for (i = 0; i < p->nkids; i++)
		if (p->kids[i] == t) {
			p->kids[i] = p->kids[--p->nkids];
			break;
		}
}

/* An opaque directory: what the layers below left in it goes (what this
 * layer wrote stays, in directories this layer went through too). */
static void opaque(struct tnode *dir, unsigned layer)
{
	unsigned i = 0;

	while (i < dir->nkids) {
		struct tnode *k = dir->kids[i];

		if (k->layer < layer) {
			drop(k); /* the last kid moved to i */
			continue;
		}
		if (S_ISDIR(k->in->mode))
			opaque(k, layer);
		i++;
	}
}

int ezi_tar_whiteout(struct tctx *c, char **comp, int n)
{
	const char *base = n ? comp[n - 1] : "";
	struct tnode *dir, *t;
	int err;

	if (!c->oci || strncmp(base, ".wh.", 4))
		return 0;
	err = ezi_tar_walk(c, comp, n - 1, false, &dir);
	if (err == -ENOENT)
		return 1; /* nothing below to hide */
	if (err)
		return err;
	if (!strcmp(base, ".wh..wh..opq"))
		opaque(dir, c->layer);
	else if (strncmp(base, ".wh..wh.", 8)) {
		t = *ezi_tar_slot(c, dir, base + 4);
		/* a name this layer wrote stays: whiteouts hide lower ones */
		if (t && !t->gone && t->layer < c->layer)
			drop(t);
	}
	return 1;
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
int ezi_tar_tree_init(struct tctx *c)
{
	struct binode *rin = ezi_tar_binode(c, NULL, 0);

	if (!rin)
		return -ENOMEM;
	c->root = calloc(1, sizeof(*c->root));
	if (!c->root || ezi_tar_push(&c->nodes, c->root)) {
		free(c->root);
		c->root = NULL;
		return -ENOMEM;
	}
	c->root->name = strdup("");
	c->root->in = rin;
	c->root->implicit = true;
	if (!c->root->name || tab_grow(c))
		return -ENOMEM;
	return ezi_tar_meta(c, rin, S_IFDIR | 0755, NULL);
}

int ezi_tar_emit(struct tctx *c)
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
	err = ezi_bld_add_inode(b, c->root->in);
	c->root->in->nlink = 2;
	c->root->in->parent = c->root->in;
	count(b, c->root->in);
	for (qi = 0; qi < qn && !err; qi++) {
		struct binode *dir = q[qi]->in;

		if (q[qi]->nkids)
			qsort(q[qi]->kids, q[qi]->nkids, sizeof(*q[qi]->kids),
			      cmp_tnode);
		for (k = 0; k < q[qi]->nkids && !err; k++) {
			struct tnode *t = q[qi]->kids[k];
			struct binode *in = t->in;

			if (in->nlink) {
				in->nlink++;
				b->st.hardlinks++;
			} else if (!(err = ezi_bld_add_inode(b, in))) {
				in->nlink = S_ISDIR(in->mode) ? 2 : 1;
				count(b, in);
				if (S_ISDIR(in->mode)) {
					in->parent = dir;
					dir->nlink++;
					q[qn++] = t;
				}
			}
			if (!err)
				err = ezi_bld_add_dentry(dir, t->name, in);
		}
	}
	free(q);
	return err ? err : ezi_bld_scan_finish(b);
}

void ezi_tar_free(struct tctx *c)
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

		if (!in->nlink) /* not handed to the builder */
			ezi_bld_inode_free(in);
	}
	free(c->nodes.v);
	free(c->bins.v);
	free(c->tab);
	ezi_tstream_close(&c->s);
	if (c->spool >= 0)
		close(c->spool);
}
