/* SPDX-License-Identifier: MIT */
/* cat.c - ezfs cat: write file contents to stdout. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "cmd.h"

#define CAT_BUF	      (4u << 20)
#define CAT_REF_MIN   (256u << 10) /* extents below: read with ezfs_pread */
#define CAT_AHEAD     (8u << 20)   /* decoded ahead of the writer */
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

/* A buffer for the bytes read with ezfs_pread, made on first use; NULL:
 * out of memory. In huge pages where the kernel gives them: fresh 4 KiB
 * pages cost a fault each, a tenth of the decoding time of a deflate file
 * of a few MiB. */
static char *cat_buf(char **buf)
{
	void *p;

	if (*buf)
		return *buf;
	if (posix_memalign(&p, 2u << 20, CAT_BUF))
		return NULL;
#ifdef MADV_HUGEPAGE
	madvise(p, CAT_BUF, MADV_HUGEPAGE);
#endif
	return *buf = p;
}

/*
 * Write [off, end) of ino to stdout. Large encoded extents are written
 * straight from the decoded-pcluster cache (ezfs_extent_ref: no copy, and
 * no buffer of ours), each let go once written so that its buffer takes
 * the next decode; under queue or percpu dispatch the extents CAT_AHEAD
 * ahead are decoded on the workers meanwhile (ezfs_decode_ahead). The rest
 * (small extents, plain data, holes, other layouts) is read with
 * ezfs_pread into *buf, CAT_BUF at a time. Returns 0, -EPIPE (the reader
 * went away), or another -errno: a read at *at failed (-ENODATA: the data
 * ended early), or stdout failed (reported; *at = end).
 */
static int cat_range(ezfs_inode *ino, char **buf, uint64_t off, uint64_t end,
		     uint64_t *at)
{
	uint64_t ahead = off;
	int ret = 0;

	while (off < end && !ret) {
		struct ezfs_extent e;
		struct ezfs_ref ref;
		size_t n;

		*at = off;
		/* the next extents on their way before this one is waited for
		 */
		if (ahead < off + CAT_AHEAD / 2 && ahead < end) {
			if (ahead < off)
				ahead = off;
			ezfs_decode_ahead(ino, ahead, off + CAT_AHEAD - ahead,
					  &ahead);
		}
		if (!ezfs_map(ino, off, &e) &&
		    (e.flags & EZFS_EXTENT_ENCODED) && e.llen >= CAT_REF_MIN &&
		    !(ret = ezfs_extent_ref(ino, off, &ref))) {
			n = (size_t)((ref.off + ref.len < end
					      ? ref.off + ref.len
					      : end) -
				     off);
			ret = write_all(
				STDOUT_FILENO,
				(const char *)ref.data + (off - ref.off), n);
			if (!ret)
				ezfs_ref_served(ino, &ref, n);
			ezfs_ref_put(ino, &ref);
		} else if (ret && ret != -EOPNOTSUPP) {
			return ret; /* a read error */
		} else {
			ssize_t r;

			n = end - off < CAT_BUF ? (size_t)(end - off) : CAT_BUF;
			if (!cat_buf(buf))
				return -ENOMEM;
			r = ezfs_pread(ino, *buf, n, off);
			if (r <= 0)
				return r ? (int)r : -ENODATA;
			n = (size_t)r;
			ret = write_all(STDOUT_FILENO, *buf, n);
		}
		if (ret == -EPIPE)
			return ret;
		if (ret < 0) {
			cli_error("cat", "stdout: %s", strerror(-ret));
			*at = end;
			return ret;
		}
		off += n;
	}
	*at = off;
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
	char *buf = NULL;
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
		ret = cat_range(ino, &buf, off, end, &off);
		if (ret == -EPIPE) {
			/* reader went away: stop quietly */
			ezfs_inode_put(ino);
			status = 1;
			goto out;
		}
		if (ret < 0) {
			if (off < end)
				cli_error("cat", "%s: %s: read at %llu: %s",
					  img, argv[i], (unsigned long long)off,
					  ret == -ENODATA
						  ? "unexpected end of data"
						  : ezfs_strerror(ret));
			ezfs_inode_put(ino);
			status = 1;
			if (off >= end)
				goto out; /* stdout failed (reported) */
			continue;
		}
		ezfs_inode_put(ino);
	}
out:
	free(buf);
	ezfs_image_close(fs);
	return status;
}
