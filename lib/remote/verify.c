/* SPDX-License-Identifier: MIT */
/*
 * verify.c - what is fetched, checked against what the source knows of
 * the bytes: an oci:// layer's digest (sha256 of the whole blob), checked
 * once every block is present (ezi_verify_blob, by the read that
 * completes it) or when the caller asks (ezfs_remote_verify, fetching
 * what is missing). Blocks are served before that: a range is only
 * checked against the range asked for (fetch.c). A mismatch drops the
 * cache entry; the reads that follow fail, or with serve_unverified go on
 * for a caller that lists what it read as unverified.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "remote/internal.h"
#include "util/sha256.h"

#define CHUNK (1u << 20) /* hashed at a time by ezfs_remote_verify */

static void hex_of(const uint8_t d[32], char hex[65])
{
	for (int i = 0; i < 32; i++) {
		hex[2 * i] = "0123456789abcdef"[d[i] >> 4];
		hex[2 * i + 1] = "0123456789abcdef"[d[i] & 15];
	}
	hex[64] = '\0';
}

/* The bytes hashed to d: verified, or dropped with one log line. Lock
 * held. */
static void judge(struct ezfs_remote *r, const uint8_t d[32])
{
	char hex[65];

	hex_of(d, hex);
	if (!strcmp(hex, r->digest + 7)) {
		r->verified = 1;
		return;
	}
	ezi_rlog(r, EZFS_LOG_ERROR,
		 "the blob does not match its digest %s (its bytes hash to "
		 "sha256:%s); the cache entry is dropped",
		 r->digest, hex);
	__atomic_store_n(&r->bad, 1, __ATOMIC_RELAXED);
	ezi_cache_drop(r);
}

void ezi_verify_blob(struct ezfs_remote *r)
{
	struct ezi_sha256 c;
	uint8_t d[32], *tmp;

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

		if (r->state[b] != EZI_B_PRESENT ||
		    ezi_block_copy(r, b, 0, tmp, l)) {
			free(tmp);
			return;
		}
		ezi_sha256_update(&c, tmp, l);
	}
	free(tmp);
	ezi_sha256_final(&c, d);
	judge(r, d);
}

int ezfs_remote_verify(ezfs_remote *r)
{
	struct ezi_sha256 c;
	uint8_t d[32], *buf;
	uint64_t off = 0;
	int err = 0;

	if (!r->digest[0])
		return 0;
	if (__atomic_load_n(&r->bad, __ATOMIC_RELAXED))
		return -EBADMSG;
	if (r->verified)
		return 1;
	/* in order, through the blocks: what is missing is fetched, and a
	 * memory cache smaller than the image does not matter */
	buf = malloc(CHUNK);
	if (!buf)
		return -ENOMEM;
	ezi_sha256_init(&c);
	while (off < r->size && !r->verified) {
		size_t n =
			r->size - off < CHUNK ? (size_t)(r->size - off) : CHUNK;
		ssize_t got = ezi_read_range(r, buf, n, off, 0);

		if (got != (ssize_t)n) {
			err = got < 0 ? (int)got : -EIO;
			break;
		}
		ezi_sha256_update(&c, buf, n);
		off += n;
	}
	free(buf);
	if (__atomic_load_n(&r->bad, __ATOMIC_RELAXED))
		return -EBADMSG; /* the last fetch completed the blob */
	if (r->verified)
		return 1;
	if (err)
		return err;
	ezi_sha256_final(&c, d);
	pthread_mutex_lock(&r->lock);
	judge(r, d);
	pthread_mutex_unlock(&r->lock);
	return r->verified ? 1 : -EBADMSG;
}
