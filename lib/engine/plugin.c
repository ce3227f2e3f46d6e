/* SPDX-License-Identifier: MIT */
/*
 * plugin.c - the DPDK engines' side in libezfs: the plugin (ezfs-dpdk.so,
 * built from plugins/dpdk/ where DPDK is installed) is loaded with dlopen
 * when a DPDK engine is first probed or used, so that libezfs neither
 * links nor loads DPDK otherwise. Where from, first found:
 *   - $EZFS_PLUGIN_DIR, only when the process runs with no privilege
 *     (real and effective user not root, not set-id);
 *   - the folder "ezfs" beside the object that holds this code (libezfs
 *     in the build tree, or wherever it is installed);
 *   - EZFS_PLUGIN_DIR as built (the installed library folder's "ezfs").
 * EZFS_DPDK_EAL overrides the plugin's EAL arguments (docs/engines.md).
 */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/plugin.h"

#ifndef EZFS_PLUGIN_DIR
#define EZFS_PLUGIN_DIR "/usr/lib/ezfs"
#endif

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const struct ezi_plugin_v1 *plug;
static char load_why[512];

static bool privileged(void)
{
	return !getuid() || !geteuid() || getuid() != geteuid() ||
	       getgid() != getegid();
}

/* Try dir/EZI_PLUGIN_FILE; true: loaded (or found but refused: why; or
 * found, when dry: nothing loaded). */
static bool try_dir(const char *dir, bool dry)
{
	char path[4096];
	ezi_plugin_entry_v1 entry;
	const struct ezi_plugin_v1 *p;
	void *h;

	if (snprintf(path, sizeof(path), "%s/%s", dir, EZI_PLUGIN_FILE) >=
		    (int)sizeof(path) ||
	    access(path, F_OK))
		return false;
	if (dry)
		return true;
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(load_why, sizeof(load_why),
			 "cannot load %.200s: %.200s", path, dlerror());
		return true;
	}
	entry = (ezi_plugin_entry_v1)dlsym(h, EZI_PLUGIN_ENTRY);
	p = entry ? entry() : NULL;
	if (!p || p->abi != EZI_PLUGIN_ABI ||
	    p->areq_size != sizeof(struct ezi_areq)) {
		snprintf(load_why, sizeof(load_why),
			 "%.200s: not a plugin of this libezfs (entry point %s "
			 "missing or of another version)",
			 path, EZI_PLUGIN_ENTRY);
		dlclose(h);
		return true;
	}
	__atomic_store_n(&plug, p, __ATOMIC_RELEASE); /* loaded for good */
	return true;
}

/* Where the plugin is (load: loaded from there); false: nowhere. */
static bool find_plugin(bool dry)
{
	const char *env = getenv("EZFS_PLUGIN_DIR");
	Dl_info info;
	char here[4096], *slash;

	if (env && *env && !privileged() && try_dir(env, dry))
		return true;
	if (dladdr((void *)find_plugin, &info) && info.dli_fname &&
	    strlen(info.dli_fname) < sizeof(here) - 8) {
		strcpy(here, info.dli_fname);
		slash = strrchr(here, '/');
		if (slash) {
			strcpy(slash + 1, "ezfs");
			if (try_dir(here, dry))
				return true;
		}
	}
	return try_dir(EZFS_PLUGIN_DIR, dry);
}

static void load(void)
{
	if (find_plugin(false))
		return;
	snprintf(load_why, sizeof(load_why),
		 "the DPDK plugin %s is not installed (package ezfs-dpdk; "
		 "looked beside libezfs and in %s)",
		 EZI_PLUGIN_FILE, EZFS_PLUGIN_DIR);
}

static const struct ezi_plugin_v1 *plugin(char *why, size_t size)
{
	pthread_once(&load_once, load);
	if (!plug && size)
		snprintf(why, size, "%s", load_why);
	return plug; /* set (or not) by load, before pthread_once returns */
}

static int dpdk_installed(char *why, size_t size)
{
	bool found;

	if (__atomic_load_n(&plug, __ATOMIC_ACQUIRE))
		return 0;
	found = find_plugin(true);
	if (!found && size)
		snprintf(why, size,
			 "the DPDK plugin %s is not installed (package "
			 "ezfs-dpdk)",
			 EZI_PLUGIN_FILE);
	return found ? 0 : -ENOENT;
}

static int dpdk_probe(const char *arg, char *why, size_t size)
{
	const struct ezi_plugin_v1 *p = plugin(why, size);

	return p ? p->probe(arg, why, size) : -ENOENT;
}

static void *dpdk_open(const char *arg, char *why, size_t size, int *err)
{
	const struct ezi_plugin_v1 *p = plugin(why, size);

	if (!p) {
		*err = -ENOENT;
		return NULL;
	}
	return p->open(arg, getenv("EZFS_DPDK_EAL"), why, size, err);
}

/* The device handle came from the plugin, so plug is set. */
static int dpdk_submit(void *dev, struct ezi_areq *r)
{
	return plug->submit(dev, r);
}

static int dpdk_abandon(void *dev, struct ezi_areq *r, bool *out_of_use)
{
	return plug->abandon(dev, r, out_of_use);
}

static uint64_t dpdk_deadline(void *dev)
{
	return plug->deadline_ns(dev);
}

const struct ezi_async_ops ezi_dpdk_ops = {
	.submit = dpdk_submit,
	.abandon = dpdk_abandon,
	.open = dpdk_open,
	.probe = dpdk_probe,
	.installed = dpdk_installed,
	.deadline_ns = dpdk_deadline,
};
