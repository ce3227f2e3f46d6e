/* SPDX-License-Identifier: MIT */
/*
 * oci.c - images in OCI registries (the distribution API, v2):
 * oci://HOST[:PORT]/REPO:TAG or oci://HOST[:PORT]/REPO@sha256:HEX.
 *
 * The reference is resolved to a manifest (through an index, by
 * platform), a layer of it chosen (by digest, index, or the EROFS layer
 * media type), and its blob URL read with Range like any other image
 * (the oci scheme at the end of this file). Authentication: anonymous first; a
 * 401 with a Bearer challenge (WWW-Authenticate: realm, service, scope) fetches
 * a token from the realm, with Basic credentials from the docker config's auths
 * when it has the host; a Basic challenge uses those directly. A token is kept
 * until expires_in runs out or a 401 says otherwise. Plain http for 127.0.0.1
 * and localhost, or when asked for.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "remote/curl_dl.h"

#include "remote/internal.h"
#include "remote/json.h"

#define MT_MANIFEST EZI_MT_MANIFEST
#define MT_INDEX    "application/vnd.oci.image.index.v1+json"
#define MT_DOCKER_MANIFEST                                                     \
	"application/vnd.docker.distribution.manifest.v2+json"
#define MT_DOCKER_LIST                                                         \
	"application/vnd.docker.distribution.manifest.list.v2+json"

#define OCI_FORM                                                               \
	"oci://HOST[:PORT]/REPO[:TAG] or oci://HOST[:PORT]/REPO@sha256:HEX"

static int bad_ref(char *why, size_t whylen, const char *fmt, const char *arg)
{
	if (why) {
		char what[600];

		snprintf(what, sizeof(what), fmt, arg);
		snprintf(why, whylen, "%s", what);
	}
	return -EINVAL;
}

int ezi_oci_parse(const char *s, int insecure, struct ezi_oci_ref *r, char *why,
		  size_t whylen)
{
	const char *h, *slash, *at, *colon, *last;
	size_t hl, rl;
	int upper = 0;

	memset(r, 0, sizeof(*r));
	if (strncasecmp(s, "oci://", 6))
		return bad_ref(why, whylen, "not a reference %s", OCI_FORM);
	h = s + 6;
	slash = strchr(h, '/');
	if (!slash || slash == h || !slash[1])
		return bad_ref(why, whylen,
			       "no host or no repository: %s wanted", OCI_FORM);
	hl = (size_t)(slash - h);
	if (hl >= sizeof(r->host))
		return bad_ref(why, whylen, "the host is too long%s", "");
	memcpy(r->host, h, hl);
	r->host[hl] = '\0';
	s = slash + 1;
	at = strchr(s, '@');
	last = strrchr(s, '/');
	/* a ':' after the last '/' starts the tag; none: latest */
	colon = at ? at : strrchr(last ? last : s, ':');
	rl = colon ? (size_t)(colon - s) : strlen(s);
	if (!rl || (colon && !colon[1]))
		return bad_ref(why, whylen, "an empty repository or tag: %s",
			       OCI_FORM);
	if (rl >= sizeof(r->repo) ||
	    (colon && strlen(colon + 1) >= sizeof(r->ref)))
		return bad_ref(why, whylen,
			       "the repository or tag is too long%s", "");
	memcpy(r->repo, s, rl);
	r->repo[rl] = '\0';
	snprintf(r->ref, sizeof(r->ref), "%s", colon ? colon + 1 : "latest");
	if (at && (strncmp(r->ref, "sha256:", 7) || strlen(r->ref) != 71 ||
		   strspn(r->ref + 7, "0123456789abcdef") != 64))
		return bad_ref(why, whylen,
			       "'@%s' is no digest (sha256: and 64 lower-case "
			       "hex digits)",
			       r->ref);
	for (const char *c = r->repo; *c; c++) {
		if (*c >= 'A' && *c <= 'Z') {
			upper = 1;
		} else if (!((*c >= 'a' && *c <= 'z') ||
			     (*c >= '0' && *c <= '9') || *c == '.' ||
			     *c == '_' || *c == '-' || *c == '/')) {
			return bad_ref(why, whylen,
				       "repository '%s': only a-z, 0-9, '.', "
				       "'_', '-' and '/' may name one",
				       r->repo);
		}
	}
	if (upper)
		return bad_ref(why, whylen,
			       "repository '%s' has upper-case letters: "
			       "registries name repositories in lower case "
			       "only",
			       r->repo);
	if (!at &&
	    strspn(r->ref, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRST"
			   "UVWXYZ0123456789_.-") != strlen(r->ref))
		return bad_ref(why, whylen,
			       "tag '%s': only letters, digits, '_', '.' and "
			       "'-' may name one",
			       r->ref);
	r->http = insecure || !strncmp(r->host, "127.0.0.1", 9) ||
		  !strncmp(r->host, "localhost", 9) ||
		  !strncmp(r->host, "[::1]", 5);
	return 0;
}

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

static size_t rbuf_write(char *b, size_t sz, size_t n, void *arg)
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
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, rbuf_write);
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
			curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, rbuf_write);
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

static const char *host_arch(void)
{
	static struct utsname u;

	if (uname(&u))
		return "amd64";
	if (!strcmp(u.machine, "x86_64"))
		return "amd64";
	if (!strcmp(u.machine, "aarch64"))
		return "arm64";
	if (!strncmp(u.machine, "armv7", 5))
		return "arm";
	if (!strcmp(u.machine, "i686") || !strcmp(u.machine, "i386"))
		return "386";
	return u.machine;
}

static int get_manifest(struct ezi_reg *g, const char *ref,
			struct ezi_rbuf *out)
{
	char url[4096];
	struct ezi_rhdrs h;
	long st;
	int err;

	snprintf(url, sizeof(url), "%s/v2/%s/manifests/%s", g->base,
		 g->ref.repo, ref);
	err = ezi_reg_req(g, "GET", url,
			  MT_MANIFEST ", " MT_INDEX ", " MT_DOCKER_MANIFEST
				      ", " MT_DOCKER_LIST,
			  NULL, NULL, 0, NULL, out, &h, &st);
	if (err)
		return err;
	if (st == 200)
		return 0;
	if (st == 401 || st == 403) {
		if (!g->err[0])
			snprintf(g->err, sizeof(g->err),
				 "manifest %s: HTTP %ld (access denied)", ref,
				 st);
		return -EACCES;
	}
	snprintf(g->err, sizeof(g->err), "manifest %s of %s: HTTP %ld%s", ref,
		 g->ref.repo, st, st == 404 ? " (not found)" : "");
	return st == 404 ? -ENOENT : -EIO;
}

int ezi_oci_resolve(struct ezi_reg *g, const struct ezi_oci_sel *sel,
		    char *blob_url, size_t size, char digest[128],
		    uint64_t *blob_size)
{
	struct ezi_rbuf out = { .max = 4 << 20 };
	struct ezi_json *j = NULL;
	const struct ezi_json *layers, *pick = NULL;
	char want_os[192] = "linux", want_arch[192], want_var[192] = "";
	int err;

	snprintf(want_arch, sizeof(want_arch), "%s", host_arch());
	if (sel->platform && *sel->platform) {
		char tmp[192], *a, *v;

		snprintf(tmp, sizeof(tmp), "%s", sel->platform);
		a = strchr(tmp, '/');
		if (!a) {
			snprintf(g->err, sizeof(g->err),
				 "--platform '%s': OS/ARCH[/VARIANT] wanted",
				 sel->platform);
			return -EINVAL;
		}
		*a++ = '\0';
		v = strchr(a, '/');
		if (v)
			*v++ = '\0';
		snprintf(want_os, sizeof(want_os), "%s", tmp);
		snprintf(want_arch, sizeof(want_arch), "%s", a);
		snprintf(want_var, sizeof(want_var), "%s", v ? v : "");
	}
	err = get_manifest(g, g->ref.ref, &out);
	for (int hop = 0; !err && hop < 2; hop++) {
		const struct ezi_json *ms;

		ezi_json_free(j);
		j = ezi_json_parse(out.p ? out.p : "");
		if (!j) {
			snprintf(g->err, sizeof(g->err),
				 "the manifest is no JSON");
			err = -EIO;
			break;
		}
		ms = ezi_json_get(j, "manifests");
		if (!ms || ms->type != EZI_JSON_ARRAY)
			break;
		/* an index: the manifest of the platform */
		const char *d = NULL;

		for (size_t i = 0; i < ms->n && !d; i++) {
			const struct ezi_json *p =
				ezi_json_get(ms->kids[i], "platform");
			const char *os = ezi_json_str(p, "os");
			const char *ar = ezi_json_str(p, "architecture");
			const char *va = ezi_json_str(p, "variant");

			if (os && ar && !strcmp(os, want_os) &&
			    !strcmp(ar, want_arch) &&
			    (!want_var[0] || (va && !strcmp(va, want_var))))
				d = ezi_json_str(ms->kids[i], "digest");
		}
		if (!d) {
			snprintf(g->err, sizeof(g->err),
				 "the index has no manifest for %s/%s%s%s",
				 want_os, want_arch, want_var[0] ? "/" : "",
				 want_var);
			err = -ENOENT;
			break;
		}
		char dd[128];

		snprintf(dd, sizeof(dd), "%s", d);
		err = get_manifest(g, dd, &out);
	}
	if (err)
		goto out;
	layers = ezi_json_get(j, "layers");
	if (!layers || layers->type != EZI_JSON_ARRAY || !layers->n) {
		snprintf(g->err, sizeof(g->err), "the manifest has no layers");
		err = -ENOENT;
		goto out;
	}
	if (sel->blob && *sel->blob) {
		for (size_t i = 0; i < layers->n && !pick; i++) {
			const char *d = ezi_json_str(layers->kids[i], "digest");

			if (d && !strcmp(d, sel->blob))
				pick = layers->kids[i];
		}
		if (!pick) {
			snprintf(g->err, sizeof(g->err),
				 "no layer %.100s in the manifest", sel->blob);
			err = -ENOENT;
			goto out;
		}
	} else if (sel->layer >= 0) {
		if ((size_t)sel->layer >= layers->n) {
			snprintf(g->err, sizeof(g->err),
				 "--layer %d: the manifest has %zu layers",
				 sel->layer, layers->n);
			err = -ENOENT;
			goto out;
		}
		pick = layers->kids[sel->layer];
	} else {
		for (size_t i = 0; i < layers->n && !pick; i++) {
			const char *mt =
				ezi_json_str(layers->kids[i], "mediaType");

			if (mt &&
			    !strncmp(mt, EZI_MT_EROFS, strlen(EZI_MT_EROFS)))
				pick = layers->kids[i];
		}
		if (!pick && layers->n == 1)
			pick = layers->kids[0];
		if (!pick) {
			snprintf(g->err, sizeof(g->err),
				 "no layer of type " EZI_MT_EROFS
				 " among %zu (choose one with --layer N or "
				 "--blob DIGEST)",
				 layers->n);
			err = -ENOENT;
			goto out;
		}
	}
	{
		const char *d = ezi_json_str(pick, "digest");
		const struct ezi_json *sz = ezi_json_get(pick, "size");

		if (!d || strncmp(d, "sha256:", 7) || strlen(d) != 71) {
			snprintf(g->err, sizeof(g->err),
				 "the layer has no sha256 digest");
			err = -EIO;
			goto out;
		}
		snprintf(digest, 128, "%s", d);
		*blob_size = sz && sz->type == EZI_JSON_NUMBER
				     ? (uint64_t)sz->num
				     : 0;
		snprintf(blob_url, size, "%s/v2/%s/blobs/%s", g->base,
			 g->ref.repo, d);
	}
out:
	ezi_json_free(j);
	free(out.p);
	return err;
}

/* ------------------------------------------------------------------ */
/* The scheme                                                          */

/* The registry cannot be reached (err, from the resolve), but the cache
 * holds the complete entry opened by this reference: its blob, read by
 * the digest in its URL (and checked against it as always), without a
 * request (r->offline). */
static int resolve_offline(struct ezfs_remote *r, int err)
{
	struct ezi_cmap m;
	const char *d;

	if (err != -EIO || !r->p.cache_dir || !*r->p.cache_dir ||
	    ezi_cache_find(r->p.cache_dir, r->name, &m))
		return err;
	d = strstr(m.url, "/blobs/sha256:");
	if (d && strlen(d + 7) < sizeof(r->digest)) {
		r->url = strdup(m.url);
		snprintf(r->digest, sizeof(r->digest), "%s", d + 7);
		err = r->url ? 0 : -ENOMEM;
		r->offline = !err;
	}
	free(m.bits);
	return err;
}

/* oci://: the reference resolved to its layer's blob URL and digest. */
static int oci_resolve(struct ezfs_remote *r)
{
	struct ezi_oci_sel sel = { .layer = r->p.layer,
				   .blob = r->p.blob,
				   .platform = r->p.platform };
	struct ezi_oci_ref o;
	struct ezi_reg *g;
	char url[4096], why[700];
	uint64_t size = 0;
	int err;

	if (ezi_oci_parse(r->name, r->p.insecure, &o, why, sizeof(why))) {
		ezi_rlog(r, EZFS_LOG_ERROR, "%s", why);
		return -EINVAL;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	r->sd = g;
	ezi_reg_init(g, &o, r->p.log, r->p.log_arg, r->p.timeout_ms);
	err = ezi_oci_resolve(g, &sel, url, sizeof(url), r->digest, &size);
	if (!err) {
		r->url = strdup(url);
		return r->url ? 0 : -ENOMEM;
	}
	if (!resolve_offline(r, err)) {
		ezi_rlog(r, EZFS_LOG_WARN,
			 "registry %s unreachable; using the cached blob %s",
			 o.host, r->digest);
		ezi_rlog(r, EZFS_LOG_INFO, "%s", g->err);
		return 0;
	}
	ezi_rlog(r, EZFS_LOG_ERROR, "%s", g->err);
	return err;
}

static int oci_sign(struct ezfs_remote *r, void *e, struct curl_slist **h)
{
	char a[4200];
	struct curl_slist *n;

	(void)e;
	ezi_reg_auth(r->sd, a, sizeof(a));
	if (!a[0])
		return 0;
	n = curl_slist_append(*h, a);
	if (!n)
		return -ENOMEM;
	*h = n;
	return 0;
}

static int oci_reauth(struct ezfs_remote *r, const char *www, char *why,
		      size_t whylen)
{
	struct ezi_reg *g = r->sd;

	if (!ezi_reg_reauth(g, www))
		return 0;
	snprintf(why, whylen, "%.400s", g->err);
	return -EACCES;
}

static void oci_release(struct ezfs_remote *r)
{
	if (r->sd) {
		ezi_reg_destroy(r->sd);
		free(r->sd);
	}
	r->sd = NULL;
}

const struct ezi_scheme ezi_scheme_oci = {
	.prefix = "oci://",
	.resolve = oci_resolve,
	.sign = oci_sign,
	.reauth = oci_reauth,
	.release = oci_release,
};
