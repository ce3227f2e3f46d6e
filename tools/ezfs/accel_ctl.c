/* SPDX-License-Identifier: MIT */
/*
 * accel_ctl.c - ezfs accel set|stats MOUNTPOINT: switch the engines of a
 * running ezfs mount, or read its counters, through the ioctls the daemon
 * serves on the mount root (include/ezfs/mount.h, lib/mount/ctl.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <ezfs/mount.h>

#include "accel.h"
#include "common.h"
#include "json.h"

/* Open the mount root and issue one control ioctl; prints errors. */
static int ctl_call(const char *mnt, unsigned long cmd, void *arg)
{
	int fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err;

	if (fd < 0) {
		cli_error("accel", "%s: %s", mnt, strerror(errno));
		return -1;
	}
	err = ioctl(fd, cmd, arg) < 0 ? errno : 0;
	close(fd);
	if (err == ENOTTY || err == EINVAL || err == ENOSYS)
		cli_error("accel", "%s: not the root of an ezfs mount (%s)",
			  mnt, strerror(err));
	else if (err == EPERM || err == EACCES)
		cli_error("accel",
			  "%s: only the user who mounted it or root "
			  "may switch its engines",
			  mnt);
	else if (err)
		cli_error("accel", "%s: %s", mnt, strerror(err));
	return err ? -1 : 0;
}

int accel_set(int argc, char **argv)
{
	enum { NO_STRICT = 0x200 };
	static const struct option opts[] = {
		{ "dispatch", required_argument, NULL, CLI_OPT_DISPATCH },
		{ "strict-accel", no_argument, NULL, CLI_OPT_STRICT_ACCEL },
		{ "no-strict-accel", no_argument, NULL, NO_STRICT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ezfs_ctl_set rq;
	const char *mnt, *spec = NULL;
	char why[256];
	int c, mode;

	memset(&rq, 0, sizeof(rq));
	rq.version = EZFS_CTL_VERSION;
	rq.dispatch = -1;
	rq.strict = -1;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case CLI_OPT_DISPATCH:
			mode = ezfs_dispatch_parse(optarg,
						   &rq.dispatch_threads);
			if (mode < 0)
				return cli_usage_error("accel",
						       "invalid "
						       "--dispatch '%s'",
						       optarg);
			rq.dispatch = mode;
			break;
		case CLI_OPT_STRICT_ACCEL:
			rq.strict = 1;
			break;
		case NO_STRICT:
			rq.strict = 0;
			break;
		default:
			return cli_opt_default("accel", c, argv, accel_usage);
		}
	}
	if (cli_nargs("accel", argc - optind, 1, 2, "missing MOUNTPOINT"))
		return 2;
	mnt = argv[optind];
	if (argc - optind == 2)
		spec = argv[optind + 1];
	if (!spec && rq.dispatch < 0 && rq.strict < 0)
		return cli_usage_error("accel",
				       "nothing to set: give a SPEC, "
				       "--dispatch or --[no-]strict-accel");
	if (spec) {
		if (!strcmp(spec, "default"))
			spec = "";
		if (strlen(spec) >= sizeof(rq.spec))
			return cli_usage_error("accel", "SPEC is too long");
		if (ezfs_accel_check_msg(spec, why, sizeof(why)))
			return cli_usage_error("accel", "invalid SPEC '%s': %s",
					       spec, why);
		rq.set_accel = 1;
		memcpy(rq.spec, spec, strlen(spec) + 1);
	}
	if (ctl_call(mnt, EZFS_IOC_SET, &rq))
		return 1;
	if (rq.result < 0) {
		rq.msg[sizeof(rq.msg) - 1] = '\0';
		cli_error("accel", "%s: %s", mnt, rq.msg);
		return 1;
	}
	return 0;
}

int accel_mount_stats(const char *mnt, int json)
{
	struct ezfs_engine_stats st[EZFS_CTL_ENGINES];
	struct ezfs_ctl_stats s;
	unsigned i;

	memset(&s, 0, sizeof(s));
	if (ctl_call(mnt, EZFS_IOC_STATS, &s))
		return 1;
	s.order[sizeof(s.order) - 1] = '\0';
	if (s.nengines > EZFS_CTL_ENGINES)
		s.nengines = EZFS_CTL_ENGINES;
	for (i = 0; i < s.nengines; i++) {
		s.engine[i].name[sizeof(s.engine[i].name) - 1] = '\0';
		st[i].name = s.engine[i].name;
		st[i].alg = (int)s.engine[i].alg;
		st[i].requests = s.engine[i].requests;
		st[i].bytes_out = s.engine[i].bytes_out;
		st[i].fallbacks = s.engine[i].fallbacks;
		st[i].errors = s.engine[i].errors;
	}
	if (json) {
		struct cj j;

		cj_init(&j, stdout);
		cj_obj(&j, NULL);
		cj_bytes(&j, "mount", mnt, strlen(mnt));
		cj_str(&j, "order", s.order);
		cj_obj(&j, "dispatch");
		cj_str(&j, "mode", ezfs_dispatch_name(s.dispatch));
		cj_u64(&j, "workers", s.workers);
		cj_u64(&j, "batches", s.batches);
		cj_bool(&j, "strict", s.strict);
		cj_end(&j);
		accel_json_counters(&j, st, (int)s.nengines);
		cj_obj(&j, "latency_us");
		cj_u64(&j, "total", s.lat_total);
		cj_dbl(&j, "avg", s.lat_avg);
		cj_dbl(&j, "median", s.lat_median);
		cj_dbl(&j, "max", s.lat_max);
		cj_end(&j);
		cj_obj(&j, "mount_reads");
		cj_u64(&j, "reads", s.reads);
		cj_u64(&j, "reads_direct", s.reads_direct);
		cj_u64(&j, "stored_bytes", s.stored_bytes);
		cj_u64(&j, "edge_pages", s.edge_pages);
		cj_u64(&j, "jobs_dropped", s.jobs_dropped);
		cj_end(&j);
		cj_obj(&j, "cache");
		cj_u64(&j, "hits", s.cache_hits);
		cj_u64(&j, "misses", s.cache_misses);
		cj_u64(&j, "evictions", s.cache_evictions);
		cj_u64(&j, "dropped", s.cache_dropped);
		cj_end(&j);
		cj_end(&j);
		return 0;
	}
	printf("order: %s\n", s.order);
	printf("dispatch %s, %u workers, %llu batches, strict %s\n",
	       ezfs_dispatch_name(s.dispatch), s.workers,
	       (unsigned long long)s.batches, s.strict ? "yes" : "no");
	accel_print_counters(st, (int)s.nengines);
	printf("latency (us, recent): avg %.1f median %.1f max %.1f, %llu "
	       "requests timed\n",
	       s.lat_avg, s.lat_median, s.lat_max,
	       (unsigned long long)s.lat_total);
	printf("mount: %llu reads (%llu from the pcluster cache without a "
	       "copy), %.1f MiB stored ahead, %llu edge pages joined, %llu "
	       "store jobs dropped\n",
	       (unsigned long long)s.reads, (unsigned long long)s.reads_direct,
	       (double)s.stored_bytes / (1 << 20),
	       (unsigned long long)s.edge_pages,
	       (unsigned long long)s.jobs_dropped);
	printf("cache: %llu hits, %llu misses, %llu evictions, %llu let go "
	       "once in the page cache\n",
	       (unsigned long long)s.cache_hits,
	       (unsigned long long)s.cache_misses,
	       (unsigned long long)s.cache_evictions,
	       (unsigned long long)s.cache_dropped);
	return 0;
}
