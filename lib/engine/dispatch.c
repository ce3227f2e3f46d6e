/* SPDX-License-Identifier: MIT */
/*
 * dispatch.c - decode workers: a shared queue, or one pinned worker per CPU.
 *
 * queue:  N workers take jobs from one FIFO.
 * percpu: one worker per CPU the process may run on, pinned there
 *         (pthread_setaffinity_np), SCHED_FIFO where permitted, else the
 *         lowest nice value allowed. A job goes to the queue of the CPU the
 *         submitter runs on (sched_getcpu), or to the shared queue if that
 *         CPU has no worker; an idle worker takes its own queue first, then
 *         the shared one, then steals from the others, so that a batch from
 *         one thread still spreads over every CPU.
 * One mutex guards all queues: the jobs are whole pcluster decodes (tens of
 * microseconds at least), so the lock is not where the time goes.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine/engine.h"

struct wq {
	struct ezfs_ejob *head, *tail;
};

struct worker {
	pthread_t th;
	struct ezfs_dispatcher *d;
	int cpu;        /* -1: not pinned to one */
	struct wq q;
	bool started;
};

struct ezfs_dispatcher {
	struct ezfs_estate *es;
	int mode;
	pthread_mutex_t lock;
	pthread_cond_t work;
	bool stop;
	struct wq shared;
	unsigned nw;
	struct worker *w;
	int cpu_worker[CPU_SETSIZE]; /* percpu: worker index, -1: none */
	unsigned pinned;
	int policy, nice;
	uint64_t local, from_shared, stolen;
};

static void wq_push(struct wq *q, struct ezfs_ejob *j)
{
	j->next = NULL;
	if (q->tail)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
}

static struct ezfs_ejob *wq_pop(struct wq *q)
{
	struct ezfs_ejob *j = q->head;

	if (j) {
		q->head = j->next;
		if (!q->head)
			q->tail = NULL;
	}
	return j;
}

/* Real-time where permitted, else the highest priority allowed. */
static void raise_priority(struct ezfs_dispatcher *d)
{
	struct sched_param sp = { 0 };
	pid_t tid = (pid_t)syscall(SYS_gettid);
	int nice;

	sp.sched_priority = sched_get_priority_min(SCHED_FIFO);
	if (!pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp)) {
		__atomic_store_n(&d->policy, SCHED_FIFO, __ATOMIC_RELAXED);
		return;
	}
	for (nice = -20; nice < 0; nice++)
		if (!setpriority(PRIO_PROCESS, (id_t)tid, nice))
			break;
	__atomic_store_n(&d->nice, nice, __ATOMIC_RELAXED);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct ezfs_dispatcher *d = w->d;
	unsigned me = (unsigned)(w - d->w), i;

	ezfs_engine_on_worker = true;
	if (d->mode == EZFS_DISPATCH_PERCPU)
		raise_priority(d);
	pthread_mutex_lock(&d->lock);
	while (!d->stop) {
		struct ezfs_ejob *j = wq_pop(&w->q);
		struct ezfs_ebatch *b;

		if (j) {
			d->local++;
		} else if ((j = wq_pop(&d->shared))) {
			d->from_shared++;
		} else {
			for (i = 1; i < d->nw && !j; i++)
				j = wq_pop(&d->w[(me + i) % d->nw].q);
			if (j)
				d->stolen++;
		}
		if (!j) {
			pthread_cond_wait(&d->work, &d->lock);
			continue;
		}
		pthread_mutex_unlock(&d->lock);
		j->err = j->fn(j->arg);
		ezfs_engine_lat_record(d->es, ezfs_engine_now_ns() -
						      j->t_submit);
		b = j->batch;
		ezfs_ebatch_done(b); /* j may be gone after this */
		pthread_mutex_lock(&d->lock);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

static unsigned online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (unsigned)n : 1;
}

struct ezfs_dispatcher *ezfs_disp_new(struct ezfs_estate *es, int mode,
				      unsigned nthreads, int *err)
{
	struct ezfs_dispatcher *d = calloc(1, sizeof(*d));
	cpu_set_t set;
	unsigned i, n = 0;
	int cpu;

	*err = 0;
	if (!d) {
		*err = -ENOMEM;
		return NULL;
	}
	d->es = es;
	d->mode = mode;
	d->policy = SCHED_OTHER;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		d->cpu_worker[cpu] = -1;
	if (mode == EZFS_DISPATCH_PERCPU) {
		if (sched_getaffinity(0, sizeof(set), &set)) {
			CPU_ZERO(&set);
			for (i = 0; i < online_cpus() && i < CPU_SETSIZE; i++)
				CPU_SET(i, &set);
		}
		n = (unsigned)CPU_COUNT(&set);
	} else {
		n = nthreads ? nthreads : online_cpus();
	}
	d->w = calloc(n ? n : 1, sizeof(*d->w));
	if (!d->w || !n) {
		free(d->w);
		free(d);
		*err = -ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->work, NULL);
	cpu = -1;
	for (i = 0; i < n; i++) {
		struct worker *w = &d->w[i];
		pthread_attr_t attr;
		int e;

		w->d = d;
		w->cpu = -1;
		pthread_attr_init(&attr);
		if (mode == EZFS_DISPATCH_PERCPU) {
			cpu_set_t one;

			while (++cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &set))
				;
			CPU_ZERO(&one);
			CPU_SET(cpu, &one);
			if (!pthread_attr_setaffinity_np(&attr, sizeof(one),
							 &one)) {
				w->cpu = cpu;
			}
		}
		e = pthread_create(&w->th, &attr, worker_main, w);
		if (e && w->cpu >= 0) {
			/* pinning refused at creation: pin afterwards */
			pthread_attr_destroy(&attr);
			pthread_attr_init(&attr);
			e = pthread_create(&w->th, &attr, worker_main, w);
			w->cpu = -1;
		}
		pthread_attr_destroy(&attr);
		if (e) {
			*err = -e;
			break;
		}
		w->started = true;
		d->nw = i + 1;
		if (w->cpu >= 0) {
			d->cpu_worker[w->cpu] = (int)i;
			d->pinned++;
		}
	}
	if (*err) {
		ezfs_disp_free(d);
		return NULL;
	}
	return d;
}

void ezfs_disp_free(struct ezfs_dispatcher *d)
{
	unsigned i;

	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_cond_broadcast(&d->work);
	pthread_mutex_unlock(&d->lock);
	for (i = 0; i < d->nw; i++)
		if (d->w[i].started)
			pthread_join(d->w[i].th, NULL);
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->work);
	free(d->w);
	free(d);
}

void ezfs_disp_submit(struct ezfs_dispatcher *d, struct ezfs_ejob *jobs,
		      size_t n)
{
	struct wq *q = &d->shared;
	uint64_t now = ezfs_engine_now_ns();
	size_t i;

	if (d->mode == EZFS_DISPATCH_PERCPU) {
		int cpu = sched_getcpu();

		if (cpu >= 0 && cpu < CPU_SETSIZE && d->cpu_worker[cpu] >= 0)
			q = &d->w[d->cpu_worker[cpu]].q;
	}
	pthread_mutex_lock(&d->lock);
	for (i = 0; i < n; i++) {
		jobs[i].t_submit = now;
		wq_push(q, &jobs[i]);
	}
	if (n > 1)
		pthread_cond_broadcast(&d->work);
	else
		pthread_cond_signal(&d->work);
	pthread_mutex_unlock(&d->lock);
}

void ezfs_disp_info(struct ezfs_dispatcher *d, struct ezfs_dispatch_info *di)
{
	pthread_mutex_lock(&d->lock);
	di->mode = d->mode;
	di->workers = d->nw;
	di->pinned = d->pinned;
	di->policy = __atomic_load_n(&d->policy, __ATOMIC_RELAXED);
	di->nice = __atomic_load_n(&d->nice, __ATOMIC_RELAXED);
	di->local = d->local;
	di->shared = d->from_shared;
	di->stolen = d->stolen;
	pthread_mutex_unlock(&d->lock);
}
