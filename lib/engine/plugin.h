/* SPDX-License-Identifier: MIT */
/*
 * plugin.h - the interface between libezfs and an engine plugin (a shared
 * object loaded at run time: plugins/dpdk/). Versioned: the entry point's
 * name carries the version, and the table says which struct ezi_areq it
 * was built with; libezfs refuses any other.
 */
#ifndef EZFS_ENGINE_PLUGIN_H
#define EZFS_ENGINE_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"

#define EZI_PLUGIN_ABI	 1
#define EZI_PLUGIN_ENTRY "ezfs_dpdk_plugin_v1"
#define EZI_PLUGIN_FILE	 "ezfs-dpdk.so"

struct ezi_plugin_v1 {
	unsigned abi;	    /* EZI_PLUGIN_ABI */
	unsigned areq_size; /* sizeof(struct ezi_areq) */
	/* Could driver (NULL: the first compress device) serve here? No
	 * device is started. 0, or -errno and the reason in why. */
	int (*probe)(const char *driver, char *why, size_t size);
	/* Start the environment (once per process; reuses one the host
	 * program started) and the device; eal: the override of the
	 * environment's arguments, or NULL. NULL: *err and why. */
	void *(*open)(const char *driver, const char *eal, char *why,
		      size_t size, int *err);
	/* As struct ezi_async_ops. */
	int (*submit)(void *dev, struct ezi_areq *r);
	int (*abandon)(void *dev, struct ezi_areq *r, bool *out_of_use);
	uint64_t (*deadline_ns)(void *dev);
};

typedef const struct ezi_plugin_v1 *(*ezi_plugin_entry_v1)(void);

#endif
