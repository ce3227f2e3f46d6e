/* SPDX-License-Identifier: MIT */
/* extract.c - ezfs extract: options, messages and exit status of
 * ezfs_extract (lib/extract), which restores a tree from an image into a
 * directory. */
#define _GNU_SOURCE /* asprintf */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <ezfs/extract.h>

#include "common.h"
#include "extract.h"
#include "cmd.h"

#define XREAD_NAMED 20 /* as many library log lines as files named */

enum {
	X_OPT_KEEP_GOING = 0x200,
	X_OPT_ERRORS,
	X_OPT_FS_CONFIG,
	X_OPT_FILE_CONTEXTS,
	X_OPT_MOUNT_POINT,
	X_OPT_ANDROID,
	X_OPT_NO_SPARSE,
};

/*
 * SIGINT, SIGTERM, SIGHUP: the walker and the workers stop at their next
 * step (the extraction's cancel flag), the directories made so far get
 * their modes and times, then the signal is raised again with its
 * default action. A second one ends the process at once. Signals ignored
 * at startup stay ignored.
 */
static volatile sig_atomic_t x_sig;
static const int x_stop_signals[] = { SIGINT, SIGTERM, SIGHUP };

static void x_on_signal(int sig)
{
	if (x_sig) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	x_sig = sig;
}

static void x_signals_start(void)
{
	struct sigaction sa, old;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = x_on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(x_stop_signals) / sizeof(x_stop_signals[0]); i++)
		if (!sigaction(x_stop_signals[i], NULL, &old) &&
		    old.sa_handler != SIG_IGN)
			sigaction(x_stop_signals[i], &sa, NULL);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ezfs extract [-q] [-f|--force] [-j N] [--keep-going] "
		"[--android] IMG DIR [PATH]\n"
		"       ezfs extract [OPTIONS] IMG.0 IMG.1 ... DIR [PATH]\n"
		"Restore the image's tree (or the directory or file PATH) "
		"into\n"
		"DIR with contents, modes, owners (as root), times, xattrs,\n"
		"links and special files. A directory PATH's contents go into\n"
		"DIR; a file PATH becomes DIR/its name. A split sparse set\n"
		"(IMG.0 IMG.1 ...) is given as simg2img takes it, or as "
		"IMG.0.\n"
		"  -f, --force    extract into a non-empty DIR, replacing "
		"files\n"
		"  -j, --jobs N, --workers=N\n"
		"                 data threads (default: online CPUs)\n"
		"  -q, --quiet    no progress bar and no "
		"summary\n"
		"  --keep-going   a damaged inode, extent or directory is "
		"named\n"
		"                 and skipped; the rest comes out (exit 1)\n"
		"  --errors FILE  the damaged paths, one a line\n"
		"  --no-sparse    write every byte: no holes where the image\n"
		"                 has holes or whole blocks of zeros\n"
		"Android (for ezfs mkfs --fs-config-file/--file-contexts):\n"
		"  --fs-config FILE      owners, modes and capabilities, "
		"canned\n"
		"                        fs_config lines\n"
		"  --file-contexts FILE  SELinux labels, file_contexts "
		"lines\n"
		"  --mount-point MP      the keys' prefix (default: none)\n"
		"  --android      both, into DIR.fs_config and "
		"DIR.file_contexts,\n"
		"                 MP the partition's name, and DIR.mkfs: the\n"
		"                 ezfs mkfs line that builds the image "
		"again\n" CLI_ENGINE_HELP CLI_IMAGE_HELP
		"Interrupted (SIGINT, SIGTERM, SIGHUP), it stops, gives the\n"
		"directories made so far their modes and times, and says "
		"so.\n");
}

/* The command's side of one extraction: progress bar, --errors FILE. */
struct xcli {
	const char *cmd;
	struct cli_progress prog;
	FILE *errs;
};

static void x_message(void *arg, int level, const char *line)
{
	struct xcli *c = arg;

	cli_progress_clear(&c->prog);
	cli_error(c->cmd, "%s", line);
}

static void x_progress(void *arg, const struct ezfs_extract_progress *p)
{
	struct xcli *c = arg;

	c->prog.total_bytes = p->total_bytes;
	c->prog.total_items = p->total_entries;
	cli_progress_update(&c->prog, p->bytes, p->entries, 0);
}

static void x_entry(void *arg, const char *path, int problem, int err)
{
	struct xcli *c = arg;

	if (c->errs)
		fprintf(c->errs, "%s\n", *path ? path : ".");
}

/*
 * The extraction itself, for ezfs extract and fsck.erofs --extract: o says
 * what to restore where and how. Returns the exit status (0 or 1).
 */
int x_extract(const struct x_opts *o)
{
	struct ezfs_extract_opts xo;
	struct ezfs_extract_result res;
	struct cli_log lg = { 0 };
	struct xcli c = { .cmd = o->cmd ? o->cmd : "extract" };
	struct rlimit rl;
	char nidpath[32];
	ezfs_image *fs;
	int ret;

	/* an open file per job queued */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	/* the library's details of at most as many failures as are named */
	lg.max = XREAD_NAMED;
	cli_remote_keep_unverified(); /* listed at the end */
	if (cli_open(c.cmd, o->img, &lg, &fs) < 0)
		return 1;
	if (o->errors && !(c.errs = fopen(o->errors, "w"))) {
		cli_error(c.cmd, "%s: %s", o->errors, strerror(errno));
		ezfs_image_close(fs);
		return 1;
	}
	ezfs_extract_opts_init(&xo);
	xo.path = o->subpath;
	xo.nid = o->nid;
	xo.flags = (o->by_nid ? EZFS_EXTRACT_BY_NID : 0) |
		   (o->force ? EZFS_EXTRACT_FORCE : 0) |
		   (o->no_owner ? EZFS_EXTRACT_NO_OWNER : 0) |
		   (o->no_xattrs ? EZFS_EXTRACT_NO_XATTRS : 0) |
		   (o->keep_going ? EZFS_EXTRACT_KEEP_GOING : 0) |
		   (o->android ? EZFS_EXTRACT_ANDROID : 0) |
		   (o->no_sparse ? EZFS_EXTRACT_NO_SPARSE : 0);
	xo.threads = o->threads;
	xo.image_name = o->img;
	xo.fs_config = o->fs_config;
	xo.file_contexts = o->file_contexts;
	xo.mount_point = o->mount_point;
	xo.arg = &c;
	xo.message = x_message;
	xo.entry = x_entry;
	xo.cancel = &x_sig;
	cli_progress_init(&c.prog, o->quiet, "extract", "entries", 0, 0);
	if (c.prog.on)
		xo.progress = x_progress;
	x_signals_start();
	ret = ezfs_extract(fs, o->dest, &xo, &res);
	if (o->by_nid) /* "#N" names a file extracted by nid alone */
		snprintf(nidpath, sizeof(nidpath), "#%llu",
			 (unsigned long long)o->nid);
	/* a remote layer that failed its digest once read whole: every
	 * non-directory written from it is listed (kept: the user decides) */
	if (!x_sig && ret != -ENOTEMPTY &&
	    cli_remote_unverified(c.cmd, o->img, fs,
				  o->by_nid    ? nidpath
				  : o->subpath ? o->subpath
					       : "/",
				  c.errs))
		ret = ret ? ret : -EIO;
	if (ret == -ENOTEMPTY)
		cli_error(c.cmd, "%s: directory not empty (use %s)", o->dest,
			  o->force_opt ? o->force_opt : "--force");
	if (!ret || ret == -EIO)
		cli_progress_end(&c.prog, res.bytes, res.entries);
	else
		cli_progress_clear(&c.prog);
	if (!ret && !o->quiet) {
		char b[32], r[48] = "";
		double el = cli_now() - c.prog.start;

		cli_fmt_size(res.bytes, b, sizeof(b));
		if (el >= 0.01) {
			memcpy(r, ", ", 3);
			cli_fmt_size((uint64_t)(res.bytes / el), r + 2,
				     sizeof(r) - 4);
			strcat(r, "/s");
		}
		printf("%s: %llu entries, %s of file data, %.2f s%s\n", o->dest,
		       (unsigned long long)res.entries, b, el, r);
	}
	if (c.errs && (ferror(c.errs) | fclose(c.errs))) {
		cli_error(c.cmd, "%s: %s", "--errors",
			  strerror(errno ? errno : EIO));
		ret = ret ? ret : -EIO;
	}
	ezfs_image_close(fs);
	if (x_sig) {
		fflush(stdout);
		signal(x_sig, SIG_DFL);
		raise(x_sig);
	}
	return ret < 0 ? 1 : 0;
}

/* The number after the prefix (len bytes) of a, or -1: not one. */
static long piece_index(const char *a, const char *prefix, size_t len)
{
	const char *d = a + len;
	char *end;
	long k;

	if (strncmp(a, prefix, len) || *d < '0' || *d > '9' ||
	    (*d == '0' && d[1]))
		return -1;
	errno = 0;
	k = strtol(d, &end, 10);
	return errno || *end ? -1 : k;
}

/*
 * A split sparse set as simg2img takes it: IMG.0 IMG.1 ... IMG.N, in any
 * order after IMG.0 (a shell sorts IMG.10 before IMG.2): the arguments
 * after IMG.0 named IMG.<number> that exist and are no directory. IMG.0
 * opens the whole set, so they must be all of it. Returns how many
 * arguments after args[0] are its files (0: none), or -1 after a usage
 * error.
 */
static int split_set(char **args, int n)
{
	const char *img = args[0];
	size_t len = strlen(img);
	unsigned char *seen;
	struct stat sb;
	char *next;
	int m = 0, i;

	if (len < 2 || strcmp(img + len - 2, ".0"))
		return 0;
	while (m + 1 < n && piece_index(args[m + 1], img, len - 1) > 0 &&
	       !stat(args[m + 1], &sb) && !S_ISDIR(sb.st_mode))
		m++;
	if (!m)
		return 0;
	seen = calloc(m + 1, 1);
	if (!seen) {
		cli_error("extract", "out of memory");
		return -1;
	}
	for (i = 1; i <= m; i++) {
		long k = piece_index(args[i], img, len - 1);

		if (k > m || seen[k]) {
			free(seen);
			cli_usage_error("extract",
					"%s: not one of a split set %.*s0 to "
					"%.*s%d (a file missing or given "
					"twice)",
					args[i], (int)(len - 1), img,
					(int)(len - 1), img, m);
			return -1;
		}
		seen[k] = 1;
	}
	free(seen);
	/* IMG.0 reads the set to its last file: that must be the last one
	 * given */
	if (asprintf(&next, "%.*s%d", (int)(len - 1), img, m + 1) < 0)
		return -1;
	i = !stat(next, &sb);
	if (i)
		cli_usage_error("extract",
				"%s exists too: a split set is read whole, "
				"from %s to its last file",
				next, img);
	free(next);
	return i ? -1 : m;
}

int cmd_extract(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "workers", required_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "keep-going", no_argument, NULL, X_OPT_KEEP_GOING },
		{ "errors", required_argument, NULL, X_OPT_ERRORS },
		{ "fs-config", required_argument, NULL, X_OPT_FS_CONFIG },
		{ "file-contexts", required_argument, NULL,
		  X_OPT_FILE_CONTEXTS },
		{ "mount-point", required_argument, NULL, X_OPT_MOUNT_POINT },
		{ "android", no_argument, NULL, X_OPT_ANDROID },
		{ "no-sparse", no_argument, NULL, X_OPT_NO_SPARSE },
		CLI_ENGINE_OPTS,
		CLI_IMAGE_OPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct x_opts o;
	int c, ret, set;

	memset(&o, 0, sizeof(o));
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":fj:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			o.force = 1;
			break;
		case 'j':
			o.threads = cli_opt_jobs("extract", optarg);
			if (!o.threads)
				return 2;
			break;
		case 'q':
			o.quiet = 1;
			break;
		case X_OPT_KEEP_GOING:
			o.keep_going = 1;
			break;
		case X_OPT_ERRORS:
			o.errors = optarg;
			break;
		case X_OPT_FS_CONFIG:
			o.fs_config = optarg;
			break;
		case X_OPT_FILE_CONTEXTS:
			o.file_contexts = optarg;
			break;
		case X_OPT_MOUNT_POINT:
			o.mount_point = optarg;
			break;
		case X_OPT_ANDROID:
			o.android = 1;
			break;
		case X_OPT_NO_SPARSE:
			o.no_sparse = 1;
			break;
		default:
			ret = cli_opt_other("extract", c, argv, usage);
			if (ret >= 0)
				return ret;
		}
	}
	set = argc > optind ? split_set(argv + optind, argc - optind) : 0;
	if (set < 0)
		return 2;
	if (cli_nargs("extract", argc - optind - set, 2, 3,
		      "missing IMG or DIR"))
		return 2;
	o.img = argv[optind];
	o.dest = argv[optind + set + 1];
	if (argc - optind - set == 3)
		o.subpath = argv[optind + set + 2];
	return x_extract(&o);
}
