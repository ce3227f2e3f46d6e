/* SPDX-License-Identifier: MIT */
/* session.c - mount session: open, mount, daemonize, serve, unmount. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* The image never changes: keep names and attributes for a long time. */
#define MNT_TIMEOUT (86400.0 * 365)

void mnt_log(struct ezfs_mount *m, int level, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!m->p.log || (level > EZFS_LOG_ERROR && (unsigned)level >
			  m->p.verbose))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	m->p.log(m->p.log_arg, level, line);
}

/* The library's own last error line on this thread (the detail of why a
 * request failed). While serving, these lines are folded into the mount's
 * one line per inode instead of being logged each time (unless -v). */
static __thread char lib_detail[256];

static void img_log(void *arg, int level, const char *msg)
{
	struct ezfs_mount *m = arg;

	if (level == EZFS_LOG_ERROR)
		snprintf(lib_detail, sizeof(lib_detail), "%s", msg);
	if (m->p.log && (!m->serving || m->p.verbose >= 1))
		m->p.log(m->p.log_arg, level, msg);
}

const char *mnt_take_detail(char *buf, size_t size)
{
	snprintf(buf, size, "%s", lib_detail);
	lib_detail[0] = '\0';
	return buf;
}

/* Characters that would break the fsname mount option. */
static void opt_escape(char *dst, size_t size, const char *src)
{
	size_t i = 0;

	for (; *src && i + 3 < size; src++) {
		if (*src == ',' || *src == '\\')
			dst[i++] = '\\';
		dst[i++] = *src;
	}
	dst[i] = '\0';
}

/* fusermount3 on the PATH (or in /bin, /usr/bin): what auto_unmount
 * needs. */
static bool have_fusermount(void)
{
	const char *path = getenv("PATH");
	char dir[PATH_MAX], file[PATH_MAX + 16];
	const char *p, *e;

	if (!access("/usr/bin/fusermount3", X_OK) ||
	    !access("/bin/fusermount3", X_OK))
		return true;
	for (p = path; p && *p; p = *e ? e + 1 : e) {
		e = strchr(p, ':');
		if (!e)
			e = p + strlen(p);
		if (e == p || (size_t)(e - p) >= sizeof(dir))
			continue;
		memcpy(dir, p, (size_t)(e - p));
		dir[e - p] = '\0';
		snprintf(file, sizeof(file), "%s/fusermount3", dir);
		if (!access(file, X_OK))
			return true;
	}
	return false;
}

/*
 * auto_unmount: fusermount3 keeps watching the connection and unmounts
 * when the daemon dies, even by SIGKILL or a crash, so no mount point is
 * left stuck ("Transport endpoint is not connected"). Without fusermount3
 * that cannot be had; the mount works the same.
 */
static int build_args(struct ezfs_mount *m, struct fuse_args *args)
{
	char esc[PATH_MAX * 2], opts[PATH_MAX * 2 + 128];

	opt_escape(esc, sizeof(esc), m->image_path);
	snprintf(opts, sizeof(opts),
		 "ro,default_permissions,subtype=ezfs,fsname=%s%s%s", esc,
		 m->p.allow_other ? ",allow_other" : "",
		 have_fusermount() ? ",auto_unmount" : "");
	if (fuse_opt_add_arg(args, "ezfs") ||
	    fuse_opt_add_arg(args, "-o") || fuse_opt_add_arg(args, opts) ||
	    (m->p.debug && fuse_opt_add_arg(args, "-d")))
		return -ENOMEM;
	return 0;
}

int ezfs_mount_create(const struct ezfs_mount_params *p, ezfs_mount **out)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct ezfs_open_params op;
	struct ezfs_mount *m;
	struct mnode *root;
	int err;

	*out = NULL;
	if (!p->image || !p->mountpoint)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->p = *p;
	m->timeout = MNT_TIMEOUT;
	m->ra_fd = -1;
	pthread_mutex_init(&m->st_lock, NULL);
	/* Absolute paths: daemonizing changes the directory to /. */
	m->image_path = realpath(p->image, NULL);
	m->mountpoint = realpath(p->mountpoint, NULL);
	if (!m->image_path || !m->mountpoint) {
		err = -errno;
		mnt_log(m, EZFS_LOG_ERROR, "%s: %s",
			m->image_path ? p->mountpoint : p->image,
			strerror(errno));
		goto fail;
	}
	m->p.image = m->image_path;
	m->p.mountpoint = m->mountpoint;

	ezfs_open_params_init(&op);
	op.log = img_log;
	op.log_arg = m;
	op.offset = p->offset;
	op.cache_bytes = p->cache_bytes;
	op.verbose = p->verbose;
	op.accel = p->accel[0] ? p->accel : NULL;
	err = ezfs_image_open(m->image_path, &op, &m->img);
	if (!err && p->dispatch >= 0)
		err = ezfs_image_set_dispatch(m->img, p->dispatch,
					      p->dispatch_threads);
	if (err) {
		mnt_log(m, EZFS_LOG_ERROR, "%s: %s", p->image,
			ezfs_strerror(err));
		goto fail;
	}
	ezfs_get_sb_info(m->img, &m->sb);
	err = it_init(&m->it);
	if (err)
		goto fail;
	/* The root: one permanent reference (the kernel never forgets it). */
	err = it_get(m, m->sb.root_nid, 1, &root);
	if (err) {
		mnt_log(m, EZFS_LOG_ERROR, "%s: root inode: %s", p->image,
			ezfs_strerror(err));
		goto fail;
	}
	it_unpin(m, root);

	err = build_args(m, &args);
	if (err)
		goto fail;
	m->se = fuse_session_new(&args, &mnt_ops, sizeof(mnt_ops), m);
	fuse_opt_free_args(&args);
	if (!m->se) {
		mnt_log(m, EZFS_LOG_ERROR, "cannot create the FUSE session");
		err = -EIO;
		goto fail;
	}
	if (fuse_session_mount(m->se, m->mountpoint)) {
		mnt_log(m, EZFS_LOG_ERROR, "cannot mount on %s (is /dev/fuse "
			"usable, the directory there, fusermount3 installed?)",
			m->mountpoint);
		err = -EIO;
		goto fail;
	}
	m->mounted = true;
	ra_init(m);
	*out = m;
	return 0;
fail:
	ezfs_mount_destroy(m);
	return err;
}

int ezfs_mount_daemonize(ezfs_mount *m)
{
	if (fuse_daemonize(0)) {
		mnt_log(m, EZFS_LOG_ERROR, "cannot daemonize");
		return -EIO;
	}
	m->daemonized = true;
	return 0;
}

/*
 * SIGTERM, SIGINT, SIGHUP. libfuse's own handlers would end the loop at
 * once; but a store-ahead helper may be waiting for a page whose read is
 * still queued, and once the loop has ended nobody answers that read. So
 * the handler only wakes the stopper thread, which stops the helpers while
 * the workers still serve, then ends the loop and interrupts the loop
 * thread's wait with the same signal. One mount per process at a time.
 */
static const int stop_signals[] = { SIGTERM, SIGINT, SIGHUP, SIGPIPE };
#define NSTOP (sizeof(stop_signals) / sizeof(stop_signals[0]))
static struct sigaction old_actions[NSTOP];
static int stop_pipe[2] = { -1, -1 };

static void on_stop_signal(int sig)
{
	char c = 1;
	int e = errno;

	if (write(stop_pipe[1], &c, 1) < 0) {
		/* full: a stop is pending already */
	}
	errno = e;
}

static void *stopper(void *arg)
{
	struct ezfs_mount *m = arg;
	ssize_t r;
	char c;

	do
		r = read(stop_pipe[0], &c, 1);
	while (r < 0 && errno == EINTR);
	if (r == 1 && c) {
		pf_stop(m);
		fuse_session_exit(m->se);
		pthread_kill(m->loop_thread, SIGTERM);
	}
	return NULL;
}

static void restore_signals(struct ezfs_mount *m)
{
	char c = 0;
	unsigned i;

	if (!m->sig_set)
		return;
	if (write(stop_pipe[1], &c, 1) == 1)
		pthread_join(m->stopper, NULL);
	for (i = 0; i < NSTOP; i++)
		sigaction(stop_signals[i], &old_actions[i], NULL);
	close(stop_pipe[0]);
	close(stop_pipe[1]);
	stop_pipe[0] = stop_pipe[1] = -1;
	m->sig_set = false;
}

static int set_signals(struct ezfs_mount *m)
{
	struct sigaction sa;
	unsigned i;

	if (pipe(stop_pipe))
		return -errno;
	/* The stopper blocks in read: only the write end is non-blocking. */
	fcntl(stop_pipe[0], F_SETFD, FD_CLOEXEC);
	fcntl(stop_pipe[1], F_SETFD, FD_CLOEXEC);
	fcntl(stop_pipe[1], F_SETFL, O_NONBLOCK);
	m->loop_thread = pthread_self();
	if (pthread_create(&m->stopper, NULL, stopper, m)) {
		close(stop_pipe[0]);
		close(stop_pipe[1]);
		return -EAGAIN;
	}
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < NSTOP; i++) {
		/* no SA_RESTART: the loop's wait must be interrupted */
		sa.sa_handler = stop_signals[i] == SIGPIPE ? SIG_IGN :
							     on_stop_signal;
		sigaction(stop_signals[i], &sa, &old_actions[i]);
	}
	m->sig_set = true;
	return 0;
}

int ezfs_mount_run(ezfs_mount *m)
{
	struct fuse_loop_config *cfg;
	int ret;

	if (set_signals(m)) {
		mnt_log(m, EZFS_LOG_ERROR, "cannot set signal handlers");
		return -EIO;
	}
	m->serving = true;
	if (m->p.prefetch && pf_start(m))
		mnt_log(m, EZFS_LOG_WARN, "prefetch thread not started");
	if (m->p.single_thread) {
		ret = fuse_session_loop(m->se);
	} else {
		cfg = fuse_loop_cfg_create();
		if (!cfg) {
			ret = -ENOMEM;
			goto out;
		}
		fuse_loop_cfg_set_clone_fd(cfg, 0);
		fuse_loop_cfg_set_idle_threads(cfg, m->p.threads ?
					       m->p.threads : 10);
		if (m->p.threads)
			fuse_loop_cfg_set_max_threads(cfg, m->p.threads);
		ret = fuse_session_loop_mt(m->se, cfg);
		fuse_loop_cfg_destroy(cfg);
	}
out:
	restore_signals(m);
	pf_stop(m);
	m->serving = false;
	if (m->mounted) {
		fuse_session_unmount(m->se);
		m->mounted = false;
	}
	/* A signal ends the loop with its number: that is a clean stop. */
	return ret < 0 ? ret : 0;
}

void ezfs_mount_destroy(ezfs_mount *m)
{
	if (!m)
		return;
	if (m->se) {
		restore_signals(m);
		if (m->mounted)
			fuse_session_unmount(m->se);
		fuse_session_destroy(m->se);
	}
	it_destroy(&m->it);
	ra_fini(m);
	ezfs_image_close(m->img);
	free(m->image_path);
	free(m->mountpoint);
	pthread_mutex_destroy(&m->st_lock);
	free(m);
}

ezfs_image *ezfs_mount_image(ezfs_mount *m)
{
	return m->img;
}
