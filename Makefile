# SDWebImage for Linux — one entry point for set-up, build, test and demo.
#   make demo   install what is missing, build, run the main job
#   make test   install what is missing, build, run every test (Swift + C)
# Both work on a fresh machine that has only the Swift toolchain and gcc.

SHELL := /bin/bash
BUILD ?= build
JOBS ?= $(shell nproc)
SWIFT ?= swift
# Sanitizer builds use the Swift toolchain's clang (ships compiler-rt).
SAN_CC ?= clang

# Debian packages by role. Building the library, sdimage and the example
# gallery needs only these, none of which starts a service:
BUILD_PACKAGES := cmake pkg-config libcurl4-openssl-dev libjpeg-dev libpng-dev zlib1g-dev \
                  libgif-dev libwebp-dev libavif-dev liblcms2-dev libheif-dev libjxl-dev librsvg2-dev libhiredis-dev libsdl2-dev \
                  libssl-dev
# Packaging adds these (make deb, and its test in make test): debhelper and
# lintian; systemd only for systemd-analyze (nothing is started).
DEB_PACKAGES := debhelper dpkg-dev lintian fakeroot man-db systemd rsync patchelf
# The tests and benchmarks add these: reference tools, checkers and the
# servers the tests start on loopback with their own config (nginx, Redis,
# Xvfb). They are installed with a policy-rc.d that forbids starting services,
# so apt leaves no system nginx or redis-server running (scripts/check-deps.sh).
TEST_PACKAGES := libavif-bin libturbojpeg0-dev valgrind nginx-light openssl abigail-tools \
                 redis-server libgtk-4-dev libgl1-mesa-dri xvfb xdotool imagemagick python3-pil libvips-dev \
                 liblcms2-utils colord-data libgs-common libheif-examples libjxl-tools librsvg2-bin \
                 libjpeg-turbo-progs

.PHONY: all deps deps-test deps-demo deps-deb test-swift-api api-baseline build build-c build-swift test test-c test-asan test-valgrind test-swift test-serve-sanitizers \
        test-cli test-fleet test-serve serve bench-serve bench-bytes gallery-check gallery test-abi abi-baseline docs test-docs test-tsan test-swift-tsan test-swift-asan fuzz fuzz-smoke demo demo-corpus bench bench-fetch-cli profile test-loaded release install deb test-deb clean

all: build

# Install only what is missing (apt as root, or through sudo).
deps:
	@PACKAGES="$(BUILD_PACKAGES)" bash scripts/apt-install.sh

# What the tests need besides: say so, and start no service.
deps-test: deps
	@PACKAGES="$(TEST_PACKAGES)" NO_SERVICES=1 bash scripts/apt-install.sh

# The demo serves its samples with nginx on loopback (its own config): nginx
# installed without starting the system's.
deps-demo: deps
	@PACKAGES="nginx-light" NO_SERVICES=1 bash scripts/apt-install.sh

build: build-c build-swift

# Under a lock: make test's two lanes (scripts/test-all.sh) both need it, and
# the second finds it built.
build-c: deps
	@mkdir -p $(BUILD)
	@flock $(BUILD)/.build-c.lock sh -c 'cmake -S . -B $(BUILD)/release -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSD_WERROR=ON >/dev/null && \
	    cmake --build $(BUILD)/release -j $(JOBS)'

# The debug build (and `swift test`) with the Serve trait: `sdimage serve`
# and its server stack; the library products never link it, and the
# sanitizer builds leave it out (SWIFT_TRAITS= drops it here too).
SWIFT_TRAITS ?= --traits Serve
# No index store in the builds of one product (the sanitizer builds of
# sdimage, the install check's consumers): SwiftPM writes one by default, for
# editors, and it is ~10% of a debug build's CPU (544 vs 600 CPU-s for the
# whole package from scratch). Builds with tests keep it: on Linux SwiftPM
# discovers tests by reading it. SwiftPM's import check
# (--explicit-target-dependency-import-check) reads it too;
# scripts/check-imports.py does that job from the sources, more strictly.
SWIFT_INDEX ?= --disable-index-store
build-swift: deps
	$(SWIFT) build $(SWIFT_TRAITS)

# `sdimage serve` (the debug build has it) and its suite: the server against
# nginx and the fault server on loopback (scripts/test-serve.sh).
serve: build-swift
test-serve: build-swift deps-test
	@bash scripts/test-serve.sh

# The same suite against a ThreadSanitizer and then an AddressSanitizer build
# of the server with its whole stack (NIO, Hummingbird): about 4
# minutes each to build on 2 cores, so not a suite of `make test`.
test-serve-sanitizers: deps-test
	@for s in thread address; do \
	  echo "=== sdimage serve under $$s sanitizer"; \
	  $(SWIFT) build $(SWIFT_INDEX) --traits Serve --sanitize=$$s --product sdimage --scratch-path .build-serve-$$s >/dev/null || exit 1; \
	  SDIMAGE_SERVE_BIN=$$($(SWIFT) build --scratch-path .build-serve-$$s --show-bin-path)/sdimage \
	    TSAN_OPTIONS=halt_on_error=1 ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 bash scripts/test-serve.sh || exit 1; \
	done

# sdimage serve (release) against thumbor 7.8 from PyPI (a venv in build/),
# and the two-thread render floor, in one run (docs/serve.md).
bench-serve: deps-test build-c
	@bash scripts/bench-serve.sh

# Thumbnails from part of a file: bytes, PSNR and a grid's time over a
# 10 Mbit/s link with 40 ms latency, in a network namespace (root).
bench-bytes: deps-test
	@bash scripts/bench-bytes.sh

# Every test; the last line is the summary CI reads.
test: deps-test deps-deb
	@bash scripts/test-all.sh

test-c: deps-test build-c
	cd $(BUILD)/release && ctest --output-on-failure -j $(JOBS)

# The C ABI as programs link it: exported symbols = cmake/sdcore.map, all
# versioned and declared; abidiff against the committed cmake/libsdcore.abi;
# every public function documented (Returns, ownership).
test-abi: deps-test build-c
	bash scripts/check-abi.sh $(BUILD)/release/libsdcore.so
	python3 scripts/check-header-docs.py

# The Swift public API against api/*.json (swift-api-digester): a source
# break fails until the baseline is refreshed on purpose and CHANGELOG.md says so.
test-swift-api: build-swift
	bash scripts/check-swift-api.sh

api-baseline: build-swift
	bash scripts/check-swift-api.sh --update

# Refresh the ABI baseline (when a release adds functions on purpose).
abi-baseline: build-c
	bash scripts/check-abi.sh $(BUILD)/release/libsdcore.so --update

test-asan: deps-test
	@# -O1, as the ASan docs advise: the checks are the same, the pixel loops
	@# run about twice as fast as at -O0.
	@CC=$(SAN_CC) cmake -S . -B $(BUILD)/asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1" -DSD_WERROR=ON \
	    -DSD_SANITIZE=address,undefined -DSD_BUILD_BENCH=OFF -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld \
	    -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld >/dev/null
	@cmake --build $(BUILD)/asan -j $(JOBS)
	cd $(BUILD)/asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 LSAN_OPTIONS=suppressions=$(CURDIR)/Tests/C/lsan.supp \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(JOBS)

# ThreadSanitizer over the threaded C code (the loop, its pool, the races test).
# The Swift toolchain's TSan runtime intercepts libdispatch: link the toolchain's.
SWIFT_LIBDIR := $(realpath $(dir $(shell command -v swift))/../lib/swift/linux)
TSAN_LDFLAGS := -L$(SWIFT_LIBDIR) -Wl,-rpath,$(SWIFT_LIBDIR) -ldispatch -lBlocksRuntime
test-tsan: deps-test
	@CC=$(SAN_CC) cmake -S . -B $(BUILD)/tsan -DCMAKE_BUILD_TYPE=Debug -DSD_WERROR=ON \
	    -DSD_SANITIZE=thread -DSD_BUILD_BENCH=OFF -DCMAKE_EXE_LINKER_FLAGS="$(TSAN_LDFLAGS)" >/dev/null
	@cmake --build $(BUILD)/tsan -j $(JOBS) --target test_loop
	cd $(BUILD)/tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 ctest --output-on-failure -R c.loop

# valgrind memcheck over the C tests. The one-byte and random-chunk corpus
# passes and the animated corpus' option runs are left to ASan (the same
# decoder paths valgrind sees in the whole and random-chunk animated runs,
# 40-50x slower here: 4 of the 5 slowest tests, ~2 min of make test). JSIMD_FORCENONE: libjpeg-turbo's SIMD upsampling
# reads its own row padding, which valgrind reports as uninitialised; the
# library's C paths are checked here and the SIMD paths under ASan. c.heic is
# left to ASan too: libde265's and x265's assembly (HEVC) make valgrind see
# every decoded pixel as uninitialised, so it flags each use of them after
# (SD_TEST_UNDER_VALGRIND: c.units and c.color skip their HEIC round trips).
test-valgrind: deps-test build-c
	cd $(BUILD)/release && JSIMD_FORCENONE=1 SD_TEST_UNDER_VALGRIND=1 ctest -T memcheck -E "one_byte|random|options|c.heic|c.svg" --output-on-failure -j $(JOBS) \
	    --overwrite MemoryCheckCommandOptions="--error-exitcode=97 --leak-check=full --errors-for-leak-kinds=definite,indirect"

test-swift: deps-test
	$(SWIFT) build $(SWIFT_TRAITS) --build-tests
	python3 scripts/check-imports.py
	$(SWIFT) test $(SWIFT_TRAITS)

# API documentation: a DocC archive of every library module (the articles in
# Sources/SDWebImage/SDWebImage.docc), with every DocC warning an error; the
# same modules .spi.yml names.
DOC_TARGETS := SDWebImage SDCoders SDDownloader SDCache SDWebImageRedis SDWebImageSVGCoder
docs: deps
	$(SWIFT) package generate-documentation $(foreach t,$(DOC_TARGETS),--target $(t)) --warnings-as-errors
	@test "$$(sed -n 's/.*documentation_targets: \[\(.*\)\]/\1/p' .spi.yml | tr -d ' ')" = "$$(echo $(DOC_TARGETS) | tr ' ' ',')" \
	  || { echo "docs: .spi.yml's documentation_targets are not $(DOC_TARGETS)"; exit 1; }
	@echo "docs: .build/plugins/Swift-DocC/outputs/{$$(echo $(DOC_TARGETS) | tr ' ' ',')}.doccarchive"

# The docs build, then doc coverage: every public Swift symbol documented;
# and every test the README, SECURITY.md and docs/ name exists and runs.
test-docs: docs
	$(SWIFT) build $(SWIFT_TRAITS) >/dev/null
	python3 scripts/check-doc-coverage.py
	python3 scripts/check-doc-tests.py
	python3 scripts/check-snippets.py

# Swift tests under ThreadSanitizer (own build folder: different flags).
test-swift-tsan: deps-test
	@# SwiftPM 6.3 can fail to re-plan a reused sanitizer build ("unknown build
	@# description"); dropping the cached plan makes it plan again (no rebuild).
	rm -f .build-tsan/*/debug/description.json .build-tsan/*/debug/plugin-tools-description.json
	@# A TSan report's llvm-symbolizer can outlive the test process and hold
	@# swift-test's pipe open (seen: a run that never ended): bounded, it fails instead.
	timeout --kill-after=30 2400 $(SWIFT) test --sanitize=thread --scratch-path .build-tsan

# The Swift stack under AddressSanitizer + LeakSanitizer: a short manager soak
# (random cancels, priorities, hits) against nginx; any report fails it.
# No Swift backtracer after ASan's report: under ASan it faults reading the
# crashed process and hangs (seen: a leak report, then no exit for minutes).
test-swift-asan: deps-test build-c
	rm -f .build-asan/*/debug/description.json .build-asan/*/debug/plugin-tools-description.json
	@$(SWIFT) build $(SWIFT_INDEX) --sanitize=address --scratch-path .build-asan --product sdimage >.build-asan.log 2>&1 \
	  || { tail -30 .build-asan.log; exit 1; }
	SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 SDCORE_BENCH=$(BUILD)/release/sdcore-bench \
	  .build-asan/debug/sdimage bench soak --loads 400 --count 60 --memory-mib 16

test-cli: build-swift deps-test
	@bash scripts/test-cli.sh

# Three sdimage processes, one nginx origin, one Redis: --fleet-lock makes one
# origin request per image; a Redis killed mid-run loses no load.
# The galleries (GTK 4 in C, SDL2 in Swift) in a real X server (Xvfb),
# scrolled by xdotool, every visible cell of every screenshot checked against
# the decoded pixels; screenshots in build/gallery/. `make gallery` opens the
# SDL one for a person.
gallery-check: build-c build-swift deps-test
	bash scripts/gallery-check.sh

gallery: build-c build-swift deps-test
	SHOW=1 bash scripts/gallery-check.sh

test-fleet: build-swift deps-test
	@bash scripts/test-fleet.sh

# libFuzzer targets (ASan+UBSan): make fuzz SECONDS=N runs each for N seconds.
fuzz: deps-test
	FUZZ_SECONDS=$(or $(SECONDS),60) bash scripts/fuzz.sh

# What make test runs: replay the regression files, a few seconds per target.
fuzz-smoke: deps-test
	FUZZ_SECONDS=3 bash scripts/fuzz.sh

# The main job: sample images served by nginx on loopback, fetched cold,
# warm and hot (URLS=file.txt for a list of yours); no network beyond loopback.
# sdimage with `serve` (the Serve trait), as make install and the packages build it
demo: deps-demo
	$(SWIFT) build -c release $(SWIFT_INDEX) --traits Serve --product sdimage
	@bash scripts/demo.sh

# Every corpus image through `sdimage decode`, checked against the oracle.
demo-corpus: build-swift deps-test
	@bash scripts/demo-corpus.sh

# The C benchmarks under perf (or callgrind where perf does not work): top functions.
profile: deps-test
	@bash scripts/profile.sh

bench: deps-test build-c
	$(BUILD)/release/sdcore-bench decode

# `sdimage fetch` timed from outside (no cache, cold, warm; median of three
# processes each; peak RSS) and at 32 in flight against one thread decoding
# the same files; SD_BENCH_DIR picks the cache folders' file system.
bench-fetch-cli: deps-test build-c
	$(SWIFT) build -c release --product sdimage
	@/usr/bin/python3 scripts/bench-sdimage-fetch.py

# The C library (headers, sdcore.pc, the CMake package) and sdimage, serve
# included, under $(DESTDIR)$(PREFIX).
PREFIX ?= /usr/local
install: build-c
	cmake --install $(BUILD)/release --prefix "$(DESTDIR)$(PREFIX)"
	$(SWIFT) build -c release $(SWIFT_INDEX) --traits Serve --product sdimage
	install -D -m 755 "$$($(SWIFT) build -c release --show-bin-path)/sdimage" "$(DESTDIR)$(PREFIX)/bin/sdimage"

# The Debian packages (debian/; build/deb), lintian clean, and their test:
# installed with dpkg, used, purged (scripts/test-deb.sh; root).
deb: deps-deb
	@bash scripts/make-deb.sh
test-deb: deps-deb deps-test
	@bash scripts/test-deb.sh
deps-deb: deps
	@PACKAGES="$(DEB_PACKAGES)" NO_SERVICES=1 bash scripts/apt-install.sh

# Tag a release: the ABI and Swift API against their baselines, then
# scripts/release.sh (version, changelog, symbol nodes, sdcore.pc agree).
#   make release VERSION=0.10.0
release: test-abi test-swift-api
	@bash scripts/release.sh "$(VERSION)"

# make test from fresh clones of HEAD, RUNS times in a row, with
# stress-ng --cpu LOAD beside it (docs/testing.md has the runs).
RUNS ?= 5
LOAD ?= 4
test-loaded:
	@RUNS=$(RUNS) LOAD=$(LOAD) bash scripts/test-loaded.sh

clean:
	rm -rf $(BUILD) .build
