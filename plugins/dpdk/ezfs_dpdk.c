/* SPDX-License-Identifier: MIT */
/*
 * ezfs_dpdk.c - the DPDK compressdev engine plugin (ezfs-dpdk.so), loaded
 * by libezfs (lib/engine/plugin.c) when a "dpdk" engine is first probed or
 * used. Deflate decodes on a compress device: "compress_qat" (Intel QAT,
 * a VF bound to vfio-pci), or the software drivers "compress_zlib" and
 * "compress_isal" (virtual devices made here), or the first compress
 * device there is (driver NULL).
 *
 * - EAL starts on the first open, once per process (an EAL the host
 *   program started is reused): --no-huge --no-shconf (in memory: a
 *   second process starts too, no hugepages needed; EAL refuses
 *   --in-memory beside --no-huge), --lcores mapping
 *   lcore 0 to every CPU the process may use (EAL would pin the calling
 *   thread to one), --no-telemetry, --no-pci for the software drivers;
 *   EZFS_DPDK_EAL replaces these (never -d: no driver from a path the
 *   environment names). Its log goes nowhere (libezfs prints nothing).
 * - One queue pair per device, fed by one device thread: requests are
 *   queued by submit (any thread), copied into chained mbufs of 32 KiB
 *   (outputs of 64 KiB and more do not fit one mbuf), enqueued in bursts,
 *   dequeued, their output copied out and completed. A driver's call that
 *   never returns (ISA-L on a truncated stream with a chained output)
 *   holds only that thread: libezfs abandons the request at its deadline
 *   (EZFS_DPDK_DEADLINE_MS, 2000), decodes it in software, and the device
 *   is out of use for the process. Completion and abandon both run under
 *   the device lock, so an abandoned request is never written to.
 * - No partial decodes (libezfs sends those to software). The output
 *   room is the exact length wanted plus one segment, so a stream that
 *   decodes longer shows as such; libezfs checks the exact length (a
 *   truncated stream is reported as a success with a short output).
 */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_bus_vdev.h>
#include <rte_comp.h>
#include <rte_compressdev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_log.h>
#include <rte_mbuf.h>

#include "engine/plugin.h"

#define SEG	    32768u /* data room of one mbuf */
#define NB_MBUFS    1536u  /* 48 MiB of segments per device */
#define NB_OPS	    1024u
#define QP_DEPTH    512u
#define BURST	    32u
#define DEADLINE_MS 2000u
#define MAX_ARGS    32

#define EZFS_DPDK_API __attribute__((visibility("default")))

/* A request as the device thread holds it. */
struct preq {
	struct ezi_areq *r; /* NULL: abandoned */
	struct preq *next;
	struct rte_comp_op *op;
};

struct dev {
	uint8_t id;
	void *xform;
	struct rte_mempool *mp, *opp;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	struct preq *head, *tail; /* submitted, not yet enqueued */
	unsigned inflight;	  /* enqueued, not dequeued */
	bool dead;
	bool sgl_out, sgl_in;
	uint64_t deadline_ns;
	pthread_t th;
	struct dev *next_dev; /* devs */
};

/* Every device opened, for the release at exit. */
static struct dev *devs;
static pthread_mutex_t devs_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- probe ---- */

static bool is_vdev(const char *driver)
{
	return driver && (!strcmp(driver, "compress_zlib") ||
			  !strcmp(driver, "compress_isal"));
}

/* QAT VFs (and PFs) whose DPDK driver does compression. */
static bool qat_id(unsigned dev)
{
	static const unsigned ids[] = { 0x0443, 0x37c9, 0x19e3, 0x6f55,
					0x18ef, 0x4941, 0x4943, 0x4945 };
	size_t i;

	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		if (ids[i] == dev)
			return true;
	return false;
}

static unsigned read_hex(const char *dir, const char *name)
{
	char path[512];
	unsigned v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%x", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

/* How many QAT devices are bound to a driver DPDK can use. */
static int qat_bound(void)
{
	const char *base = "/sys/bus/pci/devices";
	DIR *d = opendir(base);
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char dir[400], link[512], *slash;
		ssize_t len;

		if (de->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof(dir), "%s/%.300s", base, de->d_name);
		if (read_hex(dir, "vendor") != 0x8086 ||
		    !qat_id(read_hex(dir, "device")))
			continue;
		snprintf(link, sizeof(link), "%s/driver", dir);
		len = readlink(link, dir, sizeof(dir) - 1);
		if (len <= 0)
			continue;
		dir[len] = '\0';
		slash = strrchr(dir, '/');
		slash = slash ? slash + 1 : dir;
		if (!strcmp(slash, "vfio-pci") || !strcmp(slash, "igb_uio") ||
		    !strcmp(slash, "uio_pci_generic"))
			n++;
	}
	closedir(d);
	return n;
}

static int plugin_probe(const char *driver, char *why, size_t size)
{
	char path[512];

	if (is_vdev(driver)) {
		snprintf(path, sizeof(path), "%s/librte_%s.so",
			 RTE_EAL_PMD_PATH, driver);
		if (access(path, R_OK)) {
			snprintf(why, size,
				 "DPDK's %s driver is not installed (%s)",
				 driver, path);
			return -ENOENT;
		}
		return 0;
	}
	if (!qat_bound()) {
		snprintf(why, size,
			 "no QAT device bound to vfio-pci (docs/engines.md; "
			 "software drivers: dpdk:compress_zlib, "
			 "dpdk:compress_isal)");
		return -ENODEV;
	}
	return 0;
}

/* ---- EAL ---- */

static pthread_mutex_t eal_lock = PTHREAD_MUTEX_INITIALIZER;
static int eal_state; /* 0 not tried, 1 up, < 0 failed */
static char eal_why[160];

/* "0@(0,1,...)": lcore 0 on every CPU the process may run on. */
static void lcores_arg(char *buf, size_t size, const cpu_set_t *set)
{
	size_t len = (size_t)snprintf(buf, size, "--lcores=0@(");
	int cpu, first = 1;

	for (cpu = 0; cpu < CPU_SETSIZE && len + 8 < size; cpu++)
		if (CPU_ISSET(cpu, set)) {
			len += (size_t)snprintf(buf + len, size - len, "%s%d",
						first ? "" : ",", cpu);
			first = 0;
		}
	snprintf(buf + len, size - len, ")");
}

static int eal_start(const char *driver, const char *override, char *why,
		     size_t size)
{
	char *argv[MAX_ARGS + 1], lcores[1024], *copy = NULL, *tok, *save;
	cpu_set_t set;
	int argc = 0, r, have_set;
	FILE *devnull;

	pthread_mutex_lock(&eal_lock);
	if (eal_state) {
		r = eal_state;
		if (r < 0)
			snprintf(why, size, "%s", eal_why);
		pthread_mutex_unlock(&eal_lock);
		return r < 0 ? r : 0;
	}
	have_set = !pthread_getaffinity_np(pthread_self(), sizeof(set), &set);
	argv[argc++] = (char *)"ezfs";
	if (override) {
		copy = strdup(override);
		for (tok = copy ? strtok_r(copy, " \t", &save) : NULL;
		     tok && argc < MAX_ARGS;
		     tok = strtok_r(NULL, " \t", &save)) {
			if (!strcmp(tok, "-d") || !strncmp(tok, "-d", 2) ||
			    !strncmp(tok, "--driver-path", 13)) {
				snprintf(eal_why, sizeof(eal_why),
					 "EZFS_DPDK_EAL: -d (a driver from a "
					 "path) is not allowed");
				eal_state = -EPERM;
				goto out;
			}
			argv[argc++] = tok;
		}
	} else {
		argv[argc++] = (char *)"--no-huge";
		argv[argc++] = (char *)"--no-shconf"; /* in memory, with */
		argv[argc++] = (char *)"--no-telemetry";
		argv[argc++] = (char *)"-m";
		argv[argc++] = (char *)"128";
		if (is_vdev(driver))
			argv[argc++] = (char *)"--no-pci";
		if (have_set) {
			lcores_arg(lcores, sizeof(lcores), &set);
			argv[argc++] = lcores;
		}
	}
	argv[argc] = NULL;
	devnull = fopen("/dev/null", "w");
	if (devnull)
		rte_openlog_stream(devnull);
	r = rte_eal_init(argc, argv);
	if (r < 0 && rte_errno == EALREADY) {
		eal_state = 1; /* the host program's EAL */
	} else if (r < 0) {
		snprintf(eal_why, sizeof(eal_why),
			 "DPDK EAL did not start: %s (EZFS_DPDK_EAL overrides "
			 "its arguments)",
			 rte_strerror(rte_errno));
		eal_state = -ENODEV;
	} else {
		eal_state = 1;
	}
	/* whatever EAL did to this thread's CPUs, the caller keeps its own */
	if (have_set)
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
out:
	free(copy);
	r = eal_state;
	if (r < 0)
		snprintf(why, size, "%s", eal_why);
	pthread_mutex_unlock(&eal_lock);
	return r < 0 ? r : 0;
}

/* ---- the device thread ---- */

static void nap_us(unsigned us)
{
	struct timespec ts = { 0, (long)us * 1000 };

	nanosleep(&ts, NULL);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct preq **op_preq(struct rte_comp_op *op)
{
	return (struct preq **)(op + 1); /* the op's user area */
}

/* A chain of mbufs holding len bytes (data copied from src when given). */
static struct rte_mbuf *chain(struct rte_mempool *mp, const uint8_t *src,
			      size_t len)
{
	struct rte_mbuf *head = NULL, *m;
	size_t off = 0;

	do {
		size_t n = len - off < SEG ? len - off : SEG;
		char *p;

		m = rte_pktmbuf_alloc(mp);
		if (!m)
			goto fail;
		p = rte_pktmbuf_append(m, (uint16_t)(n ? n : 1));
		if (!p) {
			rte_pktmbuf_free(m);
			goto fail;
		}
		if (src && n)
			memcpy(p, src + off, n);
		if (!head)
			head = m;
		else if (rte_pktmbuf_chain(head, m)) {
			rte_pktmbuf_free(m);
			goto fail;
		}
		off += n;
	} while (off < len);
	return head;
fail:
	rte_pktmbuf_free(head);
	return NULL;
}

/* Make p's op (dev->lock held: the request's input is read here). */
static int build_op(struct dev *d, struct preq *p)
{
	const struct ezfs_dreq *rq = &p->r->rq;
	struct rte_comp_op *op = rte_comp_op_alloc(d->opp);
	size_t room = rq->outlen + SEG; /* one more segment: "long" shows */

	if (!op)
		return -ENOMEM;
	if (!d->sgl_out && room > SEG)
		room = SEG;
	op->m_src = chain(d->mp, rq->in, rq->inlen);
	op->m_dst = op->m_src ? chain(d->mp, NULL, room) : NULL;
	if (!op->m_dst) {
		rte_pktmbuf_free(op->m_src);
		rte_comp_op_free(op);
		return -ENOMEM;
	}
	op->op_type = RTE_COMP_OP_STATELESS;
	op->private_xform = d->xform;
	op->src.offset = 0;
	op->src.length = (uint32_t)rq->inlen;
	op->dst.offset = 0;
	op->flush_flag = RTE_COMP_FLUSH_FINAL;
	op->input_chksum = 0;
	*op_preq(op) = p;
	p->op = op;
	return 0;
}

static void free_op(struct rte_comp_op *op)
{
	rte_pktmbuf_free(op->m_src);
	rte_pktmbuf_free(op->m_dst);
	rte_comp_op_free(op);
}

/* Complete p from its op (dev->lock held), unless it was abandoned. */
static void finish(struct preq *p, int err)
{
	struct ezi_areq *r = p->r;
	struct rte_comp_op *op = p->op;

	if (!r)
		return;
	r->err = err;
	r->produced = 0;
	if (!err && op) {
		if (op->status == RTE_COMP_OP_STATUS_SUCCESS) {
			struct rte_mbuf *m;
			size_t left = op->produced < r->rq.outlen
					      ? op->produced
					      : r->rq.outlen,
			       off = 0;

			for (m = op->m_dst; m && left; m = m->next) {
				size_t n = rte_pktmbuf_data_len(m);

				n = n < left ? n : left;
				memcpy(r->rq.out + off,
				       rte_pktmbuf_mtod(m, const void *), n);
				off += n;
				left -= n;
			}
			r->produced = op->produced;
		} else if (
			op->status ==
				RTE_COMP_OP_STATUS_OUT_OF_SPACE_TERMINATED ||
			op->status ==
				RTE_COMP_OP_STATUS_OUT_OF_SPACE_RECOVERABLE) {
			r->err = -ENOSPC;
		} else {
			r->err = -EIO;
		}
	}
	p->r = NULL;
	r->complete(r); /* r is libezfs's again */
}

static void *dev_main(void *arg)
{
	struct dev *d = arg;
	struct rte_comp_op *ops[BURST];
	struct preq *batch[BURST];

	for (;;) {
		unsigned n = 0, i, sent, got;

		pthread_mutex_lock(&d->lock);
		while (!d->head && !d->inflight)
			pthread_cond_wait(&d->cv, &d->lock);
		while (d->head && n < BURST && d->inflight + n < QP_DEPTH) {
			struct preq *p = d->head;

			if (!p->r) { /* abandoned while put back */
				d->head = p->next;
				free(p);
				continue;
			}
			if (build_op(d, p)) {
				if (d->inflight + n)
					break; /* room comes back: retry */
				d->head = p->next;
				finish(p, -ENOMEM);
				free(p);
				continue;
			}
			d->head = p->next;
			p->r->t_start = now_ns();
			batch[n] = p;
			ops[n++] = p->op;
		}
		if (!d->head)
			d->tail = NULL;
		d->inflight += n;
		pthread_mutex_unlock(&d->lock);

		/* the drivers' own calls: may take long (never: the deadline)
		 */
		sent = n ? rte_compressdev_enqueue_burst(d->id, 0, ops,
							 (uint16_t)n)
			 : 0;
		if (sent < n) {
			/* the queue pair is full: back to the front */
			pthread_mutex_lock(&d->lock);
			for (i = n; i-- > sent;) {
				free_op(batch[i]->op);
				batch[i]->op = NULL;
				batch[i]->next = d->head;
				d->head = batch[i];
				if (!d->tail)
					d->tail = batch[i];
			}
			d->inflight -= n - sent;
			pthread_mutex_unlock(&d->lock);
		}
		got = rte_compressdev_dequeue_burst(d->id, 0, ops, BURST);
		pthread_mutex_lock(&d->lock);
		for (i = 0; i < got; i++) {
			struct preq *p = *op_preq(ops[i]);

			finish(p, 0);
			free_op(ops[i]);
			free(p);
		}
		d->inflight -= got;
		pthread_mutex_unlock(&d->lock);
		if (!got && !sent)
			nap_us(5);
	}
	return NULL;
}

/* ---- open ---- */

static int find_dev(const char *driver, char *why, size_t size)
{
	struct rte_compressdev_info info;
	int id, n = rte_compressdev_count();

	if (is_vdev(driver)) {
		id = rte_compressdev_get_dev_id(driver);
		if (id < 0 && rte_vdev_init(driver, NULL)) {
			snprintf(why, size, "cannot create the %s device",
				 driver);
			return -ENODEV;
		}
		id = rte_compressdev_get_dev_id(driver);
		if (id < 0)
			snprintf(why, size, "no %s device after creating it",
				 driver);
		return id < 0 ? -ENODEV : id;
	}
	for (id = 0; id < n; id++) {
		rte_compressdev_info_get((uint8_t)id, &info);
		if (!driver ||
		    (info.driver_name && strstr(info.driver_name, "qat")))
			return id;
	}
	snprintf(why, size, "no %s compress device found",
		 driver ? driver : "DPDK");
	return -ENODEV;
}

static void *plugin_open(const char *driver, const char *eal, char *why,
			 size_t size, int *err)
{
	const struct rte_compressdev_capabilities *cap;
	struct rte_compressdev_config cfg = { 0 };
	struct rte_comp_xform xf = { 0 };
	struct dev *d = NULL;
	char name[64];
	const char *dl = getenv("EZFS_DPDK_DEADLINE_MS");
	int id, socket;

	*err = eal_start(driver, eal, why, size);
	if (*err)
		return NULL;
	id = find_dev(driver, why, size);
	if (id < 0) {
		*err = id;
		return NULL;
	}
	cap = rte_compressdev_capability_get((uint8_t)id,
					     RTE_COMP_ALGO_DEFLATE);
	if (!cap) {
		snprintf(why, size, "compress device %d: no DEFLATE", id);
		*err = -EOPNOTSUPP;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		*err = -ENOMEM;
		return NULL;
	}
	d->id = (uint8_t)id;
	d->sgl_out = cap->comp_feature_flags & (RTE_COMP_FF_OOP_SGL_IN_SGL_OUT |
						RTE_COMP_FF_OOP_LB_IN_SGL_OUT);
	d->sgl_in = cap->comp_feature_flags & (RTE_COMP_FF_OOP_SGL_IN_SGL_OUT |
					       RTE_COMP_FF_OOP_SGL_IN_LB_OUT);
	/* DPDK 22.11's zlib driver walks chained mbufs both ways but does
	 * not say so in its flags */
	if (driver && !strcmp(driver, "compress_zlib"))
		d->sgl_in = d->sgl_out = true;
	d->deadline_ns =
		(dl && atoi(dl) > 0 ? (uint64_t)atoi(dl) : DEADLINE_MS) *
		1000000u;
	socket = rte_compressdev_socket_id(d->id);
	if (socket < 0)
		socket = SOCKET_ID_ANY;
	cfg.socket_id = socket;
	cfg.nb_queue_pairs = 1;
	cfg.max_nb_priv_xforms = 1;
	cfg.max_nb_streams = 0;
	snprintf(name, sizeof(name), "ezfs_mb_%d", id);
	d->mp = rte_pktmbuf_pool_create(name, NB_MBUFS, 0, 0,
					RTE_PKTMBUF_HEADROOM + SEG, socket);
	snprintf(name, sizeof(name), "ezfs_op_%d", id);
	d->opp = rte_comp_op_pool_create(name, NB_OPS, 0, sizeof(struct preq *),
					 socket);
	if (!d->mp || !d->opp || rte_compressdev_configure(d->id, &cfg) ||
	    rte_compressdev_queue_pair_setup(d->id, 0, QP_DEPTH, socket) ||
	    rte_compressdev_start(d->id)) {
		snprintf(why, size, "compress device %d: cannot set up (%s)",
			 id, rte_strerror(rte_errno));
		goto fail;
	}
	xf.type = RTE_COMP_DECOMPRESS;
	xf.decompress.algo = RTE_COMP_ALGO_DEFLATE;
	xf.decompress.chksum = RTE_COMP_CHECKSUM_NONE;
	xf.decompress.window_size = 15;
	xf.decompress.hash_algo = RTE_COMP_HASH_ALGO_NONE;
	if (rte_compressdev_private_xform_create(d->id, &xf, &d->xform)) {
		snprintf(why, size,
			 "compress device %d: no raw DEFLATE "
			 "decompression",
			 id);
		goto fail;
	}
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cv, NULL);
	if (pthread_create(&d->th, NULL, dev_main, d)) {
		snprintf(why, size, "cannot start the device thread");
		goto fail;
	}
	pthread_detach(d->th); /* lives as long as the process */
	pthread_mutex_lock(&devs_lock);
	d->next_dev = devs;
	devs = d;
	pthread_mutex_unlock(&devs_lock);
	return d;
fail:
	*err = -ENODEV;
	/* the pools stay: DPDK has no way to reuse their names otherwise */
	free(d);
	return NULL;
}

/*
 * At exit: give back the decompression state of each idle device (the
 * zlib driver's inflate state is malloc'ed and held only in DPDK's own
 * memory, which leak checkers cannot see). A device with a request still
 * in the driver (its thread may never come back) is left as it is.
 */
__attribute__((destructor)) static void release_devs(void)
{
	struct dev *d;

	pthread_mutex_lock(&devs_lock);
	for (d = devs; d; d = d->next_dev) {
		pthread_mutex_lock(&d->lock);
		if (!d->inflight && !d->head && d->xform) {
			rte_compressdev_private_xform_free(d->id, d->xform);
			d->xform = NULL;
			d->dead = true; /* nothing more is taken */
		}
		pthread_mutex_unlock(&d->lock);
	}
	pthread_mutex_unlock(&devs_lock);
}

/* ---- requests ---- */

static int plugin_submit(void *dev, struct ezi_areq *r)
{
	struct dev *d = dev;
	struct preq *p;

	if (!d->sgl_out && r->rq.outlen >= SEG)
		return -EOPNOTSUPP;
	if (!d->sgl_in && r->rq.inlen > SEG)
		return -EOPNOTSUPP;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->r = r;
	r->priv = p;
	pthread_mutex_lock(&d->lock);
	if (d->dead) {
		pthread_mutex_unlock(&d->lock);
		free(p);
		return -ENODEV;
	}
	if (d->tail)
		d->tail->next = p;
	else
		d->head = p;
	d->tail = p;
	pthread_cond_signal(&d->cv);
	pthread_mutex_unlock(&d->lock);
	return 0;
}

static int plugin_abandon(void *dev, struct ezi_areq *r, bool *out_of_use)
{
	struct dev *d = dev;
	struct preq *p = r->priv, **pp;

	pthread_mutex_lock(&d->lock);
	if (__atomic_load_n(&r->done, __ATOMIC_ACQUIRE)) {
		pthread_mutex_unlock(&d->lock);
		*out_of_use = false;
		return -EBUSY; /* completed meanwhile */
	}
	for (pp = &d->head; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			if (d->tail == p) {
				struct preq *t = d->head;

				while (t && t->next)
					t = t->next;
				d->tail = t;
			}
			free(p);
			p = NULL;
			break;
		}
	if (p)
		p->r = NULL; /* in the device: dropped when it comes back */
	d->dead = true;	     /* a device past its deadline is not trusted */
	pthread_mutex_unlock(&d->lock);
	*out_of_use = true;
	return 0;
}

static uint64_t plugin_deadline(void *dev)
{
	return ((struct dev *)dev)->deadline_ns;
}

static const struct ezi_plugin_v1 plugin = {
	.abi = EZI_PLUGIN_ABI,
	.areq_size = sizeof(struct ezi_areq),
	.probe = plugin_probe,
	.open = plugin_open,
	.submit = plugin_submit,
	.abandon = plugin_abandon,
	.deadline_ns = plugin_deadline,
};

EZFS_DPDK_API const struct ezi_plugin_v1 *ezfs_dpdk_plugin_v1(void);

const struct ezi_plugin_v1 *ezfs_dpdk_plugin_v1(void)
{
	return &plugin;
}
