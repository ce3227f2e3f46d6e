/* SPDX-License-Identifier: MIT */
/*
 * verify.c - what is fetched, checked against what the source knows of
 * the bytes, between the fetch and any use of them:
 *  - the image's dm-verity tree, when the image has one: the reader
 *    (lib/io/verity.c, at ezfs_image_open_io) loads it, checks it against
 *    its root (given, from a manifest named by digest, signed, or only
 *    computed) and hands it over (ezfs_remote_set_verity); from then on
 *    every block fetched is checked with ezfs_verity_check before it is
 *    kept or served (ezi_verify_fetched), and those kept before (the
 *    head) are checked then. A block that does not match is not kept: the
 *    read gets -EIO and one line naming dm-verity, the block and the
 *    root. Blocks read back from the persistent cache are checked by the
 *    reader's io, once each, but for those the cache entry's record
 *    (KEY.vok, below) lists as checked before against the same tree.
 *  - an oci:// layer's digest (sha256 of the whole blob), checked once
 *    every block is present (ezi_verify_blob, by the read that completes
 *    it) or when the caller asks (ezfs_remote_verify, fetching what is
 *    missing). Without a tree, blocks are served before that: a range is
 *    only checked against the range asked for (fetch.c). A mismatch drops
 *    the cache entry; the reads that follow fail, or with
 *    serve_unverified go on for a caller that lists what it read as
 *    unverified.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ezfs/verity.h"
#include "remote/internal.h"
#include "util/sha256.h"

#define CHUNK (1u << 20) /* hashed at a time by ezfs_remote_verify */

static void hex_of(const uint8_t d[32], char hex[65])
{
	for (int i = 0; i < 32; i++) {
		hex[2 * i] = "0123456789abcdef"[d[i] >> 4];
		hex[2 * i + 1] = "0123456789abcdef"[d[i] & 15];
	}
	hex[64] = '\0';
}

/* The bytes hashed to d: verified, or dropped with one log line. Lock
 * held. */
static void judge(struct ezfs_remote *r, const uint8_t d[32])
{
	char hex[65];

	hex_of(d, hex);
	if (!strcmp(hex, r->digest + 7)) {
		r->verified = 1;
		return;
	}
	ezi_rlog(r, EZFS_LOG_ERROR,
		 "the blob does not match its digest %s (its bytes hash to "
		 "sha256:%s); the cache entry is dropped",
		 r->digest, hex);
	__atomic_store_n(&r->bad, 1, __ATOMIC_RELAXED);
	ezi_cache_drop(r);
}

static void vrec_read(struct ezfs_remote *r);

void ezi_verify_blob(struct ezfs_remote *r)
{
	struct ezi_sha256 c;
	uint8_t d[32], *tmp;

	if (!r->digest[0] || r->verified ||
	    __atomic_load_n(&r->bad, __ATOMIC_RELAXED) ||
	    r->st.cache_bytes != r->size)
		return;
	/* the entry as it was when its bytes last matched: not again */
	vrec_read(r);
	if (r->vrec_blob && !ezi_cmap_complete(&r->map)) {
		r->vrec_blob = 0;
	} else if (r->vrec_blob) {
		r->verified = 1;
		ezi_rlog(r, EZFS_LOG_DEBUG,
			 "the blob matched its digest %s before, by the cache "
			 "entry's record",
			 r->digest);
		return;
	}
	tmp = malloc(r->bs);
	if (!tmp)
		return;
	ezi_sha256_init(&c);
	for (uint64_t b = 0; b < r->nblocks; b++) {
		size_t l = ezi_blk_len(r, b);

		if (r->state[b] != EZI_B_PRESENT ||
		    ezi_block_copy(r, b, 0, tmp, l)) {
			free(tmp);
			return;
		}
		ezi_sha256_update(&c, tmp, l);
	}
	free(tmp);
	ezi_sha256_final(&c, d);
	judge(r, d);
}

int ezfs_remote_verify(ezfs_remote *r)
{
	struct ezi_sha256 c;
	uint8_t d[32], *buf;
	uint64_t off = 0;
	int err = 0;

	if (!r->digest[0])
		return 0;
	if (__atomic_load_n(&r->bad, __ATOMIC_RELAXED))
		return -EBADMSG;
	if (r->verified)
		return 1;
	/* in order, through the blocks: what is missing is fetched, and a
	 * memory cache smaller than the image does not matter */
	buf = malloc(CHUNK);
	if (!buf)
		return -ENOMEM;
	ezi_sha256_init(&c);
	while (off < r->size && !r->verified) {
		size_t n =
			r->size - off < CHUNK ? (size_t)(r->size - off) : CHUNK;
		ssize_t got = ezi_read_range(r, buf, n, off, 0);

		if (got != (ssize_t)n) {
			err = got < 0 ? (int)got : -EIO;
			break;
		}
		ezi_sha256_update(&c, buf, n);
		off += n;
	}
	free(buf);
	if (__atomic_load_n(&r->bad, __ATOMIC_RELAXED))
		return -EBADMSG; /* the last fetch completed the blob */
	if (r->verified)
		return 1;
	if (err)
		return err;
	ezi_sha256_final(&c, d);
	pthread_mutex_lock(&r->lock);
	judge(r, d);
	pthread_mutex_unlock(&r->lock);
	return r->verified ? 1 : -EBADMSG;
}

/* ---- dm-verity: every block checked before it is kept ---- */

/* The tree's blocks in [off, off + len) of buf (offsets of the source),
 * those not verified yet checked: 0, or -EIO with why. */
static int check_blocks(struct ezfs_remote *r, struct ezfs_verity *v,
			const uint8_t *buf, uint64_t off, uint64_t len,
			char *why, size_t whylen)
{
	uint64_t bs = 1ull << r->vbits, first, end, rel;
	int err;

	if (off + len <= r->vbase)
		return 0;
	/* whole tree blocks only: the source's blocks are multiples of
	 * them, and the image starts on one (ezfs_remote_set_verity) */
	rel = off > r->vbase ? off - r->vbase : 0;
	first = (rel + bs - 1) >> r->vbits;
	end = (off + len - r->vbase) >> r->vbits;
	if (end > r->vblocks)
		end = r->vblocks;
	for (uint64_t k = first; k < end; k++) {
		if (ezfs_verity_verified(v, k))
			continue;
		err = ezfs_verity_check(
			v, k, buf + (r->vbase + (k << r->vbits) - off));
		if (!err)
			continue;
		snprintf(why, whylen,
			 "dm-verity: block %llu (bytes %llu-%llu) of %.200s "
			 "%s the tree of root %s; not kept",
			 (unsigned long long)k,
			 (unsigned long long)(k << r->vbits),
			 (unsigned long long)((k << r->vbits) + bs - 1),
			 r->digest[0] ? r->digest : r->name,
			 err == -EBADMSG ? "does not match its hash in"
					 : "could not be checked against",
			 r->vroot);
		return -EIO;
	}
	return 0;
}

/* The chunks wholly in [off, off + len) of buf checked: 0, or -EIO with
 * why. */
static int check_chunks(struct ezfs_remote *r, const uint8_t *buf, uint64_t off,
			uint64_t len, char *why, size_t whylen)
{
	const struct ezi_cindex *ci = &r->ci;
	uint64_t c = 1ull << ci->bits, k = (off + c - 1) >> ci->bits;
	uint8_t d[32];
	char hex[65];

	/* an embedded index's own bytes: as checked against its digest */
	if (ci->tail && off + len > ci->tail_off &&
	    off < ci->tail_off + ci->tail_len) {
		uint64_t a = off > ci->tail_off ? off : ci->tail_off;
		uint64_t e = off + len < ci->tail_off + ci->tail_len
				     ? off + len
				     : ci->tail_off + ci->tail_len;

		if (memcmp(buf + (a - off), ci->tail + (a - ci->tail_off),
			   (size_t)(e - a))) {
			snprintf(why, whylen,
				 "chunk index: bytes %llu-%llu of %.200s are "
				 "not the chunk index embedded there (%.80s); "
				 "not kept",
				 (unsigned long long)a,
				 (unsigned long long)(e - 1),
				 r->digest[0] ? r->digest : r->name,
				 r->ann.ci_digest);
			return -EIO;
		}
	}
	for (; k < ci->nchunks; k++) {
		uint64_t a = k << ci->bits;
		uint64_t l = ci->size - a < c ? ci->size - a : c;

		if (a + l > off + len)
			break;
		ezi_sha256(buf + (a - off), (size_t)l, d);
		if (!memcmp(d, ci->hash + k * 32, 32))
			continue;
		hex_of(ci->hash + k * 32, hex);
		snprintf(why, whylen,
			 "chunk index: chunk %llu (bytes %llu-%llu) of %.200s "
			 "does not match its SHA-256 %s in the layer's chunk "
			 "index %.80s; not kept",
			 (unsigned long long)k, (unsigned long long)a,
			 (unsigned long long)(a + l - 1),
			 r->digest[0] ? r->digest : r->name, hex,
			 r->ann.ci_digest);
		return -EIO;
	}
	return 0;
}

int ezi_verify_fetched(struct ezfs_remote *r, const uint8_t *buf, uint64_t off,
		       uint64_t len, char *why, size_t whylen)
{
	struct ezfs_verity *v = __atomic_load_n(&r->verity, __ATOMIC_ACQUIRE);
	int err = 0;

	if (r->ci.nchunks)
		err = check_chunks(r, buf, off, len, why, whylen);
	if (!err && v)
		err = check_blocks(r, v, buf, off, len, why, whylen);
	return err;
}

/* ---- the record of what was verified, beside the cache entry ----
 *
 * KEY.vok: what of KEY.data was checked, so that a later open does not
 * hash it again:
 *
 *   ezfs-verified 1
 *   data DEV INO SIZE CTIME_S CTIME_NS   KEY.data when it was written
 *   blob DIGEST        its bytes matched the blob's digest ("-": not)
 *   tree root HEX base N blocks N bits N   the dm-verity tree the bits
 *                      below are of ("-": none)
 *   sum HEX            SHA-256 of the lines above and the bits
 *
 * then an empty line and one bit per data block of the tree: checked
 * against it. Honoured only as the files stand: the folder, KEY.data and
 * the record the user's own and writable by no one else, KEY.data not
 * written since (its change time, which no one can set back), a block
 * only while the map lists it. docs/verity.md says what this trusts. */

#define VREC_MAGIC "ezfs-verified 1"
#define VREC_MAX   (64u << 20) /* bits of a 1 TiB image of 4 KiB blocks */

/* KEY.vok of the entry (malloc'd), or NULL. */
static char *vrec_path(const struct ezfs_remote *r)
{
	size_t n;
	char *p;

	if (!r->map_path || (n = strlen(r->map_path)) < 4 ||
	    strcmp(r->map_path + n - 4, ".map"))
		return NULL;
	p = strdup(r->map_path);
	if (p)
		memcpy(p + n - 4, ".vok", 4);
	return p;
}

/* Is st the user's own and writable by no one else? */
static int own_only(const struct stat *st)
{
	return st->st_uid == geteuid() && !(st->st_mode & 022);
}

/* The entry's folder and data file as the record wants them; their
 * identity into line (n bytes). */
static int vrec_files_ok(const struct ezfs_remote *r, char *line, size_t n)
{
	struct stat st;

	if (r->data_fd < 0 || !r->p.cache_dir || stat(r->p.cache_dir, &st) ||
	    !own_only(&st) || fstat(r->data_fd, &st) || !own_only(&st))
		return 0;
	snprintf(line, n, "%llu %llu %llu %lld %ld",
		 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
		 (unsigned long long)st.st_size, (long long)st.st_ctim.tv_sec,
		 (long)st.st_ctim.tv_nsec);
	return 1;
}

void ezi_vrec_attach(struct ezfs_remote *r)
{
	if (!vrec_files_ok(r, r->vrec_id, sizeof(r->vrec_id)))
		r->vrec_id[0] = '\0';
}

/* The tree line of r's tree (set_verity's fields). */
static void vrec_tree_line(const struct ezfs_remote *r, char *out, size_t n)
{
	snprintf(out, n, "root %s base %llu blocks %llu bits %u", r->vroot,
		 (unsigned long long)r->vbase, (unsigned long long)r->vblocks,
		 r->vbits);
}

static void vrec_sum(const char *head, size_t hl, const uint8_t *bits,
		     size_t nbytes, char hex[65])
{
	struct ezi_sha256 c;
	uint8_t d[32];

	ezi_sha256_init(&c);
	ezi_sha256_update(&c, head, hl);
	ezi_sha256_update(&c, bits, nbytes);
	ezi_sha256_final(&c, d);
	hex_of(d, hex);
}

/* The record read once, when the data file is as it was when the record
 * was written: into r->vrec_blob, vrec_tree, vrec_bits. Lock held. */
static void vrec_read(struct ezfs_remote *r)
{
	char *path, *buf = NULL, *l[5], *p, sum[65];
	struct stat st;
	size_t n;
	FILE *f = NULL;
	int i;

	if (r->vrec_read)
		return;
	r->vrec_read = 1;
	path = vrec_path(r);
	if (!path || !r->vrec_id[0] || !(f = fopen(path, "rbe")) ||
	    fstat(fileno(f), &st) || !own_only(&st) || st.st_size > VREC_MAX ||
	    !(buf = malloc((size_t)st.st_size + 1)) ||
	    fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size)
		goto out;
	n = (size_t)st.st_size;
	buf[n] = '\0';
	/* five lines, an empty one, the bits */
	for (i = 0, p = buf; i < 5; i++) {
		l[i] = p;
		p = memchr(p, '\n', n - (size_t)(p - buf));
		if (!p)
			goto out;
		*p++ = '\0';
	}
	if ((size_t)(p - buf) >= n || *p != '\n' || strcmp(l[0], VREC_MAGIC) ||
	    strncmp(l[1], "data ", 5) || strcmp(l[1] + 5, r->vrec_id) ||
	    strncmp(l[2], "blob ", 5) || strncmp(l[3], "tree ", 5) ||
	    strncmp(l[4], "sum ", 4) || strlen(l[4]) != 4 + 64)
		goto out;
	p++;
	/* the sum covers the first four lines as written */
	for (i = 0; i < 4; i++)
		l[i][strlen(l[i])] = '\n';
	vrec_sum(buf, (size_t)(l[4] - buf), (uint8_t *)p, n - (size_t)(p - buf),
		 sum);
	for (i = 0; i < 4; i++)
		*strchr(l[i], '\n') = '\0';
	if (memcmp(l[4] + 4, sum, 64))
		goto out;
	r->vrec_blob = r->digest[0] && !strcmp(l[2] + 5, r->digest);
	if (strcmp(l[3] + 5, "-") && n > (size_t)(p - buf)) {
		r->vrec_nbytes = n - (size_t)(p - buf);
		r->vrec_bits = malloc(r->vrec_nbytes);
		r->vrec_tree = strdup(l[3] + 5);
		if (r->vrec_bits && r->vrec_tree) {
			memcpy(r->vrec_bits, p, r->vrec_nbytes);
		} else {
			free(r->vrec_bits);
			free(r->vrec_tree);
			r->vrec_bits = NULL;
			r->vrec_tree = NULL;
		}
	}
out:
	if (f)
		fclose(f);
	free(buf);
	free(path);
}

/* Is block k's byte range wholly in a block the map lists? */
static int vrec_present(const struct ezfs_remote *r, uint64_t k)
{
	uint64_t b = (r->vbase + (k << r->vbits)) >> r->bsbits;

	return r->map.bits && b < r->map.nblocks &&
	       (r->map.bits[b >> 3] >> (b & 7) & 1);
}

/* The blocks the record lists for this tree, present in the entry,
 * marked verified in v. Lock held. */
static void vrec_load(struct ezfs_remote *r, struct ezfs_verity *v)
{
	char tree[300];
	uint64_t k;

	vrec_read(r);
	vrec_tree_line(r, tree, sizeof(tree));
	r->vrec_n = 0;
	if (!r->vrec_tree || strcmp(r->vrec_tree, tree) ||
	    r->vrec_nbytes != (r->vblocks + 7) / 8)
		return;
	for (k = 0; k < r->vblocks; k++)
		if ((r->vrec_bits[k >> 3] >> (k & 7) & 1) &&
		    vrec_present(r, k) && !ezfs_verity_mark_verified(v, k))
			r->vrec_n++;
	if (r->vrec_n)
		ezi_rlog(r, EZFS_LOG_DEBUG,
			 "%llu blocks verified before, by the cache entry's "
			 "record",
			 (unsigned long long)r->vrec_n);
}

void ezi_vrec_save(struct ezfs_remote *r)
{
	struct ezfs_verity *v = __atomic_load_n(&r->verity, __ATOMIC_ACQUIRE);
	size_t nbytes = v ? (size_t)((r->vblocks + 7) / 8) : 0, n;
	char data[200], tree[300], head[1400], sum[65], *path = NULL;
	char *tmp = NULL;
	uint8_t *bits = NULL;
	uint64_t k, count = 0;
	int ok, blob = r->verified && r->digest[0];
	FILE *f;

	if (r->vrec_done || r->cache_off || r->dropped ||
	    !(path = vrec_path(r)) || !vrec_files_ok(r, data, sizeof(data)))
		goto out;
	bits = calloc(nbytes ? nbytes : 1, 1);
	if (!bits)
		goto out;
	for (k = 0; v && k < r->vblocks; k++)
		if (ezfs_verity_verified(v, k) && vrec_present(r, k)) {
			bits[k >> 3] |= (uint8_t)(1u << (k & 7));
			count++;
		}
	if (!strcmp(data, r->vrec_id) &&
	    ((count == r->vrec_n && blob == r->vrec_blob) || (!v && !blob)))
		goto out; /* nothing new, the file as it was: it stands */
	if (!count && !blob)
		goto out;
	if (v && count)
		vrec_tree_line(r, tree, sizeof(tree));
	else
		snprintf(tree, sizeof(tree), "-");
	snprintf(head, sizeof(head), VREC_MAGIC "\ndata %s\nblob %s\ntree %s\n",
		 data, blob ? r->digest : "-", tree);
	if (!(v && count))
		nbytes = 0;
	vrec_sum(head, strlen(head), bits, nbytes, sum);
	n = strlen(path) + 8;
	tmp = malloc(n);
	if (!tmp)
		goto out;
	snprintf(tmp, n, "%s.tmp", path);
	f = fopen(tmp, "wbe");
	if (!f)
		goto out;
	/* no fsync: a record cut short by a crash fails its sum */
	ok = fprintf(f, "%ssum %s\n\n", head, sum) > 0 &&
	     fwrite(bits, 1, nbytes, f) == nbytes;
	ok = !fclose(f) && ok && !rename(tmp, path);
	if (!ok)
		unlink(tmp);
out:
	free(r->vrec_bits);
	free(r->vrec_tree);
	r->vrec_bits = NULL;
	r->vrec_tree = NULL;
	free(tmp);
	free(bits);
	free(path);
}

int64_t ezfs_remote_chunk_index(const ezfs_remote *r, int *pinned)
{
	if (!r->ci.nchunks)
		return -ENODATA;
	*pinned = r->pinned;
	return (int64_t)r->ci.nchunks;
}

void ezfs_remote_set_verity(void *arg, struct ezfs_verity *v, uint64_t base)
{
	struct ezfs_remote *r = arg;
	struct ezfs_verity_info vi;
	char why[600];
	uint8_t *tmp;
	unsigned bits = 0;

	if (!v) {
		pthread_mutex_lock(&r->lock);
		if (r->verity) {
			/* the tree goes (the image closes): what it verified
			 * recorded, with the entry as it stands */
			ezi_cache_flush(r);
			ezi_vrec_save(r);
			r->vrec_done = 1;
			__atomic_store_n(&r->verity, NULL, __ATOMIC_RELEASE);
		} else {
			/* none: the head is the entry's as it is */
			ezi_cache_settle(r);
		}
		pthread_mutex_unlock(&r->lock);
		return;
	}
	ezfs_verity_get_info(v, &vi);
	while ((1u << bits) < vi.data_block_size)
		bits++;
	if (r->bs % vi.data_block_size || base % vi.data_block_size) {
		/* the reader's io still checks every read */
		ezi_rlog(r, EZFS_LOG_WARN,
			 "dm-verity blocks of %u bytes at byte %llu: fetched "
			 "blocks of %u bytes are checked as they are read, "
			 "not before they are kept",
			 vi.data_block_size, (unsigned long long)base, r->bs);
		pthread_mutex_lock(&r->lock);
		ezi_cache_settle(r);
		pthread_mutex_unlock(&r->lock);
		return;
	}
	for (unsigned i = 0; i < vi.root_size && i < 64; i++)
		snprintf(r->vroot + 2 * i, 3, "%02x", vi.root[i]);
	r->vbase = base;
	r->vbits = bits;
	r->vblocks = vi.data_blocks;
	tmp = malloc(r->bs);
	pthread_mutex_lock(&r->lock);
	/* what was kept before the tree came (the head): checked now, and
	 * forgotten when it does not match */
	for (uint64_t b = 0; r->unchecked && b < r->nblocks; b++) {
		size_t l = ezi_blk_len(r, b);

		if (!r->unchecked[b] || r->state[b] != EZI_B_PRESENT)
			continue;
		if (!tmp || ezi_block_copy(r, b, 0, tmp, l) ||
		    check_blocks(r, v, tmp, b << r->bsbits, l, why,
				 sizeof(why))) {
			if (tmp)
				ezi_rlog(r, EZFS_LOG_ERROR, "%s", why);
			ezi_block_forget(r, b);
		}
	}
	ezi_cache_settle(r);
	vrec_load(r, v);
	__atomic_store_n(&r->verity, v, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&r->lock);
	free(tmp);
}

int ezfs_remote_verity_root(const ezfs_remote *r, uint8_t root[64],
			    size_t *root_size, uint64_t *hash_offset,
			    int *pinned)
{
	if (!r->ann.have)
		return -ENODATA;
	memcpy(root, r->ann.root, r->ann.root_size);
	*root_size = r->ann.root_size;
	*hash_offset = r->ann.hash_offset;
	*pinned = r->pinned;
	return 0;
}
