/* SPDX-License-Identifier: MIT */
/*
 * push.c - ezfs push IMAGE oci://HOST[:PORT]/REPO:TAG: the image as the
 * layer of an OCI artifact (media type application/vnd.erofs.layer.v1),
 * so that ezfs and containerd's EROFS snapshotter read it from there.
 */
#include <errno.h>
#include <getopt.h>
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
		"usage: ezfs push [--insecure] IMAGE "
		"oci://HOST[:PORT]/REPO:TAG\n"
		"Upload IMAGE to a registry as the one layer (media type\n"
		"application/vnd.erofs.layer.v1) of an OCI artifact manifest "
		"tagged TAG,\n"
		"and print the layer's and the manifest's digests. "
		"Credentials: the docker "
		"config's auths\n"
		"(~/.docker/config.json) or a Bearer token from the "
		"registry's challenge.\n"
		"  --insecure    plain http (always for 127.0.0.1 and "
		"localhost)\n");
}

#ifdef EZFS_HAVE_REMOTE
static void push_log(void *arg, int level, const char *msg)
{
	if (level == EZFS_LOG_ERROR)
		fprintf(stderr, "ezfs push: %s: %s\n", (const char *)arg, msg);
}
#endif

int cmd_push(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "insecure", no_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	int c, insecure = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			push_usage(stdout);
			return 0;
		case 'k':
			insecure = 1;
			break;
		default:
			return cli_usage_error("push", "unknown option '%s'",
					       argv[optind - 1]);
		}
	}
	if (argc - optind != 2)
		return cli_usage_error("push", "need IMAGE and "
					       "oci://HOST[:PORT]/REPO:TAG");
#ifdef EZFS_HAVE_REMOTE
	{
		struct ezfs_remote_params p;
		char digest[72], manifest[72];
		int err;

		ezfs_remote_params_init(&p);
		p.insecure = insecure;
		p.log = push_log;
		p.log_arg = argv[optind + 1];
		err = ezfs_remote_push(argv[optind], argv[optind + 1], &p,
				       digest, manifest);
		if (err)
			return 1;
		printf("layer %s\nmanifest %s\n", digest, manifest);
		return 0;
	}
#else
	(void)insecure;
	fprintf(stderr, "ezfs push: this ezfs was built without libcurl\n");
	return 1;
#endif
}
