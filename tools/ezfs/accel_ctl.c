/* SPDX-License-Identifier: MIT */
/*
 * accel_ctl.c - ezfs accel set|stats MOUNTPOINT: switch the engines of a
 * running ezfs mount, or read its counters (and those of a remote image's
 * source), through the ioctls the daemon serves on the mount root
 * (include/ezfs/mount.h, lib/mount/ctl.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
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

/* The remote source's counters (r->present 0: the image is local, or a
 * daemon older than EZFS_IOC_REMOTE answered ENOTTY: no remote part). */
static void remote_get(const char *mnt, struct ezfs_ctl_remote *r)
{
	int fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	memset(r, 0, sizeof(*r));
	if (fd < 0)
		return;
	if (ioctl(fd, EZFS_IOC_REMOTE, r) < 0)
		memset(r, 0, sizeof(*r));
	close(fd);
}

static double hit_rate(const struct ezfs_ctl_remote *r)
{
	return r->reads ? (double)r->reads_hit / (double)r->reads : NAN;
}

static void remote_json(struct cj *j, const struct ezfs_ctl_remote *r)
{
	if (!r->present) {
		cj_null(j, "remote");
		return;
	}
	cj_obj(j, "remote");
	cj_u64(j, "requests", r->requests);
	cj_u64(j, "retries", r->retries);
	cj_u64(j, "rounds", r->rounds);
	cj_u64(j, "bytes_fetched", r->bytes_fetched);
	cj_u64(j, "bytes_read", r->bytes_read);
	cj_u64(j, "reads", r->reads);
	cj_u64(j, "reads_hit", r->reads_hit);
	cj_dbl(j, "hit_rate", hit_rate(r));
	cj_u64(j, "redirects", r->redirects);
	cj_u64(j, "cache_bytes", r->cache_bytes);
	cj_u64(j, "size", r->size);
	cj_obj(j, "fetch_us");
	cj_u64(j, "p50", r->fetch_us_p50);
	cj_u64(j, "p99", r->fetch_us_p99);
	cj_end(j);
	cj_u64(j, "hints", r->hints);
	cj_u64(j, "hints_fetched", r->hints_fetched);
	cj_u64(j, "bytes_hinted", r->bytes_hinted);
	cj_end(j);
}

static void remote_print(const struct ezfs_ctl_remote *r)
{
	if (!r->present)
		return;
	printf("remote: %llu requests (%llu retries, %llu round trips), "
	       "%llu bytes fetched, %llu read\n",
	       (unsigned long long)r->requests, (unsigned long long)r->retries,
	       (unsigned long long)r->rounds,
	       (unsigned long long)r->bytes_fetched,
	       (unsigned long long)r->bytes_read);
	printf("remote: %llu reads, %llu without a request (hit rate %.1f%%), "
	       "fetch latency p50 %llu us, p99 %llu us\n",
	       (unsigned long long)r->reads, (unsigned long long)r->reads_hit,
	       r->reads ? 100.0 * hit_rate(r) : 0.0,
	       (unsigned long long)r->fetch_us_p50,
	       (unsigned long long)r->fetch_us_p99);
	printf("remote: %llu of %llu bytes cached, %llu redirects, %llu hints "
	       "(%llu fetched %llu bytes)\n",
	       (unsigned long long)r->cache_bytes, (unsigned long long)r->size,
	       (unsigned long long)r->redirects, (unsigned long long)r->hints,
	       (unsigned long long)r->hints_fetched,
	       (unsigned long long)r->bytes_hinted);
}

int accel_mount_stats(const char *mnt, int json)
{
	struct ezfs_engine_stats st[EZFS_CTL_ENGINES];
	struct ezfs_ctl_remote r;
	struct ezfs_ctl_stats s;
	unsigned i;

	memset(&s, 0, sizeof(s));
	memset(st, 0, sizeof(st));
	if (ctl_call(mnt, EZFS_IOC_STATS, &s))
		return 1;
	remote_get(mnt, &r);
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
		accel_json_counters(&j, st, (int)s.nengines, false);
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
		remote_json(&j, &r);
		cj_end(&j);
		return 0;
	}
	printf("order: %s\n", s.order);
	printf("dispatch %s, %u workers, %llu batches, strict %s\n",
	       ezfs_dispatch_name(s.dispatch), s.workers,
	       (unsigned long long)s.batches, s.strict ? "yes" : "no");
	accel_print_counters(st, (int)s.nengines, false);
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
	remote_print(&r);
	return 0;
}
