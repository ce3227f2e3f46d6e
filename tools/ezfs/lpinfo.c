/* SPDX-License-Identifier: MIT */
/* lpinfo.c - ezfs lpinfo: the dynamic partitions of an Android super image
 * (its LP metadata): block devices, groups, partitions and their extents. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ezfs/android.h"
#include "common.h"

int cmd_lpinfo(int argc, char **argv);

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ezfs lpinfo [-s SLOT] SUPER\n"
		"List the dynamic partitions of an Android super image (raw\n"
		"or sparse): name, attributes, group, size and extents.\n"
		"Read a partition with any command as SUPER:NAME.\n"
		"  -s, --slot N   the metadata slot to read (default 0)\n");
}

struct lp_log {
	char first[512];
};

static void log_cb(void *arg, int level, const char *msg)
{
	struct lp_log *l = arg;

	if (level == EZFS_LOG_ERROR && !l->first[0])
		snprintf(l->first, sizeof(l->first), "%s", msg);
	else if (level == EZFS_LOG_WARN)
		cli_error("lpinfo", "warning: %s", msg);
}

static void attr_string(uint32_t a, char *buf, size_t size)
{
	static const char *const names[] = { "readonly", "slot-suffixed",
					     "updated", "disabled" };
	size_t o = 0;
	unsigned i;

	buf[0] = '\0';
	for (i = 0; i < 4; i++)
		if (a & (1u << i))
			o += (size_t)snprintf(buf + o, size - o, "%s%s",
					      o ? "," : "", names[i]);
	if (a & ~0xfu)
		snprintf(buf + o, size - o, "%s0x%" PRIx32, o ? "," : "",
			 a & ~0xfu);
	if (!buf[0])
		snprintf(buf, size, "none");
}

static void print_extents(const ezfs_lp *lp, const struct ezfs_lp_partition *p)
{
	struct ezfs_lp_extent e;
	uint32_t j;

	if (!p->num_extents)
		printf("-");
	for (j = 0; j < p->num_extents; j++) {
		if (ezfs_lp_extent(lp, p->first_extent + j, &e))
			break;
		if (j)
			printf(" ");
		if (e.type == EZFS_LP_EXTENT_LINEAR)
			printf("linear:%" PRIu32 ":%" PRIu64 "+%" PRIu64,
			       e.source, e.target, e.sectors);
		else if (e.type == EZFS_LP_EXTENT_ZERO)
			printf("zero:%" PRIu64, e.sectors);
		else
			printf("type%" PRIu32 ":%" PRIu64, e.type, e.sectors);
	}
	printf("\n");
}

int cmd_lpinfo(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "slot", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ezfs_lp_params p;
	struct ezfs_lp_info info;
	struct lp_log lg = { { 0 } };
	const char *img;
	ezfs_lp *lp;
	uint32_t i;
	int c, err;

	ezfs_lp_params_init(&p);
	while ((c = getopt_long(argc, argv, ":s:h", opts, NULL)) != -1) {
		char *end;
		unsigned long v;

		switch (c) {
		case 's':
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || v > 64)
				return cli_usage_error("lpinfo",
						       "bad slot '%s'", optarg);
			p.slot = (unsigned)v;
			break;
		default:
			return cli_opt_default("lpinfo", c, argv, usage);
		}
	}
	err = cli_nargs("lpinfo", argc - optind, 1, 1, "missing SUPER");
	if (err)
		return err;
	img = argv[optind];
	p.log = log_cb;
	p.verbose = EZFS_LOG_WARN;
	p.log_arg = &lg;
	err = ezfs_lp_open(img, &p, &lp);
	if (err) {
		if (lg.first[0])
			cli_error("lpinfo", "%s: %s", img, lg.first);
		else
			cli_fail("lpinfo", img, NULL, err);
		return 1;
	}
	ezfs_lp_get_info(lp, &info);
	printf("super image: %s, %" PRIu64 " bytes", img, info.image_bytes);
	if (info.sparse_files)
		printf(" (sparse, %" PRIu32 " file%s)", info.sparse_files,
		       info.sparse_files > 1 ? "s" : "");
	printf("\nmetadata: version %u.%u, slot %" PRIu32 " of %" PRIu32
	       ", %" PRIu32 " bytes per copy, logical block %" PRIu32
	       " bytes, flags 0x%" PRIx32 "\n",
	       info.major, info.minor, info.slot, info.slot_count,
	       info.metadata_max_size, info.logical_block_size,
	       info.header_flags);
	printf("block devices:\n");
	for (i = 0; i < info.block_devices; i++) {
		struct ezfs_lp_block_device b;
		char *q;

		if (ezfs_lp_block_device(lp, i, &b))
			break;
		printf("  %" PRIu32 " %s: %" PRIu64 " bytes, first sector "
		       "%" PRIu64 ", alignment %" PRIu32 "+%" PRIu32 "%s\n",
		       i, cli_qname(b.name, &q), b.size, b.first_logical_sector,
		       b.alignment, b.alignment_offset,
		       b.flags & 1 ? ", slot-suffixed" : "");
		free(q);
	}
	printf("groups:\n");
	for (i = 0; i < info.groups; i++) {
		struct ezfs_lp_group g;
		char *q;

		if (ezfs_lp_group(lp, i, &g))
			break;
		printf("  %s: ", cli_qname(g.name, &q));
		free(q);
		if (g.maximum_size)
			printf("at most %" PRIu64 " bytes", g.maximum_size);
		else
			printf("no size limit");
		printf("%s\n", g.flags & 1 ? ", slot-suffixed" : "");
	}
	printf("partitions: %" PRIu32 "\n", info.partitions);
	printf("%-20s %-24s %-16s %12s  %s\n", "NAME", "ATTRIBUTES", "GROUP",
	       "SIZE", "EXTENTS (device:sector+count)");
	for (i = 0; i < info.partitions; i++) {
		struct ezfs_lp_partition pt;
		char attrs[96], *q1, *q2;

		if (ezfs_lp_partition(lp, i, &pt))
			break;
		attr_string(pt.attributes, attrs, sizeof(attrs));
		printf("%-20s %-24s %-16s %12" PRIu64 "  ",
		       cli_qname(pt.name, &q1), attrs, cli_qname(pt.group, &q2),
		       pt.size);
		free(q1);
		free(q2);
		print_extents(lp, &pt);
	}
	ezfs_lp_close(lp);
	return 0;
}
