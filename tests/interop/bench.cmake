# SPDX-License-Identifier: MIT
# ezfs bench: every mode on a tiny generated input, CSV/JSON shapes checked
# with python3, charts when gnuplot is installed. Skips (77) without python3.
ezfs_script_test(interop.bench interop/bench.sh
                 LABELS interop bench TIMEOUT 180)
# ezfs bench's command line: SIGHUP under nohup, advise's mkfs command,
# short-run warning, empty sources, --accel/--strict-accel/--dispatch, --help
# against the getopt table. Tiny inputs, a few seconds.
ezfs_script_test(interop.bench-cli interop/bench-cli.sh
                 LABELS interop bench TIMEOUT 120)
# advise's storage comparison rests on decode rates measured in the run: no
# other test beside it (on 2 cores a neighbour halves one candidate's rate).
set_tests_properties(interop.bench-cli PROPERTIES RUN_SERIAL TRUE)
# bench advise against its first model's defects: raw pclusters counted as
# decoded, rows tied on a single goal, a verdict the table contradicts,
# and the round trips of a read over http (nginx) against the model's.
ezfs_script_test(interop.bench-advise interop/bench-advise.sh
                 LABELS interop bench TIMEOUT 240)
