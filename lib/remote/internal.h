/* SPDX-License-Identifier: MIT */
/* internal.h - what the files of lib/remote share. */
#ifndef EZFS_REMOTE_INTERNAL_H
#define EZFS_REMOTE_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "ezfs/remote.h"

/* Parse "Content-Range: bytes A-B/T" (the value only): 0, or -1 when it
 * is not that form; *total is UINT64_MAX for an unknown total ("/" then "*").
 */
int ezi_content_range(const char *v, uint64_t *a, uint64_t *b, uint64_t *total);
/* A header's value v[0, n) into dst: leading blanks and the trailing CR,
 * LF and blanks cut, truncated to size - 1 bytes. */
void ezi_header_value(char *dst, size_t size, const char *v, size_t n);

/* cache.c: the map of a persistent cache entry. */
struct ezi_cmap {
	char url[4096];
	char name[4096]; /* the URL or oci:// reference opened ("": unknown) */
	char etag[256];
	char lastmod[128];
	uint64_t size;
	unsigned bs;
	uint8_t *bits; /* one bit per block */
	uint64_t nblocks;
};
/* FNV-1a of s as 16 hex digits into key[17]. */
void ezi_cache_key(const char *s, char key[17]);
int ezi_cmap_load(const char *path, struct ezi_cmap *m);
/* Does m list every block of the image? */
int ezi_cmap_complete(const struct ezi_cmap *m);
/* The complete entry of dir opened as name (its map into m): 0, or
 * -ENOENT. */
int ezi_cache_find(const char *dir, const char *name, struct ezi_cmap *m);
/* Write m to path crash-safely: a temporary file, fsync, rename, then
 * fsync of the folder. */
int ezi_cmap_store(const char *path, const struct ezi_cmap *m);
/* ezfs_remote_cache_gc, keeping the entry named keep (NULL: none). */
int ezi_cache_gc(const char *dir, uint64_t max, const char *keep,
		 uint64_t *freed);

/* oci.c: registries. */
#define EZI_MT_EROFS "application/vnd.erofs.layer.v1"
struct ezi_oci_ref {
	int http; /* plain http (127.0.0.1, localhost, --insecure) */
	char host[256];
	char repo[512];
	char ref[256]; /* a tag or sha256:HEX */
};
/* oci://HOST[:PORT]/REPO:TAG or .../REPO@sha256:HEX; -EINVAL if not. */
int ezi_oci_parse(const char *s, int insecure, struct ezi_oci_ref *r);

struct ezi_challenge {
	int bearer, basic;
	char realm[1024], service[1024], scope[1024];
};
/* A WWW-Authenticate value: 0, or -1 when it is no Bearer (with a realm)
 * or Basic challenge. */
int ezi_www_auth_parse(const char *v, struct ezi_challenge *c);

struct ezi_reg {
	struct ezi_oci_ref ref;
	char base[300]; /* http[s]://HOST[:PORT] */
	pthread_mutex_t lock;
	char auth[4096];  /* "Authorization: ..." or "" */
	int64_t expires;  /* of a token, seconds; 0: never */
	char basic[1024]; /* base64 user:password from the docker config */
	ezfs_log_fn log;
	void *log_arg;
	unsigned timeout_ms;
	char err[1024]; /* the last failure's reason */
};
struct ezi_oci_sel {
	int layer; /* -1: by media type */
	const char *blob;
	const char *platform; /* OS/ARCH[/VARIANT]; NULL: the host's */
};
void ezi_reg_init(struct ezi_reg *g, const struct ezi_oci_ref *ref,
		  ezfs_log_fn log, void *log_arg, unsigned timeout_ms);
void ezi_reg_destroy(struct ezi_reg *g);
/* The Authorization header line to send now ("" for none). */
void ezi_reg_auth(struct ezi_reg *g, char *dst, size_t size);
/* After a 401 with this WWW-Authenticate value: get new credentials. */
int ezi_reg_reauth(struct ezi_reg *g, const char *www);
int ezi_oci_resolve(struct ezi_reg *g, const struct ezi_oci_sel *sel,
		    char *blob_url, size_t size, char digest[128],
		    uint64_t *blob_size);
int ezi_oci_push(struct ezi_reg *g, const char *path, char *out_digest,
		 size_t size, char *out_manifest, size_t msize);

void ezi_rlogf(ezfs_log_fn log, void *arg, int level, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* s3.c: s3://BUCKET/KEY. The object's http(s) URL (*http_url, malloc'd)
 * and the signing state (*out) from the AWS environment and files; 0, or
 * a negative errno with why set. ezi_s3_apply() sets a request's SigV4
 * signing and appends its x-amz-* headers to *hdrs (nothing for an
 * unsigned, anonymous state); 0 or -ENOMEM. */
struct ezi_s3;
struct curl_slist;
int ezi_s3_open(const char *s3url, struct ezi_s3 **out, char **http_url,
		char *why, size_t whylen);
int ezi_s3_apply(const struct ezi_s3 *s, void *e, struct curl_slist **hdrs);
void ezi_s3_free(struct ezi_s3 *s);

#endif
