/* SPDX-License-Identifier: MIT */
/* crc32c.c - CRC-32C (Castagnoli) as EROFS uses it: raw state, no final xor. */
#include "format/erofs_fs.h"

#include <stddef.h>

#ifdef EZFS_HAVE_ISAL
#include <isa-l/crc.h>
#include <limits.h>

/*
 * ISA-L's crc32_iscsi is the same function (no inversion in or out) with
 * the CPU's crc32 instruction and carry-less folding: 2.6x the table's
 * rate here (17 against 45 ms for 64 MiB in 4 KiB pieces); mkfs' workers
 * hash every pcluster that may be shared with it.
 */
uint32_t ezi_crc32c(uint32_t crc, const void *data, size_t len)
{
	const unsigned char *p = data;

	while (len) {
		int n = len > INT_MAX ? INT_MAX & ~4095 : (int)len;

		crc = crc32_iscsi((unsigned char *)p, n, crc);
		p += n;
		len -= (size_t)n;
	}
	return crc;
}
#else
/* Slicing-by-8 tables, made by scripts/crc32c_gen.c during the build. */
#include "crc32c_table.h"

uint32_t ezi_crc32c(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = data;

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
#endif
