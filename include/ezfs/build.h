/* SPDX-License-Identifier: MIT */
/*
 * build.h - public API of the ezfs image builder: directory tree -> EROFS.
 *
 * Usage:
 *	struct ezfs_build_params p;
 *	ezfs_build_params_init(&p);
 *	p.alg = EZFS_ALG_LZ4; ...
 *	ezfs_builder *b;
 *	err = ezfs_builder_new(&p, &b);
 *	if (!err) err = ezfs_builder_scan(b, "/src/dir");
 *	if (!err) err = ezfs_builder_write(b, "out.img");
 *	ezfs_builder_stats(b, &st);
 *	ezfs_builder_free(b);
 *
 * Conventions are those of ezfs.h: negative errno on failure, details (the
 * source path and the reason) through the log callback, no printing, no
 * global state. One builder is used by one thread at a time; several
 * builders may run concurrently. The builder uses its own worker threads.
 *
 * Output is deterministic: the same tree, parameters, timestamp and UUID
 * give byte-identical images for any number of workers.
 */
#ifndef EZFS_BUILD_H
#define EZFS_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "ezfs/ezfs.h"
#include "ezfs/verity.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ezfs_builder ezfs_builder;

/* How file mtimes relate to the build timestamp (superblock epoch). */
enum ezfs_build_time_mode {
	EZFS_TIME_SOURCE = 0, /* keep every file's mtime (default) */
	EZFS_TIME_FIXED =
		1, /* every file gets the timestamp (-T, --all-time) */
	EZFS_TIME_CLAMP = 2, /* mtimes later than the timestamp are clamped
			      * to it (SOURCE_DATE_EPOCH) */
};

/* Flags (struct ezfs_build_params.flags). */
enum ezfs_build_flags {
	EZFS_BUILD_NOINLINE_DATA = 1 << 0,  /* regular files FLAT_PLAIN */
	EZFS_BUILD_FORCE_COMPACT = 1 << 1,  /* 32-byte inodes where they fit */
	EZFS_BUILD_FORCE_EXTENDED = 1 << 2, /* 64-byte inodes everywhere */
	EZFS_BUILD_NO_SBCRC = 1 << 3,	    /* no superblock checksum */
	EZFS_BUILD_LEGACY_COMPRESS = 1
				     << 4,  /* full (8-byte) lcluster indexes */
	EZFS_BUILD_ALL_ROOT = 1 << 5,	    /* uid = gid = 0 */
	EZFS_BUILD_NO_FSYNC = 1 << 6,	    /* skip fsync before rename */
	EZFS_BUILD_ZTAILPACKING = 1 << 7,   /* compressed tails inline */
	EZFS_BUILD_FRAGMENTS = 1 << 8,	    /* tails and small files into the
					     * compressed packed inode */
	EZFS_BUILD_ALL_FRAGMENTS = 1 << 9,  /* whole files into the packed
					     * inode (implies FRAGMENTS) */
	EZFS_BUILD_DEDUPE = 1 << 10,	    /* share identical pclusters */
	EZFS_BUILD_CHUNK_INDEXES = 1 << 11, /* chunk indexes, not block map */
	EZFS_BUILD_48BIT = 1 << 12,	    /* 48-bit layout (Linux 6.15):
					     * encoded extent records */
	EZFS_BUILD_SPARSE = 1 << 13, /* write an Android sparse image (RAW
				      * and DONT_CARE chunks of 4096 bytes) */
};

/* At most this many compression configurations (-z A:B:...). */
#define EZFS_BUILD_MAX_ZALGS 8

/*
 * One compression configuration: enum ezfs_alg (lz4hc = EZFS_ALG_LZ4 with
 * hc = 1; EZFS_ALG_DEFLATE with hc = 1 compresses with libdeflate instead
 * of ezfs' own encoder), level < 0 = the codec's default but for zstd
 * (its own fast levels, as mkfs.erofs gives them; 0 is zstd's default).
 *
 * This struct and struct ezfs_build_hint are elements of arrays the caller
 * sizes (more_algs, hints): the library steps through them by its own
 * sizeof, so they carry no size field and their layout is frozen. A new
 * field would come as a new array in struct ezfs_build_params, which does
 * grow (its size field).
 */
struct ezfs_build_zalg {
	int alg;
	int hc;
	int level;
};

/* A per-file compression hint (--compress-hints): files whose path
 * relative to the source root ("dir/file") matches the POSIX extended
 * regex get this pcluster size (bytes, a multiple of the block size; 0 =
 * stored uncompressed) and configuration (0 = alg/hc/level, k = more_algs
 * [k - 1]). The first matching hint wins. */
struct ezfs_build_hint {
	const char *regex;
	uint32_t pcluster_size;
	unsigned zalg;
};

/* Phases reported to the progress callback. */
enum ezfs_build_phase {
	EZFS_BUILD_SCAN = 0, /* items = inodes found so far */
	EZFS_BUILD_DATA = 1, /* items = files written, bytes = input bytes */
	EZFS_BUILD_META = 2, /* writing inodes and directories */
};

struct ezfs_build_progress {
	int phase;		     /* enum ezfs_build_phase */
	uint64_t items, items_total; /* total 0 = unknown */
	uint64_t bytes, bytes_total;
};

/*
 * Parameters of ezfs_builder_new. Like every parameter struct (see struct
 * ezfs_open_params) it starts with its size, set by ezfs_build_params_init:
 * fields past an older caller's size take their defaults; a size of 0 or
 * larger than this library's struct is -EINVAL.
 */
struct ezfs_build_params {
	size_t size;	 /* sizeof(struct ezfs_build_params) */
	ezfs_log_fn log; /* NULL: silent */
	void *log_arg;
	unsigned verbose; /* log threshold (enum ezfs_log_level) */
	/* Called from the calling thread now and then; may be NULL. The
	 * library fills *p; fields may be added at its end. */
	void (*progress)(void *arg, const struct ezfs_build_progress *p);
	void *progress_arg;

	unsigned blksz; /* 512..4096, power of two; 0 = 4096 */
	unsigned flags; /* enum ezfs_build_flags */

	/* Timestamp: has_timestamp = 0 -> "now" and EZFS_TIME_SOURCE. */
	int has_timestamp;
	int64_t timestamp;
	int time_mode; /* enum ezfs_build_time_mode */

	int has_uuid; /* 0: random UUID */
	uint8_t uuid[16];
	char label[16]; /* volume name, at most 15 bytes + NUL */

	int64_t force_uid;   /* -1: keep */
	int64_t force_gid;   /* -1: keep */
	uint32_t uid_offset; /* added to every owner (after forcing); */
	uint32_t gid_offset; /* a sum beyond 32 bits is an error */
	int xattr_tolerance; /* -x: > N users -> shared; < 0: no xattrs */

	/* Excluded paths, relative to the source root ("a/b" or "/a/b"),
	 * and POSIX extended regexes matched against the relative path. */
	const char *const *exclude_paths;
	size_t n_exclude_paths;
	const char *const *exclude_regex;
	size_t n_exclude_regex;

	/* Compression: alg < 0 = none; else enum ezfs_alg, with lz4hc given
	 * as EZFS_ALG_LZ4 + hc = 1 (and libdeflate's encoder as
	 * EZFS_ALG_DEFLATE + hc = 1). level < 0 = the codec's default, but
	 * zstd takes negative levels as its fast ones (mkfs.erofs' -zzstd
	 * is -1; 0 is zstd's default, 3). */
	int alg;
	int hc;
	int level;
	uint32_t pcluster_size; /* bytes, 0 = one block; <= 1 MiB */
	/* Configurations 1.. (for hints) after the default one above. */
	const struct ezfs_build_zalg *more_algs;
	size_t n_more_algs;
	const struct ezfs_build_hint *hints;
	size_t n_hints;

	unsigned workers; /* compression threads; 0 = online CPUs */

	/* Uncompressed chunk-based files (6.4): chunk size in bytes, a power
	 * of two >= blksz; 0 = off. Identical chunks are stored once and
	 * all-zero chunks become holes. Ignored for compressed files. */
	uint32_t chunksize;

	/* mkfs.erofs compatibility; all 0/NULL = off. */
	int hard_dereference;	/* hard links become separate inodes */
	int no_xattr_filter;	/* no xattr name bloom filter (-E
				 * ^xattr-name-filter) */
	uint32_t lzma_dictsize; /* lzma dictionary bytes; 0 = by pcluster */
	uint32_t zstd_window;	/* zstd window bytes (power of two); 0 = by
				 * pcluster */
	uint64_t image_offset;	/* the image starts at this byte of path; the
				 * bytes before it are kept (a file) */
	/* Android: canned fs_config file ("path uid gid mode
	 * [capabilities=0x...]"), SELinux file_contexts (text or compiled;
	 * needs libselinux), and the mount point both are keyed under
	 * ("system": keys "system/bin/sh", labels of "/system/bin/sh"). A
	 * path the fs_config lacks is an error unless fs_config_keep is set
	 * (it keeps the source's owner and mode). */
	const char *fs_config_file;
	const char *file_contexts;
	const char *mount_point;
	int fs_config_keep;
	/* Containers: aufs whiteouts (".wh.NAME" -> a 0/0 character device
	 * NAME, ".wh..wh..opq" -> trusted.overlay.opaque=y on its
	 * directory); drop trusted.overlay.* xattrs of the source. */
	int aufs;
	int ovlfs_strip;
	/* Write "path first_block last_block" lines of the uncompressed
	 * files (Android --block-list-file); NULL = none. */
	const char *block_list_file;
	/* One extra device (DEVICE_TABLE slot 1, its tag empty; in the flat
	 * form it follows the image: uniaddr = the image's blocks).
	 * tar_index: ezfs_builder_scan_tar makes a tar index (mkfs.erofs
	 * --tar=i): the image holds only metadata, every regular file is
	 * chunk-based with chunk indexes into device 1, the plain tar itself
	 * (its first byte is block 0), so each member's data must start at a
	 * multiple of blksz (512 fits any tar). No compression, chunksize or
	 * blobdev with it, no directory scan (-EINVAL).
	 * blobdev: the chunks of uncompressed files (chunksize is required)
	 * go to this file, device 1, created or replaced like the image (a
	 * block device is written in place). */
	int tar_index;
	const char *blobdev;
	/* Compressed directories (mkfs.erofs --zD): every directory is one
	 * whole-file fragment of the packed inode, which is compressed with
	 * the default configuration; without compression it is ignored. */
	int compress_dir;
	/* Directories without their "." entry (-E dot-omitted, 48BIT). */
	int dot_omitted;
	/* Metabox (mkfs.erofs -m#[:X], Linux 6.17): the tree's inodes (with
	 * their xattrs, indexes and inline data) are stored inside the
	 * metabox inode (NIDs with bit 63), compressed in pclusters of
	 * metabox_pcluster bytes (a multiple of blksz, at most the largest
	 * pcluster) with configuration metabox_zalg (0: alg/hc/level, k:
	 * more_algs[k - 1]); without compression it is stored plain.
	 * 0 = no metabox. Implies 48BIT. */
	uint32_t metabox_pcluster;
	unsigned metabox_zalg;
	/* dm-verity (include/ezfs/verity.h, docs/verity.md): a hash tree in
	 * veritysetup's format 1 (sha256, 4096-byte data and hash blocks, its
	 * superblock first) over the image, which is padded with zeros to a
	 * multiple of 4096 bytes; appended right after it (the hash offset is
	 * the padded size: in front of the image with image_offset, and
	 * before a --sparse image is made of it), or written to
	 * verity_hash_file (created or replaced as the image is; a block
	 * device is written in place), its superblock at byte 0. The salt is
	 * verity_salt_size bytes of verity_salt with verity_has_salt (0 bytes:
	 * none), else 32 random bytes; the UUID verity_uuid with
	 * verity_has_uuid, else random: fixed ones make the image
	 * reproducible. ezfs_builder_verity tells the root. Not with tar_index
	 * or blobdev (the data would be outside the tree: -EINVAL). */
	int verity;
	int verity_has_salt;
	uint8_t verity_salt[256];
	unsigned verity_salt_size;
	int verity_has_uuid;
	uint8_t verity_uuid[16];
	const char *verity_hash_file;
	/* At least this many bytes of inline xattr room in the root inode
	 * (mkfs.erofs --root-xattr-isize): its xattr body is padded with
	 * zeros to max(its size, N rounded up to 4); 0 = none, else
	 * 16..65532 (-EINVAL): a body of 12 bytes is only a header, which
	 * Linux refuses. */
	unsigned root_xattr_isize;
	/* The filesystem's size in blocks rounded up to a multiple of this
	 * power of two (mkfs.erofs --fsalignblks, which rounds N up to one);
	 * 0 or 1 = none, at most 1 << 30 (-EINVAL). */
	uint32_t fsalign_blocks;
	/* Inode digests (mkfs.erofs --xattr-inode-digest[=NAME]): each
	 * non-empty regular file gets the xattr NAME (a long xattr prefix
	 * with an empty suffix, hidden from listxattr unless NAME starts
	 * with user., trusted. or security.) whose value is "sha256:" and
	 * the 32-byte SHA-256 of its contents; the superblock names the
	 * prefix (COMPAT ISHARE_XATTRS). NULL = none; 1..255 bytes. The
	 * prefix table is stored plain (COMPAT PLAIN_XATTR_PFX); not with a
	 * packed inode (fragments, compress_dir), metabox_pcluster, a tar
	 * index or a rebuild (-EINVAL). */
	const char *inode_digest_xattr;
	/* mkfs.erofs --gzinfo=FILE: ezfs_builder_scan_tar of a gzip archive
	 * keeps checkpoints for random access (inflate windows), and once
	 * ezfs_builder_write has named the image, writes them to this file
	 * as the AWS SOCI zinfo (version 2; mkfs.erofs 1.9.3's bytes),
	 * created or replaced through a temporary name. A scan of anything
	 * but a gzip archive is -EINVAL (logged). */
	const char *gzinfo_file;
	/* mkfs.erofs --incremental=data: the tree of the EROFS image at this
	 * path (usually the image about to be replaced) under the scanned
	 * one: each name the scan lacks is added with its metadata and its
	 * data copied (a directory present in both merges, unless the
	 * scanned one is opaque), so the new image holds both trees. The
	 * block size must be blksz (else -EINVAL, logged); the UUID is the
	 * old image's unless has_uuid. Read by ezfs_builder_scan and
	 * ezfs_builder_scan_tar at their end; not with tar_index. */
	const char *incremental_base;
	/* mkfs.erofs --incremental=rvsp, --clean=rvsp: ezfs_builder_scan_tar
	 * skips each regular file's data: the file reads as zeros (space
	 * reserved for data written later; holes or compressed zeros here).
	 * Not with tar_index (-EINVAL, logged). */
	int tar_rvsp;
	/* ezfs mkfs --order=FILE: the regular files named in FILE (one path
	 * a line, from the tree's root; "./" or "/" before it and names that
	 * are not regular files of the tree ignored) get their data first,
	 * in that order, one after the other from the data area's start;
	 * the rest follow in the usual order. NULL: none. A file that
	 * cannot be read: -errno, logged. */
	const char *order_file;
	/* mkfs.erofs --async-queue-limit=N: at most N compression jobs (a
	 * file, or a part of a large one; a segment of the packed inode)
	 * handed to the workers ahead of the writer and not yet taken by it
	 * (the writer waits instead): less memory held by results waiting,
	 * less overlap. 0 = the default (4 per worker, more while those hold
	 * under 64 MiB of input). The image does not depend on it. */
	unsigned async_queue_limit;
};

struct ezfs_build_stats {
	uint64_t inodes, files, dirs, symlinks, specials, hardlinks;
	uint64_t bytes_in; /* regular file bytes read */
	uint64_t image_bytes;
	uint64_t compressed_files; /* stored compressed */
	uint64_t xattrs, shared_xattrs;
	double seconds;
};

/* Defaults: 4096-byte blocks, no compression (alg = level = -1), -x 2, no
 * uid/gid forcing (-1), the rest zero; size set. Call it, then set what you
 * need. */
EZFS_API void ezfs_build_params_init(struct ezfs_build_params *p);

/*
 * Create a builder; p may be NULL (the defaults). *p is copied, but every
 * array and string it points to (exclude_paths, more_algs, hints, file
 * names...) must stay valid until ezfs_builder_free. *out is set on
 * success, NULL on failure. Returns 0 or
 * a negative errno: -EINVAL (p->size 0 or too large, which is not logged;
 * a bad block size, chunk size, pcluster size, algorithm, hint index or
 * regex, exclusive flags: with a log line), -EOPNOTSUPP (no compressor for
 * an algorithm in this build), -ENOMEM.
 */
EZFS_API int ezfs_builder_new(const struct ezfs_build_params *p,
			      ezfs_builder **out);

/*
 * Scan the source directory (lstat, xattrs, hardlinks). Once per builder:
 * a second scan (or one after ezfs_builder_scan_tar) is -EINVAL. Returns 0
 * or a negative errno, each logged with the source path: -ENOTDIR (srcdir
 * is not a directory), the errno of a failed lstat, opendir, readlink or
 * open (-ENOENT, -EACCES...), -EAGAIN (a symlink changed while read),
 * -EOVERFLOW (uid_offset or gid_offset carries an owner beyond 32 bits),
 * -ENOMEM. After a failed scan, only free the builder.
 */
EZFS_API int ezfs_builder_scan(ezfs_builder *b, const char *srcdir);

/*
 * Instead of ezfs_builder_scan: read the tree from a tar archive (ustar,
 * GNU and PAX headers; plain, gzip or xz, told apart by magic). path NULL
 * or "-" reads standard input. A seekable plain archive's file data is
 * read in place; any other input's data is copied into one unlinked
 * temporary file in tmpdir (NULL: the current directory), kept open until
 * the builder is freed. Parent directories missing from the archive get
 * mode 0755, owner 0 and the -T timestamp (else the archive's newest
 * mtime). A later entry for a path replaces an earlier one. With
 * tar_index the data is skipped, not copied (standard input is read to
 * its end: the device is the whole input); a gzip or xz archive, or a
 * member's data not at a multiple of blksz, is -EINVAL.
 * Once per builder, as ezfs_builder_scan (-EINVAL). Returns 0 or a negative
 * errno, logged: -EUCLEAN (a malformed header or field), -EPIPE (a
 * truncated archive), -ERANGE (a number field out of range), -EOPNOTSUPP
 * (sparse files), -EISDIR (path is a directory), the errno of opening or
 * reading the archive or writing the temporary file, -EOVERFLOW (as
 * ezfs_builder_scan), -ENOMEM.
 */
EZFS_API int ezfs_builder_scan_tar(ezfs_builder *b, const char *path,
				   const char *tmpdir);

/*
 * Instead of ezfs_builder_scan: the tree of an OCI image's layers, tar
 * archives as ezfs_builder_scan_tar reads them (plain, gzip, xz...),
 * paths[0] the lowest of n, with the OCI image spec's whiteouts: an entry
 * ".wh.NAME" deletes NAME (and all below it) of the layers below its own,
 * ".wh..wh..opq" hides what the layers below hold in its directory; the
 * whiteout entries themselves are left out (what --ovlfs-strip would
 * give). A later entry for a path replaces an earlier one; directories
 * merge. Every layer's file data is copied into one unlinked temporary
 * file in tmpdir (NULL: the current directory). The srcpath of every
 * inode (--compress-hints) is under paths[0]. Once per builder, as
 * ezfs_builder_scan (-EINVAL; also with tar_index, tar_rvsp,
 * incremental_base, gzinfo_file or aufs, logged). Returns 0 or the
 * errors of ezfs_builder_scan_tar, logged with the layer's path.
 */
EZFS_API int ezfs_builder_scan_tar_layers(ezfs_builder *b,
					  const char *const *paths, size_t n,
					  const char *tmpdir);

/*
 * Instead of ezfs_builder_scan: rebuild mode (mkfs.erofs IMAGE LAYER...).
 * The tree is merged from n EROFS images, layers[n - 1] the uppermost,
 * with overlayfs' rules: an upper name hides the lower ones, directories
 * merge unless the upper one is opaque (trusted.overlay.opaque=y) or a
 * layer between holds a non-directory of that name; whiteouts (0/0
 * character devices) stay unless ovlfs_strip drops them and the
 * trusted.overlay.* xattrs (aufs names are taken as they are). The image
 * holds only metadata: layer k is device k (its tag the layer's UUID in
 * hex, its blocks the layer's), every regular file chunk indexes into its
 * layer. The block size is the layers' (blksz is ignored). Once per
 * builder, as ezfs_builder_scan (-EINVAL, also with compression, a chunk
 * size, blobdev or tar_index). The paths must stay valid until
 * ezfs_builder_write returns. Returns 0 or a negative errno, logged with
 * the layer: -EMEDIUMTYPE (not an EROFS image), what ezfs_image_open
 * returns, -EINVAL (a block size unlike the first layer's), -EOPNOTSUPP
 * (a compressed file, or an inline tail: data another image cannot
 * reference), -EUCLEAN, -ENOMEM.
 */
EZFS_API int ezfs_builder_scan_images(ezfs_builder *b,
				      const char *const *layers, size_t n);

/*
 * The file ezfs_builder_write(b, path) writes: path with its symlinks
 * followed (at most 40), which need not exist yet (a dangling link names
 * the file to create). Malloc'd (free it), or NULL with errno set (ELOOP,
 * the errno of lstat or readlink, ENOMEM). Thread-safe.
 */
EZFS_API char *ezfs_build_image_target(const char *path);

/*
 * Lay out and write the image to path: a temporary file beside it (beside
 * the target of a symlink) is written, synced with EZFS_BUILD_NO_FSYNC
 * clear, and renamed only when complete; on failure neither the temporary
 * file nor path is left behind (an existing file at path stays untouched).
 * A new file gets 0666 less the umask, a replaced one keeps its mode and
 * owner. A block device is written in place (-EFBIG when the image does
 * not fit); other special files are refused (-EINVAL, a directory
 * -EISDIR). With blobdev, the blob is made the same way (a temporary file
 * beside it, renamed just before the image is; a block device in place)
 * and removed again if the image fails; it must not be the image.
 * Returns 0 or a negative errno, logged with the path: -EINVAL (no scan
 * yet, or a special file), -EISDIR, -EFBIG, the errno of resolving path,
 * of open (a block device in use: -EBUSY), write, fsync, close or rename
 * (-EACCES, -ENOSPC, -EIO...), -ENOMEM.
 */
EZFS_API int ezfs_builder_write(ezfs_builder *b, const char *path);

/* The dm-verity tree ezfs_builder_write wrote (params.verity): its
 * description and root into *vi (trust EZFS_VERITY_TRUST_NONE); 0, or
 * -ENODATA (none written). */
EZFS_API int ezfs_builder_verity(const ezfs_builder *b,
				 struct ezfs_verity_info *vi);

/* The counts so far (seconds: since ezfs_builder_new, set by
 * ezfs_builder_write). b must not be NULL. */
EZFS_API void ezfs_builder_stats(const ezfs_builder *b,
				 struct ezfs_build_stats *st);
/* Free b (NULL is fine), closing its files; the image already written
 * stays. */
EZFS_API void ezfs_builder_free(ezfs_builder *b);

#ifdef __cplusplus
}
#endif
#endif
