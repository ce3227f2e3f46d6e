/* SPDX-License-Identifier: MIT */
/* fuzz_zmap.c - fuzz target: extent maps (ezfs_map) over files' ranges,
 * reads and extent references (ezfs_extent_ref) at their starts. */
#include "fuzz_common.h"

#define MAX_EXTENTS 512	 /* extents walked per file */
#define READ_LEN    4096 /* bytes read at a few extent starts */

/* The extent must contain la; -1 (walk stops) if not and that is ignored. */
static int check_extent(const struct ezfs_stat *st, uint64_t la,
			const struct ezfs_extent *e)
{
	(void)ezfs_alg_name(e->alg);
	if (e->la <= la && e->llen && la - e->la < e->llen)
		return 0;
	if (fuzz_ignored("mapcover"))
		return -1;
	fprintf(stderr, "fuzz: map(nid %llu, %llu) gave [%llu, +%llu)\n",
		(unsigned long long)st->nid, (unsigned long long)la,
		(unsigned long long)e->la, (unsigned long long)e->llen);
	abort();
}

static void read_at(ezfs_inode *ino, uint64_t off, size_t len)
{
	ssize_t n;
	char *buf;

	buf = malloc(len);
	if (!buf)
		return;
	n = ezfs_pread(ino, buf, len, off);
	fuzz_check_err(n, "pread");
	if (n > (ssize_t)len) {
		fprintf(stderr, "fuzz: pread returned %zd > %zu\n", n, len);
		abort();
	}
	free(buf);
}

/* A reference to the extent at la holds it, within the file, or fails
 * cleanly; its first and last bytes are readable. */
static void ref_at(ezfs_inode *ino, const struct ezfs_stat *st, uint64_t la)
{
	struct ezfs_ref ref;
	volatile uint8_t sink;
	int err;

	err = ezfs_extent_ref(ino, la, &ref);
	fuzz_check_err(err, "extent_ref");
	if (err) {
		if (ref.data || ref.priv) {
			fprintf(stderr, "fuzz: failed extent_ref left data\n");
			abort();
		}
		return;
	}
	if (ref.off > la || la - ref.off >= ref.len ||
	    ref.len > st->size - ref.off) {
		fprintf(stderr,
			"fuzz: extent_ref(%llu) gave [%llu, +%zu) of "
			"%llu\n",
			(unsigned long long)la, (unsigned long long)ref.off,
			ref.len, (unsigned long long)st->size);
		abort();
	}
	sink = ((const uint8_t *)ref.data)[0];
	sink = ((const uint8_t *)ref.data)[ref.len - 1];
	(void)sink;
	ezfs_ref_put(ino, &ref);
}

static void visit(ezfs_image *img, ezfs_inode *ino, const struct ezfs_stat *st,
		  void *arg)
{
	const uint64_t *salt = arg;
	struct ezfs_extent e;
	uint64_t la = 0, probe;
	unsigned i, reads = 0;
	int err;

	if ((st->mode & 0170000) != 0100000 &&
	    (st->mode & 0170000) != 0040000 && (st->mode & 0170000) != 0120000)
		return;
	/* 1. walk the file extent by extent from 0 */
	for (i = 0; i < MAX_EXTENTS && la < st->size; i++) {
		err = ezfs_map(ino, la, &e);
		fuzz_check_err(err, "map");
		if (err)
			break;
		if (check_extent(st, la, &e))
			break;
		if (reads < 4) {
			read_at(ino, la, READ_LEN);
			ref_at(ino, st, la);
			reads++;
		}
		la = e.la + e.llen;
	}
	if (!st->size)
		goto past_end;
	/* 2. the last byte and a few offsets derived from the input */
	err = ezfs_map(ino, st->size - 1, &e);
	fuzz_check_err(err, "map(last)");
	if (!err)
		(void)check_extent(st, st->size - 1, &e);
	read_at(ino, st->size - 1, 2);
	probe = *salt;
	for (i = 0; i < 4; i++) {
		probe = probe * 6364136223846793005ULL + 1442695040888963407ULL;
		la = (probe >> 11) % st->size;
		err = ezfs_map(ino, la, &e);
		fuzz_check_err(err, "map(random)");
		if (!err)
			(void)check_extent(st, la, &e);
		read_at(ino, la, 1 + (size_t)(probe & 8191));
	}
past_end:
	/* 3. at and past EOF: an error, never an extent */
	err = ezfs_map(ino, st->size, &e);
	fuzz_check_err(err, "map(eof)");
	err = ezfs_map(ino, UINT64_MAX, &e);
	fuzz_check_err(err, "map(max)");
	read_at(ino, UINT64_MAX - 1, 16);
	read_at(ino, st->size, 16);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t salt = 0x9e3779b97f4a7c15ULL;
	size_t i;

	for (i = 0; i < size && i < 4096; i += 61)
		salt = (salt ^ data[i]) * 0x100000001b3ULL;
	return fuzz_open_and_walk(data, size, visit, &salt);
}
