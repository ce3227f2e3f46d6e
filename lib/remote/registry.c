/* SPDX-License-Identifier: MIT */
/*
 * registry.c - a client of an OCI registry (the distribution API, v2):
 * its requests (ezi_reg_req) with the credentials it asks for.
 * Authentication: anonymous first; a 401 with a Bearer challenge
 * (WWW-Authenticate: realm, service, scope) fetches a token from the
 * realm, with Basic credentials from the docker config's auths when it
 * has the host; a Basic challenge uses those directly. A token is kept
 * until expires_in runs out or a 401 says otherwise. The pull side of
 * oci:// is oci.c, uploads push.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "remote/curl_dl.h"

#include "remote/internal.h"
#include "remote/json.h"

/* Parse a challenge: Bearer realm="...",service="...",scope="...". */
int ezi_www_auth_parse(const char *v, struct ezi_challenge *c)
{
	memset(c, 0, sizeof(*c));
	while (*v == ' ')
		v++;
	if (!strncasecmp(v, "Bearer ", 7))
		c->bearer = 1;
	else if (!strncasecmp(v, "Basic", 5))
		c->basic = 1;
	else
		return -1;
	v += c->bearer ? 7 : 5;
	while (*v) {
		char name[32], val[1024];
		size_t n = 0;
		char *dst;

		while (*v == ' ' || *v == ',')
			v++;
		if (!*v)
			break;
		while (*v && *v != '=' && n + 1 < sizeof(name))
			name[n++] = *v++;
		name[n] = '\0';
		if (*v != '=')
			return -1;
		v++;
		n = 0;
		if (*v == '"') {
			v++;
			while (*v && *v != '"' && n + 1 < sizeof(val)) {
				if (*v == '\\' && v[1])
					v++;
				val[n++] = *v++;
			}
			if (*v != '"')
				return -1;
			v++;
		} else {
			while (*v && *v != ',' && n + 1 < sizeof(val))
				val[n++] = *v++;
		}
		val[n] = '\0';
		dst = !strcasecmp(name, "realm")     ? c->realm
		      : !strcasecmp(name, "service") ? c->service
		      : !strcasecmp(name, "scope")   ? c->scope
						     : NULL;
		if (dst)
			snprintf(dst, sizeof(c->realm), "%s", val);
	}
	return c->bearer && !c->realm[0] ? -1 : 0;
}

size_t ezi_rbuf_write(char *b, size_t sz, size_t n, void *arg)
{
	struct ezi_rbuf *r = arg;
	size_t len = sz * n;

	if (r->n + len + 1 > r->max)
		return 0;
	if (r->n + len + 1 > r->cap) {
		size_t cap = (r->n + len + 1) * 2;
		char *p = realloc(r->p, cap);

		if (!p)
			return 0;
		r->p = p;
		r->cap = cap;
	}
	memcpy(r->p + r->n, b, len);
	r->n += len;
	r->p[r->n] = '\0';
	return len;
}

static size_t on_hdr(char *b, size_t sz, size_t n, void *arg)
{
	struct ezi_rhdrs *h = arg;
	size_t len = sz * n;

	if (len >= 5 && !strncmp(b, "HTTP/", 5))
		memset(h, 0, sizeof(*h));
	else if (len > 17 && !strncasecmp(b, "www-authenticate:", 17))
		ezi_header_value(h->www, sizeof(h->www), b + 17, len - 17);
	else if (len > 9 && !strncasecmp(b, "location:", 9))
		ezi_header_value(h->location, sizeof(h->location), b + 9,
				 len - 9);
	else if (len > 13 && !strncasecmp(b, "content-type:", 13))
		ezi_header_value(h->ctype, sizeof(h->ctype), b + 13, len - 13);
	else if (len > 22 && !strncasecmp(b, "docker-content-digest:", 22))
		ezi_header_value(h->digest, sizeof(h->digest), b + 22,
				 len - 22);
	return len;
}

void ezi_reg_init(struct ezi_reg *g, const struct ezi_oci_ref *ref,
		  ezfs_log_fn log, void *log_arg, unsigned timeout_ms)
{
	const char *dc = getenv("DOCKER_CONFIG"), *home = getenv("HOME");
	char path[4096];
	FILE *f;

	memset(g, 0, sizeof(*g));
	g->ref = *ref;
	g->log = log;
	g->log_arg = log_arg;
	g->timeout_ms = timeout_ms ? timeout_ms : 10000;
	snprintf(g->base, sizeof(g->base), "%s://%s",
		 ref->http ? "http" : "https", ref->host);
	pthread_mutex_init(&g->lock, NULL);
	/* Basic credentials: the docker config's auths entry for the host */
	if (dc && *dc)
		snprintf(path, sizeof(path), "%s/config.json", dc);
	else if (home && *home)
		snprintf(path, sizeof(path), "%s/.docker/config.json", home);
	else
		return;
	f = fopen(path, "re");
	if (f) {
		char *buf = malloc(1 << 20);
		size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;

		if (buf) {
			struct ezi_json *j;

			buf[n] = '\0';
			j = ezi_json_parse(buf);
			if (j) {
				const struct ezi_json *a = ezi_json_get(
					ezi_json_get(j, "auths"), ref->host);
				const char *s = ezi_json_str(a, "auth");

				if (s && strlen(s) < sizeof(g->basic))
					strcpy(g->basic, s);
				ezi_json_free(j);
			}
			free(buf);
		}
		fclose(f);
	}
}

void ezi_reg_basic(struct ezi_reg *g, const char *user, const char *pass)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		"0123456789+/";
	char plain[700];
	size_t n, i, o = 0;

	if (!user)
		return;
	n = (size_t)snprintf(plain, sizeof(plain), "%.340s:%.340s", user,
			     pass ? pass : "");
	for (i = 0; i < n && o + 5 < sizeof(g->basic); i += 3) {
		uint32_t v = (uint32_t)(uint8_t)plain[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)(uint8_t)plain[i + 1] << 8;
		if (i + 2 < n)
			v |= (uint8_t)plain[i + 2];
		g->basic[o++] = b64[v >> 18];
		g->basic[o++] = b64[(v >> 12) & 63];
		g->basic[o++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		g->basic[o++] = i + 2 < n ? b64[v & 63] : '=';
	}
	g->basic[o] = '\0';
}

void ezi_reg_destroy(struct ezi_reg *g)
{
	pthread_mutex_destroy(&g->lock);
}

static int fetch_token(struct ezi_reg *g, const struct ezi_challenge *c)
{
	struct ezi_rbuf out = { .max = 1 << 20 };
	struct curl_slist *h = NULL;
	char url[4096], auth[1200];
	CURL *e = curl_easy_init();
	char *sv, *sc;
	long st = 0;
	CURLcode rc;
	int err = -EACCES;

	if (!e)
		return -ENOMEM;
	sv = curl_easy_escape(e, c->service, 0);
	sc = curl_easy_escape(e, c->scope, 0);
	snprintf(url, sizeof(url), "%.1000s%sservice=%.1000s%s%.1500s",
		 c->realm, strchr(c->realm, '?') ? "&" : "?", sv ? sv : "",
		 c->scope[0] ? "&scope=" : "", c->scope[0] && sc ? sc : "");
	curl_free(sv);
	curl_free(sc);
	if (g->basic[0]) {
		snprintf(auth, sizeof(auth), "Authorization: Basic %s",
			 g->basic);
		h = curl_slist_append(h, auth);
	}
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, ezi_rbuf_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &out);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)g->timeout_ms);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)g->timeout_ms * 3);
	rc = curl_easy_perform(e);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &st);
	if (rc != CURLE_OK) {
		snprintf(g->err, sizeof(g->err), "token from %.300s: %s",
			 c->realm, curl_easy_strerror(rc));
		err = -EIO;
	} else if (st != 200) {
		snprintf(g->err, sizeof(g->err), "token from %.300s: HTTP %ld",
			 c->realm, st);
	} else {
		struct ezi_json *j = ezi_json_parse(out.p ? out.p : "");
		const char *t = ezi_json_str(j, "token");
		const struct ezi_json *ex = ezi_json_get(j, "expires_in");

		if (!t)
			t = ezi_json_str(j, "access_token");
		if (t && strlen(t) + 32 < sizeof(g->auth)) {
			pthread_mutex_lock(&g->lock);
			snprintf(g->auth, sizeof(g->auth),
				 "Authorization: Bearer %s", t);
			/* 60 s is the spec's default; a margin of 10 s */
			g->expires = time(NULL) +
				     (ex && ex->type == EZI_JSON_NUMBER
					      ? (time_t)ex->num
					      : 60) -
				     10;
			pthread_mutex_unlock(&g->lock);
			err = 0;
		} else {
			snprintf(g->err, sizeof(g->err),
				 "token from %.300s: no token in the answer",
				 c->realm);
		}
		ezi_json_free(j);
	}
	curl_slist_free_all(h);
	curl_easy_cleanup(e);
	free(out.p);
	return err;
}

int ezi_reg_reauth(struct ezi_reg *g, const char *www)
{
	struct ezi_challenge c;

	if (!www || ezi_www_auth_parse(www, &c)) {
		snprintf(g->err, sizeof(g->err),
			 "HTTP 401 without a usable challenge (%.200s)",
			 www ? www : "none");
		return -EACCES;
	}
	if (c.basic) {
		if (!g->basic[0]) {
			snprintf(g->err, sizeof(g->err),
				 "HTTP 401: the registry wants Basic "
				 "credentials (none for %s in the docker "
				 "config)",
				 g->ref.host);
			return -EACCES;
		}
		pthread_mutex_lock(&g->lock);
		snprintf(g->auth, sizeof(g->auth), "Authorization: Basic %s",
			 g->basic);
		g->expires = 0;
		pthread_mutex_unlock(&g->lock);
		return 0;
	}
	return fetch_token(g, &c);
}

void ezi_reg_auth(struct ezi_reg *g, char *dst, size_t size)
{
	pthread_mutex_lock(&g->lock);
	if (g->expires && time(NULL) >= g->expires)
		g->auth[0] = '\0'; /* expired: the next 401 gets another */
	snprintf(dst, size, "%s", g->auth);
	pthread_mutex_unlock(&g->lock);
}

struct upstate {
	struct ezi_upload *up;
	uint64_t pos;
};

static size_t up_read(char *buf, size_t sz, size_t n, void *arg)
{
	struct upstate *u = arg;
	size_t want = sz * n;
	int err;

	if (want > u->up->len - u->pos)
		want = (size_t)(u->up->len - u->pos);
	if (!want)
		return 0;
	err = u->up->read(u->up->arg, buf, want, u->pos);
	if (err) {
		u->up->err = err;
		return CURL_READFUNC_ABORT;
	}
	u->pos += want;
	return want;
}

static int up_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow,
		       curl_off_t ultotal, curl_off_t ulnow)
{
	struct upstate *u = arg;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	if (u->up->progress &&
	    u->up->progress(u->up->progress_arg, (uint64_t)ulnow, u->up->len)) {
		u->up->err = -ECANCELED;
		return 1;
	}
	return 0;
}

int ezi_reg_req(struct ezi_reg *g, const char *method, const char *url,
		const char *accept, const char *ctype, const void *body,
		size_t len, struct ezi_upload *up, struct ezi_rbuf *out,
		struct ezi_rhdrs *h, long *status)
{
	for (int round = 0; round < 2; round++) {
		struct upstate us = { .up = up };
		struct curl_slist *hl = NULL;
		char a[4200];
		CURL *e = curl_easy_init();
		CURLcode rc;

		if (!e)
			return -ENOMEM;
		ezi_reg_auth(g, a, sizeof(a));
		if (a[0])
			hl = curl_slist_append(hl, a);
		if (accept) {
			snprintf(a, sizeof(a), "Accept: %s", accept);
			hl = curl_slist_append(hl, a);
		}
		if (ctype) {
			snprintf(a, sizeof(a), "Content-Type: %s", ctype);
			hl = curl_slist_append(hl, a);
		}
		memset(h, 0, sizeof(*h));
		if (out) {
			out->n = 0;
			if (out->p)
				out->p[0] = '\0';
		}
		curl_easy_setopt(e, CURLOPT_URL, url);
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
		if (g->range)
			curl_easy_setopt(e, CURLOPT_RANGE, g->range);
		if (!strcmp(method, "HEAD"))
			curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
		if (up) {
			/* no 100-continue round trip before the body */
			hl = curl_slist_append(hl, "Expect:");
			up->err = 0;
			curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
			curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE,
					 (curl_off_t)up->len);
			curl_easy_setopt(e, CURLOPT_READFUNCTION, up_read);
			curl_easy_setopt(e, CURLOPT_READDATA, &us);
			curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
			curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION,
					 up_progress);
			curl_easy_setopt(e, CURLOPT_XFERINFODATA, &us);
		} else if (body || !strcmp(method, "PUT") ||
			   !strcmp(method, "POST")) {
			curl_easy_setopt(e, CURLOPT_POSTFIELDS,
					 body ? body : "");
			curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
					 (curl_off_t)len);
		}
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, hl);
		curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_hdr);
		curl_easy_setopt(e, CURLOPT_HEADERDATA, h);
		if (out) {
			curl_easy_setopt(e, CURLOPT_WRITEFUNCTION,
					 ezi_rbuf_write);
			curl_easy_setopt(e, CURLOPT_WRITEDATA, out);
		}
		curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
		curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
				 (long)g->timeout_ms);
		curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME,
				 (long)((g->timeout_ms + 999) / 1000));
		rc = curl_easy_perform(e);
		*status = 0;
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, status);
		curl_easy_cleanup(e);
		curl_slist_free_all(hl);
		if (up && up->err)
			return up->err;
		if (rc != CURLE_OK) {
			snprintf(g->err, sizeof(g->err), "%s %.600s: %s",
				 method, url, curl_easy_strerror(rc));
			return -EIO;
		}
		if (*status != 401 || round)
			return 0;
		if (ezi_reg_reauth(g, h->www[0] ? h->www : NULL))
			return -EACCES;
	}
	return 0;
}
