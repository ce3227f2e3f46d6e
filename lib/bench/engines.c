/* SPDX-License-Identifier: MIT */
/*
 * bench/engines.c - the engine bench (ezfs accel bench): per engine and
 * pcluster size, the raw
 * in-memory decode speed (ezfs_engine_bench_raw) beside the speed of the
 * same data read through ezfs: an image built by the library's builder at
 * that pcluster size, held in memory, read with ezfs_pread in large
 * sequential reads (no page cache, a fresh pcluster cache every round).
 * Both figures: the fastest round, in CPU time of the (only) decoding
 * thread, so that other load on the machine disturbs them less.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ezfs/build.h"
#include "ezfs/engine.h"
#include "bench/internal.h"

#define NSIZES EZFS_BENCH_ENGINE_SIZES
static const size_t sizes[NSIZES] = { 4096, 16384, 65536, 262144, 1048576 };

struct ezfs_bench_engines {
	struct ezfs_bench_engines_params p;
	uint8_t *data; /* the sample */
	size_t len, cap;
	const char *from; /* where it came from, for the header */
	unsigned iters;	  /* 0: calibrate */
	size_t rdsz;	  /* ezfs_pread size */
	const char *only; /* this engine only */
	char dir[64];	  /* temporary directory */
	ezfs_image *img;  /* the image while slurping */
	uint8_t *buf;	  /* one read */
};

/* ---- the sample ---- */

static int slurp_file(struct ezfs_bench_engines *b, uint64_t nid)
{
	ezfs_inode *ino;
	ssize_t n;
	int err;

	if (b->len == b->cap)
		return 0;
	err = ezfs_inode_get(b->img, nid, &ino);
	if (err)
		return err;
	n = ezfs_pread(ino, b->data + b->len, b->cap - b->len, 0);
	ezfs_inode_put(ino);
	if (n < 0)
		return (int)n;
	b->len += (size_t)n;
	return 0;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * Text: lines of the license texts of the system in a pseudo-random order
 * (real prose, no long-range repeats of whole files), or, without them,
 * pseudo-random words of a small vocabulary in lines of 40..80 bytes.
 */
static void gen_text(struct ezfs_bench_engines *b)
{
	static const char *const words[] = {
		"the",	    "of",     "and",	    "to",      "a",
		"in",	    "is",     "that",	    "for",     "it",
		"as",	    "with",   "be",	    "on",      "not",
		"this",	    "by",     "are",	    "or",      "from",
		"file",	    "system", "read",	    "block",   "data",
		"image",    "kernel", "compressed", "cluster", "license",
		"software", "copy",   "program",    "work",    "source",
		"terms",
	};
	static const char *const lic[] = {
		"Apache-2.0", "Artistic", "BSD",    "GFDL-1.3", "GPL-2",
		"GPL-3",      "LGPL-2.1", "LGPL-3", "MPL-2.0",
	};
	char *text = NULL, **lines = NULL;
	size_t tlen = 0, nl = 0, i;
	uint64_t s = 0x9e3779b97f4a7c15ull;
	FILE *f;

	for (i = 0; i < sizeof(lic) / sizeof(lic[0]); i++) {
		char path[128], *t;
		long n;

		snprintf(path, sizeof(path), "/usr/share/common-licenses/%s",
			 lic[i]);
		f = fopen(path, "rb");
		if (!f)
			continue;
		if (fseek(f, 0, SEEK_END) || (n = ftell(f)) <= 0 ||
		    fseek(f, 0, SEEK_SET) ||
		    !(t = realloc(text, tlen + (size_t)n + 1))) {
			fclose(f);
			continue;
		}
		text = t;
		tlen += fread(text + tlen, 1, (size_t)n, f);
		fclose(f);
	}
	if (text) {
		char *p = text, *nlp;

		text[tlen] = '\0';
		lines = malloc((tlen / 2 + 1) * sizeof(*lines));
		for (; lines && (nlp = strchr(p, '\n')); p = nlp + 1)
			lines[nl++] = p;
	}
	b->from = nl > 100 ? "shuffled lines of /usr/share/common-licenses"
			   : "generated words";
	while (b->len < b->cap) {
		const char *src;
		size_t n;
		char tmp[96];

		if (nl > 100) {
			src = lines[rnd(&s) % nl];
			n = (size_t)(strchr(src, '\n') - src) + 1;
		} else {
			size_t want = 40 + rnd(&s) % 40;

			for (n = 0; n < want;)
				n += (size_t)snprintf(
					tmp + n, sizeof(tmp) - n, "%s ",
					words[rnd(&s) % (sizeof(words) /
							 sizeof(words[0]))]);
			tmp[n - 1] = '\n';
			src = tmp;
		}
		if (n > b->cap - b->len)
			n = b->cap - b->len;
		memcpy(b->data + b->len, src, n);
		b->len += n;
	}
	free(lines);
	free(text);
}

/* ---- an image of the sample, in memory ---- */

static int write_sample(struct ezfs_bench_engines *b)
{
	const char *base = b->p.tmpdir ? b->p.tmpdir : getenv("TMPDIR");
	char path[128];
	int fd, err = 0;
	ssize_t n;

	snprintf(b->dir, sizeof(b->dir), "%s/ezfs-accel-XXXXXX",
		 base && *base && strlen(base) < 32 ? base : "/tmp");
	if (!mkdtemp(b->dir))
		return -errno;
	snprintf(path, sizeof(path), "%s/src", b->dir);
	if (mkdir(path, 0700))
		return -errno;
	snprintf(path, sizeof(path), "%s/src/sample", b->dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	n = write(fd, b->data, b->len);
	if (n != (ssize_t)b->len)
		err = n < 0 ? -errno : -EIO;
	close(fd);
	return err;
}

static void remove_sample(struct ezfs_bench_engines *b)
{
	char path[128];

	if (!b->dir[0])
		return;
	snprintf(path, sizeof(path), "%s/src/sample", b->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/src", b->dir);
	rmdir(path);
	rmdir(b->dir);
}

/* Build the sample with alg at pcluster size; *img = the image bytes. */
static int build_image(struct ezfs_bench_engines *b, int alg, size_t pcluster,
		       uint8_t **img, size_t *len)
{
	struct ezfs_build_params p;
	ezfs_builder *bl;
	char src[128], out[128];
	struct stat st;
	int fd, err;

	ezfs_build_params_init(&p);
	p.alg = alg;
	p.level = -1;
	p.pcluster_size = (uint32_t)pcluster;
	p.flags = EZFS_BUILD_NO_FSYNC;
	p.has_timestamp = 1;
	snprintf(src, sizeof(src), "%s/src", b->dir);
	snprintf(out, sizeof(out), "%s/img", b->dir);
	err = ezfs_builder_new(&p, &bl);
	if (err)
		return err;
	err = ezfs_builder_scan(bl, src);
	if (!err)
		err = ezfs_builder_write(bl, out);
	ezfs_builder_free(bl);
	if (err)
		return err;
	fd = open(out, O_RDONLY | O_CLOEXEC);
	err = fd < 0 || fstat(fd, &st) ? -errno : 0;
	*img = err ? NULL : malloc((size_t)st.st_size);
	if (!err && !*img)
		err = -ENOMEM;
	if (!err && read(fd, *img, (size_t)st.st_size) != st.st_size)
		err = -EIO;
	if (fd >= 0)
		close(fd);
	unlink(out);
	*len = err ? 0 : (size_t)st.st_size;
	return err;
}

/*
 * One round: open the in-memory image with only engine for its algorithm,
 * read /sample with ezfs_pread in b->rdsz pieces; check = compare with the
 * sample. Returns 0 or a negative errno, *ns the time of the reads.
 */
static int read_round(struct ezfs_bench_engines *b, const uint8_t *img,
		      size_t len, const char *spec, uint8_t *buf, int check,
		      uint64_t *ns)
{
	struct ezfs_open_params p;
	struct timespec t0, t1;
	ezfs_image *fs;
	ezfs_inode *ino = NULL;
	uint64_t nid, off = 0;
	ssize_t n = 0;
	int err;

	ezfs_open_params_init(&p);
	p.accel = spec;
	p.dispatch = "inline";
	err = ezfs_image_open_mem(img, len, &p, &fs);
	if (err)
		return err;
	err = ezfs_resolve(fs, "/sample", &nid);
	if (!err)
		err = ezfs_inode_get(fs, nid, &ino);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	while (!err && (n = ezfs_pread(ino, buf, b->rdsz, off)) > 0) {
		if (check && memcmp(buf, b->data + off, (size_t)n))
			err = -EUCLEAN;
		off += (uint64_t)n;
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
	*ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u +
	      (uint64_t)t1.tv_nsec - (uint64_t)t0.tv_nsec;
	if (!err && n < 0)
		err = (int)n;
	if (!err && off != b->len)
		err = -EUCLEAN;
	if (ino)
		ezfs_inode_put(ino);
	ezfs_image_close(fs);
	return err;
}

/* One cell: raw and through-ezfs MB/s of the engine at one size. */
static void bench_cell(struct ezfs_bench_engines *b,
		       struct ezfs_bench_engines_cell *c, const uint8_t *img,
		       size_t len)
{
	unsigned iters = b->iters, i;
	uint64_t ns, best = 0;
	char spec[64];
	int err;

	snprintf(spec, sizeof(spec), "%s=%s", ezfs_alg_name(c->alg), c->engine);
	err = read_round(b, img, len, spec, b->buf, 1, &ns);
	if (!err && !iters) /* about 0.2 s of reading */
		iters = ns ? (unsigned)(2e8 / ns) : 100;
	iters = iters < 1 ? 1 : iters > 200 ? 200 : iters;
	if (!err)
		err = ezfs_engine_bench_raw(c->engine, b->data, b->len,
					    c->pcluster, iters, &c->raw_mb_s,
					    NULL);
	for (i = 0; !err && i < iters; i++) {
		err = read_round(b, img, len, spec, b->buf, 0, &ns);
		if (!best || ns < best)
			best = ns;
	}
	c->err = err;
	c->thr_mb_s =
		!err && best ? (double)b->len / ((double)best / 1e9) / 1e6 : 0;
}

/* Every usable engine of alg, on images of each pcluster size. */
static void bench_alg(struct ezfs_bench_engines *b, int alg,
		      ezfs_bench_engines_fn fn, void *arg)
{
	struct ezfs_engine_info info;
	uint8_t *img[NSIZES] = { NULL };
	size_t len[NSIZES] = { 0 };
	int err[NSIZES];
	unsigned i, k;

	for (k = 0; k < NSIZES; k++)
		err[k] = -EAGAIN; /* built on first use */
	for (i = 0; i < ezfs_engine_count(); i++) {
		if (ezfs_engine_get_info(i, &info) || info.alg != alg ||
		    info.probe || (info.flags & EZFS_ENGINE_TEST) ||
		    (b->only && strcmp(b->only, info.name)))
			continue;
		for (k = 0; k < NSIZES; k++) {
			struct ezfs_bench_engines_cell c = {
				.engine = info.name,
				.alg = alg,
				.index = k,
				.pcluster = sizes[k],
			};

			if (err[k] == -EAGAIN)
				err[k] = build_image(b, alg, sizes[k], &img[k],
						     &len[k]);
			if (err[k])
				c.err = err[k];
			else
				bench_cell(b, &c, img[k], len[k]);
			fn(arg, &c);
		}
	}
	for (k = 0; k < NSIZES; k++)
		free(img[k]);
}

/* The sample from the image's regular files, in directory order, until
 * it is full. */
static int slurp(struct ezfs_bench_engines *b)
{
	struct ezi_bench_files fl = { 0 };
	size_t i;
	int err = ezi_bench_list_files(b->img, &fl);

	for (i = 0; !err && i < fl.n && b->len < b->cap; i++)
		err = slurp_file(b, fl.v[i].nid);
	free(fl.v);
	return err;
}

void ezfs_bench_engines_params_init(struct ezfs_bench_engines_params *p)
{
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
	p->sample_bytes = 4u << 20;
	p->read_bytes = 4u << 20;
}

void ezfs_bench_engines_free(ezfs_bench_engines *b)
{
	if (!b)
		return;
	remove_sample(b);
	free(b->buf);
	free(b->data);
	free(b);
}

int ezfs_bench_engines_new(const struct ezfs_bench_engines_params *p,
			   ezfs_bench_engines **out)
{
	struct ezfs_bench_engines *b;
	int err = 0;

	*out = NULL;
	if (!p || p->size < sizeof(*p) || !p->sample_bytes || !p->read_bytes)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->p = *p;
	b->iters = p->iters;
	b->only = p->only;
	b->cap = p->sample_bytes;
	b->rdsz = p->read_bytes;
	b->data = malloc(b->cap);
	b->buf = malloc(b->rdsz);
	if (!b->data || !b->buf) {
		ezfs_bench_engines_free(b);
		return -ENOMEM;
	}
	if (p->image) {
		b->img = p->image;
		err = slurp(b);
		b->img = NULL;
		if (!err && !b->len)
			err = -ENODATA;
		b->from = "the image's files";
	} else {
		gen_text(b);
	}
	if (!err) {
		err = write_sample(b);
		if (err && p->log) {
			char msg[160];

			snprintf(msg, sizeof(msg), "temporary directory %s: %s",
				 b->dir, strerror(-err));
			p->log(p->log_arg, EZFS_LOG_ERROR, msg);
		}
	}
	if (err) {
		ezfs_bench_engines_free(b);
		return err;
	}
	*out = b;
	return 0;
}

size_t ezfs_bench_engines_sample(const ezfs_bench_engines *b, const char **from)
{
	if (from)
		*from = b->from;
	return b->len;
}

size_t ezfs_bench_engines_size(unsigned index)
{
	return index < NSIZES ? sizes[index] : 0;
}

int ezfs_bench_engines_run(ezfs_bench_engines *b, ezfs_bench_engines_fn fn,
			   void *arg)
{
	int alg;

	for (alg = 0; alg < EZFS_ALG_MAX; alg++)
		bench_alg(b, alg, fn, arg);
	return 0;
}
