/* SPDX-License-Identifier: MIT */
/*
 * bench/fmt.c - algorithm settings and cluster sizes: parsed and named.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench/internal.h"

const char *ezi_bench_fmt_cluster(uint32_t c, char *buf, size_t size)
{
	if (c >= (1u << 20) && !(c % (1u << 20)))
		snprintf(buf, size, "%uM", c >> 20);
	else if (c >= 1024 && !(c % 1024))
		snprintf(buf, size, "%uK", c >> 10);
	else
		snprintf(buf, size, "%u", c);
	return buf;
}

int ezfs_bench_parse_alg(const char *s, struct ezfs_bench_alg *a)
{
	static const struct {
		const char *name;
		int alg, hc;
	} t[] = {
		{ "lz4", EZFS_ALG_LZ4, 0 },
		{ "lz4hc", EZFS_ALG_LZ4, 1 },
		{ "lzma", EZFS_ALG_LZMA, 0 },
		{ "deflate", EZFS_ALG_DEFLATE, 0 },
		{ "libdeflate", EZFS_ALG_DEFLATE, 1 },
		{ "zstd", EZFS_ALG_ZSTD, 0 },
	};
	const char *colon = strchr(s, ':');
	size_t n = colon ? (size_t)(colon - s) : strlen(s), i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (strlen(t[i].name) != n || strncmp(s, t[i].name, n))
			continue;
		memset(a, 0, sizeof(*a));
		snprintf(a->name, sizeof(a->name), "%s", t[i].name);
		a->alg = t[i].alg;
		a->hc = t[i].hc;
		a->level = -1;
		if (colon) {
			char *end;
			long l = strtol(colon + 1, &end, 10);

			if (end == colon + 1 || *end || l < 0 || l > 200)
				return -EINVAL;
			a->level = (int)l;
		}
		return 0;
	}
	return -EINVAL;
}

void ezi_bench_alg_label(const struct ezfs_bench_alg *a, char *buf, size_t size)
{
	if (a->level >= 0)
		snprintf(buf, size, "%s-%d", a->name, a->level);
	else
		snprintf(buf, size, "%s", a->name);
}
