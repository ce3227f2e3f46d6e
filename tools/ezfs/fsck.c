/* SPDX-License-Identifier: MIT */
/* fsck.c - ezfs fsck: check an image with the library's ezfs_fsck. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "cmd.h"
#include "json.h"

#define FSCK_MAX_SHOWN 100 /* problems printed; the rest are counted */

struct fsck_problem {
	uint64_t nid;
	char *path; /* NULL: none */
	char *msg;
};

struct fsck_cli {
	const char *img;
	struct cli_progress prog;
	uint64_t shown;
	int json;
	struct fsck_problem list[FSCK_MAX_SHOWN]; /* --json */
	unsigned nlist;
	/* dm-verity: the tree (has_tree), the problems of its scan */
	int has_tree;
	struct ezfs_verity_info vi;
	uint64_t vproblems;
	char *vlist[FSCK_MAX_SHOWN]; /* --json */
	unsigned nvlist;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ezfs fsck [-q] [-j N] [--no-data] [--json] IMG\n"
		"       ezfs fsck --extract=DIR [fsck.erofs options] IMG\n"
		"Check an image: every inode, directory, xattr and extent\n"
		"map, and decode every byte of file data.\n"
		"  -j, --jobs N, --workers=N\n"
		"                 data decoding threads (default: online "
		"CPUs)\n"
		"  --no-data      check metadata only (and no dm-verity data\n"
		"                 blocks)\n"
		"  --xattr-inode-digest\n"
		"                 also check each file's inode digest (mkfs\n"
		"                 --xattr-inode-digest)\n"
		"  -q, --quiet    no progress bar; the summary only when\n"
		"                 problems are found\n"
		"  --json         the summary and the problems as one JSON\n"
		"                 document (docs/json.md)\n" CLI_ENGINE_HELP
			CLI_IMAGE_HELP
		"fsck.erofs' options (--extract=DIR, --overwrite, --xattrs,\n"
		"--[no-]preserve[-owner|-perms], --nid, --path, -p, -d) work\n"
		"as in 'fsck.erofs --help'.\n"
		"Exit status: 0 clean, 1 problems found, 2 usage error.\n");
}

static void problem_cb(void *arg, uint64_t nid, const char *path,
		       const char *msg)
{
	struct fsck_cli *f = arg;
	char q[1024];

	if (++f->shown > FSCK_MAX_SHOWN)
		return;
	if (f->json) {
		struct fsck_problem *pr = &f->list[f->nlist];

		pr->nid = nid;
		pr->path = path ? strdup(path) : NULL;
		pr->msg = strdup(msg);
		if (pr->msg)
			f->nlist++;
		else
			free(pr->path);
	}
	cli_progress_clear(&f->prog);
	if (path) {
		ezfs_quote(path, strlen(path), q, sizeof(q));
		cli_error("fsck", "%s: nid %" PRIu64 " (%s): %s", f->img, nid,
			  q, msg);
	} else {
		cli_error("fsck", "%s: nid %" PRIu64 ": %s", f->img, nid, msg);
	}
}

static void progress_cb(void *arg, uint64_t inodes, uint64_t bytes)
{
	struct fsck_cli *f = arg;

	cli_progress_update(&f->prog, bytes, inodes, 0);
}

static void verity_progress(void *arg, uint64_t bytes)
{
	struct fsck_cli *f = arg;

	cli_progress_update(&f->prog, bytes, 0, 0);
}

/* A dm-verity problem of the scan: one line. */
static void verity_cb(void *arg, const char *msg)
{
	struct fsck_cli *f = arg;

	if (++f->shown <= FSCK_MAX_SHOWN) {
		if (f->json && f->nvlist < FSCK_MAX_SHOWN &&
		    (f->vlist[f->nvlist] = strdup(msg)))
			f->nvlist++;
		cli_progress_clear(&f->prog);
		cli_error("fsck", "%s: %s", f->img, msg);
	}
}

/* Every data block and tree block against the tree, before the
 * filesystem is walked (whose reads then hash nothing again). */
static int64_t verity_scan(struct fsck_cli *f, ezfs_image *fs, unsigned threads,
			   int quiet)
{
	char b[32], t[320];
	int64_t n;

	if (ezfs_image_verity(fs, &f->vi))
		return 0;
	f->has_tree = 1;
	cli_progress_init(&f->prog, quiet, "dm-verity", "blocks",
			  f->vi.data_blocks * f->vi.data_block_size, 0);
	n = ezfs_image_verity_scan(fs, threads, verity_cb, verity_progress, f);
	cli_progress_end(&f->prog, f->vi.data_blocks * f->vi.data_block_size,
			 0);
	if (n < 0) {
		cli_fail("fsck", f->img, "dm-verity", (int)n);
		return n;
	}
	f->vproblems = (uint64_t)n;
	ezfs_image_verity(fs, &f->vi); /* the root of a one-block tree */
	if (!f->json && (!quiet || n))
		printf("%s: dm-verity: %" PRIu64
		       " data blocks (%s) and %" PRIu64
		       " tree blocks checked, %" PRId64
		       " problem%s; root hash %s (%s)\n",
		       f->img, f->vi.data_blocks,
		       cli_fmt_size(f->vi.data_blocks * f->vi.data_block_size,
				    b, sizeof(b)),
		       f->vi.tree_blocks, n, n == 1 ? "" : "s",
		       cli_hex(f->vi.root, f->vi.root_size, (char[129]){ 0 }),
		       cli_verity_trust(&f->vi, t, sizeof(t)));
	return n;
}

/* --json's "verity": null without a tree */
static void json_verity(struct cj *j, struct fsck_cli *f)
{
	char hex[129], t[320];

	if (!f->has_tree) {
		cj_null(j, "verity");
		return;
	}
	cj_obj(j, "verity");
	cj_str(j, "root_hash", cli_hex(f->vi.root, f->vi.root_size, hex));
	cj_str(j, "trust",
	       f->vi.trust == EZFS_VERITY_TRUST_SIGNED	? "signed"
	       : f->vi.trust == EZFS_VERITY_TRUST_GIVEN ? "given"
							: "none");
	cj_str(j, "trust_text", cli_verity_trust(&f->vi, t, sizeof(t)));
	cj_u64(j, "data_blocks", f->vi.data_blocks);
	cj_u64(j, "tree_blocks", f->vi.tree_blocks);
	cj_u64(j, "problem_count", f->vproblems);
	cj_arr(j, "problems");
	for (unsigned i = 0; i < f->nvlist; i++) {
		cj_str(j, NULL, f->vlist[i]);
		free(f->vlist[i]);
	}
	cj_end(j);
	cj_end(j);
}

/* --json (docs/schemas/fsck.json) */
static void print_json(struct fsck_cli *f, const struct ezfs_fsck_result *r,
		       int skip_data, int ret)
{
	struct cj j;

	cj_init(&j, stdout);
	cj_obj(&j, NULL);
	cj_bytes(&j, "image", f->img, strlen(f->img));
	cj_bool(&j, "clean", ret == 0 && !r->problems && !f->vproblems);
	cj_bool(&j, "data_checked", !skip_data);
	if (ret < 0 && ret != -EUCLEAN)
		cj_str(&j, "error", ezfs_strerror(ret));
	else
		cj_null(&j, "error");
	cj_u64(&j, "inodes", r->inodes);
	cj_u64(&j, "dirs", r->dirs);
	cj_u64(&j, "files", r->files);
	cj_u64(&j, "symlinks", r->symlinks);
	cj_u64(&j, "specials", r->specials);
	cj_u64(&j, "xattrs", r->xattrs);
	cj_u64(&j, "data_bytes", r->data_bytes);
	cj_u64(&j, "problem_count", r->problems + f->vproblems);
	cj_arr(&j, "problems");
	for (unsigned i = 0; i < f->nlist; i++) {
		cj_obj(&j, NULL);
		cj_u64(&j, "nid", f->list[i].nid);
		if (f->list[i].path)
			cj_bytes(&j, "path", f->list[i].path,
				 strlen(f->list[i].path));
		else
			cj_null(&j, "path");
		cj_str(&j, "message", f->list[i].msg);
		cj_end(&j);
		free(f->list[i].path);
		free(f->list[i].msg);
	}
	cj_end(&j);
	json_verity(&j, f);
	cj_end(&j);
}

/* Spellings of fsck.erofs that ezfs fsck hands to its front end. */
static int wants_compat(int argc, char **argv)
{
	static const char *const longs[] = {
		"--extract", "--overwrite", "--preserve", "--no-preserve",
		"--xattrs",  "--no-xattrs", "--nid",	  "--path",
	};
	size_t i, n;
	int a;

	for (a = 1; a < argc && strcmp(argv[a], "--"); a++) {
		if (!strcmp(argv[a], "-p") || !strncmp(argv[a], "-d", 2))
			return 1;
		for (i = 0; i < sizeof(longs) / sizeof(longs[0]); i++) {
			n = strlen(longs[i]);
			if (!strncmp(argv[a], longs[i], n) &&
			    (argv[a][n] == '\0' || argv[a][n] == '=' ||
			     argv[a][n] == '-'))
				return 1;
		}
	}
	return 0;
}

int cmd_fsck(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "jobs", required_argument, NULL, 'j' },
		{ "workers", required_argument, NULL, 'j' },
		{ "no-data", no_argument, NULL, 'N' },
		{ "xattr-inode-digest", no_argument, NULL, 'D' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "json", no_argument, NULL, 'J' },
		CLI_ENGINE_OPTS,
		CLI_IMAGE_OPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ezfs_fsck_params p;
	struct ezfs_fsck_result r;
	struct ezfs_sb_info si;
	static struct fsck_cli f;
	struct cli_log lg = { .max = 20 };
	ezfs_image *fs;
	char b[32];
	int c, ret, quiet = 0;

	if (wants_compat(argc, argv))
		return compat_fsck_main(argc, argv);
	ezfs_fsck_params_init(&p);
	memset(&r, 0, sizeof(r));
	memset(&f, 0, sizeof(f));
	p.threads = cli_online_cpus();
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":j:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			p.threads = cli_opt_jobs("fsck", optarg);
			if (!p.threads)
				return 2;
			break;
		case 'N':
			p.skip_data = 1;
			break;
		case 'D':
			p.inode_digests = 1;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'J':
			f.json = 1;
			quiet = 1;
			break;
		default:
			ret = cli_opt_other("fsck", c, argv, usage);
			if (ret >= 0)
				return ret;
		}
	}
	if (cli_nargs("fsck", argc - optind, 1, 1, "missing IMG"))
		return 2;
	if (p.inode_digests && p.skip_data)
		return cli_usage_error("fsck", "--xattr-inode-digest reads the "
					       "data: not with --no-data");
	f.img = argv[optind];
	if (cli_open("fsck", f.img, &lg, &fs) < 0)
		return 1;
	if (!p.skip_data && verity_scan(&f, fs, p.threads, quiet) < 0) {
		ezfs_image_close(fs);
		return 1;
	}
	ezfs_get_sb_info(fs, &si);
	/* the bar follows inodes; bytes decoded are shown as they come */
	cli_progress_init(&f.prog, quiet, "fsck", "inodes", 0, si.inos);
	p.problem = problem_cb;
	p.progress = progress_cb;
	p.arg = &f;
	ret = ezfs_fsck(fs, &p, &r);
	cli_progress_end(&f.prog, r.data_bytes, r.inodes);
	if (ret == -ENODATA && p.inode_digests) {
		cli_error("fsck",
			  "%s: no inode digests (not made with "
			  "--xattr-inode-digest)",
			  f.img);
		ezfs_image_close(fs);
		return 1;
	}
	if (ret < 0 && ret != -EUCLEAN)
		cli_fail("fsck", f.img, NULL, ret);
	if (f.shown > FSCK_MAX_SHOWN)
		cli_error("fsck", "%s: %" PRIu64 " more problems not shown",
			  f.img, f.shown - FSCK_MAX_SHOWN);
	if (f.json)
		print_json(&f, &r, p.skip_data, ret);
	else if (!quiet || r.problems || f.vproblems || ret < 0)
		printf("%s: %" PRIu64 " inodes (%" PRIu64 " dirs, %" PRIu64
		       " files, %" PRIu64 " symlinks, %" PRIu64
		       " special), %" PRIu64 " xattrs, %s decoded, %" PRIu64
		       " problem%s\n",
		       f.img, r.inodes, r.dirs, r.files, r.symlinks, r.specials,
		       r.xattrs, cli_fmt_size(r.data_bytes, b, sizeof(b)),
		       r.problems + f.vproblems,
		       r.problems + f.vproblems == 1 ? "" : "s");
	ezfs_image_close(fs);
	return ret == 0 && !r.problems && !f.vproblems ? 0 : 1;
}
