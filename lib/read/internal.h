/* SPDX-License-Identifier: MIT */
/* internal.h - the read layer's private state: image, inode, caches, maps. */
#ifndef EZFS_READ_INTERNAL_H
#define EZFS_READ_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ezfs/ezfs.h"
#include "format/erofs_fs.h"
#include "codec/codec.h"
#include "io/io.h"
#include "util/log.h"

#ifndef EUCLEAN
#define EUCLEAN 117
#endif

struct ezfs_long_prefix {
	uint8_t base_index;
	uint16_t infix_len;
	char *infix;
};

/* Direct-mapped metadata block cache: one mutex per slot. */
struct meta_slot {
	pthread_mutex_t lock;
	uint64_t blk;	/* UINT64_MAX = empty */
	uint32_t valid; /* bytes valid (short at end of image) */
	uint8_t *data;
};
struct meta_cache {
	unsigned nslots;
	struct meta_slot *slots;
};

/* slab.c: decoded-extent buffers below 1 MiB from huge-page chunks */
#define SLAB_CLASSES 40
struct ezi_chunk;
struct ezi_slab {
	size_t limit, bytes; /* chunk bytes allowed, taken */
	unsigned nchunks, cap, ncls;
	struct ezi_chunk *chunks;
	struct {
		size_t size;
		void *free; /* slots, linked through their first bytes */
	} cls[SLAB_CLASSES];
};
int ezi_slab_init(struct ezi_slab *s, size_t limit);
void ezi_slab_fini(struct ezi_slab *s);
/* A slot of size bytes (a capacity from the cache's rounding), or NULL:
 * none to be had (too large, no room): take the memory elsewhere. */
void *ezi_slab_get(struct ezi_slab *s, size_t size);
/* Give back p if it is a slot: true; false: not the slab's. */
bool ezi_slab_put(struct ezi_slab *s, void *p);

struct pcache_entry;
#define PC_NSPARE 16
struct pcache {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned nbuckets;
	struct pcache_entry **buckets;
	struct pcache_entry *lru_head, *lru_tail; /* head = most recent */
	size_t bytes, budget;
	struct ezfs_cache_stats st;
	/* Buffers of evicted entries kept for the next decodes: a fresh
	 * buffer costs a page fault per page written. */
	struct {
		uint8_t *p;
		size_t cap;
	} spare[PC_NSPARE];
	size_t spare_bytes, spare_max;
	struct ezi_slab slab;
	/* decodes ahead of readers queued or running (ezi_pcache_ahead) */
	size_t ahead_bytes;
	unsigned ahead_n;
	uint64_t gen; /* decodes completed (each broadcast on cond) */
};

/* An extra device of the device table (device.c). */
struct ezi_dev {
	char tag[65];	   /* printable */
	uint64_t blocks;   /* as the slot says (0 from some writers) */
	uint64_t uniaddr;  /* as the slot says (0: not in the flat space) */
	uint64_t vbase;	   /* device files: its first block in data space */
	uint64_t vspan;	   /* and how many blocks there are its own */
	char *path;	   /* the file given, NULL in flat mode */
	struct ezfs_io io; /* ops NULL in flat mode */
};

/*
 * stream.c: window buffers of ended streams, kept for the next ones (a
 * fresh buffer costs a page fault per 4 KiB at its first use: ezfs_fsck
 * streams every file of the image).
 */
#define EZI_STREAM_SPARES 8
struct stream_spares {
	pthread_mutex_t lock;
	unsigned n;
	size_t bytes;
	struct {
		char *buf;
		size_t cap;
	} b[EZI_STREAM_SPARES];
};
void ezi_stream_spares_init(ezfs_image *img);
void ezi_stream_spares_fini(ezfs_image *img);

struct ezfs_image {
	struct ezfs_logger logger;
	struct ezfs_io io; /* base: params.offset */
	/* the source told of the tree (ezfs_open_params.io_verity), told
	 * again at close (verity.c); NULL: none */
	void (*io_verity)(void *arg, struct ezfs_verity *v, uint64_t base);

	/* extra devices: flat (all in io) or files of their own */
	unsigned ndevs;
	uint16_t devmask; /* for chunk indexes' device_id */
	bool flatdev;
	struct ezi_dev *devs;
	uint64_t fresh; /* first block past every primary or uniaddr one */

	struct ezfs_sb_info si;
	unsigned blkbits;
	uint32_t blksz;
	bool is48;
	uint64_t meta_base;  /* meta_blkaddr << blkbits */
	uint64_t xattr_base; /* xattr_blkaddr << blkbits */
	bool filter_ok;	     /* xattr name filter usable */
	bool zero_padding;
	bool prefixes_plain; /* long prefix table location */
	int ishare_index;    /* inode digests' xattr index (0x80 | n); -1 */

	ezfs_inode *packed;  /* NULL if none */
	ezfs_inode *metabox; /* NULL if none */
	struct ezfs_long_prefix *prefixes;
	unsigned nprefixes;

	struct ezfs_codec_cfg ccfg;
	struct ezfs_codec_pool *codecs;
	struct ezfs_estate *engine; /* atomic; made on first use (accel.c) */
	struct meta_cache mc;
	struct pcache pc;
	struct stream_spares spares;
};

/* One mapped extent of a compressed inode (zmap.c). */
struct zmap {
	uint64_t la, llen; /* llen: full decoded length of the extent */
	uint64_t pa, plen;
	int alg;	/* enum ezfs_alg incl. SHIFTED/INTERLACED */
	unsigned flags; /* enum ezfs_extent_flags */
};

struct ezfs_inode {
	ezfs_image *img;
	uint64_t nid;
	uint64_t ipos;	 /* byte position of the inode core */
	bool in_metabox; /* ipos is in metabox space */
	uint8_t layout;
	uint8_t extended;
	uint8_t dot_omitted;
	uint8_t core_size; /* 32 or 64 */
	uint16_t xattr_icount;
	uint32_t xattr_isize;
	uint32_t mode, nlink, uid, gid, ino32, rdev;
	uint64_t size;
	int64_t mtime;
	uint32_t mtime_nsec;
	uint64_t startblk; /* flat: first block, or UINT64_MAX = none */
	uint64_t zblocks;  /* compressed: i_u block count */
	uint16_t chunkformat;
	unsigned chunkbits;

	/* compressed inodes (filled at load) */
	struct {
		uint16_t advise;
		uint8_t algs[2];
		uint8_t lclusterbits;
		bool whole_fragment;
		bool extents;
		uint64_t nextents;   /* extents with recsz >= 16 */
		uint32_t idata_size; /* ztailpacking */
		uint64_t idata_pos;  /* where the inline tail pcluster is */
		uint64_t fragmentoff;
		uint64_t tail_headlcn; /* HEAD lcn of the tail extent */
		uint64_t hpos;	       /* map header position */
	} z;
	/* the last extent mapped: sequential small reads map it once */
	pthread_mutex_t zlock;
	bool zlast_valid;
	struct zmap zlast;
	/* hint.c (atomics): how far a reader in order was hinted, and its
	 * window; a directory: 1 once its blocks were hinted */
	uint64_t hint_end, hint_win;
	/* data.c (atomics): where the last read ended, and how far extents
	 * were queued for decoding ahead of a reader in order */
	uint64_t seq_next, ahead_end;
};

/* accel.c: the engine state, made on first use; NULL: out of memory */
struct ezfs_estate;
struct ezfs_estate *ezi_image_engine(ezfs_image *img);

/* The image's messages, through its caller's log callback (util/log.c). */
#define ezfs_log(img, level, ...) ezi_logf(&(img)->logger, level, __VA_ARGS__)
#define ezfs_err(img, ...)	  ezfs_log(img, EZFS_LOG_ERROR, __VA_ARGS__)
#define ezfs_dbg(img, ...)	  ezfs_log(img, EZFS_LOG_DEBUG, __VA_ARGS__)

/* meta.c: metadata reads (device space or metabox space) */
int ezi_meta_cache_init(ezfs_image *img, size_t bytes);
void ezi_meta_cache_fini(ezfs_image *img);
int ezi_meta_read(ezfs_image *img, bool metabox, uint64_t pos, void *buf,
		  size_t len);

/* inode.c */
int ezi_inode_load(ezfs_image *img, uint64_t nid, ezfs_inode **out);
static inline uint64_t ezfs_inode_datapos(const ezfs_inode *ino)
{
	return ino->ipos + ino->core_size + ino->xattr_isize;
}

/* hint.c: what an io with a hint callback is told (nothing without) */
void ezi_hint_open(ezfs_image *img);
/* verity.c: the dm-verity tree p asks for, hung on img->io before the
 * superblock is parsed (0 where none is asked for or, in AUTO mode,
 * found) */
int ezi_verity_attach(ezfs_image *img, const struct ezfs_open_params *p);
/* verity.c: before the io closes: a source told of the tree is told it
 * goes (io_verity with NULL), so it records what it verified and stops
 * using it. */
void ezi_verity_detach(ezfs_image *img);
void ezi_hint_dir(ezfs_inode *dir);
void ezi_hint_read(ezfs_inode *ino, uint64_t off, size_t len);

/* zmap.c: compressed extent maps */
int ezi_z_init(ezfs_inode *ino);
int ezi_z_map(ezfs_inode *ino, uint64_t la, struct zmap *m);

/* data.c */
int ezi_flat_map(ezfs_inode *ino, uint64_t la, struct ezfs_extent *ext);
int ezi_chunk_map(ezfs_inode *ino, uint64_t la, struct ezfs_extent *ext);

/* pcache.c: decoded pcluster cache */
int ezi_pcache_init(ezfs_image *img, size_t budget);
void ezi_pcache_fini(ezfs_image *img);
struct pcache_entry;
/* Get a decoded copy of the extent m with at least need bytes. */
int ezi_pcache_get(ezfs_inode *ino, const struct zmap *m, uint64_t need,
		   struct pcache_entry **out, const uint8_t **data);
void ezi_pcache_put(ezfs_image *img, struct pcache_entry *e);
void ezi_pcache_served(ezfs_image *img, struct pcache_entry *e, size_t bytes,
		       size_t whole);
/* Whether extent m is decoded, or being decoded, in the cache. */
bool ezi_pcache_has(ezfs_image *img, const struct zmap *m);
/*
 * Decoding ahead of a reader: a cache entry for extent m, in the making, and
 * the job that decodes it, appended at **tail (which then points at its
 * next) for ezi_engine_submit; readers of m wait for it, or run it
 * themselves if no worker has started it. Returns 1 (a job made), 0 (m is
 * there already, or on its way), -ENOSPC (decodes ahead of all readers
 * would pass max bytes) or -ENOMEM.
 */
struct ezfs_ejob;
int ezi_pcache_ahead(ezfs_inode *ino, const struct zmap *m, size_t max,
		     struct ezfs_ejob ***tail);
/* Jobs of ezi_pcache_ahead that were not submitted: their entries go. */
void ezi_pcache_ahead_drop(struct ezfs_ejob *jobs);
/* Wait until no decode ahead is queued or running (before close). */
void ezi_pcache_quiesce(ezfs_image *img);
/* Decode extent m's first outlen bytes into out (no cache). */
int ezi_z_decode(ezfs_inode *ino, const struct zmap *m, uint8_t *out,
		 size_t outlen, bool partial);
/* The same, whole, from its compressed bytes at in (ezi_zwin_get). */
int ezi_z_decode_from(ezfs_inode *ino, const struct zmap *m, const uint8_t *in,
		      uint8_t *out, size_t outlen);
/*
 * The calling thread's window of compressed bytes: [pa, pa + len) of img
 * read at once (clipped to the image), for the decodes of the pclusters
 * inside it on this thread (or given their bytes: ezi_zwin_get, valid
 * until the next fill or drop on this thread). 0 or a read error.
 */
int ezi_zwin_fill(ezfs_image *img, uint64_t pa, size_t len);
const uint8_t *ezi_zwin_get(ezfs_image *img, const struct zmap *m);
void ezi_zwin_drop(ezfs_image *img);

/* device.c: the device table and where data addresses are read */
int ezi_devices_init(ezfs_image *img, const struct ezfs_open_params *p,
		     uint16_t slotoff);
void ezi_devices_fini(ezfs_image *img);
/* Data address of len bytes at block blk of device devid (as on disk:
 * masked here; 0 = the primary, or a device by its uniaddr range). */
int ezi_dev_addr(ezfs_image *img, uint64_t nid, unsigned devid, uint64_t blk,
		 uint64_t len, uint64_t *pa);
/* The same for a byte address pa of device 0 (compressed extents). */
int ezi_dev_remap(ezfs_image *img, uint64_t nid, uint64_t pa, uint64_t len,
		  uint64_t *out);
/* ezi_io_read/map/willneed of data addresses, on whichever file. */
int ezi_data_read(ezfs_image *img, void *buf, size_t len, uint64_t pa);
const void *ezi_data_map(ezfs_image *img, size_t len, uint64_t pa);
void ezi_data_willneed(ezfs_image *img, uint64_t pa, uint64_t len);

/* xattr.c */
int ezi_xattr_prefixes_init(ezfs_image *img);
void ezi_xattr_prefixes_fini(ezfs_image *img);

#define EZFS_CHECK(img, cond, ...)                                             \
	do {                                                                   \
		if (!(cond)) {                                                 \
			ezfs_err(img, __VA_ARGS__);                            \
			return -EUCLEAN;                                       \
		}                                                              \
	} while (0)

#endif
