/* SPDX-License-Identifier: MIT */
/*
 * accel_util.c - ezfs accel: what its subcommands share (accel.c,
 * accel_ctl.c, accel_bench.c): the usage text, the counter table, the walk
 * over an image's regular files.
 */
#include <stdio.h>

#include <ezfs/engine.h>
#include <ezfs/ezfs.h>

#include "accel.h"
#include "common.h"
#include "json.h"

void accel_usage(FILE *f)
{
	fprintf(f,
		"usage: ezfs accel list [--all] [--json]\n"
		"       ezfs accel stats [--accel SPEC] [--dispatch MODE] "
		"[--strict-accel] [--json] IMG\n"
		"       ezfs accel stats [--json] MOUNTPOINT\n"
		"       ezfs accel set [--dispatch MODE] "
		"[--[no-]strict-accel] MOUNTPOINT [SPEC]\n"
		"       ezfs accel bench [-e ENGINE] [-n ITERS] [-s MIB] [-r "
		"MIB] "
		"[IMG]\n"
		"       ezfs accel bench --qd N[,N..] [-e ENGINE] [-n ROUNDS] "
		"IMG\n"
		"  SPEC: ALG=ENG[,ENG..][;ALG=..] or ENG (first for its "
		"algorithm),\n"
		"        'default' for the default order (see 'ezfs accel "
		"list')\n"
		"  MODE: inline, queue[:N], percpu\n"
		"  bench: raw decode against reads through ezfs of a MIB "
		"sample (4)\n"
		"  (IMG's data or text) in -r MIB reads (4), per pcluster "
		"size\n"
		"  --qd: IMG's files through each usable engine with N whole "
		"extents\n"
		"  per read (N requests in flight on an asynchronous engine): "
		"MB/s,\n"
		"  CPU s/GB, in_flight_max\n"
		"  list --all also shows the test engines 'fail' and "
		"'async-test'\n"
		"  --json: list and stats as one JSON document "
		"(docs/json.md)\n"
		"  stats IMG reads every file and prints the engine counters;\n"
		"  stats/set MOUNTPOINT talk to a running 'ezfs mount' (set: "
		"its owner\n"
		"  or root). The environment sets the engines of every "
		"command:\n"
		"  EZFS_ACCEL, EZFS_DISPATCH, EZFS_STRICT_ACCEL=1.\n");
}

/*
 * Call fn(arg, nid) for each regular file under directory nid, depth first;
 * a non-zero return (or a read error) ends the walk with that value.
 */
struct files_walk {
	ezfs_image *img;
	int (*fn)(void *arg, uint64_t nid);
	void *arg;
};

static int files_dir(struct files_walk *fw, uint64_t nid);

static int files_ent(void *arg, const char *name, size_t namelen, uint64_t nid,
		     unsigned ftype, uint64_t next_pos)
{
	struct files_walk *fw = arg;

	if (cli_is_dots(name, namelen))
		return 0;
	if (ftype == EZFS_FT_DIR)
		return files_dir(fw, nid);
	if (ftype != EZFS_FT_REG)
		return 0;
	return fw->fn(fw->arg, nid);
}

static int files_dir(struct files_walk *fw, uint64_t nid)
{
	ezfs_inode *dir;
	int err = ezfs_inode_get(fw->img, nid, &dir);

	if (err)
		return err;
	err = ezfs_readdir(dir, 0, files_ent, fw);
	ezfs_inode_put(dir);
	return err;
}

int accel_for_each_file(ezfs_image *img, int (*fn)(void *arg, uint64_t nid),
			void *arg)
{
	struct files_walk fw = { .img = img, .fn = fn, .arg = arg };

	return files_dir(&fw, ezfs_root_nid(img));
}

void accel_print_counters(const struct ezfs_engine_stats *st, int n, bool queue)
{
	int i;

	printf("%-18s %-8s %10s %14s %10s %8s", "ENGINE", "ALG", "REQUESTS",
	       "BYTES_OUT", "FALLBACKS", "ERRORS");
	if (queue)
		printf(" %9s %13s %9s %9s", "IN_FLIGHT", "IN_FLIGHT_MAX",
		       "QUEUED_S", "SERVICE_S");
	printf("\n");
	for (i = 0; i < n; i++) {
		if (!st[i].requests)
			continue;
		printf("%-18s %-8s %10llu %14llu %10llu %8llu", st[i].name,
		       ezfs_alg_name(st[i].alg),
		       (unsigned long long)st[i].requests,
		       (unsigned long long)st[i].bytes_out,
		       (unsigned long long)st[i].fallbacks,
		       (unsigned long long)st[i].errors);
		if (queue)
			printf(" %9llu %13llu %9.3f %9.3f",
			       (unsigned long long)st[i].in_flight,
			       (unsigned long long)st[i].in_flight_max,
			       (double)st[i].queued_ns / 1e9,
			       (double)st[i].service_ns / 1e9);
		printf("\n");
	}
}

void accel_json_counters(struct cj *j, const struct ezfs_engine_stats *st,
			 int n, bool queue)
{
	cj_arr(j, "engines");
	for (int i = 0; i < n; i++) {
		if (!st[i].requests)
			continue;
		cj_obj(j, NULL);
		cj_str(j, "name", st[i].name);
		cj_str(j, "alg", ezfs_alg_name(st[i].alg));
		cj_u64(j, "requests", st[i].requests);
		cj_u64(j, "bytes_out", st[i].bytes_out);
		cj_u64(j, "fallbacks", st[i].fallbacks);
		cj_u64(j, "errors", st[i].errors);
		if (queue) {
			cj_u64(j, "in_flight", st[i].in_flight);
			cj_u64(j, "in_flight_max", st[i].in_flight_max);
			cj_dbl(j, "queued_s", (double)st[i].queued_ns / 1e9);
			cj_dbl(j, "service_s", (double)st[i].service_ns / 1e9);
		}
		cj_end(j);
	}
	cj_end(j);
}
