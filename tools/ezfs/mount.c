/* SPDX-License-Identifier: MIT */
/* mount.c - the ezfs mount and ezfs umount commands (FUSE). */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "ezfs/ezfs.h"
#include "cmd.h"
#ifdef EZFS_HAVE_FUSE
#include "ezfs/mount.h"
#endif

int cmd_mount(int argc, char **argv);
int cmd_umount(int argc, char **argv);

static void mount_usage(FILE *f)
{
	fprintf(f,
"usage: ezfs mount [-o OPTIONS] [-f] [-d] [-s] [-v] IMAGE MOUNTPOINT\n"
"Mount an EROFS image read-only through FUSE; runs in the background\n"
"unless -f is given. Unmount with 'ezfs umount MOUNTPOINT'.\n\n"
"  -f            stay in the foreground (log to stderr, not syslog)\n"
"  -d            debug: trace FUSE requests (implies -f)\n"
"  -s            single-threaded request loop\n"
"  -v            more log lines (repeat for more)\n"
"  -o OPTIONS    comma-separated:\n"
"     cache=SIZE       decoded pcluster cache (K/M/G suffix; default 64M)\n"
"     threads=N        FUSE worker threads (max idle; default 10)\n"
"     allow_other      let other users see the mount\n"
"     offset=N         the image starts at byte N of the file\n"
"     uid=N, gid=N     show every inode as owned by N\n"
"     accel=SPEC (deflate=isal+libdeflate), dispatch=inline|queue[:N]|percpu\n"
"                      decode engine choices (accepted, not yet used)\n"
"     prefetch=0|1     decode ahead of sequential readers (default 1)\n"
"     ro               accepted (always read-only)\n");
}

static void umount_usage(FILE *f)
{
	fprintf(f, "usage: ezfs umount [-l] MOUNTPOINT\n"
		   "Unmount an ezfs (or any FUSE) mount; -l: lazily.\n");
}

#ifdef EZFS_HAVE_FUSE
static int to_syslog;

static void log_line(void *arg, int level, const char *msg)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };

	if (to_syslog)
		syslog(prio[level < 0 ? 0 : level > 3 ? 3 : level], "%s", msg);
	else
		fprintf(stderr, "ezfs mount: %s\n", msg);
}

int cmd_mount(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ezfs_mount_params p;
	ezfs_mount *m;
	char err[256];
	int c, ret;

	ezfs_mount_params_init(&p);
	p.log = log_line;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:fdsvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (ezfs_mount_parse_options(&p, optarg, err,
						     sizeof(err))) {
				fprintf(stderr, "ezfs mount: %s\n", err);
				return 2;
			}
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
		case 'h':
			mount_usage(stdout);
			return 0;
		default:
			if (optopt == 'o')
				fprintf(stderr, "ezfs mount: -o needs "
						"OPTIONS\n");
			else if (optopt)
				fprintf(stderr, "ezfs mount: unknown option "
						"'-%c'\n", optopt);
			else
				fprintf(stderr, "ezfs mount: unknown option "
						"'%s'\n", argv[optind - 1]);
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

	/* Every FUSE worker and store-ahead helper would get a malloc arena
	 * of its own, each keeping freed read buffers (128 KiB to 8 MiB): with
	 * ten threads that is tens of MiB beyond the cache= budget. Two arenas
	 * keep the daemon's RSS near the budget; these buffers are allocated
	 * once per request, so the arena lock is not contended. */
	mallopt(M_ARENA_MAX, 2);
	ret = ezfs_mount_create(&p, &m);
	if (ret)
		return 1;
	if (!p.foreground) {
		openlog("ezfs", LOG_PID, LOG_DAEMON);
		to_syslog = 1;
		if (ezfs_mount_daemonize(m)) {
			ezfs_mount_destroy(m);
			return 1;
		}
	}
	ret = ezfs_mount_run(m);
	ezfs_mount_destroy(m);
	return ret ? 1 : 0;
}
#else
int cmd_mount(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
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

int cmd_umount(int argc, char **argv)
{
	int c, lazy = 0;

	if (argc > 1 && !strcmp(argv[1], "--help")) {
		umount_usage(stdout);
		return 0;
	}
	optind = 1;
	opterr = 0;
	while ((c = getopt(argc, argv, "+lh")) != -1) {
		switch (c) {
		case 'l':
			lazy = 1;
			break;
		case 'h':
			umount_usage(stdout);
			return 0;
		default:
			fprintf(stderr, "ezfs umount: unknown option '-%c'\n"
					"Try 'ezfs umount -h'.\n", optopt);
			return 2;
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "ezfs umount: need MOUNTPOINT\n"
				"Try 'ezfs umount -h'.\n");
		return 2;
	}
	if (!umount2(argv[optind], lazy ? MNT_DETACH : 0))
		return 0;
	if (errno == EPERM) /* not root: fusermount3 says what went wrong */
		return run_fusermount(argv[optind], lazy) ? 1 : 0;
	fprintf(stderr, "ezfs umount: %s: %s\n", argv[optind],
		strerror(errno));
	return 1;
}
