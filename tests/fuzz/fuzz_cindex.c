/* SPDX-License-Identifier: MIT */
/*
 * fuzz_cindex.c - fuzz target: the EROFS image spec's chunk index
 * (lib/remote/cindex.c, ezi_cindex_parse), over the size its own header
 * names (so that inputs get past that check) and over other sizes.
 */
#include "fuzz_common.h"

#include "remote/internal.h"

static uint64_t le64_at(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void parse_one(const uint8_t *data, size_t size, uint64_t img)
{
	struct ezi_cindex ci;
	char why[300];
	uint64_t k, c;
	int err;

	memset(why, 'x', sizeof(why));
	err = ezi_cindex_parse(data, size, img, &ci, why, sizeof(why));
	if (err) {
		if (err != -EBADMSG || !memchr(why, '\0', sizeof(why)) ||
		    strchr(why, '\n') || ci.nchunks || ci.hash) {
			fprintf(stderr, "fuzz: cindex failure %d: %.200s\n",
				err, why);
			abort();
		}
		return;
	}
	/* what a reader relies on: chunks of one power-of-two size that
	 * cover the image exactly, the last one not empty, each entry's
	 * hash copied */
	c = 1ull << ci.bits;
	if (!ci.nchunks || ci.bits < 12 || ci.bits > 20 ||
	    (ci.nchunks - 1) * c >= img || ci.nchunks * c < img ||
	    size != 32 + ci.nchunks * 48 || !ci.hash) {
		fprintf(stderr,
			"fuzz: cindex accepted %llu chunks of 2^%u "
			"over %llu bytes from %zu bytes\n",
			(unsigned long long)ci.nchunks, ci.bits,
			(unsigned long long)img, size);
		abort();
	}
	for (k = 0; k < ci.nchunks; k++)
		if (memcmp(ci.hash + k * 32, data + 32 + k * 48 + 16, 32) ||
		    le64_at(data + 32 + k * 48) != k * c)
			abort();
	free(ci.hash);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size >= 16) {
		uint64_t img = le64_at(data + 8);

		parse_one(data, size, img);
		parse_one(data, size, img + 1);
		if (img)
			parse_one(data, size, img - 1);
	}
	parse_one(data, size, 0);
	parse_one(data, size, 4096);
	return 0;
}
