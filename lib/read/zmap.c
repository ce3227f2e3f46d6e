/* SPDX-License-Identifier: MIT */
/*
 * zmap.c - map a logical offset of a compressed inode to its extent.
 *
 * Three index formats (format notes, section 9): full 8-byte lcluster
 * indexes, compact 2B/4B packs, and 48-bit encoded extent records. The
 * lookup mirrors the kernel: load the lcluster of the offset, look back to
 * the HEAD that starts its extent, size the pcluster from the CBLKCNT of the
 * following lcluster, and walk forward with delta[1] for the full length.
 */
#include <string.h>
#include <sys/stat.h>

#include "read/internal.h"

/* One decoded lcluster index entry. */
struct lrec {
	uint8_t type;
	bool partialref;
	uint16_t clusterofs;
	uint16_t delta[2];
	uint32_t cblks; /* CBLKCNT value, 0 if none */
	uint64_t pblk;
	uint64_t nextpackoff; /* position right after this entry's pack */
};

#define NID(ino) ((unsigned long long)(ino)->nid)

static uint64_t total_lclusters(const ezfs_inode *ino)
{
	uint64_t lcs = 1ull << ino->z.lclusterbits;

	return (ino->size + lcs - 1) >> ino->z.lclusterbits;
}

static int load_full(ezfs_inode *ino, uint64_t lcn, struct lrec *r)
{
	ezfs_image *img = ino->img;
	uint64_t pos = Z_EROFS_FULL_INDEX_START(ino->z.hpos) + lcn * 8;
	uint8_t di[8];
	uint16_t advise;
	int err;

	err = ezi_meta_read(img, ino->in_metabox, pos, di, sizeof(di));
	if (err)
		return err;
	memset(r, 0, sizeof(*r));
	r->nextpackoff = pos + 8;
	advise = get_le16(di);
	r->type = advise & Z_EROFS_LI_LCLUSTER_TYPE_MASK;
	if (r->type == Z_EROFS_LCLUSTER_TYPE_NONHEAD) {
		r->clusterofs = (uint16_t)(1u << ino->z.lclusterbits);
		r->delta[0] = get_le16(di + 4);
		r->delta[1] = get_le16(di + 6);
		if (r->delta[0] & Z_EROFS_LI_D0_CBLKCNT) {
			EZFS_CHECK(img,
				   ino->z.advise &
					   (Z_EROFS_ADVISE_BIG_PCLUSTER_1 |
					    Z_EROFS_ADVISE_BIG_PCLUSTER_2),
				   "nid %llu: CBLKCNT at lcn %llu without big "
				   "pclusters",
				   NID(ino), (unsigned long long)lcn);
			r->cblks = r->delta[0] & ~Z_EROFS_LI_D0_CBLKCNT;
			r->delta[0] = 1;
		}
	} else {
		r->partialref = advise & Z_EROFS_LI_PARTIAL_REF;
		r->clusterofs = get_le16(di + 2);
		EZFS_CHECK(img, r->clusterofs < (1u << ino->z.lclusterbits),
			   "nid %llu: clusterofs %u out of range at lcn %llu",
			   NID(ino), r->clusterofs, (unsigned long long)lcn);
		r->pblk = get_le32(di + 4);
	}
	return 0;
}

static unsigned decode_bits(const uint8_t *in, unsigned pos, unsigned lobits,
			    unsigned *lo)
{
	uint32_t v = get_le32(in + pos / 8) >> (pos & 7);

	*lo = v & ((1u << lobits) - 1);
	return (v >> lobits) & 3;
}

/* delta[1] of NONHEAD entry i inside a pack (format notes 9.5.2). */
static unsigned la_distance(const uint8_t *in, unsigned encodebits,
			    unsigned lobits, unsigned vcnt, unsigned i)
{
	unsigned lo = 0, d1 = 0;

	do {
		if (decode_bits(in, encodebits * i, lobits, &lo) !=
		    Z_EROFS_LCLUSTER_TYPE_NONHEAD)
			return d1;
		++d1;
	} while (++i < vcnt);
	if (!(lo & Z_EROFS_LI_D0_CBLKCNT))
		d1 += lo - 1;
	return d1;
}

static int load_compact(ezfs_inode *ino, uint64_t lcn, bool lookahead,
			struct lrec *r)
{
	ezfs_image *img = ino->img;
	const unsigned lcb = ino->z.lclusterbits;
	const uint64_t ebase = ino->z.hpos + 8;
	const uint64_t totalidx = (ino->size + img->blksz - 1) >> img->blkbits;
	const bool big = ino->z.advise & Z_EROFS_ADVISE_BIG_PCLUSTER_1;
	uint64_t init4, n2b = 0, pos = ebase, rel = lcn, packpos;
	unsigned shift = 2, vcnt, lobits, encodebits, packsz, lo, type;
	uint8_t pack[32];
	int i, err;

	EZFS_CHECK(img, lcn < totalidx && lcb <= 14,
		   "nid %llu: lcluster %llu out of range", NID(ino),
		   (unsigned long long)lcn);
	init4 = ((32 - ebase % 32) / 4) & 7;
	if ((ino->z.advise & Z_EROFS_ADVISE_COMPACTED_2B) && init4 < totalidx)
		n2b = (totalidx - init4) / 16 * 16;
	if (rel >= init4) {
		pos += init4 * 4;
		rel -= init4;
		if (rel < n2b) {
			shift = 1;
		} else {
			pos += n2b * 2;
			rel -= n2b;
		}
	}
	pos += rel << shift;
	if (shift == 2) {
		vcnt = 2;
	} else {
		EZFS_CHECK(img, lcb <= 12,
			   "nid %llu: 2B compact indexes with lcluster 2^%u",
			   NID(ino), lcb);
		vcnt = 16;
	}
	packsz = vcnt << shift;
	packpos = pos & ~(uint64_t)(packsz - 1);
	err = ezi_meta_read(img, ino->in_metabox, packpos, pack, packsz);
	if (err)
		return err;
	memset(r, 0, sizeof(*r));
	r->nextpackoff = packpos + packsz;
	lobits = lcb > 12 ? lcb : 12;
	encodebits = (packsz - 4) * 8 / vcnt;
	i = (int)((pos - packpos) >> shift);

	type = decode_bits(pack, encodebits * (unsigned)i, lobits, &lo);
	r->type = (uint8_t)type;
	if (type == Z_EROFS_LCLUSTER_TYPE_NONHEAD) {
		r->clusterofs = (uint16_t)(1u << lcb);
		if (lookahead)
			r->delta[1] = (uint16_t)la_distance(
				pack, encodebits, lobits, vcnt, (unsigned)i);
		if (lo & Z_EROFS_LI_D0_CBLKCNT) {
			EZFS_CHECK(img, big,
				   "nid %llu: CBLKCNT at lcn %llu without big "
				   "pclusters",
				   NID(ino), (unsigned long long)lcn);
			r->cblks = lo & ~Z_EROFS_LI_D0_CBLKCNT;
			r->delta[0] = 1;
			return 0;
		}
		if (i + 1 != (int)vcnt) {
			r->delta[0] = (uint16_t)lo;
			return 0;
		}
		/* The last entry of a pack stores delta[1]: derive delta[0]
		 * from the entry before it. */
		type = decode_bits(pack, encodebits * (unsigned)(i - 1), lobits,
				   &lo);
		if (type != Z_EROFS_LCLUSTER_TYPE_NONHEAD)
			lo = 0;
		else if (lo & Z_EROFS_LI_D0_CBLKCNT)
			lo = 1;
		r->delta[0] = (uint16_t)(lo + 1);
		return 0;
	}
	r->clusterofs = (uint16_t)lo;
	EZFS_CHECK(img, lo < (1u << lcb),
		   "nid %llu: clusterofs %u out of range at lcn %llu", NID(ino),
		   lo, (unsigned long long)lcn);
	/* [9.5.3] the HEAD's block: pack base plus the earlier pclusters */
	{
		uint64_t nblk;

		if (!big) {
			nblk = 1;
			while (i > 0) {
				--i;
				type = decode_bits(pack,
						   encodebits * (unsigned)i,
						   lobits, &lo);
				if (type == Z_EROFS_LCLUSTER_TYPE_NONHEAD)
					i -= (int)lo;
				if (i >= 0)
					++nblk;
			}
		} else {
			nblk = 0;
			while (i > 0) {
				--i;
				type = decode_bits(pack,
						   encodebits * (unsigned)i,
						   lobits, &lo);
				if (type == Z_EROFS_LCLUSTER_TYPE_NONHEAD) {
					if (lo & Z_EROFS_LI_D0_CBLKCNT) {
						--i;
						nblk += lo &
							~Z_EROFS_LI_D0_CBLKCNT;
						continue;
					}
					EZFS_CHECK(img, lo > 1,
						   "nid %llu: bogus delta[0] "
						   "%u in "
						   "a big pcluster pack",
						   NID(ino), lo);
					i -= (int)lo - 2;
					continue;
				}
				++nblk;
			}
		}
		r->pblk = get_le32(pack + packsz - 4) + nblk;
	}
	return 0;
}

static int load_lcluster(ezfs_inode *ino, uint64_t lcn, bool lookahead,
			 struct lrec *r)
{
	if (ino->layout == EROFS_INODE_COMPRESSED_FULL) {
		EZFS_CHECK(ino->img, lcn < total_lclusters(ino),
			   "nid %llu: lcluster %llu out of range", NID(ino),
			   (unsigned long long)lcn);
		return load_full(ino, lcn, r);
	}
	return load_compact(ino, lcn, lookahead, r);
}

/* Walk back from lcn by distance to the HEAD of its extent. */
static int lookback(ezfs_inode *ino, uint64_t lcn, unsigned distance,
		    struct lrec *r, uint64_t *headlcn)
{
	int err;

	while (distance && lcn >= distance) {
		lcn -= distance;
		err = load_lcluster(ino, lcn, false, r);
		if (err)
			return err;
		if (r->type != Z_EROFS_LCLUSTER_TYPE_NONHEAD) {
			*headlcn = lcn;
			return 0;
		}
		distance = r->delta[0];
	}
	ezfs_err(ino->img, "nid %llu: bogus lookback distance %u at lcn %llu",
		 NID(ino), distance, (unsigned long long)lcn);
	return -EUCLEAN;
}

/* Physical size of the pcluster whose HEAD is at headlcn [9.6]. */
static int compressed_len(ezfs_inode *ino, uint64_t headlcn, unsigned htype,
			  uint64_t *plen)
{
	const uint16_t adv = ino->z.advise;
	bool big = htype == Z_EROFS_LCLUSTER_TYPE_HEAD1
			   ? (adv & Z_EROFS_ADVISE_BIG_PCLUSTER_1)
			   : (adv & Z_EROFS_ADVISE_BIG_PCLUSTER_2);
	uint64_t blocks = 1;
	struct lrec r;
	int err;

	if (big && ((headlcn + 1) << ino->z.lclusterbits) < ino->size) {
		err = load_lcluster(ino, headlcn + 1, false, &r);
		if (err)
			return err;
		if (r.type == Z_EROFS_LCLUSTER_TYPE_NONHEAD) {
			EZFS_CHECK(ino->img, r.delta[0] == 1,
				   "nid %llu: bogus CBLKCNT at lcn %llu",
				   NID(ino), (unsigned long long)headlcn + 1);
			if (r.cblks)
				blocks = r.cblks;
		}
	}
	*plen = blocks << ino->img->blkbits;
	return 0;
}

/* Full decoded length: walk forward with delta[1] to the next HEAD. */
static int decompressed_len(ezfs_inode *ino, uint64_t headlcn, uint64_t la,
			    uint64_t *llen)
{
	const unsigned lcb = ino->z.lclusterbits;
	uint64_t lcn = headlcn;
	struct lrec r;
	int err;

	for (;;) {
		if ((lcn << lcb) >= ino->size) {
			*llen = ino->size - la;
			return 0;
		}
		err = load_lcluster(ino, lcn, true, &r);
		if (err)
			return err;
		if (r.type == Z_EROFS_LCLUSTER_TYPE_NONHEAD) {
			if (!r.delta[1])
				r.delta[1] = 1;
		} else {
			if (lcn != headlcn)
				break;
			r.delta[1] = 1;
		}
		lcn += r.delta[1];
		/* no extent decodes to more than 12 MiB: stop walking a
		 * corrupt chain long before it could take long */
		EZFS_CHECK(ino->img,
			   (lcn - headlcn) <=
				   (EROFS_PCLUSTER_MAX_DSIZE >> lcb) + 1,
			   "nid %llu: extent at lcn %llu never ends", NID(ino),
			   (unsigned long long)headlcn);
	}
	*llen = (lcn << lcb) + r.clusterofs - la;
	return 0;
}

static int map_lcluster(ezfs_inode *ino, uint64_t ofs, bool findtail,
			struct zmap *m)
{
	ezfs_image *img = ino->img;
	const unsigned lcb = ino->z.lclusterbits;
	const bool fragment = ino->z.advise & Z_EROFS_ADVISE_FRAGMENT_PCLUSTER;
	const bool ztail = ino->z.idata_size != 0;
	uint64_t lcn = ofs >> lcb, headlcn = lcn, end;
	unsigned endoff = (unsigned)(ofs & ((1ull << lcb) - 1)), htype;
	bool fully = false;
	struct lrec r;
	int err;

	memset(m, 0, sizeof(*m));
	err = load_lcluster(ino, lcn, false, &r);
	if (err)
		return err;
	if (findtail && ztail)
		ino->z.idata_pos = r.nextpackoff;
	m->flags = EZFS_EXTENT_MAPPED | EZFS_EXTENT_ENCODED;
	end = (lcn + 1) << lcb;
	if (r.type != Z_EROFS_LCLUSTER_TYPE_NONHEAD && endoff >= r.clusterofs) {
		m->la = (lcn << lcb) | r.clusterofs;
		if (ztail && end > ino->size)
			end = ino->size;
	} else {
		unsigned dist = r.delta[0];

		if (r.type != Z_EROFS_LCLUSTER_TYPE_NONHEAD) {
			EZFS_CHECK(img, lcn, "nid %llu: extent before lcn 0",
				   NID(ino));
			end = (lcn << lcb) | r.clusterofs;
			fully = true;
			dist = 1;
		}
		err = lookback(ino, lcn, dist, &r, &headlcn);
		if (err)
			return err;
		m->la = (headlcn << lcb) | r.clusterofs;
	}
	htype = r.type;
	if (r.partialref)
		m->flags |= EZFS_EXTENT_PARTIAL_REF;
	EZFS_CHECK(img, end > m->la, "nid %llu: empty extent at %llu", NID(ino),
		   (unsigned long long)m->la);
	m->llen = end - m->la;

	if (findtail) {
		ino->z.tail_headlcn = headlcn;
		if (fragment && ino->layout == EROFS_INODE_COMPRESSED_FULL)
			ino->z.fragmentoff |= r.pblk << 32;
	}
	if (ztail && headlcn == ino->z.tail_headlcn) {
		m->flags |= EZFS_EXTENT_INLINE;
		if (ino->in_metabox)
			m->flags |= EZFS_EXTENT_META;
		m->pa = ino->z.idata_pos;
		m->plen = ino->z.idata_size;
		EZFS_CHECK(img,
			   (m->pa & (img->blksz - 1)) + m->plen <= img->blksz,
			   "nid %llu: inline pcluster of %llu bytes crosses a "
			   "block",
			   NID(ino), (unsigned long long)m->plen);
	} else if (fragment && headlcn == ino->z.tail_headlcn) {
		m->flags = EZFS_EXTENT_MAPPED | EZFS_EXTENT_FRAGMENT;
		m->pa = ino->z.fragmentoff;
		m->llen = ino->size - m->la;
		m->alg = EZFS_ALG_SHIFTED;
		return 0;
	} else {
		m->pa = r.pblk << img->blkbits;
		err = compressed_len(ino, headlcn, htype, &m->plen);
		if (err)
			return err;
	}
	if (htype == Z_EROFS_LCLUSTER_TYPE_PLAIN) {
		m->flags &= ~(unsigned)EZFS_EXTENT_ENCODED;
		m->alg = (ino->z.advise & Z_EROFS_ADVISE_INTERLACED_PCLUSTER)
				 ? EZFS_ALG_INTERLACED
				 : EZFS_ALG_SHIFTED;
	} else {
		m->alg = htype == Z_EROFS_LCLUSTER_TYPE_HEAD2 ? ino->z.algs[1]
							      : ino->z.algs[0];
		EZFS_CHECK(img, img->si.available_algs & (1u << m->alg),
			   "nid %llu: algorithm %u not announced by the "
			   "superblock",
			   NID(ino), m->alg);
	}
	if (!fully && !findtail) {
		err = decompressed_len(ino, headlcn, m->la, &m->llen);
		if (err)
			return err;
	}
	if (htype == Z_EROFS_LCLUSTER_TYPE_PLAIN)
		EZFS_CHECK(
			img, m->llen <= m->plen,
			"nid %llu: raw extent at %llu longer (%llu) than its "
			"pcluster (%llu)",
			NID(ino), (unsigned long long)m->la,
			(unsigned long long)m->llen,
			(unsigned long long)m->plen);
	return 0;
}

/* [9.12] 48-bit encoded extent records. */
static int map_extents(ezfs_inode *ino, uint64_t la, struct zmap *m)
{
	ezfs_image *img = ino->img;
	const unsigned recsz = 4u << ((ino->z.advise >> 1) & 3);
	uint64_t pos = (ino->z.hpos + 8 + recsz - 1) & ~(uint64_t)(recsz - 1);
	uint64_t lend = ino->size, lstart, pa = 0, plen = 0, ppa = 0;
	uint8_t rec[32];
	bool last;
	int err;

	memset(m, 0, sizeof(*m));
	if (recsz <= 8) {
		const unsigned lcb = ino->z.lclusterbits;
		const uint64_t lcs = 1ull << lcb;
		bool seq = recsz == 4;

		if (seq) {
			err = ezi_meta_read(img, ino->in_metabox, pos, rec, 8);
			if (err)
				return err;
			pa = get_le64(rec);
			pos += 8;
			lstart = 0;
		} else {
			lstart = la & ~(lcs - 1);
			pos += (lstart >> lcb) * recsz;
		}
		for (; lstart <= la; lstart += lcs) {
			err = ezi_meta_read(img, ino->in_metabox, pos, rec,
					    recsz);
			if (err)
				return err;
			plen = get_le32(rec);
			if (seq) {
				ppa = pa;
				pa += plen & Z_EROFS_EXTENT_PLEN_MASK;
			} else {
				ppa = get_le32(rec + 4);
			}
			pos += recsz;
		}
		last = lstart >= ((lend + lcs - 1) & ~(lcs - 1));
		if (lstart < lend)
			lend = lstart;
		lstart -= lcs;
	} else {
		uint64_t l = 0, r = ino->z.nextents;

		lstart = lend;
		while (l < r) {
			uint64_t mid = l + (r - l) / 2, rla;

			err = ezi_meta_read(img, ino->in_metabox,
					    pos + mid * recsz, rec, recsz);
			if (err)
				return err;
			rla = get_le32(rec + 12);
			if (recsz > 16)
				rla |= (uint64_t)get_le32(rec + 16) << 32;
			if (rla > la) {
				r = mid;
				EZFS_CHECK(img, rla <= lend,
					   "nid %llu: extent records out of "
					   "order",
					   NID(ino));
				lend = rla;
			} else {
				l = mid + 1;
				if (la == rla && l + 1 < r)
					r = l + 1;
				lstart = rla;
				plen = get_le32(rec);
				ppa = get_le32(rec + 4) |
				      (uint64_t)get_le32(rec + 8) << 32;
			}
		}
		last = l >= ino->z.nextents;
	}
	m->la = la;
	if (lstart < lend) {
		m->la = lstart;
		if (last &&
		    (ino->z.advise & Z_EROFS_ADVISE_FRAGMENT_PCLUSTER)) {
			uint64_t foff = plen;

			if (recsz > 4)
				foff |= ppa << 32;
			m->flags = EZFS_EXTENT_MAPPED | EZFS_EXTENT_FRAGMENT;
			m->pa = foff;
			m->alg = EZFS_ALG_SHIFTED;
		} else if (plen & Z_EROFS_EXTENT_PLEN_MASK) {
			unsigned fmt = plen >> Z_EROFS_EXTENT_PLEN_FMT_BIT;

			m->flags = EZFS_EXTENT_MAPPED;
			m->pa = ppa;
			if (fmt) {
				m->alg = (int)fmt - 1;
				m->flags |= EZFS_EXTENT_ENCODED;
				EZFS_CHECK(img,
					   m->alg < EZFS_ALG_MAX &&
						   (img->si.available_algs &
						    (1u << m->alg)),
					   "nid %llu: unknown extent format %u",
					   NID(ino), fmt);
			} else if ((ino->z.advise &
				    Z_EROFS_ADVISE_INTERLACED_PCLUSTER) &&
				   !(ppa & (img->blksz - 1))) {
				m->alg = EZFS_ALG_INTERLACED;
			} else {
				m->alg = EZFS_ALG_SHIFTED;
			}
			if (plen & Z_EROFS_EXTENT_PLEN_PARTIAL)
				m->flags |= EZFS_EXTENT_PARTIAL_REF;
			m->plen = plen & Z_EROFS_EXTENT_PLEN_MASK;
		} else {
			EZFS_CHECK(img, !plen,
				   "nid %llu: extent record with format but no "
				   "length",
				   NID(ino));
		}
	}
	EZFS_CHECK(img, lend > m->la, "nid %llu: empty extent at %llu",
		   NID(ino), (unsigned long long)m->la);
	m->llen = lend - m->la;
	if ((m->flags & EZFS_EXTENT_MAPPED) &&
	    !(m->flags & (EZFS_EXTENT_ENCODED | EZFS_EXTENT_FRAGMENT)))
		EZFS_CHECK(img, m->llen <= m->plen,
			   "nid %llu: raw extent longer than its data",
			   NID(ino));
	return 0;
}

int ezi_z_map(ezfs_inode *ino, uint64_t la, struct zmap *m)
{
	int err;

	if (la >= ino->size)
		return -EINVAL;
	pthread_mutex_lock(&ino->zlock);
	if (ino->zlast_valid && la >= ino->zlast.la &&
	    la - ino->zlast.la < ino->zlast.llen) {
		*m = ino->zlast;
		pthread_mutex_unlock(&ino->zlock);
		return 0;
	}
	pthread_mutex_unlock(&ino->zlock);
	if (ino->z.whole_fragment ||
	    (!ino->z.extents &&
	     (ino->z.advise & Z_EROFS_ADVISE_FRAGMENT_PCLUSTER) &&
	     !ino->z.tail_headlcn)) {
		memset(m, 0, sizeof(*m));
		m->la = 0;
		m->llen = ino->size;
		m->pa = ino->z.fragmentoff;
		m->alg = EZFS_ALG_SHIFTED;
		m->flags = EZFS_EXTENT_MAPPED | EZFS_EXTENT_FRAGMENT;
	} else if (ino->z.extents) {
		err = map_extents(ino, la, m);
		if (err)
			return err;
	} else {
		err = map_lcluster(ino, la, false, m);
		if (err)
			return err;
	}
	if (m->flags & EZFS_EXTENT_FRAGMENT) {
		EZFS_CHECK(ino->img, ino->img->packed,
			   "nid %llu: fragment without a packed inode",
			   NID(ino));
		EZFS_CHECK(ino->img, ino != ino->img->packed,
			   "nid %llu: the packed inode has a fragment",
			   NID(ino));
	}
	if (la < m->la || la - m->la >= m->llen ||
	    m->llen > ino->size - m->la) {
		ezfs_err(ino->img,
			 "nid %llu: extent [%llu, +%llu) found for "
			 "offset %llu does not contain it",
			 NID(ino), (unsigned long long)m->la,
			 (unsigned long long)m->llen, (unsigned long long)la);
		return -EUCLEAN;
	}
	if ((m->flags & EZFS_EXTENT_ENCODED) &&
	    (m->plen > EROFS_PCLUSTER_MAX_SIZE ||
	     m->llen > EROFS_PCLUSTER_MAX_DSIZE)) {
		ezfs_err(ino->img,
			 "nid %llu: extent at %llu too large (%llu "
			 "-> %llu bytes)",
			 NID(ino), (unsigned long long)m->la,
			 (unsigned long long)m->plen,
			 (unsigned long long)m->llen);
		return -EUCLEAN;
	}
	/* pclusters too may lie on an extra device (by its uniaddr) */
	if ((m->flags & EZFS_EXTENT_MAPPED) &&
	    !(m->flags &
	      (EZFS_EXTENT_INLINE | EZFS_EXTENT_FRAGMENT | EZFS_EXTENT_META)) &&
	    ino->img->ndevs) {
		err = ezi_dev_remap(ino->img, ino->nid, m->pa, m->plen, &m->pa);
		if (err)
			return err;
	}
	pthread_mutex_lock(&ino->zlock);
	ino->zlast = *m;
	ino->zlast_valid = true;
	pthread_mutex_unlock(&ino->zlock);
	return 0;
}

int ezi_z_init(ezfs_inode *ino)
{
	ezfs_image *img = ino->img;
	uint8_t h[8];
	int err;

	ino->z.hpos = (ezfs_inode_datapos(ino) + 7) & ~7ull;
	if (!ino->size) {
		ezfs_err(img, "nid %llu: empty compressed inode", NID(ino));
		return -EUCLEAN;
	}
	err = ezi_meta_read(img, ino->in_metabox, ino->z.hpos, h, 8);
	if (err)
		return err;
	if (h[7] >> Z_EROFS_FRAGMENT_INODE_BIT) {
		ino->z.advise = Z_EROFS_ADVISE_FRAGMENT_PCLUSTER;
		ino->z.whole_fragment = true;
		ino->z.fragmentoff = get_le64(h) & ~(1ull << 63);
		return 0;
	}
	ino->z.advise = get_le16(h + 4);
	ino->z.lclusterbits = (uint8_t)(img->blkbits + (h[7] & 15));
	if (ino->layout == EROFS_INODE_COMPRESSED_FULL &&
	    (ino->z.advise & Z_EROFS_ADVISE_EXTENTS)) {
		ino->z.extents = true;
		ino->z.nextents = get_le32(h) | (uint64_t)get_le16(h + 6) << 32;
		EZFS_CHECK(img, ino->z.lclusterbits <= 30,
			   "nid %llu: lcluster size 2^%u too large", NID(ino),
			   ino->z.lclusterbits);
		return 0;
	}
	ino->z.algs[0] = h[6] & 15;
	ino->z.algs[1] = h[6] >> 4;
	if (ino->z.algs[0] >= Z_EROFS_COMPRESSION_MAX ||
	    ino->z.algs[1] >= Z_EROFS_COMPRESSION_MAX) {
		ezfs_err(img, "nid %llu: unknown compression algorithm %u/%u",
			 NID(ino), ino->z.algs[0], ino->z.algs[1]);
		return -EOPNOTSUPP;
	}
	EZFS_CHECK(img, ino->z.lclusterbits <= 30,
		   "nid %llu: lcluster size 2^%u too large", NID(ino),
		   ino->z.lclusterbits);
	if (ino->z.advise & Z_EROFS_ADVISE_FRAGMENT_PCLUSTER)
		ino->z.fragmentoff = get_le32(h);
	else if (ino->z.advise & Z_EROFS_ADVISE_INLINE_PCLUSTER)
		ino->z.idata_size = get_le16(h + 2);
	EZFS_CHECK(img,
		   (img->si.feature_incompat &
		    EROFS_FEATURE_INCOMPAT_BIG_PCLUSTER) ||
			   !(ino->z.advise & (Z_EROFS_ADVISE_BIG_PCLUSTER_1 |
					      Z_EROFS_ADVISE_BIG_PCLUSTER_2)),
		   "nid %llu: big pclusters without the superblock feature",
		   NID(ino));
	EZFS_CHECK(img,
		   ino->layout != EROFS_INODE_COMPRESSED_COMPACT ||
			   !(ino->z.advise & Z_EROFS_ADVISE_BIG_PCLUSTER_1) ==
				   !(ino->z.advise &
				     Z_EROFS_ADVISE_BIG_PCLUSTER_2),
		   "nid %llu: inconsistent big pcluster flags", NID(ino));
	if (ino->z.idata_size ||
	    (ino->z.advise & Z_EROFS_ADVISE_FRAGMENT_PCLUSTER)) {
		struct zmap m;

		err = map_lcluster(ino, ino->size - 1, true, &m);
		if (err)
			return err;
	}
	return 0;
}
