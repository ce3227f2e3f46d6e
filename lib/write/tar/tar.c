/* SPDX-License-Identifier: MIT */
/*
 * tar.c - a tar archive as the builder's source: read the members in
 * order into a tree (tar_tree.c; later members replace earlier ones,
 * missing parents are created). File data stays where it is (a seekable
 * plain archive) or goes to one unlinked spool file; a tar index
 * (tar_index) only notes where each file's data is in the archive. A
 * sparse member (GNU 'S', PAX GNU.sparse 0.0, 0.1, 1.0) keeps only its
 * runs of data there, and a map of them: its holes are read as zeros by
 * the layouts, which store them as null chunks or compressed zeros.
 */
#define _GNU_SOURCE /* O_TMPFILE */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "write/internal.h"
#include "write/tar/tar.h"
#include "format/erofs_fs.h"

#define MAX_META (16u << 20) /* largest PAX / GNU long-name member */

static int read_data(struct tctx *c, struct binode *in, uint64_t size)
{
	uint64_t pad = (512 - (size & 511)) & 511, done = 0;
	uint8_t buf[65536];
	int err;

	if (c->b->p.tar_index) {
		/* the archive is device 1: block n is its bytes n * blksz.. */
		in->dataoff = c->s.pos;
		if (size && (in->dataoff & (c->b->blksz - 1)))
			return ezi_tar_err(
				c, -EINVAL,
				"data at byte %llu of the archive is "
				"not aligned to the %u-byte blocks "
				"of a tar index",
				(unsigned long long)in->dataoff, c->b->blksz);
	}
	if (c->spool < 0) {
		if (!c->b->p.tar_index)
			in->dataoff = c->s.base + c->s.pos;
		err = ezi_tstream_skip(&c->s, size + pad);
		return err == -EPIPE
			       ? ezi_tar_err(c, -EPIPE, "truncated archive")
		       : err < 0 ? ezi_tar_err(c, err, "%s",
					       c->s.err ? c->s.err
							: strerror(-err))
				 : 0;
	}
	in->dataoff = c->spool_off;
	while (done < size) {
		size_t want = size - done < sizeof(buf) ? (size_t)(size - done)
							: sizeof(buf);
		ssize_t n = ezi_tstream_read(&c->s, buf, want);

		if (n < 0)
			return ezi_tar_err(c, (int)n, "%s",
					   c->s.err ? c->s.err
						    : strerror((int)-n));
		if ((size_t)n < want)
			return ezi_tar_err(c, -EPIPE, "truncated archive");
		if (pwrite(c->spool, buf, want, (off_t)(c->spool_off + done)) !=
		    (ssize_t)want)
			return ezi_tar_err(c, errno ? -errno : -EIO,
					   "spool file: write: %s",
					   strerror(errno));
		done += want;
	}
	c->spool_off += size;
	err = ezi_tstream_skip(&c->s, pad);
	return err == -EPIPE ? ezi_tar_err(c, -EPIPE, "truncated archive")
			     : err;
}

/* --exclude-path / --exclude-regex on the path or any of its parents */
static bool excluded(struct tctx *c, char **comp, int n)
{
	char rel[8192];
	size_t len = 0, l;
	int i;

	if (!c->b->p.n_exclude_paths && !c->b->p.n_exclude_regex)
		return false;
	for (i = 0; i < n; i++) {
		l = strlen(comp[i]);
		if (len + l + 2 > sizeof(rel))
			return false;
		if (i)
			rel[len++] = '/';
		memcpy(rel + len, comp[i], l + 1);
		len += l;
		if (ezi_bld_excluded(c->b, rel))
			return true;
	}
	return false;
}

/* One 512-byte block of the archive: 0, or an error (reported). */
static int read_block(struct tctx *c, uint8_t blk[512])
{
	ssize_t n = ezi_tstream_read(&c->s, blk, 512);

	if (n < 0)
		return ezi_tar_err(c, (int)n, "%s",
				   c->s.err ? c->s.err : strerror((int)-n));
	return n < 512 ? ezi_tar_err(c, -EPIPE, "truncated archive") : 0;
}

/* The runs of a GNU 'S' member's extension blocks (21 a block, then the
 * flag of one more), read from the archive after its header. */
static int sparse_ext(struct tctx *c, struct tentry *e)
{
	uint8_t blk[512];
	bool more = e->sp_ext;
	unsigned i;

	while (more) {
		int err = read_block(c, blk);

		if (err)
			return err;
		for (i = 0; i < 21 && blk[i * 24]; i++) {
			int64_t off, len;

			if (ezi_thdr_num(blk + i * 24, 12, &off) ||
			    ezi_thdr_num(blk + i * 24 + 12, 12, &len) ||
			    off < 0 || len < 0)
				return ezi_tar_err(c, -EUCLEAN,
						   "bad sparse map");
			if (ezi_tsparse_add(&e->map, &e->nmap, (uint64_t)off,
					    (uint64_t)len))
				return -ENOMEM;
		}
		more = blk[504] != 0;
	}
	return 0;
}

/* PAX sparse 1.0: the map at the start of the member's data, decimal
 * lines (the count, then offset and numbytes of each run) padded to a
 * block; e->size becomes the data after it. */
static int sparse_inmap(struct tctx *c, struct tentry *e)
{
	uint64_t want = 0, got = 0, num = 0, used = 0;
	bool in_num = false;
	uint8_t blk[512];
	size_t i;
	int err = 0;

	while (!err && (!want || got < want)) {
		if (used + 512 > e->size || used + 512 > MAX_META)
			return ezi_tar_err(c, -EUCLEAN, "bad sparse map");
		err = read_block(c, blk);
		if (err)
			return err;
		used += 512;
		/* the numbers in this block, each ended by a newline (one
		 * may go on in the next block) */
		for (i = 0; !err && i < sizeof(blk) && (!want || got < want);
		     i++) {
			char ch = blk[i];

			if (ch >= '0' && ch <= '9' &&
			    num <= UINT64_MAX / 10 - 1) {
				num = num * 10 + (uint64_t)(ch - '0');
				in_num = true;
				continue;
			}
			if (ch != '\n' || !in_num || (!want && num > MAX_META))
				return ezi_tar_err(c, -EUCLEAN,
						   "bad sparse map");
			if (!want)
				want = 1 + 2 * num; /* the count first */
			else if (got % 2)
				err = ezi_tsparse_add(&e->map, &e->nmap, num,
						      0);
			else
				e->map[e->nmap - 1].len = num;
			got++;
			num = 0;
			in_num = false;
		}
	}
	if (!err)
		e->size -= used;
	return err;
}

/* The map of a sparse member complete and checked: runs in order, inside
 * the file, their data e->size bytes. */
static int sparse_map(struct tctx *c, struct tentry *e)
{
	uint64_t end = 0, data = 0;
	size_t i;
	int err = e->sp_ext	? sparse_ext(c, e)
		  : e->sp_inmap ? sparse_inmap(c, e)
				: 0;

	if (err)
		return err;
	if (c->b->p.tar_index)
		return ezi_tar_err(c, -EOPNOTSUPP,
				   "a sparse member cannot be indexed (its "
				   "data is not one range of the archive)");
	for (i = 0; i < e->nmap; i++) {
		const struct tsparse *r = &e->map[i];

		if (r->off < end || r->off > e->realsize ||
		    r->len > e->realsize - r->off)
			return ezi_tar_err(c, -EUCLEAN,
					   "sparse map: run %zu at %llu+%llu "
					   "outside the file or out of order",
					   i, (unsigned long long)r->off,
					   (unsigned long long)r->len);
		end = r->off + r->len;
		data += r->len;
	}
	if (data != e->size)
		return ezi_tar_err(c, -EUCLEAN,
				   "sparse map: %llu bytes of runs, %llu "
				   "stored",
				   (unsigned long long)data,
				   (unsigned long long)e->size);
	return 0;
}

/* The runs of a sparse member for datasrc.c, where its data was stored. */
static int sparse_runs(struct binode *in, const struct tentry *e)
{
	uint64_t at = 0;
	size_t i;

	in->sparse = calloc(e->nmap ? e->nmap : 1, sizeof(*in->sparse));
	if (!in->sparse)
		return -ENOMEM;
	for (i = 0; i < e->nmap; i++) {
		if (!e->map[i].len)
			continue;
		in->sparse[in->nsparse++] =
			(struct bsparse){ e->map[i].off, e->map[i].len, at };
		at += e->map[i].len;
	}
	in->size = e->realsize;
	return 0;
}

/* Put one member into the tree; path: a copy of e->path to split. */
static int add_entry(struct tctx *c, struct tentry *e, char *path)
{
	static const char types[] = "0123456";
	static const uint32_t fmt[] = { S_IFREG, 0,	  S_IFLNK, S_IFCHR,
					S_IFBLK, S_IFDIR, S_IFIFO };
	char *comp[MAX_DEPTH], *lcomp[MAX_DEPTH];
	struct tnode *dir, *t, *target;
	struct binode *in;
	int n, ln, err;
	bool skip;

	if (!strchr(types, e->type) || !e->type)
		return ezi_tar_err(c, -EOPNOTSUPP,
				   "unsupported entry type '%c'", e->type);
	if (e->sparse && (err = sparse_map(c, e)))
		return err;
	n = ezi_tar_split(c, path, comp, MAX_DEPTH);
	if (n < 0)
		return n;
	skip = excluded(c, comp, n);
	if (!skip) {
		err = ezi_tar_whiteout(c, comp, n);
		if (err < 0)
			return err;
		skip = err;
	}
	if ((skip || e->type != '0') && e->size) {
		if (e->size > UINT64_MAX - 511)
			return ezi_tar_err(c, -EFBIG, "size overflow");
		err = ezi_tstream_skip(&c->s, (e->size + 511) & ~511ull);
		if (err)
			return ezi_tar_err(c, err, "%s",
					   err == -EPIPE ? "truncated archive"
					   : c->s.err	 ? c->s.err
							 : strerror(-err));
	}
	if (skip)
		return 0;
	if (!n) { /* the root itself */
		if (e->type != '5')
			return ezi_tar_err(c, -ENOTDIR,
					   "the root must be a directory");
		c->root->implicit = false;
		return ezi_tar_meta(c, c->root->in, S_IFDIR | e->mode, e);
	}
	err = ezi_tar_walk(c, comp, n - 1, true, &dir);
	if (err)
		return err;
	t = *ezi_tar_slot(c, dir, comp[n - 1]);
	if (t && t->gone)
		t = NULL;
	if (t)
		t->layer = c->layer;
	if (e->type == '1') {
		if (!e->link)
			return ezi_tar_err(c, -EINVAL,
					   "hard link without a target");
		ln = ezi_tar_split(c, e->link, lcomp, MAX_DEPTH);
		if (ln < 0)
			return ln;
		err = ln ? ezi_tar_walk(c, lcomp, ln, false, &target) : -EISDIR;
		if (err == -ENOENT || err == -ENOTDIR)
			return ezi_tar_err(c, -ENOENT,
					   "hard link target not found");
		if (!err && S_ISDIR(target->in->mode))
			err = -EISDIR;
		if (err)
			return err == -EISDIR
				       ? ezi_tar_err(c, err,
						     "hard link to a directory")
				       : err;
		if (t == target)
			return 0;
		if (t && !S_ISDIR(t->in->mode))
			t->in = target->in;
		else if (!ezi_tar_put(c, dir, comp[n - 1], target->in))
			return -ENOMEM;
		return 0;
	}
	in = ezi_tar_binode(c, comp, n);
	if (!in)
		return -ENOMEM;
	err = ezi_tar_meta(c, in, fmt[e->type - '0'] | e->mode, e);
	if (err)
		return err;
	if (e->type == '0' && c->b->p.tar_rvsp) {
		/* --incremental=rvsp: the data skipped, the file all zeros
		 * (a sparse file without runs) */
		in->size = e->sparse ? e->realsize : e->size;
		in->sparse = calloc(1, sizeof(*in->sparse));
		err = in->sparse ? 0 : -ENOMEM;
		if (!err && e->size)
			err = ezi_tstream_skip(&c->s,
					       (e->size + 511) & ~511ull);
		if (err && err != -ENOMEM)
			err = ezi_tar_err(c, err, "%s",
					  err == -EPIPE ? "truncated archive"
					  : c->s.err	? c->s.err
							: strerror(-err));
	} else if (e->type == '0') {
		in->size = e->size;
		err = read_data(c, in, e->size);
		if (!err && e->sparse)
			err = sparse_runs(in, e);
	} else if (e->type == '2') {
		if (!e->link || strlen(e->link) >= 4096)
			return ezi_tar_err(
				c, -EINVAL,
				e->link ? "symlink target too long"
					: "symlink without a target");
		in->symlink = strdup(e->link);
		if (!in->symlink)
			return -ENOMEM;
		in->size = strlen(in->symlink);
	} else if (e->type == '3' || e->type == '4') {
		in->rdev = erofs_new_encode_dev(e->major, e->minor);
	}
	if (err)
		return err;
	if (t && S_ISDIR(t->in->mode) && e->type == '5') {
		t->in = in; /* keeps its children */
		t->implicit = false;
	} else if (t && !S_ISDIR(t->in->mode)) {
		t->in = in;
	} else if (!ezi_tar_put(c, dir, comp[n - 1], in)) {
		return -ENOMEM;
	}
	return 0;
}

static int open_spool(struct tctx *c, const char *tmpdir)
{
	const char *dir = tmpdir && *tmpdir ? tmpdir : ".";
	char *t;

	c->spool = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (c->spool >= 0)
		return 0;
	t = malloc(strlen(dir) + 32);
	if (!t)
		return -ENOMEM;
	sprintf(t, "%s/.ezfs-tar.XXXXXX", dir);
	c->spool = mkstemp(t);
	if (c->spool >= 0)
		unlink(t);
	free(t);
	if (c->spool >= 0)
		return 0;
	ezi_bld_log(c->b, EZFS_LOG_ERROR, "%s: cannot create a spool file: %s",
		    dir, strerror(errno));
	return -errno;
}

/* A PAX or GNU long-name member: its data, NUL terminated. */
static int read_meta(struct tctx *c, uint64_t size, char **out)
{
	uint64_t pad = (512 - (size & 511)) & 511;
	ssize_t n;
	int err;

	if (size > MAX_META)
		return ezi_tar_err(c, -EFBIG, "extended header of %llu bytes",
				   (unsigned long long)size);
	*out = malloc((size_t)size + 1);
	if (!*out)
		return -ENOMEM;
	n = ezi_tstream_read(&c->s, *out, (size_t)size);
	if (n >= 0 && (uint64_t)n == size) {
		(*out)[size] = '\0';
		err = ezi_tstream_skip(&c->s, pad);
		if (!err)
			return 0;
		n = err;
	}
	free(*out);
	*out = NULL;
	if (n < 0 && n != -EPIPE)
		return ezi_tar_err(c, (int)n, "%s",
				   c->s.err ? c->s.err : strerror((int)-n));
	return ezi_tar_err(c, -EPIPE, "truncated archive");
}

static int set_long(char **dst, char *data)
{
	free(*dst);
	*dst = data;
	return 0;
}

/* Tar index: the archive's size, the rest of a stream read to its end
 * (the device is the whole archive, as it is appended or attached). */
static int archive_size(struct tctx *c)
{
	uint8_t buf[65536];
	ssize_t n;

	if (c->s.seekable) {
		c->b->tar_bytes = c->s.fsize - c->s.base;
		return 0;
	}
	while ((n = ezi_tstream_read(&c->s, buf, sizeof(buf))) > 0)
		;
	if (n < 0)
		return ezi_tar_err(c, (int)n, "%s",
				   c->s.err ? c->s.err : strerror((int)-n));
	c->b->tar_bytes = c->s.pos;
	return 0;
}

/* Read members until the end-of-archive blocks. */
static int read_archive(struct tctx *c)
{
	struct tpax g = { 0 }, l = { 0 };
	uint8_t blk[512];
	uint64_t members = 0;
	int err = 0;

	for (;;) {
		struct tentry e;
		const char *why = NULL;
		char *data = NULL, *path;
		char nm[101];
		int64_t size;
		ssize_t n;

		c->entry = NULL;
		c->hdr_off = c->s.pos;
		n = ezi_tstream_read(&c->s, blk, sizeof(blk));
		if (n < 0) {
			err = ezi_tar_err(c, (int)n, "%s",
					  c->s.err ? c->s.err
						   : strerror((int)-n));
			break;
		}
		if (n < (ssize_t)sizeof(blk)) {
			err = ezi_tar_err(c, -EPIPE,
					  !n && !members
						  ? "not a tar archive (empty)"
						  : "truncated archive (no "
						    "end-of-archive block)");
			break;
		}
		memcpy(nm, blk, 100);
		nm[100] = '\0';
		c->entry = nm;
		err = ezi_thdr_check(blk);
		if (err == 1) {
			err = 0; /* end (a second zero block may follow) */
			break;
		}
		if (err) {
			if (!members)
				c->entry = NULL; /* likely not tar at all */
			err = ezi_tar_err(c, -EUCLEAN,
					  members ? "bad header checksum"
						  : "not a tar archive (bad "
						    "header checksum)");
			break;
		}
		members++;
		if (ezi_thdr_num(blk + 124, 12, &size) || size < 0) {
			err = ezi_tar_err(c, -EUCLEAN, "bad size field");
			break;
		}
		switch (blk[156]) {
		case 'x':
		case 'g':
			err = read_meta(c, (uint64_t)size, &data);
			if (!err &&
			    ezi_tpax_parse(blk[156] == 'g' ? &g : &l, data,
					   (size_t)size, blk[156] == 'g', &why))
				err = ezi_tar_err(c, -EUCLEAN, "%s", why);
			free(data);
			break;
		case 'L':
		case 'K':
			err = read_meta(c, (uint64_t)size, &data);
			if (!err)
				set_long(blk[156] == 'L' ? &l.path : &l.link,
					 data);
			break;
		case 'V':
			err = ezi_tstream_skip(&c->s, ((uint64_t)size + 511) &
							      ~511ull);
			if (err)
				err = ezi_tar_err(c, err, "truncated archive");
			break;
		default:
			err = ezi_tentry_fill(&e, blk, &g, &l, &why);
			if (err && why)
				err = ezi_tar_err(c, err, "%s", why);
			c->entry = e.path;
			path = e.path ? strdup(e.path) : NULL;
			if (!err && !path)
				err = -ENOMEM;
			if (!err)
				err = add_entry(c, &e, path);
			free(path);
			ezi_tentry_clear(&e);
			ezi_tpax_clear(&l);
			if ((members & 1023) == 0)
				ezi_bld_progress(c->b, EZFS_BUILD_SCAN,
						 c->bins.n, 0, 0, 0);
		}
		if (err)
			break;
	}
	c->entry = NULL;
	ezi_tpax_clear(&g);
	ezi_tpax_clear(&l);
	return err;
}

/* After the members: missing parents made, the tree handed to the
 * builder, the data's file kept; c freed. Returns err, or the first
 * error of these. */
static int finish(struct tctx *c, int err)
{
	struct ezfs_builder *b = c->b;
	size_t i;

	/* missing parents: 0755, root, -T or the newest mtime */
	for (i = 0; !err && i < c->nodes.n; i++) {
		struct tnode *t = c->nodes.v[i];

		if (t->implicit && !t->gone)
			err = ezi_tar_meta(c, t->in, S_IFDIR | 0755, NULL);
	}
	if (!err)
		err = ezi_tar_emit(c);
	if (!err && !b->p.tar_index) {
		b->datafd = c->spool >= 0 ? c->spool : dup(c->s.fd);
		c->spool = -1;
		if (b->datafd < 0)
			err = -errno;
	}
	if (err == -ENOMEM)
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: out of memory",
			    c->s.name ? c->s.name : "tar");
	ezi_tar_free(c);
	return err;
}

int ezi_bld_scan_tar(struct ezfs_builder *b, const char *path,
		     const char *tmpdir)
{
	struct tctx c = { .b = b, .spool = -1 };
	int err;

	b->tar_src = true;
	err = ezi_tstream_open(&c.s, path);
	if (err) {
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s",
			    c.s.name ? c.s.name : path,
			    c.s.err ? c.s.err : strerror(-err));
		ezi_tstream_close(&c.s);
		return err;
	}
	/* a tar index needs the plain archive, a zinfo the gzip one */
	if (b->p.tar_index ? c.s.kind != TAR_PLAIN
			   : b->p.gzinfo_file && c.s.kind != TAR_GZIP) {
		ezi_bld_log(
			b, EZFS_LOG_ERROR, "%s: %s, not a %s one%s", c.s.name,
			b->p.tar_index ? "a tar index needs the plain archive"
				       : "--gzinfo needs a gzip archive",
			ezi_tstream_kind(&c.s),
			b->p.tar_index ? " (decompress it first)" : "");
		ezi_tstream_close(&c.s);
		return -EINVAL;
	}
	if (b->p.gzinfo_file)
		err = ezi_tzinfo_start(&c.s);
	if (!err && !c.s.seekable && !b->p.tar_index)
		err = open_spool(&c, tmpdir);
	if (!err)
		err = ezi_tar_tree_init(&c);
	if (!err)
		err = read_archive(&c);
	if (!err && b->p.tar_index)
		err = archive_size(&c);
	if (!err && c.s.zi) {
		/* as far as 1.9.3 inflates: its second end-of-archive block */
		uint8_t blk[512];
		ssize_t n = ezi_tstream_read(&c.s, blk, sizeof(blk));

		if (n < 0)
			err = ezi_tar_err(&c, (int)n, "%s",
					  c.s.err ? c.s.err
						  : strerror((int)-n));
		b->zinfo = c.s.zi;
		c.s.zi = NULL;
	}
	return finish(&c, err);
}

int ezi_bld_scan_tar_layers(struct ezfs_builder *b, const char *const *paths,
			    size_t n, const char *tmpdir)
{
	struct tctx c = { .b = b, .spool = -1, .oci = true };
	int err = 0;

	b->tar_src = true;
	c.srcname = paths[0];
	/* every layer's data into one spool file, whatever its kind */
	for (size_t k = 0; !err && k < n; k++) {
		ezi_tstream_close(&c.s);
		memset(&c.s, 0, sizeof(c.s));
		c.layer = (unsigned)k;
		err = ezi_tstream_open(&c.s, paths[k]);
		if (err) {
			ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s",
				    c.s.name ? c.s.name : paths[k],
				    c.s.err ? c.s.err : strerror(-err));
			break;
		}
		if (!k)
			err = open_spool(&c, tmpdir);
		if (!err && !k)
			err = ezi_tar_tree_init(&c);
		if (!err)
			err = read_archive(&c);
	}
	return finish(&c, err);
}
