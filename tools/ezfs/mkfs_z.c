/* SPDX-License-Identifier: MIT */
/*
 * mkfs_z.c - compression options of `ezfs mkfs`: the -z list (the first
 * algorithm is the default, the others are picked by hints) and the
 * --compress-hints file, one rule a line:
 *	PCLUSTER_BYTES [ALG_INDEX] REGEX
 * matched in order against the path relative to the source root; blank
 * lines and lines starting with '#' are skipped.
 */
#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "mkfs_z.h"

/*
 * The algorithms and the levels their encoders take (lz4's fast mode has
 * none; lzma's 100..109 are the extreme presets; deflate's 10..12 go to
 * libdeflate).
 */
static const struct zname {
	const char *name, *range;
	int alg, hc, max;
} zalgs[] = {
	{ "lz4", "0", EZFS_ALG_LZ4, 0, 0 },
	{ "lz4hc", "0..12", EZFS_ALG_LZ4, 1, 12 },
	{ "lzma", "0..9, or 100..109 for extreme", EZFS_ALG_LZMA, 0, 109 },
	{ "deflate", "0..12", EZFS_ALG_DEFLATE, 0, 12 },
	{ "libdeflate", "0..12", EZFS_ALG_DEFLATE, 1, 12 },
	{ "zstd", "0..22", EZFS_ALG_ZSTD, 0, 22 },
};

static int level_ok(const struct zname *a, long l)
{
	if (a->alg == EZFS_ALG_LZMA)
		return l <= 9 || (l >= 100 && l <= 109);
	return l <= a->max;
}

/*
 * One "ALG[,level=N|,N]" item: 0, -EINVAL (not that form) or -ERANGE (a
 * level the algorithm has not; *a is the algorithm, *lvl the level's
 * digits).
 */
static int parse_one(const char *arg, size_t len, struct ezfs_build_zalg *z,
		     const struct zname **a, const char **lvl)
{
	const char *comma = memchr(arg, ',', len);
	size_t n = comma ? (size_t)(comma - arg) : len, i;

	for (i = 0; i < sizeof(zalgs) / sizeof(zalgs[0]); i++) {
		const char *lv, *end = arg + len;
		long l = 0;

		if (strlen(zalgs[i].name) != n ||
		    strncmp(arg, zalgs[i].name, n))
			continue;
		*a = &zalgs[i];
		z->alg = zalgs[i].alg;
		z->hc = zalgs[i].hc;
		/* mkfs.erofs' defaults: deflate and libdeflate at level 1,
		 * the others at their library's default */
		z->level = z->alg == EZFS_ALG_DEFLATE ? 1 : -1;
		if (!comma)
			return 0;
		lv = comma + 1;
		if ((size_t)(end - lv) > 6 && !strncmp(lv, "level=", 6))
			lv += 6;
		if (lv == end)
			return -EINVAL;
		*lvl = lv;
		for (; lv < end; lv++) {
			if (!isdigit((unsigned char)*lv))
				return -EINVAL;
			if (l < 1000000)
				l = l * 10 + (*lv - '0');
		}
		if (!level_ok(&zalgs[i], l))
			return -ERANGE;
		z->level = (int)l;
		return 0;
	}
	return -EINVAL;
}

int mkfs_z_parse(const char *cmd, const char *arg,
		 struct ezfs_build_params *p, struct mkfs_z *z)
{
	struct ezfs_build_zalg all[EZFS_BUILD_MAX_ZALGS];
	const char *s = arg;
	size_t n = 0;

	if (!strcmp(arg, "none")) {
		p->alg = -1;
		p->n_more_algs = 0;
		return 0;
	}
	for (;;) {
		const char *colon = strchr(s, ':');
		size_t len = colon ? (size_t)(colon - s) : strlen(s);

		if (n == EZFS_BUILD_MAX_ZALGS) {
			return cli_usage_error(cmd, "bad -z '%s': more than %d "
					       "algorithms", arg,
					       EZFS_BUILD_MAX_ZALGS);
		}
		const struct zname *a = NULL;
		const char *lvl = NULL;
		int err = parse_one(s, len, &all[n], &a, &lvl);

		if (err == -ERANGE)
			return cli_usage_error(cmd, "-z %s: level %.*s out of "
					       "range (%s)", a->name,
					       (int)(s + len - lvl), lvl,
					       a->range);
		if (err)
			return cli_usage_error(cmd, "bad -z '%s': '%.*s' is not "
					       "ALG[,level=N] (lz4, lz4hc, lzma, "
					       "deflate, libdeflate, zstd)",
					       arg, (int)len, s);
		n++;
		if (!colon)
			break;
		s = colon + 1;
	}
	p->alg = all[0].alg;
	p->hc = all[0].hc;
	p->level = all[0].level;
	memcpy(z->more, all + 1, (n - 1) * sizeof(all[0]));
	p->more_algs = z->more;
	p->n_more_algs = n - 1;
	return 0;
}

static void hint_free(struct ezfs_build_hint *h)
{
	free((char *)h->regex);
}

void mkfs_z_free(struct mkfs_z *z)
{
	size_t i;

	for (i = 0; i < z->nhints; i++)
		hint_free(&z->hints[i]);
	free(z->hints);
	z->hints = NULL;
	z->nhints = 0;
}

static int parse_num(const char *t, size_t len, unsigned long *v)
{
	size_t i;

	*v = 0;
	if (!len || len > 9)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		if (!isdigit((unsigned char)t[i]))
			return -EINVAL;
		*v = *v * 10 + (unsigned long)(t[i] - '0');
	}
	return 0;
}

/* Parse one rule (line without its newline) into h; NULL or a reason. */
static const char *parse_rule(char *line, const struct ezfs_build_params *p,
			      struct ezfs_build_hint *h)
{
	unsigned blksz = p->blksz ? p->blksz : 4096;
	unsigned nalgs = p->alg < 0 ? 0 : 1 + (unsigned)p->n_more_algs;
	size_t slen = strcspn(line, " \t"), alen, len;
	char *rest = line + slen, *after, *pat = NULL;
	unsigned long v, a = 0;
	regex_t re;

	rest += strspn(rest, " \t");
	alen = strcspn(rest, " \t");
	after = rest + alen + strspn(rest + alen, " \t");
	/* "SIZE INDEX REGEX" when there are three fields and the second is
	 * a number, else "SIZE REGEX" */
	if (!*after || parse_num(rest, alen, &a)) {
		a = 0;
		pat = rest;
	} else {
		pat = after;
	}
	len = strlen(pat);
	while (len && (pat[len - 1] == ' ' || pat[len - 1] == '\t'))
		pat[--len] = '\0';
	if (parse_num(line, slen, &v))
		return "the pcluster size is not a number";
	if (v % blksz || v > (1u << 20))
		return "the pcluster size is not a multiple of the block size up to 1 MiB";
	if (!*pat)
		return "no regex";
	if (!nalgs)
		return "hints need -z";
	if (a >= nalgs)
		return "the algorithm index is beyond the -z list";
	if (regcomp(&re, pat, REG_EXTENDED | REG_NOSUB))
		return "invalid regex";
	regfree(&re);
	h->regex = strdup(pat);
	if (!h->regex)
		return "out of memory";
	h->pcluster_size = (uint32_t)v;
	h->zalg = (unsigned)a;
	return NULL;
}

int mkfs_z_hints(const char *cmd, const char *path,
		 struct ezfs_build_params *p, struct mkfs_z *z)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	const char *why = NULL;
	ssize_t n;

	if (!f) {
		cli_error(cmd, "%s: %s", path, strerror(errno));
		return 2;
	}
	while (!why && (n = getline(&line, &cap, f)) >= 0) {
		char *s = line;
		struct ezfs_build_hint *nh;

		lineno++;
		while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if ((size_t)n != strlen(line)) {
			why = "NUL byte in the line";
			break;
		}
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s || *s == '#')
			continue;
		nh = realloc(z->hints, (z->nhints + 1) * sizeof(*nh));
		if (!nh) {
			why = "out of memory";
			break;
		}
		z->hints = nh;
		why = parse_rule(s, p, &z->hints[z->nhints]);
		if (!why)
			z->nhints++;
	}
	if (!why && ferror(f))
		why = strerror(errno);
	free(line);
	fclose(f);
	if (why) {
		if (lineno)
			cli_error(cmd, "%s:%zu: %s", path, lineno, why);
		else
			cli_error(cmd, "%s: %s", path, why);
		return 2;
	}
	p->hints = z->hints;
	p->n_hints = z->nhints;
	return 0;
}
