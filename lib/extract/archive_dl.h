/* SPDX-License-Identifier: MIT */
/*
 * archive_dl.h - libarchive, loaded by ezfs_export only (archive_dl.c).
 *
 * Linked at build time, libarchive and what it needs (libxml2 with ICU,
 * libacl, libbz2) were loaded and relocated by every ezfs command: 1.9 ms
 * of each start. lib/extract/export.c includes this header instead of
 * <archive.h>; its libarchive calls go through the table below.
 */
#ifndef EZFS_EXTRACT_ARCHIVE_DL_H
#define EZFS_EXTRACT_ARCHIVE_DL_H

#include <archive.h>
#include <archive_entry.h>

#define EZFS_ARCHIVE_FUNCS(X)                                                  \
	X(archive_entry_free)                                                  \
	X(archive_entry_hardlink)                                              \
	X(archive_entry_new)                                                   \
	X(archive_entry_set_dev)                                               \
	X(archive_entry_set_gid)                                               \
	X(archive_entry_set_hardlink)                                          \
	X(archive_entry_set_ino64)                                             \
	X(archive_entry_set_mode)                                              \
	X(archive_entry_set_mtime)                                             \
	X(archive_entry_set_nlink)                                             \
	X(archive_entry_set_pathname)                                          \
	X(archive_entry_set_pathname_utf8)                                     \
	X(archive_entry_set_rdevmajor)                                         \
	X(archive_entry_set_rdevminor)                                         \
	X(archive_entry_set_size)                                              \
	X(archive_entry_set_symlink)                                           \
	X(archive_entry_set_symlink_utf8)                                      \
	X(archive_entry_set_uid)                                               \
	X(archive_entry_sparse_add_entry)                                      \
	X(archive_entry_xattr_add_entry)                                       \
	X(archive_error_string)                                                \
	X(archive_write_add_filter_gzip)                                       \
	X(archive_write_add_filter_xz)                                         \
	X(archive_write_add_filter_zstd)                                       \
	X(archive_write_close)                                                 \
	X(archive_write_data)                                                  \
	X(archive_write_free)                                                  \
	X(archive_write_header)                                                \
	X(archive_write_new)                                                   \
	X(archive_write_open_fd)                                               \
	X(archive_write_set_bytes_in_last_block)                               \
	X(archive_write_set_format_cpio_newc)                                  \
	X(archive_write_set_format_gnutar)                                     \
	X(archive_write_set_format_option)                                     \
	X(archive_write_set_format_pax)                                        \
	X(archive_write_set_format_zip)

#define EZFS_ARCHIVE_PTR(f) __typeof__(f) *f;
struct archive_dl {
	EZFS_ARCHIVE_FUNCS(EZFS_ARCHIVE_PTR)
};
#undef EZFS_ARCHIVE_PTR
extern struct archive_dl ezi_archive_dl;

/* Load libarchive (once per process; thread-safe): 0, or -1 with the
 * loader's message in *why. */
int ezi_archive_dl_load(const char **why);

#ifndef EZFS_ARCHIVE_DL_IMPL
#define archive_entry_free	    ezi_archive_dl.archive_entry_free
#define archive_entry_hardlink	    ezi_archive_dl.archive_entry_hardlink
#define archive_entry_new	    ezi_archive_dl.archive_entry_new
#define archive_entry_set_dev	    ezi_archive_dl.archive_entry_set_dev
#define archive_entry_set_gid	    ezi_archive_dl.archive_entry_set_gid
#define archive_entry_set_hardlink  ezi_archive_dl.archive_entry_set_hardlink
#define archive_entry_set_ino64	    ezi_archive_dl.archive_entry_set_ino64
#define archive_entry_set_mode	    ezi_archive_dl.archive_entry_set_mode
#define archive_entry_set_mtime	    ezi_archive_dl.archive_entry_set_mtime
#define archive_entry_set_nlink	    ezi_archive_dl.archive_entry_set_nlink
#define archive_entry_set_pathname  ezi_archive_dl.archive_entry_set_pathname
#define archive_entry_set_rdevmajor ezi_archive_dl.archive_entry_set_rdevmajor
#define archive_entry_set_rdevminor ezi_archive_dl.archive_entry_set_rdevminor
#define archive_entry_set_size	    ezi_archive_dl.archive_entry_set_size
#define archive_entry_set_symlink   ezi_archive_dl.archive_entry_set_symlink
#define archive_entry_set_uid	    ezi_archive_dl.archive_entry_set_uid
#define archive_entry_xattr_add_entry                                          \
	ezi_archive_dl.archive_entry_xattr_add_entry
#define archive_entry_set_pathname_utf8                                        \
	ezi_archive_dl.archive_entry_set_pathname_utf8
#define archive_entry_set_symlink_utf8                                         \
	ezi_archive_dl.archive_entry_set_symlink_utf8
#define archive_entry_sparse_add_entry                                         \
	ezi_archive_dl.archive_entry_sparse_add_entry
#define archive_error_string ezi_archive_dl.archive_error_string
#define archive_write_add_filter_gzip                                          \
	ezi_archive_dl.archive_write_add_filter_gzip
#define archive_write_add_filter_xz ezi_archive_dl.archive_write_add_filter_xz
#define archive_write_add_filter_zstd                                          \
	ezi_archive_dl.archive_write_add_filter_zstd
#define archive_write_close   ezi_archive_dl.archive_write_close
#define archive_write_data    ezi_archive_dl.archive_write_data
#define archive_write_free    ezi_archive_dl.archive_write_free
#define archive_write_header  ezi_archive_dl.archive_write_header
#define archive_write_new     ezi_archive_dl.archive_write_new
#define archive_write_open_fd ezi_archive_dl.archive_write_open_fd
#define archive_write_set_bytes_in_last_block                                  \
	ezi_archive_dl.archive_write_set_bytes_in_last_block
#define archive_write_set_format_cpio_newc                                     \
	ezi_archive_dl.archive_write_set_format_cpio_newc
#define archive_write_set_format_gnutar                                        \
	ezi_archive_dl.archive_write_set_format_gnutar
#define archive_write_set_format_option                                        \
	ezi_archive_dl.archive_write_set_format_option
#define archive_write_set_format_pax ezi_archive_dl.archive_write_set_format_pax
#define archive_write_set_format_zip ezi_archive_dl.archive_write_set_format_zip
#endif

#endif
