/* SPDX-License-Identifier: MIT */
/*
 * json.c - just enough JSON for registry answers: a parse into a tree of
 * nodes, lookups of object members and array items, strings unescaped
 * (\uXXXX kept as '?': no name we look up holds one).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "remote/json.h"

struct parser {
	const char *s;
	int depth;
};

static void ws(struct parser *p)
{
	while (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r')
		p->s++;
}

static struct ezi_json *node(int type)
{
	struct ezi_json *n = calloc(1, sizeof(*n));

	if (n)
		n->type = type;
	return n;
}

static char *str(struct parser *p)
{
	size_t cap = 16, n = 0;
	char *out = malloc(cap);

	if (!out || *p->s != '"') {
		free(out);
		return NULL;
	}
	p->s++;
	while (*p->s && *p->s != '"') {
		char c = *p->s++;

		if ((unsigned char)c < 0x20)
			goto bad;
		if (c == '\\') {
			c = *p->s++;
			switch (c) {
			case 'n':
				c = '\n';
				break;
			case 't':
				c = '\t';
				break;
			case 'r':
				c = '\r';
				break;
			case 'b':
				c = '\b';
				break;
			case 'f':
				c = '\f';
				break;
			case 'u':
				for (int i = 0; i < 4; i++)
					if (!*p->s++)
						goto bad;
				c = '?';
				break;
			case '"':
			case '\\':
			case '/':
				break;
			default:
				goto bad;
			}
		}
		if (n + 2 > cap) {
			char *o = realloc(out, cap *= 2);

			if (!o)
				goto bad;
			out = o;
		}
		out[n++] = c;
	}
	if (*p->s != '"')
		goto bad;
	p->s++;
	out[n] = '\0';
	return out;
bad:
	free(out);
	return NULL;
}

static struct ezi_json *value(struct parser *p);

static int add_kid(struct ezi_json *n, struct ezi_json *k)
{
	struct ezi_json **v;

	if (n->n % 8 == 0) {
		v = realloc(n->kids, (n->n + 8) * sizeof(*v));
		if (!v)
			return -1;
		n->kids = v;
	}
	n->kids[n->n++] = k;
	return 0;
}

static struct ezi_json *container(struct parser *p, int obj)
{
	struct ezi_json *n = node(obj ? EZI_JSON_OBJECT : EZI_JSON_ARRAY);
	char close = obj ? '}' : ']';

	if (!n)
		return NULL;
	p->s++;
	ws(p);
	if (*p->s == close) {
		p->s++;
		return n;
	}
	for (;;) {
		char *key = NULL;
		struct ezi_json *k;

		ws(p);
		if (obj) {
			key = str(p);
			ws(p);
			if (!key || *p->s != ':') {
				free(key);
				goto bad;
			}
			p->s++;
		}
		k = value(p);
		if (!k) {
			free(key);
			goto bad;
		}
		k->key = key;
		if (add_kid(n, k)) {
			ezi_json_free(k);
			goto bad;
		}
		ws(p);
		if (*p->s == ',') {
			p->s++;
			continue;
		}
		if (*p->s == close) {
			p->s++;
			return n;
		}
		goto bad;
	}
bad:
	ezi_json_free(n);
	return NULL;
}

static struct ezi_json *value(struct parser *p)
{
	struct ezi_json *n;
	char *end;

	ws(p);
	if (++p->depth > 64)
		return NULL;
	switch (*p->s) {
	case '{':
	case '[':
		n = container(p, *p->s == '{');
		break;
	case '"':
		n = node(EZI_JSON_STRING);
		if (n && !(n->str = str(p))) {
			free(n);
			n = NULL;
		}
		break;
	case 't':
	case 'f':
	case 'n': {
		static const char *const w[] = { "true", "false", "null" };
		int i = *p->s == 't' ? 0 : *p->s == 'f' ? 1 : 2;

		if (strncmp(p->s, w[i], strlen(w[i])))
			return NULL;
		p->s += strlen(w[i]);
		n = node(i == 2 ? EZI_JSON_NULL : EZI_JSON_BOOL);
		if (n)
			n->num = i == 0;
		break;
	}
	default:
		n = node(EZI_JSON_NUMBER);
		if (!n)
			return NULL;
		n->num = strtod(p->s, &end);
		if (end == p->s) {
			free(n);
			return NULL;
		}
		p->s = end;
	}
	p->depth--;
	return n;
}

struct ezi_json *ezi_json_parse(const char *s)
{
	struct parser p = { .s = s };
	struct ezi_json *n = value(&p);

	if (!n)
		return NULL;
	ws(&p);
	if (*p.s) {
		ezi_json_free(n);
		return NULL;
	}
	return n;
}

void ezi_json_free(struct ezi_json *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n; i++)
		ezi_json_free(n->kids[i]);
	free(n->kids);
	free(n->key);
	free(n->str);
	free(n);
}

const struct ezi_json *ezi_json_get(const struct ezi_json *n, const char *key)
{
	if (!n || n->type != EZI_JSON_OBJECT)
		return NULL;
	for (size_t i = 0; i < n->n; i++)
		if (!strcmp(n->kids[i]->key, key))
			return n->kids[i];
	return NULL;
}

const char *ezi_json_str(const struct ezi_json *n, const char *key)
{
	const struct ezi_json *v = ezi_json_get(n, key);

	return v && v->type == EZI_JSON_STRING ? v->str : NULL;
}
