# SPDX-License-Identifier: MIT
# Wrapper around CMake + Ninja so that the README's commands stay short.
#
#   make / make build   build build/ (warnings are errors); installs nothing
#   make deps           install the missing Debian packages (scripts/deps.sh)
#   make demo           deps, build, then show ezfs on a small sample image
#   make check          deps, then every test: build/ with ctest, then
#                       build-asan/ (ASan+UBSan), then the threaded tests
#                       in build-tsan/ (ThreadSanitizer)
#   make test           ctest in build/ only
#   make asan           build build-asan/ with -DEZFS_SANITIZE=ON
#   make tsan           build build-tsan/ (ThreadSanitizer), run the threaded tests
#   make install        cmake --install build (PREFIX=/usr/local)
#   make install-compat install, then the links mkfs.erofs, fsck.erofs and
#                       dump.erofs -> ezfs in $(PREFIX)/sbin (they shadow
#                       erofs-utils' tools earlier in PATH)
#   make fuzz           tests/fuzz/run.sh (clang/libFuzzer), when it exists
#   make deb            the Debian packages of the committed tree (HEAD) in
#                       build-pkg/ (dpkg-buildpackage -us -uc -b)
#   make clean          remove build/, build-asan/ and build-fuzz-clang/
#
# Variables: PREFIX, JOBS (ctest parallelism, default: nproc), CMAKE_ARGS.

PREFIX ?= /usr/local
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=
BUILD := build
ASAN_BUILD := build-asan
TSAN_BUILD := build-tsan
# The tests whose code runs on several threads: extract -j and fsck -j over
# every fixture, the engines' dispatch modes, the mount under 8 readers,
# cat/extract/fsck of large files decoded ahead (dispatch-read).
TSAN_TESTS := fixture\.|interop\.engines|interop\.engine-async|unit\.engine|interop\.mount-stress|interop\.cli-edges|interop\.dispatch-read|interop\.remote|unit\.remote
CTEST := ctest --output-on-failure --timeout 1800 -j$(JOBS) -O ctest.log

.PHONY: all build deps tools-present configure demo check test asan asan-test tsan install install-compat fuzz deb clean

all: build

deps:
	@scripts/deps.sh core

# Plain `make` installs nothing; it names what is missing instead.
tools-present:
	@for t in cmake ninja pkg-config cc; do \
		command -v $$t >/dev/null || { \
			echo "make: '$$t' is missing: 'make deps' (as root) installs what ezfs needs" >&2; \
			exit 1; }; \
	done

$(BUILD)/build.ninja: | tools-present
	cmake -S . -B $(BUILD) -G Ninja -DEZFS_WERROR=ON $(CMAKE_ARGS)

$(TSAN_BUILD)/build.ninja: | tools-present
	cmake -S . -B $(TSAN_BUILD) -G Ninja -DEZFS_WERROR=ON -DEZFS_TSAN=ON \
		-DCMAKE_BUILD_TYPE=Debug $(CMAKE_ARGS)

$(ASAN_BUILD)/build.ninja: | tools-present
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DEZFS_WERROR=ON -DEZFS_SANITIZE=ON \
		-DCMAKE_BUILD_TYPE=Debug $(CMAKE_ARGS)

build: $(BUILD)/build.ninja
	ninja -C $(BUILD)

asan: $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD)

demo: deps
	@$(MAKE) --no-print-directory build
	@sample/demo.sh $(BUILD)/tools/ezfs/ezfs

# Both runs happen even when the first fails; the exit status says if any did.
check: deps
	@$(MAKE) --no-print-directory build
	@rc=0; rm -f $(BUILD)/ctest.log $(ASAN_BUILD)/ctest.log; \
	echo "== ctest: $(BUILD)/"; \
	(cd $(BUILD) && $(CTEST)) || rc=1; \
	tests/skips.sh $(BUILD); \
	$(MAKE) --no-print-directory asan-test || rc=1; \
	echo "== ctest: $(TSAN_BUILD)/ (ThreadSanitizer, the threaded tests)"; \
	rm -f $(TSAN_BUILD)/ctest.log; \
	$(MAKE) --no-print-directory tsan || rc=1; \
	echo "== make check summary"; \
	for d in $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD); do \
		printf '  %-12s %s\n' "$$d/" "$$(grep -h 'tests passed' $$d/ctest.log 2>/dev/null || echo 'did not run')"; \
	done; \
	if [ $$rc = 0 ]; then echo "make check: all passed"; else echo "make check: FAILED"; fi; \
	exit $$rc

# ThreadSanitizer over the threaded tests; a report fails the test.
tsan: $(TSAN_BUILD)/build.ninja
	ninja -C $(TSAN_BUILD)
	cd $(TSAN_BUILD) && ctest --output-on-failure --timeout 1800 -j$(JOBS) \
		-O ctest.log -R '$(TSAN_TESTS)'

test: build
	cd $(BUILD) && $(CTEST)

asan-test: asan
	@rc=0; \
	echo "== ctest: $(ASAN_BUILD)/ (ASan+UBSan)"; \
	(cd $(ASAN_BUILD) && $(CTEST)) || rc=1; \
	tests/skips.sh $(ASAN_BUILD); \
	exit $$rc

# The prefix is set at configure time too: ezfs.pc records it.
install: $(BUILD)/build.ninja
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX="$(PREFIX)" >/dev/null
	ninja -C $(BUILD)
	cmake --install $(BUILD)
	@if [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi

# ezfs under erofs-utils' names; plain `make install` leaves them out so
# that Debian's erofs-utils stays what PATH finds.
COMPAT_NAMES := mkfs.erofs fsck.erofs dump.erofs
install-compat: install
	mkdir -p "$(DESTDIR)$(PREFIX)/sbin"
	@for n in $(COMPAT_NAMES); do \
		echo "ln -sfn ../bin/ezfs $(DESTDIR)$(PREFIX)/sbin/$$n"; \
		ln -sfn ../bin/ezfs "$(DESTDIR)$(PREFIX)/sbin/$$n" || exit 1; \
	done

fuzz:
	@if [ -x tests/fuzz/run.sh ] || [ -f tests/fuzz/run.sh ]; then \
		scripts/deps.sh core fuzz && bash tests/fuzz/run.sh; \
	else \
		echo "make fuzz: tests/fuzz/run.sh does not exist yet"; \
	fi

# The .debs of HEAD, built in a copy (git archive) so that the source tree
# and its build folders stay as they are.
DEB_OUT := build-pkg
deb: deps
	rm -rf $(DEB_OUT)
	mkdir -p $(DEB_OUT)/ezfs
	git archive HEAD | tar -x -C $(DEB_OUT)/ezfs
	cd $(DEB_OUT)/ezfs && dpkg-checkbuilddeps && \
		DEB_BUILD_OPTIONS="parallel=$(JOBS) $(DEB_BUILD_OPTIONS)" dpkg-buildpackage -us -uc -b
	@ls -1 $(DEB_OUT)/*.deb

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) build-fuzz-clang
