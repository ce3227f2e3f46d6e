/* SPDX-License-Identifier: MIT */
/*
 * accel.c - ezfs accel: list decompression engines, per-image or per-mount
 * counters (stats), live switch of a mount (set, accel_ctl.c), benchmark
 * (bench, accel_bench.c); the dispatcher, what they share is in
 * accel_util.c.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ezfs/engine.h>
#include <ezfs/ezfs.h>

#include "accel.h"
#include "cmd.h"
#include "common.h"
#include "json.h"

/* Why engine i (whose probe gave err) is not usable: its own reason
 * where it has one, else the error's text. A static buffer. */
static const char *why_not(unsigned i, int err)
{
	static char why[256];

	if (ezfs_engine_why(i, why, sizeof(why)) && why[0])
		return why;
	return ezfs_strerror(err);
}

/* accel list --json (docs/schemas/accel-list.json) */
static int accel_list_json(int all)
{
	struct ezfs_engine_info info;
	struct cj j;

	cj_init(&j, stdout);
	cj_obj(&j, NULL);
	cj_arr(&j, "engines");
	for (unsigned i = 0; i < ezfs_engine_count(); i++) {
		if (ezfs_engine_get_info(i, &info))
			continue;
		info.probe = ezfs_engine_why(i, NULL, 0); /* the full probe */
		if ((info.flags & EZFS_ENGINE_TEST) && !all)
			continue;
		cj_obj(&j, NULL);
		cj_str(&j, "name", info.name);
		cj_str(&j, "alg", ezfs_alg_name(info.alg));
		cj_bool(&j, "usable", !info.probe);
		if (info.probe)
			cj_str(&j, "unusable_reason", why_not(i, info.probe));
		if (info.default_pos >= 0)
			cj_u64(&j, "default_pos",
			       (unsigned)info.default_pos + 1);
		else
			cj_null(&j, "default_pos");
		cj_bool(&j, "partial", info.flags & EZFS_ENGINE_PARTIAL);
		cj_bool(&j, "reference", info.reference);
		cj_bool(&j, "test_only", info.flags & EZFS_ENGINE_TEST);
		cj_end(&j);
	}
	cj_end(&j);
	cj_end(&j);
	return 0;
}

static int accel_list(int all)
{
	struct ezfs_engine_info info;
	unsigned i;

	printf("%-18s %-8s %-7s %-9s %-8s %s\n", "ENGINE", "ALG", "USABLE",
	       "DEFAULT", "PARTIAL", "NOTE");
	for (i = 0; i < ezfs_engine_count(); i++) {
		char pos[16];

		if (ezfs_engine_get_info(i, &info))
			continue;
		info.probe = ezfs_engine_why(i, NULL, 0); /* the full probe */
		/* the forced-failure engine exists for the tests only */
		if ((info.flags & EZFS_ENGINE_TEST) && !all)
			continue;
		if (info.default_pos >= 0)
			snprintf(pos, sizeof(pos), "%d", info.default_pos + 1);
		else
			snprintf(pos, sizeof(pos), "off");
		printf("%-18s %-8s %-7s %-9s %-8s %s\n", info.name,
		       ezfs_alg_name(info.alg), info.probe ? "no" : "yes", pos,
		       info.flags & EZFS_ENGINE_PARTIAL ? "yes" : "no",
		       info.probe		    ? why_not(i, info.probe)
		       : !strcmp(info.name, "fail") ? "test only: always fails"
		       : info.flags & EZFS_ENGINE_TEST
			       ? "test only: a device with latency and faults"
		       : info.reference ? "reference (fallback)"
					: "");
	}
	printf("\nDEFAULT: place in the default order of its algorithm.\n"
	       "PARTIAL: can decode only the start of a pcluster (a read "
	       "of its first\nbytes); an engine without it passes such "
	       "requests to the next one.\n");
	return 0;
}

static int accel_list_cmd(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'J' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, all = 0, json = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":ah", opts, NULL)) != -1) {
		if (c == 'a')
			all = 1;
		else if (c == 'J')
			json = 1;
		else
			return cli_opt_default("accel", c, argv, accel_usage);
	}
	if (cli_nargs("accel", argc - optind, 0, 0, ""))
		return 2;
	return json ? accel_list_json(all) : accel_list(all);
}

struct walk {
	ezfs_image *img;
	uint8_t *buf;
	uint64_t bytes;
	uint64_t digest; /* of nids and contents, in walk order */
};

/* A 64-bit digest of n bytes, 8 at a time (differential tests compare it
 * across engines and dispatch modes; not a cryptographic hash). */
static uint64_t digest_add(uint64_t h, const uint8_t *p, size_t n)
{
	uint64_t w;

	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ull;
		h ^= h >> 29;
	}
	while (n--)
		h = (h ^ *p++) * 0x100000001b3ull;
	return h;
}

/* Read a whole file, for the timing walk. */
static int walk_file(void *arg, uint64_t nid)
{
	struct walk *w = arg;
	ezfs_inode *ino;
	uint64_t off = 0;
	ssize_t n;
	int err;

	err = ezfs_inode_get(w->img, nid, &ino);
	if (err)
		return err;
	w->digest = digest_add(w->digest, (const uint8_t *)&nid, sizeof(nid));
	while ((n = ezfs_pread(ino, w->buf, 1 << 20, off)) > 0) {
		w->digest = digest_add(w->digest, w->buf, (size_t)n);
		off += (uint64_t)n;
		w->bytes += (uint64_t)n;
	}
	ezfs_inode_put(ino);
	return n < 0 ? (int)n : 0;
}

static int accel_stats(int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_ENGINE_OPTS,
		{ "json", no_argument, NULL, 'J' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ezfs_engine_stats est[32];
	struct ezfs_latency_stats ls;
	struct ezfs_dispatch_info di;
	struct cli_log lg = { 0 };
	struct walk w = { 0 };
	struct stat sb;
	ezfs_image *img;
	const char *path;
	int c, n, err, json = 0;
	double t0, t;
	char order[256];

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (c == 'J') {
			json = 1;
			continue;
		}
		err = cli_opt_other("accel", c, argv, accel_usage);
		if (err >= 0)
			return err;
	}
	if (cli_nargs("accel", argc - optind, 1, 1, "missing IMG"))
		return 2;
	path = argv[optind];
	if (!stat(path, &sb) && S_ISDIR(sb.st_mode))
		return accel_mount_stats(path, json);
	if (cli_open("accel", path, &lg, &img) < 0)
		return 1;
	w.img = img;
	w.buf = malloc(1 << 20);
	err = w.buf ? 0 : -ENOMEM;
	t0 = cli_now();
	if (!err)
		err = accel_for_each_file(img, walk_file, &w);
	t = cli_now() - t0;
	free(w.buf);
	if (err) {
		cli_fail("accel", path, NULL, err);
		ezfs_image_close(img);
		return 1;
	}
	ezfs_image_get_accel(img, order, sizeof(order));
	ezfs_image_dispatch_info(img, &di);
	n = ezfs_image_engine_stats(img, est, 32);
	ezfs_image_latency_stats(img, &ls);
	if (json) {
		struct cj j;

		cj_init(&j, stdout);
		cj_obj(&j, NULL);
		cj_bytes(&j, "image", path, strlen(path));
		cj_str(&j, "order", order);
		cj_u64(&j, "bytes", w.bytes);
		cj_dbl(&j, "seconds", t);
		snprintf(order, sizeof(order), "%016llx",
			 (unsigned long long)w.digest);
		cj_str(&j, "digest", order);
		cj_obj(&j, "dispatch");
		cj_str(&j, "mode", ezfs_dispatch_name(di.mode));
		cj_u64(&j, "workers", di.workers);
		cj_u64(&j, "pinned", di.pinned);
		cj_str(&j, "policy", di.policy ? "SCHED_FIFO" : "SCHED_OTHER");
		cj_i64(&j, "nice", di.nice);
		cj_u64(&j, "batches", di.batches);
		cj_end(&j);
		accel_json_counters(&j, est, n < 32 ? n : 32, true);
		cj_obj(&j, "latency_us");
		cj_u64(&j, "total", ls.total);
		cj_u64(&j, "count", ls.count);
		cj_dbl(&j, "avg", ls.avg);
		cj_dbl(&j, "median", ls.median);
		cj_dbl(&j, "min", ls.min);
		cj_dbl(&j, "max", ls.max);
		cj_dbl(&j, "stddev", ls.stddev);
		cj_end(&j);
		cj_end(&j);
		ezfs_image_close(img);
		return 0;
	}
	printf("order: %s\n", order);
	printf("read %llu bytes in %.3f s (%.1f MB/s), dispatch %s, "
	       "%u workers (%u pinned, %s, nice %d), %llu batches\n",
	       (unsigned long long)w.bytes, t, t > 0 ? w.bytes / t / 1e6 : 0,
	       ezfs_dispatch_name(di.mode), di.workers, di.pinned,
	       di.policy ? "SCHED_FIFO" : "SCHED_OTHER", di.nice,
	       (unsigned long long)di.batches);
	printf("digest: %016llx\n", (unsigned long long)w.digest);
	accel_print_counters(est, n < 32 ? n : 32, true);
	printf("latency (us, last %llu of %llu): avg %.1f median %.1f "
	       "min %.1f max %.1f stddev %.1f\n",
	       (unsigned long long)ls.count, (unsigned long long)ls.total,
	       ls.avg, ls.median, ls.min, ls.max, ls.stddev);
	ezfs_image_close(img);
	return 0;
}

int cmd_accel(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error("accel", "missing list, stats, set or "
						"bench");
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		accel_usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "list"))
		return accel_list_cmd(argc - 1, argv + 1);
	if (!strcmp(argv[1], "stats"))
		return accel_stats(argc - 1, argv + 1);
	if (!strcmp(argv[1], "set"))
		return accel_set(argc - 1, argv + 1);
	if (!strcmp(argv[1], "bench"))
		return accel_bench(argc - 1, argv + 1);
	return cli_usage_error("accel", "unknown subcommand '%s'", argv[1]);
}
