/* SPDX-License-Identifier: MIT */
/* replay.c - main() for fuzz targets built without libFuzzer: replay inputs. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned long nrun;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Run one file; 0 or -1 if it could not be read. */
static int run_file(const char *path)
{
	uint8_t *buf = NULL;
	struct stat st;
	double t0;
	size_t len;
	FILE *f;

	f = fopen(path, "rb");
	if (!f || fstat(fileno(f), &st)) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		if (f)
			fclose(f);
		return -1;
	}
	len = st.st_size;
	/* exact size (at least 1 byte) so that ASan sees any overrun */
	buf = malloc(len ? len : 1);
	if (!buf || fread(buf, 1, len, f) != len) {
		fprintf(stderr, "replay: %s: read failed\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	if (getenv("REPLAY_VERBOSE"))
		fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
	t0 = now();
	LLVMFuzzerTestOneInput(buf, len);
	if (now() - t0 > 5.0)
		fprintf(stderr, "replay: %s: slow (%.1f s)\n", path,
			now() - t0);
	free(buf);
	nrun++;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Run every regular file of a directory, in name order. */
static int run_dir(const char *dir)
{
	char **names = NULL, path[4096];
	size_t n = 0, cap = 0, i;
	struct dirent *de;
	struct stat st;
	int ret = 0;
	DIR *d;

	d = opendir(dir);
	if (!d) {
		fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **nn;

			cap = cap ? 2 * cap : 64;
			nn = realloc(names, cap * sizeof(*names));
			if (!nn) {
				ret = -1;
				break;
			}
			names = nn;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			ret = -1;
			break;
		}
		n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (!stat(path, &st) && S_ISREG(st.st_mode) && run_file(path))
			ret = -1;
		free(names[i]);
	}
	free(names);
	return ret;
}

int main(int argc, char **argv)
{
	struct stat st;
	int i, ret = 0;

	if (argc < 2) {
		fprintf(stderr,
			"usage: %s FILE|DIR...\n"
			"Runs the fuzz target on each file, or on every file "
			"of each directory.\n",
			argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++) {
		if (argv[i][0] == '-') /* libFuzzer flags: ignore */
			continue;
		if (stat(argv[i], &st)) {
			fprintf(stderr, "replay: %s: %s\n", argv[i],
				strerror(errno));
			ret = 1;
		} else if (S_ISDIR(st.st_mode) ? run_dir(argv[i])
					       : run_file(argv[i])) {
			ret = 1;
		}
	}
	printf("replay: %lu inputs run\n", nrun);
	return ret;
}
