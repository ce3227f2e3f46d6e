/* SPDX-License-Identifier: MIT */
/*
 * compat_fsck.c - ezfs as fsck.erofs: erofs-utils' options and exit
 * status over ezfs_fsck, and --extract over ezfs extract's code.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "extract.h"
#include "cmd.h"

#define CF	     "fsck.erofs"
#define CF_MAX_SHOWN 100

enum {
	CF_EXTRACT = 0x200,
	CF_FORCE,
	CF_OVERWRITE,
	CF_PRESERVE,
	CF_NO_PRESERVE,
	CF_PRESERVE_OWNER,
	CF_NO_PRESERVE_OWNER,
	CF_PRESERVE_PERMS,
	CF_NO_PRESERVE_PERMS,
	CF_XATTRS,
	CF_NO_XATTRS,
	CF_NID,
	CF_PATH,
	CF_NO_DATA,
	CF_NO_SBCRC,
	CF_DIGEST,
};

struct cf_state {
	const char *img;
	uint64_t shown;
	int quiet;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fsck.erofs [OPTIONS] IMAGE\n"
		"Check an EROFS image (ezfs %s), optionally extracting it.\n"
		" -V, --version        print the version and exit\n"
		" -d N                 message level (accepted, ignored)\n"
		" -p                   print the compression ratio of all "
		"files\n"
		" -a, -A, -n, -y       accepted and ignored (fsck "
		"conventions)\n"
		" --extract[=X]        check every file, extracting it to X\n"
		" --nid=N, --path=P    extract (with --extract=X) only this\n"
		"                      inode; checking covers the whole image\n"
		" -j, --jobs N, --workers N\n"
		"                      data decoding threads\n"
		" --no-data            check the metadata only (not with "
		"--extract)\n"
		" -q, --quiet          accepted (only problems are printed)\n"
		" --device=X           an extra device (again for each, in\n"
		"                      device-table order)\n"
		" --offset=#           skip # bytes at the beginning of IMAGE\n"
		" --no-sbcrc           check an image whose superblock "
		"checksum\n"
		"                      does not match\n"
		" --[no-]xattrs        with --extract=X: restore extended\n"
		"                      attributes (default off); xattrs are\n"
		"                      always checked\n"
		" --xattr-inode-digest verify the inode digests recorded as\n"
		"                      xattrs (mkfs.erofs "
		"--xattr-inode-digest)\n"
		" --help               display this help and exit\n"
		"Extraction options (--extract=X is required):\n"
		" --force              allow extracting to the root directory\n"
		" --overwrite          overwrite what already exists in X\n"
		" --[no-]preserve      both of the next two\n"
		" --[no-]preserve-owner\n"
		"                      owners as in the image (default as "
		"root)\n"
		" --[no-]preserve-perms\n"
		"                      accepted; modes are always restored\n"
		" --[no-]xattrs        restore extended attributes (default "
		"off)\n"
		"ezfs options:\n" CLI_ENGINE_HELP CLI_VERITY_HELP
			CLI_REMOTE_HELP
		"Exit status: 0 clean, 1 problems found or extraction failed,\n"
		"2 usage error.\n",
		EZFS_VERSION_STRING);
}

static void problem_cb(void *arg, uint64_t nid, const char *path,
		       const char *msg)
{
	struct cf_state *s = arg;
	char q[1024];

	if (++s->shown > CF_MAX_SHOWN)
		return;
	if (path) {
		ezfs_quote(path, strlen(path), q, sizeof(q));
		cli_error(CF, "%s: nid %" PRIu64 " (%s): %s", s->img, nid, q,
			  msg);
	} else {
		cli_error(CF, "%s: nid %" PRIu64 ": %s", s->img, nid, msg);
	}
}

struct ratio {
	struct cli_nidset seen;
	unsigned blkszbits;
	uint64_t logical, physical; /* blocks */
};

static int ratio_cb(void *arg, const char *path, uint64_t nid,
		    const struct ezfs_stat *st, ezfs_inode *ino)
{
	struct ratio *r = arg;
	uint64_t blocks =
		(st->size + (1ull << r->blkszbits) - 1) >> r->blkszbits;

	(void)path;
	(void)ino;
	if (!S_ISREG(st->mode) || cli_nidset_add(&r->seen, nid) <= 0)
		return 0;
	r->logical += blocks;
	if (st->layout == EZFS_LAYOUT_COMPRESSED_FULL ||
	    st->layout == EZFS_LAYOUT_COMPRESSED_COMPACT)
		r->physical += st->blocks;
	else
		r->physical += blocks;
	return 0;
}

static void print_ratio(ezfs_image *fs)
{
	struct ezfs_sb_info si;
	struct ratio r;

	memset(&r, 0, sizeof(r));
	ezfs_get_sb_info(fs, &si);
	r.blkszbits = si.blkszbits;
	cli_walk(fs, si.root_nid, ratio_cb, &r);
	cli_nidset_free(&r.seen);
	printf("Compression ratio: %.2f(%%)\n",
	       r.logical ? 100.0 * r.physical / r.logical : 100.0);
}

/* Check the image: data too unless skip_data. 0 clean, 1 otherwise. */
static int check(const char *img, unsigned threads, int skip_data, int ratio,
		 const char *path, const uint64_t *nid, int digest)
{
	struct ezfs_fsck_params p;
	struct ezfs_fsck_result r;
	struct cli_log lg = { .max = 20 };
	struct cf_state s = { .img = img };
	struct ezfs_stat st;
	ezfs_image *fs;
	uint64_t n;
	int ret;

	if (cli_open(CF, img, &lg, &fs) < 0)
		return 1;
	ret = 0;
	if (path)
		ret = ezfs_resolve(fs, path, &n);
	else if (nid)
		ret = ezfs_stat_nid(fs, *nid, &st);
	if (ret < 0) {
		cli_fail(CF, img, path, ret);
		ezfs_image_close(fs);
		return 1;
	}
	ezfs_fsck_params_init(&p);
	memset(&r, 0, sizeof(r));
	p.threads = threads ? threads : cli_online_cpus();
	p.skip_data = skip_data;
	p.inode_digests = digest;
	p.problem = problem_cb;
	p.arg = &s;
	ret = ezfs_fsck(fs, &p, &r);
	if (ret == -ENODATA && digest)
		cli_error(CF,
			  "%s: no inode digests (not made with "
			  "--xattr-inode-digest)",
			  img);
	else if (ret < 0 && ret != -EUCLEAN)
		cli_fail(CF, img, NULL, ret);
	if (s.shown > CF_MAX_SHOWN)
		cli_error(CF, "%s: %" PRIu64 " more problems not shown", img,
			  s.shown - CF_MAX_SHOWN);
	if (r.problems)
		cli_error(CF, "%s: %" PRIu64 " problem%s found", img,
			  r.problems, r.problems == 1 ? "" : "s");
	if (!ret && !r.problems && ratio)
		print_ratio(fs);
	ezfs_image_close(fs);
	return ret == 0 && !r.problems ? 0 : 1;
}

/* X is "/" itself (or resolves to it). */
static int is_root_dir(const char *dir)
{
	char buf[PATH_MAX];

	return realpath(dir, buf) && !strcmp(buf, "/");
}

int compat_fsck_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "extract", optional_argument, NULL, CF_EXTRACT },
		{ "force", no_argument, NULL, CF_FORCE },
		{ "overwrite", no_argument, NULL, CF_OVERWRITE },
		{ "preserve", no_argument, NULL, CF_PRESERVE },
		{ "no-preserve", no_argument, NULL, CF_NO_PRESERVE },
		{ "preserve-owner", no_argument, NULL, CF_PRESERVE_OWNER },
		{ "no-preserve-owner", no_argument, NULL,
		  CF_NO_PRESERVE_OWNER },
		{ "preserve-perms", no_argument, NULL, CF_PRESERVE_PERMS },
		{ "no-preserve-perms", no_argument, NULL,
		  CF_NO_PRESERVE_PERMS },
		{ "xattrs", no_argument, NULL, CF_XATTRS },
		{ "no-xattrs", no_argument, NULL, CF_NO_XATTRS },
		{ "nid", required_argument, NULL, CF_NID },
		{ "path", required_argument, NULL, CF_PATH },
		{ "jobs", required_argument, NULL, 'j' },
		{ "workers", required_argument, NULL, 'j' },
		{ "no-data", no_argument, NULL, CF_NO_DATA },
		{ "no-sbcrc", no_argument, NULL, CF_NO_SBCRC },
		{ "xattr-inode-digest", no_argument, NULL, CF_DIGEST },
		{ "quiet", no_argument, NULL, 'q' },
		{ "version", no_argument, NULL, 'V' },
		CLI_ENGINE_OPTS,
		CLI_IMAGE_OPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct x_opts o;
	const char *dir = NULL;
	char *end;
	int c, ret, extract = 0, xonly = 0, ratio = 0, no_data = 0;
	int owner = geteuid() == 0, xattrs = 0, digest = 0;

	memset(&o, 0, sizeof(o));
	o.quiet = 1;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":Vd:paAnyj:qh", opts, NULL)) !=
	       -1) {
		switch (c) {
		case 'V':
			printf("fsck.erofs (ezfs) %s\n", EZFS_VERSION_STRING);
			return 0;
		case 'd':
			if (strtol(optarg, &end, 10) < 0 || *end ||
			    end == optarg)
				return cli_usage_error(CF, "invalid -d '%s'",
						       optarg);
			break;
		case 'p':
			ratio = 1;
			break;
		case 'a':
		case 'A':
		case 'n':
		case 'y':
			break;
		case 'j':
			o.threads = cli_opt_jobs(CF, optarg);
			if (!o.threads)
				return 2;
			break;
		case 'q':
			break;
		case CF_NO_DATA:
			no_data = 1;
			break;
		case CF_NO_SBCRC:
			cli_set_no_sb_crc();
			break;
		case CF_DIGEST:
			digest = 1;
			break;
		case CF_EXTRACT:
			extract = 1;
			dir = optarg && *optarg ? optarg : NULL;
			break;
		case CF_FORCE:
			o.force |= 2;
			xonly = 1;
			break;
		case CF_OVERWRITE:
			o.force |= 1;
			xonly = 1;
			break;
		case CF_PRESERVE:
		case CF_PRESERVE_OWNER:
			owner = 1;
			xonly = 1;
			break;
		case CF_NO_PRESERVE:
		case CF_NO_PRESERVE_OWNER:
			owner = 0;
			xonly = 1;
			break;
		case CF_PRESERVE_PERMS:
		case CF_NO_PRESERVE_PERMS:
			xonly = 1;
			break;
		case CF_XATTRS: /* without --extract=X: checked anyway */
			xattrs = 1;
			break;
		case CF_NO_XATTRS:
			xattrs = 0;
			break;
		case CF_NID:
			errno = 0;
			o.nid = strtoull(optarg, &end, 0);
			if (errno || *end || end == optarg || *optarg == '-')
				return cli_usage_error(CF, "invalid nid '%s'",
						       optarg);
			o.by_nid = 1;
			break;
		case CF_PATH:
			o.subpath = optarg;
			break;
		default:
			ret = cli_opt_other(CF, c, argv, usage);
			if (ret >= 0)
				return ret;
		}
	}
	if (cli_nargs(CF, argc - optind, 1, 1, "missing IMAGE"))
		return 2;
	if (xonly && !dir)
		return cli_usage_error(CF, "extraction options need "
					   "--extract=X");
	if (digest && no_data)
		return cli_usage_error(CF, "--xattr-inode-digest reads the "
					   "data: not with --no-data");
	if (o.by_nid && o.subpath)
		return cli_usage_error(CF, "--nid and --path exclude each "
					   "other");
	o.img = argv[optind];
	if (!dir) /* a plain check, or --extract without X */
		return check(o.img, o.threads, no_data && !extract, ratio,
			     o.subpath, o.by_nid ? &o.nid : NULL, digest);
	if (is_root_dir(dir) && !(o.force & 2)) {
		cli_error(CF,
			  "%s: extracting to the root directory needs "
			  "--force",
			  dir);
		return 1;
	}
	/* metadata first, for every inode; extraction decodes the data
	 * (the digests need it decoded here) */
	ret = check(o.img, o.threads, !digest, 0, o.subpath,
		    o.by_nid ? &o.nid : NULL, digest);
	if (ret)
		return ret;
	o.dest = dir;
	o.cmd = CF;
	o.force_opt = "--overwrite";
	o.force = !!(o.force & 1);
	o.no_owner = !owner;
	o.no_xattrs = !xattrs;
	ret = x_extract(&o);
	if (!ret && ratio) {
		struct cli_log lg = { .max = 20 };
		ezfs_image *fs;

		if (cli_open(CF, o.img, &lg, &fs) < 0)
			return 1;
		print_ratio(fs);
		ezfs_image_close(fs);
	}
	return ret;
}
