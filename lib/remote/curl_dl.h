/* SPDX-License-Identifier: MIT */
/*
 * curl_dl.h - libcurl, loaded when a URL is first opened (curl_dl.c).
 *
 * Linked at build time, libcurl and the 30 libraries it needs (TLS,
 * Kerberos, LDAP, HTTP/2, IDN) were loaded and relocated by every ezfs
 * command: 4.6 ms of the 10.7 ms an `ezfs --version` took. The files of
 * lib/remote include this header instead of <curl/curl.h>; the libcurl
 * calls they make go through the table below.
 */
#ifndef EZFS_REMOTE_CURL_DL_H
#define EZFS_REMOTE_CURL_DL_H

/* plain prototypes: the type-checking macros would hide the calls */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

#define EZI_CURL_FUNCS(X)                                                      \
	X(curl_easy_cleanup)                                                   \
	X(curl_easy_escape)                                                    \
	X(curl_easy_getinfo)                                                   \
	X(curl_easy_init)                                                      \
	X(curl_easy_perform)                                                   \
	X(curl_easy_setopt)                                                    \
	X(curl_easy_strerror)                                                  \
	X(curl_free)                                                           \
	X(curl_global_init)                                                    \
	X(curl_multi_add_handle)                                               \
	X(curl_multi_cleanup)                                                  \
	X(curl_multi_info_read)                                                \
	X(curl_multi_init)                                                     \
	X(curl_multi_perform)                                                  \
	X(curl_multi_poll)                                                     \
	X(curl_multi_remove_handle)                                            \
	X(curl_slist_append)                                                   \
	X(curl_slist_free_all)

#define EZI_CURL_PTR(f) __typeof__(f) *f;
struct ezi_curl {
	EZI_CURL_FUNCS(EZI_CURL_PTR)
};
#undef EZI_CURL_PTR
extern struct ezi_curl ezi_curl;

/*
 * Load libcurl and run curl_global_init, once per process (thread-safe):
 * 0, or -ELIBACC with the reason (the library's name and the loader's
 * message) in *why.
 */
int ezi_curl_load(const char **why);

#ifndef EZI_CURL_DL_IMPL
/* curl.h makes these two macros that check the number of arguments */
#undef curl_easy_getinfo
#undef curl_easy_setopt
#define curl_easy_cleanup	 ezi_curl.curl_easy_cleanup
#define curl_easy_escape	 ezi_curl.curl_easy_escape
#define curl_easy_getinfo	 ezi_curl.curl_easy_getinfo
#define curl_easy_init		 ezi_curl.curl_easy_init
#define curl_easy_perform	 ezi_curl.curl_easy_perform
#define curl_easy_setopt	 ezi_curl.curl_easy_setopt
#define curl_easy_strerror	 ezi_curl.curl_easy_strerror
#define curl_free		 ezi_curl.curl_free
#define curl_global_init	 ezi_curl.curl_global_init
#define curl_multi_add_handle	 ezi_curl.curl_multi_add_handle
#define curl_multi_cleanup	 ezi_curl.curl_multi_cleanup
#define curl_multi_info_read	 ezi_curl.curl_multi_info_read
#define curl_multi_init		 ezi_curl.curl_multi_init
#define curl_multi_perform	 ezi_curl.curl_multi_perform
#define curl_multi_poll		 ezi_curl.curl_multi_poll
#define curl_multi_remove_handle ezi_curl.curl_multi_remove_handle
#define curl_slist_append	 ezi_curl.curl_slist_append
#define curl_slist_free_all	 ezi_curl.curl_slist_free_all
#endif

#endif
