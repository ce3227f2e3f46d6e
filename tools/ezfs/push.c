/* SPDX-License-Identifier: MIT */
/*
 * push.c - ezfs push IMAGE oci://HOST[:PORT]/REPO[:TAG]: the options,
 * progress, Ctrl-C and the exit status of ezfs_remote_push (lib/remote),
 * which checks the image, uploads it as the layer of an OCI artifact
 * (media type application/vnd.erofs.layer.v1) and tags the manifest.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ezfs/ezfs.h"
#include "common.h"
#ifdef EZFS_HAVE_REMOTE
#include "ezfs/remote.h"
#endif

int cmd_push(int argc, char **argv);

static void push_usage(FILE *f)
{
	fprintf(f,
		"usage: ezfs push [-q] [--insecure] [--offset N] "
		"[--media-type TYPE] [--chunk-index[=layer|embedded]] IMAGE\n"
		"                 oci://HOST[:PORT]/REPO[:TAG]\n"
		"Upload IMAGE to a registry as the one layer (media type\n"
		"application/vnd.erofs.layer.v1) of an OCI image manifest "
		"tagged TAG\n"
		"(default latest), and print the layer's and the manifest's "
		"digests.\n"
		"An image with a dm-verity tree after its filesystem (ezfs "
		"mkfs --verity)\n"
		"has it checked whole first, and the EROFS image spec's "
		"annotations\n"
		"org.erofs.dmverity.hash_offset, .root_digest and .block_size "
		"on its\n"
		"layer: a reader of REPO@MANIFEST then checks every block "
		"against that\n"
		"root as it fetches it (docs/verity.md).\n"
		"IMAGE is checked first: what ezfs cannot read (a tar "
		"archive...) is\n"
		"refused before anything is sent; an Android sparse image "
		"goes up expanded.\n"
		"Credentials: the docker config's auths "
		"(~/.docker/config.json) or a\n"
		"Bearer token from the registry's challenge. Ctrl-C deletes "
		"the upload\n"
		"session begun.\n"
		"  -q, --quiet   no progress\n"
		"  --insecure    plain http (always for 127.0.0.1 and "
		"localhost)\n"
		"  --offset N    the image starts at byte N of the file; the "
		"layer is what\n"
		"                follows\n"
		"  --media-type TYPE  application/vnd.erofs.layer.v1 "
		"(containerd's, the\n"
		"                default) or application/vnd.erofs (the "
		"EROFS image spec's)\n"
		"  --chunk-index[=layer|embedded]  also publish the spec's "
		"chunk index (the\n"
		"                SHA-256 of each 64 KiB of the layer) as the "
		"next layer, or\n"
		"                appended to the layer's blob (embedded, "
		"announced by\n"
		"                org.erofs.chunk-index.range): readers check "
		"every block\n"
		"                they fetch, also without a dm-verity tree\n"
		"  --prefetch FILE\n"
		"                publish the trace FILE (ezfs mount "
		"--record-trace) with the\n"
		"                layer: a mount's fill fetches its ranges "
		"first\n");
}

#ifdef EZFS_HAVE_REMOTE
static volatile sig_atomic_t push_sig;

static void on_signal(int sig)
{
	push_sig = sig;
}

struct push_ui {
	struct cli_progress prog;
	const char *what;
	int quiet;
};

static int push_progress(void *arg, const char *what, uint64_t done,
			 uint64_t total)
{
	struct push_ui *ui = arg;

	if (push_sig)
		return 1;
	if (ui->what != what) {
		if (ui->what)
			cli_progress_clear(&ui->prog);
		cli_progress_init(&ui->prog, ui->quiet, what, "layer", total,
				  0);
		ui->what = what;
	}
	cli_progress_update(&ui->prog, done, 1, 0);
	return 0;
}

static void push_log(void *arg, int level, const char *msg)
{
	if (level == EZFS_LOG_ERROR)
		fprintf(stderr, "ezfs push: %s: %s\n", (const char *)arg, msg);
}
#endif

int cmd_push(int argc, char **argv)
{
	enum { OPT_OFFSET = 0x100, OPT_MEDIA_TYPE, OPT_CHUNK_INDEX, OPT_PF };
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "insecure", no_argument, NULL, 'k' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "offset", required_argument, NULL, OPT_OFFSET },
		{ "media-type", required_argument, NULL, OPT_MEDIA_TYPE },
		{ "chunk-index", optional_argument, NULL, OPT_CHUNK_INDEX },
		{ "prefetch", required_argument, NULL, OPT_PF },
		{ NULL, 0, NULL, 0 },
	};
	const char *mt = NULL, *pf = NULL;
	int c, insecure = 0, quiet = 0, chunk_index = 0;
	uint64_t offset = 0;
	char *end;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hq", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			push_usage(stdout);
			return 0;
		case 'k':
			insecure = 1;
			break;
		case 'q':
			quiet = 1;
			break;
		case OPT_OFFSET:
			errno = 0;
			offset = strtoull(optarg, &end, 0);
			if (errno || end == optarg || *end || *optarg == '-')
				return cli_usage_error("push",
						       "invalid --offset '%s'",
						       optarg);
			break;
		case OPT_MEDIA_TYPE:
			if (strcmp(optarg, "application/vnd.erofs.layer.v1") &&
			    strcmp(optarg, "application/vnd.erofs"))
				return cli_usage_error(
					"push",
					"--media-type '%s': "
					"application/vnd.erofs.layer.v1 or "
					"application/vnd.erofs (a +zstd layer "
					"is not written)",
					optarg);
			mt = optarg;
			break;
		case OPT_CHUNK_INDEX:
			if (!optarg || !strcmp(optarg, "layer")) {
				chunk_index = EZFS_CHUNK_INDEX_LAYER;
			} else if (!strcmp(optarg, "embedded")) {
				chunk_index = EZFS_CHUNK_INDEX_EMBEDDED;
			} else {
				fprintf(stderr,
					"ezfs push: --chunk-index=%s: layer "
					"or embedded\n",
					optarg);
				return 2;
			}
			break;
		case OPT_PF:
			pf = optarg;
			break;
		default:
			return cli_opt_error("push", c, argv);
		}
	}
	if (argc - optind != 2)
		return cli_usage_error("push", "need IMAGE and "
					       "oci://HOST[:PORT]/REPO[:TAG]");
#ifdef EZFS_HAVE_REMOTE
	{
		struct ezfs_remote_params p;
		struct sigaction sa, old_int, old_term;
		struct push_ui ui;
		char digest[72], manifest[72];
		int err;

		memset(&ui, 0, sizeof(ui));
		ui.quiet = quiet;
		ezfs_remote_params_init(&p);
		p.insecure = insecure;
		p.offset = offset;
		p.media_type = mt;
		p.chunk_index = chunk_index;
		p.prefetch_file = pf;
		p.log = push_log;
		p.log_arg = argv[optind + 1];
		p.progress = push_progress;
		p.progress_arg = &ui;
		/* Ctrl-C stops the upload between two writes, so that the
		 * library can delete the session */
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, &old_int);
		sigaction(SIGTERM, &sa, &old_term);
		err = ezfs_remote_push(argv[optind], argv[optind + 1], &p,
				       digest, manifest);
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		if (ui.what)
			cli_progress_clear(&ui.prog);
		if (err == -ECANCELED && push_sig) {
			fprintf(stderr, "ezfs push: %s: interrupted\n",
				argv[optind + 1]);
			fflush(stdout);
			signal((int)push_sig, SIG_DFL);
			raise((int)push_sig);
			return 130;
		}
		if (err)
			return 1;
		printf("layer %s\nmanifest %s\n", digest, manifest);
		return 0;
	}
#else
	(void)insecure;
	(void)mt;
	(void)chunk_index;
	(void)pf;
	(void)quiet;
	(void)offset;
	fprintf(stderr, "ezfs push: this ezfs was built without libcurl\n");
	return 1;
#endif
}
