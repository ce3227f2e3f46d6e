/* SPDX-License-Identifier: MIT */
/*
 * tar_zinfo.c - a gzip archive read with checkpoints for random access
 * (mkfs.erofs --gzinfo): the SOCI zinfo file (AWS SOCI snapshotter, zinfo
 * version 2) that lets a reader start inflating at a checkpoint instead
 * of at the start of the archive.
 *
 * The file, little-endian: a 12-byte header (u32 the checkpoint count,
 * u64 the span), then per checkpoint u64 its compressed byte offset (of
 * the first whole byte), u64 its uncompressed offset, u8 the bits of the
 * byte before that belong to it (0..7), and the 32 KiB of output before
 * it (the inflate window; zeros where the output is shorter).
 *
 * A checkpoint is taken where a deflate block ends (not the last block of
 * a member) at the start of each gzip member and wherever more than the
 * span (4 MiB) was inflated since the last checkpoint. The output is made
 * in rounds of 32 KiB, as mkfs.erofs 1.9.3 makes it (a round ends early
 * at the end of a member): the window is the round's buffer turned at the
 * checkpoint, so that the file is byte for byte 1.9.3's, which reads as
 * far into the archive as its end-of-archive blocks, as this reader's
 * caller does (tar.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "write/tar/tar.h"
#include "format/erofs_fs.h"

#define ZI_WIN	(32u << 10)
#define ZI_SPAN (4u << 20)

struct zipoint {
	uint64_t in, out;
	uint8_t bits;
	uint8_t win[ZI_WIN];
};

struct tzinfo {
	uint8_t win[ZI_WIN]; /* the round's output */
	size_t wlen, woff;   /* bytes made in it, handed out */
	uint64_t totin, totout;
	bool initial; /* a member starts: checkpoint at its first block */
	bool inmember;
	struct zipoint **pt;
	size_t npt, cappt;
};

int ezi_tzinfo_start(struct tstream *s)
{
	if (s->kind != TAR_GZIP)
		return -EINVAL;
	s->zi = calloc(1, sizeof(*s->zi));
	if (!s->zi)
		return -ENOMEM;
	s->zi->initial = true;
	return 0;
}

static int add_point(struct tzinfo *zi, const z_stream *z)
{
	size_t made = ZI_WIN - z->avail_out;
	struct zipoint *p;

	if (zi->npt == zi->cappt) {
		size_t cap = zi->cappt ? zi->cappt * 2 : 16;
		struct zipoint **n = realloc(zi->pt, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		zi->pt = n;
		zi->cappt = cap;
	}
	p = malloc(sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->in = zi->totin;
	p->out = zi->totout;
	p->bits = (uint8_t)(z->data_type & 7);
	/* the round's buffer turned: its older part first */
	memcpy(p->win, zi->win + made, ZI_WIN - made);
	memcpy(p->win + ZI_WIN - made, zi->win, made);
	zi->pt[zi->npt++] = p;
	zi->initial = false;
	return 0;
}

/* One round: up to 32 KiB of output into zi->win (less at the end of a
 * member or of the input), checkpoints taken on the way. */
static int round_fill(struct tstream *s)
{
	struct tzinfo *zi = s->zi;
	z_stream *z = s->z;

	z->next_out = zi->win;
	z->avail_out = ZI_WIN;
	do {
		uInt ain, aout;
		int r;

		if (!z->avail_in) {
			int err = ezi_tstream_fill(s);

			if (err)
				return err;
			z->next_in = s->ibuf;
			z->avail_in = (uInt)s->ilen;
			if (!z->avail_in) {
				if (zi->inmember) {
					s->err = "truncated gzip data";
					return -EUCLEAN;
				}
				s->zend = true;
				break;
			}
		}
		ain = z->avail_in;
		aout = z->avail_out;
		r = inflate(z, Z_BLOCK);
		zi->totin += ain - z->avail_in;
		zi->totout += aout - z->avail_out;
		zi->inmember = true;
		if (r == Z_STREAM_END) {
			/* another member may follow (concatenated gzip) */
			if (inflateReset(z) != Z_OK)
				return -ENOMEM;
			zi->initial = true;
			zi->inmember = false;
			if (z->avail_out < ZI_WIN)
				break;
			continue;
		}
		if (r != Z_OK && r != Z_BUF_ERROR) {
			s->err = r == Z_MEM_ERROR ? "out of memory"
						  : "corrupt gzip data";
			return r == Z_MEM_ERROR ? -ENOMEM : -EUCLEAN;
		}
		/* at the end of a block that is not a member's last */
		if ((z->data_type & 128) && !(z->data_type & 64) &&
		    (zi->initial ||
		     zi->totout - (zi->npt ? zi->pt[zi->npt - 1]->out : 0) >
			     ZI_SPAN)) {
			int err = add_point(zi, z);

			if (err)
				return err;
		}
	} while (z->avail_out);
	zi->wlen = ZI_WIN - z->avail_out;
	zi->woff = 0;
	return 0;
}

ssize_t ezi_tzinfo_read(struct tstream *s, uint8_t *buf, size_t len)
{
	struct tzinfo *zi = s->zi;
	size_t got = 0;

	while (got < len) {
		size_t n = zi->wlen - zi->woff;
		int err;

		if (n) {
			if (n > len - got)
				n = len - got;
			memcpy(buf + got, zi->win + zi->woff, n);
			zi->woff += n;
			got += n;
			continue;
		}
		if (s->zend)
			break;
		err = round_fill(s);
		if (err)
			return err;
	}
	return (ssize_t)got;
}

static int write_all(int fd, const void *p, size_t len)
{
	const uint8_t *c = p;

	while (len) {
		ssize_t n = write(fd, c, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		c += n;
		len -= (size_t)n;
	}
	return 0;
}

int ezi_tzinfo_write(const struct tzinfo *zi, int fd)
{
	uint8_t h[17];
	size_t i;
	int err;

	put_le32(h, (uint32_t)zi->npt);
	put_le64(h + 4, ZI_SPAN);
	err = write_all(fd, h, 12);
	for (i = 0; !err && i < zi->npt; i++) {
		const struct zipoint *p = zi->pt[i];

		put_le64(h, p->in);
		put_le64(h + 8, p->out);
		h[16] = p->bits;
		err = write_all(fd, h, sizeof(h));
		if (!err)
			err = write_all(fd, p->win, ZI_WIN);
	}
	return err;
}

void ezi_tzinfo_free(struct tzinfo *zi)
{
	size_t i;

	if (!zi)
		return;
	for (i = 0; i < zi->npt; i++)
		free(zi->pt[i]);
	free(zi->pt);
	free(zi);
}
