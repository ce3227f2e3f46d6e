/* SPDX-License-Identifier: MIT */
/* opts.c - mount parameters: defaults and the -o option parser. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void ezfs_mount_params_init(struct ezfs_mount_params *p)
{
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
	p->uid = -1;
	p->gid = -1;
	p->prefetch = 1;
	p->readahead_kb = -1;
	p->dispatch = -1;
	p->fill = -1;
}

static int fail(char *err, size_t errsize, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errsize, const char *fmt, ...)
{
	va_list ap;

	if (err && errsize) {
		va_start(ap, fmt);
		vsnprintf(err, errsize, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* Decimal number with an optional K/M/G/T suffix (powers of 1024). */
static int parse_size(const char *s, bool suffix, uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	if (suffix && *end) {
		switch (*end) {
		case 'k':
		case 'K':
			shift = 10;
			break;
		case 'm':
		case 'M':
			shift = 20;
			break;
		case 'g':
		case 'G':
			shift = 30;
			break;
		case 't':
		case 'T':
			shift = 40;
			break;
		default:
			return -EINVAL;
		}
		end++;
		if (*end == 'i' && end[1] == 'B')
			end += 2;
		else if (*end == 'B')
			end++;
	}
	if (*end)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

static int parse_one(struct ezfs_mount_params *p, char *opt, char *err,
		     size_t errsize)
{
	char *val = strchr(opt, '=');
	uint64_t v;
	int vr;

	if (val)
		*val++ = '\0';
#define NEED_VAL()                                                             \
	do {                                                                   \
		if (!val || !*val)                                             \
			return fail(err, errsize, "option '%s' needs a value", \
				    opt);                                      \
	} while (0)
#define NO_VAL()                                                               \
	do {                                                                   \
		if (val)                                                       \
			return fail(err, errsize,                              \
				    "option '%s' takes no value", opt);        \
	} while (0)

	/* the dm-verity ones (verity.c) */
	vr = ezi_mnt_verity_opt(p, opt, val, err, errsize);
	if (vr <= 0)
		return vr;
	if (!strcmp(opt, "cache")) {
		NEED_VAL();
		if (parse_size(val, true, &v) || v > SIZE_MAX)
			return fail(err, errsize,
				    "bad cache size '%s' "
				    "(a number with K, M or G)",
				    val);
		p->cache_bytes = (size_t)v;
	} else if (!strcmp(opt, "threads")) {
		NEED_VAL();
		if (parse_size(val, false, &v) || v < 1 || v > 1024)
			return fail(err, errsize,
				    "bad threads '%s' (1 to 1024)", val);
		p->threads = (unsigned)v;
	} else if (!strcmp(opt, "offset")) {
		NEED_VAL();
		if (parse_size(val, true, &v))
			return fail(err, errsize, "bad offset '%s'", val);
		p->offset = v;
	} else if (!strcmp(opt, "device")) {
		size_t used = 0, n;

		NEED_VAL();
		for (unsigned i = 0; i < p->ndevices; i++)
			used += strlen(p->devices + used) + 1;
		n = strlen(val) + 1;
		if (n > sizeof(p->devices) - used || p->ndevices >= 256)
			return fail(err, errsize,
				    "too many or too long device= "
				    "options");
		memcpy(p->devices + used, val, n);
		p->ndevices++;
	} else if (!strcmp(opt, "uid") || !strcmp(opt, "gid")) {
		NEED_VAL();
		if (parse_size(val, false, &v) || v > 0xfffffffeULL)
			return fail(err, errsize, "bad %s '%s' (a number)", opt,
				    val);
		if (opt[0] == 'u')
			p->uid = (int64_t)v;
		else
			p->gid = (int64_t)v;
	} else if (!strcmp(opt, "allow_other")) {
		NO_VAL();
		p->allow_other = 1;
	} else if (!strcmp(opt, "ro")) {
		NO_VAL();
	} else if (!strcmp(opt, "accel")) {
		char *c;

		NEED_VAL();
		if (strlen(val) >= sizeof(p->accel))
			return fail(err, errsize, "accel '%s' too long", val);
		/* -o separates options with ',': engines are joined by '+' */
		strcpy(p->accel, val);
		for (c = p->accel; *c; c++)
			if (*c == '+')
				*c = ',';
		if (ezfs_accel_check(p->accel))
			return fail(err, errsize,
				    "bad accel '%s' (e.g. "
				    "deflate=isal+libdeflate, or an engine "
				    "name; see ezfs accel list)",
				    val);
	} else if (!strcmp(opt, "dispatch")) {
		int mode;

		NEED_VAL();
		mode = ezfs_dispatch_parse(val, &p->dispatch_threads);
		if (mode < 0)
			return fail(err, errsize,
				    "bad dispatch '%s' "
				    "(inline, queue[:N] or percpu)",
				    val);
		p->dispatch = mode;
	} else if (!strcmp(opt, "prefetch")) {
		NEED_VAL();
		if (strcmp(val, "0") && strcmp(val, "1"))
			return fail(err, errsize, "bad prefetch '%s' (0 or 1)",
				    val);
		p->prefetch = val[0] == '1';
	} else if (!strcmp(opt, "readahead")) {
		NEED_VAL();
		if (!strcmp(val, "auto"))
			p->readahead_kb = -1;
		else if (parse_size(val, true, &v) || v > (256ull << 20))
			return fail(err, errsize,
				    "bad readahead '%s' (auto, "
				    "or a size up to 256M)",
				    val);
		else
			p->readahead_kb = (int64_t)((v + 1023) >> 10);
	} else if (!strcmp(opt, "fill")) {
		NEED_VAL();
		if (!strcmp(val, "none"))
			p->fill = 0;
		else if (!strcmp(val, "all"))
			p->fill = 1;
		else if (!strcmp(val, "trace"))
			p->fill = 2;
		else
			return fail(err, errsize,
				    "bad fill '%s' (none, trace or all)", val);
	} else if (!strcmp(opt, "fill_rate")) {
		NEED_VAL();
		if (parse_size(val, true, &v) || !v)
			return fail(err, errsize,
				    "bad fill_rate '%s' (bytes per second, "
				    "K/M/G suffixes)",
				    val);
		p->fill_rate = v;
	} else if (!strcmp(opt, "rw")) {
		return fail(err, errsize,
			    "option 'rw': ezfs mounts are "
			    "read-only");
	} else {
		return fail(err, errsize, "unknown option '%s'", opt);
	}
#undef NEED_VAL
#undef NO_VAL
	return 0;
}

int ezfs_mount_parse_options(struct ezfs_mount_params *p, const char *opts,
			     char *err, size_t errsize)
{
	char *copy, *s, *tok;
	int ret = 0;

	if (!opts)
		return 0;
	copy = strdup(opts);
	if (!copy)
		return fail(err, errsize, "out of memory");
	for (s = copy; (tok = strsep(&s, ",")) != NULL;) {
		if (!*tok)
			continue;
		ret = parse_one(p, tok, err, errsize);
		if (ret)
			break;
	}
	free(copy);
	return ret;
}
