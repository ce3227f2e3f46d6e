/* SPDX-License-Identifier: MIT */
/*
 * ezfs.h - public API of libezfs: read EROFS images.
 *
 * Conventions
 *  - Every function returning int returns 0 (or a non-negative count) on
 *    success and a negative errno value on failure: -EUCLEAN for a corrupt
 *    image, -EOPNOTSUPP for a feature ezfs does not know, -EIO for an I/O
 *    error (or what a custom pread returned), -ENOMEM, -ENOENT, -ENOTDIR,
 *    -ENAMETOOLONG, -EINVAL, -ERANGE, -ENODATA. "Read errors" below means
 *    -EUCLEAN, -EOPNOTSUPP, -EIO, -ENOMEM.
 *  - Pointer arguments must not be NULL unless the comment says so.
 *  - The library never prints and never exits. Details of an error (the nid,
 *    the field, the reason) go to the log callback in ezfs_open_params.
 *  - An ezfs_image and every ezfs_inode handle may be used from many threads
 *    at once; all reading functions are thread-safe.
 *  - "nid" is the EROFS inode number: the kernel's st_ino.
 *  - Free functions accept NULL.
 */
#ifndef EZFS_EZFS_H
#define EZFS_EZFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define EZFS_API __attribute__((visibility("default")))
#else
#define EZFS_API
#endif

#define EZFS_VERSION_STRING "0.1.0"

/* ------------------------------------------------------------------ */
/* Logging                                                             */

enum ezfs_log_level {
	EZFS_LOG_ERROR = 0,
	EZFS_LOG_WARN = 1,
	EZFS_LOG_INFO = 2,
	EZFS_LOG_DEBUG = 3,
};

/* One complete line, without trailing newline. */
typedef void (*ezfs_log_fn)(void *arg, int level, const char *msg);

/* ------------------------------------------------------------------ */
/* I/O backends: where image bytes come from                           */

/*
 * A custom source of image bytes (a test backend that fails on chosen
 * offsets, a remote object store...). pread must be thread-safe and return
 * the number of bytes read (short only at end of image) or a negative errno.
 * The library keeps the pointer to the ops (they must outlive the image)
 * and has no size field for them: this struct does not grow; new callbacks
 * would come with a new open function.
 */
struct ezfs_io_ops {
	ssize_t (*pread)(void *arg, void *buf, size_t len, uint64_t off);
	void (*close)(void *arg); /* may be NULL */
};

/* ------------------------------------------------------------------ */
/* Opening an image                                                    */

typedef struct ezfs_image ezfs_image;
struct ezfs_verity; /* include/ezfs/verity.h */
typedef struct ezfs_inode ezfs_inode;

/*
 * Every parameter struct starts with its size, set by its _init function,
 * so that the struct can grow without breaking callers built against an
 * older header: fields past what the caller's size covers take their
 * defaults; a size of 0 (never initialised) or larger than this library's
 * struct is -EINVAL.
 */
struct ezfs_open_params {
	size_t size;	 /* sizeof(struct ezfs_open_params) */
	ezfs_log_fn log; /* NULL: silent */
	void *log_arg;
	uint64_t offset;	 /* image starts at this byte of the file */
	size_t cache_bytes;	 /* decompressed pcluster cache; 0 = 64 MiB */
	size_t meta_cache_bytes; /* metadata block cache; 0 = 4 MiB */
	unsigned verbose;	 /* log level threshold: 0 = errors only */
	/* Decompression engines (include/ezfs/engine.h); NULL/0 = take
	 * EZFS_ACCEL, EZFS_DISPATCH, EZFS_STRICT_ACCEL from the environment,
	 * else the defaults. */
	const char *accel;    /* e.g. "deflate=isal,libdeflate" */
	const char *dispatch; /* "inline", "queue[:N]" or "percpu" */
	int strict_accel;     /* 1: a fallback is an error */
	/* Extra devices of a multi-device image, as files in device-table
	 * order (exactly as many as the image has). None given: "flat" mode,
	 * as the kernel mounts without device=: each device's blocks are
	 * read from the image file itself, from block uniaddr on (an index
	 * image with its tar appended). A device that is not there is
	 * -ENODEV at open, named in the log. */
	const char *const *devices;
	unsigned ndevices;
	/* ezfs_image_open_io: told of byte ranges the reader will read soon
	 * (off as the ops' pread sees it, the open offset included; flags:
	 * EZFS_HINT_*), so that a remote source fetches them together, in
	 * as few requests as it can, before they are read; arg is the ops'.
	 * Called from any reader thread, it may fetch before it returns and
	 * its errors are ignored (the read that follows reports its own).
	 * NULL: none (files get POSIX_FADV_WILLNEED for data hints). */
	void (*io_hint)(void *arg, uint64_t off, uint64_t len, unsigned flags);
	/* 1: open an image whose superblock checksum (SB_CHKSUM) does not
	 * match, logging a warning (fsck.erofs --no-sbcrc); 0: -EUCLEAN. */
	int no_sb_crc;
	/* dm-verity (include/ezfs/verity.h, docs/verity.md): with verity
	 * EZFS_VERITY_AUTO or _REQUIRE, a tree in veritysetup's format at the
	 * filesystem's end rounded up to 4096 (or at verity_hash_offset, a
	 * byte of the image from offset on), or in the file verity_hash_file
	 * (at verity_hash_offset, default 0), is loaded at open and every
	 * block read is checked against it once: a block that does not match
	 * fails its reads with -EIO and one log line naming dm-verity. A root
	 * hash given (root_hash_size bytes) or signed (root_hash_sig_file, a
	 * PKCS#7 signature of the hex root, checked against the PEM
	 * certificates of trusted_cert) makes the tree required and must be
	 * its root. Open errors: -ENODATA (no tree where required),
	 * -EBADMSG (another root), -EKEYREJECTED (a signature that does not
	 * verify), and those of ezfs_verity_load. */
	int verity; /* enum ezfs_verity_mode; 0: off */
	const char *verity_hash_file;
	uint64_t verity_hash_offset;
	const uint8_t *root_hash;
	size_t root_hash_size;
	const char *root_hash_sig_file;
	const char *trusted_cert;
	/* ezfs_image_open_io: called once at open, with the ops' arg, the
	 * dm-verity tree loaded (NULL: the image has none, or verity is
	 * off) and the byte of the ops where the image starts (the offset),
	 * before the superblock is parsed, so that a source that fetches
	 * checks each block against it (ezfs_verity_check,
	 * include/ezfs/verity.h) before it keeps or serves it; blocks it
	 * checked are not hashed again by the image's reads. The tree is
	 * the image's: ezfs_image_close first calls this again with v NULL
	 * (the source records what it verified and stops using the tree),
	 * then closes the ops, then frees the tree. NULL: none. */
	void (*io_verity)(void *arg, struct ezfs_verity *v, uint64_t base);
};

/* What an io hint announces. */
enum ezfs_hint_flags {
	EZFS_HINT_META = 1u << 0,  /* metadata: inodes, directories */
	EZFS_HINT_DATA = 1u << 1,  /* compressed extents, file data */
	EZFS_HINT_AHEAD = 1u << 2, /* read-ahead: likely, not certain */
};

/* The defaults (all zero), with size set: call it, then set what you need. */
EZFS_API void ezfs_open_params_init(struct ezfs_open_params *p);

/*
 * Open an image file (or block device) read-only; p may be NULL (the
 * defaults). *out is set on success; the details of a failure go to p->log.
 * Returns 0 or a negative errno: -ENOENT, -EACCES... (from open), -EISDIR,
 * -ESPIPE (a pipe or socket), -ENOTBLK (another special file),
 * -EMEDIUMTYPE (not an EROFS image), -EUCLEAN (corrupt or truncated),
 * -EOPNOTSUPP (a feature this library does not read), -EINVAL (bad
 * params, EZFS_ACCEL or EZFS_DISPATCH, a device count that is not the
 * image's), -ENODEV (an extra device missing or too small), -EIO, -ENOMEM.
 */
EZFS_API int ezfs_image_open(const char *path, const struct ezfs_open_params *p,
			     ezfs_image **out);
/* Open an image held in memory; buf must outlive the image. Errors as
 * ezfs_image_open from -EMEDIUMTYPE on (-ENOMEM also before p is read). */
EZFS_API int ezfs_image_open_mem(const void *buf, size_t len,
				 const struct ezfs_open_params *p,
				 ezfs_image **out);
/* Open an image read through custom ops; ops->close(arg) is called by
 * ezfs_image_close (also when open fails, -EINVAL for bad params
 * included). size = image length in bytes. Errors as ezfs_image_open from
 * -EMEDIUMTYPE on, and what ops->pread returns. */
EZFS_API int ezfs_image_open_io(const struct ezfs_io_ops *ops, void *arg,
				uint64_t size, const struct ezfs_open_params *p,
				ezfs_image **out);
/* Close img (NULL is fine): no other call on it or its inodes may be in
 * flight; its inode handles may afterwards only be put. */
EZFS_API void ezfs_image_close(ezfs_image *img);

/*
 * The image's own bytes, as it was opened: from the open offset on, an
 * Android sparse image (or split set) expanded, trailing data after the
 * filesystem (a dm-verity tree...) included; what `simg2img` writes, or
 * the file cut at the offset. ezfs_image_raw_size gives their count;
 * ezfs_image_read_raw reads len of them at off (all, or an error):
 * 0, -EUCLEAN (beyond the end), -EIO (logged), -ENOMEM. Thread-safe.
 */
EZFS_API uint64_t ezfs_image_raw_size(const ezfs_image *img);
EZFS_API int ezfs_image_read_raw(ezfs_image *img, void *buf, size_t len,
				 uint64_t off);

/* ------------------------------------------------------------------ */
/* Superblock information                                              */

enum ezfs_alg {
	EZFS_ALG_LZ4 = 0,
	EZFS_ALG_LZMA = 1,
	EZFS_ALG_DEFLATE = 2,
	EZFS_ALG_ZSTD = 3,
	EZFS_ALG_MAX = 4,
	/* pseudo algorithms of uncompressed pclusters (never on disk) */
	EZFS_ALG_SHIFTED = 14,
	EZFS_ALG_INTERLACED = 15,
};

/* "lz4", "lzma", "deflate", "zstd", "plain", "interlaced", or "?" (any
 * other value): a static string, never NULL. */
EZFS_API const char *ezfs_alg_name(int alg);

struct ezfs_sb_info {
	uint32_t feature_compat;
	uint32_t feature_incompat;
	unsigned blkszbits;
	uint32_t blksz;
	unsigned sb_size;
	uint64_t root_nid;
	uint64_t inos;
	uint64_t blocks; /* image size in blocks */
	int64_t epoch;
	uint32_t fixed_nsec;
	uint32_t build_time;
	uint64_t meta_blkaddr;
	uint64_t xattr_blkaddr;
	uint8_t uuid[16];
	char volume_name[17];	 /* NUL terminated */
	uint16_t available_algs; /* bitmap of enum ezfs_alg (lz4 only: 1) */
	uint16_t lz4_max_distance;
	uint16_t lz4_max_pclusterblks;
	uint32_t lzma_dict_size;
	uint8_t deflate_windowbits;
	uint8_t zstd_windowlog;
	uint16_t extra_devices;
	uint8_t xattr_prefix_count;
	uint64_t packed_nid;  /* 0 = none */
	uint64_t metabox_nid; /* 0 = none */
	uint64_t image_bytes; /* size of the image source */
};

/* The superblock as parsed at open; cannot fail. */
EZFS_API void ezfs_get_sb_info(const ezfs_image *img, struct ezfs_sb_info *si);

/* Comma-separated names of the set feature bits, e.g.
 * "sb_csum,mtime,lz4_0padding,compr_cfgs". Unknown bits as "compat:0x..".
 * Cut to fit buf, always NUL terminated when size > 0. */
EZFS_API void ezfs_feature_string(const ezfs_image *img, char *buf,
				  size_t size);

/* ------------------------------------------------------------------ */
/* Multi-device images (the device table)                              */

/* One extra device; this struct does not grow (a new function would). */
struct ezfs_device {
	char tag[65];	  /* NUL terminated; control bytes shown as '?' */
	uint64_t blocks;  /* as the device table says (some writers: 0) */
	uint64_t uniaddr; /* its first block in the flat space; 0: none */
	const char *path; /* the file it is read from; NULL: flat mode */
	uint64_t bytes;	  /* that file's size; 0 in flat mode */
};

/* Number of extra devices (0 without a device table). */
EZFS_API unsigned ezfs_device_count(const ezfs_image *img);
/* Device index (1..count) into *d; -EINVAL for another index. */
EZFS_API int ezfs_device_get(const ezfs_image *img, unsigned index,
			     struct ezfs_device *d);
/*
 * Where the data address pa of an extent (ezfs_map) is: *dev = 0 for the
 * image file (also every device in flat mode), else the extra device,
 * with *off the byte offset in that file. Returns 0.
 */
EZFS_API int ezfs_addr_device(const ezfs_image *img, uint64_t pa, unsigned *dev,
			      uint64_t *off);

/* ------------------------------------------------------------------ */
/* Inodes                                                              */

enum ezfs_layout {
	EZFS_LAYOUT_FLAT_PLAIN = 0,
	EZFS_LAYOUT_COMPRESSED_FULL = 1,
	EZFS_LAYOUT_FLAT_INLINE = 2,
	EZFS_LAYOUT_COMPRESSED_COMPACT = 3,
	EZFS_LAYOUT_CHUNK_BASED = 4,
};

/* "flat_plain", "compressed_full", "flat_inline", "compressed_compact",
 * "chunk_based", or "?": a static string, never NULL. */
EZFS_API const char *ezfs_layout_name(int layout);

struct ezfs_stat {
	uint64_t nid;
	uint32_t mode; /* type and permission bits, as st_mode */
	uint32_t nlink;
	uint32_t uid, gid;
	uint64_t size;
	int64_t mtime; /* seconds */
	uint32_t mtime_nsec;
	uint32_t rdev_major, rdev_minor;
	uint8_t layout;	  /* enum ezfs_layout */
	uint8_t extended; /* 1: 64-byte inode core */
	uint32_t xattr_isize;
	uint64_t blocks; /* i_u blocks for compressed inodes; data blocks
			  * of flat inodes (informational) */
	uint32_t ino32;	 /* i_ino field */
};

/*
 * Get a handle on inode nid. The handle is immutable and thread-safe; put
 * it with ezfs_inode_put. *out is NULL on failure. Returns 0 or a negative
 * errno: -EUCLEAN (nid out of range or not an inode, a corrupt inode, a
 * symlink longer than EZFS_SYMLINK_MAX), -EOPNOTSUPP (an unknown layout or
 * format), -EIO, -ENOMEM.
 */
EZFS_API int ezfs_inode_get(ezfs_image *img, uint64_t nid, ezfs_inode **out);
/* Free a handle (NULL is fine); no call on it may be in flight. */
EZFS_API void ezfs_inode_put(ezfs_inode *ino);
/* Stat of the inode as loaded; cannot fail. */
EZFS_API void ezfs_inode_stat(const ezfs_inode *ino, struct ezfs_stat *st);
/* The nid the handle was got with. */
EZFS_API uint64_t ezfs_inode_nid(const ezfs_inode *ino);

/* Convenience: stat by nid. Errors as ezfs_inode_get; *st is untouched on
 * error. */
EZFS_API int ezfs_stat_nid(ezfs_image *img, uint64_t nid, struct ezfs_stat *st);

/* Root directory nid (from the superblock: not checked to be a
 * directory). */
EZFS_API uint64_t ezfs_root_nid(const ezfs_image *img);

/* ------------------------------------------------------------------ */
/* Directories                                                         */

/* Dirent file types (as on disk and as the kernel's DT_ mapping). */
enum ezfs_ftype {
	EZFS_FT_UNKNOWN = 0,
	EZFS_FT_REG = 1,
	EZFS_FT_DIR = 2,
	EZFS_FT_CHR = 3,
	EZFS_FT_BLK = 4,
	EZFS_FT_FIFO = 5,
	EZFS_FT_SOCK = 6,
	EZFS_FT_SYMLINK = 7,
};

/* The dirent file type of an inode mode (EZFS_FT_UNKNOWN if none fits). */
EZFS_API unsigned ezfs_mode_ftype(uint32_t mode);

/*
 * Called for each entry; name is NOT NUL terminated (namelen bytes).
 * next_pos is the position to resume after this entry. Return 0 to go on,
 * a positive value to stop (returned by ezfs_readdir), or a negative errno
 * to abort with that error.
 */
typedef int (*ezfs_dirent_fn)(void *arg, const char *name, size_t namelen,
			      uint64_t nid, unsigned ftype, uint64_t next_pos);

/*
 * Iterate directory dir from position pos (0 = start). "." and ".." are
 * reported like any entry (a dot-omitted directory gets a synthesised ".").
 * Returns 0 at the end, the callback's value if it stopped (positive, or
 * its negative errno), -ENOTDIR if dir is not a directory, or read errors
 * (a bad entry: -EUCLEAN); entries before an error have been reported.
 */
EZFS_API int ezfs_readdir(ezfs_inode *dir, uint64_t pos, ezfs_dirent_fn fn,
			  void *arg);

/* One directory entry as collected by ezfs_readdir_all(). */
struct ezfs_dirent {
	char *name;	/* copy of the name, NUL terminated */
	size_t namelen; /* its length (the name may hold a NUL) */
	uint64_t nid;
	unsigned ftype; /* enum ezfs_ftype */
};

/*
 * Collect all entries of directory dir, "." and ".." included, in readdir
 * order, into a malloc'ed array *out of *n entries. Returns 0 or a negative
 * errno (as ezfs_readdir); on error *out still holds the entries read
 * before it (*out may be NULL with *n 0). Either way free the array with
 * ezfs_dirents_free().
 */
EZFS_API int ezfs_readdir_all(ezfs_inode *dir, struct ezfs_dirent **out,
			      size_t *n);
/*
 * As ezfs_readdir_all, but a damaged directory block is skipped and the
 * entries of the blocks after it are still collected (extract and export
 * with --keep-going). Returns 0, the first read error met (the entries
 * that could be read are in *out all the same), or -ENOMEM or -ENOTDIR
 * (stopped there). Free *out with ezfs_dirents_free().
 */
EZFS_API int ezfs_readdir_salvage(ezfs_inode *dir, struct ezfs_dirent **out,
				  size_t *n);
/* Free what ezfs_readdir_all returned; v NULL (with n 0) is fine. */
EZFS_API void ezfs_dirents_free(struct ezfs_dirent *v, size_t n);

/*
 * Look up one name (namelen bytes, no NUL needed) in a directory (binary
 * search, like the kernel); ftype may be NULL. Returns 0, -ENOENT (absent,
 * or namelen 0), -ENAMETOOLONG (namelen > 255), -ENOTDIR (dir is not a
 * directory), or read errors. *nid is set only on success.
 */
EZFS_API int ezfs_lookup(ezfs_inode *dir, const char *name, size_t namelen,
			 uint64_t *nid, unsigned *ftype);

/*
 * Resolve a path relative to the root ("/a/b", "a/b", "" or "/" = root;
 * "." components are skipped, ".." is looked up as a name). Symlinks are
 * not followed. Returns 0, -ENOENT, -ENOTDIR (a component, or a path
 * ending in '/', that is not a directory: a symlink passes there),
 * -ENAMETOOLONG, or read errors. *nid is set only on success.
 */
EZFS_API int ezfs_resolve(ezfs_image *img, const char *path, uint64_t *nid);

/* ------------------------------------------------------------------ */
/* File data                                                           */

/*
 * Read up to len bytes at off. Returns the number of bytes read (0 at or
 * past EOF, else min(len, size - off): never short otherwise) or a
 * negative errno: -EINVAL for a device, FIFO or socket inode, read errors
 * (buf may then be partly written). Works for regular files, directories
 * and symlinks. Thread-safe, also on one handle.
 */
EZFS_API ssize_t ezfs_pread(ezfs_inode *ino, void *buf, size_t len,
			    uint64_t off);

/*
 * A front-to-back read of [off, end) of a file in windows, for callers
 * that pass the bytes on (extract, cat, a data check). With the image's
 * dispatch queue or per-CPU workers and a compressed range over 4 MiB, two
 * reader threads of the stream keep two windows of whole extents decoding
 * ahead while the caller uses the last one; otherwise each window (4 MiB
 * at most) is read on the caller's thread when asked for.
 * flags: EZFS_STREAM_HOLES: a hole (ezfs_hole_end) comes as a window
 * without data instead of zeros.
 * ezfs_stream_open returns 0 with *out set, -EINVAL (unknown flags) or
 * -ENOMEM. ino must stay valid until ezfs_stream_close, which accepts NULL
 * and stops the readers. One thread at a time per stream; any number of
 * streams on one image.
 */
typedef struct ezfs_stream ezfs_stream;
#define EZFS_STREAM_HOLES 1u
EZFS_API int ezfs_stream_open(ezfs_inode *ino, uint64_t off, uint64_t end,
			      unsigned flags, ezfs_stream **out);
/*
 * The next window, in file order: 1 with *len bytes at file offset *off in
 * *data (NULL: a hole), valid until the next call; 0 at the end; or a
 * negative errno, read errors: the read at *off failed, and no window
 * follows. A window that starts past the end of the one before (or a 0
 * before end) means that the data ended there: the caller reports a short
 * file.
 */
EZFS_API int ezfs_stream_next(ezfs_stream *s, const void **data, uint64_t *off,
			      size_t *len);
EZFS_API void ezfs_stream_close(ezfs_stream *s);

/*
 * Decoded bytes of a compressed file without a copy: the encoded extent
 * holding off, decoded into the decoded-pcluster cache (or found there) and
 * held there until ezfs_ref_put. data[0] is the byte at file offset
 * ref->off (the extent's start), len runs to the extent's end (at most the
 * file size); off lies in [ref->off, ref->off + len). Returns 0, a
 * negative errno, or -EOPNOTSUPP where off is not in an encoded extent of
 * its own (not a regular file, uncompressed files, plain or inline data,
 * holes, fragments): read those with ezfs_pread. -EINVAL if off is at or
 * past the end of the file; else read errors. *ref is zeroed on failure
 * (putting it is then a no-op). A reference keeps cache memory in use: put
 * it back soon. Thread-safe.
 */
struct ezfs_ref {
	const void *data;
	uint64_t off;
	size_t len;
	void *priv;
};
EZFS_API int ezfs_extent_ref(ezfs_inode *ino, uint64_t off,
			     struct ezfs_ref *ref);
/* Release ref (from ezfs_extent_ref on ino) and zero it; a zeroed ref is
 * fine. */
EZFS_API void ezfs_ref_put(ezfs_inode *ino, struct ezfs_ref *ref);
/*
 * The holder of ref has passed bytes of its extent on to where they stay
 * (a FUSE daemon: the kernel's page cache). Once every byte of the extent
 * has been, by any holders, the cache lets it go with its last reference
 * instead of keeping a second copy; its buffer takes the next decode.
 * A zeroed ref or bytes 0 does nothing.
 */
EZFS_API void ezfs_ref_served(ezfs_inode *ino, struct ezfs_ref *ref,
			      size_t bytes);

/*
 * A hint that the encoded extents covering [off, off + len) of a
 * compressed file will be decoded soon: the compressed bytes of those not
 * in the decoded-pcluster cache are asked for now, without waiting (a file
 * image: POSIX_FADV_WILLNEED, one request per run of adjacent pclusters),
 * so that extents a read needs together arrive in one I/O rather than one
 * after the other. Does nothing for other layouts, extents and images;
 * errors are ignored.
 */
EZFS_API void ezfs_fetch_ahead(ezfs_inode *ino, uint64_t off, uint64_t len);

/*
 * Decode the encoded extents covering [off, off + len) of a compressed
 * file ahead of a reader: under queue or percpu dispatch those not in the
 * decoded-pcluster cache are queued to the image's decode workers, behind
 * the decodes readers wait for, and the call returns at once. A later
 * ezfs_pread or ezfs_extent_ref of them finds them decoded, or waits for
 * the decode (or runs it, when no worker has started it yet). Returns how
 * many decodes were queued: 0 under inline dispatch, for other layouts and
 * extents. It stops early once decodes ahead hold a quarter of the cache,
 * or after 64 of them: *next (if not NULL) is where it stopped, the end
 * of the range otherwise, for the next call. Decoding errors are not
 * reported here: the read that needs the extent decodes it again and
 * reports them. Thread-safe.
 */
EZFS_API int ezfs_decode_ahead(ezfs_inode *ino, uint64_t off, uint64_t len,
			       uint64_t *next);

/* The longest symlink target an inode may have (PATH_MAX - 1); inodes
 * claiming more are refused as corrupt by ezfs_inode_get. */
#define EZFS_SYMLINK_MAX 4095

/* Symlink target into buf (NUL terminated, cut at a stored NUL like the
 * kernel). Returns its length, -ERANGE if size is not more than the stored
 * size (EZFS_SYMLINK_MAX + 1 always fits), -EINVAL if not a symlink, or
 * read errors (-EUCLEAN: shorter than its size). */
EZFS_API ssize_t ezfs_readlink(ezfs_inode *ino, char *buf, size_t size);

/* ------------------------------------------------------------------ */
/* Extent maps (ezfs stat -e, fsck)                                    */

enum ezfs_extent_flags {
	EZFS_EXTENT_MAPPED = 1 << 0,	  /* has data (else a hole) */
	EZFS_EXTENT_INLINE = 1 << 1,	  /* tail inline in the metadata */
	EZFS_EXTENT_FRAGMENT = 1 << 2,	  /* in the packed inode */
	EZFS_EXTENT_PARTIAL_REF = 1 << 3, /* decodes to more than it uses */
	EZFS_EXTENT_ENCODED = 1 << 4,	  /* compressed */
	EZFS_EXTENT_META = 1 << 5,	  /* pa is in metabox space */
};

struct ezfs_extent {
	uint64_t la;	/* logical start */
	uint64_t llen;	/* logical length */
	uint64_t pa;	/* physical byte address (or fragment offset); on
			 * multi-device images see ezfs_addr_device */
	uint64_t plen;	/* physical length in bytes */
	int alg;	/* enum ezfs_alg (SHIFTED/INTERLACED when raw) */
	unsigned flags; /* enum ezfs_extent_flags */
};

/* Map the extent containing logical offset la. Returns 0, -EINVAL (la at
 * or past the file size, or a device, FIFO or socket inode), or read
 * errors. */
EZFS_API int ezfs_map(ezfs_inode *ino, uint64_t la, struct ezfs_extent *ext);
/* If la (< size) lies in a hole, the end of the hole (at most size), else
 * la (also when the map cannot be read: the read then reports why). */
EZFS_API uint64_t ezfs_hole_end(ezfs_inode *ino, uint64_t la, uint64_t size);

/* ------------------------------------------------------------------ */
/* Extended attributes                                                 */

/* Names, each NUL terminated, back to back, like listxattr(2): returns the
 * bytes used (0: none). size 0: return the size needed (buf may be NULL).
 * -ERANGE if too small, else read errors (-EUCLEAN: bad xattr area). */
EZFS_API ssize_t ezfs_listxattr(ezfs_inode *ino, char *buf, size_t size);
/* Value of one xattr by full name (NUL terminated, e.g. "user.a"):
 * returns its length. size 0: return the size needed (buf may be NULL).
 * -ENODATA if absent, -ERANGE if too small, else read errors. */
EZFS_API ssize_t ezfs_getxattr(ezfs_inode *ino, const char *name, void *buf,
			       size_t size);
/* The inode digest (mkfs.erofs --xattr-inode-digest; docs/erofs-format.md
 * 8.8): the value of the xattr named by the superblock's ishare prefix,
 * "sha256:" and 32 bytes for a non-empty regular file, whatever the
 * prefix's name (often one listxattr hides). Returns its length, as
 * ezfs_getxattr (size 0: the size needed); -EOPNOTSUPP if the image has
 * no ISHARE_XATTRS, -ENODATA if this inode has none, -ERANGE, read
 * errors. Thread-safe as ezfs_getxattr. */
EZFS_API ssize_t ezfs_inode_digest(ezfs_inode *ino, void *buf, size_t size);

/* ------------------------------------------------------------------ */
/* Statistics of the caches                                            */

struct ezfs_cache_stats {
	uint64_t hits, misses, decoded_bytes, evictions;
	uint64_t bytes_now, bytes_max;
	uint64_t dropped; /* let go once passed on whole (ezfs_ref_served) */
};
/* A consistent snapshot of the decoded-pcluster cache; thread-safe. */
EZFS_API void ezfs_cache_stats(ezfs_image *img, struct ezfs_cache_stats *st);

/* ------------------------------------------------------------------ */
/* fsck                                                                */

struct ezfs_fsck_params {
	size_t size; /* sizeof(struct ezfs_fsck_params) */
	/* Called once per problem: a one-line message naming the nid, the
	 * path where known, and the field. May be NULL (only counted). The
	 * callbacks are called one at a time, but possibly from the data
	 * threads. */
	void (*problem)(void *arg, uint64_t nid, const char *path,
			const char *msg);
	/* Called now and then with progress (inodes checked, data bytes
	 * decoded so far). May be NULL. */
	void (*progress)(void *arg, uint64_t inodes, uint64_t bytes);
	void *arg;
	unsigned threads; /* data decoding threads; 0 = 1 */
	int skip_data;	  /* 1: metadata only */
	/* 1: also check the inode digests (fsck.erofs --xattr-inode-digest,
	 * ezfs_inode_digest): a non-empty regular file's must be "sha256:"
	 * and the SHA-256 of its data, else a problem; a file without one
	 * is skipped, as 1.9.3 does. An image without them (no
	 * ISHARE_XATTRS) is -ENODATA before any check; not with skip_data
	 * (-EINVAL). */
	int inode_digests;
};

struct ezfs_fsck_result {
	uint64_t inodes, dirs, files, symlinks, specials, xattrs;
	uint64_t data_bytes; /* logical bytes decoded */
	uint64_t problems;
};

/* The defaults (all zero), with size set. */
EZFS_API void ezfs_fsck_params_init(struct ezfs_fsck_params *p);

/*
 * Check the whole image; p and res may be NULL (the defaults; no result).
 * Returns 0 when clean, -EUCLEAN if any problem was found (each reported
 * through p->problem; I/O errors while reading inodes and data are
 * problems too), -EINVAL for img NULL or bad params, the error of reading
 * the root inode (-EIO, -EUCLEAN, -EOPNOTSUPP, -ENOMEM; also reported as a
 * problem), or -ENOMEM. res is filled also on error.
 */
EZFS_API int ezfs_fsck(ezfs_image *img, const struct ezfs_fsck_params *p,
		       struct ezfs_fsck_result *res);

/*
 * Quote n bytes of s (a name from an image) for a one-line message: control
 * bytes, DEL and backslashes become \xNN; "..." marks a cut when buf is too
 * small. Returns buf, always NUL terminated when size > 0 (size 0: buf
 * untouched, may be NULL).
 */
EZFS_API char *ezfs_quote(const char *s, size_t n, char *buf, size_t size);

/* Human-readable text for an ezfs error code, negative or positive (like
 * strerror, with -EUCLEAN reported as "corrupt image"); never NULL. Other
 * codes are strerror's text, and as thread-safe as the C library's
 * strerror. */
EZFS_API const char *ezfs_strerror(int err);

/*
 * The features of the format with the oldest mainline Linux that mounts
 * an image using them (docs/kernels.md). Versions are EZFS_KVER(major,
 * minor). One table for ezfs info (ezfs_min_kernel) and ezfs mkfs
 * (--max-kernel).
 */
#define EZFS_KVER(major, minor) ((unsigned)(major) << 8 | (unsigned)(minor))
#define EZFS_KVER_MAJOR(v)	((v) >> 8)
#define EZFS_KVER_MINOR(v)	((v)&0xff)
struct ezfs_feature_desc {
	const char *name;   /* "ztailpacking": static, stable */
	unsigned kernel;    /* EZFS_KVER of the oldest Linux that mounts it */
	const char *what;   /* a few words on it */
	const char *option; /* the mkfs option that produces it, or "" */
};
/* Number of rows of the table; row i (< count) into *d (0), else -EINVAL. */
EZFS_API unsigned ezfs_feature_count(void);
EZFS_API int ezfs_feature_get(unsigned i, struct ezfs_feature_desc *d);
/* The row named name (0), or -ENOENT. */
EZFS_API int ezfs_feature_find(const char *name, struct ezfs_feature_desc *d);
/*
 * The oldest Linux that mounts an image with this superblock: the greatest
 * version over its features (the base format, 5.4, when nothing raises
 * it). *feature (may be NULL) gets the name of the first feature that
 * needs that version. Cannot fail.
 */
EZFS_API unsigned ezfs_min_kernel(const struct ezfs_sb_info *si,
				  const char **feature);

/*
 * The library behind a codec of this build (an engine of 'ezfs accel list',
 * or an encoder: lz4hc, ezdeflate): *lib its name ("libzstd"; NULL: ezfs'
 * own code), *version the version it reports ("1.5.4"; NULL: none);
 * static strings, either pointer may be NULL. 0, or -ENOENT for a codec
 * not built in (zstd and libdeflate are optional at build time).
 */
EZFS_API int ezfs_engine_library(const char *engine, const char **lib,
				 const char **version);

#ifdef __cplusplus
}
#endif
#endif
