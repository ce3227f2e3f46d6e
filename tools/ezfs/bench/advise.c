/* SPDX-License-Identifier: MIT */
/*
 * bench/advise.c - ezfs bench advise: pick algorithm, level and pcluster
 * size for the storage the image will be read from.
 *
 * The candidates come from the data: a quick pass builds the sample at
 * 64 KiB with a set of algorithms and levels and keeps those on the front
 * of (ratio, decode rate); each of them is then built at every pcluster
 * size. Every image is measured here (size, build rate, the library's
 * decode rate of a sequential read, its extents), and a model turns the
 * figures into read times on the target storage (docs/bench.md).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/fs.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "../common.h"

#define MIB 1048576.0
/* The smallest request a sequential reader makes: the readahead window
 * of the kernel's default (128 KiB) and of ezfs mount's decode-ahead. */
#define SEQ_REQUEST (128.0 * 1024)
/* An axis on which every candidate is within 10% counts for little in
 * the balanced score. */
#define MIN_SPREAD 1.1
#define MAX_CANDS  64
#define MAX_QUICK  16

struct storage {
	double rate; /* bytes per second */
	double lat;  /* seconds per request */
	int rough;   /* measured from under 64 MiB */
	char what[400];
};

static const struct profile {
	const char *name;
	double mb_s, lat_s;
	const char *what;
} profiles[] = {
	{ "cloud-hdd", 60, 8e-3,
	  "a throughput-class cloud HDD volume (st1, pd-standard)" },
	{ "cloud-ssd", 250, 1e-3, "a general-purpose cloud SSD volume (gp3)" },
	{ "nvme", 3000, 80e-6, "a local NVMe SSD" },
	{ "emmc", 250, 400e-6, "eMMC 5.1 flash of a phone or board" },
	{ "registry-20ms", 100, 20e-3,
	  "an OCI registry or HTTP server 20 ms away, 100 MB/s per stream" },
};

static char big_path[4096];
static uint64_t big_size;

static int find_big(const char *path, const struct stat *sb, int type,
		    struct FTW *ftw)
{
	(void)ftw;
	if (type == FTW_F && S_ISREG(sb->st_mode) &&
	    (uint64_t)sb->st_size > big_size) {
		big_size = (uint64_t)sb->st_size;
		snprintf(big_path, sizeof(big_path), "%s", path);
	}
	return 0;
}

/*
 * Measure where: a file, a block device, or the largest file under a
 * directory. Sequential 1 MiB reads (up to 256 MiB or 3 s) give the rate,
 * random 4 KiB reads (up to 256 or 1 s) the latency: O_DIRECT where the
 * filesystem has it, else after dropping the file's cached pages.
 */
static int measure_storage(const char *where, struct storage *st)
{
	const size_t chunk = 1 << 20;
	uint64_t limit = 256ull << 20, done = 0, size;
	double t0, t, lat[256];
	void *buf = NULL;
	struct stat sb;
	int fd, direct = 1;
	size_t nlat = 0;

	big_size = 0;
	big_path[0] = '\0';
	if (stat(where, &sb))
		return -errno;
	if (S_ISDIR(sb.st_mode)) {
		nftw(where, find_big, 32, FTW_PHYS);
	} else if (S_ISREG(sb.st_mode) || S_ISBLK(sb.st_mode)) {
		snprintf(big_path, sizeof(big_path), "%s", where);
		big_size = (uint64_t)sb.st_size;
	} else {
		return -EINVAL;
	}
	if (!big_path[0])
		return -ENOENT;
	fd = open(big_path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0) {
		direct = 0;
		fd = open(big_path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
	}
	if (S_ISBLK(sb.st_mode) && ioctl(fd, BLKGETSIZE64, &big_size))
		big_size = 0;
	size = big_size;
	if (size < 4096 || posix_memalign(&buf, 4096, chunk)) {
		close(fd);
		return size < 4096 ? -ENODATA : -ENOMEM;
	}
	if (!direct)
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	t0 = bench_now();
	while (done < limit && bench_now() - t0 < 3) {
		ssize_t n = read(fd, buf, chunk);

		if (n < 0 && direct && errno == EINVAL) {
			/* a filesystem without O_DIRECT (tmpfs...) */
			direct = 0;
			fcntl(fd, F_SETFL, 0);
			continue;
		}
		if (n <= 0)
			break;
		done += (uint64_t)n;
	}
	t = bench_now() - t0;
	if (!direct)
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	srand(1);
	t0 = bench_now();
	while (nlat < 256 && bench_now() - t0 < 1) {
		uint64_t blk = ((uint64_t)rand() << 16 ^ (uint64_t)rand()) %
			       (size / 4096);
		double a = bench_now();

		if (pread(fd, buf, 4096, (off_t)(blk * 4096)) != 4096)
			break;
		lat[nlat++] = bench_now() - a;
	}
	close(fd);
	free(buf);
	if (!done || t <= 0 || !nlat)
		return -EIO;
	st->rate = done / t;
	st->lat = bench_median(lat, nlat);
	snprintf(st->what, sizeof(st->what),
		 "measured on %.200s: %.0f MiB in %.2f s, %zu random 4 KiB "
		 "reads%s",
		 big_path, done / MIB, t, nlat,
		 direct ? " (O_DIRECT)"
			: " (buffered: the page cache may have served some)");
	st->rough = done < (64ull << 20);
	return 0;
}

/* The storage: a profile or a measurement, then the explicit figures. */
static int get_storage(const struct bench_opts *o, const struct bench_src *s,
		       struct storage *st)
{
	const char *where = o->storage ? o->storage : s->source;
	size_t i;
	int err = 0;

	memset(st, 0, sizeof(*st));
	for (i = 0; o->storage && i < sizeof(profiles) / sizeof(profiles[0]);
	     i++) {
		if (strcmp(o->storage, profiles[i].name))
			continue;
		st->rate = profiles[i].mb_s * 1e6;
		st->lat = profiles[i].lat_s;
		snprintf(st->what, sizeof(st->what), "profile %s: %s",
			 profiles[i].name, profiles[i].what);
		where = NULL;
		break;
	}
	/* both figures given: nothing to measure */
	if (where && !(o->storage_rate > 0 && o->storage_lat >= 0)) {
		err = measure_storage(where, st);
		if (err) {
			cli_error(BENCH_CMD, "--storage %s: %s", where,
				  err == -ENOENT ? "no file to measure"
				  : err == -EINVAL
					  ? "not a file, device, directory "
					    "or profile (cloud-hdd, "
					    "cloud-ssd, nvme, emmc, "
					    "registry-20ms)"
					  : strerror(-err));
			return err;
		}
	} else if (where) {
		snprintf(st->what, sizeof(st->what), "as given");
	}
	if (!o->quiet && st->rough && o->storage_rate <= 0)
		printf("storage: under 64 MiB read, the rate is rough\n");
	if (o->storage_rate > 0) {
		st->rate = o->storage_rate * 1e6;
		snprintf(st->what + strlen(st->what),
			 sizeof(st->what) - strlen(st->what),
			 "; rate from --storage-rate");
	}
	if (o->storage_lat >= 0) {
		st->lat = o->storage_lat;
		snprintf(st->what + strlen(st->what),
			 sizeof(st->what) - strlen(st->what),
			 "; latency from --storage-latency");
	}
	return 0;
}

struct cand {
	struct bench_alg a;
	uint32_t cluster;
	double ratio, decode, mkfs; /* -, MiB/s, MB/s */
	/* the image's extents, weighted by the data they hold: the mean
	 * bytes a random 4 KiB read fetches and decodes; the mean size of a
	 * physical extent a sequential read fetches */
	double rand_fetch, rand_decode, seq_extent;
	/* the model, per MiB of file data (seconds) */
	double t_storage, t_requests, t_decode, seq_s, rand_s;
	double score;
	int front;
};

/* Extent figures of an image (struct cand's rand_* and seq_extent). */
static void extent_stats(const char *path, struct cand *c)
{
	struct ezfs_open_params p;
	struct bench_files fl = { 0 };
	double data = 0, fetch = 0, dec = 0, phys = 0, nphys = 0;
	ezfs_image *img;
	size_t i;

	c->rand_fetch = c->rand_decode = 0;
	c->seq_extent = c->cluster;
	ezfs_open_params_init(&p);
	if (ezfs_image_open(path, &p, &img))
		return;
	if (bench_list_files(img, &fl)) {
		ezfs_image_close(img);
		return;
	}
	for (i = 0; i < fl.n; i++) {
		struct ezfs_extent e;
		ezfs_inode *ino;
		uint64_t la = 0;

		if (ezfs_inode_get(img, fl.v[i].nid, &ino))
			continue;
		while (la < fl.v[i].size && !ezfs_map(ino, la, &e) &&
		       e.la + e.llen > la) {
			double l = (double)e.llen;

			la = e.la + e.llen;
			if (!(e.flags & EZFS_EXTENT_MAPPED))
				continue;
			data += l;
			if (e.flags & EZFS_EXTENT_ENCODED) {
				fetch += l * (double)e.plen;
				dec += l * l;
			} else {
				/* plain data: the 4 KiB block itself */
				fetch += l * 4096;
			}
			phys += (double)e.plen;
			nphys++;
		}
		ezfs_inode_put(ino);
	}
	free(fl.v);
	ezfs_image_close(img);
	if (data > 0) {
		c->rand_fetch = fetch / data;
		c->rand_decode = dec / data;
	}
	if (nphys > 0)
		c->seq_extent = phys / nphys;
}

static int measure_cand(const struct bench_opts *o, const struct bench_src *s,
			struct cand *c, double runtime)
{
	uint64_t ib = 0, bytes = 0;
	double bt = 0, secs = 0, total, best;
	char *img = NULL;
	int err, pass;

	err = bench_build(s, &c->a, c->cluster, &img, &ib, &bt);
	/* the best of at least three passes, each through a fresh instance
	 * (its decoded cache cold, the image file in the page cache), for
	 * up to runtime seconds in all: the decode rate with the least
	 * interference from the rest of the machine */
	for (pass = 0, total = 0, best = 0;
	     !err && (pass < 3 || total < runtime) && pass < 1000; pass++) {
		err = bench_lib_seq(img, 65536, runtime,
				    o->disp_given ? &o->disp[0] : NULL, &bytes,
				    &secs);
		total += secs;
		if (!err && secs > 0 && bytes / secs > best)
			best = bytes / secs;
	}
	if (!err)
		extent_stats(img, c);
	if (img)
		unlink(img);
	free(img);
	if (err)
		return err;
	c->ratio = s->input_blocks
			   ? (double)((ib + 4095) / 4096) / s->input_blocks
			   : 1;
	c->mkfs = bt > 0 ? s->input_bytes / 1e6 / bt : 0;
	c->decode = best > 0 ? best / MIB : 1e9;
	return 0;
}

/*
 * The model, per MiB of file data: a sequential read fetches ratio MiB
 * from the storage, in one request per physical extent but at least
 * SEQ_REQUEST bytes each, then decodes; a cold random 4 KiB read waits
 * for one request, fetches its extent and decodes it.
 */
static void model(struct cand *c, const struct storage *st)
{
	double req = c->seq_extent > SEQ_REQUEST ? c->seq_extent : SEQ_REQUEST;

	c->t_storage = c->ratio * MIB / st->rate;
	c->t_requests = c->ratio * MIB / req * st->lat;
	c->t_decode = 1 / c->decode;
	c->seq_s = c->t_storage + c->t_requests + c->t_decode;
	c->rand_s = st->lat + c->rand_fetch / st->rate +
		    c->rand_decode / (c->decode * MIB);
}

static int dominates(const struct cand *a, const struct cand *b)
{
	return a->ratio <= b->ratio && a->seq_s <= b->seq_s &&
	       a->rand_s <= b->rand_s &&
	       (a->ratio < b->ratio || a->seq_s < b->seq_s ||
		a->rand_s < b->rand_s);
}

/* log(x / best) / the axis' log spread (at least log MIN_SPREAD): 0 for
 * the best, 1 for the worst of the table. */
static double axis(double x, double best, double worst)
{
	double spread = log(worst / best);

	if (spread < log(MIN_SPREAD))
		spread = log(MIN_SPREAD);
	return log(x / best) / spread;
}

static void score_all(struct cand *c, size_t n, const char *goal)
{
	double br = c[0].ratio, bs = c[0].seq_s, bq = c[0].rand_s;
	double wr = br, ws = bs, wq = bq;
	size_t i, j;

	for (i = 1; i < n; i++) {
		br = fmin(br, c[i].ratio), wr = fmax(wr, c[i].ratio);
		bs = fmin(bs, c[i].seq_s), ws = fmax(ws, c[i].seq_s);
		bq = fmin(bq, c[i].rand_s), wq = fmax(wq, c[i].rand_s);
	}
	for (i = 0; i < n; i++) {
		c[i].front = 1;
		for (j = 0; j < n && c[i].front; j++)
			if (j != i && dominates(&c[j], &c[i]))
				c[i].front = 0;
		if (!strcmp(goal, "size"))
			c[i].score = c[i].ratio / br;
		else if (!strcmp(goal, "seq"))
			c[i].score = c[i].seq_s / bs;
		else if (!strcmp(goal, "random"))
			c[i].score = c[i].rand_s / bq;
		else
			c[i].score = (axis(c[i].ratio, br, wr) +
				      axis(c[i].seq_s, bs, ws) +
				      axis(c[i].rand_s, bq, wq)) /
				     3;
	}
}

/* The lowest score; ties: the smaller image, then the faster read. */
static size_t pick_best(const struct cand *c, size_t n)
{
	size_t i, p = 0;

	for (i = 1; i < n; i++) {
		if (c[i].score < c[p].score - 1e-12 ||
		    (fabs(c[i].score - c[p].score) <= 1e-12 &&
		     (c[i].ratio < c[p].ratio ||
		      (c[i].ratio == c[p].ratio && c[i].seq_s < c[p].seq_s))))
			p = i;
	}
	return p;
}

/* s as one shell word into buf: as it is when nothing in it is special to
 * the shell, else in single quotes; "./" before a leading '-'. */
static void shell_word(const char *s, char *buf, size_t size)
{
	const char *p;
	size_t o = 0;
	int plain = *s != '\0';

	for (p = s; *p && plain; p++)
		plain = isalnum((unsigned char)*p) || strchr("_./,:+@%=-", *p);
#define PUT(ch)                                                                \
	do {                                                                   \
		if (o + 1 < size)                                              \
			buf[o++] = (ch);                                       \
	} while (0)
	if (*s == '-') {
		PUT('.');
		PUT('/');
	}
	if (!plain)
		PUT('\'');
	for (p = s; *p; p++) {
		if (!plain && *p == '\'') {
			PUT('\'');
			PUT('\\');
			PUT('\'');
			PUT('\'');
		} else {
			PUT(*p);
		}
	}
	if (!plain)
		PUT('\'');
#undef PUT
	buf[o] = '\0';
}

/*
 * The pick as a command to paste: ezfs mkfs -z ALG,LEVEL -C BYTES IMAGE
 * SOURCE. IMAGE is the last name of source plus ".erofs" in the current
 * directory (OUT.erofs where it has none); SOURCE as given. ezfs mkfs
 * takes a directory: for a file source DIR is left for the user to fill.
 * Returns whether SOURCE is a directory.
 */
static int mkfs_command(const struct cand *c, const char *source, char *cmd,
			size_t size)
{
	char name[256], img[272], w1[600], w2[8200];
	const char *base;
	size_t len = strlen(source);
	struct stat sb;
	int is_dir = !stat(source, &sb) && S_ISDIR(sb.st_mode);

	while (len > 1 && source[len - 1] == '/')
		len--;
	base = memrchr(source, '/', len);
	base = base ? base + 1 : source;
	len -= (size_t)(base - source);
	snprintf(name, sizeof(name), "%.*s", (int)len, base);
	if (!*name || !strcmp(name, ".") || !strcmp(name, "..") ||
	    !strcmp(name, "/") || len >= sizeof(name))
		snprintf(name, sizeof(name), "OUT");
	snprintf(img, sizeof(img), "%s.erofs", name);
	shell_word(img, w1, sizeof(w1));
	if (is_dir)
		shell_word(source, w2, sizeof(w2));
	else
		snprintf(w2, sizeof(w2), "DIR");
	if (c->a.level >= 0)
		snprintf(cmd, size, "ezfs mkfs -z %s,%d -C %u %s %s", c->a.name,
			 c->a.level, (unsigned)c->cluster, w1, w2);
	else
		snprintf(cmd, size, "ezfs mkfs -z %s -C %u %s %s", c->a.name,
			 (unsigned)c->cluster, w1, w2);
	return is_dir;
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void json_cand(FILE *f, const struct cand *c, int pick)
{
	fprintf(f, "{\"alg\": ");
	json_str(f, c->a.name);
	fprintf(f,
		", \"level\": %d, \"cluster\": %u, \"ratio\": %.6f, "
		"\"decode_mib_s\": %.2f, \"mkfs_mb_s\": %.2f, "
		"\"rand_fetch_bytes\": %.0f, \"rand_decode_bytes\": %.0f, "
		"\"seq_extent_bytes\": %.0f, \"seq_storage_ms_per_mib\": %.4f, "
		"\"seq_requests_ms_per_mib\": %.4f, "
		"\"seq_decode_ms_per_mib\": %.4f, \"seq_mib_s\": %.2f, "
		"\"rand4k_us\": %.2f, \"score\": %.6f, \"front\": %s, "
		"\"pick\": %s}",
		c->a.level, (unsigned)c->cluster, c->ratio, c->decode, c->mkfs,
		c->rand_fetch, c->rand_decode, c->seq_extent,
		c->t_storage * 1e3, c->t_requests * 1e3, c->t_decode * 1e3,
		1 / c->seq_s, c->rand_s * 1e6, c->score,
		c->front ? "true" : "false", pick ? "true" : "false");
}

static int write_json(const char *path, const struct bench_opts *o,
		      const struct storage *st, const struct cand *c, size_t n,
		      size_t pick, const char *cmd)
{
	FILE *f = fopen(path, "w");
	size_t i;

	if (!f) {
		cli_error(BENCH_CMD, "%s: %s", path, strerror(errno));
		return -errno;
	}
	fprintf(f, "{\"mode\": \"advise\", \"goal\": ");
	json_str(f, o->goal);
	fprintf(f,
		", \"storage\": {\"rate_mb_s\": %.3f, \"latency_us\": %.3f, "
		"\"source\": ",
		st->rate / 1e6, st->lat * 1e6);
	json_str(f, st->what);
	fprintf(f,
		"}, \"model\": {\"seq_request_min_bytes\": %.0f, "
		"\"balanced_min_spread\": %.2f},\n \"candidates\": [\n",
		SEQ_REQUEST, MIN_SPREAD);
	for (i = 0; i < n; i++) {
		fputs("  ", f);
		json_cand(f, &c[i], i == pick);
		fputs(i + 1 < n ? ",\n" : "\n", f);
	}
	fprintf(f, " ],\n \"pick\": ");
	json_cand(f, &c[pick], 1);
	fprintf(f, ",\n \"command\": ");
	json_str(f, cmd);
	fprintf(f, "}\n");
	if (fclose(f)) {
		cli_error(BENCH_CMD, "%s: %s", path, strerror(errno));
		return -EIO;
	}
	return 0;
}

static void label(const struct cand *c, char *buf, size_t size)
{
	char cl[16];

	bench_alg_label(&c->a, buf, size);
	snprintf(buf + strlen(buf), size - strlen(buf), " %s",
		 bench_fmt_cluster(c->cluster, cl, sizeof(cl)));
}

static void add_record(struct bench_results *res, const struct bench_src *s,
		       const struct cand *c)
{
	struct bench_rec rec;

	bench_rec_init(&rec, "advise");
	snprintf(rec.workload, sizeof(rec.workload), "candidate");
	snprintf(rec.target, sizeof(rec.target), "lib");
	snprintf(rec.alg, sizeof(rec.alg), "%.15s", c->a.name);
	snprintf(rec.engine, sizeof(rec.engine), "%.23s",
		 bench_engine_label(NULL));
	rec.level = c->a.level;
	rec.cluster = c->cluster;
	rec.repeat = 1;
	rec.mib_s = c->decode;
	rec.bytes = s->input_bytes;
	rec.seconds = c->seq_s;
	rec.input_blocks = s->input_blocks;
	rec.image_blocks = (uint64_t)(c->ratio * s->input_blocks + 0.5);
	rec.ratio = c->ratio;
	rec.mkfs_mb_s = c->mkfs;
	rec.avg_us = c->rand_s * 1e6;
	bench_add(res, &rec);
}

/* The quick pass's set when --levels is not given: every algorithm at
 * the levels a build finishes in reasonable time (zstd 19+ and lzma 9
 * build at under 1 MB/s on a core; give them with --levels). */
static const char *const quick_set[] = {
	"lz4",	  "lz4hc:9", "lz4hc:12", "deflate:6", "deflate:9",
	"zstd:3", "zstd:9",  "zstd:15",	 "lzma:6",
};
static const uint32_t default_clusters[] = { 4096, 16384, 65536, 262144,
					     1048576 };
#define QUICK_CLUSTER 65536
#define QUICK_MARGIN  1.25

/* Quick pass: the levels at QUICK_CLUSTER; keeps in q[] those on the
 * front of (smaller ratio, higher decode rate), where only a level with a
 * ratio as good and a decode rate QUICK_MARGIN times as high dominates. */
static int quick_pass(const struct bench_opts *o, const struct bench_src *s,
		      struct cand *q, size_t *nq, struct bench_prog *pg)
{
	struct cand all[MAX_QUICK];
	size_t n = 0, i, j, k = 0;
	size_t nset = o->levels_given
			      ? (size_t)o->nlevels
			      : sizeof(quick_set) / sizeof(quick_set[0]);
	char lab[40];
	int err = 0;

	for (i = 0; i < nset && i < MAX_QUICK && !err; i++) {
		struct cand *c = &all[n];

		memset(c, 0, sizeof(*c));
		if (o->levels_given)
			c->a = o->levels[i];
		else
			bench_parse_alg(quick_set[i], &c->a);
		c->cluster = QUICK_CLUSTER;
		label(c, lab, sizeof(lab));
		bench_prog_cell(pg, lab);
		err = measure_cand(o, s, c, fmin(o->runtime, 1));
		bench_prog_done(pg);
		if (!err)
			n++;
	}
	if (err)
		return err;
	for (i = 0; i < n; i++) {
		int dominated = 0;

		/* dominated only by a clear margin in decode rate: the
		 * quick pass's short runs are noisy on a busy machine, and a
		 * level dropped here is never measured again */
		for (j = 0; j < n && !dominated; j++)
			dominated =
				j != i && all[j].ratio <= all[i].ratio &&
				all[j].decode >= QUICK_MARGIN * all[i].decode;
		if (!dominated)
			q[k++] = all[i];
	}
	if (!o->quiet) {
		printf("quick pass at %uK: %zu levels; on the front of ratio "
		       "and decode rate:",
		       QUICK_CLUSTER / 1024, n);
		for (i = 0; i < k; i++) {
			bench_alg_label(&q[i].a, lab, sizeof(lab));
			printf(" %s (%.3f, %.0f MiB/s)", lab, q[i].ratio,
			       q[i].decode);
		}
		putchar('\n');
	}
	*nq = k;
	return 0;
}

static void print_table(const struct cand *c, size_t n, size_t pick,
			const char *goal)
{
	char lab[40];
	size_t i;

	printf("\nper MiB of file data: seq = storage + requests + decode; "
	       "rand4K = one cold 4 KiB read\n");
	if (!strcmp(goal, "balanced"))
		printf("score (goal balanced): the mean over ratio, seq and "
		       "rand4K of log(x / best) / log(worst / best),\n"
		       "0 = the best on every axis; lowest wins\n\n");
	else
		printf("score (goal %s): %s / the best %s; 1.00 = the best; "
		       "lowest wins\n\n",
		       goal,
		       !strcmp(goal, "size")  ? "ratio"
		       : !strcmp(goal, "seq") ? "sequential time"
					      : "random read time",
		       !strcmp(goal, "size")  ? "ratio"
		       : !strcmp(goal, "seq") ? "sequential time"
					      : "random read time");
	printf("%-15s %7s %9s %9s %8s %8s %8s %9s %10s %6s\n", "candidate",
	       "ratio", "decode", "mkfs", "storage", "requests", "decode",
	       "seq", "rand4K", "score");
	printf("%-15s %7s %9s %9s %8s %8s %8s %9s %10s %6s\n", "", "", "MiB/s",
	       "MB/s", "ms", "ms", "ms", "MiB/s", "us", "");
	for (i = 0; i < n; i++) {
		label(&c[i], lab, sizeof(lab));
		printf("%-15s %7.4f %9.1f %9.1f %8.2f %8.2f %8.2f %9.1f "
		       "%10.1f %6.3f %s%s\n",
		       lab, c[i].ratio, c[i].decode, c[i].mkfs,
		       c[i].t_storage * 1e3, c[i].t_requests * 1e3,
		       c[i].t_decode * 1e3, 1 / c[i].seq_s, c[i].rand_s * 1e6,
		       c[i].score, c[i].front ? "F" : " ",
		       i == pick ? " <-" : "");
	}
	printf("(F: on the Pareto front of ratio, seq and rand4K)\n");
}

/* What each front member gives up against the best of each axis. */
static void print_front(const struct cand *c, size_t n)
{
	double br = c[0].ratio, bs = c[0].seq_s, bq = c[0].rand_s;
	char lab[40];
	size_t i;

	for (i = 1; i < n; i++) {
		br = fmin(br, c[i].ratio);
		bs = fmin(bs, c[i].seq_s);
		bq = fmin(bq, c[i].rand_s);
	}
	printf("\nthe front: what each choice gives up against the best of "
	       "each axis\n");
	for (i = 0; i < n; i++) {
		if (!c[i].front)
			continue;
		label(&c[i], lab, sizeof(lab));
		printf("  %-15s size +%.1f%%, seq time +%.1f%%, rand4K time "
		       "+%.1f%%\n",
		       lab, (c[i].ratio / br - 1) * 100,
		       (c[i].seq_s / bs - 1) * 100,
		       (c[i].rand_s / bq - 1) * 100);
	}
}

/* Why: the pick's figures and its largest sequential term, stated from
 * the same numbers the score used. */
static void print_reasons(const struct cand *c, size_t n, size_t pick,
			  const char *goal)
{
	const struct cand *p = &c[pick];
	double br = c[0].ratio, bs = c[0].seq_s, bq = c[0].rand_s;
	const char *dom;
	size_t i;

	for (i = 1; i < n; i++) {
		br = fmin(br, c[i].ratio);
		bs = fmin(bs, c[i].seq_s);
		bq = fmin(bq, c[i].rand_s);
	}
	printf("  because: goal %s, the lowest score of the table (%.3f)\n",
	       goal, p->score);
	printf("  ratio %.4f (best %.4f), sequential %.1f MiB/s (best %.1f), "
	       "random 4K %.0f us (best %.0f)\n",
	       p->ratio, br, 1 / p->seq_s, 1 / bs, p->rand_s * 1e6, bq * 1e6);
	if (p->t_storage >= p->t_requests && p->t_storage >= p->t_decode)
		dom = "moving the image's bytes: a smaller image reads "
		      "faster here";
	else if (p->t_requests >= p->t_decode)
		dom = "the storage's latency per request: larger pclusters "
		      "need fewer requests";
	else
		dom = "decoding: a faster decoder reads faster here";
	printf("  its sequential read is %.2f ms per MiB: %.2f storage, %.2f "
	       "requests, %.2f decode; most of it is %s\n",
	       p->seq_s * 1e3, p->t_storage * 1e3, p->t_requests * 1e3,
	       p->t_decode * 1e3, dom);
}

int bench_advise(const struct bench_opts *o, const struct bench_src *s,
		 struct bench_results *res)
{
	struct cand q[MAX_QUICK], *c;
	size_t nq = 0, n = 0, i, j, pick, ncl;
	const uint32_t *cl;
	struct bench_prog pg;
	struct storage st;
	char lab[40], cmd[9400];
	int err, is_dir;

	if (s->is_image) {
		cli_error(BENCH_CMD, "advise needs the source tree, not an "
				     "image");
		return -EINVAL;
	}
	err = get_storage(o, s, &st);
	if (err)
		return err;
	if (!o->quiet)
		printf("storage: %.1f MB/s, %.0f us per request (%s)\n",
		       st.rate / 1e6, st.lat * 1e6, st.what);
	cl = o->clusters_given ? o->clusters : default_clusters;
	ncl = o->clusters_given
		      ? (size_t)o->nclusters
		      : sizeof(default_clusters) / sizeof(default_clusters[0]);
	c = calloc(MAX_CANDS, sizeof(*c));
	if (!c)
		return -ENOMEM;
	bench_prog_init(
		&pg, o->quiet || !isatty(2),
		(unsigned)((o->levels_given ? (size_t)o->nlevels
					    : sizeof(quick_set) /
						      sizeof(quick_set[0])) +
			   3 * ncl));
	err = quick_pass(o, s, q, &nq, &pg);
	pg.total = pg.done + (unsigned)(nq * ncl);
	for (i = 0; i < nq && !err; i++) {
		for (j = 0; j < ncl && !err && n < MAX_CANDS; j++) {
			struct cand *x = &c[n];

			*x = q[i];
			if (cl[j] != QUICK_CLUSTER) {
				x->cluster = cl[j];
				label(x, lab, sizeof(lab));
				bench_prog_cell(&pg, lab);
				err = measure_cand(o, s, x, o->runtime);
				bench_prog_done(&pg);
			}
			if (!err)
				n++;
		}
	}
	bench_prog_end(&pg);
	if (err || !n) {
		free(c);
		return err ? err : -ENOENT;
	}
	for (i = 0; i < n; i++)
		model(&c[i], &st);
	score_all(c, n, o->goal);
	pick = pick_best(c, n);
	print_table(c, n, pick, o->goal);
	print_front(c, n);
	for (i = 0; i < n; i++)
		add_record(res, s, &c[i]);
	is_dir = mkfs_command(&c[pick], s->source, cmd, sizeof(cmd));
	printf("\nrecommended for goal '%s': %s\n", o->goal, cmd);
	if (!is_dir)
		printf("  (SOURCE is a file; ezfs mkfs takes a directory: "
		       "DIR = the directory to put in the image)\n");
	print_reasons(c, n, pick, o->goal);
	if (o->json)
		err = write_json(o->json, o, &st, c, n, pick, cmd);
	free(c);
	return err;
}
