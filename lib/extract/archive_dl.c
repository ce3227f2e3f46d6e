/* SPDX-License-Identifier: MIT */
/*
 * archive_dl.c - libarchive through dlopen (see archive_dl.h for why),
 * by the name of its ABI since 3.0: libarchive.so.13.
 */
#ifdef EZFS_HAVE_LIBARCHIVE
#define EZFS_ARCHIVE_DL_IMPL
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "extract/archive_dl.h"

#define ARCHIVE_SONAME "libarchive.so.13"

/* Set once, under the once below; read-only after. */
struct archive_dl ezi_archive_dl;
static char dl_msg[256];
static int dl_state; /* 1: loaded, -1: failed */
static pthread_once_t dl_once = PTHREAD_ONCE_INIT;

static void dl_load(void)
{
	void *h = dlopen(ARCHIVE_SONAME, RTLD_NOW | RTLD_LOCAL);

	dl_state = -1;
	if (!h)
		snprintf(dl_msg, sizeof(dl_msg), "%s", dlerror());
#define EZFS_ARCHIVE_SYM(f)                                                    \
	if (h && !*dl_msg && !(*(void **)&ezi_archive_dl.f = dlsym(h, #f)))    \
		snprintf(dl_msg, sizeof(dl_msg), ARCHIVE_SONAME ": no %s", #f);
	EZFS_ARCHIVE_FUNCS(EZFS_ARCHIVE_SYM)
#undef EZFS_ARCHIVE_SYM
	if (!*dl_msg)
		dl_state = 1;
}

int ezi_archive_dl_load(const char **why)
{
	pthread_once(&dl_once, dl_load);
	*why = dl_msg;
	return dl_state > 0 ? 0 : -1;
}
#endif
