/* SPDX-License-Identifier: MIT */
/* ls.c - ezfs ls: list directories of an image, like ls(1). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common.h"
#include "cmd.h"
#include "json.h"

#define LS_MAX_DEPTH 4096

struct ls_ctx {
	const char *img;
	ezfs_image *fs;
	int longfmt, recursive;
	int status;
	struct cj *j;		  /* --json */
	struct cli_nidset active; /* directories on the current path */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ezfs ls [-l] [-R] IMG [PATH]\n"
		"List a directory of the image (default: the root); PATH may\n"
		"also name a file.\n"
		"  -l, --long        mode, links, owner, size, mtime (UTC), "
		"target\n"
		"  -R, --recursive   list subdirectories "
		"recursively\n"
		"  --json            one JSON document, every entry in "
		"detail\n"
		"                    (docs/json.md)\n" CLI_ENGINE_HELP
			CLI_IMAGE_HELP);
}

/* One entry of --json (docs/schemas/ls.json). */
static void json_entry(struct ls_ctx *c, const char *name, ezfs_inode *ino,
		       const char *fullpath)
{
	struct ezfs_stat st;

	ezfs_inode_stat(ino, &st);
	cj_obj(c->j, NULL);
	cj_bytes(c->j, "path", fullpath, strlen(fullpath));
	cj_bytes(c->j, "name", name, strlen(name));
	cj_u64(c->j, "nid", st.nid);
	cj_str(c->j, "type", cli_json_type(st.mode));
	cj_u64(c->j, "mode", st.mode & 07777);
	cj_u64(c->j, "nlink", st.nlink);
	cj_u64(c->j, "uid", st.uid);
	cj_u64(c->j, "gid", st.gid);
	cj_u64(c->j, "size", st.size);
	cj_i64(c->j, "mtime", st.mtime);
	cj_u64(c->j, "mtime_nsec", st.mtime_nsec);
	if (S_ISCHR(st.mode) || S_ISBLK(st.mode)) {
		cj_u64(c->j, "rdev_major", st.rdev_major);
		cj_u64(c->j, "rdev_minor", st.rdev_minor);
	}
	if (S_ISLNK(st.mode)) {
		char *target = malloc(st.size + 1);
		ssize_t n = target ? ezfs_readlink(ino, target, st.size + 1)
				   : -ENOMEM;

		if (n < 0) {
			cli_fail("ls", c->img, fullpath, (int)n);
			c->status = 1;
			cj_null(c->j, "target");
		} else {
			cj_bytes(c->j, "target", target, (size_t)n);
		}
		free(target);
	}
	cj_end(c->j);
}

static void print_entry(struct ls_ctx *c, const char *name, ezfs_inode *ino,
			const char *fullpath)
{
	if (c->j) {
		json_entry(c, name, ino, fullpath);
		return;
	}
	struct ezfs_stat st;
	char mode[11], t[40], size[48];
	char *target = NULL;

	char *qn, *qt = NULL;

	if (!c->longfmt) {
		printf("%s\n", cli_qname(name, &qn));
		free(qn);
		return;
	}
	ezfs_inode_stat(ino, &st);
	cli_mode_string(st.mode, mode);
	if (S_ISCHR(st.mode) || S_ISBLK(st.mode))
		snprintf(size, sizeof(size), "%u, %u", st.rdev_major,
			 st.rdev_minor);
	else
		snprintf(size, sizeof(size), "%" PRIu64, st.size);
	cli_fmt_time(st.mtime, t, sizeof(t));
	memcpy(t + 16, " UTC", 5); /* YYYY-MM-DD HH:MM UTC: not local */
	if (S_ISLNK(st.mode)) {
		size_t cap = st.size + 1;
		ssize_t n;

		target = malloc(cap);
		n = target ? ezfs_readlink(ino, target, cap) : -ENOMEM;
		if (n < 0) {
			cli_fail("ls", c->img, fullpath, (int)n);
			c->status = 1;
			free(target);
			target = NULL;
		}
	}
	printf("%s %3u %5u %5u %10s %s %s%s%s\n", mode, st.nlink, st.uid,
	       st.gid, size, t, cli_qname(name, &qn), target ? " -> " : "",
	       target ? cli_qname(target, &qt) : "");
	free(qn);
	free(qt);
	free(target);
}

static char *join(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	char *p = malloc(a + b + 2);

	if (!p)
		return NULL;
	memcpy(p, dir, a);
	if (a && dir[a - 1] != '/')
		p[a++] = '/';
	memcpy(p + a, name, b + 1);
	return p;
}

/* List directory ino (at path); header printed by the caller if needed. */
static int list_dir(struct ls_ctx *c, ezfs_inode *dir, const char *path,
		    int depth)
{
	struct cli_dirlist dl;
	size_t i;
	int ret;

	ret = cli_readdir_all(dir, &dl);
	if (ret < 0) {
		cli_fail("ls", c->img, path, ret);
		c->status = 1;
		return ret;
	}
	for (i = 0; i < dl.n; i++) {
		char *full = join(path, dl.ents[i].name);
		ezfs_inode *ino;

		if (!full) {
			ret = -ENOMEM;
			break;
		}
		if (c->longfmt || c->j) {
			ret = ezfs_inode_get(c->fs, dl.ents[i].nid, &ino);
			if (ret < 0) {
				cli_fail("ls", c->img, full, ret);
				c->status = 1;
			} else {
				print_entry(c, dl.ents[i].name, ino, full);
				ezfs_inode_put(ino);
			}
		} else {
			char *q;

			printf("%s\n", cli_qname(dl.ents[i].name, &q));
			free(q);
		}
		free(full);
	}
	ret = 0;
	if (!c->recursive)
		goto out;
	for (i = 0; i < dl.n; i++) {
		struct ezfs_stat st;
		ezfs_inode *ino;
		char *full;

		if (dl.ents[i].ftype != EZFS_FT_DIR &&
		    dl.ents[i].ftype != EZFS_FT_UNKNOWN)
			continue;
		full = join(path, dl.ents[i].name);
		if (!full) {
			ret = -ENOMEM;
			break;
		}
		ret = ezfs_inode_get(c->fs, dl.ents[i].nid, &ino);
		if (ret < 0) {
			if (c->longfmt || c->j) /* already reported above */
				ret = 0;
			else
				cli_fail("ls", c->img, full, ret);
			c->status = 1;
			free(full);
			continue;
		}
		ezfs_inode_stat(ino, &st);
		if (S_ISDIR(st.mode)) {
			if (depth >= LS_MAX_DEPTH ||
			    cli_nidset_has(&c->active, dl.ents[i].nid)) {
				cli_error("ls",
					  "%s: %s: directory loop or too deep",
					  c->img, full);
				c->status = 1;
			} else {
				cli_nidset_add(&c->active, dl.ents[i].nid);
				char *q;

				if (!c->j) {
					printf("\n%s:\n", cli_qname(full, &q));
					free(q);
				}
				list_dir(c, ino, full, depth + 1);
				/* leave it in "active": a dir seen twice is a
				 * loop */
			}
		}
		ezfs_inode_put(ino);
		free(full);
	}
out:
	cli_dirlist_free(&dl);
	if (ret < 0) {
		cli_fail("ls", c->img, path, ret);
		c->status = 1;
	}
	return ret;
}

int cmd_ls(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "long", no_argument, NULL, 'l' },
		{ "recursive", no_argument, NULL, 'R' },
		{ "json", no_argument, NULL, 'J' },
		CLI_ENGINE_OPTS,
		CLI_IMAGE_OPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ls_ctx c = { 0 };
	struct cj j;
	struct cli_log lg = { 0 };
	struct ezfs_stat st;
	const char *path;
	ezfs_inode *ino;
	int ch, ret;

	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":lRh", opts, NULL)) != -1) {
		switch (ch) {
		case 'l':
			c.longfmt = 1;
			break;
		case 'R':
			c.recursive = 1;
			break;
		case 'J':
			c.j = &j;
			break;
		default:
			ret = cli_opt_other("ls", ch, argv, usage);
			if (ret >= 0)
				return ret;
		}
	}
	if (cli_nargs("ls", argc - optind, 1, 2, "missing IMG"))
		return 2;
	c.img = argv[optind];
	path = argc - optind == 2 ? argv[optind + 1] : "/";
	if (cli_open("ls", c.img, &lg, &c.fs) < 0)
		return 1;
	if (cli_get_path("ls", c.img, c.fs, path, &ino) < 0) {
		ezfs_image_close(c.fs);
		return 1;
	}
	ezfs_inode_stat(ino, &st);
	if (c.j) {
		cj_init(&j, stdout);
		cj_obj(&j, NULL);
		cj_bytes(&j, "image", c.img, strlen(c.img));
		cj_bytes(&j, "path", path, strlen(path));
		cj_bool(&j, "recursive", c.recursive);
		cj_arr(&j, "entries");
	}
	if (S_ISDIR(st.mode)) {
		cli_nidset_add(&c.active, st.nid);
		if (c.recursive && !c.j) {
			char *q;

			printf("%s:\n", cli_qname(path, &q));
			free(q);
		}
		list_dir(&c, ino, path, 0);
	} else {
		print_entry(&c, path, ino, path);
	}
	if (c.j) {
		cj_end(&j);
		cj_end(&j);
	}
	ezfs_inode_put(ino);
	cli_nidset_free(&c.active);
	ezfs_image_close(c.fs);
	return c.status;
}
