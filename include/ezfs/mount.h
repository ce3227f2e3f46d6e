/* SPDX-License-Identifier: MIT */
/*
 * mount.h - public API of the ezfs FUSE mount layer (libfuse3 low-level).
 *
 * A mount is a session object: create it (opens the image and mounts the
 * FUSE file system, so every error is reported before any fork), optionally
 * daemonize, run the request loop until unmounted or signalled (SIGTERM,
 * SIGINT, SIGHUP end it), destroy. Once a stop begins, the rest of run and
 * destroy get 1.5 s: a read stuck longer (a dead device under the image)
 * is logged, the mount is detached lazily and the process exits with 1.
 * All functions return 0 or a negative errno; details go to the log
 * callback in the parameters. One mount is driven by one thread (create,
 * daemonize, run, destroy in turn); ezfs_mount_run installs process-wide
 * signal handlers, so one mount runs per process at a time.
 *
 * Only present when libezfs was configured with EZFS_WITH_FUSE=ON (the
 * default; it needs libfuse3).
 */
#ifndef EZFS_MOUNT_H
#define EZFS_MOUNT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>

#include "ezfs/ezfs.h"
#include "ezfs/verity.h"
#include "ezfs/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ezfs_ctl_remote;

struct ezfs_mount_params {
	size_t size;	   /* sizeof(struct ezfs_mount_params), set by
			    * _init (see struct ezfs_open_params) */
	const char *image; /* image file or block device */
	const char *mountpoint;
	uint64_t offset;    /* image starts at this byte of the file */
	size_t cache_bytes; /* decoded pcluster cache; 0 = library default */
	unsigned threads;   /* max idle FUSE workers; 0 = default (10) */
	int foreground;	    /* do not daemonize (the caller decides) */
	int debug;	    /* libfuse request tracing (stderr) */
	int single_thread;  /* fuse_session_loop instead of _mt */
	int allow_other;    /* let other users in (default_permissions
			     * is always on: the kernel checks modes) */
	int64_t uid, gid;   /* -1: as stored; else every inode's owner */
	char accel[128];    /* engine spec ("" = default or EZFS_ACCEL) */
	int dispatch;	    /* enum ezfs_dispatch; -1 = default or
			     * EZFS_DISPATCH */
	unsigned dispatch_threads; /* queue:N */
	int prefetch;		   /* 1 (default): sequential-read prefetch */
	int64_t readahead_kb;	   /* the kernel's readahead window: -1 (auto,
				    * the default): per file, 0: the kernel's,
				    * else KiB (needs root) */
	ezfs_log_fn log;	   /* NULL: silent */
	void *log_arg;
	unsigned verbose; /* log level threshold: 0 = errors only */
	/* The extra devices of a multi-device image (-o device=FILE, once
	 * per device in device-table order): ndevices file names, each NUL
	 * terminated, back to back; none: read from the image (flat). */
	char devices[4096];
	unsigned ndevices;
	/* The image read through these ops (a remote source of
	 * include/ezfs/remote.h) instead of opening image, which is then only
	 * its name: ezfs_mount_create passes them to ezfs_image_open_io, and
	 * their close runs with the image's (or when the create fails). */
	const struct ezfs_io_ops *io_ops;
	void *io_arg;
	uint64_t io_size;
	/* Passed on as ezfs_open_params.io_hint (with io_ops only). */
	void (*io_hint)(void *arg, uint64_t off, uint64_t len, unsigned flags);
	/* The source's counters for EZFS_IOC_REMOTE (with io_ops only; NULL:
	 * none): fills st (zeroed, version and present set) with io_arg as
	 * arg, from any thread while the mount serves. */
	void (*io_stats)(void *arg, struct ezfs_ctl_remote *st);
	/* dm-verity (include/ezfs/verity.h, docs/verity.md), passed on as
	 * the ezfs_open_params of the same names: verity (enum
	 * ezfs_verity_mode: -o verity requires a tree, -o noverity reads
	 * none), the root it must have (-o roothash=HEX, also spelled
	 * verity.roothash=HEX; verity.roothashfile=FILE), its place
	 * (verity.hashdevice=FILE, verity.hashoffset=N) and a signed root
	 * (verity.roothashsig=FILE with verity.trustedcert=PEM). "" or 0:
	 * none. */
	int verity;
	uint8_t root_hash[64];
	unsigned root_hash_size;
	uint64_t verity_hash_offset;
	char verity_hash_file[1024];
	char root_hash_sig_file[1024];
	char trusted_cert[1024];
	/* Passed on as ezfs_open_params.io_verity (with io_ops only): the
	 * source checks what it fetches against the image's tree. */
	void (*io_verity)(void *arg, struct ezfs_verity *v, uint64_t base);
	/* The background fill of the remote source the caller opened
	 * (include/ezfs/remote.h, ezfs_remote_fill): -o fill=none|trace|all
	 * (0, 2, 1: enum ezfs_remote_fill_policy; -1, the default: none
	 * asked) and -o fill_rate=SIZE (bytes per second, K/M/G suffixes;
	 * 0: the link's speed). The mount only parses them: the caller
	 * starts the fill once the mount serves (after a daemonizing fork). */
	int fill;
	uint64_t fill_rate;
};

typedef struct ezfs_mount ezfs_mount;

/* Defaults: uid = gid = -1, prefetch on, readahead auto, dispatch -1, the
 * rest zero; size set. */
EZFS_API void ezfs_mount_params_init(struct ezfs_mount_params *p);

/*
 * Parse a comma-separated -o option string into p: cache=SIZE (K/M/G/T
 * suffixes, powers of 1024), threads=N, allow_other, offset=N (suffixes
 * too), uid=N, gid=N, accel=SPEC (an engine spec of
 * include/ezfs/engine.h with '+' for ',': deflate=isal+libdeflate),
 * dispatch=inline|queue[:N]|percpu, prefetch=0|1, readahead=auto|0|SIZE,
 * fill=none|trace|all, fill_rate=SIZE (a remote source's background fill),
 * device=FILE (repeatable: appended to p->devices), ro, and the dm-verity
 * options verity, noverity, roothash=HEX, verity.roothash=HEX,
 * verity.roothashfile=FILE, verity.hashdevice=FILE, verity.hashoffset=N,
 * verity.roothashsig=FILE, verity.trustedcert=FILE (a root, a hash file
 * or a signature makes a tree required). Anything else (rw
 * included): -EINVAL and a one-line reason in err (which may be NULL; errsize 0
 * leaves it untouched). Options before the bad one are applied. opts NULL or ""
 * is 0. Out of memory is -EINVAL too, with "out of memory" in err. p must be a
 * whole struct of this header, from ezfs_mount_params_init (its size is not
 * checked).
 */
EZFS_API int ezfs_mount_parse_options(struct ezfs_mount_params *p,
				      const char *opts, char *err,
				      size_t errsize);

/*
 * Open p->image and mount it on p->mountpoint (not yet serving); *out is
 * NULL on failure. Errors: -EINVAL (p->size 0 or too large, image or
 * mountpoint NULL: not logged), the errno of resolving either path
 * (-ENOENT, -EACCES...), -ENOTDIR (the mount point), those of
 * ezfs_image_open and ezfs_image_set_dispatch, those of ezfs_inode_get on
 * the root, -ENOMEM, and -EIO when the FUSE session cannot be created or
 * mounted (no /dev/fuse, no permission, no fusermount3: the log says).
 */
EZFS_API int ezfs_mount_create(const struct ezfs_mount_params *p,
			       ezfs_mount **out);
/* Detach into the background (fuse_daemonize): the calling process exits
 * once the child is ready; stdio goes to /dev/null, cwd to /. Decode
 * workers (a queue or percpu dispatch) are stopped before the fork and
 * started again in the child, which cannot inherit threads (if they cannot
 * be, it decodes inline: a warning, not an error). Returns 0 or -EIO. Call
 * it before ezfs_mount_run, from a process without other threads of its
 * own. */
EZFS_API int ezfs_mount_daemonize(ezfs_mount *m);
/* Serve requests until unmounted or signalled (a clean stop: 0), then
 * unmount. Returns 0, -EIO (the signal handlers cannot be set), -ENOMEM,
 * or the negative errno the FUSE loop ended with. Once per mount. */
EZFS_API int ezfs_mount_run(ezfs_mount *m);
/* Unmount (if still mounted), close the image, free m. NULL is fine. */
EZFS_API void ezfs_mount_destroy(ezfs_mount *m);

/* The image, e.g. for ezfs_cache_stats; owned by m (do not close it),
 * never NULL for a created mount. */
EZFS_API ezfs_image *ezfs_mount_image(ezfs_mount *m);

/*
 * Live control of a running mount (ezfs accel set|stats MOUNTPOINT): ioctls
 * on the mount's root directory, opened read-only, served by the daemon
 * (lib/mount/ctl.c). Fixed-size payloads, so the kernel passes them to an
 * unprivileged FUSE daemon too. EZFS_IOC_SET needs the mount owner or root
 * (else EPERM); EZFS_IOC_STATS and EZFS_IOC_REMOTE anyone who may open
 * the root.
 */
#define EZFS_CTL_VERSION 2
#define EZFS_CTL_SPEC	 256
#define EZFS_CTL_ENGINES 16

struct ezfs_ctl_set {
	uint32_t version;	   /* in: EZFS_CTL_VERSION */
	int32_t set_accel;	   /* in: 1 = apply spec */
	char spec[EZFS_CTL_SPEC];  /* in: engine spec, "" = default order */
	int32_t dispatch;	   /* in: -1 = unchanged, enum ezfs_dispatch */
	uint32_t dispatch_threads; /* in: queue:N */
	int32_t strict;		   /* in: -1 = unchanged, 0 or 1 */
	int32_t result;		   /* out: 0 or a negative errno */
	char msg[EZFS_CTL_SPEC];   /* out: the reason when result < 0 */
};

struct ezfs_ctl_engine {
	char name[16];
	uint32_t alg; /* enum ezfs_alg */
	uint32_t pad;
	uint64_t requests, bytes_out, fallbacks, errors;
};

struct ezfs_ctl_stats {
	uint32_t version;	   /* out: EZFS_CTL_VERSION */
	uint32_t nengines;	   /* entries of engine[] filled */
	char order[EZFS_CTL_SPEC]; /* the current order, as a spec */
	int32_t dispatch;	   /* enum ezfs_dispatch */
	uint32_t workers;
	int32_t strict;
	uint32_t pad;
	uint64_t batches;
	uint64_t lat_total; /* decode requests timed since mount */
	double lat_avg, lat_median, lat_max; /* microseconds, recent */
	struct ezfs_ctl_engine engine[EZFS_CTL_ENGINES];
	/* the mount since it started (version 2) */
	uint64_t reads;	       /* read requests */
	uint64_t reads_direct; /* answered from the decoded-pcluster
				* cache, no copy (ezfs_extent_ref) */
	uint64_t stored_bytes; /* put into the page cache by the daemon */
	uint64_t edge_pages;   /* pages joined from two extents' edges */
	uint64_t jobs_dropped; /* store jobs left out: queue was full */
	uint64_t cache_hits, cache_misses, cache_evictions;
	uint64_t cache_dropped; /* extents let go once in the page cache */
};

/*
 * The counters of the source a remote image is read through (http(s)://,
 * oci://, s3://: include/ezfs/remote.h), from ezfs_mount_params.io_stats.
 * A separate ioctl, so that EZFS_IOC_STATS keeps its size and number.
 */
struct ezfs_ctl_remote {
	uint32_t version; /* out: EZFS_CTL_VERSION */
	uint32_t present; /* out: 1 = the image is read through a source
			   * with counters; 0 = the rest is zero */
	uint64_t requests, retries; /* requests sent, of them retries */
	uint64_t rounds;	    /* round trips (batches waited for) */
	uint64_t bytes_fetched;	    /* body bytes received */
	uint64_t bytes_read;	    /* bytes handed to the reader */
	uint64_t reads, reads_hit;  /* preads, of them without a request */
	uint64_t redirects;
	uint64_t cache_bytes; /* bytes present in the source's cache */
	uint64_t size;	      /* the image's size */
	uint64_t fetch_us_p50, fetch_us_p99; /* request latency, recent */
	uint64_t hints, hints_fetched, bytes_hinted;
	char waiting[256]; /* what a read waits for, in words ("": none) */
};

#define EZFS_IOC_SET	_IOWR('E', 0x41, struct ezfs_ctl_set)
#define EZFS_IOC_STATS	_IOR('E', 0x42, struct ezfs_ctl_stats)
#define EZFS_IOC_REMOTE _IOR('E', 0x43, struct ezfs_ctl_remote)

#ifdef __cplusplus
}
#endif
#endif
