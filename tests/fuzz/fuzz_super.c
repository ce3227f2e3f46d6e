/* SPDX-License-Identifier: MIT */
/* fuzz_super.c - fuzz target: superblock parsing, sb info, root inode. */
#include "fuzz_common.h"

static void stat_one(ezfs_image *img, uint64_t nid)
{
	struct ezfs_stat st;
	ezfs_inode *ino;
	int err;

	err = ezfs_stat_nid(img, nid, &st);
	fuzz_check_err(err, "stat_nid");
	err = ezfs_inode_get(img, nid, &ino);
	fuzz_check_err(err, "inode_get");
	if (err)
		return;
	ezfs_inode_stat(ino, &st);
	if (st.nid != nid) {
		fprintf(stderr, "fuzz: stat nid %llu != %llu\n",
			(unsigned long long)st.nid, (unsigned long long)nid);
		abort();
	}
	(void)ezfs_layout_name(st.layout);
	ezfs_inode_put(ino);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ezfs_sb_info si;
	char feat[512], small[8];
	ezfs_image *img;
	uint8_t *copy;
	unsigned a;
	int err;

	err = fuzz_open(data, size, &img, &copy);
	fuzz_check_err(err, "image_open_mem");
	if (err)
		return 0;
	ezfs_get_sb_info(img, &si);
	if (si.volume_name[16] != '\0' || strlen(si.volume_name) > 16)
		abort();
	if (si.image_bytes != size) {
		fprintf(stderr, "fuzz: image_bytes %llu != %zu\n",
			(unsigned long long)si.image_bytes, size);
		abort();
	}
	if (si.blksz != 1u << si.blkszbits)
		abort();
	ezfs_feature_string(img, feat, sizeof(feat));
	if (!memchr(feat, '\0', sizeof(feat)))
		abort();
	/* A tiny buffer must be truncated and terminated, not overrun. */
	ezfs_feature_string(img, small, sizeof(small));
	if (!memchr(small, '\0', sizeof(small)))
		abort();
	for (a = 0; a < 16; a++)
		(void)ezfs_alg_name(a);
	if (si.root_nid != ezfs_root_nid(img))
		abort();
	stat_one(img, si.root_nid);
	if (si.packed_nid)
		stat_one(img, si.packed_nid);
	/* Some nids around the root and absurd ones. */
	stat_one(img, si.root_nid + 1);
	stat_one(img, si.root_nid + 2);
	stat_one(img, 0);
	stat_one(img, UINT64_MAX);
	stat_one(img, (uint64_t)1 << 62);
	ezfs_image_close(img);
	free(copy);
	return 0;
}
