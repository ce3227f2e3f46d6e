/* SPDX-License-Identifier: MIT */
/* fuzz_dir.c - fuzz target: readdir of every directory, lookups of names. */
#include "fuzz_common.h"

static int stop_early(void *arg, const char *name, size_t namelen, uint64_t nid,
		      unsigned ftype, uint64_t next_pos)
{
	uint64_t *pos = arg;

	*pos = next_pos;
	return 7;
}

static void lookup_one(ezfs_inode *dir, const char *name, size_t len)
{
	unsigned ftype = 0;
	uint64_t nid = 0;
	int err;

	err = ezfs_lookup(dir, name, len, &nid, &ftype);
	fuzz_check_err(err, "lookup");
	if (!err && ftype > EZFS_FT_SYMLINK && !fuzz_ignored("ftype")) {
		fprintf(stderr, "fuzz: lookup gave ftype %u\n", ftype);
		abort();
	}
}

static void visit(ezfs_image *img, ezfs_inode *ino, const struct ezfs_stat *st,
		  void *arg)
{
	static const char *const odd[] = { "",	      ".",   "..",
					   "/",	      "a/b", "\xff\xff\xff",
					   "zzzzzzzz" };
	struct fuzz_dir *d;
	char path[3 * 256];
	uint64_t pos = 0, nid;
	struct ezfs_sb_info si;
	char longname[300];
	unsigned i;
	int err;

	if ((st->mode & 0170000) != 0040000) {
		/* lookup/readdir on a non-directory: clean -ENOTDIR */
		err = ezfs_lookup(ino, "a", 1, &nid, &i);
		fuzz_check_err(err, "lookup(nondir)");
		return;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return;
	err = ezfs_readdir(ino, 0, fuzz_dirent, d);
	fuzz_check_err(err, "readdir");
	ezfs_get_sb_info(img, &si);
	for (i = 0; i < d->nnames; i++) {
		struct fuzz_name *n = &d->names[i];

		/*
		 * A synthesised "." (next_pos 1: no on-disk entry is that
		 * small) only for dot-omitted directories, which need 48BIT.
		 */
		if (n->len == 1 && n->name[0] == '.' && n->next_pos == 1 &&
		    !(si.feature_incompat & 0x80) && !fuzz_ignored("dupdot")) {
			fprintf(stderr, "fuzz: \".\" synthesised on a "
					"non-48-bit image\n");
			abort();
		}
		if (n->ftype > EZFS_FT_SYMLINK) {
			fprintf(stderr, "fuzz: readdir gave ftype %u\n",
				n->ftype);
			abort();
		}
		lookup_one(ino, n->name, n->len);
		/* one byte shorter / longer than a real name */
		lookup_one(ino, n->name, n->len - 1);
		if (n->len < 255) {
			n->name[n->len] = 'x';
			lookup_one(ino, n->name, n->len + 1);
			n->name[n->len] = '\0';
		}
	}
	for (i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
		lookup_one(ino, odd[i], strlen(odd[i]));
	memset(longname, 'a', sizeof(longname));
	lookup_one(ino, longname, sizeof(longname));

	/* Resume from positions the callback reported, and absurd ones. */
	err = ezfs_readdir(ino, 0, stop_early, &pos);
	fuzz_check_err(err, "readdir");
	if (err == 7) {
		memset(d, 0, sizeof(*d));
		err = ezfs_readdir(ino, pos, fuzz_dirent, d);
		fuzz_check_err(err, "readdir(resume)");
	}
	memset(d, 0, sizeof(*d));
	err = ezfs_readdir(ino, st->size + 13, fuzz_dirent, d);
	fuzz_check_err(err, "readdir(past end)");
	memset(d, 0, sizeof(*d));
	err = ezfs_readdir(ino, 5, fuzz_dirent, d);
	fuzz_check_err(err, "readdir(odd pos)");

	/* Resolve a path through the root when this is the root. */
	if (ezfs_inode_nid(ino) == ezfs_root_nid(img)) {
		memset(d, 0, sizeof(*d));
		(void)ezfs_readdir(ino, 0, fuzz_dirent, d);
		for (i = 0; i < d->nnames && i < 8; i++) {
			snprintf(path, sizeof(path), "/%s/%s/..",
				 d->names[i].name, d->names[i].name);
			err = ezfs_resolve(img, path, &nid);
			fuzz_check_err(err, "resolve");
			err = ezfs_resolve(img, d->names[i].name, &nid);
			fuzz_check_err(err, "resolve");
		}
		err = ezfs_resolve(img, "", &nid);
		fuzz_check_err(err, "resolve");
		err = ezfs_resolve(img, "//./../", &nid);
		fuzz_check_err(err, "resolve");
	}
	free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_open_and_walk(data, size, visit, NULL);
}
