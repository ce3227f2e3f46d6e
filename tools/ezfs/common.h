/* SPDX-License-Identifier: MIT */
/* common.h - helpers shared by the ezfs subcommands. */
#ifndef EZFS_TOOL_COMMON_H
#define EZFS_TOOL_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "ezfs/ezfs.h"
#include "ezfs/verity.h"

#define CLI_ATTR_PRINTF(a, b) __attribute__((format(printf, a, b)))

/*
 * The erofs-utils name ezfs was called by ("mkfs.erofs", "fsck.erofs",
 * "dump.erofs": main.c sets it), else NULL. When set, every message below
 * starts "NAME:" and the usage hint says "Try 'NAME --help'.", whatever
 * the cmd given: the name the user typed, not "ezfs CMD".
 */
extern const char *cli_prog;

/* "ezfs CMD: <formatted>" (or "NAME: ..." under cli_prog) on stderr. */
void cli_error(const char *cmd, const char *fmt, ...) CLI_ATTR_PRINTF(2, 3);
/* "ezfs CMD: IMG: [PATH: ]reason" where reason = ezfs_strerror(err). */
void cli_fail(const char *cmd, const char *img, const char *path, int err);
/* Unknown option / wrong arguments: error line plus a usage hint; returns 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
	CLI_ATTR_PRINTF(2, 3);

/*
 * getopt_long (optstring starting with ':') returned '?' or ':': print
 * "unknown option" / "option needs an argument" plus a hint; returns 2.
 * Call with the getopt globals as they are.
 */
int cli_opt_error(const char *cmd, int c, char **argv);

/*
 * The default case of a command's option switch: 'h' (-h, --help) prints
 * usage to stdout and returns 0, anything else is cli_opt_error() (2).
 */
int cli_opt_default(const char *cmd, int c, char **argv,
		    void (*usage)(FILE *f));

/*
 * Check the count of arguments left after the options (argc - optind):
 * under min is the usage error "missing", over max "too many arguments".
 * Returns 0 if the count fits, else 2 after printing the error.
 */
int cli_nargs(const char *cmd, int nargs, int min, int max,
	      const char *missing);

/* State of the library's log output for one image (caller-owned, must
 * outlive the image). max = 0: 50 lines, then one "suppressed" note. */
struct cli_log {
	const char *img;
	unsigned max;
	unsigned lines; /* atomic */
	/* while cli_open() runs: the first error, printed as its reason */
	int opening;
	char first_error[512];
};

/*
 * Open img read-only with a log callback printing "ezfs: IMG: message".
 * On failure prints "ezfs CMD: IMG: reason" and returns the negative errno.
 */
int cli_open(const char *cmd, const char *img, struct cli_log *lg,
	     ezfs_image **out);

/*
 * Engine options of every command that reads an image: --accel SPEC,
 * --dispatch inline|queue[:N]|percpu, --strict-accel. Put CLI_ENGINE_OPTS
 * in the getopt_long table and call cli_opt_other() in the switch's default
 * case; cli_open() then applies them (they beat EZFS_ACCEL, EZFS_DISPATCH
 * and EZFS_STRICT_ACCEL). CLI_ENGINE_HELP is the usage text.
 */
enum { CLI_OPT_ACCEL = 0x100, CLI_OPT_DISPATCH, CLI_OPT_STRICT_ACCEL };
/* three table entries, one per line */
/* clang-format off */
#define CLI_ENGINE_OPTS                                                    \
	{ "accel", required_argument, NULL, CLI_OPT_ACCEL },               \
	{ "dispatch", required_argument, NULL, CLI_OPT_DISPATCH },         \
	{ "strict-accel", no_argument, NULL, CLI_OPT_STRICT_ACCEL }
/* clang-format on */
#define CLI_ENGINE_HELP                                                        \
	"  --accel SPEC       decompression engines, e.g. deflate=isal,zlib\n" \
	"                     or isal (see 'ezfs accel list')\n"               \
	"  --dispatch MODE    inline, queue[:N] or percpu\n"                   \
	"  --strict-accel     an engine failure is an error, no fallback\n"

/*
 * Image options of every command that reads an image: --device FILE
 * (repeatable: the extra devices of a multi-device image, in device-table
 * order) and --offset N (the image starts at byte N of its file). Put
 * CLI_IMAGE_OPTS in the getopt_long table next to CLI_ENGINE_OPTS;
 * cli_opt_other() records them and cli_open() applies them.
 */
enum { CLI_OPT_DEVICE = 0x180, CLI_OPT_OFFSET };
/* dm-verity options of every command that reads an image (docs/verity.md;
 * recorded by cli_opt_other, applied by cli_open): with none, a tree
 * found after the filesystem is checked (--no-verity: not). */
enum {
	CLI_OPT_ROOT_HASH = 0x200,
	CLI_OPT_ROOT_HASH_FILE,
	CLI_OPT_ROOT_HASH_SIG,
	CLI_OPT_TRUSTED_CERT,
	CLI_OPT_HASH_OFFSET,
	CLI_OPT_VERITY_HASH_FILE,
	CLI_OPT_VERITY,
	CLI_OPT_NO_VERITY,
	CLI_OPT_REQUIRE_VERIFIED,
};
/* Options of remote images (IMAGE a URL; tools/ezfs/cache.c). */
enum {
	CLI_OPT_CACHE_DIR = 0x1c0,
	CLI_OPT_NO_CACHE,
	CLI_OPT_CACHE_MAX,
	CLI_OPT_REMOTE_TIMEOUT,
	CLI_OPT_REMOTE_RETRIES,
	CLI_OPT_REMOTE_STATS,
	CLI_OPT_LAYER,
	CLI_OPT_BLOB,
	CLI_OPT_PLATFORM,
	CLI_OPT_INSECURE,
	CLI_OPT_REMOTE_LAST = 0x1ff
};
/* clang-format off */
#define CLI_IMAGE_OPTS                                                     \
	{ "device", required_argument, NULL, CLI_OPT_DEVICE },             \
	{ "offset", required_argument, NULL, CLI_OPT_OFFSET },             \
	CLI_VERITY_OPTS,                                                   \
	CLI_REMOTE_OPTS
#define CLI_VERITY_OPTS                                                    \
	{ "root-hash", required_argument, NULL, CLI_OPT_ROOT_HASH },       \
	{ "root-hash-file", required_argument, NULL, CLI_OPT_ROOT_HASH_FILE }, \
	{ "root-hash-signature", required_argument, NULL, CLI_OPT_ROOT_HASH_SIG }, \
	{ "trusted-cert", required_argument, NULL, CLI_OPT_TRUSTED_CERT }, \
	{ "hash-offset", required_argument, NULL, CLI_OPT_HASH_OFFSET },   \
	{ "verity-hash-file", required_argument, NULL, CLI_OPT_VERITY_HASH_FILE }, \
	{ "verity", no_argument, NULL, CLI_OPT_VERITY },                   \
	{ "no-verity", no_argument, NULL, CLI_OPT_NO_VERITY },             \
	{ "require-verified", no_argument, NULL, CLI_OPT_REQUIRE_VERIFIED }
#define CLI_REMOTE_OPTS                                                    \
	{ "cache-dir", required_argument, NULL, CLI_OPT_CACHE_DIR },       \
	{ "no-cache", no_argument, NULL, CLI_OPT_NO_CACHE },               \
	{ "cache-max", required_argument, NULL, CLI_OPT_CACHE_MAX },       \
	{ "remote-timeout", required_argument, NULL, CLI_OPT_REMOTE_TIMEOUT }, \
	{ "remote-retries", required_argument, NULL, CLI_OPT_REMOTE_RETRIES }, \
	{ "remote-stats", no_argument, NULL, CLI_OPT_REMOTE_STATS },       \
	{ "layer", required_argument, NULL, CLI_OPT_LAYER },               \
	{ "blob", required_argument, NULL, CLI_OPT_BLOB },                 \
	{ "platform", required_argument, NULL, CLI_OPT_PLATFORM },         \
	{ "insecure", no_argument, NULL, CLI_OPT_INSECURE }
/* clang-format on */
#define CLI_IMAGE_HELP                                                         \
	"  --device FILE      an extra device of a multi-device image "        \
	"(again\n"                                                             \
	"                     for each, in device-table order); none: the\n"   \
	"                     devices are read from IMAGE itself (flat)\n"     \
	"  --offset N         the image starts at byte N of "                  \
	"IMAGE\n" CLI_VERITY_HELP CLI_REMOTE_HELP
#define CLI_VERITY_HELP                                                        \
	"  A dm-verity tree after the filesystem (ezfs mkfs --verity) is "     \
	"used\n"                                                               \
	"  to check every block read (docs/verity.md):\n"                      \
	"  --root-hash HEX    the root it must have (--root-hash-file F: "     \
	"read\n"                                                               \
	"                     from F); else the tree's own root, no trust\n"   \
	"                     anchor\n"                                        \
	"  --root-hash-signature F  a PKCS#7 signature of the hex root,\n"     \
	"                     checked against --trusted-cert PEM\n"            \
	"  --hash-offset N    the tree's superblock is at byte N of IMAGE\n"   \
	"  --verity-hash-file F  the tree is in F (at --hash-offset, "         \
	"default 0)\n"                                                         \
	"  --verity           a tree is required; --no-verity: none is read\n" \
	"  --require-verified refuse an image without a trusted root "         \
	"(given,\n"                                                            \
	"                     signed, or announced by a manifest named by\n"   \
	"                     digest): nothing is read unchecked\n"
#define CLI_REMOTE_HELP                                                        \
	"  IMAGE may be an http:// or https:// URL, a registry's\n"            \
	"  oci://HOST[:PORT]/REPO:TAG or .../REPO@sha256:HEX, or an object\n"  \
	"  s3://BUCKET/KEY (AWS_* settings and ~/.aws; docs/remote.md):\n"     \
	"  --layer N, --blob DIGEST  the layer (default: the EROFS one)\n"     \
	"  --platform OS/ARCH the manifest of an index (default: the "         \
	"host's)\n"                                                            \
	"  --insecure         plain http to the registry (always for "         \
	"127.0.0.1)\n"                                                         \
	"  --cache-dir DIR    its persistent cache (default "                  \
	"$XDG_CACHE_HOME/ezfs\n"                                               \
	"                     or ~/.cache/ezfs); --no-cache: memory only\n"    \
	"  --cache-max SIZE   all cached images together (default 10G)\n"      \
	"  --remote-timeout S a request that gets nothing for S seconds "      \
	"fails\n"                                                              \
	"                     (default 10)\n"                                  \
	"  --remote-retries N retries with backoff, then EIO (default 3)\n"    \
	"  --remote-stats     print requests and bytes fetched vs read at "    \
	"exit\n"
/* Record one more --device (for options of the compat names too);
 * returns 0, or 2 after a usage error. */
int cli_add_device(const char *cmd, const char *path);
/* Parse and record --offset N; returns 0, or 2 after a usage error. */
int cli_set_offset(const char *cmd, const char *arg);
/* Record fsck.erofs --no-sbcrc: cli_open() then takes an image whose
 * superblock checksum does not match. */
void cli_set_no_sb_crc(void);

/* Hex digits (an even number, at most max bytes) into out, *n bytes;
 * 0 or -EINVAL. */
int cli_parse_hex(const char *s, uint8_t *out, size_t max, size_t *n);
/* n bytes as lowercase hex into out (2n + 1 bytes); returns out. */
char *cli_hex(const uint8_t *b, size_t n, char *out);
/* A root hash file as veritysetup writes it (hex, spaces around it
 * ignored) into out (at most 64 bytes), *n bytes; 0, or 2 after one line
 * naming the file. */
int cli_read_root_hash(const char *cmd, const char *path, uint8_t out[64],
		       size_t *n);
/* The trust of the image's dm-verity root as a phrase for output: "given
 * with --root-hash", "signed by SUBJECT", "computed from the tree: not a
 * trust anchor". */
const char *cli_verity_trust(const struct ezfs_verity_info *vi, char *buf,
			     size_t size);

/*
 * The default case of an option switch: an engine option is checked and
 * recorded (returns -1: go on), a bad value is a usage error (2); anything
 * else is cli_opt_default() (0 for --help, else 2).
 */
int cli_opt_other(const char *cmd, int c, char **argv, void (*usage)(FILE *f));

/* Remote images (tools/ezfs/cache.c): is img a URL? cli_remote_opt
 * handles CLI_OPT_CACHE_DIR..CLI_OPT_REMOTE_LAST (-1: recorded, 2: usage
 * error, 0: not one of them); cli_remote_source opens the URL as io ops
 * for ezfs_image_open_io (log lines do not name it); cli_remote_hint
 * gives its io hint (ezfs_open_params.io_hint, ezfs_mount_params.io_hint). */
int cli_is_remote(const char *img);
/* The cache folder remote sources use (--cache-dir, else the default):
 * NULL with --no-cache. */
const char *cli_remote_cache_dir(char *buf, size_t size);
int cli_remote_opt(const char *cmd, int c, const char *arg);
int cli_remote_source(const char *url, ezfs_log_fn log, void *log_arg,
		      unsigned verbose, const struct ezfs_io_ops **ops,
		      void **arg, uint64_t *size);
void (*cli_remote_hint(void))(void *arg, uint64_t off, uint64_t len,
			      unsigned flags);
/* The sources opened from now on write the trace of what is read to path
 * at close (ezfs_remote_params.record_trace); cli_remote_fill starts the
 * background fill of src (ezfs_remote_fill: 0 or a negative errno). */
void cli_remote_record_trace(const char *path);
int cli_remote_fill(void *src, int policy, uint64_t rate);
/* ezfs_open_params.io_verity of a source (NULL without libcurl), and the
 * tree its oci:// manifest announces (ezfs_remote_verity_root; -ENODATA:
 * none, or no libcurl). */
void (*cli_remote_verity_hook(void))(void *arg, struct ezfs_verity *v,
				     uint64_t base);
int cli_remote_announced(void *src, uint8_t root[64], size_t *root_size,
			 uint64_t *hash_offset, int *pinned);
/* Does src check its blocks against a chunk index (ezfs_remote_chunk_index;
 * *pinned: its manifest named by digest)? */
int cli_remote_chunked(void *src, int *pinned);
/*
 * The trust of an image before it opens (cmd's dm-verity options and, for
 * a remote source src, what its manifest announces): when no root was
 * given (*root_size 0) and none signed (is_signed 0), the announced root
 * and hash offset go into root, *root_size and *hash_offset (unless one
 * was given); with --require-verified (require), an image without a
 * trusted root is refused. 0, or 1 after one line. src NULL: a local
 * image.
 */
int cli_trust_root(const char *cmd, const char *img, void *src, int require,
		   int is_signed, uint8_t root[64], size_t *root_size,
		   uint64_t *hash_offset);
/* After a remote image opened: one warning when nothing checks its blocks
 * before they are served (no dm-verity tree), or when its root is only
 * the tree's own or a tag's manifest's. */
void cli_trust_warn(const char *cmd, const char *img, ezfs_image *fs);
/* A command that writes what it reads (extract) calls
 * cli_remote_keep_unverified before it opens img, so that a layer that
 * fails its digest is still read through, and cli_remote_unverified at
 * the end: the layer is checked whole (what is missing fetched), and when
 * it fails, one line and every non-directory entry under sub (an image
 * path; written from it) listed as unverified on stderr (the first 20)
 * and in errs (all; may be NULL). Returns 1 then (and when it could not
 * be checked), else 0. */
void cli_remote_keep_unverified(void);
int cli_remote_unverified(const char *cmd, const char *img, ezfs_image *fs,
			  const char *sub, FILE *errs);

/* Resolve path and get its inode; prints an error naming path on failure. */
int cli_get_path(const char *cmd, const char *img, ezfs_image *fs,
		 const char *path, ezfs_inode **out);

/*
 * A name from an image, fit for stdout: when stdout is a terminal and the
 * name holds control characters (escapes, newlines, C1 codes), it is shell
 * quoted as GNU ls does ('a'$'\n''b'); otherwise it is printed as it is.
 * Returns s itself or a quoted copy in *tmp (free it; NULL if unused).
 */
const char *cli_qname(const char *s, char **tmp);
/* Does s hold a control character (C0, DEL, or UTF-8 encoded C1)? */
int cli_has_ctrl(const char *s);

/* "1.5 MiB" style; returns buf. */
char *cli_fmt_size(uint64_t n, char *buf, size_t size);
/* "drwxr-xr-x" (11 bytes incl. NUL). */
void cli_mode_string(uint32_t mode, char buf[11]);
/* "regular file", "directory", ... */
const char *cli_type_name(uint32_t mode);
/* "2009-02-13 23:31:30" in UTC. */
char *cli_fmt_time(int64_t sec, char *buf, size_t size);
/* Number of online CPUs (at least 1). */
unsigned cli_online_cpus(void);
/* Parse a positive thread count; returns 0 on error. */
unsigned cli_parse_threads(const char *s);
/* The same for -j/--jobs of cmd: 0 after a usage error for a bad count. */
unsigned cli_opt_jobs(const char *cmd, const char *s);

/* Collect a directory's entries (except "." and ".."). */
struct cli_dirlist {
	struct ezfs_dirent *ents;
	size_t n;
};
int cli_readdir_all(ezfs_inode *dir, struct cli_dirlist *dl);
void cli_dirlist_free(struct cli_dirlist *dl);
/* Is this name "." or ".."? */
int cli_is_dots(const char *name, size_t namelen);

/* A set of nids (open addressing). */
struct cli_nidset {
	uint64_t *slots; /* nid + 1; 0 = empty */
	size_t cap, count;
};
/* Returns 1 if newly added, 0 if present, -ENOMEM. */
int cli_nidset_add(struct cli_nidset *s, uint64_t nid);
int cli_nidset_has(const struct cli_nidset *s, uint64_t nid);
void cli_nidset_free(struct cli_nidset *s);

/*
 * Depth-first walk of the tree under nid (path "" = the root). fn is called
 * for every entry below the start (not for the start itself), parents
 * before children, entries in directory order; path is relative ("a/b").
 * A non-zero return of fn stops the walk and is returned. Directories seen
 * twice are not entered again.
 */
typedef int (*cli_walk_fn)(void *arg, const char *path, uint64_t nid,
			   const struct ezfs_stat *st, ezfs_inode *ino);
int cli_walk(ezfs_image *fs, uint64_t nid, cli_walk_fn fn, void *arg);

/* A map nid -> pointer (open addressing). */
struct cli_nidmap {
	uint64_t *keys; /* nid + 1; 0 = empty */
	void **vals;
	size_t cap, count;
};
/* Slot of nid's value (NULL until set); *added = 1 if just inserted.
 * Returns NULL on ENOMEM. */
void **cli_nidmap_slot(struct cli_nidmap *m, uint64_t nid, int *added);
/* Frees the table, and each value with free_val when not NULL. */
void cli_nidmap_free(struct cli_nidmap *m, void (*free_val)(void *));

/* Terminal progress bar on stderr, drawn only when stderr is a tty. */
struct cli_progress {
	int on;
	const char *label;
	uint64_t total_bytes;  /* 0: unknown */
	uint64_t total_items;  /* 0: unknown */
	const char *item_name; /* "files", "inodes" */
	double start, last;
	int drawn;
};
void cli_progress_init(struct cli_progress *p, int quiet, const char *label,
		       const char *item_name, uint64_t total_bytes,
		       uint64_t total_items);
/* Redraws at most ~10 times per second unless force. */
void cli_progress_update(struct cli_progress *p, uint64_t bytes, uint64_t items,
			 int force);
/* Final draw and newline (if anything was drawn). */
void cli_progress_end(struct cli_progress *p, uint64_t bytes, uint64_t items);
/* Erase the bar (on errors). */
void cli_progress_clear(struct cli_progress *p);
double cli_now(void);

#endif
