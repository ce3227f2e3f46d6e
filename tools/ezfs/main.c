/* SPDX-License-Identifier: MIT */
/* main.c - the ezfs command: option parsing and subcommand dispatch. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ezfs/engine.h"
#include "ezfs/ezfs.h"
#include "cmd.h"
#include "common.h"

static int cmd_help(int argc, char **argv);
int cmd_lpinfo(int argc, char **argv); /* lpinfo.c */
int cmd_export(int argc, char **argv); /* export.c */
int cmd_cache(int argc, char **argv);  /* cache.c */
int cmd_push(int argc, char **argv);   /* push.c */
int cmd_digest(int argc, char **argv); /* digest.c */

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "info", cmd_info, "show the superblock, features and statistics" },
	{ "ls", cmd_ls, "list a directory" },
	{ "stat", cmd_stat, "show an inode in detail (-e: its extent map)" },
	{ "cat", cmd_cat, "write file contents to stdout" },
	{ "extract", cmd_extract,
	  "restore the tree (or a part) into a directory" },
	{ "export", cmd_export,
	  "write the tree as a tar, cpio or zip archive" },
	{ "fsck", cmd_fsck, "check an image, decoding every byte" },
	{ "digest", cmd_digest,
	  "print the fs-verity digest (or SHA-256) of each file" },
	{ "lpinfo", cmd_lpinfo,
	  "list the partitions of an Android super image" },
	{ "mkfs", cmd_mkfs, "build an image from a directory" },
	{ "cache", cmd_cache, "list or trim the cache of remote images" },
	{ "push", cmd_push, "upload an image to an OCI registry" },
	{ "accel", cmd_accel,
	  "list, benchmark and select decompression engines" },
	{ "bench", cmd_bench,
	  "measure read speed, compression ratio and dispatch latency" },
#ifdef EZFS_HAVE_FUSE
	{ "mount", cmd_mount, "mount an image read-only through FUSE" },
	{ "umount", cmd_umount, "unmount an ezfs FUSE mount" },
#endif
	{ "help", cmd_help, "show help for a command" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: ezfs [--version] [--help] COMMAND [ARGS...]\n\n"
		   "Commands:\n");
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-9s %s\n", commands[i].name,
			commands[i].summary);
	fprintf(f, "\nRun 'ezfs COMMAND --help' for the options of a command.\n"
		   "Exit status: 0 ok, 1 error, 2 usage error.\n");
}

/*
 * --version: the version, then the engines of this build with the library
 * behind each and its version, then the optional parts, +built or -not.
 */
static void print_version(void)
{
	static const struct {
		const char *name;
		int on;
	} opt[] = {
#ifdef EZFS_HAVE_FUSE
		{ "fuse", 1 },
#else
		{ "fuse", 0 },
#endif
#ifdef EZFS_HAVE_SELINUX
		{ "selinux", 1 },
#else
		{ "selinux", 0 },
#endif
#ifdef EZFS_HAVE_LIBARCHIVE
		{ "libarchive", 1 },
#else
		{ "libarchive", 0 },
#endif
#ifdef EZFS_HAVE_REMOTE
		{ "remote", 1 },
#else
		{ "remote", 0 },
#endif
	};
	static const char *const codecs[] = { "libdeflate", "isal", "zstd" };
	struct ezfs_engine_info info;
	const char *lib, *ver;
	unsigned i, n = 0;

	printf("ezfs %s\nengines:", EZFS_VERSION_STRING);
	for (i = 0; i < ezfs_engine_count(); i++) {
		if (ezfs_engine_get_info(i, &info) ||
		    (info.flags & EZFS_ENGINE_TEST))
			continue;
		printf("%s %s", n++ ? "," : "", info.name);
		if (!ezfs_engine_library(info.name, &lib, &ver) && lib)
			printf(" (%s%s%s)", lib, ver ? " " : "",
			       ver ? ver : "");
	}
	printf("\nfeatures:");
	for (i = 0; i < sizeof(codecs) / sizeof(codecs[0]); i++)
		printf(" %c%s",
		       ezfs_engine_library(codecs[i], NULL, NULL) ? '-' : '+',
		       codecs[i]);
	for (i = 0; i < sizeof(opt) / sizeof(opt[0]); i++)
		printf(" %c%s", opt[i].on ? '+' : '-', opt[i].name);
	printf("\n");
}

static int find_command(const char *name)
{
	size_t i;

	for (i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return (int)i;
	return -1;
}

static int cmd_help(int argc, char **argv)
{
	char help[] = "--help";
	char *av[3];
	int i;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	i = find_command(argv[1]);
	if (i < 0 || !strcmp(argv[1], "help")) {
		if (i < 0) {
			fprintf(stderr,
				"ezfs help: unknown command '%s'\n"
				"Try 'ezfs --help'.\n",
				argv[1]);
			return 2;
		}
		usage(stdout);
		return 0;
	}
	av[0] = argv[1];
	av[1] = help;
	av[2] = NULL;
	return commands[i].fn(2, av);
}

/*
 * Whatever a command printed must have reached stdout: a full disk or a
 * closed pipe at the last buffered write is an error, not a silent exit 0
 * (GNU's close_stdout), said as cli_error says it: "ezfs CMD", "ezfs"
 * before a command, or the erofs-utils name ezfs was called by.
 */
static int close_stdout(const char *name, int rc)
{
	const char *why = NULL;
	int failed = ferror(stdout);

	/* an earlier failed write left no trustworthy errno behind */
	errno = 0;
	if (fflush(stdout) != 0)
		why = strerror(errno ? errno : EIO);
	else if (failed)
		why = "write error";
	if (fclose(stdout) != 0 && !why && errno != EBADF)
		why = strerror(errno ? errno : EIO);
	if (!why || errno == EPIPE) /* ezfs ls | head: the reader left */
		return rc;
	if (cli_prog)
		fprintf(stderr, "%s: stdout: %s\n", cli_prog, why);
	else
		fprintf(stderr, "ezfs%s%s: stdout: %s\n", name ? " " : "",
			name ? name : "", why);
	return rc ? rc : 1;
}

static int run(int argc, char **argv)
{
	int i;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		print_version();
		return 0;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	if (argv[1][0] == '-') {
		fprintf(stderr,
			"ezfs: unknown option '%s'\nTry 'ezfs --help'.\n",
			argv[1]);
		return 2;
	}
	i = find_command(argv[1]);
	if (i < 0) {
		fprintf(stderr,
			"ezfs: unknown command '%s'\nTry 'ezfs --help'.\n",
			argv[1]);
		return 2;
	}
	return commands[i].fn(argc - 1, argv + 1);
}

/*
 * Called by another name (a link made by `make install-compat`), ezfs is
 * that erofs-utils tool: its options, its kind of output.
 */
static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} personas[] = {
	{ "mkfs.erofs", cmd_mkfs },
	{ "fsck.erofs", compat_fsck_main },
	{ "dump.erofs", compat_dump_main },
};

static int find_persona(const char *argv0)
{
	const char *base = argv0 ? strrchr(argv0, '/') : NULL;
	size_t i;

	base = base ? base + 1 : argv0;
	for (i = 0; base && i < sizeof(personas) / sizeof(personas[0]); i++)
		if (!strcmp(personas[i].name, base))
			return (int)i;
	return -1;
}

int main(int argc, char **argv)
{
	const char *name = NULL;
	int rc, p;

	p = find_persona(argv[0]);
	if (p >= 0) {
		/* its messages name it, as the user typed it */
		cli_prog = personas[p].name;
		rc = personas[p].fn(argc, argv);
		return close_stdout(personas[p].name, rc);
	}
	if (argc >= 2 && argv[1][0] != '-' && find_command(argv[1]) >= 0)
		name = argv[1];
	rc = run(argc, argv);
	return close_stdout(name, rc);
}
