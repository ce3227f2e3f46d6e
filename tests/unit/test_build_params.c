/* SPDX-License-Identifier: MIT */
/*
 * test_build_params.c - struct ezfs_build_params grows by its size field:
 * size 0 and a size from the future are -EINVAL, an older caller's size
 * gets the defaults past it, NULL params are the defaults.
 * async_queue_limit (mkfs --async-queue-limit) bounds the compression
 * jobs queued at once (the builder's debug line tells the most seen) and
 * leaves the image as it was.
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

/* The debug line "... at most N queued at once": N, or -1. */
static long queued_peak = -1;
static void peak_log(void *arg, int level, const char *msg)
{
	const char *m = strstr(msg, "at most ");

	(void)arg;
	if (level == EZFS_LOG_DEBUG && strstr(msg, "queued at once") && m)
		queued_peak = strtol(m + 8, NULL, 10);
}

/* Build tree compressed on 4 workers with a queue limit (0: none) into
 * img; the most jobs queued at once, or -1. */
static long build_queued(const char *tree, const char *img, unsigned limit)
{
	struct ezfs_build_params p;
	int err;

	ezfs_build_params_init(&p);
	p.flags = EZFS_BUILD_NO_FSYNC;
	p.has_timestamp = 1;
	p.timestamp = 1700000000;
	p.has_uuid = 1;
	p.alg = EZFS_ALG_LZ4;
	p.workers = 4;
	p.async_queue_limit = limit;
	p.log = peak_log;
	p.verbose = EZFS_LOG_DEBUG;
	queued_peak = -1;
	err = build(&p, tree, img);
	CHECK(!err, "build with queue limit %u: %d", limit, err);
	return err ? -1 : queued_peak;
}

/* Files of the same text, for the queue bound (64 jobs). */
static int queue_tree(const char *dir)
{
	char path[400], text[24000];
	int i;

	for (i = 0; i < (int)sizeof(text) - 1; i++)
		text[i] = "queue limit "[i % 12];
	text[sizeof(text) - 1] = '\0';
	if (mkdir(dir, 0755))
		return -1;
	for (i = 0; i < 64; i++) {
		snprintf(path, sizeof(path), "%s/f%02d", dir, i);
		if (write_file(path, text))
			return -1;
	}
	return 0;
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

	/* the queue bound: at most 2 queued with it, more without (the
	 * default window is 16 jobs for 4 workers), the same image */
	snprintf(path, sizeof(path), "%s/q", tmp);
	if (queue_tree(path)) {
		perror("queue tree");
		return 1;
	}
	{
		char qa[128], qb[128], qcmd[300];
		long bounded, free_run;

		snprintf(qa, sizeof(qa), "%s/qa.img", tmp);
		snprintf(qb, sizeof(qb), "%s/qb.img", tmp);
		bounded = build_queued(path, qa, 2);
		free_run = build_queued(path, qb, 0);
		CHECK(bounded >= 1 && bounded <= 2,
		      "queue limit 2: %ld jobs queued at once", bounded);
		CHECK(free_run > 2, "no queue limit: at most %ld queued",
		      free_run);
		snprintf(qcmd, sizeof(qcmd), "cmp -s '%s' '%s'", qa, qb);
		CHECK(system(qcmd) == 0, "queue limit 2 changed the image");
	}

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
