/* SPDX-License-Identifier: MIT */
/* names.c - the names of algorithms, inode layouts and feature bits. */
#include <stdio.h>

#include "ezfs/ezfs.h"
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
