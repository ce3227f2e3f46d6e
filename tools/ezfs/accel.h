/* SPDX-License-Identifier: MIT */
/*
 * accel.h - the parts of ezfs accel (accel.c, accel_ctl.c, accel_bench.c)
 * and what they share (accel_util.c).
 */
#ifndef EZFS_TOOL_ACCEL_H
#define EZFS_TOOL_ACCEL_H

#include <stdbool.h>
#include <stdio.h>

#include <ezfs/engine.h>

/* Shared (accel_util.c). Usage of every accel subcommand. */
void accel_usage(FILE *f);
/* The counter table of ezfs accel stats (engines that served requests);
 * queue: with the in-flight and time columns (an image's, not a mount's). */
void accel_print_counters(const struct ezfs_engine_stats *st, int n,
			  bool queue);
struct cj;
/* The same as a JSON array "engines" (docs/schemas/accel-stats.json). */
void accel_json_counters(struct cj *j, const struct ezfs_engine_stats *st,
			 int n, bool queue);
/* Call fn(arg, nid) for each regular file of img; stops at non-zero. */
int accel_for_each_file(ezfs_image *img, int (*fn)(void *arg, uint64_t nid),
			void *arg);

/* ezfs accel set [...] MNT [SPEC]; argv[0] is "set". */
int accel_set(int argc, char **argv);
/* ezfs accel stats MNT: the counters of a running mount (json: as JSON). */
int accel_mount_stats(const char *mnt, int json);
/* ezfs accel bench [-n ITERS] [-s MIB] [IMG]; argv[0] is "bench". */
int accel_bench(int argc, char **argv);

#endif
