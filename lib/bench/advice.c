/* SPDX-License-Identifier: MIT */
/*
 * bench/advice.c - the advisor's output: the table, the front, the pick as
 * an ezfs mkfs command with its reasons, and the JSON of all of it. The
 * reasons are stated from the table's own numbers.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/advise.h"

void ezi_adv_label(const struct adv_cand *c, char *buf, size_t size)
{
	char cl[16];

	ezi_bench_alg_label(&c->a, buf, size);
	snprintf(buf + strlen(buf), size - strlen(buf), " %s",
		 ezi_bench_fmt_cluster(c->cluster, cl, sizeof(cl)));
}

/* s as one shell word into buf: as it is when nothing in it is special to
 * the shell, else in single quotes; "./" before a leading '-'. */
static void shell_word(const char *s, char *buf, size_t size)
{
	const char *p;
	size_t o = 0;
	int plain = *s != '\0';

	for (p = s; *p && plain; p++)
		plain = isalnum((unsigned char)*p) || strchr("_./,:+@%=-", *p);
#define PUT(ch)                                                                \
	do {                                                                   \
		if (o + 1 < size)                                              \
			buf[o++] = (ch);                                       \
	} while (0)
	if (*s == '-') {
		PUT('.');
		PUT('/');
	}
	if (!plain)
		PUT('\'');
	for (p = s; *p; p++) {
		if (!plain && *p == '\'') {
			PUT('\'');
			PUT('\\');
			PUT('\'');
			PUT('\'');
		} else {
			PUT(*p);
		}
	}
	if (!plain)
		PUT('\'');
#undef PUT
	buf[o] = '\0';
}

/*
 * The pick as a command to paste: ezfs mkfs -z ALG,LEVEL -C BYTES IMAGE
 * SOURCE. IMAGE is the last name of source plus ".erofs" in the current
 * directory (OUT.erofs where it has none); SOURCE as given. ezfs mkfs
 * takes a directory: for a file source DIR is left for the user to fill.
 * Returns whether SOURCE is a directory.
 */
int ezi_adv_command(const struct adv_cand *c, const char *source, char *cmd,
		    size_t size)
{
	char name[256], img[272], w1[600], w2[8200];
	const char *base;
	size_t len = strlen(source);
	struct stat sb;
	int is_dir = !stat(source, &sb) && S_ISDIR(sb.st_mode);

	while (len > 1 && source[len - 1] == '/')
		len--;
	base = memrchr(source, '/', len);
	base = base ? base + 1 : source;
	len -= (size_t)(base - source);
	snprintf(name, sizeof(name), "%.*s", (int)len, base);
	if (!*name || !strcmp(name, ".") || !strcmp(name, "..") ||
	    !strcmp(name, "/") || len >= sizeof(name))
		snprintf(name, sizeof(name), "OUT");
	snprintf(img, sizeof(img), "%s.erofs", name);
	shell_word(img, w1, sizeof(w1));
	if (is_dir)
		shell_word(source, w2, sizeof(w2));
	else
		snprintf(w2, sizeof(w2), "DIR");
	if (c->a.level >= 0)
		snprintf(cmd, size, "ezfs mkfs -z %s,%d -C %u %s %s", c->a.name,
			 c->a.level, (unsigned)c->cluster, w1, w2);
	else
		snprintf(cmd, size, "ezfs mkfs -z %s -C %u %s %s", c->a.name,
			 (unsigned)c->cluster, w1, w2);
	return is_dir;
}

static const char *const axis_names[3] = { "ratio", "sequential time",
					   "random 4K time" };

static int goal_axis(const char *goal)
{
	return !strcmp(goal, "size")	 ? 0
	       : !strcmp(goal, "seq")	 ? 1
	       : !strcmp(goal, "random") ? 2
					 : -1;
}

/* ---- the verdict: the pick's largest term, and what the table says
 * about it ---- */

struct verdict {
	const char *dominant;  /* storage, requests, decode */
	double req_lo, req_hi; /* the pick's setting: requests term (s) at */
	uint32_t cl_lo, cl_hi; /* its smallest and largest pcluster */
	char text[400];
};

static void verdict(const struct ezi_bench_advice *a, struct verdict *v)
{
	const struct adv_cand *p = &a->c[a->pick];
	char l1[16], l2[16];
	size_t i;

	memset(v, 0, sizeof(*v));
	v->req_lo = v->req_hi = p->t_requests;
	v->cl_lo = v->cl_hi = p->cluster;
	for (i = 0; i < a->n; i++) {
		const struct adv_cand *x = &a->c[i];

		if (strcmp(x->a.name, p->a.name) || x->a.level != p->a.level)
			continue;
		if (x->cluster < v->cl_lo)
			v->cl_lo = x->cluster, v->req_lo = x->t_requests;
		if (x->cluster > v->cl_hi)
			v->cl_hi = x->cluster, v->req_hi = x->t_requests;
	}
	ezi_bench_fmt_cluster(v->cl_lo, l1, sizeof(l1));
	ezi_bench_fmt_cluster(v->cl_hi, l2, sizeof(l2));
	if (p->t_storage >= p->t_requests && p->t_storage >= p->t_decode) {
		v->dominant = "storage";
		snprintf(v->text, sizeof(v->text),
			 "moving the image's bytes: a smaller image reads "
			 "faster here");
	} else if (p->t_requests >= p->t_decode) {
		v->dominant = "requests";
		if (v->cl_lo == v->cl_hi)
			snprintf(v->text, sizeof(v->text),
				 "the storage's latency per request (%.1f "
				 "round trips per MiB)",
				 p->seq_rounds);
		else if (v->req_hi * 1.25 < v->req_lo)
			snprintf(v->text, sizeof(v->text),
				 "the storage's latency per request: larger "
				 "pclusters need fewer requests here (%.2f ms "
				 "per MiB at %s, %.2f at %s)",
				 v->req_lo * 1e3, l1, v->req_hi * 1e3, l2);
		else
			snprintf(v->text, sizeof(v->text),
				 "the storage's latency per request, which "
				 "the pcluster size changes little here "
				 "(%.2f ms per MiB at %s, %.2f at %s): its "
				 "reader's requests follow the readahead "
				 "windows and the files, not the pclusters",
				 v->req_lo * 1e3, l1, v->req_hi * 1e3, l2);
	} else {
		v->dominant = "decode";
		snprintf(v->text, sizeof(v->text),
			 "reading through the library (decoding and copying): "
			 "a faster decoder reads faster here");
	}
}

/* ---- the terminal table ---- */

static void print_table(FILE *f, const struct ezi_bench_advice *a,
			const char *goal)
{
	int g = goal_axis(goal);
	char lab[40], dec[16];
	size_t i;

	fprintf(f,
		"\nper MiB of file data: seq = storage + requests + read "
		"(%s reader); rand4K = one cold 4 KiB read\n",
		ezi_adv_reader_name(a->st.reader));
	if (g < 0)
		fprintf(f,
			"score (goal balanced): the mean over ratio, seq and "
			"rand4K of log(x / best) / log(worst / best),\n"
			"0 = the best on every axis; lowest wins\n\n");
	else
		fprintf(f,
			"score (goal %s): %s / the best, 1 within %.0f%% of "
			"it (=), plus %.2f x the balanced score of the other "
			"two axes; lowest wins\n\n",
			goal, axis_names[g], ADV_GOAL_TIE * 100, ADV_GOAL_TIE);
	fprintf(f, "%-15s %7s %9s %9s %8s %8s %8s %9s %10s %6s\n", "candidate",
		"ratio", "decode", "mkfs", "storage", "requests", "read", "seq",
		"rand4K", "score");
	fprintf(f, "%-15s %7s %9s %9s %8s %8s %8s %9s %10s %6s\n", "", "",
		"MiB/s", "MB/s", "ms", "ms", "ms", "MiB/s", "us", "");
	for (i = 0; i < a->n; i++) {
		const struct adv_cand *c = &a->c[i];

		ezi_adv_label(c, lab, sizeof(lab));
		if (c->decode > 0)
			snprintf(dec, sizeof(dec), "%.1f", c->decode);
		else
			snprintf(dec, sizeof(dec), "-");
		fprintf(f,
			"%-15s %7.4f %9s %9.1f %8.2f %8.2f %8.2f %9.1f %10.1f "
			"%6.3f %s%s%s\n",
			lab, c->ratio, dec, c->mkfs, c->t_storage * 1e3,
			c->t_requests * 1e3, c->t_decode * 1e3, 1 / c->seq_s,
			c->rand_s * 1e6, c->score, c->front ? "F" : " ",
			c->tied ? "=" : " ", i == a->pick ? " <-" : "");
	}
	fprintf(f,
		"(decode: MiB/s decoded, pclusters stored raw left out, - "
		"= none; read: decoding and copying; F: on the Pareto "
		"front of ratio, seq and rand4K%s)\n",
		g < 0 ? "" : "; =: tied on the goal");
}

/* What each front member gives up against the best of each axis. */
static void print_front(FILE *f, const struct ezi_bench_advice *a)
{
	double best[3];
	char lab[40];
	size_t i;

	ezi_adv_best(a->c, a->n, best);
	fprintf(f, "\nthe front: what each choice gives up against the best "
		   "of each axis\n");
	for (i = 0; i < a->n; i++) {
		const struct adv_cand *c = &a->c[i];

		if (!c->front)
			continue;
		ezi_adv_label(c, lab, sizeof(lab));
		fprintf(f,
			"  %-15s size +%.1f%%, seq time +%.1f%%, rand4K time "
			"+%.1f%%\n",
			lab, (c->ratio / best[0] - 1) * 100,
			(c->seq_s / best[1] - 1) * 100,
			(c->rand_s / best[2] - 1) * 100);
	}
}

/* Why: the pick's figures and its largest sequential term, stated from
 * the same numbers the score used. */
static void print_reasons(FILE *f, const struct ezi_bench_advice *a,
			  const char *goal)
{
	const struct adv_cand *p = &a->c[a->pick];
	int g = goal_axis(goal);
	double best[3], worst = 0;
	struct verdict v;
	size_t i, ntied = 0;

	ezi_adv_best(a->c, a->n, best);
	verdict(a, &v);
	fprintf(f, "  because: goal %s, the lowest score of the table (%.3f)\n",
		goal, p->score);
	for (i = 0; g >= 0 && i < a->n; i++) {
		double x = g == 0   ? a->c[i].ratio
			   : g == 1 ? a->c[i].seq_s
				    : a->c[i].rand_s;

		ntied += a->c[i].tied;
		if (a->c[i].tied && x / best[g] > worst)
			worst = x / best[g];
	}
	if (ntied > 1)
		fprintf(f,
			"  %zu candidates tie on the %s (within %.1f%% of the "
			"best): among them the other two axes decide\n",
			ntied, axis_names[g], (worst - 1) * 100);
	fprintf(f,
		"  ratio %.4f (best %.4f), sequential %.1f MiB/s (best %.1f), "
		"random 4K %.0f us (best %.0f)\n",
		p->ratio, best[0], 1 / p->seq_s, 1 / best[1], p->rand_s * 1e6,
		best[2] * 1e6);
	fprintf(f,
		"  its sequential read is %.2f ms per MiB: %.2f storage, %.2f "
		"requests, %.2f read; most of it is %s\n",
		p->seq_s * 1e3, p->t_storage * 1e3, p->t_requests * 1e3,
		p->t_decode * 1e3, v.text);
}

int ezi_bench_advice_table(const ezfs_bench *b, FILE *f)
{
	const struct ezi_bench_advice *a = b->adv;

	if (!a || !a->n)
		return -ENOENT;
	print_table(f, a, b->p.goal);
	print_front(f, a);
	fprintf(f, "\nrecommended for goal '%s': %s\n", b->p.goal, a->cmd);
	if (!a->is_dir)
		fprintf(f, "  (SOURCE is a file; ezfs mkfs takes a directory: "
			   "DIR = the directory to put in the image)\n");
	print_reasons(f, a, b->p.goal);
	return fflush(f) ? -errno : 0;
}

/* ---- JSON ---- */

static void json_cand(FILE *f, const struct adv_cand *c, int pick)
{
	fprintf(f, "{\"alg\": ");
	ezi_bench_json_str(f, c->a.name);
	fprintf(f,
		", \"level\": %d, \"cluster\": %u, \"ratio\": %.6f, "
		"\"decode_mib_s\": %.2f, \"decoded_share\": %.4f, "
		"\"mkfs_mb_s\": %.2f, \"read_ms_per_mib\": %.4f, "
		"\"rand_fetch_bytes\": %.0f, \"rand_decode_bytes\": %.0f, "
		"\"seq_extent_bytes\": %.0f, \"seq_rounds_per_mib\": %.4f, "
		"\"seq_storage_ms_per_mib\": %.4f, "
		"\"seq_requests_ms_per_mib\": %.4f, "
		"\"seq_decode_ms_per_mib\": %.4f, \"seq_mib_s\": %.2f, "
		"\"rand4k_us\": %.2f, \"score\": %.6f, \"front\": %s, "
		"\"tied\": %s, \"pick\": %s}",
		c->a.level, (unsigned)c->cluster, c->ratio, c->decode,
		c->dshare, c->mkfs, c->read * 1e3, c->rand_fetch,
		c->rand_decode, c->seq_extent, c->seq_rounds,
		c->t_storage * 1e3, c->t_requests * 1e3, c->t_decode * 1e3,
		1 / c->seq_s, c->rand_s * 1e6, c->score,
		c->front ? "true" : "false", c->tied ? "true" : "false",
		pick ? "true" : "false");
}

int ezi_bench_advice_json(const ezfs_bench *b, const char *path)
{
	const struct ezi_bench_advice *a = b->adv;
	struct verdict v;
	FILE *f;
	size_t i;

	if (!a || !a->n)
		return -ENOENT;
	f = ezi_bench_create(b, path);
	if (!f)
		return -EIO;
	verdict(a, &v);
	fprintf(f, "{\"mode\": \"advise\", \"goal\": ");
	ezi_bench_json_str(f, b->p.goal);
	fprintf(f,
		", \"storage\": {\"rate_mb_s\": %.3f, \"latency_us\": %.3f, "
		"\"reader\": \"%s\", \"source\": ",
		a->st.rate / 1e6, a->st.lat * 1e6,
		ezi_adv_reader_name(a->st.reader));
	ezi_bench_json_str(f, a->st.what);
	fprintf(f,
		"}, \"model\": {\"reader\": \"%s\", "
		"\"kernel_readahead_bytes\": %u, \"remote_read_bytes\": %u, "
		"\"remote_window_min_bytes\": %u, "
		"\"remote_window_max_bytes\": %u, "
		"\"remote_range_max_bytes\": %u, \"remote_in_flight\": %u, "
		"\"remote_open_round_trips\": %u, "
		"\"balanced_min_spread\": %.2f, \"goal_tie\": %.3f},\n "
		"\"candidates\": [\n",
		ezi_adv_reader_name(a->st.reader), KERNEL_RA, REMOTE_READ,
		REMOTE_WIN_MIN, REMOTE_WIN_MAX, REMOTE_RANGE, REMOTE_INFLIGHT,
		REMOTE_OPEN, ADV_MIN_SPREAD, ADV_GOAL_TIE);
	for (i = 0; i < a->n; i++) {
		fputs("  ", f);
		json_cand(f, &a->c[i], i == a->pick);
		fputs(i + 1 < a->n ? ",\n" : "\n", f);
	}
	fprintf(f, " ],\n \"pick\": ");
	json_cand(f, &a->c[a->pick], 1);
	fprintf(f,
		",\n \"verdict\": {\"dominant\": \"%s\", "
		"\"requests_ms_per_mib_smallest_cluster\": %.4f, "
		"\"requests_ms_per_mib_largest_cluster\": %.4f, \"text\": ",
		v.dominant, v.req_lo * 1e3, v.req_hi * 1e3);
	ezi_bench_json_str(f, v.text);
	fprintf(f, "},\n \"command\": ");
	ezi_bench_json_str(f, a->cmd);
	fprintf(f, "}\n");
	return ezi_bench_close(b, f, path);
}
