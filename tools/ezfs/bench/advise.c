/* SPDX-License-Identifier: MIT */
/* bench/advise.c - ezfs bench advise: pick algorithm, level, cluster size. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "../common.h"

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

/* Storage read rate in MiB/s from the largest file under source. */
static double storage_rate(const char *source, int quiet, int *direct)
{
	const size_t chunk = 1 << 20;
	uint64_t limit = 256ull << 20, done = 0;
	void *buf = NULL;
	double t0, t;
	struct stat sb;
	int fd;

	big_size = 0;
	big_path[0] = '\0';
	if (!stat(source, &sb) && S_ISREG(sb.st_mode)) {
		snprintf(big_path, sizeof(big_path), "%s", source);
		big_size = (uint64_t)sb.st_size;
	} else {
		nftw(source, find_big, 32, FTW_PHYS);
	}
	if (!big_path[0])
		return 0;
	*direct = 1;
	fd = open(big_path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0) {
		*direct = 0;
		fd = open(big_path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return 0;
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	}
	if (posix_memalign(&buf, 4096, chunk)) {
		close(fd);
		return 0;
	}
	t0 = bench_now();
	while (done < limit && bench_now() - t0 < 5) {
		ssize_t n = read(fd, buf, chunk);

		if (n < 0 && *direct && errno == EINVAL) {
			/* filesystem without O_DIRECT (tmpfs...) */
			*direct = 0;
			fcntl(fd, F_SETFL, 0);
			continue;
		}
		if (n <= 0)
			break;
		done += (uint64_t)n;
	}
	t = bench_now() - t0;
	close(fd);
	free(buf);
	if (!quiet)
		printf("storage: read %.1f MiB of %s in %.3f s%s\n",
		       done / 1048576.0, big_path, t,
		       *direct ? " (O_DIRECT)"
			       : " (buffered: O_DIRECT not available, the page "
				 "cache "
				 "may have served it)");
	if (!quiet && done < (64ull << 20))
		printf("storage: under 64 MiB read, the rate is rough\n");
	return t > 0 && done ? done / 1048576.0 / t : 0;
}

struct cand {
	struct bench_alg a;
	uint32_t cluster;
	double ratio, decode, mkfs;   /* -, MiB/s, MB/s */
	double seq_s, rand_us, score; /* model */
};

static const char *const cand_algs[] = {
	"lz4hc:9", "deflate:6", "zstd:3", "zstd:9", "lzma:6",
};
static const uint32_t cand_clusters[] = { 16384, 65536, 262144 };

static double goal_score(const struct cand *c, const char *goal,
			 const struct cand *best)
{
	if (!strcmp(goal, "size"))
		return c->ratio / best->ratio;
	if (!strcmp(goal, "seq"))
		return c->seq_s / best->seq_s;
	if (!strcmp(goal, "random"))
		return c->rand_us / best->rand_us;
	return (c->ratio / best->ratio + c->seq_s / best->seq_s +
		c->rand_us / best->rand_us) /
	       3;
}

static int measure_cand(const struct bench_opts *o, const struct bench_src *s,
			struct cand *c, double storage)
{
	uint64_t ib = 0, bytes = 0;
	double bt = 0, secs = 0;
	char *img = NULL;
	int err;

	err = bench_build(s, &c->a, c->cluster, &img, &ib, &bt);
	if (!err)
		err = bench_lib_seq(img, 65536, o->runtime,
				    o->disp_given ? &o->disp[0] : NULL, &bytes,
				    &secs);
	if (img)
		unlink(img);
	free(img);
	if (err)
		return err;
	c->ratio = s->input_blocks
			   ? (double)((ib + 4095) / 4096) / s->input_blocks
			   : 1;
	c->mkfs = bt > 0 ? s->input_bytes / 1e6 / bt : 0;
	c->decode = secs > 0 ? bytes / 1048576.0 / secs : 1e9;
	/* seconds per MiB of file data: read compressed, then decode */
	c->seq_s = c->ratio / storage + 1 / c->decode;
	/* a 4 KiB random read fetches and decodes its whole pcluster */
	c->rand_us = (c->cluster / 1048576.0) * c->seq_s * 1e6;
	return 0;
}

/* s as one shell word: as it is when nothing in it is special to the shell,
 * else in single quotes; "./" before a leading '-' (not an option). */
static void print_word(const char *s)
{
	const char *p;
	int plain = *s != '\0';

	for (p = s; *p && plain; p++)
		plain = isalnum((unsigned char)*p) || strchr("_./,:+@%=-", *p);
	if (*s == '-')
		fputs("./", stdout);
	if (plain) {
		fputs(s, stdout);
		return;
	}
	putchar('\'');
	for (p = s; *p; p++) {
		if (*p == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*p);
	}
	putchar('\'');
}

/*
 * The pick as a command to paste: ezfs mkfs -z ALG,LEVEL -C BYTES IMAGE DIR.
 * IMAGE is the last name of source plus ".erofs" in the current directory
 * (OUT.erofs where it has none); DIR is source as given. ezfs mkfs takes a
 * directory: for a file source DIR is left for the user to fill in.
 */
static void print_mkfs(const char *goal, const struct cand *c,
		       const char *source)
{
	char name[256], img[272];
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
	printf("\nrecommended for goal '%s': ezfs mkfs -z %s", goal, c->a.name);
	if (c->a.level >= 0)
		printf(",%d", c->a.level);
	printf(" -C %u ", (unsigned)c->cluster);
	print_word(img);
	putchar(' ');
	if (is_dir)
		print_word(source);
	else
		fputs("DIR", stdout);
	putchar('\n');
	if (!is_dir)
		printf("  (SOURCE is a file; ezfs mkfs takes a directory: "
		       "DIR = the directory to put in the image)\n");
}

int bench_advise(const struct bench_opts *o, const struct bench_src *s,
		 struct bench_results *res)
{
	struct cand cands[16], best;
	size_t i, j, n = 0, pick = 0;
	struct bench_prog pg;
	struct bench_rec rec;
	char cl[16], lab[32];
	double storage;
	int direct = 0, err = 0;

	if (s->is_image) {
		cli_error(BENCH_CMD, "advise needs the source tree, not an "
				     "image");
		return -EINVAL;
	}
	storage = storage_rate(s->source, o->quiet, &direct);
	if (storage <= 0) {
		cli_error(BENCH_CMD, "%s: no file to measure the storage with",
			  s->source);
		return -ENOENT;
	}
	bench_rec_init(&rec, "advise");
	snprintf(rec.workload, sizeof(rec.workload), "storage");
	snprintf(rec.target, sizeof(rec.target), direct ? "direct" : "cached");
	snprintf(rec.engine, sizeof(rec.engine), "%.23s",
		 bench_engine_label(NULL));
	rec.mib_s = storage;
	rec.repeat = 1;
	bench_add(res, &rec);
	bench_prog_init(&pg, o->quiet || !isatty(2), (unsigned)(5 * 3));
	for (i = 0; i < 5 && !err; i++) {
		for (j = 0; j < 3 && !err; j++) {
			struct cand *c = &cands[n];

			memset(c, 0, sizeof(*c));
			bench_parse_alg(cand_algs[i], &c->a);
			c->cluster = cand_clusters[j];
			bench_alg_label(&c->a, lab, sizeof(lab));
			snprintf(lab + strlen(lab), sizeof(lab) - strlen(lab),
				 " %s",
				 bench_fmt_cluster(c->cluster, cl, sizeof(cl)));
			bench_prog_cell(&pg, lab);
			err = measure_cand(o, s, c, storage);
			bench_prog_done(&pg);
			if (!err)
				n++;
		}
	}
	bench_prog_end(&pg);
	if (err || !n)
		return err ? err : -ENOENT;
	best = cands[0];
	for (i = 1; i < n; i++) {
		if (cands[i].ratio < best.ratio)
			best.ratio = cands[i].ratio;
		if (cands[i].seq_s < best.seq_s)
			best.seq_s = cands[i].seq_s;
		if (cands[i].rand_us < best.rand_us)
			best.rand_us = cands[i].rand_us;
	}
	for (i = 0; i < n; i++) {
		cands[i].score = goal_score(&cands[i], o->goal, &best);
		if (cands[i].score < cands[pick].score)
			pick = i;
	}
	printf("\nstorage %.1f MiB/s; model per candidate: seq = ratio / "
	       "storage + 1 / decode,\nrandom 4K read = pcluster read + decode "
	       "(cache cold); goal %s (score 1.00 = best)\n\n",
	       storage, o->goal);
	printf("%-10s %7s %7s %10s %10s %10s %10s %6s\n", "alg", "cluster",
	       "ratio", "decode", "mkfs MB/s", "seq MiB/s", "rand4K us",
	       "score");
	for (i = 0; i < n; i++) {
		const struct cand *c = &cands[i];

		bench_alg_label(&c->a, lab, sizeof(lab));
		printf("%-10s %7s %7.4f %10.1f %10.1f %10.1f %10.1f %6.2f%s\n",
		       lab, bench_fmt_cluster(c->cluster, cl, sizeof(cl)),
		       c->ratio, c->decode, c->mkfs, 1 / c->seq_s, c->rand_us,
		       c->score, i == pick ? "  <-" : "");
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
		rec.avg_us = c->rand_us;
		bench_add(res, &rec);
	}
	print_mkfs(o->goal, &cands[pick], s->source);
	printf("  because: ratio %.4f (best %.4f), sequential %.1f MiB/s "
	       "(best %.1f), random 4K %.0f us (best %.0f)\n",
	       cands[pick].ratio, best.ratio, 1 / cands[pick].seq_s,
	       1 / best.seq_s, cands[pick].rand_us, best.rand_us);
	printf("  storage at %.0f MiB/s %s\n", storage,
	       storage < cands[pick].decode ? "is slower than its decoder: "
					      "smaller images read faster"
					    : "is faster than its decoder: "
					      "decode speed dominates");
	return 0;
}
