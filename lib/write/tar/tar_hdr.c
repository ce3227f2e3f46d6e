/* SPDX-License-Identifier: MIT */
/*
 * tar_hdr.c - tar header blocks (ustar and GNU: checksum, octal and
 * base-256 numbers, long names, the sparse map of a GNU 'S' member) and PAX
 * extended header records (path, linkpath, size, uid, gid, mtime,
 * SCHILY.xattr.*, LIBARCHIVE.xattr.*, GNU.sparse.*).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "write/tar/tar.h"

/* ustar header fields: offset, length */
#define F_NAME	   0, 100
#define F_MODE	   100, 8
#define F_UID	   108, 8
#define F_GID	   116, 8
#define F_SIZE	   124, 12
#define F_MTIME	   136, 12
#define F_LINK	   157, 100
#define F_MAJOR	   329, 8
#define F_MINOR	   337, 8
#define F_PREFIX   345, 155
#define OFF_CHKSUM 148
#define OFF_TYPE   156
#define OFF_MAGIC  257
/* GNU 'S' (old GNU layout): 4 runs of (offset, numbytes), 12 bytes each,
 * then the flag of extension blocks and the file's real size */
#define OFF_SPARSE   386
#define OFF_EXTENDED 482
#define F_REALSIZE   483, 12

int ezi_thdr_check(const uint8_t blk[512])
{
	uint64_t sum = 0;
	int64_t ssum = 0, want;
	size_t i;

	for (i = 0; i < 512; i++)
		if (blk[i])
			break;
	if (i == 512)
		return 1;
	for (i = 0; i < 512; i++) {
		uint8_t c =
			i >= OFF_CHKSUM && i < OFF_CHKSUM + 8 ? ' ' : blk[i];

		sum += c;
		ssum += (int8_t)c;
	}
	if (ezi_thdr_num(blk + OFF_CHKSUM, 8, &want))
		return -EUCLEAN;
	return (uint64_t)want == sum || want == ssum ? 0 : -EUCLEAN;
}

int ezi_thdr_num(const uint8_t *f, size_t n, int64_t *v)
{
	uint64_t u = 0;
	size_t i = 0;

	if (f[0] & 0x80) {
		/* base-256, big endian two's complement after the marker */
		bool neg = f[0] & 0x40;

		u = neg ? ~(uint64_t)0 : 0;
		u = (u << 6) | (f[0] & 0x3f);
		for (i = 1; i < n; i++) {
			if ((neg ? ~u : u) >> 55)
				return -ERANGE;
			u = (u << 8) | f[i];
		}
		if (!neg && u > INT64_MAX)
			return -ERANGE;
		*v = (int64_t)u;
		return 0;
	}
	while (i < n && f[i] == ' ')
		i++;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
		if (u >> 60)
			return -ERANGE;
		u = (u << 3) | (uint64_t)(f[i] - '0');
	}
	if (i < n && f[i] != ' ' && f[i] != '\0')
		return -EUCLEAN;
	*v = (int64_t)u;
	return 0;
}

/* ---- PAX records ---- */

static int add_xattr(struct txattr **x, size_t *nx, char *name, uint8_t *value,
		     size_t len)
{
	struct txattr *n;
	size_t i;

	for (i = 0; i < *nx; i++) {
		if (strcmp((*x)[i].name, name))
			continue;
		free((*x)[i].name);
		free((*x)[i].value);
		(*x)[i] = (struct txattr){ name, value, len };
		return 0;
	}
	n = realloc(*x, (*nx + 1) * sizeof(*n));
	if (!n) {
		free(name);
		free(value);
		return -ENOMEM;
	}
	*x = n;
	n[(*nx)++] = (struct txattr){ name, value, len };
	return 0;
}

static int b64(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* base64 (padding optional) into a new buffer; NULL if invalid */
static uint8_t *unbase64(const char *s, size_t n, size_t *out)
{
	uint8_t *d = malloc(n / 4 * 3 + 3);
	uint32_t acc = 0;
	size_t i, o = 0, bits = 0;

	if (!d)
		return NULL;
	for (i = 0; i < n && s[i] != '='; i++) {
		int v = b64((unsigned char)s[i]);

		if (v < 0) {
			free(d);
			return NULL;
		}
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			d[o++] = (uint8_t)(acc >> bits);
		}
	}
	*out = o;
	return d;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* %XX-decoded copy of s[0, n); NULL if invalid or holding a NUL */
static char *unurl(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	size_t i, o = 0;

	if (!d)
		return NULL;
	for (i = 0; i < n; i++) {
		int c = (unsigned char)s[i];

		if (c == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 &&
		    hexval(s[i + 2]) >= 0) {
			c = hexval(s[i + 1]) << 4 | hexval(s[i + 2]);
			i += 2;
		}
		if (!c) {
			free(d);
			return NULL;
		}
		d[o++] = (char)c;
	}
	d[o] = '\0';
	return d;
}

/* decimal, optionally negative with a fraction (mtime) */
static int pax_num(const char *s, size_t n, bool sign, int64_t *v, uint32_t *ns)
{
	uint64_t u = 0;
	uint32_t frac = 0, scale = 100000000;
	bool neg = false;
	size_t i = 0;

	if (sign && n && s[0] == '-') {
		neg = true;
		i++;
	}
	if (i == n)
		return -EUCLEAN;
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
		if (u > (uint64_t)INT64_MAX / 10 - 1)
			return -ERANGE;
		u = u * 10 + (uint64_t)(s[i] - '0');
	}
	if (ns && i < n && s[i] == '.') {
		for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
			frac += (uint32_t)(s[i] - '0') * scale;
			scale /= 10;
		}
	}
	if (i != n)
		return -EUCLEAN;
	*v = neg ? -(int64_t)u : (int64_t)u;
	if (ns) {
		if (neg && frac) {
			*v -= 1;
			frac = 1000000000 - frac;
		}
		*ns = frac;
	}
	return 0;
}

static int set_str(char **dst, const char *v, size_t n)
{
	char *s = NULL;

	if (n) {
		s = strndup(v, n);
		if (!s)
			return -ENOMEM;
	}
	free(*dst);
	*dst = s; /* an empty value removes the override */
	return 0;
}

static int pax_xattr(struct tpax *p, const char *key, size_t klen,
		     const char *v, size_t vlen, bool libarchive)
{
	uint8_t *value;
	char *name;
	size_t len = vlen;

	if (libarchive) {
		name = unurl(key, klen);
		value = name ? unbase64(v, vlen, &len) : NULL;
	} else {
		name = memchr(key, '\0', klen) ? NULL : strndup(key, klen);
		value = malloc(vlen + 1);
		if (value)
			memcpy(value, v, vlen);
	}
	if (!name || !value || !*name) {
		free(name);
		free(value);
		return -EUCLEAN;
	}
	return add_xattr(&p->x, &p->nx, name, value, len);
}

static bool key_is(const char *k, size_t klen, const char *s)
{
	return strlen(s) == klen && !memcmp(k, s, klen);
}

int ezi_tsparse_add(struct tsparse **map, size_t *n, uint64_t off, uint64_t len)
{
	struct tsparse *m;

	if (!(*n & (*n - 1)) || !*n) {
		m = realloc(*map, (*n ? *n * 2 : 1) * sizeof(*m));
		if (!m)
			return -ENOMEM;
		*map = m;
	}
	(*map)[(*n)++] = (struct tsparse){ off, len };
	return 0;
}

/* GNU.sparse.map (0.1): "offset,numbytes,offset,numbytes..." */
static int sparse_map_list(struct tpax *p, const char *v, size_t n)
{
	size_t i = 0;
	int r = 0;

	while (!r && i < n) {
		int64_t num[2];
		int k;

		for (k = 0; k < 2 && !r; k++) {
			size_t j = i;

			while (j < n && v[j] != ',')
				j++;
			r = pax_num(v + i, j - i, false, &num[k], NULL);
			i = j + 1;
			if (!r && k == 0 && j >= n)
				r = -EUCLEAN; /* an offset without numbytes */
		}
		if (!r)
			r = ezi_tsparse_add(&p->map, &p->nmap, (uint64_t)num[0],
					    (uint64_t)num[1]);
	}
	return r;
}

/* One GNU.sparse.KEY record (key without the prefix). */
static int sparse_record(struct tpax *p, const char *k, size_t klen,
			 const char *v, size_t vlen)
{
	int64_t num = 0;
	int r = 0;

	p->sparse = true;
	if (key_is(k, klen, "name")) {
		if (memchr(v, '\0', vlen))
			return -EUCLEAN;
		return set_str(&p->sp_name, v, vlen);
	}
	if (key_is(k, klen, "map"))
		return sparse_map_list(p, v, vlen);
	if (key_is(k, klen, "major") || key_is(k, klen, "minor") ||
	    key_is(k, klen, "size") || key_is(k, klen, "realsize") ||
	    key_is(k, klen, "offset") || key_is(k, klen, "numbytes") ||
	    key_is(k, klen, "numblocks"))
		r = pax_num(v, vlen, false, &num, NULL);
	if (r)
		return r;
	if (key_is(k, klen, "major")) {
		p->sp_major = num;
	} else if (key_is(k, klen, "minor")) {
		p->sp_minor = num;
	} else if (key_is(k, klen, "size") || key_is(k, klen, "realsize")) {
		p->realsize = (uint64_t)num;
		p->has_realsize = true;
	} else if (key_is(k, klen, "offset")) {
		/* 0.0: offset and numbytes records in turn */
		if (p->sp_open)
			return -EUCLEAN;
		r = ezi_tsparse_add(&p->map, &p->nmap, (uint64_t)num, 0);
		p->sp_open = !r;
	} else if (key_is(k, klen, "numbytes")) {
		if (!p->sp_open)
			return -EUCLEAN;
		p->map[p->nmap - 1].len = (uint64_t)num;
		p->sp_open = false;
	}
	return r;
}

static int pax_record(struct tpax *p, const char *k, size_t klen, const char *v,
		      size_t vlen, bool global, const char **why)
{
	static const char sx[] = "SCHILY.xattr.", lx[] = "LIBARCHIVE.xattr.";
	int64_t num;
	int r = 0;

	if (key_is(k, klen, "path") || key_is(k, klen, "linkpath")) {
		if (global)
			return 0;
		if (memchr(v, '\0', vlen)) {
			*why = "PAX path holds a NUL byte";
			return -EUCLEAN;
		}
		return set_str(klen == 4 ? &p->path : &p->link, v, vlen);
	}
	if (key_is(k, klen, "size") && !global) {
		r = pax_num(v, vlen, false, &num, NULL);
		p->size = (uint64_t)num;
		p->has_size = true;
	} else if (key_is(k, klen, "uid") || key_is(k, klen, "gid")) {
		r = pax_num(v, vlen, false, &num, NULL);
		if (k[0] == 'u') {
			p->uid = (uint64_t)num;
			p->has_uid = true;
		} else {
			p->gid = (uint64_t)num;
			p->has_gid = true;
		}
	} else if (key_is(k, klen, "mtime")) {
		r = pax_num(v, vlen, true, &p->mtime, &p->mtime_ns);
		p->has_mtime = true;
	} else if (klen > sizeof(sx) - 1 && !memcmp(k, sx, sizeof(sx) - 1)) {
		r = pax_xattr(p, k + sizeof(sx) - 1, klen - sizeof(sx) + 1, v,
			      vlen, false);
	} else if (klen > sizeof(lx) - 1 && !memcmp(k, lx, sizeof(lx) - 1)) {
		r = pax_xattr(p, k + sizeof(lx) - 1, klen - sizeof(lx) + 1, v,
			      vlen, true);
	} else if (klen > 11 && !memcmp(k, "GNU.sparse.", 11)) {
		if (global)
			return 0;
		r = sparse_record(p, k + 11, klen - 11, v, vlen);
		if (r == -EUCLEAN)
			*why = "bad GNU.sparse record";
	}
	if (r == -ERANGE)
		*why = "PAX number out of range";
	else if (r == -EUCLEAN)
		*why = "bad PAX record value";
	return r;
}

int ezi_tpax_parse(struct tpax *p, const char *rec, size_t len, bool global,
		   const char **why)
{
	size_t off = 0;

	while (off < len) {
		size_t rlen = 0, i = off, k;
		int r;

		if (rec[off] == '\0')
			break; /* NUL padding after the last record */
		for (; i < len && rec[i] >= '0' && rec[i] <= '9'; i++) {
			rlen = rlen * 10 + (size_t)(rec[i] - '0');
			if (rlen > len)
				break;
		}
		if (i == off || i >= len || rec[i] != ' ' || rlen > len - off ||
		    rlen < i - off + 3 || rec[off + rlen - 1] != '\n') {
			*why = "malformed PAX record";
			return -EUCLEAN;
		}
		i++;
		for (k = i; k < off + rlen - 1 && rec[k] != '='; k++)
			;
		if (k == i || k == off + rlen - 1) {
			*why = "malformed PAX record";
			return -EUCLEAN;
		}
		r = pax_record(p, rec + i, k - i, rec + k + 1,
			       off + rlen - 1 - (k + 1), global, why);
		if (r)
			return r;
		off += rlen;
	}
	return 0;
}

void ezi_tpax_clear(struct tpax *p)
{
	size_t i;

	for (i = 0; i < p->nx; i++) {
		free(p->x[i].name);
		free(p->x[i].value);
	}
	free(p->x);
	free(p->path);
	free(p->link);
	free(p->sp_name);
	free(p->map);
	memset(p, 0, sizeof(*p));
}

void ezi_tentry_clear(struct tentry *e)
{
	struct tpax t = { .path = e->path,
			  .link = e->link,
			  .x = e->x,
			  .nx = e->nx,
			  .map = e->map };

	ezi_tpax_clear(&t);
	memset(e, 0, sizeof(*e));
}

/* Copy g's xattrs into e, then move l's in (replacing equal names). */
static int merge_xattrs(struct tentry *e, const struct tpax *g, struct tpax *l)
{
	size_t i;
	int err = 0;

	for (i = 0; i < g->nx && !err; i++) {
		char *n = strdup(g->x[i].name);
		uint8_t *v = malloc(g->x[i].len + 1);

		if (n && v)
			memcpy(v, g->x[i].value, g->x[i].len);
		err = n && v ? add_xattr(&e->x, &e->nx, n, v, g->x[i].len)
			     : -ENOMEM;
		if (!n || !v) {
			free(n);
			free(v);
		}
	}
	for (i = 0; i < l->nx && !err; i++) {
		err = add_xattr(&e->x, &e->nx, l->x[i].name, l->x[i].value,
				l->x[i].len);
		l->x[i].name = NULL;
		l->x[i].value = NULL;
	}
	return err;
}

static int field(const uint8_t *blk, size_t off, size_t n, int64_t *v,
		 const char **why, const char *what)
{
	int r = ezi_thdr_num(blk + off, n, v);

	if (r)
		*why = what;
	return r;
}

/* A GNU 'S' member: the runs in its header (extension blocks follow when
 * sp_ext is set), its real size. */
static int gnu_sparse(struct tentry *e, const uint8_t blk[512],
		      const char **why)
{
	int64_t real, off, len;
	size_t i;
	int r;

	if ((r = field(blk, F_REALSIZE, &real, why, "bad sparse real size")))
		return r;
	for (i = 0; i < 4 && blk[OFF_SPARSE + i * 24]; i++) {
		if ((r = field(blk, OFF_SPARSE + i * 24, 12, &off, why,
			       "bad sparse map")) ||
		    (r = field(blk, OFF_SPARSE + i * 24 + 12, 12, &len, why,
			       "bad sparse map")))
			return r;
		if ((r = ezi_tsparse_add(&e->map, &e->nmap, (uint64_t)off,
					 (uint64_t)len)))
			return r;
	}
	e->sparse = true;
	e->sp_ext = blk[OFF_EXTENDED] != 0;
	e->realsize = (uint64_t)real;
	e->type = '0';
	return 0;
}

/* GNU.sparse.* records: formats 0.0 and 0.1 (the map in the records) and
 * 1.0 (the map at the start of the data). */
static int pax_sparse(struct tentry *e, struct tpax *l, const char **why)
{
	bool v1 = l->sp_major == 1 && l->sp_minor == 0;

	if (!(v1 || (!l->sp_major && l->sp_minor <= 1))) {
		*why = "a GNU sparse format other than 0.0, 0.1 and 1.0";
		return -EOPNOTSUPP;
	}
	if (!l->has_realsize || l->sp_open || (v1 && l->nmap) ||
	    e->type != '0') {
		*why = "incomplete GNU.sparse records";
		return -EUCLEAN;
	}
	if (l->sp_name) {
		free(e->path);
		e->path = l->sp_name;
		l->sp_name = NULL;
	}
	e->sparse = true;
	e->sp_inmap = v1;
	e->realsize = l->realsize;
	e->map = l->map;
	e->nmap = l->nmap;
	l->map = NULL;
	l->nmap = 0;
	return 0;
}

int ezi_tentry_fill(struct tentry *e, const uint8_t blk[512],
		    const struct tpax *g, struct tpax *l, const char **why)
{
	const struct tpax *src[2] = { g, l };
	bool posix = !memcmp(blk + OFF_MAGIC, "ustar\0", 6);
	int64_t mode, uid, gid, size, mtime, major = 0, minor = 0;
	size_t i;
	int r;

	memset(e, 0, sizeof(*e));
	if ((r = field(blk, F_MODE, &mode, why, "bad mode field")) ||
	    (r = field(blk, F_UID, &uid, why, "bad uid field")) ||
	    (r = field(blk, F_GID, &gid, why, "bad gid field")) ||
	    (r = field(blk, F_SIZE, &size, why, "bad size field")) ||
	    (r = field(blk, F_MTIME, &mtime, why, "bad mtime field")))
		return r;
	e->type = (char)blk[OFF_TYPE];
	if (e->type == '3' || e->type == '4') {
		if ((r = field(blk, F_MAJOR, &major, why, "bad devmajor")) ||
		    (r = field(blk, F_MINOR, &minor, why, "bad devminor")))
			return r;
	}
	if (size < 0 || uid < 0 || gid < 0) {
		*why = "negative size or owner";
		return -EUCLEAN;
	}
	e->mode = (uint32_t)mode & 07777;
	e->uid = (uint64_t)uid;
	e->gid = (uint64_t)gid;
	e->size = (uint64_t)size;
	e->mtime = mtime;
	e->major = (uint32_t)major;
	e->minor = (uint32_t)minor;
	if (l->path) {
		e->path = l->path;
		l->path = NULL;
	} else {
		size_t pn = posix ? strnlen((const char *)blk + 345, 155) : 0;
		size_t nn = strnlen((const char *)blk, 100);

		e->path = malloc(pn + nn + 2);
		if (!e->path)
			return -ENOMEM;
		memcpy(e->path, blk + 345, pn);
		if (pn)
			e->path[pn++] = '/';
		memcpy(e->path + pn, blk, nn);
		e->path[pn + nn] = '\0';
	}
	if (l->link) {
		e->link = l->link;
		l->link = NULL;
	} else if (blk[157]) {
		e->link = strndup((const char *)blk + 157, 100);
		if (!e->link)
			return -ENOMEM;
	}
	for (i = 0; i < 2; i++) {
		if (src[i]->has_uid)
			e->uid = src[i]->uid;
		if (src[i]->has_gid)
			e->gid = src[i]->gid;
		if (src[i]->has_mtime) {
			e->mtime = src[i]->mtime;
			e->mtime_ns = src[i]->mtime_ns;
		}
	}
	if (l->has_size)
		e->size = l->size;
	if (e->type == '\0' && *e->path && e->path[strlen(e->path) - 1] == '/')
		e->type = '5'; /* pre-POSIX directory */
	if (e->type == '\0' || e->type == '7')
		e->type = '0';
	r = e->type == 'S' ? gnu_sparse(e, blk, why)
	    : l->sparse	   ? pax_sparse(e, l, why)
			   : 0;
	return r ? r : merge_xattrs(e, g, l);
}
