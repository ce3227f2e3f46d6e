/* SPDX-License-Identifier: MIT */
/* xattr.c - read xattrs, pick shared ones, encode inode xattr bodies. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "write/internal.h"
#include "format/erofs_fs.h"
#include "util/sha256.h"

static const struct {
	const char *prefix;
	uint8_t index;
	bool exact;
} prefixes[] = {
	{ "user.", EROFS_XATTR_INDEX_USER, false },
	{ "system.posix_acl_access", EROFS_XATTR_INDEX_POSIX_ACL_ACCESS, true },
	{ "system.posix_acl_default", EROFS_XATTR_INDEX_POSIX_ACL_DEFAULT,
	  true },
	{ "trusted.", EROFS_XATTR_INDEX_TRUSTED, false },
	{ "security.", EROFS_XATTR_INDEX_SECURITY, false },
};

/* Sets index and suffix offset; false if the name cannot be stored. */
static bool classify(const char *name, uint8_t *index, size_t *skip)
{
	size_t i;

	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t n = strlen(prefixes[i].prefix);

		if (prefixes[i].exact ? !strcmp(name, prefixes[i].prefix)
				      : !strncmp(name, prefixes[i].prefix, n)) {
			*index = prefixes[i].index;
			*skip = n;
			return true;
		}
	}
	return false;
}

static int cmp_xattr(const struct bxattr *a, const struct bxattr *b)
{
	int c = strcmp(a->name, b->name);
	size_t n = a->vlen < b->vlen ? a->vlen : b->vlen;

	if (c)
		return c;
	c = n ? memcmp(a->value, b->value, n) : 0;
	if (c)
		return c;
	return (int)a->vlen - (int)b->vlen;
}

static int cmp_xattr_q(const void *a, const void *b)
{
	return cmp_xattr(a, b);
}

static int cmp_xattr_pq(const void *a, const void *b)
{
	return cmp_xattr(*(struct bxattr *const *)a,
			 *(struct bxattr *const *)b);
}

int ezi_bld_xattr_add(struct ezfs_builder *b, struct binode *in,
		      const char *name, const void *value, size_t vlen)
{
	struct bxattr *x, *nx;
	uint8_t index;
	size_t skip;

	if (!classify(name, &index, &skip)) {
		ezi_bld_log(
			b, EZFS_LOG_WARN,
			"%s: xattr %s: prefix not storable in EROFS, skipped",
			in->srcpath, name);
		return 0;
	}
	if (vlen > 0xFFFF || strlen(name) - skip > 255) {
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: xattr %s too large",
			    in->srcpath, name);
		return -E2BIG;
	}
	nx = realloc(in->xattrs, (in->nxattrs + 1) * sizeof(*nx));
	if (!nx)
		return -ENOMEM;
	in->xattrs = nx;
	x = &nx[in->nxattrs];
	memset(x, 0, sizeof(*x));
	x->name = strdup(name);
	x->value = malloc(vlen + 1);
	if (!x->name || !x->value) {
		free(x->name);
		free(x->value);
		return -ENOMEM;
	}
	if (vlen)
		memcpy(x->value, value, vlen);
	in->nxattrs++;
	x->vlen = (uint16_t)vlen;
	x->index = index;
	x->suffix = x->name + skip;
	x->suffix_len = (uint8_t)(strlen(name) - skip);
	x->shared_id = -1;
	x->hname = x->suffix;
	x->hlen = x->suffix_len;
	x->hindex = index;
	b->st.xattrs++;
	return 0;
}

void ezi_bld_xattrs_sort(struct binode *in)
{
	if (in->nxattrs)
		qsort(in->xattrs, in->nxattrs, sizeof(*in->xattrs),
		      cmp_xattr_q);
}

int ezi_bld_xattrs_read(struct ezfs_builder *b, struct binode *in)
{
	ssize_t len, vlen;
	char *list = NULL, *name, *val = NULL;
	int err = 0;

	len = llistxattr(in->srcpath, NULL, 0);
	if (len < 0) {
		if (errno == ENOTSUP || errno == ENOSYS)
			return 0;
		err = -errno;
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: listxattr: %s", in->srcpath,
			    strerror(errno));
		return err;
	}
	if (!len)
		return 0;
	list = malloc((size_t)len);
	val = malloc(0x10000);
	if (!list || !val) {
		err = -ENOMEM;
		goto out;
	}
	len = llistxattr(in->srcpath, list, (size_t)len);
	if (len < 0) {
		err = -errno;
		ezi_bld_log(b, EZFS_LOG_ERROR, "%s: listxattr: %s", in->srcpath,
			    strerror(errno));
		goto out;
	}
	for (name = list; name < list + len && !err; name += strlen(name) + 1) {
		vlen = lgetxattr(in->srcpath, name, val, 0x10000);
		if (vlen < 0 && errno == ERANGE) {
			vlen = 0x10000; /* too large: ezi_bld_xattr_add says so
					 */
		} else if (vlen < 0) {
			err = -errno;
			ezi_bld_log(b, EZFS_LOG_ERROR, "%s: getxattr %s: %s",
				    in->srcpath, name, strerror(errno));
			break;
		}
		err = ezi_bld_xattr_add(b, in, name, val, (size_t)vlen);
	}
	ezi_bld_xattrs_sort(in);
out:
	free(list);
	free(val);
	return err;
}

static uint32_t entry_size(const struct bxattr *x)
{
	return erofs_xattr_entry_size(x->suffix_len, x->vlen);
}

static void encode_entry(const struct bxattr *x, uint8_t *out)
{
	out[0] = x->suffix_len;
	out[1] = x->index;
	put_le16(out + 2, x->vlen);
	memcpy(out + 4, x->suffix, x->suffix_len);
	memcpy(out + 4 + x->suffix_len, x->value, x->vlen);
	memset(out + 4 + x->suffix_len + x->vlen, 0,
	       entry_size(x) - 4 - x->suffix_len - x->vlen);
}

/*
 * Decide which (name, value) pairs are shared (used by more than
 * xattr_tolerance inodes), encode the shared area (at b->shared_start),
 * then size every inode's xattr body and name filter.
 */
int ezi_bld_xattrs_share(struct ezfs_builder *b)
{
	struct bxattr **all = NULL;
	size_t n = 0, i, j, k;
	uint32_t off = 0;
	int err = 0;

	for (i = 0; i < b->ninodes; i++)
		n += b->inodes[i]->nxattrs;
	if (n) {
		all = malloc(n * sizeof(*all));
		if (!all)
			return -ENOMEM;
	}
	n = 0;
	for (i = 0; i < b->ninodes; i++)
		for (k = 0; k < b->inodes[i]->nxattrs; k++)
			all[n++] = &b->inodes[i]->xattrs[k];
	if (n)
		qsort(all, n, sizeof(*all), cmp_xattr_pq);

	/* pass 1: size, pass 2: encode */
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && !cmp_xattr(all[i], all[j]); j++)
			;
		if (j - i > (size_t)b->p.xattr_tolerance)
			off += entry_size(all[i]);
	}
	if (off) {
		b->shared = calloc(1, off);
		if (!b->shared) {
			err = -ENOMEM;
			goto out;
		}
	}
	b->shared_len = off;
	off = 0;
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && !cmp_xattr(all[i], all[j]); j++)
			;
		if (j - i <= (size_t)b->p.xattr_tolerance)
			continue;
		encode_entry(all[i], b->shared + off);
		for (k = i; k < j; k++)
			all[k]->shared_id =
				(int32_t)((b->shared_start + off) / 4);
		off += entry_size(all[i]);
		b->nshared++;
	}
	b->st.shared_xattrs = b->nshared;
	/* the long prefix table after the shared xattrs */
	if (b->p.inode_digest_xattr) {
		uint32_t plen;
		uint8_t *t = ezi_bld_prefix_table(b, &plen), *ns;

		ns = t ? realloc(b->shared, off + plen) : NULL;
		if (!ns) {
			free(t);
			err = -ENOMEM;
			goto out;
		}
		memcpy(ns + off, t, plen);
		free(t);
		b->shared = ns;
		b->pfx_start = b->shared_start + off;
		b->pfx_len = plen;
		b->shared_len = off + plen;
	}

	for (i = 0; i < b->ninodes; i++) {
		struct binode *in = b->inodes[i];
		uint32_t isize = 12, filter = 0;

		if (!in->nxattrs)
			continue;
		in->nshared = 0;
		for (k = 0; k < in->nxattrs; k++) {
			struct bxattr *x = &in->xattrs[k];

			if (x->shared_id >= 0 && in->nshared == 255)
				x->shared_id = -1; /* at most 255 ids */
			if (x->shared_id >= 0) {
				in->nshared++;
				isize += 4;
			} else {
				isize += entry_size(x);
			}
			filter |= 1u << (ezi_xxh32(x->hname, x->hlen,
						   EROFS_XATTR_FILTER_SEED +
							   x->hindex) &
					 (EROFS_XATTR_FILTER_BITS - 1));
		}
		if (isize > 12 + 4u * 0xFFFE) {
			ezi_bld_log(b, EZFS_LOG_ERROR, "%s: xattrs too large",
				    in->srcpath);
			err = -E2BIG;
			goto out;
		}
		in->xattr_isize = isize;
		in->xattr_filter = EROFS_XATTR_FILTER_DEFAULT & ~filter;
	}
	/* --root-xattr-isize: room kept in the root's body, zeros (a body
	 * without xattrs gets its header, no names: filter all ones) */
	if (b->ninodes &&
	    b->inodes[0]->xattr_isize < ((b->p.root_xattr_isize + 3) & ~3u)) {
		if (!b->inodes[0]->nxattrs)
			b->inodes[0]->xattr_filter = EROFS_XATTR_FILTER_DEFAULT;
		b->inodes[0]->xattr_isize = (b->p.root_xattr_isize + 3) & ~3u;
	}
out:
	free(all);
	return err;
}

void ezi_bld_xattrs_encode(const struct binode *in, uint8_t *out)
{
	uint8_t *p = out + 12;
	unsigned k;

	memset(out, 0, in->xattr_isize); /* and the root's room */
	put_le32(out, in->xattr_filter);
	out[4] = (uint8_t)in->nshared;
	for (k = 0; k < in->nxattrs; k++) {
		if (in->xattrs[k].shared_id < 0)
			continue;
		put_le32(p, (uint32_t)in->xattrs[k].shared_id);
		p += 4;
	}
	for (k = 0; k < in->nxattrs; k++) {
		if (in->xattrs[k].shared_id >= 0)
			continue;
		encode_entry(&in->xattrs[k], p);
		p += entry_size(&in->xattrs[k]);
	}
}

/*
 * The digest name's long prefix (8.5): the short prefix it starts with
 * (base index and length; 0 and 0: none, a name listxattr hides), as
 * 1.9.3 matches prefixes (by their bytes, the ACL names too).
 */
static void digest_base(const char *name, uint8_t *base, size_t *skip)
{
	size_t i;

	*base = 0;
	*skip = 0;
	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(name, prefixes[i].prefix,
			     strlen(prefixes[i].prefix))) {
			*base = prefixes[i].index;
			*skip = strlen(prefixes[i].prefix);
			return;
		}
}

uint8_t *ezi_bld_prefix_table(const struct ezfs_builder *b, uint32_t *len)
{
	const char *name = b->p.inode_digest_xattr;
	size_t skip, n;
	uint8_t base, *t;

	digest_base(name, &base, &skip);
	n = strlen(name) - skip;
	*len = (uint32_t)((2 + 1 + n + 3) & ~3u);
	t = calloc(1, *len);
	if (!t)
		return NULL;
	put_le16(t, (uint16_t)(1 + n));
	t[2] = base;
	memcpy(t + 3, name + skip, n);
	return t;
}

/* The SHA-256 of in's contents into out; 0 or -errno (logged). */
static int digest_file(struct ezfs_builder *b, struct binode *in, uint8_t *buf,
		       size_t bufsz, uint8_t out[32])
{
	struct ezi_sha256 c;
	struct bsrc s;
	uint64_t off = 0;
	int err = ezi_bld_src_open(b, in, &s);

	if (err)
		return err;
	ezi_sha256_init(&c);
	while (off < in->size) {
		size_t want = in->size - off < bufsz ? (size_t)(in->size - off)
						     : bufsz;
		ssize_t n = ezi_bld_src_pread(&s, buf, want, off);

		if (n <= 0) {
			err = n < 0 ? (int)n : -EIO;
			ezi_bld_log(b, EZFS_LOG_ERROR, "%s: read: %s",
				    in->srcpath, strerror(-err));
			break;
		}
		ezi_sha256_update(&c, buf, (size_t)n);
		off += (uint64_t)n;
	}
	if (!err)
		err = ezi_bld_src_check(b, in, &s);
	ezi_bld_src_close(&s);
	ezi_sha256_final(&c, out);
	return err;
}

int ezi_bld_digests(struct ezfs_builder *b)
{
	const char *name = b->p.inode_digest_xattr;
	uint8_t *buf, val[39], base;
	size_t i, skip, bufsz = 1u << 20;
	int err = 0;

	if (!name)
		return 0;
	digest_base(name, &base, &skip);
	buf = malloc(bufsz);
	if (!buf)
		return -ENOMEM;
	memcpy(val, "sha256:", 7);
	for (i = 0; i < b->ninodes && !err; i++) {
		struct binode *in = b->inodes[i];
		struct bxattr *x, *nx;

		if (!S_ISREG(in->mode) || !in->size)
			continue;
		err = digest_file(b, in, buf, bufsz, val + 7);
		if (err)
			break;
		nx = realloc(in->xattrs, (in->nxattrs + 1) * sizeof(*nx));
		if (!nx) {
			err = -ENOMEM;
			break;
		}
		in->xattrs = nx;
		x = &nx[in->nxattrs];
		memset(x, 0, sizeof(*x));
		x->name = strdup(name);
		x->value = malloc(sizeof(val));
		if (!x->name || !x->value) {
			free(x->name);
			free(x->value);
			err = -ENOMEM;
			break;
		}
		memcpy(x->value, val, sizeof(val));
		in->nxattrs++;
		x->vlen = sizeof(val);
		x->index = EROFS_XATTR_LONG_PREFIX; /* long prefix 0 */
		x->suffix = x->name + strlen(name);
		x->suffix_len = 0;
		x->shared_id = -1;
		x->hname = x->name + skip;
		x->hlen = (uint8_t)(strlen(name) - skip);
		x->hindex = base;
		b->st.xattrs++;
		ezi_bld_xattrs_sort(in);
		if ((i & 255) == 0)
			ezi_bld_progress(b, EZFS_BUILD_SCAN, i, b->ninodes, 0,
					 0);
	}
	free(buf);
	return err;
}
