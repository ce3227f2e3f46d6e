/* SPDX-License-Identifier: MIT */
/*
 * ctl.c - live control of a mount: EZFS_IOC_SET, EZFS_IOC_STATS and
 * EZFS_IOC_REMOTE ioctls on the root directory (include/ezfs/mount.h)
 * switch the engine order, dispatch mode and strictness of the served
 * image, and report the engine counters and those of a remote image's
 * source (through ezfs_mount_params.io_stats), without remounting. The
 * kernel hands restricted ioctls (size and direction encoded in the
 * command) of a directory to the daemon once FUSE_CAP_IOCTL_DIR is
 * granted at init.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

void ezi_mnt_ctl_init(struct fuse_conn_info *conn)
{
	if (conn->capable & FUSE_CAP_IOCTL_DIR)
		conn->want |= FUSE_CAP_IOCTL_DIR;
}

/* Only the user who mounted (the daemon's uid) or root may switch. */
static bool may_set(fuse_req_t req)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);

	return c && (c->uid == 0 || c->uid == getuid());
}

static void ctl_set(fuse_req_t req, struct ezfs_mount *m, const void *buf)
{
	struct ezfs_ctl_set out, *in = &out;
	int err = 0;

	memcpy(&out, buf, sizeof(out)); /* buf may be unaligned */

	out.msg[0] = '\0';
	out.spec[sizeof(out.spec) - 1] = '\0';
	if (in->version != EZFS_CTL_VERSION) {
		err = -EPROTO;
		snprintf(out.msg, sizeof(out.msg),
			 "control version %u, "
			 "this daemon speaks %u",
			 in->version, EZFS_CTL_VERSION);
	} else if (in->set_accel &&
		   ezfs_accel_check_msg(out.spec, out.msg, sizeof(out.msg))) {
		err = -EINVAL;
	} else if (in->dispatch < -1 || in->dispatch > EZFS_DISPATCH_PERCPU ||
		   in->strict < -1 || in->strict > 1) {
		err = -EINVAL;
		snprintf(out.msg, sizeof(out.msg),
			 "bad dispatch or strict "
			 "value");
	}
	if (!err && in->set_accel)
		err = ezfs_image_set_accel(m->img, in->spec);
	if (!err && in->strict >= 0)
		err = ezfs_image_set_strict_accel(m->img, in->strict);
	if (!err && in->dispatch >= 0) {
		err = ezfs_image_set_dispatch(m->img, in->dispatch,
					      in->dispatch_threads);
		if (err)
			snprintf(out.msg, sizeof(out.msg),
				 "cannot start the "
				 "%s workers",
				 ezfs_dispatch_name(in->dispatch));
	}
	if (err && !out.msg[0])
		snprintf(out.msg, sizeof(out.msg), "%s", ezfs_strerror(err));
	out.result = err;
	if (err)
		ezi_mnt_log(m, EZFS_LOG_ERROR, "engine switch refused: %s",
			    out.msg);
	else
		ezi_mnt_log(m, EZFS_LOG_INFO,
			    "engines switched by uid %u: "
			    "accel '%s', dispatch %d, strict %d",
			    (unsigned)fuse_req_ctx(req)->uid,
			    in->set_accel ? out.spec : "(unchanged)",
			    in->dispatch, in->strict);
	fuse_reply_ioctl(req, 0, &out, sizeof(out));
}

static void ctl_stats(fuse_req_t req, struct ezfs_mount *m)
{
	struct ezfs_engine_stats st[EZFS_CTL_ENGINES];
	struct ezfs_dispatch_info di;
	struct ezfs_latency_stats ls;
	struct ezfs_ctl_stats out;
	struct ezfs_cache_stats cs;
	int n, i;

	memset(&out, 0, sizeof(out));
	out.version = EZFS_CTL_VERSION;
	ezfs_image_get_accel(m->img, out.order, sizeof(out.order));
	if (!ezfs_image_dispatch_info(m->img, &di)) {
		out.dispatch = di.mode;
		out.workers = di.workers;
		out.batches = di.batches;
	}
	out.strict = ezfs_image_get_strict_accel(m->img) > 0;
	if (!ezfs_image_latency_stats(m->img, &ls)) {
		out.lat_total = ls.total;
		out.lat_avg = ls.avg;
		out.lat_median = ls.median;
		out.lat_max = ls.max;
	}
	n = ezfs_image_engine_stats(m->img, st, EZFS_CTL_ENGINES);
	for (i = 0; i < n && i < EZFS_CTL_ENGINES; i++) {
		struct ezfs_ctl_engine *e = &out.engine[i];

		snprintf(e->name, sizeof(e->name), "%s", st[i].name);
		e->alg = (uint32_t)st[i].alg;
		e->requests = st[i].requests;
		e->bytes_out = st[i].bytes_out;
		e->fallbacks = st[i].fallbacks;
		e->errors = st[i].errors;
	}
	out.nengines = (uint32_t)i;
	out.reads = __atomic_load_n(&m->st.reads, __ATOMIC_RELAXED);
	out.reads_direct =
		__atomic_load_n(&m->st.reads_direct, __ATOMIC_RELAXED);
	out.stored_bytes =
		__atomic_load_n(&m->st.stored_bytes, __ATOMIC_RELAXED);
	out.edge_pages = __atomic_load_n(&m->st.edge_pages, __ATOMIC_RELAXED);
	out.jobs_dropped =
		__atomic_load_n(&m->st.jobs_dropped, __ATOMIC_RELAXED);
	ezfs_cache_stats(m->img, &cs);
	out.cache_hits = cs.hits;
	out.cache_misses = cs.misses;
	out.cache_evictions = cs.evictions;
	out.cache_dropped = cs.dropped;
	fuse_reply_ioctl(req, 0, &out, sizeof(out));
}

/* The io source's counters, from the callback the mount was given (the
 * mount does not know what the source is: include/ezfs/mount.h). */
static void ctl_remote(fuse_req_t req, struct ezfs_mount *m)
{
	struct ezfs_ctl_remote out;

	memset(&out, 0, sizeof(out));
	if (m->p.io_ops && m->p.io_stats) {
		m->p.io_stats(m->p.io_arg, &out);
		out.present = 1;
	}
	out.version = EZFS_CTL_VERSION;
	fuse_reply_ioctl(req, 0, &out, sizeof(out));
}

#if FUSE_USE_VERSION < 35
void ezi_mnt_ctl_ioctl(fuse_req_t req, fuse_ino_t ino, int cmd, void *arg,
		       struct fuse_file_info *fi, unsigned flags,
		       const void *in_buf, size_t in_bufsz, size_t out_bufsz)
#else
void ezi_mnt_ctl_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd,
		       void *arg, struct fuse_file_info *fi, unsigned flags,
		       const void *in_buf, size_t in_bufsz, size_t out_bufsz)
#endif
{
	struct ezfs_mount *m = fuse_req_userdata(req);
	unsigned c = (unsigned)cmd;

	(void)arg;
	(void)fi;
	if (ino != FUSE_ROOT_ID || (flags & FUSE_IOCTL_COMPAT)) {
		fuse_reply_err(req, ENOTTY);
		return;
	}
	if (c == (unsigned)EZFS_IOC_SET) {
		if (in_bufsz != sizeof(struct ezfs_ctl_set) ||
		    out_bufsz != sizeof(struct ezfs_ctl_set)) {
			fuse_reply_err(req, EINVAL);
			return;
		}
		if (!may_set(req)) {
			fuse_reply_err(req, EPERM);
			return;
		}
		ctl_set(req, m, in_buf);
	} else if (c == (unsigned)EZFS_IOC_STATS) {
		if (out_bufsz != sizeof(struct ezfs_ctl_stats)) {
			fuse_reply_err(req, EINVAL);
			return;
		}
		ctl_stats(req, m);
	} else if (c == (unsigned)EZFS_IOC_REMOTE) {
		if (out_bufsz != sizeof(struct ezfs_ctl_remote)) {
			fuse_reply_err(req, EINVAL);
			return;
		}
		ctl_remote(req, m);
	} else {
		fuse_reply_err(req, ENOTTY);
	}
}
