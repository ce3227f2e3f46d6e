/* SPDX-License-Identifier: MIT */
/*
 * zcfg.c - compression configurations (-z A:B:...), per-file hints
 * (--compress-hints), owner offsets, and the codec contexts of a worker.
 *
 * Configuration 0 is the default; a hint gives a file another
 * configuration and pcluster size. Every algorithm id in use is announced
 * in the superblock bitmap with one config record (3, super.c); the
 * records' sizes follow the largest pcluster of any file.
 */
#include <errno.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "write/internal.h"
#include "codec/codec.h"
#include "format/erofs_fs.h"

const struct ezfs_codec_ops *ezi_bld_codec(const struct ezfs_builder *b,
					   unsigned zalg)
{
	const struct ezfs_build_zalg *z = &b->zalgs[zalg];

	switch (z->alg) {
	case EZFS_ALG_LZ4:
		return ezi_codec_find(z->hc ? "lz4hc" : "lz4");
	case EZFS_ALG_LZMA:
		return ezi_codec_find("lzma");
	case EZFS_ALG_DEFLATE:
		/* our one-pass fixed-output encoder up to level 9; libdeflate
		 * (trial compressions) when asked for or for its levels
		 * 10-12 (near-optimal parsing) */
		if (z->hc || z->level > 9)
			return ezi_codec_find("libdeflate");
		return ezi_codec_find("ezdeflate");
	case EZFS_ALG_ZSTD:
		return ezi_codec_find("zstd");
	}
	return NULL;
}

/* lzma's dictionary (-z lzma,dictsize=N, else 4 pclusters of the
 * largest size within 32 KiB..8 MiB): the codec's and the config record's */
uint32_t ezi_bld_lzma_dict_size(const struct ezfs_builder *b)
{
	uint32_t d = 4 * b->pclusterblks * b->blksz;

	if (b->p.lzma_dictsize) /* -z lzma,dictsize=N */
		return b->p.lzma_dictsize;
	if (d > (8u << 20))
		d = 8u << 20;
	if (d < (32u << 10))
		d = 32u << 10;
	return d;
}

/* zstd's window (-z zstd,dictsize=N, else 8 pclusters, at most 1 MiB) as
 * a log2: the codec's and the config record's */
unsigned ezi_bld_zstd_windowlog(const struct ezfs_builder *b)
{
	uint32_t w = 8 * b->pclusterblks * b->blksz;
	unsigned log = 10;

	if (b->p.zstd_window) /* -z zstd,dictsize=N */
		w = b->p.zstd_window;
	if (w > (1u << 20))
		w = 1u << 20;
	while ((2u << log) <= w)
		log++;
	return log; /* window = 1 << log; on disk log - 10 */
}

/* Pcluster size in bytes (0x7FF blocks at most: CBLKCNT has 11 bits). */
static int pcluster_blocks(struct ezfs_builder *b, uint32_t bytes,
			   const char *what, uint32_t *blocks)
{
	if (bytes % b->blksz || bytes > EROFS_PCLUSTER_MAX_SIZE) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "%s %u: must be a multiple of the block size, at "
			    "most 1 MiB",
			    what, bytes);
		return -EINVAL;
	}
	*blocks = bytes / b->blksz;
	if (*blocks > 0x7FF)
		*blocks = 0x7FF;
	return 0;
}

uint32_t ezi_bld_pcluster_blocks(const struct ezfs_builder *b,
				 const struct binode *in)
{
	return in->zblks ? in->zblks : b->pclusterdef;
}

int ezi_bld_zalgs_init(struct ezfs_builder *b)
{
	const struct ezfs_build_params *p = &b->p;
	regex_t *re;
	size_t i;
	int err;

	if (p->alg < 0) {
		if (p->n_more_algs || p->n_hints) {
			ezi_bld_log(b, EZFS_LOG_ERROR,
				    "compression hints and further algorithms "
				    "need a first algorithm");
			return -EINVAL;
		}
		return 0;
	}
	if (p->n_more_algs >= EZFS_BUILD_MAX_ZALGS) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "more than %d compression algorithms",
			    EZFS_BUILD_MAX_ZALGS);
		return -EINVAL;
	}
	b->zalgs[0].alg = p->alg;
	b->zalgs[0].hc = p->hc;
	b->zalgs[0].level = p->level;
	for (i = 0; i < p->n_more_algs; i++)
		b->zalgs[i + 1] = p->more_algs[i];
	b->nzalgs = (unsigned)p->n_more_algs + 1;
	for (i = 0; i < b->nzalgs; i++) {
		const struct ezfs_codec_ops *ops;

		if (b->zalgs[i].alg < 0 || b->zalgs[i].alg >= EZFS_ALG_MAX) {
			ezi_bld_log(b, EZFS_LOG_ERROR,
				    "unknown compression algorithm %d",
				    b->zalgs[i].alg);
			return -EINVAL;
		}
		ops = ezi_bld_codec(b, (unsigned)i);
		if (!ops || !ops->cctx_new || !ops->compress_destsize) {
			ezi_bld_log(b, EZFS_LOG_ERROR,
				    "no compressor for %s in this build",
				    ezfs_alg_name(b->zalgs[i].alg));
			return -EOPNOTSUPP;
		}
		b->algmask |= 1u << b->zalgs[i].alg;
	}
	err = pcluster_blocks(b, p->pcluster_size ? p->pcluster_size : b->blksz,
			      "pcluster size", &b->pclusterdef);
	if (err)
		return err;
	b->pclusterblks = b->pclusterdef;
	if (p->n_hints) {
		re = calloc(p->n_hints, sizeof(*re));
		if (!re)
			return -ENOMEM;
		b->hintre = re;
	}
	for (i = 0; i < p->n_hints; i++) {
		const struct ezfs_build_hint *h = &p->hints[i];
		uint32_t blocks;

		if (h->zalg >= b->nzalgs) {
			ezi_bld_log(
				b, EZFS_LOG_ERROR,
				"hint '%s': algorithm index %u, only %u given",
				h->regex, h->zalg, b->nzalgs);
			return -EINVAL;
		}
		err = pcluster_blocks(b, h->pcluster_size, "hint pcluster size",
				      &blocks);
		if (err)
			return err;
		if (blocks > b->pclusterblks)
			b->pclusterblks = blocks;
		if (regcomp(&re[i], h->regex, REG_EXTENDED | REG_NOSUB)) {
			ezi_bld_log(b, EZFS_LOG_ERROR,
				    "invalid hint regex '%s'", h->regex);
			return -EINVAL;
		}
		b->nhintre++;
	}
	/* COMPR_CFGS = BIG_PCLUSTER: any non-LZ4 algorithm or pcluster */
	b->big_pcluster = b->pclusterblks > 1 || (b->algmask & ~1u);
	b->lz4_maxdist = 0xFFFF;
	return 0;
}

void ezi_bld_zalgs_free(struct ezfs_builder *b)
{
	size_t i;

	for (i = 0; i < b->nhintre; i++)
		regfree(&((regex_t *)b->hintre)[i]);
	free(b->hintre);
	b->hintre = NULL;
	b->nhintre = 0;
}

static int add_offset(const struct ezfs_builder *b, const struct binode *in,
		      const char *what, uint32_t *id, uint32_t off)
{
	if ((uint64_t)*id + off > 0xFFFFFFFFull) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "%s: %s %u + offset %u beyond 32 bits", in->srcpath,
			    what, *id, off);
		return -EOVERFLOW;
	}
	*id += off;
	return 0;
}

/* The path of in relative to the source root, without a leading '/'. */
static const char *rel_path(const struct ezfs_builder *b,
			    const struct binode *in)
{
	const char *root = b->inodes[0]->srcpath, *s = in->srcpath;
	size_t n = root ? strlen(root) : 0;

	if (n && !strncmp(s, root, n) && (s[n] == '/' || root[n - 1] == '/'))
		s += n;
	while (*s == '/')
		s++;
	return s;
}

int ezi_bld_inode_finish(struct ezfs_builder *b, struct binode *in)
{
	const regex_t *re = b->hintre;
	const char *rel;
	size_t i;
	int err;

	err = add_offset(b, in, "uid", &in->uid, b->p.uid_offset);
	if (!err)
		err = add_offset(b, in, "gid", &in->gid, b->p.gid_offset);
	if (err || !S_ISREG(in->mode) || !b->nhintre || !in->srcpath ||
	    in == b->inodes[0])
		return err;
	rel = rel_path(b, in);
	for (i = 0; i < b->nhintre; i++) {
		const struct ezfs_build_hint *h = &b->p.hints[i];

		if (regexec(&re[i], rel, 0, NULL, 0))
			continue;
		in->zalg = (uint8_t)h->zalg;
		in->zoff = !h->pcluster_size;
		in->zblks = (uint16_t)(h->pcluster_size / b->blksz);
		if (in->zblks > 0x7FF)
			in->zblks = 0x7FF;
		break;
	}
	return 0;
}

/* A worker's codec contexts, one per configuration, made when needed,
 * and its scratch buffers (compress.c's window and output buffers). */
struct bcctx {
	void *c[EZFS_BUILD_MAX_ZALGS];
	uint8_t *buf[EZFS_BLD_CBUFS];
	size_t cap[EZFS_BLD_CBUFS];
};

/*
 * A fresh buffer per file cost a page fault per 4 KiB of it each time
 * (above glibc's mmap threshold, which ezfs mkfs fixes at 1 MiB: 110,000
 * faults against 74,000 for the linux tree's lz4 build); a worker keeps
 * each of its buffers at the largest size asked up to CBUF_KEEP. A
 * larger one (a file's window: up to an extent, 8 MiB - 4 KiB, two with
 * -E dedupe) goes at ezi_bld_cctx_put: kept, each worker's peak would
 * stay resident.
 */
#define CBUF_KEEP (2u << 20)

uint8_t *ezi_bld_cctx_buf(void *cctx, unsigned which, size_t len)
{
	struct bcctx *h = cctx;
	uint8_t *p;

	if (h->cap[which] >= len)
		return h->buf[which];
	p = malloc(len);
	if (!p)
		return NULL;
	free(h->buf[which]);
	h->buf[which] = p;
	h->cap[which] = len;
	return p;
}

void *ezi_bld_cctx_new(const struct ezfs_builder *b, int *err)
{
	struct bcctx *h = calloc(1, sizeof(*h));

	(void)b;
	if (!h)
		*err = -ENOMEM;
	return h;
}

void *ezi_bld_cctx_get(const struct ezfs_builder *b, void *cctx, unsigned zalg,
		       int *err)
{
	struct bcctx *h = cctx;
	const struct ezfs_codec_ops *ops = ezi_bld_codec(b, zalg);
	struct ezfs_codec_cfg cfg = { 0 };

	if (h->c[zalg])
		return h->c[zalg];
	cfg.lzma_dict_size = ezi_bld_lzma_dict_size(b);
	cfg.deflate_windowbits = 15;
	cfg.zstd_windowlog = ezi_bld_zstd_windowlog(b) - 10;
	cfg.lz4_max_distance = b->lz4_maxdist;
	*err = 0;
	h->c[zalg] = ops->cctx_new(b->zalgs[zalg].level, &cfg, err);
	if (!h->c[zalg] && !*err)
		*err = -ENOMEM;
	return h->c[zalg];
}

/*
 * After a file: the context is reset to what a fresh one gives, else
 * dropped, so results do not depend on which thread compressed what
 * before; scratch buffers over CBUF_KEEP are freed.
 */
void ezi_bld_cctx_put(const struct ezfs_builder *b, void *cctx, unsigned zalg)
{
	struct bcctx *h = cctx;
	const struct ezfs_codec_ops *ops = ezi_bld_codec(b, zalg);
	unsigned k;

	for (k = 0; k < EZFS_BLD_CBUFS; k++) {
		if (h->cap[k] > CBUF_KEEP) {
			free(h->buf[k]);
			h->buf[k] = NULL;
			h->cap[k] = 0;
		}
	}
	if (!h->c[zalg])
		return;
	if (ops->cctx_reset && !ops->cctx_reset(h->c[zalg]))
		return;
	if (ops->cctx_free)
		ops->cctx_free(h->c[zalg]);
	h->c[zalg] = NULL;
}

void ezi_bld_cctx_free(const struct ezfs_builder *b, void *cctx)
{
	struct bcctx *h = cctx;
	unsigned k;

	if (!h)
		return;
	for (k = 0; k < b->nzalgs; k++)
		if (h->c[k] && ezi_bld_codec(b, k)->cctx_free)
			ezi_bld_codec(b, k)->cctx_free(h->c[k]);
	for (k = 0; k < EZFS_BLD_CBUFS; k++)
		free(h->buf[k]);
	free(h);
}
