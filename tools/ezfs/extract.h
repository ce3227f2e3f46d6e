/* SPDX-License-Identifier: MIT */
/* extract.h - shared state of ezfs extract (tree walker and data workers). */
#ifndef EZFS_TOOL_EXTRACT_H
#define EZFS_TOOL_EXTRACT_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "common.h"

#define XBATCH_JOBS  32 /* files handed to the workers at once */
#define XBATCH_BYTES (1u << 20)
#define XREAD_NAMED  20 /* files with unreadable data named one by one */

/* A regular file whose contents a worker writes. */
struct xjob {
	struct xjob *next;
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
	int force, quiet, is_root;
	int ids_default; /* new files get euid/egid: chown only others */
	uid_t euid;
	gid_t egid;
	mode_t umask; /* the caller's, for DEST itself */
	unsigned threads;
	int rootfd; /* DEST */

	/* work queue */
	pthread_mutex_t lock;
	pthread_cond_t more, space, idle;
	struct xjob *head, *tail;
	unsigned queued, active, maxq;
	struct xjob *bhead, *btail; /* the walker's batch, not yet queued */
	unsigned bcount;
	uint64_t bbytes;
	int closing;
	int failed; /* set once; everyone stops */
	unsigned
		read_errors; /* files skipped: their data unreadable (atomic) */
	int warned_xattr;
	int no_xattrs; /* fsck.erofs --extract without --xattrs */

	uint64_t bytes_done, entries_done; /* atomics */
	struct cli_progress prog;

	/* --keep-going: damaged entries are skipped and listed */
	int keep_going;
	pthread_mutex_t errlock;
	unsigned damaged; /* under errlock */
	FILE *errs;	  /* --errors FILE */

	/* --fs-config, --file-contexts, --android (extract_droid.c) */
	FILE *fsc, *fcx;
	char *fsc_path, *fcx_path, *mkfs_path, *mp_owned;
	const char *mp; /* the mount point, without a leading '/' */
	unsigned sidecar_errors;
	int android;
	uint64_t max_pcluster;
	uint64_t alg_extents[EZFS_ALG_MAX];
	struct cli_nidset pas; /* pcluster addresses seen (dedupe) */
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
	struct cli_nidset dirs_seen;
	struct cli_nidmap links; /* nid -> first extracted path */
	struct xdir *dirs;
	size_t ndirs, capdirs;
	struct xlink *lnks;
	size_t nlnks, caplnks;
};

/* Print "ezfs extract: DEST/path: what[: reason]" (path quoted). */
void x_error(struct xctx *x, const char *path, const char *what, int err);
int x_failed(struct xctx *x);
/* An entry the image cannot give (already reported): with --keep-going
 * listed and skipped (0), else err. */
int x_skip_damaged(struct xctx *x, const char *path, int err);
void x_set_failed(struct xctx *x);

/* Remove an existing entry name in dirfd when --force (never following a
 * link); -EEXIST otherwise. */
int x_remove_existing(struct xctx *x, int dirfd, const char *name);
/* Open relpath ("" = DEST) as a directory, component by component with
 * O_NOFOLLOW. If name is set, open the parent and point *name at the last
 * component. Returns an fd or -errno. */
int x_open_path(struct xctx *x, const char *relpath, int parent,
		const char **name);

/*
 * Copy the inode's xattrs. fd >= 0: fsetxattr on it; else lsetxattr on
 * name inside dirfd (through /proc/self/fd). Returns 0 or -errno (already
 * reported).
 */
int x_apply_xattrs(struct xctx *x, ezfs_inode *ino, const struct ezfs_stat *st,
		   int fd, int dirfd, const char *name, const char *path);

/* Count one finished entry and redraw the progress bar. */
void x_entry_done(struct xctx *x);

/* Create one entry in dirfd (errors reported; 0 or -errno). do_file
 * queues the contents for a worker and takes *ino. */
int x_do_symlink(struct xctx *x, int dirfd, const char *name, ezfs_inode *ino,
		 const struct ezfs_stat *st, const char *path);
int x_do_special(struct xctx *x, int dirfd, const char *name, ezfs_inode *ino,
		 const struct ezfs_stat *st, const char *path);
int x_do_file(struct xctx *x, int dirfd, const char *name, ezfs_inode **ino,
	      const struct ezfs_stat *st, const char *path);
/* After the data: hard links, then directories deepest first. */
int x_link_phase(struct walker *w);
int x_dir_phase(struct walker *w);

/* Worker pool. */
int x_workers_start(struct xctx *x, pthread_t *tids);
/* Queue a job (walker thread only; may block while the queue is full).
 * Takes ownership. */
void x_enqueue(struct xctx *x, struct xjob *job);
/* Wait until the queue is drained (redrawing progress), stop and join. */
void x_workers_finish(struct xctx *x, pthread_t *tids, unsigned n);
void x_job_free(struct xjob *job);

/*
 * One extraction (ezfs extract, fsck.erofs --extract): IMG's tree, or
 * subpath, or the inode nid (by_nid), into dest. threads 0 = online CPUs;
 * no_owner: no chown even as root; no_xattrs: no xattrs at all. Returns
 * the exit status, 0 or 1, after printing any errors.
 */
struct x_opts {
	const char *img, *dest, *subpath;
	uint64_t nid;
	int by_nid;
	unsigned threads;
	int force, quiet, no_owner, no_xattrs;
	/* ezfs extract only (zero for fsck.erofs --extract) */
	int keep_going, android;
	const char *errors, *fs_config, *file_contexts, *mount_point;
};
int x_extract(const struct x_opts *o);

/* extract_droid.c: the sidecar files (opened once the image is open;
 * x_sidecars_close returns 0, 1 when some lines could not be written, or
 * -EIO; ok = 0 removes them), one entry's lines (walker thread only), the
 * pcluster sizes and algorithms of a regular file (--android), and a
 * damaged entry (--keep-going: counted and listed in --errors FILE). */
int x_sidecars_open(struct xctx *x, const struct x_opts *o);
int x_sidecar_entry(struct xctx *x, ezfs_inode *ino, const struct ezfs_stat *st,
		    const char *path);
void x_android_file(struct xctx *x, ezfs_inode *ino,
		    const struct ezfs_stat *st);
int x_sidecars_close(struct xctx *x, int ok);
void x_damaged(struct xctx *x, const char *path);
/* --keep-going: a directory's entries, its damaged blocks skipped (each
 * counted in *bad): 0, the first block's error (the entries of the other
 * blocks read all the same), or -ENOMEM. Free with ezfs_dirents_free. */
int x_readdir_tolerant(ezfs_image *fs, ezfs_inode *dir, uint64_t size,
		       struct ezfs_dirent **out, size_t *n, unsigned *bad);

#endif
