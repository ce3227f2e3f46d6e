/* SPDX-License-Identifier: MIT */
/*
 * erofs_fs.h - the EROFS on-disk format: every structure, field and constant.
 *
 * The only place in ezfs that knows byte offsets. All integers on disk are
 * little-endian; the structures are packed and checked for size at compile
 * time. Field comments follow ../shared/docs/erofs-format.md (section numbers
 * in brackets).
 */
#ifndef EZFS_FORMAT_EROFS_FS_H
#define EZFS_FORMAT_EROFS_FS_H

#include <stdint.h>
#include <string.h>

#define EROFS_SUPER_MAGIC	 0xE0F5E1E2u
#define EROFS_SUPER_OFFSET	 1024
#define EROFS_SB_BASE_SIZE	 128
#define EROFS_ISLOTBITS		 5
#define EROFS_ISLOT		 32
#define EROFS_MIN_BLKSZBITS	 9
#define EROFS_MAX_BLKSZBITS	 16
#define EROFS_NULL_ADDR32	 0xFFFFFFFFu
#define EROFS_NULL_ADDR48	 0xFFFFFFFFFFFFull
#define EROFS_NID_METABOX	 (1ull << 63)
#define EROFS_PCLUSTER_MAX_SIZE	 (1u << 20)
#define EROFS_PCLUSTER_MAX_DSIZE (12u << 20)
#define EROFS_NAME_LEN		 255

/* [2.1] feature_compat */
#define EROFS_FEATURE_COMPAT_SB_CHKSUM		  0x01
#define EROFS_FEATURE_COMPAT_MTIME		  0x02
#define EROFS_FEATURE_COMPAT_XATTR_FILTER	  0x04
#define EROFS_FEATURE_COMPAT_SHARED_EA_IN_METABOX 0x08
#define EROFS_FEATURE_COMPAT_PLAIN_XATTR_PFX	  0x10
#define EROFS_FEATURE_COMPAT_ISHARE_XATTRS	  0x20

/* [2.2] feature_incompat (aliases share bits) */
#define EROFS_FEATURE_INCOMPAT_ZERO_PADDING   0x001
#define EROFS_FEATURE_INCOMPAT_COMPR_CFGS     0x002
#define EROFS_FEATURE_INCOMPAT_BIG_PCLUSTER   0x002
#define EROFS_FEATURE_INCOMPAT_CHUNKED_FILE   0x004
#define EROFS_FEATURE_INCOMPAT_DEVICE_TABLE   0x008
#define EROFS_FEATURE_INCOMPAT_COMPR_HEAD2    0x008
#define EROFS_FEATURE_INCOMPAT_ZTAILPACKING   0x010
#define EROFS_FEATURE_INCOMPAT_FRAGMENTS      0x020
#define EROFS_FEATURE_INCOMPAT_DEDUPE	      0x020
#define EROFS_FEATURE_INCOMPAT_XATTR_PREFIXES 0x040
#define EROFS_FEATURE_INCOMPAT_48BIT	      0x080
#define EROFS_FEATURE_INCOMPAT_METABOX	      0x100
#define EROFS_ALL_FEATURE_INCOMPAT	      0x1FF

/* [2] superblock, 128 bytes (+16 per extslot) at byte 1024 */
struct erofs_super_block {
	uint32_t magic;
	uint32_t checksum;
	uint32_t feature_compat;
	uint8_t blkszbits;
	uint8_t sb_extslots;
	uint16_t rootnid_2b; /* or blocks_hi with 48BIT + rootnid_8b */
	uint64_t inos;
	uint64_t epoch;
	uint32_t fixed_nsec;
	uint32_t blocks_lo;
	uint32_t meta_blkaddr;
	uint32_t xattr_blkaddr;
	uint8_t uuid[16];
	uint8_t volume_name[16];
	uint32_t feature_incompat;
	uint16_t u1; /* available_compr_algs or lz4_max_distance */
	uint16_t extra_devices;
	uint16_t devt_slotoff;
	uint8_t dirblkbits;
	uint8_t xattr_prefix_count;
	uint32_t xattr_prefix_start;
	uint64_t packed_nid;
	uint8_t xattr_filter_reserved;
	uint8_t ishare_xattr_prefix_id;
	uint8_t reserved[2];
	uint32_t build_time;
	uint64_t rootnid_8b;
	uint64_t reserved2;
	/* extslot 1 */
	uint64_t metabox_nid;
	uint64_t reserved3;
} __attribute__((packed));
_Static_assert(sizeof(struct erofs_super_block) == 144, "sb size");

/* [3.2] compression config payloads (after a le16 size) */
struct z_erofs_lz4_cfgs {
	uint16_t max_distance;
	uint16_t max_pclusterblks;
	uint8_t reserved[10];
} __attribute__((packed));
struct z_erofs_lzma_cfgs {
	uint32_t dict_size;
	uint16_t format;
	uint8_t reserved[8];
} __attribute__((packed));
struct z_erofs_deflate_cfgs {
	uint8_t windowbits;
	uint8_t reserved[5];
} __attribute__((packed));
struct z_erofs_zstd_cfgs {
	uint8_t format;
	uint8_t windowlog;
	uint8_t reserved[4];
} __attribute__((packed));
_Static_assert(sizeof(struct z_erofs_lz4_cfgs) == 14, "lz4 cfg");
_Static_assert(sizeof(struct z_erofs_lzma_cfgs) == 14, "lzma cfg");
_Static_assert(sizeof(struct z_erofs_deflate_cfgs) == 6, "deflate cfg");
_Static_assert(sizeof(struct z_erofs_zstd_cfgs) == 6, "zstd cfg");

#define Z_EROFS_COMPRESSION_LZ4	    0
#define Z_EROFS_COMPRESSION_LZMA    1
#define Z_EROFS_COMPRESSION_DEFLATE 2
#define Z_EROFS_COMPRESSION_ZSTD    3
#define Z_EROFS_COMPRESSION_MAX	    4
#define Z_EROFS_LZ4_MAX_DISTANCE    65536

/* [4] device slot, 128 bytes */
struct erofs_deviceslot {
	uint8_t tag[64];
	uint32_t blocks_lo;
	uint32_t uniaddr_lo;
	uint16_t blocks_hi;
	uint16_t uniaddr_hi;
	uint8_t reserved[52];
} __attribute__((packed));
_Static_assert(sizeof(struct erofs_deviceslot) == 128, "devslot");

/* [5.2] i_format */
#define EROFS_I_VERSION_MASK	 0x01
#define EROFS_I_DATALAYOUT_SHIFT 1
#define EROFS_I_DATALAYOUT_MASK	 0x07
#define EROFS_I_NLINK_1_BIT	 0x10 /* non-dir, compact, 48BIT */
#define EROFS_I_DOT_OMITTED_BIT	 0x10 /* dir, 48BIT */
#define EROFS_I_ALL_BITS	 0x1F
#define EROFS_INODE_COMPACT	 0
#define EROFS_INODE_EXTENDED	 1

/* [5.3] data layouts */
#define EROFS_INODE_FLAT_PLAIN	       0
#define EROFS_INODE_COMPRESSED_FULL    1
#define EROFS_INODE_FLAT_INLINE	       2
#define EROFS_INODE_COMPRESSED_COMPACT 3
#define EROFS_INODE_CHUNK_BASED	       4

/* [5.4] compact inode, 32 bytes */
struct erofs_inode_compact {
	uint16_t i_format;
	uint16_t i_xattr_icount;
	uint16_t i_mode;
	uint16_t i_nb; /* nlink, or startblk_hi with NLINK_1 */
	uint32_t i_size;
	uint32_t i_mtime; /* relative to sb epoch */
	uint32_t i_u;
	uint32_t i_ino;
	uint16_t i_uid;
	uint16_t i_gid;
	uint32_t i_reserved;
} __attribute__((packed));
_Static_assert(sizeof(struct erofs_inode_compact) == 32, "compact inode");

/* [5.5] extended inode, 64 bytes */
struct erofs_inode_extended {
	uint16_t i_format;
	uint16_t i_xattr_icount;
	uint16_t i_mode;
	uint16_t i_nb; /* 48BIT: startblk_hi */
	uint64_t i_size;
	uint32_t i_u;
	uint32_t i_ino;
	uint32_t i_uid;
	uint32_t i_gid;
	uint64_t i_mtime;
	uint32_t i_mtime_nsec;
	uint32_t i_nlink;
	uint8_t i_reserved2[16];
} __attribute__((packed));
_Static_assert(sizeof(struct erofs_inode_extended) == 64, "extended inode");

/* [6.4.1] chunk format word */
#define EROFS_CHUNK_FORMAT_BLKBITS_MASK 0x001F
#define EROFS_CHUNK_FORMAT_INDEXES	0x0020
#define EROFS_CHUNK_FORMAT_48BIT	0x0040
#define EROFS_CHUNK_FORMAT_ALL		0x007F

/* [6.4.2] 8-byte chunk index */
struct erofs_inode_chunk_index {
	uint16_t startblk_hi;
	uint16_t device_id;
	uint32_t startblk_lo;
} __attribute__((packed));
_Static_assert(sizeof(struct erofs_inode_chunk_index) == 8, "chunk index");

/* [7.1] directory entry, 12 bytes */
struct erofs_dirent {
	uint64_t nid;
	uint16_t nameoff;
	uint8_t file_type;
	uint8_t reserved;
} __attribute__((packed));
_Static_assert(sizeof(struct erofs_dirent) == 12, "dirent");

#define EROFS_FT_UNKNOWN  0
#define EROFS_FT_REG_FILE 1
#define EROFS_FT_DIR	  2
#define EROFS_FT_CHRDEV	  3
#define EROFS_FT_BLKDEV	  4
#define EROFS_FT_FIFO	  5
#define EROFS_FT_SOCK	  6
#define EROFS_FT_SYMLINK  7
#define EROFS_FT_MAX	  8

/* [8.1] xattr ibody header, 12 bytes */
struct erofs_xattr_ibody_header {
	uint32_t h_name_filter;
	uint8_t h_shared_count;
	uint8_t h_reserved2[7];
} __attribute__((packed));
_Static_assert(sizeof(struct erofs_xattr_ibody_header) == 12, "xattr hdr");

/* [8.2] xattr entry header, 4 bytes, then name suffix and value */
struct erofs_xattr_entry {
	uint8_t e_name_len;
	uint8_t e_name_index;
	uint16_t e_value_size;
} __attribute__((packed));
_Static_assert(sizeof(struct erofs_xattr_entry) == 4, "xattr entry");

/* [8.5] long prefix table entry header (le16 len, u8 base_index, infix) */
struct erofs_xattr_long_prefix {
	uint8_t base_index;
	/* infix follows */
} __attribute__((packed));

#define EROFS_XATTR_INDEX_USER		    1
#define EROFS_XATTR_INDEX_POSIX_ACL_ACCESS  2
#define EROFS_XATTR_INDEX_POSIX_ACL_DEFAULT 3
#define EROFS_XATTR_INDEX_TRUSTED	    4
#define EROFS_XATTR_INDEX_LUSTRE	    5
#define EROFS_XATTR_INDEX_SECURITY	    6
#define EROFS_XATTR_LONG_PREFIX		    0x80
#define EROFS_XATTR_LONG_PREFIX_MASK	    0x7f
#define EROFS_XATTR_FILTER_BITS		    32
#define EROFS_XATTR_FILTER_DEFAULT	    0xFFFFFFFFu
#define EROFS_XATTR_FILTER_SEED		    0x25BBE08Fu

static inline unsigned erofs_xattr_ibody_size(uint16_t icount)
{
	return icount ? 12 + 4 * (unsigned)(icount - 1) : 0;
}
static inline unsigned erofs_xattr_entry_size(unsigned name_len,
					      unsigned value_size)
{
	return (4 + name_len + value_size + 3) & ~3u;
}

/* [9.3] compression map header, 8 bytes */
struct z_erofs_map_header {
	union {
		uint32_t h_fragmentoff;
		struct {
			uint16_t h_reserved1;
			uint16_t h_idata_size;
		} __attribute__((packed));
		/* encoded extents: h_extents_lo */
	} __attribute__((packed));
	uint16_t h_advise;
	uint8_t h_algorithmtype;
	uint8_t h_clusterbits;
} __attribute__((packed));
_Static_assert(sizeof(struct z_erofs_map_header) == 8, "map header");

#define Z_EROFS_ADVISE_COMPACTED_2B	   0x0001
#define Z_EROFS_ADVISE_EXTENTS		   0x0001
#define Z_EROFS_ADVISE_BIG_PCLUSTER_1	   0x0002
#define Z_EROFS_ADVISE_BIG_PCLUSTER_2	   0x0004
#define Z_EROFS_ADVISE_INLINE_PCLUSTER	   0x0008
#define Z_EROFS_ADVISE_INTERLACED_PCLUSTER 0x0010
#define Z_EROFS_ADVISE_FRAGMENT_PCLUSTER   0x0020
#define Z_EROFS_FRAGMENT_INODE_BIT	   7 /* of h_clusterbits */

/* [9.1] lcluster types */
#define Z_EROFS_LCLUSTER_TYPE_PLAIN   0
#define Z_EROFS_LCLUSTER_TYPE_HEAD1   1
#define Z_EROFS_LCLUSTER_TYPE_NONHEAD 2
#define Z_EROFS_LCLUSTER_TYPE_HEAD2   3

/* [9.4] full lcluster index, 8 bytes */
struct z_erofs_lcluster_index {
	uint16_t di_advise;
	uint16_t di_clusterofs;
	union {
		uint32_t blkaddr;
		uint16_t delta[2];
	} di_u;
} __attribute__((packed));
_Static_assert(sizeof(struct z_erofs_lcluster_index) == 8, "lcluster index");

#define Z_EROFS_LI_LCLUSTER_TYPE_MASK 0x3
#define Z_EROFS_LI_PARTIAL_REF	      (1u << 15)
#define Z_EROFS_LI_D0_CBLKCNT	      (1u << 11)
#define Z_EROFS_FULL_INDEX_START(H)   ((H) + 16)

/* [9.12] encoded extent record (up to 32 bytes) */
struct z_erofs_extent {
	uint32_t plen;
	uint32_t pstart_lo;
	uint32_t pstart_hi;
	uint32_t lstart_lo;
	uint32_t lstart_hi;
	uint8_t reserved[12];
} __attribute__((packed));
_Static_assert(sizeof(struct z_erofs_extent) == 32, "extent record");
#define Z_EROFS_EXTENT_PLEN_MASK    ((1u << 21) - 1)
#define Z_EROFS_EXTENT_PLEN_PARTIAL (1u << 27)
#define Z_EROFS_EXTENT_PLEN_FMT_BIT 28

/* ---- little-endian accessors (unaligned-safe) ---- */
static inline uint16_t get_le16(const void *p)
{
	const uint8_t *b = p;
	return (uint16_t)(b[0] | b[1] << 8);
}
static inline uint32_t get_le32(const void *p)
{
	const uint8_t *b = p;
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	       (uint32_t)b[3] << 24;
}
static inline uint64_t get_le64(const void *p)
{
	const uint8_t *b = p;
	return (uint64_t)get_le32(b) | (uint64_t)get_le32(b + 4) << 32;
}
static inline void put_le16(void *p, uint16_t v)
{
	uint8_t *b = p;
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
}
static inline void put_le32(void *p, uint32_t v)
{
	uint8_t *b = p;
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
	b[2] = (uint8_t)(v >> 16);
	b[3] = (uint8_t)(v >> 24);
}
static inline void put_le64(void *p, uint64_t v)
{
	put_le32(p, (uint32_t)v);
	put_le32((uint8_t *)p + 4, (uint32_t)(v >> 32));
}

/* [5.6] rdev encoding */
static inline uint32_t erofs_new_encode_dev(unsigned major, unsigned minor)
{
	return (minor & 0xff) | (major << 8) | ((minor & ~0xffu) << 12);
}
static inline unsigned erofs_dev_major(uint32_t v)
{
	return (v >> 8) & 0xfff;
}
static inline unsigned erofs_dev_minor(uint32_t v)
{
	return (v & 0xff) | ((v >> 12) & 0xfff00);
}

/* crc32c.c: raw CRC-32C state update (reflected 0x82F63B78, no inversion) */
uint32_t ezi_crc32c(uint32_t crc, const void *data, size_t len);
/* xxhash.c: XXH32 [14.2] */
uint32_t ezi_xxh32(const void *data, size_t len, uint32_t seed);

#endif
