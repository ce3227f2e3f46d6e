/* SPDX-License-Identifier: MIT */
/* zstd.c - Zstandard codec through libzstd: streaming decode, destsize encode.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include <ezfs/ezfs.h>
#include "codec.h"

#ifdef EZFS_HAVE_ZSTD
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_generateSequences & co (1.5.0+) */
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

/* the match search once, the entropy stage per trial (see zstd_seq_fill) */
#if ZSTD_VERSION_NUMBER >= 10500
#define ZSTD_SEQ_FILL 1
#endif

static void *zstd_ctx_new(int *err)
{
	ZSTD_DCtx *d = ZSTD_createDCtx();

	if (!d) {
		*err = -ENOMEM;
		return NULL;
	}
	*err = 0;
	return d;
}

static void zstd_ctx_free(void *ctx)
{
	ZSTD_freeDCtx(ctx);
}

static int zstd_errno(size_t r)
{
	return ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation ? -ENOMEM
								    : -EUCLEAN;
}

/* log2 of the largest window the image allows (section 3.2), clamped to
 * what this libzstd accepts. */
static int zstd_window_log(const struct ezfs_codec_cfg *cfg)
{
	ZSTD_bounds b = ZSTD_dParam_getBounds(ZSTD_d_windowLogMax);
	int wlog = (cfg ? (int)cfg->zstd_windowlog : 0) + 10;

	if (!ZSTD_isError(b.error)) {
		if (wlog < b.lowerBound)
			wlog = b.lowerBound;
		if (wlog > b.upperBound)
			wlog = b.upperBound;
	}
	return wlog;
}

/*
 * The window a frame declares (zstd format, frame header): the Window
 * Descriptor, or the content size for a single-segment frame. 0 if the
 * header is too short or not a zstd frame; the decoder then reports that.
 */
static uint64_t zstd_frame_window(const uint8_t *in, size_t inlen)
{
	static const uint8_t did_bytes[4] = { 0, 1, 2, 4 };
	static const uint8_t fcs_bytes[4] = { 0, 2, 4, 8 };
	unsigned fhd, fcs_len, pos = 5;
	uint64_t fcs = 0;
	unsigned i;

	if (inlen < 6 || in[0] != 0x28 || in[1] != 0xb5 || in[2] != 0x2f ||
	    in[3] != 0xfd)
		return 0;
	fhd = in[4];
	if (!(fhd & 0x20)) {
		unsigned wd = in[5], wlog = 10 + (wd >> 3);
		uint64_t base = 1ull << wlog;

		return base + (base >> 3) * (wd & 7);
	}
	pos += did_bytes[fhd & 3];
	fcs_len = fcs_bytes[fhd >> 6];
	if (!fcs_len)
		fcs_len = 1; /* single segment: a 1-byte content size */
	if (inlen < pos + fcs_len)
		return 0;
	for (i = 0; i < fcs_len; i++)
		fcs |= (uint64_t)in[pos + i] << (8 * i);
	if (fcs_len == 2)
		fcs += 256;
	return fcs < 1024 ? 1024 : fcs;
}

/*
 * ZSTD_decompressStream() into out: it stops when out is full, which gives
 * partial decoding. A full decode must see the frame end (return 0) with
 * out exactly full and all input consumed; if out fills before the frame
 * ends, one spare output byte tells "too long" from "only the epilogue
 * left". Every round must move input or output, so garbage cannot spin.
 */
static int zstd_decompress(void *ctx, const struct ezfs_dreq *rq)
{
	ZSTD_DCtx *d = ctx;
	ZSTD_inBuffer in = { rq->in, rq->inlen, 0 };
	ZSTD_outBuffer out = { rq->out, rq->outlen, 0 };
	uint8_t spare;
	bool spilled = false;
	int wlog = zstd_window_log(rq->cfg);
	size_t r;

	/*
	 * libzstd checks the window only when it streams: when out holds the
	 * whole frame it decodes in one pass and skips the check. Check here
	 * so that full and partial decodes (and the kernel) agree.
	 */
	if (zstd_frame_window(rq->in, rq->inlen) > (1ull << wlog))
		return -EUCLEAN;
	r = ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
	if (ZSTD_isError(r))
		return -EUCLEAN;
	r = ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, wlog);
	if (ZSTD_isError(r))
		return -EUCLEAN;
	for (;;) {
		size_t in0 = in.pos, out0 = out.pos;

		r = ZSTD_decompressStream(d, &out, &in);
		if (ZSTD_isError(r))
			return zstd_errno(r);
		if (r == 0)
			break; /* frame complete */
		if (out.pos == out.size) {
			if (rq->partial)
				return 0;
			if (spilled)
				return -EUCLEAN; /* too long */
			spilled = true;
			out = (ZSTD_outBuffer){ &spare, 1, 0 };
			continue;
		}
		if (in.pos == in0 && out.pos == out0)
			return -EUCLEAN; /* truncated */
	}
	if (spilled)
		return out.pos == 0 && in.pos == in.size ? 0 : -EUCLEAN;
	if (out.pos != rq->outlen)
		return -EUCLEAN;
	if (!rq->partial && in.pos != in.size)
		return -EUCLEAN; /* trailing bytes after the frame */
	return 0;
}

/* ---- encoding ---- */

struct zstd_cctx {
	ZSTD_CCtx *c;
	struct ezfs_fit fit;
#ifdef ZSTD_SEQ_FILL
	/* levels >= ZSTD_SEQ_LEVEL: the sequences of in[0..glen).
	 * gc: ZSTD_generateSequences only (1.5.4 leaves the collector on);
	 * sc: ZSTD_compressSequences, explicit block ends */
	ZSTD_CCtx *gc, *sc;
	ZSTD_DCtx *dc; /* each frame is decoded once before it is kept */
	ZSTD_Sequence *seq, *cut;
	size_t seqcap, cutcap, nseq, glen;
	size_t *spos;	      /* where each sequence starts in the input */
	uint8_t *brk;	      /* a block ends after this sequence (the split) */
	struct ezfs_fit sfit; /* the search, with the sequences' trials */
	uint8_t *vbuf;
	size_t vcap;
	uint32_t ratio_q8; /* input / output of the last fill, x256 */
	ZSTD_CCtx *ec;	   /* level 1, for the prediction */
	uint8_t *ebuf;
	size_t ecap;
	double est_k;
	int level, wlog;
	unsigned long long cp_for; /* gc's parameters: for this length */
	size_t lmin, lmax;	   /* the lengths zstd gives these parameters */
	uint8_t *keep; /* the best stream of an earlier parameter set */
	size_t keepcap;
	uint64_t fallbacks; /* fills that went to the trials */
#endif
};

static long zstd_trial(void *arg, const uint8_t *in, size_t len, uint8_t *buf,
		       size_t bufcap)
{
	struct zstd_cctx *cc = arg;
	size_t r = ZSTD_compress2(cc->c, buf, bufcap, in, len);

	if (ZSTD_isError(r))
		return zstd_errno(r) == -ENOMEM ? -ENOMEM : -EIO;
	return (long)r;
}

static size_t zstd_bound(void *arg, size_t len)
{
	(void)arg;
	return ZSTD_compressBound(len);
}

#ifdef ZSTD_SEQ_FILL
/*
 * From this level up the match search is most of zstd's time (btlazy2 and
 * the optimal parsers), and every trial of ezi_codec_fit() repeats it.
 * Instead the search runs once over a guessed range, ZSTD_generateSequences()
 * keeps its sequences, and each trial length L only entropy-codes the
 * sequences cut at L (ZSTD_compressSequences(), a small part of the time):
 * about 1.1 searches per pcluster and 5-7 entropy passes. 64 MiB of text,
 * level 15, 64K: 22 CPU s against 63 with the trials and 110 for 1.9.3
 * (which bisects with whole compressions), 2 blocks smaller. The frame
 * is an ordinary one; each is decoded and compared before it is kept,
 * and anything unexpected falls back to the trials. zstd picks its
 * parameters by the input's size, so the search uses those of the length
 * it will keep (seq_range), and a small input that is likely to fit whole
 * is compressed once, as the trials would.
 */
#define ZSTD_SEQ_LEVEL 15
#define SEQ_MARGIN     1.04
#define SEQ_MARGIN0    1.125

#define ZSTD_SEQ_MINMATCH 3 /* ZSTD_MINMATCH_MIN */

static int seq_room(ZSTD_Sequence **v, size_t *cap, size_t n)
{
	ZSTD_Sequence *p;

	if (n <= *cap)
		return 0;
	p = realloc(*v, n * sizeof(*p));
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = n;
	return 0;
}

/* cc->seq (in[0..glen)) cut at len into cc->cut: the blocks before, the
 * last one ended at len (a match cut short, or literals). */
static size_t seq_cut(struct zstd_cctx *cc, size_t len)
{
	ZSTD_Sequence *o = cc->cut;
	size_t i, k = 0, pos = 0;

	for (i = 0; i < cc->nseq && pos < len; i++) {
		ZSTD_Sequence q = cc->seq[i];

		if (pos + q.litLength >= len || !q.matchLength) {
			if (pos + q.litLength >= len) {
				o[k++] = (ZSTD_Sequence){
					.litLength = (unsigned)(len - pos)
				};
				return k;
			}
			o[k++] = q; /* a block's end */
			pos += q.litLength;
			continue;
		}
		if (pos + q.litLength + q.matchLength > len) {
			q.matchLength = (unsigned)(len - pos - q.litLength);
			if (q.matchLength < ZSTD_SEQ_MINMATCH) {
				o[k++] = (ZSTD_Sequence){
					.litLength = (unsigned)(len - pos)
				};
				return k;
			}
		}
		q.rep = 0;
		o[k++] = q;
		pos += q.litLength + q.matchLength;
		if (cc->brk[i] && pos < len)
			o[k++] = (ZSTD_Sequence){ 0 }; /* the split */
	}
	o[k++] = (ZSTD_Sequence){ 0 }; /* ends the last block */
	return k;
}

/*
 * Block splitting, as ZSTD_compress2() does from btopt up (in 1.5.4 its
 * splitter cannot run with the sequence collector): a block is halved
 * while the halves' estimated sizes are smaller than the whole's, then
 * each half the same way. The estimate: the entropy of the literals and
 * of the literal-length, match-length and offset codes (RFC 8878 3.1.1.3)
 * plus what their tables and the headers take; the extra bits are the same
 * either way. Counting is cheap next to the search (64 MiB of text at
 * level 15: without splitting 3 blocks larger than ZSTD_compress2()).
 */
struct seq_hist {
	uint32_t lit[256], ll[36], ml[53], of[32];
	uint32_t nlit, nseq;
};

/* RFC 8878 3.1.1.3.2.1.1: the baselines of the length codes */
static const uint32_t ll_base[36] = {
	0,  1,	2,   3,	  4,   5,    6,	   7,	 8,    9,     10,    11,
	12, 13, 14,  15,  16,  18,   20,   22,	 24,   28,    32,    40,
	48, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536
};
static const uint32_t ml_base[53] = {
	3,   4,	  5,	6,    7,    8,	  9,	 10,	11,   12, 13,
	14,  15,  16,	17,   18,   19,	  20,	 21,	22,   23, 24,
	25,  26,  27,	28,   29,   30,	  31,	 32,	33,   34, 35,
	37,  39,  41,	43,   47,   51,	  59,	 67,	83,   99, 131,
	259, 515, 1027, 2051, 4099, 8195, 16387, 32771, 65539
};

static unsigned code_of(const uint32_t *base, unsigned n, uint32_t v)
{
	unsigned lo = 0, hi = n - 1;

	while (lo < hi) { /* the last baseline <= v */
		unsigned m = (lo + hi + 1) / 2;

		if (base[m] <= v)
			lo = m;
		else
			hi = m - 1;
	}
	return lo;
}

static unsigned highbit(uint32_t v)
{
	return 31u - (unsigned)__builtin_clz(v);
}

/* h += (sign > 0) or -= the sequences [a, b) */
static void hist_add(const struct zstd_cctx *cc, const uint8_t *in, size_t a,
		     size_t b, struct seq_hist *h, int sign)
{
	size_t i, j;
	uint32_t d = (uint32_t)sign;

	for (i = a; i < b; i++) {
		const ZSTD_Sequence *q = &cc->seq[i];
		const uint8_t *l = in + cc->spos[i];

		for (j = 0; j < q->litLength; j++)
			h->lit[l[j]] += d;
		h->nlit += d * q->litLength;
		h->ll[code_of(ll_base, 36, q->litLength)] += d;
		h->ml[code_of(ml_base, 53, q->matchLength)] += d;
		h->of[highbit(q->offset + 3)] += d;
		h->nseq += d;
	}
}

/* log2(v), v >= 1, to about 1e-5 (libezfs does not link libm):
 * ln(1 + m) = 2 atanh(t), t = m / (2 + m) <= 1/3 */
static double lg2(uint32_t v)
{
	unsigned e = highbit(v);
	double m = (double)v / (double)(1u << e) - 1.0; /* [0, 1) */
	double t = m / (2.0 + m), t2 = t * t;

	return e + 2.8853900817779268 *
			   (t * (1.0 + t2 * (1.0 / 3 + t2 * (0.2 + t2 / 7))));
}

/* sum of c * log2(n / c), and the symbols used */
static double ent(const uint32_t *c, unsigned k, uint32_t n, unsigned *used)
{
	double e = 0;
	unsigned i;

	*used = 0;
	if (!n)
		return 0;
	for (i = 0; i < k; i++)
		if (c[i]) {
			e += (double)c[i] * (lg2(n) - lg2(c[i]));
			(*used)++;
		}
	return e;
}

/* Estimated bits of a block of these counts. */
static double hist_bits(const struct seq_hist *h)
{
	unsigned u;
	double b = 8.0 * 10; /* block, literals and sequences headers */

	b += ent(h->lit, 256, h->nlit, &u) + 4.0 * u;
	b += ent(h->ll, 36, h->nseq, &u) + 5.0 * u;
	b += ent(h->ml, 53, h->nseq, &u) + 5.0 * u;
	b += ent(h->of, 32, h->nseq, &u) + 5.0 * u;
	return b;
}

#define SEQ_SPLIT_MIN 300 /* sequences in a part (zstd: the same) */
#define SEQ_SPLIT_MAX 196 /* parts per block (zstd: the same) */

/* Halve [a, b) (counts hw) while the halves are estimated smaller. */
static void seq_split(struct zstd_cctx *cc, const uint8_t *in, size_t a,
		      size_t b, const struct seq_hist *hw, int *budget)
{
	size_t mid = a + (b - a) / 2, k;
	struct seq_hist hl = { 0 }, hr;

	if (b - a < 2 * SEQ_SPLIT_MIN || *budget <= 0)
		return;
	hist_add(cc, in, a, mid, &hl, 1);
	hr = *hw;
	for (k = 0; k < 256; k++)
		hr.lit[k] -= hl.lit[k];
	for (k = 0; k < 36; k++)
		hr.ll[k] -= hl.ll[k];
	for (k = 0; k < 53; k++)
		hr.ml[k] -= hl.ml[k];
	for (k = 0; k < 32; k++)
		hr.of[k] -= hl.of[k];
	hr.nlit -= hl.nlit;
	hr.nseq -= hl.nseq;
	if (hist_bits(&hl) + hist_bits(&hr) >= hist_bits(hw))
		return;
	cc->brk[mid - 1] = 1;
	(*budget)--;
	seq_split(cc, in, a, mid, &hl, budget);
	seq_split(cc, in, mid, b, &hr, budget);
}

/* The splits of every block of cc->seq. */
static void seq_splits(struct zstd_cctx *cc, const uint8_t *in)
{
	size_t i, a = 0;

	memset(cc->brk, 0, cc->nseq);
	for (i = 0; i < cc->nseq; i++) {
		int budget = SEQ_SPLIT_MAX - 1;

		if (cc->seq[i].matchLength)
			continue;
		/* [a, i): the matches of a block; i: its end */
		if (i - a >= 2 * SEQ_SPLIT_MIN) {
			struct seq_hist hw = { 0 };

			hist_add(cc, in, a, i, &hw, 1);
			seq_split(cc, in, a, i, &hw, &budget);
		}
		a = i + 1;
	}
}

static long seq_trial(void *arg, const uint8_t *in, size_t len, uint8_t *buf,
		      size_t bufcap)
{
	struct zstd_cctx *cc = arg;
	size_t k, r;

	if (len > cc->glen)
		return -EIO;
	k = seq_cut(cc, len);
	r = ZSTD_compressSequences(cc->sc, buf, bufcap, cc->cut, k, in, len);
	if (ZSTD_isError(r))
		return zstd_errno(r) == -ENOMEM ? -ENOMEM : -EIO;
	return (long)r;
}

/* The sequences of in[0..g); false if they do not cover it exactly. */
/* gc searches as ZSTD_compress2() would for want bytes (zstd picks its
 * parameters by the input's size) */
static unsigned long long cp_key(ZSTD_compressionParameters p)
{
	return p.windowLog * 1000003ull + p.chainLog * 1009ull +
	       p.hashLog * 31ull + p.searchLog * 7ull + p.minMatch * 3ull +
	       p.targetLength * 100000007ull + p.strategy;
}

static int seq_params(struct zstd_cctx *cc, size_t want)
{
	ZSTD_compressionParameters p = ZSTD_getCParams(cc->level, want, 0);
	size_t r;

	if (cc->cp_for == cp_key(p))
		return 0;
	cc->cp_for = cp_key(p);
	if ((int)p.windowLog > cc->wlog)
		p.windowLog = (unsigned)cc->wlog;
	r = ZSTD_CCtx_setParameter(cc->gc, ZSTD_c_windowLog, (int)p.windowLog);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cc->gc, ZSTD_c_chainLog,
					   (int)p.chainLog);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cc->gc, ZSTD_c_hashLog,
					   (int)p.hashLog);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cc->gc, ZSTD_c_searchLog,
					   (int)p.searchLog);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cc->gc, ZSTD_c_minMatch,
					   (int)p.minMatch);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cc->gc, ZSTD_c_targetLength,
					   (int)p.targetLength);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cc->gc, ZSTD_c_strategy,
					   (int)p.strategy);
	return ZSTD_isError(r) ? -1 : 0;
}

/* cc->lmin..lmax: the lengths around want (up to g) that zstd would give
 * the same parameters (they change at a few sizes: 16, 128, 256 KiB and
 * where the window shrinks); a trial of another length is not what
 * ZSTD_compress2() would make of it. */
static void seq_range(struct zstd_cctx *cc, size_t want, size_t g)
{
	unsigned long long k = cc->cp_for;
	size_t lo = want, hi = g > want ? g : want;

	while (lo < hi) {
		size_t m = lo + (hi - lo + 1) / 2;

		if (cp_key(ZSTD_getCParams(cc->level, m, 0)) == k)
			lo = m;
		else
			hi = m - 1;
	}
	cc->lmax = lo;
	lo = 1;
	hi = want;
	while (lo < hi) {
		size_t m = lo + (hi - lo) / 2;

		if (cp_key(ZSTD_getCParams(cc->level, m, 0)) == k)
			hi = m;
		else
			lo = m + 1;
	}
	cc->lmin = lo;
}

static int seq_generate(struct zstd_cctx *cc, const uint8_t *in, size_t g,
			size_t want)
{
	/* 1.5.4's bound leaves out the block ends, and the collector does
	 * not check its room: one per block (at most 128 KiB), and more */
	size_t n = ZSTD_sequenceBound(g) + g / 1024 + 16, i, tot = 0;

	if (n > cc->seqcap) {
		size_t *sp = realloc(cc->spos, n * sizeof(*sp));
		uint8_t *bk = sp ? realloc(cc->brk, n) : NULL;

		if (sp)
			cc->spos = sp;
		if (!bk)
			return -ENOMEM;
		cc->brk = bk;
	}
	if (seq_room(&cc->seq, &cc->seqcap, n) ||
	    seq_room(&cc->cut, &cc->cutcap, 2 * n + 2))
		return -ENOMEM;
	cc->glen = 0;
	if (seq_params(cc, want))
		return -EIO;
	seq_range(cc, want, g);
	n = ZSTD_generateSequences(cc->gc, cc->seq, cc->seqcap, in, g);
	if (ZSTD_isError(n) || !n || n > cc->seqcap)
		return -EIO;
	for (i = 0; i < n; i++) {
		cc->spos[i] = tot;
		tot += (size_t)cc->seq[i].litLength + cc->seq[i].matchLength;
	}
	/* a last block of a few bytes is stored raw, without sequences: the
	 * sequences then cover a shorter prefix */
	if (tot > g || tot + 64 < g || cc->seq[n - 1].matchLength)
		return -EIO;
	cc->nseq = n;
	cc->glen = tot;
	seq_splits(cc, in);

	return 0;
}

/* Does out[0..r) decode to exactly in[0..len)? */
static bool seq_verify(struct zstd_cctx *cc, const uint8_t *in, size_t len,
		       const uint8_t *out, size_t r)
{
	size_t d;

	if (len + 1 > cc->vcap) {
		uint8_t *p = realloc(cc->vbuf, len + 1);

		if (!p)
			return false;
		cc->vbuf = p;
		cc->vcap = len + 1;
	}
	d = ZSTD_decompressDCtx(cc->dc, cc->vbuf, len + 1, out, r);
	return !ZSTD_isError(d) && d == len && !memcmp(cc->vbuf, in, len);
}

/* Output bytes per input byte of in[0..len) at level 1 (cc->ec), or 0. */
static double seq_cheap_rate(struct zstd_cctx *cc, const uint8_t *in,
			     size_t len)
{
	size_t need = ZSTD_compressBound(len), r;

	if (need > cc->ecap) {
		uint8_t *p = realloc(cc->ebuf, need);

		if (!p)
			return 0;
		cc->ebuf = p;
		cc->ecap = need;
	}
	r = ZSTD_compressCCtx(cc->ec, cc->ebuf, cc->ecap, in, len, 1);
	return ZSTD_isError(r) || !r ? 0 : (double)r / (double)len;
}

/*
 * The fill: the search over a range a little longer than predicted, then
 * ezi_codec_fit() with the sequences' trials. The prediction: the last
 * pcluster's ratio gives a length, a level-1 pass over it (~1/50 of the
 * search) says how this stretch compresses, scaled by the level's output
 * over level 1's on the last pcluster (est_k). Source text: 3-16 % more
 * searched than kept. All of the range fitting: once more, longer.
 * > 0: the stream in out; -EAGAIN: use the trials.
 */
static int zstd_seq_fill(struct zstd_cctx *cc, const uint8_t *in, size_t *inlen,
			 uint8_t *out, size_t outcap)
{
	size_t n = *inlen, g, l, l0, expect, keep_l = 0;
	double want, erate = 0;
	int r = -EAGAIN, round, keep_r = 0;
	bool again = false;

	if (outcap > cc->keepcap) {
		uint8_t *p = realloc(cc->keep, outcap);

		if (!p)
			return -ENOMEM;
		cc->keep = p;
		cc->keepcap = outcap;
	}
	l0 = cc->ratio_q8 ? (size_t)((double)outcap * cc->ratio_q8 / 256.0)
			  : 4 * outcap;
	if (l0 >= n) {
		/* all of it is likely to fit (a small file, a file's end):
		 * one compression, as the trials would start */
		size_t z = ZSTD_compress2(cc->c, out, outcap, in, n);

		if (!ZSTD_isError(z) && z > 0) {
			*inlen = n;
			return (int)z;
		}
		l0 = n;
	}
	want = (double)l0 * SEQ_MARGIN0;
	if (l0 < n && (erate = seq_cheap_rate(cc, in, l0)) > 0 && cc->est_k > 0)
		want = (double)outcap / (erate * cc->est_k) * SEQ_MARGIN;
	expect = (size_t)(want / SEQ_MARGIN);
	want += 256;
	for (round = 0; round < 6; round++) {
		size_t cap;

		if (expect > n)
			expect = n;
		g = want >= (double)n ? n : (size_t)want;
		if (g < expect)
			g = expect;
		r = seq_generate(cc, in, g, expect);
		if (r)
			break;
		g = cc->glen;
		cap = g < cc->lmax ? g : cc->lmax;
		l = cap;
		r = ezi_codec_fit(&cc->sfit, in, &l, out, outcap);
		if (r > 0 && l == cap && cap < n) {
			if (cap == cc->lmax) {
				/* fits up to where zstd's parameters change:
				 * keep it, try the next ones */
				memcpy(cc->keep, out, (size_t)r);
				keep_l = l;
				keep_r = r;
				expect = l + 1;
				want = (double)expect * SEQ_MARGIN + 256;
				continue;
			}
			/* all of it fits: as much more as the output has room
			 */
			want = (double)g * (double)outcap / (double)r *
				       SEQ_MARGIN +
			       512;
			if (want < (double)g * 1.05)
				want = (double)g * 1.05;
			continue;
		}
		if (r <= 0 && keep_l) {
			l = 0; /* the kept one */
		} else if (r <= 0) {
			r = r == -ENOMEM ? r : -EAGAIN;
			break;
		} else if (l < cc->lmin && !again && l > keep_l) {
			/* searched with the parameters of a longer input */
			again = true;
			expect = l;
			want = (double)l * SEQ_MARGIN + 256;
			continue;
		}
		if (keep_l > l) {
			memcpy(out, cc->keep, (size_t)keep_r);
			l = keep_l;
			r = keep_r;
		}
		if (!seq_verify(cc, in, l, out, (size_t)r)) {
			r = -EAGAIN;
			break;
		}
		if (l < n) {
			size_t q = (size_t)((double)l * 256.0 / (double)r);

			cc->ratio_q8 =
				q < UINT32_MAX ? (uint32_t)q : UINT32_MAX;
			/* level-1 rate over the same stretch, for est_k */
			erate = seq_cheap_rate(cc, in, l);
			if (erate > 0)
				cc->est_k = (double)r / (double)l / erate;
		}
		*inlen = l;
		return r;
	}
	cc->glen = 0;
	if (r == -ENOMEM)
		return r;
	cc->fallbacks++;
	return -EAGAIN;
}
#endif

#ifdef ZSTD_SEQ_FILL
/* The entropy stage's context (the same level, window and frame flags as
 * cc->c, explicit block ends, sequences checked) and the verifier; 0 or
 * nonzero (then the trials only). */
static int zstd_seq_new(struct zstd_cctx *cc, int level,
			const struct ezfs_codec_cfg *cfg)
{
	size_t r;

	cc->level = level;
	cc->wlog = (int)cfg->zstd_windowlog + 10;
	cc->gc = ZSTD_createCCtx();
	cc->ec = ZSTD_createCCtx();
	cc->sc = ZSTD_createCCtx();
	cc->dc = ZSTD_createDCtx();
	if (!cc->gc || !cc->ec || !cc->sc || !cc->dc)
		return -1;
	r = ZSTD_CCtx_setParameter(cc->gc, ZSTD_c_compressionLevel, level);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cc->gc, ZSTD_c_windowLog,
					   (int)cfg->zstd_windowlog + 10);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cc->gc, ZSTD_c_useBlockSplitter,
					   ZSTD_ps_disable);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cc->sc, ZSTD_c_compressionLevel,
					   level);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cc->sc, ZSTD_c_windowLog,
					   (int)cfg->zstd_windowlog + 10);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cc->sc, ZSTD_c_checksumFlag, 0);
	/* no match search there: the smallest tables (the strategy stays,
	 * the entropy stage looks at it) */
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cc->sc, ZSTD_c_hashLog,
					   ZSTD_HASHLOG_MIN);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cc->sc, ZSTD_c_chainLog,
					   ZSTD_CHAINLOG_MIN);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cc->sc, ZSTD_c_searchLog,
					   ZSTD_SEARCHLOG_MIN);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cc->sc, ZSTD_c_blockDelimiters,
					   ZSTD_sf_explicitBlockDelimiters);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cc->sc, ZSTD_c_validateSequences, 1);
	if (ZSTD_isError(r))
		return -1;
	cc->sfit.trial = seq_trial;
	cc->sfit.bound = zstd_bound;
	cc->sfit.arg = cc;
	return 0;
}
#endif

/*
 * The frame's window must stay within what the image records (cfg), so
 * cfg is required. Frames are one-shot (ZSTD_compress2): the content size
 * is in the header, no checksum.
 */
static void *zstd_cctx_new(int level, const struct ezfs_codec_cfg *cfg,
			   int *err)
{
	struct zstd_cctx *cc;
	size_t r;

	/* a negative level is zstd's own (fast) level, as mkfs.erofs 1.9.3
	 * passes it on: its -zzstd without a level is level -1 */
	if (level < ZSTD_minCLevel())
		level = ZSTD_minCLevel();
	if (!cfg || cfg->zstd_windowlog > 10 || level > ZSTD_maxCLevel()) {
		*err = -EINVAL;
		return NULL;
	}
	cc = calloc(1, sizeof(*cc));
	if (!cc)
		goto nomem;
	cc->c = ZSTD_createCCtx();
	if (!cc->c) {
		free(cc);
		goto nomem;
	}
	r = ZSTD_CCtx_setParameter(cc->c, ZSTD_c_compressionLevel, level);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cc->c, ZSTD_c_windowLog,
					   (int)cfg->zstd_windowlog + 10);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cc->c, ZSTD_c_checksumFlag, 0);
	if (ZSTD_isError(r)) {
		ZSTD_freeCCtx(cc->c);
		free(cc);
		*err = -EINVAL;
		return NULL;
	}
	cc->fit.trial = zstd_trial;
	cc->fit.bound = zstd_bound;
	cc->fit.arg = cc;
#ifdef ZSTD_SEQ_FILL
	if (level >= ZSTD_SEQ_LEVEL && zstd_seq_new(cc, level, cfg)) {
		ZSTD_freeCCtx(cc->gc);
		ZSTD_freeCCtx(cc->ec);
		ZSTD_freeCCtx(cc->sc);
		ZSTD_freeDCtx(cc->dc);
		cc->gc = cc->ec = cc->sc = NULL;
		cc->dc = NULL;
	}
#endif
	*err = 0;
	return cc;
nomem:
	*err = -ENOMEM;
	return NULL;
}

static void zstd_cctx_free(void *cctx)
{
	struct zstd_cctx *cc = cctx;

	if (!cc)
		return;
	ezi_codec_fit_free(&cc->fit);
#ifdef ZSTD_SEQ_FILL
	ezi_codec_fit_free(&cc->sfit);
	ZSTD_freeCCtx(cc->gc);
	ZSTD_freeCCtx(cc->ec);
	ZSTD_freeCCtx(cc->sc);
	ZSTD_freeDCtx(cc->dc);
	free(cc->ebuf);
	free(cc->seq);
	free(cc->spos);
	free(cc->keep);
	free(cc->brk);
	free(cc->cut);
	free(cc->vbuf);
#endif
	ZSTD_freeCCtx(cc->c);
	free(cc);
}

/*
 * A reused ZSTD_CCtx gives each frame the bytes a fresh one would
 * (libzstd's tables are invalidated by index, not by their contents;
 * checked on the images of the linux tree at levels 1, 3, 6, 9 and 12).
 * The sequence fill's predictions are more state than this resets: such
 * contexts are freed.
 */
static int zstd_cctx_reset(void *cctx)
{
	struct zstd_cctx *cc = cctx;

#ifdef ZSTD_SEQ_FILL
	if (cc->sc)
		return -EBUSY;
#endif
	ezi_codec_fit_reset(&cc->fit);
	return 0;
}

/* libzstd has no fixed-output mode: search with ezi_codec_fit(). A frame
 * starts with its magic, never with 0x00. */
static int zstd_compress_destsize(void *cctx, const uint8_t *in, size_t *inlen,
				  uint8_t *out, size_t outcap)
{
	struct zstd_cctx *cc = cctx;

	if (outcap > INT_MAX)
		outcap = INT_MAX;
#ifdef ZSTD_SEQ_FILL
	if (cc->sc && *inlen) {
		int r = zstd_seq_fill(cc, in, inlen, out, outcap);

		if (r != -EAGAIN)
			return r;
	}
#endif
	return ezi_codec_fit(&cc->fit, in, inlen, out, outcap);
}

static const char *zstd_version(void)
{
	return ZSTD_versionString();
}

const struct ezfs_codec_ops ezi_codec_zstd = {
	.name = "zstd",
	.alg = EZFS_ALG_ZSTD,
	.flags = EZFS_CODEC_PARTIAL | EZFS_CODEC_DECODE | EZFS_CODEC_ENCODE |
		 EZFS_CODEC_FIT,
	.ctx_new = zstd_ctx_new,
	.ctx_free = zstd_ctx_free,
	.decompress = zstd_decompress,
	.min_level = -131072, /* ZSTD_minCLevel() of libzstd 1.5 */
	.max_level = 22,
	.default_level = ZSTD_CLEVEL_DEFAULT,
	.cctx_new = zstd_cctx_new,
	.cctx_free = zstd_cctx_free,
	.cctx_reset = zstd_cctx_reset,
	.compress_destsize = zstd_compress_destsize,
	.lib = "libzstd",
	.version = zstd_version,
};
#else /* !EZFS_HAVE_ZSTD: built without libzstd */
const struct ezfs_codec_ops ezi_codec_zstd =
	EZI_CODEC_STUB("zstd", EZFS_ALG_ZSTD);
#endif
