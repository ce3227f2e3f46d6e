/* SPDX-License-Identifier: MIT */
/*
 * verity.h - integrity of images and files (docs/verity.md).
 *
 *  - dm-verity hash trees in veritysetup's format 1 (its 512-byte
 *    superblock, the salt hashed first): an image opened with
 *    ezfs_open_params.verity set checks every block it reads against the
 *    tree, once per block (a bad one: -EIO for that read and one log line
 *    naming dm-verity, the block and its bytes); ezfs mkfs --verity
 *    (include/ezfs/build.h) writes such trees.
 *  - The tree on its own (ezfs_verity_load, ezfs_verity_check): for a
 *    reader that checks blocks itself, such as a remote source that checks
 *    each fetched block before it caches it.
 *  - fs-verity file digests (ezfs_file_digest), as `fsverity digest`
 *    prints them: what composefs keeps in its digest store.
 *
 * A root hash is a trust anchor only when it comes from outside the image:
 * given by the user (EZFS_VERITY_TRUST_GIVEN) or signed by a certificate
 * the user trusts (EZFS_VERITY_TRUST_SIGNED). Without either, the root is
 * the one computed from the tree (EZFS_VERITY_TRUST_NONE): that finds
 * damage, never a forger who rewrote the tree too.
 */
#ifndef EZFS_VERITY_H
#define EZFS_VERITY_H

#include "ezfs/ezfs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ezfs_open_params.verity */
enum ezfs_verity_mode {
	EZFS_VERITY_OFF = 0,	 /* the default: no tree looked for */
	EZFS_VERITY_AUTO = 1,	 /* a tree found is used, none is fine */
	EZFS_VERITY_REQUIRE = 2, /* no tree: -ENODATA at open */
};

/* Where a root hash came from. */
enum ezfs_verity_trust {
	EZFS_VERITY_TRUST_NONE = 0,   /* computed from the tree itself */
	EZFS_VERITY_TRUST_GIVEN = 1,  /* given by the caller */
	EZFS_VERITY_TRUST_SIGNED = 2, /* its signature checked against a
				       * trusted certificate */
};

/* A tree as found (this struct does not grow: a new function would). */
struct ezfs_verity_info {
	uint64_t hash_offset; /* its superblock's byte: in the image (from the
			       * open offset on) or in the hash file */
	int separate;	      /* 1: in a file of its own */
	uint64_t data_blocks; /* blocks it covers, from byte 0 of the image */
	uint32_t data_block_size, hash_block_size;
	uint64_t tree_blocks; /* hash blocks after the superblock's block */
	unsigned levels;
	char algorithm[33]; /* "sha256" */
	uint8_t uuid[16];
	uint8_t salt[256];
	unsigned salt_size;
	uint8_t root[64]; /* the root hash, root_size bytes */
	unsigned root_size;
	int trust;	   /* enum ezfs_verity_trust */
	char signer[256];  /* EZFS_VERITY_TRUST_SIGNED: the certificate's
			    * subject, one line; else "" */
	uint64_t bad_tree; /* hash blocks that do not match the level above */
};

/* ------------------------------------------------------------------ */
/* A tree on its own                                                   */

typedef struct ezfs_verity ezfs_verity;

struct ezfs_verity_params {
	size_t size;	 /* sizeof(struct ezfs_verity_params) */
	ezfs_log_fn log; /* NULL: silent */
	void *log_arg;
	const char *name; /* what the tree is read from, for messages */
	/* The root the tree must have (root_size bytes: the algorithm's
	 * digest size); NULL: the one computed from the tree. */
	const uint8_t *root;
	size_t root_size;
	/* A detached PKCS#7 signature (DER or PEM) of the root as lowercase
	 * hex, as systemd's .roothash.p7s and veritysetup
	 * --root-hash-signature use, checked against the certificates of the
	 * PEM file trusted_cert (both needed; NULL: none). */
	const char *root_sig_file;
	const char *trusted_cert;
	/* The tree must cover at least min_data_bytes of data (the
	 * filesystem's size) and at most max_data_bytes (the image's size);
	 * 0: no bound. */
	uint64_t min_data_bytes;
	uint64_t max_data_bytes;
};

/* The defaults (all zero), with size set. */
EZFS_API void ezfs_verity_params_init(struct ezfs_verity_params *p);

/*
 * Load the tree whose superblock is at byte hash_offset of what ops read
 * (only ops->pread is called, only during the call; ops are not kept or
 * closed): every level is read and each hash block checked against the
 * level above, the top one against the root; a hash block that does not
 * match is remembered (the data blocks below it then fail their check),
 * the root is not: a root that is not p->root, or whose signature does
 * not verify, fails the load. *out is NULL on failure. Returns 0,
 * -ENODATA (no "verity" superblock there), -EUCLEAN (a bad superblock, a
 * tree cut short or smaller than min_data_bytes), -EOPNOTSUPP (another
 * format, hash type or algorithm), -EBADMSG (not the root given),
 * -EKEYREJECTED (a signature that does not verify), -EINVAL (bad params,
 * a root of the wrong size, a signature without a certificate), the
 * errors of ops->pread and of reading the signature files, -ENOMEM. The
 * reason goes to p->log, naming dm-verity.
 */
EZFS_API int ezfs_verity_load(const struct ezfs_io_ops *ops, void *arg,
			      uint64_t hash_offset,
			      const struct ezfs_verity_params *p,
			      ezfs_verity **out);
/*
 * Check data block `block` (its data_block_size bytes at data) against the
 * tree and record it as verified. Returns 0, -EBADMSG (its hash, or the
 * hash block holding it, does not match), -ERANGE (no such block), -EIO or
 * -ENOMEM (libcrypto failed). Logs nothing. Thread-safe.
 */
EZFS_API int ezfs_verity_check(ezfs_verity *v, uint64_t block,
			       const void *data);
/* 1 if block has passed ezfs_verity_check, else 0. Thread-safe. */
EZFS_API int ezfs_verity_verified(const ezfs_verity *v, uint64_t block);
/*
 * Record data block `block` as verified without hashing it: for a caller
 * that keeps its own record of blocks it checked against this same tree
 * earlier, in storage only it can change (the persistent cache of
 * include/ezfs/remote.h; docs/verity.md says what that trusts). Reads of
 * the block through the image are then served unhashed. 0, or -ERANGE
 * (no such block). Thread-safe.
 */
EZFS_API int ezfs_verity_mark_verified(ezfs_verity *v, uint64_t block);
/* The tree's description; cannot fail. */
EZFS_API void ezfs_verity_get_info(const ezfs_verity *v,
				   struct ezfs_verity_info *vi);
/* Free v (NULL is fine); no call on it may be in flight. */
EZFS_API void ezfs_verity_free(ezfs_verity *v);

/* Hex digits (an even number of them, at most max bytes) into out, *n
 * bytes: 0 or -EINVAL. */
EZFS_API int ezfs_verity_parse_hex(const char *s, uint8_t *out, size_t max,
				   size_t *n);
/* A root hash file as veritysetup --root-hash-file writes it (hex digits;
 * white space around them is fine) into out (at most 64 bytes), *n
 * bytes: 0, -EINVAL (not that), or the errno of reading it. */
EZFS_API int ezfs_verity_read_root(const char *path, uint8_t out[64],
				   size_t *n);

/* ------------------------------------------------------------------ */
/* The tree of an open image                                           */

/* The tree the image was opened with into *vi: 0, or -ENODATA (none). */
EZFS_API int ezfs_image_verity(const ezfs_image *img,
			       struct ezfs_verity_info *vi);

/*
 * Check every data block the tree covers, and report every hash block
 * and data block that does not match: bad(arg, msg) once for each, msg a
 * line naming dm-verity, the block and its bytes (data blocks below a
 * hash block already reported are not reported again), called one at a
 * time from any of `threads` threads (0: 1). progress(arg, bytes) (may be
 * NULL) now and then with the bytes checked. Blocks already verified are
 * not hashed again; later reads of a bad block fail without a log line.
 * Returns the number of problems (0: all match), -ENODATA (no tree),
 * -EIO (a read failed: reported through bad too) or -ENOMEM.
 */
EZFS_API int64_t ezfs_image_verity_scan(ezfs_image *img, unsigned threads,
					void (*bad)(void *arg, const char *msg),
					void (*progress)(void *arg,
							 uint64_t bytes),
					void *arg);

/* ------------------------------------------------------------------ */
/* File digests                                                        */

enum ezfs_digest_kind {
	EZFS_DIGEST_FSVERITY = 0, /* fs-verity: 4096-byte blocks, SHA-256,
				   * no salt (`fsverity digest`) */
	EZFS_DIGEST_SHA256 = 1,	  /* SHA-256 of the bytes (sha256sum) */
};

/*
 * The digest of a regular file's contents (kind: enum ezfs_digest_kind)
 * into out (32 bytes). Returns 0, -EINVAL (not a regular file, or an
 * unknown kind), read errors (-EIO where a block fails its dm-verity
 * check), -ENOMEM. Thread-safe.
 */
EZFS_API int ezfs_file_digest(ezfs_inode *ino, int kind, uint8_t out[32]);

#ifdef __cplusplus
}
#endif
#endif
