/* SPDX-License-Identifier: MIT */
/* test_util.c - lib/util: pool (jobs, wait, destroy), hash, vec. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/erofs_fs.h"
#include "util/hash.h"
#include "util/pool.h"
#include "util/vec.h"

#include "check.h"

#define NJOBS 20000

struct jctx {
	unsigned *seen;
	unsigned long sum; /* atomic */
	int bad_self;	   /* atomic */
	unsigned nthreads;
};

struct job {
	struct jctx *c;
	unsigned i;
};

static void job_fn(void *arg)
{
	struct job *j = arg;
	int self = ezi_pool_self();

	if (self < 0 || (unsigned)self >= j->c->nthreads)
		__atomic_fetch_add(&j->c->bad_self, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&j->c->seen[j->i], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&j->c->sum, j->i, __ATOMIC_RELAXED);
}

static void slow_fn(void *arg)
{
	unsigned *done = arg;

	usleep(2000);
	__atomic_fetch_add(done, 1, __ATOMIC_RELAXED);
}

static void test_pool(unsigned nthreads, size_t maxq)
{
	struct jctx c = { .nthreads = nthreads };
	struct job *jobs = calloc(NJOBS, sizeof(*jobs));
	struct ezi_pool *p;
	unsigned long want = 0;
	unsigned i, done = 0, missing = 0;
	int err = 0;

	c.seen = calloc(NJOBS, sizeof(*c.seen));
	p = ezi_pool_new(nthreads, maxq, &err);
	CHECK(p && jobs && c.seen, "pool_new(%u, %zu): %d", nthreads, maxq,
	      err);
	if (!p || !jobs || !c.seen)
		goto out;
	CHECK(ezi_pool_threads(p) == nthreads, "threads %u",
	      ezi_pool_threads(p));
	CHECK(ezi_pool_self() == -1, "self on the main thread");
	for (i = 0; i < NJOBS; i++) {
		jobs[i] = (struct job){ &c, i };
		want += i;
		CHECK(!ezi_pool_submit(p, job_fn, &jobs[i]), "submit %u", i);
	}
	ezi_pool_wait(p);
	for (i = 0; i < NJOBS; i++)
		missing += c.seen[i] != 1;
	CHECK(!missing, "%u jobs not run exactly once", missing);
	CHECK(c.sum == want, "sum %lu, want %lu", c.sum, want);
	CHECK(!c.bad_self, "%d jobs saw a bad ezi_pool_self", c.bad_self);
	/* wait on an idle pool returns at once; a second round works */
	ezi_pool_wait(p);
	for (i = 0; i < 8; i++)
		ezi_pool_submit(p, slow_fn, &done);
	ezi_pool_wait(p);
	CHECK(done == 8, "slow jobs done %u of 8 after wait", done);
out:
	ezi_pool_destroy(p); /* idle: joins at once */
	free(jobs);
	free(c.seen);
}

/* Destroy with jobs queued: the running ones finish, the rest are dropped,
 * nothing runs after destroy returns. */
static void test_pool_drop(void)
{
	struct ezi_pool *p = ezi_pool_new(2, 0, NULL);
	unsigned done = 0, after, i;

	CHECK(p, "pool_new");
	if (!p)
		return;
	for (i = 0; i < 200; i++)
		ezi_pool_submit(p, slow_fn, &done);
	usleep(5000);
	ezi_pool_destroy(p);
	after = done;
	usleep(10000);
	CHECK(done == after, "a job ran after destroy (%u, %u)", after, done);
	CHECK(done < 200, "destroy ran every queued job (%u)", done);
	ezi_pool_destroy(NULL);
}

static void test_hash(void)
{
	struct ezi_hash h = EZI_HASH_INIT;
	const size_t n = 100000;
	size_t i, pos, cnt;
	void *v;
	struct ezi_hslot *s;
	uint64_t sum = 0, want = 0;

	CHECK(!ezi_hash_get(&h, 1), "get on an empty table");
	CHECK(!ezi_hash_del(&h, 1, NULL), "del on an empty table");
	CHECK(ezi_hash_add(&h, 1, NULL) == -EINVAL, "NULL value accepted");
	/* keys with a common stride (like nids), values i + 1 */
	for (i = 0; i < n; i++)
		CHECK(!ezi_hash_add(&h, i * 32, (void *)(uintptr_t)(i + 1)),
		      "add %zu", i);
	CHECK(h.n == n && h.cap >= 2 * n, "n %zu cap %zu", h.n, h.cap);
	for (i = 0; i < n; i++) {
		v = ezi_hash_get(&h, i * 32);
		if (v != (void *)(uintptr_t)(i + 1)) {
			CHECK(0, "get %zu: %p", i, v);
			break;
		}
	}
	CHECK(!ezi_hash_get(&h, 7), "found a key never added");
	/* remove every odd one, the rest stays */
	for (i = 1; i < n; i += 2)
		CHECK(ezi_hash_del(&h, i * 32, NULL) ==
			      (void *)(uintptr_t)(i + 1),
		      "del %zu", i);
	CHECK(h.n == n / 2, "n %zu after removal", h.n);
	for (i = 0; i < n; i++) {
		v = ezi_hash_get(&h, i * 32);
		if (v != (i & 1 ? NULL : (void *)(uintptr_t)(i + 1))) {
			CHECK(0, "after removal, get %zu: %p", i, v);
			break;
		}
	}
	pos = 0;
	cnt = 0;
	while ((s = ezi_hash_each(&h, &pos))) {
		cnt++;
		sum += (uintptr_t)s->val;
	}
	for (i = 0; i < n; i += 2)
		want += i + 1;
	CHECK(cnt == n / 2 && sum == want, "each: %zu entries", cnt);
	ezi_hash_free(&h);

	/* duplicate keys: every value comes back once; del by value */
	for (i = 0; i < 50; i++) {
		ezi_hash_add(&h, 42, (void *)(uintptr_t)(i + 1));
		ezi_hash_add(&h, 43 + i, (void *)(uintptr_t)1000);
	}
	sum = 0;
	cnt = 0;
	pos = 0;
	while ((v = ezi_hash_next(&h, 42, &pos))) {
		cnt++;
		sum += (uintptr_t)v;
	}
	CHECK(cnt == 50 && sum == 50 * 51 / 2, "dups: %zu, sum %llu", cnt,
	      (unsigned long long)sum);
	CHECK(ezi_hash_del(&h, 42, (void *)(uintptr_t)17) ==
		      (void *)(uintptr_t)17,
	      "del by value");
	CHECK(!ezi_hash_del(&h, 42, (void *)(uintptr_t)17), "deleted twice");
	cnt = 0;
	pos = 0;
	while ((v = ezi_hash_next(&h, 42, &pos)))
		cnt++;
	CHECK(cnt == 49, "dups after del: %zu", cnt);
	for (i = 0; i < 50; i++)
		CHECK(ezi_hash_get(&h, 43 + i) == (void *)(uintptr_t)1000,
		      "neighbour %zu lost", i);
	CHECK(!ezi_hash_reserve(&h, 1 << 16) && h.cap >= 1 << 17, "reserve");
	CHECK(ezi_hash_get(&h, 60) == (void *)(uintptr_t)1000,
	      "lost after reserve");
	ezi_hash_free(&h);
	CHECK(!h.n && !h.cap && !ezi_hash_get(&h, 42), "free");
}

struct pt {
	int x, y;
};

static void test_vec(void)
{
	EZI_VEC(struct pt) v = EZI_VEC_INIT;
	EZI_VEC(uint32_t) u = EZI_VEC_INIT;
	struct pt *sl;
	size_t i, bad = 0;

	for (i = 0; i < 100000; i++) {
		struct pt p = { (int)i, -(int)i };

		CHECK(!ezi_vec_push(&v, p), "push %zu", i);
	}
	CHECK(v.n == 100000 && v.cap >= v.n, "n %zu cap %zu", v.n, v.cap);
	for (i = 0; i < v.n; i++)
		bad += v.v[i].x != (int)i || v.v[i].y != -(int)i;
	CHECK(!bad, "%zu elements wrong", bad);
	CHECK(!ezi_vec_add(&v, &sl) && !sl->x && !sl->y && v.n == 100001,
	      "add");
	ezi_vec_free(&v);
	CHECK(!v.v && !v.n && !v.cap, "free");
	CHECK(!ezi_vec_reserve(&u, 1000) && u.cap >= 1000 && !u.n, "reserve");
	CHECK(!ezi_vec_reserve(&u, 10) && u.cap >= 1000, "reserve less");
	CHECK(ezi_vec_reserve(&u, SIZE_MAX) == -ENOMEM && u.cap >= 1000,
	      "huge reserve");
	ezi_vec_push(&u, 7u);
	CHECK(u.n == 1 && u.v[0] == 7, "push after reserve");
	ezi_vec_free(&u);
}

/* bit by bit, reflected polynomial 0x82F63B78, raw state as EROFS */
static uint32_t crc32c_bits(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
	}
	return crc;
}

/* whichever implementation the build picked (ISA-L or the tables) */
static void test_crc32c(void)
{
	static uint8_t buf[70000];
	uint32_t x = 12345;
	size_t i, bad = 0;

	CHECK((ezi_crc32c(~0u, "123456789", 9) ^ ~0u) == 0xE3069283u,
	      "check value %08x", ezi_crc32c(~0u, "123456789", 9) ^ ~0u);
	for (i = 0; i < sizeof(buf); i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (uint8_t)(x >> 16);
	}
	for (i = 0; i < 200; i++) {
		size_t off = i * 37 % 64, len = i * i * 11 % (sizeof(buf) - 64);
		uint32_t seed = i & 1 ? ~0u : (uint32_t)i * 2654435761u;
		uint32_t want = crc32c_bits(seed, buf + off, len);

		bad += ezi_crc32c(seed, buf + off, len) != want;
		/* chained in two pieces */
		bad += ezi_crc32c(ezi_crc32c(seed, buf + off, len / 3),
				  buf + off + len / 3, len - len / 3) != want;
	}
	CHECK(!bad, "%zu crc32c mismatches", bad);
}

int main(void)
{
	test_crc32c();
	test_pool(1, 0);
	test_pool(4, 0);
	test_pool(3, 5); /* bounded: submit waits for room */
	test_pool_drop();
	test_hash();
	test_vec();
	if (failures) {
		fprintf(stderr, "%d failures\n", failures);
		return 1;
	}
	printf("ok\n");
	return 0;
}
