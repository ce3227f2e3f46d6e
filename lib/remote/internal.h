/* SPDX-License-Identifier: MIT */
/*
 * internal.h - what the files of lib/remote share.
 *
 * A source (struct ezfs_remote, source.c) reads one image through its
 * scheme (scheme.c: http, https; oci.c; s3.c), which says what URL is
 * fetched and how requests to it are signed. Reads go through the block
 * table (blocks.c): present blocks are copied out, missing ones fetched
 * (fetch.c, fetch.h), checked (verify.c), then kept in memory or in the
 * persistent cache entry (cache.c); the cache folder as a whole (list,
 * gc, the entry of a name) is cachedir.c. Uploads are push.c.
 */
#ifndef EZFS_REMOTE_INTERNAL_H
#define EZFS_REMOTE_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "ezfs/remote.h"

/* Parse "Content-Range: bytes A-B/T" (the value only): 0, or -1 when it
 * is not that form; *total is UINT64_MAX for an unknown total ("/" then "*").
 */
int ezi_content_range(const char *v, uint64_t *a, uint64_t *b, uint64_t *total);
/* A header's value v[0, n) into dst: leading blanks and the trailing CR,
 * LF and blanks cut, truncated to size - 1 bytes. */
void ezi_header_value(char *dst, size_t size, const char *v, size_t n);

void ezi_rlogf(ezfs_log_fn log, void *arg, int level, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static inline uint64_t ezi_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ------------------------------------------------------------------ */
/* The persistent cache (cache.c, cachedir.c)                          */

/* The map of a persistent cache entry. */
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
/* Write m to path crash-safely: a temporary file, fsync, rename, then
 * fsync of the folder. */
int ezi_cmap_store(const char *path, const struct ezi_cmap *m);
/* The complete entry of dir opened as name (its map into m): 0, or
 * -ENOENT. */
int ezi_cache_find(const char *dir, const char *name, struct ezi_cmap *m);
/* ezfs_remote_cache_gc, keeping the entry named keep (NULL: none). */
int ezi_cache_gc(const char *dir, uint64_t max, const char *keep,
		 uint64_t *freed);

/* ------------------------------------------------------------------ */
/* Registries (oci.c, push.c)                                          */

#define EZI_MT_EROFS	  "application/vnd.erofs.layer.v1"
#define EZI_MT_EROFS_SPEC "application/vnd.erofs" /* erofs-image-spec */
#define EZI_MT_MANIFEST	  "application/vnd.oci.image.manifest.v1+json"
#define EZI_MT_CONFIG	  "application/vnd.oci.image.config.v1+json"
struct ezi_oci_ref {
	int http; /* plain http (127.0.0.1, localhost, --insecure) */
	char host[256];
	char repo[512];
	char ref[256]; /* a tag or sha256:HEX */
};
/* The host's architecture as OCI names it (amd64, arm64...). */
const char *ezi_oci_host_arch(void);
/* oci://HOST[:PORT]/REPO[:TAG] or .../REPO@sha256:HEX (no tag: latest):
 * 0, or -EINVAL with the reason in why (NULL: not wanted). */
int ezi_oci_parse(const char *s, int insecure, struct ezi_oci_ref *r, char *why,
		  size_t whylen);

struct ezi_challenge {
	int bearer, basic;
	char realm[1024], service[1024], scope[1024];
};
/* A WWW-Authenticate value: 0, or -1 when it is no Bearer (with a realm)
 * or Basic challenge. */
int ezi_www_auth_parse(const char *v, struct ezi_challenge *c);

struct ezi_oci_docs;
struct ezi_reg {
	struct ezi_oci_ref ref;
	/* oci.c: the manifests and chunk index of a resolve, recorded for
	 * the cache or replayed from its record (NULL: neither) */
	struct ezi_oci_docs *docs;
	const char *range; /* "A-B": the bytes the next requests ask for */
	char base[300];	   /* http[s]://HOST[:PORT] */
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
	/* set: ezi_oci_resolve calls it for every layer, lowest first, and
	 * picks none (0, or its first nonzero return) */
	int (*each)(void *arg, const char *digest, const char *media_type,
		    uint64_t size);
	void *each_arg;
};
void ezi_reg_init(struct ezi_reg *g, const struct ezi_oci_ref *ref,
		  ezfs_log_fn log, void *log_arg, unsigned timeout_ms);
void ezi_reg_destroy(struct ezi_reg *g);
/* Basic credentials user:pass (ezfs_remote_params.username, .password)
 * in place of the docker config's; NULL user: none. */
void ezi_reg_basic(struct ezi_reg *g, const char *user, const char *pass);
/* The Authorization header line to send now ("" for none). */
void ezi_reg_auth(struct ezi_reg *g, char *dst, size_t size);
/* After a 401 with this WWW-Authenticate value: get new credentials. */
int ezi_reg_reauth(struct ezi_reg *g, const char *www);

/* Registry answers: the body (up to max bytes) and the headers read. */
struct ezi_rbuf {
	char *p;
	size_t n, cap;
	size_t max;
};
/* libcurl's write callback into an ezi_rbuf (arg): its bytes kept, NUL
 * terminated; 0 (the transfer ends) past max bytes or without memory. */
size_t ezi_rbuf_write(char *b, size_t sz, size_t n, void *arg);
struct ezi_rhdrs {
	char www[1024];
	char location[4096];
	char ctype[256];
	char digest[128];
};
/* A request body read as it is sent (an upload of any size). */
struct ezi_upload {
	uint64_t len;
	/* n bytes of the body at off into buf: 0, or a negative errno */
	int (*read)(void *arg, void *buf, size_t n, uint64_t off);
	void *arg;
	/* as it goes (bytes sent of len): nonzero stops it (NULL: none) */
	int (*progress)(void *arg, uint64_t sent, uint64_t total);
	void *progress_arg;
	int err; /* out: read's error, or -ECANCELED */
};
/*
 * One registry request, with new credentials after a 401 (once): method
 * to url with an Accept and a Content-Type header (each NULL: none) and
 * the body [body, body + len), or up's when up is not NULL. out (NULL:
 * thrown away) gets the answer's body, h its headers, *status its code.
 * 0, or -EIO (no answer: g->err says why), -EACCES, -ENOMEM, up->err.
 */
int ezi_reg_req(struct ezi_reg *g, const char *method, const char *url,
		const char *accept, const char *ctype, const void *body,
		size_t len, struct ezi_upload *up, struct ezi_rbuf *out,
		struct ezi_rhdrs *h, long *status);
/* The EROFS image spec's dm-verity annotations of a layer descriptor
 * (org.erofs.dmverity.hash_offset, .root_digest, .block_size). */
struct ezi_oci_verity {
	int have; /* all of them there and well formed */
	uint64_t hash_offset;
	unsigned block_size;
	uint8_t root[64];
	size_t root_size;
	/* a chunk index: standalone (the layer after it in the manifest:
	 * its digest and size) or embedded (the trailing ci_size bytes of
	 * the layer's blob from ci_off on, org.erofs.chunk-index.range, and
	 * the digest of those bytes); ci_digest "": none */
	char ci_digest[80];
	uint64_t ci_size;
	int ci_embedded;
	uint64_t ci_off;
	/* the layer's org.ezfs.prefetch annotation (malloc'd; NULL: none) */
	char *prefetch;
};
#define EZI_MT_CHUNK_INDEX "application/vnd.erofs.chunk-index.v1"
/* A chunk index of the EROFS image spec over a raw layer: chunks of one
 * size (1 << bits, the last shorter), each with its SHA-256. */
struct ezi_cindex {
	uint64_t nchunks;
	unsigned bits;
	uint8_t *hash; /* 32 bytes per chunk */
	uint64_t size; /* the image data it covers: [0, size) of the blob */
	/* embedded: the index's own bytes in the blob, [tail_off, tail_off
	 * + tail_len), checked against its digest (NULL: standalone) */
	uint8_t *tail;
	uint64_t tail_off;
	size_t tail_len;
};
/* cindex.c: the index [p, p + n) (its header and entries, nothing
 * after them) over size bytes of image data parsed into ci: 0, or
 * -EBADMSG with why (what ezfs reads: version 1, raw, SHA-256, reserved
 * bytes zero, chunks of one power-of-two size from 4 KiB to 1 MiB in
 * order). */
int ezi_cindex_parse(const uint8_t *p, size_t n, uint64_t size,
		     struct ezi_cindex *ci, char *why, size_t whylen);
/* The header of an index of n chunks of 1 << bits bytes over size bytes
 * (32 bytes into out); the entries follow it (ezi_cindex_entry). */
void ezi_cindex_header(uint8_t out[32], uint64_t size, uint64_t n);
/* Entry k (48 bytes into out): its offsets and the chunk's SHA-256. */
void ezi_cindex_entry(uint8_t out[48], uint64_t off, const uint8_t sha[32]);
/* The layer sel picks: its blob URL, digest and size, and into vt (may be
 * NULL) its dm-verity annotations. A manifest named by digest is checked
 * against it. 0, or a negative errno with g->err set. */
int ezi_oci_resolve(struct ezi_reg *g, const struct ezi_oci_sel *sel,
		    char *blob_url, size_t size, char digest[128],
		    uint64_t *blob_size, struct ezi_oci_verity *vt);

struct curl_slist;

/* libcurl, loaded on first use (curl_dl.c): 0, or -ELIBACC with why
 * logged to p's log. */
int ezi_curl_ready(const struct ezfs_remote_params *p);
/* A listing's params: *p, or the defaults in d when *p is NULL (*p then
 * points at d); libcurl loaded: 0 or -ELIBACC, as ezi_curl_ready. */
int ezi_remote_begin(const struct ezfs_remote_params **p,
		     struct ezfs_remote_params *d);

/* ------------------------------------------------------------------ */
/* A source                                                            */

#define EZI_HEAD_BYTES	 (256u << 10) /* fetched at open */
#define EZI_RA_MAX_BYTES (8u << 20)   /* read-ahead window at most */
#define EZI_LAT_SAMPLES	 4096

enum { EZI_B_ABSENT = 0, EZI_B_BUSY = 1, EZI_B_PRESENT = 2 };

struct ezfs_remote;

/*
 * A scheme: what a URL starting with prefix names, and how requests for
 * its bytes are made (scheme.c holds the table).
 */
struct ezi_scheme {
	const char *prefix; /* "http://"... (any case) */
	/* From r->name: r->url (what is fetched; malloc'd) and, when the
	 * bytes have one, r->digest; the reason of a failure logged. 0 or a
	 * negative errno. */
	int (*resolve)(struct ezfs_remote *r);
	/* The headers of a request to r->url itself (credentials, a
	 * signature; never sent where it redirects): 0 or -ENOMEM. */
	int (*sign)(struct ezfs_remote *r, void *curl, struct curl_slist **h);
	/* A 401 from r->url: new credentials (0: send again), or a
	 * negative errno with why set. NULL: a 401 is final. */
	int (*reauth)(struct ezfs_remote *r, const char *www, char *why,
		      size_t whylen);
	void (*release)(struct ezfs_remote *r);
};
/* The scheme of url, or NULL. */
const struct ezi_scheme *ezi_scheme_of(const char *url);
extern const struct ezi_scheme ezi_scheme_oci; /* oci.c */
extern const struct ezi_scheme ezi_scheme_s3;  /* s3.c */

struct ezi_fetcher;

/* A reader waiting for its transfers (fetch.c), for ezfs_remote_waiting. */
struct ezi_wait {
	struct ezi_wait *next;
	uint64_t since;	   /* us, monotonic */
	uint64_t off, len; /* the range retried last (or the first) */
	unsigned attempt;  /* of that range */
	char why[160];	   /* why it was retried */
};

/* The host[:port] of url into out. */
void ezi_url_host(const char *url, char *out, size_t size);

struct ezfs_remote {
	struct ezfs_remote_params p;
	const struct ezi_scheme *scheme;
	void *sd;	   /* the scheme's own state */
	char *name;	   /* as given */
	char *url;	   /* what is fetched */
	char digest[128];  /* the bytes' sha256:HEX ("": none known) */
	int verified, bad; /* against the digest (bad: atomic) */
	int offline;	   /* resolved to a complete cache entry: no probe */
	char *eff_url;	   /* where the last redirect led; NULL: none */
	char etag[256];
	char lastmod[128];
	uint64_t size;
	unsigned bs, bsbits;
	uint64_t nblocks;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint8_t *state; /* EZI_B_* per block */
	/* memory mode */
	uint8_t **mem;
	size_t mem_used;
	uint64_t *fifo; /* ring of present blocks, oldest first */
	uint64_t fifo_head, fifo_n;
	/* disk mode: the persistent cache entry (cache.c) */
	int data_fd;
	char *data_path, *map_path;
	struct ezi_cmap map;
	uint64_t dirty;
	int cache_off; /* no more writes to the entry: refused, dropped */
	int dropped;   /* the entry was removed from the folder */
	int ignores_range;

	struct ezi_fetcher *fetchers;
	struct ezi_wait *waits;	 /* under the lock */
	unsigned warned_attempt; /* the silences said since the last answer */
	uint64_t last_end, ra;	 /* ra: bytes */
	int reader_ahead;	 /* the reader hints its own read-ahead */
	int hold;		 /* blocks stored now stay in memory until
				  * the tree is known (the head) */
	struct ezfs_remote_stats st;
	/* dm-verity (verify.c): the image's tree, from ezfs_remote_set_verity
	 * (atomic; NULL: none), the byte of the source where its block 0 is,
	 * its data block size (bits), the blocks it covers, its root in hex;
	 * unchecked: per block, kept before the tree came (NULL: none) */
	struct ezfs_verity *verity;
	uint64_t vbase, vblocks;
	unsigned vbits;
	char vroot[129];
	uint8_t *unchecked;
	/* the record of what of the cache entry was verified (verify.c):
	 * the data file as opened ("": no record), the record read, whether
	 * it says the blob matched its digest, its tree line and bits, the
	 * blocks of them used */
	char vrec_id[200];
	int vrec_read, vrec_blob;
	int vrec_done; /* written when the tree went: not again at close */
	char *vrec_tree;
	uint8_t *vrec_bits;
	size_t vrec_nbytes;
	uint64_t vrec_n;
	/* the org.erofs.dmverity.* annotations of an oci:// layer */
	struct ezi_oci_verity ann;
	struct ezi_cindex ci; /* its chunk index (nchunks 0: none) */
	int pinned;	      /* the manifest was named by digest */
	/* the background fill (fill.c): NULL until started; demand: readers
	 * whose fetch is in flight (the fill waits for none); prio: the
	 * ranges it fetches first, off and len pairs (a published trace,
	 * ezfs_remote_fill_add) */
	struct ezi_fill *fill;
	unsigned demand;
	uint64_t *prio;
	size_t nprio, capprio;
	/* record_trace (fill.c): blocks read so far (a bit each), and the
	 * runs of them in the order first read, start and end block pairs */
	uint8_t *traced;
	uint64_t *trace;
	size_t ntrace, captrace;
	/* counted without the lock (atomics) */
	uint64_t a_requests, a_retries, a_fetched, a_rounds;
	uint32_t lat[EZI_LAT_SAMPLES];
	uint64_t nlat;
};

#define ezi_rlog(r, lvl, ...)                                                  \
	do {                                                                   \
		if ((int)(lvl) <= (int)(r)->p.verbose)                         \
			ezi_rlogf((r)->p.log, (r)->p.log_arg, lvl,             \
				  __VA_ARGS__);                                \
	} while (0)

/* Do reads fail: the bytes failed their digest (unless the caller asked
 * for them all the same)? */
static inline int ezi_refused(const struct ezfs_remote *r)
{
	return __atomic_load_n(&r->bad, __ATOMIC_RELAXED) &&
	       !r->p.serve_unverified;
}

/* The bytes of block b (the last may be short). */
static inline size_t ezi_blk_len(const struct ezfs_remote *r, uint64_t b)
{
	uint64_t o = b << r->bsbits;

	return r->size - o < r->bs ? (size_t)(r->size - o) : r->bs;
}

/* blocks.c: the block table. */
int ezi_blocks_setup(struct ezfs_remote *r);
void ezi_blocks_free(struct ezfs_remote *r);
/* Keep [off, off + len) of buf (whole blocks from off on, fetched and
 * checked) as present blocks; err: mark the busy ones absent again.
 * Called with the lock held. */
void ezi_blocks_store(struct ezfs_remote *r, const uint8_t *buf, uint64_t off,
		      uint64_t len, int err);
/* Copy l bytes at in of present block b into dst: 0, or -EIO (the
 * cache file could not be read). Lock held. */
int ezi_block_copy(struct ezfs_remote *r, uint64_t b, size_t in, void *dst,
		   size_t l);
/* Read [off, off + len) through the blocks (count: a reader's pread, for
 * the counters and the read-ahead): len, or a negative errno. */
ssize_t ezi_read_range(struct ezfs_remote *r, void *buf, size_t len,
		       uint64_t off, int count);

struct ezi_xfer;
/* The fetch of the ranges xs (their blocks marked busy by the caller),
 * checked, then kept (ezi_blocks_store); xs' buffers freed. 0, or the
 * error of the first range that holds a block in [need0, need1] (logged).
 * Without the lock. */
int ezi_fetch_run(struct ezfs_remote *r, struct ezi_xfer *xs, unsigned nx,
		  uint64_t need0, uint64_t need1);

/* fill.c: blocks [b0, b1] read by a reader, for record_trace (lock
 * held); the fill stopped and the trace written (at close, without the
 * lock); a range to fetch first (lock held). */
void ezi_trace_note(struct ezfs_remote *r, uint64_t b0, uint64_t b1);
void ezi_fill_stop(struct ezfs_remote *r);
void ezi_trace_write(struct ezfs_remote *r);
int ezi_prio_add(struct ezfs_remote *r, uint64_t off, uint64_t len);
/* The ranges of an org.ezfs.prefetch annotation ("OFF+LEN,..." in hex)
 * added to what a fill fetches first: 0, or -EBADMSG (the ranges before
 * the bad one kept). */
int ezi_prio_parse(struct ezfs_remote *r, const char *s);
/* The org.ezfs.prefetch annotation of the trace file path (as
 * record_trace writes it) of an image of size bytes: its ranges sorted,
 * and joined across gaps (from 64 KiB, doubled until the value takes at
 * most 64 KiB); a malloc'd string, or NULL with why set. */
char *ezi_trace_annotation(const char *path, uint64_t size, char *why,
			   size_t whylen);

/* cache.c: the persistent cache entry of a source. */
/* Its map loaded (if any) and its data file opened; a failure leaves r
 * in memory mode. */
void ezi_cache_attach(struct ezfs_remote *r);
/* After the probe: keep the loaded map if the image is the same (same),
 * else start afresh; present blocks marked. 0 or -ENOMEM. */
int ezi_cache_adopt(struct ezfs_remote *r, int same);
/* Write blocks [b0, b1) from src (the bytes of block b0 on) to the data
 * file, those not present yet; a failed write (a full disk) turns the
 * entry's writes off with one warning, and leaves the blocks not written
 * as they were, for memory. Lock held. */
void ezi_cache_put(struct ezfs_remote *r, uint64_t b0, uint64_t b1,
		   const uint8_t *src);
/* Sync the data, then write the map (lock held). */
void ezi_cache_flush(struct ezfs_remote *r);
/* Block b (on disk) out of the entry: its map bit cleared, its bytes
 * punched out of the data file. Lock held. */
void ezi_cache_unput(struct ezfs_remote *r, uint64_t b);
/* The image's dm-verity tree came (and was checked against the blocks
 * kept before it), or none will: the blocks kept in memory until then
 * (r->unchecked: the head) go to the entry; r->unchecked freed. Lock
 * held. */
void ezi_cache_settle(struct ezfs_remote *r);
/* Drop the entry from the folder (the map first); its open data file
 * still serves what it holds. Lock held. */
void ezi_cache_drop(struct ezfs_remote *r);
/* Close the entry's files. */
void ezi_cache_detach(struct ezfs_remote *r);

/* verify.c: the blocks of buf (len bytes fetched at off of the source)
 * that the image's dm-verity tree covers, checked against it before they
 * are kept: 0, or -EIO with the reason (naming dm-verity, the block, the
 * root) in why. Without the lock. */
int ezi_verify_fetched(struct ezfs_remote *r, const uint8_t *buf, uint64_t off,
		       uint64_t len, char *why, size_t whylen);
/* blocks.c: block b (present) forgotten: out of memory and of the
 * entry's map. Lock held. */
void ezi_block_forget(struct ezfs_remote *r, uint64_t b);

/* verify.c: the entry's data file just opened, before it is written:
 * its identity, for the record of its verified blocks (KEY.vok). */
void ezi_vrec_attach(struct ezfs_remote *r);
/* verify.c: the record of the blocks of the cache entry the tree
 * verified (KEY.vok) written, for the next open; after the last flush,
 * the tree still there. */
void ezi_vrec_save(struct ezfs_remote *r);

/* verify.c: once every block is present, the bytes against r->digest; a
 * mismatch drops the cache entry and fails every read from then on (but
 * with p.serve_unverified). Lock held. */
void ezi_verify_blob(struct ezfs_remote *r);

#endif
