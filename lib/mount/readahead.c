/* SPDX-License-Identifier: MIT */
/*
 * readahead.c - the kernel's readahead window for the mount
 * (/sys/class/bdi/MAJ:MIN/read_ahead_kb of the FUSE connection).
 *
 * The kernel's readahead requests, spread over the FUSE workers, carry a
 * sequential reader's pages (the helpers only decode ahead of them, see
 * prefetch.c), so the window decides how many run in parallel: 1 MiB read
 * deflate at 64 KiB pclusters at 750-790 MiB/s against 480-530 with the
 * kernel's 128 KiB.
 *
 * The kernel takes a file's window from the device when the file is
 * opened, after the FUSE open request, and lowers the device's window to
 * the daemon's max_readahead when FUSE's INIT is answered: the window is
 * set at the first open. Only root may write the sysfs file; without it
 * the kernel's window stays.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define RA_AUTO_KB 1024

/* The major:minor of the mount at path, from /proc/self/mountinfo. */
static int mount_dev(const char *path, unsigned *maj, unsigned *min)
{
	char line[4096], mnt[4096], *o;
	const char *i;
	unsigned a, b;
	int found = -ENOENT;
	FILE *fp = fopen("/proc/self/mountinfo", "re");

	if (!fp)
		return -errno;
	while (fgets(line, sizeof(line), fp)) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT ... (\ooo escapes) */
		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &a, &b, mnt) != 3)
			continue;
		for (i = o = mnt; *i; o++) {
			if (i[0] == '\\' && i[1] >= '0' && i[1] <= '3' &&
			    i[2] >= '0' && i[2] <= '7' && i[3] >= '0' &&
			    i[3] <= '7') {
				*o = (char)((i[1] - '0') << 6 |
					    (i[2] - '0') << 3 | (i[3] - '0'));
				i += 4;
			} else {
				*o = *i++;
			}
		}
		*o = '\0';
		if (!strcmp(mnt, path)) { /* the last one is on top */
			*maj = a;
			*min = b;
			found = 0;
		}
	}
	fclose(fp);
	return found;
}

void ezi_ra_init(struct ezfs_mount *m)
{
	char path[64], buf[32];
	unsigned maj, min;
	ssize_t n;

	m->ra_fd = -1;
	if (!m->p.readahead_kb || mount_dev(m->mountpoint, &maj, &min))
		return;
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", maj,
		 min);
	m->ra_fd = open(path, O_RDWR | O_CLOEXEC);
	if (m->ra_fd < 0)
		return;
	n = pread(m->ra_fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	m->ra_cur_kb = (uint32_t)strtoul(buf, NULL, 10);
}

void ezi_ra_set(struct ezfs_mount *m, uint32_t kb)
{
	char buf[32];
	int n;

	if (m->ra_fd < 0 ||
	    __atomic_exchange_n(&m->ra_cur_kb, kb, __ATOMIC_RELAXED) == kb)
		return;
	n = snprintf(buf, sizeof(buf), "%u\n", kb);
	if (pwrite(m->ra_fd, buf, (size_t)n, 0) != n)
		ezi_mnt_log(m, EZFS_LOG_WARN,
			    "cannot set the readahead window "
			    "to %u KiB: %s",
			    kb, strerror(errno));
}

/* The window is set when a file is opened, not when mounting: the kernel
 * lowers it to the daemon's max_readahead when FUSE's INIT is answered. */
void ezi_ra_open(struct ezfs_mount *m, const struct mfile *f)
{
	(void)f;
	if (m->p.readahead_kb)
		ezi_ra_set(m, m->p.readahead_kb > 0
				      ? (uint32_t)m->p.readahead_kb
				      : RA_AUTO_KB);
}

void ezi_ra_fini(struct ezfs_mount *m)
{
	if (m->ra_fd >= 0)
		close(m->ra_fd);
	m->ra_fd = -1;
}
