/* SPDX-License-Identifier: MIT */
/*
 * extract_droid.c - ezfs_extract: what an Android rebuild needs beside the
 * tree: canned fs_config lines (owners, modes, capabilities), SELinux
 * file_contexts lines (labels), and with EZFS_EXTRACT_ANDROID the ezfs
 * mkfs line that makes the image again.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "extract/internal.h"

/* A path fit for a whitespace-separated line: no blank, no control byte. */
static int line_safe(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == 0x7f)
			return 0;
	return 1;
}

static ssize_t get_xattr(ezfs_inode *ino, const char *name, char *buf,
			 size_t size)
{
	ssize_t n = ezfs_getxattr(ino, name, NULL, 0);

	if (n < 0)
		return n == -ENODATA ? 0 : n;
	if ((size_t)n > size)
		return -ERANGE;
	return ezfs_getxattr(ino, name, buf, size);
}

static uint32_t le32(const unsigned char *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* The permitted set of a security.capability value (vfs_cap_data
 * revisions 1 to 3); 0 for none. -EUCLEAN for a value of no revision. */
static int decode_caps(const unsigned char *v, size_t n, uint64_t *caps)
{
	uint32_t rev;

	*caps = 0;
	if (n < 4)
		return -EUCLEAN;
	rev = le32(v) & 0xFF000000u;
	if (rev == 0x01000000u && n >= 12) {
		*caps = le32(v + 4);
		return 0;
	}
	if ((rev == 0x02000000u && n >= 20) ||
	    (rev == 0x03000000u && n >= 24)) {
		*caps = le32(v + 4) | (uint64_t)le32(v + 12) << 32;
		return 0;
	}
	return -EUCLEAN;
}

/* rel's file_contexts regex: every character a regex gives a meaning to
 * escaped, so that the line matches this path alone */
static void put_regex(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (strchr(".^$?*+|[](){}\\", *s))
			fputc('\\', f);
		fputc(*s, f);
	}
}

int ezi_x_sidecar_entry(struct xctx *x, ezfs_inode *ino,
			const struct ezfs_stat *st, const char *path)
{
	const char *mp = x->mp ? x->mp : "";
	char val[4096];
	uint64_t caps = 0;
	ssize_t n;

	if (!x->fsc && !x->fcx)
		return 0;
	if (!line_safe(path) || !line_safe(mp)) {
		ezi_x_error(
			x, path,
			"a name with blanks or control characters cannot be "
			"written to fs_config or file_contexts",
			0);
		x->sidecar_errors++;
		return 0;
	}
	if (x->fsc) {
		n = get_xattr(ino, "security.capability", val, sizeof(val));
		if (n > 0 &&
		    decode_caps((unsigned char *)val, (size_t)n, &caps) < 0) {
			ezi_x_error(x, path, "security.capability", -EUCLEAN);
			x->sidecar_errors++;
		} else if (n < 0) {
			ezi_x_error(x, path, "reading security.capability",
				    (int)n);
			x->sidecar_errors++;
		}
		/* keys as ezfs mkfs --fs-config-file looks them up: the
		 * root's an empty path, the others MP/relpath */
		if (*path && *mp)
			fprintf(x->fsc, "%s/%s", mp, path);
		else
			fputs(path, x->fsc); /* the root: "" */
		fprintf(x->fsc, " %u %u %04o", st->uid, st->gid,
			st->mode & 07777);
		if (caps)
			fprintf(x->fsc, " capabilities=0x%llx",
				(unsigned long long)caps);
		fputc('\n', x->fsc);
	}
	if (x->fcx) {
		n = get_xattr(ino, "security.selinux", val, sizeof(val) - 1);
		if (n < 0) {
			ezi_x_error(x, path, "reading security.selinux",
				    (int)n);
			x->sidecar_errors++;
			return 0;
		}
		while (n > 0 && !val[n - 1])
			n--; /* stored with or without its NUL */
		val[n] = '\0';
		if (!n)
			return 0;
		if (!line_safe(val) || strlen(val) != (size_t)n) {
			ezi_x_error(x, path, "SELinux label not fit for a line",
				    0);
			x->sidecar_errors++;
			return 0;
		}
		fputc('/', x->fcx);
		if (*mp)
			put_regex(x->fcx, mp);
		if (*mp && *path)
			fputc('/', x->fcx);
		put_regex(x->fcx, path);
		fprintf(x->fcx, " %s\n", val);
	}
	return 0;
}

void ezi_x_android_file(struct xctx *x, ezfs_inode *ino,
			const struct ezfs_stat *st)
{
	struct ezfs_extent e;
	uint64_t la = 0;

	if (!x->android || !S_ISREG(st->mode))
		return;
	while (la < st->size && !ezfs_map(ino, la, &e) && e.llen) {
		if ((e.flags & EZFS_EXTENT_ENCODED) && e.alg >= 0 &&
		    e.alg < EZFS_ALG_MAX)
			x->alg_extents[e.alg]++;
		if ((e.flags & EZFS_EXTENT_ENCODED) &&
		    !(e.flags & (EZFS_EXTENT_INLINE | EZFS_EXTENT_FRAGMENT))) {
			if (e.plen > x->max_pcluster)
				x->max_pcluster = e.plen;
			/* two extents of one pcluster in different places:
			 * dedupe (fragments share the feature bit) */
			if (ezi_x_nid_add(&x->pas, e.pa) == 0)
				x->deduped = 1;
		}
		if (e.la + e.llen <= la)
			break;
		la = e.la + e.llen;
	}
}

/* SUPER:NAME is no file; a file of that very name is one */
static int no_file(const char *path)
{
	struct stat sb;

	return stat(path, &sb) != 0;
}

/* The partition name: the volume name, else the image file's name
 * without its folder, extension and slot suffix (super.img:system_a ->
 * system). */
static char *partition_name(struct xctx *x)
{
	struct ezfs_sb_info si;
	const char *img = x->img, *s;
	char *name;
	size_t n;

	ezfs_get_sb_info(x->fs, &si);
	if (si.volume_name[0] && line_safe(si.volume_name))
		return strdup(si.volume_name);
	s = strrchr(img, ':');
	if (!s || !s[1] || !no_file(img))
		s = strrchr(img, '/');
	s = s ? s + 1 : img;
	n = strcspn(s, ".");
	if (n > 2 && s[n - 2] == '_' && (s[n - 1] == 'a' || s[n - 1] == 'b'))
		n -= 2;
	name = strndup(s, n);
	if (name && (!*name || !line_safe(name))) {
		free(name);
		name = strdup("system");
	}
	return name;
}

static char *with_suffix(const char *dest, const char *suffix)
{
	size_t n = strlen(dest);
	char *p;

	while (n > 1 && dest[n - 1] == '/')
		n--;
	p = malloc(n + strlen(suffix) + 1);
	if (p) {
		memcpy(p, dest, n);
		strcpy(p + n, suffix);
	}
	return p;
}

int ezi_x_sidecars_open(struct xctx *x)
{
	const struct ezfs_extract_opts *o = x->o;
	const char *fsc = o->fs_config, *fcx = o->file_contexts;

	x->mp = o->mount_point;
	if (x->mp)
		while (*x->mp == '/')
			x->mp++;
	if (o->flags & EZFS_EXTRACT_ANDROID) {
		x->android = 1;
		if (!x->mp) {
			x->mp_owned = partition_name(x);
			x->mp = x->mp_owned;
		}
		x->fsc_path =
			fsc ? strdup(fsc) : with_suffix(x->dest, ".fs_config");
		x->fcx_path = fcx ? strdup(fcx)
				  : with_suffix(x->dest, ".file_contexts");
		x->mkfs_path = with_suffix(x->dest, ".mkfs");
		if (!x->mp || !x->fsc_path || !x->fcx_path || !x->mkfs_path) {
			ezi_x_msg(x, "out of memory");
			return -ENOMEM;
		}
	} else {
		x->fsc_path = fsc ? strdup(fsc) : NULL;
		x->fcx_path = fcx ? strdup(fcx) : NULL;
	}
	if (x->fsc_path && !(x->fsc = fopen(x->fsc_path, "w"))) {
		ezi_x_msg(x, "%s: %s", x->fsc_path, strerror(errno));
		return -errno;
	}
	if (x->fcx_path && !(x->fcx = fopen(x->fcx_path, "w"))) {
		ezi_x_msg(x, "%s: %s", x->fcx_path, strerror(errno));
		return -errno;
	}
	return 0;
}

/* An argument for sh: as it is when it holds only safe characters, else
 * in single quotes. */
static void put_arg(FILE *f, const char *s)
{
	const char *p;

	fputc(' ', f);
	for (p = s; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWX"
			    "YZ"
			    "0123456789-_./=:,+@%",
			    *p))
			break;
	if (*s && !*p) {
		fputs(s, f);
		return;
	}
	fputc('\'', f);
	for (p = s; *p; p++) {
		if (*p == '\'')
			fputs("'\\''", f);
		else
			fputc(*p, f);
	}
	fputc('\'', f);
}

static int write_mkfs_line(struct xctx *x)
{
	struct ezfs_sb_info si;
	char feats[512], num[64], *img, *src;
	char e[128] = "";
	int best = -1, i;
	FILE *f;

	ezfs_get_sb_info(x->fs, &si);
	ezfs_feature_string(x->fs, feats, sizeof(feats));
	f = fopen(x->mkfs_path, "w");
	if (!f) {
		ezi_x_msg(x, "%s: %s", x->mkfs_path, strerror(errno));
		return -errno;
	}
	img = with_suffix(x->dest, ".img");
	src = with_suffix(x->dest, "");
	fputs("ezfs mkfs", f);
	for (i = 0; i < EZFS_ALG_MAX; i++)
		if (x->alg_extents[i] &&
		    (best < 0 || x->alg_extents[i] > x->alg_extents[best]))
			best = i;
	for (i = 0; best < 0 && i < EZFS_ALG_MAX; i++)
		if (si.available_algs & (1u << i))
			best = i; /* no extent seen: what the image declares */
	if (best >= 0) {
		put_arg(f, "-z");
		put_arg(f, ezfs_alg_name(best));
		if (x->max_pcluster > si.blksz) {
			snprintf(num, sizeof(num), "%llu",
				 (unsigned long long)x->max_pcluster);
			put_arg(f, "-C");
			put_arg(f, num);
		}
	}
	snprintf(num, sizeof(num), "%u", si.blksz);
	put_arg(f, "-b");
	put_arg(f, num);
	snprintf(num, sizeof(num), "%lld", (long long)si.epoch);
	put_arg(f, "-T");
	put_arg(f, num);
	put_arg(f, "--mkfs-time"); /* -T is the build time; files keep theirs */
	snprintf(num, sizeof(num),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x",
		 si.uuid[0], si.uuid[1], si.uuid[2], si.uuid[3], si.uuid[4],
		 si.uuid[5], si.uuid[6], si.uuid[7], si.uuid[8], si.uuid[9],
		 si.uuid[10], si.uuid[11], si.uuid[12], si.uuid[13],
		 si.uuid[14], si.uuid[15]);
	put_arg(f, "-U");
	put_arg(f, num);
	if (si.volume_name[0]) {
		put_arg(f, "-L");
		put_arg(f, si.volume_name);
	}
	if (best >= 0 && strstr(feats, "ztailpacking"))
		strcat(e, ",ztailpacking");
	if (best >= 0 && si.packed_nid)
		strcat(e, ",fragments");
	if (best >= 0 && strstr(feats, "fragments/dedupe") &&
	    (!si.packed_nid || x->deduped))
		strcat(e, ",dedupe");
	if (strstr(feats, "48bit"))
		strcat(e, ",48bit");
	if (strstr(feats, "chunked_file"))
		strcat(e, ",force-chunk-indexes");
	if (*e) {
		put_arg(f, "-E");
		put_arg(f, e + 1);
	}
	put_arg(f, "--mount-point");
	put_arg(f, x->mp);
	put_arg(f, "--fs-config-file");
	put_arg(f, x->fsc_path);
	put_arg(f, "--file-contexts");
	put_arg(f, x->fcx_path);
	put_arg(f, img ? img : "IMAGE");
	put_arg(f, src ? src : x->dest);
	fputc('\n', f);
	free(img);
	free(src);
	if (fclose(f)) {
		ezi_x_msg(x, "%s: %s", x->mkfs_path, strerror(errno));
		return -errno;
	}
	return 0;
}

static int close_one(struct xctx *x, FILE **f, const char *path)
{
	int err = 0;

	if (!*f)
		return 0;
	if (ferror(*f) | fclose(*f)) {
		err = errno ? -errno : -EIO;
		ezi_x_msg(x, "%s: %s", path, strerror(-err));
	}
	*f = NULL;
	return err;
}

int ezi_x_sidecars_close(struct xctx *x, int ok)
{
	int err = 0;

	err |= close_one(x, &x->fsc, x->fsc_path);
	err |= close_one(x, &x->fcx, x->fcx_path);
	if (ok && !err && x->android)
		err = write_mkfs_line(x);
	if (!ok) {
		/* no half-written sidecar stays behind */
		if (x->fsc_path)
			unlink(x->fsc_path);
		if (x->fcx_path)
			unlink(x->fcx_path);
	}
	free(x->fsc_path);
	free(x->fcx_path);
	free(x->mkfs_path);
	free(x->mp_owned);
	ezi_x_nid_free(&x->pas, 0);
	return err ? -EIO : x->sidecar_errors ? 1 : 0;
}
