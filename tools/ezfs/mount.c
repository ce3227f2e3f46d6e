/* SPDX-License-Identifier: MIT */
/* mount.c - the ezfs mount and ezfs umount commands (FUSE). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "ezfs/ezfs.h"
#include "cmd.h"
#include "common.h"
#ifdef EZFS_HAVE_FUSE
#include "ezfs/mount.h"
#include "mount_kernel.h"
#ifdef EZFS_HAVE_REMOTE
#include "ezfs/remote.h"
#endif
#endif

int cmd_mount(int argc, char **argv);
int cmd_umount(int argc, char **argv);

static void mount_usage(FILE *f)
{
	fprintf(f,
		"usage: ezfs mount [-o OPTIONS] [-f] [-d] [-s] [-v] [--log "
		"FILE]\n"
		"                  IMAGE MOUNTPOINT\n"
		"Mount an EROFS image read-only through FUSE; runs in the "
		"background\n"
		"unless -f is given. Unmount with 'ezfs umount MOUNTPOINT'.\n\n"
		"  -f            stay in the foreground (log lines go to "
		"stderr)\n"
		"  -d            debug: trace FUSE requests to stderr (implies "
		"-f)\n"
		"  -s            single-threaded request loop\n"
		"  -v            more log lines (-v warnings, -vv info, -vvv "
		"debug)\n"
		"  --log FILE    once mounted, append log lines to FILE (also "
		"with "
		"-f).\n"
		"                Without it a background mount logs to syslog "
		"when\n"
		"                /dev/log takes connections, else to the "
		"kernel "
		"log\n"
		"                (/dev/kmsg, root only), else nowhere\n"
		"  --record-trace FILE\n"
		"                a remote image: at umount, write the byte "
		"ranges read\n"
		"                (OFFSET LENGTH lines; ezfs push --prefetch "
		"FILE)\n"
		"  -o OPTIONS    comma-separated, may be repeated:\n"
		"     cache=SIZE       decoded pcluster cache, K/M/G/T suffix "
		"(default 64M)\n"
		"     threads=N        at most N idle and N running FUSE "
		"workers, "
		"1..1024\n"
		"                      (default: 10 idle, libfuse's maximum)\n"
		"     allow_other      let other users in (permission checks "
		"stay "
		"the\n"
		"                      kernel's, from the image's modes and "
		"owners)\n"
		"     offset=N         the image starts at byte N of the file "
		"(suffixes)\n"
		"     device=FILE      an extra device of a multi-device "
		"image\n"
		"                      (again for each, in device-table "
		"order)\n"
		"     uid=N, gid=N     show every inode as owned by N\n"
		"     accel=SPEC       decompression engines, '+' between "
		"engines:\n"
		"                      deflate=isal+libdeflate, or one engine "
		"(isal);\n"
		"                      see 'ezfs accel list' (default: "
		"EZFS_ACCEL, "
		"else\n"
		"                      the best engine per algorithm)\n"
		"     dispatch=inline|queue[:N]|percpu\n"
		"                      where pclusters are decoded: in the "
		"FUSE "
		"worker,\n"
		"                      on N shared workers (default one per "
		"CPU), "
		"or on\n"
		"                      a pinned worker per CPU (default: "
		"EZFS_DISPATCH,\n"
		"                      else inline)\n"
		"     prefetch=0|1     store decoded neighbours and decode "
		"ahead "
		"of\n"
		"                      sequential readers (default 1)\n"
		"     readahead=auto|SIZE\n"
		"                      the kernel's readahead window for the "
		"mount's\n"
		"                      files (root only): auto 1M (default), 0 "
		"the\n"
		"                      kernel's own, else SIZE (up to 256M)\n"
		"     fill=none|trace|all\n"
		"                      a remote image's background fill: "
		"none (default),\n"
		"                      the published trace's ranges, or "
		"those and then\n"
		"                      the whole image (readers go first)\n"
		"     fill_rate=SIZE   the fill's bytes per second at most "
		"(K/M/G)\n"
		"     ro               accepted (always read-only; rw is "
		"refused)\n"
		"     verity           a dm-verity tree is required (default: "
		"one found\n"
		"                      after the filesystem is used; every "
		"block read\n"
		"                      is checked, a bad one fails with EIO); "
		"noverity:\n"
		"                      none is read (docs/verity.md)\n"
		"     roothash=HEX     the root it must have (also "
		"verity.roothash=HEX,\n"
		"                      verity.roothashfile=FILE)\n"
		"     verity.hashdevice=FILE, verity.hashoffset=N\n"
		"                      the tree in FILE, or at byte N of the "
		"image\n"
		"     verity.roothashsig=FILE, verity.trustedcert=PEM\n"
		"                      a PKCS#7 signature of the hex root, "
		"checked\n"
		"                      against the certificates in "
		"PEM\n"
		"  --require-verified  refuse an image without a trusted root "
		"(given,\n"
		"                      signed, or announced by a manifest "
		"named by\n"
		"                      digest)\n"
		"  --kernel      the kernel's erofs driver mounts the image "
		"file (root\n"
		"                only; no daemon), or a remote image's cache "
		"file, its\n"
		"                missing ranges fetched on demand through "
		"fanotify\n"
		"                (Linux 6.14+; docs/mount.md). -o fill=all "
		"(default)\n"
		"                fetches the rest when idle, fill=none only "
		"what is read\n"
		"  --unverified  with --kernel: mount a remote image that has "
		"neither a\n"
		"                dm-verity tree nor a chunk index (its bytes "
		"unchecked)\n" CLI_REMOTE_HELP);
}

static void umount_usage(FILE *f)
{
	fprintf(f, "usage: ezfs umount [-l] MOUNTPOINT\n"
		   "Unmount an ezfs mount (type fuse.ezfs, or erofs on a file: "
		   "'ezfs mount\n--kernel'; other mounts are refused); -l: "
		   "lazily.\n");
}

#ifdef EZFS_HAVE_FUSE
/* Where log lines go once mounted (set before the threads start). */
static enum { TO_STDERR, TO_SYSLOG, TO_FILE, TO_KMSG, TO_NONE } log_to;
static int log_fd = -1;

static void log_line(void *arg, int level, const char *msg)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	int pr = prio[level < 0 ? 0 : level > 3 ? 3 : level];
	char line[768], stamp[32];
	struct tm tm;
	time_t now;
	int n;

	switch (log_to) {
	case TO_STDERR:
		fprintf(stderr, "ezfs mount: %s\n", msg);
		return;
	case TO_SYSLOG:
		syslog(pr, "%s", msg);
		return;
	case TO_FILE:
		now = time(NULL);
		gmtime_r(&now, &tm);
		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
		n = snprintf(line, sizeof(line), "%s ezfs[%d]: %s\n", stamp,
			     (int)getpid(), msg);
		break;
	case TO_KMSG:
		n = snprintf(line, sizeof(line), "<%d>ezfs[%d]: %s\n",
			     LOG_DAEMON | pr, (int)getpid(), msg);
		break;
	default:
		return;
	}
	if (n >= (int)sizeof(line)) {
		n = (int)sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	/* one write: the lines of concurrent threads do not mix */
	if (write(log_fd, line, (size_t)n) < 0) {
		/* nowhere left to say it */
	}
}

/* Does a syslog daemon take connections on /dev/log? */
static bool syslog_usable(void)
{
	static const int types[] = { SOCK_DGRAM, SOCK_STREAM };
	struct sockaddr_un sa;
	bool ok = false;
	unsigned i;
	int fd;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	strcpy(sa.sun_path, "/dev/log");
	for (i = 0; i < 2 && !ok; i++) {
		fd = socket(AF_UNIX, types[i] | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		ok = !connect(fd, (struct sockaddr *)&sa, sizeof(sa));
		close(fd);
	}
	return ok;
}

/* An fd above stderr: daemonizing puts /dev/null on 0, 1 and 2. */
static int keep_fd(int fd)
{
	int nfd;

	if (fd < 0 || fd > 2)
		return fd;
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return nfd;
}

/* Where a mount's log lines go once it serves: --log FILE, else stderr
 * in the foreground, else syslog, the kernel log, or nowhere. */
static void log_choose(int foreground)
{
	if (log_fd >= 0) {
		log_to = TO_FILE;
	} else if (foreground) {
		log_to = TO_STDERR;
	} else if (syslog_usable()) {
		openlog("ezfs", LOG_PID, LOG_DAEMON);
		log_to = TO_SYSLOG;
	} else {
		log_fd = keep_fd(open("/dev/kmsg", O_WRONLY | O_CLOEXEC));
		log_to = log_fd >= 0 ? TO_KMSG : TO_NONE;
	}
}

/* Log lines of a remote source (arg: its URL), which do not name it. */
static void remote_log(void *arg, int level, const char *msg)
{
	char line[1024];

	snprintf(line, sizeof(line), "%s: %s", (const char *)arg, msg);
	log_line(NULL, level, line);
}

#ifdef EZFS_HAVE_REMOTE
/* ezfs_mount_params.io_stats of a remote source (arg: its ezfs_remote):
 * its counters for ezfs accel stats MOUNTPOINT. */
static void remote_stats(void *arg, struct ezfs_ctl_remote *o)
{
	struct ezfs_remote_stats st;

	ezfs_remote_get_stats(arg, &st);
	o->requests = st.requests;
	o->retries = st.retries;
	o->rounds = st.rounds;
	o->bytes_fetched = st.bytes_fetched;
	o->bytes_read = st.bytes_read;
	o->reads = st.reads;
	o->reads_hit = st.reads_hit;
	o->redirects = st.redirects;
	o->cache_bytes = st.cache_bytes;
	o->size = st.size;
	o->fetch_us_p50 = st.fetch_us_p50;
	o->fetch_us_p99 = st.fetch_us_p99;
	o->hints = st.hints;
	o->hints_fetched = st.hints_fetched;
	o->bytes_hinted = st.bytes_hinted;
	if (!ezfs_remote_waiting(arg, o->waiting, sizeof(o->waiting)))
		o->waiting[0] = '\0';
}
#endif

/* -o OPTS into p; with --kernel (ko), its own options go into ko first:
 * 0, or the exit status after a line. */
static int mount_options(struct ezfs_mount_params *p, struct kmount_opts *ko,
			 const char *opts)
{
	char err[256], *rest = NULL;
	int ret = ko ? mount_kernel_options(opts, ko, &rest) : 0;
	const char *o = ko ? rest : opts;

	if (!ret && *o && ezfs_mount_parse_options(p, o, err, sizeof(err))) {
		fprintf(stderr, "ezfs mount: %s\n", err);
		ret = 2;
	}
	free(rest);
	return ret;
}

int cmd_mount(int argc, char **argv)
{
	enum {
		OPT_LOG = 0x100,
		OPT_REQUIRE,
		OPT_KERNEL,
		OPT_UNVERIFIED,
		OPT_TRACE
	};
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "log", required_argument, NULL, OPT_LOG },
		{ "record-trace", required_argument, NULL, OPT_TRACE },
		{ "require-verified", no_argument, NULL, OPT_REQUIRE },
		{ "kernel", no_argument, NULL, OPT_KERNEL },
		{ "unverified", no_argument, NULL, OPT_UNVERIFIED },
		CLI_REMOTE_OPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct ezfs_mount_params p;
	const char *log_path = NULL;
	ezfs_mount *m;
	static char trace_path[4096];
	char cwd[4096];
	int c, ret, require = 0, kernel = 0, unverified = 0;
	size_t rn;
	struct kmount_opts ko = {
		.log = log_line,
		.remote_log = remote_log,
		.choose_log = log_choose,
	};

	ezfs_mount_params_init(&p);
	p.log = log_line;
	/* --kernel takes its own -o options out first */
	for (c = 1; c < argc && strcmp(argv[c], "--"); c++)
		kernel |= !strcmp(argv[c], "--kernel");
	p.verity = -1; /* none of the dm-verity options: see below */
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:fdsvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			ret = mount_options(&p, kernel ? &ko : NULL, optarg);
			if (ret)
				return ret;
			break;
		case 'f':
			p.foreground = 1;
			break;
		case 'd':
			p.debug = 1;
			p.foreground = 1;
			break;
		case 's':
			p.single_thread = 1;
			break;
		case 'v':
			p.verbose++;
			break;
		case OPT_LOG:
			log_path = optarg;
			break;
		case OPT_REQUIRE:
			require = 1;
			break;
		case OPT_KERNEL:
			kernel = 1;
			break;
		case OPT_UNVERIFIED:
			unverified = 1;
			break;
		case OPT_TRACE:
			/* written by the daemon at umount: a path that does
			 * not depend on its folder */
			if (optarg[0] == '/')
				snprintf(trace_path, sizeof(trace_path), "%s",
					 optarg);
			else if (!getcwd(cwd, sizeof(cwd)) ||
				 (size_t)snprintf(trace_path,
						  sizeof(trace_path), "%s/%s",
						  cwd, optarg) >=
					 sizeof(trace_path)) {
				fprintf(stderr,
					"ezfs mount: --record-trace %s: path "
					"too long\n",
					optarg);
				return 2;
			}
			cli_remote_record_trace(trace_path);
			break;
		case 'h':
			mount_usage(stdout);
			return 0;
		default:
			if (c >= CLI_OPT_CACHE_DIR &&
			    c <= CLI_OPT_REMOTE_LAST) {
				if (cli_remote_opt("mount", c, optarg) == 2)
					return 2;
				break;
			}
			if (optopt == 'o')
				fprintf(stderr, "ezfs mount: -o needs "
						"OPTIONS\n");
			else if (optopt == OPT_LOG)
				fprintf(stderr, "ezfs mount: --log needs "
						"FILE\n");
			else if (optopt)
				fprintf(stderr,
					"ezfs mount: unknown option "
					"'-%c'\n",
					optopt);
			else
				fprintf(stderr,
					"ezfs mount: unknown option "
					"'%s'\n",
					argv[optind - 1]);
			fprintf(stderr, "Try 'ezfs mount --help'.\n");
			return 2;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "ezfs mount: need IMAGE and MOUNTPOINT\n"
				"Try 'ezfs mount --help'.\n");
		return 2;
	}
	p.image = argv[optind];
	p.mountpoint = argv[optind + 1];
	/* a tree found after the filesystem is used (a remote image's
	 * blocks checked as they are fetched) */
	if (p.verity < 0)
		p.verity = EZFS_VERITY_AUTO;
	if (require && p.verity == EZFS_VERITY_OFF) {
		fprintf(stderr, "ezfs mount: -o noverity with "
				"--require-verified\n");
		return 2;
	}

	/* Every FUSE worker and store-ahead helper would get a malloc arena
	 * of its own, each keeping freed read buffers (128 KiB to 8 MiB): with
	 * ten threads that is tens of MiB beyond the cache= budget. Two arenas
	 * keep the daemon's RSS near the budget; these buffers are allocated
	 * once per request, so the arena lock is not contended. */
	mallopt(M_ARENA_MAX, 2);
	if (log_path) {
		/* opened here: relative to this directory, and an error
		 * still reaches the terminal */
		log_fd = keep_fd(open(log_path,
				      O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
				      0640));
		if (log_fd < 0) {
			fprintf(stderr, "ezfs mount: %s: %s\n", log_path,
				strerror(errno));
			return 1;
		}
	}
	if (kernel) {
		ko.require = require;
		ko.unverified = unverified;
		return mount_kernel(&p, &ko);
	}
	/* a URL: the image is read through libezfs-remote */
	if (cli_is_remote(p.image) &&
	    cli_remote_source(p.image, remote_log, (void *)p.image, p.verbose,
			      &p.io_ops, &p.io_arg, &p.io_size))
		return 1;
	/* the root a manifest announces; --require-verified */
	rn = p.root_hash_size;
	if (p.verity != EZFS_VERITY_OFF &&
	    cli_trust_root("mount", p.image, p.io_ops ? p.io_arg : NULL,
			   require, p.root_hash_sig_file[0] != '\0',
			   p.root_hash, &rn, &p.verity_hash_offset)) {
		if (p.io_ops)
			p.io_ops->close(p.io_arg);
		return 1;
	}
	p.root_hash_size = (unsigned)rn;
	if (p.io_ops) {
		p.io_hint = cli_remote_hint();
		p.io_verity = cli_remote_verity_hook();
	}
#ifdef EZFS_HAVE_REMOTE
	if (p.io_ops)
		p.io_stats = remote_stats;
#endif
	ret = ezfs_mount_create(&p, &m);
	if (ret)
		return 1;
	cli_trust_warn("mount", p.image, ezfs_mount_image(m));
	log_choose(p.foreground);
	if (!p.foreground && ezfs_mount_daemonize(m)) {
		ezfs_mount_destroy(m);
		return 1;
	}
	/* the background fill: its threads in the process that serves */
	if (p.io_ops && p.fill > 0)
		(void)cli_remote_fill(p.io_arg, p.fill, p.fill_rate);
	else if (!p.io_ops && p.fill > 0)
		fprintf(stderr,
			"ezfs mount: -o fill: %s is no remote image; "
			"ignored\n",
			p.image);
	ret = ezfs_mount_run(m);
	ezfs_mount_destroy(m);
	return ret ? 1 : 0;
}
#else
int cmd_mount(int argc, char **argv)
{
	if (argc > 1 &&
	    (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		mount_usage(stdout);
		return 0;
	}
	fprintf(stderr, "ezfs mount: this ezfs was built without FUSE "
			"support (libfuse3)\n");
	return 1;
}
#endif

/* fusermount3 -u [-z] MOUNTPOINT, for users who may not umount2(). */
static int run_fusermount(const char *mp, int lazy)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		if (lazy)
			execlp("fusermount3", "fusermount3", "-u", "-z", "--",
			       mp, (char *)NULL);
		else
			execlp("fusermount3", "fusermount3", "-u", "--", mp,
			       (char *)NULL);
		fprintf(stderr, "ezfs umount: cannot run fusermount3: %s\n",
			strerror(errno));
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* Undo the octal escapes of a mountinfo field (\040 for a space...). */
static void unescape(char *s)
{
	char *d = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 |
				      (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = '\0';
}

/*
 * The file system type and source of the mount on path (an absolute path
 * without symlinks), the topmost one where several are stacked: 0, -ENOENT
 * when nothing is mounted there, or another negative errno.
 */
static int mount_type(const char *path, char *type, size_t size, char *src,
		      size_t srcsize)
{
	char *line = NULL, *save, *f, *mp, *sep;
	size_t cap = 0;
	int found = -ENOENT, i;
	FILE *mi = fopen("/proc/self/mountinfo", "re");

	if (!mi)
		return -errno;
	while (getline(&line, &cap, mi) > 0) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - TYPE .. */
		mp = NULL;
		f = strtok_r(line, " \n", &save);
		for (i = 0; f && i < 4; i++)
			f = strtok_r(NULL, " \n", &save);
		mp = f;
		sep = mp ? strstr(mp + strlen(mp) + 1, " - ") : NULL;
		if (!mp || !sep)
			continue;
		unescape(mp);
		if (strcmp(mp, path))
			continue;
		f = strtok_r(sep + 3, " \n", &save);
		if (!f)
			continue;
		unescape(f);
		snprintf(type, size, "%s", f);
		f = strtok_r(NULL, " \n", &save);
		if (f)
			unescape(f);
		snprintf(src, srcsize, "%s", f ? f : "");
		found = 0;
	}
	free(line);
	fclose(mi);
	return found;
}

/*
 * path made absolute, symlinks resolved. The root of a FUSE mount whose
 * daemon died cannot be looked at (ENOTCONN), so then its folder is
 * resolved and the last name appended.
 */
static char *mount_path(const char *path)
{
	char *dir, *base, *p, *real = realpath(path, NULL);
	char buf[PATH_MAX];
	size_t len;

	if (real || errno == ENOENT)
		return real;
	len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	if (len >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	memcpy(buf, path, len);
	buf[len] = '\0';
	p = strrchr(buf, '/');
	if (!p) {
		dir = ".";
		base = buf;
	} else {
		*p = '\0';
		dir = p == buf ? "/" : buf;
		base = p + 1;
	}
	if (!strcmp(base, ".") || !strcmp(base, "..") || !*base) {
		errno = ENOTCONN;
		return NULL;
	}
	real = realpath(dir, NULL);
	if (!real)
		return NULL;
	p = malloc(strlen(real) + strlen(base) + 2);
	if (p)
		sprintf(p, "%s%s%s", real, strcmp(real, "/") ? "/" : "", base);
	free(real);
	return p;
}

/*
 * What a read on the mount at mp waits for (a remote source's request), as
 * the daemon says it: 1 with why set, or 0. Asked from a child that is
 * killed after 2 s, so that a daemon that cannot answer never hangs
 * umount.
 */
static int remote_wait(const char *mp, char *why, size_t size)
{
#if defined(EZFS_HAVE_FUSE)
	struct ezfs_ctl_remote rc;
	int pfd[2], status, fd;
	ssize_t n = 0;
	pid_t pid;

	if (pipe(pfd))
		return 0;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return 0;
	}
	if (!pid) {
		close(pfd[0]);
		alarm(2);
		memset(&rc, 0, sizeof(rc));
		fd = open(mp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0 && !ioctl(fd, EZFS_IOC_REMOTE, &rc) && rc.present)
			n = write(pfd[1], rc.waiting,
				  strnlen(rc.waiting, sizeof(rc.waiting)));
		_exit(n > 0 ? 0 : 1);
	}
	close(pfd[1]);
	n = read(pfd[0], why, size - 1);
	close(pfd[0]);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	if (n <= 0)
		return 0;
	why[n] = '\0';
	return 1;
#else
	(void)mp;
	(void)why;
	(void)size;
	return 0;
#endif
}

/* Is a mount of type and source one of ezfs mount --kernel: erofs on a
 * regular file (the image, or a remote image's cache file)? Its daemon,
 * if any, leaves when the file system goes. */
static int kernel_mount(const char *type, const char *src)
{
	struct stat st;

	return !strcmp(type, "erofs") && !stat(src, &st) && S_ISREG(st.st_mode);
}

int cmd_umount(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *arg, *bad;
	char type[64], src[PATH_MAX + 8], *mp;
	int c, err, ret, lazy = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+lh", longopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			lazy = 1;
			break;
		case 'h':
			umount_usage(stdout);
			return 0;
		default:
			bad = argv[optind - 1];
			if (optopt)
				fprintf(stderr,
					"ezfs umount: unknown option "
					"'-%c'\n",
					optopt);
			else
				fprintf(stderr,
					"ezfs umount: unknown option "
					"'%.*s'\n",
					(int)strcspn(bad, "="), bad);
			fprintf(stderr, "Try 'ezfs umount --help'.\n");
			return 2;
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "ezfs umount: need MOUNTPOINT\n"
				"Try 'ezfs umount --help'.\n");
		return 2;
	}
	arg = argv[optind];
	mp = mount_path(arg);
	if (!mp) {
		fprintf(stderr, "ezfs umount: %s: %s\n", arg, strerror(errno));
		return 1;
	}
	err = mount_type(mp, type, sizeof(type), src, sizeof(src));
	if (err) {
		if (err == -ENOENT)
			fprintf(stderr, "ezfs umount: %s: not mounted\n", arg);
		else
			fprintf(stderr,
				"ezfs umount: /proc/self/mountinfo: "
				"%s\n",
				strerror(-err));
		free(mp);
		return 1;
	}
	/* subtype=ezfs (session.c): the kernel shows fuse.ezfs */
	if (strcmp(type, "fuse.ezfs") && !kernel_mount(type, src)) {
		fprintf(stderr,
			"ezfs umount: %s: not an ezfs mount (type %s); "
			"use umount(8)\n",
			arg, type);
		free(mp);
		return 1;
	}
	ret = 0;
	if (umount2(mp, lazy ? MNT_DETACH : 0)) {
		char why[256];

		if (errno == EPERM) { /* not root: fusermount3 says why */
			ret = run_fusermount(mp, lazy) ? 1 : 0;
		} else if (errno == EBUSY &&
			   remote_wait(mp, why, sizeof(why))) {
			fprintf(stderr,
				"ezfs umount: %s: busy: %s; try again when it "
				"ends (--remote-timeout, --remote-retries of "
				"the mount bound it), or 'ezfs umount -l %s' "
				"to detach it now\n",
				arg, why, arg);
			ret = 1;
		} else {
			fprintf(stderr, "ezfs umount: %s: %s\n", arg,
				strerror(errno));
			ret = 1;
		}
	}
	free(mp);
	return ret;
}
