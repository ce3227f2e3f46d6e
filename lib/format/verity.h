/* SPDX-License-Identifier: MIT */
/*
 * verity.h - the on-disk side of integrity: dm-verity hash trees as
 * veritysetup writes them (format 1: its 512-byte superblock, then the
 * levels of the tree, the top one first) and fs-verity file digests (the
 * Merkle tree of a file's bytes, as `fsverity digest` prints it). Hashes
 * come from OpenSSL's libcrypto.
 */
#ifndef EZFS_FORMAT_VERITY_H
#define EZFS_FORMAT_VERITY_H

#include <stddef.h>
#include <stdint.h>

#define EZI_VERITY_SB_SIZE    512
#define EZI_VERITY_MAX_LEVELS 63
#define EZI_VERITY_MAX_SALT   256
#define EZI_VERITY_MAX_DIGEST 64
#define EZI_VERITY_MIN_BLOCK  512
#define EZI_VERITY_MAX_BLOCK  4096 /* the kernel: at most a page */

/* The superblock's fields (hash type 1 only: the salt comes first). */
struct ezi_verity_sb {
	uint8_t uuid[16];
	char algorithm[33]; /* NUL terminated, e.g. "sha256" */
	uint32_t data_block_size, hash_block_size;
	uint64_t data_blocks;
	uint16_t salt_size;
	uint8_t salt[EZI_VERITY_MAX_SALT];
};

/*
 * Decode the 512 bytes at a tree's start. Returns 0, -ENODATA when they do
 * not start with "verity\0\0" (no tree), else a reason in why (one phrase)
 * and -EUCLEAN (a field out of range) or -EOPNOTSUPP (a version, hash type
 * or algorithm this code does not check).
 */
int ezi_verity_sb_decode(const uint8_t raw[EZI_VERITY_SB_SIZE],
			 struct ezi_verity_sb *sb, char *why, size_t whysize);
/* Encode sb as veritysetup writes it: version 1, hash type 1. */
void ezi_verity_sb_encode(const struct ezi_verity_sb *sb,
			  uint8_t raw[EZI_VERITY_SB_SIZE]);

/* The shape of a tree: which hash blocks hold what. */
struct ezi_verity_geo {
	uint32_t dbs, hbs;    /* data and hash block sizes */
	unsigned dbits;	      /* log2(dbs) */
	unsigned dsize;	      /* digest bytes */
	unsigned stride;      /* bytes per digest in a hash block: dsize
			       * rounded up to a power of two */
	unsigned pbits;	      /* log2 of the digests per hash block */
	uint64_t data_blocks; /* at least 1 */
	unsigned levels;      /* 0: one data block, its hash is the root */
	/* level i (0: the hashes of data blocks): its first block, counted
	 * from the tree's first block (the top level is stored first), and
	 * its block count */
	uint64_t start[EZI_VERITY_MAX_LEVELS];
	uint64_t count[EZI_VERITY_MAX_LEVELS];
	uint64_t tree_blocks; /* all levels */
};

/* Fill g; -EINVAL for sizes that are no power of two in 512..4096, a
 * digest larger than a hash block, no data block, or a tree too large. */
int ezi_verity_geo_init(struct ezi_verity_geo *g, uint32_t dbs, uint32_t hbs,
			unsigned dsize, uint64_t data_blocks);
/* Where the tree's first block is, for a superblock at byte sb_off. */
static inline uint64_t ezi_verity_tree_start(const struct ezi_verity_geo *g,
					     uint64_t sb_off)
{
	return (sb_off + EZI_VERITY_SB_SIZE + g->hbs - 1) / g->hbs * g->hbs;
}

/*
 * A hash of the tree's algorithm (an EVP_MD of libcrypto, fetched once).
 * ezi_verity_md: by name ("sha256"); NULL if libcrypto has none. Its
 * digest size into *dsize; free it with ezi_verity_md_free.
 */
struct ezi_md;
const struct ezi_md *ezi_verity_md(const char *name, unsigned *dsize);
void ezi_verity_md_free(const struct ezi_md *md);
/*
 * out = H(salt || data). Thread-safe; 0, or -ENOMEM / -EIO when
 * libcrypto fails.
 */
int ezi_verity_hash(const struct ezi_md *md, const uint8_t *salt,
		    size_t salt_size, const void *data, size_t len,
		    uint8_t *out);

/*
 * fs-verity's file digest (4096-byte blocks, SHA-256, no salt), fed the
 * file's bytes in order: a Merkle tree built as the bytes come, one block
 * per level held.
 */
#define EZI_FSV_BLOCK	   4096
#define EZI_FSV_MAX_LEVELS 8
struct ezi_fsv {
	uint64_t size; /* bytes fed */
	size_t fill;   /* bytes of the data block being filled */
	uint8_t data[EZI_FSV_BLOCK];
	/* level i: the hashes of level i - 1's blocks (level 0: of data
	 * blocks) being gathered into one hash block */
	uint8_t lvl[EZI_FSV_MAX_LEVELS][EZI_FSV_BLOCK];
	size_t lfill[EZI_FSV_MAX_LEVELS];
	uint64_t lcount[EZI_FSV_MAX_LEVELS]; /* hashes ever put there */
};
void ezi_fsv_init(struct ezi_fsv *f);
/* 0, or -EIO / -ENOMEM when libcrypto fails. */
int ezi_fsv_update(struct ezi_fsv *f, const void *buf, size_t len);
/* The digest as fsverity prints it after "sha256:". */
int ezi_fsv_final(struct ezi_fsv *f, uint8_t digest[32]);

#endif
