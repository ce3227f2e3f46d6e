/* SPDX-License-Identifier: MIT */
/*
 * archive_dl.h - libarchive, loaded by `ezfs export` only (archive_dl.c).
 *
 * Linked at build time, libarchive and what it needs (libxml2 with ICU,
 * libacl, libbz2) were loaded and relocated by every ezfs command: 1.9 ms
 * of each start. export.c includes this header instead of <archive.h>;
 * its libarchive calls go through the table below.
 */
#ifndef EZFS_TOOL_ARCHIVE_DL_H
#define EZFS_TOOL_ARCHIVE_DL_H

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
	X(archive_entry_set_rdevmajor)                                         \
	X(archive_entry_set_rdevminor)                                         \
	X(archive_entry_set_size)                                              \
	X(archive_entry_set_symlink)                                           \
	X(archive_entry_set_uid)                                               \
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
extern struct archive_dl archive_dl;

/* Load libarchive (once): 0, or -1 with the loader's message in *why. */
int archive_dl_load(const char **why);

#ifndef EZFS_ARCHIVE_DL_IMPL
#define archive_entry_free	      archive_dl.archive_entry_free
#define archive_entry_hardlink	      archive_dl.archive_entry_hardlink
#define archive_entry_new	      archive_dl.archive_entry_new
#define archive_entry_set_dev	      archive_dl.archive_entry_set_dev
#define archive_entry_set_gid	      archive_dl.archive_entry_set_gid
#define archive_entry_set_hardlink    archive_dl.archive_entry_set_hardlink
#define archive_entry_set_ino64	      archive_dl.archive_entry_set_ino64
#define archive_entry_set_mode	      archive_dl.archive_entry_set_mode
#define archive_entry_set_mtime	      archive_dl.archive_entry_set_mtime
#define archive_entry_set_nlink	      archive_dl.archive_entry_set_nlink
#define archive_entry_set_pathname    archive_dl.archive_entry_set_pathname
#define archive_entry_set_rdevmajor   archive_dl.archive_entry_set_rdevmajor
#define archive_entry_set_rdevminor   archive_dl.archive_entry_set_rdevminor
#define archive_entry_set_size	      archive_dl.archive_entry_set_size
#define archive_entry_set_symlink     archive_dl.archive_entry_set_symlink
#define archive_entry_set_uid	      archive_dl.archive_entry_set_uid
#define archive_entry_xattr_add_entry archive_dl.archive_entry_xattr_add_entry
#define archive_error_string	      archive_dl.archive_error_string
#define archive_write_add_filter_gzip archive_dl.archive_write_add_filter_gzip
#define archive_write_add_filter_xz   archive_dl.archive_write_add_filter_xz
#define archive_write_add_filter_zstd archive_dl.archive_write_add_filter_zstd
#define archive_write_close	      archive_dl.archive_write_close
#define archive_write_data	      archive_dl.archive_write_data
#define archive_write_free	      archive_dl.archive_write_free
#define archive_write_header	      archive_dl.archive_write_header
#define archive_write_new	      archive_dl.archive_write_new
#define archive_write_open_fd	      archive_dl.archive_write_open_fd
#define archive_write_set_bytes_in_last_block                                  \
	archive_dl.archive_write_set_bytes_in_last_block
#define archive_write_set_format_cpio_newc                                     \
	archive_dl.archive_write_set_format_cpio_newc
#define archive_write_set_format_gnutar                                        \
	archive_dl.archive_write_set_format_gnutar
#define archive_write_set_format_option                                        \
	archive_dl.archive_write_set_format_option
#define archive_write_set_format_pax archive_dl.archive_write_set_format_pax
#define archive_write_set_format_zip archive_dl.archive_write_set_format_zip
#endif

#endif
