/* SPDX-License-Identifier: MIT */
/* internal.h - shared state of ezfs_extract (tree walker and data workers)
 * and what ezfs_export shares with it. */
#ifndef EZFS_EXTRACT_INTERNAL_H
#define EZFS_EXTRACT_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "ezfs/ezfs.h"
#include "ezfs/extract.h"
#include "util/hash.h"
#include "util/vec.h"

#ifndef EUCLEAN
#define EUCLEAN 117
#endif

#define XREAD_NAMED 20 /* files with unreadable data named one by one */

#define EZI_X_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* A regular file whose contents a worker writes. */
struct xjob {
	struct xctx *x;
	ezfs_inode *ino;
	struct ezfs_stat st;
	int fd;		 /* the new file, opened for writing */
	int mode_set;	 /* created with its final permissions */
	char *path;	 /* DEST-relative path (messages, removal) */
	int read_failed; /* its data could not be read from the image */
	int read_err;	 /* why: -errno, 0 = the data ended early */
};

struct xctx {
	const char *img, *dest;
	ezfs_image *fs;
	const struct ezfs_extract_opts *o;
	int force, is_root;
	int ids_default; /* new files get euid/egid: chown only others */
	uid_t euid;
	gid_t egid;
	mode_t umask; /* the caller's: what creation modes lose */
	unsigned threads;
	int rootfd; /* DEST */

	/* the data workers (util/pool.h) and the jobs not yet done */
	struct ezi_pool *pool;
	pthread_mutex_t lock;
	pthread_cond_t idle;
	unsigned pending; /* under lock */
	int failed;	  /* set once; everyone stops */
	unsigned
		read_errors; /* files skipped: their data unreadable (atomic) */
	int warned_xattr;
	int no_xattrs;
	int no_sparse;	/* every byte written, holes as zeros */
	unsigned blksz; /* DEST's block: a run of zeros this long is a hole */

	uint64_t bytes_done, entries_done; /* atomics */
	struct ezfs_extract_progress prog; /* the totals */
	double last_progress;

	/* callbacks one at a time; the counts they report */
	pthread_mutex_t cblock;
	int keep_going;
	unsigned damaged; /* under cblock */
	unsigned unverified;
	EZI_VEC(char *) written; /* files written (source_check) */

	/* fs_config, file_contexts, --android (extract_droid.c) */
	FILE *fsc, *fcx;
	char *fsc_path, *fcx_path, *mkfs_path, *mp_owned;
	const char *mp; /* the mount point, without a leading '/' */
	unsigned sidecar_errors;
	int android;
	uint64_t max_pcluster;
	uint64_t alg_extents[EZFS_ALG_MAX];
	struct ezi_hash pas; /* pcluster addresses seen (dedupe) */
	int deduped;
};

struct xdir {
	char *path;
	unsigned depth;
	uint64_t nid;
};

struct xlink {
	char *oldpath, *newpath;
};

struct walker {
	struct xctx *x;
	struct ezi_hash dirs_seen;
	struct ezi_hash links; /* nid -> first extracted path */
	struct xdir *dirs;
	size_t ndirs, capdirs;
	struct xlink *lnks;
	size_t nlnks, caplnks;
};

/* ---- shared with export (extract_util.c) ---- */

/* Call msg (may be NULL) with the line fmt and ap make, under lock (NULL:
 * no lock). */
void ezi_x_vsay(ezfs_log_fn msg, void *arg, pthread_mutex_t *lock, int level,
		const char *fmt, va_list ap) EZI_X_PRINTF(5, 0);
/* Add nid to a set (values 1): 1 if new, 0 if there, -ENOMEM. */
int ezi_x_nid_add(struct ezi_hash *h, uint64_t nid);
/* Free a set or map; its values with free() when free_vals. */
void ezi_x_nid_free(struct ezi_hash *h, int free_vals);
/* Entries (the start excluded) and regular-file bytes (each inode once)
 * of the tree under nid, for the progress totals; errors stop the count. */
void ezi_x_totals(ezfs_image *fs, uint64_t nid, uint64_t *bytes,
		  uint64_t *entries);
/* Is this name "." or ".."? */
int ezi_x_is_dots(const char *name, size_t namelen);
/* Seconds on the monotonic clock. */
double ezi_x_now(void);
/* A directory's entries ("." and ".." too); tolerant: its damaged blocks
 * skipped, the entries of the others read all the same (returning the
 * first block's error). Free with ezfs_dirents_free. */
int ezi_x_readdir(ezfs_inode *dir, int tolerant, struct ezfs_dirent **out,
		  size_t *n);
/* Are the n bytes at b all zero? */
int ezi_x_all_zero(const char *b, size_t n);
/* Time for a progress report (0.1 s since *last, or force)? Updates it. */
int ezi_x_progress_due(double *last, int force);
/* Copy an options struct whose first field is its size (src NULL: dst
 * stays the defaults); -EINVAL for a size 0 or from the future. */
int ezi_x_opts_copy(void *dst, size_t dsize, const void *src);

/* ---- extraction ---- */

/* Report "DEST/path: what[: reason]" (path quoted). */
void ezi_x_error(struct xctx *x, const char *path, const char *what, int err);
/* Report one formatted line. */
void ezi_x_msg(struct xctx *x, const char *fmt, ...) EZI_X_PRINTF(2, 3);
int ezi_x_failed(struct xctx *x);
/* An entry the image cannot give (already reported): with --keep-going
 * listed and skipped (0), else err. */
int ezi_x_skip_damaged(struct xctx *x, const char *path, int err);
void ezi_x_set_failed(struct xctx *x);
/* Count and report an entry left out or in doubt. */
void ezi_x_entry_problem(struct xctx *x, const char *path, int problem,
			 int err);

/* Remove an existing entry name in dirfd when forced (never following a
 * link); -EEXIST otherwise. */
int ezi_x_remove_existing(struct xctx *x, int dirfd, const char *name);
/* Open relpath ("" = DEST) as a directory, component by component with
 * O_NOFOLLOW. If name is set, open the parent and point *name at the last
 * component. Returns an fd or -errno. */
int ezi_x_open_path(struct xctx *x, const char *relpath, int parent,
		    const char **name);

/*
 * Copy the inode's xattrs. fd >= 0: fsetxattr on it; else lsetxattr on
 * name inside dirfd (through /proc/self/fd). Returns 0 or -errno (already
 * reported).
 */
int ezi_x_apply_xattrs(struct xctx *x, ezfs_inode *ino,
		       const struct ezfs_stat *st, int fd, int dirfd,
		       const char *name, const char *path);

/* Count one finished entry and report progress. */
void ezi_x_entry_done(struct xctx *x);
/* Report progress (the caller's thread); force: whatever the time. */
void ezi_x_progress(struct xctx *x, int force);

/* Create one entry in dirfd (errors reported; 0 or -errno). do_file
 * queues the contents for a worker and takes *ino. */
int ezi_x_do_symlink(struct xctx *x, int dirfd, const char *name,
		     ezfs_inode *ino, const struct ezfs_stat *st,
		     const char *path);
int ezi_x_do_special(struct xctx *x, int dirfd, const char *name,
		     ezfs_inode *ino, const struct ezfs_stat *st,
		     const char *path);
int ezi_x_do_file(struct xctx *x, int dirfd, const char *name, ezfs_inode **ino,
		  const struct ezfs_stat *st, const char *path);
/* After the data: hard links, then directories deepest first. */
int ezi_x_link_phase(struct walker *w);
int ezi_x_dir_phase(struct walker *w);

/* The data workers: start the pool; queue a job (the walker; may block
 * while the queue is full; takes it); wait until every job is done
 * (reporting progress), then stop the pool. */
int ezi_x_workers_start(struct xctx *x);
void ezi_x_enqueue(struct xctx *x, struct xjob *job);
void ezi_x_workers_finish(struct xctx *x);
void ezi_x_job_free(struct xjob *job);

/* extract_droid.c: the sidecar files (opened once the image is open;
 * ezi_x_sidecars_close returns 0, 1 when some lines could not be written,
 * or -EIO; ok = 0 removes them), one entry's lines (walker thread only),
 * the pcluster sizes and algorithms of a regular file (--android). */
int ezi_x_sidecars_open(struct xctx *x);
int ezi_x_sidecar_entry(struct xctx *x, ezfs_inode *ino,
			const struct ezfs_stat *st, const char *path);
void ezi_x_android_file(struct xctx *x, ezfs_inode *ino,
			const struct ezfs_stat *st);
int ezi_x_sidecars_close(struct xctx *x, int ok);

#endif
