/* SPDX-License-Identifier: MIT */
/*
 * mkfs_s3.c - `ezfs mkfs --s3=ENDPOINT[,...] IMAGE BUCKET[/PREFIX]`: the
 * bucket's objects listed (ezfs_remote_s3_list, ListObjectsV2) and fetched
 * through s3:// sources of libezfs-remote, signed as its reader signs
 * (SigV4; the endpoint, region and credentials handed over in the AWS_*
 * variables it reads), into files of a folder beside the image, each key
 * a path (a key ending in '/' a directory), which is then scanned.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "ezfs/ezfs.h"
#include "mkfs_oci.h"
#include "mkfs_s3.h"
#ifdef EZFS_HAVE_REMOTE
#include "ezfs/remote.h"
#endif

#define CMD "mkfs"

int mkfs_s3_opt(int c, const char *arg, struct mkfs_s3 *ms)
{
	char *dup, *opt, *next;
	int ret = 0;

	if (c != MKFS_OPT_S3)
		return -1;
	ms->on = 1;
	dup = strdup(arg);
	if (!dup)
		return cli_usage_error(CMD, "out of memory");
	next = strchr(dup, ',');
	if (next)
		*next++ = '\0';
	if (!*dup) {
		free(dup);
		return cli_usage_error(CMD, "--s3: no ENDPOINT");
	}
	free(ms->endpoint);
	if (asprintf(&ms->endpoint, "%s%s",
		     strstr(dup, "://") ? "" : "https://", dup) < 0)
		ms->endpoint = NULL;
	for (opt = next; opt && !ret; opt = next) {
		next = strchr(opt, ',');
		if (next)
			*next++ = '\0';
		if (!strncmp(opt, "passwd_file=", 12)) {
			free(ms->passwd_file);
			ms->passwd_file = strdup(opt + 12);
		} else if (!strcmp(opt, "urlstyle=path")) {
			ms->vhost = 0;
		} else if (!strcmp(opt, "urlstyle=vhost")) {
			ms->vhost = 1;
		} else if (!strcmp(opt, "sig=4")) {
			/* ezfs signs with SigV4 only */
		} else if (!strcmp(opt, "sig=2")) {
			ret = cli_usage_error(CMD,
					      "--s3: sig=2: not supported "
					      "(ezfs signs S3 requests with "
					      "SigV4: sig=4)");
		} else if (!strncmp(opt, "region=", 7) && opt[7]) {
			free(ms->region);
			ms->region = strdup(opt + 7);
		} else {
			ret = cli_usage_error(CMD, "--s3: unknown option '%s'",
					      opt);
		}
	}
	free(dup);
	return ret;
}

int mkfs_s3_check(const struct mkfs_s3 *ms, const struct ezfs_build_params *p,
		  int tar, int incremental)
{
	if (!ms->on)
		return 0;
	/* virtual hosts are AWS's own; a custom endpoint is asked
	 * path-style, as the s3:// reader asks it */
	if (ms->vhost && ms->endpoint && !strstr(ms->endpoint, "amazonaws.com"))
		return cli_usage_error(CMD, "--s3: urlstyle=vhost: ezfs asks a "
					    "custom endpoint path-style "
					    "(urlstyle=path)");
	if (tar || incremental || p->tar_rvsp || p->gzinfo_file)
		return cli_usage_error(CMD, "--s3: not with %s",
				       tar	     ? "--tar or --oci"
				       : incremental ? "--incremental"
				       : p->tar_rvsp ? "--clean=rvsp"
						     : "--gzinfo");
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int type,
		  struct FTW *f)
{
	(void)st;
	(void)f;
	if (type == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

void mkfs_s3_free(struct mkfs_s3 *ms)
{
	if (ms->tree)
		nftw(ms->tree, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(ms->tree);
	free(ms->endpoint);
	free(ms->passwd_file);
	free(ms->region);
	memset(ms, 0, sizeof(*ms));
}

#ifndef EZFS_HAVE_REMOTE
int mkfs_s3_scan(struct mkfs_s3 *ms, ezfs_builder *b, const char *src,
		 const char *tmpdir, int zerofill, int quiet)
{
	cli_error(CMD, "%s: --s3: this ezfs was built without libcurl", src);
	return 1;
}
#else

struct s3_walk {
	struct mkfs_s3 *ms;
	const char *bucket; /* "s3://BUCKET/" */
	int zerofill, quiet, said;
	uint64_t objects, bytes;
	struct ezfs_remote_params rp;
};

static void s3_log(void *arg, int level, const char *msg)
{
	struct s3_walk *w = arg;

	if (level != EZFS_LOG_ERROR || w->said)
		return;
	w->said = 1;
	cli_error(CMD, "%s", msg);
}

/* the key's folders made under the tree (0755): 0 or -errno */
static int make_dirs(char *path, size_t from)
{
	for (char *s = path + from; (s = strchr(s, '/')) != NULL; s++) {
		*s = '\0';
		if (mkdir(path, 0755) && errno != EEXIST) {
			int err = -errno;

			*s = '/';
			return err;
		}
		chmod(path, 0755);
		*s = '/';
	}
	return 0;
}

/* a key as a path: no empty, "." or ".." component */
static int key_ok(const char *k)
{
	const char *c = k;

	if (!*k || *k == '/')
		return 0;
	while (*c) {
		size_t n = strcspn(c, "/");

		if ((n == 1 && c[0] == '.') ||
		    (n == 2 && !strncmp(c, "..", 2)) || (!n && c[0]))
			return 0;
		c += n;
		if (*c == '/')
			c++;
	}
	return 1;
}

/* the object's bytes into fd */
static int fetch(struct s3_walk *w, const char *key, uint64_t size, int fd)
{
	ezfs_remote *r = NULL;
	char *url = NULL;
	int err = 0;

	if (asprintf(&url, "%s%s", w->bucket, key) < 0) {
		url = NULL;
		err = -ENOMEM;
	}
	if (!err)
		err = ezfs_remote_open(url, &w->rp, &r);
	if (!err && ezfs_remote_size(r) != size)
		err = -ESTALE; /* changed since it was listed */
	if (!err)
		err = mkfs_remote_copy(r, size, fd);
	if (err && !w->said) {
		w->said = 1;
		cli_error(CMD, "%s: %s", url ? url : key,
			  err == -ESTALE ? "changed while read"
					 : ezfs_strerror(err));
	}
	ezfs_remote_close(r);
	free(url);
	return err;
}

static int add_object(void *arg, const char *key, uint64_t size, int64_t mtime)
{
	struct s3_walk *w = arg;
	size_t base = strlen(w->ms->tree) + 1;
	char *path = NULL;
	int fd, err;
	int dir = key[0] && key[strlen(key) - 1] == '/';

	if (!key_ok(key) && !(dir && (strlen(key) == 1 || key_ok(key)))) {
		w->said = 1;
		cli_error(CMD,
			  "%s%s: the key is not a path (an empty, . or .. "
			  "component)",
			  w->bucket, key);
		return -EINVAL;
	}
	if (asprintf(&path, "%s/%s", w->ms->tree, key) < 0)
		return -ENOMEM;
	err = make_dirs(path, base);
	if (!err && dir) {
		fd = -1;
	} else if (!err) {
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0)
			err = -errno;
		else if (fchmod(fd, 0644) ||
			 (w->zerofill && ftruncate(fd, (off_t)size)))
			err = -errno;
		else if (!w->zerofill && size)
			err = fetch(w, key, size, fd);
		if (fd >= 0 && close(fd) && !err)
			err = -errno;
	}
	if (!err && mtime >= 0) {
		struct timespec ts[2] = { { mtime, 0 }, { mtime, 0 } };

		utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW);
	}
	if (err && !w->said) {
		w->said = 1;
		cli_error(CMD, "%s%s: %s%s", w->bucket, key, ezfs_strerror(err),
			  err == -EEXIST || err == -ENOTDIR
				  ? " (a key that is both a file and a folder)"
				  : "");
	}
	free(path);
	if (!err) {
		w->objects++;
		w->bytes += size;
		if (!w->quiet && w->objects % 1000 == 0)
			fprintf(stderr, "%s: %llu objects\n", CMD,
				(unsigned long long)w->objects);
	}
	return err;
}

/* The s3fs password file: "KEY:SECRET" (or "BUCKET:KEY:SECRET" lines);
 * into the AWS_* variables the remote library reads. 0, or 1 after a
 * line. */
static int passwd(const char *file, const char *bucket)
{
	char line[1024], *got = NULL;
	FILE *f = fopen(file, "re");
	size_t bl = strlen(bucket);

	if (!f) {
		cli_error(CMD, "%s: %s", file, strerror(errno));
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *c1, *c2;

		line[strcspn(line, "\r\n")] = '\0';
		if (line[0] == '#' || !(c1 = strchr(line, ':')))
			continue;
		c2 = strchr(c1 + 1, ':');
		if (c2 && (size_t)(c1 - line) == bl &&
		    !strncmp(line, bucket, bl)) {
			free(got);
			got = strdup(c1 + 1);
			break;
		}
		if (!c2 && !got)
			got = strdup(line);
	}
	fclose(f);
	if (!got || !strchr(got, ':')) {
		cli_error(CMD, "%s: no KEY:SECRET line (s3fs's format)", file);
		free(got);
		return 1;
	}
	*strchr(got, ':') = '\0';
	setenv("AWS_ACCESS_KEY_ID", got, 1);
	setenv("AWS_SECRET_ACCESS_KEY", got + strlen(got) + 1, 1);
	unsetenv("AWS_SESSION_TOKEN");
	free(got);
	return 0;
}

int mkfs_s3_scan(struct mkfs_s3 *ms, ezfs_builder *b, const char *src,
		 const char *tmpdir, int zerofill, int quiet)
{
	struct s3_walk w = { .ms = ms, .zerofill = zerofill, .quiet = quiet };
	char *url = NULL, *bucket = NULL;
	const char *ep = ms->endpoint;
	size_t bl = strcspn(src, "/");
	int err;

	/* AWS's virtual hosts: no endpoint, the reader's default */
	if (ms->vhost) {
		unsetenv("AWS_ENDPOINT_URL_S3");
		unsetenv("AWS_ENDPOINT_URL");
	} else {
		setenv("AWS_ENDPOINT_URL_S3", ep, 1);
	}
	if (ms->region)
		setenv("AWS_REGION", ms->region, 1);
	if (asprintf(&bucket, "s3://%.*s/", (int)bl, src) < 0 ||
	    asprintf(&url, "s3://%s", src) < 0) {
		cli_error(CMD, "out of memory");
		free(bucket);
		return 1;
	}
	w.bucket = bucket;
	if (ms->passwd_file) {
		char *bk = strndup(src, bl);

		err = !bk || passwd(ms->passwd_file, bk);
		free(bk);
		if (err)
			goto out;
	}
	if (asprintf(&ms->tree, "%s/.ezfs-s3.XXXXXX", tmpdir) < 0) {
		ms->tree = NULL;
		err = 1;
		goto out;
	}
	if (!mkdtemp(ms->tree)) {
		cli_error(CMD, "%s: cannot make a folder: %s", tmpdir,
			  strerror(errno));
		free(ms->tree);
		ms->tree = NULL;
		err = 1;
		goto out;
	}
	chmod(ms->tree, 0755);
	ezfs_remote_params_init(&w.rp);
	w.rp.log = s3_log;
	w.rp.log_arg = &w;
	w.rp.mem_bytes = 4u << 20;
	err = ezfs_remote_s3_list(url, &w.rp, add_object, &w);
	if (err) {
		if (!w.said)
			cli_error(CMD, "%s: %s", url, ezfs_strerror(err));
		err = 1;
		goto out;
	}
	if (!quiet)
		fprintf(stderr, "%s: %s: %llu objects, %llu bytes%s\n", CMD,
			url, (unsigned long long)w.objects,
			(unsigned long long)w.bytes,
			zerofill ? " (zeros)" : "");
	err = ezfs_builder_scan(b, ms->tree);
out:
	free(url);
	free(bucket);
	return err;
}
#endif
