# SPDX-License-Identifier: MIT
# Wrapper around CMake + Ninja so that the README's commands stay short.
#
#   make / make build   install missing packages, build build/ (warnings are errors)
#   make demo           build, then show ezfs on a small sample image
#   make check          every test: build/ with ctest, then build-asan/ (ASan+UBSan)
#   make test           ctest in build/ only
#   make asan           build build-asan/ with -DEZFS_SANITIZE=ON
#   make install        cmake --install build (PREFIX=/usr/local)
#   make fuzz           tests/fuzz/run.sh (clang/libFuzzer), when it exists
#   make clean          remove build/, build-asan/ and build-fuzz-clang/
#
# Variables: PREFIX, JOBS (ctest parallelism, default: nproc), CMAKE_ARGS.

PREFIX ?= /usr/local
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=
BUILD := build
ASAN_BUILD := build-asan
CTEST := ctest --output-on-failure --timeout 1800 -j$(JOBS) -O ctest.log

.PHONY: all build deps configure demo check test asan asan-test install fuzz clean

all: build

deps:
	@scripts/deps.sh core

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DEZFS_WERROR=ON $(CMAKE_ARGS)

$(ASAN_BUILD)/build.ninja:
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DEZFS_WERROR=ON -DEZFS_SANITIZE=ON \
		-DCMAKE_BUILD_TYPE=Debug $(CMAKE_ARGS)

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

asan: deps $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD)

demo: build
	@sample/demo.sh $(BUILD)/tools/ezfs/ezfs

# Both runs happen even when the first fails; the exit status says if any did.
check: build
	@rc=0; rm -f $(BUILD)/ctest.log $(ASAN_BUILD)/ctest.log; \
	echo "== ctest: $(BUILD)/"; \
	(cd $(BUILD) && $(CTEST)) || rc=1; \
	tests/skips.sh $(BUILD); \
	$(MAKE) --no-print-directory asan-test || rc=1; \
	echo "== make check summary"; \
	for d in $(BUILD) $(ASAN_BUILD); do \
		printf '  %-12s %s\n' "$$d/" "$$(grep -h 'tests passed' $$d/ctest.log 2>/dev/null || echo 'did not run')"; \
	done; \
	if [ $$rc = 0 ]; then echo "make check: all passed"; else echo "make check: FAILED"; fi; \
	exit $$rc

test: build
	cd $(BUILD) && $(CTEST)

asan-test: asan
	@rc=0; \
	echo "== ctest: $(ASAN_BUILD)/ (ASan+UBSan)"; \
	(cd $(ASAN_BUILD) && $(CTEST)) || rc=1; \
	tests/skips.sh $(ASAN_BUILD); \
	exit $$rc

# The prefix is set at configure time too: ezfs.pc records it.
install: deps $(BUILD)/build.ninja
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX="$(PREFIX)" >/dev/null
	ninja -C $(BUILD)
	cmake --install $(BUILD)
	@if [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi

fuzz:
	@if [ -x tests/fuzz/run.sh ] || [ -f tests/fuzz/run.sh ]; then \
		scripts/deps.sh core fuzz && bash tests/fuzz/run.sh; \
	else \
		echo "make fuzz: tests/fuzz/run.sh does not exist yet"; \
	fi

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz-clang
