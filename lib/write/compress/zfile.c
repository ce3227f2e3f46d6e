/* SPDX-License-Identifier: MIT */
/* zfile.c - struct bzfile, one file's compressed result: freeing it. */
#include <stdlib.h>

#include "write/internal.h"

void ezi_bld_zfile_free(struct bzfile *z)
{
	if (!z)
		return;
	free(z->ext);
	free(z->plen);
	free(z->data);
	free(z->idata);
	free(z->frag);
	free(z);
}
