/* SPDX-License-Identifier: MIT */
/* log.h - the caller's log callback, as every layer hands messages to it. */
#ifndef EZFS_UTIL_LOG_H
#define EZFS_UTIL_LOG_H

#include "ezfs/ezfs.h"

/* Where an image's (or a builder's) messages go. */
struct ezfs_logger {
	ezfs_log_fn fn; /* NULL: silent */
	void *arg;
	unsigned verbose; /* levels above it are dropped */
};

/* Format one line and hand it to lg->fn (NULL lg: silent). */
void ezi_logf(const struct ezfs_logger *lg, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
