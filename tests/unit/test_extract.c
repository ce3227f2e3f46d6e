/* SPDX-License-Identifier: MIT */
/*
 * test_extract.c - ezfs_extract and ezfs_export called as a library, with
 * no command: a tree built with the builder API (text, a hard link pair, a
 * symlink, a FIFO, a sparse file, nanosecond mtimes) comes out the same
 * through ezfs_extract; a non-empty destination is -ENOTEMPTY; the entry
 * callback lists every file as unverified when source_check fails; a set
 * cancel flag stops it; ezfs_export writes a pax archive whose headers and
 * data (parsed here) are the tree's, the sparse file a sparse member.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ezfs/build.h>
#include <ezfs/extract.h>
#include <ezfs/ezfs.h>

#include "check.h"

#define BIG (3u << 20) /* text: several pclusters, two windows */

static char *big_text(void)
{
	char *p = malloc(BIG);
	size_t i;

	for (i = 0; p && i < BIG; i++)
		p[i] = "the quick brown fox jumps over the lazy dog\n"
			[(i * 7 + i / 4096) % 44];
	return p;
}

static int put(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, data, len);
	return close(fd) || n != (ssize_t)len ? -1 : 0;
}

static char *slurp(const char *path, size_t *len)
{
	struct stat st;
	char *p = NULL;
	int fd = open(path, O_RDONLY);

	if (fd >= 0 && !fstat(fd, &st) && (p = malloc(st.st_size + 1)) &&
	    read(fd, p, st.st_size) != st.st_size) {
		free(p);
		p = NULL;
	}
	if (p)
		*len = (size_t)st.st_size;
	if (fd >= 0)
		close(fd);
	return p;
}

/* The source tree; 0 or -1. */
static int make_tree(const char *src, const char *text)
{
	char p[1024];
	struct timespec ts[2] = { { 1234567890, 123456789 },
				  { 1234567890, 123456789 } };
	int fd;

	snprintf(p, sizeof(p), "%s/a", src);
	if (mkdir(src, 0755) || mkdir(p, 0750))
		return -1;
	snprintf(p, sizeof(p), "%s/a/big.txt", src);
	if (put(p, text, BIG) || utimensat(AT_FDCWD, p, ts, 0))
		return -1;
	snprintf(p, sizeof(p), "%s/small", src);
	if (put(p, "hello\n", 6))
		return -1;
	chmod(p, 0600);
	snprintf(p, sizeof(p), "%s/a/link", src);
	{
		char q[1024];

		snprintf(q, sizeof(q), "%s/small", src);
		if (link(q, p))
			return -1;
	}
	snprintf(p, sizeof(p), "%s/sym", src);
	if (symlink("a/big.txt", p))
		return -1;
	snprintf(p, sizeof(p), "%s/fifo", src);
	if (mkfifo(p, 0640))
		return -1;
	/* 8 MiB with one byte at 5 MiB: holes in the source */
	snprintf(p, sizeof(p), "%s/sparse", src);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || pwrite(fd, "x", 1, 5u << 20) != 1 ||
	    ftruncate(fd, 8u << 20) || close(fd))
		return -1;
	return 0;
}

static int build(const char *src, const char *img)
{
	struct ezfs_build_params p;
	ezfs_builder *b = NULL;
	int err;

	ezfs_build_params_init(&p);
	p.alg = EZFS_ALG_LZ4;
	p.pcluster_size = 65536;
	p.flags = EZFS_BUILD_NO_FSYNC;
	err = ezfs_builder_new(&p, &b);
	if (!err)
		err = ezfs_builder_scan(b, src);
	if (!err)
		err = ezfs_builder_write(b, img);
	ezfs_builder_free(b);
	return err;
}

struct seen {
	unsigned messages, progress, unverified, other;
	uint64_t last_entries, total_entries;
	char first[512];
};

static void on_message(void *arg, int level, const char *line)
{
	struct seen *s = arg;

	if (!s->messages++)
		snprintf(s->first, sizeof(s->first), "%s", line);
}

static void on_progress(void *arg, const struct ezfs_extract_progress *p)
{
	struct seen *s = arg;

	s->progress++;
	s->last_entries = p->entries;
	s->total_entries = p->total_entries;
}

static void on_entry(void *arg, const char *path, int problem, int err)
{
	struct seen *s = arg;

	if (problem == EZFS_ENTRY_UNVERIFIED && err == -EBADMSG)
		s->unverified++;
	else
		s->other++;
}

static int failed_source(void *arg)
{
	return -EBADMSG;
}

static int same_file(const char *a, const char *b)
{
	size_t la = 0, lb = 0;
	char *pa = slurp(a, &la), *pb = slurp(b, &lb);
	int same = pa && pb && la == lb && !memcmp(pa, pb, la);

	free(pa);
	free(pb);
	return same;
}

static void check_tree(const char *src, const char *out)
{
	static const char *const files[] = { "a/big.txt", "small", "a/link",
					     "sparse" };
	char p[1024], q[512], t[64];
	struct stat a, b;
	ssize_t n;
	size_t i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", src, files[i]);
		snprintf(q, sizeof(q), "%s/%s", out, files[i]);
		CHECK(same_file(p, q), "%s: not the source's bytes", q);
		CHECK(!stat(p, &a) && !stat(q, &b) &&
			      (a.st_mode & 07777) == (b.st_mode & 07777),
		      "%s: mode", q);
	}
	snprintf(q, sizeof(q), "%s/a/big.txt", out);
	CHECK(!stat(q, &b) && b.st_mtim.tv_sec == 1234567890 &&
		      b.st_mtim.tv_nsec == 123456789,
	      "%s: nanosecond mtime", q);
	snprintf(p, sizeof(p), "%s/small", out);
	snprintf(q, sizeof(q), "%s/a/link", out);
	CHECK(!stat(p, &a) && !stat(q, &b) && a.st_ino == b.st_ino &&
		      a.st_nlink == 2,
	      "small and a/link: one inode, two links");
	snprintf(q, sizeof(q), "%s/sym", out);
	n = readlink(q, t, sizeof(t) - 1);
	CHECK(n == 9 && !memcmp(t, "a/big.txt", 9), "sym: its target");
	snprintf(q, sizeof(q), "%s/fifo", out);
	CHECK(!lstat(q, &b) && S_ISFIFO(b.st_mode) &&
		      (b.st_mode & 07777) == 0640,
	      "fifo: a FIFO 0640");
	snprintf(q, sizeof(q), "%s/a", out);
	CHECK(!stat(q, &b) && (b.st_mode & 07777) == 0750, "a: mode 0750");
	snprintf(q, sizeof(q), "%s/sparse", out);
	CHECK(!stat(q, &b) && b.st_size == (8 << 20) &&
		      (uint64_t)b.st_blocks * 512 <= 65536,
	      "sparse: 8 MiB in %llu bytes on disk",
	      (unsigned long long)b.st_blocks * 512);
}

static void test_extract(ezfs_image *im, const char *src, const char *dir)
{
	struct ezfs_extract_opts o;
	struct ezfs_extract_result r;
	struct seen s = { 0 };
	char out[512];
	volatile int cancel = 1;
	int err;

	snprintf(out, sizeof(out), "%s/out", dir);
	ezfs_extract_opts_init(&o);
	o.threads = 2;
	o.image_name = "test.img";
	o.arg = &s;
	o.message = on_message;
	o.progress = on_progress;
	o.entry = on_entry;
	err = ezfs_extract(im, out, &o, &r);
	CHECK(!err, "ezfs_extract: %d (%s)", err, s.first);
	CHECK(!s.messages, "%u messages: %s", s.messages, s.first);
	CHECK(r.entries == 7 && r.bytes == BIG + 6 + (8u << 20),
	      "result: %llu entries, %llu bytes", (unsigned long long)r.entries,
	      (unsigned long long)r.bytes);
	CHECK(s.progress && s.last_entries == 7 && s.total_entries == 7,
	      "progress: %u calls, last %llu of %llu entries", s.progress,
	      (unsigned long long)s.last_entries,
	      (unsigned long long)s.total_entries);
	check_tree(src, out);

	/* a second time: the directory is no longer empty */
	memset(&s, 0, sizeof(s));
	err = ezfs_extract(im, out, &o, &r);
	CHECK(err == -ENOTEMPTY && !s.messages,
	      "non-empty: %d, %u messages (-ENOTEMPTY, none)", err, s.messages);
	/* forced, with a source that failed its check afterwards */
	o.flags = EZFS_EXTRACT_FORCE;
	o.source_check = failed_source;
	err = ezfs_extract(im, out, &o, &r);
	CHECK(err == -EBADMSG, "source_check: %d, want -EBADMSG", err);
	CHECK(s.unverified == 3 && !s.other && r.unverified == 3,
	      "source_check: %u unverified (3 files), %u other reports",
	      s.unverified, s.other);
	check_tree(src, out); /* kept */

	/* cancelled before it starts: nothing but DEST */
	o.flags = 0;
	o.source_check = NULL;
	o.cancel = &cancel;
	snprintf(out, sizeof(out), "%s/cancelled", dir);
	err = ezfs_extract(im, out, &o, &r);
	CHECK(err == -ECANCELED && r.entries == 0, "cancel: %d, %llu entries",
	      err, (unsigned long long)r.entries);

	/* an older caller's struct size works; size 0 does not */
	o.cancel = NULL;
	o.size = 0;
	CHECK(ezfs_extract(im, out, &o, NULL) == -EINVAL, "size 0: -EINVAL");
	o.size = sizeof(o);
	o.path = "/nonexistent";
	memset(&s, 0, sizeof(s));
	CHECK(ezfs_extract(im, out, &o, NULL) == -ENOENT && s.messages == 1 &&
		      strstr(s.first, "test.img: /nonexistent"),
	      "a missing path: -ENOENT, one line naming it: %s", s.first);
}

/* An octal header field. */
static uint64_t oct(const char *f, size_t n)
{
	uint64_t v = 0;

	while (n && (*f == ' ' || *f == '0'))
		f++, n--;
	while (n && *f >= '0' && *f <= '7')
		v = v * 8 + (uint64_t)(*f++ - '0'), n--;
	return v;
}

/* Walk a pax archive: names (pax path records too), types, the data of
 * a/big.txt. */
static void check_archive(const char *path, const char *text)
{
	size_t len = 0, off = 0;
	char *a = slurp(path, &len), *name = NULL;
	unsigned regs = 0, links = 0, dirs = 0, others = 0;
	int big_ok = 0, end = 0;

	CHECK(a && len % 512 == 0, "archive: %zu bytes", len);
	while (a && off + 512 <= len && !end) {
		const char *h = a + off;
		uint64_t size = oct(h + 124, 12);
		char type = h[156];
		char nm[101];

		if (!h[0]) {
			end = 1;
			break;
		}
		memcpy(nm, h, 100);
		nm[100] = '\0';
		off += 512;
		if (type == 'x' && off + size <= len) {
			/* "LEN path=VALUE\n" records: the long name */
			const char *r = memmem(a + off, size, " path=", 6);

			free(name);
			name = r ? strndup(r + 6, strcspn(r + 6, "\n")) : NULL;
		} else {
			const char *n = name ? name : nm;

			if (type == '0' && !strcmp(n, "a/big.txt"))
				big_ok = size == BIG && off + size <= len &&
					 !memcmp(a + off, text, BIG);
			regs += type == '0';
			links += type == '1';
			dirs += type == '5';
			others += type != '0' && type != '1' && type != '5';
			free(name);
			name = NULL;
		}
		off += (size + 511) & ~511ull;
	}
	CHECK(end, "archive: no end-of-archive block");
	/* the 8 MiB file with one data byte: a sparse member */
	CHECK(a && len < BIG + (1u << 20) &&
		      memmem(a, len, "GNU.sparse.realsize=8388608", 27),
	      "archive: %zu bytes, the sparse file not a sparse member", len);
	CHECK(big_ok, "archive: a/big.txt with the file's bytes");
	CHECK(regs == 3 && links == 1 && dirs == 2 && others == 2,
	      "archive: %u files, %u links, %u dirs, %u others (3, 1, 2, 2)",
	      regs, links, dirs, others);
	free(name);
	free(a);
}

static void test_export(ezfs_image *im, const char *dir, const char *text)
{
	struct ezfs_export_opts o;
	struct ezfs_export_result r;
	struct seen s = { 0 };
	char path[512];
	int fd, err;

	snprintf(path, sizeof(path), "%s/out.tar", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0, "%s: %s", path, strerror(errno));
	if (fd < 0)
		return;
	ezfs_export_opts_init(&o);
	o.arg = &s;
	o.message = on_message;
	o.progress = on_progress;
	o.entry = on_entry;
	o.image_name = "test.img";
	err = ezfs_export(im, fd, &o, &r);
	close(fd);
	if (err == -EOPNOTSUPP) {
		printf("SKIP: ezfs_export: %s\n", s.first);
		return;
	}
	CHECK(!err && r.complete, "ezfs_export: %d (%s)", err, s.first);
	CHECK(r.entries == 8 && r.bytes == BIG + 6 + (8u << 20),
	      "export result: %llu entries, %llu bytes",
	      (unsigned long long)r.entries, (unsigned long long)r.bytes);
	CHECK(s.last_entries == 8 && s.total_entries == 8,
	      "export progress: %llu of %llu entries",
	      (unsigned long long)s.last_entries,
	      (unsigned long long)s.total_entries);
	check_archive(path, text);
	o.format = 7;
	CHECK(ezfs_export(im, 1, &o, NULL) == -EINVAL, "format 7: -EINVAL");
}

int main(void)
{
	char dir[] = "/tmp/ezfs-test-extract.XXXXXX", src[512], img[512];
	char cmd[600];
	char *text = big_text();
	ezfs_image *im = NULL;
	int err;

	if (!text || !mkdtemp(dir)) {
		perror("setup");
		return 1;
	}
	snprintf(src, sizeof(src), "%s/src", dir);
	snprintf(img, sizeof(img), "%s/test.img", dir);
	err = make_tree(src, text);
	CHECK(!err, "source tree: %s", strerror(errno));
	if (!err)
		err = build(src, img);
	CHECK(!err, "build: %d", err);
	if (!err)
		err = ezfs_image_open(img, NULL, &im);
	CHECK(!err, "open: %d", err);
	if (!err) {
		test_extract(im, src, dir);
		test_export(im, dir, text);
		ezfs_image_close(im);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "%s failed\n", cmd);
	free(text);
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures ? 1 : 0;
}
