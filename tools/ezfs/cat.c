/* SPDX-License-Identifier: MIT */
/* cat.c - ezfs cat: write file contents to stdout. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "cmd.h"

#define CAT_MAX_LINKS 40

static void usage(FILE *f)
{
	fprintf(f, "usage: ezfs cat [--skip N] [--length N] IMG PATH...\n"
		   "Write the contents of files of the image to stdout\n"
		   "(symbolic links are followed inside the image).\n"
		   "  --skip N           start at byte N of each file\n"
		   "  --length N         at most N bytes of each "
		   "file\n" CLI_ENGINE_HELP CLI_IMAGE_HELP);
}

/* Write all of buf; returns 0, or -errno. */
static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= n;
	}
	return 0;
}

/*
 * [off, end) of the file through ezfs_stream (windows decoded ahead with
 * queue or percpu dispatch) while the last one is written. Returns 0 with
 * *pos at end, -EPIPE, or another -errno: a read at *pos failed
 * (-ENODATA: the data ended early), or stdout failed (reported; *pos =
 * end).
 */
static int cat_stream(ezfs_inode *ino, uint64_t off, uint64_t end,
		      uint64_t *pos)
{
	ezfs_stream *xs;
	const void *data;
	uint64_t woff;
	size_t len;
	int ret;

	*pos = off;
	ret = ezfs_stream_open(ino, off, end, 0, &xs);
	if (ret < 0)
		return ret;
	while ((ret = ezfs_stream_next(xs, &data, &woff, &len)) > 0 &&
	       woff == *pos) {
		ret = write_all(STDOUT_FILENO, data, len);
		if (ret == -EPIPE)
			break;
		if (ret < 0) {
			cli_error("cat", "stdout: %s", strerror(-ret));
			*pos = end;
			break;
		}
		*pos += len;
	}
	ezfs_stream_close(xs);
	if (ret > 0 || (!ret && *pos < end))
		ret = -ENODATA; /* a gap: the data ended early */
	return ret;
}

/* Resolve path, following symlinks inside the image. */
static int resolve_follow(ezfs_image *fs, const char *path, ezfs_inode **out)
{
	char *cur = strdup(path);
	int hops, ret = -ENOMEM;

	for (hops = 0; cur && hops <= CAT_MAX_LINKS; hops++) {
		struct ezfs_stat st;
		uint64_t nid;
		ezfs_inode *ino;
		char *target, *next, *slash;
		ssize_t n;

		ret = ezfs_resolve(fs, cur, &nid);
		if (!ret)
			ret = ezfs_inode_get(fs, nid, &ino);
		if (ret < 0)
			break;
		ezfs_inode_stat(ino, &st);
		if (!S_ISLNK(st.mode)) {
			*out = ino;
			free(cur);
			return 0;
		}
		target = malloc(st.size + 1);
		n = target ? ezfs_readlink(ino, target, st.size + 1) : -ENOMEM;
		ezfs_inode_put(ino);
		if (n < 0) {
			free(target);
			ret = (int)n;
			break;
		}
		slash = strrchr(cur, '/');
		if (target[0] == '/' || !slash) {
			next = target;
		} else {
			size_t dl = slash - cur + 1;

			next = malloc(dl + n + 1);
			if (next) {
				memcpy(next, cur, dl);
				memcpy(next + dl, target, n + 1);
			}
			free(target);
		}
		free(cur);
		cur = next;
		ret = -ENOMEM;
	}
	if (cur && hops > CAT_MAX_LINKS)
		ret = -ELOOP;
	free(cur);
	return ret;
}

int cmd_cat(int argc, char **argv)
{
	enum { OPT_SKIP = 1, OPT_LENGTH };
	static const struct option opts[] = {
		{ "skip", required_argument, NULL, OPT_SKIP },
		{ "length", required_argument, NULL, OPT_LENGTH },
		CLI_ENGINE_OPTS,
		CLI_IMAGE_OPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *img;
	struct cli_log lg = { 0 };
	ezfs_image *fs;
	uint64_t skip = 0, length = UINT64_MAX;
	int c, i, ret, status = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (c == OPT_SKIP || c == OPT_LENGTH) {
			uint64_t *v = c == OPT_SKIP ? &skip : &length;
			char *end;

			errno = 0;
			*v = strtoull(optarg, &end, 0);
			if (errno || end == optarg || *end || *optarg == '-')
				return cli_usage_error(
					"cat", "invalid --%s '%s'",
					c == OPT_SKIP ? "skip" : "length",
					optarg);
			continue;
		}
		ret = cli_opt_other("cat", c, argv, usage);
		if (ret >= 0)
			return ret;
	}
	if (argc - optind < 2)
		return cli_usage_error("cat", "missing IMG or PATH");
	img = argv[optind];
	if (cli_open("cat", img, &lg, &fs) < 0)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	for (i = optind + 1; i < argc; i++) {
		struct ezfs_stat st;
		ezfs_inode *ino = NULL;
		uint64_t off = skip, end;

		ret = resolve_follow(fs, argv[i], &ino);
		if (ret < 0) {
			cli_fail("cat", img, argv[i], ret);
			status = 1;
			continue;
		}
		ezfs_inode_stat(ino, &st);
		if (!S_ISREG(st.mode)) {
			cli_error("cat", "%s: %s: %s", img, argv[i],
				  S_ISDIR(st.mode) ? "is a directory"
						   : "not a regular file");
			ezfs_inode_put(ino);
			status = 1;
			continue;
		}
		end = length < st.size - (off < st.size ? off : st.size)
			      ? off + length
			      : st.size;
		ret = cat_stream(ino, off, end, &off);
		if (ret == -EPIPE) {
			/* reader went away: stop quietly */
			ezfs_inode_put(ino);
			status = 1;
			goto out;
		}
		if (ret < 0) {
			if (ret == -ENODATA && off < end)
				cli_error("cat", "%s: %s: read at %llu: %s",
					  img, argv[i], (unsigned long long)off,
					  "unexpected end of data");
			else if (off < end)
				cli_error("cat", "%s: %s: read at %llu: %s",
					  img, argv[i], (unsigned long long)off,
					  ezfs_strerror(ret));
			ezfs_inode_put(ino);
			status = 1;
			if (off >= end)
				goto out; /* stdout failed (reported) */
			continue;
		}
		ezfs_inode_put(ino);
	}
out:
	ezfs_image_close(fs);
	return status;
}
