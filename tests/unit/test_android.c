/* SPDX-License-Identifier: MIT */
/* test_android.c - lib/io's Android containers: SHA-256 against known
 * digests; sparse images (every chunk type, a split set, overlaps) read
 * back byte for byte at every offset and length; every single-byte
 * corruption of a small sparse image opens or fails cleanly. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/android.h"
#include "io/io.h"
#include "util/sha256.h"

#include "check.h"

static void hex(const uint8_t *d, char out[65])
{
	int i;

	for (i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void sha_one(const void *p, size_t n, const char *want)
{
	uint8_t d[32];
	char got[65];

	ezi_sha256(p, n, d);
	hex(d, got);
	CHECK(!strcmp(got, want), "sha256 of %zu bytes: %s, want %s", n, got,
	      want);
}

static void test_sha256(void)
{
	static uint8_t buf[1000];
	size_t i;

	sha_one("", 0,
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b8"
		"55");
	sha_one("abc", 3,
		"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015"
		"ad");
	sha_one("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
		"248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06"
		"c1");
	memset(buf, 'x', 64);
	sha_one(buf, 55,
		"d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e40"
		"72");
	sha_one(buf, 56,
		"04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c1688"
		"8e");
	sha_one(buf, 64,
		"7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b539"
		"3c");
	memset(buf, 'a', sizeof(buf));
	sha_one(buf, 1000,
		"41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737e"
		"a3");
	for (i = 0; i < 768; i++)
		buf[i] = (uint8_t)i;
	sha_one(buf, 768,
		"f3a25aa93aa2fbba28d79260535bbd6a5eb0fc1c24a8b0f04e12b484c1dfe3"
		"63");
}

/* ---- a sparse image writer, for the tests ---- */

#define BLK 8

struct sp {
	uint8_t buf[4096];
	size_t len;
	uint32_t nchunks, blocks;
};

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static void sp_begin(struct sp *s)
{
	memset(s, 0, sizeof(*s));
	s->len = 28;
}

static void sp_chunk(struct sp *s, uint16_t type, uint32_t nblk,
		     const void *data, uint32_t dlen)
{
	uint8_t *h = s->buf + s->len;

	put16(h, type);
	put16(h + 2, 0);
	put32(h + 4, nblk);
	put32(h + 8, 12 + dlen);
	if (dlen)
		memcpy(h + 12, data, dlen);
	s->len += 12 + dlen;
	s->nchunks++;
	if (type != 0xcac4)
		s->blocks += nblk;
}

static void sp_end(struct sp *s, uint32_t total_blks)
{
	put32(s->buf, 0xed26ff3au);
	put16(s->buf + 4, 1);
	put16(s->buf + 6, 0);
	put16(s->buf + 8, 28);
	put16(s->buf + 10, 12);
	put32(s->buf + 12, BLK);
	put32(s->buf + 16, total_blks);
	put32(s->buf + 20, s->nchunks);
	put32(s->buf + 24, 0);
}

static int open_set(struct sp *const *sets, unsigned n, struct ezfs_io *io)
{
	struct ezfs_io pieces[4];
	unsigned i;

	for (i = 0; i < n; i++)
		if (ezi_io_open_mem(sets[i]->buf, sets[i]->len, &pieces[i]))
			return -ENOMEM;
	return ezi_sparse_open(pieces, n, NULL, NULL, io);
}

/* Every (offset, length) within the image reads as want. */
static void read_all(const struct ezfs_io *io, const uint8_t *want, size_t size,
		     const char *what)
{
	uint8_t got[256];
	size_t off, len;

	CHECK(io->size == size, "%s: size %llu, want %zu", what,
	      (unsigned long long)io->size, size);
	for (off = 0; off <= size; off++)
		for (len = 0; off + len <= size; len++) {
			int err = ezi_io_read(io, got, len, off);

			CHECK(!err, "%s: read %zu at %zu: %d", what, len, off,
			      err);
			if (!err && memcmp(got, want + off, len)) {
				CHECK(0, "%s: bytes differ at %zu+%zu", what,
				      off, len);
				return;
			}
		}
	CHECK(ezi_io_read(io, got, 1, size) == -EUCLEAN,
	      "%s: a read past the end is -EUCLEAN", what);
}

static void test_sparse(void)
{
	static const uint8_t fill[4] = { 0x11, 0x22, 0x33, 0x44 };
	uint8_t raw[3 * BLK], want[12 * BLK], crc[4] = { 0 };
	struct sp a, p0, p1, *set[2];
	struct ezfs_io io;
	unsigned i;
	int err;

	for (i = 0; i < sizeof(raw); i++)
		raw[i] = (uint8_t)(i * 7 + 1);
	/* RAW 2, FILL 3, DONT_CARE 2, CRC32, RAW 1, 0-block FILL; 12 in all:
	 * the last 4 blocks are in no chunk */
	memset(want, 0, sizeof(want));
	memcpy(want, raw, 2 * BLK);
	for (i = 0; i < 3 * BLK; i++)
		want[2 * BLK + i] = fill[i % 4];
	memcpy(want + 7 * BLK, raw + 2 * BLK, BLK);
	sp_begin(&a);
	sp_chunk(&a, 0xcac1, 2, raw, 2 * BLK);
	sp_chunk(&a, 0xcac2, 3, fill, 4);
	sp_chunk(&a, 0xcac3, 2, NULL, 0);
	sp_chunk(&a, 0xcac4, 0, crc, 4);
	sp_chunk(&a, 0xcac1, 1, raw + 2 * BLK, BLK);
	sp_chunk(&a, 0xcac2, 0, fill, 4);
	sp_end(&a, 12);
	set[0] = &a;
	err = open_set(set, 1, &io);
	CHECK(!err, "open: %d", err);
	if (!err) {
		CHECK(ezi_sparse_pieces(&io) == 1, "one piece");
		read_all(&io, want, sizeof(want), "one file");
		ezi_io_close(&io);
	}

	/* the same as a split set: the FILL and the last RAW in file 1 */
	sp_begin(&p0);
	sp_chunk(&p0, 0xcac1, 2, raw, 2 * BLK);
	sp_chunk(&p0, 0xcac3, 10, NULL, 0);
	sp_end(&p0, 12);
	sp_begin(&p1);
	sp_chunk(&p1, 0xcac3, 2, NULL, 0);
	sp_chunk(&p1, 0xcac2, 3, fill, 4);
	sp_chunk(&p1, 0xcac3, 2, NULL, 0);
	sp_chunk(&p1, 0xcac1, 1, raw + 2 * BLK, BLK);
	sp_end(&p1, 12);
	set[0] = &p1; /* the order of the files does not matter */
	set[1] = &p0;
	err = open_set(set, 2, &io);
	CHECK(!err, "open split set: %d", err);
	if (!err) {
		CHECK(ezi_sparse_pieces(&io) == 2, "two pieces");
		read_all(&io, want, sizeof(want), "split set");
		ezi_io_close(&io);
	}
	/* two files holding block 1 */
	sp_begin(&p1);
	sp_chunk(&p1, 0xcac3, 1, NULL, 0);
	sp_chunk(&p1, 0xcac2, 1, fill, 4);
	sp_end(&p1, 12);
	set[0] = &p0;
	set[1] = &p1;
	CHECK(open_set(set, 2, &io) == -EUCLEAN, "overlapping files");
	/* chunks past total_blks */
	sp_end(&a, 7);
	set[0] = &a;
	CHECK(open_set(set, 1, &io) == -EUCLEAN, "chunks past total_blks");
	sp_end(&a, 12);

	/* every byte of the image changed: opens or fails cleanly, and
	 * what opens reads within its size */
	for (i = 0; i < a.len; i++) {
		static const uint8_t vals[] = { 0x00, 0xff, 0x01, 0x80 };
		uint8_t keep = a.buf[i], got[64];
		unsigned v;

		for (v = 0; v < sizeof(vals); v++) {
			a.buf[i] = vals[v];
			err = open_set(set, 1, &io);
			CHECK(!err || err == -EUCLEAN || err == -EOPNOTSUPP,
			      "byte %u = 0x%02x: open %d", i, vals[v], err);
			if (!err) {
				if (io.size)
					CHECK(!ezi_io_read(&io, got,
							   io.size < 64
								   ? io.size
								   : 64,
							   0),
					      "byte %u: read", i);
				ezi_io_close(&io);
			}
		}
		a.buf[i] = keep;
	}
	/* every truncation */
	for (i = 0; i < a.len; i++) {
		struct ezfs_io m;

		if (ezi_io_open_mem(a.buf, i, &m))
			continue;
		err = ezi_sparse_open(&m, 1, NULL, NULL, &io);
		CHECK(err == -EUCLEAN, "cut at %u: %d", i, err);
		if (!err)
			ezi_io_close(&io);
	}
}

int main(void)
{
	test_sha256();
	test_sparse();
	if (failures)
		fprintf(stderr, "%d checks failed\n", failures);
	else
		printf("android: all checks passed\n");
	return failures ? 1 : 0;
}
