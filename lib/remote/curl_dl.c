/* SPDX-License-Identifier: MIT */
/*
 * curl_dl.c - libcurl through dlopen (see curl_dl.h for why). The name is
 * the one libcurl's ABI has had since 7.16: libcurl.so.4, as Debian's
 * libcurl4 installs it.
 */
#define EZI_CURL_DL_IMPL
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include "remote/curl_dl.h"

#define CURL_SONAME "libcurl.so.4"

struct ezi_curl ezi_curl;

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static char curl_why[256];
static int curl_err;

static void curl_open(void)
{
	void *h = dlopen(CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
	const char *miss = NULL;

	if (!h) {
		snprintf(curl_why, sizeof(curl_why), "%s", dlerror());
		curl_err = -ELIBACC;
		return;
	}
#define EZI_CURL_SYM(f)                                                        \
	*(void **)&ezi_curl.f = dlsym(h, #f);                                  \
	if (!ezi_curl.f && !miss)                                              \
		miss = #f;
	EZI_CURL_FUNCS(EZI_CURL_SYM)
#undef EZI_CURL_SYM
	if (miss) {
		snprintf(curl_why, sizeof(curl_why), "%s: no %s", CURL_SONAME,
			 miss);
		curl_err = -ELIBACC;
		return;
	}
	/* the library stays loaded: its handles live as long as the process */
	ezi_curl.curl_global_init(CURL_GLOBAL_DEFAULT);
}

int ezi_curl_load(const char **why)
{
	pthread_once(&curl_once, curl_open);
	*why = curl_why;
	return curl_err;
}
