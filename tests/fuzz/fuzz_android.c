/* SPDX-License-Identifier: MIT */
/*
 * fuzz_android.c - fuzz target: Android containers in lib/io. The input is
 * a sparse image, or a super image (raw, or sparse when it starts with the
 * sparse magic); the LP checksums are fixed up first so that mutations
 * reach the tables. Every partition is opened and read whole.
 */
#include "fuzz_common.h"

#include "io/android.h"
#include "io/io.h"
#include "util/sha256.h"

#define MAX_READ (1u << 20)

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* Recompute the geometry's and slot 0's SHA-256 sums of a raw super
 * image in place, where the fields leave room for them. */
static void fix_lp_sums(uint8_t *d, size_t n)
{
	uint32_t ssize, max, hsize, tsize;
	uint8_t *h;

	if (n < 12288 + 128 || rd32(d + 4096) != 0x616c4467u)
		return;
	ssize = rd32(d + 4100);
	if (ssize >= 40 && ssize <= 4096) {
		memset(d + 4104, 0, 32);
		ezi_sha256(d + 4096, ssize, d + 4104);
	}
	max = rd32(d + 4136);
	if (max < 128 || max > n - 12288)
		return;
	h = d + 12288;
	hsize = rd32(h + 8);
	tsize = rd32(h + 44);
	if (hsize < 80 || hsize > max || tsize > max - hsize)
		return;
	ezi_sha256(h + hsize, tsize, h + 48);
	memset(h + 12, 0, 32);
	ezi_sha256(h, hsize, h + 12);
}

static void read_whole(const struct ezfs_io *io)
{
	uint8_t *buf;
	uint64_t off, n = io->size < MAX_READ ? io->size : MAX_READ;
	int err;

	buf = malloc(65536);
	if (!buf)
		return;
	for (off = 0; off < n; off += 65536) {
		size_t len = n - off < 65536 ? (size_t)(n - off) : 65536;

		err = ezi_io_read(io, buf, len, off);
		if (err && err != -EIO && err != -EUCLEAN) {
			fprintf(stderr, "fuzz: read: %d\n", err);
			abort();
		}
	}
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ezfs_logger lg = { fuzz_log, NULL, 3 };
	struct ezfs_io io, part;
	uint8_t *copy;
	ezfs_lp *lp;
	uint32_t i;
	int err;

	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	fix_lp_sums(copy, size);
	if (ezi_io_open_mem(copy, size, &io))
		goto out;
	err = ezi_sparse_probe(&io);
	if (err > 0) {
		err = ezi_sparse_open(&io, 1, NULL, &lg, &io);
		fuzz_check_err(err, "sparse_open");
		if (err)
			goto out;
		read_whole(&io);
	}
	if (ezi_lp_probe(&io) <= 0) {
		ezi_io_close(&io);
		goto out;
	}
	err = ezi_lp_load(&io, 0, &lg, &lp);
	fuzz_check_err(err, "lp_load");
	if (err) {
		ezi_io_close(&io);
		goto out;
	}
	/* the partitions' names, then each opened over its own io */
	{
		struct ezfs_lp_info info;
		char names[8][37];
		uint32_t n = 0;

		ezfs_lp_get_info(lp, &info);
		for (i = 0; i < info.partitions && n < 8; i++) {
			struct ezfs_lp_partition p;

			if (ezfs_lp_partition(lp, i, &p))
				abort();
			if (strlen(p.name) > 36 || strlen(p.group) > 36)
				abort();
			memcpy(names[n++], p.name, sizeof(p.name));
		}
		for (i = 0; i < info.extents; i++) {
			struct ezfs_lp_extent e;

			if (ezfs_lp_extent(lp, i, &e))
				abort();
		}
		ezfs_lp_close(lp);
		for (i = 0; i < n; i++) {
			struct ezfs_io sup;

			if (ezi_io_open_mem(copy, size, &sup))
				break;
			if (ezi_sparse_probe(&sup) > 0 &&
			    ezi_sparse_open(&sup, 1, NULL, NULL, &sup))
				continue;
			err = ezi_lp_open_partition(&sup, names[i], &lg, &part);
			fuzz_check_err(err, "lp_open_partition");
			if (err)
				continue;
			read_whole(&part);
			ezi_io_close(&part);
		}
	}
out:
	free(copy);
	return 0;
}
