/* SPDX-License-Identifier: MIT */
/* test_engine.c - engine selection, fallback, counters, dispatch modes. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ezfs/engine.h>
#include <ezfs/ezfs.h>

#include "check.h"

static char logbuf[1024];

static void log_fn(void *arg, int level, const char *msg)
{
	(void)arg;
	(void)level;
	snprintf(logbuf, sizeof(logbuf), "%s", msg);
}

/* ---- a hash of every file's bytes, walking the tree ---- */

struct walk {
	ezfs_image *img;
	uint64_t hash;
	uint64_t bytes;
	int err;
	uint8_t *buf;
	size_t bufsz;
	int ahead;	 /* ezfs_decode_ahead each file first */
	int no_read;	 /* and only that */
	uint64_t queued; /* decodes it queued */
};

static void mix(uint64_t *h, const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		*h = (*h ^ b[i]) * 0x100000001b3ull;
}

static int walk_dir(struct walk *w, uint64_t nid);

static int walk_ent(void *arg, const char *name, size_t namelen, uint64_t nid,
		    unsigned ftype, uint64_t next_pos)
{
	struct walk *w = arg;
	ezfs_inode *ino;
	struct ezfs_stat st;
	uint64_t off = 0;
	int err;

	(void)next_pos;
	if ((namelen == 1 && name[0] == '.') ||
	    (namelen == 2 && !memcmp(name, "..", 2)))
		return 0;
	mix(&w->hash, name, namelen);
	if (ftype == EZFS_FT_DIR)
		return walk_dir(w, nid);
	if (ftype != EZFS_FT_REG && ftype != EZFS_FT_SYMLINK)
		return 0;
	err = ezfs_inode_get(w->img, nid, &ino);
	if (err)
		return err;
	ezfs_inode_stat(ino, &st);
	if (w->ahead && ftype == EZFS_FT_REG) {
		uint64_t next;
		int n = ezfs_decode_ahead(ino, 0, st.size, &next);

		if (n < 0 || next > st.size) {
			ezfs_inode_put(ino);
			return n < 0 ? n : -ERANGE;
		}
		w->queued += (uint64_t)n;
	}
	/* odd-sized reads too, so both batched and cached paths run */
	while (!w->no_read && off < st.size) {
		size_t want = w->bufsz - (off & 1 ? 4093 : 0);
		ssize_t n = ezfs_pread(ino, w->buf, want, off);

		if (n <= 0) {
			ezfs_inode_put(ino);
			return n < 0 ? (int)n : -EIO;
		}
		mix(&w->hash, w->buf, (size_t)n);
		w->bytes += (uint64_t)n;
		off += (uint64_t)n;
	}
	ezfs_inode_put(ino);
	return 0;
}

static int walk_dir(struct walk *w, uint64_t nid)
{
	ezfs_inode *dir;
	int err = ezfs_inode_get(w->img, nid, &dir);

	if (err)
		return err;
	err = ezfs_readdir(dir, 0, walk_ent, w);
	ezfs_inode_put(dir);
	return err;
}

/* ahead: 1 decode each file ahead first, 2 only that (no reads); the
 * decodes queued are added to *queued (may be NULL). */
static int walk_image(ezfs_image *img, uint64_t *hash, uint64_t *bytes,
		      int ahead, uint64_t *queued)
{
	struct walk w = { .img = img,
			  .hash = 0xcbf29ce484222325ull,
			  .bufsz = 1 << 20,
			  .ahead = ahead,
			  .no_read = ahead == 2 };
	int err;

	w.buf = malloc(w.bufsz);
	if (!w.buf)
		return -ENOMEM;
	err = walk_dir(&w, ezfs_root_nid(img));
	free(w.buf);
	*hash = w.hash;
	if (bytes)
		*bytes = w.bytes;
	if (queued)
		*queued += w.queued;
	return err;
}

static int hash_image(ezfs_image *img, uint64_t *hash, uint64_t *bytes)
{
	return walk_image(img, hash, bytes, 0, NULL);
}

/* ---- tests ---- */

static void test_specs(void)
{
	static const char *const good[] = {
		"deflate=isal,libdeflate",
		"deflate=zlib;zstd=zstd",
		"isal",
		"zlib,libdeflate",
		"fail",
		"",
		" deflate = zlib ; lz4 ",
		"deflate=fail,zlib",
	};
	static const char *const bad[] = {
		"deflate=nope", "bogus", "zstd=isal", "xx=zlib", "isal;nope",
	};
	struct ezfs_engine_info info;
	unsigned i, n = ezfs_engine_count();
	int have_fail = 0, refs = 0;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
#ifndef EZFS_TEST_HAVE_ISAL
		if (strstr(good[i], "isal"))
			continue;
#endif
		CHECK(ezfs_accel_check(good[i]) == 0, "spec '%s'", good[i]);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(ezfs_accel_check(bad[i]) == -EINVAL, "spec '%s'", bad[i]);
	{
		char why[128];

		CHECK(ezfs_accel_check_msg("deflate=zlib,nosuch", why,
					   sizeof(why)) == -EINVAL &&
			      strstr(why, "unknown engine 'nosuch'"),
		      "why: %s", why);
		CHECK(ezfs_accel_check_msg("lz4", why, sizeof(why)) == 0 &&
			      !why[0],
		      "why for a good spec: %s", why);
	}
	CHECK(n >= 6, "%u engines", n);
	for (i = 0; i < n; i++) {
		CHECK(!ezfs_engine_get_info(i, &info), "info %u", i);
		if (!strcmp(info.name, "fail")) {
			have_fail = 1;
			CHECK(info.default_pos < 0 &&
				      (info.flags & EZFS_ENGINE_TEST),
			      "fail engine");
		}
		refs += info.reference;
	}
	CHECK(have_fail, "no test engine");
	CHECK(refs == 4, "%d reference engines", refs);
	CHECK(ezfs_engine_get_info(n, &info) == -EINVAL, "past the end");
	{
		unsigned t;

		CHECK(ezfs_dispatch_parse("percpu", &t) == EZFS_DISPATCH_PERCPU,
		      "percpu");
		CHECK(ezfs_dispatch_parse("queue:3", &t) ==
				      EZFS_DISPATCH_QUEUE &&
			      t == 3,
		      "queue:3");
		CHECK(ezfs_dispatch_parse("queue:0", &t) == -EINVAL, "queue:0");
		CHECK(ezfs_dispatch_parse("fast", &t) == -EINVAL, "fast");
	}
}

static int find_engine(const char *name)
{
	struct ezfs_engine_info info;
	unsigned i;

	for (i = 0; i < ezfs_engine_count(); i++)
		if (!ezfs_engine_get_info(i, &info) && !strcmp(info.name, name))
			return (int)i;
	return -1;
}

static struct ezfs_engine_stats get_stats(ezfs_image *img, const char *name)
{
	struct ezfs_engine_stats st[32];
	struct ezfs_engine_stats none = { 0 };
	int n = ezfs_image_engine_stats(img, st, 32), i = find_engine(name);

	return i >= 0 && i < n ? st[i] : none;
}

struct live {
	ezfs_image *img;
	uint64_t want;
	int stop, rounds, bad;
};

static void *live_reader(void *arg)
{
	struct live *l = arg;

	while (!__atomic_load_n(&l->stop, __ATOMIC_RELAXED)) {
		uint64_t h;

		if (hash_image(l->img, &h, NULL) || h != l->want)
			__atomic_fetch_add(&l->bad, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&l->rounds, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/*
 * The same image held in memory (compressed input read in place, not
 * copied) must read the same, inline and with batched percpu decoding.
 */
static void test_mem(const char *path, uint64_t want)
{
	static const char *const modes[] = { "inline", "percpu" };
	struct ezfs_open_params p;
	ezfs_image *img;
	uint8_t *buf;
	uint64_t h;
	struct stat st;
	FILE *f = fopen(path, "rb");
	unsigned i;
	int err;

	CHECK(f && !stat(path, &st), "%s", path);
	if (!f)
		return;
	buf = malloc((size_t)st.st_size);
	CHECK(buf && fread(buf, 1, (size_t)st.st_size, f) == (size_t)st.st_size,
	      "read %s", path);
	fclose(f);
	for (i = 0; buf && i < 2; i++) {
		ezfs_open_params_init(&p);
		p.dispatch = modes[i];
		p.cache_bytes = 1 << 20;
		err = ezfs_image_open_mem(buf, (size_t)st.st_size, &p, &img);
		CHECK(!err, "open_mem %s: %d", path, err);
		if (err)
			continue;
		CHECK(!hash_image(img, &h, NULL) && h == want,
		      "%s: in-memory read (%s) differs", path, modes[i]);
		ezfs_image_close(img);
	}
	free(buf);
}

/*
 * Decodes ahead (ezfs_decode_ahead): each file's extents queued before it
 * is read read back the same, in a cache that holds few of them; the whole
 * image queued and then the dispatch switched (the workers that go run
 * what they hold first), then queued and the image closed at once (close
 * waits for them). Inline dispatch queues none.
 */
static void test_ahead(const char *path, uint64_t want, int deflate)
{
	static const char *const modes[] = { "inline", "queue:2", "percpu" };
	struct ezfs_open_params p;
	ezfs_image *img;
	unsigned i;
	uint64_t h;
	int err;

	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		uint64_t q = 0;

		ezfs_open_params_init(&p);
		p.dispatch = modes[i];
		p.cache_bytes = 2 << 20;
		err = ezfs_image_open(path, &p, &img);
		CHECK(!err, "open %s (%s): %d", path, modes[i], err);
		if (err)
			continue;
		CHECK(!walk_image(img, &h, NULL, 1, &q) && h == want,
		      "%s: read after decoding ahead (%s) differs", path,
		      modes[i]);
		CHECK(i ? q > 0 || !deflate : q == 0,
		      "%s: %llu decodes ahead (%s)", path,
		      (unsigned long long)q, modes[i]);
		if (i) {
			CHECK(!walk_image(img, &h, NULL, 2, NULL),
			      "%s: decode ahead (%s)", path, modes[i]);
			CHECK(!ezfs_image_set_dispatch(img,
						       EZFS_DISPATCH_INLINE, 0),
			      "inline");
			CHECK(!hash_image(img, &h, NULL) && h == want,
			      "%s: read after a switch with decodes ahead "
			      "queued (%s) differs",
			      path, modes[i]);
			CHECK(!ezfs_image_set_dispatch(img,
						       EZFS_DISPATCH_PERCPU, 0),
			      "percpu");
			CHECK(!walk_image(img, &h, NULL, 2, NULL),
			      "%s: decode ahead (%s)", path, modes[i]);
		}
		printf("  decode ahead %-7s: %llu queued\n", modes[i],
		       (unsigned long long)q);
		ezfs_image_close(img);
	}
}

static void test_image(const char *path, int deflate)
{
	static const char *const engines[] = { "libdeflate", "isal", "zlib" };
	static const char *const modes[] = { "queue", "queue:1", "percpu",
					     "inline" };
	struct ezfs_open_params p;
	struct ezfs_latency_stats ls;
	struct ezfs_dispatch_info di;
	ezfs_image *img;
	uint64_t want = 0, h, bytes = 0;
	unsigned i, t;
	char spec[256];
	int err;

	ezfs_open_params_init(&p);
	p.log = log_fn;
	p.cache_bytes = 1 << 20; /* small: decodes keep happening */
	err = ezfs_image_open(path, &p, &img);
	CHECK(!err, "open %s: %d", path, err);
	if (err)
		return;
	CHECK(!hash_image(img, &want, &bytes), "%s: read", path);
	printf("%s: %llu bytes\n", path, (unsigned long long)bytes);

	CHECK(ezfs_image_set_accel(img, "deflate=bogus,zlib") == -EINVAL,
	      "bad spec accepted");
	CHECK(strstr(logbuf, "bogus") != NULL, "log does not name it: %s",
	      logbuf);
	CHECK(ezfs_image_get_accel(img, spec, sizeof(spec)) > 0 &&
		      strstr(spec, "deflate=libdeflate"),
	      "order %s", spec);

	if (deflate) {
		for (i = 0; i < 3; i++) {
			char s[64];
			struct ezfs_engine_stats st;

			if (find_engine(engines[i]) < 0)
				continue;
			snprintf(s, sizeof(s), "deflate=%s", engines[i]);
			ezfs_image_engine_reset(img);
			CHECK(!ezfs_image_set_accel(img, s), "%s", s);
			CHECK(!hash_image(img, &h, NULL) && h == want,
			      "%s: %s differs", path, s);
			st = get_stats(img, engines[i]);
			CHECK(st.requests > 0 && st.bytes_out > 0,
			      "%s: %s served nothing", path, engines[i]);
			printf("  %-10s requests %llu bytes %llu fallbacks "
			       "%llu\n",
			       engines[i], (unsigned long long)st.requests,
			       (unsigned long long)st.bytes_out,
			       (unsigned long long)st.fallbacks);
		}
		/* forced fallback */
		ezfs_image_engine_reset(img);
		CHECK(!ezfs_image_set_accel(img, "fail"), "fail first");
		CHECK(!hash_image(img, &h, NULL) && h == want,
		      "%s: fallback differs", path);
		{
			struct ezfs_engine_stats f = get_stats(img, "fail");
			struct ezfs_engine_stats z = get_stats(img, "zlib");

			CHECK(f.fallbacks > 0 && f.errors == f.fallbacks &&
				      f.bytes_out == 0,
			      "fail: %llu fallbacks",
			      (unsigned long long)f.fallbacks);
			CHECK(z.requests >= f.fallbacks, "zlib %llu",
			      (unsigned long long)z.requests);
			printf("  fail first: %llu fallbacks to zlib\n",
			       (unsigned long long)f.fallbacks);
		}
		/* strict: the fallback becomes an error */
		CHECK(!ezfs_image_set_strict_accel(img, 1), "strict");
		CHECK(ezfs_image_get_strict_accel(img) == 1, "get strict");
		err = hash_image(img, &h, NULL);
		CHECK(err == -EIO, "strict read: %d", err);
		CHECK(!ezfs_image_set_strict_accel(img, 0), "strict off");
		CHECK(ezfs_image_get_strict_accel(img) == 0, "get strict off");
		CHECK(!ezfs_image_set_accel(img, NULL), "default");
	}

	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		int m = ezfs_dispatch_parse(modes[i], &t);

		ezfs_image_engine_reset(img);
		CHECK(!ezfs_image_set_dispatch(img, m, t), "%s", modes[i]);
		CHECK(!hash_image(img, &h, NULL) && h == want,
		      "%s: dispatch %s differs", path, modes[i]);
		CHECK(!ezfs_image_latency_stats(img, &ls) && ls.count > 0 &&
			      ls.min <= ls.median && ls.median <= ls.max,
		      "latency %s", modes[i]);
		ezfs_image_dispatch_info(img, &di);
		printf("  dispatch %-7s workers %u pinned %u %s nice %d "
		       "batches %llu | latency us: n %llu avg %.1f med %.1f "
		       "min %.1f max %.1f sd %.1f\n",
		       modes[i], di.workers, di.pinned,
		       di.policy ? "fifo" : "other", di.nice,
		       (unsigned long long)di.batches,
		       (unsigned long long)ls.count, ls.avg, ls.median, ls.min,
		       ls.max, ls.stddev);
	}

	/* live switching of order and mode while two threads read */
	{
		struct live l = { .img = img, .want = want };
		pthread_t th[2];
		static const char *const specs[] = {
			"deflate=fail,zlib",
			"",
			"zlib",
			"libdeflate",
		};
		int k = 0;

		for (i = 0; i < 2; i++)
			pthread_create(&th[i], NULL, live_reader, &l);
		while (__atomic_load_n(&l.rounds, __ATOMIC_RELAXED) < 6 &&
		       k < 4000) {
			ezfs_image_set_accel(img, specs[k % 4]);
			if (k % 7 == 0)
				ezfs_image_set_dispatch(img, k % 3, 0);
			k++;
			usleep(2000);
		}
		__atomic_store_n(&l.stop, 1, __ATOMIC_RELAXED);
		for (i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		CHECK(!l.bad, "%s: %d reads differed while switching", path,
		      l.bad);
		printf("  live switch: %d switches, %d reads, %d bad\n", k,
		       l.rounds, l.bad);
	}
	ezfs_image_close(img);
	test_mem(path, want);
	test_ahead(path, want, deflate);

	/* environment */
	setenv("EZFS_ACCEL", "deflate=nosuch", 1);
	err = ezfs_image_open(path, &p, &img);
	CHECK(err == -EINVAL, "bad EZFS_ACCEL: %d", err);
	if (!err)
		ezfs_image_close(img);
	setenv("EZFS_ACCEL", "deflate=fail,zlib", 1);
	setenv("EZFS_DISPATCH", "queue:2", 1);
	err = ezfs_image_open(path, &p, &img);
	CHECK(!err, "EZFS_ACCEL: %d", err);
	if (!err) {
		CHECK(!hash_image(img, &h, NULL) && h == want, "env differs");
		ezfs_image_dispatch_info(img, &di);
		CHECK(di.mode == EZFS_DISPATCH_QUEUE && di.workers == 2,
		      "EZFS_DISPATCH: mode %d workers %u", di.mode, di.workers);
		if (deflate)
			CHECK(get_stats(img, "fail").fallbacks > 0,
			      "EZFS_ACCEL not applied");
		ezfs_image_close(img);
	}
	setenv("EZFS_DISPATCH", "sideways", 1);
	err = ezfs_image_open(path, &p, &img);
	CHECK(err == -EINVAL, "bad EZFS_DISPATCH: %d", err);
	if (!err)
		ezfs_image_close(img);
	unsetenv("EZFS_ACCEL");
	unsetenv("EZFS_DISPATCH");
}

/* Decompress a fixture with zstd into a temporary file. */
static int unpack(const char *shared, const char *name, char *out, size_t size)
{
	char cmd[2048];
	struct stat st;

	snprintf(cmd, sizeof(cmd), "%s/fixtures/%s.img.zst", shared, name);
	if (stat(cmd, &st))
		return -ENOENT;
	snprintf(out, size, "/tmp/test_engine.%d.%s.img", (int)getpid(), name);
	snprintf(cmd, sizeof(cmd),
		 "zstd -q -d -f '%s/fixtures/%s.img.zst' "
		 "-o '%s'",
		 shared, name, out);
	return system(cmd) ? -EIO : 0;
}

int main(void)
{
	static const struct {
		const char *name;
		int deflate;
	} fx[] = {
		{ "deflate-16k", 1 },
		{ "libdeflate-128k", 1 },
		{ "lz4-4k", 0 },
		{ "fragments-dedupe", 0 },
	};
	const char *shared = getenv("EZFS_SHARED");
	unsigned i, ran = 0;

	unsetenv("EZFS_ACCEL");
	unsetenv("EZFS_DISPATCH");
	unsetenv("EZFS_STRICT_ACCEL");
	test_specs();
	for (i = 0; shared && i < sizeof(fx) / sizeof(fx[0]); i++) {
		char path[1024];

		if (unpack(shared, fx[i].name, path, sizeof(path)))
			continue;
		test_image(path, fx[i].deflate);
		unlink(path);
		ran++;
	}
	if (failures) {
		printf("%d failures\n", failures);
		return 1;
	}
	if (!ran) {
		printf("SKIP: no fixtures (EZFS_SHARED=%s)\n",
		       shared ? shared : "");
		return 77;
	}
	printf("ok\n");
	return 0;
}
