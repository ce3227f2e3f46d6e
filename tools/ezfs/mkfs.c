/* SPDX-License-Identifier: MIT */
/* mkfs.c - `ezfs mkfs`: parse options, run the builder, print a summary. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "common.h"
#include "ezfs/build.h"
#include "mkfs_extra.h"
#include "mkfs_inc.h"
#include "mkfs_oci.h"
#include "mkfs_s3.h"
#include "mkfs_verity.h"
#include "mkfs_z.h"
#include "mkfs_sig.h"

#define CMD "mkfs"

static const char usage_text[] =
	"usage: ezfs mkfs [OPTIONS] IMAGE SOURCEDIR\n"
	"       ezfs mkfs [OPTIONS] --tar[=f|=i] IMAGE [TARFILE|-]\n"
	"       ezfs mkfs [OPTIONS] IMAGE LAYER.erofs... (rebuild: the "
	"layers\n"
	"       merged, the last uppermost, data left in them as devices)\n"
	"       ezfs mkfs [OPTIONS] --oci[=...] IMAGE HOST[:PORT]/REPO[:TAG]\n"
	"       ezfs mkfs [OPTIONS] --s3=ENDPOINT[,...] IMAGE BUCKET[/PREFIX]\n"
	"Build an EROFS image of SOURCEDIR, or of a tar archive (plain, gzip,\n"
	"xz, lzma or zstd; standard input when TARFILE is - or missing).\n"
	"IMAGE is a regular file, replaced only once the new image is "
	"complete\n"
	"(it keeps its mode and owner; a new one gets 0666 less the umask; a\n"
	"symlink is followed), or a block device, written in place.\n"
	"  --tar=f, --tar        SOURCE is a tar archive (--ungzip, --unxz: "
	"the\n"
	"                        same; the compression is detected anyway)\n"
	"  --tar=i               a tar index: only metadata, every file's "
	"data\n"
	"                        stays in the plain tar, the image's device "
	"1\n"
	"                        (512-byte blocks; the mount option "
	"device=TAR,\n"
	"                        or the tar appended to IMAGE)\n"
	"  -z ALG[,level=N|,N][,dictsize=N][:ALG2...]\n"
	"                        compress: lz4, lz4hc (levels 0..12), lzma "
	"(0..9,\n"
	"                        100..109 extreme), deflate, libdeflate, zstd\n"
	"                        (0..22), none (deflate: ezfs' one-pass "
	"encoder,\n"
	"                        levels 0..9; libdeflate: trial compressions,\n"
	"                        0..12, also deflate 10..12; both default to "
	"1\n"
	"                        as in mkfs.erofs);\n"
	"                        further algorithms are for --compress-hints\n"
	"  --compress-hints=FILE per-file rules 'PCLUSTER_BYTES [ALG_INDEX] "
	"REGEX'\n"
	"  -C BYTES              max pcluster size, a multiple of the block "
	"size\n"
	"                        up to 1048576 (default 1 block)\n"
	"  -b BYTES              block size (512..4096, default 4096)\n"
	"  -T SECONDS            fixed build timestamp (also "
	"SOURCE_DATE_EPOCH)\n"
	"  --all-time            -T applies to every file (default)\n"
	"  --mkfs-time           -T is the build time only; files keep mtimes\n"
	"  -U UUID               volume UUID\n"
	"  -L LABEL              volume label (at most 15 bytes)\n"
	"  --all-root            files owned by root\n"
	"  --force-uid=N, --force-gid=N\n"
	"  --uid-offset=N, --gid-offset=N  added to every owner\n"
	"  -x N                  xattrs used by more than N inodes are "
	"shared;\n"
	"                        N < 0 drops xattrs (default 2)\n"
	"  -E OPT[,OPT]          noinline_data, force-inode-compact,\n"
	"                        force-inode-extended, legacy-compress, "
	"nosbcrc,\n"
	"                        ztailpacking, fragments, all-fragments,\n"
	"                        dedupe, force-chunk-indexes, 48bit\n"
	"  --exclude-path=PATH   skip PATH (relative to SOURCEDIR); "
	"repeatable\n"
	"  --exclude-regex=RE    skip paths matching RE; repeatable\n"
	"  --order=FILE          the files FILE lists (a path a line) get "
	"their data\n"
	"                        first, in that order, one after the "
	"other\n"
	"  -j, --jobs N, --workers=N\n"
	"                        compression threads, 1..1024 (default: all\n"
	"                        cores)\n"
	"  --chunksize=BYTES     chunk-based uncompressed files (power of two\n"
	"                        >= block size): identical chunks stored "
	"once,\n"
	"                        all-zero chunks as holes\n"
	"  --blobdev=FILE        with --chunksize: the chunk data goes to "
	"FILE,\n"
	"                        the image's device 1 (the mount option\n"
	"                        device=FILE)\n"
	"  --fsync               wait until the image is on disk before it\n"
	"                        replaces IMAGE (default: not, as mkfs.erofs\n"
	"                        and mksquashfs; --no-fsync)\n"
	"  --max-kernel=X.Y      refuse what Linux X.Y cannot mount "
	"(docs/kernels.md)\n" MKFS_EXTRA_HELP
	"  -q, --quiet           no progress, no summary\n"
	"  -V, --version         print the version\n"
	"mkfs.erofs compatibility:\n"
	"  -U clear|random       all-zero or random UUID\n"
	"  --ignore-mtime        every file gets the build time\n"
	"  --preserve-mtime      every file keeps its mtime\n"
	"  --hard-dereference    hard links become separate files\n"
	"  --offset=BYTES        the image starts at BYTES into IMAGE\n"
	"  -d N                  message level (accepted)\n"
	"  --zD[=0|1]            compressed directories (in the packed "
	"inode)\n"
	"  -m BYTES[:X]          inodes inside the metabox inode, compressed "
	"in\n"
	"                        BYTES pclusters with -z configuration or\n"
	"                        algorithm X (Linux 6.17)\n"
	"  -E dot-omitted        directories without \".\" entries "
	"(48bit)\n"
	"  -E fragdedupe=off|inode|full, force-inode-blockmap,\n"
	"     [^]xattr-name-filter, plain-xattr-prefixes\n"
	"  --MZ, --dsunit=N, --max-extent-bytes=N, --xattr-prefix=P,\n"
	"  --sort=path|none, --product-out=DIR\n"
	"                        accepted (layout choices ezfs makes itself)\n"
	"Android:\n"
	"  --mount-point=DIR     the image's place in the device tree\n"
	"  --fs-config-file=F    canned fs_config: owners, modes, "
	"capabilities\n"
	"  --fs-config-missing=keep|error\n"
	"                        a path the fs_config lacks (default: error)\n"
	"  --file-contexts=F     SELinux labels (text or compiled)\n"
	"  --block-list-file=F   list each file's data blocks into F\n"
	"  --sparse              write an Android sparse image (simg2img\n"
	"                        gives back the plain one)\n"
	"Containers:\n"
	"  --aufs                .wh.NAME whiteouts become overlayfs ones\n"
	"  --ovlfs-strip[=0|1]   drop whiteouts and trusted.overlay.* "
	"xattrs\n" MKFS_INC_HELP MKFS_OCI_HELP MKFS_S3_HELP MKFS_VERITY_HELP;

struct mkfs_state {
	int quiet;
	int logged_error;
	struct cli_progress pr;
	int phase;
};

static void mkfs_log(void *arg, int level, const char *msg)
{
	struct mkfs_state *s = arg;

	if (level == EZFS_LOG_ERROR)
		s->logged_error = 1;
	else if (s->quiet)
		return;
	cli_error(CMD, "%s%s", level == EZFS_LOG_WARN ? "warning: " : "", msg);
}

static void mkfs_progress(void *arg, const struct ezfs_build_progress *p)
{
	struct mkfs_state *s = arg;

	if (p->phase != EZFS_BUILD_DATA)
		return;
	if (s->phase != EZFS_BUILD_DATA) {
		s->phase = EZFS_BUILD_DATA;
		cli_progress_init(&s->pr, s->quiet, "mkfs", "files",
				  p->bytes_total, p->items_total);
	}
	cli_progress_update(&s->pr, p->bytes, p->items, 0);
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || end == s || *end || *s == '-' ? -EINVAL : 0;
}

static int parse_uuid(const char *s, uint8_t out[16])
{
	int n = 0;

	for (; *s && n < 32; s++) {
		int v;

		if (*s == '-')
			continue;
		if (*s >= '0' && *s <= '9')
			v = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			v = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			v = *s - 'A' + 10;
		else
			return -EINVAL;
		if (n & 1)
			out[n / 2] |= (uint8_t)v;
		else
			out[n / 2] = (uint8_t)(v << 4);
		n++;
	}
	return n == 32 && !*s ? 0 : -EINVAL;
}

/* Options accepted for mkfs.erofs command lines but not acted on: printed
 * as warnings once the options are read (unless -q) */
struct mkfs_ignored {
	const char *what[16];
	unsigned n;
};

static void ignored(struct mkfs_ignored *ig, const char *what)
{
	unsigned i;

	for (i = 0; i < ig->n; i++)
		if (!strcmp(ig->what[i], what))
			return;
	if (ig->n < sizeof(ig->what) / sizeof(ig->what[0]))
		ig->what[ig->n++] = what;
}

/* What the mkfs.erofs spellings below leave for after the options */
struct mkfs_compat {
	int mtime;	   /* 1: --ignore-mtime, 2: --preserve-mtime */
	char *mount_point; /* --mount-point without its slashes */
	int blockmap;	   /* -E force-inode-blockmap was given */
	int blksz;	   /* -b was given */
	const char *mbox;  /* -m's argument */
};

/* -E items that take no value: the flag they set (or clear) */
static const struct e_flag {
	const char *name;
	unsigned set, clear;
} e_flags[] = {
	{ "noinline_data", EZFS_BUILD_NOINLINE_DATA, 0 },
	{ "^inline_data", EZFS_BUILD_NOINLINE_DATA, 0 },
	{ "inline_data", 0, EZFS_BUILD_NOINLINE_DATA },
	{ "force-inode-compact", EZFS_BUILD_FORCE_COMPACT, 0 },
	{ "force-inode-extended", EZFS_BUILD_FORCE_EXTENDED, 0 },
	{ "legacy-compress", EZFS_BUILD_LEGACY_COMPRESS, 0 },
	{ "ztailpacking", EZFS_BUILD_ZTAILPACKING, 0 },
	{ "^ztailpacking", 0, EZFS_BUILD_ZTAILPACKING },
	{ "fragments", EZFS_BUILD_FRAGMENTS, 0 },
	{ "^fragments", 0, EZFS_BUILD_FRAGMENTS | EZFS_BUILD_ALL_FRAGMENTS },
	{ "all-fragments", EZFS_BUILD_ALL_FRAGMENTS, 0 },
	{ "dedupe", EZFS_BUILD_DEDUPE, 0 },
	{ "^dedupe", 0, EZFS_BUILD_DEDUPE },
	{ "force-chunk-indexes", EZFS_BUILD_CHUNK_INDEXES, 0 },
	{ "force-inode-blockmap", 0, EZFS_BUILD_CHUNK_INDEXES },
	{ "48bit", EZFS_BUILD_48BIT, 0 },
	{ "nosbcrc", EZFS_BUILD_NO_SBCRC, 0 },
};

/* One -E item of len bytes at tok: 0, or 2 after a usage error */
static int parse_E_item(const char *tok, size_t len,
			struct ezfs_build_params *p, struct mkfs_ignored *ig,
			struct mkfs_compat *cp)
{
	const char *eq = memchr(tok, '=', len);
	size_t klen = eq ? (size_t)(eq - tok) : len, i;
	const char *val = eq ? eq + 1 : NULL;
	int vlen = eq ? (int)(tok + len - val) : 0;

#define IS(s) (klen == strlen(s) && !strncmp(tok, s, klen))
	for (i = 0; !eq && i < sizeof(e_flags) / sizeof(e_flags[0]); i++) {
		if (strlen(e_flags[i].name) != len ||
		    strncmp(tok, e_flags[i].name, len))
			continue;
		p->flags |= e_flags[i].set;
		p->flags &= ~e_flags[i].clear;
		if (e_flags[i].set & EZFS_BUILD_CHUNK_INDEXES)
			cp->blockmap = 0;
		if (e_flags[i].clear & EZFS_BUILD_CHUNK_INDEXES)
			cp->blockmap = 1;
		return 0;
	}
	if (IS("xattr-name-filter") && !eq) {
		p->no_xattr_filter = 0; /* the default, as 1.9.3 */
		return 0;
	}
	if (IS("^xattr-name-filter") && !eq) {
		p->no_xattr_filter = 1;
		return 0;
	}
	if (IS("fragdedupe")) {
		/* identical fragments are always stored once, whole-file
		 * ones included: the kernel sees the same files */
		if (val && ((vlen == 3 && !strncmp(val, "off", 3)) ||
			    (vlen == 5 && !strncmp(val, "inode", 5)) ||
			    (vlen == 4 && !strncmp(val, "full", 4))))
			return 0;
		return cli_usage_error(CMD, "-E fragdedupe: takes off, inode "
					    "or full");
	}
	if (IS("fragments") && eq) {
		uint64_t v;
		char num[24];

		/* fragments=SIZE: the packed inode's pcluster size, a
		 * storage choice */
		if (vlen <= 0 || vlen >= (int)sizeof(num))
			return cli_usage_error(CMD, "-E fragments=SIZE: bad "
						    "size");
		memcpy(num, val, (size_t)vlen);
		num[vlen] = '\0';
		if (parse_u64(num, &v) || !v)
			return cli_usage_error(CMD,
					       "-E fragments=%s: bad "
					       "size",
					       num);
		p->flags |= EZFS_BUILD_FRAGMENTS;
		ignored(ig, "-E fragments=SIZE (the packed inode uses -C)");
		return 0;
	}
	if (IS("plain-xattr-prefixes") && !eq) {
		/* only matters for long xattr prefixes, which ezfs does not
		 * write (--xattr-prefix) */
		return 0;
	}
	if (IS("dot-omitted") && !eq) {
		/* no "." entries; implies 48bit, as in 1.9.3 */
		p->flags |= EZFS_BUILD_48BIT;
		p->dot_omitted = 1;
		return 0;
	}
#undef IS
	if (!len)
		return cli_usage_error(CMD,
				       "-E: empty option (-E OPT[,OPT...])");
	return cli_usage_error(CMD, "unknown -E option '%.*s' (see --help)",
			       (int)len, tok);
}

/* -E OPT[,OPT]...: 0, or 2 after a usage error naming the bad item */
static int parse_E(const char *arg, struct ezfs_build_params *p,
		   struct mkfs_ignored *ig, struct mkfs_compat *cp)
{
	const char *tok = arg;

	for (;;) {
		size_t len = strcspn(tok, ",");
		int ret;

		if (!len)
			return cli_usage_error(CMD,
					       "-E '%s': empty option "
					       "(-E OPT[,OPT...])",
					       arg);
		ret = parse_E_item(tok, len, p, ig, cp);
		if (ret)
			return ret;
		if (!tok[len])
			return 0;
		tok += len + 1;
	}
}

/* -x N: any int (N < 0 drops xattrs) */
static int parse_int(const char *s, int *v)
{
	char *end;
	long l;

	errno = 0;
	l = strtol(s, &end, 10);
	if (errno || end == s || *end || l < INT_MIN || l > INT_MAX)
		return -EINVAL;
	*v = (int)l;
	return 0;
}

/* -j N, --jobs N, --workers=N: 0, or 2 after a usage error */
static int parse_jobs(const char *opt, const char *arg, unsigned *n)
{
	*n = cli_parse_threads(arg);
	if (*n)
		return 0;
	return cli_usage_error(CMD, "%s: bad thread count '%s' (1..1024)", opt,
			       arg);
}

static int is_dir(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

/* Rebuild mode: SOURCE is a file holding an EROFS superblock (magic). */
static int is_erofs_image(const char *path)
{
	unsigned char m[4];
	struct stat st;
	FILE *f;
	int r = 0;

	if (stat(path, &st) || S_ISDIR(st.st_mode))
		return 0;
	f = fopen(path, "rb");
	if (!f)
		return 0;
	if (!fseek(f, 1024, SEEK_SET) && fread(m, 1, 4, f) == 4)
		r = m[0] == 0xE2 && m[1] == 0xE1 && m[2] == 0xF5 &&
		    m[3] == 0xE0;
	fclose(f);
	return r;
}

/*
 * Where IMAGE leads, checked before the source is read: *target is image
 * with its symlinks resolved (malloc'd), *device 1 for a block device.
 * 0, or 1 after one line naming image.
 */
static int check_image(const char *image, char **target, int *device)
{
	const char *what = NULL, *slash;
	char *cur = ezfs_build_image_target(image), *dir;
	struct stat st;
	int err = cur ? 0 : errno;

	*device = 0;
	if (!err && !stat(cur, &st)) {
		if (S_ISBLK(st.st_mode)) {
			*device = 1;
			if (access(cur, W_OK))
				err = errno;
		} else if (S_ISDIR(st.st_mode)) {
			err = EISDIR;
		} else if (S_ISCHR(st.st_mode)) {
			what = "a character device";
		} else if (S_ISFIFO(st.st_mode)) {
			what = "a FIFO";
		} else if (!S_ISREG(st.st_mode)) {
			what = "a special file";
		}
	} else if (!err && errno != ENOENT) {
		err = errno;
	}
	if (!err && !what && !*device) {
		/* a new file or a replacement is made in the directory */
		slash = strrchr(cur, '/');
		dir = slash ? strndup(cur, (size_t)(slash - cur) + 1)
			    : strdup(".");
		if (!dir)
			err = ENOMEM;
		else if (stat(dir, &st) || access(dir, W_OK | X_OK))
			err = errno;
		else if (!S_ISDIR(st.st_mode))
			err = ENOTDIR;
		free(dir);
	}
	if (what)
		cli_error(CMD, "%s: %s, not a regular file or a block device",
			  image, what);
	else if (err)
		cli_error(CMD, "%s: %s", image, strerror(err));
	if (what || err) {
		free(cur);
		return 1;
	}
	*target = cur;
	return 0;
}

enum {
	OPT_ALL_TIME = 256,
	OPT_MKFS_TIME,
	OPT_ALL_ROOT,
	OPT_FORCE_UID,
	OPT_FORCE_GID,
	OPT_EXCL_PATH,
	OPT_EXCL_RE,
	OPT_WORKERS,
	OPT_HELP,
	OPT_NOFSYNC,
	OPT_FSYNC,
	OPT_CHUNKSIZE,
	OPT_HINTS,
	OPT_UID_OFF,
	OPT_GID_OFF,
	OPT_TAR,
	OPT_UNGZIP,
	OPT_UNXZ,
	OPT_JOBS,
	OPT_HARD_DEREF,
	OPT_IGN_MTIME,
	OPT_KEEP_MTIME,
	OPT_OFFSET,
	OPT_MOUNT_POINT,
	OPT_PRODUCT_OUT,
	OPT_FS_CONFIG,
	OPT_FILE_CONTEXTS,
	OPT_BLOCK_LIST,
	OPT_FS_CONFIG_MISSING,
	OPT_XATTR_PREFIX,
	OPT_ZD,
	OPT_MZ,
	OPT_DSUNIT,
	OPT_MAX_EXTENT,
	OPT_AUFS,
	OPT_OVLFS_STRIP,
	OPT_SORT,
	OPT_ORDER,
	OPT_BLOBDEV,
	OPT_VERSION,
	OPT_SPARSE,
	OPT_MAX_KERNEL,
};

/* --tar[=f|=i], --ungzip, --unxz: 0 (*tar: 1 full, 2 index), or the
 * usage error's exit status */
static int parse_tar(int c, const char *arg, int *tar)
{
	/* "0" is mkfs.erofs' other spelling of "i" */
	if (c == OPT_TAR && arg && (!strcmp(arg, "i") || !strcmp(arg, "0"))) {
		*tar = 2;
		return 0;
	}
	if (c == OPT_TAR && arg && strcmp(arg, "f"))
		return cli_usage_error(CMD,
				       "--tar=%s: not supported (full images, "
				       "--tar or --tar=f, and indexes, "
				       "--tar=i)",
				       arg);
	if (c != OPT_TAR && arg)
		return cli_usage_error(CMD, "--%s=FILE: not supported",
				       c == OPT_UNGZIP ? "ungzip" : "unxz");
	if (c == OPT_TAR || !*tar)
		*tar = 1;
	return 0;
}

/*
 * --tar=i (index) and --blobdev, once all options are read: 0, or 2 after
 * a usage error. A tar index has 512-byte blocks, the tar's own, and
 * stores no data: -b, -z, --compress-hints, -C and --chunksize are
 * accepted and ignored, as mkfs.erofs does (containerd passes its mkfs
 * options to --tar=i too).
 */
static int check_devices(struct ezfs_build_params *p,
			 const struct mkfs_compat *cp, struct mkfs_ignored *ig,
			 int index, const char **hints, const char **pcluster)
{
	if (index) {
		if (p->blobdev)
			return cli_usage_error(
				CMD, "--blobdev: not with --tar=i (the "
				     "tar is the image's device)");
		p->tar_index = 1;
		if (cp->blksz && p->blksz != 512)
			ignored(ig, "-b (a tar index has 512-byte blocks)");
		p->blksz = 512;
		if (p->alg >= 0 || p->n_more_algs || *hints || *pcluster)
			ignored(ig, "-z, -C, --compress-hints (a tar index "
				    "stores no file data)");
		if (p->chunksize)
			ignored(ig, "--chunksize (a tar index sizes each "
				    "file's chunks)");
		p->alg = -1;
		p->n_more_algs = 0;
		p->chunksize = 0;
		*hints = NULL;
		*pcluster = NULL;
		return 0;
	}
	if (!p->blobdev)
		return 0;
	if (!p->chunksize)
		return cli_usage_error(CMD,
				       "--blobdev=%s: needs --chunksize "
				       "(the chunk data goes to the blob)",
				       p->blobdev);
	if (cp->blockmap)
		return cli_usage_error(CMD, "--blobdev: chunk indexes name the "
					    "device; not with -E "
					    "force-inode-blockmap");
	return 0;
}

/* What needs all options (the block size): 0, or 2 after a usage error */
static int check_options(struct ezfs_build_params *p, const char *pcluster)
{
	unsigned blksz = p->blksz ? p->blksz : 4096;
	uint64_t v;

	if (pcluster) {
		if (parse_u64(pcluster, &v) || !v || v % blksz ||
		    v > (1u << 20))
			return cli_usage_error(
				CMD,
				"-C %s: the pcluster size "
				"must be a multiple of the block "
				"size (%u) up to 1048576",
				pcluster, blksz);
		p->pcluster_size = (uint32_t)v;
	}
	if (p->chunksize && p->chunksize < blksz)
		return cli_usage_error(CMD,
				       "--chunksize %u: less than the "
				       "block size (%u)",
				       p->chunksize, blksz);
	if ((p->flags & EZFS_BUILD_FORCE_COMPACT) &&
	    (p->flags & EZFS_BUILD_FORCE_EXTENDED))
		return cli_usage_error(CMD, "-E force-inode-compact and "
					    "force-inode-extended exclude each "
					    "other");
	return 0;
}

/*
 * -m#[:X] (metabox): # the pcluster size in bytes (a multiple of the
 * block size, at most -C), X a configuration index (0: the first -z
 * algorithm) or an algorithm (one of -z's, else it becomes another
 * configuration, as 1.9.3 adds it): 0, or 2 after a usage error.
 */
static int check_mbox(struct ezfs_build_params *p, const char *arg,
		      struct mkfs_z *zs)
{
	unsigned blksz = p->blksz ? p->blksz : 4096;
	unsigned nalgs = p->alg < 0 ? 0 : 1 + (unsigned)p->n_more_algs, k;
	uint32_t maxpc = p->pcluster_size ? p->pcluster_size : blksz;
	const char *x = strchr(arg, ':');
	struct ezfs_build_params t;
	struct mkfs_z tz = { .nhints = 0 };
	char num[32];
	size_t n = x ? (size_t)(x - arg) : strlen(arg);
	uint64_t v;

	if (p->tar_index || p->blobdev)
		return cli_usage_error(CMD,
				       "-m: not with %s (a metabox image "
				       "has no device table)",
				       p->tar_index ? "--tar=i" : "--blobdev");
	if (n >= sizeof(num))
		n = sizeof(num) - 1;
	memcpy(num, arg, n);
	num[n] = 0;
	if (parse_u64(num, &v) || !v || v % blksz || v > maxpc)
		return cli_usage_error(CMD,
				       "-m %s: the metabox pcluster size must "
				       "be a multiple of the block size (%u) "
				       "up to the largest pcluster (%u, -C)",
				       arg, blksz, maxpc);
	p->metabox_pcluster = (uint32_t)v;
	p->metabox_zalg = 0;
	if (!x)
		return 0;
	x++;
	if (*x >= '0' && *x <= '9') {
		if (parse_u64(x, &v) || v >= nalgs)
			return cli_usage_error(CMD,
					       "-m %s: no compression "
					       "configuration %s (-z gives %u)",
					       arg, x, nalgs);
		p->metabox_zalg = (unsigned)v;
		return 0;
	}
	if (!nalgs)
		return cli_usage_error(CMD, "-m %s: an algorithm needs -z",
				       arg);
	ezfs_build_params_init(&t);
	if (mkfs_z_parse(CMD, x, &t, &tz))
		return 2;
	mkfs_z_free(&tz);
	if (t.alg < 0 || t.n_more_algs)
		return cli_usage_error(CMD, "-m %s: one algorithm after ':'",
				       arg);
	if (t.alg == p->alg && t.hc == p->hc && t.level == p->level)
		return 0;
	for (k = 0; k < p->n_more_algs; k++)
		if (t.alg == p->more_algs[k].alg &&
		    t.hc == p->more_algs[k].hc &&
		    t.level == p->more_algs[k].level) {
			p->metabox_zalg = k + 1;
			return 0;
		}
	if (nalgs >= EZFS_BUILD_MAX_ZALGS)
		return cli_usage_error(CMD, "-m %s: more than %d algorithms",
				       arg, EZFS_BUILD_MAX_ZALGS);
	zs->more[p->n_more_algs] =
		(struct ezfs_build_zalg){ t.alg, t.hc, t.level };
	p->more_algs = zs->more;
	p->metabox_zalg = nalgs;
	p->n_more_algs++;
	return 0;
}

/* --max-kernel X.Y (or X, X.Y.Z): 0 and *v = EZFS_KVER, or -1. */
static int parse_kver(const char *arg, unsigned *v)
{
	unsigned long a, b = 0;
	char *end;

	if (*arg < '0' || *arg > '9')
		return -1;
	a = strtoul(arg, &end, 10);
	if (*end == '.') {
		if (end[1] < '0' || end[1] > '9')
			return -1;
		b = strtoul(end + 1, &end, 10);
		if (*end == '.' && end[1] >= '0' && end[1] <= '9')
			strtoul(end + 1, &end, 10); /* the patch level */
	}
	if (*end || !a || a > 255 || b > 255)
		return -1;
	*v = EZFS_KVER(a, b);
	return 0;
}

/* -z ALG whose library this build left out (EZFS_WITH_ZSTD=OFF...): one
 * line, 1; else 0. */
static int codec_missing(const struct ezfs_build_params *p)
{
	for (size_t k = 0; p->alg >= 0 && k <= p->n_more_algs; k++) {
		const struct ezfs_build_zalg *z =
			k ? &p->more_algs[k - 1] : NULL;
		int alg = z ? z->alg : p->alg, hc = z ? z->hc : p->hc;
		int level = z ? z->level : p->level;
		/* deflate levels 10..12 are libdeflate's (write/zcfg.c) */
		const char *codec =
			alg == EZFS_ALG_ZSTD ? "zstd"
			: alg == EZFS_ALG_DEFLATE && (hc || level > 9)
				? "libdeflate"
				: NULL;

		if (codec && ezfs_engine_library(codec, NULL, NULL)) {
			cli_error(CMD,
				  "-z %s: this ezfs was built without it "
				  "(ezfs --version)",
				  codec);
			return 1;
		}
	}
	return 0;
}

/* One line if feature needs more than max (what: the option): 1, else 0. */
static int too_new(const char *feature, const char *what, unsigned max)
{
	struct ezfs_feature_desc d;

	if (ezfs_feature_find(feature, &d) || d.kernel <= max)
		return 0;
	cli_error(CMD,
		  "--max-kernel=%u.%u: %s needs Linux %u.%u (%s); not "
		  "written",
		  EZFS_KVER_MAJOR(max), EZFS_KVER_MINOR(max), what,
		  EZFS_KVER_MAJOR(d.kernel), EZFS_KVER_MINOR(d.kernel), d.name);
	return 1;
}

/*
 * The features the options ask for, against --max-kernel (the table of
 * lib/format/names.c): 1 after one line naming the first too new, else 0.
 * What the build alone decides (hints' pcluster sizes, fragments of
 * compressed directories, a rebuild's layers) is image_refused's.
 */
static int kernel_refuses(const struct ezfs_build_params *p, unsigned max)
{
	unsigned blksz = p->blksz ? p->blksz : 4096;
	int algs[1 + EZFS_BUILD_MAX_ZALGS], n = 0;

	if (p->alg >= 0)
		algs[n++] = p->alg;
	for (size_t k = 0;
	     k < p->n_more_algs && n < (int)(sizeof(algs) / sizeof(algs[0]));
	     k++)
		algs[n++] = p->more_algs[k].alg;
	for (int i = 0; i < n; i++) {
		static const char *const what[] = {
			[EZFS_ALG_LZMA] = "-z lzma",
			[EZFS_ALG_DEFLATE] = "-z deflate",
			[EZFS_ALG_ZSTD] = "-z zstd",
		};

		if (algs[i] > EZFS_ALG_LZ4 && algs[i] < EZFS_ALG_MAX &&
		    too_new(ezfs_alg_name(algs[i]), what[algs[i]], max))
			return 1;
		if (algs[i] != EZFS_ALG_LZ4 &&
		    too_new("compr_cfgs", "-z other than lz4", max))
			return 1;
	}
	if (n && p->pcluster_size > blksz &&
	    too_new("big_pcluster", "-C larger than the block size", max))
		return 1;
	if (blksz < 4096 &&
	    too_new(n ? "subpage_compressed" : "subpage_blocks",
		    n ? "-b under 4096 with -z" : "-b under 4096", max))
		return 1;
	if (p->chunksize && too_new("chunked_file", "--chunksize", max))
		return 1;
	if (p->inode_digest_xattr &&
	    too_new("xattr_prefixes", "--xattr-inode-digest", max))
		return 1;
	if ((p->blobdev || p->tar_index) &&
	    too_new("device_table", p->blobdev ? "--blobdev" : "--tar=i", max))
		return 1;
	/* asked for without -z too: refused, not quietly dropped */
	if ((p->flags & EZFS_BUILD_ZTAILPACKING) &&
	    too_new("ztailpacking", "-E ztailpacking", max))
		return 1;
	if ((p->flags & (EZFS_BUILD_FRAGMENTS | EZFS_BUILD_ALL_FRAGMENTS)) &&
	    too_new("fragments",
		    p->flags & EZFS_BUILD_ALL_FRAGMENTS ? "-E all-fragments"
							: "-E fragments",
		    max))
		return 1;
	if ((p->flags & EZFS_BUILD_DEDUPE) &&
	    too_new("dedupe", "-E dedupe", max))
		return 1;
	if (n && p->compress_dir && too_new("fragments", "--zD", max))
		return 1;
	if ((p->flags & EZFS_BUILD_48BIT) &&
	    too_new("48bit", "-E 48bit (or dot-omitted)", max))
		return 1;
	if (p->metabox_pcluster && too_new("metabox", "-m", max))
		return 1;
	return 0;
}

/*
 * After the build: the image's own features against --max-kernel. Too
 * new: one line, the image removed, 1. An image that does not open alone
 * (its devices elsewhere) was checked by its options only.
 */
static int image_refused(const char *path, uint64_t offset, unsigned max)
{
	struct ezfs_open_params op;
	struct ezfs_sb_info si;
	struct ezfs_feature_desc d;
	const char *why;
	ezfs_image *fs;
	unsigned k;

	ezfs_open_params_init(&op);
	op.offset = offset;
	if (ezfs_image_open(path, &op, &fs))
		return 0;
	ezfs_get_sb_info(fs, &si);
	k = ezfs_min_kernel(&si, &why);
	ezfs_image_close(fs);
	if (k <= max)
		return 0;
	if (ezfs_feature_find(why, &d))
		d.what = why;
	cli_error(CMD,
		  "--max-kernel=%u.%u: the image needs Linux %u.%u (%s: "
		  "%s); removed",
		  EZFS_KVER_MAJOR(max), EZFS_KVER_MINOR(max),
		  EZFS_KVER_MAJOR(k), EZFS_KVER_MINOR(k), why, d.what);
	unlink(path);
	return 1;
}

static int parse_size_opt(const char *opt, const char *arg, uint64_t *v)
{
	if (!parse_u64(arg, v))
		return 0;
	return cli_usage_error(CMD, "%s '%s': not a number", opt, arg);
}

/*
 * The options of mkfs.erofs 1.9.3 (and Android's build) beyond ezfs' own:
 * 0, 2 after a usage error naming the option, -1 for an option getopt
 * did not know ('?', ':').
 */
static int parse_compat(int c, const char *arg, struct ezfs_build_params *p,
			struct mkfs_ignored *ig, struct mkfs_compat *cp)
{
	uint64_t v;
	size_t n;

	switch (c) {
	case OPT_HARD_DEREF:
		p->hard_dereference = 1;
		return 0;
	case OPT_IGN_MTIME:
		cp->mtime = 1;
		return 0;
	case OPT_KEEP_MTIME:
		cp->mtime = 2;
		return 0;
	case OPT_OFFSET:
		if (parse_size_opt("--offset", arg, &v))
			return 2;
		p->image_offset = v;
		return 0;
	case OPT_MOUNT_POINT:
		while (*arg == '/')
			arg++;
		n = strlen(arg);
		while (n && arg[n - 1] == '/')
			n--;
		free(cp->mount_point);
		cp->mount_point = strndup(arg, n);
		if (!cp->mount_point)
			return cli_usage_error(CMD, "out of memory");
		p->mount_point = cp->mount_point;
		return 0;
	case OPT_PRODUCT_OUT:
		/* where Android's built-in fs_config tables live: only
		 * used without --fs-config-file, which ezfs needs */
		return 0;
	case OPT_FS_CONFIG:
		p->fs_config_file = arg;
		return 0;
	case OPT_FS_CONFIG_MISSING:
		if (strcmp(arg, "keep") && strcmp(arg, "error"))
			return cli_usage_error(CMD,
					       "--fs-config-missing=%s: "
					       "takes keep or error",
					       arg);
		p->fs_config_keep = !strcmp(arg, "keep");
		return 0;
	case OPT_FILE_CONTEXTS:
#ifdef EZFS_HAVE_SELINUX
		p->file_contexts = arg;
		return 0;
#else
		return cli_usage_error(CMD, "--file-contexts: this ezfs was "
					    "built without libselinux");
#endif
	case OPT_BLOCK_LIST:
		p->block_list_file = arg;
		return 0;
	case OPT_XATTR_PREFIX:
		if (strncmp(arg, "user.", 5) && strncmp(arg, "trusted.", 8) &&
		    strncmp(arg, "security.", 9))
			return cli_usage_error(CMD,
					       "--xattr-prefix '%s': must "
					       "start with user., trusted. or "
					       "security.",
					       arg);
		ignored(ig, "--xattr-prefix (xattr names are stored whole)");
		return 0;
	case OPT_ZD:
		/* 0 = plain, 1 (or none) = compressed, as 1.9.3's help says
		 * (its parser swaps 0 and 1) */
		if (arg && strcmp(arg, "0") && strcmp(arg, "1"))
			return cli_usage_error(CMD, "--zD=%s: takes 0 or 1",
					       arg);
		p->compress_dir = !arg || !strcmp(arg, "1");
		return 0;
	case OPT_MZ:
		/* a layout choice with no feature bit: inodes stay where
		 * ezfs puts them */
		if (!arg || strcmp(arg, "0"))
			ignored(ig, "--MZ (inodes are not moved into a "
				    "metadata zone)");
		return 0;
	case OPT_DSUNIT:
		if (parse_size_opt("--dsunit", arg, &v))
			return 2;
		if (v > 1)
			ignored(ig, "--dsunit (data blocks are not aligned)");
		return 0;
	case OPT_MAX_EXTENT:
		if (parse_size_opt("--max-extent-bytes", arg, &v))
			return 2;
		ignored(ig, "--max-extent-bytes (extents follow -C)");
		return 0;
	case OPT_BLOBDEV:
		p->blobdev = arg;
		return 0;
	case 'm':
		cp->mbox = arg; /* check_mbox, after -z, -b and -C */
		return 0;
	case OPT_AUFS:
		p->aufs = 1;
		return 0;
	case OPT_OVLFS_STRIP:
		if (arg && strcmp(arg, "0") && strcmp(arg, "1"))
			return cli_usage_error(CMD,
					       "--ovlfs-strip=%s: takes 0 "
					       "or 1",
					       arg);
		p->ovlfs_strip = !arg || !strcmp(arg, "1");
		return 0;
	case OPT_ORDER:
		p->order_file = arg;
		return 0;
	case OPT_SORT:
		/* the order of file data in the image: the kernel sees the
		 * same files either way */
		if (strcmp(arg, "none") && strcmp(arg, "path"))
			return cli_usage_error(CMD,
					       "--sort=%s: takes path or "
					       "none",
					       arg);
		return 0;
	}
	return -1;
}

int cmd_mkfs(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "all-time", no_argument, NULL, OPT_ALL_TIME },
		{ "mkfs-time", no_argument, NULL, OPT_MKFS_TIME },
		{ "all-root", no_argument, NULL, OPT_ALL_ROOT },
		{ "force-uid", required_argument, NULL, OPT_FORCE_UID },
		{ "force-gid", required_argument, NULL, OPT_FORCE_GID },
		{ "exclude-path", required_argument, NULL, OPT_EXCL_PATH },
		{ "exclude-regex", required_argument, NULL, OPT_EXCL_RE },
		{ "workers", required_argument, NULL, OPT_WORKERS },
		{ "jobs", required_argument, NULL, OPT_JOBS },
		{ "chunksize", required_argument, NULL, OPT_CHUNKSIZE },
		{ "no-fsync", no_argument, NULL, OPT_NOFSYNC },
		{ "fsync", no_argument, NULL, OPT_FSYNC },
		{ "compress-hints", required_argument, NULL, OPT_HINTS },
		{ "uid-offset", required_argument, NULL, OPT_UID_OFF },
		{ "gid-offset", required_argument, NULL, OPT_GID_OFF },
		{ "tar", optional_argument, NULL, OPT_TAR },
		{ "ungzip", optional_argument, NULL, OPT_UNGZIP },
		{ "unxz", optional_argument, NULL, OPT_UNXZ },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ "hard-dereference", no_argument, NULL, OPT_HARD_DEREF },
		{ "ignore-mtime", no_argument, NULL, OPT_IGN_MTIME },
		{ "preserve-mtime", no_argument, NULL, OPT_KEEP_MTIME },
		{ "offset", required_argument, NULL, OPT_OFFSET },
		{ "mount-point", required_argument, NULL, OPT_MOUNT_POINT },
		{ "product-out", required_argument, NULL, OPT_PRODUCT_OUT },
		{ "fs-config-file", required_argument, NULL, OPT_FS_CONFIG },
		{ "fs-config-missing", required_argument, NULL,
		  OPT_FS_CONFIG_MISSING },
		{ "file-contexts", required_argument, NULL, OPT_FILE_CONTEXTS },
		{ "block-list-file", required_argument, NULL, OPT_BLOCK_LIST },
		{ "xattr-prefix", required_argument, NULL, OPT_XATTR_PREFIX },
		{ "zD", optional_argument, NULL, OPT_ZD },
		{ "MZ", optional_argument, NULL, OPT_MZ },
		{ "dsunit", required_argument, NULL, OPT_DSUNIT },
		{ "max-extent-bytes", required_argument, NULL, OPT_MAX_EXTENT },
		{ "blobdev", required_argument, NULL, OPT_BLOBDEV },
		{ "aufs", no_argument, NULL, OPT_AUFS },
		{ "ovlfs-strip", optional_argument, NULL, OPT_OVLFS_STRIP },
		{ "sort", required_argument, NULL, OPT_SORT },
		{ "order", required_argument, NULL, OPT_ORDER },
		{ "sparse", no_argument, NULL, OPT_SPARSE },
		{ "max-kernel", required_argument, NULL, OPT_MAX_KERNEL },
		MKFS_VERITY_OPTS,
		MKFS_EXTRA_OPTS,
		MKFS_INC_OPTS,
		MKFS_OCI_OPTS,
		MKFS_S3_OPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct ezfs_build_params p;
	struct ezfs_build_stats st;
	struct mkfs_state s = { .phase = -1 };
	const char **xpaths = NULL, **xres = NULL, *hints = NULL;
	struct mkfs_z zs = { .nhints = 0 };
	struct mkfs_ignored ig = { .n = 0 };
	struct mkfs_compat cp = { .mtime = 0 };
	struct mkfs_verity mv = { .root_hash_file = NULL };
	struct mkfs_extra ex = { .vmdk = NULL };
	struct mkfs_inc mi = { .incremental = 0 };
	struct mkfs_oci mo = { .on = 0 };
	struct mkfs_s3 ms = { .on = 0 };
	int c, err, ret = 1, mkfs_time = 0, tar = 0, device = 0, rebuild = 0;
	unsigned max_kernel = 0; /* --max-kernel, EZFS_KVER; 0: any */
	char *tmpdir = NULL, *target = NULL;
	const char *pcluster = NULL;
	ezfs_builder *b = NULL;
	const char *sde;
	uint64_t v;

	ezfs_build_params_init(&p);
	/* like mkfs.erofs and mksquashfs: no sync unless asked (the sync
	 * was 0.13 s of 0.22 for 256 MiB stored uncompressed) */
	p.flags |= EZFS_BUILD_NO_FSYNC;
	xpaths = calloc((size_t)argc, sizeof(*xpaths));
	xres = calloc((size_t)argc, sizeof(*xres));
	if (!xpaths || !xres) {
		cli_error(CMD, "out of memory");
		goto out;
	}
	optind = 1;
	opterr = 0; /* cli_opt_error() says it, once */
	while ((c = getopt_long(argc, argv, ":z:C:b:T:U:L:x:E:d:j:m:qhV", lopts,
				NULL)) != -1) {
		switch (c) {
		case 'z':
			ret = mkfs_z_parse(CMD, optarg, &p, &zs);
			if (ret)
				goto out;
			break;
		case OPT_HINTS:
			hints = optarg;
			break;
		case OPT_UID_OFF:
		case OPT_GID_OFF:
			if (parse_u64(optarg, &v) || v > 0xFFFFFFFFu) {
				ret = cli_usage_error(CMD, "bad offset '%s'",
						      optarg);
				goto out;
			}
			if (c == OPT_UID_OFF)
				p.uid_offset = (uint32_t)v;
			else
				p.gid_offset = (uint32_t)v;
			break;
		case 'C':
			/* checked against the block size after all options */
			pcluster = optarg;
			break;
		case 'b':
			if (parse_u64(optarg, &v) || v < 512 || v > 4096 ||
			    (v & (v - 1))) {
				ret = cli_usage_error(
					CMD,
					"-b %s: the block size must be a "
					"power of two in 512..4096",
					optarg);
				goto out;
			}
			p.blksz = (unsigned)v;
			cp.blksz = 1;
			break;
		case 'T':
			if (parse_u64(optarg, &v)) {
				ret = cli_usage_error(CMD, "bad -T '%s'",
						      optarg);
				goto out;
			}
			p.has_timestamp = 1;
			p.timestamp = (int64_t)v;
			break;
		case OPT_ALL_TIME:
			mkfs_time = 0;
			break;
		case OPT_MKFS_TIME:
			mkfs_time = 1;
			break;
		case 'U':
			if (!strcmp(optarg, "random")) {
				p.has_uuid = 0;
				break;
			}
			if (!strcmp(optarg, "clear")) {
				memset(p.uuid, 0, sizeof(p.uuid));
				p.has_uuid = 1;
				break;
			}
			if (parse_uuid(optarg, p.uuid)) {
				ret = cli_usage_error(CMD, "bad -U '%s'",
						      optarg);
				goto out;
			}
			p.has_uuid = 1;
			break;
		case MKFS_OPT_VERITY_UUID:
			if (parse_uuid(optarg, p.verity_uuid)) {
				ret = cli_usage_error(CMD,
						      "--verity-uuid=%s: not "
						      "a UUID",
						      optarg);
				goto out;
			}
			p.verity_has_uuid = 1;
			p.verity = 1;
			break;
		case 'L':
			if (strlen(optarg) > 15) {
				ret = cli_usage_error(
					CMD, "label longer than 15 bytes");
				goto out;
			}
			strcpy(p.label, optarg);
			break;
		case 'x':
			if (parse_int(optarg, &p.xattr_tolerance)) {
				ret = cli_usage_error(
					CMD,
					"-x '%s': not an integer in %d..%d "
					"(N < 0 drops xattrs)",
					optarg, INT_MIN, INT_MAX);
				goto out;
			}
			break;
		case 'E':
			ret = parse_E(optarg, &p, &ig, &cp);
			if (ret)
				goto out;
			break;
		case 'd': {
			int lvl;

			/* mkfs.erofs' message level: errors and warnings
			 * are all ezfs prints anyway */
			if (parse_int(optarg, &lvl) || lvl > 9) {
				ret = cli_usage_error(CMD,
						      "-d '%s': the message "
						      "level is a number up "
						      "to 9",
						      optarg);
				goto out;
			}
			break;
		}
		case 'V':
		case OPT_VERSION:
			printf("mkfs.erofs (ezfs) %s\n", EZFS_VERSION_STRING);
			ret = 0;
			goto out;
		default:
			ret = mkfs_verity_opt(c, optarg, &p, &mv);
			if (ret < 0)
				ret = mkfs_extra_opt(c, optarg, &p, &ex);
			if (ret < 0)
				ret = mkfs_inc_opt(c, optarg, &p, &mi);
			if (ret < 0)
				ret = mkfs_oci_opt(c, optarg, &mo, &tar);
			if (ret < 0)
				ret = mkfs_s3_opt(c, optarg, &ms);
			if (ret < 0)
				ret = parse_compat(c, optarg, &p, &ig, &cp);
			if (ret < 0)
				ret = cli_opt_error(CMD, c, argv);
			if (ret)
				goto out;
			break;
		case 'q':
			s.quiet = 1;
			break;
		case OPT_ALL_ROOT:
			p.flags |= EZFS_BUILD_ALL_ROOT;
			break;
		case OPT_FORCE_UID:
		case OPT_FORCE_GID:
			if (parse_u64(optarg, &v) || v > 0xFFFFFFFFu) {
				ret = cli_usage_error(CMD, "bad id '%s'",
						      optarg);
				goto out;
			}
			if (c == OPT_FORCE_UID)
				p.force_uid = (int64_t)v;
			else
				p.force_gid = (int64_t)v;
			break;
		case OPT_EXCL_PATH:
			xpaths[p.n_exclude_paths++] = optarg;
			break;
		case OPT_EXCL_RE: {
			regex_t re;
			int rc = regcomp(&re, optarg, REG_EXTENDED | REG_NOSUB);

			if (rc) {
				char why[128];

				regerror(rc, &re, why, sizeof(why));
				ret = cli_usage_error(
					CMD,
					"--exclude-regex '%s': not a POSIX "
					"extended regex: %s",
					optarg, why);
				goto out;
			}
			regfree(&re);
			xres[p.n_exclude_regex++] = optarg;
			break;
		}
		case OPT_CHUNKSIZE: {
			char *end;
			unsigned long cs = strtoul(optarg, &end, 0);

			if (end == optarg || *end || *optarg == '-' || !cs ||
			    cs > (1ul << 30) || (cs & (cs - 1))) {
				ret = cli_usage_error(
					CMD,
					"--chunksize '%s': not a power of two "
					"from the block size to 1 GiB",
					optarg);
				goto out;
			}
			p.chunksize = (uint32_t)cs;
			break;
		}
		case OPT_WORKERS:
		case OPT_JOBS:
		case 'j':
			ret = parse_jobs(c == OPT_WORKERS ? "--workers"
					 : c == OPT_JOBS  ? "--jobs"
							  : "-j",
					 optarg, &p.workers);
			if (ret)
				goto out;
			break;
		case OPT_NOFSYNC:
			p.flags |= EZFS_BUILD_NO_FSYNC;
			break;
		case OPT_FSYNC:
			p.flags &= ~(unsigned)EZFS_BUILD_NO_FSYNC;
			break;
		case OPT_SPARSE:
			p.flags |= EZFS_BUILD_SPARSE;
			break;
		case OPT_MAX_KERNEL:
			if (parse_kver(optarg, &max_kernel)) {
				ret = cli_usage_error(CMD,
						      "--max-kernel=%s: not a "
						      "version like 5.15",
						      optarg);
				goto out;
			}
			break;
		case OPT_TAR:
		case OPT_UNGZIP:
		case OPT_UNXZ:
			ret = parse_tar(c, optarg, &tar);
			if (ret)
				goto out;
			break;
		case 'h':
		case OPT_HELP:
			fputs(usage_text, stdout);
			ret = 0;
			goto out;
		}
	}
	ret = mkfs_oci_check(&mo, &p, mi.incremental, mi.zerofill);
	if (!ret)
		ret = mkfs_s3_check(&ms, &p, tar, mi.incremental);
	if (!ret)
		ret = check_devices(&p, &cp, &ig, tar == 2, &hints, &pcluster);
	if (!ret)
		ret = check_options(&p, pcluster);
	if (!ret && cp.mbox)
		ret = check_mbox(&p, cp.mbox, &zs);
	if (ret)
		goto out;
	/* IMAGE LAYER...: an EROFS image, or several sources that do not
	 * start with a directory */
	rebuild = !tar && argc - optind >= 2 &&
		  (is_erofs_image(argv[optind + 1]) ||
		   (argc - optind > 2 && !is_dir(argv[optind + 1])));
	if (rebuild) {
		/* as 1.9.3: the layers' data and block size stay theirs */
		if (p.alg >= 0 || p.n_more_algs || hints || p.pcluster_size)
			ignored(&ig, "-z, -C, --compress-hints (a rebuild "
				     "stores no file data)");
		if (p.chunksize)
			ignored(&ig, "--chunksize (a rebuild keeps the "
				     "layers' chunks)");
		if (cp.blksz)
			ignored(&ig, "-b (a rebuild has the layers' block "
				     "size)");
		p.alg = -1;
		p.n_more_algs = 0;
		p.pcluster_size = 0;
		p.chunksize = 0;
		hints = NULL;
	}
	if (mkfs_verity_check(&p, rebuild) || mkfs_extra_check(&p, rebuild)) {
		ret = 2;
		goto out;
	}
	if (argc - optind != 2 && !(tar && !mo.on && argc - optind == 1) &&
	    !rebuild) {
		ret = cli_usage_error(
			CMD, ms.on   ? "need IMAGE and BUCKET[/PREFIX]"
			     : mo.on ? "need IMAGE and the image's "
				       "HOST[:PORT]/REPO[:TAG|@DIGEST]"
			     : tar   ? "need IMAGE and at most one TARFILE"
				     : "need IMAGE and SOURCEDIR");
		goto out;
	}
	ret = mkfs_inc_check(&p, &mi, argv[optind], tar, rebuild, cp.blksz,
			     s.quiet);
	if (ret)
		goto out;
	if (hints) {
		ret = mkfs_z_hints(CMD, hints, &p, &zs);
		if (ret)
			goto out;
	}
	if (codec_missing(&p)) {
		ret = 2;
		goto out;
	}
	if (max_kernel && kernel_refuses(&p, max_kernel)) {
		ret = 2;
		goto out;
	}
	sde = getenv("SOURCE_DATE_EPOCH");
	if (p.has_timestamp) {
		p.time_mode = mkfs_time ? EZFS_TIME_SOURCE : EZFS_TIME_FIXED;
	} else if (sde && *sde) {
		if (parse_u64(sde, &v)) {
			ret = cli_usage_error(CMD, "bad SOURCE_DATE_EPOCH '%s'",
					      sde);
			goto out;
		}
		p.has_timestamp = 1;
		p.timestamp = (int64_t)v;
		p.time_mode = EZFS_TIME_CLAMP;
	}
	/* --ignore-mtime: every file gets the build time (-T, else
	 * SOURCE_DATE_EPOCH, else now); --preserve-mtime: every file keeps
	 * its own (-T is the build time only) */
	if (cp.mtime == 1) {
		if (!p.has_timestamp) {
			p.has_timestamp = 1;
			p.timestamp = (int64_t)time(NULL);
		}
		p.time_mode = EZFS_TIME_FIXED;
	} else if (cp.mtime == 2) {
		p.time_mode = EZFS_TIME_SOURCE;
	}
	if (ex.vmdk && mo.on) {
		ret = cli_usage_error(CMD, "--vmdk-desc: not with --oci (the "
					   "layers are not kept)");
		goto out;
	}
	if (ex.vmdk && tar == 2 && argc - optind < 2) {
		ret = cli_usage_error(CMD, "--vmdk-desc: names the tar of "
					   "--tar=i: not from standard input");
		goto out;
	}
	if (ex.vmdk &&
	    ((p.flags & EZFS_BUILD_SPARSE) || p.image_offset % 512)) {
		ret = cli_usage_error(CMD, "--vmdk-desc: a flat extent of a "
					   "plain image file at a multiple of "
					   "512 bytes (not --sparse, or an "
					   "odd --offset)");
		goto out;
	}
	if ((p.flags & EZFS_BUILD_SPARSE) && p.image_offset) {
		ret = cli_usage_error(CMD, "--sparse and --offset exclude "
					   "each other");
		goto out;
	}
	for (unsigned i = 0; !s.quiet && i < ig.n; i++)
		cli_error(CMD, "warning: %s: accepted and ignored", ig.what[i]);
	p.exclude_paths = xpaths;
	p.exclude_regex = xres;
	if (!p.workers)
		p.workers = cli_online_cpus();
	p.log = mkfs_log;
	p.log_arg = &s;
	p.verbose = EZFS_LOG_WARN;
	p.progress = mkfs_progress;
	p.progress_arg = &s;

	ret = 1; /* from here on, any failure is an error (exit 1) */
	if (check_image(argv[optind], &target, &device) ||
	    mkfs_extra_ready(&ex))
		goto out;
	if (tar || ms.on) {
		/* a spool file for streamed data goes beside the image (or
		 * to $TMPDIR when the image is a device) */
		const char *sl = strrchr(target, '/'), *td = getenv("TMPDIR");

		if (device)
			tmpdir = strdup(td && *td ? td : "/tmp");
		else if (sl)
			tmpdir = strndup(target, (size_t)(sl - target) + 1);
		else
			tmpdir = strdup(".");
		if (!tmpdir)
			goto out;
	}
	err = mkfs_sig_start(argv[optind], target, device);
	if (err) {
		cli_error(CMD, "cannot set up signal handling: %s",
			  strerror(-err));
		goto out;
	}
	/* glibc raises its mmap threshold to the size of each large block
	 * freed (up to 32 MiB): the workers' per-file windows then come
	 * from the heap, between the records every inode keeps until the
	 * metadata is written, and the heap cannot shrink. Fixed at 1 MiB,
	 * two copies of a tree peak at 1.2x one copy, not 1.5x (docs/
	 * mkfs.md, Memory). Fixing it also fixes the trim threshold, at 128
	 * KiB: freed heap tops went back to the kernel and faulted in again
	 * (twice the page faults); 64 MiB keeps them. */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
	err = ezfs_builder_new(&p, &b);
	if (!err && rebuild)
		err = ezfs_builder_scan_images(
			b, (const char *const *)argv + optind + 1,
			(size_t)(argc - optind - 1));
	else if (!err && mo.on) {
		err = mkfs_oci_scan(&mo, b, argv[optind + 1], tmpdir, s.quiet);
		if (err > 0) { /* said */
			err = -EIO;
			s.logged_error = 1;
		}
	} else if (!err && ms.on) {
		err = mkfs_s3_scan(&ms, b, argv[optind + 1], tmpdir,
				   mi.zerofill, s.quiet);
		if (err > 0) { /* said */
			err = -EIO;
			s.logged_error = 1;
		}
	} else if (!err && tar)
		err = ezfs_builder_scan_tar(b, argv[optind + 1], tmpdir);
	else if (!err)
		err = ezfs_builder_scan(b, argv[optind + 1]);
	if (!err)
		err = ezfs_builder_write(b, argv[optind]);
	mkfs_sig_done();
	if (s.phase == EZFS_BUILD_DATA)
		cli_progress_end(&s.pr, s.pr.total_bytes, s.pr.total_items);
	if (err) {
		if (!s.logged_error)
			cli_error(CMD, "%s: %s", argv[optind], strerror(-err));
		goto out;
	}
	if (max_kernel && !device &&
	    image_refused(argv[optind], p.image_offset, max_kernel))
		goto out;
	if (mkfs_verity_report(b, &mv))
		goto out;
	if (ex.vmdk &&
	    mkfs_extra_report(&ex, argv[optind], p.image_offset,
			      rebuild ? (const char *const *)argv + optind + 1
			      : p.blobdev ? &p.blobdev
			      : tar == 2 && argc - optind == 2
				      ? (const char *const *)argv + optind + 1
				      : NULL,
			      rebuild ? (unsigned)(argc - optind - 1) : 1))
		goto out;
	ezfs_builder_stats(b, &st);
	if (!s.quiet) {
		char in[32], img[32];

		printf("%s: %llu files, %llu dirs, %s in, %s image (%.1f%%), "
		       "%.2f s\n",
		       argv[optind], (unsigned long long)st.files,
		       (unsigned long long)st.dirs,
		       cli_fmt_size(st.bytes_in, in, sizeof(in)),
		       cli_fmt_size(st.image_bytes, img, sizeof(img)),
		       st.bytes_in ? 100.0 * (double)st.image_bytes /
					     (double)st.bytes_in
				   : 0.0,
		       st.seconds);
	}
	ret = 0;
out:
	ezfs_builder_free(b);
	free(xpaths);
	free(xres);
	free(tmpdir);
	free(target);
	mkfs_z_free(&zs);
	mkfs_oci_free(&mo);
	mkfs_s3_free(&ms);
	free(cp.mount_point);
	return ret;
}
