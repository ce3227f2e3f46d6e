/* SPDX-License-Identifier: MIT */
/*
 * digest.c - ezfs digest: the fs-verity digest (as `fsverity digest`
 * prints it: what composefs keeps in its digest store) or the SHA-256 of
 * each regular file of an image.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common.h"

#define CMD "digest"

struct digest_cli {
	const char *img;
	ezfs_image *fs;
	int kind;     /* enum ezfs_digest_kind */
	int failed;   /* some file could not be read */
	char *prefix; /* the walk's start, as printed ("" for the root) */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ezfs digest [--fsverity|--sha256] IMG [PATH...]\n"
		"Print a digest of each regular file of the image (of "
		"PATH, or of\n"
		"every regular file below PATH when it is a directory; "
		"default: /):\n"
		"  --fsverity         'sha256:HEX /PATH', the fs-verity "
		"digest as\n"
		"                     'fsverity digest' prints it (4096-byte "
		"blocks,\n"
		"                     no salt): a composefs digest store's "
		"name\n"
		"                     (default)\n"
		"  --sha256           'HEX  /PATH', the SHA-256 of the "
		"contents as\n"
		"                     sha256sum prints it\n" CLI_ENGINE_HELP
			CLI_IMAGE_HELP
		"Exit status: 0 ok, 1 a file could not be read, 2 usage "
		"error.\n");
}

/* One regular file: its line, or an error line. */
static void one(struct digest_cli *d, const char *path, ezfs_inode *ino)
{
	uint8_t h[32];
	char hex[65], *tmp;
	const char *q;
	int ret = ezfs_file_digest(ino, d->kind, h);

	if (ret < 0) {
		cli_fail(CMD, d->img, path, ret);
		d->failed = 1;
		return;
	}
	cli_hex(h, sizeof(h), hex);
	q = cli_qname(path, &tmp);
	if (d->kind == EZFS_DIGEST_FSVERITY)
		printf("sha256:%s %s\n", hex, q);
	else
		printf("%s  %s\n", hex, q);
	free(tmp);
}

static int walk_cb(void *arg, const char *rel, uint64_t nid,
		   const struct ezfs_stat *st, ezfs_inode *ino)
{
	struct digest_cli *d = arg;
	size_t n = strlen(d->prefix) + strlen(rel) + 2;
	char *path;

	if (!S_ISREG(st->mode))
		return 0;
	path = malloc(n);
	if (!path)
		return -ENOMEM;
	snprintf(path, n, "%s/%s", d->prefix, rel);
	one(d, path, ino);
	free(path);
	return 0;
}

/* PATH: a regular file, or the regular files below a directory. */
static void do_path(struct digest_cli *d, const char *arg)
{
	struct ezfs_stat st;
	ezfs_inode *ino;
	size_t n;
	int ret;

	if (cli_get_path(CMD, d->img, d->fs, arg, &ino) < 0) {
		d->failed = 1;
		return;
	}
	ezfs_inode_stat(ino, &st);
	if (S_ISREG(st.mode)) {
		char *p = malloc(strlen(arg) + 2);

		if (p) {
			snprintf(p, strlen(arg) + 2, "%s%s",
				 arg[0] == '/' ? "" : "/", arg);
			one(d, p, ino);
		}
		free(p);
		ezfs_inode_put(ino);
		return;
	}
	if (!S_ISDIR(st.mode)) {
		cli_error(CMD, "%s: %s: a %s, not a regular file", d->img, arg,
			  cli_type_name(st.mode));
		d->failed = 1;
		ezfs_inode_put(ino);
		return;
	}
	/* "/a/b/" and "a/b" print as "/a/b/..." */
	n = strlen(arg);
	d->prefix = malloc(n + 2);
	if (d->prefix) {
		snprintf(d->prefix, n + 2, "%s%s", arg[0] == '/' ? "" : "/",
			 arg);
		for (n = strlen(d->prefix); n && d->prefix[n - 1] == '/';)
			d->prefix[--n] = '\0';
		ret = cli_walk(d->fs, st.nid, walk_cb, d);
		if (ret < 0) {
			cli_fail(CMD, d->img, arg, ret);
			d->failed = 1;
		}
	}
	free(d->prefix);
	d->prefix = NULL;
	ezfs_inode_put(ino);
}

int cmd_digest(int argc, char **argv); /* main.c's table */

int cmd_digest(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "fsverity", no_argument, NULL, 'F' },
		{ "sha256", no_argument, NULL, 'S' },
		CLI_ENGINE_OPTS,
		CLI_IMAGE_OPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct digest_cli d = { .kind = EZFS_DIGEST_FSVERITY };
	struct cli_log lg = { 0 };
	int c, ret, i;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'F':
			d.kind = EZFS_DIGEST_FSVERITY;
			break;
		case 'S':
			d.kind = EZFS_DIGEST_SHA256;
			break;
		default:
			ret = cli_opt_other(CMD, c, argv, usage);
			if (ret >= 0)
				return ret;
		}
	}
	if (cli_nargs(CMD, argc - optind, 1, argc, "missing IMG"))
		return 2;
	d.img = argv[optind];
	if (cli_open(CMD, d.img, &lg, &d.fs) < 0)
		return 1;
	if (optind + 1 == argc)
		do_path(&d, "/");
	for (i = optind + 1; i < argc; i++)
		do_path(&d, argv[i]);
	ezfs_image_close(d.fs);
	if (fflush(stdout)) {
		cli_error(CMD, "stdout: %s", strerror(errno));
		return 1;
	}
	return d.failed ? 1 : 0;
}
