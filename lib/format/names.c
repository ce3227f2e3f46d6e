/* SPDX-License-Identifier: MIT */
/* names.c - the names of algorithms, inode layouts and feature bits. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ezfs/ezfs.h"
#include "format/erofs_fs.h"
#include "format/names.h"

static const char *const compat_names[] = {
	"sb_csum",	   "mtime",
	"xattr_filter",	   "shared_ea_in_metabox",
	"plain_xattr_pfx", "ishare_xattrs",
};
static const char *const incompat_names[] = {
	"0padding",	  "compr_cfgs/big_pcluster",
	"chunked_file",	  "device_table/compr_head2",
	"ztailpacking",	  "fragments/dedupe",
	"xattr_prefixes", "48bit",
	"metabox",
};

static void feature_names(char *buf, size_t size, uint32_t bits,
			  const char *const *names, unsigned nnames,
			  const char *kind, size_t *used)
{
	for (unsigned i = 0; i < 32; i++) {
		int n;

		if (!(bits & (1u << i)))
			continue;
		if (i < nnames)
			n = snprintf(buf + *used, size - *used, "%s%s",
				     *used ? "," : "", names[i]);
		else
			n = snprintf(buf + *used, size - *used, "%s%s:0x%x",
				     *used ? "," : "", kind, 1u << i);
		if (n < 0 || (size_t)n >= size - *used) {
			*used = size - 1;
			return;
		}
		*used += (size_t)n;
	}
}

void ezi_feature_names(uint32_t compat, uint32_t incompat, char *buf,
		       size_t size)
{
	size_t used = 0;

	if (!size)
		return;
	buf[0] = '\0';
	feature_names(buf, size, compat, compat_names,
		      sizeof(compat_names) / sizeof(compat_names[0]), "compat",
		      &used);
	feature_names(buf, size, incompat, incompat_names,
		      sizeof(incompat_names) / sizeof(incompat_names[0]),
		      "incompat", &used);
}

const char *ezfs_alg_name(int alg)
{
	switch (alg) {
	case EZFS_ALG_LZ4:
		return "lz4";
	case EZFS_ALG_LZMA:
		return "lzma";
	case EZFS_ALG_DEFLATE:
		return "deflate";
	case EZFS_ALG_ZSTD:
		return "zstd";
	case EZFS_ALG_SHIFTED:
		return "plain";
	case EZFS_ALG_INTERLACED:
		return "interlaced";
	default:
		return "?";
	}
}

const char *ezfs_layout_name(int layout)
{
	static const char *const names[] = {
		"flat_plain",	      "compressed_full", "flat_inline",
		"compressed_compact", "chunk_based",
	};

	if (layout < 0 || layout > 4)
		return "?";
	return names[layout];
}

/*
 * The features and the oldest mainline Linux that mounts each (the format
 * notes' version matrix; docs/kernels.md prints this table). Compat bits
 * are left out: a kernel ignores those it does not know (xattr_filter is
 * used from 6.6 on, but an older kernel mounts the image all the same).
 */
static const struct ezfs_feature_desc features[] = {
	{ "base", EZFS_KVER(5, 4), "the format, lz4 with 0padding", "" },
	{ "compr_cfgs", EZFS_KVER(5, 13), "compression configuration records",
	  "-z ALG other than lz4" },
	{ "big_pcluster", EZFS_KVER(5, 13), "pclusters of several blocks",
	  "-C SIZE > block size" },
	{ "chunked_file", EZFS_KVER(5, 15), "chunk-based files",
	  "--chunksize" },
	{ "device_table", EZFS_KVER(5, 16), "extra devices", "--blobdev" },
	{ "lzma", EZFS_KVER(5, 16), "MicroLZMA pclusters", "-z lzma" },
	{ "ztailpacking", EZFS_KVER(5, 17), "compressed tails inline",
	  "-E ztailpacking" },
	{ "fragments", EZFS_KVER(6, 1), "the packed inode",
	  "-E fragments, -E all-fragments" },
	{ "dedupe", EZFS_KVER(6, 1), "pclusters shared between extents",
	  "-E dedupe" },
	{ "subpage_blocks", EZFS_KVER(6, 4),
	  "blocks under 4096 bytes, uncompressed files", "-b 512|1024|2048" },
	{ "xattr_prefixes", EZFS_KVER(6, 4), "long xattr name prefixes",
	  "--xattr-prefix" },
	{ "deflate", EZFS_KVER(6, 6), "raw DEFLATE pclusters", "-z deflate" },
	{ "subpage_compressed", EZFS_KVER(6, 8),
	  "blocks under 4096 bytes, compressed files", "-b 512|1024|2048 -z" },
	{ "zstd", EZFS_KVER(6, 10), "Zstandard pclusters", "-z zstd" },
	{ "48bit", EZFS_KVER(6, 15),
	  "48-bit addresses, encoded extents, dot-omitted directories",
	  "-E 48bit, -E dot-omitted" },
	{ "metabox", EZFS_KVER(6, 17), "metadata inside the metabox inode",
	  "-m" },
	{ "plain_xattr_pfx", EZFS_KVER(6, 17),
	  "a plain long-prefix table beside a packed inode", "" },
};

#define NFEATURES (sizeof(features) / sizeof(features[0]))

unsigned ezfs_feature_count(void)
{
	return NFEATURES;
}

int ezfs_feature_get(unsigned i, struct ezfs_feature_desc *d)
{
	if (i >= NFEATURES)
		return -EINVAL;
	*d = features[i];
	return 0;
}

int ezfs_feature_find(const char *name, struct ezfs_feature_desc *d)
{
	for (unsigned i = 0; name && i < NFEATURES; i++)
		if (!strcmp(features[i].name, name)) {
			if (d)
				*d = features[i];
			return 0;
		}
	return -ENOENT;
}

static void need(const char *name, unsigned *best, const char **why)
{
	struct ezfs_feature_desc d;

	if (ezfs_feature_find(name, &d))
		return;
	if (d.kernel > *best) {
		*best = d.kernel;
		*why = d.name;
	}
}

unsigned ezfs_min_kernel(const struct ezfs_sb_info *si, const char **feature)
{
	uint32_t in = si->feature_incompat;
	int compressed = !!(in & (EROFS_FEATURE_INCOMPAT_ZERO_PADDING |
				  EROFS_FEATURE_INCOMPAT_COMPR_CFGS));
	const char *why = "base";
	unsigned best = EZFS_KVER(5, 4);

	if (in & EROFS_FEATURE_INCOMPAT_COMPR_CFGS)
		need(si->lz4_max_pclusterblks > 1 ? "big_pcluster"
						  : "compr_cfgs",
		     &best, &why);
	if (in & EROFS_FEATURE_INCOMPAT_CHUNKED_FILE)
		need("chunked_file", &best, &why);
	if (in & EROFS_FEATURE_INCOMPAT_DEVICE_TABLE)
		need("device_table", &best, &why);
	if (compressed && (si->available_algs & (1u << EZFS_ALG_LZMA)))
		need("lzma", &best, &why);
	if (in & EROFS_FEATURE_INCOMPAT_ZTAILPACKING)
		need("ztailpacking", &best, &why);
	if (in & EROFS_FEATURE_INCOMPAT_FRAGMENTS)
		need(si->packed_nid ? "fragments" : "dedupe", &best, &why);
	if (si->blkszbits < 12)
		need(compressed ? "subpage_compressed" : "subpage_blocks",
		     &best, &why);
	if (in & EROFS_FEATURE_INCOMPAT_XATTR_PREFIXES)
		need("xattr_prefixes", &best, &why);
	if (compressed && (si->available_algs & (1u << EZFS_ALG_DEFLATE)))
		need("deflate", &best, &why);
	if (compressed && (si->available_algs & (1u << EZFS_ALG_ZSTD)))
		need("zstd", &best, &why);
	if (in & EROFS_FEATURE_INCOMPAT_48BIT)
		need("48bit", &best, &why);
	if (in & EROFS_FEATURE_INCOMPAT_METABOX)
		need("metabox", &best, &why);
	if ((si->feature_compat & EROFS_FEATURE_COMPAT_PLAIN_XATTR_PFX) &&
	    (in & EROFS_FEATURE_INCOMPAT_XATTR_PREFIXES) && si->packed_nid)
		need("plain_xattr_pfx", &best, &why);
	if (feature)
		*feature = why;
	return best;
}
