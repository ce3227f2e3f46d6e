/* SPDX-License-Identifier: MIT */
/*
 * data.c - the data stage: every inode's data in inode order from
 * b->cursor on: the workers' compressed results placed (compress/), flat
 * files copied, symlinks, chunked files (chunks.c), then the fragments
 * (fragments/) and the packed inode. What it leaves for the metadata:
 * each unit's size, its inline tail (spool/tails.c), its addresses.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "write/internal.h"
#include "format/erofs_fs.h"

#define COPY_BUF      (1u << 20)
#define FLAT_COPY_MIN (1u << 20) /* larger flat files: copy_file_range */

/* write_flat_file from the file's bytes in memory: a file read ahead, the
 * packed inode stored flat */
static int write_flat_raw(struct ezfs_builder *b, struct binode *in,
			  const uint8_t *raw)
{
	uint64_t full = in->nblocks << b->blkszbits, whole;
	uint64_t at = ezi_bld_take_blocks(b, in->nblocks);
	uint8_t pad[4096]; /* the last block (blocks are 4 KiB at most) */
	int err = 0;

	if (in->nblocks)
		in->startblk = at;
	whole = in->size < full ? in->size & ~(uint64_t)(b->blksz - 1) : full;
	if (whole)
		err = ezi_bld_pwrite(b, raw, (size_t)whole, at << b->blkszbits);
	if (!err && whole < full) { /* the last block, zero-padded */
		memcpy(pad, raw + whole, (size_t)(in->size - whole));
		memset(pad + (in->size - whole), 0, (size_t)(full - in->size));
		err = ezi_bld_pwrite(b, pad, (size_t)(full - whole),
				     (at << b->blkszbits) + whole);
	}
	if (err)
		return err;
	return ezi_bld_tail_keep(b, in, raw + full, in->tail_len);
}

/*
 * Copy a regular file as a flat inode: full blocks at the cursor, tail.
 * raw: all its bytes, read ahead by a worker (zjobs.c), else NULL.
 */
static int write_flat_file(struct ezfs_builder *b, struct binode *in,
			   uint8_t *buf, const uint8_t *raw)
{
	uint64_t full = in->nblocks << b->blkszbits, done = 0, at;
	uint64_t whole = in->size & ~(uint64_t)(b->blksz - 1);
	struct bsrc src;
	int err;
	ssize_t n;

	if (raw)
		return write_flat_raw(b, in, raw);
	err = ezi_bld_src_open(b, in, &src);
	if (err)
		return err;
	at = ezi_bld_take_blocks(b, in->nblocks);
	if (in->nblocks)
		in->startblk = at;
	/*
	 * A large file's whole blocks: copied by the kernel, once, where it
	 * can (64 MiB of text into tmpfs: 31 ms, as mkfs.erofs 1.9.3 copies
	 * it, against 42 ms through the buffer); the rest, and all of a
	 * smaller file (the many of a tree were slower so), through the
	 * buffer
	 */
	if (whole > full)
		whole = full;
	if (whole >= FLAT_COPY_MIN)
		done = ezi_bld_copy_in(b, src.fd, src.base, at << b->blkszbits,
				       whole);
	while (done < full) {
		size_t want = full - done < COPY_BUF ? (size_t)(full - done)
						     : COPY_BUF;
		n = ezi_bld_src_pread(&src, buf, want, done);
		if (n < 0) {
			err = (int)n;
			goto rerr;
		}
		if (done + (uint64_t)n < in->size && (size_t)n < want)
			goto changed;
		memset(buf + n, 0, want - (size_t)n);
		err = ezi_bld_pwrite(b, buf, want, (at << b->blkszbits) + done);
		if (err)
			goto out;
		done += want;
	}
	if (in->tail_len) {
		n = ezi_bld_src_pread(&src, buf, in->tail_len, full);
		if (n < 0) {
			err = (int)n;
			goto rerr;
		}
		if ((uint32_t)n != in->tail_len)
			goto changed;
		err = ezi_bld_tail_keep(b, in, buf, in->tail_len);
		if (err)
			goto out;
	}
	err = ezi_bld_src_check(b, in, &src);
	goto out;
rerr:
	ezi_bld_log(b, EZFS_LOG_ERROR, "%s: read: %s", in->srcpath,
		    strerror(-err));
	goto out;
changed:
	err = -EAGAIN;
	ezi_bld_log(b, EZFS_LOG_ERROR, "%s: file shrank while building",
		    in->srcpath);
out:
	ezi_bld_src_close(&src);
	return err;
}

static int write_symlink_blocks(struct ezfs_builder *b, struct binode *in)
{
	uint64_t full = in->nblocks << b->blkszbits;
	uint8_t *blk;
	int err;

	if (!in->nblocks)
		return 0;
	blk = calloc(1, full);
	if (!blk)
		return -ENOMEM;
	memcpy(blk, in->symlink, in->size < full ? in->size : full);
	in->startblk = ezi_bld_take_blocks(b, in->nblocks);
	err = ezi_bld_pwrite(b, blk, full, in->startblk << b->blkszbits);
	free(blk);
	return err;
}

/* -E dedupe on decoded data across files (zxdd.c): not with fragments,
 * whose tails 1.9.3 shares its own way, nor for the image's own inodes */
static bool xdd_on(const struct ezfs_builder *b)
{
	return (b->p.flags & EZFS_BUILD_DEDUPE) && b->nzalgs &&
	       !(b->p.flags &
		 (EZFS_BUILD_FRAGMENTS | EZFS_BUILD_ALL_FRAGMENTS));
}

static bool xdd_wanted(const struct ezfs_builder *b, const struct binode *in)
{
	return xdd_on(b) && in != b->packed_inode && in != b->mbox_inode &&
	       ezi_bld_compress_wanted(b, in) && !ezi_bld_zunaligned_ok(b, in);
}

/* Place one regular file whose compression result (or NULL) is known. */
int ezi_bld_place_file(struct ezfs_builder *b, struct binode *in,
		       struct bzfile *z, uint8_t *buf, const uint8_t *raw)
{
	int err;

	/* -E dedupe: an earlier file's data again (zxdd.c) */
	if (xdd_wanted(b, in)) {
		err = ezi_bld_xdd_file(b, in, &z);
		if (err) {
			ezi_bld_zfile_free(z);
			return err;
		}
	}
	if (z) {
		uint64_t at;
		uint32_t k;

		/* z->frag: placed by ezi_bld_frags_place() once all are known
		 */
		/* like mkfs.erofs, fragments also share identical pclusters */
		if (ezi_bld_dedupe_shares(b, in)) {
			err = ezi_bld_dedupe_pclusters(b, in, z);
			if (err) {
				ezi_bld_zfile_free(z);
				return err;
			}
		}
		if (b->p.flags & EZFS_BUILD_48BIT)
			ezi_bld_zext_choose(b, in, z);
		in->z = z;
		in->datalayout = z->compact ? EROFS_INODE_COMPRESSED_COMPACT
					    : EROFS_INODE_COMPRESSED_FULL;
		/* its addresses were relative to the cursor (mod 2^32) */
		at = ezi_bld_take_blocks(b, z->blocks);
		for (k = 0; k < z->next; k++)
			z->ext[k].blkaddr += (uint32_t)at;
		err = z->written ? 0
				 : ezi_bld_pwrite(b, z->data, z->datalen,
						  at << b->blkszbits);
		free(z->data);
		z->data = NULL;
		in->unit_size =
			((ezi_bld_core_size(in) + in->xattr_isize + 7) & ~7u) +
			z->idx_size + z->idata_len;
		if (!err)
			err = ezi_bld_tail_keep(b, in, z->idata, z->idata_len);
		free(z->idata);
		z->idata = NULL;
		b->st.compressed_files++;
		if (!err && xdd_wanted(b, in))
			err = ezi_bld_xdd_commit(b, in, z);
		return err;
	}

	if (b->nrdevs) { /* rebuild.c made its chunk indexes */
		in->unit_size = ezi_bld_chunk_hdr(in, 8) + in->chunkidx_len;
		return 0;
	}
	if (b->p.tar_index)
		return ezi_bld_write_tarindex(b, in);
	if (b->p.chunksize && in != b->packed_inode)
		return ezi_bld_write_chunked(b, in);
	ezi_bld_plan_flat(b, in, !(b->p.flags & EZFS_BUILD_NOINLINE_DATA));
	return write_flat_file(b, in, buf, raw);
}

/* The packed inode (9.10): compressed in segments, else flat. */
int ezi_bld_write_packed(struct ezfs_builder *b, uint8_t *buf)
{
	struct binode *in;
	struct bzfile *z = NULL;
	int err =
		ezi_bld_special_inode(b, "(packed inode)", b->packed_len, &in);

	if (err)
		return err;
	b->packed_inode = in;
	if (!b->zsegs)
		err = ezi_bld_zsegs_start(b, b->packed, b->packed_len);
	if (!err)
		err = ezi_bld_zsegs_finish(b, in, b->packed_len, &z);
	if (err)
		return err;
	if (z)
		return ezi_bld_place_file(b, in, z, buf, NULL);
	ezi_bld_plan_flat(b, in, true);
	return write_flat_raw(b, in, b->packed);
}

struct dfs_ord {
	struct binode **o;
	size_t n;
};

static int dfs_add(struct ezfs_builder *b, struct binode *in, void *arg)
{
	struct dfs_ord *d = arg;

	(void)b;
	if (!in->zseen) {
		in->zseen = true;
		d->o[d->n++] = in;
	}
	return 0;
}

/*
 * -E dedupe across files (zxdd.c): the files' data goes in depth-first
 * order as in 1.9.3 (which copy of a file comes first decides what the
 * others can refer to). b->inodes is that order while the data is
 * written (*bfs: the inode order, put back after).
 */
static int dfs_data_order(struct ezfs_builder *b, struct binode ***bfs)
{
	struct dfs_ord d = { .o = malloc(b->ninodes * sizeof(*d.o)) };
	size_t i;
	int err;

	*bfs = NULL;
	if (!d.o)
		return -ENOMEM;
	/* the rest first, in inode order (the root stays first) */
	for (i = 0; i < b->ninodes; i++)
		if (!S_ISREG(b->inodes[i]->mode))
			d.o[d.n++] = b->inodes[i];
	err = ezi_bld_files_dfs(b, dfs_add, &d);
	for (i = 0; i < b->ninodes; i++)
		b->inodes[i]->zseen = false;
	if (err || d.n != b->ninodes) {
		free(d.o);
		return err ? err : -EINVAL;
	}
	*bfs = b->inodes;
	b->inodes = d.o;
	return 0;
}

/* The file at path (from the root) of the tree, or NULL. */
static struct binode *find_path(struct ezfs_builder *b, const char *path)
{
	struct binode *in = b->inodes[0];

	while (*path && in) {
		size_t n = strcspn(path, "/");
		struct binode *next = NULL;

		for (unsigned i = 0; n && i < in->ndents; i++)
			if (in->dents[i].namelen == n &&
			    !memcmp(in->dents[i].name, path, n) &&
			    strcmp(in->dents[i].name, ".") &&
			    strcmp(in->dents[i].name, "..")) {
				next = in->dents[i].inode;
				break;
			}
		if (n && !next)
			return NULL;
		if (n)
			in = next;
		path += n;
		while (*path == '/')
			path++;
	}
	return in;
}

/*
 * --order: the files the order file names first, in its order, then the
 * rest as b->inodes has them; *bfs as dfs_data_order sets it (the inode
 * order, put back after), kept when that ran first.
 */
static int order_data_first(struct ezfs_builder *b, struct binode ***bfs)
{
	struct binode **o = malloc(b->ninodes * sizeof(*o));
	FILE *f = fopen(b->p.order_file, "re");
	char line[4096];
	size_t n = 0, named = 0, i;
	int err = 0;

	if (!o || !f) {
		err = o ? -errno : -ENOMEM;
		ezi_bld_log(b, EZFS_LOG_ERROR, "--order %s: %s",
			    b->p.order_file, strerror(-err));
		free(o);
		if (f)
			fclose(f);
		return err;
	}
	o[n++] = b->inodes[0]; /* the root stays first */
	b->inodes[0]->zseen = true;
	while (fgets(line, sizeof(line), f)) {
		char *p = line;
		struct binode *in;

		p[strcspn(p, "\r\n")] = '\0';
		if (p[0] == '.' && p[1] == '/')
			p += 2;
		while (*p == '/')
			p++;
		in = *p ? find_path(b, p) : NULL;
		if (!in || !S_ISREG(in->mode) || in->zseen)
			continue;
		in->zseen = true;
		o[n++] = in;
		named++;
	}
	fclose(f);
	for (i = 0; i < b->ninodes; i++)
		if (!b->inodes[i]->zseen)
			o[n++] = b->inodes[i];
	for (i = 0; i < b->ninodes; i++)
		b->inodes[i]->zseen = false;
	ezi_bld_log(b, EZFS_LOG_INFO, "--order %s: %zu files first",
		    b->p.order_file, named);
	if (*bfs)
		free(b->inodes);
	else
		*bfs = b->inodes;
	b->inodes = o;
	return 0;
}

int ezi_bld_write_data(struct ezfs_builder *b)
{
	struct binode **bfs = NULL;
	uint64_t bytes = 0, total_bytes = 0, files = 0;
	uint8_t *buf;
	size_t i;
	int err = 0;

	for (i = 0; i < b->ninodes; i++)
		if (S_ISREG(b->inodes[i]->mode))
			total_bytes += b->inodes[i]->size;
	buf = malloc(COPY_BUF);
	if (!buf)
		return -ENOMEM;
	err = ezi_bld_frags_share(b);
	if (!err && xdd_on(b))
		err = dfs_data_order(b, &bfs);
	if (!err && b->p.order_file)
		err = order_data_first(b, &bfs);
	if (!err)
		err = ezi_bld_zjobs_start(b);
	for (i = 0; i < b->ninodes && !err; i++) {
		struct binode *in = b->inodes[i];

		if (S_ISREG(in->mode)) {
			struct bzfile *z = NULL;
			uint8_t *raw = NULL;

			if (in->size && ezi_bld_compress_wanted(b, in)) {
				b->prog_files = files;
				b->prog_bytes = bytes;
				b->prog_total = total_bytes;
				err = ezi_bld_zjobs_take(b, in, &z);
			} else if (in->size) {
				err = ezi_bld_zjobs_take_raw(b, in, &raw);
			}
			if (err)
				break;
			if (in->size)
				err = ezi_bld_place_file(b, in, z, buf, raw);
			else
				ezi_bld_plan_flat(b, in, false);
			free(raw);
			bytes += in->size;
			files++;
			if ((files & 255) == 0 || in->size > COPY_BUF)
				ezi_bld_progress(b, EZFS_BUILD_DATA, files,
						 b->st.files, bytes,
						 total_bytes);
		} else if (S_ISLNK(in->mode)) {
			ezi_bld_plan_flat(b, in, true);
			err = write_symlink_blocks(b, in);
			if (!err)
				err = ezi_bld_tail_keep(
					b, in,
					in->symlink +
						(in->nblocks << b->blkszbits),
					in->tail_len);
		} else if (S_ISDIR(in->mode)) {
			err = ezi_bld_plan_dir(b, in);
		} else {
			ezi_bld_plan_flat(b, in, false);
		}
	}
	ezi_bld_zjobs_stop(b);
	if (bfs) {
		free(b->inodes);
		b->inodes = bfs;
	}
	if (!err)
		err = ezi_bld_frags_place(b);
	/* --zD: the directories join the packed inode once NIDs are known
	 * (ezi_bld_write_meta) */
	if (!err && b->packed_len && !ezi_bld_zdirs(b))
		err = ezi_bld_write_packed(b, buf);
	if (err || !ezi_bld_zdirs(b))
		ezi_bld_packed_free(b);
	ezi_bld_dedupe_free(b);
	ezi_bld_xdd_free(b);
	if (b->p.blobdev)
		b->dev_blocks = b->blob_cursor;
	b->st.bytes_in = bytes;
	ezi_bld_progress(b, EZFS_BUILD_DATA, files, b->st.files, bytes,
			 total_bytes);
	free(buf);
	return err;
}
