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
		"  --no-data      check metadata only\n"
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

/* --json (docs/schemas/fsck.json) */
static void print_json(struct fsck_cli *f, const struct ezfs_fsck_result *r,
		       int skip_data, int ret)
{
	struct cj j;

	cj_init(&j, stdout);
	cj_obj(&j, NULL);
	cj_bytes(&j, "image", f->img, strlen(f->img));
	cj_bool(&j, "clean", ret == 0 && !r->problems);
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
	cj_u64(&j, "problem_count", r->problems);
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
	f.img = argv[optind];
	if (cli_open("fsck", f.img, &lg, &fs) < 0)
		return 1;
	ezfs_get_sb_info(fs, &si);
	/* the bar follows inodes; bytes decoded are shown as they come */
	cli_progress_init(&f.prog, quiet, "fsck", "inodes", 0, si.inos);
	p.problem = problem_cb;
	p.progress = progress_cb;
	p.arg = &f;
	ret = ezfs_fsck(fs, &p, &r);
	cli_progress_end(&f.prog, r.data_bytes, r.inodes);
	if (ret < 0 && ret != -EUCLEAN)
		cli_fail("fsck", f.img, NULL, ret);
	if (f.shown > FSCK_MAX_SHOWN)
		cli_error("fsck", "%s: %" PRIu64 " more problems not shown",
			  f.img, f.shown - FSCK_MAX_SHOWN);
	if (f.json)
		print_json(&f, &r, p.skip_data, ret);
	else if (!quiet || r.problems || ret < 0)
		printf("%s: %" PRIu64 " inodes (%" PRIu64 " dirs, %" PRIu64
		       " files, %" PRIu64 " symlinks, %" PRIu64
		       " special), %" PRIu64 " xattrs, %s decoded, %" PRIu64
		       " problem%s\n",
		       f.img, r.inodes, r.dirs, r.files, r.symlinks, r.specials,
		       r.xattrs, cli_fmt_size(r.data_bytes, b, sizeof(b)),
		       r.problems, r.problems == 1 ? "" : "s");
	ezfs_image_close(fs);
	return ret == 0 && !r.problems ? 0 : 1;
}
