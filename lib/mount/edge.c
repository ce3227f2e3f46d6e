/* SPDX-License-Identifier: MIT */
/*
 * edge.c - putting decoded bytes into the kernel's page cache a page at a
 * time: fuse_lowlevel_notify_store marks a page up to date only when the
 * store fills it (or ends at the end of the file). Encoded extents start
 * and end anywhere inside a page, so a store of one extent leaves its first
 * and last pages out of the cache, and every read of them came back to the
 * daemon and decoded both neighbours again (random 4 KiB reads of a 256 KiB
 * deflate image decoded 2.4 times the file).
 *
 * The edge table keeps those partial pages: each extent stored adds its
 * head and tail bytes, and the page goes into the cache once the
 * neighbouring extent has brought the rest. A set-associative table of
 * whole pages (8 ways, the oldest entry of a set replaced), 1/16 of the
 * cache budget: random reads leave a partial page waiting until its
 * neighbour is first read, so one entry per extent of the file may be
 * waiting; a page pushed out only costs a read through the daemon later.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define EDGE_WAYS 8

struct edge_slot {
	uint64_t nid, page; /* page index in the file */
	uint64_t stamp;	    /* when taken: the oldest goes first */
	uint32_t lo, hi;    /* [0, lo) and [hi, page size) are filled */
	bool used;
	char *data;
};

int ezi_edge_init(struct edge_table *t, uint64_t budget)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t n;

	t->page = pg > 0 ? (uint32_t)pg : 4096;
	/* 1/16 of the decoded-data budget, 64 to 8192 pages, whole sets. */
	n = budget / 16 / t->page;
	n = n < 64 ? 64 : n > 8192 ? 8192 : n;
	t->nslots = (size_t)n / EDGE_WAYS * EDGE_WAYS;
	t->slots = calloc(t->nslots, sizeof(*t->slots));
	if (!t->slots)
		return -1;
	pthread_mutex_init(&t->lock, NULL);
	return 0;
}

void ezi_edge_destroy(struct edge_table *t)
{
	size_t i;

	if (!t->slots)
		return;
	for (i = 0; i < t->nslots; i++)
		free(t->slots[i].data);
	free(t->slots);
	t->slots = NULL;
	pthread_mutex_destroy(&t->lock);
}

static void store(struct ezfs_mount *m, uint64_t nid, const char *data,
		  uint64_t from, uint64_t to)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT((size_t)(to - from));

	bv.buf[0].mem = (void *)data;
	/* -ENOENT: the kernel forgot the inode; nothing to do then. */
	if (!fuse_lowlevel_notify_store(m->se, mnt_nid_to_ino(m, nid),
					(off_t)from, &bv, 0))
		MNT_COUNT(m, stored_bytes, to - from);
}

/*
 * Add [from, to), inside one page, to the edge table; true and the whole
 * page in out (its length in *len) when that completed it.
 */
static bool edge_add(struct edge_table *t, uint64_t nid, uint64_t fsize,
		     const char *data, uint64_t from, uint64_t to, char *out,
		     uint32_t *len)
{
	uint64_t page = from / t->page, base = page * t->page;
	uint32_t s = (uint32_t)(from - base), e = (uint32_t)(to - base);
	uint32_t plen =
		fsize - base < t->page ? (uint32_t)(fsize - base) : t->page;
	struct edge_slot *set, *sl;
	bool done = false;
	unsigned i;

	set = &t->slots[(nid * 0x9e3779b97f4a7c15ull + page) %
			(t->nslots / EDGE_WAYS) * EDGE_WAYS];
	pthread_mutex_lock(&t->lock);
	for (sl = NULL, i = 0; i < EDGE_WAYS; i++) {
		if (set[i].used && set[i].nid == nid && set[i].page == page) {
			sl = &set[i];
			break;
		}
		if (!sl ||
		    (sl->used && (!set[i].used || set[i].stamp < sl->stamp)))
			sl = &set[i];
	}
	if (!sl->data && !(sl->data = malloc(t->page))) {
		pthread_mutex_unlock(&t->lock);
		return false;
	}
	if (!sl->used || sl->nid != nid || sl->page != page) {
		sl->used = true;
		sl->nid = nid;
		sl->page = page;
		sl->stamp = ++t->stamp;
		sl->lo = 0;
		sl->hi = plen; /* past the end of the file counts as filled */
	}
	memcpy(sl->data + s, data, e - s);
	if (s <= sl->lo && e > sl->lo)
		sl->lo = e;
	if (e >= sl->hi && s < sl->hi)
		sl->hi = s;
	if (sl->lo >= sl->hi) {
		memcpy(out, sl->data, plen);
		*len = plen;
		sl->used = false;
		done = true;
	}
	pthread_mutex_unlock(&t->lock);
	return done;
}

/* One partial page of a store: to the table, and into the cache when whole. */
static void store_edge(struct ezfs_mount *m, uint64_t nid, uint64_t fsize,
		       const char *data, uint64_t from, uint64_t to)
{
	struct edge_table *t = &m->pf.edges;
	char *page;
	uint32_t len;

	if (!t->slots || !(page = malloc(t->page)))
		return;
	if (edge_add(t, nid, fsize, data, from, to, page, &len)) {
		MNT_COUNT(m, edge_pages, 1);
		store(m, nid, page, from / t->page * t->page,
		      from / t->page * t->page + len);
	}
	free(page);
}

void ezi_edge_store(struct ezfs_mount *m, struct mnode *node, const char *data,
		    uint64_t from, uint64_t to)
{
	struct edge_table *t = &m->pf.edges;
	struct ezfs_stat st;
	uint64_t a, b;

	if (to <= from)
		return;
	ezfs_inode_stat(node->ino, &st);
	if (to > st.size)
		to = st.size;
	a = (from + t->page - 1) / t->page * t->page;
	b = to == st.size ? to : to / t->page * t->page;
	if (a > to) /* inside one page */
		a = to;
	if (b < a) /* no whole page: the two partial ones */
		b = a;
	if (a > from)
		store_edge(m, node->nid, st.size, data, from, a);
	if (b > a)
		store(m, node->nid, data + (a - from), a, b);
	if (to > b)
		store_edge(m, node->nid, st.size, data + (b - from), b, to);
}
