/* SPDX-License-Identifier: MIT */
/*
 * bench/target.c - read targets (the library's inodes or the files of a
 * mounted view) and the three read workloads on them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/internal.h"

const char *const ezi_bench_workloads[3] = { "seq", "rand", "small" };

static int add_file(struct ezi_bench_files *fl, uint64_t nid, uint64_t size)
{
	if (fl->n == fl->cap) {
		size_t cap = fl->cap ? fl->cap * 2 : 256;
		struct ezi_bench_file *v = realloc(fl->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		fl->v = v;
		fl->cap = cap;
	}
	fl->v[fl->n].nid = nid;
	fl->v[fl->n++].size = size;
	fl->total += size;
	return 0;
}

/* Directories seen (nids, open addressing): each is walked once, so a
 * corrupt image whose directories loop cannot keep the walk going. */
struct seen {
	uint64_t *v; /* nid + 1; 0 = empty */
	size_t cap, n;
};

/* 1: added, 0: seen before, -ENOMEM */
static int seen_add(struct seen *s, uint64_t nid)
{
	size_t i;

	if (2 * (s->n + 1) > s->cap) {
		struct seen g = { calloc(s->cap ? 2 * s->cap : 64, 8),
				  s->cap ? 2 * s->cap : 64, 0 };

		if (!g.v)
			return -ENOMEM;
		for (i = 0; i < s->cap; i++)
			if (s->v[i])
				seen_add(&g, s->v[i] - 1);
		free(s->v);
		*s = g;
	}
	for (i = (nid * 0x9e3779b97f4a7c15ull) & (s->cap - 1); s->v[i];
	     i = (i + 1) & (s->cap - 1))
		if (s->v[i] == nid + 1)
			return 0;
	s->v[i] = nid + 1;
	s->n++;
	return 1;
}

struct walk {
	ezfs_image *img;
	struct ezi_bench_files *fl;
	struct seen seen;
};

static int walk_dir(struct walk *w, uint64_t nid);

static int walk_ent(void *arg, const char *name, size_t namelen, uint64_t nid,
		    unsigned ftype, uint64_t next)
{
	struct walk *w = arg;
	struct ezfs_stat st;
	ezfs_inode *ino;
	int err;

	(void)next;
	if ((namelen == 1 && name[0] == '.') ||
	    (namelen == 2 && name[0] == '.' && name[1] == '.'))
		return 0;
	if (ftype == EZFS_FT_DIR)
		return walk_dir(w, nid);
	if (ftype != EZFS_FT_REG)
		return 0;
	err = ezfs_inode_get(w->img, nid, &ino);
	if (err)
		return err;
	ezfs_inode_stat(ino, &st);
	ezfs_inode_put(ino);
	if (!S_ISREG(st.mode) || !st.size)
		return 0;
	return add_file(w->fl, nid, st.size);
}

static int walk_dir(struct walk *w, uint64_t nid)
{
	ezfs_inode *dir;
	int err = seen_add(&w->seen, nid);

	if (err <= 0)
		return err;
	err = ezfs_inode_get(w->img, nid, &dir);
	if (err)
		return err;
	err = ezfs_readdir(dir, 0, walk_ent, w);
	ezfs_inode_put(dir);
	return err;
}

int ezi_bench_list_files(ezfs_image *img, struct ezi_bench_files *fl)
{
	struct walk w = { .img = img, .fl = fl };
	int err = walk_dir(&w, ezfs_root_nid(img));

	free(w.seen.v);
	return err;
}

void ezi_bench_target_close(struct ezi_bench_target *t)
{
	size_t i;

	for (i = 0; i < t->fl.n; i++) {
		if (t->inos && t->inos[i])
			ezfs_inode_put(t->inos[i]);
		if (t->fds && t->fds[i] >= 0)
			close(t->fds[i]);
		if (t->paths)
			free(t->paths[i]);
	}
	free(t->inos);
	free(t->fds);
	free(t->paths);
	free(t->fl.v);
	free(t->buf);
	free(t->wbuf);
	if (t->img)
		ezfs_image_close(t->img);
	memset(t, 0, sizeof(*t));
}

/* A fresh image instance: nothing decoded is cached yet. */
int ezi_bench_target_open_lib(ezfs_bench *b, struct ezi_bench_target *t,
			      const char *image, uint32_t bs,
			      const char *engine,
			      const struct ezfs_bench_disp *d)
{
	size_t i;
	int err;

	memset(t, 0, sizeof(*t));
	err = ezi_bench_open(b, image, engine, d, &t->img);
	if (err)
		return err;
	err = ezi_bench_list_files(t->img, &t->fl);
	t->inos = calloc(t->fl.n + 1, sizeof(*t->inos));
	t->buf = malloc(bs);
	t->bs = bs;
	if (!err && (!t->inos || !t->buf))
		err = -ENOMEM;
	for (i = 0; !err && i < t->fl.n; i++)
		err = ezfs_inode_get(t->img, t->fl.v[i].nid, &t->inos[i]);
	if (err) {
		ezi_bench_fail(b, image, err);
		ezi_bench_target_close(t);
	}
	return err;
}

/* The regular files under the directory open as dfd (path: its name),
 * in directory order, into t. */
static int list_tree(struct ezi_bench_target *t, int dfd, const char *path,
		     unsigned depth)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	int err = 0;

	if (!d) {
		close(dfd);
		return -errno;
	}
	while (!err && (de = readdir(d))) {
		char *full;
		struct stat sb;
		char **p;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW))
			continue;
		if (asprintf(&full, "%s/%s", path, de->d_name) < 0) {
			err = -ENOMEM;
			break;
		}
		if (S_ISDIR(sb.st_mode) && depth < 256) {
			int fd = openat(dirfd(d), de->d_name,
					O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
						O_CLOEXEC);

			if (fd >= 0)
				err = list_tree(t, fd, full, depth + 1);
			free(full);
			continue;
		}
		if (!S_ISREG(sb.st_mode) || !sb.st_size ||
		    add_file(&t->fl, 0, (uint64_t)sb.st_size)) {
			err = S_ISREG(sb.st_mode) && sb.st_size ? -ENOMEM : 0;
			free(full);
			continue;
		}
		p = realloc(t->paths, t->fl.cap * sizeof(*p));
		if (!p) {
			t->fl.n--;
			free(full);
			err = -ENOMEM;
			break;
		}
		t->paths = p;
		p[t->fl.n - 1] = full;
	}
	closedir(d);
	return err;
}

int ezi_bench_target_open_path(ezfs_bench *b, struct ezi_bench_target *t,
			       const char *dir, uint32_t bs)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t i;

	memset(t, 0, sizeof(*t));
	if (fd < 0 || list_tree(t, fd, dir, 0)) {
		ezi_bench_log(b, EZFS_LOG_ERROR, "%s: cannot list the files",
			      dir);
		ezi_bench_target_close(t);
		return -EIO;
	}
	t->fds = malloc((t->fl.n + 1) * sizeof(*t->fds));
	t->buf = malloc(bs);
	t->bs = bs;
	if (!t->fds || !t->buf) {
		ezi_bench_target_close(t);
		return -ENOMEM;
	}
	for (i = 0; i < t->fl.n; i++)
		t->fds[i] = -1;
	return 0;
}

static ssize_t target_read(struct ezi_bench_target *t, size_t i, uint64_t off)
{
	if (t->inos)
		return ezfs_pread(t->inos[i], t->buf, t->bs, off);
	if (t->fds[i] < 0) {
		/* keep at most a few hundred descriptors */
		if (i >= 512 && t->fds[i - 512] >= 0) {
			close(t->fds[i - 512]);
			t->fds[i - 512] = -1;
		}
		t->fds[i] = open(t->paths[i], O_RDONLY | O_CLOEXEC);
		if (t->fds[i] < 0)
			return -errno;
	}
	return pread(t->fds[i], t->buf, t->bs, (off_t)off) < 0 ? -errno : 1;
}

/* (file, block) pairs in a fixed pseudo-random order. */
struct blk {
	uint32_t file;
	uint64_t off;
};

static struct blk *shuffled_blocks(const struct ezi_bench_files *fl,
				   uint32_t bs, unsigned seed, size_t *n)
{
	uint64_t x = seed * 2654435761u + 0x9e3779b97f4a7c15ull, tot = 0;
	struct blk *v;
	size_t i, k = 0;

	for (i = 0; i < fl->n; i++)
		tot += (fl->v[i].size + bs - 1) / bs;
	v = malloc((tot + 1) * sizeof(*v));
	if (!v)
		return NULL;
	for (i = 0; i < fl->n; i++) {
		uint64_t o;

		for (o = 0; o < fl->v[i].size; o += bs) {
			v[k].file = (uint32_t)i;
			v[k++].off = o;
		}
	}
	for (i = k; i > 1; i--) {
		size_t j;
		struct blk tmp;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		j = (size_t)(x % i);
		tmp = v[i - 1];
		v[i - 1] = v[j];
		v[j] = tmp;
	}
	*n = k;
	return v;
}

/*
 * The next readahead window of file i from off: at least window bytes,
 * grown to the end of the extent it ends in (so that every extent in it is
 * whole and ezfs_pread can hand them all to the workers at once), then
 * one ezfs_pread. Returns the bytes read or a negative errno.
 */
static ssize_t read_window(struct ezi_bench_target *t, size_t i, uint64_t off,
			   uint64_t window)
{
	uint64_t size = t->fl.v[i].size, end;
	struct ezfs_extent ext;
	ssize_t r;

	end = size - off > window ? off + window : size;
	if (end < size && !ezfs_map(t->inos[i], end - 1, &ext) &&
	    ext.la + ext.llen > end && ext.la + ext.llen - off <= 4 * window)
		end = ext.la + ext.llen < size ? ext.la + ext.llen : size;
	if (end - off > t->wcap) {
		uint8_t *nb = realloc(t->wbuf, end - off);

		if (!nb)
			return -ENOMEM;
		t->wbuf = nb;
		t->wcap = end - off;
	}
	r = ezfs_pread(t->inos[i], t->wbuf, end - off, off);
	return r >= 0 && (uint64_t)r != end - off ? -EIO : r;
}

/* seq through the window: the application still sees bs reads. */
static ssize_t seq_windowed(struct ezi_bench_target *t, uint64_t window,
			    double runtime, uint64_t *done, double t0)
{
	ssize_t r = 0;
	size_t i;

	for (i = 0; i < t->fl.n; i++) {
		uint64_t off, k;

		for (off = 0; off < t->fl.v[i].size; off += (uint64_t)r) {
			r = read_window(t, i, off, window);
			if (r <= 0)
				return r < 0 ? r : -EIO;
			for (k = 0; k < (uint64_t)r; k += t->bs)
				memcpy(t->buf, t->wbuf + k,
				       (uint64_t)r - k < t->bs
					       ? (size_t)((uint64_t)r - k)
					       : t->bs);
			*done += (uint64_t)r;
			if (ezi_bench_now() - t0 > runtime)
				return 0;
		}
	}
	return 0;
}

/* One run of one workload; bytes and seconds measured. */
int ezi_bench_run_workload(ezfs_bench *b, struct ezi_bench_target *t, int w,
			   uint64_t window, double runtime, uint64_t *bytes,
			   double *secs)
{
	uint64_t done = 0, cnt = 0;
	double t0 = ezi_bench_now();
	struct blk *v = NULL;
	size_t i, n = 0;
	ssize_t r = 0;

	if (w == 0 && t->inos && window) {
		r = seq_windowed(t, window, runtime, &done, t0);
	} else if (w == 0) {
		for (i = 0; i < t->fl.n && r >= 0; i++) {
			uint64_t off;

			for (off = 0; off < t->fl.v[i].size; off += t->bs) {
				r = target_read(t, i, off);
				if (r < 0)
					break;
				done += t->bs;
				if (!(++cnt & 63) &&
				    ezi_bench_now() - t0 > runtime)
					goto out;
			}
		}
	} else {
		v = shuffled_blocks(&t->fl, t->bs, b->p.seed, &n);
		if (!v)
			return -ENOMEM;
		if (w == 2)
			n = (size_t)(n * b->p.io_share + 0.5)
				    ? (size_t)(n * b->p.io_share + 0.5)
				    : 1;
		t0 = ezi_bench_now();
		for (i = 0; i < n; i++) {
			r = target_read(t, v[i].file, v[i].off);
			if (r < 0)
				break;
			done += t->bs;
			if (!(++cnt & 63) && ezi_bench_now() - t0 > runtime)
				break;
		}
	}
out:
	*secs = ezi_bench_now() - t0;
	*bytes = done;
	free(v);
	if (r < 0)
		ezi_bench_log(b, EZFS_LOG_ERROR, "read failed: %s",
			      ezfs_strerror((int)r));
	return r < 0 ? (int)r : 0;
}

/* The algorithm of the first compressed extent of the image (-1: none);
 * its name, or "image", in buf. */
int ezi_bench_image_alg(const char *image, char *buf, size_t size)
{
	struct ezfs_open_params p;
	struct ezi_bench_files fl = { 0 };
	struct ezfs_extent ext;
	ezfs_image *img;
	ezfs_inode *ino;
	int alg = -1;

	snprintf(buf, size, "image");
	ezfs_open_params_init(&p);
	if (ezfs_image_open(image, &p, &img))
		return -1;
	if (!ezi_bench_list_files(img, &fl) && fl.n &&
	    !ezfs_inode_get(img, fl.v[0].nid, &ino)) {
		if (!ezfs_map(ino, 0, &ext)) {
			snprintf(buf, size, "%s", ezfs_alg_name(ext.alg));
			if (ext.flags & EZFS_EXTENT_ENCODED)
				alg = ext.alg;
		}
		ezfs_inode_put(ino);
	}
	free(fl.v);
	ezfs_image_close(img);
	return alg;
}
