/* SPDX-License-Identifier: MIT */
/*
 * remote.h - images read from where they live (libezfs-remote).
 *
 * A remote source turns a URL into the struct ezfs_io_ops that
 * ezfs_image_open_io() reads through:
 *
 *   http://HOST[:PORT]/PATH, https://...   a plain image served with Range
 *   oci://HOST[:PORT]/REPO:TAG, .../REPO@sha256:HEX   a layer in a registry
 *   s3://BUCKET/KEY   an S3 object (endpoint, region and credentials from
 *                     the AWS_* environment and ~/.aws; SigV4-signed)
 *
 * Bytes are fetched in blocks with libcurl's multi interface: the blocks a
 * read misses, adjacent ones in one range, several ranges in flight, more
 * ahead of a sequential reader. They are kept in memory and, with a cache
 * directory, in a sparse file per image that later runs reuse (validated
 * with one conditional request at open). Every request has bounded
 * timeouts and is retried with backoff; then the read fails with -EIO and
 * one log line naming the URL and the reason. Only this library needs
 * libcurl; it uses libezfs through its public API only.
 */
#ifndef EZFS_REMOTE_H
#define EZFS_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "ezfs/ezfs.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ezfs_remote ezfs_remote;

struct ezfs_remote_stats {
	uint64_t requests;	/* HTTP requests sent (retries included) */
	uint64_t retries;	/* of those, retries after a failure */
	uint64_t bytes_fetched; /* body bytes received */
	uint64_t bytes_read;	/* bytes handed to the reader */
	uint64_t reads;		/* pread calls */
	uint64_t reads_hit;	/* of those, answered without a request */
	uint64_t redirects;	/* redirects followed and remembered */
	uint64_t cache_bytes;	/* bytes present in the cache now */
	uint64_t size;		/* the image's size */
	uint64_t fetch_us_p50;	/* request latency (microseconds) */
	uint64_t fetch_us_p99;
	uint64_t hints;		/* ezfs_remote_hint calls */
	uint64_t hints_fetched; /* of those, calls that fetched */
	uint64_t bytes_hinted;	/* bytes fetched for hints */
	uint64_t rounds;	/* round trips: batches of requests sent
				 * together and waited for (retries aside) */
};

struct ezfs_remote_params {
	size_t size;	 /* sizeof(struct ezfs_remote_params), set by _init */
	ezfs_log_fn log; /* NULL: silent; messages do not name the URL */
	void *log_arg;
	unsigned verbose; /* log level threshold: 0 = errors only */
	/* The persistent cache: NULL = no persistent cache (memory only). */
	const char *cache_dir;
	uint64_t cache_max; /* bytes all images may take; 0 = 10 GiB */
	/* A request that receives nothing for timeout_ms is given up and
	 * retried up to retries times (backoff from 100 ms, doubling). */
	unsigned timeout_ms; /* 0 = 10000 */
	int retries;	     /* -1 = 3 */
	unsigned block_size; /* fetch unit, a power of two; 0 = 64 KiB */
	size_t mem_bytes;    /* memory block cache; 0 = 256 MiB */
	/* Called once from ezfs_remote_close() with the final counters. */
	void (*on_close)(void *arg, const char *url,
			 const struct ezfs_remote_stats *st);
	void *on_close_arg;
	/* A server that ignores Range: an image of at most this many bytes
	 * is taken whole from the first answer, a larger one refused; 0 =
	 * 64 MiB. */
	uint64_t whole_max;
	/* oci:// references: the layer by index (-1, the default: the one
	 * of media type application/vnd.erofs.layer.v1, or the only one),
	 * or by digest; the platform of an index (NULL: linux and the
	 * host's architecture); plain http to any host (else only to
	 * 127.0.0.1 and localhost). */
	int layer;
	const char *blob;
	const char *platform;
	int insecure;
	/* ezfs_remote_push: the image starts at this byte of the file (as
	 * ezfs_open_params.offset); what is uploaded starts there. */
	uint64_t offset;
	/* ezfs_remote_push: called as it goes, what ("hashing", then
	 * "uploading") done of total bytes; a nonzero return stops the
	 * push (an upload session begun is deleted): -ECANCELED. NULL:
	 * none. Called on the pushing thread. */
	int (*progress)(void *arg, const char *what, uint64_t done,
			uint64_t total);
	void *progress_arg;
	/* The bytes failed their digest (an oci:// layer): 0 (default),
	 * every read fails with -EIO from then on; 1, reads go on serving
	 * what was fetched, and ezfs_remote_verify() says so at the end
	 * (for a caller that lists what it wrote as unverified). Either
	 * way the cache entry is dropped. */
	int serve_unverified;
	/* ezfs_remote_push: the layer's media type, containerd's
	 * application/vnd.erofs.layer.v1 (NULL, the default) or the EROFS
	 * image spec's application/vnd.erofs; anything else is -EINVAL. */
	const char *media_type;
	/* ezfs_remote_push: also publish a chunk index of the layer (the
	 * EROFS image spec's application/vnd.erofs.chunk-index.v1, as the
	 * layer after it: the SHA-256 of each 64 KiB of the layer), so that
	 * a reader of an image without a dm-verity tree checks each block
	 * it fetches. EZFS_CHUNK_INDEX_EMBEDDED: the index appended to the
	 * layer's blob instead, announced by the spec's
	 * org.erofs.chunk-index.range and .digest annotations. */
	int chunk_index;
	/* A file the source writes at close: the byte ranges of the image
	 * that readers read (ezfs_io_ops.pread), whole blocks, in the order
	 * first read, adjacent ones joined, one "OFFSET LENGTH" line each
	 * (the trace that ezfs_remote_push publishes with prefetch_file and
	 * a fill fetches first). NULL: none. */
	const char *record_trace;
	/* ezfs_remote_push: publish this trace (a file as record_trace
	 * writes it) with the layer, as its org.ezfs.prefetch annotation:
	 * the ranges sorted, joined across small gaps, "OFF+LEN,..." in hex
	 * (at most 64 KiB of them), which a fill of the layer fetches
	 * first (ezfs_remote_fill). A range outside the image: -EINVAL,
	 * nothing sent. NULL: none. */
	const char *prefetch_file;
	/* oci:// credentials (mkfs --oci's username= and password=): sent
	 * as Basic credentials where the registry asks for them, in place
	 * of the docker config's; NULL: the docker config's. */
	const char *username;
	const char *password;
};

/* ezfs_remote_params.chunk_index */
#define EZFS_CHUNK_INDEX_LAYER	  1
#define EZFS_CHUNK_INDEX_EMBEDDED 2

/* Defaults; size set. */
EZFS_API void ezfs_remote_params_init(struct ezfs_remote_params *p);

/*
 * Upload the image at path as the one layer (media type p->media_type,
 * default application/vnd.erofs.layer.v1) of an OCI image manifest (its
 * config: the host's architecture, os.features ["erofs"], the layer's
 * digest as its diff_id) tagged ref (oci://HOST[:PORT]/REPO[:TAG], no
 * tag: latest). An image with a dm-verity tree after its filesystem has
 * the tree checked whole first (a mismatch: -EUCLEAN, nothing sent), and
 * the EROFS image spec's org.erofs.dmverity.hash_offset, .root_digest and
 * .block_size annotations on the layer. The image is checked first as
 * ezfs_image_open reads it (from p->offset on): a file that is no EROFS image
 * is refused and nothing is sent (a tar archive is named as one); an Android
 * sparse image goes up expanded; trailing data after the filesystem (a
 * dm-verity tree) goes with it. digest gets the layer's sha256:HEX, manifest
 * the manifest's (both 72 bytes). Returns 0, -EMEDIUMTYPE (not an image ezfs
 * reads), -EINVAL (bad ref or params), -ECANCELED (p->progress said stop; the
 * upload session was deleted), -EACCES, -EIO...; the log (of p) gets one
 * line on failure.
 */
EZFS_API int ezfs_remote_push(const char *path, const char *ref,
			      const struct ezfs_remote_params *p,
			      char digest[72], char manifest[72]);

/* Is s a URL this library opens (http://, https://, oci://, s3://)? */
EZFS_API int ezfs_remote_is_url(const char *s);

/*
 * Open url: one request learns the size and fetches the image's head (the
 * superblock and the metadata after it). Errors: -EINVAL (bad URL or
 * params), -ENOENT (404), -EACCES (401/403), -EIO (anything else: the log
 * says), -ENOMEM.
 */
EZFS_API int ezfs_remote_open(const char *url,
			      const struct ezfs_remote_params *p,
			      ezfs_remote **out);
/* The ops to pass to ezfs_image_open_io() with the source as arg; their
 * close is ezfs_remote_close(). */
EZFS_API const struct ezfs_io_ops *ezfs_remote_io_ops(void);
EZFS_API uint64_t ezfs_remote_size(const ezfs_remote *r);
/*
 * The reader's io hint (ezfs_open_params.io_hint, ezfs_mount_params.io_hint,
 * arg the source): the blocks of [off, off + len) not yet cached are
 * fetched now, exactly (adjacent ones in one range, several ranges in
 * flight), at most 64 MiB per call. EZFS_HINT_AHEAD turns the source's
 * own read-ahead off: the reader says what it will read next.
 */
EZFS_API void ezfs_remote_hint(void *arg, uint64_t off, uint64_t len,
			       unsigned flags);
/* What a background fill fetches (ezfs_remote_fill). */
enum ezfs_remote_fill_policy {
	EZFS_FILL_NONE = 0,
	EZFS_FILL_ALL = 1,   /* the trace's ranges, then the whole image */
	EZFS_FILL_TRACE = 2, /* only the trace's ranges */
};
/*
 * Start the background fill of r: I/O threads of the source's own (two,
 * each with up to four range requests of at most 1 MiB in flight on its
 * own connections) fetch the blocks no reader asked for yet: first the
 * ranges of the trace published with an oci:// layer (its
 * org.ezfs.prefetch annotation; see ezfs_remote_push) and those added
 * with ezfs_remote_fill_add, then (EZFS_FILL_ALL) the rest of the image
 * in order, adjacent absent blocks in one request (present ones up to 64
 * KiB between them fetched again rather than split). Every block is
 * checked as a read's are (dm-verity, a chunk index, the blob's digest
 * once all is in) before it is kept. Reads come first: while a reader's
 * fetch is in flight the fill starts no request. rate: bytes per second
 * at most (0: no cap). The fill writes only to the persistent cache
 * entry (the memory cache is the readers'): without one (no cache_dir,
 * or an image larger than cache_max, which then has none) it does not
 * start, with one warning line; a cache folder that fails a write (a
 * full disk) stops it, with one line. Call it in the process that reads r
 * (after a daemonizing fork: threads do not survive one); ezfs_remote_close
 * stops it. Returns 0 (also for EZFS_FILL_NONE, and when nothing is left to
 * fetch), -EALREADY (started before), -EFBIG (no room), -EINVAL, -ENOMEM, or
 * the errno of pthread_create.
 */
EZFS_API int ezfs_remote_fill(ezfs_remote *r, int policy, uint64_t rate);
/* A range a fill fetches first (before ezfs_remote_fill; clamped to the
 * image): 0, or -ENOMEM. */
EZFS_API int ezfs_remote_fill_add(ezfs_remote *r, uint64_t off, uint64_t len);
/* Fetch [off, off + len) into the cache now (errors are ignored). */
EZFS_API void ezfs_remote_prefetch(ezfs_remote *r, uint64_t off, uint64_t len);
EZFS_API void ezfs_remote_get_stats(ezfs_remote *r,
				    struct ezfs_remote_stats *st);
/*
 * What a reader of r waits for now, in words for a person ("a read waits
 * on HOST (bytes A-B) for N s; no answer from HOST for 10 s, retry 1 of
 * 3"), the longest wait of all: 1 with buf set, or 0 when no read waits.
 * Thread-safe (for another thread than the reader's).
 */
EZFS_API int ezfs_remote_waiting(ezfs_remote *r, char *buf, size_t size);
/*
 * Check the whole image against what the source knows of its bytes (an
 * oci:// layer's digest): the blocks not fetched yet are fetched as reads
 * fetch them, then the bytes hashed in order. Returns 1 (they match), 0
 * (nothing to check against: http(s), s3), -EBADMSG (they do not: logged
 * once, the cache entry dropped; also when a read found it out before),
 * or the error of a fetch. Not while other threads read r.
 */
EZFS_API int ezfs_remote_verify(ezfs_remote *r);
/*
 * dm-verity (include/ezfs/verity.h, docs/verity.md): the image's tree,
 * handed over by the reader (ezfs_open_params.io_verity, and
 * ezfs_mount_params.io_verity, with the source as arg): from then on
 * every block fetched is checked against it before it is kept or served
 * (a block that does not match: the read fails with -EIO and one log line
 * naming dm-verity, the block and the root; it never reaches the cache),
 * and the blocks kept before it came (the image's head, held in memory
 * until then) are checked now. v NULL: the image has no tree; the head
 * goes to the persistent cache as it is.
 * base: the byte of the source where the image starts. The tree stays
 * the reader's; the source uses it until it is called again with v NULL
 * (ezfs_image_close does that before it frees the tree): then the cache
 * entry's record of the blocks the tree verified is written (KEY.vok,
 * docs/verity.md) and the tree is no longer used.
 */
EZFS_API void ezfs_remote_set_verity(void *arg, struct ezfs_verity *v,
				     uint64_t base);
/*
 * The dm-verity tree the manifest of an oci:// layer announces (the EROFS
 * image spec's org.erofs.dmverity.root_digest and .hash_offset
 * annotations on the layer): its root (*root_size bytes into root), its
 * hash offset, and *pinned 1 when the manifest was named by digest
 * (REPO@sha256:..., its bytes checked against that digest), so that the
 * root is as trusted as the digest the user named; 0 for a tag. Returns 0,
 * or -ENODATA (no such annotations: another scheme, or none there).
 */
EZFS_API int ezfs_remote_verity_root(const ezfs_remote *r, uint8_t root[64],
				     size_t *root_size, uint64_t *hash_offset,
				     int *pinned);
/*
 * The chunk index of an oci:// layer (the EROFS image spec's
 * application/vnd.erofs.chunk-index.v1, published as the layer after it,
 * its bytes checked against its digest in the manifest): every block
 * fetched is checked against the SHA-256 of its chunk before it is kept
 * or served (a mismatch: -EIO for that read, one line naming the chunk
 * index, the chunk and the layer). Returns its number of chunks, with
 * *pinned as ezfs_remote_verity_root sets it, or -ENODATA (none).
 */
EZFS_API int64_t ezfs_remote_chunk_index(const ezfs_remote *r, int *pinned);
/*
 * A kernel mount of a remote image (ezfs mount --kernel, docs/mount.md):
 * the kernel's EROFS driver mounts r's persistent cache file (KEY.data,
 * file-backed, Linux 6.12+) and the file's missing ranges are filled on
 * demand from fanotify pre-content events (FAN_PRE_ACCESS, Linux 6.14+).
 * Root (CAP_SYS_ADMIN) only. Not thread-safe: one thread calls these.
 *
 * ezfs_remote_kfill_new makes the fanotify group and marks the cache file
 * (r needs a cache entry on disk): from then on r reads and writes the
 * file through an fd that raises no events. Returns 0, -ENODATA (no cache
 * file), -EOPNOTSUPP (the kernel lacks what it needs), -EPERM, -ENOMEM...
 * with one sentence in why. log (may be NULL) gets the loop's lines.
 * Open the image with ezfs_image_open_io(ezfs_remote_kfill_io_ops(), k,
 * ezfs_remote_size(r), p) and p->io_hint = ezfs_remote_kfill_hint,
 * p->io_verity = ezfs_remote_kfill_verity: the image then owns r (its
 * close closes r); k is freed with ezfs_remote_kfill_free after it.
 * ezfs_remote_kfill_verified: 1 when each fetched block is checked (a
 * dm-verity tree was handed over, or the layer has a chunk index).
 * ezfs_remote_kfill_meta reads every inode, xattr, directory, symlink,
 * extent map and inline tail of img into the file (what the kernel reads
 * without events): before mount(2). ezfs_remote_kfill_path: the file to
 * mount(2). ezfs_remote_kfill_complete: 1 when every byte is in it (no
 * daemon needed). ezfs_remote_kfill_arm, right before mount(2), forks
 * the holder process that answers EIO to every event once the caller is
 * dead (docs/mount.md); ezfs_remote_kfill_run then serves the events of
 * the mount at mountpoint until it is unmounted or the file is complete
 * (the mark is removed then); a mount that cannot be watched is detached
 * at once. Both 0 or -errno; ezfs_remote_kfill_free tells the holder to
 * leave.
 */
typedef struct ezfs_remote_kfill ezfs_remote_kfill;
EZFS_API int ezfs_remote_kfill_new(ezfs_remote *r, ezfs_log_fn log,
				   void *log_arg, ezfs_remote_kfill **out,
				   char *why, size_t whysize);
EZFS_API const struct ezfs_io_ops *ezfs_remote_kfill_io_ops(void);
EZFS_API void ezfs_remote_kfill_hint(void *arg, uint64_t off, uint64_t len,
				     unsigned flags);
EZFS_API void ezfs_remote_kfill_verity(void *arg, struct ezfs_verity *v,
				       uint64_t base);
EZFS_API int ezfs_remote_kfill_verified(const ezfs_remote_kfill *k);
/* on 1 (the default): when no event waits, ezfs_remote_kfill_run fills
 * the rest of the file in order; 0: only what is read (and read ahead). */
EZFS_API void ezfs_remote_kfill_background(ezfs_remote_kfill *k, int on);
EZFS_API int ezfs_remote_kfill_meta(ezfs_remote_kfill *k, ezfs_image *img);
EZFS_API const char *ezfs_remote_kfill_path(const ezfs_remote_kfill *k);
EZFS_API int ezfs_remote_kfill_complete(const ezfs_remote_kfill *k);
EZFS_API int ezfs_remote_kfill_arm(ezfs_remote_kfill *k);
EZFS_API int ezfs_remote_kfill_run(ezfs_remote_kfill *k,
				   const char *mountpoint);
EZFS_API void ezfs_remote_kfill_free(ezfs_remote_kfill *k);
/*
 * Is the cache file path (a KEY.data of a cache folder) pinned: mounted
 * by the kernel (an erofs mount of it in /proc/self/mountinfo), or on its
 * way there (the shared flock(2) its ezfs_remote_kfill holds)? Such a
 * file is never removed, shrunk or rewritten (gc, --cache-max, another
 * open with other validators). 1 or 0.
 */
EZFS_API int ezfs_remote_cache_pinned(const char *path);

/* One layer of an image manifest (ezfs_remote_oci_layers). */
struct ezfs_remote_layer {
	char digest[72];      /* sha256:HEX */
	char media_type[128]; /* "" when the manifest names none */
	uint64_t size;	      /* as the manifest says */
};
/*
 * The layers of the image manifest the reference ref names
 * (oci://HOST[:PORT]/REPO[:TAG|@sha256:HEX]; an index: its manifest for
 * p->platform, as ezfs_remote_open picks it), the lowest first: *layers
 * (malloc'd: free it) gets *n of them. A layer is then read whole with
 * ezfs_remote_open of ref and p->blob set to its digest. Returns 0,
 * -EINVAL (bad ref or params), -ENOENT (no such tag or platform, no
 * layers), -EACCES, -EIO (no answer), -ENOMEM, each with one line to p's
 * log naming the registry and the reason.
 */
EZFS_API int ezfs_remote_oci_layers(const char *ref,
				    const struct ezfs_remote_params *p,
				    struct ezfs_remote_layer **layers,
				    size_t *n);
/*
 * The objects of an S3 bucket whose keys start with PREFIX, url
 * s3://BUCKET[/PREFIX] (endpoint, region and credentials as for s3://
 * objects, SigV4-signed the same way), listed with ListObjectsV2, page
 * after page: fn(arg, key, size, mtime) once per object in the server's
 * order (the whole key; mtime seconds since the epoch, -1 when the server
 * gives none); a nonzero return of fn stops the listing and is returned.
 * Returns 0, -EINVAL (bad url), -ENOENT (404: no such bucket), -EACCES
 * (403), -EIO (no answer, another status, a malformed answer), -ENOMEM,
 * each but fn's with one line to p's log naming the URL and the reason.
 */
EZFS_API int ezfs_remote_s3_list(const char *url,
				 const struct ezfs_remote_params *p,
				 int (*fn)(void *arg, const char *key,
					   uint64_t size, int64_t mtime),
				 void *arg);
/* Write what is cached to disk, call on_close, free r (NULL is fine). */
EZFS_API void ezfs_remote_close(ezfs_remote *r);

/*
 * The persistent cache folder (the one of ezfs_remote_params.cache_dir):
 * one entry per image, KEY.data (its bytes at their own offsets, a sparse
 * file) and KEY.map (the URL fetched, the name it was opened as, size,
 * validators, a bit per block present).
 *
 * ezfs_remote_cache_list calls fn once per entry, the most recently used
 * first (the entry's strings live until fn returns); a nonzero return of
 * fn stops the listing and is returned. ezfs_remote_cache_gc removes the
 * least recently used entries until all together take at most max bytes
 * on disk (0: remove all); *freed (may be NULL) gets the bytes removed.
 * Both return 0 or a negative errno (a folder that does not exist is an
 * empty cache). Entries in use by a source may be removed: its open
 * files keep serving it, and its next open fetches again. Both are safe
 * to call from any thread and process; neither logs.
 */
struct ezfs_remote_cache_entry {
	const char *key;  /* its file names' stem */
	const char *url;  /* what is fetched (an oci:// layer: its blob URL) */
	uint64_t size;	  /* the image's size */
	uint64_t present; /* bytes of it in the cache */
	int64_t used;	  /* last use, seconds since the epoch */
	const char *name; /* what was opened: the URL or oci:// reference */
	uint64_t disk;	  /* bytes its data file takes on disk */
};
EZFS_API int ezfs_remote_cache_list(
	const char *dir,
	int (*fn)(void *arg, const struct ezfs_remote_cache_entry *e),
	void *arg);
EZFS_API int ezfs_remote_cache_gc(const char *dir, uint64_t max,
				  uint64_t *freed);
/*
 * The default cache folder into buf (size bytes): EZFS_CACHE_DIR, else
 * $XDG_CACHE_HOME/ezfs, else ~/.cache/ezfs (~/.cache is created when
 * missing; the folder itself when an image is first cached). Returns buf,
 * or NULL when none of these is set. Reads the environment: call it
 * before other threads may change it.
 */
EZFS_API const char *ezfs_remote_cache_dir(char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
