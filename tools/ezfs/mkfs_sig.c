/* SPDX-License-Identifier: MIT */
/*
 * mkfs_sig.c - an interrupted `ezfs mkfs` leaves nothing behind.
 *
 * The builder writes the image to an O_TMPFILE file (no name until it is
 * complete) or, where the filesystem lacks O_TMPFILE, to a temporary
 * ".NAME.XXXXXX" beside it. SIGINT, SIGTERM and SIGHUP are blocked in every
 * thread and taken by sigwait() on a thread of their own: it unlinks any
 * such temporary file that this process has open, prints one line and
 * re-raises the signal with its default action, so the shell sees the
 * usual 130/143/129. A signal that was ignored when mkfs started (SIGHUP
 * under nohup, SIGINT of a background job) stays ignored.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "mkfs_sig.h"

static sigset_t sigs;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int done, in_place;
static char *dir, *base;

/* Is (dev, ino) a file that this process has open? */
static int is_open_here(dev_t dev, ino_t ino)
{
	long max = sysconf(_SC_OPEN_MAX);
	struct stat st;
	int fd;

	if (max < 0 || max > 65536)
		max = 65536;
	for (fd = 3; fd < max; fd++)
		if (!fstat(fd, &st) && st.st_dev == dev && st.st_ino == ino)
			return 1;
	return 0;
}

/* Unlink DIR/.BASE.XXXXXX files that are ours (open in this process). */
static void remove_temp(void)
{
	size_t blen = strlen(base);
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[4096];
		struct stat st;

		if (strlen(de->d_name) != blen + 8 || de->d_name[0] != '.' ||
		    strncmp(de->d_name + 1, base, blen) ||
		    de->d_name[blen + 1] != '.')
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >=
		    (int)sizeof(path))
			continue;
		if (!lstat(path, &st) && S_ISREG(st.st_mode) &&
		    is_open_here(st.st_dev, st.st_ino))
			unlink(path);
	}
	closedir(d);
}

static void *sig_thread(void *arg)
{
	const char *image = arg;
	sigset_t one;
	int sig = 0;

	while (sigwait(&sigs, &sig))
		;
	pthread_mutex_lock(&lock);
	if (!done && in_place) {
		cli_error("mkfs",
			  "%s: interrupted (%s), the device holds a "
			  "partial image",
			  image, strsignal(sig));
	} else if (!done) {
		remove_temp();
		cli_error("mkfs", "%s: interrupted (%s), no image written",
			  image, strsignal(sig));
	}
	/* keep the lock: the main thread must not finish meanwhile */
	signal(sig, SIG_DFL);
	sigemptyset(&one);
	sigaddset(&one, sig);
	raise(sig);
	pthread_sigmask(SIG_UNBLOCK, &one, NULL);
	_exit(128 + sig); /* not reached */
}

int mkfs_sig_start(const char *image, const char *target, int device)
{
	static const int which[] = { SIGINT, SIGTERM, SIGHUP };
	const char *slash = strrchr(target, '/');
	unsigned i, n = 0;
	pthread_t t;
	int err;

	in_place = device;
	dir = slash ? strndup(target, (size_t)(slash - target + 1))
		    : strdup(".");
	base = strdup(slash ? slash + 1 : target);
	if (!dir || !base)
		return -ENOMEM;
	sigemptyset(&sigs);
	for (i = 0; i < sizeof(which) / sizeof(which[0]); i++) {
		struct sigaction old;

		/* ignored at startup (nohup): leave it so */
		if (!sigaction(which[i], NULL, &old) &&
		    old.sa_handler == SIG_IGN)
			continue;
		sigaddset(&sigs, which[i]);
		n++;
	}
	if (!n)
		return 0;
	err = pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	if (!err)
		err = pthread_create(&t, NULL, sig_thread, (void *)image);
	if (!err)
		err = pthread_detach(t);
	return -err;
}

void mkfs_sig_done(void)
{
	pthread_mutex_lock(&lock);
	done = 1;
	free(dir);
	free(base);
	dir = base = NULL;
	pthread_mutex_unlock(&lock);
}
