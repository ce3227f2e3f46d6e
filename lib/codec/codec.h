/* SPDX-License-Identifier: MIT */
/*
 * codec.h - one const ops struct per compression library binding.
 *
 * The read layer asks for a decompression through ezfs_codec_decompress();
 * each on-disk algorithm has an ordered list of codecs (the engine layer will
 * make that list selectable at run time); the first usable one runs, and a
 * codec that cannot serve a request (e.g. it cannot stop early) hands it to
 * the next one in the list.
 */
#ifndef EZFS_CODEC_H
#define EZFS_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Algorithm ids are enum ezfs_alg (include/ezfs/ezfs.h). */

/* Per-image parameters from the superblock's compression records. */
struct ezfs_codec_cfg {
	uint32_t lzma_dict_size;   /* bytes */
	unsigned deflate_windowbits;
	unsigned zstd_windowlog;   /* window = 1 << (windowlog + 10) */
	uint32_t lz4_max_distance;
};

/* One decompression request. */
struct ezfs_dreq {
	const uint8_t *in;   /* compressed stream, leading zero padding
			      * already stripped */
	size_t inlen;
	uint8_t *out;        /* room for outlen bytes */
	size_t outlen;       /* bytes wanted (the decoded prefix) */
	/*
	 * true: the stream decodes to more than outlen bytes (partial decoding:
	 * a PARTIAL_REF extent, or only the head of an extent is needed);
	 * produce exactly the first outlen bytes.
	 * false: the stream must decode to exactly outlen bytes.
	 */
	bool partial;
	const struct ezfs_codec_cfg *cfg;
};

enum ezfs_codec_flags {
	EZFS_CODEC_PARTIAL = 1 << 0, /* can stop after outlen bytes */
};

struct ezfs_codec_ops {
	const char *name;  /* "lz4", "libdeflate", "zlib", "isal", "zstd", "lzma" */
	int alg;           /* enum ezfs_alg */
	unsigned flags;    /* enum ezfs_codec_flags */
	/* 0 if usable on this machine, else a negative errno. May be NULL. */
	int (*probe)(void);
	/* Per-thread state. Sets *err = 0 and may return NULL for a stateless
	 * codec; on failure returns NULL with *err a negative errno. NULL
	 * function pointer = stateless. */
	void *(*ctx_new)(int *err);
	void (*ctx_free)(void *ctx);
	/*
	 * Decode. Returns 0 on success, -EUCLEAN for a corrupt stream (wrong
	 * decoded length included), -EOPNOTSUPP if this codec cannot serve the
	 * request (the caller then tries the next codec), -ENOMEM.
	 */
	int (*decompress)(void *ctx, const struct ezfs_dreq *rq);
};

extern const struct ezfs_codec_ops ezfs_codec_lz4;
extern const struct ezfs_codec_ops ezfs_codec_libdeflate;
extern const struct ezfs_codec_ops ezfs_codec_zlib;
extern const struct ezfs_codec_ops ezfs_codec_isal;
extern const struct ezfs_codec_ops ezfs_codec_zstd;
extern const struct ezfs_codec_ops ezfs_codec_lzma;

/* NULL-terminated default order per algorithm (first = preferred). The
 * reference (fallback) codec of an algorithm is the last in its list. */
const struct ezfs_codec_ops *const *ezfs_codec_list(int alg);

/* Find a codec by name, NULL if none. */
const struct ezfs_codec_ops *ezfs_codec_find(const char *name);

/*
 * A small pool of per-thread codec contexts, one pool per image, so that
 * decoders are not re-created for each pcluster.
 */
struct ezfs_codec_pool;
struct ezfs_codec_pool *ezfs_codec_pool_new(const struct ezfs_codec_cfg *cfg);
void ezfs_codec_pool_free(struct ezfs_codec_pool *pool);

/*
 * Decompress with the first codec of rq's algorithm that accepts the
 * request, falling back along the list on -EOPNOTSUPP. rq->cfg is filled
 * from the pool's cfg if NULL. Thread-safe.
 */
int ezfs_codec_decompress(struct ezfs_codec_pool *pool, int alg,
			  struct ezfs_dreq *rq);

#endif
