/* SPDX-License-Identifier: MIT */
/*
 * bench/main.c - ezfs bench: its options, the progress line, the tables on
 * stdout and the exit code. The measuring, the model and the formatting of
 * results are lib/bench's (include/ezfs/bench.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ezfs/bench.h"
#include "ezfs/engine.h"
#include "../cmd.h"
#include "../common.h"

#define BENCH_CMD "bench"

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
	"  --reader R          advise: who reads the image there: kernel (a\n"
	"                      mount, 128 KiB readahead) or remote (ezfs over\n"
	"                      http/oci/s3); default remote for registry-20ms\n"
	"  --csv FILE          one row per measured cell\n"
	"  --json FILE         one record per measured cell\n"
	"  --plot DIR          PNG charts (gnuplot)\n"
	"  -q, --quiet         no progress line\n"
	"  -h, --help          this help\n";

static void bench_usage(FILE *f)
{
	fputs(bench_usage_text, f);
}

/* above the CLI_OPT_* values of common.h: the command's own options;
 * O_LIB: a parameter of the library, set by its name */
enum { O_CSV = 0x200, O_JSON, O_PLOT, O_LIB };

/* What the command adds to the library's parameters. */
struct bench_cli {
	int quiet;
	int size_given;
	const char *csv, *json, *plot;
};

static int parse_opts(int argc, char **argv, struct ezfs_bench_params *o,
		      struct bench_cli *cli)
{
	static const struct option lo[] = {
		{ "csv", 1, NULL, O_CSV },
		{ "json", 1, NULL, O_JSON },
		{ "plot", 1, NULL, O_PLOT },
		{ "path", 1, NULL, O_LIB },
		{ "engines", 1, NULL, O_LIB },
		{ "goal", 1, NULL, O_LIB },
		{ "clusters", 1, NULL, O_LIB },
		{ "cluster", 1, NULL, O_LIB },
		{ "algs", 1, NULL, O_LIB },
		{ "levels", 1, NULL, O_LIB },
		{ "bs", 1, NULL, O_LIB },
		{ "io-share", 1, NULL, O_LIB },
		{ "runtime", 1, NULL, O_LIB },
		{ "size", 1, NULL, O_LIB },
		{ "repeat", 1, NULL, O_LIB },
		{ "no-drop", 0, NULL, O_LIB },
		{ "load", 1, NULL, O_LIB },
		CLI_ENGINE_OPTS,
		{ "window", 1, NULL, O_LIB },
		{ "storage", 1, NULL, O_LIB },
		{ "storage-rate", 1, NULL, O_LIB },
		{ "storage-latency", 1, NULL, O_LIB },
		{ "reader", 1, NULL, O_LIB },
		{ "quiet", 0, NULL, 'q' },
		{ "help", 0, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *why;
	int c, n, idx;

	optind = 1;
	while ((c = getopt_long(argc, argv, ":qh", lo, &idx)) != -1) {
		switch (c) {
		case 'q':
			cli->quiet = 1;
			break;
		case 'h':
			bench_usage(stdout);
			return 1;
		case O_CSV:
			cli->csv = optarg;
			break;
		case O_JSON:
			cli->json = optarg;
			break;
		case O_PLOT:
			cli->plot = optarg;
			break;
		case CLI_OPT_ACCEL:
		case CLI_OPT_STRICT_ACCEL:
			/* checked as for every command that reads an image */
			n = cli_opt_other(BENCH_CMD, c, argv, bench_usage);
			if (n != -1)
				return n;
			/* fall through */
		case CLI_OPT_DISPATCH: /* a list: each mode in turn */
		case O_LIB:
			if (ezfs_bench_params_set(o, lo[idx].name, optarg,
						  &why))
				return cli_usage_error(BENCH_CMD, "--%s: %s",
						       lo[idx].name, why);
			cli->size_given |= !strcmp(lo[idx].name, "size");
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

static void print_header(const struct bench_cli *cli, const char *what)
{
	const char *acc = getenv("EZFS_ACCEL"), *dis = getenv("EZFS_DISPATCH");
	double la[3];

	if (cli->quiet)
		return;
	loadavg(la);
	printf("ezfs bench %s: %u CPUs, load average %.2f %.2f %.2f\n", what,
	       cli_online_cpus(), la[0], la[1], la[2]);
	if (acc || dis)
		printf("environment: EZFS_ACCEL=%s EZFS_DISPATCH=%s\n",
		       acc ? acc : "", dis ? dis : "");
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The progress line on a terminal: "[3/15] read zstd 64K rand  ETA 0:42". */
struct prog {
	int on, shown;
	double start;
	int quiet;
};

static void prog_clear(struct prog *p)
{
	if (p->shown)
		fputs("\r\033[K", stderr);
	p->shown = 0;
}

static void on_progress(void *arg, const char *what, unsigned done,
			unsigned total)
{
	struct prog *p = arg;
	double el = now() - p->start;
	char eta[32] = "";

	if (!p->on)
		return;
	if (done && done < total) {
		unsigned s = (unsigned)(el / done * (total - done));

		snprintf(eta, sizeof(eta), "  ETA %u:%02u", s / 60, s % 60);
	}
	fprintf(stderr, "\r\033[K[%u/%u] %s%s", done + 1, total, what, eta);
	fflush(stderr);
	p->shown = 1;
}

/* The library's messages: errors on stderr; its notes on stdout and its
 * warnings on stderr unless -q. */
static void on_log(void *arg, int level, const char *msg)
{
	struct prog *p = arg;

	if (level > EZFS_LOG_ERROR && p->quiet)
		return;
	prog_clear(p);
	if (level == EZFS_LOG_INFO) {
		printf("%s\n", msg);
		fflush(stdout);
	} else if (level <= EZFS_LOG_WARN) {
		fflush(stdout);
		cli_error(BENCH_CMD, "%s", msg);
	}
}

/* ---- the workspace goes when the command does (exit, a signal) ---- */

static ezfs_bench *running;

static void cleanup(void)
{
	ezfs_bench_cleanup(running);
}

static void on_signal(int sig)
{
	/* Not strictly async-signal-safe (readdir), acceptable for a CLI
	 * that exits right after; the alternative leaves GBs behind. */
	cleanup();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Clean up on SIGINT, SIGTERM and SIGHUP, unless one was ignored when we
 * started (nohup, a shell's trap '' HUP): it stays ignored. */
static void catch_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa, old;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	for (i = 0; i < 3; i++)
		if (sigaction(sigs[i], NULL, &old) || old.sa_handler != SIG_IGN)
			sigaction(sigs[i], &sa, NULL);
	atexit(cleanup);
}

/* Runs this short say more about the clock and the start-up than about
 * the reads. */
#define SHORT_RUN 0.05

static void warn_short(const ezfs_bench *b)
{
	double shortest = ezfs_bench_shortest_read(b);

	if (shortest < 0 || shortest >= SHORT_RUN)
		return;
	cli_error(BENCH_CMD,
		  "read: runs as short as %.2g ms are too short to be "
		  "meaningful (under %.0f ms): measure more data (a larger "
		  "--size or SOURCE) or more runs (--repeat N)",
		  shortest * 1e3, SHORT_RUN * 1e3);
}

static int have_gnuplot(void)
{
	const char *path = getenv("PATH");
	char *dup, *dir, *save = NULL, full[4096];
	int found = 0;

	dup = strdup(path ? path : "/usr/bin:/bin");
	for (dir = dup ? strtok_r(dup, ":", &save) : NULL; dir && !found;
	     dir = strtok_r(NULL, ":", &save)) {
		snprintf(full, sizeof(full), "%s/gnuplot", dir);
		found = !access(full, X_OK);
	}
	free(dup);
	return found;
}

/* --plot DIR: the library writes the data and the script, gnuplot draws. */
static int plot(const ezfs_bench *b, const char *dir, int quiet)
{
	char script[4096];
	pid_t pid;
	int st;

	if (!have_gnuplot()) {
		fprintf(stderr,
			"ezfs bench: --plot: gnuplot not found; install "
			"it (Debian: apt-get install gnuplot-nox) and rerun; "
			"no charts written\n");
		return 0;
	}
	if (ezfs_bench_write_plot(b, dir, script, sizeof(script)))
		return -EIO;
	pid = fork();
	if (pid == 0) {
		execlp("gnuplot", "gnuplot", script, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) ||
	    WEXITSTATUS(st)) {
		cli_error(BENCH_CMD, "gnuplot %s failed", script);
		return -EIO;
	}
	if (!quiet)
		printf("charts: %s/*.png\n", dir);
	return 0;
}

/* The modes of mode ("all": read, ratio, latency), each then its table. */
static int run_modes(ezfs_bench *b, unsigned modes, struct prog *pg)
{
	unsigned m;
	int err = 0;

	for (m = EZFS_BENCH_READ; m <= EZFS_BENCH_ADVISE && !err; m <<= 1) {
		if (!(modes & m))
			continue;
		err = ezfs_bench_run(b, m);
		prog_clear(pg);
		if (m == EZFS_BENCH_ADVISE && err)
			break;
		ezfs_bench_write_table(b, m, stdout);
		if (m == EZFS_BENCH_READ)
			warn_short(b);
	}
	return err;
}

static unsigned mode_bits(const char *mode)
{
	if (!strcmp(mode, "all"))
		return EZFS_BENCH_READ | EZFS_BENCH_RATIO | EZFS_BENCH_LATENCY;
	return !strcmp(mode, "read")	  ? EZFS_BENCH_READ
	       : !strcmp(mode, "ratio")	  ? EZFS_BENCH_RATIO
	       : !strcmp(mode, "latency") ? EZFS_BENCH_LATENCY
	       : !strcmp(mode, "advise")  ? EZFS_BENCH_ADVISE
					  : 0;
}

int cmd_bench(int argc, char **argv)
{
	struct ezfs_bench_params o;
	struct ezfs_bench_source src = { 0 };
	struct bench_cli cli = { 0 };
	struct prog pg = { 0 };
	ezfs_bench *b = NULL;
	const char *mode, *source;
	unsigned modes;
	double t0 = now(), la[3];
	int rc, err;

	ezfs_bench_params_init(&o);
	rc = parse_opts(argc, argv, &o, &cli);
	if (rc)
		return rc == 1 ? 0 : rc;
	if (optind >= argc)
		return cli_usage_error(BENCH_CMD,
				       "missing mode "
				       "(read, ratio, latency, all, advise)");
	mode = argv[optind++];
	modes = mode_bits(mode);
	if (!modes)
		return cli_usage_error(BENCH_CMD, "unknown mode '%s'", mode);
	source = optind < argc ? argv[optind++] : NULL;
	if (optind < argc)
		return cli_usage_error(BENCH_CMD, "unexpected '%s'",
				       argv[optind]);
	if (o.path && strcmp(mode, "read"))
		return cli_usage_error(BENCH_CMD, "--path works with read");
	if ((o.storage || o.storage_rate > 0 || o.storage_lat >= 0 ||
	     o.reader) &&
	    strcmp(mode, "advise"))
		return cli_usage_error(BENCH_CMD,
				       "--storage, --storage-rate, "
				       "--storage-latency and --reader work "
				       "with advise");
	if (!source && !o.path)
		return cli_usage_error(BENCH_CMD, "missing SOURCE");
	if (!strcmp(mode, "advise") && !cli.size_given)
		o.max_sample = 16ull << 20;
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
	print_header(&cli, mode);
	pg.quiet = cli.quiet;
	pg.on = !cli.quiet && isatty(2);
	pg.start = t0;
	o.modes = modes;
	o.log = on_log;
	o.log_arg = &pg;
	o.progress = on_progress;
	o.progress_arg = &pg;
	catch_signals();
	err = ezfs_bench_new(&o, source, &running);
	b = running;
	if (!err)
		ezfs_bench_source_info(b, &src);
	if (!err && !cli.quiet && source && !src.is_image)
		printf("sample: %s, %llu bytes, %llu blocks of 4 KiB\n", source,
		       (unsigned long long)src.input_bytes,
		       (unsigned long long)src.input_blocks);
	if (!err && (modes & EZFS_BENCH_RATIO) && src.is_image) {
		if (!cli.quiet || modes == EZFS_BENCH_RATIO)
			printf("ratio: skipped, SOURCE is an image (give the "
			       "directory it was built from)\n");
		modes &= ~(unsigned)EZFS_BENCH_RATIO;
	}
	if (!err && (modes & EZFS_BENCH_ADVISE) && src.is_image) {
		cli_error(BENCH_CMD, "advise needs the source tree, not an "
				     "image");
		err = -EINVAL;
	}
	if (!err)
		err = run_modes(b, modes, &pg);
	if (b && ezfs_bench_nrecords(b)) {
		if (cli.csv && ezfs_bench_write_csv(b, cli.csv))
			err = err ? err : -EIO;
		if (cli.json && ezfs_bench_write_json(b, cli.json))
			err = err ? err : -EIO;
		if (cli.plot && strcmp(mode, "advise"))
			plot(b, cli.plot, cli.quiet);
	}
	if (!cli.quiet) {
		loadavg(la);
		printf("\ndone in %.1f s, load average %.2f %.2f %.2f\n",
		       now() - t0, la[0], la[1], la[2]);
	}
	running = NULL;
	ezfs_bench_free(b);
	return err ? 1 : 0;
}
