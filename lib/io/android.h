/* SPDX-License-Identifier: MIT */
/* android.h - Android containers read in place: sparse images (sparse.c)
 * and super images with dynamic partitions (lp.c). io.c's
 * ezi_io_open_path puts them under every image opened by path. */
#ifndef EZFS_IO_ANDROID_H
#define EZFS_IO_ANDROID_H

#include <stddef.h>
#include <stdint.h>

#include "ezfs/android.h"
#include "io/io.h"

/* Most files one split sparse set may have (NAME.0, NAME.1, ...). */
#define EZI_SPARSE_MAX_PIECES 1024

/* 1 when io starts with the sparse magic, 0 when not, -EIO. */
int ezi_sparse_probe(const struct ezfs_io *io);
/*
 * One image out of n sparse files that each cover a part of it (n = 1: a
 * plain sparse image); names[i] for messages (NULL: "piece i"). Takes the
 * pieces: they are closed with the result, or before a failure returns.
 * Errors: -EUCLEAN (corrupt or truncated, with a line to lg),
 * -EOPNOTSUPP (a major version other than 1), -EIO, -ENOMEM.
 */
int ezi_sparse_open(struct ezfs_io *pieces, unsigned n,
		    const char *const *names, const struct ezfs_logger *lg,
		    struct ezfs_io *out);
/* How many sparse files io reads, 0 when it is not a sparse image. */
unsigned ezi_sparse_pieces(const struct ezfs_io *io);

/* 1 when io holds the LP geometry magic at 4096, 0 when not, -EIO. */
int ezi_lp_probe(const struct ezfs_io *io);
/* Read slot's metadata of the super image io; *out takes io on success
 * (the caller keeps it on failure). Errors: -EUCLEAN, -EOPNOTSUPP, -EIO,
 * -ENOMEM, -EINVAL (no such slot). */
int ezi_lp_load(struct ezfs_io *io, unsigned slot, const struct ezfs_logger *lg,
		ezfs_lp **out);
/* The partition name of super image io as an io of its own; takes io
 * (closed on failure too). A name with a slot suffix (_a, _b...) is also
 * looked up in that slot's metadata, where a SLOT_SUFFIXED partition may
 * carry the name without it. -ENOENT (no such partition), -EOPNOTSUPP (an
 * extent on another block device), and what ezi_lp_load returns. */
int ezi_lp_open_partition(struct ezfs_io *io, const char *name,
			  const struct ezfs_logger *lg, struct ezfs_io *out);

#endif
