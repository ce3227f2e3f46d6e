/* SPDX-License-Identifier: MIT */
/* extract_util.c - what ezfs_extract and ezfs_export share: message
 * lines, nid sets, the progress totals, a directory read past damaged
 * blocks. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "extract/internal.h"

void ezi_x_vsay(ezfs_log_fn msg, void *arg, pthread_mutex_t *lock, int level,
		const char *fmt, va_list ap)
{
	char line[2048];

	if (!msg)
		return;
	vsnprintf(line, sizeof(line), fmt, ap);
	if (lock)
		pthread_mutex_lock(lock);
	msg(arg, level, line);
	if (lock)
		pthread_mutex_unlock(lock);
}

int ezi_x_nid_add(struct ezi_hash *h, uint64_t nid)
{
	if (ezi_hash_get(h, nid))
		return 0;
	return ezi_hash_add(h, nid, (void *)1) < 0 ? -ENOMEM : 1;
}

void ezi_x_nid_free(struct ezi_hash *h, int free_vals)
{
	struct ezi_hslot *s;
	size_t pos = 0;

	while (free_vals && (s = ezi_hash_each(h, &pos)))
		free(s->val);
	ezi_hash_free(h);
}

int ezi_x_is_dots(const char *name, size_t namelen)
{
	return (namelen == 1 && name[0] == '.') ||
	       (namelen == 2 && name[0] == '.' && name[1] == '.');
}

double ezi_x_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void ezi_x_totals(ezfs_image *fs, uint64_t nid, uint64_t *bytes,
		  uint64_t *entries)
{
	struct ezi_hash seen = EZI_HASH_INIT, files = EZI_HASH_INIT;
	EZI_VEC(uint64_t) todo = EZI_VEC_INIT;
	int ret;

	*bytes = *entries = 0;
	ret = ezi_x_nid_add(&seen, nid) < 0 ? -ENOMEM
					    : ezi_vec_push(&todo, nid);
	while (!ret && todo.n) {
		struct ezfs_dirent *ents = NULL;
		size_t n = 0, i;
		ezfs_inode *dir;

		ret = ezfs_inode_get(fs, todo.v[--todo.n], &dir);
		if (ret < 0)
			break;
		ret = ezfs_readdir_all(dir, &ents, &n);
		ezfs_inode_put(dir);
		for (i = 0; !ret && i < n; i++) {
			struct ezfs_stat st;

			if (ezi_x_is_dots(ents[i].name, ents[i].namelen))
				continue;
			(*entries)++;
			ret = ezfs_stat_nid(fs, ents[i].nid, &st);
			if (ret < 0)
				break;
			if (S_ISREG(st.mode) &&
			    ezi_x_nid_add(&files, ents[i].nid) > 0)
				*bytes += st.size;
			if (S_ISDIR(st.mode) &&
			    (ret = ezi_x_nid_add(&seen, ents[i].nid)) > 0)
				ret = ezi_vec_push(&todo, ents[i].nid);
			ret = ret < 0 ? ret : 0;
		}
		ezfs_dirents_free(ents, n);
	}
	ezi_vec_free(&todo);
	ezi_hash_free(&seen);
	ezi_hash_free(&files);
}

int ezi_x_readdir(ezfs_inode *dir, int tolerant, struct ezfs_dirent **out,
		  size_t *n)
{
	return tolerant ? ezfs_readdir_salvage(dir, out, n)
			: ezfs_readdir_all(dir, out, n);
}

int ezi_x_all_zero(const char *b, size_t n)
{
	static const char z[64];

	while (n >= 64) {
		if (memcmp(b, z, 64))
			return 0;
		b += 64;
		n -= 64;
	}
	return !n || !memcmp(b, z, n);
}

int ezi_x_progress_due(double *last, int force)
{
	double now = ezi_x_now();

	if (!force && now - *last < 0.1)
		return 0;
	*last = now;
	return 1;
}

int ezi_x_opts_copy(void *dst, size_t dsize, const void *src)
{
	size_t size;

	if (!src)
		return 0;
	memcpy(&size, src, sizeof(size));
	/* an older caller's struct is a prefix of ours */
	if (!size || size > dsize)
		return -EINVAL;
	memcpy(dst, src, size);
	return 0;
}
