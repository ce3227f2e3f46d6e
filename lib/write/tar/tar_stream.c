/* SPDX-License-Identifier: MIT */
/*
 * tar_stream.c - the bytes of a tar archive from a file or standard input,
 * plain or decompressed (gzip through zlib, xz and lzma through liblzma,
 * zstd through libzstd), told apart by their first bytes: every
 * compression ezfs export writes, and the ones mkfs.erofs --ungzip and
 * --unxz users pipe in. A plain regular file is "seekable": data is skipped
 * with lseek and later read in place.
 */
#include <errno.h>
#include <fcntl.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#ifdef EZFS_HAVE_ZSTD
#include <zstd.h>
#include <zstd_errors.h>
#endif

#include "write/tar/tar.h"

#define IBUF	      (128u << 10)
#define LZMA_MEMLIMIT (512ull << 20) /* xz -9 needs 65 MiB */

int ezi_tstream_fill(struct tstream *s)
{
	ssize_t n;

	s->ioff = s->ilen = 0;
	if (s->ieof)
		return 0;
	do
		n = read(s->fd, s->ibuf, IBUF);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (!n)
		s->ieof = true;
	s->ilen = (size_t)n;
	return 0;
}

const char *ezi_tstream_kind(const struct tstream *s)
{
	static const char *const names[] = { "plain", "gzip", "xz", "lzma",
					     "zstd" };

	return names[s->kind];
}

/*
 * The header of a legacy .lzma file (LZMA_Alone): a properties byte
 * (lc, lp, pb: under 225), a dictionary size of 2^n or 2^n + 2^(n-1)
 * bytes, and the uncompressed size, unknown (all ones) or under
 * 2^48; it has no magic, and a tar header (a name first) does not look so.
 */
static bool is_lzma(const uint8_t *p, size_t n)
{
	uint32_t d;
	uint64_t u = 0;
	int i;

	if (n < 13 || p[0] >= 225)
		return false;
	d = (uint32_t)p[1] | (uint32_t)p[2] << 8 | (uint32_t)p[3] << 16 |
	    (uint32_t)p[4] << 24;
	for (i = 0; i < 8; i++)
		u |= (uint64_t)p[5 + i] << (8 * i);
	if (u != UINT64_MAX && u >> 48)
		return false;
	for (i = 12; i < 32; i++)
		if (d == 1u << i || d == (1u << i) + (1u << (i - 1)))
			return true;
	return false;
}

/* A decoder for the input's kind (s->kind set), its first bytes given. */
static int decoder_init(struct tstream *s)
{
	if (s->kind == TAR_GZIP) {
		z_stream *z = calloc(1, sizeof(*z));

		if (!z)
			return -ENOMEM;
		if (inflateInit2(z, 16 + MAX_WBITS) != Z_OK) {
			free(z);
			return -ENOMEM;
		}
		z->next_in = s->ibuf;
		z->avail_in = (uInt)s->ilen;
		s->z = z;
	} else if (s->kind == TAR_XZ || s->kind == TAR_LZMA) {
		lzma_stream *x = calloc(1, sizeof(*x));
		lzma_ret r;

		if (!x)
			return -ENOMEM;
		*x = (lzma_stream)LZMA_STREAM_INIT;
		/* a dictionary from the input is memory: bounded */
		r = s->kind == TAR_XZ ? lzma_stream_decoder(x, LZMA_MEMLIMIT,
							    LZMA_CONCATENATED)
				      : lzma_alone_decoder(x, LZMA_MEMLIMIT);
		if (r != LZMA_OK) {
			free(x);
			return -ENOMEM;
		}
		x->next_in = s->ibuf;
		x->avail_in = s->ilen;
		s->z = x;
	} else if (s->kind == TAR_ZSTD) {
#ifdef EZFS_HAVE_ZSTD
		ZSTD_DStream *d = ZSTD_createDStream();

		if (!d)
			return -ENOMEM;
		s->z = d;
		s->zin_len = s->ilen;
		s->zin_pos = 0;
#else
		s->err = "a zstd-compressed archive, but this ezfs was built "
			 "without zstd";
		return -EOPNOTSUPP;
#endif
	}
	return 0;
}

int ezi_tstream_open(struct tstream *s, const char *path)
{
	static const uint8_t gz[2] = { 0x1f, 0x8b };
	static const uint8_t xz[6] = { 0xfd, '7', 'z', 'X', 'Z', 0 };
	static const uint8_t zst[4] = { 0x28, 0xb5, 0x2f, 0xfd };
	struct stat st;

	memset(s, 0, sizeof(*s));
	s->name = path && strcmp(path, "-") ? path : "stdin";
	if (path && strcmp(path, "-")) {
		s->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (s->fd < 0)
			return -errno;
		s->own_fd = true;
	}
	if (fstat(s->fd, &st))
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	s->ibuf = malloc(IBUF);
	if (!s->ibuf)
		return -ENOMEM;
	/* the first bytes, enough for every magic and an lzma header */
	while (s->ilen < 13 && !s->ieof) {
		ssize_t n = read(s->fd, s->ibuf + s->ilen, IBUF - s->ilen);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			s->ieof = true;
		s->ilen += (size_t)n;
	}
	if (s->ilen >= sizeof(gz) && !memcmp(s->ibuf, gz, sizeof(gz)))
		s->kind = TAR_GZIP;
	else if (s->ilen >= sizeof(xz) && !memcmp(s->ibuf, xz, sizeof(xz)))
		s->kind = TAR_XZ;
	else if (s->ilen >= sizeof(zst) &&
		 (!memcmp(s->ibuf, zst, sizeof(zst)) ||
		  /* a skippable frame first */
		  ((s->ibuf[0] & 0xf0) == 0x50 &&
		   !memcmp(s->ibuf + 1, "\x2a\x4d\x18", 3))))
		s->kind = TAR_ZSTD;
	else if (is_lzma(s->ibuf, s->ilen))
		s->kind = TAR_LZMA;
	if (s->kind != TAR_PLAIN)
		return decoder_init(s);
	if (S_ISREG(st.st_mode)) {
		off_t here = lseek(s->fd, 0, SEEK_CUR);

		if (here < 0)
			return -errno;
		/* offsets in the archive are file offsets minus the start */
		s->seekable = true;
		s->fsize = (uint64_t)st.st_size;
		s->base = (uint64_t)here - s->ilen;
	}
	return 0;
}

static ssize_t read_plain(struct tstream *s, uint8_t *buf, size_t len)
{
	size_t got = 0;
	int err;

	while (got < len) {
		if (s->ioff < s->ilen) {
			size_t n = s->ilen - s->ioff;

			if (n > len - got)
				n = len - got;
			memcpy(buf + got, s->ibuf + s->ioff, n);
			s->ioff += n;
			got += n;
			continue;
		}
		err = ezi_tstream_fill(s);
		if (err)
			return err;
		if (!s->ilen)
			break;
	}
	return (ssize_t)got;
}

/* Next input chunk into z (avail_in 0 at the end of the input). */
static int gz_refill(struct tstream *s, z_stream *z)
{
	int err = ezi_tstream_fill(s);

	if (err)
		return err;
	z->next_in = s->ibuf;
	z->avail_in = (uInt)s->ilen;
	return 0;
}

static ssize_t read_gzip(struct tstream *s, uint8_t *buf, size_t len)
{
	z_stream *z = s->z;

	z->next_out = buf;
	z->avail_out = (uInt)len;
	while (z->avail_out && !s->zend) {
		int r;

		if (!z->avail_in) {
			int err = gz_refill(s, z);

			if (err)
				return err;
			if (!z->avail_in) {
				s->err = "truncated gzip data";
				return -EUCLEAN;
			}
		}
		r = inflate(z, Z_NO_FLUSH);
		if (r == Z_STREAM_END) {
			/* another member may follow (concatenated gzip) */
			if (!z->avail_in) {
				int err = gz_refill(s, z);

				if (err)
					return err;
			}
			if (!z->avail_in)
				s->zend = true;
			else if (inflateReset(z) != Z_OK)
				return -ENOMEM;
		} else if (r != Z_OK && r != Z_BUF_ERROR) {
			s->err = r == Z_MEM_ERROR ? "out of memory"
						  : "corrupt gzip data";
			return r == Z_MEM_ERROR ? -ENOMEM : -EUCLEAN;
		}
	}
	return (ssize_t)(len - z->avail_out);
}

static ssize_t read_xz(struct tstream *s, uint8_t *buf, size_t len)
{
	lzma_stream *x = s->z;

	x->next_out = buf;
	x->avail_out = len;
	while (x->avail_out && !s->zend) {
		lzma_ret r;

		if (!x->avail_in && !s->ieof) {
			int err = ezi_tstream_fill(s);

			if (err)
				return err;
			x->next_in = s->ibuf;
			x->avail_in = s->ilen;
		}
		r = lzma_code(x,
			      s->ieof && !x->avail_in ? LZMA_FINISH : LZMA_RUN);
		if (r == LZMA_STREAM_END) {
			s->zend = true;
		} else if (r == LZMA_BUF_ERROR) {
			s->err = s->kind == TAR_LZMA ? "truncated lzma data"
						     : "truncated xz data";
			return -EUCLEAN;
		} else if (r == LZMA_MEMLIMIT_ERROR) {
			s->err = "its dictionary needs more than 512 MiB";
			return -EFBIG;
		} else if (r != LZMA_OK) {
			s->err = r == LZMA_MEM_ERROR   ? "out of memory"
				 : s->kind == TAR_LZMA ? "corrupt lzma data"
						       : "corrupt xz data";
			return r == LZMA_MEM_ERROR ? -ENOMEM : -EUCLEAN;
		}
	}
	return (ssize_t)(len - x->avail_out);
}

#ifdef EZFS_HAVE_ZSTD
static ssize_t read_zstd(struct tstream *s, uint8_t *buf, size_t len)
{
	ZSTD_outBuffer out = { buf, len, 0 };

	while (out.pos < len && !s->zend) {
		ZSTD_inBuffer in = { s->ibuf, s->zin_len, s->zin_pos };
		size_t r;

		if (in.pos == in.size) {
			int err = ezi_tstream_fill(s);

			if (err)
				return err;
			s->zin_len = s->ilen;
			s->zin_pos = 0;
			if (!s->ilen) {
				/* the end of the input: between frames, the
				 * end of the archive; else cut short */
				if (s->zmid) {
					s->err = "truncated zstd data";
					return -EUCLEAN;
				}
				s->zend = true;
				break;
			}
			continue;
		}
		r = ZSTD_decompressStream(s->z, &out, &in);
		s->zin_pos = in.pos;
		if (ZSTD_isError(r)) {
			s->err = ZSTD_getErrorCode(r) ==
						 ZSTD_error_memory_allocation
					 ? "out of memory"
					 : "corrupt zstd data";
			return ZSTD_getErrorCode(r) ==
					       ZSTD_error_memory_allocation
				       ? -ENOMEM
				       : -EUCLEAN;
		}
		/* 0: a frame ended (another may follow) */
		s->zmid = r != 0;
	}
	return (ssize_t)out.pos;
}
#endif

ssize_t ezi_tstream_read(struct tstream *s, void *buf, size_t len)
{
	ssize_t n;

	if (s->zi)
		n = ezi_tzinfo_read(s, buf, len);
	else if (s->kind == TAR_GZIP)
		n = read_gzip(s, buf, len);
	else if (s->kind == TAR_XZ || s->kind == TAR_LZMA)
		n = read_xz(s, buf, len);
#ifdef EZFS_HAVE_ZSTD
	else if (s->kind == TAR_ZSTD)
		n = read_zstd(s, buf, len);
#endif
	else
		n = read_plain(s, buf, len);
	if (n > 0)
		s->pos += (uint64_t)n;
	return n;
}

int ezi_tstream_skip(struct tstream *s, uint64_t len)
{
	uint8_t tmp[8192];

	if (s->seekable) {
		uint64_t inbuf = s->ilen - s->ioff;

		if (s->pos + len > s->fsize - s->base)
			return -EPIPE;
		if (len <= inbuf) {
			s->ioff += (size_t)len;
		} else {
			if (lseek(s->fd, (off_t)(s->base + s->pos + len),
				  SEEK_SET) < 0)
				return -errno;
			s->ioff = s->ilen = 0;
		}
		s->pos += len;
		return 0;
	}
	while (len) {
		size_t want = len < sizeof(tmp) ? (size_t)len : sizeof(tmp);
		ssize_t n = ezi_tstream_read(s, tmp, want);

		if (n < 0)
			return (int)n;
		if ((size_t)n < want)
			return -EPIPE;
		len -= want;
	}
	return 0;
}

void ezi_tstream_close(struct tstream *s)
{
	if (s->kind == TAR_GZIP && s->z)
		inflateEnd(s->z);
	else if ((s->kind == TAR_XZ || s->kind == TAR_LZMA) && s->z)
		lzma_end(s->z);
#ifdef EZFS_HAVE_ZSTD
	if (s->kind == TAR_ZSTD && s->z)
		ZSTD_freeDStream(s->z);
	else
#endif
		free(s->z);
	free(s->ibuf);
	ezi_tzinfo_free(s->zi);
	if (s->own_fd && s->fd >= 0)
		close(s->fd);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}
