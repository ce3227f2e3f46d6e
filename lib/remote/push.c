/* SPDX-License-Identifier: MIT */
/*
 * push.c - an image uploaded to a registry (the distribution API's
 * monolithic upload: POST for a session, one PUT of the bytes with
 * ?digest=), as the one layer of an OCI artifact manifest, then the
 * manifest under its tag.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "remote/internal.h"
#include "util/sha256.h"

static int put_blob(struct ezi_reg *g, const void *data, size_t len,
		    const char *digest)
{
	char url[8192];
	struct ezi_rhdrs h;
	long st;
	int err;

	snprintf(url, sizeof(url), "%s/v2/%s/blobs/%s", g->base, g->ref.repo,
		 digest);
	err = ezi_reg_req(g, "HEAD", url, NULL, NULL, NULL, 0, NULL, &h, &st);
	if (err)
		return err;
	if (st == 200)
		return 0; /* there already */
	snprintf(url, sizeof(url), "%s/v2/%s/blobs/uploads/", g->base,
		 g->ref.repo);
	err = ezi_reg_req(g, "POST", url, NULL, NULL, NULL, 0, NULL, &h, &st);
	if (err)
		return err;
	if (st != 202 || !h.location[0]) {
		snprintf(g->err, sizeof(g->err),
			 "starting the upload: HTTP %ld", st);
		return st == 401 || st == 403 ? -EACCES : -EIO;
	}
	if (h.location[0] == '/')
		snprintf(url, sizeof(url), "%s%s%sdigest=%s", g->base,
			 h.location, strchr(h.location, '?') ? "&" : "?",
			 digest);
	else
		snprintf(url, sizeof(url), "%s%sdigest=%s", h.location,
			 strchr(h.location, '?') ? "&" : "?", digest);
	err = ezi_reg_req(g, "PUT", url, NULL, "application/octet-stream", data,
			  len, NULL, &h, &st);
	if (err)
		return err;
	if (st != 201) {
		snprintf(g->err, sizeof(g->err), "uploading %s: HTTP %ld",
			 digest, st);
		return -EIO;
	}
	return 0;
}

int ezi_oci_push(struct ezi_reg *g, const char *path, char *out_digest,
		 size_t size, char *out_manifest, size_t msize)
{
	struct stat st;
	char hex[65], digest[80], manifest[2048], url[4096], title[256];
	const char *base = strrchr(path, '/');
	struct ezi_rhdrs h;
	void *map;
	long status;
	int fd, err, n;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		err = -errno;
		snprintf(g->err, sizeof(g->err), "%s: %s", path,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode) || !st.st_size) {
		close(fd);
		snprintf(g->err, sizeof(g->err), "%s: not a regular file",
			 path);
		return -EINVAL;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		snprintf(g->err, sizeof(g->err), "%s: %s", path,
			 strerror(errno));
		return -EIO;
	}
	ezi_sha256_hex(map, (size_t)st.st_size, hex);
	snprintf(digest, sizeof(digest), "sha256:%s", hex);
	err = put_blob(g, map, (size_t)st.st_size, digest);
	munmap(map, (size_t)st.st_size);
	if (!err)
		err = put_blob(g, "{}", 2, EZI_EMPTY_DIGEST);
	if (err)
		return err;
	snprintf(title, sizeof(title), "%s", base ? base + 1 : path);
	for (char *c = title; *c; c++)
		if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20)
			*c = '_';
	n = snprintf(manifest, sizeof(manifest),
		     "{\"schemaVersion\":2,\"mediaType\":\"" EZI_MT_MANIFEST
		     "\","
		     "\"artifactType\":\"" EZI_MT_EROFS "\","
		     "\"config\":{\"mediaType\":\"" EZI_MT_EMPTY "\","
		     "\"digest\":\"" EZI_EMPTY_DIGEST "\",\"size\":2},"
		     "\"layers\":[{\"mediaType\":\"" EZI_MT_EROFS "\","
		     "\"digest\":\"%s\",\"size\":%lld,\"annotations\":{"
		     "\"org.opencontainers.image.title\":\"%s\"}}]}",
		     digest, (long long)st.st_size, title);
	snprintf(url, sizeof(url), "%s/v2/%s/manifests/%s", g->base,
		 g->ref.repo, g->ref.ref);
	err = ezi_reg_req(g, "PUT", url, NULL, EZI_MT_MANIFEST, manifest,
			  (size_t)n, NULL, &h, &status);
	if (err)
		return err;
	if (status != 201) {
		snprintf(g->err, sizeof(g->err), "the manifest: HTTP %ld",
			 status);
		return -EIO;
	}
	snprintf(out_digest, size, "%s", digest);
	ezi_sha256_hex(manifest, (size_t)n, hex);
	snprintf(out_manifest, msize, "sha256:%s", hex);
	return 0;
}

int ezfs_remote_push(const char *path, const char *ref,
		     const struct ezfs_remote_params *p, char digest[72],
		     char manifest[72])
{
	struct ezi_oci_ref o;
	struct ezi_reg g;
	int err;

	if (!p || !p->size || p->size > sizeof(struct ezfs_remote_params))
		return -EINVAL;
	if (ezi_curl_ready(p))
		return -ELIBACC;
	if (ezi_oci_parse(ref, p->insecure, &o) ||
	    !strncmp(o.ref, "sha256:", 7)) {
		ezi_rlogf(p->log, p->log_arg, EZFS_LOG_ERROR,
			  "not a reference oci://HOST[:PORT]/REPO:TAG");
		return -EINVAL;
	}
	ezi_reg_init(&g, &o, p->log, p->log_arg, p->timeout_ms);
	err = ezi_oci_push(&g, path, digest, 72, manifest, 72);
	if (err)
		ezi_rlogf(p->log, p->log_arg, EZFS_LOG_ERROR, "%s", g.err);
	ezi_reg_destroy(&g);
	return err;
}
