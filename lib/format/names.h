/* SPDX-License-Identifier: MIT */
/* names.h - names of on-disk values (ezfs_alg_name and ezfs_layout_name are
 * public, in ezfs/ezfs.h). */
#ifndef EZFS_FORMAT_NAMES_H
#define EZFS_FORMAT_NAMES_H

#include <stddef.h>
#include <stdint.h>

/* "sb_csum,mtime,..." for the feature bits; unknown ones as compat:0x..
 * or incompat:0x..; cut at size. */
void ezi_feature_names(uint32_t compat, uint32_t incompat, char *buf,
		       size_t size);

#endif
