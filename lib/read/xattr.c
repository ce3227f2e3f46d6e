/* SPDX-License-Identifier: MIT */
/* xattr.c - inline and shared xattrs, long name prefixes, the name filter. */
#include <stdlib.h>
#include <string.h>

#include "read/internal.h"

#define NID(ino) ((unsigned long long)(ino)->nid)

static const char *const short_prefix[] = {
	[EROFS_XATTR_INDEX_USER] = "user.",
	[EROFS_XATTR_INDEX_POSIX_ACL_ACCESS] = "system.posix_acl_access",
	[EROFS_XATTR_INDEX_POSIX_ACL_DEFAULT] = "system.posix_acl_default",
	[EROFS_XATTR_INDEX_TRUSTED] = "trusted.",
	[EROFS_XATTR_INDEX_SECURITY] = "security.",
};
#define NSHORT (sizeof(short_prefix) / sizeof(short_prefix[0]))

/* Where the long prefix table lives [8.5]. */
static int prefix_read(ezfs_image *img, uint64_t pos, void *buf, size_t len)
{
	const uint32_t compat = img->si.feature_compat;

	if (compat & EROFS_FEATURE_COMPAT_PLAIN_XATTR_PFX)
		return ezi_meta_read(img, false, pos, buf, len);
	if (img->metabox)
		return ezi_meta_read(img, true, pos, buf, len);
	if (img->packed) {
		ssize_t n = ezfs_pread(img->packed, buf, len, pos);

		if (n < 0)
			return (int)n;
		EZFS_CHECK(img, (size_t)n == len,
			   "long xattr prefix table beyond the packed inode");
		return 0;
	}
	return ezi_meta_read(img, false, pos, buf, len);
}

int ezi_xattr_prefixes_init(ezfs_image *img)
{
	unsigned n = img->si.xattr_prefix_count;
	uint64_t pos;

	if (!n)
		return 0;
	EZFS_CHECK(img,
		   img->si.feature_incompat &
			   EROFS_FEATURE_INCOMPAT_XATTR_PREFIXES,
		   "long xattr prefixes without the feature bit");
	img->prefixes = calloc(n, sizeof(*img->prefixes));
	if (!img->prefixes)
		return -ENOMEM;
	img->nprefixes = n;
	{
		uint8_t raw[sizeof(struct erofs_super_block)];
		int err = ezi_io_read(&img->io, raw, EROFS_SB_BASE_SIZE,
				      EROFS_SUPER_OFFSET);

		if (err)
			return err;
		pos = (uint64_t)get_le32(raw + 92) * 4;
	}
	for (unsigned i = 0; i < n; i++) {
		struct ezfs_long_prefix *p = &img->prefixes[i];
		uint8_t hdr[3];
		uint16_t len;
		int err;

		err = prefix_read(img, pos, hdr, 3);
		if (err)
			return err;
		len = get_le16(hdr);
		EZFS_CHECK(img, len >= 1 && len <= 256,
			   "long xattr prefix %u has bogus length %u", i, len);
		p->base_index = hdr[2];
		p->infix_len = len - 1;
		p->infix = malloc(len);
		if (!p->infix)
			return -ENOMEM;
		err = prefix_read(img, pos + 3, p->infix, p->infix_len);
		if (err)
			return err;
		p->infix[p->infix_len] = '\0';
		pos = (pos + 2 + len + 3) & ~3ull;
	}
	return 0;
}

void ezi_xattr_prefixes_fini(ezfs_image *img)
{
	for (unsigned i = 0; i < img->nprefixes; i++)
		free(img->prefixes[i].infix);
	free(img->prefixes);
	img->prefixes = NULL;
	img->nprefixes = 0;
}

/* Prefix of an entry: short prefix and infix; false if not listable. */
static bool entry_prefix(ezfs_image *img, uint8_t index, const char **pfx,
			 const char **infix, unsigned *infix_len)
{
	*infix = "";
	*infix_len = 0;
	if (index & EROFS_XATTR_LONG_PREFIX) {
		unsigned i = index & EROFS_XATTR_LONG_PREFIX_MASK;

		if (i >= img->nprefixes)
			return false;
		*infix = img->prefixes[i].infix;
		*infix_len = img->prefixes[i].infix_len;
		index = img->prefixes[i].base_index;
	}
	if (index >= NSHORT || !short_prefix[index])
		return false;
	*pfx = short_prefix[index];
	return true;
}

/* Called per entry with full name pieces and the value position. */
struct xiter {
	ezfs_inode *ino;
	int (*fn)(struct xiter *it, const char *pfx, const char *infix,
		  unsigned infix_len, const uint8_t *suffix, unsigned slen,
		  const uint8_t *value, unsigned vlen);
	/* listxattr */
	char *buf;
	size_t size, used;
	/* getxattr; raw >= 0: the entry of that index with no suffix */
	int raw;
	const char *name;
	size_t namelen;
	void *vbuf;
	size_t vsize;
	ssize_t result;
};

static int visit_entry(struct xiter *it, const uint8_t *e, unsigned avail,
		       unsigned *consumed)
{
	ezfs_image *img = it->ino->img;
	unsigned nlen = e[0], vlen = get_le16(e + 2), sz;
	const char *pfx, *infix;
	unsigned ilen;

	EZFS_CHECK(img, avail >= 4, "nid %llu: truncated xattr entry",
		   NID(it->ino));
	sz = erofs_xattr_entry_size(nlen, vlen);
	EZFS_CHECK(img, sz <= avail,
		   "nid %llu: xattr entry (%u bytes) overruns its area (%u)",
		   NID(it->ino), sz, avail);
	*consumed = sz;
	if (it->raw >= 0)
		return e[1] == it->raw && !nlen
			       ? it->fn(it, "", "", 0, e + 4, 0, e + 4, vlen)
			       : 0;
	if (!entry_prefix(img, e[1], &pfx, &infix, &ilen))
		return 0;
	return it->fn(it, pfx, infix, ilen, e + 4, nlen, e + 4 + nlen, vlen);
}

static int read_shared(ezfs_inode *ino, uint32_t id, uint8_t **out,
		       unsigned *len)
{
	ezfs_image *img = ino->img;
	bool mb = img->si.feature_compat &
		  EROFS_FEATURE_COMPAT_SHARED_EA_IN_METABOX;
	uint64_t pos = (mb ? 0 : img->xattr_base) + (uint64_t)id * 4;
	uint8_t hdr[4];
	unsigned sz;
	int err;

	err = ezi_meta_read(img, mb, pos, hdr, 4);
	if (err)
		return err;
	sz = erofs_xattr_entry_size(hdr[0], get_le16(hdr + 2));
	*out = malloc(sz);
	if (!*out)
		return -ENOMEM;
	err = ezi_meta_read(img, mb, pos, *out, 4 + hdr[0] + get_le16(hdr + 2));
	if (err) {
		free(*out);
		return err;
	}
	*len = sz;
	return 0;
}

/* Inline entries first, then shared ones (kernel order). */
static int xattr_walk(struct xiter *it)
{
	ezfs_inode *ino = it->ino;
	ezfs_image *img = ino->img;
	uint8_t *body;
	unsigned nshared, p, isz = ino->xattr_isize;
	int err = 0;

	if (!isz)
		return 0;
	EZFS_CHECK(img, isz > sizeof(struct erofs_xattr_ibody_header),
		   "nid %llu: bogus xattr ibody size %u", NID(ino), isz);
	body = malloc(isz);
	if (!body)
		return -ENOMEM;
	err = ezi_meta_read(img, ino->in_metabox, ino->ipos + ino->core_size,
			    body, isz);
	if (err)
		goto out;
	nshared = body[4];
	p = 12 + 4 * nshared;
	if (p > isz) {
		ezfs_err(img,
			 "nid %llu: %u shared xattrs overrun the xattr "
			 "area",
			 NID(ino), nshared);
		err = -EUCLEAN;
		goto out;
	}
	while (p < isz) {
		unsigned used;

		err = visit_entry(it, body + p, isz - p, &used);
		if (err)
			goto out;
		p += used;
	}
	for (unsigned i = 0; i < nshared; i++) {
		uint8_t *e;
		unsigned len, used;

		err = read_shared(ino, get_le32(body + 12 + 4 * i), &e, &len);
		if (err)
			goto out;
		err = visit_entry(it, e, len, &used);
		free(e);
		if (err)
			goto out;
	}
out:
	free(body);
	return err;
}

static int list_fn(struct xiter *it, const char *pfx, const char *infix,
		   unsigned infix_len, const uint8_t *suffix, unsigned slen,
		   const uint8_t *value, unsigned vlen)
{
	size_t plen = strlen(pfx), n = plen + infix_len + slen + 1;

	if (it->size) {
		if (it->used + n > it->size)
			return -ERANGE;
		memcpy(it->buf + it->used, pfx, plen);
		memcpy(it->buf + it->used + plen, infix, infix_len);
		memcpy(it->buf + it->used + plen + infix_len, suffix, slen);
		it->buf[it->used + n - 1] = '\0';
	}
	it->used += n;
	return 0;
}

ssize_t ezfs_listxattr(ezfs_inode *ino, char *buf, size_t size)
{
	struct xiter it = {
		.ino = ino, .fn = list_fn, .buf = buf, .size = size, .raw = -1
	};
	int err = xattr_walk(&it);

	return err ? err : (ssize_t)it.used;
}

static int get_fn(struct xiter *it, const char *pfx, const char *infix,
		  unsigned infix_len, const uint8_t *suffix, unsigned slen,
		  const uint8_t *value, unsigned vlen)
{
	size_t plen = strlen(pfx);

	if (plen + infix_len + slen != it->namelen ||
	    memcmp(it->name, pfx, plen) ||
	    memcmp(it->name + plen, infix, infix_len) ||
	    memcmp(it->name + plen + infix_len, suffix, slen))
		return 0;
	if (it->vsize) {
		if (vlen > it->vsize) {
			it->result = -ERANGE;
			return 1;
		}
		memcpy(it->vbuf, value, vlen);
	}
	it->result = vlen;
	return 1; /* found: stop */
}

/* [8.6] true if the filter proves the name is absent. */
static bool filtered_out(ezfs_image *img, uint32_t filter, const char *name,
			 size_t len)
{
	for (unsigned i = 1; i < NSHORT; i++) {
		size_t plen;

		if (!short_prefix[i])
			continue;
		plen = strlen(short_prefix[i]);
		if (len >= plen && !memcmp(name, short_prefix[i], plen)) {
			uint32_t bit = ezi_xxh32(name + plen, len - plen,
						 EROFS_XATTR_FILTER_SEED + i) &
				       (EROFS_XATTR_FILTER_BITS - 1);
			return filter & (1u << bit);
		}
	}
	return false;
}

ssize_t ezfs_getxattr(ezfs_inode *ino, const char *name, void *buf, size_t size)
{
	struct xiter it = { .ino = ino,
			    .fn = get_fn,
			    .name = name,
			    .namelen = strlen(name),
			    .vbuf = buf,
			    .vsize = size,
			    .raw = -1,
			    .result = -ENODATA };
	uint8_t hdr[4];
	int err;

	if (!ino->xattr_isize)
		return -ENODATA;
	if (ino->img->filter_ok && ino->xattr_isize > 12) {
		err = ezi_meta_read(ino->img, ino->in_metabox,
				    ino->ipos + ino->core_size, hdr, 4);
		if (err)
			return err;
		if (filtered_out(ino->img, get_le32(hdr), name, it.namelen))
			return -ENODATA;
	}
	err = xattr_walk(&it);
	if (err < 0)
		return err;
	return it.result;
}

ssize_t ezfs_inode_digest(ezfs_inode *ino, void *buf, size_t size)
{
	struct xiter it = { .ino = ino,
			    .fn = get_fn,
			    .raw = ino->img->ishare_index,
			    .name = "",
			    .namelen = 0,
			    .vbuf = buf,
			    .vsize = size,
			    .result = -ENODATA };
	int err;

	if (it.raw < 0)
		return -EOPNOTSUPP;
	if (!ino->xattr_isize)
		return -ENODATA;
	err = xattr_walk(&it);
	return err < 0 ? err : it.result;
}
