/* SPDX-License-Identifier: MIT */
/*
 * extract.h - an image's tree out of the image: into a directory
 * (ezfs_extract) or as an archive (ezfs_export).
 *
 * Both work on an open image (ezfs_image_open*) and use only its public
 * read API; the image must stay open until they return. Neither prints:
 * each problem is one line to the message callback, each entry left out
 * goes to the entry callback, and the return value sums it up. Callbacks
 * are called one at a time (never two at once), but possibly from the
 * worker threads of the extraction.
 */
#ifndef EZFS_EXTRACT_H
#define EZFS_EXTRACT_H

#include "ezfs/ezfs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Why an entry is reported to the entry callback (err: the errno, or 0). */
enum ezfs_entry_problem {
	/* the image cannot give the inode, extent or directory: left out
	 * (EZFS_EXTRACT_KEEP_GOING, EZFS_EXPORT_KEEP_GOING) */
	EZFS_ENTRY_DAMAGED = 1,
	/* a regular file whose data could not be read: not extracted */
	EZFS_ENTRY_UNREADABLE = 2,
	/* a regular file written from a source that failed its check only
	 * afterwards (source_check): kept, the caller decides */
	EZFS_ENTRY_UNVERIFIED = 3,
};

/* Where an extraction or export stands: what is done, of the totals
 * (counted before it starts, only when a progress callback is set). */
struct ezfs_extract_progress {
	uint64_t bytes, entries;	     /* file data written, entries */
	uint64_t total_bytes, total_entries; /* of the whole tree */
};

/* ------------------------------------------------------------------ */
/* Extraction into a directory                                         */

enum ezfs_extract_flags {
	/* into a non-empty directory, replacing entries of the same name */
	EZFS_EXTRACT_FORCE = 1u << 0,
	/* no chown, even as root */
	EZFS_EXTRACT_NO_OWNER = 1u << 1,
	/* no xattrs at all (else user.* always, the others as root) */
	EZFS_EXTRACT_NO_XATTRS = 1u << 2,
	/* a damaged inode, extent or directory is reported and skipped;
	 * the rest comes out */
	EZFS_EXTRACT_KEEP_GOING = 1u << 3,
	/* extract the inode opts.nid (named "#NID"), not opts.path */
	EZFS_EXTRACT_BY_NID = 1u << 4,
	/* fs_config and file_contexts beside DEST (DEST.fs_config,
	 * DEST.file_contexts unless named), the mount point the partition's
	 * name unless given, and DEST.mkfs: the ezfs mkfs line that builds
	 * the image again from DEST and the two */
	EZFS_EXTRACT_ANDROID = 1u << 5,
	/* every byte written: no holes, neither where the image stores
	 * holes nor for its whole blocks of zeros */
	EZFS_EXTRACT_NO_SPARSE = 1u << 6,
};

struct ezfs_extract_opts {
	size_t size;	  /* sizeof(struct ezfs_extract_opts) */
	const char *path; /* the directory or file to extract; NULL: "/" */
	uint64_t nid;	  /* with EZFS_EXTRACT_BY_NID */
	unsigned flags;	  /* enum ezfs_extract_flags */
	unsigned threads; /* workers writing file data; 0: online CPUs */
	/* the image as messages name it, and where EZFS_EXTRACT_ANDROID
	 * takes the partition's name from when the volume has none; NULL:
	 * "image" */
	const char *image_name;
	/* Android sidecars for ezfs mkfs --fs-config-file and
	 * --file-contexts (NULL: none, or with EZFS_EXTRACT_ANDROID the
	 * defaults): canned fs_config lines (owner, mode, capabilities) and
	 * file_contexts lines (SELinux labels), each key prefixed with
	 * mount_point (NULL: none) */
	const char *fs_config, *file_contexts, *mount_point;
	void *arg; /* for the callbacks */
	/* One line per problem ("DEST/PATH: what: reason"); NULL: none. */
	ezfs_log_fn message;
	/* Now and then (the caller's thread), and once at the end. */
	void (*progress)(void *arg, const struct ezfs_extract_progress *p);
	/* Each entry left out or in doubt (path relative to DEST, "" for
	 * DEST itself): enum ezfs_entry_problem, err the errno or 0. */
	void (*entry)(void *arg, const char *path, int problem, int err);
	/*
	 * Called once every file is written, when set: 0, or a negative
	 * errno when the source the image's bytes came from failed its
	 * check afterwards (a digest over the whole source). Each regular
	 * file written is then reported as EZFS_ENTRY_UNVERIFIED, kept,
	 * and ezfs_extract returns that errno.
	 */
	int (*source_check)(void *arg);
	/* When set, a non-zero *cancel (from a signal handler too) stops
	 * the extraction at its next step: see -ECANCELED below. */
	const volatile int *cancel;
};

struct ezfs_extract_result {
	uint64_t entries, bytes; /* entries made, file data written */
	unsigned damaged;	 /* entries reported (all problems) */
	unsigned unreadable;	 /* files not extracted: their data */
	unsigned unverified;	 /* files reported EZFS_ENTRY_UNVERIFIED */
	unsigned sidecar_errors; /* entries missing from the sidecars */
};

/* The defaults (all zero), with size set. */
EZFS_API void ezfs_extract_opts_init(struct ezfs_extract_opts *o);

/*
 * Restore the tree of img under o->path (a directory: its contents; a
 * file: DEST/its name) into the directory dest, made if missing: contents
 * (holes where the image stores holes or whole blocks of dest's block
 * size hold zeros, unless EZFS_EXTRACT_NO_SPARSE), modes, owners (as root),
 * nanosecond times, xattrs, hard links, symlinks and special files; directories
 * get their modes and times last. Nothing is created outside dest (no symlink
 * is followed). File data is written by o->threads workers of one pool. Never
 * leaves a half-written file: a file whose data cannot be read is removed.
 * Reads the process umask (for dest's mode) without changing it. o and res may
 * be NULL (the defaults; no result); res is filled also on error. Returns 0, or
 * a negative errno after the problems were reported: -ENOTEMPTY (dest is not
 * empty and EZFS_EXTRACT_FORCE is not set: not reported, the caller names its
 * option), -ECANCELED (*o->cancel was set: the directories made so far have
 * their modes and times), -EIO (entries were damaged or unreadable, or sidecar
 * lines could not be written; the rest is out), what source_check returned,
 * -EINVAL (bad arguments), or the error that stopped it (-ENOENT for a path not
 * in the image, a read error, -ENOSPC...). Not reentrant on one dest.
 */
EZFS_API int ezfs_extract(ezfs_image *img, const char *dest,
			  const struct ezfs_extract_opts *o,
			  struct ezfs_extract_result *res);

/* ------------------------------------------------------------------ */
/* Export as an archive                                                */

enum ezfs_export_format {
	EZFS_EXPORT_PAX = 0,  /* POSIX pax: xattrs as SCHILY.xattr */
	EZFS_EXPORT_GNU = 1,  /* GNU tar */
	EZFS_EXPORT_CPIO = 2, /* cpio newc (SVR4) */
	EZFS_EXPORT_ZIP = 3,
};

enum ezfs_export_filter {
	EZFS_EXPORT_PLAIN = 0,
	EZFS_EXPORT_GZIP = 1,
	EZFS_EXPORT_XZ = 2,
	EZFS_EXPORT_ZSTD = 3, /* tar and cpio only */
};

enum ezfs_export_flags {
	/* a damaged inode, extent or directory is reported and left out */
	EZFS_EXPORT_KEEP_GOING = 1u << 0,
	/* no message for entries the format cannot hold (sockets...) */
	EZFS_EXPORT_QUIET = 1u << 1,
};

struct ezfs_export_opts {
	size_t size;	  /* sizeof(struct ezfs_export_opts) */
	const char *path; /* the directory or file to export; NULL: "/" */
	int format;	  /* enum ezfs_export_format */
	int filter;	  /* enum ezfs_export_filter */
	unsigned flags;	  /* enum ezfs_export_flags */
	/* names for messages: the image, the output (NULL: "image",
	 * "stdout") */
	const char *image_name, *output_name;
	void *arg;
	ezfs_log_fn message; /* as for ezfs_extract */
	void (*progress)(void *arg, const struct ezfs_extract_progress *p);
	void (*entry)(void *arg, const char *path, int problem, int err);
};

struct ezfs_export_result {
	uint64_t entries, bytes; /* archive entries, file data */
	unsigned damaged;	 /* entries left out, reported */
	unsigned skipped;	 /* entries the format cannot hold */
	int complete;		 /* 1: the archive was written to its end */
	/* Entries holding what the format cannot (also one message line
	 * at the end, EZFS_LOG_WARN): xattrs and sub-second mtimes dropped
	 * (gnu, cpio, zip); devices and FIFOs (zip), sockets (all) and
	 * names that are not UTF-8 (zip) left out; later paths of hard links
	 * stored as copies (cpio, zip); files with holes written whole
	 * (gnu, cpio, zip: pax writes sparse members). */
	uint64_t lost_xattrs, lost_nsec, lost_devices, lost_sockets;
	uint64_t lost_links, lost_holes, lost_names;
};

/* The defaults (pax, no filter), with size set. */
EZFS_API void ezfs_export_opts_init(struct ezfs_export_opts *o);

/*
 * Write the tree of img under o->path as an archive to fd (not closed),
 * through libarchive, loaded when first called (libarchive.so.13).
 * Entries in directory order, each file's data read whole before its
 * header is written (an unreadable file leaves no half entry); a pax
 * member of a file with holes (the image's, or whole blocks of zeros) is
 * sparse. A file too big for the format (cpio: 4 GiB and more) is
 * refused before anything is written: -EFBIG. o and res may be NULL; res
 * is filled also on error. Returns 0; -EIO when entries
 * were damaged and left out (EZFS_EXPORT_KEEP_GOING; res->complete says
 * that the archive holds all the rest); -EOPNOTSUPP when libezfs was built
 * without libarchive or it cannot be loaded; -EINVAL (bad arguments, a format
 * and filter libarchive refuses); or the error that stopped it (the archive is
 * then incomplete: the caller removes it). Each reported.
 */
EZFS_API int ezfs_export(ezfs_image *img, int fd,
			 const struct ezfs_export_opts *o,
			 struct ezfs_export_result *res);

#ifdef __cplusplus
}
#endif

#endif
