/* SPDX-License-Identifier: MIT */
/*
 * zxdd.c - -E dedupe across files on decoded data (9.11).
 *
 * Every pcluster written is indexed by a rolling hash and the CRC32C of
 * the first blksz bytes it decodes to (one entry a prefix: the first
 * pcluster stays); the entry names the file and offset whose bytes the
 * pcluster decodes to, so they are re-read from the source when a match
 * is checked (the table holds no data; at most XDD_MAX entries).
 *
 * On the writer thread, in inode order (so the image does not depend on
 * the number of workers): a compressed file's bytes are scanned with the
 * rolling hash. Without a hit the worker's result stays. With one, the
 * file is compressed again here with the table: before each extent, the
 * positions from the end of the previous extent back into it are tried
 * (nearest first); where an earlier pcluster's data starts again and runs
 * past the current position, the previous extent is cut there (keeping
 * its pcluster: PARTIAL_REF when compressed) and the new extent refers to
 * the earlier pcluster for as many bytes as match (PARTIAL_REF when that
 * is less than the pcluster decodes to). The result is kept if it takes
 * less room than the worker's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "write/internal.h"
#include "format/erofs_fs.h"

#define XDD_MUL	  0x01000193u
#define XDD_FLOG  23 /* filter bits: 1 MiB */
#define XDD_MAX	  (1u << 21)
#define XDD_CHUNK (1u << 20)

struct xent {
	const struct binode *in; /* the pcluster decodes to its bytes */
	uint64_t la;		 /* [la, la + len) */
	uint32_t len;
	uint32_t h, crc;
	uint32_t next;	  /* chain: index + 1 */
	uint32_t blkaddr; /* absolute; own: the extent's index */
	uint32_t blocks;
	uint8_t type;
	bool own; /* of the file being compressed again */
};

struct bxdd {
	struct xent *e;
	uint32_t n, cap;
	uint32_t *head; /* chain heads (index + 1) */
	uint32_t hcap;
	uint64_t *bits; /* filter */
	uint32_t W, powW, inv;
	uint32_t own_from, nreg;
	void *cctx; /* the writer's codec contexts */
	/* the source last read and the entry whose data is in buf */
	const struct binode *rin;
	struct bsrc rs;
	uint8_t *buf;
	uint32_t bent; /* index + 1 */
	uint8_t *sbuf; /* prescan */
};

static uint32_t fmix(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	return h ^ (h >> 16);
}

static uint32_t xhash(const struct bxdd *x, const uint8_t *p)
{
	uint32_t h = 0, i;

	for (i = 0; i < x->W; i++)
		h = h * XDD_MUL + p[i];
	return h;
}

static bool fbit(const struct bxdd *x, uint32_t h)
{
	uint32_t f = fmix(h) >> (32 - XDD_FLOG);

	return x->bits[f >> 6] >> (f & 63) & 1;
}

static struct bxdd *xdd_get(struct ezfs_builder *b)
{
	struct bxdd *x = b->xdd;
	uint32_t i;

	if (x)
		return x;
	x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->bits = calloc((1u << XDD_FLOG) / 64, sizeof(uint64_t));
	x->buf = malloc(EROFS_PCLUSTER_MAX_DSIZE);
	x->sbuf = malloc(XDD_CHUNK + b->blksz);
	if (!x->bits || !x->buf || !x->sbuf) {
		free(x->bits);
		free(x->buf);
		free(x->sbuf);
		free(x);
		return NULL;
	}
	x->rs.fd = -1;
	x->W = b->blksz;
	x->powW = 1;
	for (i = 1; i < x->W; i++)
		x->powW *= XDD_MUL;
	x->inv = XDD_MUL; /* Newton: XDD_MUL^-1 mod 2^32 */
	for (i = 0; i < 5; i++)
		x->inv *= 2 - XDD_MUL * x->inv;
	b->xdd = x;
	return x;
}

void ezi_bld_xdd_free(struct ezfs_builder *b)
{
	struct bxdd *x = b->xdd;

	if (!x)
		return;
	if (x->cctx)
		ezi_bld_cctx_free(b, x->cctx);
	ezi_bld_src_close(&x->rs);
	free(x->e);
	free(x->head);
	free(x->bits);
	free(x->buf);
	free(x->sbuf);
	free(x);
	b->xdd = NULL;
}

static void chain_push(struct bxdd *x, uint32_t i)
{
	uint32_t k = fmix(x->e[i].h) & (x->hcap - 1);

	x->e[i].next = x->head[k];
	x->head[k] = i + 1;
}

/* Add an entry (kept unless one with the same prefix hashes exists). */
static int xdd_insert(struct bxdd *x, const struct xent *ne)
{
	uint32_t i, f;

	if (x->n >= XDD_MAX)
		return 0;
	if (x->hcap) {
		for (i = x->head[fmix(ne->h) & (x->hcap - 1)]; i;
		     i = x->e[i - 1].next)
			if (x->e[i - 1].h == ne->h &&
			    x->e[i - 1].crc == ne->crc)
				return 0;
	}
	if (x->n == x->cap) {
		uint32_t cap = x->cap ? 2 * x->cap : 1024;
		struct xent *e = realloc(x->e, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		x->e = e;
		x->cap = cap;
	}
	if (x->n + 1 > x->hcap) {
		uint32_t hcap = x->hcap ? 4 * x->hcap : 4096;
		uint32_t *hd = calloc(hcap, sizeof(*hd));

		if (!hd)
			return -ENOMEM;
		free(x->head);
		x->head = hd;
		x->hcap = hcap;
		for (i = 0; i < x->n; i++)
			chain_push(x, i);
	}
	x->e[x->n] = *ne;
	chain_push(x, x->n);
	x->n++;
	f = fmix(ne->h) >> (32 - XDD_FLOG);
	x->bits[f >> 6] |= 1ull << (f & 63);
	return 0;
}

/* Drop the entries from own_from on (a result not kept); the filter keeps
 * their bits. They are the newest, so each heads its chain. */
static void xdd_pop(struct bxdd *x)
{
	while (x->n > x->own_from) {
		struct xent *e = &x->e[--x->n];

		x->head[fmix(e->h) & (x->hcap - 1)] = e->next;
		if (x->bent == x->n + 1)
			x->bent = 0;
	}
}

/* A read of in's source that failed (n < 0) or came short (n == 0). */
static int read_err(const struct ezfs_builder *b, const struct binode *in,
		    ssize_t n)
{
	ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s", in->srcpath,
		    n < 0 ? strerror((int)-n) : "file shrank while building");
	return n < 0 ? (int)n : -EAGAIN;
}

/*
 * The data entry i decodes to, in x->buf. The source must still be the
 * file that was compressed (else its pcluster may decode to other bytes):
 * one error line and -EAGAIN otherwise, as for a file that changes while
 * it is compressed.
 */
static int xdd_data(struct bxdd *x, const struct ezfs_builder *b, uint32_t i,
		    const uint8_t **d)
{
	const struct xent *e = &x->e[i];
	uint32_t got = 0;
	int err;

	*d = x->buf;
	if (x->bent == i + 1)
		return 0;
	x->bent = 0;
	if (x->rin != e->in) {
		ezi_bld_src_close(&x->rs);
		x->rin = NULL;
		err = ezi_bld_src_open(b, e->in, &x->rs);
		if (err)
			return err;
		x->rin = e->in;
	}
	while (got < e->len) {
		ssize_t n = ezi_bld_src_pread(&x->rs, x->buf + got,
					      e->len - got, e->la + got);

		if (n <= 0)
			return read_err(b, e->in, n);
		got += (uint32_t)n;
	}
	err = ezi_bld_src_check(b, e->in, &x->rs);
	if (err)
		return err;
	x->bent = i + 1;
	return 0;
}

static uint32_t common(const uint8_t *a, const uint8_t *c, uint32_t n)
{
	uint32_t k = 0;

	while (k + 8 <= n && !memcmp(a + k, c + k, 8))
		k += 8;
	while (k < n && a[k] == c[k])
		k++;
	return k;
}

int ezi_bld_xdd_register(struct bxdd *x, const struct binode *in,
			 const struct bzfile *z, uint64_t pos,
			 const uint8_t *win, uint64_t wpos, uint64_t wend)
{
	int err;

	for (; x->nreg < z->next; x->nreg++) {
		const struct bextent *e = &z->ext[x->nreg];
		uint64_t end =
			x->nreg + 1 < z->next ? z->ext[x->nreg + 1].la : pos;
		struct xent ne;

		if (e->ref || e->xref || e->frag || !e->blocks ||
		    end - e->la < x->W || e->la < wpos || e->la + x->W > wend)
			continue;
		ne = (struct xent){
			.in = in,
			.la = e->la,
			.len = (uint32_t)(end - e->la),
			.h = xhash(x, win + (e->la - wpos)),
			.crc = ezi_crc32c(0, win + (e->la - wpos), x->W),
			.blkaddr = x->nreg,
			.blocks = e->blocks,
			.type = e->type,
			.own = true,
		};
		err = xdd_insert(x, &ne);
		if (err)
			return err;
	}
	return 0;
}

int ezi_bld_xdd_match(struct bxdd *x, const struct ezfs_builder *b,
		      const struct binode *in, const struct bzfile *z,
		      uint64_t pos, uint64_t size, const uint8_t *win,
		      uint64_t wpos, uint64_t wend, struct bxmatch *m)
{
	uint64_t lcs = b->blksz, mask = lcs - 1, start = pos, cur;
	const struct bextent *pv = z->next ? &z->ext[z->next - 1] : NULL;
	uint32_t h, W = x->W;

	if (!x->n)
		return 0;
	/* the previous extent may be cut, still reaching a later lcluster
	 * (two with a CBLKCNT to keep) */
	if (pv && pv->blocks && !pv->frag) {
		uint64_t keep =
			(pv->blocks > 1 ? 2 * lcs : lcs) - (pv->la & mask);

		/* and a block's worth (as 1.9.3: cut shorter for short
		 * matches it takes more blocks than it saves) */
		if (keep < W)
			keep = W;
		if (pv->la + keep < pos)
			start = pv->la + keep;
		if (start < wpos)
			start = pos;
	}
	cur = pos;
	if (cur + W > wend) {
		if (wend < start + W)
			return 0;
		cur = wend - W;
	}
	h = xhash(x, win + (cur - wpos));
	for (;;) {
		uint32_t i, crc = 0;
		bool have_crc = false;

		for (i = fbit(x, h) ? x->head[fmix(h) & (x->hcap - 1)] : 0; i;
		     i = x->e[i - 1].next) {
			const struct xent *e = &x->e[i - 1];
			const uint8_t *d, *p = win + (cur - wpos);
			uint64_t avail = wend - cur;
			uint32_t len;

			if (e->h != h)
				continue;
			if (!have_crc) {
				crc = ezi_crc32c(0, p, W);
				have_crc = true;
			}
			if (e->crc != crc)
				continue;
			if (e->own && e->la >= wpos && e->la + e->len <= wend) {
				d = win + (e->la - wpos);
			} else {
				int err = xdd_data(x, b, i - 1, &d);

				if (err)
					return err;
			}
			len = common(
				p, d,
				(uint32_t)(avail < e->len ? avail : e->len));
			if (len < W || cur + len <= pos)
				continue;
			/* a pcluster of several blocks needs the CBLKCNT of
			 * a second lcluster */
			if (e->blocks > 1 && (cur & mask) + len < 2 * lcs)
				continue;
			if ((cur >> b->blkszbits) ==
				    ((cur + len) >> b->blkszbits) &&
			    cur + len != size)
				continue;
			m->at = cur;
			m->len = len;
			m->blocks = e->blocks;
			m->type = e->type;
			m->own = e->own;
			m->blkaddr = e->blkaddr;
			m->partial = len < e->len &&
				     e->type != Z_EROFS_LCLUSTER_TYPE_PLAIN;
			return 1;
		}
		if (cur <= start)
			break;
		cur--;
		h = win[cur - wpos] * x->powW +
		    (h - win[cur + W - wpos]) * x->inv;
	}
	(void)in;
	return 0;
}

/* Does any window of in's bytes start an earlier file's pcluster? */
static int prescan(struct ezfs_builder *b, struct bxdd *x,
		   const struct binode *in, bool *hit)
{
	uint32_t W = x->W;
	uint64_t off = 0, have = 0; /* sbuf holds [off, off + have) */
	struct bsrc s = { .fd = -1 };
	int err = ezi_bld_src_open(b, in, &s);
	uint32_t h = 0;
	uint64_t q = 0;

	*hit = false;
	if (err)
		return err;
	while (off + have < in->size) {
		ssize_t n;
		uint64_t end;

		if (have >= W) { /* keep the last W bytes (rolled out next) */
			memmove(x->sbuf, x->sbuf + have - W, W);
			off += have - W;
			have = W;
		}
		n = ezi_bld_src_pread(&s, x->sbuf + have, XDD_CHUNK,
				      off + have);
		if (n <= 0) {
			err = read_err(b, in, n);
			break;
		}
		have += (uint64_t)n;
		end = off + have;
		for (; q + W <= end; q++) {
			const uint8_t *p = x->sbuf + (q - off);
			uint32_t i;

			if (!q)
				h = xhash(x, p);
			else
				h = (h - p[-1] * x->powW) * XDD_MUL + p[W - 1];
			if (!fbit(x, h))
				continue;
			for (i = x->head[fmix(h) & (x->hcap - 1)]; i;
			     i = x->e[i - 1].next)
				if (x->e[i - 1].h == h &&
				    x->e[i - 1].crc == ezi_crc32c(0, p, W)) {
					*hit = true;
					goto out;
				}
		}
	}
out:
	ezi_bld_src_close(&s);
	return err;
}

static uint64_t zcost(const struct bzfile *z, uint64_t size)
{
	return z ? z->datalen + z->idx_size + z->idata_len : size;
}

int ezi_bld_xdd_file(struct ezfs_builder *b, struct binode *in,
		     struct bzfile **zp)
{
	struct bzfile *z = *zp, *nz = NULL;
	struct bxdd *x;
	bool hit;
	uint32_t k;
	int err;

	if (z && (z->written || z->plen))
		return 0;
	x = xdd_get(b);
	if (!x)
		return -ENOMEM;
	x->own_from = x->n;
	if (in->size < x->W || !x->n)
		return 0;
	err = prescan(b, x, in, &hit);
	if (err || !hit)
		return err;
	if (!x->cctx) {
		x->cctx = ezi_bld_cctx_new(b, &err);
		if (!x->cctx)
			return err;
	}
	x->nreg = 0;
	err = ezi_bld_compress_xdd(b, in, x->cctx, x, &nz);
	if (err) {
		xdd_pop(x);
		return err;
	}
	if (!nz || !nz->has_ref || zcost(nz, in->size) >= zcost(z, in->size)) {
		xdd_pop(x);
		ezi_bld_zfile_free(nz);
		return 0;
	}
	/* data.c adds the cursor to every blkaddr (mod 2^32) */
	for (k = 0; k < nz->next; k++)
		if (nz->ext[k].xref)
			nz->ext[k].blkaddr -= (uint32_t)b->cursor;
	ezi_bld_zfile_free(z);
	*zp = nz;
	return 0;
}

int ezi_bld_xdd_commit(struct ezfs_builder *b, struct binode *in,
		       const struct bzfile *z)
{
	struct bxdd *x = b->xdd;
	uint8_t *p;
	uint32_t k;
	int err = 0;

	if (!x)
		return 0;
	if (x->n > x->own_from) {
		/* compressed again here: the entries are in, now placed */
		for (k = x->own_from; k < x->n; k++) {
			x->e[k].blkaddr = z->ext[x->e[k].blkaddr].blkaddr;
			x->e[k].own = false;
		}
		x->own_from = x->n;
		return 0;
	}
	if (!z || z->written || z->plen)
		return 0;
	p = x->sbuf;
	for (k = 0; k < z->next && !err; k++) {
		const struct bextent *e = &z->ext[k];
		uint64_t end = k + 1 < z->next ? z->ext[k + 1].la : in->size;
		struct xent ne;
		uint32_t got = 0;

		/* a cut extent decodes to more than end - la */
		if (e->ref || e->xref || e->frag || e->partial || !e->blocks ||
		    end - e->la < x->W)
			continue;
		if (x->rin != in) {
			ezi_bld_src_close(&x->rs);
			x->rin = NULL;
			err = ezi_bld_src_open(b, in, &x->rs);
			if (err)
				break;
			x->rin = in;
		}
		while (got < x->W) {
			ssize_t n = ezi_bld_src_pread(&x->rs, p + got,
						      x->W - got, e->la + got);

			if (n <= 0) {
				err = read_err(b, in, n);
				break;
			}
			got += (uint32_t)n;
		}
		if (err)
			break;
		ne = (struct xent){
			.in = in,
			.la = e->la,
			.len = (uint32_t)(end - e->la),
			.h = xhash(x, p),
			.crc = ezi_crc32c(0, p, x->W),
			.blkaddr = e->blkaddr,
			.blocks = e->blocks,
			.type = e->type,
		};
		err = xdd_insert(x, &ne);
	}
	x->own_from = x->n;
	return err;
}
