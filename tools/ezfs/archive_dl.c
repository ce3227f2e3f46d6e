/* SPDX-License-Identifier: MIT */
/*
 * archive_dl.c - libarchive through dlopen (see archive_dl.h for why),
 * by the name of its ABI since 3.0: libarchive.so.13.
 */
#ifdef EZFS_HAVE_LIBARCHIVE
#define EZFS_ARCHIVE_DL_IMPL
#include <dlfcn.h>
#include <stdio.h>

#include "archive_dl.h"

#define ARCHIVE_SONAME "libarchive.so.13"

struct archive_dl archive_dl;

int archive_dl_load(const char **why)
{
	static char msg[256];
	static int state; /* 0: not tried, 1: loaded, -1: failed */
	void *h;

	/* one thread: export calls it from the command's main thread */
	if (!state) {
		state = -1;
		h = dlopen(ARCHIVE_SONAME, RTLD_NOW | RTLD_LOCAL);
		if (!h)
			snprintf(msg, sizeof(msg), "%s", dlerror());
#define EZFS_ARCHIVE_SYM(f)                                                    \
	if (h && !*msg && !(*(void **)&archive_dl.f = dlsym(h, #f)))           \
		snprintf(msg, sizeof(msg), ARCHIVE_SONAME ": no %s", #f);
		EZFS_ARCHIVE_FUNCS(EZFS_ARCHIVE_SYM)
#undef EZFS_ARCHIVE_SYM
		if (!*msg)
			state = 1;
	}
	*why = msg;
	return state > 0 ? 0 : -1;
}
#endif
