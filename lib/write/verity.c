/* SPDX-License-Identifier: MIT */
/*
 * verity.c - ezfs mkfs --verity: a dm-verity hash tree in veritysetup's
 * format 1 over the finished image (read back from the output), hashed on
 * a worker pool, one job per hash block, and written after the image or
 * to a file of its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/verity.h"
#include "util/pool.h"
#include "write/internal.h"

#define VBS 4096u /* data and hash blocks */

struct vtree {
	struct ezfs_builder *b;
	struct ezi_verity_geo g;
	struct ezi_verity_sb sb;
	const struct ezi_md *md;
	uint8_t *tree;
	uint8_t **bufs; /* per worker, the last for this thread */
	unsigned nbufs;
	int err; /* the first error of a job (atomic) */
};

struct vjob {
	struct vtree *t;
	unsigned level; /* of the hash block it fills */
	uint64_t k;	/* which block of that level */
};

static void job_fail(struct vtree *t, int err)
{
	int zero = 0;

	__atomic_compare_exchange_n(&t->err, &zero, err, 0, __ATOMIC_RELAXED,
				    __ATOMIC_RELAXED);
}

/* Hash block k of level l: the hashes of up to 128 blocks below it (data
 * blocks read back from the image for level 0). */
static void vjob_run(void *arg)
{
	struct vjob *j = arg;
	struct vtree *t = j->t;
	const struct ezi_verity_geo *g = &t->g;
	uint64_t first = j->k << g->pbits, n = 1ull << g->pbits, i;
	uint8_t *out = t->tree + (g->start[j->level] + j->k) * VBS;
	const uint8_t *src;
	int self = ezi_pool_self(), err = 0;

	if (j->level == 0) {
		uint8_t *buf =
			t->bufs[self < 0 ? t->nbufs - 1 : (unsigned)self];
		ssize_t got;

		if (first + n > g->data_blocks)
			n = g->data_blocks - first;
		got = pread(t->b->fd, buf, (size_t)(n * VBS),
			    (off_t)(first * VBS));
		if (got != (ssize_t)(n * VBS)) {
			job_fail(t, got < 0 ? -errno : -EIO);
			return;
		}
		src = buf;
	} else {
		if (first + n > g->count[j->level - 1])
			n = g->count[j->level - 1] - first;
		src = t->tree + (g->start[j->level - 1] + first) * VBS;
	}
	for (i = 0; !err && i < n; i++)
		err = ezi_verity_hash(t->md, t->sb.salt, t->sb.salt_size,
				      src + i * VBS, VBS, out + i * g->stride);
	if (err)
		job_fail(t, err);
}

/* Every level, the lowest first, then the root. */
static int hash_tree(struct vtree *t, uint8_t root[32])
{
	const struct ezi_verity_geo *g = &t->g;
	struct ezi_pool *pool = NULL;
	struct vjob *jobs = NULL;
	unsigned l, workers = t->b->p.workers ? t->b->p.workers : 1, i;
	uint64_t k, most = 0;
	int err = 0;

	for (l = 0; l < g->levels; l++)
		if (g->count[l] > most)
			most = g->count[l];
	if (workers > 1 && most > 1)
		pool = ezi_pool_new(workers, 2 * workers, &err);
	t->nbufs = (pool ? ezi_pool_threads(pool) : 0) + 1;
	t->bufs = calloc(t->nbufs, sizeof(*t->bufs));
	jobs = calloc(most ? (size_t)most : 1, sizeof(*jobs));
	for (i = 0; t->bufs && i < t->nbufs; i++)
		if (!(t->bufs[i] = malloc((size_t)VBS << g->pbits)))
			break;
	err = !t->bufs || !jobs || i < t->nbufs ? -ENOMEM : 0;
	for (l = 0; !err && l < g->levels; l++) {
		for (k = 0; k < g->count[l]; k++) {
			jobs[k] = (struct vjob){ .t = t, .level = l, .k = k };
			if (!pool || ezi_pool_submit(pool, vjob_run, &jobs[k]))
				vjob_run(&jobs[k]);
		}
		if (pool)
			ezi_pool_wait(pool);
		err = __atomic_load_n(&t->err, __ATOMIC_RELAXED);
	}
	if (!err && g->levels)
		err = ezi_verity_hash(t->md, t->sb.salt, t->sb.salt_size,
				      t->tree + g->start[g->levels - 1] * VBS,
				      VBS, root);
	else if (!err) {
		/* one data block: its hash is the root */
		uint8_t *blk = t->bufs[t->nbufs - 1];

		err = pread(t->b->fd, blk, VBS, 0) == VBS ? 0 : -EIO;
		if (!err)
			err = ezi_verity_hash(t->md, t->sb.salt,
					      t->sb.salt_size, blk, VBS, root);
	}
	ezi_pool_destroy(pool);
	for (i = 0; t->bufs && i < t->nbufs; i++)
		free(t->bufs[i]);
	free(t->bufs);
	free(jobs);
	return err;
}

/* The superblock's block and the tree, as they are stored. */
static int put_tree(struct vtree *t,
		    int (*put)(void *arg, const void *buf, size_t len,
			       uint64_t off),
		    void *arg, uint64_t at)
{
	uint8_t blk[VBS];

	memset(blk, 0, sizeof(blk));
	ezi_verity_sb_encode(&t->sb, blk);
	return put(arg, blk, VBS, at)
		       ?: put(arg, t->tree, (size_t)(t->g.tree_blocks * VBS),
			      at + VBS);
}

static int put_image(void *arg, const void *buf, size_t len, uint64_t off)
{
	return ezi_bld_pwrite(arg, buf, len, off);
}

static int put_file(void *arg, const void *buf, size_t len, uint64_t off)
{
	FILE *f = arg;

	if (fseeko(f, (off_t)off, SEEK_SET) || fwrite(buf, 1, len, f) != len)
		return errno ? -errno : -EIO;
	return 0;
}

/* --verity-hash-file: a block device in place (if the tree fits), else a
 * temporary file beside it renamed over it once complete. */
static int put_hash_file(struct vtree *t, const char *path)
{
	struct ezfs_builder *b = t->b;
	uint64_t need = VBS + t->g.tree_blocks * VBS;
	struct stat st;
	char *tmp = NULL;
	FILE *f;
	int fd, err;

	if (!stat(path, &st) && S_ISBLK(st.st_mode)) {
		off_t size;

		fd = open(path, O_WRONLY | O_EXCL | O_CLOEXEC);
		if (fd < 0)
			goto fail;
		size = lseek(fd, 0, SEEK_END);
		if (size >= 0 && (uint64_t)size < need) {
			ezi_bld_log(b, EZFS_LOG_ERROR,
				    "%s: the dm-verity tree needs %llu bytes, "
				    "the device has %llu",
				    path, (unsigned long long)need,
				    (unsigned long long)size);
			close(fd);
			return -EFBIG;
		}
	} else {
		if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
			return -ENOMEM;
		fd = mkostemp(tmp, O_CLOEXEC);
		if (fd < 0) {
			free(tmp);
			tmp = NULL;
			goto fail;
		}
		(void)fchmod(fd, 0644);
	}
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
	} else {
		err = put_tree(t, put_file, f, 0);
		if (fflush(f) && !err)
			err = errno ? -errno : -EIO;
		if (!err && !(b->p.flags & EZFS_BUILD_NO_FSYNC) &&
		    fsync(fileno(f)))
			err = -errno;
		if (fclose(f) && !err)
			err = -errno;
	}
	if (!err && tmp && rename(tmp, path))
		err = -errno;
	if (err && tmp)
		unlink(tmp);
	free(tmp);
	if (!err)
		return 0;
	errno = -err;
fail:
	err = -errno;
	ezi_bld_log(b, EZFS_LOG_ERROR, "%s: %s", path, strerror(errno));
	return err;
}

/* Salt and UUID as asked, else random (a version 4 UUID). */
static int fill_sb(struct ezfs_builder *b, struct ezi_verity_sb *sb,
		   uint64_t data_blocks)
{
	memset(sb, 0, sizeof(*sb));
	strcpy(sb->algorithm, "sha256");
	sb->data_block_size = VBS;
	sb->hash_block_size = VBS;
	sb->data_blocks = data_blocks;
	if (b->p.verity_has_salt) {
		sb->salt_size = (uint16_t)b->p.verity_salt_size;
		memcpy(sb->salt, b->p.verity_salt, sb->salt_size);
	} else {
		sb->salt_size = 32;
		if (getrandom(sb->salt, 32, 0) != 32)
			return -errno;
	}
	if (b->p.verity_has_uuid) {
		memcpy(sb->uuid, b->p.verity_uuid, 16);
	} else {
		if (getrandom(sb->uuid, 16, 0) != 16)
			return -errno;
		sb->uuid[6] = (uint8_t)((sb->uuid[6] & 0x0f) | 0x40);
		sb->uuid[8] = (uint8_t)((sb->uuid[8] & 0x3f) | 0x80);
	}
	return 0;
}

int ezi_bld_verity(struct ezfs_builder *b)
{
	const char *file = b->p.verity_hash_file;
	uint64_t data = (b->st.image_bytes + VBS - 1) / VBS * VBS, need;
	struct vtree t = { .b = b };
	struct ezfs_verity_info *vi = &b->verity;
	uint8_t root[32];
	unsigned dsize = 0;
	int err;

	if (b->p.tar_index || b->p.blobdev || b->nrdevs) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "dm-verity: the file data would be outside the "
			    "tree (a tar index, a blob device or layers)");
		return -EINVAL;
	}
	if (b->p.verity_salt_size > sizeof(b->p.verity_salt))
		return -EINVAL;
	t.md = ezi_verity_md("sha256", &dsize);
	if (!t.md)
		return -EOPNOTSUPP;
	err = ezi_verity_geo_init(&t.g, VBS, VBS, dsize, data / VBS);
	if (!err)
		err = fill_sb(b, &t.sb, data / VBS);
	/* a device must hold the image and its tree: said before either
	 * is written further */
	need = data + VBS + t.g.tree_blocks * VBS;
	if (!err && b->device && !file && need > b->devsize) {
		ezi_bld_log(b, EZFS_LOG_ERROR,
			    "%s: the image and its dm-verity tree need %llu "
			    "bytes, the device has %llu",
			    b->out_path, (unsigned long long)need,
			    (unsigned long long)b->devsize);
		err = -EFBIG;
	}
	/* the data area: whole 4096-byte blocks, zeros after the image */
	if (!err && data > b->st.image_bytes)
		err = ezi_bld_set_size(b, data);
	if (!err) {
		t.tree = calloc(t.g.tree_blocks ? (size_t)t.g.tree_blocks : 1,
				VBS);
		err = t.tree ? hash_tree(&t, root) : -ENOMEM;
		if (err == -EIO)
			ezi_bld_log(b, EZFS_LOG_ERROR,
				    "%s: dm-verity: the image cannot be read "
				    "back",
				    b->out_path);
	}
	if (!err)
		err = file ? put_hash_file(&t, file)
			   : put_tree(&t, put_image, b, data);
	if (!err) {
		memset(vi, 0, sizeof(*vi));
		vi->hash_offset = file ? 0 : data;
		vi->separate = file != NULL;
		vi->data_blocks = t.g.data_blocks;
		vi->data_block_size = VBS;
		vi->hash_block_size = VBS;
		vi->tree_blocks = t.g.tree_blocks;
		vi->levels = t.g.levels;
		strcpy(vi->algorithm, "sha256");
		memcpy(vi->uuid, t.sb.uuid, 16);
		memcpy(vi->salt, t.sb.salt, t.sb.salt_size);
		vi->salt_size = t.sb.salt_size;
		memcpy(vi->root, root, 32);
		vi->root_size = 32;
		b->verity_done = true;
	}
	free(t.tree);
	ezi_verity_md_free(t.md);
	return err;
}

int ezfs_builder_verity(const ezfs_builder *b, struct ezfs_verity_info *vi)
{
	if (!b->verity_done)
		return -ENODATA;
	*vi = b->verity;
	return 0;
}
