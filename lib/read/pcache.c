/* SPDX-License-Identifier: MIT */
/*
 * pcache.c - decoded pcluster cache and the decode step itself.
 *
 * Entries are keyed by physical address (inline pclusters and metabox space
 * are tagged), hold a decoded prefix of the extent, live on an LRU list within
 * a byte budget, and are reference counted so that eviction never frees a
 * buffer a reader is copying from. Two readers of one pcluster wait on one
 * decode (in-flight deduplication).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "read/internal.h"
#include "engine/engine.h"

enum { PC_LOADING, PC_READY };

struct pcache_entry {
	struct pcache_entry *hnext;
	struct pcache_entry *prev, *next; /* LRU */
	uint64_t key;
	uint8_t *data;
	size_t dlen, cap;
	size_t served; /* bytes the holders passed on (ezfs_ref_served) */
	unsigned refs;
	int state;
	bool dead;	       /* unhashed: free when the last reference goes */
	struct ahead_job *job; /* its decode ahead, until that completes */
};

/* A decode ahead of a reader into a cache entry (ezi_pcache_ahead); it
 * holds a reference to its entry. */
struct ahead_job {
	struct ezfs_ejob j;
	ezfs_image *img;
	uint64_t nid;
	struct zmap m;
	struct pcache_entry *e;
};

int ezi_pcache_init(ezfs_image *img, size_t budget)
{
	struct pcache *pc = &img->pc;

	/* An eighth of the budget, at most 32 MiB: enough for the buffers
	 * that eviction frees while the next decodes need them. */
	pc->spare_max = budget / 8 < (32u << 20) ? budget / 8 : 32u << 20;
	/* slots for the budget and a quarter more: extents held by readers
	 * and decodes ahead, which eviction cannot take */
	if (ezi_slab_init(&pc->slab, budget + budget / 4))
		return -ENOMEM;
	pc->nbuckets = 1024;
	pc->buckets = calloc(pc->nbuckets, sizeof(*pc->buckets));
	if (!pc->buckets) {
		ezi_slab_fini(&pc->slab);
		return -ENOMEM;
	}
	pthread_mutex_init(&pc->lock, NULL);
	pthread_cond_init(&pc->cond, NULL);
	pc->budget = budget;
	pc->st.bytes_max = budget;
	return 0;
}

/*
 * A new buffer of cap bytes (buf_cap). Those of whole huge pages
 * (extents of big pclusters: a 256 KiB pcluster of text decodes to about
 * 1.3 MiB, a 1 MiB one to about 4 MiB) are aligned to 2 MiB and offered to
 * transparent huge pages: a decode into fresh memory otherwise takes a
 * page fault per 4 KiB (in a VM, a fault cost as much as decoding 30 KiB
 * of deflate: ezfs cat of a 64 MiB file spent a third of its CPU time
 * there).
 */
#define HUGE_SZ (2u << 20)
static uint8_t *buf_new(size_t cap)
{
	void *p;

	if (cap % HUGE_SZ)
		return malloc(cap);
	if (posix_memalign(&p, HUGE_SZ, cap))
		return NULL;
#ifdef MADV_HUGEPAGE
	madvise(p, cap, MADV_HUGEPAGE);
#endif
	return p;
}

/* The capacity a buffer for len bytes gets: rounded up to 64 bytes up to
 * 4 KiB, then to an eighth of the next power of two, and from half a huge
 * page on to whole huge pages, so that a spare one fits the next extents,
 * whose lengths vary a little. */
static size_t buf_cap(size_t len)
{
	size_t p = 4096, step;

	if (len <= p) /* cache lines: slab slots stay aligned */
		return len ? (len + 63) & ~(size_t)63 : 64;
	while (p < len)
		p <<= 1;
	step = p / 8;
	len = (len + step - 1) / step * step;
	if (len >= HUGE_SZ / 2)
		len = (len + HUGE_SZ - 1) & ~(size_t)(HUGE_SZ - 1);
	return len;
}

/* A buffer for len decoded bytes: the smallest spare one that fits (not
 * more than twice the capacity a new one would get), else a new one.
 * Called with the lock held. */
static uint8_t *buf_get(struct pcache *pc, size_t len, size_t *cap)
{
	unsigned i, best = PC_NSPARE;
	size_t want = buf_cap(len);
	uint8_t *p;

	for (i = 0; i < PC_NSPARE; i++) {
		if (pc->spare[i].p && pc->spare[i].cap >= len &&
		    pc->spare[i].cap / 2 <= want &&
		    (best == PC_NSPARE ||
		     pc->spare[i].cap < pc->spare[best].cap))
			best = i;
	}
	if (best < PC_NSPARE) {
		p = pc->spare[best].p;
		*cap = pc->spare[best].cap;
		pc->spare[best].p = NULL;
		pc->spare_bytes -= *cap;
		return p;
	}
	*cap = want;
	p = want < HUGE_SZ ? ezi_slab_get(&pc->slab, want) : NULL;
	return p ? p : buf_new(*cap);
}

/* Keep p as a spare if there is room, else free it. Lock held (or the
 * cache going away, with spare_max 0). */
static void buf_put(struct pcache *pc, uint8_t *p, size_t cap)
{
	unsigned i;

	if (cap < HUGE_SZ && ezi_slab_put(&pc->slab, p))
		return;
	for (i = 0; p && i < PC_NSPARE; i++) {
		if (!pc->spare[i].p && pc->spare_bytes + cap <= pc->spare_max) {
			pc->spare[i].p = p;
			pc->spare[i].cap = cap;
			pc->spare_bytes += cap;
			return;
		}
	}
	free(p);
}

static void entry_free(struct pcache *pc, struct pcache_entry *e)
{
	buf_put(pc, e->data, e->cap);
	free(e);
}

void ezi_pcache_fini(ezfs_image *img)
{
	struct pcache *pc = &img->pc;

	if (!pc->buckets)
		return;
	pc->spare_max = 0;
	for (unsigned i = 0; i < pc->nbuckets; i++) {
		struct pcache_entry *e = pc->buckets[i], *n;

		for (; e; e = n) {
			n = e->hnext;
			entry_free(pc, e);
		}
	}
	for (unsigned i = 0; i < PC_NSPARE; i++)
		free(pc->spare[i].p);
	ezi_slab_fini(&pc->slab);
	free(pc->buckets);
	pc->buckets = NULL;
	pthread_mutex_destroy(&pc->lock);
	pthread_cond_destroy(&pc->cond);
}

static struct pcache_entry **bucket(struct pcache *pc, uint64_t key)
{
	uint64_t h = key * 0x9E3779B97F4A7C15ull;

	return &pc->buckets[(h >> 40) & (pc->nbuckets - 1)];
}

static void lru_unlink(struct pcache *pc, struct pcache_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else if (pc->lru_head == e)
		pc->lru_head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else if (pc->lru_tail == e)
		pc->lru_tail = e->prev;
	e->prev = e->next = NULL;
}

static void lru_push(struct pcache *pc, struct pcache_entry *e)
{
	e->prev = NULL;
	e->next = pc->lru_head;
	if (pc->lru_head)
		pc->lru_head->prev = e;
	pc->lru_head = e;
	if (!pc->lru_tail)
		pc->lru_tail = e;
}

static void unhash(struct pcache *pc, struct pcache_entry *e)
{
	struct pcache_entry **pp = bucket(pc, e->key);

	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == e) {
			*pp = e->hnext;
			break;
		}
	}
	if (e->state == PC_READY) {
		lru_unlink(pc, e);
		pc->bytes -= e->dlen;
	}
	e->dead = true;
}

/* Evict unreferenced entries from the LRU tail while over budget. */
static void shrink(struct pcache *pc)
{
	struct pcache_entry *e = pc->lru_tail, *prev;

	for (; e && pc->bytes > pc->budget; e = prev) {
		prev = e->prev;
		if (e->refs)
			continue;
		unhash(pc, e);
		entry_free(pc, e);
		pc->st.evictions++;
	}
}

/*
 * The compressed input of a decode: each thread keeps one buffer of the
 * largest pcluster it has read (freed when the thread ends), so a read does
 * not pay a malloc, and the page faults of a fresh one, per pcluster. A
 * read of many small pclusters may first read their compressed bytes at
 * once into the thread's window (ezi_zwin_fill): one system call instead
 * of one per pcluster (4 KiB preads from the page cache: 7 us each in a
 * VM, a third of the time of reading lz4hc 4K pclusters).
 */
struct zin {
	uint8_t *buf;
	size_t cap;
	uint8_t *wbuf; /* the window: [wpa, wpa + wlen) of wimg */
	size_t wcap, wlen;
	uint64_t wpa;
	ezfs_image *wimg;
};

static pthread_key_t zin_key;
static pthread_once_t zin_once = PTHREAD_ONCE_INIT;
static bool zin_ok;

static void zin_free(void *p)
{
	struct zin *z = p;

	free(z->buf);
	free(z->wbuf);
	free(z);
}

static void zin_init(void)
{
	zin_ok = !pthread_key_create(&zin_key, zin_free);
}

static struct zin *zin_self(void)
{
	struct zin *z;

	pthread_once(&zin_once, zin_init);
	if (!zin_ok)
		return NULL;
	z = pthread_getspecific(zin_key);
	if (!z) {
		z = calloc(1, sizeof(*z));
		if (!z || pthread_setspecific(zin_key, z)) {
			free(z);
			return NULL;
		}
	}
	return z;
}

/* A buffer of at least len bytes in *p (capacity *cap), kept: above
 * ZIN_HUGE in huge pages (one fault, not 128 or more); smaller ones in
 * small pages, as every FUSE worker of a mount has its own. */
#define ZIN_HUGE (256u << 10)
static uint8_t *zin_grow(uint8_t **p, size_t *cap, size_t len)
{
	size_t c;
	uint8_t *n;

	if (*cap >= len)
		return *p;
	c = len > ZIN_HUGE ? (len + HUGE_SZ - 1) & ~(size_t)(HUGE_SZ - 1)
			   : buf_cap(len);
	n = buf_new(c);
	if (!n)
		return NULL;
	free(*p);
	*p = n;
	*cap = c;
	return n;
}

static uint8_t *zin_get(size_t len)
{
	struct zin *z = zin_self();

	return z ? zin_grow(&z->buf, &z->cap, len) : NULL;
}

int ezi_zwin_fill(ezfs_image *img, uint64_t pa, size_t len)
{
	struct zin *z = zin_self();
	int err;

	if (!z)
		return -ENOMEM;
	z->wimg = NULL;
	if (pa >= img->io.size)
		return -EINVAL;
	if (len > img->io.size - pa)
		len = (size_t)(img->io.size - pa);
	if (!zin_grow(&z->wbuf, &z->wcap, len))
		return -ENOMEM;
	err = ezi_data_read(img, z->wbuf, len, pa);
	if (err)
		return err;
	z->wimg = img;
	z->wpa = pa;
	z->wlen = len;
	return 0;
}

/* The calling thread's zin if it has one (none made). */
static struct zin *zin_peek(void)
{
	pthread_once(&zin_once, zin_init);
	return zin_ok ? pthread_getspecific(zin_key) : NULL;
}

const uint8_t *ezi_zwin_get(ezfs_image *img, const struct zmap *m)
{
	struct zin *z = zin_peek();

	if (!z || z->wimg != img ||
	    (m->flags & (EZFS_EXTENT_INLINE | EZFS_EXTENT_META)) ||
	    m->pa < z->wpa || m->pa - z->wpa > z->wlen ||
	    m->plen > z->wlen - (m->pa - z->wpa))
		return NULL;
	return z->wbuf + (m->pa - z->wpa);
}

void ezi_zwin_drop(ezfs_image *img)
{
	struct zin *z = zin_peek();

	if (z && z->wimg == img)
		z->wimg = NULL;
}

/*
 * The compressed bytes of m: in place for an in-memory image, from the
 * thread's window, else read into the thread's buffer; metadata space
 * (inline pclusters, the metabox, whose reading may decode again on this
 * thread) into *owned, to free.
 */
static int z_input(ezfs_image *img, const struct zmap *m, const uint8_t **in,
		   uint8_t **owned)
{
	uint8_t *buf;
	int err;

	*owned = NULL;
	if (m->flags & (EZFS_EXTENT_INLINE | EZFS_EXTENT_META)) {
		buf = *owned = malloc(m->plen);
		if (!buf)
			return -ENOMEM;
		err = ezi_meta_read(img, m->flags & EZFS_EXTENT_META, m->pa,
				    buf, m->plen);
	} else {
		*in = ezi_data_map(img, m->plen, m->pa);
		if (!*in)
			*in = ezi_zwin_get(img, m);
		if (*in)
			return 0;
		buf = zin_get(m->plen);
		if (!buf)
			return -ENOMEM;
		if (ezi_io_hints(&img->io)) /* the whole pcluster, exactly */
			ezi_data_willneed(img, m->pa, m->plen);
		err = ezi_data_read(img, buf, m->plen, m->pa);
	}
	*in = buf;
	return err;
}

/* Decode m's first outlen bytes into out; quiet: no log line (a decode
 * ahead: the reader that needs the extent decodes it again and says). */
static int z_decode(ezfs_image *img, uint64_t nid, const struct zmap *m,
		    const uint8_t *given, uint8_t *out, size_t outlen,
		    bool partial, bool quiet)
{
	struct ezfs_dreq rq = { 0 };
	const uint8_t *in = given;
	uint8_t *owned = NULL;
	size_t skip = 0, scan;
	int err = 0;

	if (!m->plen || m->plen > EROFS_PCLUSTER_MAX_SIZE) {
		if (!quiet)
			ezfs_err(img, "nid %llu: bad pcluster size %llu",
				 (unsigned long long)nid,
				 (unsigned long long)m->plen);
		return -EUCLEAN;
	}
	if (!in)
		err = z_input(img, m, &in, &owned);
	if (err)
		goto out;
	/* [9.8] 0padding: the stream is right-aligned; the kernel scans only
	 * up to the end of the first block for its start. */
	if (img->zero_padding || m->alg != EZFS_ALG_LZ4) {
		scan = img->blksz - (m->pa & (img->blksz - 1));
		if (scan > m->plen)
			scan = m->plen;
		while (skip < scan && !in[skip])
			skip++;
		if (skip == scan) {
			if (!quiet)
				ezfs_err(img,
					 "nid %llu: pcluster at %llu starts "
					 "with a block of zeros",
					 (unsigned long long)nid,
					 (unsigned long long)m->pa);
			err = -EUCLEAN;
			goto out;
		}
	} else {
		partial = true; /* legacy lz4: trailing bytes undefined */
	}
	rq.in = in + skip;
	rq.inlen = m->plen - skip;
	rq.out = out;
	rq.outlen = outlen;
	rq.partial = partial || outlen < m->llen ||
		     (m->flags & EZFS_EXTENT_PARTIAL_REF);
	err = ezi_engine_decompress(ezi_image_engine(img), m->alg, &rq);
	if ((err == -EUCLEAN || err == -EINVAL) && !quiet)
		ezfs_err(img,
			 "nid %llu: cannot decode %s pcluster at %llu "
			 "(%llu bytes -> %zu)",
			 (unsigned long long)nid, ezfs_alg_name(m->alg),
			 (unsigned long long)m->pa, (unsigned long long)m->plen,
			 outlen);
	if (err == -EINVAL)
		err = -EUCLEAN;
out:
	free(owned);
	return err;
}

int ezi_z_decode(ezfs_inode *ino, const struct zmap *m, uint8_t *out,
		 size_t outlen, bool partial)
{
	return z_decode(ino->img, ino->nid, m, NULL, out, outlen, partial,
			false);
}

int ezi_z_decode_from(ezfs_inode *ino, const struct zmap *m, const uint8_t *in,
		      uint8_t *out, size_t outlen)
{
	return z_decode(ino->img, ino->nid, m, in, out, outlen, false, false);
}

static uint64_t pc_key(const struct zmap *m)
{
	uint64_t key = m->pa << 1;

	if (m->flags & (EZFS_EXTENT_INLINE | EZFS_EXTENT_META))
		key |= 1; /* metadata space: not a device pcluster */
	if (m->flags & EZFS_EXTENT_META)
		key |= 1ull << 63;
	return key;
}

bool ezi_pcache_has(ezfs_image *img, const struct zmap *m)
{
	struct pcache *pc = &img->pc;
	const uint64_t key = pc_key(m);
	struct pcache_entry *e;

	pthread_mutex_lock(&pc->lock);
	for (e = *bucket(pc, key); e; e = e->hnext)
		if (e->key == key)
			break;
	pthread_mutex_unlock(&pc->lock);
	return e != NULL;
}

/*
 * e is being decoded (pc->lock held, and held again on return): if that is
 * a decode ahead no worker has started, run it here; if a worker runs it,
 * run the next decode ahead no worker has started meanwhile, else wait for
 * a decode to complete. A reader that waits only when nothing is left to
 * do goes no slower than decoding alone when the workers get no CPU (a
 * busy machine, where the scheduler shares a CPU between sessions, not
 * threads).
 */
static void wait_loading(ezfs_image *img, struct pcache_entry *e)
{
	struct pcache *pc = &img->pc;
	struct ezfs_estate *es = ezi_image_engine(img);
	struct ahead_job *aj = e->job;
	bool ran = false;

	/* aj stays until its completion takes pc->lock */
	if (aj && es && ezi_engine_claim(es, &aj->j)) {
		pthread_mutex_unlock(&pc->lock);
		ezi_engine_run_claimed(es, &aj->j);
		pthread_mutex_lock(&pc->lock);
		return;
	}
	if (aj && es) {
		uint64_t gen = pc->gen;

		pthread_mutex_unlock(&pc->lock);
		ran = ezi_engine_help(es);
		pthread_mutex_lock(&pc->lock);
		if (pc->gen != gen)
			return; /* a decode completed meanwhile: look again */
	}
	if (!ran)
		pthread_cond_wait(&pc->cond, &pc->lock);
}

static int ahead_run(void *arg)
{
	struct ahead_job *aj = arg;

	return z_decode(aj->img, aj->nid, &aj->m, NULL, aj->e->data,
			(size_t)aj->m.llen, false, true);
}

/* A decode ahead completed: its entry is ready, or goes (a failure: the
 * reader that comes to it decodes it again, and reports). */
static void ahead_done(struct ezfs_ejob *j)
{
	struct ahead_job *aj = (struct ahead_job *)j;
	struct pcache *pc = &aj->img->pc;
	struct pcache_entry *e = aj->e;

	pthread_mutex_lock(&pc->lock);
	e->job = NULL;
	pc->ahead_bytes -= (size_t)aj->m.llen;
	pc->ahead_n--;
	if (j->err) {
		unhash(pc, e);
	} else {
		e->dlen = (size_t)aj->m.llen;
		e->state = PC_READY;
		lru_push(pc, e);
		pc->bytes += e->dlen;
		pc->st.decoded_bytes += e->dlen;
	}
	if (--e->refs == 0 && e->dead)
		entry_free(pc, e);
	else
		shrink(pc);
	pc->gen++;
	pthread_cond_broadcast(&pc->cond);
	pthread_mutex_unlock(&pc->lock);
	free(aj);
}

int ezi_pcache_ahead(ezfs_inode *ino, const struct zmap *m, size_t max,
		     struct ezfs_ejob ***tail)
{
	ezfs_image *img = ino->img;
	struct pcache *pc = &img->pc;
	const uint64_t key = pc_key(m);
	struct pcache_entry *e;
	struct ahead_job *aj;

	pthread_mutex_lock(&pc->lock);
	for (e = *bucket(pc, key); e; e = e->hnext)
		if (e->key == key)
			break;
	if (e && (e->state == PC_LOADING || e->dlen >= m->llen)) {
		pthread_mutex_unlock(&pc->lock);
		return 0; /* there, or on its way */
	}
	if (pc->ahead_bytes + m->llen > max) {
		pthread_mutex_unlock(&pc->lock);
		return -ENOSPC;
	}
	if (e) { /* a shorter prefix: replaced */
		unhash(pc, e);
		if (!e->refs)
			entry_free(pc, e);
	}
	aj = calloc(1, sizeof(*aj));
	e = aj ? calloc(1, sizeof(*e)) : NULL;
	if (e)
		e->data = buf_get(pc, (size_t)m->llen, &e->cap);
	if (!e || !e->data) {
		free(e);
		free(aj);
		pthread_mutex_unlock(&pc->lock);
		return -ENOMEM;
	}
	e->key = key;
	e->refs = 1; /* the job's */
	e->state = PC_LOADING;
	e->job = aj;
	e->hnext = *bucket(pc, key);
	*bucket(pc, key) = e;
	pc->ahead_bytes += (size_t)m->llen;
	pc->ahead_n++;
	pc->st.misses++;
	pthread_mutex_unlock(&pc->lock);
	aj->img = img;
	aj->nid = ino->nid;
	aj->m = *m;
	aj->e = e;
	aj->j.fn = ahead_run;
	aj->j.arg = aj;
	aj->j.done = ahead_done;
	aj->j.next = NULL;
	**tail = &aj->j;
	*tail = &aj->j.next;
	return 1;
}

void ezi_pcache_ahead_drop(struct ezfs_ejob *jobs)
{
	struct ezfs_ejob *j, *n;

	for (j = jobs; j; j = n) {
		n = j->next;
		j->err = -ECANCELED;
		ahead_done(j);
	}
}

void ezi_pcache_quiesce(ezfs_image *img)
{
	struct pcache *pc = &img->pc;

	if (!pc->buckets)
		return;
	pthread_mutex_lock(&pc->lock);
	while (pc->ahead_n)
		pthread_cond_wait(&pc->cond, &pc->lock);
	pthread_mutex_unlock(&pc->lock);
}

int ezi_pcache_get(ezfs_inode *ino, const struct zmap *m, uint64_t need,
		   struct pcache_entry **out, const uint8_t **data)
{
	ezfs_image *img = ino->img;
	struct pcache *pc = &img->pc;
	const uint64_t key = pc_key(m);
	struct pcache_entry *e;
	size_t dlen = (size_t)m->llen;
	int err;

	pthread_mutex_lock(&pc->lock);
again:
	for (e = *bucket(pc, key); e; e = e->hnext)
		if (e->key == key)
			break;
	if (e) {
		if (e->state == PC_LOADING) {
			wait_loading(img, e);
			goto again;
		}
		if (e->dlen >= need) {
			e->refs++;
			lru_unlink(pc, e);
			lru_push(pc, e);
			pc->st.hits++;
			pthread_mutex_unlock(&pc->lock);
			*out = e;
			*data = e->data;
			return 0;
		}
		/* cached prefix too short (a longer extent shares it) */
		unhash(pc, e);
		if (!e->refs)
			entry_free(pc, e);
	}
	e = calloc(1, sizeof(*e));
	if (e)
		e->data = buf_get(pc, dlen, &e->cap);
	if (!e || !e->data) {
		free(e);
		pthread_mutex_unlock(&pc->lock);
		return -ENOMEM;
	}
	e->key = key;
	e->refs = 1;
	e->state = PC_LOADING;
	e->hnext = *bucket(pc, key);
	*bucket(pc, key) = e;
	pc->st.misses++;
	pthread_mutex_unlock(&pc->lock);

	err = ezi_z_decode(ino, m, e->data, dlen, false);

	pthread_mutex_lock(&pc->lock);
	if (err) {
		struct pcache_entry **pp = bucket(pc, key);

		for (; *pp; pp = &(*pp)->hnext) {
			if (*pp == e) {
				*pp = e->hnext;
				break;
			}
		}
		entry_free(pc, e);
		pc->gen++;
		pthread_cond_broadcast(&pc->cond);
		pthread_mutex_unlock(&pc->lock);
		return err;
	}
	e->dlen = dlen;
	e->state = PC_READY;
	lru_push(pc, e);
	pc->bytes += dlen;
	pc->st.decoded_bytes += dlen;
	shrink(pc);
	pc->gen++;
	pthread_cond_broadcast(&pc->cond);
	pthread_mutex_unlock(&pc->lock);
	*out = e;
	*data = e->data;
	return 0;
}

/*
 * bytes of e were passed on where they stay (the kernel's page cache):
 * once all of them (whole: the extent up to the end of the file) have
 * been, e is unhashed and freed with its last reference, its buffer kept
 * for the next decode. A sequential reader then decodes into recycled
 * memory instead of fresh pages (a page fault and a cleared page per 4
 * KiB until the budget filled: a quarter of the daemon's CPU for lz4hc).
 */
void ezi_pcache_served(ezfs_image *img, struct pcache_entry *e, size_t bytes,
		       size_t whole)
{
	struct pcache *pc = &img->pc;

	pthread_mutex_lock(&pc->lock);
	e->served += bytes;
	if (e->served >= whole && !e->dead) {
		unhash(pc, e);
		pc->st.dropped++;
	}
	pthread_mutex_unlock(&pc->lock);
}

void ezi_pcache_put(ezfs_image *img, struct pcache_entry *e)
{
	struct pcache *pc = &img->pc;

	pthread_mutex_lock(&pc->lock);
	if (--e->refs == 0) {
		if (e->dead)
			entry_free(pc, e);
		else
			shrink(pc);
	}
	pthread_mutex_unlock(&pc->lock);
}

void ezfs_cache_stats(ezfs_image *img, struct ezfs_cache_stats *st)
{
	struct pcache *pc = &img->pc;

	pthread_mutex_lock(&pc->lock);
	*st = pc->st;
	st->bytes_now = pc->bytes;
	st->bytes_max = pc->budget;
	pthread_mutex_unlock(&pc->lock);
}
