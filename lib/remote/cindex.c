/* SPDX-License-Identifier: MIT */
/*
 * cindex.c - the EROFS image spec's chunk index
 * (application/vnd.erofs.chunk-index.v1): a 32-byte little-endian header,
 * then per chunk its blob offset, its offset in the image and the SHA-256
 * of its bytes. Written by push.c, read by oci.c, its hashes checked by
 * verify.c. No dependency but libc: the fuzz target tests/fuzz/
 * fuzz_cindex.c builds it alone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote/internal.h"

#define CI_MAGIC   0x67ece4cdu /* CD E4 EC 67 */
#define CI_HDR	   32u
#define CI_ENTRY   48u
#define CI_MIN_BIT 12
#define CI_MAX_BIT 20

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

void ezi_cindex_header(uint8_t out[32], uint64_t size, uint64_t n)
{
	memset(out, 0, CI_HDR);
	put_le(out, CI_MAGIC, 4);
	out[4] = 1; /* version */
	out[5] = 0; /* raw chunks */
	put_le(out + 8, size, 8);
	put_le(out + 16, n, 4);
	out[20] = 1;  /* SHA-2 */
	out[21] = 32; /* SHA-256 */
}

void ezi_cindex_entry(uint8_t out[48], uint64_t off, const uint8_t sha[32])
{
	put_le(out, off, 8);	 /* on the blob */
	put_le(out + 8, off, 8); /* in the image: the same, raw */
	memcpy(out + 16, sha, 32);
}

int ezi_cindex_parse(const uint8_t *p, size_t n, uint64_t size,
		     struct ezi_cindex *ci, char *why, size_t whylen)
{
	uint64_t k, count, csize = 0;
	const char *bad = NULL;
	unsigned bits = 0;

	memset(ci, 0, sizeof(*ci));
	if (n < CI_HDR || (uint32_t)le64(p) != CI_MAGIC)
		bad = "no chunk index header (magic CD E4 EC 67)";
	else if (p[4] != 1 || p[5] != 0 || p[6] || p[7])
		bad = "not a version 1 index of raw chunks";
	else if (p[20] != 1 || p[21] != 32)
		bad = "its checksums are not SHA-256";
	else if (le64(p + 8) != size)
		bad = "it covers another size than the layer's";
	else if (le64(p + 22) || le64(p + 24))
		bad = "its reserved header bytes are not zero";
	if (bad)
		goto out;
	count = le64(p + 16) & 0xffffffffu;
	if (!count || (n - CI_HDR) / CI_ENTRY < count) {
		bad = "its entries are cut short";
		goto out;
	}
	if ((n - CI_HDR) / CI_ENTRY > count || (n - CI_HDR) % CI_ENTRY) {
		bad = "it has bytes after its entries";
		goto out;
	}
	if (count > 1)
		csize = le64(p + CI_HDR + CI_ENTRY + 8);
	else
		csize = 1ull << CI_MAX_BIT;
	while (bits <= CI_MAX_BIT && (1ull << bits) < csize)
		bits++;
	if (bits < CI_MIN_BIT || bits > CI_MAX_BIT || (1ull << bits) != csize ||
	    (count - 1) * csize >= size || count * csize < size) {
		bad = "its chunks are not of one power-of-two size from 4 KiB "
		      "to 1 MiB";
		goto out;
	}
	for (k = 0; k < count && !bad; k++) {
		const uint8_t *e = p + CI_HDR + k * CI_ENTRY;

		if (le64(e) != k * csize || le64(e + 8) != k * csize)
			bad = "its chunks are not the layer's bytes in order";
	}
	if (bad)
		goto out;
	ci->hash = malloc(count * 32);
	if (!ci->hash) {
		bad = "out of memory";
		goto out;
	}
	for (k = 0; k < count; k++)
		memcpy(ci->hash + k * 32, p + CI_HDR + k * CI_ENTRY + 16, 32);
	ci->nchunks = count;
	ci->bits = bits;
	ci->size = size;
	return 0;
out:
	snprintf(why, whylen, "the chunk index: %s", bad);
	return -EBADMSG;
}
