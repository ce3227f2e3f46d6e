/* SPDX-License-Identifier: MIT */
/*
 * zsegs.c - compress the packed inode (9.10) in segments on worker
 * threads, while its bytes are still being appended.
 *
 * The packed inode is cut into segments of a fixed size (16 MiB, or 16
 * pclusters when larger); each segment is compressed on its own, so its
 * bytes depend only on its input, never on the number of workers. The
 * writer appends fragments one by one (fragments.c, a single thread: the
 * order and the dedupe decisions are sequential), and a worker takes a
 * segment as soon as the writer has gone past its end. The last, partial
 * segment waits for ezi_bld_zsegs_finish. Without this the workers sat idle
 * while the writer placed the fragments (linux tree, lz4hc-12 64K with
 * fragments: ~3.5 s on one CPU).
 *
 * With fragments the bytes are a shared mapping of the packed file
 * (fragments.c): a segment's pages are dropped once it is compressed,
 * and its compressed blocks go to a spill file at the segment's own
 * offset (a sparse file: a segment never takes more blocks than it has
 * bytes) until ezi_bld_zsegs_finish writes them to the image, so that
 * neither the packed inode nor its compressed form stays in memory.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "write/internal.h"
#include "util/pool.h"

struct zsegs;

struct zseg_job {
	struct zsegs *s;
	size_t i;
	uint64_t n;
	size_t room; /* the last segment: room for an inline tail */
};

struct zsegs {
	struct ezfs_builder *b;
	struct binode cfg; /* zeroed: default algorithm and pcluster */
	const uint8_t *mem;
	uint64_t seg, len;
	size_t maxseg, next; /* next: the first segment not submitted */
	bool final;
	/* once final: the room for the packed inode's tail inline after its
	 * index (-E ztailpacking; as in mkfs.erofs, whose packed inode is
	 * compressed as a file: one file's 6401-byte tail cost a block) */
	size_t tailroom;
	struct bzfile **res;
	int *err;
	struct zseg_job *jobs;
	struct ezi_pool *pool; /* NULL: ezi_bld_zsegs_finish does them */
	void **cctx;	       /* one per worker */
	bool drop;	       /* mem maps the packed file: drop its pages */
	int spillfd;	       /* compressed segments; -1: in memory */
};

/* Segment i's result to the spill file (its data then NULL, written
 * set: zfile_append only counts it). */
static int seg_spill(struct zsegs *s, size_t i)
{
	struct bzfile *z = s->res[i];
	int err;

	if (s->spillfd < 0 || !z || !z->data || z->datalen > s->seg)
		return 0;
	err = ezi_bld_fd_rw(s->spillfd, z->data, (size_t)z->datalen,
			    (uint64_t)i * s->seg, true);
	if (err)
		return err;
	free(z->data);
	z->data = NULL;
	z->written = true;
	return 0;
}

/* Bytes of segment i (a segment submitted before the end is known is a
 * full one). */
static uint64_t seg_len(const struct zsegs *s, size_t i)
{
	uint64_t off = (uint64_t)i * s->seg;

	return s->final && s->len - off < s->seg ? s->len - off : s->seg;
}

/*
 * The inline room of segment i: only a last segment shorter than the
 * others gets it, which is always compressed once final (a full one may
 * have been taken before: the image would depend on the workers).
 */
static size_t seg_room(const struct zsegs *s, size_t i)
{
	return seg_len(s, i) < s->seg ? s->tailroom : 0;
}

static void seg_run(struct zsegs *s, size_t i, uint64_t n, size_t room,
		    void **cctx)
{
	uint64_t off = (uint64_t)i * s->seg;
	int err = 0;

	if (!*cctx)
		*cctx = ezi_bld_cctx_new(s->b, &err);
	if (*cctx)
		err = ezi_bld_compress_mem(s->b, &s->cfg, *cctx, s->mem + off,
					   n, room, s->drop, &s->res[i]);
	else if (!err)
		err = -ENOMEM;
	if (!err)
		err = seg_spill(s, i);
	s->err[i] = err;
}

static void seg_job(void *arg)
{
	struct zseg_job *j = arg;

	seg_run(j->s, j->i, j->n, j->room, &j->s->cctx[ezi_pool_self()]);
}

/* Hand segment s->next to the pool; false if it could not be queued. */
static bool seg_submit(struct zsegs *s)
{
	struct zseg_job *j = &s->jobs[s->next];

	*j = (struct zseg_job){ s, s->next, seg_len(s, s->next),
				seg_room(s, s->next) };
	if (ezi_pool_submit(s->pool, seg_job, j))
		return false;
	s->next++;
	return true;
}

int ezi_bld_zsegs_start(struct ezfs_builder *b, const uint8_t *mem,
			uint64_t maxlen)
{
	uint64_t pcap = (uint64_t)b->pclusterblks << b->blkszbits;
	unsigned want = b->p.workers ? b->p.workers : 1;
	struct zsegs *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->b = b;
	s->mem = mem;
	s->spillfd = -1;
	s->drop = ezi_bld_packed_filebacked(b, mem);
	if (s->drop) {
		int fd = ezi_bld_tmpfd(b);

		if (fd < 0) {
			free(s);
			return fd;
		}
		s->spillfd = fd;
	}
	/* segment boundaries are extent boundaries on block boundaries */
	s->seg = pcap * 16 > (16u << 20) ? pcap * 16 : (16u << 20);
	s->maxseg = (size_t)((maxlen + s->seg - 1) / s->seg);
	s->res = calloc(s->maxseg + 1, sizeof(*s->res));
	s->err = calloc(s->maxseg + 1, sizeof(*s->err));
	if (!s->res || !s->err) {
		free(s->res);
		free(s->err);
		if (s->spillfd >= 0)
			close(s->spillfd);
		free(s);
		return -ENOMEM;
	}
	b->zsegs = s;
	if (want > s->maxseg)
		want = (unsigned)s->maxseg;
	if (want <= 1)
		return 0; /* ezi_bld_zsegs_finish compresses them */
	s->jobs = calloc(s->maxseg, sizeof(*s->jobs));
	s->cctx = calloc(want, sizeof(*s->cctx));
	if (s->jobs && s->cctx)
		s->pool = ezi_pool_new(want, b->p.async_queue_limit, NULL);
	return 0;
}

void ezi_bld_zsegs_feed(struct ezfs_builder *b, uint64_t avail)
{
	struct zsegs *s = b->zsegs;

	/* a segment goes to the workers once the writer is past its end */
	while (s && s->pool && s->next < s->maxseg &&
	       (uint64_t)(s->next + 1) * s->seg <= avail)
		if (!seg_submit(s))
			break;
}

/* Join the workers: after the jobs queued (stop: without them). */
static void zsegs_end(struct zsegs *s, bool stop)
{
	unsigned t, n = ezi_pool_threads(s->pool);

	if (!s->pool)
		return;
	if (!stop)
		ezi_pool_wait(s->pool);
	ezi_pool_destroy(s->pool);
	s->pool = NULL;
	for (t = 0; t < n; t++)
		ezi_bld_cctx_free(s->b, s->cctx[t]);
}

void ezi_bld_zsegs_free(struct ezfs_builder *b)
{
	struct zsegs *s = b->zsegs;
	size_t i;

	if (!s)
		return;
	zsegs_end(s, true);
	for (i = 0; i <= s->maxseg; i++)
		ezi_bld_zfile_free(s->res[i]);
	free(s->cctx);
	free(s->jobs);
	free(s->res);
	free(s->err);
	if (s->spillfd >= 0)
		close(s->spillfd);
	free(s);
	b->zsegs = NULL;
}

/*
 * The kept result's blocks to the image at the cursor, where data.c
 * places the packed inode's data (segment i's from the spill file or
 * from memory, in order); z->written then.
 */
static int zsegs_write(struct ezfs_builder *b, struct zsegs *s, size_t nseg,
		       uint8_t **mdata, struct bzfile *z)
{
	uint64_t at = b->cursor << b->blkszbits;
	size_t cap = 1u << 20;
	uint8_t *buf = NULL;
	size_t i;
	int err = 0;

	for (i = 0; i < nseg && !err; i++) {
		uint64_t len = s->res[i]->datalen, done = 0;

		if (mdata[i]) {
			err = ezi_bld_pwrite(b, mdata[i], (size_t)len, at);
			at += len;
			continue;
		}
		done = ezi_bld_copy_in(b, s->spillfd, (uint64_t)i * s->seg, at,
				       len);
		if (!buf && done < len)
			buf = malloc(cap);
		if (!buf && done < len)
			err = -ENOMEM;
		while (!err && done < len) {
			size_t n =
				len - done < cap ? (size_t)(len - done) : cap;

			err = ezi_bld_fd_rw(s->spillfd, buf, n,
					    (uint64_t)i * s->seg + done, false);
			if (err)
				ezi_bld_log(b, EZFS_LOG_ERROR,
					    "packed inode: read: %s",
					    strerror(-err));
			else
				err = ezi_bld_pwrite(b, buf, n, at + done);
			done += n;
		}
		at += len;
	}
	free(buf);
	if (!err) {
		free(z->data);
		z->data = NULL;
		z->written = true;
	}
	return err;
}

int ezi_bld_zsegs_finish(struct ezfs_builder *b, struct binode *in,
			 uint64_t len, struct bzfile **out)
{
	struct zsegs *s = b->zsegs;
	struct bzfile *z = NULL;
	uint8_t **mdata = NULL;
	void *cctx = NULL;
	size_t i, nseg;
	int err = 0;

	*out = NULL;
	if (!s)
		return -EINVAL;
	nseg = (size_t)((len + s->seg - 1) / s->seg);
	if (nseg > s->maxseg) {
		ezi_bld_zsegs_free(b);
		return -EOVERFLOW; /* more than announced */
	}
	s->len = len;
	s->final = true;
	if ((b->p.flags & EZFS_BUILD_ZTAILPACKING) &&
	    !(b->p.flags & EZFS_BUILD_48BIT))
		s->tailroom = ezi_bld_zinline_room(b, in);
	/* the rest (the last, partial segment) on the workers too */
	while (s->pool && s->next < nseg)
		if (!seg_submit(s))
			break;
	zsegs_end(s, false);
	/* without workers (or if none could start): here, in order */
	for (i = s->next; i < nseg; i++)
		seg_run(s, i, seg_len(s, i), seg_room(s, i), &cctx);
	ezi_bld_cctx_free(b, cctx);
	for (i = 0; i < nseg && !err; i++)
		err = s->err[i];
	if (!err)
		z = calloc(1, sizeof(*z));
	if (!err && s->spillfd >= 0)
		mdata = calloc(nseg ? nseg : 1, sizeof(*mdata));
	if (!err && (!z || (s->spillfd >= 0 && !mdata)))
		err = -ENOMEM;
	/* spilled: only counted; the rest too (written from mdata) */
	for (i = 0; i < nseg && !err && mdata; i++) {
		if (s->res[i]->written)
			continue;
		mdata[i] = s->res[i]->data;
		s->res[i]->data = NULL;
		s->res[i]->written = true;
	}
	for (i = 0; i < nseg && !err; i++)
		err = ezi_bld_zfile_append(z, s->res[i], (uint64_t)i * s->seg);
	if (!err) {
		z->compact = !(b->p.flags & EZFS_BUILD_LEGACY_COMPRESS);
		z->idx_size = ezi_bld_zindex_size(b, in, z->compact);
		/* keep it only if it saves space (9.14 step 7) */
		if (z->datalen + z->idx_size + z->idata_len >= len) {
			ezi_bld_zfile_free(z);
			z = NULL;
		}
		if (z && mdata)
			err = zsegs_write(b, s, nseg, mdata, z);
		if (!err) {
			*out = z;
			z = NULL;
		}
	}
	for (i = 0; mdata && i < nseg; i++)
		free(mdata[i]);
	free(mdata);
	ezi_bld_zfile_free(z);
	ezi_bld_zsegs_free(b);
	return err;
}
