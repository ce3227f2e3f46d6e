/* SPDX-License-Identifier: MIT */
/*
 * cache.c - remote images on the command line: the options every reading
 * command takes for them (CLI_IMAGE_OPTS), the open of a URL through
 * libezfs-remote, and `ezfs cache ls|gc`, the persistent cache's listing
 * and eviction.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ezfs/ezfs.h"
#include "common.h"
#ifdef EZFS_HAVE_REMOTE
#include "ezfs/remote.h"
#endif

int cmd_cache(int argc, char **argv);

static struct {
	const char *cache_dir;
	int no_cache;
	unsigned timeout_ms;
	int retries;
	int stats;
	uint64_t cache_max;
	int layer;
	const char *blob, *platform;
	int insecure;
	int serve_unverified;	  /* cli_remote_keep_unverified() */
	const char *record_trace; /* cli_remote_record_trace() */
} ropts = { .retries = -1, .layer = -1 };

int cli_is_remote(const char *img)
{
	return img && (!strncasecmp(img, "http://", 7) ||
		       !strncasecmp(img, "https://", 8) ||
		       !strncasecmp(img, "oci://", 6) ||
		       !strncasecmp(img, "s3://", 5));
}

/* SIZE with K/M/G/T suffixes (powers of 1024); 0 on success. */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -1;
	switch (*end) {
	case 'T':
	case 't':
		v <<= 10; /* fall through */
	case 'G':
	case 'g':
		v <<= 10; /* fall through */
	case 'M':
	case 'm':
		v <<= 10; /* fall through */
	case 'K':
	case 'k':
		v <<= 10;
		end++;
		break;
	case '\0':
		break;
	default:
		return -1;
	}
	if (*end)
		return -1;
	*out = v;
	return 0;
}

int cli_remote_opt(const char *cmd, int c, const char *arg)
{
	char *end;
	unsigned long v;

	switch (c) {
	case CLI_OPT_CACHE_DIR:
		if (!*arg)
			return cli_usage_error(cmd,
					       "--cache-dir needs a folder");
		ropts.cache_dir = arg;
		return -1;
	case CLI_OPT_NO_CACHE:
		ropts.no_cache = 1;
		return -1;
	case CLI_OPT_REMOTE_TIMEOUT:
		errno = 0;
		v = strtoul(arg, &end, 10);
		if (errno || end == arg || *end || !v || v > 3600)
			return cli_usage_error(cmd,
					       "invalid --remote-timeout '%s' "
					       "(seconds, 1..3600)",
					       arg);
		ropts.timeout_ms = (unsigned)v * 1000u;
		return -1;
	case CLI_OPT_REMOTE_RETRIES:
		errno = 0;
		v = strtoul(arg, &end, 10);
		if (errno || end == arg || *end || v > 100)
			return cli_usage_error(cmd,
					       "invalid --remote-retries '%s' "
					       "(0..100)",
					       arg);
		ropts.retries = (int)v;
		return -1;
	case CLI_OPT_REMOTE_STATS:
		ropts.stats = 1;
		return -1;
	case CLI_OPT_LAYER:
		errno = 0;
		v = strtoul(arg, &end, 10);
		if (errno || end == arg || *end || *arg == '-' || v > 100000)
			return cli_usage_error(cmd, "invalid --layer '%s'",
					       arg);
		ropts.layer = (int)v;
		return -1;
	case CLI_OPT_BLOB:
		if (strncmp(arg, "sha256:", 7) || strlen(arg) != 71)
			return cli_usage_error(cmd,
					       "invalid --blob '%s' "
					       "(sha256:64 hex digits)",
					       arg);
		ropts.blob = arg;
		return -1;
	case CLI_OPT_PLATFORM:
		if (!strchr(arg, '/'))
			return cli_usage_error(cmd,
					       "invalid --platform '%s' "
					       "(OS/ARCH[/VARIANT])",
					       arg);
		ropts.platform = arg;
		return -1;
	case CLI_OPT_INSECURE:
		ropts.insecure = 1;
		return -1;
	case CLI_OPT_CACHE_MAX:
		if (parse_size(arg, &ropts.cache_max) || !ropts.cache_max)
			return cli_usage_error(cmd,
					       "invalid --cache-max '%s' "
					       "(SIZE, K/M/G/T suffixes)",
					       arg);
		return -1;
	}
	return 0;
}

/* The cache folder: --cache-dir, else the library's default; NULL with
 * --no-cache (or nowhere to put it). */
static const char *cache_dir(char *buf, size_t size)
{
	if (ropts.no_cache)
		return NULL;
	if (ropts.cache_dir)
		return ropts.cache_dir;
#ifdef EZFS_HAVE_REMOTE
	return ezfs_remote_cache_dir(buf, size);
#else
	(void)buf;
	(void)size;
	return NULL;
#endif
}

#ifdef EZFS_HAVE_REMOTE
/* The source the command opened last, until it closes (one image per
 * command): cli_remote_unverified asks it at the end. */
static ezfs_remote *last_src;

static void print_stats(const char *url, const struct ezfs_remote_stats *st)
{
	const char *path = getenv("EZFS_REMOTE_STATS");
	FILE *f = stderr;
	char line[8192];

	snprintf(line, sizeof(line),
		 "remote: %s: requests=%" PRIu64 " retries=%" PRIu64
		 " fetched=%" PRIu64 " read=%" PRIu64 " reads=%" PRIu64
		 " hits=%" PRIu64 " redirects=%" PRIu64 " cached=%" PRIu64
		 " size=%" PRIu64 " p50_us=%" PRIu64 " p99_us=%" PRIu64
		 " hints=%" PRIu64 " hints_fetched=%" PRIu64 " hinted=%" PRIu64
		 " hit_pct=%" PRIu64 " rounds=%" PRIu64 "\n",
		 url, st->requests, st->retries, st->bytes_fetched,
		 st->bytes_read, st->reads, st->reads_hit, st->redirects,
		 st->cache_bytes, st->size, st->fetch_us_p50, st->fetch_us_p99,
		 st->hints, st->hints_fetched, st->bytes_hinted,
		 st->reads ? st->reads_hit * 100 / st->reads : 0, st->rounds);
	if (path && *path && strcmp(path, "1")) {
		f = fopen(path, "ae");
		if (!f)
			return;
	}
	fputs(line, f);
	if (f != stderr)
		fclose(f);
}

static void on_close(void *arg, const char *url,
		     const struct ezfs_remote_stats *st)
{
	const char *v = getenv("EZFS_REMOTE_STATS");

	last_src = NULL;
	if (ropts.stats || (v && *v))
		print_stats(url, st);
	(void)arg;
}

int cli_remote_source(const char *url, ezfs_log_fn log, void *log_arg,
		      unsigned verbose, const struct ezfs_io_ops **ops,
		      void **arg, uint64_t *size)
{
	struct ezfs_remote_params rp;
	const char *v;
	char buf[4096];
	ezfs_remote *r;
	int err;

	ezfs_remote_params_init(&rp);
	rp.log = log;
	rp.log_arg = log_arg;
	/* a remote source's warnings are for the user: a full cache disk,
	 * a server that does not answer, a registry gone */
	rp.verbose = verbose > EZFS_LOG_WARN ? verbose : EZFS_LOG_WARN;
	rp.serve_unverified = ropts.serve_unverified;
	rp.cache_dir = cache_dir(buf, sizeof(buf));
	rp.cache_max = ropts.cache_max;
	rp.timeout_ms = ropts.timeout_ms;
	if (!rp.timeout_ms && (v = getenv("EZFS_REMOTE_TIMEOUT")) && *v)
		rp.timeout_ms = (unsigned)strtoul(v, NULL, 10) * 1000u;
	rp.retries = ropts.retries;
	rp.layer = ropts.layer;
	rp.blob = ropts.blob;
	rp.platform = ropts.platform;
	rp.insecure = ropts.insecure;
	if (rp.retries < 0 && (v = getenv("EZFS_REMOTE_RETRIES")) && *v)
		rp.retries = atoi(v);
	/* a server ignoring Range: the largest image taken whole */
	if ((v = getenv("EZFS_REMOTE_WHOLE_MAX")) && *v)
		rp.whole_max = strtoull(v, NULL, 10);
	rp.on_close = on_close;
	rp.record_trace = ropts.record_trace;
	err = ezfs_remote_open(url, &rp, &r);
	if (err)
		return err;
	last_src = r;
	*ops = ezfs_remote_io_ops();
	*arg = r;
	*size = ezfs_remote_size(r);
	return 0;
}

void (*cli_remote_hint(void))(void *arg, uint64_t off, uint64_t len,
			      unsigned flags)
{
	return ezfs_remote_hint;
}

void cli_remote_keep_unverified(void)
{
	ropts.serve_unverified = 1;
}

void cli_remote_record_trace(const char *path)
{
	ropts.record_trace = path;
}

int cli_remote_fill(void *src, int policy, uint64_t rate)
{
	return ezfs_remote_fill(src, policy, rate);
}

void (*cli_remote_verity_hook(void))(void *arg, struct ezfs_verity *v,
				     uint64_t base)
{
	return ezfs_remote_set_verity;
}

int cli_remote_announced(void *src, uint8_t root[64], size_t *root_size,
			 uint64_t *hash_offset, int *pinned)
{
	return ezfs_remote_verity_root(src, root, root_size, hash_offset,
				       pinned);
}

int cli_remote_chunked(void *src, int *pinned)
{
	return ezfs_remote_chunk_index(src, pinned) > 0;
}

#define UNVERIFIED_NAMED 20 /* named on stderr; --errors FILE has all */

struct unverified {
	FILE *errs;
	uint64_t n;
};

static int unverified_one(void *arg, const char *path, uint64_t nid,
			  const struct ezfs_stat *st, ezfs_inode *ino)
{
	struct unverified *u = arg;

	(void)nid;
	(void)ino;
	if (S_ISDIR(st->mode))
		return 0;
	if (++u->n <= UNVERIFIED_NAMED)
		fprintf(stderr, "  unverified: %s\n", path);
	if (u->errs)
		fprintf(u->errs, "%s\n", path);
	return 0;
}

int cli_remote_unverified(const char *cmd, const char *img, ezfs_image *fs,
			  const char *sub, FILE *errs)
{
	struct unverified u = { .errs = errs };
	uint64_t nid;
	int err;

	if (!cli_is_remote(img) || !last_src)
		return 0;
	err = ezfs_remote_verify(last_src);
	if (err >= 0)
		return 0;
	if (err != -EBADMSG) {
		cli_error(cmd,
			  "%s: the layer's digest could not be checked (%s); "
			  "the files written from it are unverified",
			  img, strerror(-err));
		return 1;
	}
	cli_error(cmd,
		  "%s: the layer failed its digest check; every file written "
		  "from it is unverified (kept: check them, or extract again "
		  "from a good copy):",
		  img);
	if (sub && *sub == '/' && !ezfs_resolve(fs, sub, &nid) &&
	    cli_walk(fs, nid, unverified_one, &u) >= 0) {
		if (u.n > UNVERIFIED_NAMED)
			fprintf(stderr, "  ... and %llu more%s\n",
				(unsigned long long)(u.n - UNVERIFIED_NAMED),
				errs ? " (--errors lists them all)" : "");
	} else if (sub) {
		/* one file (by nid, or a walk that failed): its name */
		fprintf(stderr, "  unverified: %s\n", sub);
		if (errs)
			fprintf(errs, "%s\n", sub);
	}
	return 1;
}
#else
void (*cli_remote_hint(void))(void *arg, uint64_t off, uint64_t len,
			      unsigned flags)
{
	return NULL;
}

void cli_remote_keep_unverified(void)
{
}

void cli_remote_record_trace(const char *path)
{
	(void)path;
}

int cli_remote_fill(void *src, int policy, uint64_t rate)
{
	(void)src;
	(void)policy;
	(void)rate;
	return 0;
}

void (*cli_remote_verity_hook(void))(void *arg, struct ezfs_verity *v,
				     uint64_t base)
{
	return NULL;
}

int cli_remote_announced(void *src, uint8_t root[64], size_t *root_size,
			 uint64_t *hash_offset, int *pinned)
{
	(void)src;
	(void)root;
	(void)root_size;
	(void)hash_offset;
	(void)pinned;
	return -ENODATA;
}

int cli_remote_chunked(void *src, int *pinned)
{
	(void)src;
	(void)pinned;
	return 0;
}

int cli_remote_unverified(const char *cmd, const char *img, ezfs_image *fs,
			  const char *sub, FILE *errs)
{
	(void)cmd;
	(void)img;
	(void)fs;
	(void)sub;
	(void)errs;
	return 0;
}

int cli_remote_source(const char *url, ezfs_log_fn log, void *log_arg,
		      unsigned verbose, const struct ezfs_io_ops **ops,
		      void **arg, uint64_t *size)
{
	(void)url;
	(void)verbose;
	(void)ops;
	(void)arg;
	(void)size;
	if (log)
		log(log_arg, EZFS_LOG_ERROR,
		    "remote images need libcurl; this ezfs was built "
		    "without it");
	return -EPROTONOSUPPORT;
}
#endif

const char *cli_remote_cache_dir(char *buf, size_t size)
{
	return cache_dir(buf, size);
}

/* ------------------------------------------------------------------ */
/* ezfs cache ls|gc                                                    */

static void cache_usage(FILE *f)
{
	fprintf(f,
		"usage: ezfs cache ls [--cache-dir DIR]\n"
		"       ezfs cache gc [--max SIZE] [--cache-dir DIR]\n"
		"The persistent cache of remote images (http://, https://, "
		"oci://, s3://):\n"
		"  ls    one line per image under a header: the bytes cached, "
		"its size,\n"
		"        last use and what was opened (URL or oci:// "
		"reference), most\n"
		"        recently used first\n"
		"  gc    remove the least recently used images until the "
		"cache takes\n"
		"        at most SIZE (K/M/G/T suffixes; default 0: remove "
		"all)\n"
		"  --cache-dir DIR   the cache (default: EZFS_CACHE_DIR, "
		"else\n"
		"                    $XDG_CACHE_HOME/ezfs, else "
		"~/.cache/ezfs)\n"
		"Options may come before or after ls and gc.\n");
}

#ifdef EZFS_HAVE_REMOTE
static int ls_one(void *arg, const struct ezfs_remote_cache_entry *e)
{
	char a[32], b[32], t[32];

	(void)arg;
	printf("%-16s %10s %10s  %-19s  %s\n", e->key,
	       cli_fmt_size(e->present, a, sizeof(a)),
	       cli_fmt_size(e->size, b, sizeof(b)),
	       cli_fmt_time(e->used, t, sizeof(t)), e->name);
	return 0;
}
#endif

int cmd_cache(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "cache-dir", required_argument, NULL, 'C' },
		{ "max", required_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd = "cache", *dir, *sub;
	uint64_t max = 0;
	int c, have_max = 0;
	char buf[4096];

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			cache_usage(stdout);
			return 0;
		case 'C':
			if (!*optarg)
				return cli_usage_error(cmd, "--cache-dir needs "
							    "a folder");
			ropts.cache_dir = optarg;
			break;
		case 'm':
			if (parse_size(optarg, &max))
				return cli_usage_error(
					cmd,
					"invalid --max '%s' (SIZE, K/M/G/T "
					"suffixes)",
					optarg);
			have_max = 1;
			break;
		default:
			return cli_opt_error(cmd, c, argv);
		}
	}
	if (optind >= argc)
		return cli_usage_error(cmd, "need ls or gc");
	sub = argv[optind++];
	if (strcmp(sub, "ls") && strcmp(sub, "gc"))
		return cli_usage_error(
			cmd, "unknown subcommand '%s' (ls or gc)", sub);
	if (optind < argc)
		return cli_usage_error(cmd, "unexpected '%s'", argv[optind]);
	if (have_max && strcmp(sub, "gc"))
		return cli_usage_error(cmd, "--max is an option of gc");
	dir = cache_dir(buf, sizeof(buf));
	if (!dir) {
		fprintf(stderr, "ezfs cache: no cache folder (set "
				"--cache-dir or HOME)\n");
		return 1;
	}
#ifdef EZFS_HAVE_REMOTE
	if (!strcmp(sub, "ls")) {
		int err;

		printf("%-16s %10s %10s  %-19s  %s\n", "KEY", "CACHED", "SIZE",
		       "LAST USE", "IMAGE");
		err = ezfs_remote_cache_list(dir, ls_one, NULL);
		if (err) {
			fprintf(stderr, "ezfs cache: %s: %s\n", dir,
				strerror(-err));
			return 1;
		}
		return 0;
	}
	{
		uint64_t freed = 0;
		char a[32];
		int err = ezfs_remote_cache_gc(dir, max, &freed);

		if (err) {
			fprintf(stderr, "ezfs cache: %s: %s\n", dir,
				strerror(-err));
			return 1;
		}
		printf("freed %s\n", cli_fmt_size(freed, a, sizeof(a)));
		return 0;
	}
#else
	(void)max;
	fprintf(stderr, "ezfs cache: this ezfs was built without libcurl "
			"(no remote images)\n");
	return 1;
#endif
}
