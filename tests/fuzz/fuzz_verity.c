/* SPDX-License-Identifier: MIT */
/*
 * fuzz_verity.c - fuzz target: a dm-verity hash area as veritysetup
 * writes it (lib/format/verity.c's superblock decoder, lib/io/verity.c's
 * ezfs_verity_load: every level read and checked), then data blocks made
 * of the input checked against the tree.
 */
#include "fuzz_common.h"

#include <ezfs/verity.h>

#include "format/verity.h"

struct mem {
	const uint8_t *p;
	size_t n;
};

static ssize_t mem_pread(void *arg, void *buf, size_t len, uint64_t off)
{
	const struct mem *m = arg;

	if (off >= m->n)
		return 0;
	if (len > m->n - off)
		len = (size_t)(m->n - off);
	memcpy(buf, m->p + off, len);
	return (ssize_t)len;
}

static const struct ezfs_io_ops ops = { .pread = mem_pread };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ezfs_verity_params p;
	struct ezfs_verity_info vi;
	struct ezi_verity_sb sb;
	struct mem m = { data, size };
	char why[200];
	ezfs_verity *v = NULL;
	uint8_t *blk;
	uint64_t k;
	int err;

	if (size >= EZI_VERITY_SB_SIZE) {
		memset(why, 'x', sizeof(why));
		err = ezi_verity_sb_decode(data, &sb, why, sizeof(why));
		if (!err && (sb.salt_size > EZI_VERITY_MAX_SALT ||
			     !memchr(sb.algorithm, '\0', sizeof(sb.algorithm))))
			abort();
		if (err && err != -ENODATA &&
		    (!memchr(why, '\0', sizeof(why)) || strchr(why, '\n')))
			abort();
	}
	ezfs_verity_params_init(&p);
	p.log = fuzz_log;
	p.max_data_bytes = 1ull << 30; /* a tree of at most 2 MiB or so */
	err = ezfs_verity_load(&ops, &m, 0, &p, &v);
	if (err) {
		if (v || (err != -ENODATA && err != -EUCLEAN &&
			  err != -EOPNOTSUPP && err != -EBADMSG &&
			  err != -EINVAL && err != -ENOMEM && err != -EIO)) {
			fprintf(stderr, "fuzz: verity load: %d\n", err);
			abort();
		}
		return 0;
	}
	ezfs_verity_get_info(v, &vi);
	if (!vi.data_blocks || vi.data_block_size < 512 ||
	    vi.data_block_size > 4096 || vi.root_size > sizeof(vi.root))
		abort();
	blk = calloc(1, vi.data_block_size);
	if (!blk)
		abort();
	/* a few data blocks: zeros, then the input's bytes */
	for (k = 0; k < 4 && k < vi.data_blocks; k++) {
		if (k)
			memcpy(blk, data,
			       size < vi.data_block_size ? size
							 : vi.data_block_size);
		err = ezfs_verity_check(v, k, blk);
		if ((err && err != -EBADMSG) ||
		    (!err != !!ezfs_verity_verified(v, k))) {
			fprintf(stderr, "fuzz: verity check %llu: %d\n",
				(unsigned long long)k, err);
			abort();
		}
	}
	if (ezfs_verity_check(v, vi.data_blocks, blk) != -ERANGE)
		abort();
	free(blk);
	ezfs_verity_free(v);
	return 0;
}
