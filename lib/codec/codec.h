/* SPDX-License-Identifier: MIT */
/*
 * codec.h - one const ops struct per compression library binding.
 *
 * Each on-disk algorithm has a default ordered list of codecs, its
 * reference codec last. The engine layer (lib/engine) decides which codec
 * serves a request, in what order, and falls back: this layer only decodes
 * with the one it is told (ezi_codec_decompress_one) and keeps per-image
 * pools of decoder contexts.
 *
 * The writer uses the same ops structs: cctx_new() + compress_destsize()
 * ("fill this many output bytes with as much input as fits"), see 9.14 of
 * docs/erofs-format.md.
 *
 * Which codecs decode partially (EZFS_CODEC_PARTIAL):
 *   lz4, zlib, isal, zstd, lzma: yes.  libdeflate: no (returns -EOPNOTSUPP
 *   for a partial request; the engine then hands it to isal or zlib).
 *
 * All ops tables are const and there is no global mutable state: contexts
 * belong to the caller (or to a pool, one per image).
 */
#ifndef EZFS_CODEC_H
#define EZFS_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Algorithm ids are enum ezfs_alg (include/ezfs/ezfs.h). */

/*
 * Per-image parameters from the superblock's compression records (section 3
 * of the format notes). Decoders read them per request (rq->cfg); encoders
 * take them once in cctx_new() and must produce streams that a reader with
 * the same cfg accepts, so a writer fills in what it records on disk.
 */
struct ezfs_codec_cfg {
	uint32_t lzma_dict_size;     /* bytes; 0 (decode) = the output size */
	unsigned deflate_windowbits; /* 0 = 15 */
	unsigned zstd_windowlog;     /* window = 1 << (windowlog + 10) */
	uint32_t lz4_max_distance;   /* 0 = 65535 */
};

/* One decompression request. */
struct ezfs_dreq {
	const uint8_t *in; /* compressed stream, leading zero padding
			    * already stripped */
	size_t inlen;
	uint8_t *out;  /* room for outlen bytes */
	size_t outlen; /* bytes wanted (the decoded prefix) */
	/*
	 * true: the stream decodes to at least outlen bytes (partial decoding:
	 * a PARTIAL_REF extent, or only the head of an extent is needed, or a
	 * legacy LZ4 pcluster with trailing garbage); produce exactly the
	 * first outlen bytes. Bytes of input after the point where outlen
	 * bytes are reached are not checked.
	 * false: the stream must decode to exactly outlen bytes, else
	 * -EUCLEAN (zstd: the frame must also end exactly at in + inlen).
	 */
	bool partial;
	const struct ezfs_codec_cfg *cfg;
};

enum ezfs_codec_flags {
	EZFS_CODEC_PARTIAL = 1 << 0, /* can stop after outlen bytes */
	EZFS_CODEC_DECODE = 1 << 1,  /* has decompress */
	EZFS_CODEC_ENCODE = 1 << 2,  /* has cctx_new + compress_destsize */
	/* compress_destsize searches by trials (ezi_codec_fit): it stops
	 * within a tolerance of the longest input that fits */
	EZFS_CODEC_FIT = 1 << 3,
};

struct ezfs_codec_ops {
	const char *name; /* "lz4", "lz4hc", "libdeflate", "zlib", "isal",
			   * "zstd", "lzma" */
	int alg;	  /* enum ezfs_alg */
	unsigned flags;	  /* enum ezfs_codec_flags */
	/* 0 if usable on this machine, else a negative errno. May be NULL. */
	int (*probe)(void);

	/* ---- decoding (NULL decompress: encode-only codec) ---- */

	/* Per-thread state. Sets *err = 0 and may return NULL for a stateless
	 * codec; on failure returns NULL with *err a negative errno. NULL
	 * function pointer = stateless. A context serves one request at a
	 * time and may be reused for any number of requests. */
	void *(*ctx_new)(int *err);
	void (*ctx_free)(void *ctx); /* accepts NULL */
	/*
	 * Decode. Returns 0 on success, -EUCLEAN for a corrupt stream (wrong
	 * decoded length included), -EOPNOTSUPP if this codec cannot serve the
	 * request (the caller then tries the next codec), -ENOMEM. Never
	 * reads outside in[0..inlen) nor writes outside out[0..outlen), also
	 * on hostile input; bytes of out past a failure are unspecified.
	 */
	int (*decompress)(void *ctx, const struct ezfs_dreq *rq);

	/* ---- encoding (all NULL / 0: decode-only codec) ---- */

	/* Valid levels; level < 0 in cctx_new means default_level, but for
	 * zstd, whose negative levels are its fast ones (mkfs.erofs 1.9.3
	 * hands libzstd -1 when no level is given).
	 * lz4: 0; lz4hc: 0..12 (0 = 9); libdeflate: 0..12 (6); zstd:
	 * ZSTD_minCLevel()..22, 0 = default (3); lzma: 0..9 and 100..109 =
	 * extreme (6). */
	int min_level, max_level, default_level;
	/*
	 * Per-thread compression state for one level and one cfg (cfg may be
	 * NULL where the codec needs no parameter: lz4, lz4hc, libdeflate;
	 * lzma needs cfg->lzma_dict_size in 4 KiB..8 MiB, zstd needs
	 * cfg->zstd_windowlog <= 10; frames never declare a larger window).
	 * The cfg is read only here. Returns NULL with *err = -EINVAL (bad
	 * level or cfg the codec cannot honour) or -ENOMEM.
	 */
	void *(*cctx_new)(int level, const struct ezfs_codec_cfg *cfg,
			  int *err);
	void (*cctx_free)(void *cctx); /* accepts NULL */
	/*
	 * Optional: make cctx give what a fresh one would (forget the ratios
	 * earlier calls taught), keeping its memory: a fresh context per
	 * file (allocation, page faults, libzstd's table clearing) made seven
	 * zstd and lz4hc images of the linux tree take 145 s instead of 125.
	 * Returns 0, or nonzero where the state cannot be reset (the caller
	 * frees it instead). NULL: the caller frees it.
	 */
	int (*cctx_reset)(void *cctx);
	/*
	 * Compress the longest prefix of in[0..*inlen) whose compressed
	 * stream fits in outcap bytes (for libdeflate and zstd: close to the
	 * longest, see their files). On return *inlen = bytes consumed (> 0).
	 * Returns the compressed length (<= outcap, and the stream never
	 * starts with 0x00) or a negative errno: -ENOSPC if not even one byte
	 * of input fits (*inlen = 0), -EINVAL for *inlen == 0, -ENOMEM.
	 * The stream decodes (full decode) to exactly in[0..*inlen).
	 * Not thread-safe per cctx; the cctx remembers the last ratio to
	 * make the next call cheaper.
	 */
	int (*compress_destsize)(void *cctx, const uint8_t *in, size_t *inlen,
				 uint8_t *out, size_t outcap);

	/* The library behind it ("libzstd"; NULL: ezfs' own code) and the
	 * version it reports ("1.5.4"; NULL: none), static strings. */
	const char *lib;
	const char *(*version)(void);
};

extern const struct ezfs_codec_ops ezi_codec_lz4;
extern const struct ezfs_codec_ops ezi_codec_lz4hc; /* encode only */
/* libdeflate and zstd without EZFS_HAVE_LIBDEFLATE / EZFS_HAVE_ZSTD: a stub
 * in no list (decode and encode give -EOPNOTSUPP), for code that holds the
 * codec directly. */
extern const struct ezfs_codec_ops ezi_codec_libdeflate;
void *ezi_codec_stub_cctx_new(int level, const struct ezfs_codec_cfg *cfg,
			      int *err);
void ezi_codec_stub_cctx_free(void *cctx);
int ezi_codec_stub_compress(void *cctx, const uint8_t *in, size_t *inlen,
			    uint8_t *out, size_t outcap);
#define EZI_CODEC_STUB(NAME, ALG)                                              \
	{                                                                      \
		.name = (NAME), .alg = (ALG),                                  \
		.cctx_new = ezi_codec_stub_cctx_new,                           \
		.cctx_free = ezi_codec_stub_cctx_free,                         \
		.compress_destsize = ezi_codec_stub_compress,                  \
	}
extern const struct ezfs_codec_ops ezi_codec_ezdeflate; /* encode only */
extern const struct ezfs_codec_ops ezi_codec_zlib;
extern const struct ezfs_codec_ops ezi_codec_isal; /* EZFS_HAVE_ISAL */
extern const struct ezfs_codec_ops ezi_codec_zstd;
extern const struct ezfs_codec_ops ezi_codec_lzma;

/* NULL-terminated default decoding order per algorithm (first = preferred).
 * The reference (fallback) codec of an algorithm is the last in its list.
 * NULL for an unknown alg. deflate: libdeflate, isal (if built), zlib. */
const struct ezfs_codec_ops *const *ezi_codec_list(int alg);
/* The reference codec of alg: the last of its list, which decodes every
 * request, partial ones too. NULL for an unknown alg. */
const struct ezfs_codec_ops *ezi_codec_reference(int alg);

/* Every codec built in (decoders and encoders), NULL-terminated. */
const struct ezfs_codec_ops *const *ezi_codec_all(void);

/* Find a codec by name, NULL if none. */
const struct ezfs_codec_ops *ezi_codec_find(const char *name);

/*
 * A small pool of per-thread codec contexts, one pool per image, so that
 * decoders are not re-created for each pcluster. cfg is copied (NULL = all
 * zero). Returns NULL on allocation failure.
 */
struct ezfs_codec_pool;
struct ezfs_codec_pool *ezi_codec_pool_new(const struct ezfs_codec_cfg *cfg);
void ezi_codec_pool_free(struct ezfs_codec_pool *pool);

/* ---- for the engine layer (lib/engine), which orders the codecs of an
 * algorithm and falls back between them ---- */

/*
 * Decode with exactly this codec: no probe check, no fallback (the
 * engine's order does both). A context
 * comes from the pool when ops is one of ezi_codec_all(), else (a codec
 * compiled in elsewhere, e.g. a test engine) a fresh one per call. rq->cfg
 * is filled from the pool's cfg if NULL. Thread-safe. Returns 0, -EUCLEAN
 * (corrupt stream, inlen == 0 included), -EOPNOTSUPP (this codec cannot
 * serve the request), -ENOMEM. A partial request with outlen == 0 succeeds
 * without decoding.
 */
int ezi_codec_decompress_one(struct ezfs_codec_pool *pool,
			     const struct ezfs_codec_ops *ops,
			     struct ezfs_dreq *rq);

/*
 * How far the byte histogram of src[0, n) is from flat: Pearson's
 * chi-square against n / 256 per value (random bytes: 255 on average,
 * standard deviation 23, whatever n; text: thousands). It bounds what any
 * order-0 code can gain: n (8 - H) / 8 <= chi2 / (8 ln 2) bytes, since the
 * divergence from the uniform distribution KL(p||u) <= chi2 / n nats.
 */
static inline uint64_t ezfs_byte_chi2(const uint8_t *src, size_t n)
{
	uint32_t cnt[256] = { 0 };
	uint64_t sum = 0;
	size_t i;

	if (!n)
		return 0;
	for (i = 0; i < n; i++)
		cnt[src[i]]++;
	/* sum of (256 c - n)^2 / (256 n) */
	for (i = 0; i < 256; i++) {
		int64_t d = (int64_t)cnt[i] * 256 - (int64_t)n;

		sum += (uint64_t)(d * d);
	}
	return sum / ((uint64_t)n * 256);
}

/* ---- for the codec files: fixed-output search by trial compression ---- */

/*
 * Compress in[0..len) in one shot into buf (room for bufcap >= bound(len)
 * bytes); returns the compressed size or a negative errno.
 */
typedef long (*ezfs_fit_trial_fn)(void *arg, const uint8_t *in, size_t len,
				  uint8_t *buf, size_t bufcap);
/* Worst-case compressed size of len bytes. */
typedef size_t (*ezfs_fit_bound_fn)(void *arg, size_t len);

/* Search state, one per compression context (zero-initialise). */
struct ezfs_fit {
	ezfs_fit_trial_fn trial;
	ezfs_fit_bound_fn bound;
	void *arg;
	uint8_t *buf; /* scratch for trials */
	size_t bufcap;
	uint32_t ratio_q8;	/* input/output of the last call, x256; 0 =
				 * none yet */
	uint64_t calls, trials; /* statistics */
	/* done when the output is within outcap >> slack_shift of outcap
	 * (0: 16, as full as a bisection gets) */
	unsigned slack_shift;
	/* optional: a much cheaper trial of the same codec (a low level) that
	 * aims the first real one; est_k: real / cheap output rate seen */
	ezfs_fit_trial_fn estimate;
	double est_k;
};

/*
 * compress_destsize for codecs without a native fixed-output mode. Searches
 * the prefix length with one-shot trials: a first guess from the previous
 * call's ratio, then interpolation between the longest fitting and the
 * shortest non-fitting trial, until they are within 1/65536 or the output
 * is within outcap >> slack_shift of outcap. Same contract as
 * ops->compress_destsize.
 */
int ezi_codec_fit(struct ezfs_fit *f, const uint8_t *in, size_t *inlen,
		  uint8_t *out, size_t outcap);
void ezi_codec_fit_free(struct ezfs_fit *f);
/* Forget the ratios of earlier calls (the next search starts as a fresh
 * one's); the scratch buffer stays. */
void ezi_codec_fit_reset(struct ezfs_fit *f);

#endif
