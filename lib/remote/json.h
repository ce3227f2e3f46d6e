/* SPDX-License-Identifier: MIT */
/* json.h - a small JSON tree for registry answers (json.c). */
#ifndef EZFS_REMOTE_JSON_H
#define EZFS_REMOTE_JSON_H

#include <stddef.h>

enum {
	EZI_JSON_NULL,
	EZI_JSON_BOOL,
	EZI_JSON_NUMBER,
	EZI_JSON_STRING,
	EZI_JSON_ARRAY,
	EZI_JSON_OBJECT,
};

struct ezi_json {
	int type;
	char *key; /* as a member of an object; else NULL */
	char *str;
	double num;
	struct ezi_json **kids; /* array items, object members */
	size_t n;
};

/* NULL on a syntax error or out of memory. */
struct ezi_json *ezi_json_parse(const char *s);
void ezi_json_free(struct ezi_json *n);
/* The member key of object n; NULL if n is no object or has none. */
const struct ezi_json *ezi_json_get(const struct ezi_json *n, const char *key);
/* The member key of n when it is a string, else NULL. */
const char *ezi_json_str(const struct ezi_json *n, const char *key);

#endif
