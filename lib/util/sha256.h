/* SPDX-License-Identifier: MIT */
/*
 * sha256.h - SHA-256 (FIPS 180-4): Android's LP metadata checksums
 * (io/lp.c) and OCI blob digests (remote/); it is built into libezfs and
 * into libezfs-remote (which sees only libezfs' public API). The bulk
 * hashing of dm-verity and fs-verity goes through libcrypto instead
 * (format/verity.c), several times faster where the CPU has SHA
 * instructions.
 */
#ifndef EZFS_UTIL_SHA256_H
#define EZFS_UTIL_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct ezi_sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
	size_t n;
};

void ezi_sha256_init(struct ezi_sha256 *c);
void ezi_sha256_update(struct ezi_sha256 *c, const void *data, size_t len);
void ezi_sha256_final(struct ezi_sha256 *c, uint8_t out[32]);
/* The digest of one buffer. */
void ezi_sha256(const void *data, size_t len, uint8_t out[32]);
/* The digest of data as 64 lowercase hex digits. */
void ezi_sha256_hex(const void *data, size_t len, char out[65]);

#endif
