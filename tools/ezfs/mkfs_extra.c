/* SPDX-License-Identifier: MIT */
/*
 * mkfs_extra.c - `ezfs mkfs` options of mkfs.erofs 1.9.3 for the image's
 * shape (--root-xattr-isize, --fsalignblks, --zfeature-bits,
 * --xattr-inode-digest) and the VMDK descriptor of the image written
 * after the build (--vmdk-desc).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "mkfs_extra.h"

#define CMD "mkfs"

/* A number as strtoull base 0 reads it (no sign): 0, or -EINVAL. */
int mkfs_number(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || end == s || *end || *s == '-' ? -EINVAL : 0;
}

/*
 * --zfeature-bits: bit i turns feature i on (1) or off (0), for every bit
 * up to the highest set one, as 1.9.3 applies its -E table
 * (z_erofs_mkfs_features) in that order.
 */
static void zfeature_bits(struct ezfs_build_params *p, unsigned bits)
{
	static const unsigned set[8] = {
		EZFS_BUILD_LEGACY_COMPRESS,
		EZFS_BUILD_ZTAILPACKING,
		EZFS_BUILD_FRAGMENTS,
		EZFS_BUILD_ALL_FRAGMENTS | EZFS_BUILD_FRAGMENTS,
		EZFS_BUILD_DEDUPE,
		0, /* fragdedupe: identical fragments are always stored once */
		EZFS_BUILD_48BIT,
		EZFS_BUILD_48BIT, /* dot-omitted implies 48bit */
	};
	static const unsigned clear[8] = {
		EZFS_BUILD_LEGACY_COMPRESS,
		EZFS_BUILD_ZTAILPACKING,
		EZFS_BUILD_FRAGMENTS | EZFS_BUILD_ALL_FRAGMENTS,
		EZFS_BUILD_FRAGMENTS | EZFS_BUILD_ALL_FRAGMENTS,
		EZFS_BUILD_DEDUPE,
		0,
		EZFS_BUILD_48BIT,
		0,
	};
	unsigned i;

	for (i = 0; bits; i++, bits >>= 1) {
		if (bits & 1)
			p->flags |= set[i];
		else
			p->flags &= ~clear[i];
		if (i == 7)
			p->dot_omitted = (int)(bits & 1);
	}
}

int mkfs_extra_opt(int c, const char *arg, struct ezfs_build_params *p,
		   struct mkfs_extra *ex)
{
	uint64_t v;

	switch (c) {
	case MKFS_OPT_ROOT_XATTR_ISIZE:
		if (mkfs_number(arg, &v) || (v && v < 16) || v > 65532)
			return cli_usage_error(CMD,
					       "--root-xattr-isize=%s: takes 0 "
					       "or 16..65532 (bytes)",
					       arg);
		p->root_xattr_isize = (unsigned)v;
		return 0;
	case MKFS_OPT_FSALIGNBLKS:
		if (mkfs_number(arg, &v) || v > (1u << 30))
			return cli_usage_error(
				CMD,
				"--fsalignblks=%s: takes a block "
				"count up to 1073741824",
				arg);
		p->fsalign_blocks = (uint32_t)v;
		return 0;
	case MKFS_OPT_ZFEATURE_BITS:
		if (mkfs_number(arg, &v) || v > 255)
			return cli_usage_error(
				CMD,
				"--zfeature-bits=%s: takes 0..255 "
				"(bits 0..7, see --help)",
				arg);
		zfeature_bits(p, (unsigned)v);
		return 0;
	case MKFS_OPT_XATTR_INODE_DIGEST:
		if (arg && (!*arg || strlen(arg) > 255))
			return cli_usage_error(CMD,
					       "--xattr-inode-digest=%s: the "
					       "name takes 1..255 bytes",
					       arg);
		p->inode_digest_xattr = arg ? arg : "erofs.fingerprint.v1";
		return 0;
	case MKFS_OPT_VMDK_DESC:
		if (!*arg)
			return cli_usage_error(CMD, "--vmdk-desc needs a file "
						    "name");
		ex->vmdk = arg;
		return 0;
	}
	return -1;
}

int mkfs_extra_check(const struct ezfs_build_params *p, int rebuild)
{
	const char *why =
		rebuild		      ? "a rebuild (layers)"
		: p->tar_index	      ? "--tar=i (its data is not read)"
		: p->metabox_pcluster ? "-m (metabox)"
		: p->compress_dir     ? "--zD"
		: p->flags & (EZFS_BUILD_FRAGMENTS | EZFS_BUILD_ALL_FRAGMENTS)
			? "-E fragments"
			: NULL;

	if (!p->inode_digest_xattr || !why)
		return 0;
	return cli_usage_error(CMD,
			       "--xattr-inode-digest: not with %s (its "
			       "prefix table is stored plain, not in a "
			       "packed or metabox inode)",
			       why);
}

int mkfs_extra_ready(const struct mkfs_extra *ex)
{
	const char *slash = ex->vmdk ? strrchr(ex->vmdk, '/') : NULL;
	char *dir;
	int bad;

	if (!ex->vmdk)
		return 0;
	dir = slash ? strndup(ex->vmdk, (size_t)(slash - ex->vmdk) + 1)
		    : strdup(".");
	bad = !dir || access(dir, W_OK | X_OK);
	if (bad)
		cli_error(CMD, "%s: %s", ex->vmdk,
			  strerror(dir ? errno : ENOMEM));
	free(dir);
	return bad;
}

/* Extent lines of at most 2 GiB each ("twoGbMaxExtentFlat") */
static void extents(FILE *f, uint64_t sectors, const char *name, uint64_t first)
{
	while (sectors) {
		uint64_t n = sectors < (1u << 22) ? sectors : (1u << 22);

		fprintf(f, "RW %" PRIu64 " FLAT \"%s\" %" PRIu64 "\n", n, name,
			first);
		first += n;
		sectors -= n;
	}
}

int mkfs_extra_report(const struct mkfs_extra *ex, const char *image,
		      uint64_t offset, const char *const *devs, unsigned n)
{
	struct ezfs_open_params op;
	struct ezfs_sb_info si;
	struct ezfs_device d;
	ezfs_image *img = NULL;
	uint64_t sectors, total;
	uint32_t cid = 0;
	unsigned i, nd;
	FILE *f;
	int err;

	if (!ex->vmdk)
		return 0;
	ezfs_open_params_init(&op);
	op.offset = offset;
	op.devices = devs;
	op.ndevices = devs ? n : 0;
	err = ezfs_image_open(image, &op, &img);
	if (err) {
		cli_fail(CMD, image, NULL, err);
		return 1;
	}
	ezfs_get_sb_info(img, &si);
	/* the CID: the UUID's four 32-bit words xored, as 1.9.3 */
	for (i = 0; i < 16; i += 4)
		cid ^= (uint32_t)si.uuid[i] | (uint32_t)si.uuid[i + 1] << 8 |
		       (uint32_t)si.uuid[i + 2] << 16 |
		       (uint32_t)si.uuid[i + 3] << 24;
	f = fopen(ex->vmdk, "w");
	if (!f) {
		cli_error(CMD, "%s: %s", ex->vmdk, strerror(errno));
		ezfs_image_close(img);
		return 1;
	}
	fprintf(f,
		"# Disk DescriptorFile\nversion=1\nCID=%" PRIx32
		"\nparentCID=ffffffff\ncreateType=\"twoGbMaxExtentFlat\"\n\n"
		"# Extent description\n",
		cid);
	sectors = si.blocks << (si.blkszbits - 9);
	extents(f, sectors, image, offset / 512);
	total = sectors;
	nd = ezfs_device_count(img);
	for (i = 1; i <= nd && !ezfs_device_get(img, i, &d); i++) {
		sectors = d.blocks << (si.blkszbits - 9);
		extents(f, sectors, devs && i <= n ? devs[i - 1] : d.tag, 0);
		total += sectors;
	}
	fprintf(f,
		"\n# The Disk Data Base\n#DDB\n\nddb.virtualHWVersion = \"4\"\n"
		"ddb.geometry.cylinders = \"%" PRIu64
		"\"\nddb.geometry.heads = \"16\"\nddb.geometry.sectors = "
		"\"63\"\nddb.adapterType = \"ide\"\n",
		(total + 63 * 16 - 1) / (63 * 16));
	ezfs_image_close(img);
	if (ferror(f) | fclose(f)) {
		cli_error(CMD, "%s: %s", ex->vmdk,
			  strerror(errno ? errno : EIO));
		return 1;
	}
	return 0;
}
