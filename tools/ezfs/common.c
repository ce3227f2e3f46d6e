/* SPDX-License-Identifier: MIT */
/* common.c - error printing, image opening, formatting and progress bars. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <ezfs/engine.h>

#include "common.h"

const char *cli_prog;

/* Who a message comes from: "ezfs CMD", "ezfs" (cmd NULL), or cli_prog. */
static const char *who(const char *cmd, char *buf, size_t size)
{
	if (cli_prog)
		return cli_prog;
	snprintf(buf, size, "ezfs%s%s", cmd ? " " : "", cmd ? cmd : "");
	return buf;
}

/* A progress line is on the terminal: clear it before printing a message. */
static int progress_dirty;

static void clear_progress(void)
{
	if (progress_dirty) {
		fputs("\r\033[K", stderr);
		progress_dirty = 0;
	}
}

/* Length of the control character at s (0: none): C0, DEL, or C1 as the
 * two UTF-8 bytes C2 80..9F, which some terminals obey as escapes. */
static size_t ctrl_len(const unsigned char *s)
{
	if (*s < 0x20 || *s == 0x7f)
		return 1;
	if (s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f)
		return 2;
	return 0;
}

int cli_has_ctrl(const char *s)
{
	const unsigned char *p;

	for (p = (const unsigned char *)s; *p; p++)
		if (ctrl_len(p))
			return 1;
	return 0;
}

/* msg with each byte of a control character written as \ooo. */
static void escape_ctrl(const char *msg, char *out, size_t size)
{
	const unsigned char *p = (const unsigned char *)msg;
	size_t o = 0, n;

	while (*p && o + 9 < size) {
		n = ctrl_len(p);
		if (!n) {
			out[o++] = (char)*p++;
			continue;
		}
		while (n--)
			o += (size_t)snprintf(out + o, size - o, "\\%03o",
					      *p++);
	}
	out[o] = '\0';
}

const char *cli_qname(const char *s, char **tmp)
{
	static int tty = -1;
	const unsigned char *p;
	char *q;
	size_t o = 0;
	int inq = 0;

	*tmp = NULL;
	if (tty < 0)
		tty = isatty(STDOUT_FILENO);
	if (!tty || !cli_has_ctrl(s))
		return s;
	/* worst case per byte: '$'\ooo'' = 10 bytes */
	q = malloc(strlen(s) * 10 + 3);
	if (!q)
		return "?";
	for (p = (const unsigned char *)s; *p; p++) {
		size_t n = ctrl_len(p), i;

		if (n) {
			if (inq)
				q[o++] = '\'';
			inq = 0;
			for (i = 0; i < n; i++)
				o += (size_t)sprintf(q + o, "$'\\%03o'", p[i]);
			p += n - 1;
			continue;
		}
		if (!inq)
			q[o++] = '\'';
		inq = 1;
		if (*p == '\'') {
			memcpy(q + o, "'\\''", 4);
			o += 4;
		} else {
			q[o++] = (char)*p;
		}
	}
	if (inq)
		q[o++] = '\'';
	q[o] = '\0';
	*tmp = q;
	return q;
}

/*
 * One line per failure: an error the library logs after the open (what
 * exactly failed: "nid 295: cannot decode lz4 pcluster at ...") is held
 * here and becomes the tail of the command's next error line ("ezfs cat:
 * IMG: PATH: read at 0: corrupt image: nid 295: cannot decode ..."). One
 * slot for the process: a second library error prints the held one on
 * its own line first, and one still held at exit is printed then.
 */
static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;
static char held_msg[1024];
static const char *held_img;

static void print_lib_line(const char *img, const char *msg)
{
	char safe[2048], w[64];

	clear_progress();
	escape_ctrl(msg, safe, sizeof(safe));
	fprintf(stderr, "%s: %s: %s\n", who(NULL, w, sizeof(w)), img, safe);
}

static void held_flush(void)
{
	pthread_mutex_lock(&held_mu);
	if (held_img)
		print_lib_line(held_img, held_msg);
	held_img = NULL;
	pthread_mutex_unlock(&held_mu);
}

/* Hold msg; prints the one it replaces. */
static void held_put(const char *img, const char *msg)
{
	static int registered;

	pthread_mutex_lock(&held_mu);
	if (!registered) {
		registered = 1;
		atexit(held_flush);
	}
	if (held_img)
		print_lib_line(held_img, held_msg);
	snprintf(held_msg, sizeof(held_msg), "%s", msg);
	held_img = img;
	pthread_mutex_unlock(&held_mu);
}

void cli_error(const char *cmd, const char *fmt, ...)
{
	char msg[4096], safe[4096], w[64];
	va_list ap;
	size_t n;

	clear_progress();
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&held_mu);
	n = strlen(msg);
	if (held_img && n < sizeof(msg) - 2)
		snprintf(msg + n, sizeof(msg) - n, ": %s", held_msg);
	held_img = NULL;
	pthread_mutex_unlock(&held_mu);
	/* names from an untrusted image must not drive the terminal */
	escape_ctrl(msg, safe, sizeof(safe));
	fprintf(stderr, "%s: %s\n", who(cmd, w, sizeof(w)), safe);
}

void cli_fail(const char *cmd, const char *img, const char *path, int err)
{
	if (path)
		cli_error(cmd, "%s: %s: %s", img, path, ezfs_strerror(err));
	else
		cli_error(cmd, "%s: %s", img, ezfs_strerror(err));
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	char msg[1024], w[64];
	const char *p = who(cmd, w, sizeof(w));
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s\nTry '%s --help'.\n", p, msg, p);
	return 2;
}

int cli_opt_error(const char *cmd, int c, char **argv)
{
	const char *bad = optind > 0 ? argv[optind - 1] : NULL;
	int is_long = bad && bad[0] == '-' && bad[1] == '-' && bad[2];
	int n;

	/* a long option's optopt is its value (0x100...), not a letter */
	if (!is_long && optopt > 0 && optopt < 0x80) {
		if (c == ':')
			return cli_usage_error(cmd,
					       "option '-%c' needs an "
					       "argument",
					       optopt);
		return cli_usage_error(cmd, "unknown option '-%c'", optopt);
	}
	if (!bad)
		bad = "?";
	n = (int)strcspn(bad, "=");
	if (c == ':')
		return cli_usage_error(cmd, "option '%.*s' needs an argument",
				       n, bad);
	return cli_usage_error(cmd, "unknown option '%.*s'", n, bad);
}

int cli_opt_default(const char *cmd, int c, char **argv, void (*usage)(FILE *f))
{
	if (c == 'h') {
		usage(stdout);
		return 0;
	}
	return cli_opt_error(cmd, c, argv);
}

int cli_nargs(const char *cmd, int nargs, int min, int max, const char *missing)
{
	if (nargs < min)
		return cli_usage_error(cmd, "%s", missing);
	if (nargs > max)
		return cli_usage_error(cmd, "too many arguments");
	return 0;
}

/* Engine settings of the command line, for cli_open(). */
static struct {
	const char *accel, *dispatch;
	int strict;
} engine_opts;

/* Image settings of the command line, for cli_open(). */
#define CLI_MAX_DEVICES 256
static struct {
	const char *devices[CLI_MAX_DEVICES];
	unsigned ndevices;
	uint64_t offset;
	int no_sb_crc;
	/* dm-verity: asked for explicitly (a remote image is checked only
	 * then), off (--no-verity), what it must be */
	int verity_asked, no_verity;
	int require; /* --require-verified */
	uint8_t root[64];
	size_t root_size;
	const char *root_sig, *cert, *hash_file;
	uint64_t hash_offset;
} image_opts;

void cli_set_no_sb_crc(void)
{
	image_opts.no_sb_crc = 1;
}

int cli_add_device(const char *cmd, const char *path)
{
	if (!*path)
		return cli_usage_error(cmd, "--device needs a file name");
	if (image_opts.ndevices == CLI_MAX_DEVICES)
		return cli_usage_error(cmd, "more than %d --device options",
				       CLI_MAX_DEVICES);
	image_opts.devices[image_opts.ndevices++] = path;
	return 0;
}

int cli_set_offset(const char *cmd, const char *arg)
{
	char *end;

	errno = 0;
	image_opts.offset = strtoull(arg, &end, 0);
	if (errno || end == arg || *end || *arg == '-')
		return cli_usage_error(cmd, "invalid --offset '%s'", arg);
	return 0;
}

int cli_parse_hex(const char *s, uint8_t *out, size_t max, size_t *n)
{
	return ezfs_verity_parse_hex(s, out, max, n);
}

char *cli_hex(const uint8_t *b, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
	out[2 * n] = '\0';
	return out;
}

int cli_read_root_hash(const char *cmd, const char *path, uint8_t out[64],
		       size_t *n)
{
	int err = ezfs_verity_read_root(path, out, n);

	if (!err)
		return 0;
	cli_error(cmd, "%s: %s", path,
		  err == -EINVAL ? "not a root hash (hex digits)"
				 : strerror(-err));
	return 2;
}

/* Where a root given to the open came from (cli_trust_root). */
enum { ROOT_USER = 0, ROOT_MANIFEST_DIGEST, ROOT_MANIFEST_TAG };
static int root_from;
/* A remote source's chunk index: 0 none, else where its manifest came
 * from (ROOT_MANIFEST_*). */
static int chunked_from;

const char *cli_verity_trust(const struct ezfs_verity_info *vi, char *buf,
			     size_t size)
{
	if (vi->trust == EZFS_VERITY_TRUST_SIGNED)
		snprintf(buf, size, "signed by %s: trusted",
			 vi->signer[0] ? vi->signer : "a trusted certificate");
	else if (vi->trust == EZFS_VERITY_TRUST_GIVEN &&
		 root_from == ROOT_MANIFEST_DIGEST)
		snprintf(buf, size,
			 "announced by the manifest named by digest: "
			 "trusted");
	else if (vi->trust == EZFS_VERITY_TRUST_GIVEN &&
		 root_from == ROOT_MANIFEST_TAG)
		snprintf(buf, size,
			 "announced by the manifest of a tag: not a trust "
			 "anchor");
	else if (vi->trust == EZFS_VERITY_TRUST_GIVEN)
		snprintf(buf, size, "given with --root-hash: trusted");
	else
		snprintf(buf, size,
			 "computed from the tree: not a trust anchor");
	return buf;
}

/* The dm-verity options: 0, or 2 after a usage error. */
static int verity_opt(const char *cmd, int c, const char *arg)
{
	uint64_t v;
	char *end;

	if (c == CLI_OPT_NO_VERITY) {
		image_opts.no_verity = 1;
		return 0;
	}
	if (c == CLI_OPT_REQUIRE_VERIFIED) {
		image_opts.require = 1;
		return 0;
	}
	image_opts.verity_asked = 1;
	switch (c) {
	case CLI_OPT_ROOT_HASH:
		if (cli_parse_hex(arg, image_opts.root, 64,
				  &image_opts.root_size))
			return cli_usage_error(cmd,
					       "--root-hash '%s': not a hash "
					       "in hex",
					       arg);
		return 0;
	case CLI_OPT_ROOT_HASH_FILE:
		return cli_read_root_hash(cmd, arg, image_opts.root,
					  &image_opts.root_size);
	case CLI_OPT_ROOT_HASH_SIG:
		image_opts.root_sig = arg;
		return 0;
	case CLI_OPT_TRUSTED_CERT:
		image_opts.cert = arg;
		return 0;
	case CLI_OPT_VERITY_HASH_FILE:
		image_opts.hash_file = arg;
		return 0;
	case CLI_OPT_HASH_OFFSET:
		errno = 0;
		v = strtoull(arg, &end, 0);
		if (errno || end == arg || *end || *arg == '-' || v % 512)
			return cli_usage_error(cmd,
					       "--hash-offset '%s': not a "
					       "multiple of 512",
					       arg);
		image_opts.hash_offset = v;
		return 0;
	}
	return 0; /* --verity */
}

int cli_opt_other(const char *cmd, int c, char **argv, void (*usage)(FILE *f))
{
	char why[256];
	unsigned n;

	switch (c) {
	case CLI_OPT_DEVICE:
		return cli_add_device(cmd, optarg) ? 2 : -1;
	case CLI_OPT_OFFSET:
		return cli_set_offset(cmd, optarg) ? 2 : -1;
	case CLI_OPT_ACCEL:
		if (ezfs_accel_check_msg(optarg, why, sizeof(why)))
			return cli_usage_error(cmd,
					       "invalid --accel '%s': %s "
					       "(see 'ezfs accel list')",
					       optarg, why);
		engine_opts.accel = optarg;
		return -1;
	case CLI_OPT_DISPATCH:
		if (ezfs_dispatch_parse(optarg, &n) < 0)
			return cli_usage_error(cmd,
					       "invalid --dispatch '%s' "
					       "(inline, queue[:N] or percpu)",
					       optarg);
		engine_opts.dispatch = optarg;
		return -1;
	case CLI_OPT_STRICT_ACCEL:
		engine_opts.strict = 1;
		return -1;
	}
	if (c >= CLI_OPT_CACHE_DIR && c <= CLI_OPT_REMOTE_LAST)
		return cli_remote_opt(cmd, c, optarg);
	if (c >= CLI_OPT_ROOT_HASH && c <= CLI_OPT_REQUIRE_VERIFIED)
		return verity_opt(cmd, c, optarg) ? 2 : -1;
	return cli_opt_default(cmd, c, argv, usage);
}

static void log_cb(void *arg, int level, const char *msg)
{
	struct cli_log *lg = arg;
	char w[64];
	unsigned n;

	if (lg->opening && level == EZFS_LOG_ERROR) {
		if (!lg->first_error[0])
			snprintf(lg->first_error, sizeof(lg->first_error), "%s",
				 msg);
		return;
	}
	n = __atomic_add_fetch(&lg->lines, 1, __ATOMIC_RELAXED);

	if (n > lg->max + 1)
		return;
	if (n == lg->max + 1) {
		held_flush();
		clear_progress();
		fprintf(stderr, "%s: %s: further messages suppressed\n",
			who(NULL, w, sizeof(w)), lg->img);
	} else if (level == EZFS_LOG_ERROR) {
		held_put(lg->img, msg);
	} else {
		print_lib_line(lg->img, msg);
	}
}

/*
 * An image compressed with an algorithm this build has no engine for
 * (EZFS_WITH_ZSTD=OFF): one line at open rather than a failed read per
 * file. info shows such an image all the same (it decodes nothing).
 */
static int check_algs(const char *cmd, const char *img, ezfs_image *fs)
{
	struct ezfs_engine_info info;
	struct ezfs_sb_info si;
	unsigned have = 0, i;

	ezfs_get_sb_info(fs, &si);
	if (!(si.feature_incompat & 0x3) || !strcmp(cmd, "info"))
		return 0;
	for (i = 0; i < ezfs_engine_count(); i++)
		if (!ezfs_engine_get_info(i, &info) &&
		    !(info.flags & EZFS_ENGINE_TEST))
			have |= 1u << info.alg;
	for (i = 0; i < EZFS_ALG_MAX; i++)
		if ((si.available_algs & (1u << i)) && !(have & (1u << i))) {
			cli_error(cmd,
				  "%s: compressed with %s, which this ezfs "
				  "was built without (ezfs --version)",
				  img, ezfs_alg_name((int)i));
			return -EOPNOTSUPP;
		}
	return 0;
}

int cli_trust_root(const char *cmd, const char *img, void *src, int require,
		   int is_signed, uint8_t root[64], size_t *root_size,
		   uint64_t *hash_offset)
{
	uint8_t ar[64];
	uint64_t ao = 0;
	size_t an = 0;
	int pinned = 0, have, cpinned = 0;

	if (src && cli_remote_chunked(src, &cpinned))
		chunked_from =
			cpinned ? ROOT_MANIFEST_DIGEST : ROOT_MANIFEST_TAG;
	have = src && !cli_remote_announced(src, ar, &an, &ao, &pinned);
	if (have && !*root_size && !is_signed) {
		/* the manifest's root: checked as a given one (a tag's is
		 * still better than none, but no trust anchor) */
		memcpy(root, ar, an);
		*root_size = an;
		root_from = pinned ? ROOT_MANIFEST_DIGEST : ROOT_MANIFEST_TAG;
	}
	if (have && !*hash_offset)
		*hash_offset = ao;
	if (!require || is_signed ||
	    (*root_size && root_from != ROOT_MANIFEST_TAG) ||
	    chunked_from == ROOT_MANIFEST_DIGEST)
		return 0;
	if (have || chunked_from)
		cli_error(cmd,
			  "%s: --require-verified: its manifest was named by "
			  "a tag, so the %s it announces is no trust anchor "
			  "(name it by digest: REPO@sha256:...); refused",
			  img, have ? "dm-verity root" : "chunk index");
	else if (src)
		cli_error(cmd,
			  "%s: --require-verified: no trusted root: no "
			  "manifest announces a dm-verity tree "
			  "(org.erofs.dmverity.* annotations) or a chunk "
			  "index, and no --root-hash or signed root was "
			  "given; refused",
			  img);
	else
		cli_error(cmd,
			  "%s: --require-verified: no trusted root "
			  "(--root-hash, --root-hash-file or a signed root); "
			  "refused",
			  img);
	return 1;
}

void cli_trust_warn(const char *cmd, const char *img, ezfs_image *fs)
{
	struct ezfs_verity_info vi;
	char t[300], hex[129];

	if (!cli_is_remote(img) || !fs)
		return;
	if (ezfs_image_verity(fs, &vi) && chunked_from) {
		if (chunked_from == ROOT_MANIFEST_TAG)
			cli_error(cmd,
				  "%s: warning: every block is checked against "
				  "the chunk index of the manifest of a tag: "
				  "not a trust anchor (name the manifest by "
				  "digest)",
				  img);
		return;
	}
	if (ezfs_image_verity(fs, &vi)) {
		cli_error(cmd,
			  "%s: warning: no dm-verity tree%s: blocks are "
			  "served before anything checks them (a layer's "
			  "digest is checked only once all of it is read); "
			  "--require-verified refuses such an image",
			  img,
			  image_opts.no_verity ? " read (--no-verity)" : "");
		return;
	}
	if (vi.trust == EZFS_VERITY_TRUST_NONE ||
	    root_from == ROOT_MANIFEST_TAG)
		cli_error(cmd,
			  "%s: warning: every block is checked against the "
			  "dm-verity tree of root %s, %s (--root-hash, or "
			  "the manifest named by digest)",
			  img, cli_hex(vi.root, vi.root_size, hex),
			  cli_verity_trust(&vi, t, sizeof(t)));
}

/* The dm-verity part of the open: a tree found is used (a remote image's
 * too, its blocks checked as they are fetched). Options that contradict
 * each other are a usage error (exit 2) before anything is read. */
static void verity_params(const char *cmd, const char *img,
			  struct ezfs_open_params *p)
{
	const char *bad = NULL;

	if (image_opts.no_verity && image_opts.verity_asked)
		bad = "--no-verity with another dm-verity option";
	else if (image_opts.no_verity && image_opts.require)
		bad = "--no-verity with --require-verified";
	else if (!image_opts.root_sig != !image_opts.cert)
		bad = "--root-hash-signature and --trusted-cert go together";
	if (bad)
		exit(cli_usage_error(cmd, "%s", bad));
	(void)img;
	if (image_opts.no_verity)
		return;
	p->verity = image_opts.verity_asked ? EZFS_VERITY_REQUIRE
					    : EZFS_VERITY_AUTO;
	p->verity_hash_file = image_opts.hash_file;
	p->verity_hash_offset = image_opts.hash_offset;
	if (image_opts.root_size) {
		p->root_hash = image_opts.root;
		p->root_hash_size = image_opts.root_size;
	}
	p->root_hash_sig_file = image_opts.root_sig;
	p->trusted_cert = image_opts.cert;
}

/* A remote source's trust into p (the root its manifest announces, when
 * none was given): 0, or 1 after one line (refused). */
static int remote_trust(const char *cmd, const char *img, void *src,
			struct ezfs_open_params *p)
{
	if (image_opts.no_verity)
		return 0;
	if (cli_trust_root(cmd, img, src, image_opts.require,
			   image_opts.root_sig != NULL, image_opts.root,
			   &image_opts.root_size, &image_opts.hash_offset))
		return 1;
	if (image_opts.root_size) {
		p->root_hash = image_opts.root;
		p->root_hash_size = image_opts.root_size;
	}
	p->verity_hash_offset = image_opts.hash_offset;
	return 0;
}

int cli_open(const char *cmd, const char *img, struct cli_log *lg,
	     ezfs_image **out)
{
	struct ezfs_open_params p;
	const char *v = getenv("EZFS_VERBOSE");
	int ret;

	lg->img = img;
	if (!lg->max)
		lg->max = 50;
	ezfs_open_params_init(&p);
	p.log = log_cb;
	p.log_arg = lg;
	if (v && *v)
		p.verbose = (unsigned)atoi(v);
	/* the command line beats the environment, also a bad value there */
	if (engine_opts.accel) {
		p.accel = engine_opts.accel;
		unsetenv("EZFS_ACCEL");
	}
	if (engine_opts.dispatch) {
		p.dispatch = engine_opts.dispatch;
		unsetenv("EZFS_DISPATCH");
	}
	p.strict_accel = engine_opts.strict;
	p.offset = image_opts.offset;
	p.no_sb_crc = image_opts.no_sb_crc;
	p.devices = image_opts.devices;
	p.ndevices = image_opts.ndevices;
	verity_params(cmd, img, &p);
	lg->opening = 1;
	lg->first_error[0] = '\0';
	*out = NULL;
	if (cli_is_remote(img)) {
		const struct ezfs_io_ops *ops;
		uint64_t size;
		void *src;

		ret = cli_remote_source(img, p.log, p.log_arg, p.verbose, &ops,
					&src, &size);
		if (!ret && remote_trust(cmd, img, src, &p)) {
			ops->close(src);
			lg->opening = 0;
			return -EACCES;
		}
		if (!ret) {
			p.io_hint = cli_remote_hint();
			p.io_verity = cli_remote_verity_hook();
			ret = ezfs_image_open_io(ops, src, size, &p, out);
		}
	} else if (cli_trust_root(cmd, img, NULL, image_opts.require,
				  image_opts.root_sig != NULL, image_opts.root,
				  &image_opts.root_size,
				  &image_opts.hash_offset)) {
		lg->opening = 0;
		return -EACCES;
	} else {
		ret = ezfs_image_open(img, &p, out);
	}
	lg->opening = 0;
	/* one line: the library's own reason beats the bare errno text */
	if (ret < 0 && lg->first_error[0])
		cli_error(cmd, "%s: %s", img, lg->first_error);
	else if (ret < 0)
		cli_fail(cmd, img, NULL, ret);
	else if (lg->first_error[0])
		log_cb(lg, EZFS_LOG_ERROR, lg->first_error);
	if (!ret) {
		ret = check_algs(cmd, img, *out);
		if (ret) {
			ezfs_image_close(*out);
			*out = NULL;
		}
	}
	if (!ret)
		cli_trust_warn(cmd, img, *out);
	return ret;
}

int cli_get_path(const char *cmd, const char *img, ezfs_image *fs,
		 const char *path, ezfs_inode **out)
{
	uint64_t nid;
	int ret;

	ret = ezfs_resolve(fs, path, &nid);
	if (!ret)
		ret = ezfs_inode_get(fs, nid, out);
	if (ret < 0)
		cli_fail(cmd, img, path, ret);
	return ret;
}

char *cli_fmt_size(uint64_t n, char *buf, size_t size)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB",
					     "PiB" };
	double v = (double)n;
	int u = -1;

	if (n < 1024) {
		snprintf(buf, size, "%llu B", (unsigned long long)n);
		return buf;
	}
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (v == (double)(uint64_t)v)
		snprintf(buf, size, "%.0f %s", v, units[u]);
	else
		snprintf(buf, size,
			 v < 10	   ? "%.2f %s"
			 : v < 100 ? "%.1f %s"
				   : "%.0f %s",
			 v, units[u]);
	return buf;
}

void cli_mode_string(uint32_t mode, char buf[11])
{
	static const char rwx[] = "rwxrwxrwx";
	int i;

	switch (mode & S_IFMT) {
	case S_IFDIR:
		buf[0] = 'd';
		break;
	case S_IFLNK:
		buf[0] = 'l';
		break;
	case S_IFCHR:
		buf[0] = 'c';
		break;
	case S_IFBLK:
		buf[0] = 'b';
		break;
	case S_IFIFO:
		buf[0] = 'p';
		break;
	case S_IFSOCK:
		buf[0] = 's';
		break;
	case S_IFREG:
		buf[0] = '-';
		break;
	default:
		buf[0] = '?';
		break;
	}
	for (i = 0; i < 9; i++)
		buf[1 + i] = (mode & (0400 >> i)) ? rwx[i] : '-';
	if (mode & S_ISUID)
		buf[3] = (mode & S_IXUSR) ? 's' : 'S';
	if (mode & S_ISGID)
		buf[6] = (mode & S_IXGRP) ? 's' : 'S';
	if (mode & S_ISVTX)
		buf[9] = (mode & S_IXOTH) ? 't' : 'T';
	buf[10] = '\0';
}

const char *cli_type_name(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "regular file";
	case S_IFDIR:
		return "directory";
	case S_IFLNK:
		return "symbolic link";
	case S_IFCHR:
		return "character device";
	case S_IFBLK:
		return "block device";
	case S_IFIFO:
		return "fifo";
	case S_IFSOCK:
		return "socket";
	}
	return "unknown";
}

char *cli_fmt_time(int64_t sec, char *buf, size_t size)
{
	time_t t = (time_t)sec;
	struct tm tm;

	if (!gmtime_r(&t, &tm) ||
	    !strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, size, "@%lld", (long long)sec);
	return buf;
}

unsigned cli_online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > 256 ? 256 : (unsigned)n;
}

unsigned cli_parse_threads(const char *s)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > 1024 || *s == '-')
		return 0;
	return (unsigned)v;
}

unsigned cli_opt_jobs(const char *cmd, const char *s)
{
	unsigned n = cli_parse_threads(s);

	if (!n)
		cli_usage_error(cmd,
				"-j/--workers: invalid thread count '%s' "
				"(1..1024)",
				s);
	return n;
}

/* ---- progress bar ---- */

double cli_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void cli_progress_init(struct cli_progress *p, int quiet, const char *label,
		       const char *item_name, uint64_t total_bytes,
		       uint64_t total_items)
{
	memset(p, 0, sizeof(*p));
	p->on = !quiet && isatty(STDERR_FILENO);
	p->label = label;
	p->item_name = item_name;
	p->total_bytes = total_bytes;
	p->total_items = total_items;
	p->start = p->last = cli_now();
}

static void fmt_eta(double s, char *buf, size_t size)
{
	unsigned long t = s > 359999 ? 359999 : (unsigned long)(s + 0.5);

	if (t >= 3600)
		snprintf(buf, size, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60,
			 t % 60);
	else
		snprintf(buf, size, "%lu:%02lu", t / 60, t % 60);
}

void cli_progress_update(struct cli_progress *p, uint64_t bytes, uint64_t items,
			 int force)
{
	char bar[24], sz[32], rate[32], eta[32] = "", line[256];
	double now, el, frac = -1;
	int i, fill;

	if (!p->on)
		return;
	now = cli_now();
	if (!force && now - p->last < 0.1)
		return;
	p->last = now;
	el = now - p->start;
	if (p->total_bytes)
		frac = (double)bytes / p->total_bytes;
	else if (p->total_items)
		frac = (double)items / p->total_items;
	if (frac > 1)
		frac = 1;
	cli_fmt_size(bytes, sz, sizeof(sz));
	/* no rate before there is time to measure one ("0 B/s" misleads) */
	rate[0] = '\0';
	if (el >= 0.05) {
		memcpy(rate, ", ", 3);
		cli_fmt_size((uint64_t)(bytes / el), rate + 2,
			     sizeof(rate) - 4);
		strcat(rate, "/s");
	}
	if (frac >= 0) {
		fill = (int)(frac * 20);
		for (i = 0; i < 20; i++)
			bar[i] = i < fill ? '#' : '.';
		bar[20] = '\0';
		if (frac > 0.001 && frac < 1 && el > 0.5) {
			memcpy(eta, " ETA ", 6);
			fmt_eta(el / frac - el, eta + 5, sizeof(eta) - 5);
		}
		snprintf(line, sizeof(line), "%s [%s] %3d%% %s, %llu %s%s%s",
			 p->label, bar, (int)(frac * 100), sz,
			 (unsigned long long)items, p->item_name, rate, eta);
	} else {
		snprintf(line, sizeof(line), "%s %s, %llu %s%s", p->label, sz,
			 (unsigned long long)items, p->item_name, rate);
	}
	fprintf(stderr, "\r%s\033[K", line);
	fflush(stderr);
	p->drawn = 1;
	progress_dirty = 1;
}

void cli_progress_clear(struct cli_progress *p)
{
	if (p->on && p->drawn)
		clear_progress();
	p->drawn = 0;
}

void cli_progress_end(struct cli_progress *p, uint64_t bytes, uint64_t items)
{
	if (!p->on)
		return;
	cli_progress_update(p, bytes, items, 1);
	if (p->drawn)
		fputc('\n', stderr);
	p->drawn = 0;
	progress_dirty = 0;
}
