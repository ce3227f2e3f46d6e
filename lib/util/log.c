/* SPDX-License-Identifier: MIT */
/* log.c - format a message and hand it to the caller's log callback. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/log.h"

#ifndef EUCLEAN
#define EUCLEAN 117
#endif

void ezi_logf(const struct ezfs_logger *lg, int level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!lg || !lg->fn || level > (int)lg->verbose)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	lg->fn(lg->arg, level, msg);
}

const char *ezfs_strerror(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case EUCLEAN:
		return "corrupt image";
	case EOPNOTSUPP:
		return "unsupported feature";
	case EMEDIUMTYPE:
		return "not an EROFS image";
	case ESPIPE:
		return "not seekable (a pipe or socket cannot be read in "
		       "place)";
	case ENOTBLK:
		return "not a regular file or block device";
	default:
		return strerror(err);
	}
}

char *ezfs_quote(const char *s, size_t n, char *buf, size_t size)
{
	size_t i, o = 0;

	if (!size)
		return buf;
	for (i = 0; i < n && o + 5 < size; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch < 0x20 || ch == 0x7f || ch == '\\')
			o += snprintf(buf + o, size - o, "\\x%02x", ch);
		else
			buf[o++] = (char)ch;
	}
	if (i < n && o + 4 <= size) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}
