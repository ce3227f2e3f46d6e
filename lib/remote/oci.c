/* SPDX-License-Identifier: MIT */
/*
 * oci.c - images in OCI registries (the distribution API, v2):
 * oci://HOST[:PORT]/REPO:TAG or oci://HOST[:PORT]/REPO@sha256:HEX.
 *
 * The reference is resolved to a manifest (through an index, by
 * platform), a layer of it chosen (by digest, index, or the EROFS layer
 * media type), and its blob URL read with Range like any other image
 * (the oci scheme at the end of this file). The requests go through
 * registry.c, with its credentials. Plain http for 127.0.0.1 and
 * localhost, or when asked for.
 */
#define _GNU_SOURCE /* asprintf */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "remote/curl_dl.h"

#include "ezfs/verity.h"
#include "remote/internal.h"
#include "remote/json.h"
#include "util/sha256.h"

#define MT_MANIFEST EZI_MT_MANIFEST
#define MT_INDEX    "application/vnd.oci.image.index.v1+json"
#define MT_DOCKER_MANIFEST                                                     \
	"application/vnd.docker.distribution.manifest.v2+json"
#define MT_DOCKER_LIST                                                         \
	"application/vnd.docker.distribution.manifest.list.v2+json"

#define OCI_FORM                                                               \
	"oci://HOST[:PORT]/REPO[:TAG] or oci://HOST[:PORT]/REPO@sha256:HEX"

static int bad_ref(char *why, size_t whylen, const char *fmt, const char *arg)
{
	if (why) {
		char what[600];

		snprintf(what, sizeof(what), fmt, arg);
		snprintf(why, whylen, "%s", what);
	}
	return -EINVAL;
}

int ezi_oci_parse(const char *s, int insecure, struct ezi_oci_ref *r, char *why,
		  size_t whylen)
{
	const char *h, *slash, *at, *colon, *last;
	size_t hl, rl;
	int upper = 0;

	memset(r, 0, sizeof(*r));
	if (strncasecmp(s, "oci://", 6))
		return bad_ref(why, whylen, "not a reference %s", OCI_FORM);
	h = s + 6;
	slash = strchr(h, '/');
	if (!slash || slash == h || !slash[1])
		return bad_ref(why, whylen,
			       "no host or no repository: %s wanted", OCI_FORM);
	hl = (size_t)(slash - h);
	if (hl >= sizeof(r->host))
		return bad_ref(why, whylen, "the host is too long%s", "");
	memcpy(r->host, h, hl);
	r->host[hl] = '\0';
	s = slash + 1;
	at = strchr(s, '@');
	last = strrchr(s, '/');
	/* a ':' after the last '/' starts the tag; none: latest */
	colon = at ? at : strrchr(last ? last : s, ':');
	rl = colon ? (size_t)(colon - s) : strlen(s);
	if (!rl || (colon && !colon[1]))
		return bad_ref(why, whylen, "an empty repository or tag: %s",
			       OCI_FORM);
	if (rl >= sizeof(r->repo) ||
	    (colon && strlen(colon + 1) >= sizeof(r->ref)))
		return bad_ref(why, whylen,
			       "the repository or tag is too long%s", "");
	memcpy(r->repo, s, rl);
	r->repo[rl] = '\0';
	snprintf(r->ref, sizeof(r->ref), "%s", colon ? colon + 1 : "latest");
	if (at && (strncmp(r->ref, "sha256:", 7) || strlen(r->ref) != 71 ||
		   strspn(r->ref + 7, "0123456789abcdef") != 64))
		return bad_ref(why, whylen,
			       "'@%s' is no digest (sha256: and 64 lower-case "
			       "hex digits)",
			       r->ref);
	for (const char *c = r->repo; *c; c++) {
		if (*c >= 'A' && *c <= 'Z') {
			upper = 1;
		} else if (!((*c >= 'a' && *c <= 'z') ||
			     (*c >= '0' && *c <= '9') || *c == '.' ||
			     *c == '_' || *c == '-' || *c == '/')) {
			return bad_ref(why, whylen,
				       "repository '%s': only a-z, 0-9, '.', "
				       "'_', '-' and '/' may name one",
				       r->repo);
		}
	}
	if (upper)
		return bad_ref(why, whylen,
			       "repository '%s' has upper-case letters: "
			       "registries name repositories in lower case "
			       "only",
			       r->repo);
	if (!at &&
	    strspn(r->ref, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRST"
			   "UVWXYZ0123456789_.-") != strlen(r->ref))
		return bad_ref(why, whylen,
			       "tag '%s': only letters, digits, '_', '.' and "
			       "'-' may name one",
			       r->ref);
	r->http = insecure || !strncmp(r->host, "127.0.0.1", 9) ||
		  !strncmp(r->host, "localhost", 9) ||
		  !strncmp(r->host, "[::1]", 5);
	return 0;
}

const char *ezi_oci_host_arch(void)
{
	static struct utsname u;

	if (uname(&u))
		return "amd64";
	if (!strcmp(u.machine, "x86_64"))
		return "amd64";
	if (!strcmp(u.machine, "aarch64"))
		return "arm64";
	if (!strncmp(u.machine, "armv7", 5))
		return "arm";
	if (!strcmp(u.machine, "i686") || !strcmp(u.machine, "i386"))
		return "386";
	return u.machine;
}

/* ---- the documents of a resolve, kept beside the cache entry ----
 *
 * What a resolve fetched (the index, the manifest, the chunk index),
 * each by the reference it was asked by, so that the layer read from the
 * persistent cache while the registry cannot be reached still has the
 * manifest's annotations (its dm-verity root) and chunk index. Replayed,
 * a document named by digest is checked against it as when fetched: a
 * manifest reached by digest stays a trust anchor; one reached by a tag
 * is as trusted as the cache folder (docs/verity.md). KEY.oci, KEY the
 * blob's cache entry:
 *
 *   ezfs-oci-record 1
 *   name REFERENCE
 *   doc REF LEN        then LEN bytes, for each document
 */

#define DOCS_MAX     4
#define DOCS_MAGIC   "ezfs-oci-record 1"
#define DOCS_MAX_LEN (16u << 20)

struct ezi_oci_docs {
	int replay; /* 1: served from here; 0: what is fetched is kept */
	unsigned n;
	struct {
		char ref[160];
		char *p;
		size_t len;
	} d[DOCS_MAX];
};

static void docs_free(struct ezi_oci_docs *k)
{
	for (unsigned i = 0; k && i < k->n; i++)
		free(k->d[i].p);
	free(k);
}

/* A document fetched as ref: kept (recording). */
static void docs_keep(struct ezi_reg *g, const char *ref, const char *p,
		      size_t len)
{
	struct ezi_oci_docs *k = g->docs;

	if (!k || k->replay || k->n >= DOCS_MAX ||
	    strlen(ref) >= sizeof(k->d[0].ref) ||
	    !(k->d[k->n].p = malloc(len ? len : 1)))
		return;
	memcpy(k->d[k->n].p, p, len);
	k->d[k->n].len = len;
	snprintf(k->d[k->n].ref, sizeof(k->d[0].ref), "%s", ref);
	k->n++;
}

/* The document asked as ref, replayed into out: 0, or -EIO (not
 * recorded: as if the registry had not answered). */
static int docs_get(struct ezi_reg *g, const char *ref, struct ezi_rbuf *out)
{
	const struct ezi_oci_docs *k = g->docs;

	for (unsigned i = 0; i < k->n; i++) {
		if (strcmp(k->d[i].ref, ref))
			continue;
		free(out->p);
		out->p = malloc(k->d[i].len + 1);
		if (!out->p)
			return -ENOMEM;
		memcpy(out->p, k->d[i].p, k->d[i].len);
		out->p[k->d[i].len] = '\0';
		out->n = k->d[i].len;
		return 0;
	}
	snprintf(g->err, sizeof(g->err),
		 "%.100s is not in the cache's record of the manifest", ref);
	return -EIO;
}

/* KEY.oci of the cache entry of the blob digest (malloc'd). */
static char *docs_path(const char *dir, const char *digest)
{
	char key[17], *p;

	ezi_cache_key(digest, key);
	if (asprintf(&p, "%s/%s.oci", dir, key) < 0)
		return NULL;
	return p;
}

/* The documents of the resolve of name written beside its blob's cache
 * entry (a temporary file renamed over the record; a failure costs only
 * the record). */
static void docs_store(const struct ezi_oci_docs *k, const char *dir,
		       const char *digest, const char *name)
{
	char *path = docs_path(dir, digest), *tmp = NULL;
	FILE *f;
	int ok;

	(void)mkdir(dir, 0700); /* before the entry's (cache.c) */
	if (!path || asprintf(&tmp, "%s.tmp", path) < 0 ||
	    !(f = fopen(tmp, "wbe"))) {
		free(path);
		free(tmp);
		return;
	}
	ok = fprintf(f, DOCS_MAGIC "\nname %s\n", name) > 0;
	for (unsigned i = 0; ok && i < k->n; i++)
		ok = fprintf(f, "doc %s %zu\n", k->d[i].ref, k->d[i].len) > 0 &&
		     fwrite(k->d[i].p, 1, k->d[i].len, f) == k->d[i].len;
	ok = !fclose(f) && ok && !rename(tmp, path);
	if (!ok)
		unlink(tmp);
	free(tmp);
	free(path);
}

/* The record of name's resolve, beside the entry of blob digest, read
 * for replay; NULL when there is none for that name. */
static struct ezi_oci_docs *docs_load(const char *dir, const char *digest,
				      const char *name)
{
	char *path = docs_path(dir, digest), line[4200];
	struct ezi_oci_docs *k = NULL;
	FILE *f = path ? fopen(path, "rbe") : NULL;
	size_t len, nl = strlen(name);

	free(path);
	if (!f)
		return NULL;
	if (!fgets(line, sizeof(line), f) || strcmp(line, DOCS_MAGIC "\n") ||
	    !fgets(line, sizeof(line), f) || strncmp(line, "name ", 5) ||
	    strncmp(line + 5, name, nl) || strcmp(line + 5 + nl, "\n") ||
	    !(k = calloc(1, sizeof(*k))))
		goto fail;
	k->replay = 1;
	while (fgets(line, sizeof(line), f)) {
		char ref[160];

		if (k->n >= DOCS_MAX ||
		    sscanf(line, "doc %159s %zu", ref, &len) != 2 ||
		    len > DOCS_MAX_LEN ||
		    !(k->d[k->n].p = malloc(len ? len : 1)))
			goto fail;
		if (fread(k->d[k->n].p, 1, len, f) != len) {
			free(k->d[k->n].p);
			goto fail;
		}
		snprintf(k->d[k->n].ref, sizeof(k->d[0].ref), "%s", ref);
		k->d[k->n++].len = len;
	}
	fclose(f);
	return k;
fail:
	fclose(f);
	docs_free(k);
	return NULL;
}

static int get_manifest(struct ezi_reg *g, const char *ref,
			struct ezi_rbuf *out)
{
	char url[4096];
	struct ezi_rhdrs h;
	long st = 200;
	int err;

	snprintf(url, sizeof(url), "%s/v2/%s/manifests/%s", g->base,
		 g->ref.repo, ref);
	if (g->docs && g->docs->replay)
		err = docs_get(g, ref, out);
	else
		err = ezi_reg_req(g, "GET", url,
				  MT_MANIFEST ", " MT_INDEX
					      ", " MT_DOCKER_MANIFEST
					      ", " MT_DOCKER_LIST,
				  NULL, NULL, 0, NULL, out, &h, &st);
	if (err)
		return err;
	if (st == 200 && !strncmp(ref, "sha256:", 7)) {
		char hex[65];

		/* named by digest: the bytes must be those (the trust in
		 * what the manifest says rests on it) */
		ezi_sha256_hex(out->p ? out->p : "", out->n, hex);
		if (strcmp(hex, ref + 7)) {
			snprintf(g->err, sizeof(g->err),
				 "manifest %.80s of %.200s: its bytes hash to "
				 "sha256:%s, not to the digest it was named "
				 "by",
				 ref, g->ref.repo, hex);
			return -EBADMSG;
		}
	}
	if (st == 200) {
		docs_keep(g, ref, out->p ? out->p : "", out->n);
		return 0;
	}
	if (st == 401 || st == 403) {
		if (!g->err[0])
			snprintf(g->err, sizeof(g->err),
				 "manifest %s: HTTP %ld (access denied)", ref,
				 st);
		return -EACCES;
	}
	snprintf(g->err, sizeof(g->err), "manifest %s of %s: HTTP %ld%s", ref,
		 g->ref.repo, st, st == 404 ? " (not found)" : "");
	return st == 404 ? -ENOENT : -EIO;
}

/* A decimal annotation value: 0, or -1 when it is not one. */
static int ann_uint(const char *v, uint64_t *out)
{
	char *end;

	if (!v || *v < '0' || *v > '9')
		return -1;
	errno = 0;
	*out = strtoull(v, &end, 10);
	return errno || *end ? -1 : 0;
}

/* The image spec's dm-verity annotations of layer descriptor d into vt
 * (vt->have 0 when absent); one that is there but malformed: -EBADMSG
 * with why in g->err. */
static int layer_verity(struct ezi_reg *g, const struct ezi_json *d,
			struct ezi_oci_verity *vt)
{
	const struct ezi_json *a = ezi_json_get(d, "annotations");
	const char *off = ezi_json_str(a, "org.erofs.dmverity.hash_offset");
	const char *root = ezi_json_str(a, "org.erofs.dmverity.root_digest");
	const char *bs = ezi_json_str(a, "org.erofs.dmverity.block_size");
	uint64_t b = 4096;

	memset(vt, 0, sizeof(*vt));
	if (!off && !root)
		return 0;
	if (!off || !root || ann_uint(off, &vt->hash_offset) ||
	    (bs && ann_uint(bs, &b)) || b < 512 || b > 65536 || (b & (b - 1)) ||
	    vt->hash_offset % b || strncmp(root, "sha256:", 7) ||
	    ezfs_verity_parse_hex(root + 7, vt->root, sizeof(vt->root),
				  &vt->root_size) ||
	    vt->root_size != 32) {
		snprintf(g->err, sizeof(g->err),
			 "the layer's org.erofs.dmverity.* annotations are "
			 "malformed (hash_offset %.40s, root_digest %.80s, "
			 "block_size %.20s)",
			 off ? off : "missing", root ? root : "missing",
			 bs ? bs : "4096");
		return -EBADMSG;
	}
	vt->block_size = (unsigned)b;
	vt->have = 1;
	return 0;
}

/* A chunk index embedded in pick's blob (org.erofs.chunk-index.range
 * "OFFSET[:END]", .digest, .mediaType): into vt (ci_embedded); none
 * there: 0; there but not one ezfs reads (no digest to check it by,
 * another format, a malformed range): 0 with a warning in why. */
static void embedded_index(const struct ezi_json *pick,
			   struct ezi_oci_verity *vt, char *why, size_t n)
{
	const struct ezi_json *a = ezi_json_get(pick, "annotations");
	const char *rg = ezi_json_str(a, "org.erofs.chunk-index.range");
	const char *d = ezi_json_str(a, "org.erofs.chunk-index.digest");
	const char *mt = ezi_json_str(a, "org.erofs.chunk-index.mediaType");
	const struct ezi_json *sz = ezi_json_get(pick, "size");
	uint64_t off, end, size;
	char *e;

	why[0] = '\0';
	if (!rg)
		return;
	size = sz && sz->type == EZI_JSON_NUMBER ? (uint64_t)sz->num : 0;
	errno = 0;
	off = strtoull(rg, &e, 10);
	end = size;
	if (*e == ':')
		end = strtoull(e + 1, &e, 10);
	if (mt && strcmp(mt, EZI_MT_CHUNK_INDEX)) {
		snprintf(why, n,
			 "its chunk index is %.100s, which ezfs does not read",
			 mt);
	} else if (!d || strncmp(d, "sha256:", 7) || strlen(d) != 71) {
		snprintf(why, n,
			 "its embedded chunk index has no "
			 "org.erofs.chunk-index.digest to check it by");
	} else if (errno || *e || !(*rg >= '0' && *rg <= '9') || off >= end ||
		   end > size || end - off > (16u << 20)) {
		snprintf(why, n,
			 "its org.erofs.chunk-index.range %.60s is not a "
			 "range of its %llu bytes",
			 rg, (unsigned long long)size);
	} else {
		snprintf(vt->ci_digest, sizeof(vt->ci_digest), "%s", d);
		vt->ci_embedded = 1;
		vt->ci_off = off;
		vt->ci_size = end - off;
	}
}

/* A standalone chunk index of pick: the layer after it, of the chunk
 * index's media type, its org.erofs.chunk-index.target (if any) pick's
 * digest; into vt->ci_digest and ci_size. */
static void chunk_index_layer(const struct ezi_json *layers,
			      const struct ezi_json *pick,
			      struct ezi_oci_verity *vt)
{
	for (size_t i = 0; i + 1 < layers->n; i++) {
		const struct ezi_json *c = layers->kids[i + 1];
		const char *mt = ezi_json_str(c, "mediaType");
		const char *d = ezi_json_str(c, "digest");
		const char *t = ezi_json_str(ezi_json_get(c, "annotations"),
					     "org.erofs.chunk-index.target");
		const char *pd = ezi_json_str(pick, "digest");
		const struct ezi_json *sz = ezi_json_get(c, "size");

		if (layers->kids[i] != pick || !mt ||
		    strcmp(mt, EZI_MT_CHUNK_INDEX) || !d ||
		    strlen(d) >= sizeof(vt->ci_digest) ||
		    strncmp(d, "sha256:", 7) || (t && pd && strcmp(t, pd)) ||
		    !sz || sz->type != EZI_JSON_NUMBER)
			continue;
		snprintf(vt->ci_digest, sizeof(vt->ci_digest), "%s", d);
		vt->ci_size = (uint64_t)sz->num;
	}
}

/* The chunk index vt names fetched (its bytes checked against its
 * digest) and parsed into ci: 0, or a negative errno with g->err. */
static int fetch_chunk_index(struct ezi_reg *g, const struct ezi_oci_verity *vt,
			     const char *layer, uint64_t size,
			     struct ezi_cindex *ci)
{
	struct ezi_rbuf out = { .max = 64u << 20 };
	struct ezi_rhdrs h;
	char url[4096], hex[65], why[300], range[48];
	long st;
	int err;

	snprintf(url, sizeof(url), "%s/v2/%s/blobs/%s", g->base, g->ref.repo,
		 vt->ci_embedded ? layer : vt->ci_digest);
	if (g->docs && g->docs->replay) {
		err = docs_get(g, vt->ci_digest, &out);
		st = 200;
	} else if (vt->ci_embedded) {
		/* its bytes of the layer's blob */
		snprintf(range, sizeof(range), "%llu-%llu",
			 (unsigned long long)vt->ci_off,
			 (unsigned long long)(vt->ci_off + vt->ci_size - 1));
		g->range = range;
		err = ezi_reg_req(g, "GET", url, NULL, NULL, NULL, 0, NULL,
				  &out, &h, &st);
		g->range = NULL;
		if (!err && st == 200 && out.n >= vt->ci_off + vt->ci_size) {
			/* the whole blob (the server ignores Range) */
			memmove(out.p, out.p + vt->ci_off, vt->ci_size);
			out.n = vt->ci_size;
		}
		if (!err && (st == 206 || st == 200) && out.n == vt->ci_size)
			st = 200;
		else if (!err)
			st = st == 206 || st == 200 ? 416 : st;
	} else {
		err = ezi_reg_req(g, "GET", url, NULL, NULL, NULL, 0, NULL,
				  &out, &h, &st);
	}
	if (!err && st != 200) {
		snprintf(g->err, sizeof(g->err), "the chunk index %s: HTTP %ld",
			 vt->ci_digest, st);
		err = -EIO;
	}
	if (!err) {
		ezi_sha256_hex(out.p ? out.p : "", out.n, hex);
		if (strcmp(hex, vt->ci_digest + 7)) {
			snprintf(g->err, sizeof(g->err),
				 "the chunk index %s: its bytes hash to "
				 "sha256:%s",
				 vt->ci_digest, hex);
			err = -EBADMSG;
		}
	}
	/* embedded: it covers the image data before it, not the blob */
	if (!err && vt->ci_embedded)
		size = vt->ci_off;
	if (!err && ezi_cindex_parse((const uint8_t *)out.p, out.n, size, ci,
				     why, sizeof(why))) {
		snprintf(g->err, sizeof(g->err), "%s: %s", vt->ci_digest, why);
		err = -EBADMSG;
	}
	if (!err)
		docs_keep(g, vt->ci_digest, out.p ? out.p : "", out.n);
	if (!err && vt->ci_embedded) {
		/* its own bytes, for the fetches of them (verify.c) */
		ci->tail = (uint8_t *)out.p;
		ci->tail_off = vt->ci_off;
		ci->tail_len = out.n;
		out.p = NULL;
	}
	free(out.p);
	return err;
}

/* Is mt an EROFS layer's media type: containerd's or the image spec's
 * (its +zstd form is not read: -1)? */
static int erofs_mt(const char *mt)
{
	if (!mt)
		return 0;
	if (!strcmp(mt, EZI_MT_EROFS_SPEC "+zstd"))
		return -1;
	return !strncmp(mt, EZI_MT_EROFS, strlen(EZI_MT_EROFS)) ||
	       !strcmp(mt, EZI_MT_EROFS_SPEC);
}

int ezi_oci_resolve(struct ezi_reg *g, const struct ezi_oci_sel *sel,
		    char *blob_url, size_t size, char digest[128],
		    uint64_t *blob_size, struct ezi_oci_verity *vt)
{
	struct ezi_rbuf out = { .max = 4 << 20 };
	struct ezi_json *j = NULL;
	const struct ezi_json *layers, *pick = NULL;
	char want_os[192] = "linux", want_arch[192], want_var[192] = "";
	const char *pf;
	int err;

	snprintf(want_arch, sizeof(want_arch), "%s", ezi_oci_host_arch());
	if (sel->platform && *sel->platform) {
		char tmp[192], *a, *v;

		snprintf(tmp, sizeof(tmp), "%s", sel->platform);
		a = strchr(tmp, '/');
		if (!a) {
			snprintf(g->err, sizeof(g->err),
				 "--platform '%s': OS/ARCH[/VARIANT] wanted",
				 sel->platform);
			return -EINVAL;
		}
		*a++ = '\0';
		v = strchr(a, '/');
		if (v)
			*v++ = '\0';
		snprintf(want_os, sizeof(want_os), "%s", tmp);
		snprintf(want_arch, sizeof(want_arch), "%s", a);
		snprintf(want_var, sizeof(want_var), "%s", v ? v : "");
	}
	err = get_manifest(g, g->ref.ref, &out);
	for (int hop = 0; !err && hop < 2; hop++) {
		const struct ezi_json *ms;

		ezi_json_free(j);
		j = ezi_json_parse(out.p ? out.p : "");
		if (!j) {
			snprintf(g->err, sizeof(g->err),
				 "the manifest is no JSON");
			err = -EIO;
			break;
		}
		ms = ezi_json_get(j, "manifests");
		if (!ms || ms->type != EZI_JSON_ARRAY)
			break;
		/* an index: the manifest of the platform */
		const char *d = NULL;

		for (size_t i = 0; i < ms->n && !d; i++) {
			const struct ezi_json *p =
				ezi_json_get(ms->kids[i], "platform");
			const char *os = ezi_json_str(p, "os");
			const char *ar = ezi_json_str(p, "architecture");
			const char *va = ezi_json_str(p, "variant");

			if (os && ar && !strcmp(os, want_os) &&
			    !strcmp(ar, want_arch) &&
			    (!want_var[0] || (va && !strcmp(va, want_var))))
				d = ezi_json_str(ms->kids[i], "digest");
		}
		if (!d) {
			snprintf(g->err, sizeof(g->err),
				 "the index has no manifest for %s/%s%s%s",
				 want_os, want_arch, want_var[0] ? "/" : "",
				 want_var);
			err = -ENOENT;
			break;
		}
		char dd[128];

		snprintf(dd, sizeof(dd), "%s", d);
		err = get_manifest(g, dd, &out);
	}
	if (err)
		goto out;
	layers = ezi_json_get(j, "layers");
	if (!layers || layers->type != EZI_JSON_ARRAY || !layers->n) {
		snprintf(g->err, sizeof(g->err), "the manifest has no layers");
		err = -ENOENT;
		goto out;
	}
	if (sel->each) {
		for (size_t i = 0; i < layers->n && !err; i++) {
			const struct ezi_json *sz =
				ezi_json_get(layers->kids[i], "size");
			const char *d = ezi_json_str(layers->kids[i], "digest");

			err = sel->each(
				sel->each_arg, d ? d : "",
				ezi_json_str(layers->kids[i], "mediaType"),
				sz && sz->type == EZI_JSON_NUMBER
					? (uint64_t)sz->num
					: 0);
		}
		goto out;
	}
	if (sel->blob && *sel->blob) {
		for (size_t i = 0; i < layers->n && !pick; i++) {
			const char *d = ezi_json_str(layers->kids[i], "digest");

			if (d && !strcmp(d, sel->blob))
				pick = layers->kids[i];
		}
		if (!pick) {
			snprintf(g->err, sizeof(g->err),
				 "no layer %.100s in the manifest", sel->blob);
			err = -ENOENT;
			goto out;
		}
	} else if (sel->layer >= 0) {
		if ((size_t)sel->layer >= layers->n) {
			snprintf(g->err, sizeof(g->err),
				 "--layer %d: the manifest has %zu layers",
				 sel->layer, layers->n);
			err = -ENOENT;
			goto out;
		}
		pick = layers->kids[sel->layer];
	} else {
		for (size_t i = 0; i < layers->n && !pick; i++)
			if (erofs_mt(ezi_json_str(layers->kids[i],
						  "mediaType")) > 0)
				pick = layers->kids[i];
		if (!pick && layers->n == 1)
			pick = layers->kids[0];
		if (!pick) {
			snprintf(g->err, sizeof(g->err),
				 "no layer of type " EZI_MT_EROFS
				 " or " EZI_MT_EROFS_SPEC
				 " among %zu (choose one with --layer N or "
				 "--blob DIGEST)",
				 layers->n);
			err = -ENOENT;
			goto out;
		}
	}
	if (erofs_mt(ezi_json_str(pick, "mediaType")) < 0) {
		snprintf(g->err, sizeof(g->err),
			 "the layer is " EZI_MT_EROFS_SPEC "+zstd (zstd "
			 "frames around the image), which ezfs does not read; "
			 "push it as " EZI_MT_EROFS_SPEC " or " EZI_MT_EROFS);
		err = -EOPNOTSUPP;
		goto out;
	}
	if (vt) {
		err = layer_verity(g, pick, vt);
		if (err)
			goto out;
		char why[300];

		embedded_index(pick, vt, why, sizeof(why));
		if (why[0] && g->log)
			ezi_rlogf(g->log, g->log_arg, EZFS_LOG_WARN,
				  "the layer: %s; its blocks are not checked "
				  "by it",
				  why);
		if (!vt->ci_embedded)
			chunk_index_layer(layers, pick, vt);
		/* the trace published with it (fill.c reads it) */
		pf = ezi_json_str(ezi_json_get(pick, "annotations"),
				  "org.ezfs.prefetch");
		if (pf)
			vt->prefetch = strdup(pf);
	}
	{
		const char *d = ezi_json_str(pick, "digest");
		const struct ezi_json *sz = ezi_json_get(pick, "size");

		if (!d || strncmp(d, "sha256:", 7) || strlen(d) != 71) {
			snprintf(g->err, sizeof(g->err),
				 "the layer has no sha256 digest");
			err = -EIO;
			goto out;
		}
		snprintf(digest, 128, "%s", d);
		*blob_size = sz && sz->type == EZI_JSON_NUMBER
				     ? (uint64_t)sz->num
				     : 0;
		snprintf(blob_url, size, "%s/v2/%s/blobs/%s", g->base,
			 g->ref.repo, d);
	}
out:
	ezi_json_free(j);
	free(out.p);
	return err;
}

/* ezfs_remote_oci_layers: each layer appended to the list */
struct layer_list {
	struct ezfs_remote_layer *v;
	size_t n;
	struct ezi_reg *g;
};

static int add_layer(void *arg, const char *digest, const char *mt,
		     uint64_t size)
{
	struct layer_list *l = arg;
	struct ezfs_remote_layer *v;

	if (strncmp(digest, "sha256:", 7) || strlen(digest) != 71) {
		snprintf(l->g->err, sizeof(l->g->err),
			 "layer %zu has no sha256 digest", l->n);
		return -EIO;
	}
	v = realloc(l->v, (l->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	l->v = v;
	v += l->n++;
	memset(v, 0, sizeof(*v));
	snprintf(v->digest, sizeof(v->digest), "%s", digest);
	snprintf(v->media_type, sizeof(v->media_type), "%s", mt ? mt : "");
	v->size = size;
	return 0;
}

int ezfs_remote_oci_layers(const char *ref, const struct ezfs_remote_params *p,
			   struct ezfs_remote_layer **layers, size_t *n)
{
	struct ezfs_remote_params d;
	struct layer_list l = { .v = NULL };
	struct ezi_oci_sel sel = { .layer = -1, .each = add_layer };
	struct ezi_oci_ref o;
	struct ezi_reg g;
	char url[16], digest[128], why[700];
	uint64_t size;
	int err;

	*layers = NULL;
	*n = 0;
	err = ezi_remote_begin(&p, &d);
	if (err)
		return err;
	if (ezi_oci_parse(ref, p->insecure, &o, why, sizeof(why))) {
		if (p->log)
			p->log(p->log_arg, EZFS_LOG_ERROR, why);
		return -EINVAL;
	}
	sel.platform = p->platform;
	sel.each_arg = &l;
	ezi_reg_init(&g, &o, p->log, p->log_arg, p->timeout_ms);
	ezi_reg_basic(&g, p->username, p->password);
	l.g = &g;
	err = ezi_oci_resolve(&g, &sel, url, sizeof(url), digest, &size, NULL);
	if (!err && !l.n) {
		snprintf(g.err, sizeof(g.err), "the manifest has no layers");
		err = -ENOENT;
	}
	if (err) {
		if (p->log)
			p->log(p->log_arg, EZFS_LOG_ERROR, g.err);
		free(l.v);
	} else {
		*layers = l.v;
		*n = l.n;
	}
	ezi_reg_destroy(&g);
	return err;
}

/* ------------------------------------------------------------------ */
/* The scheme                                                          */

/* The registry cannot be reached (err, from the resolve), but the cache
 * holds the complete entry opened by this reference: its blob, read by
 * the digest in its URL (and checked against it as always), without a
 * request (r->offline); with the cache's record of the manifest (and
 * chunk index) this reference resolved to, its annotations as when it
 * was online. */
static int resolve_offline(struct ezfs_remote *r, struct ezi_reg *g,
			   const struct ezi_oci_sel *sel, int err)
{
	struct ezi_cmap m;
	const char *d;
	char url[4096], digest[128];
	uint64_t size = 0;

	if (err != -EIO || !r->p.cache_dir || !*r->p.cache_dir ||
	    ezi_cache_find(r->p.cache_dir, r->name, &m))
		return err;
	d = strstr(m.url, "/blobs/sha256:");
	if (d && strlen(d + 7) < sizeof(r->digest)) {
		r->url = strdup(m.url);
		snprintf(r->digest, sizeof(r->digest), "%s", d + 7);
		err = r->url ? 0 : -ENOMEM;
		r->offline = !err;
	}
	free(m.bits);
	if (err)
		return err;
	memset(&r->ann, 0, sizeof(r->ann));
	g->docs = docs_load(r->p.cache_dir, r->digest, r->name);
	if (!g->docs)
		return 0;
	g->err[0] = '\0';
	err = ezi_oci_resolve(g, sel, url, sizeof(url), digest, &size, &r->ann);
	if (!err && strcmp(digest, r->digest)) {
		snprintf(g->err, sizeof(g->err),
			 "it names the layer %.80s, the cache holds %.80s",
			 digest, r->digest);
		err = -EBADMSG;
	}
	if (!err && r->ann.ci_digest[0])
		err = fetch_chunk_index(g, &r->ann, r->digest, size, &r->ci);
	if (err) {
		/* as without the record: the tree's own root */
		ezi_rlog(r, EZFS_LOG_WARN,
			 "the cache's record of the manifest is not used: %s",
			 g->err);
		memset(&r->ann, 0, sizeof(r->ann));
		free(r->ci.hash);
		free(r->ci.tail);
		memset(&r->ci, 0, sizeof(r->ci));
	} else {
		ezi_rlog(r, EZFS_LOG_INFO,
			 "the layer's annotations from the cache's record of "
			 "the manifest%s",
			 r->pinned ? " (checked against its digest)" : "");
	}
	docs_free(g->docs);
	g->docs = NULL;
	return 0;
}

/* oci://: the reference resolved to its layer's blob URL and digest. */
static int oci_resolve(struct ezfs_remote *r)
{
	struct ezi_oci_sel sel = { .layer = r->p.layer,
				   .blob = r->p.blob,
				   .platform = r->p.platform };
	struct ezi_oci_ref o;
	struct ezi_reg *g;
	char url[4096], why[700];
	uint64_t size = 0;
	int err, cache = r->p.cache_dir && *r->p.cache_dir;

	if (ezi_oci_parse(r->name, r->p.insecure, &o, why, sizeof(why))) {
		ezi_rlog(r, EZFS_LOG_ERROR, "%s", why);
		return -EINVAL;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	r->sd = g;
	ezi_reg_init(g, &o, r->p.log, r->p.log_arg, r->p.timeout_ms);
	ezi_reg_basic(g, r->p.username, r->p.password);
	r->pinned = !strncmp(o.ref, "sha256:", 7);
	/* what is fetched is kept, for the cache's record */
	g->docs = cache ? calloc(1, sizeof(*g->docs)) : NULL;
	err = ezi_oci_resolve(g, &sel, url, sizeof(url), r->digest, &size,
			      &r->ann);
	if (!err && r->ann.ci_digest[0])
		err = fetch_chunk_index(g, &r->ann, r->digest, size, &r->ci);
	if (!err && g->docs)
		docs_store(g->docs, r->p.cache_dir, r->digest, r->name);
	docs_free(g->docs);
	g->docs = NULL;
	if (r->ann.prefetch && ezi_prio_parse(r, r->ann.prefetch))
		ezi_rlog(r, EZFS_LOG_WARN,
			 "the layer's org.ezfs.prefetch annotation is "
			 "malformed; its ranges from there on are not "
			 "fetched first");
	free(r->ann.prefetch);
	r->ann.prefetch = NULL;
	if (!err) {
		r->url = strdup(url);
		return r->url ? 0 : -ENOMEM;
	}
	if (r->ann.ci_digest[0] && err != -EIO) {
		/* a chunk index that is not what the manifest says */
		ezi_rlog(r, EZFS_LOG_ERROR, "%s", g->err);
		return err;
	}
	snprintf(why, sizeof(why), "%.690s", g->err);
	if (!resolve_offline(r, g, &sel, err)) {
		ezi_rlog(r, EZFS_LOG_WARN,
			 "registry %s unreachable; using the cached blob %s",
			 o.host, r->digest);
		ezi_rlog(r, EZFS_LOG_INFO, "%s", why);
		return 0;
	}
	ezi_rlog(r, EZFS_LOG_ERROR, "%s", g->err);
	return err;
}

static int oci_sign(struct ezfs_remote *r, void *e, struct curl_slist **h)
{
	char a[4200];
	struct curl_slist *n;

	(void)e;
	ezi_reg_auth(r->sd, a, sizeof(a));
	if (!a[0])
		return 0;
	n = curl_slist_append(*h, a);
	if (!n)
		return -ENOMEM;
	*h = n;
	return 0;
}

static int oci_reauth(struct ezfs_remote *r, const char *www, char *why,
		      size_t whylen)
{
	struct ezi_reg *g = r->sd;

	if (!ezi_reg_reauth(g, www))
		return 0;
	snprintf(why, whylen, "%.400s", g->err);
	return -EACCES;
}

static void oci_release(struct ezfs_remote *r)
{
	if (r->sd) {
		ezi_reg_destroy(r->sd);
		free(r->sd);
	}
	r->sd = NULL;
}

const struct ezi_scheme ezi_scheme_oci = {
	.prefix = "oci://",
	.resolve = oci_resolve,
	.sign = oci_sign,
	.reauth = oci_reauth,
	.release = oci_release,
};
