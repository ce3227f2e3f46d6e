/* SPDX-License-Identifier: MIT */
/*
 * mkfs_oci.h - `ezfs mkfs --oci`: an image of an OCI registry's image, its
 * tar layers fetched through libezfs-remote and merged with the OCI
 * whiteout rules (or one layer, or a tar index of one).
 */
#ifndef EZFS_MKFS_OCI_H
#define EZFS_MKFS_OCI_H

#include <stddef.h>

#include "ezfs/build.h"

enum {
	MKFS_OPT_OCI = 0x350,
};

/* clang-format off */
#define MKFS_OCI_OPTS                                                      \
	{ "oci", optional_argument, NULL, MKFS_OPT_OCI }
/* clang-format on */
#define MKFS_OCI_HELP                                                          \
	"  --oci[=OPTS]          SOURCE is HOST[:PORT]/REPO[:TAG|@DIGEST], "   \
	"an "                                                                  \
	"image of\n"                                                           \
	"                        a registry: its tar layers merged with the "  \
	"OCI\n"                                                                \
	"                        whiteouts applied (none left). OPTS: "        \
	"[f|i][,\n"                                                            \
	"                        platform=OS/ARCH,layer=N|blob=DIGEST,"        \
	"username=U,\n"                                                        \
	"                        password=P,insecure]; layer=, blob=: that "   \
	"layer\n"                                                              \
	"                        only, its whiteouts as overlayfs ones; i: a " \
	"tar\n"                                                                \
	"                        index of one uncompressed tar layer (the "    \
	"blob its\n"                                                           \
	"                        device)\n"

struct mkfs_oci {
	int on;	   /* --oci given */
	int index; /* =i */
	int layer; /* layer=N; -1: none */
	char *blob, *platform, *username, *password;
	int insecure;
	/* the layers fetched, into files under the spool folder */
	char **files;
	size_t nfiles;
};

/* --oci[=...] into mo (and *tar: 1 full, 2 index): 0, 2 after a usage
 * error, -1 for another option. */
int mkfs_oci_opt(int c, const char *arg, struct mkfs_oci *mo, int *tar);
/* Once the options are read: what --oci excludes (--incremental, rvsp, 0,
 * --gzinfo); layer= or blob= turn p->aufs on (a layer's whiteouts kept as
 * overlayfs ones). 0, or 2 after a usage error. */
int mkfs_oci_check(const struct mkfs_oci *mo, struct ezfs_build_params *p,
		   int incremental, int zerofill);
/* The layers of ref fetched whole into files in tmpdir (their digests
 * checked) and scanned into b: 0, 1 after one line naming ref and the
 * reason, or the scan's negative errno (said by the builder's log). */
int mkfs_oci_scan(struct mkfs_oci *mo, ezfs_builder *b, const char *ref,
		  const char *tmpdir, int quiet);
#ifdef EZFS_HAVE_REMOTE
#include <stdint.h>

#include "ezfs/remote.h"
/* The first size bytes of r written to fd in order (--oci, --s3): 0 or
 * a negative errno (of the read, or of the write). */
int mkfs_remote_copy(ezfs_remote *r, uint64_t size, int fd);
#endif
/* The fetched files removed, mo's strings freed. */
void mkfs_oci_free(struct mkfs_oci *mo);

#endif
