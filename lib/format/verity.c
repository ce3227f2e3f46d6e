/* SPDX-License-Identifier: MIT */
/*
 * verity.c - dm-verity's superblock and tree shape (veritysetup's format
 * 1), the salted block hash, and fs-verity's file digest.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "format/erofs_fs.h"
#include "format/verity.h"

#define SB_MAGIC "verity\0\0"

/* Byte offsets in veritysetup's superblock (all little endian). */
enum {
	SB_VERSION = 8,
	SB_HASH_TYPE = 12,
	SB_UUID = 16,
	SB_ALG = 32,
	SB_DBS = 64,
	SB_HBS = 68,
	SB_DATA_BLOCKS = 72,
	SB_SALT_SIZE = 80,
	SB_SALT = 88,
};

static int good_block_size(uint32_t v)
{
	return v >= EZI_VERITY_MIN_BLOCK && v <= EZI_VERITY_MAX_BLOCK &&
	       !(v & (v - 1));
}

int ezi_verity_sb_decode(const uint8_t raw[EZI_VERITY_SB_SIZE],
			 struct ezi_verity_sb *sb, char *why, size_t whysize)
{
	uint32_t v;

	memset(sb, 0, sizeof(*sb));
	if (memcmp(raw, SB_MAGIC, 8))
		return -ENODATA;
	v = get_le32(raw + SB_VERSION);
	if (v != 1) {
		snprintf(why, whysize,
			 "superblock version %u (only 1 is known)", v);
		return -EOPNOTSUPP;
	}
	v = get_le32(raw + SB_HASH_TYPE);
	if (v != 1) {
		snprintf(why, whysize,
			 "hash type %u (only 1, the salt first, is checked)",
			 v);
		return -EOPNOTSUPP;
	}
	memcpy(sb->uuid, raw + SB_UUID, 16);
	memcpy(sb->algorithm, raw + SB_ALG, 32);
	sb->algorithm[32] = '\0';
	sb->data_block_size = get_le32(raw + SB_DBS);
	sb->hash_block_size = get_le32(raw + SB_HBS);
	if (!good_block_size(sb->data_block_size) ||
	    !good_block_size(sb->hash_block_size)) {
		snprintf(why, whysize,
			 "block sizes %u and %u (powers of two in 512..4096 "
			 "are checked)",
			 sb->data_block_size, sb->hash_block_size);
		return -EOPNOTSUPP;
	}
	sb->data_blocks = get_le64(raw + SB_DATA_BLOCKS);
	if (!sb->data_blocks) {
		snprintf(why, whysize, "no data blocks");
		return -EUCLEAN;
	}
	sb->salt_size = get_le16(raw + SB_SALT_SIZE);
	if (sb->salt_size > EZI_VERITY_MAX_SALT) {
		snprintf(why, whysize, "a salt of %u bytes (at most %u)",
			 sb->salt_size, EZI_VERITY_MAX_SALT);
		return -EUCLEAN;
	}
	memcpy(sb->salt, raw + SB_SALT, sb->salt_size);
	return 0;
}

void ezi_verity_sb_encode(const struct ezi_verity_sb *sb,
			  uint8_t raw[EZI_VERITY_SB_SIZE])
{
	memset(raw, 0, EZI_VERITY_SB_SIZE);
	memcpy(raw, SB_MAGIC, 8);
	put_le32(raw + SB_VERSION, 1);
	put_le32(raw + SB_HASH_TYPE, 1);
	memcpy(raw + SB_UUID, sb->uuid, 16);
	memcpy(raw + SB_ALG, sb->algorithm, strnlen(sb->algorithm, 32));
	put_le32(raw + SB_DBS, sb->data_block_size);
	put_le32(raw + SB_HBS, sb->hash_block_size);
	put_le64(raw + SB_DATA_BLOCKS, sb->data_blocks);
	put_le16(raw + SB_SALT_SIZE, sb->salt_size);
	memcpy(raw + SB_SALT, sb->salt, sb->salt_size);
}

static unsigned log2_of(uint32_t v)
{
	unsigned b = 0;

	while ((1u << b) < v)
		b++;
	return b;
}

int ezi_verity_geo_init(struct ezi_verity_geo *g, uint32_t dbs, uint32_t hbs,
			unsigned dsize, uint64_t data_blocks)
{
	uint64_t pos = 0;
	unsigned i, per;

	memset(g, 0, sizeof(*g));
	if (!good_block_size(dbs) || !good_block_size(hbs) || !dsize ||
	    dsize > EZI_VERITY_MAX_DIGEST || !data_blocks)
		return -EINVAL;
	g->dbs = dbs;
	g->hbs = hbs;
	g->dbits = log2_of(dbs);
	g->dsize = dsize;
	g->stride = 1u << log2_of(dsize);
	if (g->stride > hbs)
		return -EINVAL;
	per = hbs / g->stride;
	g->pbits = log2_of(per);
	if (!g->pbits)
		return -EINVAL; /* one digest per block never reaches a root */
	g->data_blocks = data_blocks;
	/* levels until one block holds every hash of the level below */
	while (g->pbits * g->levels < 64 &&
	       (data_blocks - 1) >> (g->pbits * g->levels))
		g->levels++;
	if (g->levels > EZI_VERITY_MAX_LEVELS)
		return -EINVAL;
	for (i = 0; i < g->levels; i++) {
		unsigned sh = g->pbits * (i + 1);

		g->count[i] =
			sh >= 64 ? 1
				 : (data_blocks >> sh) +
					   !!(data_blocks & ((1ull << sh) - 1));
	}
	/* the top level first */
	for (i = g->levels; i-- > 0;) {
		g->start[i] = pos;
		pos += g->count[i];
	}
	g->tree_blocks = pos;
	return 0;
}

const struct ezi_md *ezi_verity_md(const char *name, unsigned *dsize)
{
	EVP_MD *md = EVP_MD_fetch(NULL, name, NULL);
	int n;

	if (!md)
		return NULL;
	n = EVP_MD_get_size(md);
	if (n <= 0 || n > EZI_VERITY_MAX_DIGEST) {
		EVP_MD_free(md);
		return NULL;
	}
	*dsize = (unsigned)n;
	return (const struct ezi_md *)md;
}

void ezi_verity_md_free(const struct ezi_md *md)
{
	EVP_MD_free((EVP_MD *)md);
}

/* One digest context per thread, kept for the thread's life: making one
 * per block cost as much as a tenth of hashing the block. */
static pthread_key_t ctx_key;
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;
static int ctx_key_ok;

static void ctx_free(void *c)
{
	EVP_MD_CTX_free(c);
}

static void ctx_key_init(void)
{
	ctx_key_ok = !pthread_key_create(&ctx_key, ctx_free);
}

static EVP_MD_CTX *thread_ctx(int *own)
{
	EVP_MD_CTX *c;

	*own = 0;
	pthread_once(&ctx_once, ctx_key_init);
	c = ctx_key_ok ? pthread_getspecific(ctx_key) : NULL;
	if (c)
		return c;
	c = EVP_MD_CTX_new();
	if (c && (!ctx_key_ok || pthread_setspecific(ctx_key, c)))
		*own = 1;
	return c;
}

int ezi_verity_hash(const struct ezi_md *md, const uint8_t *salt,
		    size_t salt_size, const void *data, size_t len,
		    uint8_t *out)
{
	int own, ok;
	EVP_MD_CTX *c = thread_ctx(&own);

	if (!c)
		return -ENOMEM;
	ok = EVP_DigestInit_ex2(c, (const EVP_MD *)md, NULL) &&
	     (!salt_size || EVP_DigestUpdate(c, salt, salt_size)) &&
	     EVP_DigestUpdate(c, data, len) && EVP_DigestFinal_ex(c, out, NULL);
	if (own)
		EVP_MD_CTX_free(c);
	return ok ? 0 : -EIO;
}

/* ---- fs-verity ---- */

static int sha256(const void *data, size_t len, uint8_t out[32])
{
	return EVP_Digest(data, len, out, NULL, EVP_sha256(), NULL) ? 0 : -EIO;
}

void ezi_fsv_init(struct ezi_fsv *f)
{
	f->size = 0;
	f->fill = 0;
	memset(f->lfill, 0, sizeof(f->lfill));
	memset(f->lcount, 0, sizeof(f->lcount));
}

/* One more hash at level l; a full hash block goes up as one hash. */
static int fsv_push(struct ezi_fsv *f, unsigned l, const uint8_t h[32])
{
	uint8_t up[32];
	int err;

	if (l >= EZI_FSV_MAX_LEVELS)
		return -EFBIG;
	memcpy(f->lvl[l] + f->lfill[l], h, 32);
	f->lfill[l] += 32;
	f->lcount[l]++;
	if (f->lfill[l] < EZI_FSV_BLOCK)
		return 0;
	f->lfill[l] = 0;
	err = sha256(f->lvl[l], EZI_FSV_BLOCK, up);
	return err ? err : fsv_push(f, l + 1, up);
}

int ezi_fsv_update(struct ezi_fsv *f, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint8_t h[32];
	int err;

	while (len) {
		size_t n = EZI_FSV_BLOCK - f->fill;

		if (n > len)
			n = len;
		memcpy(f->data + f->fill, p, n);
		f->fill += n;
		f->size += n;
		p += n;
		len -= n;
		if (f->fill < EZI_FSV_BLOCK)
			continue;
		f->fill = 0;
		err = sha256(f->data, EZI_FSV_BLOCK, h);
		if (!err)
			err = fsv_push(f, 0, h);
		if (err)
			return err;
	}
	return 0;
}

int ezi_fsv_final(struct ezi_fsv *f, uint8_t digest[32])
{
	uint8_t desc[256], h[32];
	unsigned l;
	int err = 0;

	memset(desc, 0, sizeof(desc));
	desc[0] = 1;  /* version */
	desc[1] = 1;  /* FS_VERITY_HASH_ALG_SHA256 */
	desc[2] = 12; /* log2 of the block size */
	put_le64(desc + 8, f->size);
	/* the root: all zeros for an empty file, else the hash of the one
	 * block left at the top (the data block itself for a small file) */
	if (f->fill) {
		memset(f->data + f->fill, 0, EZI_FSV_BLOCK - f->fill);
		err = sha256(f->data, EZI_FSV_BLOCK, h);
		if (!err)
			err = fsv_push(f, 0, h);
		f->fill = 0;
	}
	for (l = 0; !err && f->size && l < EZI_FSV_MAX_LEVELS; l++) {
		if (f->lcount[l] == 1) {
			memcpy(desc + 16, f->lvl[l], 32);
			break;
		}
		if (!f->lfill[l])
			continue;
		memset(f->lvl[l] + f->lfill[l], 0, EZI_FSV_BLOCK - f->lfill[l]);
		err = sha256(f->lvl[l], EZI_FSV_BLOCK, h);
		f->lfill[l] = 0;
		if (!err)
			err = fsv_push(f, l + 1, h);
	}
	return err ? err : sha256(desc, sizeof(desc), digest);
}
