/* SPDX-License-Identifier: MIT */
/*
 * bench/params.c - the bench's parameters: their defaults, and each one
 * set from its text as ezfs bench's options give it (lists of sizes,
 * algorithms, levels, dispatch modes; sizes, rates, times).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ezfs/engine.h"
#include "bench/internal.h"

/* "4K", "1M", "65536", "1.5G" -> bytes; 0 on error. */
static uint64_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v <= 0)
		return 0;
	switch (*end) {
	case 'k':
	case 'K':
		v *= 1024;
		end++;
		break;
	case 'm':
	case 'M':
		v *= 1024 * 1024;
		end++;
		break;
	case 'g':
	case 'G':
		v *= 1024.0 * 1024 * 1024;
		end++;
		break;
	default:
		break;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B')
		end++;
	return *end ? 0 : (uint64_t)v;
}

static int parse_clusters(const char *s, uint32_t *out, int *n)
{
	char *dup = strdup(s), *tok, *save = NULL;
	int err = 0;

	if (!dup)
		return -ENOMEM;
	*n = 0;
	for (tok = strtok_r(dup, ", ", &save); tok;
	     tok = strtok_r(NULL, ", ", &save)) {
		uint64_t v = parse_size(tok);

		if (!v || v > (1u << 20) || (v & (v - 1)) || v < 4096 ||
		    *n >= EZFS_BENCH_MAX_CLUSTERS) {
			err = -EINVAL;
			break;
		}
		out[(*n)++] = (uint32_t)v;
	}
	free(dup);
	return err ? err : (*n ? 0 : -EINVAL);
}

static int parse_algs(const char *s, struct ezfs_bench_alg *out, int *n)
{
	char *dup = strdup(s), *tok, *save = NULL;
	int err = 0;

	if (!dup)
		return -ENOMEM;
	*n = 0;
	for (tok = strtok_r(dup, ", ", &save); tok && !err;
	     tok = strtok_r(NULL, ", ", &save)) {
		if (*n >= EZFS_BENCH_MAX_ALGS)
			err = -EINVAL;
		else
			err = ezfs_bench_parse_alg(tok, &out[(*n)++]);
	}
	free(dup);
	return err ? err : (*n ? 0 : -EINVAL);
}

/* "lz4hc:1,9,12 deflate:1,6,9 zstd lzma:6" (also ';' between groups). */
static int parse_levels(const char *s, struct ezfs_bench_alg *out, int *n)
{
	char *dup = strdup(s), *grp, *save = NULL;
	int err = 0;

	if (!dup)
		return -ENOMEM;
	*n = 0;
	for (grp = strtok_r(dup, " ;", &save); grp && !err;
	     grp = strtok_r(NULL, " ;", &save)) {
		char *colon = strchr(grp, ':'), *lv, *s2 = NULL, one[48];

		if (colon)
			*colon = '\0';
		if (!colon) {
			if (*n >= EZFS_BENCH_MAX_ALGS)
				err = -EINVAL;
			else
				err = ezfs_bench_parse_alg(grp, &out[(*n)++]);
			continue;
		}
		for (lv = strtok_r(colon + 1, ",", &s2); lv && !err;
		     lv = strtok_r(NULL, ",", &s2)) {
			snprintf(one, sizeof(one), "%s:%s", grp, lv);
			if (*n >= EZFS_BENCH_MAX_ALGS)
				err = -EINVAL;
			else
				err = ezfs_bench_parse_alg(one, &out[(*n)++]);
		}
	}
	free(dup);
	return err ? err : (*n ? 0 : -EINVAL);
}

/* "inline,queue:4,percpu" -> p->disp[]. */
static int parse_dispatch(const char *s, struct ezfs_bench_params *p)
{
	char *dup = strdup(s), *tok, *save = NULL;
	int err = 0;

	if (!dup)
		return -ENOMEM;
	p->ndisp = 0;
	for (tok = strtok_r(dup, ", ", &save); tok && !err;
	     tok = strtok_r(NULL, ", ", &save)) {
		struct ezfs_bench_disp *d = &p->disp[p->ndisp];

		if (p->ndisp >= EZFS_BENCH_MAX_DISP ||
		    strlen(tok) >= sizeof(d->name)) {
			err = -EINVAL;
			break;
		}
		d->mode = ezfs_dispatch_parse(tok, &d->nthreads);
		if (d->mode < 0)
			err = -EINVAL;
		snprintf(d->name, sizeof(d->name), "%s", tok);
		p->ndisp++;
	}
	free(dup);
	return err ? err : (p->ndisp ? 0 : -EINVAL);
}

/* "none,busy" -> p->loads[]. */
static int parse_loads(const char *s, struct ezfs_bench_params *p)
{
	static const char *const names[] = { "none", "busy" };
	char *dup = strdup(s), *tok, *save = NULL;
	int err = 0, l;

	if (!dup)
		return -ENOMEM;
	p->nloads = 0;
	for (tok = strtok_r(dup, ", ", &save); tok && !err;
	     tok = strtok_r(NULL, ", ", &save)) {
		for (l = 0; l < EZFS_BENCH_NLOADS; l++)
			if (!strcmp(tok, names[l]))
				break;
		if (l == EZFS_BENCH_NLOADS || p->nloads >= EZFS_BENCH_NLOADS)
			err = -EINVAL;
		else
			p->loads[p->nloads++] = l;
	}
	free(dup);
	return err ? err : (p->nloads ? 0 : -EINVAL);
}

/* Every name of the --engines list must be an engine (or "default"). */
static int check_engines(const char *list)
{
	char *dup = strdup(list), *tok, *save = NULL;
	struct ezfs_engine_info info;
	int err = 0, n = 0;
	unsigned i;

	if (!dup)
		return -ENOMEM;
	for (tok = strtok_r(dup, ", ", &save); tok && !err;
	     tok = strtok_r(NULL, ", ", &save), n++) {
		for (i = 0; !ezfs_engine_get_info(i, &info); i++)
			if (!strcmp(info.name, tok))
				break;
		if (strcmp(tok, "default") && ezfs_engine_get_info(i, &info))
			err = -EINVAL;
	}
	free(dup);
	return err ? err : (n ? 0 : -EINVAL);
}

/* "50", "50M", "50MB/s", "1.5G" -> MB/s (10^6 bytes); -1 on error. */
static double parse_rate(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || !(v > 0))
		return -1;
	if (*end == 'k' || *end == 'K')
		v /= 1000, end++;
	else if (*end == 'M')
		end++;
	else if (*end == 'G')
		v *= 1000, end++;
	if (!strcmp(end, "B/s") || !strcmp(end, "/s"))
		end += strlen(end);
	return *end ? -1 : v;
}

/* "20ms", "150us", "0.02s", "0" -> seconds; -1 on error. */
static double parse_time(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v < 0)
		return -1;
	if (!strcmp(end, "s"))
		return v;
	if (!strcmp(end, "ms"))
		return v / 1e3;
	if (!strcmp(end, "us"))
		return v / 1e6;
	if (!strcmp(end, "ns"))
		return v / 1e9;
	return !*end && v == 0 ? 0 : -1;
}

/* "4K" -> *v (at most max, or "0" with zero_ok): 0 or -EINVAL. */
static int size_arg(const char *s, uint64_t max, int zero_ok, uint64_t *v)
{
	*v = zero_ok && !strcmp(s, "0") ? 0 : parse_size(s);
	return (!*v && !(zero_ok && !strcmp(s, "0"))) || *v > max ? -EINVAL : 0;
}

static int set_one(struct ezfs_bench_params *p, const char *name, const char *v,
		   const char **why)
{
	uint32_t one[EZFS_BENCH_MAX_CLUSTERS];
	uint64_t u;
	double d;
	char *end;
	int n;

#define IS(s)  !strcmp(name, s)
#define WHY(s) (*why = (s), -EINVAL)
	if (IS("path") || IS("accel") || IS("storage")) {
		if (!*v)
			return WHY("a path, a spec or a profile");
		if (IS("path"))
			p->path = v;
		else if (IS("accel"))
			p->accel = v;
		else
			p->storage = v;
	} else if (IS("no-drop") || IS("strict-accel")) {
		*(IS("no-drop") ? &p->no_drop : &p->strict_accel) = 1;
	} else if (IS("engines")) {
		if (check_engines(v))
			return WHY("engine names (ezfs accel list) or default, "
				   "comma-separated");
		p->engines = v;
	} else if (IS("dispatch")) {
		if (parse_dispatch(v, p))
			return WHY("inline, queue[:N] or percpu, "
				   "comma-separated");
		p->disp_given = 1;
	} else if (IS("load")) {
		if (parse_loads(v, p))
			return WHY("none, busy");
	} else if (IS("window")) {
		if (size_arg(v, 1ull << 30, 1, &p->window))
			return WHY("a size up to 1G, or 0");
	} else if (IS("goal")) {
		if (strcmp(v, "size") && strcmp(v, "seq") &&
		    strcmp(v, "random") && strcmp(v, "balanced"))
			return WHY("size, seq, random or balanced");
		p->goal = v;
	} else if (IS("clusters")) {
		if (parse_clusters(v, p->clusters, &p->nclusters))
			return WHY("powers of two, 4K..1M");
		p->clusters_given = 1;
	} else if (IS("cluster")) {
		if (parse_clusters(v, one, &n) || n != 1)
			return WHY("a power of two, 4K..1M");
		p->cluster = one[0];
	} else if (IS("algs")) {
		if (parse_algs(v, p->algs, &p->nalgs))
			return WHY("lz4,lz4hc,lzma,deflate,zstd[:LEVEL]");
	} else if (IS("levels")) {
		if (parse_levels(v, p->levels, &p->nlevels))
			return WHY("e.g. \"zstd:3,9 lzma:6\"");
		p->levels_given = 1;
	} else if (IS("bs")) {
		if (size_arg(v, 64u << 20, 0, &u))
			return WHY("a size");
		p->bs = (uint32_t)u;
	} else if (IS("size")) {
		if (size_arg(v, UINT64_MAX, 0, &p->max_sample))
			return WHY("a size");
	} else if (IS("io-share")) {
		d = strtod(v, &end) / 100;
		if (*end == '%')
			end++;
		if (end == v || *end || !(d > 0) || d > 1)
			return WHY("a percentage, 0..100");
		p->io_share = d;
	} else if (IS("runtime")) {
		d = strtod(v, &end);
		if (end == v || *end || !(d > 0))
			return WHY("seconds > 0");
		p->runtime = d;
	} else if (IS("repeat")) {
		n = (int)strtol(v, &end, 10);
		if (end == v || *end || n < 1 || n > 100)
			return WHY("1..100");
		p->repeat = n;
	} else if (IS("storage-rate")) {
		d = parse_rate(v);
		if (d <= 0)
			return WHY("MB/s > 0, e.g. 50 or 1.5G");
		p->storage_rate = d * 1e6;
	} else if (IS("storage-latency")) {
		d = parse_time(v);
		if (d < 0 || d > 60)
			return WHY("a time up to 60s with its unit, e.g. 20ms "
				   "or 150us");
		p->storage_lat = d;
	} else if (IS("reader")) {
		if (strcmp(v, "kernel") && strcmp(v, "remote"))
			return WHY("kernel or remote");
		p->reader = !strcmp(v, "kernel") ? EZFS_BENCH_READER_KERNEL
						 : EZFS_BENCH_READER_REMOTE;
	} else {
		*why = "no such parameter";
		return -ENOENT;
	}
#undef IS
#undef WHY
	return 0;
}

int ezfs_bench_params_set(struct ezfs_bench_params *p, const char *name,
			  const char *value, const char **why)
{
	const char *dummy;

	if (!why)
		why = &dummy;
	*why = "";
	return set_one(p, name, value ? value : "", why);
}

void ezfs_bench_params_init(struct ezfs_bench_params *p)
{
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
	p->modes = EZFS_BENCH_READ;
	p->max_sample = 64ull << 20;
	parse_clusters("4K,16K,64K,256K,1M", p->clusters, &p->nclusters);
	parse_algs("lz4hc,deflate,zstd", p->algs, &p->nalgs);
	parse_levels("lz4hc:1,9,12 deflate:1,6,9 zstd:3,9,12 lzma:6", p->levels,
		     &p->nlevels);
	parse_dispatch("inline,queue,percpu", p);
	parse_loads("none,busy", p);
	p->bs = 4096;
	p->io_share = 0.05;
	p->window = 16ull << 20;
	p->seed = 1;
	p->cluster = 16384;
	p->runtime = 3;
	p->repeat = 1;
	p->goal = "balanced";
	p->storage_rate = -1;
	p->storage_lat = -1;
}
