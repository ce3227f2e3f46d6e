/* SPDX-License-Identifier: MIT */
/*
 * engine.h - decompression engines: the accelerator list, run-time selection,
 * fallback counters and dispatch modes (see docs/engines.md).
 *
 * An engine is one decoder of one on-disk algorithm ("libdeflate", "isal",
 * "zlib" for deflate; "lz4"; "zstd"; "lzma"; the test engines "fail" and
 * "async-test"; the DPDK compressdev engines "dpdk", "dpdk:DRIVER", loaded
 * as a plugin on first use, see docs/engines.md). Each
 * image keeps, per algorithm, an ordered engine list; the first usable engine
 * serves a request, and one that fails hands it to the algorithm's reference
 * engine (the last of its default list: zlib for deflate).
 *
 * Configuration, strongest first: the functions below on a live image,
 * struct ezfs_open_params (accel, dispatch, strict_accel), then the
 * environment: EZFS_ACCEL (a spec), EZFS_DISPATCH (inline, queue[:N],
 * percpu) and EZFS_STRICT_ACCEL (1).
 */
#ifndef EZFS_ENGINE_H
#define EZFS_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "ezfs/ezfs.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ezfs_engine_flags {
	EZFS_ENGINE_PARTIAL = 1 << 0, /* can stop after the wanted prefix */
	EZFS_ENGINE_TEST = 1 << 8,    /* test-only: selectable by name only */
};

struct ezfs_engine_info {
	const char *name; /* static string */
	int alg;	  /* enum ezfs_alg */
	unsigned flags;	  /* enum ezfs_engine_flags */
	int probe;	  /* 0: usable on this machine, else -errno */
	int default_pos;  /* 0-based place in the default order, -1: none */
	int reference;	  /* 1: the algorithm's reference (fallback) engine */
};

/* Number of engines compiled in. These functions without an image are
 * thread-safe. */
EZFS_API unsigned ezfs_engine_count(void);
/* Describe engine i (< ezfs_engine_count()); -EINVAL past the end (info
 * untouched). info->probe runs the engine's probe now; for the DPDK
 * engines only what loads nothing (the plugin installed, not out of use):
 * ezfs_engine_why probes them fully. */
EZFS_API int ezfs_engine_get_info(unsigned i, struct ezfs_engine_info *info);
/* Is engine i usable here (the full probe): 0, else a negative errno with
 * the reason in
 * why ("" when usable; cut to size; why may be NULL when size is 0):
 * e.g. the DPDK plugin or its driver missing, or a device taken out of
 * use after a request passed its deadline. -EINVAL past the end. Probing
 * the DPDK engines loads the plugin but starts no device. */
EZFS_API int ezfs_engine_why(unsigned i, char *why, size_t size);

/*
 * Change the engine order of a live image; thread-safe against concurrent
 * reads (a read in flight finishes with the order it started with).
 * Spec: ';'-separated groups, each "ALG=ENG[,ENG...]" (exactly this order,
 * the reference engine still behind it) or a bare engine name (that engine
 * first for its algorithm, the rest of the default order behind it). NULL
 * or "" = the default order. Returns 0, -EINVAL (unknown algorithm or
 * engine, engine of another algorithm: the log names them) or -ENOMEM;
 * the order is unchanged on error.
 *
 * All ezfs_image_* functions here create the image's engine state on first
 * use: each of them may return -ENOMEM for that (the void ones then do
 * nothing). They are thread-safe against each other and against reads.
 */
EZFS_API int ezfs_image_set_accel(ezfs_image *img, const char *spec);
/* Check a spec without an image (NULL or "": the default, valid): 0 or
 * -EINVAL. */
EZFS_API int ezfs_accel_check(const char *spec);
/* The same, with the reason ("unknown engine 'x', ...", "" when valid) in
 * why, cut to size; why may be NULL when size is 0. */
EZFS_API int ezfs_accel_check_msg(const char *spec, char *why, size_t size);
/* The current order as a spec, e.g. "lz4=lz4;deflate=isal,zlib;...".
 * Returns the length (snprintf-like: the output was cut if >= size; buf
 * may be NULL when size is 0) or -ENOMEM. */
EZFS_API int ezfs_image_get_accel(ezfs_image *img, char *buf, size_t size);

/* 1 (any non-zero): a request that would fall back fails instead (with
 * the engine's error, -EOPNOTSUPP when it cannot serve the request); 0:
 * fall back. Returns 0 or -ENOMEM. */
EZFS_API int ezfs_image_set_strict_accel(ezfs_image *img, int strict);
/* 1 when strict, 0 when not, or -ENOMEM. */
EZFS_API int ezfs_image_get_strict_accel(ezfs_image *img);

enum ezfs_dispatch {
	EZFS_DISPATCH_INLINE = 0, /* the reading thread decodes */
	EZFS_DISPATCH_QUEUE = 1,  /* a shared pool of worker threads */
	EZFS_DISPATCH_PERCPU = 2, /* one pinned worker per online CPU */
};
/* "inline", "queue", "percpu" (also "queue:N", N in 1..1024) -> mode (and
 * *nthreads, 0 = default; always set), or -EINVAL (also for s NULL). */
EZFS_API int ezfs_dispatch_parse(const char *s, unsigned *nthreads);
/* "inline", "queue", "percpu", or "?": a static string. */
EZFS_API const char *ezfs_dispatch_name(int mode);
/*
 * Switch the dispatch mode (queue: nthreads workers, 0 = one per online
 * CPU; percpu: one per online CPU, nthreads ignored). Waits for requests in
 * flight; safe to call while other threads read. Returns 0, -EINVAL (an
 * unknown mode; nothing changes), -ENOMEM, or the error of creating the
 * threads (-EAGAIN...: the mode is then inline).
 */
EZFS_API int ezfs_image_set_dispatch(ezfs_image *img, int mode,
				     unsigned nthreads);

struct ezfs_dispatch_info {
	int mode;	  /* enum ezfs_dispatch */
	unsigned workers; /* threads running */
	unsigned pinned;  /* workers pinned to their CPU */
	int policy;	  /* SCHED_FIFO or SCHED_OTHER (workers' policy) */
	int nice;	  /* workers' nice value under SCHED_OTHER */
	uint64_t batches; /* batched submissions (ezfs_pread) */
	uint64_t local, shared, stolen; /* percpu: where jobs were taken */
};
/* Returns 0 or -ENOMEM (*di then zeroed). */
EZFS_API int ezfs_image_dispatch_info(ezfs_image *img,
				      struct ezfs_dispatch_info *di);

/* Per-engine counters of one image. */
struct ezfs_engine_stats {
	const char *name;
	int alg;
	uint64_t requests;  /* requests handed to this engine */
	uint64_t bytes_out; /* bytes it decoded successfully */
	uint64_t fallbacks; /* requests it handed on to another engine */
	uint64_t errors;    /* failures other than "cannot serve" */
	/* requests submitted and not completed, now and at most (an async
	 * engine; a software engine completes each within its submit) */
	uint64_t in_flight, in_flight_max;
	/* summed over requests: waiting for the engine (submit to the start
	 * of service), and in service (to completion), nanoseconds; an async
	 * engine's (0 for a software engine) */
	uint64_t queued_ns, service_ns;
};
/* Fill up to n entries (one per engine, ezfs_engine_get_info order; st
 * may be NULL when n is 0); returns the number of engines (more than n:
 * some were left out) or -ENOMEM. The counters are read one by one, not as
 * one snapshot. */
EZFS_API int ezfs_image_engine_stats(ezfs_image *img,
				     struct ezfs_engine_stats *st, size_t n);

/* Latency from submit to completion of decode requests, in microseconds,
 * over the last samples kept (a bounded buffer per image). */
struct ezfs_latency_stats {
	uint64_t total; /* requests recorded since open */
	uint64_t count; /* samples the figures below cover */
	double avg, median, min, max, stddev;
};
/* Returns 0 or -ENOMEM (*ls then zeroed). */
EZFS_API int ezfs_image_latency_stats(ezfs_image *img,
				      struct ezfs_latency_stats *ls);
/* Forget the counters and latency samples. */
EZFS_API void ezfs_image_engine_reset(ezfs_image *img);

/*
 * Raw in-memory decode speed of one engine: data is compressed with its
 * algorithm's encoder (default level) into pclusters of pcluster bytes
 * (fixed output, as on disk, stream parameters as ezfs mkfs records them),
 * then every pcluster is decoded to its place in one buffer of len bytes
 * (as a file read lands), once checked and untimed, then iters rounds
 * timed. *mbps = decoded MB/s (1e6 bytes) of the fastest round, in CPU
 * time of the calling thread; *ratio (may be NULL) = compression ratio.
 * *mbps is 0 on failure. Returns 0, -EINVAL (unknown engine, len,
 * pcluster or iters 0), -EOPNOTSUPP (engine not usable here or no
 * encoder), -ENOMEM, -EUCLEAN (output differs from data), or the error of
 * the encoder or decoder. Thread-safe (its own codec state).
 */
EZFS_API int ezfs_engine_bench_raw(const char *engine, const void *data,
				   size_t len, size_t pcluster, unsigned iters,
				   double *mbps, double *ratio);

#ifdef __cplusplus
}
#endif
#endif
