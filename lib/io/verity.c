/* SPDX-License-Identifier: MIT */
/*
 * verity.c - dm-verity trees read and checked: a tree loaded from any
 * reader (its levels checked against each other and the root, a root
 * given or signed checked), data blocks checked against it with a record
 * of those verified (so no block is hashed twice), the check of every read
 * of an io that holds a tree, and the scan of a whole image (fsck).
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/pkcs7.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "format/verity.h"
#include "io/verity.h"
#include "util/pool.h"

#ifndef EUCLEAN
#define EUCLEAN 117
#endif
#ifndef EKEYREJECTED
#define EKEYREJECTED 129
#endif

/* hstate: how each hash block of the tree stands */
#define AHEAD_STREAMS 4 /* readers in order followed at once */
enum { HB_GOOD = 0, HB_BAD = 1, HB_BELOW_BAD = 2 };

struct ezfs_verity {
	struct ezi_verity_geo g;
	struct ezi_verity_sb sb;
	const struct ezi_md *md;
	struct ezfs_logger lg;
	char *name;	      /* the hash file, for messages; NULL: the image */
	int separate;	      /* the tree is in a file of its own */
	uint64_t hash_offset; /* the superblock's byte */
	uint64_t tree_off;    /* the tree's first block's byte */
	uint8_t *tree;	      /* every level, as stored */
	uint8_t *hstate;      /* per tree block: HB_* */
	uint64_t bad_tree;    /* blocks HB_BAD */
	uint8_t root[EZI_VERITY_MAX_DIGEST];
	int root_known; /* 0 only for a one-block tree not yet checked */
	pthread_mutex_t mu;
	int trust; /* enum ezfs_verity_trust */
	char signer[256];
	uint64_t *ok;	/* data blocks verified (atomic bits) */
	uint64_t *told; /* data blocks whose failure was told (atomic) */
	/* checking ahead of readers in order of a local image, on a thread
	 * of its own (ahead_*): all atomic, a semaphore to wake it (no lock
	 * a fork could leave held) */
	struct {
		const struct ezfs_io *io;
		pthread_t t;
		pid_t pid; /* the process it runs in; 0: none */
		sem_t wake;
		int stop;
		uint64_t clock; /* reads seen */
		/* streams of reads in order: where the last one ended, when
		 * (clock), and the blocks still to check ahead of it */
		struct {
			uint64_t last, used, from, to;
		} st[AHEAD_STREAMS];
	} ah;
};

void ezfs_verity_params_init(struct ezfs_verity_params *p)
{
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
}

static void hexify(const uint8_t *b, size_t n, char *out)
{
	static const char x[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = x[b[i] >> 4];
		out[2 * i + 1] = x[b[i] & 15];
	}
	out[2 * n] = '\0';
}

static int bit_test(const uint64_t *m, uint64_t b)
{
	return (__atomic_load_n(&m[b >> 6], __ATOMIC_ACQUIRE) >> (b & 63)) & 1;
}

/* Set bit b; was it set before? */
static int bit_set(uint64_t *m, uint64_t b)
{
	uint64_t bit = 1ull << (b & 63);

	return (__atomic_fetch_or(&m[b >> 6], bit, __ATOMIC_ACQ_REL) & bit) !=
	       0;
}

static const char *src_name(const struct ezfs_verity *v)
{
	return v->name ? v->name : "the image";
}

/* ---- signatures ---- */

/* The last libcrypto error as one phrase. */
static const char *crypto_why(char *buf, size_t size)
{
	unsigned long e = ERR_peek_last_error();

	if (!e)
		return "no reason given";
	ERR_error_string_n(e, buf, size);
	return buf;
}

static PKCS7 *read_sig(const char *path)
{
	BIO *in = BIO_new_file(path, "rb");
	PKCS7 *p7;

	if (!in)
		return NULL;
	p7 = d2i_PKCS7_bio(in, NULL);
	if (!p7 && BIO_reset(in) == 0)
		p7 = PEM_read_bio_PKCS7(in, NULL, NULL, NULL);
	BIO_free(in);
	return p7;
}

/* The root as hex must carry a signature in sig_file that chains to a
 * certificate of cert_file (PEM, one or more). */
static int check_signature(struct ezfs_verity *v, const char *sig_file,
			   const char *cert_file)
{
	X509_STORE *store = X509_STORE_new();
	STACK_OF(X509) *certs = sk_X509_new_null(), *signers = NULL;
	char hex[2 * EZI_VERITY_MAX_DIGEST + 1], why[256];
	BIO *cb = NULL, *data = NULL;
	PKCS7 *p7 = NULL;
	X509 *x;
	int err = -ENOMEM;

	ERR_clear_error();
	if (!store || !certs)
		goto out;
	hexify(v->root, v->g.dsize, hex);
	p7 = read_sig(sig_file);
	if (!p7) {
		ezi_logf(&v->lg, EZFS_LOG_ERROR,
			 "dm-verity: %s: not a PKCS#7 signature (DER or "
			 "PEM): %s",
			 sig_file, crypto_why(why, sizeof(why)));
		err = -EINVAL;
		goto out;
	}
	cb = BIO_new_file(cert_file, "r");
	while (cb && (x = PEM_read_bio_X509(cb, NULL, NULL, NULL))) {
		if (!sk_X509_push(certs, x)) {
			X509_free(x);
			goto out;
		}
		X509_STORE_add_cert(store, x);
	}
	if (!sk_X509_num(certs)) {
		ezi_logf(&v->lg, EZFS_LOG_ERROR,
			 "dm-verity: %s: no PEM certificate in it", cert_file);
		err = -EINVAL;
		goto out;
	}
	ERR_clear_error();
	X509_STORE_set_purpose(store, X509_PURPOSE_ANY);
	data = BIO_new_mem_buf(hex, (int)strlen(hex));
	if (!data)
		goto out;
	if (PKCS7_verify(p7, certs, store, data, NULL, PKCS7_BINARY) != 1) {
		ezi_logf(&v->lg, EZFS_LOG_ERROR,
			 "dm-verity: the signature %s of root hash %s does not "
			 "verify against %s: %s",
			 sig_file, hex, cert_file,
			 crypto_why(why, sizeof(why)));
		err = -EKEYREJECTED;
		goto out;
	}
	signers = PKCS7_get0_signers(p7, certs, 0);
	if (signers && sk_X509_num(signers))
		X509_NAME_oneline(
			X509_get_subject_name(sk_X509_value(signers, 0)),
			v->signer, sizeof(v->signer));
	v->trust = EZFS_VERITY_TRUST_SIGNED;
	err = 0;
out:
	sk_X509_free(signers);
	BIO_free(data);
	BIO_free(cb);
	PKCS7_free(p7);
	sk_X509_pop_free(certs, X509_free);
	X509_STORE_free(store);
	ERR_clear_error();
	return err;
}

/* ---- loading ---- */

static int read_at(const struct ezfs_io_ops *ops, void *arg, void *buf,
		   size_t len, uint64_t off)
{
	ssize_t n = ops->pread(arg, buf, len, off);

	if (n < 0)
		return (int)n;
	return (size_t)n == len ? 0 : -ENODATA;
}

/* Check each level against the one above, the top one giving the root. */
static int check_levels(struct ezfs_verity *v)
{
	const struct ezi_verity_geo *g = &v->g;
	uint8_t h[EZI_VERITY_MAX_DIGEST];
	uint64_t mask = (1ull << g->pbits) - 1, k;
	unsigned i;
	int err;

	if (!g->levels)
		return 0;
	err = ezi_verity_hash(v->md, v->sb.salt, v->sb.salt_size,
			      v->tree + g->start[g->levels - 1] * g->hbs,
			      g->hbs, v->root);
	if (err)
		return err;
	v->root_known = 1;
	for (i = g->levels - 1; i-- > 0;) {
		for (k = 0; k < g->count[i]; k++) {
			uint64_t blk = g->start[i] + k;
			uint64_t up = g->start[i + 1] + (k >> g->pbits);
			const uint8_t *want =
				v->tree + up * g->hbs + (k & mask) * g->stride;

			if (v->hstate[up] != HB_GOOD) {
				v->hstate[blk] = HB_BELOW_BAD;
				continue;
			}
			err = ezi_verity_hash(
				v->md, v->sb.salt, v->sb.salt_size,
				v->tree + blk * g->hbs, g->hbs, h);
			if (err)
				return err;
			if (memcmp(h, want, g->dsize)) {
				v->hstate[blk] = HB_BAD;
				v->bad_tree++;
			}
		}
	}
	return 0;
}

static int load_tree(struct ezfs_verity *v, const struct ezfs_io_ops *ops,
		     void *arg)
{
	const struct ezi_verity_geo *g = &v->g;
	uint64_t bytes = g->tree_blocks * g->hbs, done, words;
	int err;

	if (g->tree_blocks > SIZE_MAX / g->hbs)
		return -ENOMEM;
	v->tree = malloc(bytes ? (size_t)bytes : 1);
	v->hstate = calloc(g->tree_blocks ? (size_t)g->tree_blocks : 1, 1);
	words = (g->data_blocks + 63) / 64;
	v->ok = calloc((size_t)words, sizeof(uint64_t));
	v->told = calloc((size_t)words, sizeof(uint64_t));
	if (!v->tree || !v->hstate || !v->ok || !v->told)
		return -ENOMEM;
	for (done = 0; done < bytes;) {
		size_t n = bytes - done < (1u << 20) ? (size_t)(bytes - done)
						     : (1u << 20);

		err = read_at(ops, arg, v->tree + done, n, v->tree_off + done);
		if (err) {
			ezi_logf(&v->lg, EZFS_LOG_ERROR,
				 "dm-verity: the tree in %s (bytes %llu-%llu) "
				 "%s",
				 src_name(v), (unsigned long long)v->tree_off,
				 (unsigned long long)(v->tree_off + bytes - 1),
				 err == -ENODATA ? "is cut short"
						 : "cannot be read");
			return err == -ENODATA ? -EUCLEAN : err;
		}
		done += n;
	}
	return check_levels(v);
}

/* Superblock, algorithm, shape, and what the caller asked of them. */
static int load_sb(struct ezfs_verity *v, const struct ezfs_io_ops *ops,
		   void *arg, const struct ezfs_verity_params *p)
{
	uint8_t raw[EZI_VERITY_SB_SIZE];
	unsigned dsize = 0;
	char why[160];
	int err;

	err = read_at(ops, arg, raw, sizeof(raw), v->hash_offset);
	if (err)
		return err; /* -ENODATA: nothing there */
	err = ezi_verity_sb_decode(raw, &v->sb, why, sizeof(why));
	if (err == -ENODATA)
		return err;
	if (!err) {
		v->md = ezi_verity_md(v->sb.algorithm, &dsize);
		if (!v->md) {
			snprintf(why, sizeof(why),
				 "hash algorithm '%.32s' unknown to libcrypto",
				 v->sb.algorithm);
			err = -EOPNOTSUPP;
		}
	}
	if (!err && ezi_verity_geo_init(&v->g, v->sb.data_block_size,
					v->sb.hash_block_size, dsize,
					v->sb.data_blocks)) {
		snprintf(why, sizeof(why), "a tree of %llu data blocks",
			 (unsigned long long)v->sb.data_blocks);
		err = -EUCLEAN;
	}
	if (!err && v->g.data_blocks << v->g.dbits < p->min_data_bytes) {
		snprintf(why, sizeof(why),
			 "it covers %llu bytes of data, the filesystem has "
			 "%llu",
			 (unsigned long long)(v->g.data_blocks << v->g.dbits),
			 (unsigned long long)p->min_data_bytes);
		err = -EUCLEAN;
	}
	if (!err && p->max_data_bytes &&
	    (v->g.data_blocks > p->max_data_bytes >> v->g.dbits)) {
		snprintf(why, sizeof(why),
			 "it covers %llu data blocks of %u bytes, more than "
			 "the %llu bytes there are",
			 (unsigned long long)v->g.data_blocks, v->g.dbs,
			 (unsigned long long)p->max_data_bytes);
		err = -EUCLEAN;
	}
	if (!err && p->root && p->root_size != dsize) {
		snprintf(why, sizeof(why),
			 "the root hash given has %zu bytes, %s has %u",
			 p->root_size, v->sb.algorithm, dsize);
		err = -EINVAL;
	}
	if (err)
		ezi_logf(&v->lg, EZFS_LOG_ERROR,
			 "dm-verity: the superblock at byte %llu of %s: %s",
			 (unsigned long long)v->hash_offset, src_name(v), why);
	else /* a superblock refused leaves no shape to place it by */
		v->tree_off = ezi_verity_tree_start(&v->g, v->hash_offset);
	return err;
}

/* The root computed (or to be) against the one given and the signature. */
static int check_root(struct ezfs_verity *v, const struct ezfs_verity_params *p)
{
	char have[2 * EZI_VERITY_MAX_DIGEST + 1], want[sizeof(have)];

	if (p->root) {
		if (v->root_known && memcmp(v->root, p->root, v->g.dsize)) {
			hexify(v->root, v->g.dsize, have);
			hexify(p->root, v->g.dsize, want);
			ezi_logf(&v->lg, EZFS_LOG_ERROR,
				 "dm-verity: the tree's root hash %s is not "
				 "the one given, %s",
				 have, want);
			return -EBADMSG;
		}
		memcpy(v->root, p->root, v->g.dsize);
		v->root_known = 1;
		v->trust = EZFS_VERITY_TRUST_GIVEN;
	}
	if (!p->root_sig_file)
		return 0;
	if (!v->root_known) {
		ezi_logf(&v->lg, EZFS_LOG_ERROR,
			 "dm-verity: a tree of one data block has no root "
			 "of its own to check a signature of: give the root");
		return -EINVAL;
	}
	return check_signature(v, p->root_sig_file, p->trusted_cert);
}

int ezfs_verity_load(const struct ezfs_io_ops *ops, void *arg,
		     uint64_t hash_offset, const struct ezfs_verity_params *p,
		     ezfs_verity **out)
{
	struct ezfs_verity_params given;
	struct ezfs_verity *v;
	int err;

	*out = NULL;
	ezfs_verity_params_init(&given);
	if (p) {
		if (!p->size || p->size > sizeof(given))
			return -EINVAL;
		memcpy(&given, p, p->size);
	}
	p = &given;
	if ((p->root_sig_file && !p->trusted_cert) ||
	    (p->root && !p->root_size))
		return -EINVAL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	pthread_mutex_init(&v->mu, NULL);
	v->lg.fn = p->log;
	v->lg.arg = p->log_arg;
	v->lg.verbose = EZFS_LOG_DEBUG;
	v->hash_offset = hash_offset;
	if (p->name) {
		v->name = strdup(p->name);
		if (!v->name) {
			ezfs_verity_free(v);
			return -ENOMEM;
		}
	}
	err = load_sb(v, ops, arg, p);
	if (!err)
		err = load_tree(v, ops, arg);
	if (!err)
		err = check_root(v, p);
	if (err) {
		ezfs_verity_free(v);
		return err;
	}
	*out = v;
	return 0;
}

static void ahead_stop(struct ezfs_verity *v);

void ezi_verity_quiesce(struct ezfs_verity *v)
{
	if (v)
		ahead_stop(v);
}

void ezfs_verity_free(ezfs_verity *v)
{
	if (!v)
		return;
	ahead_stop(v);
	ezi_verity_md_free(v->md);
	pthread_mutex_destroy(&v->mu);
	free(v->name);
	free(v->tree);
	free(v->hstate);
	free(v->ok);
	free(v->told);
	free(v);
}

int ezi_verity_set_source(struct ezfs_verity *v, const char *name, int separate)
{
	char *n = name ? strdup(name) : NULL;

	if (name && !n)
		return -ENOMEM;
	free(v->name);
	v->name = n;
	v->separate = separate;
	return 0;
}

void ezfs_verity_get_info(const ezfs_verity *v, struct ezfs_verity_info *vi)
{
	memset(vi, 0, sizeof(*vi));
	vi->hash_offset = v->hash_offset;
	vi->separate = v->separate;
	vi->data_blocks = v->g.data_blocks;
	vi->data_block_size = v->g.dbs;
	vi->hash_block_size = v->g.hbs;
	vi->tree_blocks = v->g.tree_blocks;
	vi->levels = v->g.levels;
	memcpy(vi->algorithm, v->sb.algorithm, sizeof(vi->algorithm));
	memcpy(vi->uuid, v->sb.uuid, 16);
	memcpy(vi->salt, v->sb.salt, v->sb.salt_size);
	vi->salt_size = v->sb.salt_size;
	pthread_mutex_lock((pthread_mutex_t *)&v->mu);
	if (v->root_known) {
		memcpy(vi->root, v->root, v->g.dsize);
		vi->root_size = v->g.dsize;
	}
	pthread_mutex_unlock((pthread_mutex_t *)&v->mu);
	vi->trust = v->trust;
	memcpy(vi->signer, v->signer, sizeof(vi->signer));
	vi->bad_tree = v->bad_tree;
}

int ezfs_verity_parse_hex(const char *s, uint8_t *out, size_t max, size_t *n)
{
	size_t i, len = strlen(s);

	if (!len || len % 2 || len / 2 > max)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		char c = s[i];
		int v = c >= '0' && c <= '9'   ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10
					       : -1;

		if (v < 0)
			return -EINVAL;
		if (i % 2)
			out[i / 2] = (uint8_t)(out[i / 2] | v);
		else
			out[i / 2] = (uint8_t)(v << 4);
	}
	*n = len / 2;
	return 0;
}

int ezfs_verity_read_root(const char *path, uint8_t out[64], size_t *n)
{
	char buf[256], *s, *e;
	size_t got;
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	got = fread(buf, 1, sizeof(buf) - 1, f);
	if (ferror(f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	buf[got] = '\0';
	for (s = buf; *s == ' ' || *s == '\t' || *s == '\n' || *s == '\r';)
		s++;
	for (e = s + strlen(s); e > s && (e[-1] == ' ' || e[-1] == '\t' ||
					  e[-1] == '\n' || e[-1] == '\r');)
		*--e = '\0';
	if (got == sizeof(buf) - 1)
		return -EINVAL;
	return ezfs_verity_parse_hex(s, out, 64, n);
}

/* ---- checking data blocks ---- */

/* The hash block holding block's hash (levels > 0). */
static uint64_t hash_block_of(const struct ezfs_verity *v, uint64_t block)
{
	return v->g.start[0] + (block >> v->g.pbits);
}

int ezfs_verity_check(ezfs_verity *v, uint64_t block, const void *data)
{
	const struct ezi_verity_geo *g = &v->g;
	uint8_t h[EZI_VERITY_MAX_DIGEST];
	const uint8_t *want;
	uint64_t hb;
	int err;

	if (block >= g->data_blocks)
		return -ERANGE;
	err = ezi_verity_hash(v->md, v->sb.salt, v->sb.salt_size, data, g->dbs,
			      h);
	if (err)
		return err;
	if (!g->levels) {
		/* one data block: its hash is the root */
		pthread_mutex_lock(&v->mu);
		if (!v->root_known) {
			memcpy(v->root, h, g->dsize);
			v->root_known = 1;
		}
		err = memcmp(h, v->root, g->dsize) ? -EBADMSG : 0;
		pthread_mutex_unlock(&v->mu);
	} else {
		hb = hash_block_of(v, block);
		if (v->hstate[hb] != HB_GOOD)
			return -EBADMSG;
		want = v->tree + hb * g->hbs +
		       (block & ((1ull << g->pbits) - 1)) * g->stride;
		err = memcmp(h, want, g->dsize) ? -EBADMSG : 0;
	}
	if (!err)
		bit_set(v->ok, block);
	return err;
}

int ezfs_verity_verified(const ezfs_verity *v, uint64_t block)
{
	return block < v->g.data_blocks && bit_test(v->ok, block);
}

int ezfs_verity_mark_verified(ezfs_verity *v, uint64_t block)
{
	if (block >= v->g.data_blocks)
		return -ERANGE;
	bit_set(v->ok, block);
	return 0;
}

/* One line on why block failed its check (err of ezfs_verity_check). */
static void why_block(const struct ezfs_verity *v, uint64_t block, int err,
		      char *msg, size_t size)
{
	uint64_t a = block << v->g.dbits, b = a + v->g.dbs - 1, hb;

	if (err == -EBADMSG && v->g.levels &&
	    v->hstate[hb = hash_block_of(v, block)] != HB_GOOD) {
		uint64_t ha = v->tree_off + hb * v->g.hbs;

		snprintf(msg, size,
			 "dm-verity: block %llu (bytes %llu-%llu): the tree's "
			 "hash block for it (bytes %llu-%llu of %s) does not "
			 "match the level above",
			 (unsigned long long)block, (unsigned long long)a,
			 (unsigned long long)b, (unsigned long long)ha,
			 (unsigned long long)(ha + v->g.hbs - 1), src_name(v));
	} else if (err == -EBADMSG) {
		snprintf(msg, size,
			 "dm-verity: block %llu (bytes %llu-%llu) does not "
			 "match its hash in the tree",
			 (unsigned long long)block, (unsigned long long)a,
			 (unsigned long long)b);
	} else {
		snprintf(msg, size,
			 "dm-verity: block %llu (bytes %llu-%llu) cannot be "
			 "checked: %s",
			 (unsigned long long)block, (unsigned long long)a,
			 (unsigned long long)b, strerror(-err));
	}
}

/* A read of block failed its check: one log line the first time. */
static int fail_block(struct ezfs_verity *v, uint64_t block, int err)
{
	char msg[512];

	if (!bit_set(v->told, block)) {
		why_block(v, block, err, msg, sizeof(msg));
		ezi_logf(&v->lg, EZFS_LOG_ERROR, "%s", msg);
	}
	return -EIO;
}

/* ---- checking ahead of sequential readers ---- */

#define AHEAD_BYTES (4u << 20) /* how far ahead of a reader */
#define AHEAD_CHUNK (256u << 10)
#define AHEAD_GAP                                                              \
	(1u << 20) /* a read this far past a stream's end goes                 \
		    * on with it */

/* Claim a chunk of stream k's [from, to): its first block into *f, its
 * block count returned (0: nothing left there). */
static uint64_t ahead_claim(struct ezfs_verity *v, unsigned k, uint64_t *f)
{
	uint64_t per = AHEAD_CHUNK >> v->g.dbits, t, n;

	for (;;) {
		*f = __atomic_load_n(&v->ah.st[k].from, __ATOMIC_RELAXED);
		t = __atomic_load_n(&v->ah.st[k].to, __ATOMIC_RELAXED);
		if (*f >= t)
			return 0;
		n = t - *f < per ? t - *f : per;
		if (__atomic_compare_exchange_n(&v->ah.st[k].from, f, *f + n, 0,
						__ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return n;
	}
}

/* Check the blocks [f, f + n) not verified yet. A block that fails is
 * left to the reader, who reports it. */
static void ahead_check(struct ezfs_verity *v, uint8_t *buf, uint64_t f,
			uint64_t n)
{
	const struct ezfs_io *io = v->ah.io;
	unsigned bits = v->g.dbits;
	uint64_t i;

	for (i = 0; i < n && bit_test(v->ok, f + i); i++)
		;
	if (i == n ||
	    io->ops->pread(io->arg, buf, (size_t)(n << bits),
			   io->base + (f << bits)) != (ssize_t)(n << bits))
		return;
	for (; i < n; i++)
		if (!bit_test(v->ok, f + i))
			(void)ezfs_verity_check(v, f + i, buf + (i << bits));
}

/* The thread: chunks of every stream's [from, to), until stopped. */
static void *ahead_run(void *arg)
{
	struct ezfs_verity *v = arg;
	uint8_t *buf = malloc(AHEAD_CHUNK);
	uint64_t f, n;
	unsigned k, busy;

	while (buf) {
		sem_wait(&v->ah.wake);
		do {
			busy = 0;
			for (k = 0; k < AHEAD_STREAMS; k++) {
				if (__atomic_load_n(&v->ah.stop,
						    __ATOMIC_ACQUIRE))
					goto out;
				n = ahead_claim(v, k, &f);
				if (n) {
					ahead_check(v, buf, f, n);
					busy = 1;
				}
			}
		} while (busy);
		if (__atomic_load_n(&v->ah.stop, __ATOMIC_ACQUIRE))
			break;
	}
out:
	free(buf);
	return NULL;
}

/* The stream a read of [off, end) goes on with (its last read ended at
 * most AHEAD_GAP before off), now ending at end; -1 for a read that
 * starts a stream, in place of the one read longest ago. */
static int ahead_stream(struct ezfs_verity *v, uint64_t off, uint64_t end)
{
	uint64_t now = __atomic_add_fetch(&v->ah.clock, 1, __ATOMIC_RELAXED);
	uint64_t last, used, oldest = UINT64_MAX;
	unsigned k, lru = 0;

	for (k = 0; k < AHEAD_STREAMS; k++) {
		last = __atomic_load_n(&v->ah.st[k].last, __ATOMIC_RELAXED);
		if (last && off >= last && off - last <= AHEAD_GAP) {
			__atomic_store_n(&v->ah.st[k].last, end,
					 __ATOMIC_RELAXED);
			__atomic_store_n(&v->ah.st[k].used, now,
					 __ATOMIC_RELAXED);
			return (int)k;
		}
		used = __atomic_load_n(&v->ah.st[k].used, __ATOMIC_RELAXED);
		if (used < oldest) {
			oldest = used;
			lru = k;
		}
	}
	__atomic_store_n(&v->ah.st[lru].last, end, __ATOMIC_RELAXED);
	__atomic_store_n(&v->ah.st[lru].used, now, __ATOMIC_RELAXED);
	__atomic_store_n(&v->ah.st[lru].to, 0, __ATOMIC_RELAXED);
	return -1;
}

/* Start the thread in this process (again in a child process, which has
 * no threads): 0, or -1 (the readers check alone). */
static int ahead_start(struct ezfs_verity *v, const struct ezfs_io *io)
{
	pid_t me = getpid();
	pid_t was = __atomic_load_n(&v->ah.pid, __ATOMIC_ACQUIRE);

	if (was == me)
		return 0;
	if (!__atomic_compare_exchange_n(&v->ah.pid, &was, me, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return -1; /* another reader is starting it */
	v->ah.io = io;
	v->ah.stop = 0;
	if (!sem_init(&v->ah.wake, 0, 0) &&
	    !pthread_create(&v->ah.t, NULL, ahead_run, v))
		return 0;
	__atomic_store_n(&v->ah.pid, -1, __ATOMIC_RELEASE);
	return -1;
}

/* A read of [off, off + len) of a local image just ended: when it goes on
 * with a stream of reads in order, the thread checks the next AHEAD_BYTES
 * of that stream, so that the reader finds them checked. */
static void ahead_post(struct ezfs_verity *v, const struct ezfs_io *io,
		       size_t len, uint64_t off)
{
	uint64_t p, want, ahead = AHEAD_BYTES >> v->g.dbits, f;
	int k;

	if (!ezi_io_local(io))
		return;
	k = ahead_stream(v, off, off + len);
	if (k < 0)
		return;
	p = (off + len + v->g.dbs - 1) >> v->g.dbits;
	if (__atomic_load_n(&v->ah.st[k].to, __ATOMIC_RELAXED) >= p + ahead / 2)
		return; /* enough ahead already */
	want = p + ahead < v->g.data_blocks ? p + ahead : v->g.data_blocks;
	if (p >= want || ahead_start(v, io))
		return;
	f = __atomic_load_n(&v->ah.st[k].from, __ATOMIC_RELAXED);
	if (f < p || f > want)
		__atomic_store_n(&v->ah.st[k].from, p, __ATOMIC_RELAXED);
	__atomic_store_n(&v->ah.st[k].to, want, __ATOMIC_RELAXED);
	sem_post(&v->ah.wake);
}

static void ahead_stop(struct ezfs_verity *v)
{
	if (__atomic_load_n(&v->ah.pid, __ATOMIC_ACQUIRE) != getpid())
		return; /* none, or it ran in the parent of this process */
	__atomic_store_n(&v->ah.stop, 1, __ATOMIC_RELEASE);
	sem_post(&v->ah.wake);
	pthread_join(v->ah.t, NULL);
	sem_destroy(&v->ah.wake);
	v->ah.pid = 0;
}

/* Reads past the data the tree covers are not served. */
static int past_data(const struct ezfs_verity *v, size_t len, uint64_t off)
{
	uint64_t cover = v->g.data_blocks << v->g.dbits;

	if (off <= cover && len <= cover - off)
		return 0;
	ezi_logf(&v->lg, EZFS_LOG_ERROR,
		 "dm-verity: a read of bytes %llu-%llu goes past the %llu "
		 "bytes the tree covers",
		 (unsigned long long)off, (unsigned long long)(off + len - 1),
		 (unsigned long long)cover);
	return -EIO;
}

int ezi_verity_io_check(const struct ezfs_io *io, void *buf, size_t len,
			uint64_t off)
{
	struct ezfs_verity *v = io->verity;
	unsigned bits = v->g.dbits;
	uint32_t bs = v->g.dbs;
	uint64_t end = off + len, b;
	uint8_t tmp[EZI_VERITY_MAX_BLOCK];
	int err;

	if (!len)
		return 0;
	if (past_data(v, len, off))
		return -EIO;
	for (b = off >> bits; b <= (end - 1) >> bits; b++) {
		uint64_t at = b << bits, lo, hi;
		ssize_t n;

		if (bit_test(v->ok, b))
			continue;
		if (at >= off && at + bs <= end) {
			err = ezfs_verity_check(v, b,
						(uint8_t *)buf + (at - off));
			if (err)
				return fail_block(v, b, err);
			continue;
		}
		/* partly in buf: the whole block once more */
		n = io->ops->pread(io->arg, tmp, bs, io->base + at);
		err = n < 0 ? (int)n : n == (ssize_t)bs ? 0 : -EIO;
		if (!err)
			err = ezfs_verity_check(v, b, tmp);
		if (err)
			return fail_block(v, b, err);
		lo = at > off ? at : off;
		hi = at + bs < end ? at + bs : end;
		memcpy((uint8_t *)buf + (lo - off), tmp + (lo - at), hi - lo);
	}
	ahead_post(v, io, len, off);
	return 0;
}

int ezi_verity_io_check_mem(const struct ezfs_io *io, const uint8_t *img,
			    uint64_t size, size_t len, uint64_t off)
{
	struct ezfs_verity *v = io->verity;
	unsigned bits = v->g.dbits;
	uint64_t b;
	int err;

	if (!len)
		return 0;
	if (past_data(v, len, off))
		return -EIO;
	for (b = off >> bits; b <= (off + len - 1) >> bits; b++) {
		if (bit_test(v->ok, b))
			continue;
		if ((b + 1) << bits > size)
			return fail_block(v, b, -EIO);
		err = ezfs_verity_check(v, b, img + (b << bits));
		if (err)
			return fail_block(v, b, err);
	}
	return 0;
}

/* ---- the whole image ---- */

#define SCAN_CHUNK (1u << 20)

struct scan {
	const struct ezfs_io *io;
	struct ezfs_verity *v;
	void (*bad)(void *arg, const char *msg);
	void (*progress)(void *arg, uint64_t bytes);
	void *arg;
	pthread_mutex_t mu; /* the callbacks and the counts */
	uint64_t done;
	int64_t problems;
	int err;	/* -ENOMEM */
	uint8_t **bufs; /* one per worker, the last for the caller */
	unsigned nbufs;
};

struct scan_job {
	struct scan *s;
	uint64_t first, n; /* data blocks */
};

static void tell(struct scan *s, const char *msg)
{
	pthread_mutex_lock(&s->mu);
	s->problems++;
	if (s->bad)
		s->bad(s->arg, msg);
	pthread_mutex_unlock(&s->mu);
}

static void scan_block(struct scan *s, uint64_t b, const uint8_t *data)
{
	struct ezfs_verity *v = s->v;
	char msg[512];
	int err;

	if (bit_test(v->ok, b))
		return;
	err = ezfs_verity_check(v, b, data);
	if (!err)
		return;
	/* later reads fail without a line of their own; blocks below a bad
	 * hash block: that block is reported */
	bit_set(v->told, b);
	if (err == -EBADMSG && v->g.levels &&
	    v->hstate[hash_block_of(v, b)] != HB_GOOD)
		return;
	why_block(v, b, err, msg, sizeof(msg));
	tell(s, msg);
}

static void scan_run(void *arg)
{
	struct scan_job *j = arg;
	struct scan *s = j->s;
	struct ezfs_verity *v = s->v;
	int self = ezi_pool_self();
	uint8_t *buf = s->bufs[self < 0 ? s->nbufs - 1 : (unsigned)self];
	uint64_t off = j->first << v->g.dbits, len = j->n << v->g.dbits, i;
	ssize_t n = s->io->ops->pread(s->io->arg, buf, (size_t)len,
				      s->io->base + off);
	char msg[512];

	if (n != (ssize_t)len) {
		snprintf(msg, sizeof(msg),
			 "dm-verity: a read of bytes %llu-%llu failed: %s",
			 (unsigned long long)off,
			 (unsigned long long)(off + len - 1),
			 n < 0 ? strerror((int)-n) : "the image ends first");
		tell(s, msg);
		return;
	}
	for (i = 0; i < j->n; i++)
		scan_block(s, j->first + i, buf + (i << v->g.dbits));
	pthread_mutex_lock(&s->mu);
	s->done += len;
	if (s->progress)
		s->progress(s->arg, s->done);
	pthread_mutex_unlock(&s->mu);
}

/* The hash blocks that do not match the level above, one line each. */
static void scan_tree(struct scan *s)
{
	const struct ezfs_verity *v = s->v;
	const struct ezi_verity_geo *g = &v->g;
	char msg[512];
	unsigned l;
	uint64_t k;

	for (l = 0; l < g->levels; l++)
		for (k = 0; k < g->count[l]; k++) {
			uint64_t blk = g->start[l] + k;
			uint64_t a = v->tree_off + blk * g->hbs;

			if (v->hstate[blk] != HB_BAD)
				continue;
			snprintf(msg, sizeof(msg),
				 "dm-verity: hash block %llu of level %u "
				 "(bytes %llu-%llu of %s) does not match the "
				 "level above",
				 (unsigned long long)k, l,
				 (unsigned long long)a,
				 (unsigned long long)(a + g->hbs - 1),
				 src_name(v));
			tell(s, msg);
		}
}

int64_t ezi_verity_scan(const struct ezfs_io *io, unsigned threads,
			void (*bad)(void *arg, const char *msg),
			void (*progress)(void *arg, uint64_t bytes), void *arg)
{
	struct ezfs_verity *v = io->verity;
	uint64_t per, njobs, k;
	struct scan s = { .io = io, .v = v, .bad = bad };
	struct scan_job *jobs = NULL;
	struct ezi_pool *pool = NULL;
	unsigned nbufs, i;
	int perr = 0;

	if (!v)
		return -ENODATA;
	s.progress = progress;
	s.arg = arg;
	pthread_mutex_init(&s.mu, NULL);
	scan_tree(&s);
	per = SCAN_CHUNK >> v->g.dbits;
	njobs = (v->g.data_blocks + per - 1) / per;
	if (!threads)
		threads = 1;
	if (threads > njobs)
		threads = (unsigned)njobs;
	if (threads > 1)
		pool = ezi_pool_new(threads, 2 * threads, &perr);
	/* one buffer per worker, and the last for this thread */
	nbufs = (pool ? ezi_pool_threads(pool) : 0) + 1;
	s.bufs = calloc(nbufs, sizeof(*s.bufs));
	jobs = calloc((size_t)njobs, sizeof(*jobs));
	for (i = 0; s.bufs && i < nbufs; i++)
		if (!(s.bufs[i] = malloc(SCAN_CHUNK)))
			break;
	s.nbufs = nbufs;
	if (!s.bufs || !jobs || i < nbufs) {
		s.err = -ENOMEM;
		goto out;
	}
	for (k = 0; k < njobs; k++) {
		jobs[k].s = &s;
		jobs[k].first = k * per;
		jobs[k].n = v->g.data_blocks - k * per < per
				    ? v->g.data_blocks - k * per
				    : per;
		if (!pool || ezi_pool_submit(pool, scan_run, &jobs[k]))
			scan_run(&jobs[k]);
	}
	if (pool)
		ezi_pool_wait(pool);
out:
	ezi_pool_destroy(pool);
	for (i = 0; s.bufs && i < nbufs; i++)
		free(s.bufs[i]);
	free(s.bufs);
	free(jobs);
	pthread_mutex_destroy(&s.mu);
	return s.err ? s.err : s.problems;
}
