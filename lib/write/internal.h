/* SPDX-License-Identifier: MIT */
/* internal.h - builder state shared by the files of lib/write/. */
#ifndef EZFS_BUILD_INTERNAL_H
#define EZFS_BUILD_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "ezfs/build.h"

struct ezfs_codec_ops;

struct bxattr {
	char *name;	    /* full name, NUL terminated */
	const char *suffix; /* name after the (short or long) prefix */
	uint8_t index;	    /* prefix index (8.4; 0x80 | n: long prefix n) */
	uint8_t suffix_len;
	uint16_t vlen;
	uint8_t *value;
	int32_t shared_id; /* -1: inline */
	/* the name filter's (8.6): the name after the short prefix, and
	 * that prefix's index (a long prefix's base index) */
	const char *hname;
	uint8_t hlen;
	uint8_t hindex;
};

struct bdentry {
	char *name;
	unsigned namelen;
	struct binode *inode;
};

/* One compressed extent of a file (before the index is encoded). */
struct bextent {
	uint64_t la;	  /* logical start */
	uint32_t blocks;  /* pcluster size in blocks */
	uint32_t blkaddr; /* pcluster start block (absolute) */
	uint8_t type;	  /* Z_EROFS_LCLUSTER_TYPE_PLAIN / _HEAD1 */
	bool frag;	  /* the tail extent, in the packed inode */
	bool ref;	  /* -E dedupe: reuses extent refidx's pcluster */
	bool xref;	  /* -E dedupe: reuses an earlier file's pcluster
			   * (blkaddr; zxdd.c) */
	bool partial;	  /* PARTIAL_REF: the pcluster decodes to more */
	bool hashed;	  /* crc holds the CRC32C of its pcluster's bytes */
	uint32_t refidx;
	uint32_t crc; /* by the worker that made it, else by dedupe.c */
};

/* Result of compressing one file (see compress.c). */
struct bzfile {
	struct bextent *ext;
	uint32_t next, cap;
	uint8_t *data;	  /* pclusters back to back, block aligned */
	uint64_t datalen; /* bytes = blocks * blksz */
	uint32_t blocks;
	bool compact;	   /* COMPRESSED_COMPACT vs FULL */
	uint32_t idx_size; /* map header + index bytes */
	uint8_t *idata;	   /* ztailpacking: inline tail pcluster */
	uint32_t idata_len;
	uint8_t *idx;  /* encoded, filled once blkaddrs are known */
	uint8_t *frag; /* fragments: the tail bytes, until placed */
	uint64_t frag_len;
	uint64_t fragoff;   /* its offset in the packed inode */
	uint64_t spoff;	    /* spooled: the fragment's offset in the
			     * spool file (frag is NULL) */
	bool spooled;	    /* the fragment waits in the spool file */
	bool fromsrc;	    /* spooled: not copied, the whole source
			     * file is the fragment (read when placed) */
	bool wholefrag;	    /* the whole file is one fragment */
	bool has_ref;	    /* some extent refers to an earlier extent
			     * found while compressing (zidd.c, zxdd.c) */
	bool written;	    /* data already in the image at the file's
			     * start (zsplit.c); data is NULL */
	bool shared;	    /* some pcluster equals one written before
			     * (dedupe.c, once compressed) */
	uint32_t dd_blocks; /* blocks sharing took out before the file
			     * was judged (a split file's parts) */
	bool extents;	    /* 48-bit encoded extent records (9.12) */
	uint32_t *plen;	    /* byte-aligned data (zunaligned.c): bytes
			     * stored per extent; NULL: whole blocks */
};

/* A run of data of a sparse tar member: file bytes [off, off + len) are
 * stored at dataoff + at; the bytes between runs read as zeros. */
struct bsparse {
	uint64_t off, len, at;
};

struct binode {
	char *srcpath;	  /* source path, for reading the data */
	uint64_t dataoff; /* tar source: data offset in b->datafd (tar
			   * index: in the archive) */
	bool olddata;	  /* incremental: the data is at dataoff of
			   * b->olddatafd */
	/* tar source: the runs of a sparse member in file order (NULL: all
	 * of it stored) */
	struct bsparse *sparse;
	uint32_t nsparse;
	uint32_t mode;
	uint32_t uid, gid;
	int64_t mtime;
	uint32_t mtime_ns;
	uint64_t size;
	uint32_t rdev;
	uint32_t nlink;
	dev_t dev;
	ino_t ino;
	int64_t src_mtime_ns; /* the source's mtime when scanned */
	char *symlink;	      /* target (symlinks) */

	struct bxattr *xattrs; /* sorted by (name, value) */
	unsigned nxattrs;
	unsigned nshared;
	uint32_t xattr_isize;
	uint32_t xattr_filter;

	/* directories */
	struct bdentry *dents; /* sorted, including "." and ".." */
	unsigned ndents, capdents;
	struct binode *parent;

	/* layout */
	bool extended;
	uint8_t datalayout;
	uint32_t ino32;
	uint64_t nid;
	uint64_t meta_off;  /* byte offset of the inode in the image */
	uint32_t unit_size; /* core + xattrs + index + inline bytes */
	uint64_t startblk;  /* first data block, EROFS_NULL_ADDR32 if none */
	uint64_t nblocks;   /* data blocks (flat layouts) */
	uint32_t tail_len;  /* inline tail bytes */
	uint64_t tailoff;   /* spool/tails.c: where the inline bytes wait */
	struct bzfile *z;   /* compressed files */
	uint8_t *chunkidx;  /* CHUNK_BASED: encoded block map / indexes */
	uint32_t chunkidx_len;
	uint16_t chunkfmt; /* CHUNK_BASED: i_u format word (6.4.1) */
	uint8_t zalg;	   /* compression configuration (hints) */
	bool zoff;	   /* a hint says: store uncompressed */
	uint16_t zblks;	   /* pcluster blocks from a hint; 0: default */
	bool zseen;	   /* fragshare.c: visited */
	uint64_t zkeep;	   /* fragments: keep at least this much of the
			    * end in the fragment (a later file ends
			    * alike) */
	uint64_t zshare;   /* fragments: the last zshare bytes end an
			    * earlier file too */
	bool fixed;	   /* tree/droid.c: fs_config/labels applied */
	bool gone;	   /* tree/droid.c: no longer in the tree */
	bool listed;	   /* tree/droid.c: in the block list */
	bool mbox;	   /* -m: the unit is in the metabox inode (meta_off:
			    * in its contents) */
};

/* A device slot of a rebuild: a layer image, its blocks and tag. */
struct bldev {
	uint64_t blocks;
	char tag[64 + 1];
};

struct ezfs_builder {
	struct ezfs_build_params p;
	unsigned blksz, blkszbits;
	int64_t epoch;
	uint8_t uuid[16];
	void *regex; /* regex_t array */
	size_t nregex;
	bool scanned;
	int datafd;	      /* tar source: all file data; -1: by path */
	int olddatafd;	      /* incremental: the old image's file data */
	struct tzinfo *zinfo; /* --gzinfo: the checkpoints, written last */

	struct binode **inodes; /* BFS order; [0] = root */
	size_t ninodes, capinodes;
	void *hlmap; /* (dev,ino) -> binode, hardlink table */
	size_t hlcap, hlcount;

	/* shared xattrs: encoded area and size */
	uint8_t *shared;
	uint32_t shared_len;
	uint32_t nshared;
	uint32_t shared_start; /* byte offset of the area in the image */
	/* --xattr-inode-digest: the long prefix table (one entry), plain at
	 * pfx_start, the end of the shared area (shared_len counts it) */
	uint32_t pfx_start, pfx_len;

	/* compression: configurations, hints (regex_t each) */
	struct ezfs_build_zalg zalgs[EZFS_BUILD_MAX_ZALGS];
	unsigned nzalgs;  /* 0: no compression */
	unsigned algmask; /* algorithm ids used (available_compr_algs) */
	void *hintre;
	size_t nhintre;
	uint32_t pclusterdef;  /* default pcluster size in blocks (-C) */
	uint32_t pclusterblks; /* max pcluster size in blocks */
	bool big_pcluster;     /* COMPR_CFGS / BIG_PCLUSTER */
	uint32_t cfgs_len;     /* bytes of config records after the sb */
	uint16_t lz4_maxdist;
	void *zjobs; /* struct zjobs, while writing data */
	/* data phase progress before the file being taken (zjobs.c reports
	 * the parts of a large file as they come) */
	uint64_t prog_files, prog_bytes, prog_total;
	uint32_t last_err; /* CRC32C of the last error line (ezi_bld_log) */
	void *zsegs;	   /* struct zsegs: packed inode segments */

	/* fragments: decoded contents of the packed inode, dedupe table */
	uint8_t *packed;
	uint64_t packed_len, packed_cap;
	void *fragtab;
	void *fragcctx; /* writer's codec contexts (fragnear.c) */
	void *spool;	/* spool/spool.c: spool and packed files */
	void *tails;	/* spool/tails.c: the units' inline bytes */
	struct binode *packed_inode;
	struct binode *mbox_inode; /* -m: the metabox inode */
	bool tar_src;		   /* the tree came from a tar */
	void *dedupe;		   /* compress/dedupe.c table */
	void *xdd;		   /* zxdd.c table */
	bool deduped;		   /* some pcluster is shared (DEDUPE bit) */
	bool chunked;		   /* some inode is CHUNK_BASED */

	uint64_t data_start;	 /* first data block */
	uint64_t root_blk;	 /* root inode's own block(s) before the
				  * data when it does not fit in block 0 */
	uint64_t cursor;	 /* next free block (ezi_bld_take_blocks) */
	uint64_t meta_blkaddr;	 /* meta.c, for super.c: NIDs count from */
	uint64_t blocks;	 /* meta.c, for super.c: the image's size */
	int fd;			 /* output (temp) file, or the device */
	const char *out_path;	 /* the image being written, for messages */
	bool device;		 /* fd is a block device, written in place */
	bool nocopy;		 /* copy_file_range() refused: not again */
	uint64_t devsize;	 /* its size in bytes */
	uint64_t zeroed;	 /* bytes below this are written or zeroed */
	pthread_mutex_t devlock; /* zeroed */
	struct ezfs_build_stats st;
	double t0;
	/* tree/droid.c: inodes taken out of the tree (whiteouts...), freed with
	 * the builder (a tar source's list still holds them) */
	struct binode **gone;
	size_t ngone;
	/* the extra device (tar index, blob): device table slot at devt_off
	 * (0: none), its size in blocks */
	uint32_t devt_off;
	uint64_t dev_blocks;
	uint64_t tar_bytes;   /* tar index: the archive's bytes */
	int blobfd;	      /* blob: chunk data; -1: none */
	uint64_t blob_cursor; /* blob: next free block */
	/* rebuild (rebuild.c): one device slot per layer image, in order;
	 * dev_blocks is their sum */
	struct bldev *rdevs;
	unsigned nrdevs;
	/* verity.c: the dm-verity tree written (params.verity) */
	struct ezfs_verity_info verity;
	bool verity_done;
};

/*
 * Declarations by folder, from the bottom up: io/, spool/, compress/,
 * fragments/, tree/, tar/, then the stages. A folder calls only those
 * before it (tests/unit/test_write_folders.sh).
 */

/* io/out.c: log lines, progress, the image's and the blob's bytes */
void ezi_bld_log(const struct ezfs_builder *b, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void ezi_bld_progress(struct ezfs_builder *b, int phase, uint64_t items,
		      uint64_t items_total, uint64_t bytes,
		      uint64_t bytes_total);
int ezi_bld_pwrite(struct ezfs_builder *b, const void *buf, size_t len,
		   uint64_t off);
/*
 * len bytes of the file fd at from to the image at to, in the kernel
 * (copy_file_range: no copy through a buffer; an image file, not a
 * device, whose gaps ezi_bld_pwrite zeroes); returns the bytes copied,
 * fewer where the kernel cannot go on or fd ends early: the caller
 * sends the rest through a buffer, which reports any error.
 */
uint64_t ezi_bld_copy_in(struct ezfs_builder *b, int fd, uint64_t from,
			 uint64_t to, uint64_t len);
/* The image is size bytes: truncate the file (or zero the rest of the
 * device's part and check that it fits). */
int ezi_bld_set_size(struct ezfs_builder *b, uint64_t size);
/* pread (wr false) or pwrite all of p[0, len) at off: 0 or -errno (-EIO
 * for an end of file). */
int ezi_bld_fd_rw(int fd, void *p, size_t len, uint64_t off, bool wr);
/* pwrite to the blob (b->blobfd); 0 or -errno, logged */
int ezi_bld_blob_pwrite(struct ezfs_builder *b, const void *buf, size_t len,
			uint64_t off);
/* io/sparse.c: --sparse: turn the finished image in b->fd into an
 * Android sparse image (RAW and DONT_CARE chunks); 0 or -errno, logged */
int ezi_bld_sparse(struct ezfs_builder *b);

/* io/datasrc.c: where a regular file's bytes come from (its path, or a
 * range of b->datafd for tar sources) */
struct bsrc {
	int fd;
	bool own;	    /* close fd when done */
	uint64_t base, len; /* reads are clamped to [0, len) */
	/* a sparse member: fd is -1 (no one range to copy), its runs are in
	 * sfd */
	int sfd;
	const struct bsparse *sparse;
	uint32_t nsparse;
};
int ezi_bld_src_open(const struct ezfs_builder *b, const struct binode *in,
		     struct bsrc *s);
/* Read up to len bytes at file offset off; short only at the end. */
ssize_t ezi_bld_src_pread(const struct bsrc *s, void *buf, size_t len,
			  uint64_t off);
void ezi_bld_src_close(struct bsrc *s);
/* After the last read: the source must still be the file the scan saw
 * (inode, size, mtime); else one error line and -EAGAIN. */
int ezi_bld_src_check(const struct ezfs_builder *b, const struct binode *in,
		      const struct bsrc *s);

/* spool/spool.c: the temporary files where bytes wait between stages */
/* An unlinked read-write temporary file ($TMPDIR or /tmp; else memory),
 * or a negative errno (logged). */
int ezi_bld_tmpfd(const struct ezfs_builder *b);
/* With fragments, make the spool file (before the workers start); then
 * move z->frag there until it is placed (any thread) */
int ezi_bld_spool_open(struct ezfs_builder *b);
int ezi_bld_frag_spool(const struct ezfs_builder *b, struct bzfile *z);
/* Is there a spool file (a whole-file fragment may then wait in its
 * source, z->fromsrc)? */
bool ezi_bld_spool_on(const struct ezfs_builder *b);
/* Room for len bytes in the spool file (its offset in *off; false: no
 * spool file), a write into it and a read back (0 or -errno, logged) */
bool ezi_bld_spool_reserve(const struct ezfs_builder *b, uint64_t len,
			   uint64_t *off);
int ezi_bld_spool_write(const struct ezfs_builder *b, const void *p, size_t len,
			uint64_t off);
int ezi_bld_spool_read(const struct ezfs_builder *b, void *p, size_t len,
		       uint64_t off);
/* Close the spool file (every fragment is placed); the packed file stays */
void ezi_bld_spool_close(struct ezfs_builder *b);
/* The packed file: cap bytes, sparse, mapped shared at b->packed
 * (packed_len 0); a write into it (0 or -errno, logged) */
int ezi_bld_packfile_map(struct ezfs_builder *b, uint64_t cap);
int ezi_bld_packfile_write(const struct ezfs_builder *b, const void *p,
			   size_t len, uint64_t off);
/* len packed bytes at off (from the packed file, else b->packed) */
int ezi_bld_packed_read(const struct ezfs_builder *b, void *buf, size_t len,
			uint64_t off);
/* Whether b->packed maps the packed file (its pages may be dropped once
 * read: the file keeps them) */
bool ezi_bld_packed_filebacked(const struct ezfs_builder *b,
			       const uint8_t *mem);
/* Close both files (b->packed is the caller's to unmap) */
void ezi_bld_spool_free(struct ezfs_builder *b);
/* spool/tails.c: keep the len inline bytes of in's unit (flat tail or
 * ztailpacking's compressed tail) until the metadata is written, read
 * them back into dst (0 or -errno, logged); free what keeps them */
int ezi_bld_tail_keep(struct ezfs_builder *b, struct binode *in, const void *p,
		      uint32_t len);
int ezi_bld_tail_read(const struct ezfs_builder *b, const struct binode *in,
		      uint8_t *dst, uint32_t len);
void ezi_bld_tails_free(struct ezfs_builder *b);

/* compress/zcfg.c: configurations and hints from the params (ezfs_builder_new)
 */
const struct ezfs_codec_ops *ezi_bld_codec(const struct ezfs_builder *b,
					   unsigned zalg);
int ezi_bld_zalgs_init(struct ezfs_builder *b);
void ezi_bld_zalgs_free(struct ezfs_builder *b);
/* lzma's dictionary size, zstd's window log (codecs and config records) */
uint32_t ezi_bld_lzma_dict_size(const struct ezfs_builder *b);
unsigned ezi_bld_zstd_windowlog(const struct ezfs_builder *b);
/* Owner offsets and the hint of one inode, once the tree is read. */
int ezi_bld_inode_finish(struct ezfs_builder *b, struct binode *in);

/* compress.c: per-file compression into buffers */
bool ezi_bld_compress_wanted(const struct ezfs_builder *b,
			     const struct binode *in);
/* zfile.c */
void ezi_bld_zfile_free(struct bzfile *z);
/*
 * Room for inline data after `meta` bytes of an inode's unit (core,
 * xattrs, map header and indexes): the inline bytes may not cross a
 * block boundary, the metadata before them may (the kernel reads a core,
 * xattrs and indexes across one, and mkfs.erofs 1.9.3 places them so).
 * Units start on 32-byte slots, so the metadata can end as early as
 * meta % 32 bytes into a block (space.c places the unit where it does,
 * the slots it skips for that become a gap); one slot at least.
 */
static inline uint32_t ezi_bld_inline_room(uint32_t blksz, uint64_t meta)
{
	uint32_t e = (uint32_t)(meta & 31);

	return blksz - (e ? e : 32);
}

/* compress.c: room for in's compressed tail inline after its core,
 * xattrs and index (-E ztailpacking) */
size_t ezi_bld_zinline_room(const struct ezfs_builder *b,
			    const struct binode *in);

/* zindex.c: encode the map header and lcluster indexes at h */
int ezi_bld_zindex_encode(const struct ezfs_builder *b, const struct binode *in,
			  uint8_t *h);
uint32_t ezi_bld_zindex_size(const struct ezfs_builder *b,
			     const struct binode *in, bool compact);
/* -E48bit: encoded extent records for z when they are no larger than
 * full indexes (as mkfs.erofs; not for inline tails); sets z->extents and
 * z->idx_size. */
void ezi_bld_zext_choose(const struct ezfs_builder *b, const struct binode *in,
			 struct bzfile *z);
/* zunaligned.c: -E48bit byte-aligned data for zstd and deflate */
bool ezi_bld_zunaligned_ok(const struct ezfs_builder *b,
			   const struct binode *in);
int ezi_bld_zunaligned(const struct ezfs_builder *b, const struct binode *in,
		       void *cctx, struct bzfile **out);
/* zcfg.c: pcluster size of in, in blocks */
uint32_t ezi_bld_pcluster_blocks(const struct ezfs_builder *b,
				 const struct binode *in);
/* zcfg.c: a worker's codec contexts (one per configuration, made by
 * ezi_bld_cctx_get when first needed, dropped by ezi_bld_cctx_put after a file
 * unless reusable) */
void *ezi_bld_cctx_new(const struct ezfs_builder *b, int *err);
void ezi_bld_cctx_free(const struct ezfs_builder *b, void *cctx);
void *ezi_bld_cctx_get(const struct ezfs_builder *b, void *cctx, unsigned zalg,
		       int *err);
void ezi_bld_cctx_put(const struct ezfs_builder *b, void *cctx, unsigned zalg);
/* zcfg.c: the worker's scratch buffer `which` (< EZFS_BLD_CBUFS), at
 * least len bytes, kept with its contexts (NULL: no memory) */
#define EZFS_BLD_CBUFS 4
uint8_t *ezi_bld_cctx_buf(void *cctx, unsigned which, size_t len);
int ezi_bld_compress_file(const struct ezfs_builder *b, const struct binode *in,
			  void *cctx, struct bzfile **out);
/* One part of a file split for the workers (zsplit.c): its bytes
 * [base, base + len); only the last has the file's tail. */
struct bzpart {
	uint64_t base, len;
	bool last;
};
int ezi_bld_compress_part(const struct ezfs_builder *b, const struct binode *in,
			  void *cctx, const struct bzpart *pt,
			  struct bzfile **out);
/* Index size and layout of a whole file's z; judge: *out = NULL (and z
 * freed) when compression does not save space, else *out = z. */
void ezi_bld_zfile_finish(const struct ezfs_builder *b, const struct binode *in,
			  struct bzfile *z, bool judge, struct bzfile **out);
/* zsplit.c: parts of in for the workers (1: not split), part k of n
 * compressed, the parts merged (freed) into the file's result. */
uint32_t ezi_bld_zsplit_parts(const struct ezfs_builder *b,
			      const struct binode *in);
int ezi_bld_zsplit_run(const struct ezfs_builder *b, const struct binode *in,
		       void *cctx, uint32_t k, uint32_t n, struct bzfile **out);
int ezi_bld_zsplit_merge(const struct ezfs_builder *b, const struct binode *in,
			 struct bzfile **parts, uint32_t n,
			 struct bzfile **out);
/* Part k of a split file, just taken by the writer (blocks: of the parts
 * before it): its data goes to the image now, behind the file's start at
 * b->cursor, its pclusters shared with earlier ones first (fragments);
 * with -E dedupe it waits for the whole file. */
int ezi_bld_zsplit_put(struct ezfs_builder *b, const struct binode *in,
		       uint32_t k, struct bzfile *part, uint32_t *blocks);
/* Append s (logical start la) to z: extents, data, its tail. */
int ezi_bld_zfile_append(struct bzfile *z, struct bzfile *s, uint64_t la);
/* Compress len bytes at mem as if they were a file (no fragments;
 * segment pieces: the result is kept even without gain). room: the room
 * for an inline tail (ztailpacking) of what ends the file, else 0.
 * drop: mem is a shared file mapping (page aligned) whose pages may be
 * dropped once compressed. */
int ezi_bld_compress_mem(const struct ezfs_builder *b, const struct binode *in,
			 void *cctx, const uint8_t *mem, uint64_t len,
			 size_t room, bool drop, struct bzfile **out);

/* compress/dedupe.c: share identical pclusters / chunks (table in
 * b->dedupe) */
/* Are in's pclusters looked up among the written ones (-E dedupe, and
 * with fragments as 1.9.3; never the packed inode's)? */
bool ezi_bld_dedupe_shares(const struct ezfs_builder *b,
			   const struct binode *in);
int ezi_bld_dedupe_pclusters(struct ezfs_builder *b, const struct binode *in,
			     struct bzfile *z);
/* The same for one part of a split file (len bytes decoded), its data to
 * go to image block at; part->shared and part->dd_blocks tell the file */
int ezi_bld_dedupe_part(struct ezfs_builder *b, struct bzfile *part,
			uint64_t len, uint64_t at);
/* The blocks of z's pclusters that no earlier one holds (a probe:
 * nothing recorded) */
uint32_t ezi_bld_dedupe_new_blocks(struct ezfs_builder *b,
				   const struct binode *in,
				   const struct bzfile *z);
int ezi_bld_dedupe_chunk(struct ezfs_builder *b, const uint8_t *p,
			 uint32_t blocks, uint64_t dlen, uint64_t addr,
			 uint64_t *found, uint8_t *tmp);
void ezi_bld_dedupe_free(struct ezfs_builder *b);

/* zjobs.c: compression jobs on worker threads, results in inode order */
int ezi_bld_zjobs_start(struct ezfs_builder *b);
/* Result for in (the next compressible file in inode order): *z = NULL
 * when the file is better stored uncompressed. */
int ezi_bld_zjobs_take(struct ezfs_builder *b, struct binode *in,
		       struct bzfile **z);
/* A flat file's bytes read ahead by a worker (files stored flat, of at
 * most 16 MiB, with more than one worker), in *raw (the caller frees
 * it), or *raw = NULL: read it here. */
int ezi_bld_zjobs_take_raw(struct ezfs_builder *b, struct binode *in,
			   uint8_t **raw);
void ezi_bld_zjobs_stop(struct ezfs_builder *b);
/* zfast.c: src[0, len) surely compresses below cap bytes with zalg's
 * codec (lz4's fast mode fits it; tmp: cap bytes). */
bool ezi_bld_fits_fast(const struct ezfs_builder *b, unsigned zalg,
		       const uint8_t *src, size_t len, uint32_t cap,
		       uint8_t *tmp);
/* zfast.c: src[0, n) looks like random bytes (flat histogram, no
 * repeats) and zalg's codec (lz4hc, deflate) cannot gain on it. */
bool ezi_bld_random_fast(const struct ezfs_builder *b, unsigned zalg,
			 const uint8_t *src, size_t n);
/* zfast.c: an lz4hc file that lz4's fast mode fits in one block: the
 * stream's length in dst (blksz bytes), else 0. */
int ezi_bld_one_block_fast(const struct ezfs_builder *b, unsigned zalg,
			   const uint8_t *src, size_t len, uint8_t *dst);
/* zidd.c: -E dedupe inside one file (compress.c) */
struct bidd {
	uint32_t *slot; /* extent index + 1, 0 = empty */
	uint32_t *hash;
	uint32_t cap, n, nreg;
	uint32_t powW; /* IDD_MUL^(IDD_W-1) */
};
void ezi_bld_idd_init(struct bidd *d);
void ezi_bld_idd_free(struct bidd *d);
/* Register z's complete owned extents (all end at or before pos). */
int ezi_bld_idd_register(struct bidd *d, const struct bzfile *z, uint64_t pos,
			 const uint8_t *win, uint64_t wpos);
/* First q in [from, to) (q + IDD_W <= wend) where an earlier extent
 * repeats; returns q and its extent in *jp, or `to` when none. */
uint64_t ezi_bld_idd_scan(const struct bidd *d, const struct bzfile *z,
			  uint64_t from, uint64_t to, uint64_t pos,
			  uint64_t size, const uint8_t *win, uint64_t wpos,
			  uint64_t wend, unsigned blkszbits, uint32_t *jp);
/* zxdd.c: -E dedupe across files on decoded data (table in b->xdd) */
struct bxdd;
struct bxmatch {
	uint64_t at;	  /* the new extent starts here (<= pos) */
	uint32_t len;	  /* and decodes this many bytes */
	uint32_t blocks;  /* of the earlier pcluster */
	uint32_t blkaddr; /* absolute; own: the extent index */
	uint8_t type;
	bool own, partial;
};
/* Writer thread, in inode order: a file that repeats an earlier file's
 * pcluster data is compressed again with references to it (*zp replaced,
 * NULL: stored flat); then, once placed, its pclusters join the table. */
int ezi_bld_xdd_file(struct ezfs_builder *b, struct binode *in,
		     struct bzfile **zp);
int ezi_bld_xdd_commit(struct ezfs_builder *b, struct binode *in,
		       const struct bzfile *z);
void ezi_bld_xdd_free(struct ezfs_builder *b);
/* compress.c, compressing again: z's complete owned extents into the
 * table, and the earlier data that starts again at or before pos (1 and
 * *m, 0 none, -errno) */
int ezi_bld_xdd_register(struct bxdd *x, const struct binode *in,
			 const struct bzfile *z, uint64_t pos,
			 const uint8_t *win, uint64_t wpos, uint64_t wend);
int ezi_bld_xdd_match(struct bxdd *x, const struct ezfs_builder *b,
		      const struct binode *in, const struct bzfile *z,
		      uint64_t pos, uint64_t size, const uint8_t *win,
		      uint64_t wpos, uint64_t wend, struct bxmatch *m);
int ezi_bld_compress_xdd(const struct ezfs_builder *b, const struct binode *in,
			 void *cctx, struct bxdd *x, struct bzfile **out);

/*
 * zsegs.c: the packed inode's contents compressed in segments on worker
 * threads, each segment as soon as its bytes are all appended (mem must
 * not move meanwhile; maxlen bounds the final length).
 */
int ezi_bld_zsegs_start(struct ezfs_builder *b, const uint8_t *mem,
			uint64_t maxlen);
/* mem[0, avail) is final */
void ezi_bld_zsegs_feed(struct ezfs_builder *b, uint64_t avail);
/* All len bytes are there: the result, *z = NULL when compression does
 * not save space. Ends the workers. */
int ezi_bld_zsegs_finish(struct ezfs_builder *b, struct binode *in,
			 uint64_t len, struct bzfile **z);
/* Stop the workers and drop their results (any time; no-op if none). */
void ezi_bld_zsegs_free(struct ezfs_builder *b);

/* fragments/fragments.c: put every file's pending z->frag into b->packed, in
 * depth-first tree order (after all files are compressed) */
int ezi_bld_frags_place(struct ezfs_builder *b);
/* fragments.c: stop the packed inode's workers, unmap b->packed, close
 * the spool's files */
void ezi_bld_packed_free(struct ezfs_builder *b);
/* every regular file in the fragments' depth-first order, then all in
 * inode order again (fn must skip what it has seen) */
typedef int (*bld_file_fn)(struct ezfs_builder *b, struct binode *in,
			   void *arg);
int ezi_bld_files_dfs(struct ezfs_builder *b, bld_file_fn fn, void *arg);
/* fragments/fragshare.c: mark files that end alike (zkeep, zshare) */
/* the end that in shares with an earlier file: none while it keeps an end
 * of its own for a later one (zkeep wins) */
static inline uint64_t ezi_bld_zshare(const struct binode *in)
{
	return in->zkeep ? 0 : in->zshare;
}
int ezi_bld_frags_share(struct ezfs_builder *b);
/* fragments/fragnear.c: a whole-file fragment whose last `matched` bytes end
 * the packed bytes at cend: 1 if its head became pclusters, 0 if not */
int ezi_bld_frag_near(struct ezfs_builder *b, struct binode *in,
		      struct bzfile *z, uint64_t cend, uint64_t matched);

/* tree/tree.c: free every inode (and the hard link table) */
void ezi_bld_free_inodes(struct ezfs_builder *b);
/* For every source: append to b->inodes, add a dentry, set metadata
 * (mode, owner, times with -T / --all-root / --force-*) from st, and
 * finish the tree ("." and "..", sorted directories). */
int ezi_bld_add_inode(struct ezfs_builder *b, struct binode *in);
int ezi_bld_add_dentry(struct binode *dir, const char *name, struct binode *in);
void ezi_bld_inode_meta(struct ezfs_builder *b, struct binode *in,
			const struct stat *st);
int ezi_bld_scan_finish(struct ezfs_builder *b);
/* tree/tree.c: a directory's "." (unless -E dot-omitted) and ".." */
int ezi_bld_add_dots(const struct ezfs_builder *b, struct binode *dir);
/* tree/droid.c: fs_config, file_contexts, aufs whiteouts, --ovlfs-strip, on
 * the read tree before "." and ".." are added */
int ezi_bld_tree_fixup(struct ezfs_builder *b);
/* tree/droid.c: --block-list-file, once the image is laid out */
int ezi_bld_block_list(struct ezfs_builder *b);
/* tree/tree.c: free one inode; is relative path rel excluded
 * (--exclude-path, --exclude-regex)? */
void ezi_bld_inode_free(struct binode *in);
bool ezi_bld_excluded(const struct ezfs_builder *b, const char *rel);

/* tree/xattr.c */
int ezi_bld_xattrs_read(struct ezfs_builder *b, struct binode *in);
/* Add one xattr (copied; a prefix EROFS cannot store is skipped with a
 * warning), then sort once all are in. */
int ezi_bld_xattr_add(struct ezfs_builder *b, struct binode *in,
		      const char *name, const void *value, size_t vlen);
void ezi_bld_xattrs_sort(struct binode *in);
int ezi_bld_xattrs_share(struct ezfs_builder *b);
/* tree/digest.c: --xattr-inode-digest: every non-empty regular file's
 * "sha256:" digest xattr added, the long prefix table made (appended to
 * the shared area by ezi_bld_xattrs_share); 0 or -errno (logged). */
int ezi_bld_digests(struct ezfs_builder *b);
/* The long prefix table for ezi_bld_xattrs_share: *len bytes (malloc'd),
 * NULL without --xattr-inode-digest. */
uint8_t *ezi_bld_prefix_table(const struct ezfs_builder *b, uint32_t *len);

/* Write the inode's xattr ibody (xattr_isize bytes) at out. */
void ezi_bld_xattrs_encode(const struct binode *in, uint8_t *out);

/* tar/tar.c: a tar archive as the source */
int ezi_bld_scan_tar(struct ezfs_builder *b, const char *path,
		     const char *tmpdir);
/* OCI image layers, paths[0] the lowest, into one tree: later entries
 * replace earlier ones, ".wh.NAME" deletes NAME of the layers below,
 * ".wh..wh..opq" the lower contents of its directory, whiteouts dropped;
 * every layer's data copied into one spool file in tmpdir. */
int ezi_bld_scan_tar_layers(struct ezfs_builder *b, const char *const *paths,
			    size_t n, const char *tmpdir);

/* scan.c: a directory as the source */
int ezi_bld_scan(struct ezfs_builder *b, const char *srcdir);

/* rebuild.c: the tree merged from EROFS layer images (the last is the
 * uppermost), every file's data chunk indexes into its layer (device k
 * for layers[k - 1]); sets rdevs and dev_blocks, the block size. */
int ezi_bld_scan_images(struct ezfs_builder *b, const char *const *layers,
			size_t n);
/* rebuild.c: --incremental: the tree of the image p.incremental_base
 * merged under the scanned one, its file data copied (0 or -errno,
 * logged) */
int ezi_bld_merge_base(struct ezfs_builder *b);

/*
 * The stages (the files directly in lib/write), in the order
 * ezfs_builder_write runs them: plan, data, metadata, super.
 */

/* plan.c: each inode's form, the root's block, b->cursor at the data's
 * start (0 or -errno, logged) */
int ezi_bld_plan(struct ezfs_builder *b);
/* The size of in's core (compact or extended) */
unsigned ezi_bld_core_size(const struct binode *in);
/* 48BIT: the superblock's epoch that compact mtimes count from */
int64_t ezi_bld_epoch48(const struct ezfs_builder *b);
/* A flat layout for in: FLAT_INLINE when its tail fits (allow_inline)
 * after its core and xattrs in one block, else FLAT_PLAIN; unit_size */
void ezi_bld_plan_flat(const struct ezfs_builder *b, struct binode *in,
		       bool allow_inline);
/* --zD: are directories compressed (into the packed inode)? */
bool ezi_bld_zdirs(const struct ezfs_builder *b);
/* A directory's size and layout (its entries need the NIDs: later) */
int ezi_bld_plan_dir(const struct ezfs_builder *b, struct binode *in);
/* A special inode of the image's own (the packed or the metabox inode):
 * a regular file of size bytes named by what, appended to b->inodes */
int ezi_bld_special_inode(struct ezfs_builder *b, const char *what,
			  uint64_t size, struct binode **out);

/* data.c: every inode's data at the cursor, in inode order, then the
 * fragments and the packed inode (0 or -errno, logged) */
int ezi_bld_write_data(struct ezfs_builder *b);
/* Place one regular file whose compression result z (or NULL: flat,
 * chunked) is known; buf: COPY_BUF bytes of scratch, raw: its bytes read
 * ahead or NULL */
int ezi_bld_place_file(struct ezfs_builder *b, struct binode *in,
		       struct bzfile *z, uint8_t *buf, const uint8_t *raw);
/* The packed inode (9.10) of b->packed: compressed in segments, else
 * flat */
int ezi_bld_write_packed(struct ezfs_builder *b, uint8_t *buf);

/* chunks.c: CHUNK_BASED files (--chunksize, --blobdev) and a tar
 * index's files (--tar=i); the chunk array's offset in the unit (6.4.2) */
int ezi_bld_write_chunked(struct ezfs_builder *b, struct binode *in);
int ezi_bld_write_tarindex(struct ezfs_builder *b, struct binode *in);
uint32_t ezi_bld_chunk_hdr(const struct binode *in, unsigned unit);

/*
 * space.c: where things go. The data area grows at b->cursor: the next
 * file's data goes there, its addresses relative to it until placed
 * (compress/ writes a split file's parts and the packed inode's segments
 * ahead, at the cursor and after), and the cursor moves past it: n
 * blocks, the first returned.
 */
static inline uint64_t ezi_bld_take_blocks(struct ezfs_builder *b, uint64_t n)
{
	uint64_t at = b->cursor;

	b->cursor += n;
	return at;
}
/* The metadata's slots. Free runs of 32-byte slots (gaps), made for a
 * builder's block size and freed (NULL: nothing) */
struct bgaps;
struct bgaps *ezi_bld_gaps_new(const struct ezfs_builder *b);
void ezi_bld_gaps_free(struct bgaps *g);
/* The rest of the block that pos is in is free */
int ezi_bld_gap_rest(struct bgaps *g, unsigned blkszbits, uint64_t pos);
/* The root at the start of its reserved block(s) (b->root_blk) */
int ezi_bld_place_root(struct ezfs_builder *b, struct bgaps *g);
/* Every unit's meta_off and NID (want < 0), or only those that go
 * (want 1) or do not go (want 0) into the metabox, from base on (NIDs
 * from meta_blkaddr); *endp: the end of the area */
int ezi_bld_place_inodes(struct ezfs_builder *b, struct bgaps *g, uint64_t base,
			 uint64_t meta_blkaddr, uint64_t *endp, int want);
/* Multi-device images: units moved across block boundaries where they
 * may cross one, the area [lo, *endp) shrinks (not below base) */
int ezi_bld_pair_tails(struct ezfs_builder *b, uint64_t lo, uint64_t base,
		       uint64_t meta_blkaddr, uint64_t *endp);
/* A unit placed after the others: into the smallest gap it fits, else
 * at the cursor, which moves past it */
int ezi_bld_place_late(struct ezfs_builder *b, struct bgaps *g,
		       struct binode *in, uint64_t meta_blkaddr);
/* A unit at its place, by offset (qsort: ezi_bld_unit_cmp) */
struct bunit {
	uint64_t off;
	uint32_t len;
	struct binode *in;
};
int ezi_bld_unit_cmp(const void *x, const void *y);

/* dirs.c: a directory's contents (in->size bytes at buf, zeroed), and
 * --zD: the directories appended to the packed inode, which is written
 * and placed late (*endp: the metadata area's end, *nextblk: the first
 * block after all of it) */
void ezi_bld_dir_build(const struct ezfs_builder *b, const struct binode *in,
		       uint8_t *buf);
int ezi_bld_pack_dirs(struct ezfs_builder *b, struct bgaps *g,
		      uint64_t meta_blkaddr, uint64_t *endp, uint64_t *nextblk);

/* metabox.c: -m: the metabox inode holding mlen bytes of units at mbox,
 * its data at the cursor, its unit placed late */
int ezi_bld_write_mbox(struct ezfs_builder *b, struct bgaps *g,
		       const uint8_t *mbox, uint64_t mlen,
		       uint64_t meta_blkaddr);

/* meta.c: place and write every unit and the directory blocks; sets
 * b->meta_blkaddr and b->blocks (0 or -errno, logged) */
int ezi_bld_write_meta(struct ezfs_builder *b);

/* super.c: the superblock (with b->meta_blkaddr, b->blocks), the device
 * table and shared xattrs, the image's size, the checksum; the config
 * records' bytes at p (NULL: only their length) */
int ezi_bld_write_super(struct ezfs_builder *b);
uint32_t ezi_bld_cfgs_encode(const struct ezfs_builder *b, uint8_t *p);

/* verity.c: --verity, once the filesystem is complete: pad it to 4096
 * bytes and append its dm-verity tree (or write it to verity_hash_file);
 * 0 or -errno, logged */
int ezi_bld_verity(struct ezfs_builder *b);

/* image.c: the image file (a temporary file named once complete, or a
 * device) and the blob, from ezi_bld_image_open (0 or -errno, logged;
 * either way ezi_bld_image_finish is called next) to
 * ezi_bld_image_finish, which finishes them (--offset, --sparse, owner and
 * mode, fsync, the names) when err is 0, else removes what was made, and
 * returns err or its own error */
struct blobout {
	char *target; /* its path, symlinks followed */
	char *tmp;    /* its temporary name, while it has one */
	bool anon;    /* O_TMPFILE: no name until it is complete */
	bool placed;  /* target is the new blob now */
};
struct bimage {
	char *target;	 /* the image's path, symlinks followed */
	char *tmp;	 /* its temporary name, while it has one */
	struct stat old; /* the file it replaces (st_mode 0: none) */
	bool named;	 /* target is the new image now */
	struct blobout blob;
};
int ezi_bld_image_open(struct ezfs_builder *b, const char *path,
		       struct bimage *im);
int ezi_bld_image_finish(struct ezfs_builder *b, struct bimage *im, int err);
/* image.c: --gzinfo: the zinfo written to a temporary name beside its
 * own (*tmp; 0 or -errno, logged), then given its name unless err (which
 * is returned, or the rename's -errno, logged); tmp is freed. */
int ezi_bld_zinfo_write(struct ezfs_builder *b, char **tmp);
int ezi_bld_zinfo_place(struct ezfs_builder *b, char *tmp, int err);

#endif
