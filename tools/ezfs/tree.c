/* SPDX-License-Identifier: MIT */
/* tree.c - directory listings, nid sets and maps, and the tree walker. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common.h"

/* ---- directory listing ---- */

int cli_is_dots(const char *name, size_t namelen)
{
	return (namelen == 1 && name[0] == '.') ||
	       (namelen == 2 && name[0] == '.' && name[1] == '.');
}

int cli_readdir_all(ezfs_inode *dir, struct cli_dirlist *dl)
{
	size_t i, k = 0;
	int ret;

	ret = ezfs_readdir_all(dir, &dl->ents, &dl->n);
	if (ret < 0) {
		cli_dirlist_free(dl);
		return ret;
	}
	for (i = 0; i < dl->n; i++) {
		if (cli_is_dots(dl->ents[i].name, dl->ents[i].namelen))
			free(dl->ents[i].name);
		else
			dl->ents[k++] = dl->ents[i];
	}
	dl->n = k;
	return 0;
}

void cli_dirlist_free(struct cli_dirlist *dl)
{
	ezfs_dirents_free(dl->ents, dl->n);
	dl->ents = NULL;
	dl->n = 0;
}

/* ---- nid set ---- */

static size_t nid_hash(uint64_t nid, size_t cap)
{
	nid *= 0x9e3779b97f4a7c15ULL;
	return (size_t)(nid >> 17) & (cap - 1);
}

int cli_nidset_add(struct cli_nidset *s, uint64_t nid)
{
	size_t i;

	if ((s->count + 1) * 2 > s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 1024, j;
		uint64_t *n = calloc(ncap, sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (j = 0; j < s->cap; j++) {
			if (!s->slots[j])
				continue;
			i = nid_hash(s->slots[j] - 1, ncap);
			while (n[i])
				i = (i + 1) & (ncap - 1);
			n[i] = s->slots[j];
		}
		free(s->slots);
		s->slots = n;
		s->cap = ncap;
	}
	i = nid_hash(nid, s->cap);
	while (s->slots[i]) {
		if (s->slots[i] == nid + 1)
			return 0;
		i = (i + 1) & (s->cap - 1);
	}
	s->slots[i] = nid + 1;
	s->count++;
	return 1;
}

int cli_nidset_has(const struct cli_nidset *s, uint64_t nid)
{
	size_t i;

	if (!s->cap)
		return 0;
	i = nid_hash(nid, s->cap);
	while (s->slots[i]) {
		if (s->slots[i] == nid + 1)
			return 1;
		i = (i + 1) & (s->cap - 1);
	}
	return 0;
}

void cli_nidset_free(struct cli_nidset *s)
{
	free(s->slots);
	s->slots = NULL;
	s->cap = s->count = 0;
}

void **cli_nidmap_slot(struct cli_nidmap *m, uint64_t nid, int *added)
{
	size_t i;

	*added = 0;
	if ((m->count + 1) * 2 > m->cap) {
		size_t ncap = m->cap ? m->cap * 2 : 256, j;
		uint64_t *nk = calloc(ncap, sizeof(*nk));
		void **nv = calloc(ncap, sizeof(*nv));

		if (!nk || !nv) {
			free(nk);
			free(nv);
			return NULL;
		}
		for (j = 0; j < m->cap; j++) {
			if (!m->keys[j])
				continue;
			i = nid_hash(m->keys[j] - 1, ncap);
			while (nk[i])
				i = (i + 1) & (ncap - 1);
			nk[i] = m->keys[j];
			nv[i] = m->vals[j];
		}
		free(m->keys);
		free(m->vals);
		m->keys = nk;
		m->vals = nv;
		m->cap = ncap;
	}
	i = nid_hash(nid, m->cap);
	while (m->keys[i]) {
		if (m->keys[i] == nid + 1)
			return &m->vals[i];
		i = (i + 1) & (m->cap - 1);
	}
	m->keys[i] = nid + 1;
	m->vals[i] = NULL;
	m->count++;
	*added = 1;
	return &m->vals[i];
}

void cli_nidmap_free(struct cli_nidmap *m, void (*free_val)(void *))
{
	size_t i;

	for (i = 0; free_val && i < m->cap; i++)
		if (m->keys[i])
			free_val(m->vals[i]);
	free(m->keys);
	free(m->vals);
	m->keys = NULL;
	m->vals = NULL;
	m->cap = m->count = 0;
}

/* ---- tree walk ---- */

struct walk_frame {
	struct cli_dirlist dl;
	size_t next;
	size_t pathlen; /* length of this directory's path */
};

static int path_append(char **path, size_t *cap, size_t at, const char *name,
		       size_t namelen)
{
	size_t need = at + 1 + namelen + 1;

	if (need > *cap) {
		size_t ncap = *cap ? *cap : 256;
		char *n;

		while (ncap < need)
			ncap *= 2;
		n = realloc(*path, ncap);
		if (!n)
			return -ENOMEM;
		*path = n;
		*cap = ncap;
	}
	if (at)
		(*path)[at++] = '/';
	memcpy(*path + at, name, namelen);
	(*path)[at + namelen] = '\0';
	return 0;
}

int cli_walk(ezfs_image *fs, uint64_t nid, cli_walk_fn fn, void *arg)
{
	struct walk_frame *stack = NULL;
	size_t depth = 0, cap = 0, pcap = 0;
	struct cli_nidset seen = { 0 };
	char *path = NULL;
	ezfs_inode *ino;
	int ret;

	ret = ezfs_inode_get(fs, nid, &ino);
	if (ret < 0)
		return ret;
	ret = cli_nidset_add(&seen, nid);
	if (ret >= 0) {
		stack = calloc(16, sizeof(*stack));
		cap = 16;
		ret = stack ? cli_readdir_all(ino, &stack[0].dl) : -ENOMEM;
	}
	ezfs_inode_put(ino);
	if (ret < 0)
		goto out;
	depth = 1;
	path_append(&path, &pcap, 0, "", 0);
	if (!path) {
		ret = -ENOMEM;
		goto out;
	}
	while (depth) {
		struct walk_frame *f = &stack[depth - 1];
		struct ezfs_dirent *e;
		struct ezfs_stat st;

		if (f->next == f->dl.n) {
			cli_dirlist_free(&f->dl);
			depth--;
			continue;
		}
		e = &f->dl.ents[f->next++];
		ret = path_append(&path, &pcap, f->pathlen, e->name,
				  e->namelen);
		if (ret < 0)
			goto out;
		ret = ezfs_inode_get(fs, e->nid, &ino);
		if (ret < 0)
			goto out;
		ezfs_inode_stat(ino, &st);
		ret = fn(arg, path, e->nid, &st, ino);
		if (!ret && S_ISDIR(st.mode)) {
			ret = cli_nidset_add(&seen, e->nid);
			if (ret == 1) {
				if (depth == cap) {
					struct walk_frame *n;

					n = realloc(stack,
						    cap * 2 * sizeof(*n));
					if (!n) {
						ret = -ENOMEM;
						ezfs_inode_put(ino);
						goto out;
					}
					stack = n;
					cap *= 2;
				}
				f = &stack[depth];
				memset(f, 0, sizeof(*f));
				f->pathlen = strlen(path);
				ret = cli_readdir_all(ino, &f->dl);
				if (!ret)
					depth++;
			} else if (ret == 0) {
				ret = 0; /* seen before: do not loop */
			}
		}
		ezfs_inode_put(ino);
		if (ret < 0 || ret > 0)
			goto out;
	}
	ret = 0;
out:
	while (depth)
		cli_dirlist_free(&stack[--depth].dl);
	free(stack);
	free(path);
	cli_nidset_free(&seen);
	return ret;
}
