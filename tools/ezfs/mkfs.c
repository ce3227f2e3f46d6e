/* SPDX-License-Identifier: MIT */
/* mkfs.c - `ezfs mkfs`: parse options, run the builder, print a summary. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	"  --tar[=f]             SOURCE is a tar archive (--ungzip, --unxz: the\n"
	"                        same; the compression is detected anyway)\n"
	"  -z ALG[,level=N|,N][:ALG2...]\n"
	"                        compress: lz4, lz4hc, lzma, deflate, libdeflate,\n"
	"                        zstd, none (deflate: ezfs' one-pass encoder,\n"
	"                        levels 0..9; libdeflate: trial compressions,\n"
	"                        0..12, also deflate 10..12; both default to 1\n"
	"                        as in mkfs.erofs);\n"
	"                        further algorithms are for --compress-hints\n"
	"  --compress-hints=FILE per-file rules 'PCLUSTER_BYTES [ALG_INDEX] REGEX'\n"
	"  -C BYTES              max pcluster size (4096..1048576, default 1 block)\n"
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
	"  --workers=N           compression threads (default: all cores)\n"
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

static int parse_E(const char *arg, struct ezfs_build_params *p)
{
	char *dup = strdup(arg), *tok, *save = NULL;
	int err = 0;

	if (!dup)
		return -ENOMEM;
	for (tok = strtok_r(dup, ",", &save); tok && !err;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "noinline_data") || !strcmp(tok, "^inline_data"))
			p->flags |= EZFS_BUILD_NOINLINE_DATA;
		else if (!strcmp(tok, "force-inode-compact"))
			p->flags |= EZFS_BUILD_FORCE_COMPACT;
		else if (!strcmp(tok, "force-inode-extended"))
			p->flags |= EZFS_BUILD_FORCE_EXTENDED;
		else if (!strcmp(tok, "legacy-compress"))
			p->flags |= EZFS_BUILD_LEGACY_COMPRESS;
		else if (!strcmp(tok, "ztailpacking"))
			p->flags |= EZFS_BUILD_ZTAILPACKING;
		else if (!strcmp(tok, "fragments"))
			p->flags |= EZFS_BUILD_FRAGMENTS;
		else if (!strcmp(tok, "all-fragments"))
			p->flags |= EZFS_BUILD_ALL_FRAGMENTS;
		else if (!strcmp(tok, "dedupe"))
			p->flags |= EZFS_BUILD_DEDUPE;
		else if (!strcmp(tok, "force-chunk-indexes"))
			p->flags |= EZFS_BUILD_CHUNK_INDEXES;
		else if (!strcmp(tok, "48bit"))
			p->flags |= EZFS_BUILD_48BIT;
		else if (!strcmp(tok, "nosbcrc"))
			p->flags |= EZFS_BUILD_NO_SBCRC;
		else
			err = -EINVAL;
	}
	if (err)
		cli_error(CMD, "unknown -E option '%s'", tok);
	free(dup);
	return err;
}

enum {
	OPT_ALL_TIME = 256, OPT_MKFS_TIME, OPT_ALL_ROOT, OPT_FORCE_UID,
	OPT_FORCE_GID, OPT_EXCL_PATH, OPT_EXCL_RE, OPT_WORKERS, OPT_HELP,
	OPT_NOFSYNC, OPT_FSYNC, OPT_CHUNKSIZE, OPT_HINTS, OPT_UID_OFF, OPT_GID_OFF,
	OPT_TAR, OPT_UNGZIP, OPT_UNXZ,
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
	int c, err, ret = 1, mkfs_time = 0, tar = 0;
	char *tmpdir = NULL;
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
	while ((c = getopt_long(argc, argv, "z:C:b:T:U:L:x:E:d:qh", lopts,
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
			if (parse_u64(optarg, &v) || v < 512 || v > (1u << 20)) {
				ret = cli_usage_error(CMD, "bad -C '%s'", optarg);
				goto out;
			}
			p.pcluster_size = (uint32_t)v;
			break;
		case 'b':
			if (parse_u64(optarg, &v) || v > 65536) {
				ret = cli_usage_error(CMD, "bad -b '%s'", optarg);
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
			p.xattr_tolerance = atoi(optarg);
			break;
		case 'E':
			if (parse_E(optarg, &p)) {
				ret = 2;
				goto out;
			}
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
		case OPT_EXCL_RE:
			xres[p.n_exclude_regex++] = optarg;
			break;
		case OPT_CHUNKSIZE: {
			char *end;
			unsigned long cs = strtoul(optarg, &end, 0);

			if (*end || !cs || cs > (1ul << 30) || (cs & (cs - 1))) {
				ret = cli_usage_error(CMD, "bad --chunksize '%s'",
						      optarg);
				goto out;
			}
			p.chunksize = (uint32_t)cs;
			break;
		}
		case OPT_WORKERS:
			p.workers = cli_parse_threads(optarg);
			if (!p.workers) {
				ret = cli_usage_error(CMD, "bad --workers '%s'", optarg);
				goto out;
			}
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
			ret = cli_usage_error(CMD, "unknown option");
			goto out;
		}
	}
	if (argc - optind != 2 && !(tar && argc - optind == 1)) {
		ret = cli_usage_error(CMD, tar ? "need IMAGE and at most one TARFILE"
					       : "need IMAGE and SOURCEDIR");
		goto out;
	}
	if (tar) {
		/* a spool file for streamed data goes beside the image */
		const char *sl = strrchr(argv[optind], '/');

		tmpdir = strndup(argv[optind], sl ? (size_t)(sl - argv[optind]) + 1
						  : 1);
		if (!tmpdir)
			goto out;
		if (!sl)
			strcpy(tmpdir, ".");
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
	err = mkfs_sig_start(argv[optind]);
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
	mkfs_z_free(&zs);
	return ret;
}
