/* SPDX-License-Identifier: MIT */
/* crc32c.c - CRC-32C (Castagnoli) as EROFS uses it: raw state, no final xor. */
#include "format/erofs_fs.h"

#include <stddef.h>

/* Slicing-by-8 tables, built once from the reflected polynomial. */
static uint32_t crc_tab[8][256];
static int crc_ready;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ ((c & 1) ? 0x82F63B78u : 0);
		crc_tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^
					crc_tab[0][crc_tab[t - 1][i] & 0xff];
	__atomic_store_n(&crc_ready, 1, __ATOMIC_RELEASE);
}

uint32_t ezfs_crc32c(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = data;

	/* Tables are idempotent: racing initialisers write identical values. */
	if (!__atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE))
		crc_init();
	while (len >= 8) {
		uint32_t lo = crc ^ get_le32(p);
		uint32_t hi = get_le32(p + 4);
		crc = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^
		      crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^
		      crc_tab[3][hi & 0xff] ^ crc_tab[2][(hi >> 8) & 0xff] ^
		      crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ crc_tab[0][(crc ^ *p++) & 0xff];
	return crc;
}
