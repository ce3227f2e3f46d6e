/* SPDX-License-Identifier: MIT */
/*
 * mkfs_oci.c - `ezfs mkfs --oci`: the layers of an image in an OCI
 * registry, listed and fetched whole with libezfs-remote (its registry
 * client, credentials and digest check), then built as tar archives:
 * merged with the OCI whiteout rules (ezfs_builder_scan_tar_layers), one
 * layer with its whiteouts made overlayfs ones (--aufs), or a tar index
 * of one uncompressed layer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "ezfs/ezfs.h"
#include "mkfs_oci.h"
#ifdef EZFS_HAVE_REMOTE
#include "ezfs/remote.h"
#endif

#define CMD "mkfs"

/* one --oci value: "key=" gets its text (malloc'd) */
static int set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = strdup(v);
	return *dst ? 0 : cli_usage_error(CMD, "out of memory");
}

int mkfs_oci_opt(int c, const char *arg, struct mkfs_oci *mo, int *tar)
{
	char *dup, *opt, *next;
	int ret = 0;

	if (c != MKFS_OPT_OCI)
		return -1;
	mo->on = 1;
	mo->layer = -1;
	*tar = 1;
	if (!arg)
		return 0;
	dup = strdup(arg);
	if (!dup)
		return cli_usage_error(CMD, "out of memory");
	for (opt = dup; opt && !ret; opt = next) {
		next = strchr(opt, ',');
		if (next)
			*next++ = '\0';
		if (opt == dup && (!strcmp(opt, "f") || !strcmp(opt, "i"))) {
			mo->index = *opt == 'i';
			*tar = mo->index ? 2 : 1;
		} else if (!strncmp(opt, "platform=", 9)) {
			ret = set_str(&mo->platform, opt + 9);
		} else if (!strncmp(opt, "blob=", 5) && mo->layer < 0) {
			char d[80];

			if (strlen(opt + 5) > 71)
				ret = cli_usage_error(CMD,
						      "--oci: blob=%s: not a "
						      "sha256 digest",
						      opt + 5);
			snprintf(d, sizeof(d), "%s%s",
				 strncmp(opt + 5, "sha256:", 7) ? "sha256:"
								: "",
				 opt + 5);
			if (!ret)
				ret = set_str(&mo->blob, d);
		} else if (!strncmp(opt, "layer=", 6) && !mo->blob) {
			char *end;
			long v = strtol(opt + 6, &end, 10);

			if (end == opt + 6 || *end || v < 0 || v > 1 << 20)
				ret = cli_usage_error(CMD,
						      "--oci: layer=%s: not a "
						      "layer index",
						      opt + 6);
			mo->layer = (int)v;
		} else if (!strncmp(opt, "blob=", 5) ||
			   !strncmp(opt, "layer=", 6)) {
			ret = cli_usage_error(CMD, "--oci: layer= and blob= "
						   "exclude each other");
		} else if (!strncmp(opt, "username=", 9)) {
			ret = set_str(&mo->username, opt + 9);
		} else if (!strncmp(opt, "password=", 9)) {
			ret = set_str(&mo->password, opt + 9);
		} else if (!strcmp(opt, "insecure")) {
			mo->insecure = 1;
		} else {
			ret = cli_usage_error(CMD, "--oci: unknown option '%s'",
					      opt);
		}
	}
	free(dup);
	return ret;
}

int mkfs_oci_check(const struct mkfs_oci *mo, struct ezfs_build_params *p,
		   int incremental, int zerofill)
{
	if (!mo->on)
		return 0;
	if (incremental || p->tar_rvsp || zerofill || p->gzinfo_file)
		return cli_usage_error(CMD, "--oci: not with %s",
				       incremental   ? "--incremental"
				       : p->tar_rvsp ? "--clean=rvsp"
				       : zerofill    ? "--clean=0"
						     : "--gzinfo");
	if (mo->index && p->aufs)
		return cli_usage_error(CMD, "--oci=i: not with --aufs (a tar "
					    "index keeps the layer's entries)");
	/* one layer: its whiteouts stay, as overlayfs ones */
	if (!mo->index && (mo->layer >= 0 || mo->blob))
		p->aufs = 1;
	else if (!mo->index && p->aufs)
		return cli_usage_error(CMD, "--oci: --aufs only with layer= or "
					    "blob= (the merged layers keep no "
					    "whiteouts)");
	return 0;
}

void mkfs_oci_free(struct mkfs_oci *mo)
{
	for (size_t i = 0; i < mo->nfiles; i++) {
		unlink(mo->files[i]);
		free(mo->files[i]);
	}
	free(mo->files);
	free(mo->blob);
	free(mo->platform);
	free(mo->username);
	free(mo->password);
	memset(mo, 0, sizeof(*mo));
}

#ifndef EZFS_HAVE_REMOTE
int mkfs_oci_scan(struct mkfs_oci *mo, ezfs_builder *b, const char *ref,
		  const char *tmpdir, int quiet)
{
	cli_error(CMD, "%s: --oci: this ezfs was built without libcurl", ref);
	return 1;
}
#else

/* the remote library's first error line, said once */
struct oci_log {
	const char *ref;
	int said;
};

static void oci_log(void *arg, int level, const char *msg)
{
	struct oci_log *l = arg;

	if (level != EZFS_LOG_ERROR || l->said)
		return;
	l->said = 1;
	cli_error(CMD, "%s: %s", l->ref, msg);
}

int mkfs_remote_copy(ezfs_remote *r, uint64_t size, int fd)
{
	const struct ezfs_io_ops *ops = ezfs_remote_io_ops();
	char *buf = malloc(1 << 20);
	uint64_t off = 0;
	int err = buf ? 0 : -ENOMEM;

	while (!err && off < size) {
		size_t want = size - off < (1u << 20) ? (size_t)(size - off)
						      : 1u << 20;
		ssize_t n = ops->pread(r, buf, want, off);

		if (n <= 0)
			err = n < 0 ? (int)n : -EIO;
		else if (write(fd, buf, (size_t)n) != n)
			err = errno ? -errno : -ENOSPC;
		else
			off += (uint64_t)n;
	}
	free(buf);
	return err;
}

/* Blob d of url fetched whole into a new file in tmpdir (its name into
 * *out), its digest checked: 0, or -1 after one line. */
static int fetch(const char *url, const struct ezfs_remote_params *base,
		 const struct ezfs_remote_layer *lay, const char *tmpdir,
		 struct oci_log *lg, char **out)
{
	struct ezfs_remote_params rp = *base;
	ezfs_remote *r = NULL;
	char *path = NULL;
	int fd = -1, err;

	rp.blob = lay->digest;
	rp.layer = -1;
	err = ezfs_remote_open(url, &rp, &r);
	if (err) {
		if (!lg->said)
			cli_error(CMD, "%s: layer %s: %s", lg->ref, lay->digest,
				  ezfs_strerror(err));
		return -1;
	}
	if (asprintf(&path, "%s/.ezfs-oci-%.12s.XXXXXX", tmpdir,
		     lay->digest + 7) < 0) {
		path = NULL;
		err = -ENOMEM;
	}
	if (!err) {
		fd = mkostemp(path, O_CLOEXEC);
		if (fd < 0)
			err = -errno;
	}
	if (!err)
		err = mkfs_remote_copy(r, ezfs_remote_size(r), fd);
	if (!err) {
		int v = ezfs_remote_verify(r);

		if (v < 0)
			err = v;
	}
	ezfs_remote_close(r);
	if (fd >= 0 && close(fd) && !err)
		err = -errno;
	if (!err) {
		*out = path;
		return 0;
	}
	if (!lg->said)
		cli_error(CMD, "%s: layer %s: %s%s", lg->ref, lay->digest,
			  ezfs_strerror(err),
			  err == -EBADMSG ? " (its bytes are not its digest)"
			  : fd >= 0	  ? ""
					  : " (the spool folder)");
	if (fd >= 0)
		unlink(path);
	free(path);
	return -1;
}

/* a gzip (or other compressed) layer by its media type */
static int compressed_mt(const char *mt)
{
	return strstr(mt, "gzip") || strstr(mt, "zstd") || strstr(mt, "xz");
}

int mkfs_oci_scan(struct mkfs_oci *mo, ezfs_builder *b, const char *ref,
		  const char *tmpdir, int quiet)
{
	struct oci_log lg = { .ref = ref };
	struct ezfs_remote_params rp;
	struct ezfs_remote_layer *lays = NULL;
	size_t n = 0, first = 0, count;
	char *url = NULL;
	int err, ret = 1;

	if (asprintf(&url, "%s%s", strncmp(ref, "oci://", 6) ? "oci://" : "",
		     ref) < 0) {
		cli_error(CMD, "out of memory");
		return 1;
	}
	ezfs_remote_params_init(&rp);
	rp.log = oci_log;
	rp.log_arg = &lg;
	rp.platform = mo->platform;
	rp.insecure = mo->insecure;
	rp.username = mo->username;
	rp.password = mo->password;
	rp.mem_bytes = 4u << 20;
	err = ezfs_remote_oci_layers(url, &rp, &lays, &n);
	if (err) {
		if (!lg.said)
			cli_error(CMD, "%s: %s", ref, ezfs_strerror(err));
		goto out;
	}
	count = n;
	if (mo->layer >= 0 || mo->blob) {
		for (first = 0; mo->blob && first < n; first++)
			if (!strcmp(lays[first].digest, mo->blob))
				break;
		if (mo->layer >= 0)
			first = (size_t)mo->layer;
		if (first >= n) {
			if (mo->blob)
				cli_error(CMD,
					  "%s: no layer %s in the manifest",
					  ref, mo->blob);
			else
				cli_error(CMD,
					  "%s: layer=%d: the manifest has %zu "
					  "layers",
					  ref, mo->layer, n);
			goto out;
		}
		count = 1;
	}
	if (mo->index && count != 1) {
		cli_error(CMD,
			  "%s: --oci=i indexes one layer of the %zu (choose "
			  "it with layer= or blob=)",
			  ref, n);
		goto out;
	}
	if (mo->index && compressed_mt(lays[first].media_type)) {
		cli_error(CMD,
			  "%s: layer %s is %s: --oci=i indexes an "
			  "uncompressed tar layer",
			  ref, lays[first].digest, lays[first].media_type);
		goto out;
	}
	mo->files = calloc(count, sizeof(*mo->files));
	if (!mo->files) {
		cli_error(CMD, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < count; i++) {
		const struct ezfs_remote_layer *l = &lays[first + i];
		char sz[32];

		if (!quiet)
			fprintf(stderr, "%s: layer %zu of %zu: %s (%s)\n", CMD,
				first + i + 1, n, l->digest,
				cli_fmt_size(l->size, sz, sizeof(sz)));
		if (fetch(url, &rp, l, tmpdir, &lg, &mo->files[i]))
			goto out;
		mo->nfiles++;
	}
	if (count == 1)
		err = ezfs_builder_scan_tar(b, mo->files[0], tmpdir);
	else
		err = ezfs_builder_scan_tar_layers(
			b, (const char *const *)mo->files, count, tmpdir);
	ret = err;
out:
	free(lays);
	free(url);
	return ret;
}
#endif
