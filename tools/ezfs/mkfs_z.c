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
	{ "zstd", "-131072..22", EZFS_ALG_ZSTD, 0, 22 },
};

static int level_ok(const struct zname *a, long l)
{
	if (a->alg == EZFS_ALG_LZMA)
		return l <= 9 || (l >= 100 && l <= 109);
	return l <= a->max;
}

/*
 * dictsize= (mkfs.erofs 1.9.3): lzma's dictionary (4 KiB..8 MiB, what
 * the kernel takes), zstd's window and deflate's (powers of two; deflate
 * at most 32 KiB); lz4 has none.
 */
static int level_dict_ok(const struct zname *a, long d)
{
	switch (a->alg) {
	case EZFS_ALG_LZMA:
		return d >= 4096 && d <= (8l << 20);
	case EZFS_ALG_ZSTD:
		return d >= 1024 && d <= (1l << 20) && !(d & (d - 1));
	case EZFS_ALG_DEFLATE:
		return d >= 256 && d <= 32768 && !(d & (d - 1));
	}
	return 0;
}

/* Digits of [s, end) into *v (capped): 0, or -EINVAL */
static int parse_digits(const char *s, const char *end, long *v)
{
	*v = 0;
	if (s == end)
		return -EINVAL;
	for (; s < end; s++) {
		if (!isdigit((unsigned char)*s))
			return -EINVAL;
		if (*v < 100000000)
			*v = *v * 10 + (*s - '0');
	}
	return 0;
}

/*
 * One "ALG[,N|,level=N][,dictsize=N]" item: 0, -EINVAL (not that form),
 * -ERANGE (a level the algorithm has not; *a is the algorithm, *lvl the
 * level's digits) or -EDOM (a dictsize it cannot take; *lvl its digits).
 * *dict is the dictsize given, 0 if none.
 */
static int parse_one(const char *arg, size_t len, struct ezfs_build_zalg *z,
		     const struct zname **a, const char **lvl, long *dict)
{
	const char *comma = memchr(arg, ',', len), *end = arg + len;
	size_t n = comma ? (size_t)(comma - arg) : len, i;

	*dict = 0;
	for (i = 0; i < sizeof(zalgs) / sizeof(zalgs[0]); i++) {
		const char *lv;
		long l = 0;

		if (strlen(zalgs[i].name) != n ||
		    strncmp(arg, zalgs[i].name, n))
			continue;
		*a = &zalgs[i];
		z->alg = zalgs[i].alg;
		z->hc = zalgs[i].hc;
		/* mkfs.erofs' defaults: deflate and libdeflate at level 1,
		 * zstd at -1 (1.9.3 hands its "unset" -1 to libzstd), the
		 * others at their library's default */
		z->level = z->alg == EZFS_ALG_DEFLATE ? 1 : -1;
		for (lv = comma; lv;) {
			const char *pe, *next;
			int first = lv == comma, neg;

			lv++;
			next = memchr(lv, ',', (size_t)(end - lv));
			pe = next ? next : end;
			if ((size_t)(pe - lv) > 9 &&
			    !strncmp(lv, "dictsize=", 9)) {
				*lvl = lv + 9;
				if (parse_digits(lv + 9, pe, dict))
					return -EINVAL;
				if (!level_dict_ok(&zalgs[i], *dict))
					return -EDOM;
			} else {
				if ((size_t)(pe - lv) > 6 &&
				    !strncmp(lv, "level=", 6))
					lv += 6;
				else if (!first)
					return -EINVAL;
				*lvl = lv;
				neg = *lv == '-';
				if (parse_digits(lv + neg, pe, &l))
					return -EINVAL;
				if (!neg && !level_ok(&zalgs[i], l))
					return -ERANGE;
				/* as mkfs.erofs 1.9.3: a negative level is
				 * zstd's own (fast) level, the others' default
				 */
				z->level = !neg			     ? (int)l
					   : z->alg == EZFS_ALG_ZSTD ? (int)-l
								     : -1;
			}
			lv = next;
		}
		return 0;
	}
	return -EINVAL;
}

int mkfs_z_parse(const char *cmd, const char *arg, struct ezfs_build_params *p,
		 struct mkfs_z *z)
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
			return cli_usage_error(cmd,
					       "bad -z '%s': more than %d "
					       "algorithms",
					       arg, EZFS_BUILD_MAX_ZALGS);
		}
		const struct zname *a = NULL;
		const char *lvl = NULL;
		long dict = 0;
		int err = parse_one(s, len, &all[n], &a, &lvl, &dict);

		if (err == -EDOM && a->alg == EZFS_ALG_LZ4)
			return cli_usage_error(cmd,
					       "-z %s: no dictsize "
					       "parameter",
					       a->name);
		if (err == -EDOM)
			return cli_usage_error(
				cmd,
				"-z %s: dictsize %.*s out "
				"of range (%s)",
				a->name, (int)strcspn(lvl, ",:"), lvl,
				a->alg == EZFS_ALG_LZMA ? "4096..8388608"
				: a->alg == EZFS_ALG_ZSTD
					? "a power of two, 1024..1048576"
					: "a power of two, 256..32768");
		/* deflate's window is 32 KiB whatever is asked: a smaller
		 * one only changes how well it compresses */
		if (dict && a->alg == EZFS_ALG_LZMA)
			p->lzma_dictsize = (uint32_t)dict;
		else if (dict && a->alg == EZFS_ALG_ZSTD)
			p->zstd_window = (uint32_t)dict;
		if (err == -ERANGE)
			return cli_usage_error(cmd,
					       "-z %s: level %.*s out of "
					       "range (%s)",
					       a->name, (int)strcspn(lvl, ",:"),
					       lvl, a->range);
		if (err)
			return cli_usage_error(
				cmd,
				"bad -z '%s': '%.*s' is not "
				"ALG[,level=N][,dictsize=N] (lz4, "
				"lz4hc, lzma, "
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
		return "the pcluster size is not a multiple of the block size "
		       "up to 1 MiB";
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

int mkfs_z_hints(const char *cmd, const char *path, struct ezfs_build_params *p,
		 struct mkfs_z *z)
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
