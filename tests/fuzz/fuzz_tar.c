/* SPDX-License-Identifier: MIT */
/*
 * fuzz_tar.c - fuzz target: ezfs mkfs --tar on the input (plain, gzip or
 * xz tar): headers, PAX records, the tree, then the image is written
 * (file data read back from the archive or the spool file).
 */
#define _GNU_SOURCE /* memfd_create */
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ezfs/build.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ezfs_build_params p;
	ezfs_builder *b = NULL;
	char path[64], img[128];
	const char *tmp = getenv("TMPDIR");
	int fd, err;

	fd = memfd_create("fuzz-tar", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size)
		goto out;
	lseek(fd, 0, SEEK_SET);
	snprintf(path, sizeof(path), "/dev/fd/%d", fd);
	snprintf(img, sizeof(img), "%s/fuzz-tar-%d.img", tmp ? tmp : "/tmp",
		 (int)getpid());
	ezfs_build_params_init(&p);
	p.log = fuzz_log;
	p.verbose = EZFS_LOG_WARN;
	p.workers = 1;
	p.alg = EZFS_ALG_LZ4;
	p.flags = EZFS_BUILD_NO_FSYNC;
	p.has_timestamp = 1;
	if (ezfs_builder_new(&p, &b))
		goto out;
	err = ezfs_builder_scan_tar(b, path, tmp ? tmp : "/tmp");
	if (err == -ENOSPC || err == -EDQUOT)
		goto out;
	if (!err)
		err = ezfs_builder_write(b, img);
	unlink(img);
	if (err == -EPIPE || err == -EPERM || err == -E2BIG || err == -EAGAIN)
		err = -EUCLEAN; /* truncated, '..', xattr too large, EOF */
	fuzz_check_err(err, "scan_tar");
out:
	ezfs_builder_free(b);
	close(fd);
	return 0;
}
