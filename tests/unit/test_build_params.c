/* SPDX-License-Identifier: MIT */
/*
 * test_build_params.c - struct ezfs_build_params grows by its size field:
 * size 0 and a size from the future are -EINVAL, an older caller's size
 * gets the defaults past it, NULL params are the defaults.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ezfs/build.h>
#include <ezfs/ezfs.h>

#include "check.h"

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* Build tree into img with p (may be NULL); 0 or the first error. */
static int build(const struct ezfs_build_params *p, const char *tree,
		 const char *img)
{
	ezfs_builder *b = NULL;
	int err = ezfs_builder_new(p, &b);

	if (!err)
		err = ezfs_builder_scan(b, tree);
	if (!err)
		err = ezfs_builder_write(b, img);
	ezfs_builder_free(b);
	return err;
}

/* The image reads back: 4096-byte blocks, the file, the volume name. */
static void check_image(const char *img, const char *label)
{
	struct ezfs_sb_info si;
	ezfs_inode *ino = NULL;
	ezfs_image *im = NULL;
	uint64_t nid;
	char buf[64];
	ssize_t n;
	int err;

	err = ezfs_image_open(img, NULL, &im);
	CHECK(!err && im, "open %s: %d", img, err);
	if (!im)
		return;
	ezfs_get_sb_info(im, &si);
	CHECK(si.blksz == 4096, "block size %u, not the default", si.blksz);
	CHECK(!strcmp(si.volume_name, label), "label '%s', not '%s'",
	      si.volume_name, label);
	err = ezfs_resolve(im, "a.txt", &nid);
	if (!err)
		err = ezfs_inode_get(im, nid, &ino);
	CHECK(!err, "a.txt: %d", err);
	if (ino) {
		n = ezfs_pread(ino, buf, sizeof(buf), 0);
		CHECK(n == 6 && !memcmp(buf, "hello\n", 6), "a.txt: %zd", n);
		ezfs_inode_put(ino);
	}
	CHECK(ezfs_fsck(im, NULL, NULL) == 0, "fsck %s", img);
	ezfs_image_close(im);
}

int main(void)
{
	char tmpl[] = "/tmp/ezfs-buildapi.XXXXXX", tree[256], img[256];
	char path[300], cmd[400];
	struct ezfs_build_params p;
	ezfs_builder *b;
	const char *tmp;
	int err;

	tmp = mkdtemp(tmpl);
	if (!tmp) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(tree, sizeof(tree), "%s/tree", tmp);
	snprintf(img, sizeof(img), "%s/out.img", tmp);
	snprintf(path, sizeof(path), "%s/a.txt", tree);
	if (mkdir(tree, 0755) || write_file(path, "hello\n")) {
		perror("tree");
		return 1;
	}

	ezfs_build_params_init(&p);
	CHECK(p.size == sizeof(p), "init: size %zu", p.size);
	CHECK(p.blksz == 4096 && p.alg == -1 && p.level == -1 &&
		      p.force_uid == -1 && p.force_gid == -1 &&
		      p.xattr_tolerance == 2,
	      "init: defaults");

	/* never initialised */
	p.size = 0;
	b = (ezfs_builder *)&p;
	CHECK(ezfs_builder_new(&p, &b) == -EINVAL && !b, "size 0");
	/* built against a newer header */
	p.size = sizeof(p) + 8;
	b = (ezfs_builder *)&p;
	CHECK(ezfs_builder_new(&p, &b) == -EINVAL && !b, "size too large");

	/* an older caller: its struct ends before chunksize; what lies past
	 * its size (here an invalid chunk size) is not read */
	ezfs_build_params_init(&p);
	p.size = offsetof(struct ezfs_build_params, chunksize);
	p.chunksize = 3;
	p.flags = EZFS_BUILD_NO_FSYNC;
	p.has_timestamp = 1;
	p.timestamp = 1700000000;
	memcpy(p.label, "older", 6);
	err = build(&p, tree, img);
	CHECK(!err, "older caller's size: %d", err);
	if (!err)
		check_image(img, "older");

	/* the same field within the full size is validated */
	p.size = sizeof(p);
	b = NULL;
	CHECK(ezfs_builder_new(&p, &b) == -EINVAL && !b, "chunk size 3");

	/* NULL: the defaults */
	err = build(NULL, tree, img);
	CHECK(!err, "NULL params: %d", err);
	if (!err)
		check_image(img, "");

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", tmp);
	if (failures) {
		printf("test_build_params: %d failures\n", failures);
		return 1;
	}
	printf("test_build_params: ok\n");
	return 0;
}
