/* SPDX-License-Identifier: MIT */
/* tar.h - the tar source of the builder: input stream, headers, tree. */
#ifndef EZFS_BUILD_TAR_H
#define EZFS_BUILD_TAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ezfs_builder;

/* ---- tar_stream.c: the archive bytes, decompressed, in order ---- */

enum { TAR_PLAIN, TAR_GZIP, TAR_XZ, TAR_LZMA, TAR_ZSTD };

struct tstream {
	int fd;
	bool own_fd;
	bool seekable;	   /* plain regular file: data read in place */
	int kind;	   /* TAR_PLAIN, TAR_GZIP ... */
	uint64_t pos;	   /* offset in the (decompressed) archive */
	uint64_t fsize;	   /* seekable: file size */
	uint64_t base;	   /* seekable: file offset of the archive */
	uint8_t *ibuf;	   /* compressed input buffer */
	size_t ilen, ioff; /* bytes held, next to use */
	bool ieof;
	bool zend;		 /* decoder reported the end of the stream */
	bool zmid;		 /* zstd: inside a frame */
	size_t zin_len, zin_pos; /* zstd: input held, used */
	void *z;		 /* z_stream, lzma_stream or ZSTD_DStream */
	const char *name;	 /* for messages: the path or "stdin" */
	const char *err;	 /* set with -EIO/-EUCLEAN: what went wrong */
	struct tzinfo *zi;	 /* gzip read with checkpoints (--gzinfo) */
};

/* Open path (NULL or "-": standard input) and detect the compression. */
int ezi_tstream_open(struct tstream *s, const char *path);
/* The compression's name: "plain", "gzip", "xz", "lzma", "zstd". */
const char *ezi_tstream_kind(const struct tstream *s);
/* Read exactly len bytes; returns bytes read (< len only at the end of
 * the archive) or a negative errno (s->err says why for decode errors). */
ssize_t ezi_tstream_read(struct tstream *s, void *buf, size_t len);
/* Skip len bytes (lseek for seekable input); -EPIPE if the archive ends. */
int ezi_tstream_skip(struct tstream *s, uint64_t len);
void ezi_tstream_close(struct tstream *s);
/* Refill s->ibuf from the input (unread input must be consumed): 0 (ilen
 * 0 at its end) or -errno. */
int ezi_tstream_fill(struct tstream *s);

/* ---- tar_zinfo.c: gzip checkpoints, the SOCI zinfo (--gzinfo) ---- */

struct tzinfo;
/* Read s (a gzip archive, just opened) through the checkpoint reader. */
int ezi_tzinfo_start(struct tstream *s);
/* ezi_tstream_read's gzip reader then (s->zi set). */
ssize_t ezi_tzinfo_read(struct tstream *s, uint8_t *buf, size_t len);
/* The zinfo file's bytes to fd; 0 or -errno. */
int ezi_tzinfo_write(const struct tzinfo *zi, int fd);
void ezi_tzinfo_free(struct tzinfo *zi);

/* ---- tar_hdr.c: headers and PAX records ---- */

struct txattr {
	char *name;
	uint8_t *value;
	size_t len;
};

/* A run of data of a sparse member: file bytes [off, off + len). */
struct tsparse {
	uint64_t off, len;
};

/* Extended attributes and overrides collected from 'x', 'g', 'L', 'K'. */
struct tpax {
	char *path, *link;
	bool has_size, has_uid, has_gid, has_mtime;
	uint64_t size;
	uint64_t uid, gid;
	int64_t mtime;
	uint32_t mtime_ns;
	struct txattr *x;
	size_t nx;
	/* GNU.sparse.* records (GNU tar's PAX sparse formats 0.0, 0.1 and
	 * 1.0; libarchive writes 1.0) */
	bool sparse; /* some GNU.sparse record */
	int64_t sp_major, sp_minor;
	char *sp_name; /* the member's real name */
	bool has_realsize;
	uint64_t realsize;
	struct tsparse *map; /* 0.0 and 0.1: the runs (1.0: in the data) */
	size_t nmap;
	bool sp_open; /* 0.0: an offset waiting for its numbytes */
};

/* One archive member, headers merged. */
struct tentry {
	char type;     /* typeflag ('0' for '\0' and '7') */
	char *path;    /* malloc'ed, as in the archive */
	char *link;    /* malloc'ed or NULL */
	uint32_t mode; /* permission bits only */
	uint64_t uid, gid;
	int64_t mtime;
	uint32_t mtime_ns;
	uint64_t size; /* data bytes following the header */
	uint32_t major, minor;
	struct txattr *x; /* owned */
	size_t nx;
	/* a sparse member (GNU 'S', or PAX GNU.sparse.*): size is the data
	 * stored, realsize the file's; map the runs of data (owned) */
	bool sparse;
	bool sp_inmap; /* PAX 1.0: the map starts the data */
	bool sp_ext;   /* GNU 'S': extension blocks of the map follow */
	uint64_t realsize;
	struct tsparse *map;
	size_t nmap;
};

/* Append a run to a map; 0 or -ENOMEM. */
int ezi_tsparse_add(struct tsparse **map, size_t *n, uint64_t off,
		    uint64_t len);

/* Header block check: 1 all zero, 0 valid, -EUCLEAN bad checksum. */
int ezi_thdr_check(const uint8_t blk[512]);
/* Decode a numeric field (octal or base-256); -ERANGE if it overflows. */
int ezi_thdr_num(const uint8_t *f, size_t n, int64_t *v);
/* Parse PAX records (len bytes) into p; global: skip path/link/size.
 * Returns 0 or -EUCLEAN with *why set. */
int ezi_tpax_parse(struct tpax *p, const char *rec, size_t len, bool global,
		   const char **why);
void ezi_tpax_clear(struct tpax *p);
/* Fill e from header blk, the global PAX state g, then the local one l
 * (which is consumed). Returns 0 or -EUCLEAN/-ERANGE/-ENOMEM with *why. */
int ezi_tentry_fill(struct tentry *e, const uint8_t blk[512],
		    const struct tpax *g, struct tpax *l, const char **why);
void ezi_tentry_clear(struct tentry *e);

/* ---- tar.c and tar_tree.c: the tree being read ---- */

#define MAX_DEPTH 1024

struct binode;

struct tnode {
	char *name;
	struct tnode *parent;
	struct binode *in;
	struct tnode **kids;
	unsigned nkids, capkids;
	bool implicit;	/* a parent missing from the archive */
	bool gone;	/* deleted by an OCI whiteout: no longer in the tree */
	unsigned layer; /* the last layer that wrote or went through it */
};

struct vec {
	void **v;
	size_t n, cap;
};

struct tctx {
	struct ezfs_builder *b;
	struct tstream s;
	int spool; /* -1: data read in place */
	uint64_t spool_off;
	struct tnode *root;
	struct tnode **tab; /* (parent, name) -> node, open addressing */
	size_t tabcap, tabn;
	struct vec nodes, bins; /* every tnode and binode, to free */
	int64_t newest;		/* newest mtime in the archive */
	const char *entry;	/* member being read, for messages */
	uint64_t hdr_off;
	bool oci;	     /* layers: OCI whiteouts applied */
	const char *srcname; /* the inodes' source name; NULL: s.name */
	unsigned layer;	     /* the layer being read, 0 the lowest */
};

/* One error line "INPUT: entry 'PATH' (offset N): reason"; returns err. */
int ezi_tar_err(struct tctx *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int ezi_tar_push(struct vec *v, void *p);
struct tnode **ezi_tar_slot(struct tctx *c, const struct tnode *parent,
			    const char *name);
/* A new inode, its srcpath "INPUT:/" and the components joined. */
struct binode *ezi_tar_binode(struct tctx *c, char *const *comp, int n);
/* A new node (name, in) under parent, replacing the old one if any. */
struct tnode *ezi_tar_put(struct tctx *c, struct tnode *parent,
			  const char *name, struct binode *in);
/* Metadata of e (NULL: a missing parent) with the builder's options. */
int ezi_tar_meta(struct tctx *c, struct binode *in, uint32_t mode,
		 const struct tentry *e);
/* Split path in place into at most max components; refuses "..". */
int ezi_tar_split(struct tctx *c, char *path, char **comp, int max);
/* The node of comp[0..n-1]; create: make missing directories. */
int ezi_tar_walk(struct tctx *c, char **comp, int n, bool create,
		 struct tnode **out);
/* OCI layers: path's last component comp[n - 1] a whiteout (".wh.")?
 * Then applied to the lower layers' tree (".wh.NAME" deletes NAME,
 * ".wh..wh..opq" what lies below the directory) and the entry dropped:
 * 1, or a negative errno; 0 for any other entry. */
int ezi_tar_whiteout(struct tctx *c, char **comp, int n);
/* Root node and table; then, once read: b->inodes in scan order. */
int ezi_tar_tree_init(struct tctx *c);
int ezi_tar_emit(struct tctx *c);
void ezi_tar_free(struct tctx *c);

#endif
