/* SPDX-License-Identifier: MIT */
/*
 * verity.c - a mount's dm-verity options (docs/verity.md): the -o
 * spellings (ours and util-linux's verity.* ones) into struct
 * ezfs_mount_params, and from there into the image's open parameters.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* val into one of the params' file name fields */
static int set_name(char *dst, size_t size, const char *opt, const char *val,
		    char *err, size_t errsize)
{
	if (strlen(val) >= size) {
		if (err && errsize)
			snprintf(err, errsize, "option '%s': name too long",
				 opt);
		return -EINVAL;
	}
	strcpy(dst, val);
	return 0;
}

int ezi_mnt_verity_opt(struct ezfs_mount_params *p, const char *opt,
		       const char *val, char *err, size_t errsize)
{
	const char *why = NULL;
	size_t n = 0;
	char *end;
	int ret;

	if (!strcmp(opt, "verity") || !strcmp(opt, "noverity")) {
		if (val)
			why = "takes no value";
		else
			p->verity = opt[0] == 'n' ? EZFS_VERITY_OFF
						  : EZFS_VERITY_REQUIRE;
		goto out;
	}
	if (strcmp(opt, "roothash") && strncmp(opt, "verity.", 7))
		return 1;
	if (!val || !*val) {
		why = "needs a value";
		goto out;
	}
	p->verity = EZFS_VERITY_REQUIRE;
	if (!strcmp(opt, "roothash") || !strcmp(opt, "verity.roothash")) {
		if (ezfs_verity_parse_hex(val, p->root_hash,
					  sizeof(p->root_hash), &n))
			why = "is not a hash in hex";
		p->root_hash_size = (unsigned)n;
	} else if (!strcmp(opt, "verity.roothashfile")) {
		ret = ezfs_verity_read_root(val, p->root_hash, &n);
		if (ret) {
			if (err && errsize)
				snprintf(err, errsize, "option '%s': %s: %s",
					 opt, val,
					 ret == -EINVAL
						 ? "not a root hash (hex)"
						 : strerror(-ret));
			return -EINVAL;
		}
		p->root_hash_size = (unsigned)n;
	} else if (!strcmp(opt, "verity.hashdevice")) {
		return set_name(p->verity_hash_file,
				sizeof(p->verity_hash_file), opt, val, err,
				errsize);
	} else if (!strcmp(opt, "verity.hashoffset")) {
		errno = 0;
		p->verity_hash_offset = strtoull(val, &end, 0);
		if (errno || *end || *val == '-' || p->verity_hash_offset % 512)
			why = "is not a multiple of 512";
	} else if (!strcmp(opt, "verity.roothashsig")) {
		return set_name(p->root_hash_sig_file,
				sizeof(p->root_hash_sig_file), opt, val, err,
				errsize);
	} else if (!strcmp(opt, "verity.trustedcert")) {
		return set_name(p->trusted_cert, sizeof(p->trusted_cert), opt,
				val, err, errsize);
	} else {
		return 1;
	}
out:
	if (!why)
		return 0;
	if (err && errsize)
		snprintf(err, errsize, "option '%s' %s", opt, why);
	return -EINVAL;
}

void ezi_mnt_verity_params(const struct ezfs_mount_params *p,
			   struct ezfs_open_params *op)
{
	op->verity = p->verity;
	if (p->root_hash_size) {
		op->root_hash = p->root_hash;
		op->root_hash_size = p->root_hash_size;
	}
	op->verity_hash_offset = p->verity_hash_offset;
	op->verity_hash_file =
		p->verity_hash_file[0] ? p->verity_hash_file : NULL;
	op->root_hash_sig_file =
		p->root_hash_sig_file[0] ? p->root_hash_sig_file : NULL;
	op->trusted_cert = p->trusted_cert[0] ? p->trusted_cert : NULL;
}
