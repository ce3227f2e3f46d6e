/* SPDX-License-Identifier: MIT */
/*
 * compat_dump.c - ezfs as dump.erofs: erofs-utils' options, its field
 * labels and layouts (scripts grep them), over the public read API.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "cmd.h"

#define CD	     "dump.erofs"
#define CD_MAGIC     0xE0F5E1E2u
#define CD_HIST	     17 /* size classes: <1K, <2K, ... >=32M */
#define CD_BAR	     50
#define CD_FRAGMENTS 0x020 /* incompat: the packed inode holds fragments */

enum {
	CD_NID = 0x200,
	CD_PATH,
	CD_LS,
	CD_CAT,
	CD_BLKID,
};

/* Feature names as erofs-utils prints them. */
static const struct {
	int compat;
	uint32_t bit;
	const char *name;
} cd_features[] = {
	{ 1, 0x01, "sb_csum" },		{ 1, 0x02, "mtime" },
	{ 1, 0x04, "xattr_filter" },	{ 1, 0x08, "shared_ea_in_metabox" },
	{ 1, 0x10, "plain_xattr_pfx" }, { 1, 0x20, "ishare_xattrs" },
	{ 0, 0x001, "0padding" },	{ 0, 0x002, "compr_cfgs" },
	{ 0, 0x002, "big_pcluster" },	{ 0, 0x004, "chunked_file" },
	{ 0, 0x008, "device_table" },	{ 0, 0x010, "ztailpacking" },
	{ 0, 0x020, "fragments" },	{ 0, 0x020, "dedupe" },
	{ 0, 0x040, "xattr_prefixes" }, { 0, 0x080, "48bit" },
	{ 0, 0x100, "metabox" },
};

/* Suffixes of the file type table, in dump.erofs' order. */
static const char *const cd_suffixes[] = {
	".txt", ".so", ".xml", ".apk", ".odex", ".vdex", ".oat", ".rc", ".otf",
};
#define CD_NSUFFIX (sizeof(cd_suffixes) / sizeof(cd_suffixes[0]))

static void usage(FILE *f)
{
	fprintf(f,
		"usage: dump.erofs [OPTIONS] IMAGE\n"
		"Show the layout of an EROFS image (ezfs %s).\n"
		" -S              show statistics of the image\n"
		" -V, --version   print the version and exit\n"
		" -e              show the extents (an inode required)\n"
		" -s              show the superblock (the default)\n"
		" --ls            list a directory (an inode required)\n"
		" --cat           write a file's contents (an inode required)\n"
		" --nid=#         show the inode of nid #\n"
		" --path=X        show the inode of path X\n"
		" --blkid-udev    print blkid -o udev style ID_FS_* lines\n"
		" --device=X      an extra device (again for each, in order)\n"
		" --offset=#      skip # bytes at the beginning of IMAGE\n"
		" --help          display this help and exit\n"
		"ezfs options:\n" CLI_ENGINE_HELP CLI_VERITY_HELP
			CLI_REMOTE_HELP,
		EZFS_VERSION_STRING);
}

static void print_uuid(const uint8_t *u)
{
	int i;

	for (i = 0; i < 16; i++)
		printf("%s%02x",
		       i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", u[i]);
}

static void dump_super(const struct ezfs_sb_info *si)
{
	time_t t = (time_t)(si->epoch + (int64_t)si->build_time);
	char tb[64];
	struct tm tm;
	size_t i;

	printf("%-46s0x%X\n", "Filesystem magic number:", CD_MAGIC);
	printf("%-46s%u\n", "Filesystem blocksize:", si->blksz);
	printf("%-46s%" PRIu64 "\n", "Filesystem blocks:", si->blocks);
	printf("%-46s%" PRIu64 "\n",
	       "Filesystem inode metadata start block:", si->meta_blkaddr);
	printf("%-46s%" PRIu64 "\n",
	       "Filesystem shared xattr metadata start block:",
	       si->xattr_blkaddr);
	printf("%-46s%" PRIu64 "\n", "Filesystem root nid:", si->root_nid);
	if (si->packed_nid)
		printf("%-46s%" PRIu64 "\n",
		       "Filesystem packed nid:", si->packed_nid);
	if (si->metabox_nid)
		printf("%-46s%" PRIu64 "\n",
		       "Filesystem metabox nid:", si->metabox_nid);
	if ((si->available_algs & 1) && (si->feature_incompat & 1))
		printf("%-46s%u\n",
		       "Filesystem lz4_max_distance:", si->lz4_max_distance);
	printf("%-46s%u\n", "Filesystem sb_size:", si->sb_size);
	printf("%-46s%" PRIu64 "\n", "Filesystem inode count:", si->inos);
	if (localtime_r(&t, &tm) &&
	    strftime(tb, sizeof(tb), "%a %b %e %H:%M:%S %Y", &tm))
		printf("%-46s%s\n", "Filesystem created:", tb);
	printf("%-46s", "Filesystem features:");
	for (i = 0; i < sizeof(cd_features) / sizeof(cd_features[0]); i++)
		if ((cd_features[i].compat ? si->feature_compat
					   : si->feature_incompat) &
		    cd_features[i].bit)
			printf("%s ", cd_features[i].name);
	printf("\n%-46s", "Filesystem UUID:");
	print_uuid(si->uuid);
	printf("\n");
	if (si->volume_name[0])
		printf("%-46s%s\n", "Filesystem volume name:", si->volume_name);
}

/* blkid's encoding of a value: unsafe bytes as \xNN. */
static void print_enc(const char *s)
{
	for (; *s; s++) {
		unsigned char c = *s;

		if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
		    (c >= 'A' && c <= 'Z') || strchr("#+-.:=@_", c) ||
		    c >= 0x80)
			putchar(c);
		else
			printf("\\x%02x", c);
	}
}

static void dump_blkid(const struct ezfs_sb_info *si)
{
	if (si->volume_name[0]) {
		printf("ID_FS_LABEL=");
		print_enc(si->volume_name);
		printf("\nID_FS_LABEL_ENC=");
		print_enc(si->volume_name);
		printf("\n");
	}
	printf("ID_FS_UUID=");
	print_uuid(si->uuid);
	printf("\nID_FS_UUID_ENC=");
	print_uuid(si->uuid);
	printf("\nID_FS_BLOCK_SIZE=%u\nID_FS_TYPE=erofs\n"
	       "ID_FS_USAGE=filesystem\n",
	       si->blksz);
}

static int is_compressed(const struct ezfs_stat *st)
{
	return st->layout == EZFS_LAYOUT_COMPRESSED_FULL ||
	       st->layout == EZFS_LAYOUT_COMPRESSED_COMPACT;
}

static uint64_t ondisk_size(const struct ezfs_stat *st, unsigned bits)
{
	return is_compressed(st) ? st->blocks << bits : st->size;
}

struct stats {
	unsigned blkszbits;
	uint64_t total, types[8], compressed, uncompressed;
	uint64_t orig, disk;
	uint64_t hist_orig[CD_HIST], hist_disk[CD_HIST];
	uint64_t suffix[CD_NSUFFIX + 1];
};

static unsigned size_class(uint64_t bytes)
{
	uint64_t kb = bytes >> 10;
	unsigned c = 0;

	while (kb && c < CD_HIST - 1) {
		kb >>= 1;
		c++;
	}
	return c;
}

static int stats_cb(void *arg, const char *path, uint64_t nid,
		    const struct ezfs_stat *st, ezfs_inode *ino)
{
	struct stats *s = arg;
	const char *base = strrchr(path, '/');
	size_t i, bl, sl;
	uint64_t disk;

	(void)nid;
	(void)ino;
	s->total++;
	s->types[ezfs_mode_ftype(st->mode) & 7]++;
	/* dump.erofs counts layouts of every inode, directories too */
	if (is_compressed(st))
		s->compressed++;
	else
		s->uncompressed++;
	if (!S_ISREG(st->mode))
		return 0;
	disk = ondisk_size(st, s->blkszbits);
	s->orig += st->size;
	s->disk += disk;
	s->hist_orig[size_class(st->size)]++;
	s->hist_disk[size_class(disk)]++;
	base = base ? base + 1 : path;
	bl = strlen(base);
	for (i = 0; i < CD_NSUFFIX; i++) {
		sl = strlen(cd_suffixes[i]);
		if (bl >= sl && !strcmp(base + bl - sl, cd_suffixes[i]))
			break;
	}
	s->suffix[i]++;
	return 0;
}

static void bar_row(const char *head, uint64_t n, uint64_t all)
{
	double r = all ? 100.0 * n / all : 0;
	char bar[CD_BAR + 1];
	int k = (int)(r * CD_BAR / 100);

	memset(bar, ' ', CD_BAR);
	memset(bar, '#', k > CD_BAR ? CD_BAR : k);
	bar[CD_BAR] = 0;
	printf("%s\t%-10" PRIu64 "%10.2f%% |%s|\n", head, n, r, bar);
}

static void dump_hist(const char *title, const uint64_t *h, uint64_t files)
{
	char head[32], hi[16];
	unsigned c;

	printf("\n%s:\n>=(KB) .. <(KB)        count            ratio "
	       "|distribution                                      |\n",
	       title);
	for (c = 0; c < CD_HIST; c++) {
		unsigned lo = c ? 1u << (c - 1) : 0;

		if (c < CD_HIST - 1)
			snprintf(hi, sizeof(hi), "%u", 1u << c);
		else
			hi[0] = 0;
		snprintf(head, sizeof(head), "%6u .. %-6s", lo, hi);
		bar_row(head, h[c], files);
	}
}

static int dump_stats(ezfs_image *fs, const struct ezfs_sb_info *si)
{
	static const char *const tnames[8] = {
		"unknown type", "regular file", "directory", "char dev",
		"block dev",	"FIFO file",	"SOCK file", "symlink file",
	};
	struct ezfs_stat root;
	struct stats s;
	char head[32];
	size_t i;
	int ret;

	memset(&s, 0, sizeof(s));
	s.blkszbits = si->blkszbits;
	ret = ezfs_stat_nid(fs, si->root_nid, &root);
	if (!ret)
		ret = cli_walk(fs, si->root_nid, stats_cb, &s);
	if (ret < 0)
		return ret;
	s.total++; /* the root itself */
	s.types[EZFS_FT_DIR]++;
	if (is_compressed(&root))
		s.compressed++;
	else
		s.uncompressed++;
	/*
	 * The packed inode's blocks (the fragments of every file) are file
	 * data on disk: dump.erofs 1.9.3 adds them to the total file size
	 * (and so to the compress rate), to the on-disk histogram and to the
	 * count of its layout, not to the file counts.
	 */
	if ((si->feature_incompat & CD_FRAGMENTS) && si->packed_nid) {
		struct ezfs_stat pk;
		uint64_t disk;

		ret = ezfs_stat_nid(fs, si->packed_nid, &pk);
		if (ret < 0)
			return ret;
		disk = ondisk_size(&pk, s.blkszbits);
		if (is_compressed(&pk))
			s.compressed++;
		else
			s.uncompressed++;
		s.disk += disk;
		s.hist_disk[size_class(disk)]++;
	}
	printf("Filesystem total file count:\t\t%" PRIu64 "\n", s.total);
	for (i = 0; i < 8; i++) {
		char label[64];

		snprintf(label, sizeof(label),
			 "Filesystem %s count:", tnames[i]);
		printf("%s\t\t%" PRIu64 "\n", label, s.types[i]);
	}
	printf("%-40s%" PRIu64 "\n",
	       "Filesystem compressed files:", s.compressed);
	printf("%-40s%" PRIu64 "\n",
	       "Filesystem uncompressed files:", s.uncompressed);
	printf("%-40s%" PRIu64 " Bytes\n",
	       "Filesystem total original file size:", s.orig);
	printf("%-40s%" PRIu64 " Bytes\n",
	       "Filesystem total file size:", s.disk);
	printf("%-40s%.2f%%\n", "Filesystem compress rate:",
	       s.orig ? 100.0 * s.disk / s.orig : 0.0);
	dump_hist("Original file size distribution", s.hist_orig,
		  s.types[EZFS_FT_REG]);
	dump_hist("On-disk file size distribution", s.hist_disk,
		  s.types[EZFS_FT_REG]);
	printf("\nFile type distribution:\ntype                   count"
	       "            ratio |distribution"
	       "                                      |\n");
	for (i = 0; i <= CD_NSUFFIX; i++) {
		snprintf(head, sizeof(head), "%-17s",
			 i < CD_NSUFFIX ? cd_suffixes[i] : "others");
		bar_row(head, s.suffix[i], s.types[EZFS_FT_REG]);
	}
	return 0;
}

/* The first path of nid, for --nid (the root is "/"). */
struct find {
	uint64_t nid;
	char *path;
};

static int find_cb(void *arg, const char *path, uint64_t nid,
		   const struct ezfs_stat *st, ezfs_inode *ino)
{
	struct find *f = arg;
	size_t n = strlen(path);

	(void)st;
	(void)ino;
	if (nid != f->nid)
		return 0;
	f->path = malloc(n + 2);
	if (!f->path)
		return -ENOMEM;
	f->path[0] = '/';
	memcpy(f->path + 1, path, n + 1);
	return 1;
}

static char *nid_path(ezfs_image *fs, uint64_t nid)
{
	struct find f = { .nid = nid };

	if (nid == ezfs_root_nid(fs))
		return strdup("/");
	cli_walk(fs, ezfs_root_nid(fs), find_cb, &f);
	return f.path;
}

static void dump_inode(const char *path, const struct ezfs_stat *st,
		       unsigned bits)
{
	uint64_t disk = ondisk_size(st, bits);
	time_t t = (time_t)st->mtime;
	char mode[11], tb[32] = "?";
	struct tm tm;

	cli_mode_string(st->mode, mode);
	if (localtime_r(&t, &tm))
		strftime(tb, sizeof(tb), "%Y-%m-%d %H:%M:%S", &tm);
	printf("File : %s\n", path ? path : "(unknown)");
	printf("Size: %" PRIu64 "  On-disk size: %" PRIu64 "  %s\n", st->size,
	       disk, cli_type_name(st->mode));
	printf("NID: %" PRIu64 "   Links: %u   Layout: %u   Compression "
	       "ratio: %.2f%%\n",
	       st->nid, st->nlink, st->layout,
	       st->size ? 100.0 * disk / st->size : 100.0);
	printf("Inode size: %u   Extent size: 0   Xattr size: %u\n",
	       st->extended ? 64 : 32, st->xattr_isize);
	printf("Uid: %u   Gid: %u  Access: %04o/%s\n", st->uid, st->gid,
	       st->mode & 07777, mode + 1);
	printf("Timestamp: %s.%09u\n", tb, st->mtime_nsec);
}

static int dump_extents(ezfs_image *fs, ezfs_inode *ino,
			const struct ezfs_stat *st, const char *path)
{
	struct ezfs_extent e;
	uint64_t la = 0, off;
	unsigned n = 0, dev;
	int ret;

	printf("\n Ext:   logical offset   |  length :     physical offset"
	       "    |  length\n");
	while (la < st->size) {
		ret = ezfs_map(ino, la, &e);
		if (ret < 0)
			return ret;
		if (!e.llen || e.la + e.llen <= la)
			return -EUCLEAN;
		/* erofs-utils, as the kernel, ends a chunk at a block end */
		if (st->layout == EZFS_LAYOUT_CHUNK_BASED) {
			struct ezfs_sb_info si;
			uint64_t r;

			ezfs_get_sb_info(fs, &si);
			r = (si.blksz - (e.llen & (si.blksz - 1))) &
			    (si.blksz - 1);
			e.llen += r;
			e.plen += r;
		}
		off = e.pa;
		dev = 0;
		if ((e.flags & EZFS_EXTENT_MAPPED) &&
		    !(e.flags & (EZFS_EXTENT_FRAGMENT | EZFS_EXTENT_INLINE |
				 EZFS_EXTENT_META)))
			ezfs_addr_device(fs, e.pa, &dev, &off);
		printf("%4u: %8" PRIu64 "..%8" PRIu64 " | %7" PRIu64
		       " : %10" PRIu64 "..%10" PRIu64 " | %7" PRIu64,
		       n++, e.la, e.la + e.llen, e.llen, off, off + e.plen,
		       e.plen);
		if (dev)
			printf("  # device %u", dev);
		printf("\n");
		la = e.la + e.llen;
	}
	printf("%s: %u extents found\n", path ? path : "", n);
	return 0;
}

static int ls_cb(void *arg, const char *name, size_t namelen, uint64_t nid,
		 unsigned ftype, uint64_t next_pos)
{
	(void)arg;
	(void)next_pos;
	printf("%10" PRIu64 " %4u  %.*s\n", nid, ftype, (int)namelen, name);
	return 0;
}

static int dump_cat(ezfs_inode *ino, const struct ezfs_stat *st)
{
	static char buf[1 << 16];
	uint64_t off = 0;
	ssize_t n;

	if (!S_ISREG(st->mode))
		return -EISDIR;
	while (off < st->size) {
		n = ezfs_pread(ino, buf, sizeof(buf), off);
		if (n < 0)
			return (int)n;
		if (!n)
			return -EUCLEAN;
		if (fwrite(buf, 1, n, stdout) != (size_t)n)
			return -EIO;
		off += n;
	}
	return 0;
}

struct cd_opts {
	int super, stats, extents, ls, cat, blkid, inode;
	uint64_t nid;
	const char *path;
};

static int dump_one(ezfs_image *fs, const char *img, struct cd_opts *o,
		    const struct ezfs_sb_info *si)
{
	struct ezfs_stat st;
	ezfs_inode *ino;
	char *path = NULL;
	uint64_t nid = o->nid;
	int ret = 0;

	if (o->path)
		ret = ezfs_resolve(fs, o->path, &nid);
	if (!ret)
		ret = ezfs_inode_get(fs, nid, &ino);
	if (ret < 0 && !o->path &&
	    (ret == -EUCLEAN || ret == -EOPNOTSUPP || ret == -ERANGE)) {
		/*
		 * No inode at a number the user typed says nothing about the
		 * image: name the nid, not a corruption (the library's line,
		 * held by cli_error, says what lies there instead).
		 */
		cli_error(CD, "%s: nid %" PRIu64 " is not an inode", img, nid);
		return 1;
	}
	if (ret < 0) {
		cli_fail(CD, img, o->path, ret);
		return 1;
	}
	ezfs_inode_stat(ino, &st);
	if (o->cat) {
		ret = dump_cat(ino, &st);
		goto out;
	}
	path = o->path ? strdup(o->path) : nid_path(fs, nid);
	dump_inode(path, &st, si->blkszbits);
	if (o->extents)
		ret = dump_extents(fs, ino, &st, path);
	if (!ret && o->ls) {
		if (!S_ISDIR(st.mode)) {
			ret = -ENOTDIR;
		} else {
			printf("\n       NID TYPE  FILENAME\n");
			ret = ezfs_readdir(ino, 0, ls_cb, NULL);
		}
	}
out:
	if (ret < 0)
		cli_fail(CD, img, o->path ? o->path : path, ret);
	free(path);
	ezfs_inode_put(ino);
	return ret < 0 ? 1 : 0;
}

int compat_dump_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "nid", required_argument, NULL, CD_NID },
		{ "path", required_argument, NULL, CD_PATH },
		{ "ls", no_argument, NULL, CD_LS },
		{ "cat", no_argument, NULL, CD_CAT },
		{ "blkid-udev", no_argument, NULL, CD_BLKID },
		{ "version", no_argument, NULL, 'V' },
		CLI_ENGINE_OPTS,
		CLI_IMAGE_OPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli_log lg = { .max = 20 };
	struct ezfs_sb_info si;
	struct cd_opts o;
	ezfs_image *fs;
	char *end;
	int c, ret = 0;

	memset(&o, 0, sizeof(o));
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":SVesh", opts, NULL)) != -1) {
		switch (c) {
		case 'S':
			o.stats = 1;
			break;
		case 'V':
			printf("dump.erofs (ezfs) %s\n", EZFS_VERSION_STRING);
			return 0;
		case 'e':
			o.extents = 1;
			break;
		case 's':
			o.super = 1;
			break;
		case CD_NID:
			errno = 0;
			o.nid = strtoull(optarg, &end, 0);
			if (errno || *end || end == optarg || *optarg == '-')
				return cli_usage_error(CD, "invalid nid '%s'",
						       optarg);
			o.inode = 1;
			o.path = NULL;
			break;
		case CD_PATH:
			o.path = optarg;
			o.inode = 1;
			break;
		case CD_LS:
			o.ls = 1;
			break;
		case CD_CAT:
			o.cat = 1;
			break;
		case CD_BLKID:
			o.blkid = 1;
			break;
		default:
			ret = cli_opt_other(CD, c, argv, usage);
			if (ret >= 0)
				return ret;
		}
	}
	ret = 0; /* -1 from cli_opt_other: an option taken */
	if (cli_nargs(CD, argc - optind, 1, 1, "missing IMAGE"))
		return 2;
	if ((o.extents || o.ls || o.cat) && !o.inode)
		return cli_usage_error(CD, "-e, --ls and --cat need --nid or "
					   "--path");
	if (cli_open(CD, argv[optind], &lg, &fs) < 0)
		return 1;
	ezfs_get_sb_info(fs, &si);
	if (o.blkid)
		dump_blkid(&si);
	if (o.super || (!o.stats && !o.inode && !o.blkid))
		dump_super(&si);
	if (o.stats && (ret = dump_stats(fs, &si)) < 0) {
		cli_fail(CD, argv[optind], NULL, ret);
		ret = 1;
	}
	if (!ret && o.inode)
		ret = dump_one(fs, argv[optind], &o, &si);
	ezfs_image_close(fs);
	return ret;
}
