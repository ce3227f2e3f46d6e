/* SPDX-License-Identifier: MIT */
/*
 * mount_kernel.c - ezfs mount --kernel: the kernel's EROFS driver mounts
 * the image file itself (a local image), or the persistent cache file of
 * a remote one, whose missing ranges a daemon fills from fanotify
 * pre-content events (lib/remote/kernel.c; docs/mount.md).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "ezfs/ezfs.h"
#include "cmd.h"
#include "common.h"
#include "mount_kernel.h"
#ifdef EZFS_HAVE_REMOTE
#include "ezfs/remote.h"
#endif

/* Has this process CAP_SYS_ADMIN (bit 21 of CapEff)? */
static int sys_admin(void)
{
	char line[256];
	unsigned long long eff = 0;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return geteuid() == 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	return (eff >> 21) & 1;
}

/* mount(2) of the erofs image file at path on mp: 0, or 1 after a line. */
static int kmount(const char *img, const char *path, const char *mp)
{
	char *real = realpath(path, NULL);
	int err;

	if (!real) {
		fprintf(stderr, "ezfs mount: %s: %s\n", path, strerror(errno));
		return 1;
	}
	err = mount(real, mp, "erofs", MS_RDONLY | MS_NODEV | MS_NOSUID, NULL)
		      ? errno
		      : 0;
	free(real);
	if (!err)
		return 0;
	if (err == ENOTBLK)
		fprintf(stderr,
			"ezfs mount: --kernel: this kernel lacks erofs "
			"file-backed mounts (CONFIG_EROFS_FS_BACKED_BY_FILE, "
			"Linux 6.12+); mount through FUSE: ezfs mount %s %s\n",
			img, mp);
	else if (err == ENODEV)
		fprintf(stderr,
			"ezfs mount: --kernel: this kernel lacks erofs "
			"(CONFIG_EROFS_FS); mount through FUSE: ezfs mount "
			"%s %s\n",
			img, mp);
	else
		fprintf(stderr, "ezfs mount: %s on %s: %s\n", img, mp,
			strerror(err));
	return 1;
}

/* Run on in the background: 0 in the child, -1 when it cannot (a line;
 * the caller goes on in the foreground). */
static int background(void)
{
	pid_t pid = fork();

	if (pid < 0) {
		fprintf(stderr, "ezfs mount: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid)
		_exit(0);
	(void)setsid();
	/* the working folder stays: the cache folder and the mount point
	 * may be named relative to it */
	if (!freopen("/dev/null", "r", stdin) ||
	    !freopen("/dev/null", "w", stdout) ||
	    !freopen("/dev/null", "w", stderr)) {
		/* the log goes elsewhere (log_choose) */
	}
	return 0;
}

#ifdef EZFS_HAVE_REMOTE
/* The mount's log, lines above -v's level left out. */
static ezfs_log_fn log_to;
static unsigned log_level;

static void log_some(void *arg, int level, const char *msg)
{
	if (level <= EZFS_LOG_ERROR || (unsigned)level <= log_level)
		log_to(arg, level, msg);
}

/* The key of a complete cache entry named name: 1 with key set. */
struct find_arg {
	const char *name;
	char key[64];
};

static int find_complete(void *arg, const struct ezfs_remote_cache_entry *e)
{
	struct find_arg *a = arg;

	if (strcmp(e->name, a->name) || e->present != e->size || !e->size)
		return 0;
	snprintf(a->key, sizeof(a->key), "%s", e->key);
	return 1;
}

/* A reference by manifest digest whose blob is whole in the cache (it
 * never changes; its bytes were checked as they came): mounted as it is,
 * without a request. 0 mounted, 1 failed (a line), -1 not there. */
static int warm(const struct ezfs_mount_params *p)
{
	struct find_arg a = { .name = p->image };
	char dirbuf[PATH_MAX], path[PATH_MAX + 80];
	const char *dir;

	if (!strstr(p->image, "oci://") || !strstr(p->image, "@sha256:"))
		return -1;
	dir = cli_remote_cache_dir(dirbuf, sizeof(dirbuf));
	if (!dir || ezfs_remote_cache_list(dir, find_complete, &a) != 1)
		return -1;
	snprintf(path, sizeof(path), "%s/%s.data", dir, a.key);
	if (ezfs_remote_cache_pinned(path)) {
		fprintf(stderr,
			"ezfs mount: %s: its cache file %s is mounted by the "
			"kernel already\n",
			p->image, path);
		return 1;
	}
	return kmount(p->image, path, p->mountpoint);
}

/* A remote image: its cache file filled from fanotify events. */
static int remote_kernel(struct ezfs_mount_params *p,
			 const struct kmount_opts *o)
{
	struct ezfs_open_params op;
	const struct ezfs_io_ops *ops;
	ezfs_remote_kfill *k = NULL;
	ezfs_image *img = NULL;
	char why[512];
	void *src;
	uint64_t size;
	size_t rn = p->root_hash_size;
	int err, ret = 1;

	log_to = o->log;
	log_level = p->verbose;
	err = warm(p);
	if (err >= 0)
		return err;
	if (cli_remote_source(p->image, o->remote_log, (void *)p->image,
			      p->verbose, &ops, &src, &size))
		return 1;
	err = ezfs_remote_kfill_new(src, log_some, NULL, &k, why, sizeof(why));
	if (!err)
		ezfs_remote_kfill_background(k, !o->fill_none);
	if (err) {
		fprintf(stderr, "ezfs mount: %s: %s%s\n", p->image, why,
			err == -EOPNOTSUPP ? "; mount through FUSE instead "
					     "(without --kernel)"
					   : "");
		ops->close(src);
		return 1;
	}
	if (p->verity != EZFS_VERITY_OFF &&
	    cli_trust_root("mount", p->image, src, o->require,
			   p->root_hash_sig_file[0] != '\0', p->root_hash, &rn,
			   &p->verity_hash_offset)) {
		ops->close(src);
		goto out;
	}
	ezfs_open_params_init(&op);
	op.log = log_some;
	op.verity = p->verity;
	op.root_hash = rn ? p->root_hash : NULL;
	op.root_hash_size = rn;
	op.verity_hash_offset = p->verity_hash_offset;
	op.verity_hash_file =
		p->verity_hash_file[0] ? p->verity_hash_file : NULL;
	op.root_hash_sig_file =
		p->root_hash_sig_file[0] ? p->root_hash_sig_file : NULL;
	op.trusted_cert = p->trusted_cert[0] ? p->trusted_cert : NULL;
	op.io_hint = ezfs_remote_kfill_hint;
	op.io_verity = ezfs_remote_kfill_verity;
	err = ezfs_image_open_io(ezfs_remote_kfill_io_ops(), k, size, &op,
				 &img);
	if (err) {
		fprintf(stderr, "ezfs mount: %s: %s\n", p->image,
			ezfs_strerror(err));
		goto out;
	}
	if (!ezfs_remote_kfill_verified(k) && !o->unverified) {
		fprintf(stderr,
			"ezfs mount: %s: --kernel serves only checked bytes, "
			"and this image has neither a dm-verity tree nor a "
			"chunk index (build it with mkfs --verity, or push it "
			"with --chunk-index); --unverified mounts it "
			"anyway\n",
			p->image);
		goto out;
	}
	err = ezfs_remote_kfill_meta(k, img);
	if (err) {
		fprintf(stderr, "ezfs mount: %s: reading its metadata: %s\n",
			p->image, ezfs_strerror(err));
		goto out;
	}
	if (ezfs_device_count(img)) {
		fprintf(stderr,
			"ezfs mount: %s: --kernel mounts single-device images "
			"only\n",
			p->image);
		goto out;
	}
	if (!ezfs_remote_kfill_complete(k)) {
		err = ezfs_remote_kfill_arm(k);
		if (err) {
			fprintf(stderr, "ezfs mount: %s: %s\n", p->image,
				strerror(-err));
			goto out;
		}
	}
	if (kmount(p->image, ezfs_remote_kfill_path(k), p->mountpoint))
		goto out;
	cli_trust_warn("mount", p->image, img);
	ret = 0;
	if (ezfs_remote_kfill_complete(k))
		goto out; /* the kernel needs nothing more */
	o->choose_log(p->foreground);
	/* no fork: served from here (leaving would unguard the mount) */
	if (!p->foreground)
		(void)background();
	err = ezfs_remote_kfill_run(k, p->mountpoint);
	if (err)
		ret = 1;
out:
	ezfs_image_close(img);
	ezfs_remote_kfill_free(k);
	return ret;
}
#endif

int mount_kernel_options(const char *opts, struct kmount_opts *o, char **rest)
{
	char *in = strdup(opts), *out, *tok, *save;

	*rest = malloc(strlen(opts) + 1);
	if (!in || !*rest) {
		free(in);
		fprintf(stderr, "ezfs mount: out of memory\n");
		return 1;
	}
	out = *rest;
	for (tok = strtok_r(in, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "fill=all")) {
			o->fill_none = 0;
		} else if (!strcmp(tok, "fill=none")) {
			o->fill_none = 1;
		} else if (!strncmp(tok, "fill=", 5)) {
			fprintf(stderr,
				"ezfs mount: -o %s: --kernel takes fill=all "
				"or fill=none\n",
				tok);
			free(in);
			return 2;
		} else {
			out += sprintf(out, "%s%s", out == *rest ? "" : ",",
				       tok);
		}
	}
	*out = '\0';
	free(in);
	return 0;
}

#ifndef EZFS_HAVE_REMOTE
static int no_remote(const char *img)
{
	fprintf(stderr,
		"ezfs mount: %s: remote images need libcurl; this "
		"ezfs was built without it\n",
		img);
	return 1;
}
#endif

int mount_kernel(struct ezfs_mount_params *p, const struct kmount_opts *o)
{
	char *mp;
	int ret;

	if (!sys_admin()) {
		fprintf(stderr,
			"ezfs mount: --kernel needs root (CAP_SYS_ADMIN: "
			"mount(2) and fanotify); without it mount through "
			"FUSE: ezfs mount %s %s\n",
			p->image, p->mountpoint);
		return 1;
	}
	if (p->offset || p->ndevices) {
		fprintf(stderr, "ezfs mount: --kernel takes no offset= or "
				"device= (the kernel mounts the file whole)\n");
		return 2;
	}
	/* one name for mount(2) and the daemon's watch of the root, whatever
	 * the working folder */
	mp = realpath(p->mountpoint, NULL);
	if (!mp) {
		fprintf(stderr, "ezfs mount: %s: %s\n", p->mountpoint,
			strerror(errno));
		return 1;
	}
	p->mountpoint = mp;
	if (!cli_is_remote(p->image))
		ret = kmount(p->image, p->image, mp);
	else
#ifdef EZFS_HAVE_REMOTE
		ret = remote_kernel(p, o);
#else
		ret = no_remote(p->image);
#endif
	free(mp);
	return ret;
}
