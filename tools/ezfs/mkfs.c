/* SPDX-License-Identifier: MIT */
/* mkfs.c - `ezfs mkfs`: parse options, run the builder, print a summary. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "common.h"
#include "ezfs/build.h"
#include "mkfs_z.h"
#include "mkfs_sig.h"

#define CMD "mkfs"

static const char usage_text[] =
	"usage: ezfs mkfs [OPTIONS] IMAGE SOURCEDIR\n"
	"       ezfs mkfs [OPTIONS] --tar[=f] IMAGE [TARFILE|-]\n"
	"Build an EROFS image of SOURCEDIR, or of a tar archive (plain, gzip or\n"
	"xz; standard input when TARFILE is - or missing).\n"
	"IMAGE is a regular file, replaced only once the new image is complete\n"
	"(it keeps its mode and owner; a new one gets 0666 less the umask; a\n"
	"symlink is followed), or a block device, written in place.\n"
	"  --tar[=f]             SOURCE is a tar archive (--ungzip, --unxz: the\n"
	"                        same; the compression is detected anyway)\n"
	"  -z ALG[,level=N|,N][:ALG2...]\n"
	"                        compress: lz4, lz4hc (levels 0..12), lzma (0..9,\n"
	"                        100..109 extreme), deflate, libdeflate, zstd\n"
	"                        (0..22), none (deflate: ezfs' one-pass encoder,\n"
	"                        levels 0..9; libdeflate: trial compressions,\n"
	"                        0..12, also deflate 10..12; both default to 1\n"
	"                        as in mkfs.erofs);\n"
	"                        further algorithms are for --compress-hints\n"
	"  --compress-hints=FILE per-file rules 'PCLUSTER_BYTES [ALG_INDEX] REGEX'\n"
	"  -C BYTES              max pcluster size, a multiple of the block size\n"
	"                        up to 1048576 (default 1 block)\n"
	"  -b BYTES              block size (512..4096, default 4096)\n"
	"  -T SECONDS            fixed build timestamp (also SOURCE_DATE_EPOCH)\n"
	"  --all-time            -T applies to every file (default)\n"
	"  --mkfs-time           -T is the build time only; files keep mtimes\n"
	"  -U UUID               volume UUID\n"
	"  -L LABEL              volume label (at most 15 bytes)\n"
	"  --all-root            files owned by root\n"
	"  --force-uid=N, --force-gid=N\n"
	"  --uid-offset=N, --gid-offset=N  added to every owner\n"
	"  -x N                  xattrs used by more than N inodes are shared;\n"
	"                        N < 0 drops xattrs (default 2)\n"
	"  -E OPT[,OPT]          noinline_data, force-inode-compact,\n"
	"                        force-inode-extended, legacy-compress, nosbcrc,\n"
	"                        ztailpacking, fragments, all-fragments,\n"
	"                        dedupe, force-chunk-indexes, 48bit\n"
	"  --exclude-path=PATH   skip PATH (relative to SOURCEDIR); repeatable\n"
	"  --exclude-regex=RE    skip paths matching RE; repeatable\n"
	"  -j, --jobs N, --workers=N\n"
	"                        compression threads, 1..1024 (default: all\n"
	"                        cores)\n"
	"  --chunksize=BYTES     chunk-based uncompressed files (power of two\n"
	"                        >= block size): identical chunks stored once,\n"
	"                        all-zero chunks as holes\n"
	"  --fsync               wait until the image is on disk before it\n"
	"                        replaces IMAGE (default: not, as mkfs.erofs\n"
	"                        and mksquashfs; --no-fsync)\n"
	"  -q, --quiet           no progress, no summary\n";

struct mkfs_state {
	int quiet;
	int logged_error;
	struct cli_progress pr;
	int phase;
};

static void mkfs_log(void *arg, int level, const char *msg)
{
	struct mkfs_state *s = arg;

	if (level == EZFS_LOG_ERROR)
		s->logged_error = 1;
	else if (s->quiet)
		return;
	cli_error(CMD, "%s%s", level == EZFS_LOG_WARN ? "warning: " : "", msg);
}

static void mkfs_progress(void *arg, const struct ezfs_build_progress *p)
{
	struct mkfs_state *s = arg;

	if (p->phase != EZFS_BUILD_DATA)
		return;
	if (s->phase != EZFS_BUILD_DATA) {
		s->phase = EZFS_BUILD_DATA;
		cli_progress_init(&s->pr, s->quiet, "mkfs", "files",
				  p->bytes_total, p->items_total);
	}
	cli_progress_update(&s->pr, p->bytes, p->items, 0);
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || end == s || *end || *s == '-' ? -EINVAL : 0;
}

static int parse_uuid(const char *s, uint8_t out[16])
{
	int n = 0;

	for (; *s && n < 32; s++) {
		int v;

		if (*s == '-')
			continue;
		if (*s >= '0' && *s <= '9')
			v = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			v = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			v = *s - 'A' + 10;
		else
			return -EINVAL;
		if (n & 1)
			out[n / 2] |= (uint8_t)v;
		else
			out[n / 2] = (uint8_t)(v << 4);
		n++;
	}
	return n == 32 && !*s ? 0 : -EINVAL;
}

/* -E OPT[,OPT]...: 0, or 2 after a usage error naming the bad item */
static int parse_E(const char *arg, struct ezfs_build_params *p)
{
	static const struct { const char *name; unsigned flag; } opts[] = {
		{ "noinline_data", EZFS_BUILD_NOINLINE_DATA },
		{ "^inline_data", EZFS_BUILD_NOINLINE_DATA },
		{ "force-inode-compact", EZFS_BUILD_FORCE_COMPACT },
		{ "force-inode-extended", EZFS_BUILD_FORCE_EXTENDED },
		{ "legacy-compress", EZFS_BUILD_LEGACY_COMPRESS },
		{ "ztailpacking", EZFS_BUILD_ZTAILPACKING },
		{ "fragments", EZFS_BUILD_FRAGMENTS },
		{ "all-fragments", EZFS_BUILD_ALL_FRAGMENTS },
		{ "dedupe", EZFS_BUILD_DEDUPE },
		{ "force-chunk-indexes", EZFS_BUILD_CHUNK_INDEXES },
		{ "48bit", EZFS_BUILD_48BIT },
		{ "nosbcrc", EZFS_BUILD_NO_SBCRC },
	};
	const char *tok = arg;

	for (;;) {
		size_t len = strcspn(tok, ","), i;

		for (i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
			if (strlen(opts[i].name) == len &&
			    !strncmp(tok, opts[i].name, len))
				break;
		if (!len)
			return cli_usage_error(CMD, "-E '%s': empty option "
					       "(-E OPT[,OPT...])", arg);
		if (i == sizeof(opts) / sizeof(opts[0]))
			return cli_usage_error(CMD, "unknown -E option '%.*s' "
					       "(see --help)", (int)len, tok);
		p->flags |= opts[i].flag;
		if (!tok[len])
			return 0;
		tok += len + 1;
	}
}

/* -x N: any int (N < 0 drops xattrs) */
static int parse_int(const char *s, int *v)
{
	char *end;
	long l;

	errno = 0;
	l = strtol(s, &end, 10);
	if (errno || end == s || *end || l < INT_MIN || l > INT_MAX)
		return -EINVAL;
	*v = (int)l;
	return 0;
}

/* -j N, --jobs N, --workers=N: 0, or 2 after a usage error */
static int parse_jobs(const char *opt, const char *arg, unsigned *n)
{
	*n = cli_parse_threads(arg);
	if (*n)
		return 0;
	return cli_usage_error(CMD, "%s: bad thread count '%s' (1..1024)", opt,
			       arg);
}

/*
 * Where IMAGE leads, checked before the source is read: *target is image
 * with its symlinks resolved (malloc'd), *device 1 for a block device.
 * 0, or 1 after one line naming image.
 */
static int check_image(const char *image, char **target, int *device)
{
	const char *what = NULL, *slash;
	char *cur = strdup(image), *dir;
	unsigned hops = 0;
	struct stat st;
	int err = 0;

	*device = 0;
	while (cur && !lstat(cur, &st) && S_ISLNK(st.st_mode)) {
		char buf[4096], *next;
		size_t dlen;
		ssize_t n;

		n = ++hops > 40 ? -1 : readlink(cur, buf, sizeof(buf) - 1);
		if (n < 0) {
			err = hops > 40 ? ELOOP : errno;
			break;
		}
		buf[n] = '\0';
		slash = strrchr(cur, '/');
		dlen = buf[0] == '/' || !slash ? 0 : (size_t)(slash - cur) + 1;
		next = malloc(dlen + (size_t)n + 1);
		if (next) {
			memcpy(next, cur, dlen);
			memcpy(next + dlen, buf, (size_t)n + 1);
		}
		free(cur);
		cur = next;
	}
	if (!cur)
		err = ENOMEM;
	if (!err && !stat(cur, &st)) {
		if (S_ISBLK(st.st_mode)) {
			*device = 1;
			if (access(cur, W_OK))
				err = errno;
		} else if (S_ISDIR(st.st_mode)) {
			err = EISDIR;
		} else if (S_ISCHR(st.st_mode)) {
			what = "a character device";
		} else if (S_ISFIFO(st.st_mode)) {
			what = "a FIFO";
		} else if (!S_ISREG(st.st_mode)) {
			what = "a special file";
		}
	} else if (!err && errno != ENOENT) {
		err = errno;
	}
	if (!err && !what && !*device) {
		/* a new file or a replacement is made in the directory */
		slash = strrchr(cur, '/');
		dir = slash ? strndup(cur, (size_t)(slash - cur) + 1)
			    : strdup(".");
		if (!dir)
			err = ENOMEM;
		else if (stat(dir, &st) || access(dir, W_OK | X_OK))
			err = errno;
		else if (!S_ISDIR(st.st_mode))
			err = ENOTDIR;
		free(dir);
	}
	if (what)
		cli_error(CMD, "%s: %s, not a regular file or a block device",
			  image, what);
	else if (err)
		cli_error(CMD, "%s: %s", image, strerror(err));
	if (what || err) {
		free(cur);
		return 1;
	}
	*target = cur;
	return 0;
}

enum {
	OPT_ALL_TIME = 256, OPT_MKFS_TIME, OPT_ALL_ROOT, OPT_FORCE_UID,
	OPT_FORCE_GID, OPT_EXCL_PATH, OPT_EXCL_RE, OPT_WORKERS, OPT_HELP,
	OPT_NOFSYNC, OPT_FSYNC, OPT_CHUNKSIZE, OPT_HINTS, OPT_UID_OFF, OPT_GID_OFF,
	OPT_TAR, OPT_UNGZIP, OPT_UNXZ, OPT_JOBS,
};

/* --tar[=f], --ungzip, --unxz: 0, or the usage error's exit status */
static int parse_tar(int c, const char *arg)
{
	if (c == OPT_TAR && arg && strcmp(arg, "f"))
		return cli_usage_error(CMD, "--tar=%s: not supported (only full "
				       "images, --tar or --tar=f)", arg);
	if (c != OPT_TAR && arg)
		return cli_usage_error(CMD, "--%s=FILE: not supported",
				       c == OPT_UNGZIP ? "ungzip" : "unxz");
	return 0;
}

/* What needs all options (the block size): 0, or 2 after a usage error */
static int check_options(struct ezfs_build_params *p, const char *pcluster)
{
	unsigned blksz = p->blksz ? p->blksz : 4096;
	uint64_t v;

	if (pcluster) {
		if (parse_u64(pcluster, &v) || !v || v % blksz ||
		    v > (1u << 20))
			return cli_usage_error(CMD, "-C %s: the pcluster size "
					       "must be a multiple of the block "
					       "size (%u) up to 1048576",
					       pcluster, blksz);
		p->pcluster_size = (uint32_t)v;
	}
	if (p->chunksize && p->chunksize < blksz)
		return cli_usage_error(CMD, "--chunksize %u: less than the "
				       "block size (%u)", p->chunksize, blksz);
	if ((p->flags & EZFS_BUILD_FORCE_COMPACT) &&
	    (p->flags & EZFS_BUILD_FORCE_EXTENDED))
		return cli_usage_error(CMD, "-E force-inode-compact and "
				       "force-inode-extended exclude each "
				       "other");
	return 0;
}

int cmd_mkfs(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "all-time", no_argument, NULL, OPT_ALL_TIME },
		{ "mkfs-time", no_argument, NULL, OPT_MKFS_TIME },
		{ "all-root", no_argument, NULL, OPT_ALL_ROOT },
		{ "force-uid", required_argument, NULL, OPT_FORCE_UID },
		{ "force-gid", required_argument, NULL, OPT_FORCE_GID },
		{ "exclude-path", required_argument, NULL, OPT_EXCL_PATH },
		{ "exclude-regex", required_argument, NULL, OPT_EXCL_RE },
		{ "workers", required_argument, NULL, OPT_WORKERS },
		{ "jobs", required_argument, NULL, OPT_JOBS },
		{ "chunksize", required_argument, NULL, OPT_CHUNKSIZE },
		{ "no-fsync", no_argument, NULL, OPT_NOFSYNC },
		{ "fsync", no_argument, NULL, OPT_FSYNC },
		{ "compress-hints", required_argument, NULL, OPT_HINTS },
		{ "uid-offset", required_argument, NULL, OPT_UID_OFF },
		{ "gid-offset", required_argument, NULL, OPT_GID_OFF },
		{ "tar", optional_argument, NULL, OPT_TAR },
		{ "ungzip", optional_argument, NULL, OPT_UNGZIP },
		{ "unxz", optional_argument, NULL, OPT_UNXZ },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	struct ezfs_build_params p;
	struct ezfs_build_stats st;
	struct mkfs_state s = { .phase = -1 };
	const char **xpaths = NULL, **xres = NULL, *hints = NULL;
	struct mkfs_z zs = { .nhints = 0 };
	int c, err, ret = 1, mkfs_time = 0, tar = 0, device = 0;
	char *tmpdir = NULL, *target = NULL;
	const char *pcluster = NULL;
	ezfs_builder *b = NULL;
	const char *sde;
	uint64_t v;

	ezfs_build_params_init(&p);
	/* like mkfs.erofs and mksquashfs: no sync unless asked (the sync
	 * was 0.13 s of 0.22 for 256 MiB stored uncompressed) */
	p.flags |= EZFS_BUILD_NO_FSYNC;
	xpaths = calloc((size_t)argc, sizeof(*xpaths));
	xres = calloc((size_t)argc, sizeof(*xres));
	if (!xpaths || !xres) {
		cli_error(CMD, "out of memory");
		goto out;
	}
	optind = 1;
	opterr = 0;	/* cli_opt_error() says it, once */
	while ((c = getopt_long(argc, argv, ":z:C:b:T:U:L:x:E:d:j:qh", lopts,
				NULL)) != -1) {
		switch (c) {
		case 'z':
			ret = mkfs_z_parse(CMD, optarg, &p, &zs);
			if (ret)
				goto out;
			break;
		case OPT_HINTS:
			hints = optarg;
			break;
		case OPT_UID_OFF:
		case OPT_GID_OFF:
			if (parse_u64(optarg, &v) || v > 0xFFFFFFFFu) {
				ret = cli_usage_error(CMD, "bad offset '%s'", optarg);
				goto out;
			}
			if (c == OPT_UID_OFF)
				p.uid_offset = (uint32_t)v;
			else
				p.gid_offset = (uint32_t)v;
			break;
		case 'C':
			/* checked against the block size after all options */
			pcluster = optarg;
			break;
		case 'b':
			if (parse_u64(optarg, &v) || v < 512 || v > 4096 ||
			    (v & (v - 1))) {
				ret = cli_usage_error(CMD,
					"-b %s: the block size must be a "
					"power of two in 512..4096", optarg);
				goto out;
			}
			p.blksz = (unsigned)v;
			break;
		case 'T':
			if (parse_u64(optarg, &v)) {
				ret = cli_usage_error(CMD, "bad -T '%s'", optarg);
				goto out;
			}
			p.has_timestamp = 1;
			p.timestamp = (int64_t)v;
			break;
		case OPT_ALL_TIME:
			mkfs_time = 0;
			break;
		case OPT_MKFS_TIME:
			mkfs_time = 1;
			break;
		case 'U':
			if (parse_uuid(optarg, p.uuid)) {
				ret = cli_usage_error(CMD, "bad -U '%s'", optarg);
				goto out;
			}
			p.has_uuid = 1;
			break;
		case 'L':
			if (strlen(optarg) > 15) {
				ret = cli_usage_error(CMD, "label longer than 15 bytes");
				goto out;
			}
			strcpy(p.label, optarg);
			break;
		case 'x':
			if (parse_int(optarg, &p.xattr_tolerance)) {
				ret = cli_usage_error(CMD,
					"-x '%s': not an integer in %d..%d "
					"(N < 0 drops xattrs)", optarg,
					INT_MIN, INT_MAX);
				goto out;
			}
			break;
		case 'E':
			ret = parse_E(optarg, &p);
			if (ret)
				goto out;
			break;
		case 'd':
			break;
		case 'q':
			s.quiet = 1;
			break;
		case OPT_ALL_ROOT:
			p.flags |= EZFS_BUILD_ALL_ROOT;
			break;
		case OPT_FORCE_UID:
		case OPT_FORCE_GID:
			if (parse_u64(optarg, &v) || v > 0xFFFFFFFFu) {
				ret = cli_usage_error(CMD, "bad id '%s'", optarg);
				goto out;
			}
			if (c == OPT_FORCE_UID)
				p.force_uid = (int64_t)v;
			else
				p.force_gid = (int64_t)v;
			break;
		case OPT_EXCL_PATH:
			xpaths[p.n_exclude_paths++] = optarg;
			break;
		case OPT_EXCL_RE: {
			regex_t re;
			int rc = regcomp(&re, optarg, REG_EXTENDED | REG_NOSUB);

			if (rc) {
				char why[128];

				regerror(rc, &re, why, sizeof(why));
				ret = cli_usage_error(CMD,
					"--exclude-regex '%s': not a POSIX "
					"extended regex: %s", optarg, why);
				goto out;
			}
			regfree(&re);
			xres[p.n_exclude_regex++] = optarg;
			break;
		}
		case OPT_CHUNKSIZE: {
			char *end;
			unsigned long cs = strtoul(optarg, &end, 0);

			if (end == optarg || *end || *optarg == '-' || !cs ||
			    cs > (1ul << 30) || (cs & (cs - 1))) {
				ret = cli_usage_error(CMD,
					"--chunksize '%s': not a power of two "
					"from the block size to 1 GiB", optarg);
				goto out;
			}
			p.chunksize = (uint32_t)cs;
			break;
		}
		case OPT_WORKERS:
		case OPT_JOBS:
		case 'j':
			ret = parse_jobs(c == OPT_WORKERS ? "--workers"
					 : c == OPT_JOBS ? "--jobs" : "-j",
					 optarg, &p.workers);
			if (ret)
				goto out;
			break;
		case OPT_NOFSYNC:
			p.flags |= EZFS_BUILD_NO_FSYNC;
			break;
		case OPT_FSYNC:
			p.flags &= ~(unsigned)EZFS_BUILD_NO_FSYNC;
			break;
		case OPT_TAR:
		case OPT_UNGZIP:
		case OPT_UNXZ:
			ret = parse_tar(c, optarg);
			if (ret)
				goto out;
			tar = 1;
			break;
		case 'h':
		case OPT_HELP:
			fputs(usage_text, stdout);
			ret = 0;
			goto out;
		default:
			/* '?' and ':' of the quiet getopt */
			ret = cli_opt_error(CMD, c, argv);
			goto out;
		}
	}
	ret = check_options(&p, pcluster);
	if (ret)
		goto out;
	if (argc - optind != 2 && !(tar && argc - optind == 1)) {
		ret = cli_usage_error(CMD, tar ? "need IMAGE and at most one TARFILE"
					       : "need IMAGE and SOURCEDIR");
		goto out;
	}
	if (hints) {
		ret = mkfs_z_hints(CMD, hints, &p, &zs);
		if (ret)
			goto out;
	}
	sde = getenv("SOURCE_DATE_EPOCH");
	if (p.has_timestamp) {
		p.time_mode = mkfs_time ? EZFS_TIME_SOURCE : EZFS_TIME_FIXED;
	} else if (sde && *sde) {
		if (parse_u64(sde, &v)) {
			ret = cli_usage_error(CMD, "bad SOURCE_DATE_EPOCH '%s'", sde);
			goto out;
		}
		p.has_timestamp = 1;
		p.timestamp = (int64_t)v;
		p.time_mode = EZFS_TIME_CLAMP;
	}
	p.exclude_paths = xpaths;
	p.exclude_regex = xres;
	if (!p.workers)
		p.workers = cli_online_cpus();
	p.log = mkfs_log;
	p.log_arg = &s;
	p.verbose = EZFS_LOG_WARN;
	p.progress = mkfs_progress;
	p.progress_arg = &s;

	ret = 1;	/* from here on, any failure is an error (exit 1) */
	if (check_image(argv[optind], &target, &device))
		goto out;
	if (tar) {
		/* a spool file for streamed data goes beside the image (or
		 * to $TMPDIR when the image is a device) */
		const char *sl = strrchr(target, '/'), *td = getenv("TMPDIR");

		if (device)
			tmpdir = strdup(td && *td ? td : "/tmp");
		else if (sl)
			tmpdir = strndup(target, (size_t)(sl - target) + 1);
		else
			tmpdir = strdup(".");
		if (!tmpdir)
			goto out;
	}
	err = mkfs_sig_start(argv[optind], target, device);
	if (err) {
		cli_error(CMD, "cannot set up signal handling: %s", strerror(-err));
		goto out;
	}
	err = ezfs_builder_new(&p, &b);
	if (!err && tar)
		err = ezfs_builder_scan_tar(b, argv[optind + 1], tmpdir);
	else if (!err)
		err = ezfs_builder_scan(b, argv[optind + 1]);
	if (!err)
		err = ezfs_builder_write(b, argv[optind]);
	mkfs_sig_done();
	if (s.phase == EZFS_BUILD_DATA)
		cli_progress_end(&s.pr, s.pr.total_bytes, s.pr.total_items);
	if (err) {
		if (!s.logged_error)
			cli_error(CMD, "%s: %s", argv[optind], strerror(-err));
		goto out;
	}
	ezfs_builder_stats(b, &st);
	if (!s.quiet) {
		char in[32], img[32];

		printf("%s: %llu files, %llu dirs, %s in, %s image (%.1f%%), %.2f s\n",
		       argv[optind], (unsigned long long)st.files,
		       (unsigned long long)st.dirs,
		       cli_fmt_size(st.bytes_in, in, sizeof(in)),
		       cli_fmt_size(st.image_bytes, img, sizeof(img)),
		       st.bytes_in ? 100.0 * (double)st.image_bytes /
				     (double)st.bytes_in : 0.0,
		       st.seconds);
	}
	ret = 0;
out:
	ezfs_builder_free(b);
	free(xpaths);
	free(xres);
	free(tmpdir);
	free(target);
	mkfs_z_free(&zs);
	return ret;
}
