/* SPDX-License-Identifier: MIT */
/* io.h - where image bytes come from: a file, a block device, memory, or
 * the caller's ezfs_io_ops. Knows nothing of the format above it. */
#ifndef EZFS_IO_IO_H
#define EZFS_IO_IO_H

#include <stddef.h>
#include <stdint.h>

#include "ezfs/ezfs.h"
#include "util/log.h"

struct ezfs_io {
	const struct ezfs_io_ops *ops;
	void *arg;
	uint64_t size; /* bytes available from base on */
	uint64_t base; /* where the image starts (open params' offset) */
	const struct ezfs_logger *lg;
	/* ezfs_open_params.io_hint (called with arg); NULL: none */
	void (*hint)(void *arg, uint64_t off, uint64_t len, unsigned flags);
	/* a dm-verity tree every read is checked against (verity.c); NULL:
	 * none. Freed by ezi_io_close. */
	struct ezfs_verity *verity;
};

/*
 * Open path read-only as a file or block device: fills ops, arg and size
 * (base 0). Errors: -errno of open, -EISDIR, -ESPIPE (a pipe or socket),
 * -ENOTBLK (another special file), -ENOMEM. Android containers are
 * expanded as ezi_io_open_path does; one that cannot be read (a corrupt
 * sparse file, no such partition) has no logger here, so it opens as an io
 * whose first read logs the reason to io->lg and returns its error; so
 * does a super image opened whole (-EMEDIUMTYPE, naming SUPER:NAME),
 * unless the image starts past its reserved first 4096 bytes (base).
 */
int ezi_io_open_file(const char *path, struct ezfs_io *io);
/*
 * Open path as ezfs_image_open reads it: a file or block device, expanded
 * when it is an Android sparse image (NAME.0 of a split set takes NAME.1,
 * NAME.2... with it); when no file has the path, "SUPER:PART" is the
 * partition PART of the super image SUPER (raw or sparse). Errors as
 * ezi_io_open_file, and -EUCLEAN, -EOPNOTSUPP for a bad container (with a
 * line to lg); a name that is no file and no partition stays -ENOENT.
 */
int ezi_io_open_path(const char *path, const struct ezfs_logger *lg,
		     struct ezfs_io *io);
/* An image held in memory (buf must outlive it). -ENOMEM. */
int ezi_io_open_mem(const void *buf, size_t len, struct ezfs_io *io);
/* Close through ops->close (if any). */
void ezi_io_close(struct ezfs_io *io);

/* Read exactly len bytes at image offset off; a range past the end is
 * -EUCLEAN (something in the image pointed there), a failed read -EIO;
 * with a dm-verity tree (io->verity) a block that fails its check -EIO. */
int ezi_io_read(const struct ezfs_io *io, void *buf, size_t len, uint64_t off);
/* The bytes [off, off + len) of an in-memory image in place, else NULL. */
const void *ezi_io_map(const struct ezfs_io *io, size_t len, uint64_t off);
/* Ask for [off, off + len) of a file image without waiting for it. */
void ezi_io_willneed(const struct ezfs_io *io, uint64_t off, uint64_t len);
/*
 * [off, off + len) will be read soon (flags: EZFS_HINT_*): passed to the
 * io's hint (a remote source fetches it now, with the other ranges it is
 * told of); without one, a file image's data hints become
 * ezi_io_willneed, anything else nothing. Clipped to the image; errors
 * are ignored.
 */
void ezi_io_hint(const struct ezfs_io *io, uint64_t off, uint64_t len,
		 unsigned flags);
/* Is it a plain file, block device or memory image (reading ahead of a
 * reader costs no more than the copy)? */
int ezi_io_local(const struct ezfs_io *io);
/* Does the io want hints beyond ezi_io_willneed (a remote source)? */
static inline int ezi_io_hints(const struct ezfs_io *io)
{
	return io->hint != NULL;
}

#endif
