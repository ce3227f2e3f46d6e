/* SPDX-License-Identifier: MIT */
/*
 * faultshim.c - LD_PRELOAD shim for tests/interop/mkfs-faults.sh: makes a
 * source file change under `ezfs mkfs` at a chosen, deterministic moment.
 *
 *   EZFS_FAULT_PATH=SUFFIX   act on the first open() of a path ending so
 *   EZFS_FAULT=ACTION        vanish: unlink it just before the open
 *                            shrink: truncate it to half just after
 *                            grow:   append 4 KiB to it just after
 *                            eio:    reads of that descriptor fail (EIO);
 *                                    with EZFS_FAULT_RANGE=OFF,LEN only
 *                                    those overlapping [OFF, OFF + LEN)
 *                            short:  reads of that descriptor return at
 *                                    most half the bytes asked for (+1)
 *                            sigint, sigterm: send the signal to the
 *                            process just after (mid-build), then stall
 *                            that thread for up to 10 s
 *   EZFS_FAULT_HOLD_MS=N     hold it N ms instead
 *   EZFS_FAULT_NOTMPFILE=1   open(O_TMPFILE) fails with EOPNOTSUPP
 *   EZFS_FAULT_FSYNC=1       fsync() and fdatasync() fail with EIO
 *
 * The scan only lstat()s files, so the first open() of a regular file is
 * the data phase reading it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fired;
static int eio_fd = -1;
static int short_reads;

static int match(const char *path)
{
	const char *suf = getenv("EZFS_FAULT_PATH");
	size_t pl, sl;

	if (fired || !suf || !*suf || !path)
		return 0;
	pl = strlen(path);
	sl = strlen(suf);
	return pl >= sl && !strcmp(path + pl - sl, suf);
}

static int act(const char *path, int before, int fd)
{
	const char *a = getenv("EZFS_FAULT");
	struct stat st;

	if (!a)
		return fd;
	if (before) {
		if (!strcmp(a, "vanish"))
			unlink(path);
		return fd;
	}
	fired = 1;
	if (fd < 0)
		return fd;
	if (!strcmp(a, "shrink") && !fstat(fd, &st)) {
		if (truncate(path, st.st_size / 2))
			abort();
	} else if (!strcmp(a, "grow")) {
		static const char more[4096] = "grown";
		int w = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);

		if (w < 0 || write(w, more, sizeof(more)) != sizeof(more))
			abort();
		close(w);
	} else if (!strcmp(a, "eio") || !strcmp(a, "short")) {
		eio_fd = fd;
		short_reads = a[0] == 's';
	} else if (!strcmp(a, "sigint") || !strcmp(a, "sigterm")) {
		const char *h = getenv("EZFS_FAULT_HOLD_MS");
		int i, n = h && *h ? atoi(h) / 10 : 1000;

		kill(getpid(), a[3] == 'i' ? SIGINT : SIGTERM);
		/* hold this file's reader until the signal has done its work
		 * (10 s at most, or EZFS_FAULT_HOLD_MS), so the build cannot
		 * finish first */
		for (i = 0; i < n; i++)
			usleep(10000);
	}
	return fd;
}

static int no_tmpfile(int flags)
{
	const char *e = getenv("EZFS_FAULT_NOTMPFILE");

	if ((flags & O_TMPFILE) == O_TMPFILE && e && *e == '1') {
		errno = EOPNOTSUPP;
		return 1;
	}
	return 0;
}

typedef int (*openat_fn)(int, const char *, int, ...);

static int do_openat(const char *sym, int dirfd, const char *path, int flags,
		     mode_t mode)
{
	openat_fn real = (openat_fn)dlsym(RTLD_NEXT, sym);
	int m, fd;

	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	if (no_tmpfile(flags))
		return -1;
	m = match(path);
	if (m)
		act(path, 1, -1);
	fd = real(dirfd, path, flags, mode);
	return m ? act(path, 0, fd) : fd;
}

#define MODE_ARG(flags, mode)                                                  \
	do {                                                                   \
		if ((flags) & (O_CREAT | __O_TMPFILE)) {                       \
			va_list ap;                                            \
			va_start(ap, flags);                                   \
			mode = (mode_t)va_arg(ap, int);                        \
			va_end(ap);                                            \
		}                                                              \
	} while (0)

int open(const char *path, int flags, ...);
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int close(int fd);
int open64(const char *path, int flags, ...);
int openat(int dirfd, const char *path, int flags, ...);
int openat64(int dirfd, const char *path, int flags, ...);
ssize_t read(int fd, void *buf, size_t n);
ssize_t pread(int fd, void *buf, size_t n, off_t off);
ssize_t pread64(int fd, void *buf, size_t n, off_t off);

int open(const char *path, int flags, ...)
{
	mode_t mode = 0;

	MODE_ARG(flags, mode);
	return do_openat("openat", AT_FDCWD, path, flags, mode);
}

int __open_2(const char *path, int flags)
{
	return do_openat("openat", AT_FDCWD, path, flags, 0);
}

int __open64_2(const char *path, int flags)
{
	return do_openat("openat", AT_FDCWD, path, flags, 0);
}

int close(int fd)
{
	int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "close");

	if (fd >= 0 && fd == eio_fd)
		eio_fd = -1;
	return real(fd);
}

int open64(const char *path, int flags, ...)
{
	mode_t mode = 0;

	MODE_ARG(flags, mode);
	return do_openat("openat", AT_FDCWD, path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;

	MODE_ARG(flags, mode);
	return do_openat("openat", dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;

	MODE_ARG(flags, mode);
	return do_openat("openat", dirfd, path, flags, mode);
}

typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);
typedef ssize_t (*read_fn)(int, void *, size_t);

/* Does a read of n bytes at off hit the fault? */
static int eio_hits(int fd, size_t n, off_t off)
{
	const char *r = getenv("EZFS_FAULT_RANGE");
	unsigned long long o, l;

	if (fd < 0 || fd != eio_fd || short_reads)
		return 0;
	if (!r || sscanf(r, "%llu,%llu", &o, &l) != 2)
		return 1;
	return (unsigned long long)off < o + l &&
	       (unsigned long long)off + n > o;
}

ssize_t read(int fd, void *buf, size_t n)
{
	read_fn real = (read_fn)dlsym(RTLD_NEXT, "read");

	if (eio_hits(fd, n, lseek(fd, 0, SEEK_CUR))) {
		errno = EIO;
		return -1;
	}
	return real(fd, buf, n);
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	pread_fn real = (pread_fn)dlsym(RTLD_NEXT, "pread");

	if (eio_hits(fd, n, off)) {
		errno = EIO;
		return -1;
	}
	if (fd >= 0 && fd == eio_fd && short_reads && n > 1)
		n = n / 2 + 1;
	return real(fd, buf, n, off);
}

ssize_t pread64(int fd, void *buf, size_t n, off_t off)
{
	return pread(fd, buf, n, off);
}

/* fsync and fdatasync: EIO when EZFS_FAULT_FSYNC=1, else the real one */
static int sync_call(const char *name, int fd)
{
	const char *e = getenv("EZFS_FAULT_FSYNC");
	int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, name);

	if (e && *e == '1') {
		errno = EIO;
		return -1;
	}
	return real(fd);
}

int fsync(int fd)
{
	return sync_call("fsync", fd);
}

int fdatasync(int fd)
{
	return sync_call("fdatasync", fd);
}
