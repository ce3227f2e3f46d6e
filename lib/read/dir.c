/* SPDX-License-Identifier: MIT */
/* dir.c - directory blocks: readdir, binary-search lookup, path resolve. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "read/internal.h"

#define NID(ino) ((unsigned long long)(ino)->nid)

struct dblock {
	uint8_t *buf;
	unsigned len; /* valid bytes of this directory block */
	unsigned n;   /* entries */
};

/* Read directory block idx and validate its header. */
static int dblock_read(ezfs_inode *dir, uint64_t idx, struct dblock *b)
{
	ezfs_image *img = dir->img;
	uint64_t pos = idx << img->blkbits;
	unsigned nameoff;
	ssize_t n;

	b->len = (unsigned)(dir->size - pos < img->blksz ? dir->size - pos
							 : img->blksz);
	n = ezfs_pread(dir, b->buf, b->len, pos);
	if (n < 0)
		return (int)n;
	EZFS_CHECK(img, (unsigned)n == b->len,
		   "nid %llu: short directory block %llu", NID(dir),
		   (unsigned long long)idx);
	EZFS_CHECK(img, b->len >= sizeof(struct erofs_dirent),
		   "nid %llu: directory block %llu too short (%u bytes)",
		   NID(dir), (unsigned long long)idx, b->len);
	nameoff = get_le16(b->buf + 8);
	EZFS_CHECK(img,
		   nameoff >= sizeof(struct erofs_dirent) && nameoff < b->len &&
			   nameoff % sizeof(struct erofs_dirent) == 0,
		   "nid %llu: bogus nameoff %u in directory block %llu",
		   NID(dir), nameoff, (unsigned long long)idx);
	b->n = nameoff / sizeof(struct erofs_dirent);
	return 0;
}

/* Name i of a validated block; returns -EUCLEAN on bad offsets. */
static int dblock_name(ezfs_inode *dir, const struct dblock *b, unsigned i,
		       const char **name, unsigned *len)
{
	const uint8_t *de = b->buf + i * sizeof(struct erofs_dirent);
	unsigned off = get_le16(de + 8), end;

	if (i + 1 < b->n) {
		end = get_le16(de + sizeof(struct erofs_dirent) + 8);
	} else {
		end = off;
		while (end < b->len && b->buf[end])
			end++;
	}
	EZFS_CHECK(dir->img,
		   off >= b->n * sizeof(struct erofs_dirent) && end > off &&
			   end <= b->len && end - off <= EROFS_NAME_LEN,
		   "nid %llu: bogus directory entry name (offset %u, end %u)",
		   NID(dir), off, end);
	*name = (const char *)b->buf + off;
	*len = end - off;
	return 0;
}

static int check_dir(ezfs_inode *dir)
{
	if (!S_ISDIR(dir->mode))
		return -ENOTDIR;
	return 0;
}

int ezfs_readdir(ezfs_inode *dir, uint64_t pos, ezfs_dirent_fn fn, void *arg)
{
	ezfs_image *img = dir->img;
	struct dblock b;
	int err = check_dir(dir);

	if (err)
		return err;
	ezi_hint_dir(dir);
	if (dir->dot_omitted) {
		/* position 1 = just after the synthesised "." */
		if (pos == 0) {
			err = fn(arg, ".", 1, dir->nid, EZFS_FT_DIR, 1);
			if (err)
				return err;
		}
		if (pos <= 1)
			pos = 0;
	}
	b.buf = malloc(img->blksz);
	if (!b.buf)
		return -ENOMEM;
	while (pos < dir->size) {
		uint64_t idx = pos >> img->blkbits;
		unsigned first = (unsigned)((pos & (img->blksz - 1)) /
					    sizeof(struct erofs_dirent));

		err = dblock_read(dir, idx, &b);
		if (err)
			break;
		for (unsigned i = first; i < b.n; i++) {
			const uint8_t *de =
				b.buf + i * sizeof(struct erofs_dirent);
			const char *name;
			unsigned len, ft = de[10];
			uint64_t next;

			err = dblock_name(dir, &b, i, &name, &len);
			if (err)
				goto out;
			if (ft >= EROFS_FT_MAX) {
				ezfs_err(img,
					 "nid %llu: bogus file type %u in "
					 "directory entry",
					 NID(dir), ft);
				err = -EUCLEAN;
				goto out;
			}
			if (dir->dot_omitted && len == 1 && name[0] == '.') {
				ezfs_err(img,
					 "nid %llu: \".\" stored in a "
					 "dot-omitted directory",
					 NID(dir));
				err = -EUCLEAN;
				goto out;
			}
			next = i + 1 < b.n
				       ? (idx << img->blkbits) +
						 (i + 1) * sizeof(struct
								  erofs_dirent)
				       : (idx + 1) << img->blkbits;
			err = fn(arg, name, len, get_le64(de), ft, next);
			if (err)
				goto out;
		}
		pos = (idx + 1) << img->blkbits;
	}
out:
	free(b.buf);
	return err;
}

struct dirent_list {
	struct ezfs_dirent *v;
	size_t n, cap;
	uint64_t pos; /* where the next entry starts */
};

static int collect_cb(void *arg, const char *name, size_t namelen, uint64_t nid,
		      unsigned ftype, uint64_t next_pos)
{
	struct dirent_list *l = arg;
	struct ezfs_dirent *e;

	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 64;
		struct ezfs_dirent *nv = realloc(l->v, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		l->v = nv;
		l->cap = ncap;
	}
	e = &l->v[l->n];
	e->name = malloc(namelen + 1);
	if (!e->name)
		return -ENOMEM;
	memcpy(e->name, name, namelen);
	e->name[namelen] = '\0';
	e->namelen = namelen;
	e->nid = nid;
	e->ftype = ftype;
	l->n++;
	l->pos = next_pos;
	return 0;
}

int ezfs_readdir_all(ezfs_inode *dir, struct ezfs_dirent **out, size_t *n)
{
	struct dirent_list l = { NULL, 0, 0, 0 };
	int ret = ezfs_readdir(dir, 0, collect_cb, &l);

	*out = l.v;
	*n = l.n;
	return ret;
}

int ezfs_readdir_salvage(ezfs_inode *dir, struct ezfs_dirent **out, size_t *n)
{
	struct dirent_list l = { NULL, 0, 0, 0 };
	uint64_t bs = dir->img->blksz;
	int err, first = 0;

	for (;;) {
		err = ezfs_readdir(dir, l.pos, collect_cb, &l);
		if (!err || err == -ENOMEM || err == -ENOTDIR)
			break;
		if (!first)
			first = err;
		/* the block holding the position after the last good entry
		 * is the damaged one: go on after it */
		l.pos = (l.pos / bs + 1) * bs;
		if (l.pos >= dir->size) {
			err = 0;
			break;
		}
	}
	*out = l.v;
	*n = l.n;
	return err ? err : first;
}

void ezfs_dirents_free(struct ezfs_dirent *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

static int name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	int c = memcmp(a, b, n);

	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

static int dirent_result(ezfs_inode *dir, const uint8_t *de, uint64_t *nid,
			 unsigned *ftype)
{
	EZFS_CHECK(dir->img, de[10] < EROFS_FT_MAX,
		   "nid %llu: bogus file type %u in directory entry", NID(dir),
		   de[10]);
	*nid = get_le64(de);
	if (ftype)
		*ftype = de[10];
	return 0;
}

/* [7.3] binary search over blocks (by first name), then inside one. */
int ezfs_lookup(ezfs_inode *dir, const char *name, size_t namelen,
		uint64_t *nid, unsigned *ftype)
{
	ezfs_image *img = dir->img;
	uint64_t nblocks = (dir->size + img->blksz - 1) >> img->blkbits;
	int64_t lo = 0, hi = (int64_t)nblocks - 1, cand = -1;
	struct dblock b;
	const char *dn;
	unsigned dlen;
	int err = check_dir(dir);

	if (err)
		return err;
	if (!namelen || namelen > EROFS_NAME_LEN)
		return namelen ? -ENAMETOOLONG : -ENOENT;
	if (dir->dot_omitted && namelen == 1 && name[0] == '.') {
		*nid = dir->nid;
		if (ftype)
			*ftype = EZFS_FT_DIR;
		return 0;
	}
	ezi_hint_dir(dir);
	b.buf = malloc(img->blksz);
	if (!b.buf)
		return -ENOMEM;
	while (lo <= hi) {
		int64_t mid = lo + (hi - lo) / 2;
		int c;

		err = dblock_read(dir, (uint64_t)mid, &b);
		if (!err)
			err = dblock_name(dir, &b, 0, &dn, &dlen);
		if (err)
			goto out;
		c = name_cmp(name, namelen, dn, dlen);
		if (c == 0) {
			cand = mid;
			goto found0;
		}
		if (c < 0) {
			hi = mid - 1;
		} else {
			cand = mid;
			lo = mid + 1;
		}
	}
	err = -ENOENT;
	if (cand < 0)
		goto out;
	err = dblock_read(dir, (uint64_t)cand, &b);
	if (err)
		goto out;
	{
		int64_t l = 1, h = (int64_t)b.n - 1;

		err = -ENOENT;
		while (l <= h) {
			int64_t mid = l + (h - l) / 2;
			int c, e2 = dblock_name(dir, &b, (unsigned)mid, &dn,
						&dlen);

			if (e2) {
				err = e2;
				goto out;
			}
			c = name_cmp(name, namelen, dn, dlen);
			if (!c) {
				err = dirent_result(dir, b.buf + mid * 12, nid,
						    ftype);
				goto out;
			}
			if (c < 0)
				h = mid - 1;
			else
				l = mid + 1;
		}
		goto out;
	}
found0:
	err = dirent_result(dir, b.buf, nid, ftype);
out:
	free(b.buf);
	return err;
}

int ezfs_resolve(ezfs_image *img, const char *path, uint64_t *nid)
{
	uint64_t cur = img->si.root_nid;
	size_t len = strlen(path);
	/* "file/" names a directory: ENOTDIR for anything else, as the
	 * kernel says (a symbolic link is left to the caller to follow) */
	int want_dir = len && path[len - 1] == '/';

	while (*path) {
		const char *end;
		ezfs_inode *dir;
		int err;

		while (*path == '/')
			path++;
		if (!*path)
			break;
		end = strchr(path, '/');
		if (!end)
			end = path + strlen(path);
		if (end - path == 1 && path[0] == '.') {
			path = end;
			continue;
		}
		err = ezfs_inode_get(img, cur, &dir);
		if (err)
			return err;
		err = ezfs_lookup(dir, path, (size_t)(end - path), &cur, NULL);
		ezfs_inode_put(dir);
		if (err)
			return err;
		path = end;
	}
	if (want_dir && cur != img->si.root_nid) {
		ezfs_inode *ino;
		int err = ezfs_inode_get(img, cur, &ino);
		uint32_t mode;

		if (err)
			return err;
		mode = ino->mode & S_IFMT;
		ezfs_inode_put(ino);
		if (mode != S_IFDIR && mode != S_IFLNK)
			return -ENOTDIR;
	}
	*nid = cur;
	return 0;
}
