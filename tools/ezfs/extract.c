/* SPDX-License-Identifier: MIT */
/* extract.c - ezfs extract: restore a tree from an image into a directory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "extract.h"
#include "cmd.h"

#define X_MAX_DEPTH 4096

enum {
	X_OPT_KEEP_GOING = 0x200,
	X_OPT_ERRORS,
	X_OPT_FS_CONFIG,
	X_OPT_FILE_CONTEXTS,
	X_OPT_MOUNT_POINT,
	X_OPT_ANDROID,
};

/*
 * SIGINT, SIGTERM, SIGHUP: the walker and the workers stop at their next
 * step (x_failed), the directories made so far get their modes and times,
 * then the signal is raised again with its default action. A second one
 * ends the process at once. Signals ignored at startup stay ignored.
 */
static struct xctx *x_sig_ctx;
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
	if (x_sig_ctx)
		x_set_failed(x_sig_ctx);
}

static void x_signals_start(struct xctx *x)
{
	struct sigaction sa, old;
	size_t i;

	x_sig_ctx = x;
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
		"Restore the image's tree (or the directory or file PATH) "
		"into\n"
		"DIR with contents, modes, owners (as root), times, xattrs,\n"
		"links and special files. A directory PATH's contents go into\n"
		"DIR; a file PATH becomes DIR/its name.\n"
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

static char *join(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	char *p = malloc(a + b + 2);

	if (!p)
		return NULL;
	memcpy(p, dir, a);
	if (a)
		p[a++] = '/';
	memcpy(p + a, name, b + 1);
	return p;
}

static int walk_dir(struct walker *w, int dirfd, ezfs_inode *dir,
		    const char *path, unsigned depth);

static int do_dir(struct walker *w, int dirfd, const char *name,
		  ezfs_inode *ino, const struct ezfs_stat *st, const char *path,
		  unsigned depth)
{
	struct xctx *x = w->x;
	struct stat sb;
	int fd, ret;

	ret = cli_nidset_add(&w->dirs_seen, st->nid);
	if (ret == 0) {
		x_error(x, path, "directory loop in the image", -EUCLEAN);
		return -EUCLEAN;
	}
	if (ret < 0 || depth > X_MAX_DEPTH) {
		ret = ret < 0 ? ret : -ELOOP;
		x_error(x, path, "directory", ret);
		return ret;
	}
	while (mkdirat(dirfd, name, 0700) < 0) {
		ret = -errno;
		if (ret == -EEXIST && x->force &&
		    !fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) &&
		    S_ISDIR(sb.st_mode))
			break; /* reuse an existing directory */
		if (ret != -EEXIST ||
		    (ret = x_remove_existing(x, dirfd, name))) {
			x_error(x, path, "creating the directory", ret);
			return ret;
		}
	}
	fd = openat(dirfd, name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		x_error(x, path, "opening the directory", ret);
		return ret;
	}
	if (w->ndirs == w->capdirs) {
		size_t ncap = w->capdirs ? w->capdirs * 2 : 64;
		struct xdir *n = realloc(w->dirs, ncap * sizeof(*n));

		if (!n) {
			close(fd);
			x_error(x, path, "directory", -ENOMEM);
			return -ENOMEM;
		}
		w->dirs = n;
		w->capdirs = ncap;
	}
	w->dirs[w->ndirs].path = strdup(path);
	w->dirs[w->ndirs].depth = depth;
	w->dirs[w->ndirs].nid = st->nid;
	w->ndirs++;
	ret = walk_dir(w, fd, ino, path, depth);
	close(fd);
	return ret;
}

static int add_link(struct walker *w, const char *oldpath, const char *path)
{
	if (w->nlnks == w->caplnks) {
		size_t ncap = w->caplnks ? w->caplnks * 2 : 32;
		struct xlink *n = realloc(w->lnks, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		w->lnks = n;
		w->caplnks = ncap;
	}
	w->lnks[w->nlnks].oldpath = strdup(oldpath);
	w->lnks[w->nlnks].newpath = strdup(path);
	w->nlnks++;
	return 0;
}

static int extract_entry(struct walker *w, int dirfd, const char *name,
			 uint64_t nid, const char *path, unsigned depth)
{
	struct xctx *x = w->x;
	struct ezfs_stat st;
	ezfs_inode *ino;
	int ret, added;

	ret = ezfs_inode_get(x->fs, nid, &ino);
	if (ret < 0) {
		x_error(x, path, "reading the inode", ret);
		return x_skip_damaged(x, path, ret);
	}
	ezfs_inode_stat(ino, &st);
	if (st.mtime_nsec >= 1000000000) {
		ezfs_inode_put(ino);
		x_error(x, path, "mtime nanoseconds out of range", -EUCLEAN);
		return x_skip_damaged(x, path, -EUCLEAN);
	}
	x_sidecar_entry(x, ino, &st, path);
	if (!S_ISDIR(st.mode) && st.nlink > 1) {
		void **slot = cli_nidmap_slot(&w->links, nid, &added);

		if (!slot) {
			ret = -ENOMEM;
		} else if (!added) {
			ret = add_link(w, *slot, path);
			ezfs_inode_put(ino);
			if (ret < 0)
				x_error(x, path, "hard link", ret);
			return ret;
		} else if (!(*slot = strdup(path))) {
			ret = -ENOMEM;
		}
		if (ret < 0) {
			x_error(x, path, "hard link", ret);
			ezfs_inode_put(ino);
			return ret;
		}
	}
	switch (st.mode & S_IFMT) {
	case S_IFDIR:
		ret = do_dir(w, dirfd, name, ino, &st, path, depth);
		break;
	case S_IFREG:
		x_android_file(x, ino, &st);
		ret = x_do_file(x, dirfd, name, &ino, &st, path);
		break;
	case S_IFLNK:
		ret = x_do_symlink(x, dirfd, name, ino, &st, path);
		break;
	case S_IFCHR:
	case S_IFBLK:
	case S_IFIFO:
	case S_IFSOCK:
		ret = x_do_special(x, dirfd, name, ino, &st, path);
		break;
	default:
		x_error(x, path, "unknown file type", -EUCLEAN);
		ret = x_skip_damaged(x, path, -EUCLEAN);
		break;
	}
	if (!ret && !S_ISREG(st.mode))
		x_entry_done(x);
	ezfs_inode_put(ino);
	return ret;
}

/*
 * Name checks: no entry may leave its directory. Returns 1 with the quoted
 * name in bad at the first offender, 0 if all are fine. Only the first "."
 * and ".." pass.
 */
static int bad_name(const struct cli_dirlist *dl, char *bad, size_t size)
{
	int dots = 0, dotdots = 0;
	size_t i;

	for (i = 0; i < dl->n; i++) {
		const char *name = dl->ents[i].name;
		size_t namelen = dl->ents[i].namelen;

		if (namelen == 1 && name[0] == '.' && !dots++)
			continue;
		if (namelen == 2 && name[0] == '.' && name[1] == '.' &&
		    !dotdots++)
			continue;
		if (!namelen || cli_is_dots(name, namelen) ||
		    memchr(name, '/', namelen) || memchr(name, '\0', namelen)) {
			ezfs_quote(name, namelen, bad, size);
			return 1;
		}
	}
	return 0;
}

static int walk_dir(struct walker *w, int dirfd, ezfs_inode *dir,
		    const char *path, unsigned depth)
{
	struct xctx *x = w->x;
	struct cli_dirlist dl;
	char bad[768];
	size_t i;
	int ret;

	/* entries before a read error are checked as if read one by one;
	 * with --keep-going, those after a damaged block too */
	if (x->keep_going) {
		struct ezfs_stat dst;
		unsigned nbad;

		ezfs_inode_stat(dir, &dst);
		ret = x_readdir_tolerant(x->fs, dir, dst.size, &dl.ents, &dl.n,
					 &nbad);
	} else {
		ret = ezfs_readdir_all(dir, &dl.ents, &dl.n);
	}
	if (bad_name(&dl, bad, sizeof(bad))) {
		char what[900];

		snprintf(what, sizeof(what), "invalid entry name '%s'", bad);
		x_error(x, path, what, 0);
		ret = -EUCLEAN;
	} else if (ret < 0) {
		x_error(x, path, "reading the directory", ret);
	}
	/* --keep-going: the directory is listed, its entries that could be
	 * read and have fit names come out */
	if (ret < 0 && ret != -ENOMEM)
		ret = x_skip_damaged(x, path, ret);
	for (i = 0; !ret && i < dl.n; i++) {
		struct ezfs_dirent *e = &dl.ents[i];
		char *child;

		if (cli_is_dots(e->name, e->namelen) || !e->namelen ||
		    memchr(e->name, '/', e->namelen) ||
		    memchr(e->name, '\0', e->namelen))
			continue;
		child = join(path, e->name);
		if (!child) {
			ret = -ENOMEM;
			x_error(x, path, "directory", ret);
			break;
		}
		ret = extract_entry(w, dirfd, e->name, e->nid, child,
				    depth + 1);
		free(child);
		if (!ret && x_failed(x))
			ret = -ECANCELED;
	}
	cli_dirlist_free(&dl);
	return ret;
}

struct totals {
	struct cli_nidset seen;
	uint64_t bytes, entries;
};

static int total_cb(void *arg, const char *path, uint64_t nid,
		    const struct ezfs_stat *st, ezfs_inode *ino)
{
	struct totals *t = arg;

	t->entries++;
	if (S_ISREG(st->mode) && cli_nidset_add(&t->seen, nid) > 0)
		t->bytes += st->size;
	return 0;
}

/* Create DEST if needed, refuse a non-empty one without --force. */
static int open_dest(struct xctx *x)
{
	struct dirent *de;
	struct stat sb;
	DIR *d;
	int fd, nonempty = 0;

	/* a directory PATH's mode replaces this one at the end */
	if (mkdir(x->dest, 0777 & ~x->umask) < 0 && errno != EEXIST) {
		cli_error("extract", "%s: %s", x->dest, strerror(errno));
		return -1;
	}
	x->rootfd = open(x->dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (x->rootfd < 0) {
		cli_error("extract", "%s: %s", x->dest, strerror(errno));
		return -1;
	}
	/* in a setgid DEST (or reused ones with --force) files inherit a gid */
	x->ids_default =
		!x->force && !fstat(x->rootfd, &sb) && !(sb.st_mode & S_ISGID);
	if (x->force)
		return 0;
	fd = dup(x->rootfd);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		cli_error("extract", "%s: %s", x->dest, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			nonempty = 1;
	closedir(d);
	if (nonempty) {
		cli_error("extract", "%s: directory not empty (use --force)",
			  x->dest);
		return -1;
	}
	return 0;
}

static int run(struct xctx *x, struct walker *w, const char *subpath,
	       const uint64_t *bynid)
{
	struct ezfs_stat st;
	pthread_t *tids;
	ezfs_inode *ino;
	uint64_t nid;
	int ret = 0;

	if (bynid)
		nid = *bynid;
	else
		ret = ezfs_resolve(x->fs, subpath, &nid);
	if (!ret)
		ret = ezfs_inode_get(x->fs, nid, &ino);
	if (ret < 0) {
		cli_fail("extract", x->img, subpath, ret);
		return ret;
	}
	ezfs_inode_stat(ino, &st);
	if (open_dest(x) < 0) {
		ezfs_inode_put(ino);
		return -1;
	}
	cli_progress_init(&x->prog, x->quiet, "extract", "entries", 0, 0);
	if (x->prog.on) {
		struct totals t;

		memset(&t, 0, sizeof(t));
		if (S_ISDIR(st.mode)) {
			cli_walk(x->fs, nid, total_cb, &t);
		} else {
			t.entries = 1;
			t.bytes = S_ISREG(st.mode) ? st.size : 0;
		}
		cli_nidset_free(&t.seen);
		x->prog.total_bytes = t.bytes;
		x->prog.total_items = t.entries;
	}
	tids = calloc(x->threads, sizeof(*tids));
	ret = tids ? x_workers_start(x, tids) : -ENOMEM;
	if (ret < 0) {
		cli_error("extract", "starting threads: %s", strerror(-ret));
		x_set_failed(x);
	} else if (S_ISDIR(st.mode)) {
		cli_nidset_add(&w->dirs_seen, nid);
		w->dirs = calloc(64, sizeof(*w->dirs));
		if (w->dirs) {
			w->capdirs = 64;
			w->dirs[0].path = strdup("");
			w->dirs[0].nid = nid;
			w->ndirs = 1;
			x_sidecar_entry(x, ino, &st, "");
			ret = walk_dir(w, x->rootfd, ino, "", 0);
		} else {
			ret = -ENOMEM;
		}
	} else {
		const char *base = strrchr(subpath, '/');

		base = base ? base + 1 : subpath;
		if (bynid) /* no name known: the nid names the file */
			base = subpath + 1;
		ret = extract_entry(w, x->rootfd, base, nid, base, 1);
	}
	if (ret < 0)
		x_set_failed(x);
	ezfs_inode_put(ino);
	if (tids)
		x_workers_finish(x, tids, x->threads);
	free(tids);
	if (x_sig) {
		/* best effort: no directory is left at the walker's 0700 */
		cli_progress_clear(&x->prog);
		x_dir_phase(w);
		cli_error("extract",
			  "%s: interrupted after %llu entries; "
			  "directory modes and times restored",
			  x->dest, (unsigned long long)x->entries_done);
		return -1;
	}
	if (x_failed(x))
		return -1;
	ret = x_link_phase(w);
	if (!ret)
		ret = x_dir_phase(w);
	cli_progress_end(&x->prog, x->bytes_done, x->entries_done);
	if (!ret && x->keep_going && x->damaged) {
		cli_error("extract",
			  "%s: %u damaged entr%s skipped (see above); "
			  "everything else extracted",
			  x->img, x->damaged, x->damaged == 1 ? "y" : "ies");
		ret = -EIO;
	} else if (!ret && x->read_errors) {
		cli_error("extract",
			  "%s: %u file%s not extracted: unreadable "
			  "data (see above)",
			  x->img, x->read_errors,
			  x->read_errors == 1 ? "" : "s");
		ret = -EIO;
	}
	if (!ret && !x->quiet) {
		char b[32], r[48] = "";
		double el = cli_now() - x->prog.start;

		cli_fmt_size(x->bytes_done, b, sizeof(b));
		if (el >= 0.01) {
			memcpy(r, ", ", 3);
			cli_fmt_size((uint64_t)(x->bytes_done / el), r + 2,
				     sizeof(r) - 4);
			strcat(r, "/s");
		}
		printf("%s: %llu entries, %s of file data, %.2f s%s\n", x->dest,
		       (unsigned long long)x->entries_done, b, el, r);
	}
	return ret;
}

static void free_walker(struct walker *w)
{
	size_t i;

	for (i = 0; i < w->ndirs; i++)
		free(w->dirs[i].path);
	free(w->dirs);
	for (i = 0; i < w->nlnks; i++) {
		free(w->lnks[i].oldpath);
		free(w->lnks[i].newpath);
	}
	free(w->lnks);
	cli_nidset_free(&w->dirs_seen);
	cli_nidmap_free(&w->links, free);
}

/*
 * The extraction itself, for ezfs extract and fsck.erofs --extract: o says
 * what to restore where and how. Returns the exit status (0 or 1).
 */
int x_extract(const struct x_opts *o)
{
	struct walker w;
	struct cli_log lg = { 0 };
	struct xctx x;
	struct rlimit rl;
	char nidpath[32];
	const char *sub = o->subpath ? o->subpath : "/";
	int ret;

	memset(&x, 0, sizeof(x));
	memset(&w, 0, sizeof(w));
	x.rootfd = -1;
	x.threads = o->threads ? o->threads : cli_online_cpus();
	x.force = o->force;
	x.quiet = o->quiet;
	x.no_xattrs = o->no_xattrs;
	x.img = o->img;
	x.dest = o->dest;
	x.keep_going = o->keep_going;
	pthread_mutex_init(&x.errlock, NULL);
	x.is_root = geteuid() == 0 && !o->no_owner;
	x.euid = geteuid();
	x.egid = getegid();
	x.umask = umask(0); /* every mode is set explicitly */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	/* the library's details of at most as many failures as are named */
	lg.max = XREAD_NAMED;
	cli_remote_keep_unverified(); /* listed at the end */
	if (cli_open("extract", x.img, &lg, &x.fs) < 0)
		return 1;
	if (x_sidecars_open(&x, o) < 0) {
		x_sidecars_close(&x, 0);
		ezfs_image_close(x.fs);
		return 1;
	}
	if (o->by_nid) {
		/* "#N" names a file extracted by nid alone */
		snprintf(nidpath, sizeof(nidpath), "#%llu",
			 (unsigned long long)o->nid);
		sub = nidpath;
	}
	pthread_mutex_init(&x.lock, NULL);
	pthread_cond_init(&x.more, NULL);
	pthread_cond_init(&x.space, NULL);
	pthread_cond_init(&x.idle, NULL);
	w.x = &x;
	x_signals_start(&x);
	ret = run(&x, &w, sub, o->by_nid ? &o->nid : NULL);
	cli_progress_clear(&x.prog);
	if (!x_sig &&
	    cli_remote_unverified("extract", x.img, x.fs, sub, x.errs))
		ret = -EIO;
	{
		int ok = ret >= 0 || (x.keep_going && !x_failed(&x));
		int sc = x_sidecars_close(&x, ok);

		if (sc && ret >= 0)
			ret = -EIO;
	}
	pthread_mutex_destroy(&x.errlock);
	free_walker(&w);
	if (x.rootfd >= 0)
		close(x.rootfd);
	pthread_mutex_destroy(&x.lock);
	pthread_cond_destroy(&x.more);
	pthread_cond_destroy(&x.space);
	pthread_cond_destroy(&x.idle);
	ezfs_image_close(x.fs);
	if (x_sig) {
		fflush(stdout);
		signal(x_sig, SIG_DFL);
		raise(x_sig);
	}
	return ret < 0 ? 1 : 0;
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
		CLI_ENGINE_OPTS,
		CLI_IMAGE_OPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct x_opts o;
	int c, ret;

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
		default:
			ret = cli_opt_other("extract", c, argv, usage);
			if (ret >= 0)
				return ret;
		}
	}
	if (cli_nargs("extract", argc - optind, 2, 3, "missing IMG or DIR"))
		return 2;
	o.img = argv[optind];
	o.dest = argv[optind + 1];
	if (argc - optind == 3)
		o.subpath = argv[optind + 2];
	return x_extract(&o);
}
