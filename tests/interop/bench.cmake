# SPDX-License-Identifier: MIT
# ezfs bench: every mode on a tiny generated input, CSV/JSON shapes checked
# with python3, charts when gnuplot is installed. Skips (77) without python3.
ezfs_script_test(interop.bench interop/bench.sh
                 LABELS interop bench TIMEOUT 180)
