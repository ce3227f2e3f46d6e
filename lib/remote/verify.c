/* SPDX-License-Identifier: MIT */
/*
 * verify.c - what is fetched, checked against what the source knows of
 * the bytes: an oci:// layer's digest (sha256 of the whole blob), checked
 * once every block is present. Blocks are served before that: a range is
 * only checked against the range asked for (fetch.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "remote/internal.h"
#include "util/sha256.h"

void ezi_verify_blob(struct ezfs_remote *r)
{
	struct ezi_sha256 c;
	uint8_t d[32], *tmp;
	char hex[65];

	if (!r->digest[0] || r->verified ||
	    __atomic_load_n(&r->bad, __ATOMIC_RELAXED) ||
	    r->st.cache_bytes != r->size)
		return;
	tmp = malloc(r->bs);
	if (!tmp)
		return;
	ezi_sha256_init(&c);
	for (uint64_t b = 0; b < r->nblocks; b++) {
		size_t l = ezi_blk_len(r, b);

		if (ezi_block_copy(r, b, 0, tmp, l)) {
			free(tmp);
			return;
		}
		ezi_sha256_update(&c, tmp, l);
	}
	free(tmp);
	ezi_sha256_final(&c, d);
	for (int i = 0; i < 32; i++) {
		hex[2 * i] = "0123456789abcdef"[d[i] >> 4];
		hex[2 * i + 1] = "0123456789abcdef"[d[i] & 15];
	}
	hex[64] = '\0';
	if (!strcmp(hex, r->digest + 7)) {
		r->verified = 1;
		return;
	}
	ezi_rlog(r, EZFS_LOG_ERROR,
		 "the blob does not match its digest %s (sha256:%s); the "
		 "cache is dropped",
		 r->digest, hex);
	__atomic_store_n(&r->bad, 1, __ATOMIC_RELAXED);
	memset(r->state, EZI_B_ABSENT, r->nblocks);
	ezi_cache_drop(r);
}
