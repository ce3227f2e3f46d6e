/* SPDX-License-Identifier: MIT */
/* fuzz_image.c - fuzz target: whole-image ezfs_fsck with data decoding. */
#include "fuzz_common.h"

static void problem(void *arg, uint64_t nid, const char *path, const char *msg)
{
	unsigned long *n = arg;

	/* Both must be complete C strings; msg one line (path is raw). */
	if (path)
		(void)strlen(path);
	if (strchr(msg, '\n') && !fuzz_ignored("newline")) {
		fprintf(stderr, "fuzz: fsck problem with a newline: %s: %s\n",
			path ? path : "", msg);
		abort();
	}
	++*n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ezfs_fsck_params fp;
	struct ezfs_fsck_result res;
	unsigned long problems = 0;
	ezfs_image *img;
	uint8_t *copy;
	int err;

	if (fuzz_open(data, size, &img, &copy))
		return 0;
	ezfs_fsck_params_init(&fp);
	memset(&res, 0, sizeof(res));
	fp.problem = problem;
	fp.arg = &problems;
	fp.threads = 1;
	err = ezfs_fsck(img, &fp, &res);
	fuzz_check_err(err, "fsck");
	if (err == -EUCLEAN && !problems) {
		fprintf(stderr,
			"fuzz: fsck -EUCLEAN without a problem report\n");
		abort();
	}
	if (err == 0 && (problems || res.problems)) {
		fprintf(stderr, "fuzz: fsck clean but %lu problems reported\n",
			problems);
		abort();
	}
	ezfs_image_close(img);
	free(copy);
	return 0;
}
