/* SPDX-License-Identifier: MIT */
/*
 * android.h - Android containers: sparse images and super images with
 * dynamic partitions (liblp's metadata).
 *
 * ezfs_image_open reads both without this header: a sparse image (or the
 * first file NAME.0 of a split set NAME.0, NAME.1, ...) is expanded in
 * place, and "SUPER:NAME", when no file has that path and SUPER is a super
 * image (itself raw or sparse), opens the partition NAME. This header lists
 * what a super image holds.
 */
#ifndef EZFS_ANDROID_H
#define EZFS_ANDROID_H

#include "ezfs/ezfs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What an Android sparse image, or a split set of them, holds. */
struct ezfs_sparse_info {
	uint32_t files;	       /* sparse files: 1, or the split set's count */
	uint32_t block_size;   /* bytes per block */
	uint64_t blocks;       /* blocks of the expanded image */
	uint64_t image_bytes;  /* the expanded image: blocks * block_size */
	uint64_t stored_bytes; /* the sparse files' sizes together */
	uint64_t chunks;       /* chunks of every type in every file */
	uint64_t raw_chunks, fill_chunks, dont_care_chunks, crc32_chunks;
	uint64_t raw_blocks, fill_blocks, dont_care_blocks; /* their blocks */
};

/*
 * Read the headers of the Android sparse image at path, or of the split
 * set whose first file path is (NAME.0 takes NAME.1, ... as
 * ezfs_image_open does), into *out (zeroed first). Only the file and
 * chunk headers are read. Returns 0, -EMEDIUMTYPE when path is not a
 * sparse image (a raw image, or SUPER:NAME), or what ezfs_image_open
 * returns for the file (-ENOENT, -EUCLEAN for a broken sparse file...).
 * Thread-safe; nothing to free.
 */
EZFS_API int ezfs_sparse_stat(const char *path, struct ezfs_sparse_info *out);

typedef struct ezfs_lp ezfs_lp;

struct ezfs_lp_params {
	size_t size;	 /* sizeof(struct ezfs_lp_params) */
	ezfs_log_fn log; /* NULL: silent */
	void *log_arg;
	unsigned verbose; /* log level threshold: 0 = errors only */
	unsigned slot;	  /* the metadata slot to read (0 = the first) */
};

/* The defaults (all zero), with size set. */
EZFS_API void ezfs_lp_params_init(struct ezfs_lp_params *p);

/*
 * Read the LP metadata of a super image (a file or block device, raw or
 * sparse); p may be NULL. Checks the geometry and the metadata's SHA-256
 * sums, falling back to the backup copies. Returns 0 or a negative errno:
 * what ezfs_image_open returns for the file, -EMEDIUMTYPE (no LP geometry),
 * -EUCLEAN (corrupt), -EOPNOTSUPP (an unknown major version), -EINVAL (bad
 * params or no such slot).
 */
EZFS_API int ezfs_lp_open(const char *path, const struct ezfs_lp_params *p,
			  ezfs_lp **out);
EZFS_API void ezfs_lp_close(ezfs_lp *lp);

struct ezfs_lp_info {
	uint16_t major, minor;	     /* metadata header version */
	uint32_t header_flags;	     /* 0 before version 10.2 */
	uint32_t metadata_max_size;  /* bytes per metadata copy */
	uint32_t slot_count;	     /* metadata slots */
	uint32_t logical_block_size; /* bytes */
	uint32_t slot;		     /* the slot read */
	uint32_t partitions, extents, groups, block_devices;
	uint64_t image_bytes;  /* the super image, expanded when sparse */
	uint32_t sparse_files; /* 0: a raw image */
};

EZFS_API void ezfs_lp_get_info(const ezfs_lp *lp, struct ezfs_lp_info *info);

#define EZFS_LP_ATTR_READONLY	   0x1
#define EZFS_LP_ATTR_SLOT_SUFFIXED 0x2
#define EZFS_LP_ATTR_UPDATED	   0x4
#define EZFS_LP_ATTR_DISABLED	   0x8

/* Names are at most 36 bytes on disk; here NUL terminated. */
struct ezfs_lp_partition {
	char name[37];
	char group[37]; /* its group's name */
	uint32_t attributes;
	uint32_t group_index;
	uint32_t first_extent; /* index for ezfs_lp_extent */
	uint32_t num_extents;
	uint64_t size; /* bytes: its extents' sectors * 512 */
};

enum ezfs_lp_extent_type {
	EZFS_LP_EXTENT_LINEAR = 0, /* sectors of a block device */
	EZFS_LP_EXTENT_ZERO = 1,   /* reads as zeros */
};

struct ezfs_lp_extent {
	uint64_t sectors; /* 512-byte sectors */
	uint32_t type;	  /* enum ezfs_lp_extent_type, or unknown */
	uint32_t source;  /* block device index (LINEAR) */
	uint64_t target;  /* first sector on that device (LINEAR) */
};

struct ezfs_lp_group {
	char name[37];
	uint32_t flags;	       /* 1: slot suffixed */
	uint64_t maximum_size; /* bytes, 0 = no limit */
};

struct ezfs_lp_block_device {
	char name[37];	/* the partition holding it, e.g. "super" */
	uint32_t flags; /* 1: slot suffixed */
	uint32_t alignment, alignment_offset;
	uint64_t first_logical_sector;
	uint64_t size; /* bytes */
};

/* Entry i of each table; -ERANGE past the end. */
EZFS_API int ezfs_lp_partition(const ezfs_lp *lp, uint32_t i,
			       struct ezfs_lp_partition *out);
EZFS_API int ezfs_lp_extent(const ezfs_lp *lp, uint32_t i,
			    struct ezfs_lp_extent *out);
EZFS_API int ezfs_lp_group(const ezfs_lp *lp, uint32_t i,
			   struct ezfs_lp_group *out);
EZFS_API int ezfs_lp_block_device(const ezfs_lp *lp, uint32_t i,
				  struct ezfs_lp_block_device *out);

#ifdef __cplusplus
}
#endif

#endif
