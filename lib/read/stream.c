/* SPDX-License-Identifier: MIT */
/*
 * stream.c - ezfs_stream: a range of a file read front to back in
 * windows, for callers that pass the bytes on (ezfs extract and
 * ezfs_fsck's data check).
 *
 * With the dispatcher's workers (queue, percpu) and a compressed range
 * over XS_MIN, two reader threads keep two windows in flight: each window
 * is whole extents (grown to the end of the extent it ends in), so one
 * ezfs_pread hands all of them to the dispatcher at once, and the decode
 * workers find the next window's extents queued while the last ones of
 * the other finish; the caller uses a third meanwhile. The readers only
 * wait: on the dispatcher's decodes and on free slots. Small windows (one
 * 256K deflate pcluster of text decodes to about 1 MiB) keep what was
 * decoded in the CPU caches until it is used (ezfs cat of a 64 MiB file
 * on 2 CPUs took 10-30 % longer with 4 to 16 MiB windows).
 *
 * Otherwise (inline dispatch, a small range, data not encoded, no
 * threads) each window, XS_PLAIN bytes at most, is read on the caller's
 * thread when it asks for it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "read/internal.h"
#include "ezfs/engine.h"

#define XS_WIN	 (1u << 20)  /* a window read ahead: at least this */
#define XS_GROW	 (16u << 20) /* grown to its extent's end up to this */
#define XS_MIN	 (4u << 20)  /* ranges up to this are read plainly */
#define XS_PLAIN (4u << 20)  /* a window read on the caller's thread */
/* the smallest window buffer: its pages are touched as they are used */
#define XS_SPARE_MIN XS_PLAIN
#define XS_SPARE_MAX (32u << 20) /* spare bytes an image keeps at most */
#define XS_READERS   2
#define XS_SLOTS     (XS_READERS + 1)

enum { XS_FREE, XS_READING, XS_READY };

struct xs_slot {
	char *buf;
	size_t cap;
	uint64_t off, len, seq;
	int state, err, hole;
};

struct ezfs_stream {
	ezfs_inode *ino;
	uint64_t next, end;	/* next window's start; end of the range */
	uint64_t issued, taken; /* windows handed out, consumed */
	int holes, stop;
	int ahead; /* windows for the readers (set before they start) */
	int held;  /* the caller's slot, -1: none */
	pthread_mutex_t lock;
	pthread_cond_t cv;
	struct xs_slot s[XS_SLOTS];
	pthread_t th[XS_READERS];
	unsigned nth; /* readers started */
};

/* The end of the window from off (s->lock held with readers); *hole: a
 * hole (EZFS_STREAM_HOLES). */
static uint64_t xs_window_end(struct ezfs_stream *s, uint64_t off, int *hole)
{
	uint64_t win = s->ahead ? XS_WIN : XS_PLAIN, h;
	uint64_t end = s->end - off > win ? off + win : s->end;
	struct ezfs_extent e;

	*hole = 0;
	if (s->holes) {
		h = ezfs_hole_end(s->ino, off, s->end);
		if (h > off) {
			*hole = 1;
			return h;
		}
	}
	if (s->ahead && end < s->end && !ezfs_map(s->ino, end - 1, &e) &&
	    (e.flags & EZFS_EXTENT_ENCODED) && e.la + e.llen > end &&
	    e.la + e.llen - off <= XS_GROW)
		end = e.la + e.llen < s->end ? e.la + e.llen : s->end;
	return end;
}

void ezi_stream_spares_init(ezfs_image *img)
{
	pthread_mutex_init(&img->spares.lock, NULL);
}

void ezi_stream_spares_fini(ezfs_image *img)
{
	unsigned i;

	for (i = 0; i < img->spares.n; i++)
		free(img->spares.b[i].buf);
	img->spares.n = 0;
	pthread_mutex_destroy(&img->spares.lock);
}

/*
 * Slot sl's buffer, at least len bytes: the smallest spare that holds len;
 * else the largest spare is replaced by a bigger one (a power of two from
 * XS_SPARE_MIN), so that a thread reuses one buffer instead of a new one,
 * and its page faults, per file.
 */
static void xs_buf_get(ezfs_image *img, struct xs_slot *sl, size_t len)
{
	struct stream_spares *sp = &img->spares;
	unsigned i, fit = EZI_STREAM_SPARES, big = EZI_STREAM_SPARES;
	size_t cap = XS_SPARE_MIN;

	pthread_mutex_lock(&sp->lock);
	for (i = 0; i < sp->n; i++) {
		if (sp->b[i].cap >= len &&
		    (fit == EZI_STREAM_SPARES || sp->b[i].cap < sp->b[fit].cap))
			fit = i;
		if (big == EZI_STREAM_SPARES || sp->b[i].cap > sp->b[big].cap)
			big = i;
	}
	i = fit < EZI_STREAM_SPARES ? fit : big;
	if (i < EZI_STREAM_SPARES) {
		sl->buf = sp->b[i].buf;
		sl->cap = sp->b[i].cap;
		sp->bytes -= sl->cap;
		sp->b[i] = sp->b[--sp->n];
	}
	pthread_mutex_unlock(&sp->lock);
	if (sl->buf && sl->cap >= len)
		return;
	free(sl->buf);
	while (cap < len)
		cap *= 2;
	sl->buf = malloc(cap);
	sl->cap = sl->buf ? cap : 0;
}

/* Give slot sl's buffer back: to the image's spares, room permitting. */
static void xs_buf_put(ezfs_image *img, struct xs_slot *sl)
{
	struct stream_spares *sp = &img->spares;
	char *buf = sl->buf;

	if (buf) {
		pthread_mutex_lock(&sp->lock);
		if (sp->n < EZI_STREAM_SPARES &&
		    sp->bytes + sl->cap <= XS_SPARE_MAX) {
			sp->b[sp->n].buf = buf;
			sp->b[sp->n++].cap = sl->cap;
			sp->bytes += sl->cap;
			buf = NULL;
		}
		pthread_mutex_unlock(&sp->lock);
	}
	free(buf);
	sl->buf = NULL;
	sl->cap = 0;
}

/* Read slot sl's window (off, len, hole set): its bytes, or an error,
 * or a short count (the data ended). Without s->lock. */
static ssize_t xs_fill(struct ezfs_stream *s, struct xs_slot *sl)
{
	if (sl->hole)
		return (ssize_t)sl->len;
	if (sl->cap < sl->len) {
		xs_buf_put(s->ino->img, sl);
		xs_buf_get(s->ino->img, sl, (size_t)sl->len);
	}
	if (!sl->buf)
		return -ENOMEM;
	return ezfs_pread(s->ino, sl->buf, (size_t)sl->len, sl->off);
}

/* The window was read (n: what the read gave); s->lock held. */
static void xs_done(struct ezfs_stream *s, struct xs_slot *sl, ssize_t n)
{
	if (n < 0 || (uint64_t)n < sl->len) {
		/* an error, or the data ended early (the caller sees the
		 * gap): no windows after this one */
		s->end = s->next;
		sl->err = n < 0 ? (int)n : 0;
		sl->len = n < 0 ? 0 : (uint64_t)n;
	}
	sl->state = XS_READY;
}

static struct xs_slot *xs_free_slot(struct ezfs_stream *s)
{
	unsigned i;

	for (i = 0; i < XS_SLOTS; i++)
		if (s->s[i].state == XS_FREE && (int)i != s->held)
			return &s->s[i];
	return NULL;
}

/* Claim the next window into a free slot (s->lock held). */
static void xs_claim(struct ezfs_stream *s, struct xs_slot *sl)
{
	sl->off = s->next;
	s->next = xs_window_end(s, sl->off, &sl->hole);
	sl->len = s->next - sl->off;
	sl->seq = s->issued++;
	sl->state = XS_READING;
	sl->err = 0;
}

static void *xs_reader(void *arg)
{
	struct ezfs_stream *s = arg;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct xs_slot *sl = NULL;
		ssize_t n;

		while (!s->stop && s->next < s->end && !(sl = xs_free_slot(s)))
			pthread_cond_wait(&s->cv, &s->lock);
		if (s->stop || s->next >= s->end)
			break;
		xs_claim(s, sl);
		pthread_mutex_unlock(&s->lock);
		n = xs_fill(s, sl);
		pthread_mutex_lock(&s->lock);
		xs_done(s, sl, n);
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* Is reading ahead on threads worth it for [off, end) of ino? */
static int xs_ahead(ezfs_inode *ino, uint64_t off, uint64_t end)
{
	struct ezfs_dispatch_info di;
	struct ezfs_extent e;

	return end - off > XS_MIN && !ezfs_image_dispatch_info(ino->img, &di) &&
	       di.mode != EZFS_DISPATCH_INLINE && di.workers >= 2 &&
	       !ezfs_map(ino, off, &e) && (e.flags & EZFS_EXTENT_ENCODED);
}

int ezfs_stream_open(ezfs_inode *ino, uint64_t off, uint64_t end,
		     unsigned flags, ezfs_stream **out)
{
	struct ezfs_stream *s;

	*out = NULL;
	if (flags & ~EZFS_STREAM_HOLES)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->ino = ino;
	s->next = off;
	s->end = end > off ? end : off;
	s->holes = !!(flags & EZFS_STREAM_HOLES);
	s->held = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->ahead = xs_ahead(ino, off, s->end);
	while (s->ahead && s->nth < XS_READERS &&
	       !pthread_create(&s->th[s->nth], NULL, xs_reader, s))
		s->nth++;
	if (!s->nth)
		s->ahead = 0; /* no reader: none reads s->ahead */
	*out = s;
	return 0;
}

/* Without readers: read the next window into slot 0 here. */
static int xs_next_plain(struct ezfs_stream *s, const void **data,
			 uint64_t *off, size_t *len)
{
	struct xs_slot *sl = &s->s[0];

	if (s->next >= s->end)
		return 0;
	xs_claim(s, sl);
	xs_done(s, sl, xs_fill(s, sl));
	s->taken++;
	*off = sl->off;
	*len = (size_t)sl->len;
	*data = sl->hole ? NULL : sl->buf;
	return sl->err ? sl->err : 1;
}

int ezfs_stream_next(ezfs_stream *s, const void **data, uint64_t *off,
		     size_t *len)
{
	struct xs_slot *sl = NULL;
	unsigned i;
	int ret;

	if (!s->ahead)
		return xs_next_plain(s, data, off, len);
	pthread_mutex_lock(&s->lock);
	if (s->held >= 0) {
		s->s[s->held].state = XS_FREE;
		s->held = -1;
		pthread_cond_broadcast(&s->cv);
	}
	for (;;) {
		for (i = 0; i < XS_SLOTS && !sl; i++)
			if (s->s[i].state == XS_READY &&
			    s->s[i].seq == s->taken)
				sl = &s->s[i];
		if (sl || (s->next >= s->end && s->issued == s->taken))
			break;
		pthread_cond_wait(&s->cv, &s->lock);
	}
	if (!sl) {
		pthread_mutex_unlock(&s->lock);
		return 0;
	}
	s->taken++;
	s->held = (int)(sl - s->s);
	*off = sl->off;
	*len = (size_t)sl->len;
	*data = sl->hole ? NULL : sl->buf;
	ret = sl->err ? sl->err : 1;
	pthread_mutex_unlock(&s->lock);
	return ret;
}

void ezfs_stream_close(ezfs_stream *s)
{
	unsigned i;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->lock);
	for (i = 0; i < s->nth; i++)
		pthread_join(s->th[i], NULL);
	for (i = 0; i < XS_SLOTS; i++)
		xs_buf_put(s->ino->img, &s->s[i]);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cv);
	free(s);
}
