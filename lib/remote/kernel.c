/* SPDX-License-Identifier: MIT */
/*
 * kernel.c - the kernel's own EROFS driver mounting a remote image's cache
 * file (ezfs mount --kernel, docs/mount.md): the file's missing ranges are
 * filled on demand from fanotify pre-content events (FAN_PRE_ACCESS with
 * a range record, Linux 6.14+).
 *
 *  - Every write into the cache file, and the source's own reads and
 *    writes of it, go through one fd that raises no events: the fd of a
 *    FAN_OPEN event of the group itself, taken before the pre-content mark
 *    and put in place of the source's cache fd (an fd opened while the
 *    file's filesystem has pre-content watchers would wait on its own
 *    events).
 *  - Bytes reach the file only through the source's reads, which check
 *    each fetched block against the image's dm-verity tree or the layer's
 *    chunk index before they return it (verify.c).
 *  - The kernel reads the superblock, inodes, directories, indexes, xattrs
 *    and inline tails through the page cache without events: the reader
 *    walks the whole tree before mount(2), each byte it reads written to
 *    the file (ezfs_remote_kfill_meta).
 *  - Each event is answered as soon as its range is in the file (FAN_DENY
 *    with EIO when the fetch failed), then the range after it is read
 *    ahead, and when no event waits the rest of the image is filled in
 *    order; once the file is complete the mark goes and the loop ends:
 *    the mount needs no process any more.
 *  - A holder process (forked by ezfs_remote_kfill_arm, in a session of
 *    its own, deaf to SIGTERM) shares the fanotify group: the kernel lets
 *    reads through once a group is gone, and a hole of the file reads as
 *    zeros. When the loop's process dies without saying it is done, the
 *    holder answers the events it had taken but not answered, and every
 *    later one, with EIO, until the file system is unmounted (inotify's
 *    IN_UNMOUNT on the mount's root).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "remote/internal.h"

/* Linux 6.14's uapi, for older headers */
#ifndef FAN_PRE_ACCESS
#define FAN_PRE_ACCESS 0x00100000
#endif
#ifndef FAN_EVENT_INFO_TYPE_RANGE
#define FAN_EVENT_INFO_TYPE_RANGE 6
#endif
#ifndef FAN_DENY_ERRNO
#define FAN_DENY_ERRNO(e) (FAN_DENY | ((((uint32_t)(e)) & 0xff) << 24))
#endif

#define PAGE	    4096u
#define FILL_UNIT   (64u << 10) /* an asked range rounded out to this */
#define RA_BYTES    (1u << 20)	/* read ahead after an answered range */
#define BG_BYTES    (2u << 20)	/* one step of the background fill */
#define BG_RETRY_MS 5000	/* its pause after a step that failed */
#define EV_BUF	    8192
#define SLOTS	    (EV_BUF / 24) /* events one read can return, at most */

/* What the loop's process and the holder share (a MAP_SHARED page): the
 * fds of the events taken and not answered yet, -1 in free slots. */
struct kshare {
	volatile int fd[SLOTS];
	volatile int watching; /* the mount's root is watched (IN_UNMOUNT) */
};

struct ezfs_remote_kfill {
	struct ezfs_remote *r;
	int fan;	 /* the fanotify group */
	int fd;		 /* the cache file, raising no events */
	int marked;	 /* the pre-content mark is on */
	int verified;	 /* a dm-verity tree came (or a chunk index) */
	int verity_set;	 /* the reader handed over its tree (or none) */
	int fill_bg;	 /* fill the rest when idle */
	uint64_t size;	 /* the image's bytes (the file's size) */
	uint64_t npages; /* PAGE units of size */
	uint64_t left;	 /* pages not in the file yet */
	uint64_t cursor; /* the background fill's next page */
	int bg_wait_ms;	 /* before its next step (after a failure) */
	uint8_t *have;	 /* a bit per page in the file */
	struct kshare *sh;
	int ino;     /* inotify, on the mount's root once mounted */
	int pipe_wr; /* to the holder: 'q' (done), or closed (died) */
	ezfs_log_fn log;
	void *log_arg;
};

static void klog(struct ezfs_remote_kfill *k, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void klog(struct ezfs_remote_kfill *k, int level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!k->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	k->log(k->log_arg, level, msg);
}

static int page_in(const struct ezfs_remote_kfill *k, uint64_t p)
{
	return k->have[p >> 3] & (1u << (p & 7));
}

static void page_set(struct ezfs_remote_kfill *k, uint64_t p)
{
	if (page_in(k, p))
		return;
	k->have[p >> 3] |= (uint8_t)(1u << (p & 7));
	k->left--;
}

/* Are the pages of [off, off + len) all in the file? */
static int range_in(const struct ezfs_remote_kfill *k, uint64_t off,
		    uint64_t len)
{
	uint64_t p, e;

	if (off >= k->size || !len)
		return 1;
	if (len > k->size - off)
		len = k->size - off;
	e = (off + len + PAGE - 1) / PAGE;
	for (p = off / PAGE; p < e; p++)
		if (!page_in(k, p))
			return 0;
	return 1;
}

/* Bytes the source returned (checked), written to the file at off. */
static int put_bytes(struct ezfs_remote_kfill *k, const void *buf, size_t n,
		     uint64_t off)
{
	size_t done = 0;

	while (done < n) {
		ssize_t w = pwrite(k->fd, (const uint8_t *)buf + done, n - done,
				   (off_t)(off + done));

		if (w <= 0)
			return w < 0 ? -errno : -ENOSPC;
		done += (size_t)w;
	}
	/* whole pages only (the last one may end at the file's end) */
	for (uint64_t p = (off + PAGE - 1) / PAGE; p < k->npages; p++) {
		uint64_t pe = (p + 1) * PAGE;

		if (pe > k->size)
			pe = k->size;
		if (pe > off + n)
			break;
		page_set(k, p);
	}
	return 0;
}

static int fill(struct ezfs_remote_kfill *k, uint64_t off, uint64_t len);

/* The io ops of the reader: the source's reads; once the source checks
 * what it fetches, the FILL_UNITs they touch are written to the file too
 * (the kernel reads whole pages of what the reader read in part). */
static ssize_t kf_pread(void *arg, void *buf, size_t len, uint64_t off)
{
	struct ezfs_remote_kfill *k = arg;
	ssize_t n = ezfs_remote_io_ops()->pread(k->r, buf, len, off);

	if (n > 0 && k->verity_set && fill(k, off, (uint64_t)n))
		return -EIO;
	return n;
}

static void kf_close(void *arg)
{
	struct ezfs_remote_kfill *k = arg;

	ezfs_remote_close(k->r);
	k->r = NULL;
}

static const struct ezfs_io_ops kf_ops = {
	.pread = kf_pread,
	.close = kf_close,
};

const struct ezfs_io_ops *ezfs_remote_kfill_io_ops(void)
{
	return &kf_ops;
}

void ezfs_remote_kfill_hint(void *arg, uint64_t off, uint64_t len,
			    unsigned flags)
{
	struct ezfs_remote_kfill *k = arg;

	ezfs_remote_hint(k->r, off, len, flags);
}

void ezfs_remote_kfill_verity(void *arg, struct ezfs_verity *v, uint64_t base)
{
	struct ezfs_remote_kfill *k = arg;
	int pinned;

	ezfs_remote_set_verity(k->r, v, base);
	k->verity_set = 1;
	k->verified = v != NULL || ezfs_remote_chunk_index(k->r, &pinned) >= 0;
}

void ezfs_remote_kfill_background(ezfs_remote_kfill *k, int on)
{
	k->fill_bg = on;
}

int ezfs_remote_kfill_verified(const ezfs_remote_kfill *k)
{
	int pinned;

	/* no tree handed over (yet): a chunk index checks the blocks */
	return k->verity_set ? k->verified
			     : ezfs_remote_chunk_index(k->r, &pinned) >= 0;
}

const char *ezfs_remote_kfill_path(const ezfs_remote_kfill *k)
{
	return k->r ? k->r->data_path : NULL;
}

int ezfs_remote_kfill_complete(const ezfs_remote_kfill *k)
{
	return !k->left;
}

/* Is mountinfo field f (space, tab, newline and backslash as \ooo) the
 * path p? */
static int field_is(const char *f, const char *p)
{
	char oct[5];

	for (; *p; p++) {
		if (strchr(" \t\n\\", *p)) {
			snprintf(oct, sizeof(oct), "\\%03o", (unsigned char)*p);
			if (strncmp(f, oct, 4))
				return 0;
			f += 4;
		} else if (*f++ != *p) {
			return 0;
		}
	}
	return !*f;
}

int ezfs_remote_cache_pinned(const char *path)
{
	char *real, *line = NULL, *sep, *f, *save;
	size_t cap = 0;
	int found = 0, fd;
	FILE *mi;

	if (!path)
		return 0;
	real = realpath(path, NULL);
	if (!real)
		return 0;
	mi = fopen("/proc/self/mountinfo", "re");
	while (mi && !found && getline(&line, &cap, mi) > 0) {
		/* ... - TYPE SOURCE OPTIONS */
		sep = strstr(line, " - ");
		if (!sep)
			continue;
		f = strtok_r(sep + 3, " \n", &save);
		if (!f || strcmp(f, "erofs"))
			continue;
		f = strtok_r(NULL, " \n", &save);
		if (!f)
			continue;
		found = field_is(f, real);
	}
	if (mi)
		fclose(mi);
	free(line);
	/* a --kernel mount on its way (its daemon holds a shared lock from
	 * ezfs_remote_kfill_new on) */
	fd = found ? -1 : open(real, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		found = flock(fd, LOCK_EX | LOCK_NB) && errno == EWOULDBLOCK;
		close(fd);
	}
	free(real);
	return found;
}

/* The fd of a FAN_OPEN event of the group on the file: it raises no
 * events. -errno. */
static int quiet_fd(int fan, const char *path)
{
	struct fanotify_event_metadata *ev;
	char buf[EV_BUF];
	int fd = -EIO, ofd;
	ssize_t n;

	if (fanotify_mark(fan, FAN_MARK_ADD, FAN_OPEN, AT_FDCWD, path))
		return -errno;
	ofd = open(path, O_RDONLY | O_CLOEXEC);
	if (ofd < 0) {
		fd = -errno;
		goto out;
	}
	close(ofd);
	n = read(fan, buf, sizeof(buf));
	for (ev = (void *)buf; n > 0 && FAN_EVENT_OK(ev, n);
	     ev = FAN_EVENT_NEXT(ev, n)) {
		if (ev->fd < 0)
			continue;
		if (fd < 0 && (ev->mask & FAN_OPEN))
			fd = ev->fd;
		else
			close(ev->fd);
	}
out:
	(void)fanotify_mark(fan, FAN_MARK_REMOVE, FAN_OPEN, AT_FDCWD, path);
	return fd;
}

int ezfs_remote_kfill_new(ezfs_remote *r, ezfs_log_fn log, void *log_arg,
			  ezfs_remote_kfill **out, char *why, size_t whysize)
{
	struct ezfs_remote_kfill *k;
	int err;

	*out = NULL;
	why[0] = '\0';
	if (r->data_fd < 0 || !r->data_path || r->cache_off) {
		snprintf(why, whysize,
			 "--kernel mounts the persistent cache file, and "
			 "this image has none (--no-cache, a folder that "
			 "cannot be written, or larger than --cache-max)");
		return -ENODATA;
	}
	if (ezfs_remote_cache_pinned(r->data_path)) {
		snprintf(why, whysize,
			 "its cache file %s is mounted (or being mounted) by "
			 "the kernel already",
			 r->data_path);
		return -EBUSY;
	}
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->r = r;
	k->fan = -1;
	k->fd = -1;
	k->ino = -1;
	k->pipe_wr = -1;
	k->log = log;
	k->log_arg = log_arg;
	k->fill_bg = 1;
	k->size = r->size;
	k->npages = (r->size + PAGE - 1) / PAGE;
	k->left = k->npages;
	k->have = calloc((size_t)(k->npages + 7) / 8 + 1, 1);
	k->sh = mmap(NULL, sizeof(*k->sh), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!k->have || k->sh == MAP_FAILED) {
		k->sh = NULL;
		ezfs_remote_kfill_free(k);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < SLOTS; i++)
		k->sh->fd[i] = -1;
	k->fan = fanotify_init(FAN_CLASS_PRE_CONTENT | FAN_CLOEXEC |
				       FAN_NONBLOCK,
			       O_RDWR | O_LARGEFILE | O_CLOEXEC);
	if (k->fan < 0) {
		err = -errno;
		snprintf(why, whysize,
			 err == -EPERM
				 ? "fanotify needs root "
				   "(CAP_SYS_ADMIN)"
				 : "this kernel lacks fanotify "
				   "permission events "
				   "(CONFIG_FANOTIFY_ACCESS_PERMISSIONS): "
				   "fanotify_init: %s",
			 strerror(-err));
		ezfs_remote_kfill_free(k);
		return err == -EPERM ? err : -EOPNOTSUPP;
	}
	/* the one fd of the file from now on, the source's included */
	k->fd = quiet_fd(k->fan, r->data_path);
	if (k->fd < 0) {
		err = k->fd;
		snprintf(why, whysize, "cache file %s: fanotify: %s",
			 r->data_path, strerror(-err));
		ezfs_remote_kfill_free(k);
		return err;
	}
	/* pinned from now on (gc, and other opens, see it) */
	(void)flock(k->fd, LOCK_SH | LOCK_NB);
	pthread_mutex_lock(&r->lock);
	if (dup3(k->fd, r->data_fd, O_CLOEXEC) < 0)
		err = -errno;
	else
		err = 0;
	/* what the entry holds on disk already */
	for (uint64_t b = 0; !err && b < r->nblocks; b++) {
		uint64_t o = b << r->bsbits;

		if (r->state[b] != EZI_B_PRESENT || r->mem[b])
			continue;
		for (uint64_t p = o / PAGE;
		     p < k->npages && p * PAGE < o + ezi_blk_len(r, b); p++)
			page_set(k, p);
	}
	pthread_mutex_unlock(&r->lock);
	if (!err && k->left &&
	    fanotify_mark(k->fan, FAN_MARK_ADD, FAN_PRE_ACCESS, AT_FDCWD,
			  r->data_path)) {
		err = -errno;
		if (err == -EINVAL)
			snprintf(why, whysize,
				 "this kernel lacks fanotify pre-content "
				 "events (FAN_PRE_ACCESS, Linux 6.14+)");
		else if (err == -EOPNOTSUPP)
			snprintf(why, whysize,
				 "the file system of the cache folder %s takes "
				 "no fanotify pre-content marks (ext4, xfs and "
				 "btrfs do; --cache-dir)",
				 r->p.cache_dir);
		else
			snprintf(why, whysize, "cache file %s: fanotify: %s",
				 r->data_path, strerror(-err));
		ezfs_remote_kfill_free(k);
		return err == -EINVAL ? -EOPNOTSUPP : err;
	}
	k->marked = !err && k->left;
	if (err) {
		snprintf(why, whysize, "cache file %s: %s", r->data_path,
			 strerror(-err));
		ezfs_remote_kfill_free(k);
		return err;
	}
	*out = k;
	return 0;
}

/* Fill [off, off + len) (rounded out to FILL_UNIT) from the source:
 * 0, or -EIO (the fetch failed, or the file could not be written:
 * logged). */
static int fill(struct ezfs_remote_kfill *k, uint64_t off, uint64_t len)
{
	uint64_t end;
	uint8_t *buf;
	int err = 0;

	if (off >= k->size || range_in(k, off, len))
		return 0;
	if (len > k->size - off)
		len = k->size - off;
	end = off + len;
	off &= ~(uint64_t)(FILL_UNIT - 1);
	end = (end + FILL_UNIT - 1) & ~(uint64_t)(FILL_UNIT - 1);
	if (end > k->size)
		end = k->size;
	buf = malloc(FILL_UNIT);
	if (!buf)
		return -EIO;
	/* the blocks missing, fetched together (in as few requests as the
	 * source can); the reads below find them in its cache */
	if (end - off > FILL_UNIT)
		ezfs_remote_hint(k->r, off, end - off, EZFS_HINT_DATA);
	for (; off < end && !err; off += FILL_UNIT) {
		size_t l =
			end - off < FILL_UNIT ? (size_t)(end - off) : FILL_UNIT;
		ssize_t n;

		if (range_in(k, off, l))
			continue;
		n = ezfs_remote_io_ops()->pread(k->r, buf, l, off);
		if (n != (ssize_t)l) {
			err = -EIO;
			break;
		}
		err = put_bytes(k, buf, l, off);
		if (err)
			klog(k, EZFS_LOG_ERROR, "cache file %s: %s",
			     k->r->data_path, strerror(-err));
	}
	free(buf);
	return err ? -EIO : 0;
}

/* Walk the tree: every byte the kernel reads without events is read here
 * (and so written to the file): inodes, xattrs, directories, symlinks,
 * the extent maps of files and the tails kept inline. */
int ezfs_remote_kfill_meta(ezfs_remote_kfill *k, ezfs_image *img)
{
	uint64_t *stack = NULL, nid;
	size_t n = 0, cap = 0;
	char *xbuf = malloc(65536);
	uint8_t *tail = malloc(65536);
	int err = 0;

	if (!xbuf || !tail) {
		free(xbuf);
		free(tail);
		return -ENOMEM;
	}
	if (!k->verity_set) {
		/* no tree was handed over */
		int pinned;

		k->verity_set = 1;
		k->verified = ezfs_remote_chunk_index(k->r, &pinned) >= 0;
	}
	/* the head, read before the tree came, is written now */
	err = fill(k, 0, 128u << 10);
	nid = ezfs_root_nid(img);
	stack = malloc(sizeof(*stack) * (cap = 256));
	if (stack)
		stack[n++] = nid;
	else
		err = -ENOMEM;
	while (!err && n) {
		struct ezfs_dirent *d = NULL;
		struct ezfs_extent ext;
		struct ezfs_stat st;
		ezfs_inode *ino;
		size_t nd = 0;

		nid = stack[--n];
		err = ezfs_inode_get(img, nid, &ino);
		if (err)
			break;
		ezfs_inode_stat(ino, &st);
		if (st.xattr_isize) {
			ssize_t xl = ezfs_listxattr(ino, xbuf, 65536);

			for (ssize_t i = 0; i < xl;
			     i += (ssize_t)strlen(xbuf + i) + 1)
				(void)ezfs_getxattr(ino, xbuf + i, tail, 65536);
		}
		switch (ezfs_mode_ftype(st.mode)) {
		case EZFS_FT_DIR:
			err = ezfs_readdir_all(ino, &d, &nd);
			for (size_t i = 0; !err && i < nd; i++) {
				if (!strcmp(d[i].name, ".") ||
				    !strcmp(d[i].name, ".."))
					continue;
				if (n == cap) {
					uint64_t *ns = realloc(
						stack, sizeof(*ns) * cap * 2);

					if (!ns) {
						err = -ENOMEM;
						break;
					}
					stack = ns;
					cap *= 2;
				}
				stack[n++] = d[i].nid;
			}
			ezfs_dirents_free(d, nd);
			break;
		case EZFS_FT_SYMLINK:
			if (ezfs_readlink(ino, xbuf, 65536) < 0)
				err = -EIO;
			break;
		case EZFS_FT_REG:
			for (uint64_t la = 0; !err && la < st.size;
			     la = ext.la + ext.llen) {
				err = ezfs_map(ino, la, &ext);
				if (err || !ext.llen || ext.la + ext.llen <= la)
					break;
				if (!(ext.flags & (EZFS_EXTENT_INLINE |
						   EZFS_EXTENT_FRAGMENT)))
					continue;
				for (uint64_t o = ext.la;
				     !err && o < ext.la + ext.llen;
				     o += 65536) {
					uint64_t l = ext.la + ext.llen - o;
					ssize_t got;

					got = ezfs_pread(ino, tail,
							 l > 65536 ? 65536 : l,
							 o);
					if (got < 0)
						err = (int)got;
				}
			}
			break;
		default:
			break;
		}
		ezfs_inode_put(ino);
	}
	free(stack);
	free(xbuf);
	free(tail);
	return err;
}

/* Answer event fd with resp; its slot freed. */
static void answer(int fan, struct kshare *sh, int fd, uint32_t resp)
{
	struct fanotify_response a = { .fd = fd, .response = resp };

	if (write(fan, &a, sizeof(a)) != sizeof(a)) {
		/* the event is gone (its reader was killed) */
	}
	for (unsigned i = 0; sh && i < SLOTS; i++)
		if (sh->fd[i] == fd)
			sh->fd[i] = -1;
	close(fd);
}

/* The range record of a pre-content event: 1 with *off, *len set. */
static int ev_range(const struct fanotify_event_metadata *ev, uint64_t *off,
		    uint64_t *len)
{
	const uint8_t *p = (const uint8_t *)ev + ev->metadata_len;
	const uint8_t *end = (const uint8_t *)ev + ev->event_len;

	while (p + sizeof(struct fanotify_event_info_header) <= end) {
		const struct fanotify_event_info_header *h = (const void *)p;
		uint64_t v[2];

		if (h->len < sizeof(*h) || p + h->len > end)
			break;
		if (h->info_type == FAN_EVENT_INFO_TYPE_RANGE && h->len >= 24) {
			memcpy(v, p + 8, sizeof(v));
			*off = v[0];
			*len = v[1];
			return 1;
		}
		p += h->len;
	}
	return 0;
}

/* The holder: waits for the loop's process; when it dies without 'q' on
 * the pipe, answers with EIO until the file system is unmounted. */
static void holder(struct ezfs_remote_kfill *k, int pipe_rd, int ino)
{
	struct pollfd pf[2];
	char c, buf[EV_BUF];
	ssize_t n;

	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	(void)setsid();
	for (;;) {
		n = read(pipe_rd, &c, 1);
		if (n == 1 && c == 'q')
			_exit(0);
		if (n == 0)
			break;
		if (n < 0 && errno != EINTR)
			break;
	}
	/* the loop's process is gone: nothing fills the file any more */
	for (unsigned i = 0; i < SLOTS; i++)
		if (k->sh->fd[i] >= 0) {
			struct fanotify_response a = {
				.fd = k->sh->fd[i],
				.response = FAN_DENY_ERRNO(EIO),
			};

			if (write(k->fan, &a, sizeof(a)) < 0) {
				/* answered before it died */
			}
		}
	pf[0].fd = k->fan;
	pf[0].events = POLLIN;
	pf[1].fd = ino;
	pf[1].events = POLLIN;
	for (;;) {
		/* died before it watched the mount: until it is not mounted
		 * (or never was) */
		if (poll(pf, 2, k->sh->watching ? -1 : 1000) < 0)
			continue;
		if (!k->sh->watching &&
		    !ezfs_remote_cache_pinned(k->r->data_path))
			_exit(0);
		if (pf[1].revents) {
			n = read(ino, buf, sizeof(buf));
			for (ssize_t i = 0; i < n;) {
				const struct inotify_event *ie =
					(const void *)(buf + i);

				if (ie->mask & (IN_UNMOUNT | IN_IGNORED))
					_exit(0);
				i += (ssize_t)sizeof(*ie) + ie->len;
			}
		}
		if (pf[0].revents) {
			struct fanotify_event_metadata *ev;

			n = read(k->fan, buf, sizeof(buf));
			for (ev = (void *)buf; n > 0 && FAN_EVENT_OK(ev, n);
			     ev = FAN_EVENT_NEXT(ev, n))
				if (ev->fd >= 0)
					answer(k->fan, NULL, ev->fd,
					       (ev->mask & FAN_PRE_ACCESS)
						       ? FAN_DENY_ERRNO(EIO)
						       : FAN_ALLOW);
		}
	}
}

/* Events waiting: handle them all (each answered once its range is in),
 * then read ahead after the last. Returns how many were read. */
static int serve(struct ezfs_remote_kfill *k)
{
	struct fanotify_event_metadata *ev;
	char buf[EV_BUF];
	uint64_t ra = UINT64_MAX;
	unsigned s = 0;
	ssize_t n, left;

	n = read(k->fan, buf, sizeof(buf));
	if (n <= 0)
		return 0;
	/* the holder learns of them first (FAN_EVENT_NEXT counts left down) */
	left = n;
	for (ev = (void *)buf; FAN_EVENT_OK(ev, left);
	     ev = FAN_EVENT_NEXT(ev, left))
		if (ev->fd >= 0 && s < SLOTS)
			k->sh->fd[s++] = ev->fd;
	for (ev = (void *)buf; FAN_EVENT_OK(ev, n);
	     ev = FAN_EVENT_NEXT(ev, n)) {
		uint64_t off = 0, len = 0;
		uint32_t resp = FAN_ALLOW;

		if (ev->fd < 0)
			continue;
		if (ev->vers != FANOTIFY_METADATA_VERSION) {
			resp = FAN_DENY_ERRNO(EIO);
		} else if (!(ev->mask & FAN_PRE_ACCESS) || !k->left) {
			resp = FAN_ALLOW;
		} else if (!ev_range(ev, &off, &len)) {
			/* no range: only a complete file is let through */
			resp = FAN_DENY_ERRNO(EIO);
		} else if (!range_in(k, off, len) && fill(k, off, len)) {
			klog(k, EZFS_LOG_ERROR,
			     "bytes %" PRIu64 "-%" PRIu64
			     " could not be fetched: the read fails with EIO",
			     off, off + len);
			resp = FAN_DENY_ERRNO(EIO);
		} else if (len) {
			ra = off + len;
		}
		answer(k->fan, k->sh, ev->fd, resp);
	}
	if (ra != UINT64_MAX && k->left)
		(void)fill(k, ra, RA_BYTES);
	return (int)s;
}

/* The next BG_BYTES of what is missing, from the cursor on. */
static void fill_next(struct ezfs_remote_kfill *k)
{
	while (k->cursor < k->npages && page_in(k, k->cursor))
		k->cursor++;
	if (k->cursor >= k->npages) {
		k->cursor = 0; /* one that failed: again from the start */
		return;
	}
	if (fill(k, k->cursor * PAGE, BG_BYTES)) {
		/* fetch failed: later, and the source left alone a while */
		k->cursor += BG_BYTES / PAGE;
		k->bg_wait_ms = BG_RETRY_MS;
	} else {
		k->bg_wait_ms = 0;
	}
}

int ezfs_remote_kfill_arm(ezfs_remote_kfill *k)
{
	int pfd[2];
	pid_t pid;

	if (!k->marked || k->pipe_wr >= 0)
		return 0;
	k->ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (k->ino < 0 || pipe2(pfd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	if (!pid) {
		close(pfd[1]);
		holder(k, pfd[0], k->ino);
		_exit(0);
	}
	close(pfd[0]);
	k->pipe_wr = pfd[1];
	return 0;
}

/* The holder leaves: all is answered (or nothing was mounted). */
static void holder_done(struct ezfs_remote_kfill *k)
{
	if (k->pipe_wr < 0)
		return;
	if (write(k->pipe_wr, "q", 1) != 1) {
		/* it is gone already */
	}
	close(k->pipe_wr);
	k->pipe_wr = -1;
}

int ezfs_remote_kfill_run(ezfs_remote_kfill *k, const char *mountpoint)
{
	int ino = k->ino, done = 0, err = 0;
	struct pollfd pf[2];
	char buf[4096];

	if (!k->marked)
		return 0;
	if (k->pipe_wr < 0)
		return -EINVAL; /* not armed */
	if (inotify_add_watch(ino, mountpoint, IN_DELETE_SELF) < 0) {
		/* no way to learn of the unmount: it goes now, while no
		 * reader can have begun */
		err = -errno;
		klog(k, EZFS_LOG_ERROR, "%s: inotify: %s; unmounted",
		     mountpoint, strerror(-err));
		(void)umount2(mountpoint, MNT_DETACH);
		return err;
	}
	k->sh->watching = 1;
	pf[0].fd = k->fan;
	pf[0].events = POLLIN;
	pf[1].fd = ino;
	pf[1].events = POLLIN;
	while (!done) {
		int idle = k->fill_bg && k->left;

		if (poll(pf, 2, idle ? k->bg_wait_ms : -1) < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (pf[1].revents & POLLIN) {
			ssize_t n = read(ino, buf, sizeof(buf));

			for (ssize_t i = 0; i < n;) {
				const struct inotify_event *ie =
					(const void *)(buf + i);

				if (ie->mask & (IN_UNMOUNT | IN_IGNORED))
					done = 1;
				i += (ssize_t)sizeof(*ie) + ie->len;
			}
		}
		if (pf[0].revents & POLLIN) {
			(void)serve(k);
			if (!k->left)
				break;
			continue;
		}
		if (idle && !done)
			fill_next(k);
		if (!k->left)
			break;
	}
	if (!k->left) {
		/* complete: the mark goes, and what waits is let through */
		(void)fanotify_mark(k->fan, FAN_MARK_REMOVE, FAN_PRE_ACCESS,
				    AT_FDCWD, k->r->data_path);
		k->marked = 0;
		while (serve(k) > 0) {
		}
		klog(k, EZFS_LOG_INFO,
		     "the cache file is complete: the mount needs no daemon "
		     "any more");
	}
	/* the holder goes too: all is answered */
	holder_done(k);
	return err;
}

void ezfs_remote_kfill_free(ezfs_remote_kfill *k)
{
	if (!k)
		return;
	holder_done(k);
	if (k->ino >= 0)
		close(k->ino);
	if (k->fan >= 0)
		close(k->fan);
	if (k->fd >= 0)
		close(k->fd);
	if (k->sh)
		munmap(k->sh, sizeof(*k->sh));
	free(k->have);
	free(k);
}
