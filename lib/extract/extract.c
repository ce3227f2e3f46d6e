/* SPDX-License-Identifier: MIT */
/*
 * extract.c - ezfs_extract: restore a tree from an image into a directory.
 * The walker (the caller's thread) makes directories, symlinks and special
 * files and opens each regular file; the pool's workers write the data
 * (extract_io.c); hard links and the directories' metadata come last.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "extract/internal.h"

#define X_MAX_DEPTH 4096

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

	ret = ezi_x_nid_add(&w->dirs_seen, st->nid);
	if (ret == 0) {
		ezi_x_error(x, path, "directory loop in the image", -EUCLEAN);
		return -EUCLEAN;
	}
	if (ret < 0 || depth > X_MAX_DEPTH) {
		ret = ret < 0 ? ret : -ELOOP;
		ezi_x_error(x, path, "directory", ret);
		return ret;
	}
	while (mkdirat(dirfd, name, 0700) < 0) {
		ret = -errno;
		if (ret == -EEXIST && x->force &&
		    !fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) &&
		    S_ISDIR(sb.st_mode))
			break; /* reuse an existing directory */
		if (ret != -EEXIST ||
		    (ret = ezi_x_remove_existing(x, dirfd, name))) {
			ezi_x_error(x, path, "creating the directory", ret);
			return ret;
		}
	}
	fd = openat(dirfd, name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* the walker writes into it: the umask may not take that away */
	ret = fd < 0					  ? -errno
	      : (0700 & x->umask) && fchmod(fd, 0700) < 0 ? -errno
							  : 0;
	if (ret < 0) {
		if (fd >= 0)
			close(fd);
		ezi_x_error(x, path, "opening the directory", ret);
		return ret;
	}
	if (w->ndirs == w->capdirs) {
		size_t ncap = w->capdirs ? w->capdirs * 2 : 64;
		struct xdir *n = realloc(w->dirs, ncap * sizeof(*n));

		if (!n) {
			close(fd);
			ezi_x_error(x, path, "directory", -ENOMEM);
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
	int ret;

	ret = ezfs_inode_get(x->fs, nid, &ino);
	if (ret < 0) {
		ezi_x_error(x, path, "reading the inode", ret);
		return ezi_x_skip_damaged(x, path, ret);
	}
	ezfs_inode_stat(ino, &st);
	if (st.mtime_nsec >= 1000000000) {
		ezfs_inode_put(ino);
		ezi_x_error(x, path, "mtime nanoseconds out of range",
			    -EUCLEAN);
		return ezi_x_skip_damaged(x, path, -EUCLEAN);
	}
	ezi_x_sidecar_entry(x, ino, &st, path);
	if (!S_ISDIR(st.mode) && st.nlink > 1) {
		const char *first = ezi_hash_get(&w->links, nid);
		char *copy;

		if (first) {
			ret = add_link(w, first, path);
			ezfs_inode_put(ino);
			if (ret < 0)
				ezi_x_error(x, path, "hard link", ret);
			return ret;
		}
		copy = strdup(path);
		ret = !copy ? -ENOMEM : ezi_hash_add(&w->links, nid, copy);
		if (ret < 0) {
			free(copy);
			ezi_x_error(x, path, "hard link", ret);
			ezfs_inode_put(ino);
			return ret;
		}
	}
	switch (st.mode & S_IFMT) {
	case S_IFDIR:
		ret = do_dir(w, dirfd, name, ino, &st, path, depth);
		break;
	case S_IFREG:
		ezi_x_android_file(x, ino, &st);
		ret = ezi_x_do_file(x, dirfd, name, &ino, &st, path);
		break;
	case S_IFLNK:
		ret = ezi_x_do_symlink(x, dirfd, name, ino, &st, path);
		break;
	case S_IFCHR:
	case S_IFBLK:
	case S_IFIFO:
	case S_IFSOCK:
		ret = ezi_x_do_special(x, dirfd, name, ino, &st, path);
		break;
	default:
		ezi_x_error(x, path, "unknown file type", -EUCLEAN);
		ret = ezi_x_skip_damaged(x, path, -EUCLEAN);
		break;
	}
	if (!ret && !S_ISREG(st.mode))
		ezi_x_entry_done(x);
	ezfs_inode_put(ino);
	return ret;
}

/*
 * Name checks: no entry may leave its directory. Returns 1 with the quoted
 * name in bad at the first offender, 0 if all are fine. Only the first "."
 * and ".." pass.
 */
static int bad_name(const struct ezfs_dirent *ents, size_t n, char *bad,
		    size_t size)
{
	int dots = 0, dotdots = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		const char *name = ents[i].name;
		size_t namelen = ents[i].namelen;

		if (namelen == 1 && name[0] == '.' && !dots++)
			continue;
		if (namelen == 2 && name[0] == '.' && name[1] == '.' &&
		    !dotdots++)
			continue;
		if (!namelen || ezi_x_is_dots(name, namelen) ||
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
	struct ezfs_dirent *ents = NULL;
	size_t n = 0, i;
	char bad[768];
	int ret;

	/* entries before a read error are checked as if read one by one;
	 * with --keep-going, those after a damaged block too */
	ret = ezi_x_readdir(dir, x->keep_going, &ents, &n);
	if (bad_name(ents, n, bad, sizeof(bad))) {
		char what[900];

		snprintf(what, sizeof(what), "invalid entry name '%s'", bad);
		ezi_x_error(x, path, what, 0);
		ret = -EUCLEAN;
	} else if (ret < 0) {
		ezi_x_error(x, path, "reading the directory", ret);
	}
	/* --keep-going: the directory is listed, its entries that could be
	 * read and have fit names come out */
	if (ret < 0 && ret != -ENOMEM)
		ret = ezi_x_skip_damaged(x, path, ret);
	for (i = 0; !ret && i < n; i++) {
		struct ezfs_dirent *e = &ents[i];
		char *child;

		if (ezi_x_is_dots(e->name, e->namelen) || !e->namelen ||
		    memchr(e->name, '/', e->namelen) ||
		    memchr(e->name, '\0', e->namelen))
			continue;
		child = join(path, e->name);
		if (!child) {
			ret = -ENOMEM;
			ezi_x_error(x, path, "directory", ret);
			break;
		}
		ret = extract_entry(w, dirfd, e->name, e->nid, child,
				    depth + 1);
		free(child);
		if (!ret && ezi_x_failed(x))
			ret = -ECANCELED;
	}
	ezfs_dirents_free(ents, n);
	return ret;
}

/* Create DEST if needed; -ENOTEMPTY for a non-empty one unless forced. */
static int open_dest(struct xctx *x)
{
	struct dirent *de;
	struct stat sb;
	DIR *d;
	int fd, nonempty = 0;

	/* a directory PATH's mode replaces this one at the end */
	if (mkdir(x->dest, 0777 & ~x->umask) < 0 && errno != EEXIST) {
		ezi_x_msg(x, "%s: %s", x->dest, strerror(errno));
		return -errno;
	}
	x->rootfd = open(x->dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (x->rootfd < 0) {
		ezi_x_msg(x, "%s: %s", x->dest, strerror(errno));
		return -errno;
	}
	/* in a setgid DEST (or reused ones when forced) files inherit a gid */
	x->ids_default = 0;
	x->blksz = 4096;
	if (!fstat(x->rootfd, &sb)) {
		x->ids_default = !x->force && !(sb.st_mode & S_ISGID);
		if (sb.st_blksize >= 512 && sb.st_blksize <= (1 << 20))
			x->blksz = (unsigned)sb.st_blksize;
	}
	if (x->force)
		return 0;
	fd = dup(x->rootfd);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		int err = -errno;

		ezi_x_msg(x, "%s: %s", x->dest, strerror(-err));
		if (fd >= 0)
			close(fd);
		return err;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			nonempty = 1;
	closedir(d);
	return nonempty ? -ENOTEMPTY : 0;
}

/* The summary lines of entries left out; -EIO when there were some. */
static int summary(struct xctx *x)
{
	if (x->keep_going && x->damaged) {
		ezi_x_msg(x,
			  "%s: %u damaged entr%s skipped (see above); "
			  "everything else extracted",
			  x->img, x->damaged, x->damaged == 1 ? "y" : "ies");
		return -EIO;
	}
	if (x->read_errors) {
		ezi_x_msg(x,
			  "%s: %u file%s not extracted: unreadable "
			  "data (see above)",
			  x->img, x->read_errors,
			  x->read_errors == 1 ? "" : "s");
		return -EIO;
	}
	return 0;
}

static int run(struct xctx *x, struct walker *w, const char *subpath,
	       const uint64_t *bynid)
{
	struct ezfs_stat st;
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
		ezi_x_msg(x, "%s: %s: %s", x->img, subpath, ezfs_strerror(ret));
		return ret;
	}
	ezfs_inode_stat(ino, &st);
	ret = open_dest(x);
	if (ret < 0) {
		ezfs_inode_put(ino);
		return ret;
	}
	if (x->o->progress) {
		if (S_ISDIR(st.mode)) {
			ezi_x_totals(x->fs, nid, &x->prog.total_bytes,
				     &x->prog.total_entries);
		} else {
			x->prog.total_entries = 1;
			x->prog.total_bytes = S_ISREG(st.mode) ? st.size : 0;
		}
	}
	ret = ezi_x_workers_start(x);
	if (ret < 0) {
		ezi_x_msg(x, "starting threads: %s", strerror(-ret));
		ezi_x_set_failed(x);
	} else if (S_ISDIR(st.mode)) {
		ezi_x_nid_add(&w->dirs_seen, nid);
		w->dirs = calloc(64, sizeof(*w->dirs));
		if (w->dirs) {
			w->capdirs = 64;
			w->dirs[0].path = strdup("");
			w->dirs[0].nid = nid;
			w->ndirs = 1;
			ezi_x_sidecar_entry(x, ino, &st, "");
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
		ezi_x_set_failed(x);
	ezfs_inode_put(ino);
	ezi_x_workers_finish(x);
	if (x->o->cancel && *x->o->cancel) {
		/* best effort: no directory is left at the walker's 0700 */
		ezi_x_dir_phase(w);
		ezi_x_msg(x,
			  "%s: interrupted after %llu entries; "
			  "directory modes and times restored",
			  x->dest, (unsigned long long)x->entries_done);
		return -ECANCELED;
	}
	/* stopped by an error reported above (by a worker: -EIO) */
	if (ezi_x_failed(x))
		return ret < 0 && ret != -ENOTEMPTY && ret != -ECANCELED ? ret
									 : -EIO;
	ret = ezi_x_link_phase(w);
	if (!ret)
		ret = ezi_x_dir_phase(w);
	ezi_x_progress(x, 1);
	if (!ret)
		ret = summary(x);
	return ret;
}

/* Every file written came from a source that failed its check. */
static int check_source(struct xctx *x)
{
	int err = x->o->source_check(x->o->arg);
	size_t i;

	for (i = 0; err < 0 && i < x->written.n; i++) {
		ezi_x_entry_problem(x, x->written.v[i], EZFS_ENTRY_UNVERIFIED,
				    err);
		x->unverified++;
	}
	return err < 0 ? err : 0;
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
	ezi_x_nid_free(&w->dirs_seen, 0);
	ezi_x_nid_free(&w->links, 1);
}

void ezfs_extract_opts_init(struct ezfs_extract_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
}

static unsigned online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (unsigned)n : 1;
}

int ezfs_extract(ezfs_image *img, const char *dest,
		 const struct ezfs_extract_opts *o,
		 struct ezfs_extract_result *res)
{
	struct ezfs_extract_opts given;
	struct walker w;
	struct xctx x;
	char nidpath[32];
	const char *sub;
	int ret, sc;
	size_t i;

	if (res)
		memset(res, 0, sizeof(*res));
	ezfs_extract_opts_init(&given);
	if (ezi_x_opts_copy(&given, sizeof(given), o) || !img || !dest ||
	    !*dest)
		return -EINVAL;
	memset(&x, 0, sizeof(x));
	memset(&w, 0, sizeof(w));
	x.o = &given;
	x.fs = img;
	x.rootfd = -1;
	x.threads = given.threads ? given.threads : online_cpus();
	x.force = !!(given.flags & EZFS_EXTRACT_FORCE);
	x.no_xattrs = !!(given.flags & EZFS_EXTRACT_NO_XATTRS);
	x.no_sparse = !!(given.flags & EZFS_EXTRACT_NO_SPARSE);
	x.keep_going = !!(given.flags & EZFS_EXTRACT_KEEP_GOING);
	x.img = given.image_name ? given.image_name : "image";
	x.dest = dest;
	x.is_root = geteuid() == 0 && !(given.flags & EZFS_EXTRACT_NO_OWNER);
	x.euid = geteuid();
	x.egid = getegid();
	/* the caller's umask, put back at once: what creation modes lose */
	x.umask = umask(0);
	umask(x.umask);
	pthread_mutex_init(&x.lock, NULL);
	pthread_cond_init(&x.idle, NULL);
	pthread_mutex_init(&x.cblock, NULL);
	w.x = &x;
	sub = given.path ? given.path : "/";
	if (given.flags & EZFS_EXTRACT_BY_NID) {
		/* "#N" names a file extracted by nid alone */
		snprintf(nidpath, sizeof(nidpath), "#%llu",
			 (unsigned long long)given.nid);
		sub = nidpath;
	}
	ret = ezi_x_sidecars_open(&x);
	if (!ret)
		ret = run(&x, &w, sub,
			  given.flags & EZFS_EXTRACT_BY_NID ? &given.nid
							    : NULL);
	sc = ezi_x_sidecars_close(
		&x, !ret || (ret == -EIO && x.keep_going && !ezi_x_failed(&x)));
	if (sc && (!ret || ret == -EIO))
		ret = -EIO;
	if (!ret && given.source_check)
		ret = check_source(&x);
	if (res) {
		res->entries = x.entries_done;
		res->bytes = x.bytes_done;
		res->damaged = x.damaged;
		res->unreadable = x.read_errors;
		res->unverified = x.unverified;
		res->sidecar_errors = x.sidecar_errors;
	}
	free_walker(&w);
	for (i = 0; i < x.written.n; i++)
		free(x.written.v[i]);
	ezi_vec_free(&x.written);
	if (x.rootfd >= 0)
		close(x.rootfd);
	pthread_mutex_destroy(&x.lock);
	pthread_cond_destroy(&x.idle);
	pthread_mutex_destroy(&x.cblock);
	return ret;
}
