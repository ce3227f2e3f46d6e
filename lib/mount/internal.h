/* SPDX-License-Identifier: MIT */
/* internal.h - shared state of the FUSE mount layer (not installed). */
#ifndef EZFS_MOUNT_INTERNAL_H
#define EZFS_MOUNT_INTERNAL_H

#define FUSE_USE_VERSION 312

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <fuse_lowlevel.h>

#include "ezfs/ezfs.h"
#include "ezfs/mount.h"

/* One inode the kernel knows about (or that a request is using). */
struct mnode {
	struct mnode *next; /* hash chain */
	uint64_t nid;
	ezfs_inode *ino;
	uint64_t nlookup;	   /* kernel references (lookup counts) */
	unsigned pins;		   /* requests and open files using it */
	int err_logged;		   /* a read error was logged for it */
	struct stored_set *stored; /* extents stored (stored.c) */
};

/* nid -> mnode, with lookup counts; thread-safe. */
struct itable {
	pthread_mutex_t lock;
	struct mnode **buckets;
	size_t nbuckets, count;
};

/*
 * One job of the store-ahead helpers: bytes of node go into the kernel's
 * page cache (fuse_lowlevel_notify_store), so that later reads of them
 * never reach the daemon. With ref (an extent held in the decoded-pcluster
 * cache): its bytes but [skip, skip + skip_len), which the read that took
 * it was answered with. Without: [off, off + len), decoded by the helper.
 */
struct pf_job {
	struct mnode *node; /* pinned */
	uint64_t off, len;
	struct ezfs_ref ref;
	uint64_t skip, skip_len;
	bool decode_only; /* into the pcluster cache, not the page cache */
	bool around;	  /* readaround: [off, off + len) and more */
};

#define PF_QUEUE       64
#define PF_THREADS_MAX 4

/* Partial pages waiting for the rest of their bytes (edge.c). */
struct edge_table {
	pthread_mutex_t lock;
	struct edge_slot *slots;
	size_t nslots;
	uint64_t stamp;
	uint32_t page;
};

struct prefetcher {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct pf_job q[PF_QUEUE];
	unsigned head, n;
	size_t buf_bytes; /* extents held by queued jobs (refs) */
	size_t buf_max;	  /* a quarter of the cache budget */
	uint64_t win_max; /* decode-ahead window: half the budget */
	bool stop, started;
	unsigned nthreads;
	pthread_t tid[PF_THREADS_MAX];
	struct edge_table edges;
};

struct ezfs_mount {
	struct ezfs_mount_params p;
	char *image_path, *mountpoint;
	ezfs_image *img;
	struct ezfs_sb_info sb;
	struct fuse_session *se;
	bool mounted, daemonized, sig_set;
	pthread_t loop_thread, stopper;
	bool serving; /* in ezfs_mount_run */
	bool opening; /* in ezfs_image_open: keep its first error */
	char open_error[256];
	int wd_pipe[2]; /* to the reaper: stopping, done (session.c) */
	pthread_t reaper;
	bool reaper_started;
	struct itable it;
	struct prefetcher pf;
	double timeout;		 /* entry and attr timeout, seconds */
	int ra_fd;		 /* read_ahead_kb of the connection, or -1 */
	pthread_mutex_t st_lock; /* the inodes' stored sets */
	uint32_t ra_cur_kb;	 /* the window now, KiB */
	struct {		 /* counters (ezfs accel stats MNT), atomic */
		uint64_t reads, reads_direct, stored_bytes, edge_pages,
			jobs_dropped;
	} st;
};

#define MNT_COUNT(m, field, n)                                                 \
	__atomic_fetch_add(&(m)->st.field, (n), __ATOMIC_RELAXED)

/* One open regular file. */
struct mfile {
	struct mnode *node; /* pinned */
	pthread_mutex_t lock;
	uint64_t size;
	uint64_t last_end;	       /* end of the previous read */
	uint64_t ezi_pf_start, pf_end; /* queued for the page cache: the run of
					* a sequential reader */
	bool compressed;
	bool small; /* small extents: no store-ahead (ezi_pf_open) */
};

/* FUSE inode numbers: the root is FUSE_ROOT_ID, every other nid + 2. */
static inline fuse_ino_t mnt_nid_to_ino(const struct ezfs_mount *m,
					uint64_t nid)
{
	return nid == m->sb.root_nid ? FUSE_ROOT_ID : (fuse_ino_t)(nid + 2);
}

static inline uint64_t mnt_ino_to_nid(const struct ezfs_mount *m,
				      fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? m->sb.root_nid : (uint64_t)ino - 2;
}

void ezi_mnt_log(struct ezfs_mount *m, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The library's last error line on this thread, then forgotten. */
const char *ezi_mnt_take_detail(char *buf, size_t size);

/* itable.c */
/* verity.c: a dm-verity -o option into p (0; 1: not one of them;
 * -EINVAL with the reason in err), and p's options into op */
int ezi_mnt_verity_opt(struct ezfs_mount_params *p, const char *opt,
		       const char *val, char *err, size_t errsize);
void ezi_mnt_verity_params(const struct ezfs_mount_params *p,
			   struct ezfs_open_params *op);

int ezi_it_init(struct itable *it);
void ezi_it_destroy(struct itable *it);
/* Find or load nid, pin it; add `lookups` kernel references. */
int ezi_it_get(struct ezfs_mount *m, uint64_t nid, uint64_t lookups,
	       struct mnode **out);
void ezi_it_pin(struct ezfs_mount *m, struct mnode *n);
void ezi_it_unpin(struct ezfs_mount *m, struct mnode *n);
void ezi_it_forget(struct ezfs_mount *m, uint64_t nid, uint64_t nlookup);
size_t ezi_it_count(struct ezfs_mount *m);

/* ops.c */
extern const struct fuse_lowlevel_ops ezi_mnt_ops;

/* ctl.c: engine switch and stats ioctls on the root (EZFS_IOC_*) */
void ezi_mnt_ctl_init(struct fuse_conn_info *conn);
#if FUSE_USE_VERSION < 35
void ezi_mnt_ctl_ioctl(fuse_req_t req, fuse_ino_t ino, int cmd, void *arg,
		       struct fuse_file_info *fi, unsigned flags,
		       const void *in_buf, size_t in_bufsz, size_t out_bufsz);
#else
void ezi_mnt_ctl_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd,
		       void *arg, struct fuse_file_info *fi, unsigned flags,
		       const void *in_buf, size_t in_bufsz, size_t out_bufsz);
#endif

/* edge.c */
int ezi_edge_init(struct edge_table *t, uint64_t budget);
void ezi_edge_destroy(struct edge_table *t);
/* Put data, the bytes of [from, to) of node, into the page cache: whole
 * pages at once, partial ones once the rest of them has come too. */
void ezi_edge_store(struct ezfs_mount *m, struct mnode *node, const char *data,
		    uint64_t from, uint64_t to);

/* stored.c: extents of an inode put into the page cache. Mark the one
 * starting at off; true if it was marked before. */
bool ezi_st_mark(struct ezfs_mount *m, struct mnode *n, uint64_t off);
void ezi_st_free(struct mnode *n);

/* readahead.c: the kernel's readahead window (readahead=) */
void ezi_ra_init(struct ezfs_mount *m);
void ezi_ra_set(struct ezfs_mount *m, uint32_t kb);
/* Before the open reply: set the window (readahead=). */
void ezi_ra_open(struct ezfs_mount *m, const struct mfile *f);
void ezi_ra_fini(struct ezfs_mount *m);

/* prefetch.c */
int ezi_pf_start(struct ezfs_mount *m);
/* Drop the queue, let the running jobs end, join the helpers. A job may
 * wait for a page whose read is in flight: call it while requests are
 * still answered (session.c). */
void ezi_pf_stop(struct ezfs_mount *m);
/* A file opened: how to read it ahead (mount option readahead). */
void ezi_pf_open(struct ezfs_mount *m, struct mfile *f);
/* Answer a read of [off, off + len) of f straight from the
 * decoded-pcluster cache and queue the rest of its extents for the page
 * cache; false (nothing done) unless all of it lies in encoded extents. */
bool ezi_pf_answer(struct ezfs_mount *m, struct mfile *f, fuse_req_t req,
		   uint64_t off, uint64_t len);
/* Read [from, to) of f into the calling thread's buffer *out (kept for
 * the next read: not to be freed); its length, or a library error. */
ssize_t ezi_pf_read(struct mfile *f, uint64_t from, uint64_t to, char **out);
/* After a read of [off, off + len) that decoded up to decoded_end: store
 * ahead of a sequential reader. */
void ezi_pf_seq_hint(struct ezfs_mount *m, struct mfile *f, uint64_t off,
		     uint64_t len, uint64_t decoded_end);

#endif
