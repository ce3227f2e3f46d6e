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
 * Jobs decoded ahead of a reader (ezi_disp_submit with ahead set) wait in
 * one more queue that a worker takes only when no other job is queued, so
 * that what a reader waits for now goes first.
 * One mutex guards all queues: the jobs are whole pcluster decodes (tens of
 * microseconds at least), so the lock is not where the time goes. Each
 * worker sleeps on its own condition variable, so a submission wakes the
 * worker of the submitting CPU (percpu) or just as many idle workers as
 * there are jobs, never the whole pool for one job. A job still queued
 * may be taken back by the thread that waits for it (ezi_disp_claim): the
 * queues are doubly linked. ezi_disp_new returns once every worker is
 * pinned and has its priority; ezi_disp_free runs what is still queued
 * before the workers end, so every job completes.
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
	size_t n;
};

struct worker {
	pthread_t th;
	struct ezfs_dispatcher *d;
	int cpu; /* -1: not pinned to one */
	struct wq q;
	pthread_cond_t wake;
	bool started;
	bool idle; /* waiting on wake (under d->lock) */
};

struct ezfs_dispatcher {
	struct ezfs_estate *es;
	int mode;
	pthread_mutex_t lock;
	pthread_cond_t ready_cv; /* a worker finished its setup */
	unsigned ready;
	bool stop;
	struct wq shared, ahead;
	unsigned nw;
	struct worker *w;
	int cpu_worker[CPU_SETSIZE]; /* percpu: worker index, -1: none */
	unsigned pinned, fifo;
	int nice;
	unsigned running; /* jobs the workers are running now */
	uint64_t local, from_shared, stolen, claimed;
};

static void wq_push(struct wq *q, struct ezfs_ejob *j)
{
	j->next = NULL;
	j->prev = q->tail;
	if (q->tail)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
	j->q = q;
	q->n++;
}

static void wq_unlink(struct ezfs_ejob *j)
{
	struct wq *q = j->q;

	if (j->prev)
		j->prev->next = j->next;
	else
		q->head = j->next;
	if (j->next)
		j->next->prev = j->prev;
	else
		q->tail = j->prev;
	j->next = j->prev = NULL;
	j->q = NULL;
	q->n--;
}

static struct ezfs_ejob *wq_pop(struct wq *q)
{
	struct ezfs_ejob *j = q->head;

	if (j)
		wq_unlink(j);
	return j;
}

/* Real-time where permitted, else the highest priority allowed; returns
 * SCHED_FIFO or SCHED_OTHER and the nice value then in *nice. */
static int raise_priority(int *nice)
{
	struct sched_param sp = { 0 };
	pid_t tid = (pid_t)syscall(SYS_gettid);

	*nice = 0;
	sp.sched_priority = sched_get_priority_min(SCHED_FIFO);
	if (!pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp))
		return SCHED_FIFO;
	for (*nice = -20; *nice < 0; (*nice)++)
		if (!setpriority(PRIO_PROCESS, (id_t)tid, *nice))
			break;
	return SCHED_OTHER;
}

/* The next job for worker me (d->lock held): own queue, shared, steal,
 * then the decodes ahead. */
static struct ezfs_ejob *take_job(struct ezfs_dispatcher *d, unsigned me)
{
	struct ezfs_ejob *j = wq_pop(&d->w[me].q);
	unsigned i;

	if (j) {
		d->local++;
		return j;
	}
	j = wq_pop(&d->shared);
	if (j) {
		d->from_shared++;
		return j;
	}
	for (i = 1; i < d->nw && !j; i++)
		j = wq_pop(&d->w[(me + i) % d->nw].q);
	if (j)
		d->stolen++;
	else
		j = wq_pop(&d->ahead);
	return j;
}

/* Run job j taken from a queue, on this thread, and complete it. */
void ezi_disp_run(struct ezfs_estate *es, struct ezfs_ejob *j)
{
	bool nested = ezi_engine_on_worker;
	struct ezfs_ebatch *b = j->batch;

	ezi_engine_on_worker = true; /* its own decodes run here */
	j->err = j->fn(j->arg);
	ezi_engine_on_worker = nested;
	ezi_engine_lat_record(es, ezi_engine_now_ns() - j->t_submit);
	if (j->done)
		j->done(j); /* j may be gone after this */
	else
		ezi_ebatch_done(b);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct ezfs_dispatcher *d = w->d;
	unsigned me = (unsigned)(w - d->w);
	int policy = SCHED_OTHER, nice = 0;

	ezi_engine_on_worker = true;
	if (d->mode == EZFS_DISPATCH_PERCPU)
		policy = raise_priority(&nice);
	pthread_mutex_lock(&d->lock);
	if (policy == SCHED_FIFO)
		d->fifo++;
	else if (nice < d->nice)
		d->nice = nice;
	d->ready++;
	pthread_cond_signal(&d->ready_cv);
	for (;;) {
		struct ezfs_ejob *j = take_job(d, me);

		if (!j) {
			if (d->stop)
				break; /* and nothing left to run */
			w->idle = true;
			pthread_cond_wait(&w->wake, &d->lock);
			w->idle = false;
			continue;
		}
		d->running++;
		pthread_mutex_unlock(&d->lock);
		ezi_disp_run(d->es, j);
		pthread_mutex_lock(&d->lock);
		d->running--;
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

static unsigned online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (unsigned)n : 1;
}

/* Pin worker w to cpu after creation (the attribute was refused): cpu, or
 * -1 when that is refused too. */
static int pin_after(struct worker *w, int cpu)
{
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	return pthread_setaffinity_np(w->th, sizeof(one), &one) ? -1 : cpu;
}

/* Start worker i (percpu: pinned to cpu); 0 or a negative errno. */
static int start_worker(struct ezfs_dispatcher *d, unsigned i, int cpu)
{
	struct worker *w = &d->w[i];
	pthread_attr_t attr;
	cpu_set_t one;
	int e;

	w->d = d;
	w->cpu = -1;
	pthread_cond_init(&w->wake, NULL);
	pthread_attr_init(&attr);
	if (cpu >= 0) {
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (!pthread_attr_setaffinity_np(&attr, sizeof(one), &one))
			w->cpu = cpu;
	}
	e = pthread_create(&w->th, &attr, worker_main, w);
	pthread_attr_destroy(&attr);
	if (e && w->cpu >= 0) {
		/* pinning refused at creation: pin afterwards */
		w->cpu = -1;
		e = pthread_create(&w->th, NULL, worker_main, w);
		if (!e)
			w->cpu = pin_after(w, cpu);
	}
	if (e) {
		pthread_cond_destroy(&w->wake);
		return -e;
	}
	/* the workers already running read nw (take_job) under the lock */
	pthread_mutex_lock(&d->lock);
	w->started = true;
	d->nw = i + 1;
	if (cpu >= 0)
		d->cpu_worker[cpu] = (int)i; /* its queue, pinned or not */
	if (w->cpu >= 0)
		d->pinned++;
	pthread_mutex_unlock(&d->lock);
	return 0;
}

struct ezfs_dispatcher *ezi_disp_new(struct ezfs_estate *es, int mode,
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
	pthread_cond_init(&d->ready_cv, NULL);
	cpu = -1;
	for (i = 0; i < n && !*err; i++) {
		if (mode == EZFS_DISPATCH_PERCPU)
			while (++cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &set))
				;
		*err = start_worker(d, i,
				    mode == EZFS_DISPATCH_PERCPU ? cpu : -1);
	}
	if (*err) {
		ezi_disp_free(d);
		return NULL;
	}
	/* report pinning and priority only once they are in place */
	pthread_mutex_lock(&d->lock);
	while (d->ready < d->nw)
		pthread_cond_wait(&d->ready_cv, &d->lock);
	pthread_mutex_unlock(&d->lock);
	return d;
}

void ezi_disp_free(struct ezfs_dispatcher *d)
{
	unsigned i;

	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->stop = true;
	for (i = 0; i < d->nw; i++)
		pthread_cond_signal(&d->w[i].wake);
	pthread_mutex_unlock(&d->lock);
	for (i = 0; i < d->nw; i++) {
		if (d->w[i].started) {
			pthread_join(d->w[i].th, NULL);
			pthread_cond_destroy(&d->w[i].wake);
		}
	}
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->ready_cv);
	free(d->w);
	free(d);
}

/* Claim worker i for a wake-up if it sleeps (d->lock held). */
static bool claim_idle(struct ezfs_dispatcher *d, unsigned i)
{
	if (!d->w[i].idle)
		return false;
	d->w[i].idle = false; /* the next wake-up goes elsewhere */
	return true;
}

#define WAKE_BATCH 16

void ezi_disp_submit(struct ezfs_dispatcher *d, struct ezfs_ejob *jobs,
		     bool ahead)
{
	struct wq *q = ahead ? &d->ahead : &d->shared;
	uint64_t now = ezi_engine_now_ns();
	struct ezfs_ejob *j, *nj;
	unsigned wake[WAKE_BATCH];
	size_t i, n = 0, woken = 0;
	int local = -1;

	if (d->mode == EZFS_DISPATCH_PERCPU && !ahead) {
		int cpu = sched_getcpu();

		if (cpu >= 0 && cpu < CPU_SETSIZE && d->cpu_worker[cpu] >= 0) {
			local = d->cpu_worker[cpu];
			q = &d->w[local].q;
		}
	}
	pthread_mutex_lock(&d->lock);
	for (j = jobs; j; j = nj, n++) {
		nj = j->next; /* wq_push links j into q */
		j->t_submit = now;
		j->d = d;
		wq_push(q, j);
	}
	/*
	 * The submitting CPU's worker first, then idle ones, one per job.
	 * Signalled after the unlock (a claimed worker stays on its
	 * condition variable until then), so that a real-time worker
	 * preempting us does not find the lock still held.
	 */
	if (local >= 0 && claim_idle(d, (unsigned)local))
		wake[woken++] = (unsigned)local;
	for (i = 0; i < d->nw && woken < n; i++) {
		if (!claim_idle(d, (unsigned)i))
			continue;
		if (woken < WAKE_BATCH)
			wake[woken] = (unsigned)i;
		else
			pthread_cond_signal(&d->w[i].wake);
		woken++;
	}
	pthread_mutex_unlock(&d->lock);
	for (i = 0; i < woken && i < WAKE_BATCH; i++)
		pthread_cond_signal(&d->w[wake[i]].wake);
}

struct ezfs_ejob *ezi_disp_take_any(struct ezfs_dispatcher *d, bool no_ahead)
{
	struct ezfs_ejob *j;
	unsigned i;

	pthread_mutex_lock(&d->lock);
	j = wq_pop(&d->shared);
	for (i = 0; i < d->nw && !j; i++)
		j = wq_pop(&d->w[i].q);
	if (!j && !no_ahead)
		j = wq_pop(&d->ahead);
	if (j)
		d->claimed++;
	pthread_mutex_unlock(&d->lock);
	return j;
}

struct ezfs_ejob *ezi_disp_take_ahead(struct ezfs_dispatcher *d)
{
	struct ezfs_ejob *j;

	pthread_mutex_lock(&d->lock);
	j = wq_pop(&d->ahead);
	if (j)
		d->claimed++;
	pthread_mutex_unlock(&d->lock);
	return j;
}

bool ezi_disp_claim(struct ezfs_dispatcher *d, struct ezfs_ejob *j)
{
	bool mine = false;

	pthread_mutex_lock(&d->lock);
	if (j->q && j->d == d) {
		wq_unlink(j);
		d->claimed++;
		mine = true;
	}
	pthread_mutex_unlock(&d->lock);
	return mine;
}

void ezi_disp_info(struct ezfs_dispatcher *d, struct ezfs_dispatch_info *di)
{
	pthread_mutex_lock(&d->lock);
	di->mode = d->mode;
	di->workers = d->nw;
	di->pinned = d->pinned;
	di->policy = d->nw && d->fifo == d->nw ? SCHED_FIFO : SCHED_OTHER;
	di->nice = d->nice;
	di->local = d->local;
	di->shared = d->from_shared;
	di->stolen = d->stolen;
	pthread_mutex_unlock(&d->lock);
}
