/* SPDX-License-Identifier: MIT */
/*
 * s3.c - s3://BUCKET/KEY: where the object is and how requests for it are
 * signed.
 *
 * The object is fetched over HTTP(S) with Range like any plain image. The
 * endpoint, the region and the credentials come from where the AWS tools
 * take them: AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (then path-style
 * ENDPOINT/BUCKET/KEY, as S3-compatible servers expect), else the bucket's
 * virtual host https://BUCKET.s3.REGION.amazonaws.com/KEY;
 * AWS_REGION or AWS_DEFAULT_REGION, else the profile's region in
 * ~/.aws/config, else us-east-1; AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY
 * and AWS_SESSION_TOKEN, else the profile (AWS_PROFILE, else "default") in
 * ~/.aws/credentials (AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE move
 * them). Without credentials requests go unsigned (public objects).
 *
 * Signature Version 4 is libcurl's (CURLOPT_AWS_SIGV4): it signs the host,
 * x-amz-date and every x-amz-* header given, here x-amz-content-sha256
 * (the SHA-256 of the empty body of a GET, which is also what libcurl
 * hashes) and x-amz-security-token.
 */
#define _GNU_SOURCE /* asprintf */
#include <ctype.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote/curl_dl.h"

#include "remote/internal.h"

#define EMPTY_SHA256                                                           \
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct ezi_s3 {
	int sign;
	char sigv4[160];   /* "aws:amz:REGION:s3" */
	char userpwd[512]; /* KEY:SECRET */
	char token[2048];  /* the session token, or "" */
};

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* The value of key in [section] of an INI file (the AWS tools' format:
 * "key = value" lines, '#' and ';' comments). 0, or -1 when absent. */
static int ini_get(const char *path, const char *section, const char *key,
		   char *out, size_t size)
{
	char line[4096], want[300];
	int in = 0, found = -1;
	FILE *f;

	if (!path || !(f = fopen(path, "re")))
		return -1;
	snprintf(want, sizeof(want), "[%s]", section);
	while (found < 0 && fgets(line, sizeof(line), f)) {
		char *s = line, *e, *eq;

		while (isspace((unsigned char)*s))
			s++;
		e = s + strlen(s);
		while (e > s && isspace((unsigned char)e[-1]))
			*--e = '\0';
		if (*s == '#' || *s == ';' || !*s)
			continue;
		if (*s == '[') {
			in = !strcmp(s, want);
			continue;
		}
		eq = strchr(s, '=');
		if (!in || !eq)
			continue;
		e = eq;
		while (e > s && isspace((unsigned char)e[-1]))
			e--;
		if ((size_t)(e - s) != strlen(key) || strncmp(s, key, e - s))
			continue;
		eq++;
		while (isspace((unsigned char)*eq))
			eq++;
		snprintf(out, size, "%s", eq);
		found = 0;
	}
	fclose(f);
	return found;
}

/* ~/.aws/NAME, or the file an environment variable names. */
static void aws_file(const char *var, const char *name, char *out, size_t n)
{
	const char *v = env(var), *home = env("HOME");

	if (v)
		snprintf(out, n, "%s", v);
	else if (home)
		snprintf(out, n, "%s/.aws/%s", home, name);
	else
		out[0] = '\0';
}

/* Percent-encode a key for a URL path: unreserved bytes and '/' as they
 * are (S3 keys are paths; its SigV4 encodes the path once). */
static int encode_key(const char *k, char *out, size_t size)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *k; k++) {
		unsigned char c = (unsigned char)*k;

		if (o + 4 > size)
			return -ENAMETOOLONG;
		if (isalnum(c) || strchr("-._~/", c)) {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
	return 0;
}

/* A bucket name as S3 allows it (3 to 63 of a-z 0-9 . -): it becomes a
 * host name, so nothing else may pass. */
static int bucket_ok(const char *b, size_t n)
{
	size_t i;

	if (n < 3 || n > 63)
		return 0;
	for (i = 0; i < n; i++)
		if (!islower((unsigned char)b[i]) &&
		    !isdigit((unsigned char)b[i]) && b[i] != '.' && b[i] != '-')
			return 0;
	return 1;
}

/* The object's http(s) URL (*http_url, malloc'd) and the signing state
 * (*out) from the AWS environment and files; 0, or a negative errno with
 * why set. */
static int s3_open(const char *s3url, int list, struct ezi_s3 **out,
		   char **http_url, char *why, size_t whylen)
{
	char cfg[4096], cred[4096], region[128], section[300], key[4096];
	char id[256] = "", secret[256] = "", ep[1024] = "";
	const char *b = s3url + 5, *slash = strchr(b, '/');
	const char *profile = env("AWS_PROFILE"), *v;
	struct ezi_s3 *s;
	size_t blen, need;
	char *u;

	*out = NULL;
	*http_url = NULL;
	if (list && !slash)
		slash = b + strlen(b);
	if (strncasecmp(s3url, "s3://", 5) || !slash || (!list && !slash[1]) ||
	    !bucket_ok(b, (size_t)(slash - b))) {
		snprintf(why, whylen, "not %s (bucket: 3 to 63 of a-z 0-9 . -)",
			 list ? "a bucket s3://BUCKET[/PREFIX]"
			      : "an object s3://BUCKET/KEY");
		return -EINVAL;
	}
	blen = (size_t)(slash - b);
	/* a listing: the bucket's URL, the prefix a query parameter */
	if (encode_key(list ? "" : slash + 1, key, sizeof(key)) < 0) {
		snprintf(why, whylen, "the key is too long");
		return -EINVAL;
	}
	if (!profile)
		profile = "default";
	aws_file("AWS_CONFIG_FILE", "config", cfg, sizeof(cfg));
	aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials", cred,
		 sizeof(cred));
	/* ~/.aws/config names profiles "profile X", except the default */
	if (!strcmp(profile, "default"))
		snprintf(section, sizeof(section), "default");
	else
		snprintf(section, sizeof(section), "profile %s", profile);

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	if ((v = env("AWS_REGION")) || (v = env("AWS_DEFAULT_REGION")))
		snprintf(region, sizeof(region), "%s", v);
	else if (ini_get(cfg, section, "region", region, sizeof(region)))
		snprintf(region, sizeof(region), "us-east-1");
	if ((v = env("AWS_ENDPOINT_URL_S3")) || (v = env("AWS_ENDPOINT_URL")))
		snprintf(ep, sizeof(ep), "%s", v);
	else
		ini_get(cfg, section, "endpoint_url", ep, sizeof(ep));
	if (env("AWS_ACCESS_KEY_ID") && env("AWS_SECRET_ACCESS_KEY")) {
		snprintf(id, sizeof(id), "%s", env("AWS_ACCESS_KEY_ID"));
		snprintf(secret, sizeof(secret), "%s",
			 env("AWS_SECRET_ACCESS_KEY"));
		if ((v = env("AWS_SESSION_TOKEN")))
			snprintf(s->token, sizeof(s->token), "%s", v);
	} else if (!ini_get(cred, profile, "aws_access_key_id", id,
			    sizeof(id)) &&
		   !ini_get(cred, profile, "aws_secret_access_key", secret,
			    sizeof(secret))) {
		ini_get(cred, profile, "aws_session_token", s->token,
			sizeof(s->token));
	} else {
		id[0] = secret[0] = '\0';
	}
	/* the region is a label of the host and of the signature's scope */
	for (v = region; *v; v++)
		if (!isalnum((unsigned char)*v) && *v != '-') {
			snprintf(why, whylen, "invalid AWS region '%s'",
				 region);
			free(s);
			return -EINVAL;
		}
	if (id[0] && secret[0]) {
		s->sign = 1;
		snprintf(s->sigv4, sizeof(s->sigv4), "aws:amz:%s:s3", region);
		snprintf(s->userpwd, sizeof(s->userpwd), "%s:%s", id, secret);
	}
	while (ep[0] && ep[strlen(ep) - 1] == '/')
		ep[strlen(ep) - 1] = '\0';
	if (ep[0] && strncasecmp(ep, "http://", 7) &&
	    strncasecmp(ep, "https://", 8)) {
		snprintf(why, whylen,
			 "AWS endpoint '%.200s' is not an http:// or https:// "
			 "URL",
			 ep);
		free(s);
		return -EINVAL;
	}
	need = strlen(ep) + strlen(region) + blen + strlen(key) + 64;
	u = malloc(need);
	if (!u) {
		free(s);
		return -ENOMEM;
	}
	if (ep[0])
		snprintf(u, need, "%s/%.*s/%s", ep, (int)blen, b, key);
	else
		snprintf(u, need, "https://%.*s.s3.%s.amazonaws.com/%s",
			 (int)blen, b, region, key);
	*http_url = u;
	*out = s;
	return 0;
}

/* A request's SigV4 signing, and its x-amz-* headers appended to *hdrs
 * (nothing for an unsigned, anonymous state); 0 or -ENOMEM. */
static int s3_apply(const struct ezi_s3 *s, void *e, struct curl_slist **hdrs)
{
	char h[2200];
	struct curl_slist *n;

	if (!s || !s->sign)
		return 0;
	curl_easy_setopt(e, CURLOPT_AWS_SIGV4, s->sigv4);
	curl_easy_setopt(e, CURLOPT_USERPWD, s->userpwd);
	n = curl_slist_append(*hdrs, "x-amz-content-sha256: " EMPTY_SHA256);
	if (!n)
		return -ENOMEM;
	*hdrs = n;
	if (s->token[0]) {
		snprintf(h, sizeof(h), "x-amz-security-token: %s", s->token);
		n = curl_slist_append(*hdrs, h);
		if (!n)
			return -ENOMEM;
		*hdrs = n;
	}
	return 0;
}

static void s3_free(struct ezi_s3 *s)
{
	if (s)
		memset(s->userpwd, 0, sizeof(s->userpwd));
	free(s);
}

static int s3_resolve(struct ezfs_remote *r)
{
	struct ezi_s3 *s = NULL;
	char why[256];
	int err = s3_open(r->name, 0, &s, &r->url, why, sizeof(why));

	if (err) {
		ezi_rlog(r, EZFS_LOG_ERROR, "%s", why);
		return err;
	}
	r->sd = s;
	return 0;
}

static int s3_sign(struct ezfs_remote *r, void *e, struct curl_slist **h)
{
	return s3_apply(r->sd, e, h);
}

static void s3_release(struct ezfs_remote *r)
{
	s3_free(r->sd);
	r->sd = NULL;
}

/* ------------------------------------------------------------------ */
/* ListObjectsV2 (ezfs_remote_s3_list)                                 */

/* The text of the first <tag>...</tag> in [p, end) into out (XML's five
 * entities and numeric references decoded): the byte after it, or NULL. */
static const char *xml_text(const char *p, const char *end, const char *tag,
			    char *out, size_t size)
{
	char open[64], close[64];
	const char *a, *z;
	size_t o = 0;

	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	a = strstr(p, open);
	if (!a || a >= end)
		return NULL;
	a += strlen(open);
	z = strstr(a, close);
	if (!z || z > end)
		return NULL;
	while (a < z && o + 5 < size) {
		static const char *const ent[] = { "&amp;", "&lt;", "&gt;",
						   "&quot;", "&apos;" };
		static const char chr[] = "&<>\"'";
		unsigned i;

		if (*a != '&') {
			out[o++] = *a++;
			continue;
		}
		for (i = 0; i < 5; i++)
			if (!strncmp(a, ent[i], strlen(ent[i])))
				break;
		if (i < 5) {
			out[o++] = chr[i];
			a += strlen(ent[i]);
		} else if (a[1] == '#') {
			char *e;
			unsigned long c = a[2] == 'x' ? strtoul(a + 3, &e, 16)
						      : strtoul(a + 2, &e, 10);

			if (*e != ';' || !c || c > 0x10ffff)
				return NULL;
			if (c < 0x80) {
				out[o++] = (char)c;
			} else if (c < 0x800) {
				out[o++] = (char)(0xc0 | (c >> 6));
				out[o++] = (char)(0x80 | (c & 63));
			} else if (c < 0x10000) {
				out[o++] = (char)(0xe0 | (c >> 12));
				out[o++] = (char)(0x80 | ((c >> 6) & 63));
				out[o++] = (char)(0x80 | (c & 63));
			} else {
				out[o++] = (char)(0xf0 | (c >> 18));
				out[o++] = (char)(0x80 | ((c >> 12) & 63));
				out[o++] = (char)(0x80 | ((c >> 6) & 63));
				out[o++] = (char)(0x80 | (c & 63));
			}
			a = e + 1;
		} else {
			return NULL;
		}
	}
	if (a < z)
		return NULL; /* longer than out */
	out[o] = '\0';
	return z + strlen(close);
}

/* An S3 time, 2024-01-02T03:04:05[.000]Z: seconds since the epoch, or -1 */
static int64_t s3_time(const char *t)
{
	int y, mo, d, h, mi, sec;
	int64_t days;

	if (sscanf(t, "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &sec) !=
	    6)
		return -1;
	/* days from civil (Howard Hinnant's algorithm) */
	y -= mo <= 2;
	days = (int64_t)(y >= 0 ? y : y - 399) / 400 * 146097;
	{
		int64_t yoe = y - (y >= 0 ? y : y - 399) / 400 * 400;
		int64_t doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;

		days += yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
	}
	return days * 86400 + h * 3600 + mi * 60 + sec;
}

int ezfs_remote_s3_list(const char *url, const struct ezfs_remote_params *p,
			int (*fn)(void *arg, const char *key, uint64_t size,
				  int64_t mtime),
			void *arg)
{
	struct ezfs_remote_params d;
	struct ezi_s3 *s = NULL;
	char *base = NULL, *tok = NULL, why[512] = "";
	const char *slash, *pfx;
	int err;

	err = ezi_remote_begin(&p, &d);
	if (err)
		return err;
	err = s3_open(url, 1, &s, &base, why, sizeof(why));
	slash = strchr(url + 5, '/');
	pfx = slash ? slash + 1 : "";
	for (int page = 0; !err; page++) {
		struct curl_slist *h = NULL;
		struct ezi_rbuf body = { .max = 64u << 20 };
		char *q = NULL, *ep = NULL, *et = NULL;
		const char *c, *end;
		long st = 0;
		CURL *e = curl_easy_init();
		CURLcode rc;

		if (!e) {
			err = -ENOMEM;
			break;
		}
		ep = curl_easy_escape(e, pfx, 0);
		et = tok ? curl_easy_escape(e, tok, 0) : NULL;
		/* the query's parameters in the order SigV4 sorts them */
		if (!ep || (tok && !et) ||
		    asprintf(&q, "%s?%s%s%slist-type=2&prefix=%s", base,
			     et ? "continuation-token=" : "", et ? et : "",
			     et ? "&" : "", ep) < 0) {
			q = NULL;
			err = -ENOMEM;
		}
		curl_free(ep);
		curl_free(et);
		if (!err)
			err = s3_apply(s, e, &h);
		if (!err) {
			curl_easy_setopt(e, CURLOPT_URL, q);
			curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
			curl_easy_setopt(e, CURLOPT_WRITEFUNCTION,
					 ezi_rbuf_write);
			curl_easy_setopt(e, CURLOPT_WRITEDATA, &body);
			curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
			curl_easy_setopt(
				e, CURLOPT_CONNECTTIMEOUT_MS,
				(long)(p->timeout_ms ? p->timeout_ms : 10000));
			curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
			curl_easy_setopt(
				e, CURLOPT_LOW_SPEED_TIME,
				(long)((p->timeout_ms ? p->timeout_ms : 10000) /
				       1000));
			rc = curl_easy_perform(e);
			curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &st);
			if (rc != CURLE_OK) {
				snprintf(why, sizeof(why), "%s: %s", base,
					 curl_easy_strerror(rc));
				err = -EIO;
			} else if (st != 200) {
				char code[128] = "";

				if (body.p)
					xml_text(body.p, body.p + body.n,
						 "Code", code, sizeof(code));
				snprintf(why, sizeof(why),
					 "%s: ListObjectsV2: HTTP %ld%s%s",
					 base, st, code[0] ? " " : "", code);
				err = st == 404		       ? -ENOENT
				      : st == 403 || st == 401 ? -EACCES
							       : -EIO;
			}
		}
		curl_slist_free_all(h);
		curl_easy_cleanup(e);
		free(q);
		c = body.p;
		end = c ? c + body.n : NULL;
		if (!err && (!c || !strstr(c, "<ListBucketResult"))) {
			snprintf(why, sizeof(why),
				 "%s: ListObjectsV2: no ListBucketResult",
				 base);
			err = -EIO;
		}
		/* each <Contents>: Key, Size, LastModified */
		while (!err && (c = strstr(c, "<Contents>")) != NULL) {
			const char *ce = strstr(c, "</Contents>");
			char key[4096], num[64], tm[64];

			if (!ce || !xml_text(c, ce, "Key", key, sizeof(key)) ||
			    !xml_text(c, ce, "Size", num, sizeof(num))) {
				snprintf(why, sizeof(why),
					 "%s: ListObjectsV2: a malformed "
					 "Contents entry",
					 base);
				err = -EIO;
				break;
			}
			if (!xml_text(c, ce, "LastModified", tm, sizeof(tm)))
				tm[0] = '\0';
			err = fn(arg, key, strtoull(num, NULL, 10),
				 s3_time(tm));
			c = ce;
		}
		if (!err) {
			char more[16] = "", next[2048];

			xml_text(body.p, end, "IsTruncated", more,
				 sizeof(more));
			free(tok);
			tok = NULL;
			if (strcmp(more, "true")) {
				free(body.p);
				break;
			}
			if (!xml_text(body.p, end, "NextContinuationToken",
				      next, sizeof(next)) ||
			    !(tok = strdup(next))) {
				snprintf(why, sizeof(why),
					 "%s: ListObjectsV2: truncated without "
					 "a NextContinuationToken",
					 base);
				err = -EIO;
			}
		}
		free(body.p);
	}
	if (err && why[0] && p->log)
		p->log(p->log_arg, EZFS_LOG_ERROR, why);
	free(tok);
	free(base);
	s3_free(s);
	return err;
}

const struct ezi_scheme ezi_scheme_s3 = {
	.prefix = "s3://",
	.resolve = s3_resolve,
	.sign = s3_sign,
	.release = s3_release,
};
