# SPDX-License-Identifier: MIT
# interop.remote-verity (tests/interop/remote-verity.sh): an image of ezfs
# mkfs --verity (veritysetup verify) pushed to docker-registry with the
# EROFS image spec's dm-verity annotations in both media types; read by
# manifest digest, a byte flipped in the registry's copy (data, then the
# tree) refused by cat, fsck and the FUSE mount and kept out of the cache;
# http:// with --root-hash; push --chunk-index (the spec's chunk index,
# checked per fetched chunk); no tree: one warning, --require-verified
# refuses. Skips without libcurl, veritysetup or docker-registry.
ezfs_script_test(interop.remote-verity interop/remote-verity.sh
                 LABELS interop remote TIMEOUT 300)
