/* SPDX-License-Identifier: MIT */
/* info.c - ezfs info: superblock, features, sizes and (-S) statistics. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ezfs/android.h"

#include "common.h"
#include "cmd.h"
#include "json.h"

#define NBUCKETS 66
#define NALGS	 16

struct alg_stat {
	uint64_t extents, pclusters, plen, llen;
};

struct info_stats {
	int detailed;
	struct cli_nidset files; /* regular files with nlink > 1 seen */
	struct cli_nidset pas;	 /* physical pclusters seen (dedupe) */
	uint64_t ntype[8];	 /* by enum ezfs_ftype */
	uint64_t nfiles, file_bytes;
	uint64_t hist_n[NBUCKETS], hist_bytes[NBUCKETS];
	struct alg_stat alg[NALGS];
	uint64_t inline_n, inline_bytes, frag_n, frag_bytes;
	uint64_t hole_bytes, dedup_bytes;
	const char *img;
	int err_reported;
};

static const char *const ftype_names[8] = {
	"unknown",	 "regular files", "directories", "character devices",
	"block devices", "fifos",	  "sockets",	 "symlinks",
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ezfs info [-S] [--json] IMG\n"
		"Show the superblock, features, algorithms, sizes and the\n"
		"oldest Linux that mounts the image.\n"
		"  -S, --stats   also show statistics: files by type, a size\n"
		"                histogram, bytes per compression "
		"algorithm\n"
		"  --json        one JSON document "
		"(docs/json.md)\n" CLI_ENGINE_HELP CLI_IMAGE_HELP);
}

static int bucket_of(uint64_t size)
{
	int b = 0;

	if (!size)
		return 0;
	while (size) {
		b++;
		size >>= 1;
	}
	return b; /* [2^(b-1), 2^b) */
}

static int map_file(struct info_stats *s, ezfs_inode *ino, uint64_t size,
		    const char *path)
{
	struct ezfs_extent ext;
	uint64_t la = 0;
	int ret;

	while (la < size) {
		ret = ezfs_map(ino, la, &ext);
		if (ret < 0) {
			cli_error("info", "%s: %s: map at %" PRIu64 ": %s",
				  s->img, path, la, ezfs_strerror(ret));
			return ret;
		}
		if (ext.la + ext.llen <= la) {
			cli_error("info",
				  "%s: %s: extent map does not advance at "
				  "%" PRIu64,
				  s->img, path, la);
			return -EUCLEAN;
		}
		{
			uint64_t end = ext.la + ext.llen > size
					       ? size
					       : ext.la + ext.llen;
			uint64_t len = end - la;

			if (!(ext.flags & EZFS_EXTENT_MAPPED)) {
				s->hole_bytes += len;
			} else if (ext.flags & EZFS_EXTENT_INLINE) {
				s->inline_n++;
				s->inline_bytes += len;
			} else if (ext.flags & EZFS_EXTENT_FRAGMENT) {
				s->frag_n++;
				s->frag_bytes += len;
			} else {
				struct alg_stat *a =
					&s->alg[ext.alg & (NALGS - 1)];

				a->extents++;
				a->llen += len;
				ret = cli_nidset_add(&s->pas, ext.pa);
				if (ret < 0)
					return ret;
				if (ret) {
					a->pclusters++;
					a->plen += ext.plen;
				} else {
					s->dedup_bytes += len;
				}
			}
			la = end;
		}
	}
	return 0;
}

static int stats_cb(void *arg, const char *path, uint64_t nid,
		    const struct ezfs_stat *st, ezfs_inode *ino)
{
	struct info_stats *s = arg;
	int b, ret;

	if (S_ISREG(st->mode) && st->nlink > 1) {
		ret = cli_nidset_add(&s->files, nid);
		if (ret <= 0)
			return ret;
	}
	s->ntype[ezfs_mode_ftype(st->mode)]++;
	if (!S_ISREG(st->mode))
		return 0;
	s->nfiles++;
	s->file_bytes += st->size;
	if (!s->detailed)
		return 0;
	b = bucket_of(st->size);
	s->hist_n[b]++;
	s->hist_bytes[b] += st->size;
	ret = map_file(s, ino, st->size, path);
	if (ret < 0)
		s->err_reported = 1;
	return ret;
}

static void print_ratio(const char *label, uint64_t part, uint64_t whole)
{
	if (whole)
		printf("%-20s %.4f (%.2fx)\n", label, (double)part / whole,
		       part ? (double)whole / part : 0.0);
	else
		printf("%-20s -\n", label);
}

static void print_algs(const struct ezfs_sb_info *si)
{
	char b[32];
	int any = 0, a;

	printf("%-20s ", "Algorithms:");
	/* neither lz4_0padding nor compr_cfgs: nothing is compressed */
	for (a = 0; (si->feature_incompat & 0x3) && a < EZFS_ALG_MAX; a++) {
		if (!(si->available_algs & (1u << a)))
			continue;
		if (any)
			printf("%-20s ", "");
		any = 1;
		switch (a) {
		case EZFS_ALG_LZ4:
			printf("lz4 (max distance %u, max pcluster %u "
			       "block%s)\n",
			       si->lz4_max_distance,
			       si->lz4_max_pclusterblks
				       ? si->lz4_max_pclusterblks
				       : 1,
			       si->lz4_max_pclusterblks > 1 ? "s" : "");
			break;
		case EZFS_ALG_LZMA:
			printf("lzma (dictionary %s)\n",
			       cli_fmt_size(si->lzma_dict_size, b, sizeof(b)));
			break;
		case EZFS_ALG_DEFLATE:
			printf("deflate (window %s, windowbits %u)\n",
			       si->deflate_windowbits <= 30
				       ? cli_fmt_size(
						 1ULL << si->deflate_windowbits,
						 b, sizeof(b))
				       : "?",
			       si->deflate_windowbits);
			break;
		case EZFS_ALG_ZSTD:
			/* on disk: windowlog - 10, the window 2^windowlog */
			printf("zstd (window %s, windowlog %u)\n",
			       si->zstd_windowlog <= 20
				       ? cli_fmt_size(
						 1ULL << (si->zstd_windowlog +
							  10),
						 b, sizeof(b))
				       : "?",
			       si->zstd_windowlog + 10);
			break;
		}
	}
	if (!any)
		printf("none (uncompressed)\n");
}

/* The device table: one line per extra device. */
static void print_devices(ezfs_image *fs)
{
	unsigned n = ezfs_device_count(fs);
	struct ezfs_device d;
	char *tmp;

	for (unsigned i = 1; i <= n; i++) {
		if (ezfs_device_get(fs, i, &d))
			continue;
		printf("  device %-4u tag '%s', blocks %" PRIu64
		       ", uniaddr %" PRIu64 ", ",
		       i, cli_qname(d.tag, &tmp), d.blocks, d.uniaddr);
		free(tmp);
		if (d.path)
			printf("file %s (%" PRIu64 " bytes)\n",
			       cli_qname(d.path, &tmp), d.bytes);
		else
			printf("in the image (flat)\n");
		if (d.path)
			free(tmp);
	}
}

/* An Android sparse image (or split set) at img: 1 and *sp, else 0. */
static int sparse_of(const char *img, struct ezfs_sparse_info *sp)
{
	return !cli_is_remote(img) && !ezfs_sparse_stat(img, sp);
}

/* Two lines for a sparse image: its files and its chunks by type. */
static void print_sparse(const char *img)
{
	struct ezfs_sparse_info sp;
	char b[32];

	if (!sparse_of(img, &sp))
		return;
	printf("%-20s Android sparse, %u file%s, %" PRIu64
	       " bytes stored (%s), %" PRIu64 " blocks of %u\n",
	       "Container:", sp.files, sp.files == 1 ? "" : "s",
	       sp.stored_bytes, cli_fmt_size(sp.stored_bytes, b, sizeof(b)),
	       sp.blocks, sp.block_size);
	printf("%-20s %" PRIu64 ": %" PRIu64 " raw (%" PRIu64
	       " blocks), %" PRIu64 " fill (%" PRIu64 "), %" PRIu64
	       " don't care (%" PRIu64 "), %" PRIu64 " crc32\n",
	       "Sparse chunks:", sp.chunks, sp.raw_chunks, sp.raw_blocks,
	       sp.fill_chunks, sp.fill_blocks, sp.dont_care_chunks,
	       sp.dont_care_blocks, sp.crc32_chunks);
}

/* The "sparse" object of info.json: each count under its field's name. */
/* clang-format off */
#define SP_U64(f) { #f, offsetof(struct ezfs_sparse_info, f) }
/* clang-format on */
static void json_sparse(struct cj *j, const char *img)
{
	static const struct {
		const char *key;
		size_t off;
	} u64s[] = {
		SP_U64(blocks),		  SP_U64(stored_bytes),
		SP_U64(chunks),		  SP_U64(raw_chunks),
		SP_U64(raw_blocks),	  SP_U64(fill_chunks),
		SP_U64(fill_blocks),	  SP_U64(dont_care_chunks),
		SP_U64(dont_care_blocks), SP_U64(crc32_chunks),
	};
	struct ezfs_sparse_info sp;
	uint64_t v;
	size_t i;

	if (!sparse_of(img, &sp)) {
		cj_null(j, "sparse");
		return;
	}
	cj_obj(j, "sparse");
	cj_u64(j, "files", sp.files);
	cj_u64(j, "block_size", sp.block_size);
	for (i = 0; i < sizeof(u64s) / sizeof(u64s[0]); i++) {
		memcpy(&v, (const char *)&sp + u64s[i].off, sizeof(v));
		cj_u64(j, u64s[i].key, v);
	}
	cj_end(j);
}
#undef SP_U64

/* A dm-verity tree the image was opened with (docs/verity.md). */
static void print_verity(ezfs_image *fs)
{
	struct ezfs_verity_info vi;
	char hex[513], t[320];
	int i;

	if (ezfs_image_verity(fs, &vi))
		return;
	printf("%-20s %s at byte %" PRIu64 ", %" PRIu64
	       " data blocks of %u, %" PRIu64 " tree blocks of %u (%u "
	       "level%s), %s\n",
	       "dm-verity:", vi.separate ? "hash file" : "after the image",
	       vi.hash_offset, vi.data_blocks, vi.data_block_size,
	       vi.tree_blocks, vi.hash_block_size, vi.levels,
	       vi.levels == 1 ? "" : "s", vi.algorithm);
	printf("%-20s %s\n", "Verity salt:",
	       vi.salt_size ? cli_hex(vi.salt, vi.salt_size, hex) : "(none)");
	printf("%-20s ", "Verity UUID:");
	for (i = 0; i < 16; i++)
		printf("%s%02x",
		       (i == 4 || i == 6 || i == 8 || i == 10) ? "-" : "",
		       vi.uuid[i]);
	printf("\n%-20s %s (%s)\n", "Verity root hash:",
	       vi.root_size ? cli_hex(vi.root, vi.root_size, hex) : "?",
	       cli_verity_trust(&vi, t, sizeof(t)));
	if (vi.bad_tree)
		printf("%-20s %" PRIu64 " hash block%s not match the level "
		       "above (ezfs fsck lists them)\n",
		       "Verity problems:", vi.bad_tree,
		       vi.bad_tree == 1 ? " does" : "s do");
}

/* --json's "verity": null without a tree */
static void json_verity(struct cj *j, ezfs_image *fs)
{
	struct ezfs_verity_info vi;
	char hex[513];

	if (ezfs_image_verity(fs, &vi)) {
		cj_null(j, "verity");
		return;
	}
	cj_obj(j, "verity");
	cj_bool(j, "separate", vi.separate);
	cj_u64(j, "hash_offset", vi.hash_offset);
	cj_u64(j, "data_blocks", vi.data_blocks);
	cj_u64(j, "data_block_size", vi.data_block_size);
	cj_u64(j, "tree_blocks", vi.tree_blocks);
	cj_u64(j, "hash_block_size", vi.hash_block_size);
	cj_u64(j, "levels", vi.levels);
	cj_str(j, "algorithm", vi.algorithm);
	cj_str(j, "salt", cli_hex(vi.salt, vi.salt_size, hex));
	cj_str(j, "uuid", cli_hex(vi.uuid, 16, hex));
	if (vi.root_size)
		cj_str(j, "root_hash", cli_hex(vi.root, vi.root_size, hex));
	else
		cj_null(j, "root_hash");
	cj_str(j, "trust",
	       vi.trust == EZFS_VERITY_TRUST_SIGNED  ? "signed"
	       : vi.trust == EZFS_VERITY_TRUST_GIVEN ? "given"
						     : "none");
	cj_u64(j, "bad_tree_blocks", vi.bad_tree);
	cj_end(j);
}

static void print_sb(const char *img, ezfs_image *fs)
{
	struct ezfs_sb_info si;
	char feat[512], b[64], t[64];
	int i, zero = 1;

	ezfs_get_sb_info(fs, &si);
	ezfs_feature_string(fs, feat, sizeof(feat));
	printf("%-20s %s\n", "Image:", img);
	printf("%-20s %" PRIu64 " (%s)\n", "Image bytes:", si.image_bytes,
	       cli_fmt_size(si.image_bytes, b, sizeof(b)));
	print_sparse(img);
	printf("%-20s %u (2^%u)\n", "Block size:", si.blksz, si.blkszbits);
	printf("%-20s %" PRIu64 "\n", "Blocks:", si.blocks);
	printf("%-20s %s\n", "Features:", *feat ? feat : "(none)");
	printf("%-20s compat 0x%08x, incompat 0x%08x\n",
	       "Feature bits:", si.feature_compat, si.feature_incompat);
	{
		const char *why;
		unsigned k = ezfs_min_kernel(&si, &why);

		printf("%-20s %u.%u (%s)\n",
		       "Minimum Linux:", EZFS_KVER_MAJOR(k), EZFS_KVER_MINOR(k),
		       why);
	}
	printf("%-20s %u\n", "Superblock size:", si.sb_size);
	printf("%-20s %" PRIu64 "\n", "Inodes:", si.inos);
	printf("%-20s %" PRIu64 "\n", "Root nid:", si.root_nid);
	printf("%-20s %s UTC (epoch %" PRId64 " + %u s, fixed nsec %u)\n",
	       "Build time:",
	       cli_fmt_time(si.epoch + (int64_t)si.build_time, t, sizeof(t)),
	       si.epoch, si.build_time, si.fixed_nsec);
	for (i = 0; i < 16; i++)
		zero &= !si.uuid[i];
	printf("%-20s ", "UUID:");
	if (zero) {
		printf("(none)\n");
	} else {
		for (i = 0; i < 16; i++)
			printf("%s%02x",
			       (i == 4 || i == 6 || i == 8 || i == 10) ? "-"
								       : "",
			       si.uuid[i]);
		printf("\n");
	}
	printf("%-20s %s\n",
	       "Label:", *si.volume_name ? si.volume_name : "(none)");
	printf("%-20s %" PRIu64 "\n", "Meta blkaddr:", si.meta_blkaddr);
	printf("%-20s %" PRIu64 "\n", "Xattr blkaddr:", si.xattr_blkaddr);
	if (si.xattr_prefix_count)
		printf("%-20s %u\n", "Xattr prefixes:", si.xattr_prefix_count);
	if (si.extra_devices)
		printf("%-20s %u\n", "Extra devices:", si.extra_devices);
	print_devices(fs);
	print_verity(fs);
	if (si.packed_nid)
		printf("%-20s %" PRIu64 "\n", "Packed nid:", si.packed_nid);
	if (si.metabox_nid)
		printf("%-20s %" PRIu64 "\n", "Metabox nid:", si.metabox_nid);
	print_algs(&si);
}

/* "4 KiB" for 2^bit */
static void pow2_label(int bit, char *buf, size_t size)
{
	static const char *const units[] = {
		"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB",
	};

	if (bit >= 70)
		snprintf(buf, size, "2^%d", bit);
	else
		snprintf(buf, size, "%u %s", 1u << (bit % 10), units[bit / 10]);
}

static void print_stats(const struct info_stats *s)
{
	char b1[32], b2[32], lo[32], hi[32];
	uint64_t tp = 0, tl = 0;
	int i;

	printf("\nEntries by type:\n");
	for (i = 0; i < 8; i++)
		if (s->ntype[i])
			printf("  %-20s %" PRIu64 "\n", ftype_names[i],
			       s->ntype[i]);
	printf("\nFile sizes (distinct inodes):\n");
	printf("  %-22s %10s %12s\n", "size", "files", "bytes");
	for (i = 0; i < NBUCKETS; i++) {
		if (!s->hist_n[i])
			continue;
		if (!i) {
			printf("  %-22s", "0");
		} else {
			char r[80];

			pow2_label(i - 1, lo, sizeof(lo));
			pow2_label(i, hi, sizeof(hi));
			snprintf(r, sizeof(r), "[%s, %s)", lo, hi);
			printf("  %-22s", r);
		}
		printf(" %10" PRIu64 " %12s\n", s->hist_n[i],
		       cli_fmt_size(s->hist_bytes[i], b1, sizeof(b1)));
	}
	printf("\nData by algorithm:\n");
	printf("  %-12s %10s %10s %14s %14s %8s\n", "algorithm", "extents",
	       "pclusters", "stored", "original", "ratio");
	for (i = 0; i < NALGS; i++) {
		const struct alg_stat *a = &s->alg[i];

		if (!a->extents)
			continue;
		tp += a->plen;
		tl += a->llen;
		printf("  %-12s %10" PRIu64 " %10" PRIu64 " %14" PRIu64
		       " %14" PRIu64 " %8.4f\n",
		       ezfs_alg_name(i), a->extents, a->pclusters, a->plen,
		       a->llen, a->llen ? (double)a->plen / a->llen : 0.0);
	}
	if (s->inline_n)
		printf("  %-12s %10" PRIu64 " %10s %14s %14" PRIu64 "\n",
		       "inline", s->inline_n, "-", "-", s->inline_bytes);
	if (s->frag_n)
		printf("  %-12s %10" PRIu64 " %10s %14s %14" PRIu64 "\n",
		       "fragments", s->frag_n, "-", "-", s->frag_bytes);
	if (s->hole_bytes)
		printf("  %-12s %10s %10s %14s %14" PRIu64 "\n", "holes", "-",
		       "-", "-", s->hole_bytes);
	printf("  %-12s %10s %10s %14" PRIu64 " %14" PRIu64 "\n", "total", "",
	       "", tp, tl);
	if (s->dedup_bytes)
		printf("  deduplicated: %s of extents share a pcluster\n",
		       cli_fmt_size(s->dedup_bytes, b2, sizeof(b2)));
}

/* --json (docs/schemas/info.json) */
static void json_algs(struct cj *j, const struct ezfs_sb_info *si)
{
	cj_arr(j, "algorithms");
	for (int a = 0; (si->feature_incompat & 0x3) && a < EZFS_ALG_MAX; a++) {
		if (!(si->available_algs & (1u << a)))
			continue;
		cj_obj(j, NULL);
		cj_str(j, "name", ezfs_alg_name(a));
		switch (a) {
		case EZFS_ALG_LZ4:
			cj_u64(j, "max_distance", si->lz4_max_distance);
			cj_u64(j, "max_pcluster_blocks",
			       si->lz4_max_pclusterblks
				       ? si->lz4_max_pclusterblks
				       : 1);
			break;
		case EZFS_ALG_LZMA:
			cj_u64(j, "dict_size", si->lzma_dict_size);
			break;
		case EZFS_ALG_DEFLATE:
			cj_u64(j, "windowbits", si->deflate_windowbits);
			break;
		case EZFS_ALG_ZSTD:
			cj_u64(j, "windowlog", si->zstd_windowlog + 10u);
			break;
		}
		cj_end(j);
	}
	cj_end(j);
}

static void json_devices(struct cj *j, ezfs_image *fs)
{
	unsigned n = ezfs_device_count(fs);
	struct ezfs_device d;

	cj_arr(j, "devices");
	for (unsigned i = 1; i <= n; i++) {
		if (ezfs_device_get(fs, i, &d))
			continue;
		cj_obj(j, NULL);
		cj_u64(j, "slot", i);
		cj_bytes(j, "tag", d.tag, strlen(d.tag));
		cj_u64(j, "blocks", d.blocks);
		cj_u64(j, "uniaddr", d.uniaddr);
		if (d.path) {
			cj_bytes(j, "file", d.path, strlen(d.path));
			cj_u64(j, "file_bytes", d.bytes);
		} else {
			cj_null(j, "file");
		}
		cj_end(j);
	}
	cj_end(j);
}

static void json_stats(struct cj *j, const struct info_stats *s)
{
	static const char *const keys[8] = {
		"unknown",  "regular", "directory", "chardev",
		"blockdev", "fifo",    "socket",    "symlink",
	};
	uint64_t tp = 0, tl = 0;
	int i;

	cj_obj(j, "stats");
	cj_obj(j, "types");
	for (i = 0; i < 8; i++)
		cj_u64(j, keys[i], s->ntype[i]);
	cj_end(j);
	cj_arr(j, "sizes");
	for (i = 0; i < NBUCKETS; i++) {
		if (!s->hist_n[i])
			continue;
		cj_obj(j, NULL);
		/* [min, max): sizes 0 are the bucket [0, 1) */
		cj_u64(j, "min", i ? 1ull << (i - 1) : 0);
		if (i < 65)
			cj_u64(j, "max", i ? 1ull << (i - 1) << 1 : 1);
		else
			cj_null(j, "max");
		cj_u64(j, "files", s->hist_n[i]);
		cj_u64(j, "bytes", s->hist_bytes[i]);
		cj_end(j);
	}
	cj_end(j);
	cj_arr(j, "algorithms");
	for (i = 0; i < NALGS; i++) {
		const struct alg_stat *a = &s->alg[i];

		if (!a->extents)
			continue;
		tp += a->plen;
		tl += a->llen;
		cj_obj(j, NULL);
		cj_str(j, "name", ezfs_alg_name(i));
		cj_u64(j, "extents", a->extents);
		cj_u64(j, "pclusters", a->pclusters);
		cj_u64(j, "stored_bytes", a->plen);
		cj_u64(j, "original_bytes", a->llen);
		cj_end(j);
	}
	cj_end(j);
	cj_obj(j, "inline");
	cj_u64(j, "extents", s->inline_n);
	cj_u64(j, "bytes", s->inline_bytes);
	cj_end(j);
	cj_obj(j, "fragments");
	cj_u64(j, "extents", s->frag_n);
	cj_u64(j, "bytes", s->frag_bytes);
	cj_end(j);
	cj_u64(j, "hole_bytes", s->hole_bytes);
	cj_u64(j, "deduplicated_bytes", s->dedup_bytes);
	cj_u64(j, "stored_bytes", tp);
	cj_u64(j, "original_bytes", tl);
	cj_end(j);
}

static void print_json(const char *img, ezfs_image *fs,
		       const struct info_stats *s)
{
	struct ezfs_sb_info si;
	char feat[512], uuid[40];
	const char *why;
	unsigned k;
	struct cj j;
	int i, zero = 1;
	size_t n = 0;

	ezfs_get_sb_info(fs, &si);
	ezfs_feature_string(fs, feat, sizeof(feat));
	k = ezfs_min_kernel(&si, &why);
	cj_init(&j, stdout);
	cj_obj(&j, NULL);
	cj_bytes(&j, "image", img, strlen(img));
	cj_u64(&j, "image_bytes", si.image_bytes);
	json_sparse(&j, img);
	cj_u64(&j, "block_size", si.blksz);
	cj_u64(&j, "blocks", si.blocks);
	cj_arr(&j, "features");
	for (char *p = feat, *e; *p; p = *e ? e + 1 : e) {
		e = strchr(p, ',');
		if (!e)
			e = p + strlen(p);
		{
			char c = *e;

			*e = '\0';
			cj_str(&j, NULL, p);
			*e = c;
		}
	}
	cj_end(&j);
	cj_u64(&j, "feature_compat", si.feature_compat);
	cj_u64(&j, "feature_incompat", si.feature_incompat);
	cj_obj(&j, "min_kernel");
	snprintf(uuid, sizeof(uuid), "%u.%u", EZFS_KVER_MAJOR(k),
		 EZFS_KVER_MINOR(k));
	cj_str(&j, "version", uuid);
	cj_u64(&j, "major", EZFS_KVER_MAJOR(k));
	cj_u64(&j, "minor", EZFS_KVER_MINOR(k));
	cj_str(&j, "feature", why);
	cj_end(&j);
	cj_u64(&j, "sb_size", si.sb_size);
	cj_u64(&j, "inodes", si.inos);
	cj_u64(&j, "root_nid", si.root_nid);
	cj_i64(&j, "build_time", si.epoch + (int64_t)si.build_time);
	cj_i64(&j, "epoch", si.epoch);
	cj_u64(&j, "fixed_nsec", si.fixed_nsec);
	for (i = 0; i < 16; i++)
		zero &= !si.uuid[i];
	for (i = 0; i < 16; i++)
		n += (size_t)snprintf(
			uuid + n, sizeof(uuid) - n, "%s%02x",
			(i == 4 || i == 6 || i == 8 || i == 10) ? "-" : "",
			si.uuid[i]);
	if (zero)
		cj_null(&j, "uuid");
	else
		cj_str(&j, "uuid", uuid);
	if (*si.volume_name)
		cj_bytes(&j, "label", si.volume_name, strlen(si.volume_name));
	else
		cj_null(&j, "label");
	cj_u64(&j, "meta_blkaddr", si.meta_blkaddr);
	cj_u64(&j, "xattr_blkaddr", si.xattr_blkaddr);
	cj_u64(&j, "xattr_prefixes", si.xattr_prefix_count);
	cj_u64(&j, "extra_devices", si.extra_devices);
	json_devices(&j, fs);
	if (si.packed_nid)
		cj_u64(&j, "packed_nid", si.packed_nid);
	else
		cj_null(&j, "packed_nid");
	if (si.metabox_nid)
		cj_u64(&j, "metabox_nid", si.metabox_nid);
	else
		cj_null(&j, "metabox_nid");
	json_algs(&j, &si);
	json_verity(&j, fs);
	cj_u64(&j, "files", s->nfiles);
	cj_u64(&j, "file_bytes", s->file_bytes);
	if (s->detailed)
		json_stats(&j, s);
	cj_end(&j);
}

/* The walk starts below the root; the root counts as a directory too (as
 * in fsck's totals). */
static int count_root(ezfs_image *fs, struct info_stats *s)
{
	struct ezfs_stat st;
	ezfs_inode *root;
	int ret = ezfs_inode_get(fs, ezfs_root_nid(fs), &root);

	if (ret < 0)
		return ret;
	ezfs_inode_stat(root, &st);
	ret = stats_cb(s, "", st.nid, &st, root);
	ezfs_inode_put(root);
	return ret;
}

int cmd_info(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "stats", no_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'J' },
		CLI_ENGINE_OPTS,
		CLI_IMAGE_OPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct info_stats *s;
	struct cli_log lg = { 0 };
	struct ezfs_sb_info si;
	ezfs_image *fs;
	char b[32];
	int c, ret, detailed = 0, json = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":Sh", opts, NULL)) != -1) {
		switch (c) {
		case 'S':
			detailed = 1;
			break;
		case 'J':
			json = 1;
			break;
		default:
			ret = cli_opt_other("info", c, argv, usage);
			if (ret >= 0)
				return ret;
		}
	}
	if (cli_nargs("info", argc - optind, 1, 1, "missing IMG"))
		return 2;
	if (cli_open("info", argv[optind], &lg, &fs) < 0)
		return 1;
	s = calloc(1, sizeof(*s));
	if (!s) {
		ezfs_image_close(fs);
		cli_error("info", "%s: %s", argv[optind], strerror(ENOMEM));
		return 1;
	}
	s->detailed = detailed;
	s->img = argv[optind];
	if (!json)
		print_sb(argv[optind], fs);
	ret = count_root(fs, s);
	if (!ret)
		ret = cli_walk(fs, ezfs_root_nid(fs), stats_cb, s);
	if (ret < 0) {
		if (!s->err_reported)
			cli_fail("info", argv[optind], "walking the tree", ret);
	} else if (json) {
		print_json(argv[optind], fs, s);
	} else {
		ezfs_get_sb_info(fs, &si);
		printf("%-20s %" PRIu64 " in %" PRIu64 " files (%s)\n",
		       "Uncompressed:", s->file_bytes, s->nfiles,
		       cli_fmt_size(s->file_bytes, b, sizeof(b)));
		print_ratio("Ratio (image/data):", si.image_bytes,
			    s->file_bytes);
		if (detailed)
			print_stats(s);
	}
	cli_nidset_free(&s->files);
	cli_nidset_free(&s->pas);
	free(s);
	ezfs_image_close(fs);
	return ret < 0 ? 1 : 0;
}
