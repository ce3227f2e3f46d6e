/* SPDX-License-Identifier: MIT */
/* check.h - the unit tests' CHECK: print where and why, count, go on. */
#ifndef EZFS_TESTS_CHECK_H
#define EZFS_TESTS_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);   \
			fprintf(stderr, __VA_ARGS__);                          \
			fputc('\n', stderr);                                   \
			__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);    \
		}                                                              \
	} while (0)

#endif
