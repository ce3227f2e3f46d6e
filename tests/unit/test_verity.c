/* SPDX-License-Identifier: MIT */
/*
 * test_verity.c - dm-verity trees and fs-verity digests (docs/verity.md):
 *  - the tree's shape as veritysetup 2.6 lays it out (levels, blocks per
 *    level), its superblock encoded and decoded, bad ones refused;
 *  - fs-verity digests of known contents (as fsverity 1.5 prints them),
 *    fed whole or a byte at a time;
 *  - an image built with verity (the builder API) opens with the tree
 *    found, the same root, trust as given; a wrong root, a flipped data
 *    byte and a flipped tree byte are each caught where they are and
 *    nowhere else; the same salt and UUID give the same bytes;
 *  - the tree on its own (ezfs_verity_load/check) from a reader's ops;
 *  - four threads reading every file of a verified image at once, and a
 *    6 MiB file read in order (checked ahead on the tree's thread), with
 *    and without a flipped byte.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ezfs/build.h>
#include <ezfs/ezfs.h>
#include <ezfs/verity.h>

#include "format/verity.h"

#include "check.h"

#define NFILES 24
#define BIG    (6u << 20) /* /big: read in order, checked ahead */

static char dir[256], src[300], img[300];

static void geometry(void)
{
	static const struct {
		uint64_t blocks;
		unsigned levels;
		uint64_t tree;
	} t[] = {
		{ 1, 0, 0 },	   { 2, 1, 1 },	  { 128, 1, 1 },
		{ 129, 2, 3 },	   { 256, 2, 3 }, { 16384, 2, 129 },
		{ 16385, 3, 132 },
	};
	struct ezi_verity_geo g;
	unsigned i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		CHECK(!ezi_verity_geo_init(&g, 4096, 4096, 32, t[i].blocks),
		      "geo %llu", (unsigned long long)t[i].blocks);
		CHECK(g.levels == t[i].levels && g.tree_blocks == t[i].tree,
		      "%llu data blocks: %u levels, %llu tree blocks "
		      "(want %u, %llu)",
		      (unsigned long long)t[i].blocks, g.levels,
		      (unsigned long long)g.tree_blocks, t[i].levels,
		      (unsigned long long)t[i].tree);
	}
	/* 256 blocks: level 1 (one block) first, then level 0's two */
	ezi_verity_geo_init(&g, 4096, 4096, 32, 256);
	CHECK(g.start[1] == 0 && g.start[0] == 1 && g.count[0] == 2,
	      "256 blocks: levels at %llu and %llu",
	      (unsigned long long)g.start[1], (unsigned long long)g.start[0]);
	CHECK(ezi_verity_tree_start(&g, 1048576) == 1048576 + 4096,
	      "tree start");
	CHECK(ezi_verity_geo_init(&g, 4096, 1000, 32, 5) == -EINVAL,
	      "a hash block of 1000 bytes");
	CHECK(ezi_verity_geo_init(&g, 4096, 4096, 32, 0) == -EINVAL,
	      "no data block");
}

static void superblock(void)
{
	struct ezi_verity_sb sb, back;
	uint8_t raw[EZI_VERITY_SB_SIZE];
	char why[160];

	memset(&sb, 0, sizeof(sb));
	strcpy(sb.algorithm, "sha256");
	sb.data_block_size = sb.hash_block_size = 4096;
	sb.data_blocks = 256;
	sb.salt_size = 2;
	sb.salt[0] = 0x00;
	sb.salt[1] = 0x11;
	memset(sb.uuid, 0xab, 16);
	ezi_verity_sb_encode(&sb, raw);
	/* as veritysetup 2.6 wrote it for these values */
	CHECK(!memcmp(raw, "verity\0\0\1\0\0\0\1\0\0\0", 16), "magic, version");
	CHECK(raw[64] == 0x00 && raw[65] == 0x10 && raw[72] == 0x00 &&
		      raw[73] == 0x01 && raw[80] == 2 && raw[88] == 0x00 &&
		      raw[89] == 0x11,
	      "block sizes, data blocks, salt");
	CHECK(!ezi_verity_sb_decode(raw, &back, why, sizeof(why)), "decode");
	CHECK(!memcmp(&sb, &back, sizeof(sb)), "round trip");
	raw[8] = 2;
	CHECK(ezi_verity_sb_decode(raw, &back, why, sizeof(why)) == -EOPNOTSUPP,
	      "version 2");
	raw[8] = 1;
	raw[80] = 0x2c; /* 300 */
	raw[81] = 0x01;
	CHECK(ezi_verity_sb_decode(raw, &back, why, sizeof(why)) == -EUCLEAN,
	      "a salt of 300 bytes");
	raw[0] = 'V';
	CHECK(ezi_verity_sb_decode(raw, &back, why, sizeof(why)) == -ENODATA,
	      "no magic");
}

static void hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

static void fsverity_vectors(void)
{
	/* fsverity digest (fsverity-utils 1.5) of "hello" and of "" */
	static const char hello[] =
		"555b589c26ee43b7a2510e6c67ced9fb3190b6da6e9"
		"e683984551f5d77a763de",
			  empty[] =
				  "3d248ca542a24fc62d1c43b916eae5016878e2533c8"
				  "8238480b26128a1f1af95";
	struct ezi_fsv *f = malloc(sizeof(*f));
	uint8_t d[32];
	char h[65];

	if (!f)
		return;
	ezi_fsv_init(f);
	ezi_fsv_update(f, "hello", 5);
	CHECK(!ezi_fsv_final(f, d), "final");
	hex(d, 32, h);
	CHECK(!strcmp(h, hello), "hello: %s", h);
	ezi_fsv_init(f);
	for (int i = 0; i < 5; i++)
		ezi_fsv_update(f, "hello" + i, 1);
	ezi_fsv_final(f, d);
	hex(d, 32, h);
	CHECK(!strcmp(h, hello), "hello a byte at a time: %s", h);
	ezi_fsv_init(f);
	ezi_fsv_final(f, d);
	hex(d, 32, h);
	CHECK(!strcmp(h, empty), "empty: %s", h);
	free(f);
}

/* File k of the source: k * 7001 bytes of a pattern of its own. */
static void fill(unsigned k, uint8_t *buf, size_t n)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = (uint8_t)(i * 31 + k * 17 + (i >> 9));
}

static int make_source(void)
{
	uint8_t *buf = malloc(NFILES * 7001);
	char path[400];
	unsigned k;
	int fd;

	if (!buf)
		return -1;
	snprintf(src, sizeof(src), "%s/src", dir);
	mkdir(src, 0755);
	for (k = 0; k < NFILES; k++) {
		snprintf(path, sizeof(path), "%s/f%02u", src, k);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		fill(k, buf, (size_t)k * 7001);
		if (fd < 0 || write(fd, buf, (size_t)k * 7001) < 0) {
			free(buf);
			return -1;
		}
		close(fd);
	}
	free(buf);
	buf = malloc(BIG);
	snprintf(path, sizeof(path), "%s/big", src);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (buf)
		fill(99, buf, BIG);
	if (!buf || fd < 0 || write(fd, buf, BIG) != (ssize_t)BIG) {
		free(buf);
		return -1;
	}
	close(fd);
	free(buf);
	return 0;
}

static int build(const char *out, struct ezfs_verity_info *vi)
{
	struct ezfs_build_params p;
	ezfs_builder *b;
	int err;

	ezfs_build_params_init(&p);
	p.flags |= EZFS_BUILD_NO_FSYNC;
	p.has_timestamp = 1;
	p.timestamp = 1700000000;
	p.time_mode = EZFS_TIME_FIXED;
	p.has_uuid = 1;
	p.verity = 1;
	p.verity_has_salt = 1;
	p.verity_salt_size = 4;
	memcpy(p.verity_salt, "\x01\x02\x03\x04", 4);
	p.verity_has_uuid = 1;
	memset(p.verity_uuid, 0x5a, 16);
	p.workers = 3;
	err = ezfs_builder_new(&p, &b);
	if (!err)
		err = ezfs_builder_scan(b, src);
	if (!err)
		err = ezfs_builder_write(b, out);
	if (!err)
		err = ezfs_builder_verity(b, vi);
	ezfs_builder_free(b);
	return err;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *buf;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size);
	if (buf && read(fd, buf, (size_t)st.st_size) != st.st_size) {
		free(buf);
		buf = NULL;
	}
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

/* Read file k of fs whole: 0 (the right bytes), or the error. */
static int read_file(ezfs_image *fs, unsigned k)
{
	char path[16];
	uint64_t nid;
	ezfs_inode *ino;
	size_t n = (size_t)k * 7001;
	uint8_t *got = malloc(n + 1), *want = malloc(n + 1);
	ssize_t r = -ENOMEM;

	snprintf(path, sizeof(path), "/f%02u", k);
	if (got && want && !(r = ezfs_resolve(fs, path, &nid)) &&
	    !(r = ezfs_inode_get(fs, nid, &ino))) {
		r = ezfs_pread(ino, got, n + 1, 0);
		ezfs_inode_put(ino);
		fill(k, want, n);
		if (r >= 0)
			r = (size_t)r == n && !memcmp(got, want, n) ? 0 : -1;
	}
	free(got);
	free(want);
	return (int)r;
}

struct logcount {
	int lines, verity;
};

static void count_log(void *arg, int level, const char *msg)
{
	struct logcount *c = arg;

	__atomic_add_fetch(&c->lines, 1, __ATOMIC_RELAXED);
	if (strstr(msg, "dm-verity"))
		__atomic_add_fetch(&c->verity, 1, __ATOMIC_RELAXED);
}

static int open_mem(const uint8_t *buf, size_t len, const uint8_t *root,
		    struct logcount *lc, ezfs_image **fs)
{
	struct ezfs_open_params op;

	ezfs_open_params_init(&op);
	op.verity = EZFS_VERITY_AUTO;
	op.root_hash = root;
	op.root_hash_size = root ? 32 : 0;
	op.log = count_log;
	op.log_arg = lc;
	return ezfs_image_open_mem(buf, len, &op, fs);
}

/* /big read in order, 64 KiB at a time: 0 (every byte right), or the
 * error of the first read that fails, its offset in *at. */
static int read_big(ezfs_image *fs, uint64_t *at)
{
	uint8_t *want = malloc(BIG), got[65536];
	uint64_t nid, off;
	ezfs_inode *ino;
	ssize_t r = -ENOMEM;

	*at = 0;
	if (want && !(r = ezfs_resolve(fs, "/big", &nid)) &&
	    !(r = ezfs_inode_get(fs, nid, &ino))) {
		fill(99, want, BIG);
		for (off = 0; off < BIG; off += sizeof(got)) {
			r = ezfs_pread(ino, got, sizeof(got), off);
			if (r < 0 || memcmp(got, want + off, sizeof(got))) {
				*at = off;
				r = r < 0 ? r : -1;
				break;
			}
			r = 0;
		}
		ezfs_inode_put(ino);
	}
	free(want);
	return (int)r;
}

/* The block of path's first data byte (an uncompressed image). */
static uint64_t block_of(ezfs_image *fs, const char *path)
{
	struct ezfs_extent e;
	uint64_t nid;
	ezfs_inode *ino;

	if (ezfs_resolve(fs, path, &nid) || ezfs_inode_get(fs, nid, &ino))
		return 0;
	e.pa = 0;
	ezfs_map(ino, 0, &e);
	ezfs_inode_put(ino);
	return e.pa / 4096;
}

struct reader {
	ezfs_image *fs;
	int bad;
};

static void *reader_run(void *arg)
{
	struct reader *r = arg;

	for (unsigned k = 1; k < NFILES; k++)
		if (read_file(r->fs, k))
			r->bad++;
	return NULL;
}

static void scan_bad(void *arg, const char *msg)
{
	(*(int *)arg)++;
	CHECK(strstr(msg, "dm-verity: "), "scan line: %s", msg);
}

/* 1 when the image was built (its tree into *out) */
static int image_checks(struct ezfs_verity_info *out)
{
	struct ezfs_verity_info vi, vi2, got;
	struct logcount lc = { 0, 0 };
	ezfs_image *fs = NULL;
	uint8_t *buf, *buf2, wrong[32];
	size_t len, len2;
	uint64_t blk = 0, bigblk = 0, at;
	char img2[320];
	int err, nbad = 0;
	unsigned k;

	snprintf(img, sizeof(img), "%s/v.img", dir);
	snprintf(img2, sizeof(img2), "%s/v2.img", dir);
	err = build(img, &vi);
	CHECK(!err, "build: %d", err);
	CHECK(!build(img2, &vi2), "second build");
	buf = slurp(img, &len);
	buf2 = slurp(img2, &len2);
	if (err || !buf || !buf2)
		goto out;
	CHECK(len == len2 && !memcmp(buf, buf2, len) &&
		      !memcmp(vi.root, vi2.root, 32),
	      "fixed salt and UUID: the same image and root");
	CHECK(vi.hash_offset % 4096 == 0 &&
		      len == vi.hash_offset + 4096 + vi.tree_blocks * 4096,
	      "the tree right after the image: %zu bytes, at %llu", len,
	      (unsigned long long)vi.hash_offset);
	CHECK(!memcmp(buf + vi.hash_offset, "verity", 6), "its superblock");

	/* found, the same root, not a trust anchor; given: trusted */
	CHECK(!open_mem(buf, len, NULL, &lc, &fs), "open");
	CHECK(fs && !ezfs_image_verity(fs, &got) && got.root_size == 32 &&
		      !memcmp(got.root, vi.root, 32) &&
		      got.trust == EZFS_VERITY_TRUST_NONE && got.salt_size == 4,
	      "the tree as built");
	for (k = 1; fs && k < NFILES; k++)
		CHECK(!read_file(fs, k), "file %u", k);
	ezfs_image_close(fs);
	CHECK(!open_mem(buf, len, vi.root, &lc, &fs) &&
		      !ezfs_image_verity(fs, &got) &&
		      got.trust == EZFS_VERITY_TRUST_GIVEN,
	      "the root given");
	ezfs_image_close(fs);
	memcpy(wrong, vi.root, 32);
	wrong[5] ^= 1;
	CHECK(open_mem(buf, len, wrong, &lc, &fs) == -EBADMSG && !fs &&
		      lc.verity == 1,
	      "another root: -EBADMSG, one line");

	/* four threads at once */
	CHECK(!open_mem(buf, len, vi.root, &lc, &fs), "open for threads");
	if (fs) {
		struct reader r[4];
		pthread_t t[4];

		for (int i = 0; i < 4; i++) {
			r[i] = (struct reader){ .fs = fs };
			pthread_create(&t[i], NULL, reader_run, &r[i]);
		}
		for (int i = 0; i < 4; i++) {
			pthread_join(t[i], NULL);
			CHECK(!r[i].bad, "thread %d: %d files wrong", i,
			      r[i].bad);
		}
		blk = block_of(fs, "/f13");
		bigblk = block_of(fs, "/big") + 700;
		ezfs_image_close(fs);
	}

	/* a flipped data byte: that file fails (one line), the rest read */
	memcpy(buf2, buf, len);
	buf2[blk * 4096 + 100] ^= 0x40;
	lc.verity = 0;
	CHECK(!open_mem(buf2, len, vi.root, &lc, &fs), "open flipped");
	for (k = 1; fs && k < NFILES; k++)
		CHECK(k == 13 ? read_file(fs, k) == -EIO : !read_file(fs, k),
		      "flipped block %llu: file %u", (unsigned long long)blk,
		      k);
	CHECK(read_file(fs, 13) == -EIO && lc.verity == 1,
	      "read twice: -EIO, one line (%d)", lc.verity);
	CHECK(ezfs_image_verity_scan(fs, 2, scan_bad, NULL, &nbad) == 1 &&
		      nbad == 1,
	      "the scan finds that block (%d)", nbad);
	ezfs_image_close(fs);

	/* /big read in order (checked ahead of the reader on a thread of
	 * its own): right, and a flipped byte in its block 700 is the read
	 * of that block failing, once named */
	CHECK(!open_mem(buf, len, vi.root, &lc, &fs) && !read_big(fs, &at),
	      "/big read in order");
	ezfs_image_close(fs);
	memcpy(buf2, buf, len);
	buf2[bigblk * 4096 + 5] ^= 1;
	lc.verity = 0;
	CHECK(!open_mem(buf2, len, vi.root, &lc, &fs), "open flipped /big");
	err = read_big(fs, &at);
	CHECK(err == -EIO && at == 700 * 4096 / 65536 * 65536 && lc.verity == 1,
	      "/big flipped in block 700: %d at %llu, %d lines", err,
	      (unsigned long long)at, lc.verity);
	ezfs_image_close(fs);

	/* a flipped byte of the tree's level 0: the blocks below it */
	memcpy(buf2, buf, len);
	buf2[len - 4096 + 7] ^= 1;
	lc.verity = 0;
	CHECK(!open_mem(buf2, len, vi.root, &lc, &fs) &&
		      !ezfs_image_verity(fs, &got) && got.bad_tree == 1,
	      "a bad tree block is seen at open");
	CHECK(fs && read_file(fs, 5) == -EIO, "a file below it");
	nbad = 0;
	CHECK(fs && ezfs_image_verity_scan(fs, 1, scan_bad, NULL, &nbad) == 1,
	      "the scan names the hash block once (%d)", nbad);
	ezfs_image_close(fs);
out:
	free(buf);
	free(buf2);
	*out = vi;
	return !err;
}

static ssize_t mem_pread(void *arg, void *buf, size_t len, uint64_t off)
{
	const uint8_t *m = ((const uint8_t **)arg)[0];
	size_t n = (size_t)((const uint8_t **)arg)[1];

	if (off >= n)
		return 0;
	if (len > n - off)
		len = n - (size_t)off;
	memcpy(buf, m + off, len);
	return (ssize_t)len;
}

static void tree_alone(const struct ezfs_verity_info *vi)
{
	static const struct ezfs_io_ops ops = { .pread = mem_pread };
	struct ezfs_verity_params vp;
	ezfs_verity *v = NULL;
	const void *arg[2];
	uint8_t *buf, blk[4096];
	size_t len;

	buf = slurp(img, &len);
	if (!buf)
		return;
	arg[0] = buf;
	arg[1] = (const void *)len;
	ezfs_verity_params_init(&vp);
	CHECK(ezfs_verity_load(&ops, arg, 4096, &vp, &v) == -ENODATA && !v,
	      "no superblock at byte 4096");
	vp.min_data_bytes = vi->data_blocks * 4096 + 1;
	CHECK(ezfs_verity_load(&ops, arg, vi->hash_offset, &vp, &v) == -EUCLEAN,
	      "a tree that covers less than the filesystem");
	vp.min_data_bytes = 0;
	vp.root = vi->root;
	vp.root_size = 20;
	CHECK(ezfs_verity_load(&ops, arg, vi->hash_offset, &vp, &v) == -EINVAL,
	      "a root of 20 bytes");
	vp.root_size = 32;
	CHECK(!ezfs_verity_load(&ops, arg, vi->hash_offset, &vp, &v) && v,
	      "load with the root");
	if (!v)
		goto out;
	CHECK(!ezfs_verity_verified(v, 0) && !ezfs_verity_check(v, 0, buf) &&
		      ezfs_verity_verified(v, 0),
	      "block 0 checked and recorded");
	memcpy(blk, buf + 4096, 4096);
	blk[4095] ^= 0x80;
	CHECK(ezfs_verity_check(v, 1, blk) == -EBADMSG &&
		      !ezfs_verity_verified(v, 1),
	      "a changed block 1");
	CHECK(ezfs_verity_check(v, vi->data_blocks, buf) == -ERANGE,
	      "a block past the data");
	ezfs_verity_free(v);
out:
	free(buf);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, sizeof(dir), "%s/ezfs-verity-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	geometry();
	superblock();
	fsverity_vectors();
	if (make_source() == 0) {
		struct ezfs_verity_info vi;

		if (image_checks(&vi))
			tree_alone(&vi);
	} else {
		CHECK(0, "cannot write the source tree in %s", dir);
	}
	if (!getenv("EZFS_KEEP")) {
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		(void)!system(cmd);
	}
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures ? 1 : 0;
}
