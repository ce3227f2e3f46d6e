/* SPDX-License-Identifier: MIT */
/* xxhash.c - XXH32, used by the xattr name filter (format notes 14.2). */
#include "format/erofs_fs.h"

#define P1 0x9E3779B1u
#define P2 0x85EBCA77u
#define P3 0xC2B2AE3Du
#define P4 0x27D4EB2Fu
#define P5 0x165667B1u

static inline uint32_t rotl32(uint32_t x, unsigned r)
{
	return (x << r) | (x >> (32 - r));
}

uint32_t ezi_xxh32(const void *data, size_t len, uint32_t seed)
{
	const uint8_t *p = data, *end = p + len;
	uint32_t h;

	if (len >= 16) {
		uint32_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed,
			 v4 = seed - P1;
		const uint8_t *limit = end - 16;
		do {
			v1 = rotl32(v1 + get_le32(p) * P2, 13) * P1;
			v2 = rotl32(v2 + get_le32(p + 4) * P2, 13) * P1;
			v3 = rotl32(v3 + get_le32(p + 8) * P2, 13) * P1;
			v4 = rotl32(v4 + get_le32(p + 12) * P2, 13) * P1;
			p += 16;
		} while (p <= limit);
		h = rotl32(v1, 1) + rotl32(v2, 7) + rotl32(v3, 12) +
		    rotl32(v4, 18);
	} else {
		h = seed + P5;
	}
	h += (uint32_t)len;
	while (p + 4 <= end) {
		h = rotl32(h + get_le32(p) * P3, 17) * P4;
		p += 4;
	}
	while (p < end)
		h = rotl32(h + (*p++) * P5, 11) * P1;
	h ^= h >> 15;
	h *= P2;
	h ^= h >> 13;
	h *= P3;
	h ^= h >> 16;
	return h;
}
