/* SPDX-License-Identifier: MIT */
/*
 * push.c - an image uploaded to a registry as the one layer of an OCI
 * image manifest (its config: the platform, os.features ["erofs"], the
 * layer as its diff_id), then the manifest under its tag. The layer's media
 * type is containerd's or the EROFS image spec's; an image with a
 * dm-verity tree after its filesystem has the tree checked whole first,
 * and the spec's org.erofs.dmverity.* annotations (hash offset, root,
 * block size) on its descriptor.
 *
 * The image is opened first as every reading command opens it
 * (ezfs_image_open, from the offset on): what ezfs cannot read is refused
 * before a byte is sent, and what goes up are the image's own bytes as
 * the library reads them (ezfs_image_read_raw: a sparse image expanded,
 * trailing data kept). They are read twice, once for the digest and once
 * as the body of the upload (the distribution API's monolithic upload:
 * POST for a session, one PUT of the bytes with ?digest=), so nothing is
 * held in memory whole. An upload stopped on the way (the progress
 * callback, or a failure) deletes its session: no half blob stays.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ezfs/verity.h"
#include "remote/internal.h"
#include "util/sha256.h"

#define CHUNK (1u << 20) /* read and hashed at a time */

struct push {
	const struct ezfs_remote_params *p;
	struct ezi_reg g;
	ezfs_image *img;
	uint64_t size;
	char open_err[512];	  /* the first error line of the open */
	const char *mt;		  /* the layer's media type */
	struct ezi_oci_verity vt; /* its dm-verity tree, when it has one */
	char bad[512];		  /* the tree's first problem */
	int64_t nbad;
	uint8_t *ci; /* the chunk index being made (NULL: none) */
	size_t ci_len;
};

#define CI_BITS 16 /* the chunks of an index pushed: 64 KiB */

static void open_log(void *arg, int level, const char *msg)
{
	struct push *ps = arg;

	if (level == EZFS_LOG_ERROR && !ps->open_err[0])
		snprintf(ps->open_err, sizeof(ps->open_err), "%s", msg);
}

/* What a file that is no EROFS image looks like, by its first bytes at
 * off: a name for the error line, or NULL. */
static const char *file_kind(const char *path, uint64_t off)
{
	unsigned char b[512];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : pread(fd, b, sizeof(b), (off_t)off);

	if (fd >= 0)
		close(fd);
	if (n >= 262 && !memcmp(b + 257, "ustar", 5))
		return "a tar archive";
	if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b)
		return "a gzip file";
	if (n >= 4 && !memcmp(b, "\x28\xb5\x2f\xfd", 4))
		return "a zstd file";
	if (n >= 6 && !memcmp(b,
			      "\xfd"
			      "7zXZ",
			      6))
		return "an xz file";
	if (n >= 4 && !memcmp(b, "hsqs", 4))
		return "a squashfs image";
	return NULL;
}

/* The image at path as ezfs reads it, or one line of why not in g.err. */
static int check_image(struct push *ps, const char *path)
{
	struct ezfs_open_params op;
	const char *kind;
	int err;

	ezfs_open_params_init(&op);
	op.log = open_log;
	op.log_arg = ps;
	op.offset = ps->p->offset;
	err = ezfs_image_open(path, &op, &ps->img);
	if (!err) {
		ps->size = ezfs_image_raw_size(ps->img);
		return 0;
	}
	kind = err == -EMEDIUMTYPE ? file_kind(path, ps->p->offset) : NULL;
	if (kind && !strcmp(kind, "a tar archive"))
		snprintf(ps->g.err, sizeof(ps->g.err),
			 "%.300s is a tar archive, not an EROFS image; make "
			 "one of it first (ezfs mkfs --tar=f IMAGE %.300s), "
			 "then push IMAGE; nothing was uploaded",
			 path, path);
	else if (kind)
		snprintf(ps->g.err, sizeof(ps->g.err),
			 "%.300s is %s, not an EROFS image; nothing was "
			 "uploaded",
			 path, kind);
	else
		snprintf(ps->g.err, sizeof(ps->g.err),
			 "%.300s: %s%s; nothing was uploaded", path,
			 ps->open_err[0] ? ps->open_err : ezfs_strerror(err),
			 err == -EMEDIUMTYPE && !ps->p->offset
				 ? " (an image further in the file: --offset)"
				 : "");
	return err;
}

static void tree_bad(void *arg, const char *msg)
{
	struct push *ps = arg;

	if (!ps->bad[0])
		snprintf(ps->bad, sizeof(ps->bad), "%s", msg);
}

/*
 * A dm-verity tree after the filesystem (ezfs mkfs --verity, veritysetup's
 * layout): checked whole before anything is sent (every hash block and
 * data block), and its place and root kept for the manifest's
 * annotations. None: 0 with ps->vt.have 0.
 */
static int check_tree(struct push *ps, const char *path)
{
	struct ezfs_open_params op;
	struct ezfs_verity_info vi;
	ezfs_image *img;
	int64_t n;
	int err;

	ezfs_open_params_init(&op);
	op.log = open_log;
	op.log_arg = ps;
	op.offset = ps->p->offset;
	op.verity = EZFS_VERITY_AUTO;
	ps->open_err[0] = '\0';
	err = ezfs_image_open(path, &op, &img);
	if (err) {
		snprintf(ps->g.err, sizeof(ps->g.err),
			 "%.300s: %s; nothing was uploaded", path,
			 ps->open_err[0] ? ps->open_err : ezfs_strerror(err));
		return err;
	}
	if (ezfs_image_verity(img, &vi)) {
		ezfs_image_close(img);
		return 0;
	}
	n = ezfs_image_verity_scan(img, 2, tree_bad, NULL, ps);
	ezfs_image_close(img);
	if (n) {
		snprintf(ps->g.err, sizeof(ps->g.err),
			 "%.300s: %s%s; nothing was uploaded", path,
			 n < 0 ? ezfs_strerror((int)n) : ps->bad,
			 n > 1 ? " (and more)" : "");
		return n < 0 ? (int)n : -EUCLEAN;
	}
	if (strcmp(vi.algorithm, "sha256") ||
	    vi.data_block_size != vi.hash_block_size ||
	    vi.hash_offset % vi.data_block_size || vi.root_size != 32) {
		snprintf(ps->g.err, sizeof(ps->g.err),
			 "%.300s: its dm-verity tree (%s, %u-byte data and "
			 "%u-byte hash blocks at byte %llu) has no form the "
			 "EROFS image spec's annotations describe (sha256, "
			 "one block size, the offset a multiple of it); "
			 "nothing was uploaded",
			 path, vi.algorithm, vi.data_block_size,
			 vi.hash_block_size,
			 (unsigned long long)vi.hash_offset);
		return -EOPNOTSUPP;
	}
	ps->vt.have = 1;
	ps->vt.hash_offset = vi.hash_offset;
	ps->vt.block_size = vi.data_block_size;
	memcpy(ps->vt.root, vi.root, 32);
	ps->vt.root_size = 32;
	return 0;
}

/* The blob's bytes: the image's, then an embedded chunk index. */
static int src_read(void *arg, void *buf, size_t n, uint64_t off)
{
	struct push *ps = arg;
	size_t head = 0;
	int err = 0;

	if (off < ps->size) {
		head = ps->size - off < n ? (size_t)(ps->size - off) : n;
		err = ezfs_image_read_raw(ps->img, buf, head, off);
	}
	if (!err && head < n) {
		uint64_t at = off + head - ps->size;

		if (!ps->ci || at > ps->ci_len || n - head > ps->ci_len - at)
			return -EIO;
		memcpy((uint8_t *)buf + head, ps->ci + at, n - head);
	}
	return err;
}

static int up_progress(void *arg, uint64_t sent, uint64_t total)
{
	const struct ezfs_remote_params *p = arg;

	return p->progress(p->progress_arg, "uploading", sent, total);
}

/* The image's bytes hashed: its digest sha256:HEX into out (72 bytes). */
static int hash_image(struct push *ps, char *out)
{
	struct ezi_sha256 c;
	uint8_t *buf = malloc(CHUNK), d[32];
	uint64_t off = 0;
	int err = 0;

	if (!buf)
		return -ENOMEM;
	if (ps->p->chunk_index) {
		/* the chunk index: each 64 KiB's SHA-256, made as the
		 * bytes are hashed */
		uint64_t nc = (ps->size + (1u << CI_BITS) - 1) >> CI_BITS;

		ps->ci_len = 32 + (size_t)nc * 48;
		ps->ci = malloc(ps->ci_len);
		if (!ps->ci) {
			free(buf);
			return -ENOMEM;
		}
		ezi_cindex_header(ps->ci, ps->size, nc);
	}
	ezi_sha256_init(&c);
	while (off < ps->size) {
		size_t n = ps->size - off < CHUNK ? (size_t)(ps->size - off)
						  : CHUNK;

		if (ps->p->progress &&
		    ps->p->progress(ps->p->progress_arg, "hashing", off,
				    ps->size)) {
			err = -ECANCELED;
			break;
		}
		err = ezfs_image_read_raw(ps->img, buf, n, off);
		if (err)
			break;
		ezi_sha256_update(&c, buf, n);
		for (size_t a = 0; ps->ci && a < n; a += 1u << CI_BITS) {
			size_t l = n - a < (1u << CI_BITS) ? n - a
							   : (1u << CI_BITS);

			ezi_sha256(buf + a, l, d);
			ezi_cindex_entry(ps->ci + 32 +
						 ((off + a) >> CI_BITS) * 48,
					 off + a, d);
		}
		off += n;
	}
	free(buf);
	if (err) {
		if (err != -ECANCELED)
			snprintf(ps->g.err, sizeof(ps->g.err),
				 "reading the image: %s", ezfs_strerror(err));
		return err;
	}
	/* an embedded index is the blob's trailing section: in its
	 * digest */
	if (ps->ci && ps->p->chunk_index == EZFS_CHUNK_INDEX_EMBEDDED)
		ezi_sha256_update(&c, ps->ci, ps->ci_len);
	ezi_sha256_final(&c, d);
	memcpy(out, "sha256:", 7);
	for (int i = 0; i < 32; i++) {
		out[7 + 2 * i] = "0123456789abcdef"[d[i] >> 4];
		out[8 + 2 * i] = "0123456789abcdef"[d[i] & 15];
	}
	out[71] = '\0';
	return 0;
}

/* An upload session that will not be finished: deleted, so that the
 * registry frees what it holds of it. */
static void delete_session(struct ezi_reg *g, const char *url)
{
	struct ezi_rhdrs h;
	char err[sizeof(g->err)];
	long st;

	memcpy(err, g->err, sizeof(err));
	(void)ezi_reg_req(g, "DELETE", url, NULL, NULL, NULL, 0, NULL, NULL, &h,
			  &st);
	memcpy(g->err, err, sizeof(err));
}

/* The blob of digest, from data (len bytes) or up, unless the registry
 * has it already. */
static int put_blob(struct ezi_reg *g, const void *data, size_t len,
		    struct ezi_upload *up, const char *digest)
{
	char url[8400], session[8192];
	struct ezi_rhdrs h;
	long st;
	int err;

	snprintf(url, sizeof(url), "%s/v2/%s/blobs/%s", g->base, g->ref.repo,
		 digest);
	err = ezi_reg_req(g, "HEAD", url, NULL, NULL, NULL, 0, NULL, NULL, &h,
			  &st);
	if (err)
		return err;
	if (st == 200)
		return 0; /* there already */
	snprintf(url, sizeof(url), "%s/v2/%s/blobs/uploads/", g->base,
		 g->ref.repo);
	err = ezi_reg_req(g, "POST", url, NULL, NULL, NULL, 0, NULL, NULL, &h,
			  &st);
	if (err)
		return err;
	if (st != 202 || !h.location[0]) {
		snprintf(g->err, sizeof(g->err),
			 "starting the upload: HTTP %ld", st);
		return st == 401 || st == 403 ? -EACCES : -EIO;
	}
	if (h.location[0] == '/')
		snprintf(session, sizeof(session), "%s%.4000s", g->base,
			 h.location);
	else
		snprintf(session, sizeof(session), "%.4000s", h.location);
	snprintf(url, sizeof(url), "%.8100s%sdigest=%s", session,
		 strchr(session, '?') ? "&" : "?", digest);
	err = ezi_reg_req(g, "PUT", url, NULL, "application/octet-stream", data,
			  len, up, NULL, &h, &st);
	if (!err && st != 201) {
		snprintf(g->err, sizeof(g->err), "uploading %s: HTTP %ld",
			 digest, st);
		err = -EIO;
	}
	if (err == -ECANCELED)
		snprintf(g->err, sizeof(g->err),
			 "stopped; the upload session was deleted");
	if (err)
		delete_session(g, session);
	return err;
}

static int push_image(struct push *ps, char *out_digest, char *out_manifest,
		      const char *path)
{
	struct ezi_reg *g = &ps->g;
	struct ezi_upload up = {
		.read = src_read,
		.arg = ps,
	};
	int embed = ps->p->chunk_index == EZFS_CHUNK_INDEX_EMBEDDED;
	char hex[65], digest[72], *manifest, url[4096], title[256];
	char *pf = NULL; /* the org.ezfs.prefetch annotation (fill.c) */
	char ann[400] = "", root[65], config[400], cdigest[72];
	char cil[400] = "", cidigest[72];
	int cn;
	const char *base = strrchr(path, '/');
	struct ezi_rhdrs h;
	long status;
	int err, n;

	/* the trace first: a bad one sends nothing */
	if (ps->p->prefetch_file) {
		pf = ezi_trace_annotation(ps->p->prefetch_file, ps->size,
					  g->err, sizeof(g->err));
		if (!pf)
			return -EINVAL;
	}
	err = hash_image(ps, digest);
	if (err) {
		free(pf);
		return err;
	}
	up.len = ps->size + (embed ? ps->ci_len : 0);
	if (ps->p->progress) {
		up.progress = up_progress;
		up.progress_arg = (void *)ps->p;
	}
	err = put_blob(g, NULL, 0, &up, digest);
	/* the config: the platform, os.features ["erofs"] (hosts that do
	 * not read EROFS layers skip the manifest) and the layer's digest
	 * as its diff_id (a raw layer's bytes are its uncompressed bytes) */
	cn = snprintf(config, sizeof(config),
		      "{\"architecture\":\"%s\",\"os\":\"linux\","
		      "\"os.features\":[\"erofs\"],\"rootfs\":{\"type\":"
		      "\"layers\",\"diff_ids\":[\"%s\"]}}",
		      ezi_oci_host_arch(), digest);
	ezi_sha256_hex(config, (size_t)cn, hex);
	snprintf(cdigest, sizeof(cdigest), "sha256:%s", hex);
	if (!err)
		err = put_blob(g, config, (size_t)cn, NULL, cdigest);
	if (!err && ps->ci && embed) {
		/* the chunk index after the image in its blob: where, and
		 * its digest */
		ezi_sha256_hex(ps->ci, ps->ci_len, hex);
		snprintf(cil, sizeof(cil),
			 ",\"org.erofs.chunk-index.range\":\"%llu:%llu\","
			 "\"org.erofs.chunk-index.digest\":\"sha256:%s\","
			 "\"org.erofs.chunk-index.mediaType\":"
			 "\"" EZI_MT_CHUNK_INDEX "\"",
			 (unsigned long long)ps->size,
			 (unsigned long long)(ps->size + ps->ci_len), hex);
	} else if (!err && ps->ci) {
		/* the chunk index as the layer after the image's */
		ezi_sha256_hex(ps->ci, ps->ci_len, hex);
		snprintf(cidigest, sizeof(cidigest), "sha256:%s", hex);
		err = put_blob(g, ps->ci, ps->ci_len, NULL, cidigest);
		snprintf(cil, sizeof(cil),
			 ",{\"mediaType\":\"" EZI_MT_CHUNK_INDEX "\","
			 "\"digest\":\"%s\",\"size\":%zu,\"annotations\":{"
			 "\"org.erofs.chunk-index.target\":\"%s\"}}",
			 cidigest, ps->ci_len, digest);
	}
	if (err) {
		free(pf);
		return err;
	}
	snprintf(title, sizeof(title), "%s", base ? base + 1 : path);
	for (char *c = title; *c; c++)
		if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20)
			*c = '_';
	if (ps->vt.have) {
		/* the EROFS image spec's dm-verity annotations */
		for (int i = 0; i < 32; i++)
			snprintf(root + 2 * i, 3, "%02x", ps->vt.root[i]);
		snprintf(ann, sizeof(ann),
			 ",\"org.erofs.dmverity.hash_offset\":\"%llu\","
			 "\"org.erofs.dmverity.root_digest\":\"sha256:%s\","
			 "\"org.erofs.dmverity.block_size\":\"%u\"",
			 (unsigned long long)ps->vt.hash_offset, root,
			 ps->vt.block_size);
	}
	n = 2048 + (pf ? (int)strlen(pf) + 32 : 0);
	manifest = malloc((size_t)n);
	if (!manifest) {
		free(pf);
		return -ENOMEM;
	}
	n = snprintf(
		manifest, (size_t)n,
		"{\"schemaVersion\":2,\"mediaType\":\"" EZI_MT_MANIFEST "\","
		"\"config\":{\"mediaType\":\"" EZI_MT_CONFIG "\","
		"\"digest\":\"%s\",\"size\":%d},"
		"\"layers\":[{\"mediaType\":\"%s\","
		"\"digest\":\"%s\",\"size\":%llu,\"annotations\":{"
		"\"org.opencontainers.image.title\":\"%s\"%s%s%s%s%s}}%s]}",
		cdigest, cn, ps->mt, digest,
		(unsigned long long)(ps->size + (embed ? ps->ci_len : 0)),
		title, ann, embed ? cil : "",
		pf ? ",\"org.ezfs.prefetch\":\"" : "", pf ? pf : "",
		pf ? "\"" : "", embed ? "" : cil);
	free(pf);
	snprintf(url, sizeof(url), "%s/v2/%s/manifests/%s", g->base,
		 g->ref.repo, g->ref.ref);
	err = ezi_reg_req(g, "PUT", url, NULL, EZI_MT_MANIFEST, manifest,
			  (size_t)n, NULL, NULL, &h, &status);
	if (!err && status != 201) {
		snprintf(g->err, sizeof(g->err), "the manifest: HTTP %ld",
			 status);
		err = -EIO;
	}
	if (err) {
		free(manifest);
		return err;
	}
	memcpy(out_digest, digest, 72);
	ezi_sha256_hex(manifest, (size_t)n, hex);
	free(manifest);
	snprintf(out_manifest, 72, "sha256:%s", hex);
	return 0;
}

int ezfs_remote_push(const char *path, const char *ref,
		     const struct ezfs_remote_params *p, char digest[72],
		     char manifest[72])
{
	struct ezfs_remote_params q;
	struct ezi_oci_ref o;
	struct push ps;
	char why[700];
	int err;

	if (!p || !p->size || p->size > sizeof(struct ezfs_remote_params) ||
	    !path || !ref)
		return -EINVAL;
	memset(&ps, 0, sizeof(ps));
	if (ezi_oci_parse(ref, p->insecure, &o, why, sizeof(why))) {
		ezi_rlogf(p->log, p->log_arg, EZFS_LOG_ERROR, "%s", why);
		return -EINVAL;
	}
	if (!strncmp(o.ref, "sha256:", 7)) {
		ezi_rlogf(p->log, p->log_arg, EZFS_LOG_ERROR,
			  "a push needs a tag (oci://HOST[:PORT]/REPO:TAG), "
			  "not a digest");
		return -EINVAL;
	}
	/* fields past the caller's size take their defaults */
	ezfs_remote_params_init(&q);
	memcpy(&q, p, p->size);
	q.size = sizeof(q);
	p = &q;
	ps.p = p;
	ps.mt = p->media_type ? p->media_type : EZI_MT_EROFS;
	if (strcmp(ps.mt, EZI_MT_EROFS) && strcmp(ps.mt, EZI_MT_EROFS_SPEC)) {
		ezi_rlogf(p->log, p->log_arg, EZFS_LOG_ERROR,
			  "media type '%.200s': " EZI_MT_EROFS
			  " or " EZI_MT_EROFS_SPEC " (a +zstd layer is not "
			  "written)",
			  ps.mt);
		return -EINVAL;
	}
	ezi_reg_init(&ps.g, &o, p->log, p->log_arg, p->timeout_ms);
	err = check_image(&ps, path);
	if (!err)
		err = check_tree(&ps, path);
	if (!err && ezi_curl_ready(p))
		err = -ELIBACC;
	else if (!err)
		err = push_image(&ps, digest, manifest, path);
	if (err && err != -ELIBACC)
		ezi_rlogf(p->log, p->log_arg, EZFS_LOG_ERROR, "%s", ps.g.err);
	ezfs_image_close(ps.img);
	ezi_reg_destroy(&ps.g);
	free(ps.ci);
	return err;
}
