/* SPDX-License-Identifier: MIT */
/*
 * lp.c - Android super images: the dynamic partitions of liblp's metadata.
 * At 4096 (after the reserved bytes) the geometry, 4096 bytes, then its
 * backup; from 12288 each metadata slot's copy (metadata_max_size bytes),
 * then the backups of all slots. A copy is a header and four tables:
 * partitions, extents, partition groups, block devices; both header and
 * tables carry a SHA-256. A partition is a run of extents: LINEAR (sectors
 * of a block device) or ZERO. Only block device 0, the super image
 * itself, is read here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/android.h"
#include "util/sha256.h"

#ifndef EUCLEAN
#define EUCLEAN 117
#endif
#ifndef EMEDIUMTYPE
#define EMEDIUMTYPE 124
#endif

#define LP_RESERVED	  4096
#define LP_GEOMETRY_SIZE  4096
#define LP_GEOMETRY_MAGIC 0x616c4467u
#define LP_GEOMETRY_MIN	  52
#define LP_HEADER_MAGIC	  0x414c5030u
#define LP_MAJOR	  10
#define LP_MINOR_MAX	  2
#define LP_HEADER_V1_0	  128
#define LP_HEADER_V1_2	  256
#define LP_SECTOR	  512
#define LP_METADATA_START (LP_RESERVED + 2 * LP_GEOMETRY_SIZE)
#define LP_MAX_METADATA	  (16u << 20) /* sanity bound, liblp uses 64 KiB */
#define LP_MAX_SLOTS	  64
#define LP_NAME		  36
#define LP_PART_SIZE	  52
#define LP_EXTENT_SIZE	  24
#define LP_GROUP_SIZE	  48
#define LP_BDEV_SIZE	  64

struct ezfs_lp {
	struct ezfs_io io; /* the super image */
	struct ezfs_lp_info info;
	struct ezfs_lp_partition *parts;
	struct ezfs_lp_extent *exts;
	struct ezfs_lp_group *groups;
	struct ezfs_lp_block_device *bdevs;
};

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return le32(p) | (uint64_t)le32(p + 4) << 32;
}

static int raw_read(const struct ezfs_io *io, void *buf, size_t len,
		    uint64_t off)
{
	ssize_t n;

	if (off > io->size || len > io->size - off)
		return -EUCLEAN;
	n = io->ops->pread(io->arg, buf, len, io->base + off);
	if (n < 0)
		return n == -ENOMEM ? -ENOMEM : -EIO;
	return (size_t)n == len ? 0 : -EIO;
}

/* A name field: up to 36 bytes, NUL terminated when shorter. */
static void get_name(char dst[LP_NAME + 1], const uint8_t *src)
{
	memcpy(dst, src, LP_NAME);
	dst[LP_NAME] = '\0';
}

int ezi_lp_probe(const struct ezfs_io *io)
{
	uint8_t m[4];
	int err;

	if (io->size < LP_METADATA_START)
		return 0;
	err = raw_read(io, m, sizeof(m), LP_RESERVED);
	if (err)
		return err;
	return le32(m) == LP_GEOMETRY_MAGIC;
}

/* The sum over [0, len) with the 32 bytes at sum_at taken as zeros. */
static int sum_ok(const uint8_t *p, size_t len, size_t sum_at)
{
	uint8_t *copy = malloc(len), got[32];

	if (!copy)
		return -ENOMEM;
	memcpy(copy, p, len);
	memset(copy + sum_at, 0, 32);
	ezi_sha256(copy, len, got);
	free(copy);
	return !memcmp(got, p + sum_at, 32);
}

struct geom {
	uint32_t max_size, slots, lbs;
};

/* One copy of the geometry; reason set on failure. */
static int geometry_copy(const struct ezfs_io *io, uint64_t at, struct geom *g,
			 const char **reason)
{
	uint8_t b[LP_GEOMETRY_SIZE];
	uint32_t ssize;
	int err;

	err = raw_read(io, b, sizeof(b), at);
	if (err) {
		*reason = "cannot be read";
		return err;
	}
	if (le32(b) != LP_GEOMETRY_MAGIC) {
		*reason = "bad magic";
		return -EUCLEAN;
	}
	ssize = le32(b + 4);
	if (ssize < LP_GEOMETRY_MIN || ssize > LP_GEOMETRY_SIZE) {
		*reason = "bad struct size";
		return -EUCLEAN;
	}
	err = sum_ok(b, ssize, 8);
	if (err <= 0) {
		*reason = "checksum mismatch";
		return err < 0 ? err : -EUCLEAN;
	}
	g->max_size = le32(b + 40);
	g->slots = le32(b + 44);
	g->lbs = le32(b + 48);
	if (!g->max_size || g->max_size % LP_SECTOR ||
	    g->max_size > LP_MAX_METADATA || g->max_size < LP_HEADER_V1_0) {
		*reason = "bad metadata_max_size";
		return -EUCLEAN;
	}
	if (!g->slots || g->slots > LP_MAX_SLOTS) {
		*reason = "bad metadata_slot_count";
		return -EUCLEAN;
	}
	if (!g->lbs || g->lbs % LP_SECTOR) {
		*reason = "bad logical_block_size";
		return -EUCLEAN;
	}
	return 0;
}

static int read_geometry(const struct ezfs_io *io, struct geom *g,
			 const struct ezfs_logger *lg)
{
	const char *why1 = NULL, *why2 = NULL;
	int err;

	if (io->size < LP_METADATA_START) {
		ezi_logf(lg, EZFS_LOG_ERROR,
			 "super image: truncated (%llu bytes, no room for the "
			 "LP geometry)",
			 (unsigned long long)io->size);
		return -EUCLEAN;
	}
	err = geometry_copy(io, LP_RESERVED, g, &why1);
	if (!err)
		return 0;
	if (err == -ENOMEM)
		return err;
	err = geometry_copy(io, LP_RESERVED + LP_GEOMETRY_SIZE, g, &why2);
	if (!err) {
		ezi_logf(lg, EZFS_LOG_WARN,
			 "super image: LP geometry: %s, using the backup",
			 why1);
		return 0;
	}
	ezi_logf(lg, EZFS_LOG_ERROR,
		 "super image: LP geometry: %s (backup: %s)", why1, why2);
	return err == -ENOMEM ? err : -EUCLEAN;
}

struct table {
	uint32_t off, n, esize;
};

/* Parse one metadata copy held in b (max_size bytes) into lp. */
static int parse_copy(const uint8_t *b, const struct geom *g, ezfs_lp *lp,
		      const char **reason)
{
	static const uint32_t esz[4] = { LP_PART_SIZE, LP_EXTENT_SIZE,
					 LP_GROUP_SIZE, LP_BDEV_SIZE };
	struct table t[4];
	uint32_t hsize, tsize, i, j;
	const uint8_t *tb;
	uint16_t major, minor;
	int ok;

	if (le32(b) != LP_HEADER_MAGIC) {
		*reason = "bad header magic";
		return -EUCLEAN;
	}
	major = (uint16_t)(b[4] | b[5] << 8);
	minor = (uint16_t)(b[6] | b[7] << 8);
	if (major != LP_MAJOR || minor > LP_MINOR_MAX) {
		*reason = "unknown metadata version";
		return -EOPNOTSUPP;
	}
	hsize = le32(b + 8);
	if (hsize < (minor >= 2 ? LP_HEADER_V1_2 : LP_HEADER_V1_0) ||
	    hsize > g->max_size) {
		*reason = "bad header size";
		return -EUCLEAN;
	}
	ok = sum_ok(b, hsize, 12);
	if (ok <= 0) {
		*reason = "header checksum mismatch";
		return ok < 0 ? ok : -EUCLEAN;
	}
	tsize = le32(b + 44);
	if (tsize > g->max_size - hsize) {
		*reason = "tables larger than the metadata";
		return -EUCLEAN;
	}
	tb = b + hsize;
	{
		uint8_t got[32];

		ezi_sha256(tb, tsize, got);
		if (memcmp(got, b + 48, 32)) {
			*reason = "tables checksum mismatch";
			return -EUCLEAN;
		}
	}
	for (i = 0; i < 4; i++) {
		t[i].off = le32(b + 80 + 12 * i);
		t[i].n = le32(b + 84 + 12 * i);
		t[i].esize = le32(b + 88 + 12 * i);
		if (t[i].esize != esz[i] || t[i].off > tsize ||
		    (uint64_t)t[i].n * t[i].esize > tsize - t[i].off) {
			*reason = i == 0   ? "bad partition table"
				  : i == 1 ? "bad extent table"
				  : i == 2 ? "bad group table"
					   : "bad block device table";
			return -EUCLEAN;
		}
	}
	if (!t[3].n) {
		*reason = "no block devices";
		return -EUCLEAN;
	}
	lp->info.major = major;
	lp->info.minor = minor;
	lp->info.header_flags =
		hsize >= LP_HEADER_V1_0 + 4 ? le32(b + LP_HEADER_V1_0) : 0;
	lp->parts = calloc(t[0].n ? t[0].n : 1, sizeof(*lp->parts));
	lp->exts = calloc(t[1].n ? t[1].n : 1, sizeof(*lp->exts));
	lp->groups = calloc(t[2].n ? t[2].n : 1, sizeof(*lp->groups));
	lp->bdevs = calloc(t[3].n, sizeof(*lp->bdevs));
	if (!lp->parts || !lp->exts || !lp->groups || !lp->bdevs)
		return -ENOMEM;
	lp->info.partitions = t[0].n;
	lp->info.extents = t[1].n;
	lp->info.groups = t[2].n;
	lp->info.block_devices = t[3].n;
	for (i = 0; i < t[2].n; i++) {
		const uint8_t *e = tb + t[2].off + (size_t)i * LP_GROUP_SIZE;

		get_name(lp->groups[i].name, e);
		lp->groups[i].flags = le32(e + 36);
		lp->groups[i].maximum_size = le64(e + 40);
	}
	for (i = 0; i < t[1].n; i++) {
		const uint8_t *e = tb + t[1].off + (size_t)i * LP_EXTENT_SIZE;

		lp->exts[i].sectors = le64(e);
		lp->exts[i].type = le32(e + 8);
		lp->exts[i].target = le64(e + 12);
		lp->exts[i].source = le32(e + 20);
	}
	for (i = 0; i < t[3].n; i++) {
		const uint8_t *e = tb + t[3].off + (size_t)i * LP_BDEV_SIZE;

		lp->bdevs[i].first_logical_sector = le64(e);
		lp->bdevs[i].alignment = le32(e + 8);
		lp->bdevs[i].alignment_offset = le32(e + 12);
		lp->bdevs[i].size = le64(e + 16);
		get_name(lp->bdevs[i].name, e + 24);
		lp->bdevs[i].flags = le32(e + 60);
	}
	for (i = 0; i < t[0].n; i++) {
		const uint8_t *e = tb + t[0].off + (size_t)i * LP_PART_SIZE;
		struct ezfs_lp_partition *p = &lp->parts[i];
		uint64_t sz = 0;

		get_name(p->name, e);
		p->attributes = le32(e + 36);
		p->first_extent = le32(e + 40);
		p->num_extents = le32(e + 44);
		p->group_index = le32(e + 48);
		if (p->first_extent > t[1].n ||
		    p->num_extents > t[1].n - p->first_extent) {
			*reason = "a partition's extents are past the table";
			return -EUCLEAN;
		}
		if (p->group_index >= t[2].n) {
			*reason = "a partition's group is past the table";
			return -EUCLEAN;
		}
		memcpy(p->group, lp->groups[p->group_index].name,
		       sizeof(p->group));
		for (j = 0; j < p->num_extents; j++) {
			uint64_t s = lp->exts[p->first_extent + j].sectors;

			if (s > UINT64_MAX / LP_SECTOR - sz) {
				*reason = "a partition's size overflows";
				return -EUCLEAN;
			}
			sz += s;
		}
		p->size = sz * LP_SECTOR;
	}
	return 0;
}

static void lp_tables_free(ezfs_lp *lp)
{
	free(lp->parts);
	free(lp->exts);
	free(lp->groups);
	free(lp->bdevs);
	lp->parts = NULL;
	lp->exts = NULL;
	lp->groups = NULL;
	lp->bdevs = NULL;
}

/* Slot's metadata (primary copy, else backup) into lp->tables. */
static int read_slot(const struct ezfs_io *io, const struct geom *g,
		     unsigned slot, ezfs_lp *lp, const struct ezfs_logger *lg)
{
	const char *why[2] = { NULL, NULL };
	uint64_t at[2];
	uint8_t *b;
	int err = -EUCLEAN, c;

	at[0] = LP_METADATA_START + (uint64_t)slot * g->max_size;
	at[1] = LP_METADATA_START + (uint64_t)(g->slots + slot) * g->max_size;
	b = malloc(g->max_size);
	if (!b)
		return -ENOMEM;
	for (c = 0; c < 2; c++) {
		err = raw_read(io, b, g->max_size, at[c]);
		if (err) {
			why[c] = at[c] + g->max_size > io->size
					 ? "past the end of the image"
					 : "cannot be read";
			continue;
		}
		lp_tables_free(lp);
		err = parse_copy(b, g, lp, &why[c]);
		if (!err || err == -ENOMEM)
			break;
	}
	free(b);
	if (!err && c == 1)
		ezi_logf(lg, EZFS_LOG_WARN,
			 "super image: LP metadata slot %u: %s, using the "
			 "backup",
			 slot, why[0]);
	if (err && err != -ENOMEM)
		ezi_logf(lg, EZFS_LOG_ERROR,
			 "super image: LP metadata slot %u: %s (backup: %s)",
			 slot, why[0], why[1] ? why[1] : "none");
	if (err)
		lp_tables_free(lp);
	return err == -EIO || err == -ENOMEM || err == -EOPNOTSUPP ? err
	       : err						   ? -EUCLEAN
								   : 0;
}

int ezi_lp_load(struct ezfs_io *io, unsigned slot, const struct ezfs_logger *lg,
		ezfs_lp **out)
{
	struct geom g;
	ezfs_lp *lp;
	int err;

	*out = NULL;
	err = ezi_lp_probe(io);
	if (err <= 0) {
		if (!err)
			ezi_logf(lg, EZFS_LOG_ERROR,
				 "not a super image (no LP geometry at %d)",
				 LP_RESERVED);
		return err ? err : -EMEDIUMTYPE;
	}
	err = read_geometry(io, &g, lg);
	if (err)
		return err;
	if (slot >= g.slots) {
		ezi_logf(lg, EZFS_LOG_ERROR,
			 "super image: no metadata slot %u (it has %u)", slot,
			 g.slots);
		return -EINVAL;
	}
	lp = calloc(1, sizeof(*lp));
	if (!lp)
		return -ENOMEM;
	err = read_slot(io, &g, slot, lp, lg);
	if (err) {
		free(lp);
		return err;
	}
	lp->info.metadata_max_size = g.max_size;
	lp->info.slot_count = g.slots;
	lp->info.logical_block_size = g.lbs;
	lp->info.slot = slot;
	lp->info.image_bytes = io->size;
	lp->info.sparse_files = ezi_sparse_pieces(io);
	lp->io = *io;
	*out = lp;
	return 0;
}

/* ------------------------------------------------------------------ */
/* A partition as an io of its own                                     */

struct lp_run {
	uint64_t start, len; /* partition bytes */
	uint64_t phys;	     /* super image byte; UINT64_MAX: zeros */
};

struct part_io {
	ezfs_lp *lp;
	struct lp_run *r;
	uint32_t n;
	uint64_t size;
};

static void part_close(void *arg)
{
	struct part_io *p = arg;

	ezfs_lp_close(p->lp);
	free(p->r);
	free(p);
}

static ssize_t part_pread(void *arg, void *buf, size_t len, uint64_t off)
{
	const struct part_io *p = arg;
	const struct ezfs_io *io = &p->lp->io;
	uint32_t lo = 0, hi = p->n;
	uint8_t *dst = buf;
	size_t done = 0;

	if (off >= p->size)
		return 0;
	if (len > p->size - off)
		len = (size_t)(p->size - off);
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (p->r[mid].start + p->r[mid].len <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; done < len; lo++) {
		const struct lp_run *r = &p->r[lo];
		uint64_t in = off + done - r->start, k = len - done;

		if (k > r->len - in)
			k = r->len - in;
		if (r->phys == UINT64_MAX) {
			memset(dst + done, 0, (size_t)k);
		} else {
			ssize_t n =
				io->ops->pread(io->arg, dst + done, (size_t)k,
					       io->base + r->phys + in);
			if (n < 0)
				return n;
			if ((uint64_t)n != k)
				return -EIO;
		}
		done += (size_t)k;
	}
	return (ssize_t)len;
}

static const struct ezfs_io_ops part_ops = {
	.pread = part_pread,
	.close = part_close,
};

static int find_part(const ezfs_lp *lp, const char *name, size_t len)
{
	uint32_t i;

	for (i = 0; i < lp->info.partitions; i++)
		if (strlen(lp->parts[i].name) == len &&
		    !memcmp(lp->parts[i].name, name, len))
			return (int)i;
	return -1;
}

static void log_missing(const ezfs_lp *lp, const char *name,
			const struct ezfs_logger *lg)
{
	char list[512];
	size_t used = 0;
	uint32_t i;

	list[0] = '\0';
	for (i = 0; i < lp->info.partitions && used < sizeof(list); i++) {
		int n = snprintf(list + used, sizeof(list) - used, "%s%s",
				 i ? ", " : "", lp->parts[i].name);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	if (used >= sizeof(list))
		memcpy(list + sizeof(list) - 4, "...", 4);
	ezi_logf(lg, EZFS_LOG_ERROR,
		 "no partition '%s' in the super image (it has: %s)", name,
		 lp->info.partitions ? list : "none");
}

static int build_part(ezfs_lp *lp, const struct ezfs_lp_partition *pt,
		      const struct ezfs_logger *lg, struct ezfs_io *out)
{
	const struct ezfs_lp_block_device *bd = &lp->bdevs[0];
	struct part_io *p = calloc(1, sizeof(*p));
	uint64_t pos = 0;
	uint32_t j;

	if (!p)
		return -ENOMEM;
	p->r = calloc(pt->num_extents ? pt->num_extents : 1, sizeof(*p->r));
	if (!p->r) {
		free(p);
		return -ENOMEM;
	}
	for (j = 0; j < pt->num_extents; j++) {
		const struct ezfs_lp_extent *e =
			&lp->exts[pt->first_extent + j];
		struct lp_run *r = &p->r[p->n];
		const char *bad = NULL;
		int err = -EUCLEAN;

		r->start = pos;
		r->len = e->sectors * LP_SECTOR;
		if (e->type == EZFS_LP_EXTENT_ZERO) {
			r->phys = UINT64_MAX;
		} else if (e->type != EZFS_LP_EXTENT_LINEAR) {
			bad = "has an unknown type";
			err = -EOPNOTSUPP;
		} else if (e->source >= lp->info.block_devices) {
			bad = "names a block device past the table";
		} else if (e->source) {
			ezi_logf(lg, EZFS_LOG_ERROR,
				 "partition '%s': extent %u is on block device "
				 "'%s', which is not in this image",
				 pt->name, j, lp->bdevs[e->source].name);
			err = -EOPNOTSUPP;
			bad = "";
		} else if (e->target < bd->first_logical_sector ||
			   e->target > UINT64_MAX / LP_SECTOR ||
			   e->sectors > UINT64_MAX / LP_SECTOR ||
			   e->target * LP_SECTOR > lp->io.size ||
			   r->len > lp->io.size - e->target * LP_SECTOR) {
			ezi_logf(
				lg, EZFS_LOG_ERROR,
				"partition '%s': extent %u (sectors %llu+%llu) "
				"is outside the super image's data "
				"(sectors %llu to %llu)",
				pt->name, j, (unsigned long long)e->target,
				(unsigned long long)e->sectors,
				(unsigned long long)bd->first_logical_sector,
				(unsigned long long)(lp->io.size / LP_SECTOR));
			bad = "";
		} else {
			r->phys = e->target * LP_SECTOR;
		}
		if (bad) {
			if (*bad)
				ezi_logf(lg, EZFS_LOG_ERROR,
					 "partition '%s': extent %u %s",
					 pt->name, j, bad);
			free(p->r);
			free(p);
			return err;
		}
		if (r->len) {
			p->n++;
			pos += r->len;
		}
	}
	p->size = pos;
	p->lp = lp;
	memset(out, 0, sizeof(*out));
	out->ops = &part_ops;
	out->arg = p;
	out->size = pos;
	return 0;
}

int ezi_lp_open_partition(struct ezfs_io *io, const char *name,
			  const struct ezfs_logger *lg, struct ezfs_io *out)
{
	size_t len = strlen(name);
	ezfs_lp *lp;
	int err, i;

	memset(out, 0, sizeof(*out));
	err = ezi_lp_load(io, 0, lg, &lp);
	if (err) {
		ezi_io_close(io);
		return err;
	}
	i = find_part(lp, name, len);
	/* system_b: slot 1's metadata, where it may be a SLOT_SUFFIXED
	 * "system" */
	if (i < 0 && len > 2 && name[len - 2] == '_' && name[len - 1] >= 'a' &&
	    (unsigned)(name[len - 1] - 'a') < lp->info.slot_count) {
		unsigned slot = (unsigned)(name[len - 1] - 'a');
		struct geom g = { lp->info.metadata_max_size,
				  lp->info.slot_count,
				  lp->info.logical_block_size };

		if (slot) {
			err = read_slot(&lp->io, &g, slot, lp, lg);
			if (err) {
				ezfs_lp_close(lp);
				return err;
			}
			lp->info.slot = slot;
			i = find_part(lp, name, len);
		}
		if (i < 0) {
			i = find_part(lp, name, len - 2);
			if (i >= 0 && !(lp->parts[i].attributes &
					EZFS_LP_ATTR_SLOT_SUFFIXED))
				i = -1;
		}
	}
	if (i < 0) {
		log_missing(lp, name, lg);
		ezfs_lp_close(lp);
		return -ENOENT;
	}
	err = build_part(lp, &lp->parts[i], lg, out);
	if (err)
		ezfs_lp_close(lp);
	return err;
}

/* ------------------------------------------------------------------ */
/* Public API                                                          */

void ezfs_lp_params_init(struct ezfs_lp_params *p)
{
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
}

int ezfs_lp_open(const char *path, const struct ezfs_lp_params *p,
		 ezfs_lp **out)
{
	struct ezfs_lp_params given;
	struct ezfs_logger lg;
	struct ezfs_io io;
	int err;

	*out = NULL;
	ezfs_lp_params_init(&given);
	if (p) {
		if (!p->size || p->size > sizeof(given))
			return -EINVAL;
		memcpy(&given, p, p->size);
	}
	lg.fn = given.log;
	lg.arg = given.log_arg;
	lg.verbose = given.verbose;
	err = ezi_io_open_path(path, &lg, &io);
	if (err)
		return err;
	err = ezi_lp_load(&io, given.slot, &lg, out);
	if (err)
		ezi_io_close(&io);
	return err;
}

void ezfs_lp_close(ezfs_lp *lp)
{
	if (!lp)
		return;
	lp_tables_free(lp);
	ezi_io_close(&lp->io);
	free(lp);
}

void ezfs_lp_get_info(const ezfs_lp *lp, struct ezfs_lp_info *info)
{
	*info = lp->info;
}

int ezfs_lp_partition(const ezfs_lp *lp, uint32_t i,
		      struct ezfs_lp_partition *out)
{
	if (i >= lp->info.partitions)
		return -ERANGE;
	*out = lp->parts[i];
	return 0;
}

int ezfs_lp_extent(const ezfs_lp *lp, uint32_t i, struct ezfs_lp_extent *out)
{
	if (i >= lp->info.extents)
		return -ERANGE;
	*out = lp->exts[i];
	return 0;
}

int ezfs_lp_group(const ezfs_lp *lp, uint32_t i, struct ezfs_lp_group *out)
{
	if (i >= lp->info.groups)
		return -ERANGE;
	*out = lp->groups[i];
	return 0;
}

int ezfs_lp_block_device(const ezfs_lp *lp, uint32_t i,
			 struct ezfs_lp_block_device *out)
{
	if (i >= lp->info.block_devices)
		return -ERANGE;
	*out = lp->bdevs[i];
	return 0;
}
