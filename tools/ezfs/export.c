/* SPDX-License-Identifier: MIT */
/*
 * export.c - ezfs export: options, output file and exit status of
 * ezfs_export (lib/extract/export.c): the image's tree (or a part) as an
 * archive on stdout or in a file. Needs no root: nothing is created on the
 * host but the archive.
 */
#define _GNU_SOURCE /* asprintf */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ezfs/extract.h>

#include "common.h"

int cmd_export(int argc, char **argv);

#ifndef EZFS_HAVE_LIBARCHIVE
int cmd_export(int argc, char **argv)
{
	fprintf(stderr, "ezfs export: this ezfs was built without libarchive "
			"(install libarchive-dev and build again)\n");
	return 1;
}
#else

#define E_CMD "export"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ezfs export [OPTIONS] IMG [PATH]\n"
		"Write the image's tree (or the directory or file PATH) as an\n"
		"archive to stdout or FILE: contents, modes, owners, "
		"nanosecond\n"
		"mtimes, xattrs (pax: SCHILY.xattr), hard links, symlinks,\n"
		"devices and FIFOs; files with holes as pax sparse members.\n"
		"No root needed.\n"
		"  -o, --output FILE  the archive's file (made whole or not at "
		"all)\n"
		"  --format FMT       pax (default), gnu, cpio or zip\n"
		"  --compress ALG     gzip, xz or zstd (tar and cpio)\n"
		"  -z                 --compress=gzip\n"
		"  -J                 --compress=xz\n"
		"  --keep-going       a damaged inode, extent or directory is\n"
		"                     named and left out; the rest is "
		"archived\n"
		"                     (exit 1)\n"
		"  --errors FILE      the damaged paths, one a line\n"
		"  -q, --quiet        no progress bar, no note on each entry "
		"the\n"
		"                     format cannot hold\n"
		"One line says what the format could not hold (xattrs, "
		"sub-second\n"
		"mtimes, devices, sockets, hard links, holes) and for how "
		"many\n"
		"entries; a file of 4 GiB or more is refused by cpio before\n"
		"anything is written.\n" CLI_ENGINE_HELP CLI_IMAGE_HELP);
}

/* The command's side of one export: progress bar, --errors FILE. */
struct ecli {
	struct cli_progress prog;
	FILE *errs;
};

static void e_message(void *arg, int level, const char *line)
{
	struct ecli *c = arg;

	cli_progress_clear(&c->prog);
	cli_error(E_CMD, "%s", line);
}

static void e_progress(void *arg, const struct ezfs_extract_progress *p)
{
	struct ecli *c = arg;

	c->prog.total_bytes = p->total_bytes;
	c->prog.total_items = p->total_entries;
	cli_progress_update(&c->prog, p->bytes, p->entries, 0);
}

static void e_entry(void *arg, const char *path, int problem, int err)
{
	struct ecli *c = arg;

	if (c->errs)
		fprintf(c->errs, "%s\n", *path ? path : ".");
}

int cmd_export(int argc, char **argv)
{
	enum { O_FORMAT = 0x300, O_COMPRESS, O_KEEP, O_ERRORS };
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, O_FORMAT },
		{ "compress", required_argument, NULL, O_COMPRESS },
		{ "keep-going", no_argument, NULL, O_KEEP },
		{ "errors", required_argument, NULL, O_ERRORS },
		{ "quiet", no_argument, NULL, 'q' },
		CLI_ENGINE_OPTS,
		CLI_IMAGE_OPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ezfs_export_opts eo;
	struct ezfs_export_result res;
	struct cli_log lg = { 0 };
	const char *fmt = "pax", *comp = NULL, *errors = NULL, *out = NULL;
	const char *img;
	char *tmp = NULL;
	struct ecli c = { .errs = NULL };
	ezfs_image *fs = NULL;
	int opt, ret, fd = -1, rc = 1;

	ezfs_export_opts_init(&eo);
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, ":o:zJqh", opts, NULL)) != -1) {
		switch (opt) {
		case 'o':
			out = optarg;
			break;
		case O_FORMAT:
			fmt = optarg;
			break;
		case O_COMPRESS:
			comp = optarg;
			break;
		case 'z':
			comp = "gzip";
			break;
		case 'J':
			comp = "xz";
			break;
		case O_KEEP:
			eo.flags |= EZFS_EXPORT_KEEP_GOING;
			break;
		case O_ERRORS:
			errors = optarg;
			break;
		case 'q':
			eo.flags |= EZFS_EXPORT_QUIET;
			break;
		default:
			ret = cli_opt_other(E_CMD, opt, argv, usage);
			if (ret >= 0)
				return ret;
		}
	}
	if (cli_nargs(E_CMD, argc - optind, 1, 2, "missing IMG"))
		return 2;
	if (!strcmp(fmt, "pax") || !strcmp(fmt, "tar"))
		eo.format = EZFS_EXPORT_PAX;
	else if (!strcmp(fmt, "gnu") || !strcmp(fmt, "gnutar"))
		eo.format = EZFS_EXPORT_GNU;
	else if (!strcmp(fmt, "cpio") || !strcmp(fmt, "newc"))
		eo.format = EZFS_EXPORT_CPIO;
	else if (!strcmp(fmt, "zip"))
		eo.format = EZFS_EXPORT_ZIP;
	else
		return cli_usage_error(
			E_CMD, "--format '%s': pax, gnu, cpio or zip", fmt);
	if (!comp)
		eo.filter = EZFS_EXPORT_PLAIN;
	else if (!strcmp(comp, "gzip"))
		eo.filter = EZFS_EXPORT_GZIP;
	else if (!strcmp(comp, "xz"))
		eo.filter = EZFS_EXPORT_XZ;
	else if (!strcmp(comp, "zstd"))
		eo.filter = EZFS_EXPORT_ZSTD;
	else
		return cli_usage_error(
			E_CMD, "--compress '%s': gzip, xz or zstd", comp);
	if (comp && eo.format == EZFS_EXPORT_ZIP)
		return cli_usage_error(E_CMD, "--compress: not with zip (it "
					      "compresses each file itself)");
	if (!out && isatty(STDOUT_FILENO))
		return cli_usage_error(E_CMD,
				       "refusing to write an archive to a "
				       "terminal (use -o FILE or a pipe)");
	img = argv[optind];
	if (argc - optind == 2)
		eo.path = argv[optind + 1];
	lg.max = 20;
	if (cli_open(E_CMD, img, &lg, &fs) < 0)
		return 1;
	if (errors && !(c.errs = fopen(errors, "w"))) {
		cli_error(E_CMD, "%s: %s", errors, strerror(errno));
		goto out;
	}
	if (out) {
		/* a temporary name beside FILE, renamed once complete */
		if (asprintf(&tmp, "%s.XXXXXX", out) < 0) {
			tmp = NULL;
			goto out;
		}
		fd = mkstemp(tmp);
		if (fd < 0) {
			cli_error(E_CMD, "%s: %s", out, strerror(errno));
			free(tmp);
			tmp = NULL;
			goto out;
		}
		{
			mode_t um = umask(0);

			umask(um);
			fchmod(fd, 0666 & ~um);
		}
	}
	eo.image_name = img;
	eo.output_name = out;
	eo.message = e_message;
	eo.entry = e_entry;
	eo.arg = &c;
	cli_progress_init(&c.prog, eo.flags & EZFS_EXPORT_QUIET, E_CMD,
			  "entries", 0, 0);
	if (c.prog.on)
		eo.progress = e_progress;
	ret = ezfs_export(fs, out ? fd : STDOUT_FILENO, &eo, &res);
	if (res.complete)
		cli_progress_end(&c.prog, res.bytes, res.entries);
	else
		cli_progress_clear(&c.prog);
	/* entries left out (reported): the archive is whole all the same */
	if (!res.complete)
		goto out;
	if (out && close(fd)) {
		fd = -1;
		cli_error(E_CMD, "%s: %s", out, strerror(errno));
		goto out;
	}
	fd = -1;
	if (out && rename(tmp, out)) {
		cli_error(E_CMD, "%s: %s", out, strerror(errno));
		goto out;
	}
	free(tmp);
	tmp = NULL;
	rc = ret < 0;
out:
	if (c.errs && fclose(c.errs) && !rc) {
		cli_error(E_CMD, "%s: %s", errors, strerror(errno));
		rc = 1;
	}
	if (fd >= 0)
		close(fd);
	if (tmp) {
		unlink(tmp);
		free(tmp);
	}
	ezfs_image_close(fs);
	return rc;
}
#endif
