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
#include <ctype.h>
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
static int s3_open(const char *s3url, struct ezi_s3 **out, char **http_url,
		   char *why, size_t whylen)
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
	if (strncasecmp(s3url, "s3://", 5) || !slash || !slash[1] ||
	    !bucket_ok(b, (size_t)(slash - b))) {
		snprintf(why, whylen,
			 "not an object s3://BUCKET/KEY (bucket: 3 to 63 of "
			 "a-z 0-9 . -)");
		return -EINVAL;
	}
	blen = (size_t)(slash - b);
	if (encode_key(slash + 1, key, sizeof(key)) < 0) {
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
	int err = s3_open(r->name, &s, &r->url, why, sizeof(why));

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

const struct ezi_scheme ezi_scheme_s3 = {
	.prefix = "s3://",
	.resolve = s3_resolve,
	.sign = s3_sign,
	.release = s3_release,
};
