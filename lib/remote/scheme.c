/* SPDX-License-Identifier: MIT */
/*
 * scheme.c - the table of schemes a source reads through (struct
 * ezi_scheme, internal.h): plain http(s) here, oci:// (oci.c) and s3://
 * (s3.c). Each turns the name it is given into the URL whose bytes are
 * fetched with Range, and signs the requests sent there; the fetcher,
 * the blocks and the cache are the same for all.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "remote/internal.h"

static int http_resolve(struct ezfs_remote *r)
{
	r->url = strdup(r->name);
	return r->url ? 0 : -ENOMEM;
}

static const struct ezi_scheme scheme_http = {
	.prefix = "http://",
	.resolve = http_resolve,
};

static const struct ezi_scheme scheme_https = {
	.prefix = "https://",
	.resolve = http_resolve,
};

static const struct ezi_scheme *const schemes[] = {
	&scheme_http,
	&scheme_https,
	&ezi_scheme_oci,
	&ezi_scheme_s3,
};

const struct ezi_scheme *ezi_scheme_of(const char *url)
{
	if (!url)
		return NULL;
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (!strncasecmp(url, schemes[i]->prefix,
				 strlen(schemes[i]->prefix)))
			return schemes[i];
	return NULL;
}

int ezfs_remote_is_url(const char *s)
{
	return ezi_scheme_of(s) != NULL;
}

int ezi_remote_begin(const struct ezfs_remote_params **p,
		     struct ezfs_remote_params *d)
{
	if (!*p) {
		ezfs_remote_params_init(d);
		*p = d;
	}
	return ezi_curl_ready(*p);
}
