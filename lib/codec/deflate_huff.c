/* SPDX-License-Identifier: MIT */
/*
 * deflate_huff.c - Huffman codes, exact block costs and the block writer of
 * ezfs' DEFLATE encoder (RFC 1951, 3.2.5-3.2.7).
 *
 * Code lengths are optimal (Moffat and Katajainen's in-place algorithm on
 * the sorted frequencies), then limited to 15 bits (7 for the code-length
 * code) by moving leaves down and back up until the Kraft sum is exactly
 * one: every code is complete, as zlib's inflate insists (a single used
 * symbol gets a second, unused one so that the code has two 1-bit
 * entries).
 */
#include <string.h>

#include "deflate_enc.h"

/* Extra bits per length slot and distance slot. */
static inline unsigned len_extra(unsigned slot)
{
	return slot < 8 || slot == 28 ? 0 : (slot - 4) >> 2;
}

static inline unsigned len_base(unsigned slot)
{
	if (slot < 8)
		return slot + 3;
	if (slot == 28)
		return 258;
	return 3 + ((4 + (slot & 3)) << ((slot >> 2) - 1));
}

static inline unsigned dist_extra(unsigned slot)
{
	return slot < 4 ? 0 : (slot >> 1) - 1;
}

static inline unsigned dist_base(unsigned slot)
{
	if (slot < 4)
		return slot + 1;
	return 1 + ((2 + (slot & 1)) << ((slot >> 1) - 1));
}

void ezi_dfl_count(struct dfl_freqs *f, const uint32_t *items, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint32_t it = items[i];
		unsigned len = DFL_ITEM_LEN(it);

		if (!len) {
			f->lit[it]++;
			continue;
		}
		f->lit[257 + dfl_len_slot(len)]++;
		f->dist[dfl_dist_slot(DFL_ITEM_DIST(it))]++;
	}
}

/*
 * Sort the used symbols by frequency (stable: by symbol among equals):
 * LSD radix on the frequency's bytes, as many passes as the largest one
 * has bytes (one or two for a pcluster's block).
 */
static void sort_by_freq(uint32_t *sym, uint32_t *tmp, unsigned m,
			 const uint32_t *freq, uint32_t maxf)
{
	unsigned shift, i;

	for (shift = 0; shift < 32 && (maxf >> shift); shift += 8) {
		unsigned cnt[257] = { 0 };

		for (i = 0; i < m; i++)
			cnt[((freq[sym[i]] >> shift) & 255) + 1]++;
		for (i = 1; i < 257; i++)
			cnt[i] += cnt[i - 1];
		for (i = 0; i < m; i++)
			tmp[cnt[(freq[sym[i]] >> shift) & 255]++] = sym[i];
		memcpy(sym, tmp, m * sizeof(*sym));
	}
}

/*
 * In-place minimum-redundancy code lengths (Moffat & Katajainen, 1995):
 * w[0..n) ascending weights in, code lengths out (w[0] the longest).
 */
static void mr_lengths(uint32_t *w, int n)
{
	int root = 0, leaf = 2, next, avail, used, depth;

	w[0] += w[1];
	for (next = 1; next < n - 1; next++) {
		if (leaf >= n || w[root] < w[leaf]) {
			w[next] = w[root];
			w[root++] = (uint32_t)next;
		} else {
			w[next] = w[leaf++];
		}
		if (leaf >= n || (root < next && w[root] < w[leaf])) {
			w[next] += w[root];
			w[root++] = (uint32_t)next;
		} else {
			w[next] += w[leaf++];
		}
	}
	w[n - 2] = 0;
	for (next = n - 3; next >= 0; next--)
		w[next] = w[w[next]] + 1;
	avail = 1;
	used = depth = 0;
	root = n - 2;
	next = n - 1;
	while (avail > 0) {
		while (root >= 0 && w[root] == (uint32_t)depth) {
			used++;
			root--;
		}
		while (avail > used) {
			w[next--] = (uint32_t)depth;
			avail--;
		}
		avail = 2 * used;
		depth++;
		used = 0;
	}
}

/* Code lengths for freq[0..n), each <= maxbits, the code complete. */
static void huff_lengths(const uint32_t *freq, unsigned n, unsigned maxbits,
			 uint8_t *len)
{
	uint32_t sym[DFL_NLITLEN], tmp[DFL_NLITLEN], w[DFL_NLITLEN];
	unsigned count[32] = { 0 }, m = 0, i, l;
	uint64_t kraft = 0, one = (uint64_t)1 << maxbits;
	uint32_t maxf = 0;

	memset(len, 0, n);
	for (i = 0; i < n; i++) {
		if (freq[i]) {
			sym[m++] = i;
			if (freq[i] > maxf)
				maxf = freq[i];
		}
	}
	if (m < 2) { /* two 1-bit codes, one maybe unused */
		unsigned s = m ? sym[0] : 0;

		len[s] = 1;
		len[s ? 0 : 1] = 1;
		return;
	}
	sort_by_freq(sym, tmp, m, freq, maxf);
	for (i = 0; i < m; i++)
		w[i] = freq[sym[i]];
	mr_lengths(w, (int)m);
	for (i = 0; i < m; i++) {
		l = w[i] > maxbits ? maxbits : w[i];
		count[l]++;
		kraft += one >> l;
	}
	/* too deep: lengthen the deepest codes above maxbits' level ... */
	while (kraft > one) {
		for (l = maxbits - 1; !count[l]; l--)
			;
		count[l]--;
		count[l + 1]++;
		kraft -= one >> (l + 1);
	}
	/* ... and shorten where that overshot, to a complete code */
	while (kraft < one) {
		for (l = maxbits; !count[l] || (one >> l) > one - kraft; l--)
			;
		count[l]--;
		count[l - 1]++;
		kraft += one >> l;
	}
	/* the rarest symbols get the longest codes */
	for (i = 0, l = maxbits; i < m; i++) {
		while (!count[l])
			l--;
		count[l]--;
		len[sym[i]] = (uint8_t)l;
	}
}

static const uint8_t precode_order[19] = { 16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
					   11, 4,  12, 3, 13, 2, 14, 1, 15 };

/* Run-length code the lengths (symbols 16, 17, 18); fills p->rle and the
 * code-length code; returns the header's size in bits. */
static uint64_t plan_header(struct ezi_dfl_plan *p)
{
	uint8_t all[DFL_NLITLEN + DFL_NDIST];
	uint32_t pf[19] = { 0 };
	unsigned n, i, j, r;
	uint64_t bits;

	for (p->hlit = DFL_NLITLEN; p->hlit > 257 && !p->litlen[p->hlit - 1];)
		p->hlit--;
	for (p->hdist = DFL_NDIST; p->hdist > 1 && !p->distlen[p->hdist - 1];)
		p->hdist--;
	memcpy(all, p->litlen, p->hlit);
	memcpy(all + p->hlit, p->distlen, p->hdist);
	n = p->hlit + p->hdist;
	p->nrle = 0;
	for (i = 0; i < n; i = j) {
		uint8_t v = all[i];

		for (j = i + 1; j < n && all[j] == v; j++)
			;
		r = j - i;
		if (!v) {
			while (r >= 11) {
				unsigned k = r > 138 ? 138 : r;

				p->rle[p->nrle++] =
					(uint16_t)(18 | (k - 11) << 5);
				r -= k;
			}
			if (r >= 3) {
				p->rle[p->nrle++] =
					(uint16_t)(17 | (r - 3) << 5);
				r = 0;
			}
		} else {
			p->rle[p->nrle++] = v;
			r--;
			while (r >= 3) {
				unsigned k = r > 6 ? 6 : r;

				p->rle[p->nrle++] =
					(uint16_t)(16 | (k - 3) << 5);
				r -= k;
			}
		}
		while (r--)
			p->rle[p->nrle++] = v;
	}
	for (i = 0; i < p->nrle; i++)
		pf[p->rle[i] & 31]++;
	huff_lengths(pf, 19, 7, p->prelen);
	for (p->hclen = 19;
	     p->hclen > 4 && !p->prelen[precode_order[p->hclen - 1]];)
		p->hclen--;
	bits = 5 + 5 + 4 + 3 * (uint64_t)p->hclen;
	for (i = 0; i < 19; i++)
		bits += (uint64_t)pf[i] * p->prelen[i];
	bits += (uint64_t)pf[16] * 2 + (uint64_t)pf[17] * 3 +
		(uint64_t)pf[18] * 7;
	return bits;
}

static uint8_t fixed_litlen(unsigned s)
{
	return s < 144 ? 8 : s < 256 ? 9 : s < 280 ? 7 : 8;
}

void ezi_dfl_plan(const struct dfl_freqs *f, struct ezi_dfl_plan *p)
{
	uint32_t lf[DFL_NLITLEN];
	uint64_t extra = 3, dyn = 0, fix = 0; /* 3: the block header */
	unsigned s;

	memcpy(lf, f->lit, sizeof(lf));
	lf[DFL_EOB] = 1;
	for (s = 0; s < 29; s++)
		extra += (uint64_t)lf[257 + s] * len_extra(s);
	for (s = 0; s < DFL_NDIST; s++)
		extra += (uint64_t)f->dist[s] * dist_extra(s);
	huff_lengths(lf, DFL_NLITLEN, DFL_MAXBITS, p->litlen);
	huff_lengths(f->dist, DFL_NDIST, DFL_MAXBITS, p->distlen);
	for (s = 0; s < DFL_NLITLEN; s++) {
		fix += (uint64_t)lf[s] * fixed_litlen(s);
		dyn += (uint64_t)lf[s] * p->litlen[s];
	}
	for (s = 0; s < DFL_NDIST; s++) {
		fix += (uint64_t)f->dist[s] * 5;
		dyn += (uint64_t)f->dist[s] * p->distlen[s];
	}
	dyn += extra + plan_header(p);
	fix += extra;
	if (dyn < fix) {
		p->dynamic = 1;
		p->bits = dyn;
		return;
	}
	p->dynamic = 0;
	p->bits = fix;
	for (s = 0; s < DFL_NLITLEN; s++)
		p->litlen[s] = fixed_litlen(s);
	memset(p->distlen, 5, sizeof(p->distlen));
}

/* ---- writing ---- */

static inline void put(struct dfl_bw *w, uint32_t v, unsigned n)
{
	w->acc |= (uint64_t)v << w->nacc;
	w->nacc += n;
	if (w->nacc >= 32) {
		if (w->cap - w->pos < 4) {
			w->overflow = 1;
			w->nacc -= 32;
			w->acc >>= 32;
			return;
		}
		w->out[w->pos] = (uint8_t)w->acc;
		w->out[w->pos + 1] = (uint8_t)(w->acc >> 8);
		w->out[w->pos + 2] = (uint8_t)(w->acc >> 16);
		w->out[w->pos + 3] = (uint8_t)(w->acc >> 24);
		w->pos += 4;
		w->acc >>= 32;
		w->nacc -= 32;
	}
}

/* Canonical codes of lens[0..n), bit-reversed for LSB-first output. */
static void make_codes(const uint8_t *lens, unsigned n, uint16_t *codes)
{
	unsigned count[16] = { 0 }, next[16], s, l, code = 0;

	for (s = 0; s < n; s++)
		count[lens[s]]++;
	count[0] = 0;
	for (l = 1; l < 16; l++) {
		code = (code + count[l - 1]) << 1;
		next[l] = code;
	}
	for (s = 0; s < n; s++) {
		unsigned c, r = 0;

		l = lens[s];
		if (!l)
			continue;
		c = next[l]++;
		for (unsigned b = 0; b < l; b++)
			r |= ((c >> b) & 1) << (l - 1 - b);
		codes[s] = (uint16_t)r;
	}
}

void ezi_dfl_write_block(struct dfl_bw *w, const struct ezi_dfl_plan *p,
			 const uint32_t *items, size_t n, int final)
{
	uint16_t lc[DFL_NLITLEN + 2], dc[DFL_NDIST], pc[19];
	uint8_t ll[DFL_NLITLEN + 2];
	size_t i;

	/* the fixed code has 288 symbols: 286 and 287 shift the 9-bit
	 * codes that follow the 8-bit ones */
	memcpy(ll, p->litlen, DFL_NLITLEN);
	ll[DFL_NLITLEN] = ll[DFL_NLITLEN + 1] = p->dynamic ? 0 : 8;
	make_codes(ll, DFL_NLITLEN + 2, lc);
	make_codes(p->distlen, DFL_NDIST, dc);
	put(w, (unsigned) final | (p->dynamic ? 2u : 1u) << 1, 3);
	if (p->dynamic) {
		make_codes(p->prelen, 19, pc);
		put(w, p->hlit - 257, 5);
		put(w, p->hdist - 1, 5);
		put(w, p->hclen - 4, 4);
		for (i = 0; i < p->hclen; i++)
			put(w, p->prelen[precode_order[i]], 3);
		for (i = 0; i < p->nrle; i++) {
			unsigned s = p->rle[i] & 31, x = p->rle[i] >> 5;

			put(w, pc[s], p->prelen[s]);
			if (s >= 16)
				put(w, x, s == 16 ? 2 : s == 17 ? 3 : 7);
		}
	}
	for (i = 0; i < n; i++) {
		uint32_t it = items[i];
		unsigned len = DFL_ITEM_LEN(it), s, d;

		if (!len) {
			put(w, lc[it], p->litlen[it]);
			continue;
		}
		s = dfl_len_slot(len);
		put(w, lc[257 + s], p->litlen[257 + s]);
		put(w, len - len_base(s), len_extra(s));
		d = DFL_ITEM_DIST(it);
		s = dfl_dist_slot(d);
		put(w, dc[s], p->distlen[s]);
		put(w, d - dist_base(s), dist_extra(s));
	}
	put(w, lc[DFL_EOB], p->litlen[DFL_EOB]);
}

size_t ezi_dfl_bw_finish(struct dfl_bw *w)
{
	while (w->nacc > 0) {
		if (w->pos >= w->cap) {
			w->overflow = 1;
			break;
		}
		w->out[w->pos++] = (uint8_t)w->acc;
		w->acc >>= 8;
		w->nacc = w->nacc > 8 ? w->nacc - 8 : 0;
	}
	return w->overflow ? 0 : w->pos;
}
