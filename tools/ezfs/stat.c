/* SPDX-License-Identifier: MIT */
/* stat.c - ezfs stat: one inode in detail, and (-e) its extent map. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common.h"
#include "cmd.h"
#include "json.h"

#define STAT_MAX_HEX 128 /* value bytes shown in hex */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ezfs stat [-e] [--json] IMG PATH\n"
		"Show an inode: nid, type, mode, owner, size, times, layout,\n"
		"xattrs and its compressed size.\n"
		"  -e, --extents   print the extent map "
		"table\n"
		"  --json          one JSON document "
		"(docs/json.md)\n" CLI_ENGINE_HELP CLI_IMAGE_HELP);
}

static void print_value(const unsigned char *v, size_t n)
{
	size_t i;
	int printable = 1;

	for (i = 0; i < n; i++)
		if (!isprint(v[i]) || v[i] == '"' || v[i] == '\\')
			printable = 0;
	if (printable && n > STAT_MAX_HEX * 2) {
		printf("\"%.*s\"... (%zu bytes)", STAT_MAX_HEX * 2,
		       (const char *)v, n);
		return;
	}
	if (printable) {
		printf("\"%.*s\"", (int)n, (const char *)v);
		return;
	}
	printf("0x");
	for (i = 0; i < n && i < STAT_MAX_HEX; i++)
		printf("%02x", v[i]);
	if (n > STAT_MAX_HEX)
		printf("... (%zu bytes)", n);
}

/* The value of xattr name into *val (malloc'ed, NULL on failure): its
 * length or a negative errno. */
static ssize_t xattr_value(ezfs_inode *ino, const char *name, void **val)
{
	ssize_t vn = ezfs_getxattr(ino, name, NULL, 0);

	*val = vn >= 0 ? malloc(vn ? vn : 1) : NULL;
	if (vn >= 0 && *val)
		vn = ezfs_getxattr(ino, name, *val, vn);
	else if (vn >= 0)
		vn = -ENOMEM;
	return vn;
}

static int print_xattrs(const char *img, const char *path, ezfs_inode *ino)
{
	ssize_t n, vn;
	char *names, *p;
	void *val;

	n = ezfs_listxattr(ino, NULL, 0);
	if (n < 0)
		goto fail;
	if (!n) {
		printf("%-12s (none)\n", "Xattrs:");
		return 0;
	}
	names = malloc(n);
	if (!names)
		return -ENOMEM;
	n = ezfs_listxattr(ino, names, n);
	if (n < 0) {
		free(names);
		goto fail;
	}
	printf("Xattrs:\n");
	for (p = names; p < names + n; p += strlen(p) + 1) {
		vn = xattr_value(ino, p, &val);
		if (vn < 0) {
			cli_error("stat", "%s: %s: xattr %s: %s", img, path, p,
				  ezfs_strerror((int)vn));
			free(val);
			free(names);
			return (int)vn;
		}
		printf("  %s=", p);
		print_value(val, vn);
		printf("\n");
		free(val);
	}
	free(names);
	return 0;
fail:
	cli_error("stat", "%s: %s: listing xattrs: %s", img, path,
		  ezfs_strerror((int)n));
	return (int)n;
}

static void flag_string(unsigned f, char *buf, size_t size)
{
	static const char *const names[] = {
		"mapped", "inline", "fragment", "partial", "encoded", "meta",
	};
	size_t i, len = 0;

	buf[0] = '\0';
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(f & (1u << i)))
			continue;
		len += snprintf(buf + len, size - len, "%s%s", len ? "," : "",
				names[i]);
		if (len >= size)
			break;
	}
	if (!f)
		snprintf(buf, size, "hole");
}

/* Walk the extent map; print it when table. */
static int walk_extents(ezfs_image *fs, const char *img, const char *path,
			ezfs_inode *ino, uint64_t size, int table)
{
	uint64_t la = 0, n = 0, pcl = 0, plen = 0, last_pa = UINT64_MAX;
	struct ezfs_extent e;
	char flags[96];
	int ret;

	if (table)
		printf("%-25s %18s %10s %-10s %s\n", "logical", "physical",
		       "plen", "alg", "flags");
	while (la < size) {
		ret = ezfs_map(ino, la, &e);
		if (ret < 0) {
			cli_error("stat", "%s: %s: map at %" PRIu64 ": %s", img,
				  path, la, ezfs_strerror(ret));
			return ret;
		}
		if (e.la + e.llen <= la) {
			cli_error("stat",
				  "%s: %s: extent map does not advance at "
				  "%" PRIu64,
				  img, path, la);
			return -EUCLEAN;
		}
		n++;
		if ((e.flags & EZFS_EXTENT_MAPPED) && e.pa != last_pa) {
			pcl++;
			plen += e.plen;
			last_pa = e.pa;
		}
		if (table) {
			char range[48];
			uint64_t off = e.pa;
			unsigned dev = 0;
			size_t fl;

			flag_string(e.flags, flags, sizeof(flags));
			if ((e.flags & EZFS_EXTENT_MAPPED) &&
			    !(e.flags &
			      (EZFS_EXTENT_FRAGMENT | EZFS_EXTENT_INLINE |
			       EZFS_EXTENT_META)))
				ezfs_addr_device(fs, e.pa, &dev, &off);
			fl = strlen(flags);
			if (dev)
				snprintf(flags + fl, sizeof(flags) - fl,
					 "%sdevice=%u", fl ? "," : "", dev);
			snprintf(range, sizeof(range), "%" PRIu64 "..%" PRIu64,
				 e.la, e.la + e.llen);
			printf("%-25s %18" PRIu64 " %10" PRIu64 " %-10s %s\n",
			       range, off, e.plen,
			       (e.flags & EZFS_EXTENT_MAPPED)
				       ? ezfs_alg_name(e.alg)
				       : "-",
			       flags);
		}
		la = e.la + e.llen;
	}
	if (!table)
		printf("%-12s %" PRIu64 " extents, %" PRIu64
		       " pclusters, %" PRIu64 " bytes stored\n",
		       "Data:", n, pcl, plen);
	return 0;
}

/* --json (docs/schemas/stat.json): the xattrs, names and values. */
static int json_xattrs(struct cj *j, const char *img, const char *path,
		       ezfs_inode *ino)
{
	ssize_t n, vn;
	char *names, *p;
	void *val;
	int ret = 0;

	cj_arr(j, "xattrs");
	n = ezfs_listxattr(ino, NULL, 0);
	names = n > 0 ? malloc(n) : NULL;
	if (n > 0)
		n = names ? ezfs_listxattr(ino, names, n) : -ENOMEM;
	if (n < 0) {
		cli_error("stat", "%s: %s: listing xattrs: %s", img, path,
			  ezfs_strerror((int)n));
		ret = (int)n;
		n = 0;
	}
	for (p = names; p && p < names + n; p += strlen(p) + 1) {
		vn = xattr_value(ino, p, &val);
		if (vn < 0) {
			cli_error("stat", "%s: %s: xattr %s: %s", img, path, p,
				  ezfs_strerror((int)vn));
			free(val);
			ret = (int)vn;
			break;
		}
		cj_obj(j, NULL);
		cj_bytes(j, "name", p, strlen(p));
		cj_bytes(j, "value", val, (size_t)vn);
		cj_end(j);
		free(val);
	}
	free(names);
	cj_end(j);
	return ret;
}

static int json_extents(struct cj *j, ezfs_image *fs, const char *img,
			const char *path, ezfs_inode *ino, uint64_t size,
			int table)
{
	static const char *const names[] = {
		"mapped", "inline", "fragment", "partial", "encoded", "meta",
	};
	uint64_t la = 0, n = 0, pcl = 0, plen = 0, last_pa = UINT64_MAX;
	struct ezfs_extent e;
	int ret = 0;

	if (table)
		cj_arr(j, "extents");
	while (la < size) {
		ret = ezfs_map(ino, la, &e);
		if (ret < 0) {
			cli_error("stat", "%s: %s: map at %" PRIu64 ": %s", img,
				  path, la, ezfs_strerror(ret));
			break;
		}
		if (e.la + e.llen <= la) {
			cli_error("stat",
				  "%s: %s: extent map does not advance at "
				  "%" PRIu64,
				  img, path, la);
			ret = -EUCLEAN;
			break;
		}
		n++;
		if ((e.flags & EZFS_EXTENT_MAPPED) && e.pa != last_pa) {
			pcl++;
			plen += e.plen;
			last_pa = e.pa;
		}
		if (table) {
			uint64_t off = e.pa;
			unsigned dev = 0;

			if ((e.flags & EZFS_EXTENT_MAPPED) &&
			    !(e.flags &
			      (EZFS_EXTENT_FRAGMENT | EZFS_EXTENT_INLINE |
			       EZFS_EXTENT_META)))
				ezfs_addr_device(fs, e.pa, &dev, &off);
			cj_obj(j, NULL);
			cj_u64(j, "logical", e.la);
			cj_u64(j, "length", e.llen);
			if (e.flags & EZFS_EXTENT_MAPPED) {
				cj_u64(j, "physical", off);
				cj_u64(j, "plen", e.plen);
				cj_str(j, "alg", ezfs_alg_name(e.alg));
			} else {
				cj_null(j, "physical");
				cj_u64(j, "plen", 0);
				cj_null(j, "alg");
			}
			cj_u64(j, "device", dev);
			cj_arr(j, "flags");
			for (size_t i = 0; i < sizeof(names) / sizeof(names[0]);
			     i++)
				if (e.flags & (1u << i))
					cj_str(j, NULL, names[i]);
			cj_end(j);
			cj_end(j);
		}
		la = e.la + e.llen;
	}
	if (table) {
		cj_end(j);
		return ret;
	}
	cj_obj(j, "data");
	cj_u64(j, "extents", n);
	cj_u64(j, "pclusters", pcl);
	cj_u64(j, "stored_bytes", plen);
	cj_end(j);
	return ret;
}

static int json_stat(ezfs_image *fs, const char *img, const char *path,
		     ezfs_inode *ino, int extents)
{
	struct ezfs_stat st;
	struct cj j;
	int status = 0;

	ezfs_inode_stat(ino, &st);
	cj_init(&j, stdout);
	cj_obj(&j, NULL);
	cj_bytes(&j, "image", img, strlen(img));
	cj_bytes(&j, "path", path, strlen(path));
	cj_u64(&j, "nid", st.nid);
	cj_str(&j, "type", cli_json_type(st.mode));
	cj_u64(&j, "mode", st.mode & 07777);
	cj_u64(&j, "nlink", st.nlink);
	cj_u64(&j, "uid", st.uid);
	cj_u64(&j, "gid", st.gid);
	if (S_ISCHR(st.mode) || S_ISBLK(st.mode)) {
		cj_u64(&j, "rdev_major", st.rdev_major);
		cj_u64(&j, "rdev_minor", st.rdev_minor);
	}
	cj_u64(&j, "size", st.size);
	cj_i64(&j, "mtime", st.mtime);
	cj_u64(&j, "mtime_nsec", st.mtime_nsec);
	cj_str(&j, "layout", ezfs_layout_name(st.layout));
	cj_str(&j, "inode_format", st.extended ? "extended" : "compact");
	cj_u64(&j, "inode_size", st.extended ? 64 : 32);
	cj_u64(&j, "ino32", st.ino32);
	cj_u64(&j, "blocks", st.blocks);
	cj_u64(&j, "xattr_size", st.xattr_isize);
	if (S_ISLNK(st.mode)) {
		char *buf = malloc(st.size + 1);
		ssize_t n =
			buf ? ezfs_readlink(ino, buf, st.size + 1) : -ENOMEM;

		if (n < 0) {
			cli_fail("stat", img, path, (int)n);
			status = 1;
			cj_null(&j, "target");
		} else {
			cj_bytes(&j, "target", buf, (size_t)n);
		}
		free(buf);
	}
	if (json_xattrs(&j, img, path, ino) < 0)
		status = 1;
	if ((S_ISREG(st.mode) || S_ISDIR(st.mode) || S_ISLNK(st.mode)) &&
	    json_extents(&j, fs, img, path, ino, st.size, 0) < 0)
		status = 1;
	if (extents && !status &&
	    json_extents(&j, fs, img, path, ino, st.size, 1) < 0)
		status = 1;
	cj_end(&j);
	return status;
}

int cmd_stat(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "extents", no_argument, NULL, 'e' },
		{ "json", no_argument, NULL, 'J' },
		CLI_ENGINE_OPTS,
		CLI_IMAGE_OPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *img, *path;
	struct cli_log lg = { 0 };
	struct ezfs_stat st;
	char mode[11], t[32];
	ezfs_image *fs;
	ezfs_inode *ino;
	int c, ret, extents = 0, status = 0, json = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":eh", opts, NULL)) != -1) {
		switch (c) {
		case 'e':
			extents = 1;
			break;
		case 'J':
			json = 1;
			break;
		default:
			ret = cli_opt_other("stat", c, argv, usage);
			if (ret >= 0)
				return ret;
		}
	}
	if (cli_nargs("stat", argc - optind, 2, 2, "missing IMG or PATH"))
		return 2;
	img = argv[optind];
	path = argv[optind + 1];
	if (cli_open("stat", img, &lg, &fs) < 0)
		return 1;
	if (cli_get_path("stat", img, fs, path, &ino) < 0) {
		ezfs_image_close(fs);
		return 1;
	}
	if (json) {
		status = json_stat(fs, img, path, ino, extents);
		ezfs_inode_put(ino);
		ezfs_image_close(fs);
		return status;
	}
	ezfs_inode_stat(ino, &st);
	cli_mode_string(st.mode, mode);
	{
		char *q;

		printf("%-12s %s\n", "Path:", cli_qname(path, &q));
		free(q);
	}
	printf("%-12s %" PRIu64 "\n", "Nid:", st.nid);
	printf("%-12s %s\n", "Type:", cli_type_name(st.mode));
	printf("%-12s %04o (%s)\n", "Mode:", st.mode & 07777, mode);
	printf("%-12s %u\n", "Links:", st.nlink);
	printf("%-12s %u\n", "Uid:", st.uid);
	printf("%-12s %u\n", "Gid:", st.gid);
	if (S_ISCHR(st.mode) || S_ISBLK(st.mode))
		printf("%-12s %u:%u\n", "Device:", st.rdev_major,
		       st.rdev_minor);
	printf("%-12s %" PRIu64 "\n", "Size:", st.size);
	printf("%-12s %s.%09u UTC (%" PRId64 ".%09u)\n",
	       "Mtime:", cli_fmt_time(st.mtime, t, sizeof(t)), st.mtime_nsec,
	       st.mtime, st.mtime_nsec);
	printf("%-12s %s\n", "Layout:", ezfs_layout_name(st.layout));
	printf("%-12s %s (%u bytes)\n",
	       "Inode:", st.extended ? "extended" : "compact",
	       st.extended ? 64 : 32);
	printf("%-12s %u\n", "Ino32:", st.ino32);
	printf("%-12s %" PRIu64 "\n", "Blocks:", st.blocks);
	printf("%-12s %u\n", "Xattr size:", st.xattr_isize);
	if (S_ISLNK(st.mode)) {
		char *buf = malloc(st.size + 1);
		ssize_t n =
			buf ? ezfs_readlink(ino, buf, st.size + 1) : -ENOMEM;

		if (n < 0) {
			cli_fail("stat", img, path, (int)n);
			status = 1;
		} else {
			char *q;

			printf("%-12s %s\n", "Target:", cli_qname(buf, &q));
			free(q);
		}
		free(buf);
	}
	if (print_xattrs(img, path, ino) < 0)
		status = 1;
	if ((S_ISREG(st.mode) || S_ISDIR(st.mode) || S_ISLNK(st.mode)) &&
	    walk_extents(fs, img, path, ino, st.size, 0) < 0)
		status = 1;
	if (extents && !status) {
		printf("\n");
		if (walk_extents(fs, img, path, ino, st.size, 1) < 0)
			status = 1;
	}
	ezfs_inode_put(ino);
	ezfs_image_close(fs);
	return status;
}
