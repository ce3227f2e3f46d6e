/* SPDX-License-Identifier: MIT */
/* session.c - mount session: open, mount, daemonize, serve, unmount. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* The image never changes: keep names and attributes for a long time. */
#define MNT_TIMEOUT (86400.0 * 365)

void ezi_mnt_log(struct ezfs_mount *m, int level, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!m->p.log ||
	    (level > EZFS_LOG_ERROR && (unsigned)level > m->p.verbose))
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

	if (level == EZFS_LOG_ERROR) {
		snprintf(lib_detail, sizeof(lib_detail), "%s", msg);
		/* opening: the first line is the reason of the one line that
		 * ezfs_mount_create logs */
		if (m->opening) {
			if (!m->open_error[0])
				snprintf(m->open_error, sizeof(m->open_error),
					 "%s", msg);
			return;
		}
	}
	if (m->p.log && (!m->serving || m->p.verbose >= 1))
		m->p.log(m->p.log_arg, level, msg);
}

const char *ezi_mnt_take_detail(char *buf, size_t size)
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
	if (fuse_opt_add_arg(args, "ezfs") || fuse_opt_add_arg(args, "-o") ||
	    fuse_opt_add_arg(args, opts) ||
	    (m->p.debug && fuse_opt_add_arg(args, "-d")))
		return -ENOMEM;
	return 0;
}

/* The mount point: an existing directory, as an absolute path. */
static int check_mountpoint(struct ezfs_mount *m, const char *path)
{
	struct stat st;
	int err;

	m->mountpoint = realpath(path, NULL);
	if (!m->mountpoint || stat(m->mountpoint, &st)) {
		err = errno;
		ezi_mnt_log(m, EZFS_LOG_ERROR, "%s: %s", path, strerror(err));
		return -err;
	}
	if (!S_ISDIR(st.st_mode)) {
		ezi_mnt_log(m, EZFS_LOG_ERROR, "%s: %s", path,
			    strerror(ENOTDIR));
		return -ENOTDIR;
	}
	return 0;
}

/*
 * realpath(3) of the image: a super image's partition, SUPER:NAME, is no
 * file, so when the whole path does not exist and holds a ':', the part
 * before the last ':' is resolved and ":NAME" put back after it. NULL with
 * errno set (the whole path's) on failure.
 */
static char *image_realpath(const char *image)
{
	const char *colon = strrchr(image, ':');
	char *dir, *abs, *out;
	size_t n;

	out = realpath(image, NULL);
	if (out || errno != ENOENT || !colon || colon == image || !colon[1])
		return out;
	dir = strndup(image, (size_t)(colon - image));
	if (!dir)
		return NULL;
	abs = realpath(dir, NULL);
	free(dir);
	if (!abs) {
		errno = ENOENT;
		return NULL;
	}
	n = strlen(abs) + strlen(colon) + 1;
	out = malloc(n);
	if (out)
		snprintf(out, n, "%s%s", abs, colon);
	free(abs);
	return out;
}

/* Open the image (and start its dispatch workers); one log line naming
 * the image on failure, with the library's own reason. */
static int open_image(struct ezfs_mount *m, const struct ezfs_mount_params *p)
{
	struct ezfs_open_params op;
	const char *devs[256];
	const char *d = p->devices;
	int err;

	ezfs_open_params_init(&op);
	for (unsigned i = 0; i < p->ndevices && i < 256; i++) {
		devs[i] = d;
		d += strlen(d) + 1;
	}
	op.devices = devs;
	op.ndevices = p->ndevices < 256 ? p->ndevices : 256;
	op.log = img_log;
	op.log_arg = m;
	op.offset = p->offset;
	op.cache_bytes = p->cache_bytes;
	op.verbose = p->verbose;
	op.accel = p->accel[0] ? p->accel : NULL;
	ezi_mnt_verity_params(p, &op);
	m->open_error[0] = '\0';
	m->opening = true;
	if (m->p.io_ops) {
		op.io_hint = m->p.io_hint;
		op.io_verity = m->p.io_verity;
		err = ezfs_image_open_io(m->p.io_ops, m->p.io_arg, m->p.io_size,
					 &op, &m->img);
	} else {
		err = ezfs_image_open(m->image_path, &op, &m->img);
	}
	if (!err && p->dispatch >= 0)
		err = ezfs_image_set_dispatch(m->img, p->dispatch,
					      p->dispatch_threads);
	m->opening = false;
	if (err)
		ezi_mnt_log(m, EZFS_LOG_ERROR, "%s: %s", p->image,
			    m->open_error[0] ? m->open_error
					     : ezfs_strerror(err));
	else if (m->open_error[0])
		ezi_mnt_log(m, EZFS_LOG_ERROR, "%s: %s", p->image,
			    m->open_error);
	return err;
}

int ezfs_mount_create(const struct ezfs_mount_params *p, ezfs_mount **out)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct ezfs_mount *m;
	struct mnode *root;
	bool io_taken = false;
	int err;

	*out = NULL;
	/* a size of 0 was never initialised; a larger one is a newer ABI */
	if (!p->size || p->size > sizeof(*p) || !p->image || !p->mountpoint)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	ezfs_mount_params_init(&m->p);
	memcpy(&m->p, p, p->size);
	m->timeout = MNT_TIMEOUT;
	m->ra_fd = -1;
	m->wd_pipe[0] = m->wd_pipe[1] = -1;
	pthread_mutex_init(&m->st_lock, NULL);
	/* Absolute paths: daemonizing changes the directory to /. Each is
	 * checked on its own: errno is not kept by a realpath that worked. */
	/* an image read through ops is only a name */
	m->image_path =
		m->p.io_ops ? strdup(p->image) : image_realpath(p->image);
	if (!m->image_path) {
		err = -errno;
		ezi_mnt_log(m, EZFS_LOG_ERROR, "%s: %s", p->image,
			    strerror(-err));
		goto fail;
	}
	err = check_mountpoint(m, p->mountpoint);
	if (err)
		goto fail;
	m->p.image = m->image_path;
	m->p.mountpoint = m->mountpoint;

	io_taken = true; /* ezfs_image_open_io closes them on failure */
	err = open_image(m, p);
	if (err)
		goto fail;
	ezfs_get_sb_info(m->img, &m->sb);
	err = ezi_it_init(&m->it);
	if (err)
		goto fail;
	/* The root: one permanent reference (the kernel never forgets it). */
	err = ezi_it_get(m, m->sb.root_nid, 1, &root);
	if (err) {
		ezi_mnt_log(m, EZFS_LOG_ERROR, "%s: root inode: %s", p->image,
			    ezfs_strerror(err));
		goto fail;
	}
	ezi_it_unpin(m, root);

	err = build_args(m, &args);
	if (err)
		goto fail;
	m->se = fuse_session_new(&args, &ezi_mnt_ops, sizeof(ezi_mnt_ops), m);
	fuse_opt_free_args(&args);
	if (!m->se) {
		ezi_mnt_log(m, EZFS_LOG_ERROR,
			    "cannot create the FUSE session");
		err = -EIO;
		goto fail;
	}
	if (fuse_session_mount(m->se, m->mountpoint)) {
		ezi_mnt_log(
			m, EZFS_LOG_ERROR,
			"cannot mount on %s (is /dev/fuse "
			"usable, the directory there, fusermount3 installed?)",
			m->mountpoint);
		err = -EIO;
		goto fail;
	}
	m->mounted = true;
	ezi_ra_init(m);
	*out = m;
	return 0;
fail:
	if (m->p.io_ops && !io_taken && m->p.io_ops->close)
		m->p.io_ops->close(m->p.io_arg);
	ezfs_mount_destroy(m);
	return err;
}

/*
 * Threads do not cross fork(): the engine's decode workers (queue,
 * percpu) started with the image would be missing in the daemon, and the
 * first read given to them would wait forever. They are stopped before
 * the fork and started again in the daemon, the same mode and count.
 */
int ezfs_mount_daemonize(ezfs_mount *m)
{
	struct ezfs_dispatch_info di;
	int err;

	ezfs_image_dispatch_info(m->img, &di);
	if (di.mode != EZFS_DISPATCH_INLINE)
		ezfs_image_set_dispatch(m->img, EZFS_DISPATCH_INLINE, 0);
	if (fuse_daemonize(0)) {
		ezi_mnt_log(m, EZFS_LOG_ERROR, "cannot daemonize");
		return -EIO;
	}
	m->daemonized = true;
	if (di.mode != EZFS_DISPATCH_INLINE) {
		err = ezfs_image_set_dispatch(m->img, di.mode, di.workers);
		if (err)
			ezi_mnt_log(m, EZFS_LOG_WARN,
				    "dispatch %s: cannot start "
				    "the workers (%s); decoding inline",
				    ezfs_dispatch_name(di.mode),
				    ezfs_strerror(err));
	}
	return 0;
}

/*
 * The reaper: once the mount is stopping (a stop signal, the kernel's
 * side gone at umount, the loop ended), the rest of ezfs_mount_run and
 * ezfs_mount_destroy get MNT_STOP_GRACE_MS. A request that never ends
 * (a read of an image on a stalled disk or network file system, a stuck
 * decode) would otherwise keep the process alive: the loop joins its
 * workers, ezi_pf_stop its helpers, the image's close its decode workers.
 * Past the deadline it unmounts lazily (when the kernel's side is still
 * there) and ends the process with _exit(1).
 */
#define MNT_STOP_GRACE_MS 1500

enum { WD_STOP = 'S', WD_DONE = 'D' };

static void wd_send(struct ezfs_mount *m, char c)
{
	if (m->wd_pipe[1] >= 0 && write(m->wd_pipe[1], &c, 1) < 0) {
		/* full: the reaper has a message pending already */
	}
}

/* Detach the mount (MNT_DETACH, or fusermount3 -u -z when not root). */
static void wd_unmount(struct ezfs_mount *m)
{
	pid_t pid;

	if (!umount2(m->mountpoint, MNT_DETACH) || errno != EPERM)
		return;
	pid = fork();
	if (!pid) {
		execlp("fusermount3", "fusermount3", "-u", "-z", "-q", "--",
		       m->mountpoint, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

#define WD_CHECK_MS 200 /* how often the reaper looks for an unmount */

static void *reaper(void *arg)
{
	struct ezfs_mount *m = arg;
	struct timespec t0, t;
	struct pollfd pfd[2];
	bool conn_gone;
	int n, left;
	char c = 0;

	/*
	 * events 0 on the FUSE fd: only POLLERR (unmounted, aborted). It is
	 * looked at every WD_CHECK_MS, not waited on: the kernel wakes every
	 * poller of /dev/fuse at each request, and a thread blocked there
	 * cost a context switch per read (16 % of a sequential read).
	 */
	pfd[0].fd = fuse_session_fd(m->se);
	pfd[0].events = 0;
	pfd[1].fd = m->wd_pipe[0];
	pfd[1].events = POLLIN;
	for (;;) {
		n = poll(&pfd[1], 1, WD_CHECK_MS);
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && read(m->wd_pipe[0], &c, 1) == 1)
			break;
		pfd[0].revents = 0;
		if (poll(pfd, 1, 0) != 0)
			break;
	}
	if (c == WD_DONE)
		return NULL;
	/* stopping: wait for the end, at most the grace period */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		left = MNT_STOP_GRACE_MS -
		       (int)((t.tv_sec - t0.tv_sec) * 1000 +
			     (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0)
			break;
		n = poll(&pfd[1], 1, left);
		if (n > 0 && read(m->wd_pipe[0], &c, 1) == 1 && c == WD_DONE)
			return NULL;
	}
	pfd[0].revents = 0;
	conn_gone = poll(pfd, 1, 0) != 0;
	ezi_mnt_log(m, EZFS_LOG_ERROR,
		    "still busy %.1f s after the stop (a "
		    "request or decode that does not end); exiting without it",
		    MNT_STOP_GRACE_MS / 1000.0);
	if (!conn_gone)
		wd_unmount(m);
	_exit(1);
}

static int reaper_start(struct ezfs_mount *m)
{
	if (pipe(m->wd_pipe))
		return -errno;
	fcntl(m->wd_pipe[0], F_SETFD, FD_CLOEXEC);
	fcntl(m->wd_pipe[1], F_SETFD, FD_CLOEXEC);
	fcntl(m->wd_pipe[1], F_SETFL, O_NONBLOCK);
	if (pthread_create(&m->reaper, NULL, reaper, m)) {
		close(m->wd_pipe[0]);
		close(m->wd_pipe[1]);
		m->wd_pipe[0] = m->wd_pipe[1] = -1;
		return -EAGAIN;
	}
	m->reaper_started = true;
	return 0;
}

static void reaper_stop(struct ezfs_mount *m)
{
	if (!m->reaper_started)
		return;
	wd_send(m, WD_DONE);
	pthread_join(m->reaper, NULL);
	close(m->wd_pipe[0]);
	close(m->wd_pipe[1]);
	m->wd_pipe[0] = m->wd_pipe[1] = -1;
	m->reaper_started = false;
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
		wd_send(m, WD_STOP);
		ezi_pf_stop(m);
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
		sa.sa_handler =
			stop_signals[i] == SIGPIPE ? SIG_IGN : on_stop_signal;
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
		ezi_mnt_log(m, EZFS_LOG_ERROR, "cannot set signal handlers");
		return -EIO;
	}
	if (reaper_start(m))
		ezi_mnt_log(m, EZFS_LOG_WARN,
			    "stop watchdog thread not started");
	m->serving = true;
	if (m->p.prefetch && ezi_pf_start(m))
		ezi_mnt_log(m, EZFS_LOG_WARN, "prefetch thread not started");
	if (m->p.single_thread) {
		ret = fuse_session_loop(m->se);
	} else {
		cfg = fuse_loop_cfg_create();
		if (!cfg) {
			ret = -ENOMEM;
			goto out;
		}
		fuse_loop_cfg_set_clone_fd(cfg, 0);
		fuse_loop_cfg_set_idle_threads(cfg, m->p.threads ? m->p.threads
								 : 10);
		if (m->p.threads)
			fuse_loop_cfg_set_max_threads(cfg, m->p.threads);
		ret = fuse_session_loop_mt(m->se, cfg);
		fuse_loop_cfg_destroy(cfg);
	}
out:
	/* from here on, the stop has MNT_STOP_GRACE_MS to finish */
	wd_send(m, WD_STOP);
	restore_signals(m);
	ezi_pf_stop(m);
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
	ezi_it_destroy(&m->it);
	ezi_ra_fini(m);
	ezfs_image_close(m->img);
	reaper_stop(m);
	free(m->image_path);
	free(m->mountpoint);
	pthread_mutex_destroy(&m->st_lock);
	free(m);
}

ezfs_image *ezfs_mount_image(ezfs_mount *m)
{
	return m->img;
}
