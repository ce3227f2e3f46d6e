/* SPDX-License-Identifier: MIT */
/*
 * verity.h - the io's dm-verity check (verity.c): the tree of
 * include/ezfs/verity.h hung on a struct ezfs_io, so that every read of
 * the image is checked, whoever reads.
 */
#ifndef EZFS_IO_VERITY_H
#define EZFS_IO_VERITY_H

#include <stddef.h>
#include <stdint.h>

#include "ezfs/verity.h"
#include "io/io.h"

/*
 * buf holds the bytes [off, off + len) of the image (off from the io's
 * base), just read: check each block they touch that is not verified yet
 * (a block only partly in buf is read whole once more, and what buf holds
 * of it replaced by the bytes checked). 0, or -EIO after one log line per
 * block that fails (a read past the data the tree covers fails too).
 */
int ezi_verity_io_check(const struct ezfs_io *io, void *buf, size_t len,
			uint64_t off);
/* The same for an image whose bytes [0, size) are at img in memory: the
 * blocks of [off, off + len) checked in place. */
int ezi_verity_io_check_mem(const struct ezfs_io *io, const uint8_t *img,
			    uint64_t size, size_t len, uint64_t off);
/* ezfs_image_verity_scan on the io's tree (-ENODATA: none); the reads go
 * through io->ops, from io->base on. */
int64_t ezi_verity_scan(const struct ezfs_io *io, unsigned threads,
			void (*bad)(void *arg, const char *msg),
			void (*progress)(void *arg, uint64_t bytes), void *arg);
/* Its thread that checks ahead of readers stopped (it reads through the
 * io): before the io's source is closed, which may still use the tree
 * (ezfs_remote_set_verity), and the tree freed after that. */
void ezi_verity_quiesce(struct ezfs_verity *v);
/* Where the tree is: the hash file's name for messages (NULL: the
 * image), and whether it is separate (ezfs_verity_info.separate). */
int ezi_verity_set_source(struct ezfs_verity *v, const char *name,
			  int separate);

#endif
