/* SPDX-License-Identifier: MIT */
/* mkfs_sig.h - SIGINT/SIGTERM/SIGHUP during `ezfs mkfs` (mkfs_sig.c). */
#ifndef EZFS_TOOL_MKFS_SIG_H
#define EZFS_TOOL_MKFS_SIG_H

/*
 * Block the signals in this thread (and so in every thread it starts from
 * now on) and take them on a thread of their own, which removes the
 * builder's temporary file beside target (image with its symlinks
 * resolved), prints one line naming image and ends the process by the
 * signal (exit status 128 + signal). device: image is a block device,
 * written in place (no temporary file). Signals ignored at startup are
 * left ignored. 0 or -errno.
 */
int mkfs_sig_start(const char *image, const char *target, int device);
/* The image is in place (or the build failed and cleaned up): a signal
 * from now on just ends the process, with no message. */
void mkfs_sig_done(void);

#endif
