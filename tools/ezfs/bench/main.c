/* SPDX-License-Identifier: MIT */
/* bench/main.c - ezfs bench: options, defaults and the mode dispatcher. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "../cmd.h"
#include "../common.h"

static const char bench_usage_text[] =
	"usage: ezfs bench read|ratio|latency|all [OPTIONS] SOURCE\n"
	"       ezfs bench read --path DIR [OPTIONS]\n"
	"       ezfs bench advise [--goal size|seq|random|balanced] [OPTIONS] "
	"SOURCE\n"
	"\n"
	"SOURCE is a directory or a file (images are built from a sample of "
	"it\n"
	"in a temporary directory) or an existing EROFS image.\n"
	"\n"
	"  --clusters LIST     read: pcluster sizes (4K,16K,64K,256K,1M)\n"
	"  --cluster SIZE      ratio, latency: pcluster size (16K)\n"
	"  --algs LIST         read, latency: algorithms "
	"(lz4hc,deflate,zstd);\n"
	"                      ALG or ALG:LEVEL, e.g. zstd:9\n"
	"  --levels SPEC       ratio: \"lz4hc:1,9,12 deflate:1,6,9 "
	"zstd:3,9,12\n"
	"                      lzma:6\" (the default)\n"
	"  --engines LIST      engines to compare, e.g. libdeflate,isal,zlib\n"
	"                      (each with its algorithm; 'ezfs accel list')\n"
	"  --accel SPEC        decompression engines of every image opened,\n"
	"                      e.g. deflate=isal,zlib or isal (not with\n"
	"                      --engines)\n"
	"  --strict-accel      an engine failure is an error, no fallback\n"
	"  --dispatch LIST     inline, queue[:N], percpu; latency: all three,\n"
	"                      read: EZFS_DISPATCH or inline unless given,\n"
	"                      advise: one mode\n"
	"  --load LIST         latency: competing CPU load, none and/or busy\n"
	"                      (one spinning thread per CPU) (none,busy)\n"
	"  --window SIZE       seq read: readahead window, whole extents per\n"
	"                      ezfs_pread, 0 = plain --bs reads (16M)\n"
	"  --path DIR          read: measure files under DIR (a kernel or "
	"FUSE\n"
	"                      mount, a plain directory) instead of the "
	"library\n"
	"  --no-drop           --path: do not drop the page cache between "
	"runs\n"
	"  --bs SIZE           read block size (4K)\n"
	"  --io-share PCT      small random read: share of the data (5)\n"
	"  --runtime SEC       cap of each measured run (3)\n"
	"  --size BYTES        sample at most this much of SOURCE (64M,\n"
	"                      advise 16M)\n"
	"  --repeat N          repeat each run, report the median (1)\n"
	"  --goal G            advise: size, seq, random or balanced\n"
	"  --storage S         advise: where the image will be read from: a\n"
	"                      file or device to measure, or a profile:\n"
	"                      cloud-hdd, cloud-ssd, nvme, emmc, "
	"registry-20ms\n"
	"                      (default: measure the disk SOURCE is on)\n"
	"  --storage-rate R    advise: its read rate in MB/s (overrides S)\n"
	"  --storage-latency T advise: its latency per request, e.g. 20ms,\n"
	"                      150us (overrides S)\n"
	"  --csv FILE          one row per measured cell\n"
	"  --json FILE         one record per measured cell\n"
	"  --plot DIR          PNG charts (gnuplot)\n"
	"  -q, --quiet         no progress line\n"
	"  -h, --help          this help\n";

static void bench_usage(FILE *f)
{
	fputs(bench_usage_text, f);
}

/* "4K", "1M", "65536", "1.5G" -> bytes; 0 on error. */
static uint64_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v <= 0)
		return 0;
	switch (*end) {
	case 'k':
	case 'K':
		v *= 1024;
		end++;
		break;
	case 'm':
	case 'M':
		v *= 1024 * 1024;
		end++;
		break;
	case 'g':
	case 'G':
		v *= 1024.0 * 1024 * 1024;
		end++;
		break;
	default:
		break;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B')
		end++;
	return *end ? 0 : (uint64_t)v;
}

static int parse_clusters(const char *s, uint32_t *out, int *n)
{
	char *dup = strdup(s), *tok, *save = NULL;
	int err = 0;

	if (!dup)
		return -ENOMEM;
	*n = 0;
	for (tok = strtok_r(dup, ", ", &save); tok;
	     tok = strtok_r(NULL, ", ", &save)) {
		uint64_t v = parse_size(tok);

		if (!v || v > (1u << 20) || (v & (v - 1)) || v < 4096 ||
		    *n >= BENCH_MAX_CLUSTERS) {
			err = -EINVAL;
			break;
		}
		out[(*n)++] = (uint32_t)v;
	}
	free(dup);
	return err ? err : (*n ? 0 : -EINVAL);
}

static int parse_algs(const char *s, struct bench_alg *out, int *n)
{
	char *dup = strdup(s), *tok, *save = NULL;
	int err = 0;

	if (!dup)
		return -ENOMEM;
	*n = 0;
	for (tok = strtok_r(dup, ", ", &save); tok && !err;
	     tok = strtok_r(NULL, ", ", &save)) {
		if (*n >= BENCH_MAX_ALGS)
			err = -EINVAL;
		else
			err = bench_parse_alg(tok, &out[(*n)++]);
	}
	free(dup);
	return err ? err : (*n ? 0 : -EINVAL);
}

/* "lz4hc:1,9,12 deflate:1,6,9 zstd lzma:6" (also ';' between groups). */
static int parse_levels(const char *s, struct bench_alg *out, int *n)
{
	char *dup = strdup(s), *grp, *save = NULL;
	int err = 0;

	if (!dup)
		return -ENOMEM;
	*n = 0;
	for (grp = strtok_r(dup, " ;", &save); grp && !err;
	     grp = strtok_r(NULL, " ;", &save)) {
		char *colon = strchr(grp, ':'), *lv, *s2 = NULL, one[48];

		if (colon)
			*colon = '\0';
		if (!colon) {
			if (*n >= BENCH_MAX_ALGS)
				err = -EINVAL;
			else
				err = bench_parse_alg(grp, &out[(*n)++]);
			continue;
		}
		for (lv = strtok_r(colon + 1, ",", &s2); lv && !err;
		     lv = strtok_r(NULL, ",", &s2)) {
			snprintf(one, sizeof(one), "%s:%s", grp, lv);
			if (*n >= BENCH_MAX_ALGS)
				err = -EINVAL;
			else
				err = bench_parse_alg(one, &out[(*n)++]);
		}
	}
	free(dup);
	return err ? err : (*n ? 0 : -EINVAL);
}

static void set_defaults(struct bench_opts *o)
{
	memset(o, 0, sizeof(*o));
	parse_clusters("4K,16K,64K,256K,1M", o->clusters, &o->nclusters);
	parse_algs("lz4hc,deflate,zstd", o->algs, &o->nalgs);
	parse_levels("lz4hc:1,9,12 deflate:1,6,9 zstd:3,9,12 lzma:6", o->levels,
		     &o->nlevels);
	o->ratio_cluster = 16384;
	o->bs = 4096;
	o->io_share = 0.05;
	o->runtime = 3;
	o->size = 64ull << 20;
	o->repeat = 1;
	o->seed = 1;
	o->goal = "balanced";
	bench_parse_dispatch("inline,queue,percpu", o);
	bench_parse_loads("none,busy", o);
	o->window = 16ull << 20;
	o->storage_rate = -1;
	o->storage_lat = -1;
}

/* above the CLI_OPT_* values of common.h */
enum {
	O_CSV = 0x200,
	O_JSON,
	O_PLOT,
	O_PATH,
	O_ENGINES,
	O_GOAL,
	O_CLUSTERS,
	O_CLUSTER,
	O_ALGS,
	O_LEVELS,
	O_BS,
	O_SHARE,
	O_RUNTIME,
	O_SIZE,
	O_REPEAT,
	O_NODROP,
	O_LOAD,
	O_WINDOW,
	O_STORAGE,
	O_STORAGE_RATE,
	O_STORAGE_LAT
};

/* "50", "50M", "50MB/s", "1.5G" -> MB/s (10^6 bytes); -1 on error. */
static double parse_rate(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || !(v > 0))
		return -1;
	if (*end == 'k' || *end == 'K')
		v /= 1000, end++;
	else if (*end == 'M')
		end++;
	else if (*end == 'G')
		v *= 1000, end++;
	if (!strcmp(end, "B/s") || !strcmp(end, "/s"))
		end += strlen(end);
	return *end ? -1 : v;
}

/* "20ms", "150us", "0.02s", "0" -> seconds; -1 on error. */
static double parse_time(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v < 0)
		return -1;
	if (!strcmp(end, "s"))
		return v;
	if (!strcmp(end, "ms"))
		return v / 1e3;
	if (!strcmp(end, "us"))
		return v / 1e6;
	if (!strcmp(end, "ns"))
		return v / 1e9;
	return !*end && v == 0 ? 0 : -1;
}

static int parse_opts(int argc, char **argv, struct bench_opts *o)
{
	static const struct option lo[] = {
		{ "csv", 1, NULL, O_CSV },
		{ "json", 1, NULL, O_JSON },
		{ "plot", 1, NULL, O_PLOT },
		{ "path", 1, NULL, O_PATH },
		{ "engines", 1, NULL, O_ENGINES },
		{ "goal", 1, NULL, O_GOAL },
		{ "clusters", 1, NULL, O_CLUSTERS },
		{ "cluster", 1, NULL, O_CLUSTER },
		{ "algs", 1, NULL, O_ALGS },
		{ "levels", 1, NULL, O_LEVELS },
		{ "bs", 1, NULL, O_BS },
		{ "io-share", 1, NULL, O_SHARE },
		{ "runtime", 1, NULL, O_RUNTIME },
		{ "size", 1, NULL, O_SIZE },
		{ "repeat", 1, NULL, O_REPEAT },
		{ "no-drop", 0, NULL, O_NODROP },
		{ "load", 1, NULL, O_LOAD },
		CLI_ENGINE_OPTS,
		{ "window", 1, NULL, O_WINDOW },
		{ "storage", 1, NULL, O_STORAGE },
		{ "storage-rate", 1, NULL, O_STORAGE_RATE },
		{ "storage-latency", 1, NULL, O_STORAGE_LAT },
		{ "quiet", 0, NULL, 'q' },
		{ "help", 0, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint32_t one[BENCH_MAX_CLUSTERS];
	char *end;
	int c, n;

	optind = 1;
	while ((c = getopt_long(argc, argv, ":qh", lo, NULL)) != -1) {
		switch (c) {
		case 'q':
			o->quiet = 1;
			break;
		case 'h':
			bench_usage(stdout);
			return 1;
		case O_CSV:
			o->csv = optarg;
			break;
		case O_JSON:
			o->json = optarg;
			break;
		case O_PLOT:
			o->plot = optarg;
			break;
		case O_PATH:
			o->path = optarg;
			break;
		case O_NODROP:
			o->no_drop = 1;
			break;
		case O_ENGINES:
			if (bench_check_engines(optarg))
				return cli_usage_error(
					BENCH_CMD,
					"--engines: engine names (ezfs accel "
					"list) or default, comma-separated");
			o->engines = optarg;
			break;
		case CLI_OPT_DISPATCH:
			/* a list: each mode is measured in turn */
			if (bench_parse_dispatch(optarg, o))
				return cli_usage_error(
					BENCH_CMD,
					"invalid --dispatch '%s' (inline, "
					"queue[:N] or percpu, comma-separated)",
					optarg);
			o->disp_given = 1;
			break;
		case CLI_OPT_ACCEL:
		case CLI_OPT_STRICT_ACCEL:
			/* checked as for every command that reads an image */
			n = cli_opt_other(BENCH_CMD, c, argv, bench_usage);
			if (n != -1)
				return n;
			if (c == CLI_OPT_ACCEL)
				o->accel = optarg;
			else
				o->strict = 1;
			break;
		case O_LOAD:
			if (bench_parse_loads(optarg, o))
				return cli_usage_error(BENCH_CMD,
						       "--load: none, busy");
			break;
		case O_WINDOW:
			o->window =
				strcmp(optarg, "0") ? parse_size(optarg) : 0;
			if ((!o->window && strcmp(optarg, "0")) ||
			    o->window > (1ull << 30))
				return cli_usage_error(
					BENCH_CMD,
					"--window: a size up to 1G, or 0");
			break;
		case O_GOAL:
			if (strcmp(optarg, "size") && strcmp(optarg, "seq") &&
			    strcmp(optarg, "random") &&
			    strcmp(optarg, "balanced"))
				return cli_usage_error(BENCH_CMD,
						       "--goal: size, seq, "
						       "random or balanced");
			o->goal = optarg;
			break;
		case O_CLUSTERS:
			if (parse_clusters(optarg, o->clusters, &o->nclusters))
				return cli_usage_error(
					BENCH_CMD,
					"--clusters: powers of two, 4K..1M");
			o->clusters_given = 1;
			break;
		case O_STORAGE:
			if (!*optarg)
				return cli_usage_error(
					BENCH_CMD,
					"--storage: a file, a device or a "
					"profile (cloud-hdd, cloud-ssd, "
					"nvme, emmc, registry-20ms)");
			o->storage = optarg;
			break;
		case O_STORAGE_RATE:
			o->storage_rate = parse_rate(optarg);
			if (o->storage_rate <= 0)
				return cli_usage_error(
					BENCH_CMD,
					"--storage-rate: MB/s > 0, e.g. 50 "
					"or 1.5G");
			break;
		case O_STORAGE_LAT:
			o->storage_lat = parse_time(optarg);
			if (o->storage_lat < 0 || o->storage_lat > 60)
				return cli_usage_error(
					BENCH_CMD,
					"--storage-latency: a time up to 60s "
					"with its unit, e.g. 20ms or 150us");
			break;
		case O_CLUSTER:
			if (parse_clusters(optarg, one, &n) || n != 1)
				return cli_usage_error(
					BENCH_CMD,
					"--cluster: a power of two, 4K..1M");
			o->ratio_cluster = one[0];
			break;
		case O_ALGS:
			if (parse_algs(optarg, o->algs, &o->nalgs))
				return cli_usage_error(
					BENCH_CMD,
					"--algs: "
					"lz4,lz4hc,lzma,deflate,zstd[:LEVEL]");
			break;
		case O_LEVELS:
			if (parse_levels(optarg, o->levels, &o->nlevels))
				return cli_usage_error(
					BENCH_CMD,
					"--levels: e.g. \"zstd:3,9 lzma:6\"");
			o->levels_given = 1;
			break;
		case O_BS:
			o->bs = (uint32_t)parse_size(optarg);
			if (!o->bs || o->bs > (64u << 20))
				return cli_usage_error(BENCH_CMD,
						       "--bs: a size");
			break;
		case O_SHARE:
			o->io_share = strtod(optarg, &end) / 100;
			if (*end == '%')
				end++;
			if (end == optarg || *end || o->io_share <= 0 ||
			    o->io_share > 1)
				return cli_usage_error(
					BENCH_CMD,
					"--io-share: a percentage, 0..100");
			break;
		case O_RUNTIME:
			o->runtime = strtod(optarg, &end);
			if (end == optarg || *end || o->runtime <= 0)
				return cli_usage_error(
					BENCH_CMD, "--runtime: seconds > 0");
			break;
		case O_SIZE:
			o->size = parse_size(optarg);
			if (!o->size)
				return cli_usage_error(BENCH_CMD,
						       "--size: a size");
			break;
		case O_REPEAT:
			o->repeat = atoi(optarg);
			if (o->repeat < 1 || o->repeat > 100)
				return cli_usage_error(BENCH_CMD,
						       "--repeat: 1..100");
			break;
		default:
			return cli_opt_error(BENCH_CMD, c, argv);
		}
	}
	return 0;
}

static void loadavg(double la[3])
{
	FILE *f = fopen("/proc/loadavg", "r");

	la[0] = la[1] = la[2] = 0;
	if (f) {
		if (fscanf(f, "%lf %lf %lf", &la[0], &la[1], &la[2]) != 3)
			la[0] = 0;
		fclose(f);
	}
}

static void print_header(const struct bench_opts *o, const char *what)
{
	const char *acc = getenv("EZFS_ACCEL"), *dis = getenv("EZFS_DISPATCH");
	double la[3];

	if (o->quiet)
		return;
	loadavg(la);
	printf("ezfs bench %s: %u CPUs, load average %.2f %.2f %.2f\n", what,
	       cli_online_cpus(), la[0], la[1], la[2]);
	if (acc || dis)
		printf("environment: EZFS_ACCEL=%s EZFS_DISPATCH=%s\n",
		       acc ? acc : "", dis ? dis : "");
}

static void print_footer(const struct bench_opts *o, double t0)
{
	double la[3];

	if (o->quiet)
		return;
	loadavg(la);
	printf("\ndone in %.1f s, load average %.2f %.2f %.2f\n",
	       bench_now() - t0, la[0], la[1], la[2]);
}

static int size_given(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++)
		if (!strncmp(argv[i], "--size", 6))
			return 1;
	return 0;
}

static int run_modes(struct bench_opts *o, const char *mode,
		     const struct bench_src *src, struct bench_results *res)
{
	int rd = !strcmp(mode, "read"), ra = !strcmp(mode, "ratio");
	int la = !strcmp(mode, "latency"), err = 0;
	struct bench_prog pg;
	unsigned cells = 0;

	if (!strcmp(mode, "all"))
		rd = ra = la = 1;
	if (ra && src->is_image) {
		if (!o->quiet || !rd)
			printf("ratio: skipped, SOURCE is an image (give the "
			       "directory it was built from)\n");
		ra = 0;
	}
	if (rd)
		cells += bench_read_cells(o, src);
	if (ra)
		cells += (unsigned)o->nlevels;
	if (la)
		cells += bench_latency_cells(o, src);
	bench_prog_init(&pg, o->quiet || !isatty(2), cells);
	if (rd && la && !src->is_image)
		bench_keep_cluster(o->ratio_cluster); /* latency reuses them */
	if (rd && !err) {
		err = bench_read(o, src, res, &pg);
		bench_prog_end(&pg);
		bench_print_table(stdout, res, "read");
		bench_read_warn_short(res);
	}
	if (ra && !err) {
		err = bench_ratio(o, src, res, &pg);
		bench_prog_end(&pg);
		bench_print_table(stdout, res, "ratio");
	}
	if (la && !err) {
		err = bench_latency(o, src, res, &pg);
		bench_prog_end(&pg);
		bench_print_table(stdout, res, "latency");
	}
	return err;
}

int cmd_bench(int argc, char **argv)
{
	struct bench_results res = { 0 };
	struct bench_src src = { 0 };
	struct bench_opts o;
	const char *mode, *source;
	double t0 = bench_now();
	int rc, err;

	set_defaults(&o);
	rc = parse_opts(argc, argv, &o);
	if (rc)
		return rc == 1 ? 0 : rc;
	if (optind >= argc)
		return cli_usage_error(BENCH_CMD,
				       "missing mode "
				       "(read, ratio, latency, all, advise)");
	mode = argv[optind++];
	if (strcmp(mode, "read") && strcmp(mode, "ratio") &&
	    strcmp(mode, "latency") && strcmp(mode, "all") &&
	    strcmp(mode, "advise"))
		return cli_usage_error(BENCH_CMD, "unknown mode '%s'", mode);
	source = optind < argc ? argv[optind++] : NULL;
	if (optind < argc)
		return cli_usage_error(BENCH_CMD, "unexpected '%s'",
				       argv[optind]);
	if (o.path && strcmp(mode, "read"))
		return cli_usage_error(BENCH_CMD, "--path works with read");
	if ((o.storage || o.storage_rate > 0 || o.storage_lat >= 0) &&
	    strcmp(mode, "advise"))
		return cli_usage_error(BENCH_CMD,
				       "--storage, --storage-rate and "
				       "--storage-latency work with advise");
	if (!source && !o.path)
		return cli_usage_error(BENCH_CMD, "missing SOURCE");
	if (!strcmp(mode, "advise") && !size_given(argc, argv))
		o.size = 16ull << 20;
	if (!strcmp(mode, "advise") && o.disp_given && o.ndisp > 1)
		return cli_usage_error(BENCH_CMD, "advise: --dispatch takes "
						  "one mode");
	if (o.accel && o.engines)
		return cli_usage_error(BENCH_CMD,
				       "--accel and --engines: give "
				       "one (--engines compares engines, "
				       "--accel sets one order)");
	/* the command line beats the environment, as in cli_open() */
	if (o.accel)
		unsetenv("EZFS_ACCEL");
	if (o.disp_given)
		unsetenv("EZFS_DISPATCH");
	bench_set_engine_opts(o.accel, o.strict);
	print_header(&o, mode);
	err = bench_tmp_init();
	if (!err && source)
		err = bench_src_prepare(&src, source, o.size);
	if (!err && !o.quiet && source && !src.is_image)
		printf("sample: %s, %llu bytes, %llu blocks of 4 KiB\n", source,
		       (unsigned long long)src.input_bytes,
		       (unsigned long long)src.input_blocks);
	if (!err && !strcmp(mode, "advise"))
		err = bench_advise(&o, &src, &res);
	else if (!err)
		err = run_modes(&o, mode, &src, &res);
	if (o.csv && res.n && bench_write_csv(o.csv, &res))
		err = err ? err : -EIO;
	/* advise writes its own JSON: the whole table and the pick */
	if (o.json && res.n && strcmp(mode, "advise") &&
	    bench_write_json(o.json, &res))
		err = err ? err : -EIO;
	if (o.plot && res.n)
		bench_plot(o.plot, &res, o.quiet);
	print_footer(&o, t0);
	bench_src_free(&src);
	free(res.v);
	bench_tmp_cleanup();
	return err ? 1 : 0;
}
