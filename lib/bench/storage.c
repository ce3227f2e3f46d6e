/* SPDX-License-Identifier: MIT */
/*
 * bench/storage.c - the storage an image will be read from, for the
 * advisor: a profile of typical figures, or a file, device or directory
 * measured here, then the rate and latency the caller gave.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/advise.h"

static const struct profile {
	const char *name;
	double mb_s, lat_s;
	int reader;
	const char *what;
} profiles[] = {
	{ "cloud-hdd", 60, 8e-3, EZFS_BENCH_READER_KERNEL,
	  "a throughput-class cloud HDD volume (st1, pd-standard)" },
	{ "cloud-ssd", 250, 1e-3, EZFS_BENCH_READER_KERNEL,
	  "a general-purpose cloud SSD volume (gp3)" },
	{ "nvme", 3000, 80e-6, EZFS_BENCH_READER_KERNEL, "a local NVMe SSD" },
	{ "emmc", 250, 400e-6, EZFS_BENCH_READER_KERNEL,
	  "eMMC 5.1 flash of a phone or board" },
	{ "registry-20ms", 100, 20e-3, EZFS_BENCH_READER_REMOTE,
	  "an OCI registry or HTTP server 20 ms away, 100 MB/s" },
};

const char *ezi_adv_reader_name(int reader)
{
	return reader == EZFS_BENCH_READER_REMOTE ? "remote" : "kernel";
}

/* The largest regular file under the directory open as dfd into path. */
static void find_big(int dfd, const char *dir, char *path, size_t size,
		     uint64_t *big, unsigned depth)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;

	if (!d) {
		close(dfd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat sb;
		char sub[4096];
		int fd;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		if (S_ISREG(sb.st_mode) && (uint64_t)sb.st_size > *big) {
			*big = (uint64_t)sb.st_size;
			snprintf(path, size, "%s", sub);
		} else if (S_ISDIR(sb.st_mode) && depth < 32) {
			fd = openat(dirfd(d), de->d_name,
				    O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					    O_CLOEXEC);
			if (fd >= 0)
				find_big(fd, sub, path, size, big, depth + 1);
		}
	}
	closedir(d);
}

/*
 * Measure where: a file, a block device, or the largest file under a
 * directory. Sequential 1 MiB reads (up to 256 MiB or 3 s) give the rate,
 * random 4 KiB reads (up to 256 or 1 s) the latency: O_DIRECT where the
 * filesystem has it, else after dropping the file's cached pages.
 */
static int measure(const char *where, struct adv_storage *st)
{
	const size_t chunk = 1 << 20;
	uint64_t limit = 256ull << 20, done = 0, size = 0, x = 1;
	double t0, t, lat[256];
	char path[4096] = "";
	void *buf = NULL;
	struct stat sb;
	int fd, direct = 1;
	size_t nlat = 0;

	if (stat(where, &sb))
		return -errno;
	if (S_ISDIR(sb.st_mode)) {
		fd = open(where, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0)
			find_big(fd, where, path, sizeof(path), &size, 0);
	} else if (S_ISREG(sb.st_mode) || S_ISBLK(sb.st_mode)) {
		snprintf(path, sizeof(path), "%s", where);
		size = (uint64_t)sb.st_size;
	} else {
		return -EINVAL;
	}
	if (!path[0])
		return -ENOENT;
	fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (fd < 0) {
		direct = 0;
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
	}
	if (S_ISBLK(sb.st_mode) && ioctl(fd, BLKGETSIZE64, &size))
		size = 0;
	if (size < 4096 || posix_memalign(&buf, 4096, chunk)) {
		close(fd);
		return size < 4096 ? -ENODATA : -ENOMEM;
	}
	if (!direct)
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	t0 = ezi_bench_now();
	while (done < limit && ezi_bench_now() - t0 < 3) {
		ssize_t n = read(fd, buf, chunk);

		if (n < 0 && direct && errno == EINVAL) {
			/* a filesystem without O_DIRECT (tmpfs...) */
			direct = 0;
			fcntl(fd, F_SETFL, 0);
			continue;
		}
		if (n <= 0)
			break;
		done += (uint64_t)n;
	}
	t = ezi_bench_now() - t0;
	if (!direct)
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	t0 = ezi_bench_now();
	while (nlat < 256 && ezi_bench_now() - t0 < 1) {
		uint64_t blk;
		double a;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		blk = x % (size / 4096);
		a = ezi_bench_now();
		if (pread(fd, buf, 4096, (off_t)(blk * 4096)) != 4096)
			break;
		lat[nlat++] = ezi_bench_now() - a;
	}
	close(fd);
	free(buf);
	if (!done || t <= 0 || !nlat)
		return -EIO;
	st->rate = done / t;
	st->lat = ezi_bench_median(lat, nlat);
	snprintf(st->what, sizeof(st->what),
		 "measured on %.200s: %.0f MiB in %.2f s, %zu random 4 KiB "
		 "reads%s",
		 path, done / ADV_MIB, t, nlat,
		 direct ? " (O_DIRECT)"
			: " (buffered: the page cache may have served some)");
	st->rough = done < (64ull << 20);
	return 0;
}

static void append(struct adv_storage *st, const char *s)
{
	size_t l = strlen(st->what);

	snprintf(st->what + l, sizeof(st->what) - l, "%s", s);
}

int ezi_adv_storage(ezfs_bench *b, struct adv_storage *st)
{
	const struct ezfs_bench_params *p = &b->p;
	const char *where = p->storage ? p->storage : b->source;
	size_t i;
	int err;

	memset(st, 0, sizeof(*st));
	st->reader = EZFS_BENCH_READER_KERNEL;
	for (i = 0; p->storage && i < sizeof(profiles) / sizeof(profiles[0]);
	     i++) {
		if (strcmp(p->storage, profiles[i].name))
			continue;
		st->rate = profiles[i].mb_s * 1e6;
		st->lat = profiles[i].lat_s;
		st->reader = profiles[i].reader;
		snprintf(st->what, sizeof(st->what), "profile %s: %s",
			 profiles[i].name, profiles[i].what);
		where = NULL;
		break;
	}
	/* both figures given: nothing to measure */
	if (where && !(p->storage_rate > 0 && p->storage_lat >= 0)) {
		err = measure(where, st);
		if (err) {
			ezi_bench_log(
				b, EZFS_LOG_ERROR, "storage %s: %s", where,
				err == -ENOENT ? "no file to measure"
				: err == -EINVAL
					? "not a file, device, directory or "
					  "profile (cloud-hdd, cloud-ssd, "
					  "nvme, emmc, registry-20ms)"
					: strerror(-err));
			return err;
		}
		if (st->rough && p->storage_rate <= 0)
			ezi_bench_log(b, EZFS_LOG_INFO,
				      "storage: under 64 MiB read, the rate "
				      "is rough");
	} else if (where) {
		snprintf(st->what, sizeof(st->what), "as given");
	}
	if (p->storage_rate > 0) {
		st->rate = p->storage_rate;
		append(st, "; rate as given");
	}
	if (p->storage_lat >= 0) {
		st->lat = p->storage_lat;
		append(st, "; latency as given");
	}
	if (p->reader != EZFS_BENCH_READER_AUTO)
		st->reader = p->reader;
	return 0;
}
