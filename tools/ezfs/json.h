/* SPDX-License-Identifier: MIT */
/*
 * json.h - the JSON writer of the --json outputs (docs/json.md): one
 * document on stdout, indented by two spaces, numbers as numbers, strings
 * escaped. A string from an image that is not valid UTF-8 is written with
 * each bad byte as U+FFFD, and a second member KEY_hex holds its bytes in
 * hex (cj_bytes).
 */
#ifndef EZFS_TOOL_JSON_H
#define EZFS_TOOL_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CJ_MAX_DEPTH 32

struct cj {
	FILE *f;
	int depth;
	int count[CJ_MAX_DEPTH];  /* members written at each level */
	char close[CJ_MAX_DEPTH]; /* '}' or ']' */
};

void cj_init(struct cj *j, FILE *f);
/* key is NULL for a value inside an array (or the top level) */
void cj_obj(struct cj *j, const char *key);
void cj_arr(struct cj *j, const char *key);
/* Closes the innermost object or array; the last one ends the line. */
void cj_end(struct cj *j);
void cj_str(struct cj *j, const char *key, const char *s);
/* n bytes of s: key, plus key_hex when they are not valid UTF-8. */
void cj_bytes(struct cj *j, const char *key, const char *s, size_t n);
void cj_u64(struct cj *j, const char *key, uint64_t v);
void cj_i64(struct cj *j, const char *key, int64_t v);
/* A finite double (NaN and infinities are written as null). */
void cj_dbl(struct cj *j, const char *key, double v);
void cj_bool(struct cj *j, const char *key, int v);
void cj_null(struct cj *j, const char *key);
/* The type word of a mode: "file", "dir", "symlink", "chardev",
 * "blockdev", "fifo", "socket" or "unknown". */
const char *cli_json_type(uint32_t mode);
/* Is s[0..n) valid UTF-8 (no overlong forms, surrogates or > U+10FFFF)? */
int cj_utf8_valid(const char *s, size_t n);

#endif
