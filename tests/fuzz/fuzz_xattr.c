/* SPDX-License-Identifier: MIT */
/* fuzz_xattr.c - fuzz target: listxattr/getxattr over the first inodes. */
#include "fuzz_common.h"

static void get_one(ezfs_inode *ino, const char *name)
{
	ssize_t need, got;
	char *buf;

	need = ezfs_getxattr(ino, name, NULL, 0);
	fuzz_check_err(need, "getxattr(size 0)");
	if (need < 0)
		return;
	if (need > 65536 + 256) {
		fprintf(stderr, "fuzz: xattr value of %zd bytes\n", need);
		abort();
	}
	buf = malloc(need ? need : 1);
	if (!buf)
		return;
	got = ezfs_getxattr(ino, name, buf, need);
	fuzz_check_err(got, "getxattr");
	if (got > need) {
		fprintf(stderr, "fuzz: getxattr wrote %zd > %zd\n", got, need);
		abort();
	}
	free(buf);
	/* exact-size small buffer: ASan sees any overrun */
	if (need > 1) {
		buf = malloc(need - 1);
		if (!buf)
			return;
		got = ezfs_getxattr(ino, name, buf, need - 1);
		if (got != -ERANGE && got >= 0 && got > need - 1) {
			fprintf(stderr,
				"fuzz: getxattr overran a small buffer\n");
			abort();
		}
		fuzz_check_err(got, "getxattr(small)");
		free(buf);
	}
}

static void visit(ezfs_image *img, ezfs_inode *ino, const struct ezfs_stat *st,
		  void *arg)
{
	static const char *const probes[] = {
		"user.",
		"user.a",
		"trusted.overlay.opaque",
		"security.selinux",
		"security.capability",
		"system.posix_acl_access",
		"system.posix_acl_default",
		"lustre.x",
		"bogus",
		"",
	};
	ssize_t need, got;
	char *buf, *p;
	unsigned i;

	need = ezfs_listxattr(ino, NULL, 0);
	fuzz_check_err(need, "listxattr(size 0)");
	if (need > 0) {
		buf = malloc(need);
		if (!buf)
			return;
		got = ezfs_listxattr(ino, buf, need);
		fuzz_check_err(got, "listxattr");
		if (got > need) {
			fprintf(stderr, "fuzz: listxattr wrote %zd > %zd\n",
				got, need);
			abort();
		}
		if (got > 0 && buf[got - 1] != '\0') {
			fprintf(stderr,
				"fuzz: listxattr: last name not terminated\n");
			abort();
		}
		for (p = buf; got > 0 && p < buf + got; p += strlen(p) + 1)
			get_one(ino, p);
		free(buf);
		if (need < 2)
			goto probes;
		buf = malloc(need - 1);
		if (!buf)
			return;
		got = ezfs_listxattr(ino, buf, need - 1);
		if (got >= 0 && got > need - 1) {
			fprintf(stderr,
				"fuzz: listxattr overran a small buffer\n");
			abort();
		}
		fuzz_check_err(got, "listxattr(small)");
		free(buf);
	}
probes:
	for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
		get_one(ino, probes[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_open_and_walk(data, size, visit, NULL);
}
