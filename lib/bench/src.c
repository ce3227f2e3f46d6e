/* SPDX-License-Identifier: MIT */
/* bench/src.c - the bench's sources, its temporary workspace, image builds. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ezfs/build.h"
#include "bench/internal.h"

int ezi_bench_is_erofs(const char *path)
{
	unsigned char m[4];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = pread(fd, m, 4, 1024);
	close(fd);
	return n == 4 && m[0] == 0xE2 && m[1] == 0xE1 && m[2] == 0xF5 &&
	       m[3] == 0xE0;
}

/* Recursive removal with plain syscalls only (also used from a signal). */
static void rm_tree_at(int dfd, const char *name)
{
	DIR *d;
	struct dirent *de;
	int fd;

	if (!unlinkat(dfd, name, 0) || errno == ENOENT)
		return;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			rm_tree_at(fd, de->d_name);
	closedir(d);
	unlinkat(dfd, name, AT_REMOVEDIR);
}

void ezfs_bench_cleanup(ezfs_bench *b)
{
	if (!b || !b->tmp[0] || getpid() != b->owner)
		return;
	rm_tree_at(AT_FDCWD, b->tmp);
	b->tmp[0] = '\0';
}

int ezi_bench_tmp_init(ezfs_bench *b)
{
	const char *base = b->p.tmpdir;

	if (!base || !*base)
		base = getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	snprintf(b->tmp, sizeof(b->tmp), "%s/ezfs-bench.XXXXXX", base);
	if (!mkdtemp(b->tmp)) {
		int err = -errno;

		ezi_bench_log(b, EZFS_LOG_ERROR,
			      "cannot create a temporary directory in %s: %s",
			      base, strerror(errno));
		b->tmp[0] = '\0';
		return err;
	}
	b->owner = getpid();
	return 0;
}

/* Copy at most *left bytes of src to dst; a short copy ends the sample. */
static int copy_part(const char *src, const char *dst, uint64_t *left)
{
	char buf[1 << 16];
	int in, out, err = 0;
	ssize_t n;

	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (out < 0) {
		err = -errno;
		close(in);
		return err;
	}
	while (*left) {
		n = read(in, buf, *left < sizeof(buf) ? *left : sizeof(buf));
		if (n <= 0) {
			if (n < 0)
				err = -errno;
			break;
		}
		if (write(out, buf, (size_t)n) != n) {
			err = errno ? -errno : -EIO;
			break;
		}
		*left -= (uint64_t)n;
	}
	close(in);
	if (close(out) && !err)
		err = -errno;
	return err;
}

struct stage {
	uint64_t left, bytes, blocks;
	int copy; /* 0: only count */
	int files;
};

/* Walk src (a directory), copying into dst when st->copy. */
static int stage_dir(const char *src, const char *dst, struct stage *st)
{
	char sp[PATH_MAX], dp[PATH_MAX];
	struct dirent **ents;
	struct stat sb;
	int n, i, err = 0;

	n = scandir(src, &ents, NULL, alphasort);
	if (n < 0)
		return -errno;
	for (i = 0; i < n; i++) {
		const char *nm = ents[i]->d_name;

		if (err || !st->left || !strcmp(nm, ".") || !strcmp(nm, ".."))
			goto next;
		snprintf(sp, sizeof(sp), "%s/%s", src, nm);
		snprintf(dp, sizeof(dp), "%s/%s", dst, nm);
		if (lstat(sp, &sb))
			goto next;
		if (S_ISDIR(sb.st_mode)) {
			if (st->copy && mkdir(dp, 0755)) {
				err = -errno;
				goto next;
			}
			err = stage_dir(sp, dp, st);
		} else if (S_ISREG(sb.st_mode)) {
			uint64_t sz = (uint64_t)sb.st_size, before = st->left;

			if (sz > st->left)
				sz = st->left;
			if (st->copy) {
				err = copy_part(sp, dp, &st->left);
				sz = before - st->left;
			} else {
				st->left -= sz;
			}
			st->bytes += sz;
			st->blocks += (sz + 4095) / 4096;
			st->files++;
		}
	next:
		free(ents[i]);
	}
	free(ents);
	return err;
}

int ezi_bench_src_prepare(ezfs_bench *b, const char *source)
{
	uint64_t max_bytes = b->p.max_sample;
	char dst[PATH_MAX];
	struct stage st = { .left = max_bytes ? max_bytes : UINT64_MAX };
	struct stat sb;
	int err;

	if (stat(source, &sb)) {
		err = -errno;
		ezi_bench_log(b, EZFS_LOG_ERROR, "%s: %s", source,
			      strerror(errno));
		return err;
	}
	if (S_ISREG(sb.st_mode) && ezi_bench_is_erofs(source)) {
		b->is_image = 1;
		return 0;
	}
	if (!S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode)) {
		ezi_bench_log(b, EZFS_LOG_ERROR,
			      "%s: not a directory, file or EROFS image",
			      source);
		return -EINVAL;
	}
	if (S_ISDIR(sb.st_mode)) {
		/* Count first: a tree within the bound is used in place. */
		st.left = UINT64_MAX;
		err = stage_dir(source, NULL, &st);
		if (err)
			goto fail;
		if (!st.bytes)
			goto empty;
		if (!max_bytes || st.bytes <= max_bytes) {
			b->dir = realpath(source, NULL);
			b->input_bytes = st.bytes;
			b->input_blocks = st.blocks;
			return b->dir ? 0 : -ENOMEM;
		}
	}
	snprintf(dst, sizeof(dst), "%s/src", b->tmp);
	if (mkdir(dst, 0755)) {
		err = -errno;
		goto fail;
	}
	memset(&st, 0, sizeof(st));
	st.left = max_bytes ? max_bytes : UINT64_MAX;
	st.copy = 1;
	if (S_ISDIR(sb.st_mode)) {
		err = stage_dir(source, dst, &st);
	} else {
		const char *base = strrchr(source, '/');
		char fp[PATH_MAX + 8];
		uint64_t before = st.left;

		snprintf(fp, sizeof(fp), "%s/%s", dst,
			 base ? base + 1 : source);
		err = copy_part(source, fp, &st.left);
		st.bytes = before - st.left;
		st.blocks = (st.bytes + 4095) / 4096;
	}
	if (err)
		goto fail;
	if (!st.bytes)
		goto empty;
	b->dir = strdup(dst);
	b->input_bytes = st.bytes;
	b->input_blocks = st.blocks;
	return b->dir ? 0 : -ENOMEM;
fail:
	ezi_bench_log(b, EZFS_LOG_ERROR, "%s: cannot prepare the sample: %s",
		      source, strerror(-err));
	return err;
empty:
	/* nothing to build or read: every figure would be 0 or a division
	 * by zero */
	ezi_bench_log(b, EZFS_LOG_ERROR, "%s: no file data to measure", source);
	return -ENODATA;
}

static void build_log(void *arg, int level, const char *msg)
{
	const ezfs_bench *b = arg;

	if (level == EZFS_LOG_ERROR)
		ezi_bench_log(b, EZFS_LOG_ERROR, "build: %s", msg);
}

/*
 * Images at b->keep_cluster outlive their first use (read builds what
 * latency measures next in 'all'); kept[] remembers their build figures.
 */
void ezi_bench_image_done(ezfs_bench *b, char *path, uint32_t cluster)
{
	int i;

	for (i = 0; path && i < b->nkept; i++)
		if (!strcmp(b->kept[i].path, path))
			break;
	if (path && i == b->nkept &&
	    (!b->keep_cluster || cluster != b->keep_cluster))
		unlink(path);
	free(path);
}

static void keep_image(ezfs_bench *b, const char *path, uint64_t bytes,
		       double seconds)
{
	if (b->nkept == EZI_BENCH_KEPT_MAX ||
	    !(b->kept[b->nkept].path = strdup(path)))
		return;
	b->kept[b->nkept].bytes = bytes;
	b->kept[b->nkept++].seconds = seconds;
}

int ezi_bench_build(ezfs_bench *b, const struct ezfs_bench_alg *a,
		    uint32_t cluster, char **path, uint64_t *image_bytes,
		    double *seconds)
{
	struct ezfs_build_params p;
	struct ezfs_build_stats bs;
	ezfs_builder *bl = NULL;
	char lab[32], img[PATH_MAX];
	double t0;
	int err, i;

	*path = NULL;
	ezi_bench_alg_label(a, lab, sizeof(lab));
	snprintf(img, sizeof(img), "%s/%s-%u.img", b->tmp, lab,
		 (unsigned)cluster);
	for (i = 0; i < b->nkept; i++) {
		if (strcmp(b->kept[i].path, img))
			continue;
		*image_bytes = b->kept[i].bytes;
		*seconds = b->kept[i].seconds;
		*path = strdup(img);
		return *path ? 0 : -ENOMEM;
	}
	ezfs_build_params_init(&p);
	p.log = build_log;
	p.log_arg = b;
	p.alg = a->alg;
	p.hc = a->hc;
	p.level = a->level;
	p.pcluster_size = cluster;
	p.flags |= EZFS_BUILD_NO_FSYNC;
	p.has_timestamp = 1;
	p.timestamp = 0;
	p.time_mode = EZFS_TIME_FIXED;
	t0 = ezi_bench_now();
	err = ezfs_builder_new(&p, &bl);
	if (!err)
		err = ezfs_builder_scan(bl, b->dir);
	if (!err)
		err = ezfs_builder_write(bl, img);
	if (!err) {
		ezfs_builder_stats(bl, &bs);
		*image_bytes = bs.image_bytes;
	}
	*seconds = ezi_bench_now() - t0;
	ezfs_builder_free(bl);
	if (err) {
		ezi_bench_log(b, EZFS_LOG_ERROR, "building %s (%s, %u): %s",
			      b->dir, lab, (unsigned)cluster,
			      ezfs_strerror(err));
		return err;
	}
	if (b->keep_cluster && cluster == b->keep_cluster)
		keep_image(b, img, *image_bytes, *seconds);
	*path = strdup(img);
	return *path ? 0 : -ENOMEM;
}
