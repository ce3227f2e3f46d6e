/* SPDX-License-Identifier: MIT */
/* json.c - the JSON writer of the --json outputs (json.h). */
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "json.h"

void cj_init(struct cj *j, FILE *f)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

int cj_utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, l;

	while (i < n) {
		l = utf8_seq(p + i, n - i);
		if (!l)
			return 0;
		i += l;
	}
	return 1;
}

static void indent(struct cj *j)
{
	fputc('\n', j->f);
	for (int i = 0; i < j->depth; i++)
		fputs("  ", j->f);
}

static void put_string(struct cj *j, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, l;

	fputc('"', j->f);
	while (i < n) {
		unsigned char c = p[i];

		l = utf8_seq(p + i, n - i);
		if (!l) {
			fputs("\xef\xbf\xbd", j->f); /* U+FFFD */
			i++;
			continue;
		}
		if (l > 1) {
			fwrite(p + i, 1, l, j->f);
		} else if (c == '"' || c == '\\') {
			fputc('\\', j->f);
			fputc(c, j->f);
		} else if (c == '\n') {
			fputs("\\n", j->f);
		} else if (c == '\t') {
			fputs("\\t", j->f);
		} else if (c == '\r') {
			fputs("\\r", j->f);
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(j->f, "\\u%04x", c);
		} else {
			fputc(c, j->f);
		}
		i += l;
	}
	fputc('"', j->f);
}

/* The separator, indentation and "key": of the next member. */
static void member(struct cj *j, const char *key)
{
	if (j->depth) {
		if (j->count[j->depth]++)
			fputc(',', j->f);
		indent(j);
	}
	if (key) {
		put_string(j, key, strlen(key));
		fputs(": ", j->f);
	}
}

static void open_(struct cj *j, const char *key, char c)
{
	member(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < CJ_MAX_DEPTH)
		j->depth++;
	j->count[j->depth] = 0;
	j->close[j->depth] = c == '{' ? '}' : ']';
}

void cj_obj(struct cj *j, const char *key)
{
	open_(j, key, '{');
}

void cj_arr(struct cj *j, const char *key)
{
	open_(j, key, '[');
}

void cj_end(struct cj *j)
{
	int had = j->count[j->depth];
	char c = j->close[j->depth];

	j->depth--;
	if (had)
		indent(j);
	fputc(c, j->f);
	if (!j->depth)
		fputc('\n', j->f);
}

void cj_str(struct cj *j, const char *key, const char *s)
{
	member(j, key);
	if (s)
		put_string(j, s, strlen(s));
	else
		fputs("null", j->f);
}

void cj_bytes(struct cj *j, const char *key, const char *s, size_t n)
{
	char hk[64];

	member(j, key);
	put_string(j, s, n);
	if (cj_utf8_valid(s, n))
		return;
	snprintf(hk, sizeof(hk), "%s_hex", key ? key : "");
	member(j, hk);
	fputc('"', j->f);
	for (size_t i = 0; i < n; i++)
		fprintf(j->f, "%02x", (unsigned char)s[i]);
	fputc('"', j->f);
}

void cj_u64(struct cj *j, const char *key, uint64_t v)
{
	member(j, key);
	fprintf(j->f, "%llu", (unsigned long long)v);
}

void cj_i64(struct cj *j, const char *key, int64_t v)
{
	member(j, key);
	fprintf(j->f, "%lld", (long long)v);
}

void cj_dbl(struct cj *j, const char *key, double v)
{
	member(j, key);
	if (isfinite(v))
		fprintf(j->f, "%.15g", v);
	else
		fputs("null", j->f);
}

void cj_bool(struct cj *j, const char *key, int v)
{
	member(j, key);
	fputs(v ? "true" : "false", j->f);
}

void cj_null(struct cj *j, const char *key)
{
	member(j, key);
	fputs("null", j->f);
}

const char *cli_json_type(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "file";
	case S_IFDIR:
		return "dir";
	case S_IFLNK:
		return "symlink";
	case S_IFCHR:
		return "chardev";
	case S_IFBLK:
		return "blockdev";
	case S_IFIFO:
		return "fifo";
	case S_IFSOCK:
		return "socket";
	default:
		return "unknown";
	}
}
